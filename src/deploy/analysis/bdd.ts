/**
 * Reduced ordered binary decision diagrams over a packet's header bits, for the analyses of large rule lists
 * (issue 47, item 3): a rule list's sets as BDDs do not multiply with its RETURNs and negations as boxes do.
 *
 * Variables, in order: the destination address (32 bits), the protocol (2 bits: model's TCP 0, UDP 1, OTHER 2; 3
 * is no packet), the source port (16), the destination port (16) and the source address (32), each most
 * significant bit first, so that a prefix or a port range is a short chain of nodes. These are every field of a box
 * (model/space.ts). The destination comes first because rule sets dispatch on it (a router's chains are per
 * protected network): with the source first, the first 2,000 lines of a generated 5,000-rule set made 6.3 million
 * nodes, with the destination first 0.8 million. The source comes last because RETURNs and negated matches are
 * mostly per source: a line behind RETURNs is its host and port less the RETURNs' sources, and with the source
 * last that difference is one diagram below the ports, shared by every line of the chain, instead of a copy above
 * each line's ports (the generated 20,000-rule set's fold holds 2.7 million nodes, not 6.9; the chair's router's
 * 0.44, not 0.52). Answers do not depend on the order: boxes and first packets are read field by field in the
 * boxes' own order, destination, source, protocol, ports (`toBoxes`, `first`), the source read off the sets below the
 * ports where the order differs.
 *
 * Nodes live in one typed array with a unique table (open addressing); apply has a direct-mapped operation cache.
 * Nodes no set still in use reaches are collected between the lines of a fold (`collect`); the work bounds are the
 * nodes held at once (MAX_ANALYSIS_NODES) and the steps taken (MAX_ANALYSIS_STEPS), refused past them as the box
 * analyses are.
 */
import { badRequest } from '../../model/errors.js';
import { DPORT, DST, PROTO, SPORT, SRC, type Box } from '../../model/space.js';

/**
 * The most nodes one analysis may hold at once (12 bytes each, plus 8 in the unique table: about 160 MB at most).
 * Nodes no set the analysis still needs reaches are collected (`collect`), so this counts the nodes alive at the
 * last collection plus those made since, not every node ever made. The first-match fold of the generated
 * 20,000-rule set (17,800 entries) makes 4.3 million nodes (9.6 million with the source second and each box a
 * chain of its own, refused then).
 */
export const MAX_ANALYSIS_NODES = 8_000_000;

/**
 * The most steps one analysis may take: node lookups (every node an operation makes or finds in the unique table)
 * and nodes marked by collections: the work bound, since nodes are collected. The fold of the generated
 * 20,000-rule set takes 6.0 million steps.
 */
export const MAX_ANALYSIS_STEPS = 400_000_000;

export const FALSE = 0;
export const TRUE = 1;
const VARS = 98;
/** The variable of a free slot (a collected node), which no lookup can match. */
const FREE = -1;

interface Field {
  dim: number;
  start: number;
  bits: number;
}

/**
 * Where each box dimension's bits are, its first variable and its width, in the boxes' order (destination,
 * source, protocol, source port, destination port: the order answers are read in).
 */
const FIELDS: readonly Field[] = [
  ...[0, 1, 2, 3].map((k) => ({ dim: DST + k, start: 8 * k, bits: 8 })),
  ...[0, 1, 2, 3].map((k) => ({ dim: SRC + k, start: 66 + 8 * k, bits: 8 })),
  { dim: PROTO, start: 32, bits: 2 },
  { dim: SPORT, start: 34, bits: 16 },
  { dim: DPORT, start: 50, bits: 16 },
];

/** The destination's variables end here (it is first); the source's start here (it is last). */
const DST_END = 32;
const SRC_START = 66;

/** The same in the diagrams' order, and last variable first (a box is built from the bottom up). */
const TOP_DOWN = [...FIELDS].sort((a, b) => a.start - b.start);
const BOTTOM_UP = [...TOP_DOWN].reverse();

const enum Op {
  And = 1,
  Or = 2,
  Xor = 3,
  /** a and not b */
  Diff = 4,
}

/** The most entries of the operation cache (16 bytes each): it grows with the node array up to this. */
const CACHE_BITS = 20;

/**
 * No collection before this many nodes are held (48 MB of nodes, 32 of unique table): most analyses never collect,
 * and a collection frees at least as many nodes as it marks.
 */
const FIRST_COLLECTION = 1 << 22;

/**
 * Nodes, unique table slots and cache entries made at first: few, since a fold makes room for what it needs
 * (`reserve`) and the brute-force tests make thousands of small diagrams.
 */
const FIRST_NODES = 1 << 12;

/** An analysis's bounds on its diagrams (Budget.diagrams); tests make collections come early with `collectFrom`. */
export interface DiagramBounds {
  maxNodes?: number;
  maxSteps?: number;
  /** Nodes held at which the first collection comes (FIRST_COLLECTION). */
  collectFrom?: number;
}

const hash = (v: number, lo: number, hi: number) =>
  Math.imul(v, 0x9e3779b1) ^ Math.imul(lo, 0x85ebca6b) ^ Math.imul(hi, 0xc2b2ae35);

/** What a caller still needs, told at each collection: it calls `mark` with each set it holds. */
export type Holder = (mark: (set: number) => void) => void;

export class Bdd {
  /** Node n's variable, low child and high child at 3n, 3n + 1 and 3n + 2: one cache line for most nodes. */
  private node = new Int32Array(3 * FIRST_NODES);
  /** Slots handed out so far (terminals included); `held` of them hold nodes, the others are free. */
  private count = 2;
  private held = 2;
  /** Free slots, the lowest on top, so that nodes stay packed low. */
  private free = new Int32Array(0);
  private freeCount = 0;
  // Empty slots are 0 (no node of the table is a terminal), so that fresh arrays need no filling.
  private table = new Int32Array(2 * FIRST_NODES);
  private cache = new Int32Array(4 * FIRST_NODES);
  private cacheMask = FIRST_NODES - 1;
  private steps = 0;
  private readonly holders: Holder[] = [];
  private readonly maxNodes: number;
  private readonly maxSteps: number;
  private readonly collectFrom: number;
  private nextCollection: number;
  /** Every packet: any protocol value but 3. */
  readonly valid: number;

  constructor({
    maxNodes = MAX_ANALYSIS_NODES,
    maxSteps = MAX_ANALYSIS_STEPS,
    collectFrom = FIRST_COLLECTION,
  }: DiagramBounds = {}) {
    [this.maxNodes, this.maxSteps, this.collectFrom] = [maxNodes, maxSteps, collectFrom];
    this.nextCollection = collectFrom;
    this.node[0] = this.node[3] = VARS;
    this.valid = this.box([0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 65535, 0, 65535, 0, 2]);
  }

  /** Nodes held now (the terminals included). */
  get nodes(): number {
    return this.held;
  }

  /** The work done: node lookups and nodes marked by collections. */
  get work(): number {
    return this.steps;
  }

  private refuse(what: string): never {
    throw badRequest(`rules: an exact analysis of these rules needs more than ${what}; give fewer rules`);
  }

  private mk(v: number, lo: number, hi: number): number {
    if (lo === hi) return lo;
    if (++this.steps > this.maxSteps) this.refuse(`${this.maxSteps} decision-diagram steps`);
    const node = this.node;
    const mask = this.table.length - 1;
    let h = hash(v, lo, hi) & mask;
    for (;;) {
      const n = this.table[h]!;
      if (n === 0) break;
      if (node[3 * n] === v && node[3 * n + 1] === lo && node[3 * n + 2] === hi) return n;
      h = (h + 1) & mask;
    }
    if (this.held >= this.maxNodes) this.refuse(`${this.maxNodes} decision-diagram nodes`);
    const n = this.freeCount ? this.free[--this.freeCount]! : this.count++;
    if (3 * n >= this.node.length) this.grow();
    this.node[3 * n] = v;
    this.node[3 * n + 1] = lo;
    this.node[3 * n + 2] = hi;
    this.table[h] = n;
    if (2 * ++this.held > this.table.length) this.rehash(2 * this.table.length);
    return n;
  }

  private grow(to = 2 * this.node.length): void {
    const next = new Int32Array(to);
    next.set(this.node);
    this.node = next;
    // The cache as many entries as there are node slots, up to 2^CACHE_BITS; its entries are dropped (a cache).
    const entries = Math.min(1 << CACHE_BITS, 2 ** Math.floor(Math.log2(to / 3)));
    if (entries > this.cacheMask + 1) {
      this.cache = new Int32Array(4 * entries);
      this.cacheMask = entries - 1;
    }
  }

  /**
   * Room for `more` nodes beyond those held, made at once (up to the node bound): a fold that knows about how many
   * nodes it makes saves growing the arrays and the unique table by doubling, each time moving every node (a
   * fifth of the 20,000-rule fold's time). Collections come as before (`collect`), so that `collectFrom` still
   * makes them come early.
   */
  reserve(more: number): void {
    const nodes = Math.min(this.held + more, this.maxNodes);
    let length = this.node.length;
    while (length < 3 * (this.count + nodes - this.held)) length *= 2;
    if (length > this.node.length) this.grow(length);
    let size = this.table.length;
    while (size < 2 * nodes) size *= 2;
    if (size > this.table.length) this.rehash(size);
  }

  /** The unique table made again, of `size` slots, with every held node. */
  private rehash(size: number): void {
    const table = size === this.table.length ? this.table.fill(0) : new Int32Array(size);
    const mask = size - 1;
    const node = this.node;
    for (let n = 2; n < this.count; n++) {
      if (node[3 * n] === FREE) continue;
      let h = hash(node[3 * n]!, node[3 * n + 1]!, node[3 * n + 2]!) & mask;
      while (table[h] !== 0) h = (h + 1) & mask;
      table[h] = n;
    }
    this.table = table;
  }

  /**
   * Sets a caller needs at every later collection (a fold's per-line sets), told by `holder` when asked. The sets
   * an analysis holds only for a while it gives to `collect` instead.
   */
  hold(holder: Holder): void {
    this.holders.push(holder);
  }

  /**
   * Frees every node that no held set, no set of `live` and no box met before reaches, once the nodes held have
   * doubled since the last collection (at least FIRST_COLLECTION). Called only between operations, where every set
   * the caller will use again is held or given here: nodes an operation is making are in no set yet. Which nodes
   * are collected, and when, depends on the sets and the counts alone, never on time; and no answer depends on
   * node numbers (`toBoxes` orders by values), so that collection changes no byte of any answer.
   */
  collect(...live: number[]): void {
    if (this.held < this.nextCollection) return;
    const node = this.node;
    const marked = new Uint8Array(this.count);
    marked[FALSE] = marked[TRUE] = 1;
    let stack = new Int32Array(1024);
    let steps = 0;
    const mark = (u: number) => {
      if (marked[u]) return;
      marked[u] = 1;
      let top = 0;
      stack[top++] = u;
      while (top) {
        const n = stack[--top]!;
        steps++;
        if (top + 2 > stack.length) {
          const next = new Int32Array(2 * stack.length);
          next.set(stack);
          stack = next;
        }
        const [lo, hi] = [node[3 * n + 1]!, node[3 * n + 2]!];
        if (!marked[lo]) {
          marked[lo] = 1;
          stack[top++] = lo;
        }
        if (!marked[hi]) {
          marked[hi] = 1;
          stack[top++] = hi;
        }
      }
    };
    mark(this.valid);
    for (const u of live) mark(u);
    for (const holder of this.holders) holder(mark);
    this.steps += steps;
    if (this.steps > this.maxSteps) this.refuse(`${this.maxSteps} decision-diagram steps`);
    // Free slots from the highest down, so that the lowest is taken first.
    if (this.free.length < this.count) this.free = new Int32Array(this.count);
    this.freeCount = 0;
    for (let n = this.count - 1; n >= 2; n--)
      if (!marked[n]) {
        if (node[3 * n] !== FREE) this.held--;
        node[3 * n] = FREE;
        this.free[this.freeCount++] = n;
      }
    this.rehash(this.table.length);
    this.sizes.clear();
    this.sourceKnown = new Uint8Array(0);
    for (const [b, u] of this.made) if (!marked[u]) this.made.delete(b);
    // Cached operations on or to a freed node are forgotten: its slot may hold another node next.
    const c = this.cache;
    for (let slot = 0; slot < c.length; slot += 4) {
      if (c[slot] === 0) continue;
      if (!marked[c[slot + 1]!] || !marked[c[slot + 2]!] || !marked[c[slot + 3]!]) c[slot] = 0;
    }
    // The next when the nodes held have doubled, or gone half way to the bound, whichever comes first.
    this.nextCollection = Math.max(this.collectFrom, Math.min(2 * this.held, (this.held + this.maxNodes) / 2));
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
    if (op !== Op.Diff && a > b) {
      const t = a;
      a = b;
      b = t;
    }
    const c = this.cache;
    const slot = 4 * ((Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b) ^ op) & this.cacheMask);
    if (c[slot] === op && c[slot + 1] === a && c[slot + 2] === b) return c[slot + 3]!;
    const node = this.node;
    const va = node[3 * a]!;
    const vb = node[3 * b]!;
    let r: number;
    if (va === vb) {
      const lo = this.apply(op, node[3 * a + 1]!, node[3 * b + 1]!);
      r = this.mk(va, lo, this.apply(op, node[3 * a + 2]!, node[3 * b + 2]!));
    } else if (va < vb) {
      const lo = this.apply(op, node[3 * a + 1]!, b);
      r = this.mk(va, lo, this.apply(op, node[3 * a + 2]!, b));
    } else {
      const lo = this.apply(op, a, node[3 * b + 1]!);
      r = this.mk(vb, lo, this.apply(op, a, node[3 * b + 2]!));
    }
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

  /**
   * Boxes met before (an unfolded list's except boxes are shared by many lines); an entry whose node is collected
   * is forgotten. The list holds the boxes anyway.
   */
  private readonly made = new Map<Box, number>();

  /** The packets of a box (built from the last variable up: one chain of nodes). */
  box(b: Box): number {
    const known = this.made.get(b);
    if (known !== undefined) return known;
    let next = TRUE;
    for (const { dim, start, bits } of BOTTOM_UP) next = this.interval(start, bits, b[2 * dim]!, b[2 * dim + 1]!, next);
    this.made.set(b, next);
    return next;
  }

  /**
   * The packets of a union of boxes, built field by field from the top: the values of a field split where a box's
   * range starts or ends, each piece leading to the union of the boxes holding it in the fields below. A line's
   * boxes (a multiport's ports, a negated address's ranges) then share the fields they agree on, as one chain,
   * instead of each being a chain of its own joined by `or`.
   */
  boxes(bs: readonly Box[]): number {
    if (bs.length < 2) return bs.length ? this.box(bs[0]!) : FALSE;
    const memo = new Map<string, number>();
    // One box from field f down: its chain, built from the bottom as `box` builds it.
    const chain = (b: Box, f: number): number => {
      let next = TRUE;
      for (let g = TOP_DOWN.length - 1; g >= f; g--) {
        const { dim, start, bits } = TOP_DOWN[g]!;
        next = this.interval(start, bits, b[2 * dim]!, b[2 * dim + 1]!, next);
      }
      return next;
    };
    const union = (at: readonly number[], f: number): number => {
      if (f === TOP_DOWN.length) return TRUE;
      // Most of a line's boxes agree on most fields (a multiport's ports, a negation's addresses): no cuts to
      // make, no key to build; the set is the same as the general case's below (diagrams are canonical).
      if (at.length === 1) return chain(bs[at[0]!]!, f);
      const { dim, start, bits } = TOP_DOWN[f]!;
      const [lo, hi] = [bs[at[0]!]![2 * dim]!, bs[at[0]!]![2 * dim + 1]!];
      if (at.every((k) => bs[k]![2 * dim] === lo && bs[k]![2 * dim + 1] === hi))
        return this.interval(start, bits, lo, hi, union(at, f + 1));
      const key = `${f} ${at.join()}`;
      const known = memo.get(key);
      if (known !== undefined) return known;
      const cuts = [...new Set(at.flatMap((k) => [bs[k]![2 * dim]!, bs[k]![2 * dim + 1]! + 1]))].sort((x, y) => x - y);
      const pieces: { lo: number; hi: number; node: number }[] = [];
      for (let i = 0; i + 1 < cuts.length; i++) {
        const [lo, hi] = [cuts[i]!, cuts[i + 1]! - 1];
        const holding = at.filter((k) => bs[k]![2 * dim]! <= lo && hi <= bs[k]![2 * dim + 1]!);
        if (holding.length) pieces.push({ lo, hi, node: union(holding, f + 1) });
      }
      const out = this.pieces(start, bits, 0, pieces);
      memo.set(key, out);
      return out;
    };
    return union(
      bs.map((_, k) => k),
      0,
    );
  }

  /**
   * The `bits` variables from `v` on, whose values from `base` on lead to each piece's node within its range
   * (`pieces` in order, disjoint), and to FALSE outside them.
   */
  private pieces(
    v: number,
    bits: number,
    base: number,
    pieces: readonly { lo: number; hi: number; node: number }[],
  ): number {
    const end = base + 2 ** bits - 1;
    const inside = pieces.filter((p) => p.hi >= base && p.lo <= end);
    if (!inside.length) return FALSE;
    if (inside.length === 1 && inside[0]!.lo <= base && inside[0]!.hi >= end) return inside[0]!.node;
    const half = 2 ** (bits - 1);
    const lo: number = this.pieces(v + 1, bits - 1, base, inside);
    return this.mk(v, lo, this.pieces(v + 1, bits - 1, base + half, inside));
  }

  /**
   * The first packet of a non-empty set in the boxes' order (lowest destination, then source, protocol, source
   * port, destination port), as a box, making no node. The destination is on top: the lowest path down its
   * variables. Then the lowest source below any protocol and ports (`lowestSource`, per node of the middle), then
   * the lowest protocol and ports, which are in the variables' order, among the paths that reach that source.
   */
  first(u: number): Box {
    const node = this.node;
    const bits = new Array<number>(VARS).fill(0);
    // The lowest path down from n to the variable `end`, each variable a node skips being 0.
    const lowest = (n: number, end: number): number => {
      while (node[3 * n]! < end) {
        const lo = node[3 * n + 1]!;
        if (lo !== FALSE) n = lo;
        else {
          bits[node[3 * n]!] = 1;
          n = node[3 * n + 2]!;
        }
      }
      return n;
    };
    u = lowest(u, DST_END);
    if (node[3 * u]! < SRC_START) {
      const least = new Map<number, number>();
      const lowestSource = (n: number): number => {
        if (node[3 * n]! >= SRC_START) return this.sourceValue(n);
        const known = least.get(n);
        if (known !== undefined) return known;
        const [lo, hi] = [node[3 * n + 1]!, node[3 * n + 2]!];
        const out = Math.min(lo === FALSE ? Infinity : lowestSource(lo), hi === FALSE ? Infinity : lowestSource(hi));
        least.set(n, out);
        return out;
      };
      const source = lowestSource(u);
      const holds = new Map<number, boolean>();
      const reaches = (n: number): boolean => {
        if (n === FALSE) return false;
        if (node[3 * n]! >= SRC_START) return this.sourceValue(n, source) === source;
        const known = holds.get(n);
        if (known !== undefined) return known;
        const out = reaches(node[3 * n + 1]!) || reaches(node[3 * n + 2]!);
        holds.set(n, out);
        return out;
      };
      while (node[3 * u]! < SRC_START) {
        const lo = node[3 * u + 1]!;
        if (reaches(lo)) u = lo;
        else {
          bits[node[3 * u]!] = 1;
          u = node[3 * u + 2]!;
        }
      }
    }
    lowest(u, VARS);
    const out = new Array<number>(22);
    for (const { dim, start, bits: width } of FIELDS) {
      let value = 0;
      for (let v = start; v < start + width; v++) value = 2 * value + bits[v]!;
      out[2 * dim] = out[2 * dim + 1] = value;
    }
    return out;
  }

  /**
   * Below the middle (a node at or below the source's first variable): the lowest source it holds, or, given
   * `source`, that source when it holds it (and some other value when not).
   */
  private sourceValue(n: number, source?: number): number {
    const node = this.node;
    let value = 0;
    for (let v = SRC_START; v < VARS; v++) {
      const weight = 2 ** (VARS - 1 - v);
      if (n === FALSE) return -1;
      if (node[3 * n]! !== v) {
        if (source !== undefined && Math.floor(source / weight) % 2) value += weight;
        continue;
      }
      const bit = source === undefined ? (node[3 * n + 1]! !== FALSE ? 0 : 1) : Math.floor(source / weight) % 2;
      n = node[3 * n + 1 + bit]!;
      value += bit * weight;
    }
    return n === TRUE ? value : -1;
  }

  /** Each node's count of `size`, kept between calls (the sets asked about share nodes) until a collection. */
  private readonly sizes = new Map<number, bigint>();

  /**
   * How many packets a set holds (every packet has one value of each of the 98 variables; sets hold no protocol 3):
   * up to 2^98, so a bigint. Each node's count is the sum of its children's, each times 2 to the variables skipped.
   */
  size(u: number): bigint {
    const memo = this.sizes;
    const node = this.node;
    const below = (n: number): bigint => {
      if (n === FALSE) return 0n;
      if (n === TRUE) return 1n;
      const known = memo.get(n);
      if (known !== undefined) return known;
      const v = node[3 * n]!;
      const [lo, hi] = [node[3 * n + 1]!, node[3 * n + 2]!];
      const out = (below(lo) << BigInt(node[3 * lo]! - v - 1)) + (below(hi) << BigInt(node[3 * hi]! - v - 1));
      memo.set(n, out);
      return out;
    };
    return below(u) << BigInt(node[3 * u]!);
  }

  /**
   * Each node's source variables, bit k for variable SRC_START + k, where `sourceKnown` is set: kept between calls
   * (`toBoxes` of a fold's lines walk the same middles) until a collection, which may give a slot another node.
   */
  private sourceVars = new Int32Array(0);
  private sourceKnown = new Uint8Array(0);

  /** Room for every node slot of the node array in `sourceVars` (made again as it grows). */
  private sourcesSized(): void {
    const length = this.node.length / 3;
    const [vars, known] = [new Int32Array(length), new Uint8Array(length)];
    vars.set(this.sourceVars);
    known.set(this.sourceKnown);
    [this.sourceVars, this.sourceKnown] = [vars, known];
  }

  /** The source variables the set u depends on (its support's last 32 variables), as bits. */
  private sourceSupport(u: number): number {
    if (u < 2) return 0;
    if (this.sourceKnown.length < this.count) this.sourcesSized();
    if (this.sourceKnown[u]) return this.sourceVars[u]!;
    const node = this.node;
    const level = node[3 * u]!;
    let bits = this.sourceSupport(node[3 * u + 1]!) | this.sourceSupport(node[3 * u + 2]!);
    if (level >= SRC_START) bits |= 1 << (level - SRC_START);
    this.sourceVars[u] = bits;
    this.sourceKnown[u] = 1;
    return bits;
  }

  /**
   * The values of the source field from `start` (8 bits) in the set n, as segments each leading to the set n has for
   * them. The source lies below the protocol and ports (the middle): the values are read off the sets the middle
   * leads to (its leaves), each cofactored on its own, which is one step down since the source is read in its
   * variables' order; a segment's set, the middle over its leaves' cofactors, is made once at the segment's end,
   * not the middle made again for each bit of the field. Diagrams are canonical: the same sets as cofactoring n.
   */
  private sourceSegments(n: number, start: number, segments: { node: number; lo: number; hi: number }[]): void {
    const leaves: number[] = [];
    const index = new Map<number, number>();
    const seen = new Set<number>();
    const find = (u: number): void => {
      if (this.node[3 * u]! >= SRC_START) {
        if (!index.has(u)) index.set(u, leaves.push(u) - 1);
      } else if (!seen.has(u)) {
        seen.add(u);
        find(this.node[3 * u + 1]!);
        find(this.node[3 * u + 2]!);
      }
    };
    find(n);
    // Each leaf is reached by some path of the middle, so n's cofactor is empty exactly when every leaf's is, and
    // depends on the source variables its leaves' cofactors depend on.
    const made = new Map<string, number>();
    const setOf = (values: readonly number[]): number => {
      if (leaves[0] === n) return values[0]!;
      const key = values.join();
      const known = made.get(key);
      if (known !== undefined) return known;
      const memo = new Map<number, number>();
      const rebuild = (u: number): number => {
        const k = index.get(u);
        if (k !== undefined) return values[k]!;
        let r = memo.get(u);
        if (r === undefined) {
          const lo = rebuild(this.node[3 * u + 1]!);
          r = this.mk(this.node[3 * u]!, lo, rebuild(this.node[3 * u + 2]!));
          memo.set(u, r);
        }
        return r;
      };
      const out = rebuild(n);
      made.set(key, out);
      return out;
    };
    const end = start + 8;
    const walk = (values: readonly number[], v: number, base: number): void => {
      let support = 0;
      let empty = true;
      for (const u of values) {
        support |= this.sourceSupport(u);
        if (u !== FALSE) empty = false;
      }
      if (empty) return;
      const field = (support >>> (start - SRC_START)) & 0xff;
      const width = 2 ** (end - v);
      if (!field || start + 31 - Math.clz32(field) < v)
        segments.push({ node: setOf(values), lo: base, hi: base + width - 1 });
      else {
        const at = (bit: number) => values.map((u) => (this.node[3 * u] === v ? this.node[3 * u + 1 + bit]! : u));
        walk(at(0), v + 1, base);
        walk(at(1), v + 1, base + width / 2);
      }
    };
    walk(leaves, start, 0);
  }

  /**
   * A set as disjoint boxes, exactly: field by field, the values that lead to each node of the next field, as
   * intervals, times that node's boxes. `most` bounds how many boxes: past it `refuse` is called (by default the
   * refusal of MAX_ANALYSIS_BOXES).
   */
  toBoxes(u: number, most: number, refuse?: () => never): Box[] {
    // Per node and field: its values' intervals in order, each with the node it leads to, and its boxes' count. The
    // boxes are written once, at the end, not as a tuple per field and node (most of the walk's garbage).
    const memo = new Map<number, { segments: { node: number; lo: number; hi: number }[]; count: number }>();
    const deepestOf = FIELDS.map(() => new Map<number, number>());
    let made = 0;
    const rec = (n: number, f: number): number => {
      if (f === FIELDS.length) return 1;
      const key = n * 16 + f;
      const known = memo.get(key);
      if (known) return known.count;
      const { start, bits } = FIELDS[f]!;
      const end = start + bits;
      const segments: { node: number; lo: number; hi: number }[] = [];
      // The deepest variable of the field that each node's set depends on, or -1: none below it.
      const deepest = deepestOf[f]!;
      const depth = (m: number): number => {
        const known = deepest.get(m);
        if (known !== undefined) return known;
        const level = this.node[3 * m]!;
        let d = -1;
        if (level < end) {
          d = Math.max(depth(this.node[3 * m + 1]!), depth(this.node[3 * m + 2]!));
          if (d < 0 && level >= start) d = level;
        }
        deepest.set(m, d);
        return d;
      };
      // Above the source, the fields come in the variables' order: m's top is at v or below, its cofactor a child.
      const walk = (m: number, v: number, base: number) => {
        if (m === FALSE) return;
        const width = 2 ** (end - v);
        if (depth(m) < v) segments.push({ node: m, lo: base, hi: base + width - 1 });
        else {
          const at = this.node[3 * m] === v;
          walk(at ? this.node[3 * m + 1]! : m, v + 1, base);
          walk(at ? this.node[3 * m + 2]! : m, v + 1, base + width / 2);
        }
      };
      if (start >= SRC_START) this.sourceSegments(n, start, segments);
      else walk(n, start, 0);
      // Neighbouring values that lead to the same node join into one interval.
      segments.sort((x, y) => x.node - y.node || x.lo - y.lo);
      const joined: typeof segments = [];
      for (const s of segments) {
        const last = joined[joined.length - 1];
        if (last && last.node === s.node && last.hi + 1 === s.lo) last.hi = s.hi;
        else joined.push({ ...s });
      }
      joined.sort((x, y) => x.lo - y.lo);
      let count = 0;
      for (const s of joined) count += rec(s.node, f + 1);
      // Every node and field's boxes counted once, as when each was a list of its own: the same bound.
      made += count;
      if (made > most) {
        refuse?.();
        throw badRequest(`rules: an exact analysis of these rules needs more than ${most} boxes; give fewer rules`);
      }
      memo.set(key, { segments: joined, count });
      return count;
    };
    const out: Box[] = [];
    const bounds = new Array<number>(22);
    const emit = (n: number, f: number) => {
      if (f === FIELDS.length) return void out.push(bounds.slice());
      const { dim } = FIELDS[f]!;
      for (const s of memo.get(n * 16 + f)!.segments) {
        bounds[2 * dim] = s.lo;
        bounds[2 * dim + 1] = s.hi;
        emit(s.node, f + 1);
      }
    };
    if (u !== FALSE && rec(u, 0)) emit(u, 0);
    return out;
  }
}
