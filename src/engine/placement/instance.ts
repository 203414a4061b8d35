/**
 * One allocation of a placement problem: which nodes are placed, transparent or external (P2), where each placed
 * node may go on its own (P3, P4 for the node alone, with the reason each other host is ruled out), the links
 * between placed nodes (P6) and, for each LinkMetrics entry, the chains of placed nodes its routes become (P7).
 */
import { latencyFits } from './decimal.js';
import type { HostSpec, NodeSpec, PlacementProblem } from './input.js';

export interface Chain {
  /** The LinkMetrics entry. */
  metric: number;
  /** Placed positions s0 = src .. sk = dst. */
  positions: readonly number[];
  /** The route (node indices) it comes from, the first one in route order when several collapse to it. */
  route: readonly number[];
}

export interface MetricUse {
  metric: number;
  /** Why it does not apply (src or dst not placed), else undefined. */
  notApplicable?: string;
  chains: readonly Chain[];
}

export interface Instance {
  problem: PlacementProblem;
  /** Node indices of the placed nodes in document order; a node's position in this list names it below. */
  placed: readonly number[];
  /** Position of each node in `placed`, -1 when not placed. */
  position: Int32Array;
  transparent: readonly number[];
  external: readonly number[];
  /** Ordered pairs of positions (u, v), u != v, each once, sorted. */
  links: readonly (readonly [number, number])[];
  metrics: readonly MetricUse[];
}

export type NodeRole = 'placed' | 'transparent' | 'external';

function roleOf(n: NodeSpec, used: ReadonlySet<number>): NodeRole {
  if (n.kind === 'function') return 'placed';
  if (n.kind === 'endhost') return n.pin ? 'placed' : 'external';
  return used.has(n.index) ? 'placed' : 'transparent';
}

export function instanceOf(problem: PlacementProblem): Instance {
  const roles = problem.nodes.map((n) => roleOf(n, problem.used));
  const placed = problem.nodes.filter((_, k) => roles[k] === 'placed').map((n) => n.index);
  const position = new Int32Array(problem.nodes.length).fill(-1);
  placed.forEach((k, p) => (position[k] = p));
  const { relinked } = problem;
  const next = (k: number) =>
    relinked
      ? [...problem.nodes[k]!.next.filter((x) => !relinked.gone.has(x)), ...(relinked.extra.get(k) ?? [])]
      : problem.nodes[k]!.next;
  // Links: from each placed node through transparent nodes to the next placed ones; end hosts never forward.
  const links: [number, number][] = [];
  for (const u of placed) {
    const seen = new Set<number>([u]);
    const targets = new Set<number>();
    const stack = [...next(u)];
    while (stack.length) {
      const w = stack.pop()!;
      if (seen.has(w)) continue;
      seen.add(w);
      if (roles[w] === 'placed') targets.add(position[w]!);
      else if (roles[w] === 'transparent') stack.push(...next(w));
    }
    for (const v of [...targets].sort((a, b) => a - b)) links.push([position[u]!, v]);
  }
  const metrics = problem.linkMetrics.map((m): MetricUse => {
    const missing = [m.src, m.dst].filter((k) => roles[k] !== 'placed').map((k) => problem.nodes[k]!.name);
    if (missing.length) return { metric: m.index, notApplicable: `${missing.join(' and ')} not placed`, chains: [] };
    const chains = new Map<string, Chain>();
    for (const route of m.routes) {
      const positions = route.filter((k) => roles[k] === 'placed').map((k) => position[k]!);
      const key = positions.join(',');
      if (!chains.has(key)) chains.set(key, { metric: m.index, positions, route });
    }
    return { metric: m.index, chains: [...chains.values()] };
  });
  return {
    problem,
    placed,
    position,
    transparent: problem.nodes.filter((_, k) => roles[k] === 'transparent').map((n) => n.index),
    external: problem.nodes.filter((_, k) => roles[k] === 'external').map((n) => n.index),
    links,
    metrics,
  };
}

/** The first rule a host breaks for a node on its own, in a fixed order; undefined when it may carry the node. */
export function exclusionReason(n: NodeSpec, h: HostSpec): string | undefined {
  const functionNode = n.kind !== 'endhost';
  if (functionNode && h.type !== 'MIDDLEBOX') return `${h.type} host (functions go on MIDDLEBOX hosts)`;
  if (!functionNode && h.type === 'MIDDLEBOX') return 'MIDDLEBOX host (end hosts go on CLIENT or SERVER hosts)';
  if (functionNode && !h.supported.has(n.type)) return `SupportedVNF lacks ${n.type}`;
  const d = n.demand;
  if (d.cores > h.cores) return `fewer than ${d.cores} cores`;
  if (d.memory > h.memory) return `less than ${d.memory} memory`;
  if (d.storage > h.diskStorage) return `less than ${d.storage} diskStorage`;
  if (functionNode && h.maxVNF === 0) return 'maxVNF 0';
  if (!latencyFits(d.operations, d.maxLatency, h.cpu))
    return `cpu too slow for ${d.operations} operations within ${d.maxLatency} s`;
  return undefined;
}

export interface Domain {
  /** Host indices, ascending. */
  hosts: number[];
  /** Hosts ruled out, grouped by reason in the order reasons first occur. */
  excluded: { reason: string; hosts: number[] }[];
}

/** Where a node may go on its own (P3 and P4): its pinned host if it has one, else every host that fits it. */
export function domainOf(problem: PlacementProblem, node: number): Domain {
  const n = problem.nodes[node]!;
  const candidates = n.pin ? [problem.hosts[n.pin.host]!] : problem.hosts;
  const hosts: number[] = [];
  const groups = new Map<string, number[]>();
  for (const h of candidates) {
    const reason = exclusionReason(n, h);
    if (reason === undefined) hosts.push(h.index);
    else if (groups.has(reason)) groups.get(reason)!.push(h.index);
    else groups.set(reason, [h.index]);
  }
  return { hosts, excluded: [...groups].map(([reason, list]) => ({ reason, hosts: list })) };
}
