/**
 * An evaluator of simulation results that shares nothing with the engine's encoding: it walks every simple path of
 * the result network and applies each node's behaviour to sets of packets, then says which requirements claimed
 * satisfied (`isSat`) do not hold.
 *
 * Packets are boxes over 11 dimensions: the four octets of the source and of the destination address, the source
 * and destination port, and the protocol. A packet of protocol OTHER has no ports: its port dimensions are never
 * narrowed, and a port condition (of a rule or a requirement) holds TCP and UDP packets only (docs/SEMANTICS.md).
 * A rule address is an octet pattern or a CIDR prefix `A.B.C.D/P`, read here bit by bit: the addresses whose first
 * P bits equal A's. A node's behaviour (engine.md A.2, B 2.4 to 2.6):
 * - end hosts never forward; FIREWALL applies its rules first match in order (a rule without action denies, no match
 *   means the default action, DENY when absent);
 * - NAT with address N hiding the patterns P: from P to outside P (not N) the source becomes N; from outside P to N
 *   the destination becomes each pattern of P; between two of P unchanged; from P to N delivered there;
 * - every other node forwards unchanged, except packets addressed to it (its name as an address pattern), which are
 *   delivered there and leave the path.
 * Traffic of a requirement: its source and destination addresses, ports and protocol, and the same addressed to each
 * NAT on the path (the way to reach what a NAT hides). What arrives is what reaches the destination addressed to it.
 * Isolation: nothing arrives on any path. Reachability: something arrives on some path. Complete reachability: on
 * some path everything arrives that would arrive with every firewall removed.
 */
import { simulate } from '../../src/engine/simulate.js';
import type { NFV, Node, Property } from '../../src/model/types.js';

type Box = number[]; // [lo0, hi0, lo1, hi1, ...] over DIMENSIONS
const DIMENSIONS = 11;
const SRC = 0;
const DST = 4;
const SPORT = 8;
const DPORT = 9;
const PROTO = 10;
const PROTOCOLS: Record<string, [number, number]> = { TCP: [0, 0], UDP: [1, 1], OTHER: [2, 2], ANY: [0, 2] };
const END_HOSTS = new Set(['WEBCLIENT', 'WEBSERVER', 'ENDHOST', 'ENDPOINT', 'MAILCLIENT', 'MAILSERVER']);

const everything = (): Box => {
  const b: Box = [];
  for (let d = 0; d < DIMENSIONS; d++) b.push(0, d >= SPORT ? (d === PROTO ? 2 : 65535) : 255);
  return b;
};

/** Octet ranges of an address pattern ("10.0.-1.1", "*") or prefix ("172.16.0.0/12"), or undefined. */
function octets(pattern: string): [number, number][] | undefined {
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
  const out = [...box];
  for (const [k, [lo, hi]] of ranges.entries()) {
    out[2 * (at + k)] = Math.max(out[2 * (at + k)]!, lo);
    out[2 * (at + k) + 1] = Math.min(out[2 * (at + k) + 1]!, hi);
    if (out[2 * (at + k)]! > out[2 * (at + k) + 1]!) return undefined;
  }
  return out;
}

function set(box: Box, at: number, ranges: [number, number][]): Box {
  const out = [...box];
  for (const [k, [lo, hi]] of ranges.entries()) [out[2 * (at + k)], out[2 * (at + k) + 1]] = [lo, hi];
  return out;
}

function intersect(a: Box, b: Box): Box | undefined {
  const out: Box = [];
  for (let i = 0; i < a.length; i += 2) {
    const lo = Math.max(a[i]!, b[i]!);
    const hi = Math.min(a[i + 1]!, b[i + 1]!);
    if (lo > hi) return undefined;
    out.push(lo, hi);
  }
  return out;
}

/** a minus b, as disjoint boxes. */
function subtract(a: Box, b: Box): Box[] {
  if (!intersect(a, b)) return [a];
  const out: Box[] = [];
  let rest = [...a];
  for (let i = 0; i < a.length; i += 2) {
    if (rest[i]! < b[i]!) out.push([...rest.slice(0, i), rest[i]!, b[i]! - 1, ...rest.slice(i + 2)]);
    if (rest[i + 1]! > b[i + 1]!) out.push([...rest.slice(0, i), b[i + 1]! + 1, rest[i + 1]!, ...rest.slice(i + 2)]);
    rest = [...rest.slice(0, i), Math.max(rest[i]!, b[i]!), Math.min(rest[i + 1]!, b[i + 1]!), ...rest.slice(i + 2)];
  }
  return out;
}

const minus = (region: Box[], b: Box) => region.flatMap((a) => subtract(a, b));
const within = (region: Box[], b: Box) =>
  region.flatMap((a) => {
    const x = intersect(a, b);
    return x ? [x] : [];
  });

/** The packets addressed to (at = DST) or sent from (at = SRC) an address pattern. */
const addressed = (pattern: [number, number][], at: number) => set(everything(), at, pattern);

/** The protocols a traffic description or rule takes: with a port condition, only those of TCP and UDP. */
function protocolsOf(protocol: string | undefined, srcPort: string | undefined, dstPort: string | undefined) {
  const [lo, hi] = PROTOCOLS[protocol ?? 'ANY']!;
  const portless = [srcPort, dstPort].every((p) => ports(p)[0] === 0 && ports(p)[1] === 65535);
  return [lo, portless ? hi : Math.min(hi, PROTOCOLS.UDP![1])] as [number, number];
}

/**
 * Each rule's packets (none when it can match none: OTHER with a port condition); a directional rule also matches
 * the packets going the other way, from its destination to its source, with the ports swapped.
 */
function ruleBox(rule: NonNullable<NonNullable<Node['configuration']>['firewall']>['elements']): Box[][] {
  return (rule ?? []).map((r) => {
    const [lo, hi] = protocolsOf(r.protocol, r.srcPort, r.dstPort);
    if (lo > hi) return [];
    const one = (src: string, dst: string, sport: string | undefined, dport: string | undefined) => {
      let b = set(everything(), SRC, octets(src)!);
      b = set(b, DST, octets(dst)!);
      b = set(b, SPORT, [ports(sport)]);
      b = set(b, DPORT, [ports(dport)]);
      return set(b, PROTO, [[lo, hi]]);
    };
    const forward = one(r.source, r.destination, r.srcPort, r.dstPort);
    return r.directional === true ? [forward, one(r.destination, r.source, r.dstPort, r.srcPort)] : [forward];
  });
}

/** What leaves a node of the given kind when `region` enters it. `firewalls` false: firewalls forward everything. */
function behave(node: Node, region: Box[], firewalls: boolean): Box[] {
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
      let outward = fromHidden;
      for (const p of hidden) {
        out.push(...within(outward, addressed(p, DST)));
        outward = minus(outward, addressed(p, DST));
      }
      out.push(...outward.map((b) => set(b, SRC, own)));
      // From elsewhere: to the NAT (not from the NAT itself) turned towards each hidden network; the rest unchanged.
      const inbound = minus(within(rest, toNat), addressed(own, SRC));
      for (const b of inbound) for (const p of hidden) out.push(set(b, DST, p));
      out.push(...minus(rest, toNat));
    }
    return out;
  }
  let passed = region;
  if (node.functionalType === 'FIREWALL' && firewalls) {
    const fw = node.configuration?.firewall;
    const rules = fw?.elements ?? [];
    const boxes = ruleBox(rules);
    let undecided = region;
    const allowed: Box[] = [];
    boxes.forEach((rule, k) => {
      for (const b of rule) {
        if ((rules[k]!.action ?? 'DENY') === 'ALLOW') allowed.push(...within(undecided, b));
        undecided = minus(undecided, b);
      }
    });
    if (fw?.defaultAction === 'ALLOW') allowed.push(...undecided);
    passed = allowed;
  }
  return own ? minus(passed, addressed(own, DST)) : passed;
}

function simplePaths(nodes: Map<string, Node>, src: string, dst: string, limit: number): string[][] {
  const paths: string[][] = [];
  const stack = [src];
  const on = new Set([src]);
  const walk = (at: string) => {
    for (const nb of nodes.get(at)?.neighbour ?? []) {
      if (on.has(nb.name) || !nodes.has(nb.name)) continue;
      if (nb.name === dst) {
        paths.push([...stack, dst]);
        if (paths.length > limit) throw new Error(`more than ${limit} paths from ${src} to ${dst}`);
        continue;
      }
      if (END_HOSTS.has(nodes.get(nb.name)!.functionalType ?? '')) continue;
      on.add(nb.name);
      stack.push(nb.name);
      walk(nb.name);
      stack.pop();
      on.delete(nb.name);
    }
  };
  walk(src);
  return paths;
}

/** What of the requirement's traffic arrives at its destination along one path. */
function arrives(nodes: Map<string, Node>, p: Property, path: string[], firewalls: boolean): Box[] {
  const dst = octets(p.dst)!;
  let base: Box | undefined = set(everything(), SRC, octets(p.src)!);
  base = restrict(base, SPORT, [ports(p.srcPort)]);
  base = base && restrict(base, DPORT, [ports(p.dstPort)]);
  base = base && restrict(base, PROTO, [protocolsOf(p.lv4Proto, p.srcPort, p.dstPort)]);
  if (!base) return [];
  const nats = path.slice(1, -1).filter((n) => nodes.get(n)!.functionalType === 'NAT' && octets(n));
  let region = [set(base, DST, dst), ...nats.map((n) => set(base, DST, octets(n)!))];
  for (const name of path.slice(1, -1)) region = behave(nodes.get(name)!, region, firewalls);
  return within(region, addressed(dst, DST));
}

export interface Violation {
  index: number;
  property: Property;
  why: string;
}

/** Requirements of `result` claimed satisfied that do not hold in its network. */
export function violations(result: NFV, pathLimit = 20_000): Violation[] {
  const out: Violation[] = [];
  const graphs = new Map((result.graphs.graph ?? []).map((g) => [g.id ?? 0, g]));
  const fixedPaths = result.networkForwardingPaths?.path ?? [];
  result.propertyDefinition.property.forEach((p, index) => {
    if (p.isSat !== true) return;
    const graph = graphs.get(p.graph);
    const nodes = new Map((graph?.node ?? []).map((n) => [n.name, n]));
    if (!nodes.has(p.src) || !nodes.has(p.dst) || !octets(p.src) || !octets(p.dst)) {
      out.push({ index, property: p, why: 'its source or destination is not an addressed node of the result' });
      return;
    }
    const fixed = fixedPaths.filter((f) => f.pathNode[0]?.name === p.src && f.pathNode.at(-1)?.name === p.dst).at(-1);
    const paths = fixed ? [fixed.pathNode.map((n) => n.name)] : simplePaths(nodes, p.src, p.dst, pathLimit);
    const arrived = paths.map((path) => arrives(nodes, p, path, true));
    if (p.name === 'ISOLATION_PROPERTY') {
      const k = arrived.findIndex((r) => r.length > 0);
      if (k >= 0) out.push({ index, property: p, why: `traffic arrives along ${paths[k]!.join(' > ')}` });
    } else if (p.name === 'REACHABILITY_PROPERTY') {
      if (!arrived.some((r) => r.length > 0)) out.push({ index, property: p, why: 'no traffic arrives on any path' });
    } else {
      const whole = paths.some((path, k) => {
        const open = arrives(nodes, p, path, false);
        return open.length > 0 && arrived[k]!.reduce((rest, b) => minus(rest, b), open).length === 0;
      });
      if (!whole) out.push({ index, property: p, why: 'no path lets all of its traffic arrive' });
    }
  });
  return out;
}

/** The engine's answer, re-checked: throws, naming each requirement claimed satisfied that does not hold. */
export async function checkedSimulate(...args: Parameters<typeof simulate>): ReturnType<typeof simulate> {
  const result = await simulate(...args);
  const found = violations(result.nfv);
  if (found.length) {
    const lines = found.map((v) => `#${v.index} ${v.property.name} ${v.property.src} -> ${v.property.dst}: ${v.why}`);
    throw new Error(`claimed satisfied but does not hold:\n${lines.join('\n')}`);
  }
  return result;
}
