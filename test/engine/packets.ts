/**
 * The packet semantics the evaluators share (test code; nothing of src/engine): packets as boxes, what each kind
 * of node does to them (a NAT's forward table too), the simple paths of a requirement and what arrives along one. `evaluator.ts` (every simple
 * path) and `evaluator-pathfree.ts` (no path listed) decide requirements with it; see evaluator.ts for the meaning.
 */
import type { Node, Property } from '../../src/model/types.js';

export type Box = number[]; // [lo0, hi0, lo1, hi1, ...] over DIMENSIONS
const DIMENSIONS = 11;
export const SRC = 0;
export const DST = 4;
const SPORT = 8;
const DPORT = 9;
const PROTO = 10;
const PROTOCOLS: Record<string, [number, number]> = { TCP: [0, 0], UDP: [1, 1], OTHER: [2, 2], ANY: [0, 2] };
export const END_HOSTS = new Set(['WEBCLIENT', 'WEBSERVER', 'ENDHOST', 'ENDPOINT', 'MAILCLIENT', 'MAILSERVER']);

export const everything = (): Box => {
  const b: Box = [];
  for (let d = 0; d < DIMENSIONS; d++) b.push(0, d >= SPORT ? (d === PROTO ? 2 : 65535) : 255);
  return b;
};

const parsed = new Map<string, [number, number][] | undefined>();

/**
 * Octet ranges of an address pattern ("10.0.-1.1", "*") or prefix ("172.16.0.0/12"), or undefined; read once per
 * text (the evaluators ask the same few addresses at every node of every path), so never to be changed by a caller.
 */
export function octets(pattern: string): [number, number][] | undefined {
  if (!parsed.has(pattern)) parsed.set(pattern, parseOctets(pattern));
  return parsed.get(pattern);
}

function parseOctets(pattern: string): [number, number][] | undefined {
  if (pattern === '*') return [0, 1, 2, 3].map(() => [0, 255]);
  const [address, length] = pattern.split('/');
  if (length !== undefined) {
    const parts = octets(address!);
    const bits = Number(length);
    if (!parts || !parts.every(([lo, hi]) => lo === hi) || !(bits >= 0 && bits <= 32)) return undefined;
    // Octet k keeps its first min(8, bits - 8k) bits; the rest of it runs over every value.
    return parts.map(([v], k) => {
      const kept = Math.max(0, Math.min(8, bits - 8 * k));
      const free = 2 ** (8 - kept);
      const lo = v - (v % free);
      return [lo, lo + free - 1];
    });
  }
  const parts = pattern.split('.');
  if (parts.length !== 4) return undefined;
  const out: [number, number][] = [];
  for (const p of parts) {
    if (p === '-1' || p === '*') out.push([0, 255]);
    else if (/^\d{1,3}$/.test(p) && Number(p) <= 255) out.push([Number(p), Number(p)]);
    else return undefined;
  }
  return out;
}

function ports(text: string | undefined): [number, number] {
  if (text === undefined || text === '*' || text === '') return [0, 65535];
  const [a, b = a] = text.split('-').map(Number);
  return [a!, b!];
}

function restrict(box: Box, at: number, ranges: [number, number][]): Box | undefined {
  const out = box.slice();
  for (let k = 0; k < ranges.length; k++) {
    const i = 2 * (at + k);
    const [lo, hi] = ranges[k]!;
    if (out[i]! < lo) out[i] = lo;
    if (out[i + 1]! > hi) out[i + 1] = hi;
    if (out[i]! > out[i + 1]!) return undefined;
  }
  return out;
}

export function set(box: Box, at: number, ranges: [number, number][]): Box {
  const out = box.slice();
  for (let k = 0; k < ranges.length; k++) {
    const i = 2 * (at + k);
    out[i] = ranges[k]![0];
    out[i + 1] = ranges[k]![1];
  }
  return out;
}

/** Whether two boxes share no packet. */
function disjoint(a: Box, b: Box): boolean {
  for (let i = 0; i < a.length; i += 2) if (a[i]! > b[i + 1]! || b[i]! > a[i + 1]!) return true;
  return false;
}

export function intersect(a: Box, b: Box): Box | undefined {
  if (disjoint(a, b)) return undefined;
  const out = a.slice();
  for (let i = 0; i < a.length; i += 2) {
    if (b[i]! > out[i]!) out[i] = b[i]!;
    if (b[i + 1]! < out[i + 1]!) out[i + 1] = b[i + 1]!;
  }
  return out;
}

/**
 * a minus b, as disjoint boxes: dimension by dimension, the part of what is left below b's range, then above it,
 * then what is left narrowed to b's range. Called for every box at every rule of every path: copies, no slices.
 */
export function subtract(a: Box, b: Box): Box[] {
  if (disjoint(a, b)) return [a];
  const out: Box[] = [];
  const rest = a.slice();
  for (let i = 0; i < a.length; i += 2) {
    if (rest[i]! < b[i]!) {
      const below = rest.slice();
      below[i + 1] = b[i]! - 1;
      out.push(below);
      rest[i] = b[i]!;
    }
    if (rest[i + 1]! > b[i + 1]!) {
      const above = rest.slice();
      above[i] = b[i + 1]! + 1;
      out.push(above);
      rest[i + 1] = b[i + 1]!;
    }
  }
  return out;
}

export function minus(region: Box[], b: Box): Box[] {
  const out: Box[] = [];
  for (const a of region) for (const x of subtract(a, b)) out.push(x);
  return out;
}

export function within(region: Box[], b: Box): Box[] {
  const out: Box[] = [];
  for (const a of region) {
    const x = intersect(a, b);
    if (x) out.push(x);
  }
  return out;
}

/** The packets addressed to (at = DST) or sent from (at = SRC) an address pattern. */
export const addressed = (pattern: [number, number][], at: number) => set(everything(), at, pattern);

/** The protocols a traffic description or rule takes: with a port condition, only those of TCP and UDP. */
function protocolsOf(protocol: string | undefined, srcPort: string | undefined, dstPort: string | undefined) {
  const [lo, hi] = PROTOCOLS[protocol ?? 'ANY']!;
  const portless = [srcPort, dstPort].every((p) => ports(p)[0] === 0 && ports(p)[1] === 65535);
  return [lo, portless ? hi : Math.min(hi, PROTOCOLS.UDP![1])] as [number, number];
}

interface Match {
  source: string;
  destination: string;
  protocol?: string;
  srcPort?: string;
  dstPort?: string;
}

/** The packets of one match from `src` to `dst` (none when it can match none: OTHER with a port condition). */
function matchBox(r: Match, src: string, dst: string, sport: string | undefined, dport: string | undefined): Box[] {
  const [lo, hi] = protocolsOf(r.protocol, r.srcPort, r.dstPort);
  if (lo > hi) return [];
  let b = set(everything(), SRC, octets(src)!);
  b = set(b, DST, octets(dst)!);
  b = set(b, SPORT, [ports(sport)]);
  b = set(b, DPORT, [ports(dport)]);
  return [set(b, PROTO, [[lo, hi]])];
}

/**
 * The packets of `region` a rule matches: a directional rule also matches the packets going the other way, from its
 * destination to its source, with the ports swapped; a rule with `except` entries matches none of theirs.
 */
function matchedBy(rule: Match & { directional?: boolean; except?: Match[] }, region: Box[]): Box[] {
  const boxes = matchBox(rule, rule.source, rule.destination, rule.srcPort, rule.dstPort);
  if (rule.directional === true)
    boxes.push(...matchBox(rule, rule.destination, rule.source, rule.dstPort, rule.srcPort));
  let out: Box[] = [];
  let rest = region;
  for (const b of boxes) {
    out.push(...within(rest, b));
    rest = minus(rest, b);
  }
  for (const x of rule.except ?? [])
    for (const b of matchBox(x, x.source, x.destination, x.srcPort, x.dstPort)) out = minus(out, b);
  return out;
}

/** More simple paths than an evaluator lists. */
export class TooManyPaths extends Error {
  constructor(limit: number, src: string, dst: string) {
    super(`more than ${limit} paths from ${src} to ${dst}`);
    this.name = 'TooManyPaths';
  }
}

/** A requirement claimed satisfied (isSat) that does not hold, and why. */
export interface Violation {
  index: number;
  property: Property;
  why: string;
}

/** What leaves a node of the given kind when `region` enters it. `firewalls` false: firewalls forward everything. */
export function behave(node: Node, region: Box[], firewalls: boolean): Box[] {
  const own = octets(node.name);
  if (node.functionalType === 'NAT' && own) {
    const hidden = (node.configuration?.nat?.source ?? []).map((p) => octets(p)!);
    const toNat = addressed(own, DST);
    const out: Box[] = [];
    for (const box of region) {
      let fromHidden: Box[] = [];
      let rest = [box];
      for (const p of hidden) {
        fromHidden.push(...within(rest, addressed(p, SRC)));
        rest = minus(rest, addressed(p, SRC));
      }
      // From a hidden network: to the NAT delivered; to another hidden network unchanged; elsewhere as the NAT.
      fromHidden = minus(fromHidden, toNat);
      const translate = node.configuration?.nat?.translate;
      if (translate) {
        // Translated by destination: as the NAT where an entry matches (its protocol, port, source, destination),
        // whether the destination is hidden or not; unchanged elsewhere.
        let kept = fromHidden;
        for (const f of translate) {
          let match = set(everything(), PROTO, [protocolsOf(f.protocol, undefined, f.dstPort)]);
          match = set(match, DPORT, [ports(f.dstPort)]);
          if (f.src !== undefined) match = set(match, SRC, octets(f.src)!);
          match = set(match, DST, octets(f.dst)!);
          out.push(...within(kept, match).map((b) => set(b, SRC, own)));
          kept = minus(kept, match);
        }
        out.push(...kept);
      }
      let outward = translate ? [] : fromHidden;
      for (const p of hidden) {
        out.push(...within(outward, addressed(p, DST)));
        outward = minus(outward, addressed(p, DST));
      }
      out.push(...outward.map((b) => set(b, SRC, own)));
      // From elsewhere: to the NAT (not from the NAT itself) turned towards each hidden network; the rest unchanged.
      const inbound = minus(within(rest, toNat), addressed(own, SRC));
      // A NAT translating by destination delivers what comes to it as one with an empty table does.
      const forward = node.configuration?.nat?.forward ?? (translate ? [] : undefined);
      if (!forward) {
        for (const b of inbound) for (const p of hidden) out.push(set(b, DST, p));
        out.push(...minus(rest, toNat));
        continue;
      }
      // A forward table: the first entry a packet matches (protocol, destination port, the entry's source if it
      // names one, its destination: the NAT unless it names another) sends it to the entry's host, with the
      // entry's port if it has one; a packet to the NAT no entry matches is delivered there, any other goes on.
      let open = [...inbound, ...minus(minus(rest, toNat), addressed(own, SRC))];
      for (const f of forward) {
        let match = set(everything(), PROTO, [protocolsOf(f.protocol, undefined, f.dstPort)]);
        match = set(match, DPORT, [ports(f.dstPort)]);
        if (f.src !== undefined) match = set(match, SRC, octets(f.src)!);
        match = set(match, DST, f.dst === undefined ? own : octets(f.dst)!);
        for (const b of within(open, match)) {
          const sent = set(b, DST, octets(f.to)!);
          out.push(f.toPort === undefined ? sent : set(sent, DPORT, [ports(f.toPort)]));
        }
        open = minus(open, match);
      }
      out.push(...minus(open, toNat), ...within(minus(rest, toNat), addressed(own, SRC)));
    }
    return out;
  }
  let passed = region;
  if (node.functionalType === 'FIREWALL' && firewalls) {
    const fw = node.configuration?.firewall;
    const rules = fw?.elements ?? [];
    let undecided = region;
    const allowed: Box[] = [];
    for (const rule of rules) {
      if (!undecided.length) break;
      const matched = matchedBy(rule, undecided);
      if ((rule.action ?? 'DENY') === 'ALLOW') allowed.push(...matched);
      for (const b of matched) undecided = minus(undecided, b);
    }
    if (fw?.defaultAction === 'ALLOW') allowed.push(...undecided);
    passed = allowed;
  }
  return own ? minus(passed, addressed(own, DST)) : passed;
}

/**
 * The simple paths from src to dst (end hosts never transit), at most `limit` of them; the search also stops after
 * `limit` x 50 steps, since branches that cannot reach dst again are as many as the paths on a redundant network.
 */
export function simplePaths(nodes: Map<string, Node>, src: string, dst: string, limit: number): string[][] {
  // The walk runs over numbers (each node's neighbours in their order, repeats kept): on a redundant fabric it takes
  // limit x 50 steps per requirement before it gives up, and string-keyed lookups made it most of a test's time.
  const names = [...nodes.keys()];
  const at = new Map(names.map((k, i) => [k, i]));
  const target = at.get(dst) ?? -1;
  const transit = names.map((k) => !END_HOSTS.has(nodes.get(k)!.functionalType ?? ''));
  const adjacent = names.map((k) => (nodes.get(k)!.neighbour ?? []).flatMap((nb) => at.get(nb.name) ?? []));
  const paths: string[][] = [];
  const start = at.get(src);
  if (start === undefined) return paths;
  const stack = [start];
  const on = new Uint8Array(names.length);
  on[start] = 1;
  let steps = 0;
  const walk = (from: number) => {
    if (++steps > limit * 50) throw new TooManyPaths(limit, src, dst);
    for (const nb of adjacent[from]!) {
      if (on[nb]) continue;
      if (nb === target) {
        paths.push([...stack.map((k) => names[k]!), dst]);
        if (paths.length > limit) throw new TooManyPaths(limit, src, dst);
        continue;
      }
      if (!transit[nb]) continue;
      on[nb] = 1;
      stack.push(nb);
      walk(nb);
      stack.pop();
      on[nb] = 0;
    }
  };
  walk(start);
  return paths;
}

/**
 * The requirement's packets before any destination is set: its source, ports and protocol (undefined when none:
 * OTHER with a port condition).
 */
export function requirementBox(p: Property): Box | undefined {
  let base: Box | undefined = set(everything(), SRC, octets(p.src)!);
  base = restrict(base, SPORT, [ports(p.srcPort)]);
  base = base && restrict(base, DPORT, [ports(p.dstPort)]);
  return base && restrict(base, PROTO, [protocolsOf(p.lv4Proto, p.srcPort, p.dstPort)]);
}

/** Is a node a NAT with an address (one that can hide and translate)? */
export const isNat = (node: Node) => node.functionalType === 'NAT' && octets(node.name) !== undefined;

/** What of the requirement's traffic arrives at its destination along one path. */
export function arrives(nodes: Map<string, Node>, p: Property, path: string[], firewalls: boolean): Box[] {
  const dst = octets(p.dst)!;
  const base = requirementBox(p);
  if (!base) return [];
  const nats = path.slice(1, -1).filter((n) => isNat(nodes.get(n)!));
  let region = [set(base, DST, dst), ...nats.map((n) => set(base, DST, octets(n)!))];
  for (const name of path.slice(1, -1)) region = behave(nodes.get(name)!, region, firewalls);
  return within(region, addressed(dst, DST));
}
