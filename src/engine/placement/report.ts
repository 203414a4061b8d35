/**
 * A placement written out for the report (P9): where each placed node went, each active host's use against its
 * capacity, each link's latency and host path, each LinkMetrics entry's latency (or why it does not apply).
 */
import type { PinSource } from './input.js';
import type { Instance } from './instance.js';
import type { HostGraph, HostPaths } from './paths.js';

export interface PlacedNode {
  node: string;
  /** The first graph (document order) that has the node. */
  graph: number;
  host: string;
  pin?: PinSource;
}

export interface HostUsage {
  host: string;
  /** Nodes placed there, in document order. */
  nodes: string[];
  cores: [used: number, capacity: number];
  memory: [used: number, capacity: number];
  diskStorage: [used: number, capacity: number];
  /** Functions placed there (end hosts do not count) and maxVNF, null when not given. */
  vnfs: [used: number, maxVNF: number | null];
}

export interface LinkLatency {
  src: string;
  dst: string;
  latency: number;
  hostPath: string[];
}

export interface LinkMetricsResult {
  src: string;
  dst: string;
  reqLatency: number | null;
  /** The largest latency over its routes; null when it does not apply. */
  latency: number | null;
  /** The route with that latency (node names), empty when it does not apply. */
  route: string[];
  hostPath: string[];
  status: 'ok' | `n/a: ${string}`;
}

export interface PlacementDetails {
  nodes: PlacedNode[];
  hosts: HostUsage[];
  links: LinkLatency[];
  linkMetrics: LinkMetricsResult[];
}

/** The report of a placement given as the host of each placed position. */
export function describePlacement(
  instance: Instance,
  graph: HostGraph,
  paths: HostPaths,
  hostOf: Int32Array,
): PlacementDetails {
  const { problem, placed } = instance;
  const n = graph.count;
  const node = (p: number) => problem.nodes[placed[p]!]!;
  const hostName = (h: number) => problem.hosts[h]!.name;
  const dist = (a: number, b: number) => graph.dist[a * n + b]!;
  const pathNames = (a: number, b: number) => paths.path(a, b)!.map(hostName);
  const nodes = placed.map((_, p): PlacedNode => {
    const spec = node(p);
    const entry: PlacedNode = { node: spec.name, graph: spec.graph, host: hostName(hostOf[p]!) };
    if (spec.pin) entry.pin = spec.pin.by;
    return entry;
  });
  const hosts: HostUsage[] = [];
  for (const h of problem.hosts) {
    const here = placed.map((_, p) => p).filter((p) => hostOf[p] === h.index);
    if (here.length === 0) continue;
    const sum = (f: (p: number) => number) => here.reduce((s, p) => s + f(p), 0);
    hosts.push({
      host: h.name,
      nodes: here.map((p) => node(p).name),
      cores: [sum((p) => node(p).demand.cores), h.cores],
      memory: [sum((p) => node(p).demand.memory), h.memory],
      diskStorage: [sum((p) => node(p).demand.storage), h.diskStorage],
      vnfs: [here.filter((p) => node(p).kind !== 'endhost').length, h.maxVNF],
    });
  }
  const links = instance.links.map(([u, v]) => ({
    src: node(u).name,
    dst: node(v).name,
    latency: dist(hostOf[u]!, hostOf[v]!),
    hostPath: pathNames(hostOf[u]!, hostOf[v]!),
  }));
  const linkMetrics = instance.metrics.map((use): LinkMetricsResult => {
    const m = problem.linkMetrics[use.metric]!;
    const entry = { src: problem.nodes[m.src]!.name, dst: problem.nodes[m.dst]!.name, reqLatency: m.reqLatency };
    if (use.notApplicable)
      return { ...entry, latency: null, route: [], hostPath: [], status: `n/a: ${use.notApplicable}` };
    let worst = use.chains[0]!;
    let latency = -1;
    for (const chain of use.chains) {
      let sum = 0;
      for (let i = 1; i < chain.positions.length; i++)
        sum += dist(hostOf[chain.positions[i - 1]!]!, hostOf[chain.positions[i]!]!);
      if (sum > latency) [worst, latency] = [chain, sum];
    }
    const hostPath: string[] = [];
    for (let i = 1; i < worst.positions.length; i++) {
      const leg = pathNames(hostOf[worst.positions[i - 1]!]!, hostOf[worst.positions[i]!]!);
      hostPath.push(...(hostPath.length ? leg.slice(1) : leg));
    }
    return {
      ...entry,
      latency,
      route: worst.route.map((k) => problem.nodes[k]!.name),
      hostPath,
      status: 'ok',
    };
  });
  return { nodes, hosts, links, linkMetrics };
}
