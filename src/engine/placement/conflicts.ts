/**
 * Conflicts found by search, minimised by deletion (each test is a search for any placement, monotone because
 * relaxing or dropping constraints never removes a placement):
 * - COMBINED (P9): over constraint groups of one allocation (one node's domain, one host's capacity per resource or
 *   maxVNF, one LinkMetrics entry, one link), when preprocessing found nothing but no placement exists;
 * - the cut of P8 step 3: over the places and optional firewalls an allocation uses.
 * A test that runs out of time keeps its element, so the answer stays a conflict but is then not `minimal`.
 */
import { metricLabel, preprocess, type Conflict } from './bounds.js';
import { withAllocation, type PlacementProblem } from './input.js';
import { domainOf, instanceOf, type Instance } from './instance.js';
import { buildModel, CAPACITIES, groupKey, type ConstraintGroup } from './model.js';
import type { HostGraph } from './paths.js';
import { findPlacement, type SearchLimits } from './search.js';

type Feasibility = 'placed' | 'infeasible' | 'timeout';

/** Whether the allocation of `problem` can be placed at all, and the work that took. */
export function feasibility(
  problem: PlacementProblem,
  graph: HostGraph,
  limits: SearchLimits,
): { status: Feasibility; work: number } {
  const instance = instanceOf(problem);
  const pre = preprocess(instance, graph);
  if (!pre.domains) return { status: 'infeasible', work: 0 };
  return findPlacement(buildModel(instance, graph, pre.domains), limits);
}

/** One budget of work shared by the tests of a deletion, so that their number does not multiply it. */
function sharedBudget(limits: SearchLimits) {
  let left = limits.effort;
  return <T extends { status: Feasibility; work: number }>(test: (limits: SearchLimits) => T): Feasibility => {
    if (left <= 0) return 'timeout';
    const result = test({ deadline: limits.deadline, effort: left });
    left -= result.work;
    return result.status;
  };
}

/** The COMBINED conflict of an instance that has no placement though preprocessing found no conflict. */
export function combinedConflict(instance: Instance, graph: HostGraph, limits: SearchLimits): Conflict {
  const { problem, placed, links } = instance;
  const domains = placed.map((k) => Int32Array.from(domainOf(problem, k).hosts));
  const groups: ConstraintGroup[] = [
    ...links.map((_, link): ConstraintGroup => ({ kind: 'link', link })),
    ...instance.metrics
      .filter((u) => u.chains.length && problem.linkMetrics[u.metric]!.reqLatency !== null)
      .map((u): ConstraintGroup => ({ kind: 'metric', metric: u.metric })),
    ...problem.hosts.flatMap((h) =>
      CAPACITIES.map((resource): ConstraintGroup => ({ kind: 'capacity', host: h.index, resource })),
    ),
    ...placed.map((_, position): ConstraintGroup => ({ kind: 'domain', position })),
  ];
  const relaxed = new Set<string>();
  let minimal = true;
  const run = sharedBudget(limits);
  for (const g of groups) {
    const key = groupKey(g);
    // Cases where relaxing cannot change the answer need no search: a maxVNF never given, links in a connected
    // substrate, the capacity of a host no node may use while every domain still holds.
    const unused =
      (g.kind === 'capacity' && g.resource === 'maxVNF' && problem.hosts[g.host]!.maxVNF === null) ||
      (g.kind === 'link' && graph.parts === 1) ||
      (g.kind === 'capacity' && domains.every((d, p) => !relaxed.has(`d${p}`) && !d.includes(g.host)));
    if (unused) {
      relaxed.add(key);
      continue;
    }
    const trial = new Set(relaxed).add(key);
    const status = run((budget) => findPlacement(buildModel(instance, graph, domains, trial), budget));
    if (status === 'infeasible') relaxed.add(key);
    else if (status === 'timeout') minimal = false;
  }
  const kept = groups.filter((g) => !relaxed.has(groupKey(g)));
  const nodeName = (p: number) => problem.nodes[placed[p]!]!.name;
  const hostName = (h: number) => problem.hosts[h]!.name;
  const nodes = new Set<string>();
  const hosts = new Set<string>();
  const constraints = kept.map((g) => {
    if (g.kind === 'domain') {
      nodes.add(nodeName(g.position));
      return `domain of ${nodeName(g.position)}`;
    }
    if (g.kind === 'capacity') {
      hosts.add(hostName(g.host));
      return `${g.resource} of ${hostName(g.host)}`;
    }
    if (g.kind === 'link') {
      const [u, v] = links[g.link]!;
      nodes.add(nodeName(u)).add(nodeName(v));
      return `link ${nodeName(u)} -> ${nodeName(v)}`;
    }
    const m = problem.linkMetrics[g.metric]!;
    const [src, dst] = [problem.nodes[m.src]!.name, problem.nodes[m.dst]!.name];
    nodes.add(src).add(dst);
    return metricLabel(src, dst, m.reqLatency);
  });
  return {
    code: 'COMBINED',
    message: `no placement meets these together: ${constraints.join('; ')}`,
    nodes: [...nodes],
    hosts: [...hosts],
    constraints,
    minimal,
  };
}

export type CutOutcome =
  { status: 'placeable' } | { status: 'conflict'; cut: string[]; minimal: boolean } | { status: 'timeout' };

/**
 * P8 step 3: the allocation `candidates` (places and optional firewalls used) cannot be placed; which of them cannot
 * be used together with the mandatory nodes. Deletion in document order: an element goes when the rest still
 * cannot be placed. An empty cut: the mandatory nodes alone cannot be placed, so no allocation can. `always`: places
 * every allocation uses (forced by an allocation constraint), never part of a cut.
 */
export function minimalCut(
  problem: PlacementProblem,
  graph: HostGraph,
  candidates: readonly string[],
  limits: SearchLimits,
  always: readonly string[] = [],
): CutOutcome {
  const run = sharedBudget(limits);
  const test = (names: readonly string[]) =>
    run((budget) => feasibility(withAllocation(problem, [...always, ...names]), graph, budget));
  const first = test(candidates);
  if (first !== 'infeasible') return first === 'placed' ? { status: 'placeable' } : { status: 'timeout' };
  let cut = [...new Set(candidates)].sort((a, b) => problem.nodeIndex.get(a)! - problem.nodeIndex.get(b)!);
  let minimal = true;
  for (const name of [...cut]) {
    const rest = cut.filter((x) => x !== name);
    const status = test(rest);
    if (status === 'infeasible') cut = rest;
    else if (status === 'timeout') minimal = false;
  }
  return { status: 'conflict', cut, minimal };
}
