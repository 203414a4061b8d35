/**
 * Exact packet-space arithmetic. A packet is (source address, destination address, source port, destination port,
 * protocol); every set the engine handles is a union of boxes: 11 integer intervals, one per address octet, port
 * and protocol. Address patterns with -1 octets, port ranges and protocol sets are all boxes, so intersections of
 * partially overlapping ranges or crossing wildcards are exact (engine.md A.2).
 */
import { parseAddress, parsePorts, type PortRange } from './address.js';

/** [lo0, hi0, lo1, hi1, ...] over the dimensions below. */
export type Box = readonly number[];

export const DIMS = 11;
export const SRC = 0; // octets 0..3
export const DST = 4; // octets 4..7
export const SPORT = 8;
export const DPORT = 9;
export const PROTO = 10; // 0 TCP, 1 UDP, 2 OTHER
export const PROTOCOLS = ['TCP', 'UDP', 'OTHER'] as const;

const FULL: number[] = [];
for (let d = 0; d < DIMS; d++) FULL.push(0, d === SPORT || d === DPORT ? 65535 : d === PROTO ? 2 : 255);
export const UNIVERSE: Box = FULL;

export function octetBounds(pattern: string): number[] {
  const octets = parseAddress(pattern);
  if (!octets) throw new Error(`not an address pattern: ${pattern}`);
  return octets.flatMap((o) => (o === -1 ? [0, 255] : [o, o]));
}

export function protoBounds(proto: string | undefined): [number, number] {
  const k = PROTOCOLS.indexOf((proto ?? 'ANY') as (typeof PROTOCOLS)[number]);
  return k < 0 ? [0, 2] : [k, k];
}

export interface Traffic {
  src: string;
  dst: string;
  srcPort?: string;
  dstPort?: string;
  proto?: string;
}

export function boxOf(t: Traffic): Box {
  const sp = parsePorts(t.srcPort) as PortRange;
  const dp = parsePorts(t.dstPort) as PortRange;
  return [...octetBounds(t.src), ...octetBounds(t.dst), sp.lo, sp.hi, dp.lo, dp.hi, ...protoBounds(t.proto)];
}

export function intersect(a: Box, b: Box): Box | undefined {
  const out = new Array<number>(2 * DIMS);
  for (let i = 0; i < 2 * DIMS; i += 2) {
    const lo = a[i]! > b[i]! ? a[i]! : b[i]!;
    const hi = a[i + 1]! < b[i + 1]! ? a[i + 1]! : b[i + 1]!;
    if (lo > hi) return undefined;
    out[i] = lo;
    out[i + 1] = hi;
  }
  return out;
}

export function contains(outer: Box, inner: Box): boolean {
  for (let i = 0; i < 2 * DIMS; i += 2) if (inner[i]! < outer[i]! || inner[i + 1]! > outer[i + 1]!) return false;
  return true;
}

/** a minus b, as disjoint boxes. */
export function subtract(a: Box, b: Box): Box[] {
  if (!intersect(a, b)) return [a];
  const out: Box[] = [];
  const rest = [...a];
  for (let d = 0; d < DIMS; d++) {
    const lo = 2 * d;
    const hi = lo + 1;
    if (rest[lo]! < b[lo]!) {
      const part = [...rest];
      part[hi] = b[lo]! - 1;
      out.push(part);
      rest[lo] = b[lo]!;
    }
    if (rest[hi]! > b[hi]!) {
      const part = [...rest];
      part[lo] = b[hi]! + 1;
      out.push(part);
      rest[hi] = b[hi]!;
    }
  }
  return out;
}

export const boxKey = (b: Box) => b.join(',');

/** Sets one address (octets starting at `at`) of every packet to the given pattern's bounds. */
export function rewrite(b: Box, at: number, bounds: number[]): Box {
  const out = [...b];
  for (let k = 0; k < 8; k++) out[2 * at + k] = bounds[k]!;
  return out;
}

export const regionIntersects = (region: Box[], b: Box) => region.some((r) => intersect(r, b) !== undefined);

export function regionIntersect(region: Box[], b: Box): Box[] {
  const out: Box[] = [];
  for (const r of region) {
    const x = intersect(r, b);
    if (x) out.push(x);
  }
  return out;
}

export function regionSubtract(region: Box[], b: Box): Box[] {
  return region.flatMap((r) => subtract(r, b));
}

/** A class of the partition: a set of packets no predicate tells apart. */
export interface PacketClass {
  id: number;
  boxes: Box[];
  /** Ids of the predicates that contain the class. */
  members: ReadonlySet<number>;
}

/**
 * The coarsest partition of the packets covered by some "covering" predicate such that every predicate (covering
 * or refining) is a union of classes (atomic predicates, Yang and Lam). Refining predicates, such as firewall
 * rules, split the classes but add no packets of their own.
 */
export class Partition {
  private pieces: { box: Box; members: number[] }[] = [];
  private readonly ids = new Map<string, number>();

  /**
   * Returns the predicate's id; equal boxes share one. Covering predicates must all be added before refining ones
   * (the engine adds traffic first, then firewall rules).
   */
  add(box: Box, covering: boolean): number {
    const key = boxKey(box);
    const known = this.ids.get(key);
    if (known !== undefined) return known;
    const id = this.ids.size;
    this.ids.set(key, id);
    const next: { box: Box; members: number[] }[] = [];
    let uncovered: Box[] = covering ? [box] : [];
    for (const piece of this.pieces) {
      const inter = intersect(piece.box, box);
      if (!inter) {
        next.push(piece);
        continue;
      }
      next.push({ box: inter, members: [...piece.members, id] });
      for (const part of subtract(piece.box, box)) next.push({ box: part, members: piece.members });
      if (uncovered.length) uncovered = regionSubtract(uncovered, piece.box);
    }
    for (const part of uncovered) next.push({ box: part, members: [id] });
    this.pieces = next;
    return id;
  }

  classes(): PacketClass[] {
    const byMembers = new Map<string, PacketClass>();
    for (const piece of this.pieces) {
      const key = piece.members.join(',');
      let c = byMembers.get(key);
      if (!c) {
        c = { id: byMembers.size, boxes: [], members: new Set(piece.members) };
        byMembers.set(key, c);
      }
      c.boxes.push(piece.box);
    }
    return [...byMembers.values()];
  }
}

/** The packets a firewall rule matches. */
export function ruleBox(rule: {
  source: string;
  destination: string;
  srcPort?: string;
  dstPort?: string;
  protocol?: string;
}): Box {
  return boxOf({
    src: rule.source,
    dst: rule.destination,
    srcPort: rule.srcPort,
    dstPort: rule.dstPort,
    proto: rule.protocol,
  });
}
