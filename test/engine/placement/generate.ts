/**
 * Seeded small placement inputs for the brute-force comparison: up to 6 hosts (CLIENT, SERVER, MIDDLEBOX, some
 * with maxVNF, fractional or zero cpu) joined by connections one way, both ways or not at all (disconnected parts),
 * and up to 8 nodes (pinned and external end hosts, functions, places, optional firewalls) with NodeMetrics (one
 * pattern entry for places), node latency bounds, NodeRef pins and LinkMetrics. Some inputs are 'packing' ones (scarce
 * capacity, every type supported), some 'twins' (identical middleboxes at one latency from a hub). Every input passes
 * the P10 checks.
 */
import { random } from '../../../src/bench/topology.js';
import type { PlacementGraphNode, PlacementInput } from '../../../src/engine/placement/index.js';
import type { FunctionalType, Host, NodeMetrics } from '../../../src/model/types.js';

const TYPES: FunctionalType[] = ['FIREWALL', 'NAT', 'CACHE', 'DPI', 'FORWARDER'];

export function generateInstance(seed: number): PlacementInput {
  const rnd = random(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const chance = (p: number) => rnd() < p;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  // Some instances are roomy, some tight; 'packing' ones are all middleboxes supporting every type with scarce
  // capacity, where bin packing fails beyond what the Hall sums see (COMBINED conflicts).
  const room = pick([1, 2, 4]);
  const packing = chance(0.2);
  const capacity = (most: number) => (chance(0.1) ? 0 : int(1, most));

  const hosts: Host[] = Array.from({ length: int(chance(0.1) ? 1 : 2, 6) }, (_, k) => {
    const roll = packing ? 1 : rnd();
    const type = roll < 0.15 ? 'CLIENT' : roll < 0.3 ? 'SERVER' : 'MIDDLEBOX';
    const h: Host = {
      name: `h${k}`,
      type: chance(0.2) && type === 'MIDDLEBOX' ? undefined : type,
      cpu: pick([0, 0.5, 1, 2, 2.5, 2.5, 4]),
      cores: packing ? int(2, 4) : capacity(3 * room),
      memory: capacity(4 * room),
      diskStorage: capacity(5 * room),
    };
    if (chance(0.4)) h.maxVNF = packing ? int(1, 3) : int(0, 3);
    if (type === 'MIDDLEBOX')
      h.supportedVNF = TYPES.filter(() => packing || chance(0.8)).map((functionalType) => ({ functionalType }));
    return h;
  });
  const connections: { sourceHost: string; destHost: string; avgLatency: number }[] = [];
  // 'twins': identical middleboxes hanging off h0 at one latency, so the search's interchangeable hosts are tested.
  const twins = hosts.length >= 3 && chance(0.15);
  if (twins) {
    const latency = int(0, 3);
    hosts.forEach((h, k) => {
      if (k < 2) return;
      Object.assign(h, { ...hosts[1]!, name: h.name });
      connections.push({ sourceHost: hosts[0]!.name, destHost: h.name, avgLatency: latency });
    });
    connections.push({ sourceHost: hosts[0]!.name, destHost: hosts[1]!.name, avgLatency: latency });
  }
  const density = twins ? 0 : packing ? 1 : pick([0.2, 0.5, 0.8]);
  for (let i = 0; i < hosts.length; i++)
    for (let j = i + 1; j < hosts.length; j++) {
      if (!chance(density)) continue;
      const [a, b] = chance(0.5) ? [hosts[i]!.name, hosts[j]!.name] : [hosts[j]!.name, hosts[i]!.name];
      connections.push({ sourceHost: a, destHost: b, avgLatency: int(0, 5) });
      if (chance(0.25)) connections.push({ sourceHost: b, destHost: a, avgLatency: int(0, 5) });
    }

  type Kind = PlacementGraphNode['kind'];
  const count = int(1, 8);
  let places = 0;
  const nodes = Array.from({ length: count }, (_, k) => {
    const roll = packing ? 0.25 + rnd() * 0.75 : rnd();
    const kind: Kind = roll < 0.25 ? 'endhost' : roll < 0.6 ? 'function' : roll < 0.8 ? 'place' : 'optional';
    const name = kind === 'place' ? `20.0.0.${++places}` : `n${k}`;
    const functionalType: FunctionalType | undefined =
      kind === 'endhost'
        ? pick(['WEBCLIENT', 'WEBSERVER'] as const)
        : kind === 'function'
          ? pick(TYPES)
          : kind === 'optional'
            ? 'FIREWALL'
            : undefined;
    return { name, kind, functionalType, neighbours: [] as string[] };
  });
  const graphLinks = pick([0.2, 0.4, 0.6]);
  for (let i = 0; i < count; i++)
    for (let j = i + 1; j < count; j++) {
      if (!chance(graphLinks)) continue;
      // Mostly both ways, as graphs are written; sometimes one way only.
      const roll = rnd();
      if (roll < 0.9) nodes[i]!.neighbours.push(nodes[j]!.name);
      if (roll >= 0.8 || roll < 0.1) nodes[j]!.neighbours.push(nodes[i]!.name);
    }

  // Pins: end hosts on CLIENT or SERVER hosts (fixedEndpoint where free, else NodeRef), others sometimes by NodeRef.
  const endHostHosts = hosts.filter((h) => h.type === 'CLIENT' || h.type === 'SERVER');
  for (const n of nodes) {
    if (n.kind === 'endhost') {
      if (!endHostHosts.length || !chance(0.7)) continue;
      const h = pick(endHostHosts);
      if (h.fixedEndpoint === undefined && chance(0.6)) h.fixedEndpoint = n.name;
      else (h.nodeRef ??= []).push({ node: n.name });
    } else if (chance(0.12)) {
      const middleboxes = hosts.filter((h) => h.type !== 'CLIENT' && h.type !== 'SERVER');
      (pick(chance(0.8) && middleboxes.length ? middleboxes : hosts).nodeRef ??= []).push({ node: n.name });
    }
  }

  const nodeMetrics: NodeMetrics[] = [];
  for (const n of nodes) {
    if (n.kind === 'place' || !chance(n.kind === 'endhost' ? 0.3 : 0.75)) continue;
    const m: NodeMetrics = packing
      ? { node: n.name, cores: int(1, 3) }
      : { node: n.name, cores: int(0, 2), memory: int(0, 3), reqStorage: int(0, 3) };
    if (!packing && chance(0.3)) {
      m.nrOfOperations = int(0, 3) * 1_000_000_000 + (chance(0.5) ? 500_000_000 : 0);
      m.maxNodeLatency = int(0, 2);
    }
    if (n.kind === 'optional') m.optional = true;
    nodeMetrics.push(m);
  }
  if (places && chance(0.6)) nodeMetrics.push({ node: '20.0.0.-1', cores: int(0, 2), memory: int(0, 3) });

  // LinkMetrics along a walk from a positioned node through places and optional firewalls.
  const positioned = (name: string) => {
    const n = nodes.find((x) => x.name === name)!;
    return (
      n.kind !== 'endhost' || hosts.some((h) => h.fixedEndpoint === name || h.nodeRef?.some((r) => r.node === name))
    );
  };
  const linkMetrics: { src: string; dst: string; reqLatency?: number }[] = [];
  for (let tries = int(0, 3); tries > 0; tries--) {
    const src = pick(nodes);
    if (!positioned(src.name)) continue;
    let at = src;
    const seen = new Set([src.name]);
    for (let step = 0; step < 4; step++) {
      const next = at.neighbours.filter((x) => !seen.has(x));
      if (!next.length) break;
      const chosen = pick(next);
      at = nodes.find((x) => x.name === chosen)!;
      seen.add(at.name);
      if (at.kind !== 'place' && at.kind !== 'optional') break;
      if (chance(0.3)) break;
    }
    if (at === src || !positioned(at.name)) continue;
    if (linkMetrics.some((m) => m.src === src.name && m.dst === at.name)) continue;
    linkMetrics.push({ src: src.name, dst: at.name, reqLatency: chance(0.9) ? int(0, 4) : undefined });
  }
  const used = nodes.filter((n) => (n.kind === 'place' || n.kind === 'optional') && chance(0.6)).map((n) => n.name);
  return { graphs: [{ id: 0, nodes }], hosts, connections, nodeMetrics, linkMetrics, used };
}
