/**
 * Exact packet-space arithmetic. A packet is (source address, destination address, source port, destination port,
 * protocol); every set the engine handles is a union of boxes: 11 integer intervals, one per address octet, port
 * and protocol. Address patterns with -1 octets, port ranges and protocol sets are all boxes, so intersections of
 * partially overlapping ranges or crossing wildcards are exact (engine.md A.2). A CIDR prefix is one box too: its
 * leading octets fixed, the octet it cuts an aligned interval (`172.16.0.0/12`: 172, 16-31, any, any).
 *
 * Ports constrain TCP and UDP only (docs/SEMANTICS.md): packets of another protocol have no ports, so in every box
 * the engine makes, a box that holds OTHER packets holds them for every port value (the port dimensions are full),
 * and a box with a port condition holds TCP or UDP packets only. `boxOf` builds boxes so, `intersect` and
 * `subtract` keep them so (subtract splits the protocol before the ports), and so every set is a union of such
 * boxes: no rule or requirement can tell OTHER packets apart by a port they do not have.
 */
import { portsProblem, parsePorts, ruleAddressBounds, type PortRange } from './address.js';
import { badRequest, quote } from './errors.js';

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

/** Octet intervals by address text: the engine reads the same few addresses for every rule and class it builds. */
const parsedBounds = new Map<string, readonly number[]>();

/** The octet intervals of an address pattern or (in a rule) a CIDR prefix. */
export function octetBounds(address: string): number[] {
  let bounds = parsedBounds.get(address);
  if (!bounds) {
    bounds = ruleAddressBounds(address);
    if (!bounds) throw new Error(`not an address pattern or prefix: ${address}`);
    // Bounded, for a long-running serve that reads many documents.
    if (parsedBounds.size >= 4096) parsedBounds.clear();
    parsedBounds.set(address, bounds);
  }
  return [...bounds];
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

/** The protocols a port condition keeps. */
export const TCP_AND_UDP: readonly [number, number] = [0, 1];

/** The packets of a traffic description; a port condition keeps TCP and UDP only. */
export function boxOf(t: Traffic): Box {
  const problem = portsProblem(t.proto, t.srcPort, t.dstPort);
  if (problem) throw badRequest(`ports ${quote(t.srcPort ?? '*')} -> ${quote(t.dstPort ?? '*')}: ${problem}`);
  const sp = parsePorts(t.srcPort) as PortRange;
  const dp = parsePorts(t.dstPort) as PortRange;
  const ported = sp.lo !== 0 || sp.hi !== 65535 || dp.lo !== 0 || dp.hi !== 65535;
  const [lo, hi] = protoBounds(t.proto);
  const proto = ported ? [lo, Math.min(hi, TCP_AND_UDP[1])] : [lo, hi];
  return [...octetBounds(t.src), ...octetBounds(t.dst), sp.lo, sp.hi, dp.lo, dp.hi, ...proto];
}

/** Whether two boxes share a packet (no box is made: most pairs tested in a partition do not). */
export function meet(a: Box, b: Box): boolean {
  for (let i = 0; i < 2 * DIMS; i += 2) if (a[i]! > b[i + 1]! || b[i]! > a[i + 1]!) return false;
  return true;
}

export function intersect(a: Box, b: Box): Box | undefined {
  if (!meet(a, b)) return undefined;
  const out = new Array<number>(2 * DIMS);
  for (let i = 0; i < 2 * DIMS; i += 2) {
    out[i] = a[i]! > b[i]! ? a[i]! : b[i]!;
    out[i + 1] = a[i + 1]! < b[i + 1]! ? a[i + 1]! : b[i + 1]!;
  }
  return out;
}

export function contains(outer: Box, inner: Box): boolean {
  for (let i = 0; i < 2 * DIMS; i += 2) if (inner[i]! < outer[i]! || inner[i + 1]! > outer[i + 1]!) return false;
  return true;
}

/**
 * The order in which `subtract` cuts dimensions: the protocol first, so that a piece holding OTHER packets keeps
 * every port value (see the top of this file), then the others in order.
 */
const CUT_ORDER = [PROTO, ...Array.from({ length: DIMS - 1 }, (_, d) => d)];

/** a minus b, as disjoint boxes. */
export function subtract(a: Box, b: Box): Box[] {
  if (!meet(a, b)) return [a];
  const out: Box[] = [];
  const rest = [...a];
  for (const d of CUT_ORDER) {
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

/**
 * Sets dimensions of every packet, from `at` on, to `bounds` (lo, hi per dimension): one address (its 4 octets'
 * bounds) or one field.
 */
export function rewrite(b: Box, at: number, bounds: readonly number[]): Box {
  const out = [...b];
  for (let k = 0; k < bounds.length; k++) out[2 * at + k] = bounds[k]!;
  return out;
}

export const regionIntersects = (region: Box[], b: Box) => region.some((r) => meet(r, b));

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

/** A firewall rule's fields that say which packets it matches. */
export interface RuleFields {
  source: string;
  destination: string;
  srcPort?: string;
  dstPort?: string;
  protocol?: string;
  directional?: boolean;
  /** Packets the rule leaves out, each as a rule's match (docs/SEMANTICS.md "Rules with except"). */
  except?: readonly Omit<RuleFields, 'except' | 'directional'>[];
}

/** The packets a firewall rule matches in its own direction (from source to destination). */
export function ruleBox(rule: RuleFields): Box {
  return boxOf({
    src: rule.source,
    dst: rule.destination,
    srcPort: rule.srcPort,
    dstPort: rule.dstPort,
    proto: rule.protocol,
  });
}

/** The same packets the other way: source and destination addresses swapped, and their ports. */
export function reversedBox(b: Box): Box {
  const out = [...b];
  for (let k = 0; k < 8; k++) {
    out[2 * SRC + k] = b[2 * DST + k]!;
    out[2 * DST + k] = b[2 * SRC + k]!;
  }
  for (const [x, y] of [
    [SPORT, DPORT],
    [DPORT, SPORT],
  ] as const) {
    out[2 * x] = b[2 * y]!;
    out[2 * x + 1] = b[2 * y + 1]!;
  }
  return out;
}

/**
 * Every packet a firewall rule matches (docs/SEMANTICS.md): its box, and with `directional` true the reverse box
 * as well (the replies' direction), at the rule's own place in first-match order, as every translator deploys it.
 */
export function ruleBoxes(rule: RuleFields): Box[] {
  const box = ruleBox(rule);
  return rule.directional === true ? [box, reversedBox(box)] : [box];
}

/**
 * The packets a rule leaves out (its `except` boxes): it matches a packet of its boxes that lies in none of them.
 * Rules with except are imported ones, never directional (the schema refuses both).
 */
export function exceptBoxes(rule: RuleFields): readonly Box[] {
  const except = rule.except;
  if (!except?.length) return [];
  // Read once per list: first match asks every rule of a 20,000-line import for every class.
  let boxes = exceptKnown.get(except);
  if (!boxes) exceptKnown.set(except, (boxes = except.map(ruleBox)));
  return boxes;
}

const exceptKnown = new WeakMap<object, Box[]>();

/** The packets a rule matches as plain boxes: its boxes less its except boxes (for what needs them so). */
export function matchRegion(rule: RuleFields): Box[] {
  let out = ruleBoxes(rule);
  for (const e of exceptBoxes(rule)) out = regionSubtract(out, e);
  return out;
}

/**
 * Whether a rule matches every packet of an atomic class, given one of its boxes: a class that the rule's boxes and
 * except boxes refine lies within one of them or outside all, so it is matched when inside a box and outside every
 * except box.
 */
export const ruleHolds = (rule: RuleFields, classBox: Box) =>
  ruleBoxes(rule).some((b) => contains(b, classBox)) && !exceptBoxes(rule).some((e) => meet(e, classBox));

/** The number of packets in a box (exact: a box can hold about 2^98 packets). */
export function volume(b: Box): bigint {
  let n = 1n;
  for (let i = 0; i < 2 * DIMS; i += 2) n *= BigInt(b[i + 1]! - b[i]! + 1);
  return n;
}

/**
 * The same packets in fewer boxes: boxes that differ in one dimension only, where their intervals touch or overlap,
 * become one, round after round over the dimensions until no two do (or COALESCE_ROUNDS). The union is unchanged;
 * disjoint boxes stay disjoint. Sorted, so that equal unions given in any order of the same pieces read alike.
 */
export function coalesce(boxes: readonly Box[], work?: (boxes: number) => void): Box[] {
  return coalesceWith(
    boxes.map((box) => ({ box, tag: undefined })),
    () => undefined,
    work,
  ).map((x) => x.box);
}

/** Whether two boxes have the same bounds in every dimension but `d`. */
function alikeBut(a: Box, b: Box, d: number): boolean {
  for (let i = 0; i < 2 * DIMS; i++) if (i >> 1 !== d && a[i] !== b[i]) return false;
  return true;
}

/** Rounds of `coalesce` over every dimension at most; later rounds seldom join anything. */
const COALESCE_ROUNDS = 4;

/**
 * `coalesce` for boxes that carry something: when two boxes become one, `merge` joins what they carry, in no fixed
 * order (allows' lines are a set). `work` is told how many boxes each step looks at (a caller bounding its work
 * counts them).
 */
export function coalesceWith<T>(
  items: readonly { box: Box; tag: T }[],
  merge: (a: T, b: T) => T,
  work: (boxes: number) => void = () => {},
): { box: Box; tag: T }[] {
  const out = items.map((x) => ({ box: [...x.box], tag: x.tag }));
  // Typed arrays made once per call: most calls coalesce a handful of boxes, where a map, a set and a sort per step
  // were most of the cost. Per box: a hash of each dimension's bounds and their sum, so that the hash of the other
  // bounds is one subtraction per step; per step an open-addressing table of those hashes (slot -> first box + 1),
  // per box the next box of the same hash (0: none; -1 once joined into another), and per first box the last.
  const n = out.length;
  const [parts, sums] = [new Int32Array(n * DIMS), new Int32Array(n)];
  const [hashes, next, tail] = [new Int32Array(n), new Int32Array(n), new Int32Array(n)];
  const table = new Int32Array(n < 2 ? 1 : 2 ** Math.ceil(Math.log2(2 * n)));
  const mask = table.length - 1;
  const part = (box: Box, d: number) =>
    (mix((box[2 * d]! << 5) | (2 * d)) + mix((box[2 * d + 1]! << 5) | (2 * d + 1))) | 0;
  out.forEach(({ box }, k) => {
    let sum = 0;
    for (let d = 0; d < DIMS; d++) sum = (sum + (parts[k * DIMS + d] = part(box, d))) | 0;
    sums[k] = sum;
  });
  for (let merged = true, round = 0; merged && round < COALESCE_ROUNDS; round++) {
    merged = false;
    for (let d = 0; d < DIMS; d++) {
      work(out.length);
      if (out.length < 2) continue;
      const lo = 2 * d;
      const hi = lo + 1;
      // Boxes alike but in dimension d have the same hash of their other bounds (equal bounds are checked).
      table.fill(0);
      const heads: number[] = [];
      for (let k = 0; k < out.length; k++) {
        const h = (sums[k]! - parts[k * DIMS + d]!) | 0;
        hashes[k] = h;
        next[k] = 0;
        let slot = h & mask;
        while (table[slot] !== 0 && hashes[table[slot]! - 1] !== h) slot = (slot + 1) & mask;
        if (table[slot] === 0) table[slot] = tail[k] = k + 1;
        else {
          // After the last box of its hash so far: a chain of boxes in their order, from the first.
          const first = table[slot]! - 1;
          if (tail[first] === first + 1) heads.push(first);
          next[tail[first]! - 1] = tail[first] = k + 1;
        }
      }
      // Most steps have no group: no two hashes alike.
      let joined = false;
      for (const k of heads) {
        // The group's boxes by index, sorted by lower bound (stable: in their order where equal).
        const group: number[] = [];
        for (let j = k; j >= 0; j = next[j]! - 1) group.push(j);
        group.sort((x, y) => out[x]!.box[lo]! - out[y]!.box[lo]!);
        const open: number[] = [];
        for (const j of group) {
          const x = out[j]!;
          // Sorted by lower bound, a box can only join the last box alike (a hash collision is searched for).
          const last = open.length ? open[open.length - 1]! : -1;
          const at =
            last >= 0 && alikeBut(out[last]!.box, x.box, d)
              ? x.box[lo]! <= out[last]!.box[hi]! + 1
                ? last
                : -1
              : (open.find((c) => alikeBut(out[c]!.box, x.box, d) && x.box[lo]! <= out[c]!.box[hi]! + 1) ?? -1);
          if (at < 0) {
            open.push(j);
            continue;
          }
          const current = out[at]!;
          if (x.box[hi]! > current.box[hi]!) {
            current.box[hi] = x.box[hi]!;
            const was = parts[at * DIMS + d]!;
            parts[at * DIMS + d] = part(current.box, d);
            sums[at] = (sums[at]! + parts[at * DIMS + d]! - was) | 0;
          }
          current.tag = merge(current.tag, x.tag);
          // Left out below (the chain was read into the group).
          next[j] = -1;
          joined = true;
        }
      }
      if (!joined) continue;
      merged = true;
      let kept = 0;
      for (let k = 0; k < out.length; k++) {
        if (next[k] === -1) continue;
        out[kept] = out[k]!;
        sums[kept] = sums[k]!;
        parts.copyWithin(kept * DIMS, k * DIMS, (k + 1) * DIMS);
        kept++;
      }
      out.length = kept;
    }
  }
  return out.sort((x, y) => compareBoxes(x.box, y.box));
}

/** A 32-bit mix of a number (murmur3's finaliser), for the hashes of `coalesceWith`. */
function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return x ^ (x >>> 16);
}

/** Boxes in the order of their bounds, dimension by dimension. */
export function compareBoxes(a: Box, b: Box): number {
  for (let i = 0; i < 2 * DIMS; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}
