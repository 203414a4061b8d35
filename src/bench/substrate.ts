/**
 * Seeded generator of substrates and graphs in the style of the VEREFOO inputs with Hosts (Verifoo's data-centre
 * tests and `Optionality/Deployment`), at any size, for `npm run bench:placement`.
 *
 * Hosts: CLIENT hosts each pinning one client (fixedEndpoint), SERVER hosts each pinning one server, and racks of
 * MIDDLEBOX hosts with cpu, cores, memory, diskStorage, sometimes maxVNF, and SupportedVNF lists (FIREWALL almost
 * everywhere, the other types on some). Connections: a full mesh inside each rack (latency 1), rack uplinks to a
 * ring of racks plus a few chords (latency 4-12), client and server uplinks listed one way only as Verifoo's inputs do.
 * Graph: service chains client - firewall (an allocation place, a typed firewall or an optional one) - NAT or
 * load balancer or cache or DPI - ... - server, some functions shared by several chains, named by IPv4 address.
 * NodeMetrics give each function cores, memory, storage and for some a node latency bound; a pattern entry sizes
 * the places. LinkMetrics bound the latency from some clients to their first function, with slack.
 */
import type { PlacementInput } from '../engine/placement/index.js';
import { placementInput } from '../engine/placement/index.js';
import type { Connection, FunctionalType, Host, NFV, Node, NodeMetrics } from '../model/types.js';
import { random } from './topology.js';

export interface SubstrateSpec {
  hosts: number;
  /** Service chains; each adds a client, a server and 2-4 functions (some shared). */
  chains: number;
  seed: number;
}

const RACK = 8;
const MIDDLE_TYPES: FunctionalType[] = ['NAT', 'LOADBALANCER', 'CACHE', 'DPI', 'WEB_APPLICATION_FIREWALL'];

export interface GeneratedSubstrate {
  input: PlacementInput;
  /**
   * The same graph and substrate as a whole simulation input: per chain, its client isolated from its server on
   * TCP 22 and reaching it on TCP 443, so that the engine allocates the places before placing.
   */
  simulation: NFV;
  /** Nodes the allocation places (functions, used places, kept optional firewalls, pinned end hosts). */
  placed: number;
}

export function generateSubstrate(spec: SubstrateSpec): GeneratedSubstrate {
  const rnd = random(spec.seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const chance = (p: number) => rnd() < p;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;

  const clients = spec.chains;
  const servers = Math.max(1, Math.round(spec.chains / 2));
  const middleboxes = spec.hosts - clients - servers;
  if (middleboxes < RACK) throw new Error(`${spec.hosts} hosts leave too few middleboxes for ${spec.chains} chains`);
  const hosts: Host[] = [];
  const connections: Connection[] = [];
  const racks: string[][] = [];
  for (let k = 0; k < middleboxes; k++) {
    const name = `mb${k + 1}`;
    if (k % RACK === 0) racks.push([]);
    racks.at(-1)!.push(name);
    const supported: FunctionalType[] = [
      ...(chance(0.95) ? (['FIREWALL'] as const) : []),
      ...MIDDLE_TYPES.filter(() => chance(0.45)),
    ];
    const h: Host = {
      name,
      type: 'MIDDLEBOX',
      cpu: pick([2, 2.4, 3.2]),
      cores: pick([8, 16, 32]),
      memory: pick([16, 32, 64]),
      diskStorage: pick([100, 250, 500]),
      supportedVNF: supported.map((functionalType) => ({ functionalType })),
    };
    if (chance(0.5)) h.maxVNF = pick([4, 6, 8]);
    hosts.push(h);
  }
  for (const rack of racks)
    for (let i = 0; i < rack.length; i++)
      for (let j = i + 1; j < rack.length; j++)
        connections.push({ sourceHost: rack[i]!, destHost: rack[j]!, avgLatency: 1 });
  const uplink = (rack: string[]) => rack[0]!;
  racks.forEach((rack, k) => {
    if (racks.length < 2) return;
    const next = racks[(k + 1) % racks.length]!;
    if (racks.length > 2 || k === 0)
      connections.push({ sourceHost: uplink(rack), destHost: uplink(next), avgLatency: int(4, 12) });
  });
  for (let chord = 0; chord < Math.floor(racks.length / 4); chord++) {
    const a = int(0, racks.length - 1);
    const b = (a + int(2, Math.max(2, racks.length - 2))) % racks.length;
    const exists = connections.some(
      (c) =>
        (c.sourceHost === uplink(racks[a]!) && c.destHost === uplink(racks[b]!)) ||
        (c.sourceHost === uplink(racks[b]!) && c.destHost === uplink(racks[a]!)),
    );
    if (a !== b && !exists)
      connections.push({ sourceHost: uplink(racks[a]!), destHost: uplink(racks[b]!), avgLatency: int(4, 12) });
  }

  const nodes: Node[] = [];
  const byName = new Map<string, Node>();
  const add = (name: string, functionalType?: FunctionalType) => {
    const n: Node = { name, neighbour: [] };
    if (functionalType) n.functionalType = functionalType;
    nodes.push(n);
    byName.set(name, n);
    return name;
  };
  const link = (a: string, b: string) => {
    if (!byName.get(a)!.neighbour!.some((x) => x.name === b)) byName.get(a)!.neighbour!.push({ name: b });
    if (!byName.get(b)!.neighbour!.some((x) => x.name === a)) byName.get(b)!.neighbour!.push({ name: a });
  };
  const metrics: NodeMetrics[] = [];
  const used: string[] = [];
  const sized = (node: string, extra: Partial<NodeMetrics> = {}) =>
    metrics.push({
      node,
      cores: int(1, 4),
      memory: pick([1, 2, 4, 8]),
      reqStorage: int(5, 40),
      // Within 1 s at 2.4 GHz or more: a bound that rules out the slower hosts only.
      ...(chance(0.3) ? { nrOfOperations: int(10, 24) * 100_000_000, maxNodeLatency: 1 } : {}),
      ...extra,
    });
  metrics.push({ node: '20.0.0.-1', cores: 1, memory: 2, reqStorage: 10 });

  const serverNames = Array.from({ length: servers }, (_, k) => add(`30.0.${k >> 8}.${(k & 255) + 1}`, 'WEBSERVER'));
  serverNames.forEach((s, k) => {
    hosts.push({
      name: `server${k + 1}`,
      type: 'SERVER',
      cpu: 2,
      cores: 8,
      memory: 16,
      diskStorage: 200,
      fixedEndpoint: s,
    });
    connections.push({ sourceHost: pick(pick(racks)), destHost: `server${k + 1}`, avgLatency: int(1, 4) });
  });
  const shared: string[] = [];
  let functions = 0;
  let places = 0;
  const serverOf = new Map<string, string>();
  const linkMetrics: { src: string; dst: string; reqLatency: number }[] = [];
  for (let c = 0; c < clients; c++) {
    const client = add(`10.0.${c >> 8}.${(c & 255) + 1}`, 'WEBCLIENT');
    const uplinkHost = pick(pick(racks));
    hosts.push({
      name: `client${c + 1}`,
      type: 'CLIENT',
      cpu: 2,
      cores: 4,
      memory: 8,
      diskStorage: 50,
      fixedEndpoint: client,
    });
    connections.push({ sourceHost: `client${c + 1}`, destHost: uplinkHost, avgLatency: int(1, 4) });
    // The firewall in front of the client: a place the allocation used, a typed firewall, or an optional one.
    const roll = rnd();
    let first: string;
    if (roll < 0.4) {
      first = add(`20.0.${(places >> 8) & 255}.${(places++ & 255) + 1}`);
      used.push(first);
    } else {
      first = add(`40.0.${functions >> 8}.${(functions++ & 255) + 1}`, 'FIREWALL');
      if (roll < 0.7) sized(first);
      else {
        sized(first, { optional: true });
        if (chance(0.7)) used.push(first);
      }
    }
    link(client, first);
    if (chance(0.5)) linkMetrics.push({ src: client, dst: first, reqLatency: int(14, 24) });
    let at = first;
    for (let step = int(1, 3); step > 0; step--) {
      let next: string;
      if (shared.length && chance(0.3)) next = pick(shared);
      else {
        next = add(`40.0.${functions >> 8}.${(functions++ & 255) + 1}`, pick(MIDDLE_TYPES));
        sized(next);
        if (chance(0.3)) shared.push(next);
      }
      if (next === at) continue;
      link(at, next);
      at = next;
    }
    const server = pick(serverNames);
    link(at, server);
    serverOf.set(client, server);
  }
  const nfv: Pick<NFV, 'graphs' | 'constraints' | 'hosts' | 'connections'> = {
    graphs: { graph: [{ id: 0, node: nodes }] },
    constraints: { nodeConstraints: { nodeMetrics: metrics }, linkConstraints: { linkMetrics } },
    hosts: { host: hosts },
    connections: { connection: connections },
  };
  const input = placementInput(nfv, used);
  const property = nodes
    .filter((n) => n.functionalType === 'WEBCLIENT')
    .flatMap((client) => {
      const server = serverOf.get(client.name)!;
      return [
        {
          graph: 0,
          name: 'ISOLATION_PROPERTY' as const,
          src: client.name,
          dst: server,
          lv4Proto: 'TCP' as const,
          dstPort: '22',
        },
        {
          graph: 0,
          name: 'REACHABILITY_PROPERTY' as const,
          src: client.name,
          dst: server,
          lv4Proto: 'TCP' as const,
          dstPort: '443',
        },
      ];
    });
  const simulation: NFV = { ...structuredClone(nfv), propertyDefinition: { property } };
  const optional = new Set(metrics.filter((m) => m.optional).map((m) => m.node));
  const placed = nodes.filter((n) => n.functionalType && !optional.has(n.name)).length + used.length;
  return { input, simulation, placed };
}
