/**
 * Placement joined with the allocation (placement.md P8), and the hosts it writes (P9).
 *
 * Allocate, place, cut: the graphs' allocations (proven least on new firewalls, then rules) are placed together on
 * the one substrate; when they cannot be, a set C of the places and optional firewalls they use, minimal by
 * deletion, that cannot be placed together with the mandatory nodes becomes the hard clause "not all of C" and the
 * graph holding C allocates again. Placement feasibility is monotone (a subset of a placeable allocation is
 * placeable), so a cut never excludes a placeable allocation: the first allocation that can be placed is the least
 * one that can. A cut whose nodes lie in several graphs is a disjunction over them; the search then branches, one
 * branch per graph (or per node when graphs share a node) and keeps the cheapest placeable answer. An allocation
 * that would meet other requirements than the first one is never taken: placement does not change a verdict (P1).
 */
import { beyondBound } from '../../model/errors.js';
import type { NFV } from '../../model/types.js';
import type { AllocationCut, Decisions } from '../solving/allocate.js';
import { SolverTimeout } from '../solving/work.js';
import type { NetNode } from '../flows/network.js';
import {
  PLACEMENT_EFFORT,
  minimalConflict,
  placeNodes,
  withAllocation,
  type Conflict,
  type LinkLatency,
  type LinkMetricsResult,
  type Objective,
  type PlacementAnswer,
  type PlacementProblem,
  type Relinked,
  type HostUsage,
  type PlacedNode,
} from './index.js';

/** The report's `hosting` section (P9). */
export interface HostingReport {
  /** none: the NFV has no Host; infeasible: no allocation meeting the requirements can be placed. */
  status: 'placed' | 'infeasible' | 'none';
  /** The objective (active hosts, then total latency) is proven least for the answer's allocation. */
  optimal?: boolean;
  objective?: Objective;
  /** What the search proved no placement beats, when it is not optimal. */
  lowerBound?: Objective;
  nodes?: PlacedNode[];
  /** End hosts no Host pins. */
  external?: string[];
  /** Places and optional firewalls the allocation leaves unused: not placed, traffic passes. */
  transparent?: string[];
  hosts?: HostUsage[];
  /** Each LinkMetrics entry: its latency against reqLatency, the route and host path. */
  links?: LinkMetricsResult[];
  /** Each link between placed nodes, with the host path that carries it. */
  routes?: LinkLatency[];
  conflicts?: Conflict[];
  /** The sets of places and optional firewalls found unplaceable together, in the order found (P8 step 3). */
  allocationCuts?: string[][];
}

/** How the result graph will differ from the expanded one: optional firewalls removed, links written around them. */
export interface ResultShape {
  gone: string[];
  links: [from: string, to: string][];
}

/** One simulated graph, as the joint search sees it. */
export interface AllocatedGraph {
  net: readonly NetNode[];
  /** Names of the decision nodes (places, optional firewalls on a requirement's path) the decisions use. */
  usedNames(d: Decisions): string[];
  shape(d: Decisions): ResultShape;
}

export interface JointSearch {
  problem: PlacementProblem;
  graphs: readonly AllocatedGraph[];
  /** Places and optional firewalls every allocation uses (forced places, optional firewalls off every path). */
  always: readonly string[];
  /** Allocates graph k again under its cuts. */
  allocate(k: number, cuts: readonly AllocationCut[]): Promise<Decisions>;
  /** Epoch milliseconds: the simulation's time limit. */
  deadline: number;
}

export interface JointAnswer {
  /** The decisions to write, per graph: the placed allocation, or the first one when none can be placed. */
  decisions: Decisions[];
  hosting: HostingReport;
  /** The placement, when there is one. */
  placement?: PlacementAnswer;
}

interface State {
  cuts: AllocationCut[][];
  decisions: Decisions[];
}

/** Lexicographic comparison of summed (new firewalls, changes, rules) costs: negative when a is cheaper. */
function compareCost(a: readonly Decisions[], b: readonly Decisions[]): number {
  const sum = (ds: readonly Decisions[], k: number) => ds.reduce((s, d) => s + d.cost[k]!, 0);
  for (let k = 0; k < 3; k++) {
    const diff = sum(a, k) - sum(b, k);
    if (diff !== 0) return diff;
  }
  return 0;
}

const verdicts = (ds: readonly Decisions[]) => ds.map((d) => d.satisfied.map((s) => (s ? 1 : 0)).join('')).join('/');

/** The placement's work ran out before any placement was found and before none was proven possible. */
const beyondWork = () =>
  beyondBound(
    `no placement was found, nor proven impossible, within the placement search's work ` +
      `(PLACEMENT_EFFORT, ${PLACEMENT_EFFORT.toLocaleString('en')} candidate scans)`,
  );

/** The joint search of P8: the cheapest placeable allocation, or the first allocation and why none can be placed. */
export async function placeJointly(search: JointSearch, first: Decisions[]): Promise<JointAnswer> {
  const { problem, graphs, always, deadline } = search;
  const indexIn = graphs.map((g) => new Map(g.net.map((n) => [n.name, n.index])));
  const reference = verdicts(first);
  const conflicts = new Map<string, Conflict>();
  const allocationCuts: string[][] = [];
  const limits = { deadline };
  let best: { state: State; placement: PlacementAnswer } | undefined;
  const stack: State[] = [{ cuts: graphs.map(() => []), decisions: first }];
  let unplaceable = false;
  while (stack.length > 0 && !unplaceable) {
    if (Date.now() >= deadline) throw new SolverTimeout();
    const state = stack.pop()!;
    if (best && compareCost(state.decisions, best.state.decisions) >= 0) continue;
    const chosen = state.decisions.flatMap((d, k) => graphs[k]!.usedNames(d));
    const shaped = {
      ...problem,
      relinked: relinkedOf(
        problem,
        state.decisions.map((d, k) => graphs[k]!.shape(d)),
      ),
    };
    const outcome = placeNodes(withAllocation(shaped, [...always, ...chosen]), limits);
    if (outcome.status === 'timeout') throw beyondWork();
    if (outcome.status === 'placed') {
      best = { state, placement: outcome };
      continue;
    }
    for (const c of outcome.conflicts) if (!conflicts.has(c.message)) conflicts.set(c.message, c);
    const cut = minimalConflict(shaped, chosen, limits, always);
    if (cut.status === 'timeout') throw beyondWork();
    // placeNodes and the cut's own test agree that the allocation cannot be placed; 'placeable' cannot happen.
    if (cut.status !== 'conflict' || cut.cut.length === 0) {
      unplaceable = true;
      continue;
    }
    allocationCuts.push(cut.cut);
    for (const branch of branches(cut.cut, indexIn).reverse()) {
      const cuts = state.cuts.map((list, k) => [...list, ...(branch.get(k) ?? [])]);
      const decisions = [...state.decisions];
      for (const k of branch.keys()) decisions[k] = await search.allocate(k, cuts[k]!);
      // An allocation that meets other requirements would change a verdict: not this branch.
      if (verdicts(decisions) !== reference) continue;
      stack.push({ cuts, decisions });
    }
  }
  if (best && !unplaceable) {
    const p = best.placement;
    return {
      decisions: best.state.decisions,
      placement: p,
      hosting: {
        status: 'placed',
        optimal: p.optimal,
        objective: p.objective,
        ...(p.optimal ? {} : { lowerBound: p.lowerBound }),
        nodes: p.nodes,
        external: p.external,
        transparent: p.transparent,
        hosts: p.hosts,
        links: p.linkMetrics,
        routes: p.links,
        ...(allocationCuts.length ? { allocationCuts } : {}),
      },
    };
  }
  return {
    decisions: first,
    hosting: { status: 'infeasible', conflicts: [...conflicts.values()], allocationCuts },
  };
}

/** The result graph's shape over all graphs, on the problem's node indices. */
function relinkedOf(problem: PlacementProblem, shapes: readonly ResultShape[]): Relinked {
  const index = (name: string) => problem.nodeIndex.get(name)!;
  const extra = new Map<number, number[]>();
  for (const [a, b] of shapes.flatMap((s) => s.links)) {
    const list = extra.get(index(a)) ?? extra.set(index(a), []).get(index(a))!;
    if (!list.includes(index(b))) list.push(index(b));
  }
  return { gone: new Set(shapes.flatMap((s) => s.gone).map(index)), extra };
}

/**
 * "Not all of C" as alternatives, each a set of cuts per graph: one clause when C lies in one graph; one branch per
 * graph holding part of C when no node is in two graphs; else one branch per node, that node unused everywhere.
 */
function branches(cut: readonly string[], indexIn: readonly ReadonlyMap<string, number>[]): Map<number, number[][]>[] {
  const holders = cut.map((name) => indexIn.flatMap((index, k) => (index.has(name) ? [k] : [])));
  const graphs = [...new Set(holders.flat())].sort((a, b) => a - b);
  const shared = holders.some((h) => h.length > 1);
  if (!shared)
    return graphs.map(
      (k) => new Map([[k, [cut.filter((_, i) => holders[i]![0] === k).map((name) => indexIn[k]!.get(name)!)]]]),
    );
  return cut.map((name, i) => new Map(holders[i]!.map((k) => [k, [[indexIn[k]!.get(name)!]]])));
}

/** The result's hosts (P9): every attribute as given, NodeRef = the nodes placed there, active iff it has one. */
export function writeHosts(nfv: NFV, placement: PlacementAnswer): void {
  const byHost = new Map<string, string[]>();
  for (const p of placement.nodes) (byHost.get(p.host) ?? byHost.set(p.host, []).get(p.host)!).push(p.node);
  for (const host of nfv.hosts?.host ?? []) {
    const nodes = byHost.get(host.name) ?? [];
    if (nodes.length) host.nodeRef = nodes.map((node) => ({ node }));
    else delete host.nodeRef;
    host.active = nodes.length > 0;
  }
}
