/**
 * The numeric model the search works on: placed nodes by position with their demands and candidate hosts, host
 * capacities (Infinity where unbounded or relaxed), links, LinkMetrics chains with their layered least latencies,
 * groups of linked nodes (which must share one connected part of the substrate), and classes of interchangeable
 * hosts. Constraint groups can be relaxed, which is how a COMBINED conflict is minimised (P9).
 */
import type { Instance } from './instance.js';
import type { HostGraph } from './paths.js';

export interface ModelChain {
  metric: number;
  positions: Int32Array;
  bound: number;
  /**
   * forward[i][h]: least latency from src through the candidates of s1..s(i-1) to h as s(i); backward[i][h]: least
   * latency from h as s(i) on to dst. Infinity outside the candidates of s(i).
   */
  forward: Float64Array[];
  backward: Float64Array[];
}

export interface SearchModel {
  instance: Instance;
  graph: HostGraph;
  hostCount: number;
  nodeCount: number;
  cores: Float64Array;
  memory: Float64Array;
  storage: Float64Array;
  /** 1 for a function (counts against maxVNF), 0 for a placed end host. */
  isFunction: Uint8Array;
  capCores: Float64Array;
  capMemory: Float64Array;
  capStorage: Float64Array;
  capVnf: Float64Array;
  /** Candidate hosts per position, ascending. */
  domains: Int32Array[];
  /** Links as pairs (from, to) of positions. */
  linkFrom: Int32Array;
  linkTo: Int32Array;
  chains: ModelChain[];
  /** Group of linked positions (union over links), numbered from 0. */
  group: Int32Array;
  groups: number;
  /**
   * Hosts of one class are interchangeable while empty: same attributes, not a pin target, and the same latency to
   * and from every other host. Only the first empty host of a class need be tried.
   */
  hostClass: Int32Array;
}

/** The host capacities of P4, by their Host attribute names. */
export const CAPACITIES = ['cores', 'memory', 'diskStorage', 'maxVNF'] as const;

/** A group of constraints that can be relaxed as one (P9 COMBINED). */
export type ConstraintGroup =
  | { kind: 'domain'; position: number }
  | { kind: 'capacity'; host: number; resource: (typeof CAPACITIES)[number] }
  | { kind: 'metric'; metric: number }
  | { kind: 'link'; link: number };

export const groupKey = (g: ConstraintGroup): string =>
  g.kind === 'domain'
    ? `d${g.position}`
    : g.kind === 'capacity'
      ? `c${g.host}:${g.resource}`
      : g.kind === 'metric'
        ? `m${g.metric}`
        : `l${g.link}`;

/** Layered least latencies of a chain over the given candidate sets (one pass over host pairs per hop). */
export function layered(
  graph: HostGraph,
  positions: Int32Array,
  domains: readonly Int32Array[],
): { forward: Float64Array[]; backward: Float64Array[] } {
  const n = graph.count;
  const dist = graph.dist;
  const k = positions.length;
  const forward = Array.from({ length: k }, () => new Float64Array(n).fill(Infinity));
  const backward = Array.from({ length: k }, () => new Float64Array(n).fill(Infinity));
  for (const h of domains[positions[0]!]!) forward[0]![h] = 0;
  for (let i = 1; i < k; i++) {
    const before = domains[positions[i - 1]!]!;
    const prev = forward[i - 1]!;
    for (const h of domains[positions[i]!]!) {
      let best = Infinity;
      for (const g of before) {
        const d = prev[g]! + dist[g * n + h]!;
        if (d < best) best = d;
      }
      forward[i]![h] = best;
    }
  }
  for (const h of domains[positions[k - 1]!]!) backward[k - 1]![h] = 0;
  for (let i = k - 2; i >= 0; i--) {
    const after = domains[positions[i + 1]!]!;
    const next = backward[i + 1]!;
    for (const h of domains[positions[i]!]!) {
      let best = Infinity;
      for (const g of after) {
        const d = dist[h * n + g]! + next[g]!;
        if (d < best) best = d;
      }
      backward[i]![h] = best;
    }
  }
  return { forward, backward };
}

/** Host classes: equal attributes, no pin on them, and equal latencies to and from every third host. */
function hostClasses(instance: Instance, graph: HostGraph, relaxed: ReadonlySet<string>): Int32Array {
  const { hosts, nodes } = instance.problem;
  const n = graph.count;
  const dist = graph.dist;
  const pinned = new Set(instance.placed.flatMap((k) => (nodes[k]!.pin ? [nodes[k]!.pin!.host] : [])));
  const cls = new Int32Array(n).fill(-1);
  const attributes = (h: number) => {
    const s = hosts[h]!;
    const lifted = CAPACITIES.filter((r) => relaxed.has(`c${h}:${r}`));
    const supported = [...s.supported].sort().join('+');
    return [s.type, s.cpuText, s.cores, s.memory, s.diskStorage, s.maxVNF, supported, ...lifted].join('|');
  };
  const same = (a: number, b: number) => {
    if (dist[a * n + b] !== dist[b * n + a]) return false;
    for (let x = 0; x < n; x++) {
      if (x === a || x === b) continue;
      if (dist[a * n + x] !== dist[b * n + x] || dist[x * n + a] !== dist[x * n + b]) return false;
    }
    return true;
  };
  // Members are compared with every member of a class; a class stops growing at this size to bound the work.
  const LARGEST_CLASS = 32;
  const byAttributes = new Map<string, number[][]>();
  let classes = 0;
  for (let h = 0; h < n; h++) {
    if (pinned.has(h)) {
      cls[h] = classes++;
      continue;
    }
    const key = attributes(h);
    const candidates = byAttributes.get(key) ?? [];
    byAttributes.set(key, candidates);
    const home = candidates.find((list) => list.length < LARGEST_CLASS && list.every((m) => same(m, h)));
    if (home) {
      home.push(h);
      cls[h] = cls[home[0]!]!;
    } else {
      candidates.push([h]);
      cls[h] = classes++;
    }
  }
  return cls;
}

/**
 * The model of an instance with the given candidate sets, every group in `relaxed` lifted: a relaxed domain allows
 * every host, a relaxed capacity is unbounded, a relaxed LinkMetrics entry or link is dropped.
 */
export function buildModel(
  instance: Instance,
  graph: HostGraph,
  domains: readonly Int32Array[],
  relaxed: ReadonlySet<string> = new Set(),
): SearchModel {
  const { problem, placed } = instance;
  const hostCount = graph.count;
  const nodeCount = placed.length;
  const demand = (f: (k: number) => number) => Float64Array.from(placed, f);
  const capacity = (resource: string, f: (h: number) => number) =>
    Float64Array.from({ length: hostCount }, (_, h) => (relaxed.has(`c${h}:${resource}`) ? Infinity : f(h)));
  const every = Int32Array.from({ length: hostCount }, (_, h) => h);
  const finalDomains = domains.map((d, p) => (relaxed.has(`d${p}`) ? every : d));
  const keptLinks = instance.links.flatMap((_, i) => (relaxed.has(`l${i}`) ? [] : [i]));
  const linkFrom = Int32Array.from(keptLinks, (i) => instance.links[i]![0]);
  const linkTo = Int32Array.from(keptLinks, (i) => instance.links[i]![1]);
  // Groups of linked positions (union-find): each group lives in one connected part of the substrate.
  const parent = Int32Array.from({ length: nodeCount }, (_, p) => p);
  const find = (p: number): number => (parent[p] === p ? p : (parent[p] = find(parent[p]!)));
  for (let i = 0; i < linkFrom.length; i++) parent[find(linkFrom[i]!)] = find(linkTo[i]!);
  const group = new Int32Array(nodeCount);
  const number = new Map<number, number>();
  for (let p = 0; p < nodeCount; p++) {
    const root = find(p);
    if (!number.has(root)) number.set(root, number.size);
    group[p] = number.get(root)!;
  }
  const chains: ModelChain[] = [];
  for (const use of instance.metrics) {
    const bound = problem.linkMetrics[use.metric]!.reqLatency;
    if (bound === null || relaxed.has(`m${use.metric}`)) continue;
    for (const chain of use.chains) {
      const positions = Int32Array.from(chain.positions);
      chains.push({ metric: use.metric, positions, bound, ...layered(graph, positions, finalDomains) });
    }
  }
  return {
    instance,
    graph,
    hostCount,
    nodeCount,
    cores: demand((k) => problem.nodes[k]!.demand.cores),
    memory: demand((k) => problem.nodes[k]!.demand.memory),
    storage: demand((k) => problem.nodes[k]!.demand.storage),
    isFunction: Uint8Array.from(placed, (k) => (problem.nodes[k]!.kind === 'endhost' ? 0 : 1)),
    capCores: capacity('cores', (h) => problem.hosts[h]!.cores),
    capMemory: capacity('memory', (h) => problem.hosts[h]!.memory),
    capStorage: capacity('diskStorage', (h) => problem.hosts[h]!.diskStorage),
    capVnf: capacity('maxVNF', (h) => problem.hosts[h]!.maxVNF ?? Infinity),
    domains: finalDomains,
    linkFrom,
    linkTo,
    chains,
    group,
    groups: number.size,
    hostClass: hostClasses(instance, graph, relaxed),
  };
}
