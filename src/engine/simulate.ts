/**
 * A simulation, end to end: NFV in, NFV out with firewalls placed and configured (or verified), `isSat` on every
 * property, and a report of what could not be enforced and why.
 */
import { parseAddress } from '../model/address.js';
import { badRequest, quote } from '../model/errors.js';
import type { Graph, NFV, Node, Property } from '../model/types.js';
import { allocatePlaces, type AllocationTuning, type ComponentReport, type Decisions } from './allocate.js';
import { SolverTimeout } from './maxsat.js';
import { ALGORITHMS, DEFAULT_TIMEOUT_SECONDS, PROOF_SECONDS, type Algorithm } from '../model/limits.js';
import { computeFlows, type FlowModel, type Requirement, type RequirementKind } from './flows.js';
import { buildNetwork, expandServiceGraph, expandWildcards, pathsBetween, type NetNode } from './network.js';
import { synthesiseRules } from './rules.js';

export { ALGORITHMS, type Algorithm } from '../model/limits.js';

export interface SimulateOptions {
  algorithm?: Algorithm;
  /** Solver time limit for the whole simulation. */
  timeoutSeconds?: number;
  /** Told the name of each phase as it starts (for a spinner). */
  onPhase?: (phase: string) => void;
  /** Benchmark baseline only: switch off the problem reductions. */
  tuning?: AllocationTuning;
  /** How long the solver may spend proving answers minimal (default PROOF_SECONDS, at most the time limit). */
  proofSeconds?: number;
}

export interface RequirementReport {
  /** Position in the output property list. */
  index: number;
  graph: number;
  name: Property['name'];
  src: string;
  dst: string;
  isSat: boolean;
  /** Positions of the requirements it cannot hold together with. */
  conflictsWith: number[];
  reason?: string;
}

export interface FirewallReport {
  graph: number;
  node: string;
  /** Placed by this simulation on an allocation place. */
  allocated: boolean;
  defaultAction: string;
  rules: number;
  /** Its rules were chosen by this simulation (otherwise they were given and only verified). */
  synthesised: boolean;
}

/** Seconds spent in each phase of the engine, summed over graphs; each component as it was decided. */
export interface Timings {
  /** Reading the document (filled in where it is read; 0 for a document given as an object). */
  parse: number;
  expansion: number;
  paths: number;
  flows: number;
  solving: number;
  writing: number;
  components: ComponentReport[];
}

export interface Report {
  verdict: 'SAT' | 'UNSAT';
  /** Proven minimal (fewest new firewalls, then fewest rules); false when a fast answer stood in (engine.md A.2). */
  optimal: boolean;
  properties: number;
  satisfied: number;
  firewalls: number;
  allocated: number;
  rules: number;
  requirements: RequirementReport[];
  placements: FirewallReport[];
  timings: Timings;
}

export interface SimulationResult {
  nfv: NFV;
  report: Report;
}

const KINDS: Record<Property['name'], RequirementKind> = {
  ISOLATION_PROPERTY: 'isolation',
  REACHABILITY_PROPERTY: 'reachability',
  COMPLETE_REACHABILITY_PROPERTY: 'complete',
};

/** Paths per requirement beyond which the input is rejected rather than solved for minutes. */
const PATH_LIMIT = 20_000;

function requirementsOf(graph: Graph, net: NetNode[], props: Property[], nfv: NFV): Requirement[] {
  const index = new Map(net.map((n) => [n.name, n.index]));
  const forwarding = nfv.networkForwardingPaths?.path ?? [];
  return props.map((p, k) => {
    for (const side of ['src', 'dst'] as const) {
      if (!index.has(p[side]))
        throw badRequest(`property ${side} ${quote(p[side])} is not a node of graph ${graph.id}`);
      if (!parseAddress(p[side])) throw badRequest(`property ${side} ${quote(p[side])} is not an IPv4 address pattern`);
    }
    const src = index.get(p.src)!;
    const dst = index.get(p.dst)!;
    const paths = pathsBetween(net, src, dst, forwarding, PATH_LIMIT);
    if (paths.length === 0) throw badRequest(`there is no path between ${p.src} and ${p.dst} in graph ${graph.id}`);
    for (const path of paths) {
      for (const n of path.slice(1, -1)) {
        if (!net[n]!.address && net[n]!.role === 'nat')
          throw badRequest(`NAT node ${quote(net[n]!.name)} is not named by an IPv4 address`);
      }
    }
    return { index: k, property: p, kind: KINDS[p.name], src, dst, paths };
  });
}

/** Writes the decisions into the graph: placed firewalls with their rules, forwarders, removed optional firewalls. */
function writeGraph(
  graph: Graph,
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  d: Decisions,
): FirewallReport[] {
  const onPath = new Set(reqs.flatMap((r) => r.paths.flatMap((p) => p.slice(1, -1))));
  const placements: FirewallReport[] = [];
  const removed = new Set<number>();
  for (const n of net) {
    if (!onPath.has(n.index) || (!n.configurable && !n.optional)) continue;
    const used = d.used.has(n.index);
    if (!used) {
      if (n.role === 'place') {
        n.node.functionalType = 'FORWARDER';
        n.node.configuration = { name: 'ForwardConf', forwarder: { name: 'Forwarder' } };
      } else removed.add(n.index);
      continue;
    }
    if (!n.configurable) {
      placements.push({
        graph: graph.id!,
        node: n.name,
        allocated: false,
        defaultAction: n.defaultAction ?? 'DENY',
        rules: n.rules?.length ?? 0,
        synthesised: false,
      });
      continue;
    }
    const whitelist = d.whitelist.get(n.index) ?? true;
    const drops = d.drops.get(n.index) ?? new Map<number, boolean>();
    const entering = [...drops].sort((a, b) => a[0] - b[0]).map(([c, drop]) => ({ cls: model.classes[c]!, drop }));
    const elements = synthesiseRules(entering, whitelist);
    const defaultAction = whitelist ? 'DENY' : 'ALLOW';
    if (n.role === 'place') {
      n.node.functionalType = 'FIREWALL';
      n.node.configuration = { name: 'AutoConf', firewall: { defaultAction, elements } };
    } else {
      const conf = (n.node.configuration ??= { name: 'AutoConf' });
      conf.firewall = { defaultAction, elements };
    }
    placements.push({
      graph: graph.id!,
      node: n.name,
      allocated: n.role === 'place',
      defaultAction,
      rules: elements.length,
      synthesised: true,
    });
  }
  if (removed.size) relink(graph, net, reqs, removed);
  return placements;
}

/** Removes unused optional firewalls; along each path through one, its surviving neighbours are linked directly. */
function relink(graph: Graph, net: NetNode[], reqs: Requirement[], removed: Set<number>): void {
  const link = (from: Node, to: string) => {
    if (!(from.neighbour ?? []).some((nb) => nb.name === to)) (from.neighbour ??= []).push({ name: to });
  };
  for (const path of reqs.flatMap((r) => r.paths)) {
    const kept = path.filter((k) => !removed.has(k));
    if (kept.length === path.length) continue;
    for (let i = 0; i + 1 < kept.length; i++) {
      const a = net[kept[i]!]!;
      const b = net[kept[i + 1]!]!;
      link(a.node, b.name);
      link(b.node, a.name);
    }
  }
  const gone = new Set([...removed].map((k) => net[k]!.name));
  graph.node = graph.node.filter((n) => !gone.has(n.name));
  for (const n of graph.node) if (n.neighbour) n.neighbour = n.neighbour.filter((nb) => !gone.has(nb.name));
}

function reasonFor(r: Requirement, d: Decisions): string | undefined {
  if (d.satisfied[r.index]) return undefined;
  const others = d.conflicts.get(r.index) ?? [];
  if (others.length === 0) return 'cannot hold even on its own: the configured firewalls or the topology prevent it';
  return `conflicts with ${others.length === 1 ? 'requirement' : 'requirements'} ${others.join(', ')}`;
}

export async function simulate(input: NFV, options: SimulateOptions = {}): Promise<SimulationResult> {
  const algorithm = options.algorithm ?? 'AP';
  if (!ALGORITHMS.includes(algorithm)) throw badRequest(`algorithm: ${quote(algorithm)} is not AP or MF`);
  const timeoutMs = (options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
  const onPhase = options.onPhase ?? (() => undefined);
  const timings: Timings = { parse: 0, expansion: 0, paths: 0, flows: 0, solving: 0, writing: 0, components: [] };
  type Phase = Exclude<keyof Timings, 'components' | 'parse'>;
  let current: Phase | undefined;
  let since = performance.now();
  /** Ends the running phase (adding its seconds) and starts the next. */
  const phase = (next?: Phase) => {
    const now = performance.now();
    if (current) timings[current] += (now - since) / 1000;
    [current, since] = [next, now];
    if (next) onPhase(next === 'expansion' ? 'expanding' : next);
  };
  let optimal = true;
  const nfv = structuredClone(input);
  const properties: Property[] = [];
  const requirements: RequirementReport[] = [];
  const placements: FirewallReport[] = [];
  const deadline = Date.now() + timeoutMs;
  const proofDeadline = Date.now() + Math.min(timeoutMs, (options.proofSeconds ?? PROOF_SECONDS) * 1000);

  for (const graph of nfv.graphs.graph ?? []) {
    const own = nfv.propertyDefinition.property.filter((p) => p.graph === graph.id);
    if (own.length === 0) continue;
    phase('expansion');
    if (graph.serviceGraph) expandServiceGraph(graph, nfv.constraints);
    const expanded = expandWildcards(graph, own);
    const net = buildNetwork(graph, nfv.constraints);
    phase('paths');
    const reqs = requirementsOf(graph, net, expanded, nfv);
    phase('flows');
    const model = computeFlows(net, reqs);
    phase('solving');
    const decisions = await allocatePlaces(
      net,
      reqs,
      model,
      Math.max(1, deadline - Date.now()),
      options.tuning,
      Math.max(1, proofDeadline - Date.now()),
    ).catch((e: unknown) => {
      throw e instanceof SolverTimeout ? new SolverTimeout(timeoutMs / 1000) : e;
    });
    optimal &&= decisions.optimal;
    timings.components.push(...decisions.components);
    phase('writing');
    placements.push(...writeGraph(graph, net, reqs, model, decisions));
    const offset = properties.length;
    for (const r of reqs) {
      properties.push({ ...r.property, isSat: decisions.satisfied[r.index] });
      requirements.push({
        index: offset + r.index,
        graph: graph.id!,
        name: r.property.name,
        src: r.property.src,
        dst: r.property.dst,
        isSat: decisions.satisfied[r.index]!,
        conflictsWith: (decisions.conflicts.get(r.index) ?? []).map((k) => offset + k),
        reason: reasonFor(r, decisions),
      });
    }
  }
  phase();
  for (const key of ['expansion', 'paths', 'flows', 'solving', 'writing'] as const)
    timings[key] = Math.round(timings[key] * 1000) / 1000;
  // Properties of graphs that were not simulated keep their place after the others.
  const simulated = new Set(requirements.map((r) => r.graph));
  properties.push(...nfv.propertyDefinition.property.filter((p) => !simulated.has(p.graph)));
  nfv.propertyDefinition.property = properties;

  const satisfied = requirements.filter((r) => r.isSat).length;
  const firewalls = (nfv.graphs.graph ?? []).flatMap((g) => g.node).filter((n) => n.functionalType === 'FIREWALL');
  return {
    nfv,
    report: {
      verdict: satisfied === requirements.length ? 'SAT' : 'UNSAT',
      optimal,
      properties: requirements.length,
      satisfied,
      firewalls: firewalls.length,
      allocated: placements.filter((p) => p.allocated).length,
      rules: placements.filter((p) => p.synthesised).reduce((sum, p) => sum + p.rules, 0),
      requirements,
      placements,
      timings,
    },
  };
}
