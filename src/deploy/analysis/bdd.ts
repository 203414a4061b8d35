/**
 * Reduced ordered binary decision diagrams over a packet's header bits, for the analyses of large rule lists
 * (issue 47, item 3): a rule list's sets as BDDs do not multiply with its RETURNs and negations as boxes do.
 *
 * Variables, in order: the destination address (32 bits), the source address (32), the protocol (2 bits: model's
 * TCP 0, UDP 1, OTHER 2; 3 is no packet), the source port (16) and the destination port (16), each most significant
 * bit first, so that a prefix or a port range is a short chain of nodes. These are every field of a box
 * (model/space.ts). The destination comes first because rule sets dispatch on it (a router's chains are per
 * protected network, their RETURNs per source): with the source first, the first 2,000 lines of a generated
 * 5,000-rule set made 6.3 million nodes, with the destination first 0.8 million. Nodes live in typed arrays with a
 * unique table (open addressing); apply has a direct-mapped operation cache. The number of nodes is the work bound
 * (MAX_ANALYSIS_NODES), refused past it as the box analyses are.
 */
import { badRequest } from '../../model/errors.js';
import { DPORT, DST, PROTO, SPORT, SRC, type Box } from '../../model/space.js';

/**
 * The most nodes one analysis may make (12 bytes each, plus the unique table: about 250 MB at most). The first-match
 * fold of the chair's router's May snapshot (5,081 entries) makes 0.52 million, of both snapshots for their diff
 * 0.73 million; the 20,000-rule generated set (17,800 entries) needs more and is refused.
 */
export const MAX_ANALYSIS_NODES = 8_000_000;

export const FALSE = 0;
export const TRUE = 1;
const VARS = 98;

/** Where each box dimension's bits are: its first variable and its width, in the diagrams' order. */
const FIELDS: readonly { dim: number; start: number; bits: number }[] = [
  ...[0, 1, 2, 3].map((k) => ({ dim: DST + k, start: 8 * k, bits: 8 })),
  ...[0, 1, 2, 3].map((k) => ({ dim: SRC + k, start: 32 + 8 * k, bits: 8 })),
  { dim: PROTO, start: 64, bits: 2 },
  { dim: SPORT, start: 66, bits: 16 },
  { dim: DPORT, start: 82, bits: 16 },
];

const enum Op {
  And = 1,
  Or = 2,
  Xor = 3,
  /** a and not b */
  Diff = 4,
}

const CACHE_BITS = 20;

export class Bdd {
  private level = new Int32Array(1 << 16);
  private low = new Int32Array(1 << 16);
  private high = new Int32Array(1 << 16);
  private count = 2;
  // Empty slots are 0 (no node of the table is a terminal), so that fresh arrays need no filling.
  private table = new Int32Array(1 << 17);
  private readonly cache = new Int32Array(4 << CACHE_BITS);
  /** Every packet: any protocol value but 3. */
  readonly valid: number;

  constructor(private readonly maxNodes = MAX_ANALYSIS_NODES) {
    this.level[0] = this.level[1] = VARS;
    this.valid = this.box([0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 65535, 0, 65535, 0, 2]);
  }

  /** Nodes made so far (the work done). */
  get nodes(): number {
    return this.count;
  }

  private mk(v: number, lo: number, hi: number): number {
    if (lo === hi) return lo;
    const mask = this.table.length - 1;
    let h = (Math.imul(v, 0x9e3779b1) ^ Math.imul(lo, 0x85ebca6b) ^ Math.imul(hi, 0xc2b2ae35)) & mask;
    for (;;) {
      const n = this.table[h]!;
      if (n === 0) break;
      if (this.level[n] === v && this.low[n] === lo && this.high[n] === hi) return n;
      h = (h + 1) & mask;
    }
    const n = this.count++;
    if (n >= this.maxNodes)
      throw badRequest(
        `rules: an exact analysis of these rules needs more than ${this.maxNodes} decision-diagram nodes; ` +
          'give fewer rules',
      );
    if (n >= this.level.length) this.grow();
    this.level[n] = v;
    this.low[n] = lo;
    this.high[n] = hi;
    this.table[h] = n;
    if (2 * this.count > this.table.length) this.rehash();
    return n;
  }

  private grow(): void {
    const size = 2 * this.level.length;
    for (const key of ['level', 'low', 'high'] as const) {
      const next = new Int32Array(size);
      next.set(this[key]);
      this[key] = next;
    }
  }

  private rehash(): void {
    const table = new Int32Array(2 * this.table.length);
    const mask = table.length - 1;
    for (let n = 2; n < this.count; n++) {
      let h =
        (Math.imul(this.level[n]!, 0x9e3779b1) ^
          Math.imul(this.low[n]!, 0x85ebca6b) ^
          Math.imul(this.high[n]!, 0xc2b2ae35)) &
        mask;
      while (table[h] !== 0) h = (h + 1) & mask;
      table[h] = n;
    }
    this.table = table;
  }

  private apply(op: Op, a: number, b: number): number {
    switch (op) {
      case Op.And:
        if (a === FALSE || b === FALSE) return FALSE;
        if (a === TRUE || a === b) return b;
        if (b === TRUE) return a;
        break;
      case Op.Or:
        if (a === TRUE || b === TRUE) return TRUE;
        if (a === FALSE || a === b) return b;
        if (b === FALSE) return a;
        break;
      case Op.Xor:
        if (a === b) return FALSE;
        if (a === FALSE) return b;
        if (b === FALSE) return a;
        break;
      case Op.Diff:
        if (a === FALSE || b === TRUE || a === b) return FALSE;
        if (b === FALSE) return a;
        break;
    }
    // Commutative operations share their cache entries.
    if (op !== Op.Diff && a > b) [a, b] = [b, a];
    const slot = 4 * ((Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b) ^ op) & ((1 << CACHE_BITS) - 1));
    const c = this.cache;
    if (c[slot] === op && c[slot + 1] === a && c[slot + 2] === b) return c[slot + 3]!;
    const [va, vb] = [this.level[a]!, this.level[b]!];
    const v = va < vb ? va : vb;
    const lo = this.apply(op, va === v ? this.low[a]! : a, vb === v ? this.low[b]! : b);
    const hi = this.apply(op, va === v ? this.high[a]! : a, vb === v ? this.high[b]! : b);
    const r = this.mk(v, lo, hi);
    c[slot] = op;
    c[slot + 1] = a;
    c[slot + 2] = b;
    c[slot + 3] = r;
    return r;
  }

  and = (a: number, b: number) => this.apply(Op.And, a, b);
  or = (a: number, b: number) => this.apply(Op.Or, a, b);
  xor = (a: number, b: number) => this.apply(Op.Xor, a, b);
  /** The packets of a that are not in b. */
  diff = (a: number, b: number) => this.apply(Op.Diff, a, b);

  /** Values lo..hi of the `bits` variables from `v` on, then `next`. */
  private interval(v: number, bits: number, lo: number, hi: number, next: number): number {
    if (lo === 0 && hi === 2 ** bits - 1) return next;
    const half = 2 ** (bits - 1);
    const l = lo < half ? this.interval(v + 1, bits - 1, lo, Math.min(hi, half - 1), next) : FALSE;
    const h = hi >= half ? this.interval(v + 1, bits - 1, Math.max(lo, half) - half, hi - half, next) : FALSE;
    return this.mk(v, l, h);
  }

  /** Boxes met before (an unfolded list's except boxes are shared by many lines). */
  private readonly made = new WeakMap<Box, number>();

  /** The packets of a box (built from the last variable up: one chain of nodes). */
  box(b: Box): number {
    const known = this.made.get(b);
    if (known !== undefined) return known;
    let next = TRUE;
    for (let f = FIELDS.length - 1; f >= 0; f--) {
      const { dim, start, bits } = FIELDS[f]!;
      next = this.interval(start, bits, b[2 * dim]!, b[2 * dim + 1]!, next);
    }
    this.made.set(b, next);
    return next;
  }

  /** The packets of a union of boxes. */
  boxes(bs: readonly Box[]): number {
    let out = FALSE;
    for (const b of bs) out = this.or(out, this.box(b));
    return out;
  }

  /** The first packet of a non-empty set in the variables' order (lowest source, then destination, ...), as a box. */
  first(u: number): Box {
    const bits = new Uint8Array(VARS);
    while (u !== TRUE) {
      const lo = this.low[u]!;
      if (lo !== FALSE) u = lo;
      else {
        bits[this.level[u]!] = 1;
        u = this.high[u]!;
      }
    }
    const out = new Array<number>(22);
    for (const { dim, start, bits: n } of FIELDS) {
      let value = 0;
      for (let k = 0; k < n; k++) value = value * 2 + bits[start + k]!;
      out[2 * dim] = out[2 * dim + 1] = value;
    }
    return out;
  }

  /**
   * A set as disjoint boxes, exactly: field by field, the values that lead to each node of the next field, as
   * intervals, times that node's boxes. `most` bounds how many boxes (refused past it, as MAX_ANALYSIS_BOXES).
   */
  toBoxes(u: number, most: number): Box[] {
    const memo = new Map<number, number[][]>();
    let made = 0;
    const rec = (n: number, f: number): number[][] => {
      if (n === FALSE) return [];
      if (f === FIELDS.length) return [[]];
      const key = n * 16 + f;
      const known = memo.get(key);
      if (known) return known;
      const { start, bits } = FIELDS[f]!;
      const end = start + bits;
      const segments: { node: number; lo: number; hi: number }[] = [];
      const walk = (m: number, v: number, base: number) => {
        if (m === FALSE) return;
        const width = 2 ** (end - v);
        if (this.level[m]! >= end) segments.push({ node: m, lo: base, hi: base + width - 1 });
        else if (this.level[m]! > v) {
          walk(m, v + 1, base);
          walk(m, v + 1, base + width / 2);
        } else {
          walk(this.low[m]!, v + 1, base);
          walk(this.high[m]!, v + 1, base + width / 2);
        }
      };
      walk(n, start, 0);
      // Neighbouring values that lead to the same node join into one interval.
      segments.sort((x, y) => x.node - y.node || x.lo - y.lo);
      const joined: typeof segments = [];
      for (const s of segments) {
        const last = joined[joined.length - 1];
        if (last && last.node === s.node && last.hi + 1 === s.lo) last.hi = s.hi;
        else joined.push({ ...s });
      }
      joined.sort((x, y) => x.lo - y.lo);
      const out: number[][] = [];
      for (const s of joined)
        for (const tail of rec(s.node, f + 1)) {
          out.push([s.lo, s.hi, ...tail]);
          if (++made > most)
            throw badRequest(`rules: an exact analysis of these rules needs more than ${most} boxes; give fewer rules`);
        }
      memo.set(key, out);
      return out;
    };
    return rec(u, 0).map((bounds) => {
      const box = new Array<number>(22);
      FIELDS.forEach(({ dim }, f) => {
        box[2 * dim] = bounds[2 * f]!;
        box[2 * dim + 1] = bounds[2 * f + 1]!;
      });
      return box;
    });
  }
}
