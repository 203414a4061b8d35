/**
 * The placement problem as the engine hands it over (placement.md P1-P7), checked once (P10) and indexed: hosts and
 * connections of the substrate, the nodes of all graphs as one set with their kind, demands and pins, and each
 * LinkMetrics entry with its routes. Which places and optional firewalls are used (the allocation S of P8) is part of
 * the problem but can be swapped (`withAllocation`), so the allocate-place-cut loop reuses one checked problem.
 */
import { parseAddress } from '../../model/address.js';
import { badRequest, quote } from '../../model/errors.js';
import type { Connection, Constraints, FunctionalType, Graph, Host, NFV, NodeMetrics } from '../../model/types.js';
import { END_HOSTS, optionalNames } from '../flows/network.js';
import { exactDecimal, type Decimal } from './decimal.js';

/**
 * What a node of the (expanded) graph is for placement (P2). `place`: an allocation place, placed as a FIREWALL when
 * the allocation uses it, else transparent; `optional`: an optional firewall, placed when kept, else transparent;
 * `endhost`: placed only where a Host pins it, else external; `function`: every other typed node, always placed.
 */
export type NodeKind = 'function' | 'endhost' | 'place' | 'optional';

export interface PlacementGraphNode {
  name: string;
  kind: NodeKind;
  /** Required except for places (which are placed as FIREWALL). */
  functionalType?: FunctionalType;
  /** Names of the nodes this one forwards to (the graph's neighbour list, direction as written). */
  neighbours: readonly string[];
}

export interface PlacementGraph {
  id: number;
  nodes: readonly PlacementGraphNode[];
}

export type LinkMetricsEntry = NonNullable<NonNullable<Constraints['linkConstraints']>['linkMetrics']>[number];

export interface PlacementInput {
  graphs: readonly PlacementGraph[];
  hosts: readonly Host[];
  connections: readonly Connection[];
  nodeMetrics?: readonly NodeMetrics[];
  linkMetrics?: readonly LinkMetricsEntry[];
  /** The allocation S (P8): names of the places used as firewalls and of the optional firewalls kept. */
  used: readonly string[];
}

export type HostType = 'CLIENT' | 'SERVER' | 'MIDDLEBOX';
const HOST_TYPES: readonly HostType[] = ['CLIENT', 'SERVER', 'MIDDLEBOX'];

export interface HostSpec {
  index: number;
  name: string;
  type: HostType;
  cpu: Decimal;
  /** The cpu as given, for messages. */
  cpuText: string;
  cores: number;
  memory: number;
  diskStorage: number;
  maxVNF: number | null;
  supported: ReadonlySet<FunctionalType>;
}

export interface Demand {
  cores: number;
  memory: number;
  storage: number;
  operations: number;
  /** Seconds; absent: no bound (P4). */
  maxLatency?: number;
}

export type PinSource = 'fixedEndpoint' | 'NodeRef';

export interface NodeSpec {
  index: number;
  name: string;
  kind: NodeKind;
  /** The type it is placed as: its own, FIREWALL for a place. */
  type: FunctionalType;
  /** The first graph (document order) that has it. */
  graph: number;
  /** Indices of the nodes it forwards to, over all graphs, first occurrence order. */
  next: readonly number[];
  demand: Demand;
  pin?: { host: number; by: PinSource };
}

export interface LinkMetricsSpec {
  index: number;
  src: number;
  dst: number;
  /** Absent in the input: no bound, the latency is only reported. */
  reqLatency: number | null;
  /** Simple directed paths src..dst whose inner nodes are all places or optional firewalls (P7). */
  routes: readonly (readonly number[])[];
}

export interface Edge {
  from: number;
  to: number;
  latency: number;
}

export interface PlacementProblem {
  hosts: readonly HostSpec[];
  hostIndex: ReadonlyMap<string, number>;
  /** Directed host edges, with the mirror of every connection listed one way only (P5). */
  edges: readonly Edge[];
  nodes: readonly NodeSpec[];
  nodeIndex: ReadonlyMap<string, number>;
  linkMetrics: readonly LinkMetricsSpec[];
  /** Node indices of the allocation S. */
  used: ReadonlySet<number>;
  /** Where the result graph differs from the input's (P6), for the allocation S. */
  relinked?: Relinked;
}

/**
 * The result graph's shape: removed optional firewalls are not traversed, and the links the engine writes around
 * them (along requirement paths only, as VEREFOO does) are followed instead.
 */
export interface Relinked {
  gone: ReadonlySet<number>;
  extra: ReadonlyMap<number, readonly number[]>;
}

/** Routes per LinkMetrics entry beyond which the input is refused rather than checked route by route. */
export const MAX_ROUTES = 1000;

const described = (what: string, name: string) => `${what} ${quote(name)}`;

function requireCount(value: number | undefined, what: string, field: string, allowMissing = false): number | null {
  if (value === undefined || value === null) {
    if (allowMissing) return null;
    throw badRequest(`${what}: ${field} is missing (required once the NFV has Hosts)`);
  }
  if (!Number.isFinite(value) || value < 0) throw badRequest(`${what}: ${field} ${value} is negative`);
  return value;
}

function checkHosts(hosts: readonly Host[]): HostSpec[] {
  const seen = new Set<string>();
  return hosts.map((h, index) => {
    const what = described('host', h.name);
    if (seen.has(h.name)) throw badRequest(`${what} is named twice`);
    seen.add(h.name);
    const type = (h.type ?? 'MIDDLEBOX') as HostType;
    if (!HOST_TYPES.includes(type)) throw badRequest(`${what}: unknown type ${quote(h.type)}`);
    const cpu = requireCount(h.cpu, what, 'cpu')!;
    const spec: HostSpec = {
      index,
      name: h.name,
      type,
      cpu: exactDecimal(cpu),
      cpuText: String(cpu),
      cores: requireCount(h.cores, what, 'cores')!,
      memory: requireCount(h.memory, what, 'memory')!,
      diskStorage: requireCount(h.diskStorage, what, 'diskStorage')!,
      maxVNF: requireCount(h.maxVNF, what, 'maxVNF', true),
      supported: new Set((h.supportedVNF ?? []).map((s) => s.functionalType)),
    };
    if (h.fixedEndpoint !== undefined && type === 'MIDDLEBOX')
      throw badRequest(`${what}: a MIDDLEBOX host has no fixedEndpoint (end hosts go on CLIENT or SERVER hosts)`);
    return spec;
  });
}

function checkConnections(connections: readonly Connection[], hostIndex: ReadonlyMap<string, number>): Edge[] {
  const listed = new Map<string, Edge>();
  const key = (a: number, b: number) => `${a}>${b}`;
  const edges: Edge[] = [];
  for (const c of connections) {
    const what = `connection ${quote(c.sourceHost)} -> ${quote(c.destHost)}`;
    const from = hostIndex.get(c.sourceHost);
    const to = hostIndex.get(c.destHost);
    if (from === undefined) throw badRequest(`${what}: ${quote(c.sourceHost)} is not a host`);
    if (to === undefined) throw badRequest(`${what}: ${quote(c.destHost)} is not a host`);
    if (listed.has(key(from, to))) throw badRequest(`${what} is listed twice`);
    const latency = requireCount(c.avgLatency, what, 'avgLatency')!;
    const edge = { from, to, latency };
    listed.set(key(from, to), edge);
    edges.push(edge);
  }
  // A connection listed one way also carries the other way at the same latency (P5).
  for (const e of [...edges])
    if (!listed.has(key(e.to, e.from))) edges.push({ from: e.to, to: e.from, latency: e.latency });
  return edges;
}

interface Gathered {
  name: string;
  kind: NodeKind;
  type: FunctionalType | undefined;
  graph: number;
  next: string[];
}

/** One node per name over all graphs (P1); a name used with two types or kinds is refused. */
function gatherNodes(graphs: readonly PlacementGraph[]): Gathered[] {
  const byName = new Map<string, Gathered>();
  const order: Gathered[] = [];
  for (const g of graphs) {
    for (const n of g.nodes) {
      // A place is placed as a FIREWALL whatever the expansion or the result wrote into it.
      const type = n.kind === 'place' ? undefined : n.functionalType;
      if (n.kind !== 'place' && type === undefined)
        throw badRequest(`node ${quote(n.name)} of graph ${g.id}: a ${n.kind} node needs a functional type`);
      const seen = byName.get(n.name);
      if (!seen) {
        const fresh = { name: n.name, kind: n.kind, type, graph: g.id, next: [...n.neighbours] };
        byName.set(n.name, fresh);
        order.push(fresh);
        continue;
      }
      if (seen.kind !== n.kind || seen.type !== type)
        throw badRequest(
          `node ${quote(n.name)} is ${seen.type ?? 'an allocation place'} in graph ${seen.graph} and ` +
            `${type ?? 'an allocation place'} in graph ${g.id}; one name has one functional type`,
        );
      for (const nb of n.neighbours) if (!seen.next.includes(nb)) seen.next.push(nb);
    }
  }
  for (const n of order)
    for (const nb of n.next)
      if (!byName.has(nb)) throw badRequest(`node ${quote(n.name)}: neighbour ${quote(nb)} is not a node`);
  return order;
}

/** Pins from fixedEndpoint and NodeRef (P3); a node pinned to two hosts, or to a host it can never use, is refused. */
function checkPins(
  hosts: readonly Host[],
  specs: readonly HostSpec[],
  nodeIndex: ReadonlyMap<string, number>,
  nodes: readonly Gathered[],
): Map<number, { host: number; by: PinSource }> {
  const pins = new Map<number, { host: number; by: PinSource }>();
  const pin = (node: number, host: number, by: PinSource) => {
    const before = pins.get(node);
    if (before && before.host !== host)
      throw badRequest(
        `node ${quote(nodes[node]!.name)} is pinned to two hosts: ${quote(specs[before.host]!.name)} ` +
          `(${before.by}) and ${quote(specs[host]!.name)} (${by})`,
      );
    if (!before) pins.set(node, { host, by });
  };
  hosts.forEach((h, k) => {
    if (h.fixedEndpoint === undefined) return;
    const node = nodeIndex.get(h.fixedEndpoint);
    const what = described('host', h.name);
    if (node === undefined) throw badRequest(`${what}: fixedEndpoint ${quote(h.fixedEndpoint)} is not a node`);
    if (nodes[node]!.kind !== 'endhost')
      throw badRequest(`${what}: fixedEndpoint ${quote(h.fixedEndpoint)} is not an end host`);
    pin(node, k, 'fixedEndpoint');
  });
  hosts.forEach((h, k) => {
    for (const ref of h.nodeRef ?? []) {
      const node = nodeIndex.get(ref.node);
      const what = described('host', h.name);
      if (node === undefined) throw badRequest(`${what}: NodeRef ${quote(ref.node)} is not a node`);
      if (nodes[node]!.kind === 'endhost' && specs[k]!.type === 'MIDDLEBOX')
        throw badRequest(`${what}: NodeRef ${quote(ref.node)} pins an end host to a MIDDLEBOX host`);
      pin(node, k, 'NodeRef');
    }
  });
  return pins;
}

/** Octets of an address with no `-1`, else undefined. */
const exactAddress = (name: string) => {
  const a = parseAddress(name);
  return a && !a.includes(-1) ? a : undefined;
};

/** Demands of each node (P2): its own NodeMetrics entry; for a place, else the most specific pattern entry. */
function demands(metrics: readonly NodeMetrics[], nodes: readonly Gathered[]): Demand[] {
  const own = new Map<string, NodeMetrics>();
  for (const m of metrics) {
    const what = `NodeMetrics ${quote(m.node)}`;
    if (own.has(m.node)) throw badRequest(`${what} is given twice`);
    own.set(m.node, m);
    for (const field of ['nrOfOperations', 'maxNodeLatency', 'reqStorage', 'cores', 'memory'] as const) {
      const v = m[field];
      if (v !== undefined && v < 0) throw badRequest(`${what}: ${field} ${v} is negative`);
    }
  }
  const patterns = metrics
    .map((m, order) => ({ m, order, octets: parseAddress(m.node) }))
    .filter((p) => p.octets?.includes(-1))
    .map((p) => ({ ...p, wild: p.octets!.filter((o) => o === -1).length }))
    .sort((a, b) => a.wild - b.wild || a.order - b.order);
  return nodes.map((n) => {
    let m = own.get(n.name);
    if (!m && n.kind === 'place') {
      const address = exactAddress(n.name);
      m = address && patterns.find((p) => p.octets!.every((o, k) => o === -1 || o === address[k]))?.m;
    }
    return {
      cores: m?.cores ?? 0,
      memory: m?.memory ?? 0,
      storage: m?.reqStorage ?? 0,
      operations: m?.nrOfOperations ?? 0,
      maxLatency: m?.maxNodeLatency,
    };
  });
}

/** Simple directed paths from src to dst whose inner nodes are places or optional firewalls (P7). */
function routesOf(nodes: readonly NodeSpec[], src: number, dst: number, what: string): number[][] {
  const routes: number[][] = [];
  const stack = [src];
  const onPath = new Set([src]);
  const walk = (at: number) => {
    for (const next of nodes[at]!.next) {
      if (next === dst) {
        routes.push([...stack, dst]);
        if (routes.length > MAX_ROUTES) throw badRequest(`${what} has more than ${MAX_ROUTES} routes`);
        continue;
      }
      // Inner nodes: what the allocation decides, and firewalls (an allocated one, resubmitted, is a FIREWALL).
      const { kind, type } = nodes[next]!;
      if (onPath.has(next) || (kind !== 'place' && kind !== 'optional' && type !== 'FIREWALL')) continue;
      onPath.add(next);
      stack.push(next);
      walk(next);
      stack.pop();
      onPath.delete(next);
    }
  };
  walk(src);
  return routes;
}

function checkLinkMetrics(
  entries: readonly LinkMetricsEntry[],
  nodes: readonly NodeSpec[],
  nodeIndex: ReadonlyMap<string, number>,
): LinkMetricsSpec[] {
  return entries.map((e, index) => {
    const what = `LinkMetrics ${quote(e.src)} -> ${quote(e.dst)}`;
    const src = nodeIndex.get(e.src);
    const dst = nodeIndex.get(e.dst);
    if (src === undefined) throw badRequest(`${what}: src ${quote(e.src)} is not a node`);
    if (dst === undefined) throw badRequest(`${what}: dst ${quote(e.dst)} is not a node`);
    if (src === dst) throw badRequest(`${what}: src and dst are the same node`);
    for (const end of [nodes[src]!, nodes[dst]!])
      if (end.kind === 'endhost' && !end.pin)
        throw badRequest(`${what}: ${quote(end.name)} is an end host no Host pins, so it has no position`);
    if (e.reqLatency !== undefined && e.reqLatency < 0)
      throw badRequest(`${what}: reqLatency ${e.reqLatency} is negative`);
    const routes = routesOf(nodes, src, dst, what);
    if (routes.length === 0)
      throw badRequest(`${what} names no link: no path from src to dst through places and optional firewalls only`);
    return { index, src, dst, reqLatency: e.reqLatency ?? null, routes };
  });
}

function allocationOf(used: readonly string[], nodes: readonly NodeSpec[], nodeIndex: ReadonlyMap<string, number>) {
  const set = new Set<number>();
  for (const name of used) {
    const k = nodeIndex.get(name);
    // The engine builds the allocation from its own nodes: anything else is a programming error, not bad input.
    if (k === undefined) throw new Error(`placement: the allocation names ${quote(name)}, which is not a node`);
    if (nodes[k]!.kind !== 'place' && nodes[k]!.kind !== 'optional')
      throw new Error(`placement: the allocation names ${quote(name)}, which is neither a place nor optional`);
    set.add(k);
  }
  return set;
}

/** Checks the input (P10, every refusal a 400 naming the element) and indexes it. */
export function definePlacement(input: PlacementInput): PlacementProblem {
  const hosts = checkHosts(input.hosts);
  const hostIndex = new Map(hosts.map((h) => [h.name, h.index]));
  const edges = checkConnections(input.connections, hostIndex);
  const gathered = gatherNodes(input.graphs);
  const nodeIndex = new Map(gathered.map((n, k) => [n.name, k]));
  const pins = checkPins(input.hosts, hosts, nodeIndex, gathered);
  const demand = demands(input.nodeMetrics ?? [], gathered);
  const nodes: NodeSpec[] = gathered.map((n, index) => ({
    index,
    name: n.name,
    kind: n.kind,
    type: n.type ?? 'FIREWALL',
    graph: n.graph,
    next: n.next.map((nb) => nodeIndex.get(nb)!),
    demand: demand[index]!,
    pin: pins.get(index),
  }));
  const linkMetrics = checkLinkMetrics(input.linkMetrics ?? [], nodes, nodeIndex);
  return { hosts, hostIndex, edges, nodes, nodeIndex, linkMetrics, used: allocationOf(input.used, nodes, nodeIndex) };
}

/** The same checked problem with another allocation S (node names of places and optional firewalls). */
export function withAllocation(
  problem: PlacementProblem,
  used: readonly string[],
  relinked?: Relinked,
): PlacementProblem {
  return { ...problem, used: allocationOf(used, problem.nodes, problem.nodeIndex), ...(relinked ? { relinked } : {}) };
}

/**
 * The placement input of an NFV whose graphs are expanded (service graphs with their places), before the result is
 * written: untyped nodes and the names in `places` (forced places the expansion typed FIREWALL) are places; a
 * FIREWALL named by a NodeMetrics entry with `optional="true"` is optional (A.1: the value, not the entry's presence).
 */
export function placementInput(
  nfv: Pick<NFV, 'graphs' | 'constraints' | 'hosts' | 'connections'>,
  used: readonly string[],
  places: ReadonlySet<string> = new Set(),
): PlacementInput {
  const metrics = nfv.constraints?.nodeConstraints?.nodeMetrics ?? [];
  const optional = optionalNames(nfv.constraints);
  const kindOf = (n: Graph['node'][number]): NodeKind => {
    // A forwarder declared optional is a place an earlier answer left unused (simulate marks it so): transparent.
    if (n.functionalType === undefined || places.has(n.name)) return 'place';
    if (n.functionalType === 'FORWARDER' && optional.has(n.name)) return 'place';
    if (END_HOSTS.has(n.functionalType)) return 'endhost';
    return n.functionalType === 'FIREWALL' && optional.has(n.name) ? 'optional' : 'function';
  };
  return {
    graphs: (nfv.graphs.graph ?? []).map((g, k) => ({
      id: g.id ?? k,
      nodes: g.node.map((n) => ({
        name: n.name,
        kind: kindOf(n),
        functionalType: n.functionalType,
        neighbours: (n.neighbour ?? []).map((nb) => nb.name),
      })),
    })),
    hosts: nfv.hosts?.host ?? [],
    connections: nfv.connections?.connection ?? [],
    nodeMetrics: metrics,
    linkMetrics: nfv.constraints?.linkConstraints?.linkMetrics ?? [],
    used,
  };
}
