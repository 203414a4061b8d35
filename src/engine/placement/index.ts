/**
 * Placement of a result graph's network functions on substrate hosts (placement.md, issue 22), as one step the
 * engine calls after allocation:
 *
 *   const problem = definePlacement(placementInput(nfv, used));   // P10 refusals are 400s, thrown here
 *   const outcome = placeNodes(problem, { deadline });              // placed | infeasible | timeout
 *   minimalConflict(problem, used)                                  // P8 step 3: the cut to add to the allocation
 *
 * The parts: `input` (the problem and its checks), `decimal` (exact node latency), `instance` (one allocation:
 * placed nodes, links, chains), `paths` (host distances, P5), `bounds` (conflicts found without search, narrowed
 * candidates), `model` and `state` (the search's numeric model and partial placement), `search` (heuristic, branch
 * and bound, neighbourhood search), `conflicts` (COMBINED and the cut, minimised by deletion), `report` (the answer
 * written out).
 */
import { preprocess, type Conflict } from './bounds.js';
import { combinedConflict, minimalCut, feasibility, type CutOutcome } from './conflicts.js';
import type { Edge, PlacementProblem } from './input.js';
import { withAllocation } from './input.js';
import { instanceOf } from './instance.js';
import { buildModel } from './model.js';
import { hostGraph, HostPaths, type HostGraph } from './paths.js';
import { describePlacement, type PlacementDetails } from './report.js';
import { optimise, type Objective, type SearchLimits } from './search.js';

export { definePlacement, placementInput, withAllocation, MAX_ROUTES } from './input.js';
export type {
  LinkMetricsEntry,
  NodeKind,
  PinSource,
  PlacementGraph,
  PlacementGraphNode,
  PlacementInput,
  PlacementProblem,
  Relinked,
} from './input.js';
export type { Conflict, ConflictCode } from './bounds.js';
export type { CutOutcome } from './conflicts.js';
export type { HostUsage, LinkLatency, LinkMetricsResult, PlacedNode } from './report.js';
export type { Objective } from './search.js';

/** Default time for one placement when the caller gives no deadline. */
export const PLACEMENT_SECONDS = 10;
/**
 * Default work budget (candidate scans) of one placement. It stops the search before the clock on all but the
 * largest inputs, so that the same input gives the same answer on any machine and load.
 */
export const PLACEMENT_EFFORT = 400_000_000;

export interface PlacementOptions {
  /** Epoch milliseconds (Date.now()) by which the answer is due; default PLACEMENT_SECONDS from now. */
  deadline?: number;
  /** Work budget, default PLACEMENT_EFFORT. */
  effort?: number;
}

interface Unplaced {
  /** Names of end hosts no Host pins (outside the substrate). */
  external: string[];
  /** Names of places and optional firewalls the allocation does not use (traffic passes through). */
  transparent: string[];
}

export interface PlacementAnswer extends PlacementDetails, Unplaced {
  status: 'placed';
  objective: Objective;
  /** The objective is proven least; when false, `lowerBound` is what the search proved. */
  optimal: boolean;
  /** No placement does better on either count (equal to `objective` when optimal). */
  lowerBound: Objective;
}

export interface PlacementInfeasible extends Unplaced {
  status: 'infeasible';
  conflicts: Conflict[];
}

/** The deadline or budget ran out before any placement was found and before infeasibility was proven. */
export interface PlacementTimeout extends Unplaced {
  status: 'timeout';
}

export type PlacementOutcome = PlacementAnswer | PlacementInfeasible | PlacementTimeout;

/** Host distances depend only on the substrate, which every allocation of one problem shares. */
const graphs = new WeakMap<readonly Edge[], HostGraph>();
function graphOf(problem: PlacementProblem): HostGraph {
  let graph = graphs.get(problem.edges);
  if (!graph) graphs.set(problem.edges, (graph = hostGraph(problem)));
  return graph;
}

const limitsOf = (options: PlacementOptions): SearchLimits => ({
  deadline: options.deadline ?? Date.now() + PLACEMENT_SECONDS * 1000,
  effort: options.effort ?? PLACEMENT_EFFORT,
});

/** Places the problem's allocation: the least (active hosts, total latency) placement, or why there is none. */
export function placeNodes(problem: PlacementProblem, options: PlacementOptions = {}): PlacementOutcome {
  const limits = limitsOf(options);
  const graph = graphOf(problem);
  const instance = instanceOf(problem);
  const names = (list: readonly number[]) => list.map((k) => problem.nodes[k]!.name);
  const unplaced: Unplaced = { external: names(instance.external), transparent: names(instance.transparent) };
  const pre = preprocess(instance, graph);
  if (!pre.domains) return { status: 'infeasible', conflicts: pre.conflicts, ...unplaced };
  const outcome = optimise(buildModel(instance, graph, pre.domains), limits);
  if (outcome.status === 'timeout') return { status: 'timeout', ...unplaced };
  if (outcome.status === 'infeasible')
    return { status: 'infeasible', conflicts: [combinedConflict(instance, graph, limits)], ...unplaced };
  const details = describePlacement(instance, graph, new HostPaths(graph, problem.edges), outcome.hostOf);
  return {
    status: 'placed',
    ...details,
    ...unplaced,
    objective: outcome.objective,
    optimal: outcome.optimal,
    lowerBound: outcome.lowerBound,
  };
}

/**
 * Whether the allocation `used` (places and optional firewalls) can be placed; monotone (P8): if it can, so can
 * every subset of it. 'timeout' when the limits ran out first.
 */
export function isPlaceable(
  problem: PlacementProblem,
  used: readonly string[],
  options: PlacementOptions = {},
): 'placed' | 'infeasible' | 'timeout' {
  return feasibility(withAllocation(problem, used), graphOf(problem), limitsOf(options)).status;
}

/**
 * P8 step 3 for the allocate-place-cut loop: given the allocation `candidates` that cannot be placed, a subset C
 * minimal by deletion that cannot be placed with the mandatory nodes; the engine then forbids using all of C.
 * An empty cut means no allocation can be placed. `always`: places every allocation uses, never cut.
 */
export function minimalConflict(
  problem: PlacementProblem,
  candidates: readonly string[],
  options: PlacementOptions = {},
  always: readonly string[] = [],
): CutOutcome {
  return minimalCut(problem, graphOf(problem), candidates, limitsOf(options), always);
}
