/**
 * Brute force for the analysis tests: seeded random rule lists over a small vocabulary of addresses, protocols and
 * ports, and every packet of the packet space up to equivalence. A rule matches the packets of `ruleBox` (the
 * engine's one meaning of a rule); which packets the lists cannot tell apart follows from the boxes in play: per
 * dimension, the values between two consecutive bounds of any box behave alike, so one packet per cell of that grid
 * stands for all of its cell, and the verdicts below are those of every packet. Nothing here uses box subtraction;
 * the rule lists are decided by `ruleBox` alone.
 */
import { random } from '../../../src/bench/topology.js';
import { DIMS, PROTOCOLS, UNIVERSE, ruleBox, type Box } from '../../../src/model/space.js';
import type { Elements, Node } from '../../../src/model/types.js';

export { random };

/**
 * Octets 1 and 2 are mostly any, so that the grid stays small; -1 before a fixed octet crosses prefixes; CIDR
 * prefixes cut an octet (/9, /10) or the last one (/31); some fix the first three octets.
 */
const ADDRESSES = [
  '10.-1.-1.1',
  '10.-1.-1.2',
  '10.-1.-1.-1',
  '*',
  '-1.-1.-1.2',
  '11.-1.-1.-1',
  '10.0.-1.-1',
  '10.0.0.0/9',
  '10.64.0.0/10',
  '10.0.0.0/31',
  // Three leading octets fixed: pieces of these take the analyses' prefix lookup (decide.ts).
  '10.0.0.1',
  '10.0.0.-1',
  '-1.0.0.1',
];
const PROTOS = [undefined, 'ANY', 'TCP', 'UDP', 'OTHER'] as const;
const DST_PORTS = [undefined, undefined, '*', '80', '22-80', '443', '0-1023'];
const SRC_PORTS = [undefined, undefined, undefined, '1000-2000', '53'];

const pick = <T>(rnd: () => number, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;

export function randomElement(rnd: () => number, id?: number): Elements {
  const r = rnd();
  const action = r < 0.45 ? 'ALLOW' : r < 0.9 ? 'DENY' : r < 0.97 ? undefined : 'ALLOW_COND';
  const e: Elements = { source: pick(rnd, ADDRESSES), destination: pick(rnd, ADDRESSES) };
  if (id !== undefined) e.id = id;
  if (action) e.action = action;
  const proto = pick(rnd, PROTOS);
  if (proto) e.protocol = proto;
  // Ports constrain TCP and UDP only: OTHER with ports is refused, so OTHER rules get none.
  const dport = pick(rnd, DST_PORTS);
  if (dport && proto !== 'OTHER') e.dstPort = dport;
  const sport = pick(rnd, SRC_PORTS);
  if (sport && proto !== 'OTHER') e.srcPort = sport;
  return e;
}

/** A firewall node of 1 to `most` random rules (ids on most lists), with either default or none. */
export function randomFirewall(rnd: () => number, most = 8, name = '30.0.0.1'): Node {
  const n = 1 + Math.floor(rnd() * most);
  const ids = rnd() < 0.8;
  const elements = Array.from({ length: n }, (_, k) => randomElement(rnd, ids ? 100 + k : undefined));
  const d = rnd();
  const defaultAction = d < 0.45 ? 'ALLOW' : d < 0.9 ? 'DENY' : undefined;
  return {
    name,
    functionalType: 'FIREWALL',
    configuration: { name: 'random', firewall: { ...(defaultAction ? { defaultAction } : {}), elements } },
  };
}

export const elementsOf = (node: Node) => node.configuration!.firewall!.elements ?? [];
export const defaultAllows = (node: Node) => node.configuration!.firewall!.defaultAction === 'ALLOW';

/**
 * The grid the boxes draw: per dimension, the cells between consecutive bounds of any box. A box whose bounds are
 * among the cuts (every box given) is a union of whole cells, and packets of one cell are in the same boxes.
 */
export class Grid {
  private readonly cuts: number[][] = [];
  private readonly widths: number[][] = [];
  private readonly stride: number[] = [];
  readonly cells: number;

  constructor(boxes: readonly Box[]) {
    let cells = 1;
    for (let d = DIMS - 1; d >= 0; d--) {
      const top = UNIVERSE[2 * d + 1]!;
      const cuts = new Set([0]);
      for (const b of boxes) {
        cuts.add(b[2 * d]!);
        if (b[2 * d + 1]! < top) cuts.add(b[2 * d + 1]! + 1);
      }
      const sorted = [...cuts].sort((x, y) => x - y);
      this.cuts[d] = sorted;
      this.widths[d] = sorted.map((c, k) => (k + 1 < sorted.length ? sorted[k + 1]! : top + 1) - c);
      this.stride[d] = cells;
      cells *= sorted.length;
    }
    this.cells = cells;
  }

  /**
   * The packets a cell holds: the product of its widths, the first 6 dimensions' and the last 5's each exact as a
   * number (at most 2^48 and 3 * 2^48), then one bigint product (a bigint per dimension was most of a cell's cost).
   */
  size(cell: number): bigint {
    let [head, tail] = [1, 1];
    for (let d = 0; d < DIMS; d++) {
      const w = this.widths[d]![Math.floor(cell / this.stride[d]!) % this.cuts[d]!.length]!;
      if (d < 6) head *= w;
      else tail *= w;
    }
    return BigInt(head) * BigInt(tail);
  }

  /** Dimension d of a cell's packet (its lowest value there). */
  value(cell: number, d: number): number {
    const cuts = this.cuts[d]!;
    return cuts[Math.floor(cell / this.stride[d]!) % cuts.length]!;
  }

  /** One packet of a cell. */
  packet(cell: number): number[] {
    return this.cuts.map((_, d) => this.value(cell, d));
  }

  /**
   * The cells of a box, the last dimension varying fastest; throws when the box does not follow the grid (its bounds
   * were not given). Written into one array of the right length: building the product a dimension at a time made an
   * array per dimension and was most of the analysis tests' CPU; a typed array, as a plain one of a million numbers
   * cost more to make and fill.
   */
  cellsIn(b: Box): Int32Array {
    const [from, to] = this.span(b);
    let total = 1;
    for (let d = 0; d < DIMS; d++) total *= to[d]! - from[d]! + 1;
    const out = new Int32Array(total);
    const at = from.slice();
    const last = DIMS - 1;
    const step = this.stride[last]!;
    let i = 0;
    for (;;) {
      let base = 0;
      for (let d = 0; d < last; d++) base += at[d]! * this.stride[d]!;
      for (let k = from[last]!; k <= to[last]!; k++) out[i++] = base + k * step;
      // The next combination of the other dimensions, the one before the last moving first.
      let d = last - 1;
      while (d >= 0 && at[d] === to[d]) {
        at[d] = from[d]!;
        d--;
      }
      if (d < 0) return out;
      at[d]!++;
    }
  }

  /** Per dimension, the first and last cut index of a box; throws when the box does not follow the grid. */
  private span(b: Box): [number[], number[]] {
    const from: number[] = [];
    const to: number[] = [];
    for (let d = 0; d < DIMS; d++) {
      const cuts = this.cuts[d]!;
      const top = UNIVERSE[2 * d + 1]!;
      from[d] = cuts.indexOf(b[2 * d]!);
      to[d] = b[2 * d + 1]! === top ? cuts.length - 1 : cuts.indexOf(b[2 * d + 1]! + 1) - 1;
      if (from[d]! < 0 || to[d]! < from[d]!)
        throw new Error(`box ${b.join(',')} does not follow the grid in dimension ${d}`);
    }
    return [from, to];
  }

  /**
   * Per cell, bit k set when the cell lies in boxes[k] (at most 31 boxes): a cell lies in a box when it does in
   * every dimension, so its mask is the meet of one mask per dimension (the boxes covering its cut there), taken
   * dimension by dimension over the cells in their order, and no further where it is already empty (those cells
   * stay 0). Writing each box's cells instead cost as many writes as the boxes' cells together, a list's rules
   * mostly overlapping.
   */
  masks(boxes: readonly Box[]): Int32Array {
    const m = new Int32Array(this.cells);
    const per = this.cuts.map((cuts) => new Int32Array(cuts.length));
    boxes.forEach((b, k) => {
      const [from, to] = this.span(b);
      for (let d = 0; d < DIMS; d++) for (let i = from[d]!; i <= to[d]!; i++) per[d]![i]! |= 1 << k;
    });
    const last = DIMS - 1;
    const fill = (d: number, base: number, meet: number): void => {
      const bits = per[d]!;
      const stride = this.stride[d]!;
      if (d === last) {
        for (let i = 0; i < bits.length; i++) m[base + i * stride] = meet & bits[i]!;
        return;
      }
      for (let i = 0; i < bits.length; i++) {
        const next = meet & bits[i]!;
        if (next !== 0) fill(d + 1, base + i * stride, next);
      }
    };
    if (boxes.length) fill(0, 0, -1);
    return m;
  }
}

/** The lowest set bit of a mask (the first rule matching), or -1. */
export const lowest = (m: number) => (m === 0 ? -1 : 31 - Math.clz32(m & -m));

export const inBox = (p: readonly number[], b: Box) => p.every((v, d) => v >= b[2 * d]! && v <= b[2 * d + 1]!);

export const allowsBy = (elements: readonly Elements[], defaultAllow: boolean, k: number) =>
  k < 0 ? defaultAllow : elements[k]!.action === 'ALLOW';

export const rulesBoxes = (elements: readonly Elements[]) => elements.map((e) => ruleBox(e));

/** A box from the text of a packet class (the inverse of classOf), so that the tests read what people read. */
export function boxOfClass(c: {
  source: string;
  destination: string;
  protocol: string;
  srcPort: string;
  dstPort: string;
}): Box {
  const address = (text: string): number[] => {
    if (text === '*') return [0, 255, 0, 255, 0, 255, 0, 255];
    const cidr = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(text);
    if (cidr) {
      const len = Number(cidr[5]);
      return [1, 2, 3, 4].flatMap((k) => {
        const v = Number(cidr[k]);
        const bits = Math.max(0, Math.min(8, len - 8 * (k - 1)));
        const size = 2 ** (8 - bits);
        return [v, v + size - 1];
      });
    }
    const parts = text.split('.');
    if (parts.length !== 4) throw new Error(`not an address class: ${text}`);
    return parts.flatMap((o) => {
      if (o === '*') return [0, 255];
      const m = /^(\d+)(?:-(\d+))?$/.exec(o);
      if (!m) throw new Error(`not an octet: ${o} in ${text}`);
      return [Number(m[1]), Number(m[2] ?? m[1])];
    });
  };
  const ports = (text: string): number[] => {
    if (text === '*') return [0, 65535];
    const m = /^(\d+)(?:-(\d+))?$/.exec(text);
    if (!m) throw new Error(`not a port range: ${text}`);
    return [Number(m[1]), Number(m[2] ?? m[1])];
  };
  const protos =
    c.protocol === 'ANY'
      ? [0, 2]
      : c.protocol.split(',').map((p) => PROTOCOLS.indexOf(p as (typeof PROTOCOLS)[number]));
  if (protos.some((k) => k < 0)) throw new Error(`not a protocol set: ${c.protocol}`);
  return [
    ...address(c.source),
    ...address(c.destination),
    ...ports(c.srcPort),
    ...ports(c.dstPort),
    Math.min(...protos),
    Math.max(...protos),
  ];
}
