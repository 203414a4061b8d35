/**
 * A simulation, end to end: NFV in, NFV out with firewalls placed and configured (or verified), `isSat` on every
 * property, and a report of what could not be enforced and why.
 */
import { parseAddress } from '../model/address.js';
import { badRequest, quote } from '../model/errors.js';
import type { Elements, Graph, NFV, Property } from '../model/types.js';
import {
  DEFAULT_TUNING,
  ENCODING_LIMIT,
  WIDE_ENCODING_MAX,
  allocatePlaces,
  provenPlaces,
  refinedFirst,
  settleBounds,
  type AllocationCut,
  type AllocationTuning,
  type ComponentReport,
  type Decisions,
  type Pending,
  type Revision,
} from './solving/allocate.js';
import { PROOF_MAX_VARIABLES, PROOF_VARIABLES_MAX, SOLVER_LIMITS } from './solving/exact.js';
import { SolverTimeout, WorkPool } from './solving/work.js';
import {
  ALGORITHMS,
  BOUND_WORK,
  OBJECTIVES,
  PROOF_WORK,
  REFINED_FIRST_WORK,
  REFINED_WORK,
  SIMULATION_DEFAULTS,
  type Algorithm,
  type Objective,
} from '../model/limits.js';
import {
  computeFlows,
  intermediates,
  nodesOnWay,
  pathsNeeded,
  holdsWith,
  type FlowModel,
  type Requirement,
  type RequirementKind,
} from './flows/flows.js';
import {
  buildNetwork,
  corridorLinks,
  corridorNext,
  corridors,
  cycleRank,
  expandServiceGraph,
  expandWildcards,
  firstMatchDrops,
  forwardingPath,
  optionalNames,
  pathsBetween,
  type NetNode,
} from './flows/network.js';
import { ruleHolds } from '../model/space.js';
import { placeJointly, writeHosts, type HostingReport, type ResultShape } from './placement/hosting.js';
import { definePlacement, placementInput } from './placement/index.js';

export { ALGORITHMS, type Algorithm } from '../model/limits.js';

export interface SimulateOptions {
  algorithm?: Algorithm;
  /** Solver time limit for the whole simulation. */
  timeoutSeconds?: number;
  /** Told the name of each phase as it starts (for a spinner). */
  onPhase?: (phase: string) => void;
  /** Benchmark baseline only: switch off the problem reductions. */
  tuning?: AllocationTuning;
  /** The work the solver may spend proving answers minimal (default PROOF_WORK ticks, work.ts). */
  proofWork?: number;
  /** How hard to try to prove the answer minimal, 1 (default) to MAX_EFFORT: what it buys is effortTuning's. */
  effort?: number;
  /** Configured firewalls are deployed and may change, at the fewest rule changes (issue 14). */
  reconfigure?: boolean;
  /** VEREFOO's fewest rules (default), or least privilege first (docs/SEMANTICS.md). */
  objective?: Objective;
  /**
   * Which requirements list their simple paths: those with few (default), all of them (the path-enumerating method,
   * for the benchmark's same-run baseline), or only those that must (for the tests of the state graphs).
   */
  paths?: PathListing;
}

export type PathListing = 'few' | 'all' | 'needed';

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
  /**
   * Reconfiguration with an InitialProperty listing it too: the deployed rules were built for it, and whether it
   * held on the network as deployed (it is enforced in the answer either way).
   */
  heldBefore?: boolean;
  /**
   * An approximated firewall decides it (firewall-io.md B.5): neither its may nor its must list proves or refutes
   * it; the live lines of the approximated rules that meet its traffic. `isSat` is then false.
   */
  unknown?: string[];
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
  /** Reconfiguration: how a deployed firewall's rule list changes. */
  change?: FirewallChange;
}

/** From a deployed rule list to the new one: new rules go first, kept ones follow in their order. */
export interface FirewallChange {
  /** Positions (from 1) in the deployed list of the rules kept, and of those removed. */
  kept: number[];
  removed: number[];
  /** New rules with their position (from 1) in the new list. */
  added: { position: number; rule: Elements }[];
  defaultAction: { from: 'ALLOW' | 'DENY'; to: 'ALLOW' | 'DENY' };
  /**
   * Removals (one per live line for an imported firewall) and rules added, plus classes that reach a flipped
   * default.
   */
  changes: number;
}

/** Seconds spent in each phase of the engine, summed over graphs; each component as it was decided. */
export interface Timings {
  /** Reading the document (filled in where it is read; 0 for a document given as an object). */
  parse: number;
  expansion: number;
  paths: number;
  flows: number;
  solving: number;
  /** Placing on the substrate (allocations again after a cut count as solving). */
  placing: number;
  writing: number;
  components: ComponentReport[];
}

export interface Report {
  verdict: 'SAT' | 'UNSAT';
  /** What the synthesised firewalls minimise (SimulateOptions.objective). */
  objective: Objective;
  /** How hard the proof was tried (SimulateOptions.effort). */
  effort: number;
  /** Proven minimal (fewest new firewalls, then fewest rules); false when a fast answer stood in (engine.md A.2). */
  optimal: boolean;
  properties: number;
  satisfied: number;
  /** Requirements neither held nor failed: an approximated firewall decides them (`unknown` on each). */
  unknown?: number;
  firewalls: number;
  allocated: number;
  rules: number;
  /** Reconfiguration: rule changes over all deployed firewalls (FirewallChange.changes summed). */
  changes?: number;
  /**
   * Where not proven minimal: what no answer meeting the same requirements goes below, in firewalls and in rules
   * (engine/solving/bounds.ts says how each is proven).
   */
  lowerBound?: LowerBoundReport;
  requirements: RequirementReport[];
  placements: FirewallReport[];
  /** Where the functions run on the substrate (placement.md P9); status "none" without Hosts. */
  hosting: HostingReport;
  timings: Timings;
}

export interface LowerBoundReport {
  firewalls: number;
  rules: number;
  /** How the bounds were proven, in a few words. */
  method: string;
}

/** What the report says of how its lower bounds were proven. */
export const BOUND_METHOD =
  "the cost where a component is proven; else the per-class optima and hitting sets of the requirements' walks, " +
  "solved by our solver's cores (past the encoding limit, the firewalls' as a linear program by HiGHS), a second " +
  'rule where one cannot part what a firewall must pass and drop; where ' +
  "reachabilities chain isolations' ends, a rule per firewall that must part them (the isolations' colours, " +
  'disjoint corridors)';

export interface SimulationResult {
  nfv: NFV;
  report: Report;
}

const KINDS: Record<Property['name'], RequirementKind> = {
  ISOLATION_PROPERTY: 'isolation',
  REACHABILITY_PROPERTY: 'reachability',
  COMPLETE_REACHABILITY_PROPERTY: 'complete',
};

/**
 * Simple paths listed per requirement at most, where they must be listed (a NAT on a cycle of its way, two NATs on it,
 * complete reachability through a NAT): beyond it a 422 names the figure. Every other requirement lists at most
 * 2^FEW_CYCLES (see requirementsOf).
 */
export const PATH_LIMIT = 20_000;

/**
 * Corridors of cycle rank up to this list their simple paths (at most 2^8 = 256 by the cycle-space bound, so
 * O(V + E) work): atomic flows over a few paths make a smaller formula, proven faster, than the state graph (Geant's
 * 110 requirements: proven in about 2 s over paths, not in 40 s over states). Redundant networks go without paths.
 */
const FEW_CYCLES = 8;

/** Is there a walk from src to dst inside the corridor? */
function connected(net: NetNode[], r: Omit<Requirement, 'paths'>): boolean {
  const links = corridorNext(net, r.corridor);
  const seen = new Uint8Array(net.length);
  seen[r.src] = 1;
  const queue = [r.src];
  for (let h = 0; h < queue.length; h++)
    for (const m of links(queue[h]!)) {
      if (m === r.dst) return true;
      if (seen[m]) continue;
      seen[m] = 1;
      queue.push(m);
    }
  return false;
}

function requirementsOf(
  graph: Graph,
  net: NetNode[],
  props: Property[],
  nfv: NFV,
  listing: PathListing,
): Requirement[] {
  const index = new Map(net.map((n) => [n.name, n.index]));
  const forwarding = nfv.networkForwardingPaths?.path ?? [];
  const corridorBetween = corridors(net);
  return props.map((p, k) => {
    for (const side of ['src', 'dst'] as const) {
      if (!index.has(p[side]))
        throw badRequest(`property ${side} ${quote(p[side])} is not a node of graph ${graph.id}`);
      if (!parseAddress(p[side])) throw badRequest(`property ${side} ${quote(p[side])} is not an IPv4 address pattern`);
    }
    const src = index.get(p.src)!;
    const dst = index.get(p.dst)!;
    const noPath = () => badRequest(`there is no path between ${p.src} and ${p.dst} in graph ${graph.id}`);
    const fixed = forwardingPath(net, src, dst, forwarding);
    // A forwarding path is the requirement's only path: one block per link.
    const corridor = fixed
      ? { blocks: fixed.slice(1).map((n, i) => [fixed[i]!, n]), joints: fixed }
      : corridorBetween(src, dst);
    if (!corridor) throw noPath();
    const base = { index: k, property: p, kind: KINDS[p.name], src, dst, corridor, ...(fixed ? { fixed: true } : {}) };
    for (const n of intermediates(base)) {
      if (!net[n]!.address && net[n]!.role === 'nat')
        throw badRequest(`NAT node ${quote(net[n]!.name)} is not named by an IPv4 address`);
    }
    const few = listing === 'all' || (listing === 'few' && cycleRank(net, corridor) <= FEW_CYCLES);
    const why = fixed
      ? 'a forwarding path'
      : few
        ? listing === 'all'
          ? 'the path-enumerating method'
          : 'a corridor of few cycles'
        : pathsNeeded(net, base);
    let paths: number[][] | undefined;
    if (why !== undefined) {
      try {
        paths = fixed ? [fixed] : pathsBetween(net, corridor, PATH_LIMIT, why);
      } catch (e) {
        // A corridor of few cycles but many nodes: its state graph decides it as well.
        if (!few || listing === 'all' || pathsNeeded(net, base) !== undefined) throw e;
      }
    }
    if (paths ? paths.length === 0 : !connected(net, base)) throw noPath();
    return paths ? { ...base, paths } : base;
  });
}

/**
 * Marks the places an answer leaves unused as transparent in the document itself (NodeMetrics optional="true" on
 * their forwarders), so that a resubmitted result places them on no host (placement.md P2) while a user's own
 * forwarder, whatever its configuration is named, is placed.
 */
function markTransparent(nfv: NFV, names: readonly string[]): void {
  if (names.length === 0) return;
  const constraints = (nfv.constraints ??= { nodeConstraints: {}, linkConstraints: {} });
  const nodeConstraints = (constraints.nodeConstraints ??= {});
  const metrics = (nodeConstraints.nodeMetrics ??= []);
  for (const name of names) {
    const own = metrics.find((m) => m.node === name);
    if (own) own.optional = true;
    else metrics.push({ node: name, optional: true });
  }
}

/**
 * Writes the decisions into the graph: placed firewalls with their rules, forwarders, removed optional firewalls.
 * The names of the places left unused (now forwarders) go to `unused`.
 */
function writeGraph(
  graph: Graph,
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  d: Decisions,
  unused: string[],
): FirewallReport[] {
  // Loops, not one array of every requirement's nodes: wan-750's was a million long.
  const onPath = new Set<number>();
  for (const r of reqs) for (const n of nodesOnWay(model, r)) onPath.add(n);
  const placements: FirewallReport[] = [];
  const removed = new Set<number>();
  for (const n of net) {
    const revision = d.revisions.get(n.index);
    if (revision && d.used.has(n.index)) {
      placements.push(redeploy(graph, n, revision, d.drops.get(n.index) ?? new Map(), model));
      continue;
    }
    if (!onPath.has(n.index) || (!n.configurable && !n.optional)) continue;
    const used = d.used.has(n.index);
    // A mandatory firewall no traffic reaches stays as it is.
    if (!used && !n.optional) continue;
    if (!used) {
      if (n.role === 'place') {
        n.node.functionalType = 'FORWARDER';
        n.node.configuration = { name: 'ForwardConf', forwarder: { name: 'Forwarder' } };
        unused.push(n.name);
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
    // A used firewall no class enters has no list to choose: default DENY, nothing to say.
    const { whitelist, elements } = d.rules.get(n.index) ?? { whitelist: true, elements: [] };
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

/** A deployed firewall's new rules and default, written into its node, and what changed. */
function redeploy(
  graph: Graph,
  n: NetNode,
  revision: Revision,
  drops: Map<number, boolean>,
  model: FlowModel,
): FirewallReport {
  const rules = n.rules!;
  const from = n.defaultAction!;
  const to = revision.flip ? (from === 'DENY' ? 'ALLOW' : 'DENY') : from;
  const entering = [...drops.keys()].sort((a, b) => a - b);
  // The inserted rules as the solver chose them (allocate.ts): each one rule, whatever the classes it decides.
  const added = revision.inserted;
  const keptRules = rules.filter((_, i) => revision.keep[i]);
  const elements = [...added, ...keptRules];
  const conf = (n.node.configuration ??= { name: 'AutoConf' });
  conf.firewall = { defaultAction: to, elements };
  const position = (keep: boolean) => rules.flatMap((_, i) => (revision.keep[i] === keep ? [i + 1] : []));
  const atDefault = entering.filter((c) => !keptRules.some((r) => ruleHolds(r, model.classes[c]!.boxes[0]!))).length;
  const removed = position(false);
  // Rules from one live line (`origin`) are removed together: one change.
  const removedUnits = new Set<string | number>(removed.map((p) => rules[p - 1]!.origin ?? p)).size;
  return {
    graph: graph.id!,
    node: n.name,
    allocated: false,
    defaultAction: to,
    rules: elements.length,
    synthesised: true,
    change: {
      kept: position(true),
      removed,
      added: added.map((rule, k) => ({ position: k + 1, rule })),
      defaultAction: { from, to },
      changes: removedUnits + added.length + (to !== from ? atDefault : 0),
    },
  };
}

/**
 * The links written around removed optional firewalls: for each requirement, the surviving nodes a removed run of
 * them joined (along a listed path, or along its corridor's links), both ways.
 */
function relinkedPairs(net: NetNode[], reqs: Requirement[], removed: ReadonlySet<number>): [number, number][] {
  const pairs: [number, number][] = [];
  const both = (a: number, b: number) => pairs.push([a, b], [b, a]);
  for (const r of reqs) {
    if (r.paths) {
      for (const path of r.paths) {
        const kept = path.filter((k) => !removed.has(k));
        if (kept.length === path.length) continue;
        for (let i = 0; i + 1 < kept.length; i++) both(kept[i]!, kept[i + 1]!);
      }
      continue;
    }
    const links = corridorLinks(net, r.corridor);
    for (const [a, out] of links) {
      if (removed.has(a) || !out.some((x) => removed.has(x))) continue;
      // Through removed nodes only, to the surviving ones beyond.
      const seen = new Set(out.filter((x) => removed.has(x)));
      const queue = [...seen];
      const beyond = new Set<number>();
      for (let h = 0; h < queue.length; h++)
        for (const m of links.get(queue[h]!) ?? []) {
          if (!removed.has(m)) {
            if (m !== a) beyond.add(m);
          } else if (!seen.has(m)) {
            seen.add(m);
            queue.push(m);
          }
        }
      for (const b of [...beyond].sort((x, y) => x - y)) both(a, b);
    }
  }
  return pairs;
}

/** Removes unused optional firewalls; along each path through one, its surviving neighbours are linked directly. */
function relink(graph: Graph, net: NetNode[], reqs: Requirement[], removed: Set<number>): void {
  for (const [a, b] of relinkedPairs(net, reqs, removed)) {
    const from = net[a]!.node;
    if (!(from.neighbour ?? []).some((nb) => nb.name === net[b]!.name))
      (from.neighbour ??= []).push({ name: net[b]!.name });
  }
  const gone = new Set([...removed].map((k) => net[k]!.name));
  graph.node = graph.node.filter((n) => !gone.has(n.name));
  for (const n of graph.node) if (n.neighbour) n.neighbour = n.neighbour.filter((nb) => !gone.has(nb.name));
}

/** One simulated graph between its expansion and its written result. */
interface GraphWork {
  graph: Graph;
  net: NetNode[];
  reqs: Requirement[];
  model: FlowModel;
  /** Places and optional firewalls on some requirement's path: what an allocation decides. */
  decided: Set<number>;
}

function graphWork(graph: Graph, net: NetNode[], reqs: Requirement[], model: FlowModel): GraphWork {
  const decided = new Set<number>();
  for (const r of reqs) for (const n of nodesOnWay(model, r)) if (net[n]!.optional) decided.add(n);
  return { graph, net, reqs, model, decided };
}

/** Names of the places and optional firewalls an allocation uses (P8's S, for one graph). */
function decisionNames(w: GraphWork, d: Decisions): string[] {
  return [...w.decided].filter((n) => d.used.has(n)).map((n) => w.net[n]!.name);
}

/** The result graph's shape as writeGraph will leave it: optional firewalls removed, their neighbours relinked. */
function resultShape(w: GraphWork, d: Decisions): ResultShape {
  const removed = new Set([...w.decided].filter((n) => !d.used.has(n) && w.net[n]!.role !== 'place'));
  const name = (k: number) => w.net[k]!.name;
  return {
    gone: [...removed].map(name),
    links: relinkedPairs(w.net, w.reqs, removed).map(([a, b]) => [name(a), name(b)]),
  };
}

/** Optional firewalls no allocation decides (no requirement passes them): they stay in the result, so are placed. */
function keptAlways(nfv: NFV, works: readonly GraphWork[]): string[] {
  const optional = optionalNames(nfv.constraints);
  const decided = new Set(works.flatMap((w) => [...w.decided].map((n) => w.net[n]!.name)));
  const kept = (nfv.graphs.graph ?? []).flatMap((g) =>
    g.node.filter((n) => n.functionalType === 'FIREWALL' && optional.has(n.name) && !decided.has(n.name)),
  );
  return [...new Set(kept.map((n) => n.name))];
}

const sameRequirement = (a: Property, b: Property) =>
  a.name === b.name &&
  a.src === b.src &&
  a.dst === b.dst &&
  (a.srcPort ?? '*') === (b.srcPort ?? '*') &&
  (a.dstPort ?? '*') === (b.dstPort ?? '*') &&
  (a.lv4Proto ?? 'ANY') === (b.lv4Proto ?? 'ANY');

/** Does a requirement hold on the network as deployed: configured firewalls as they are, everything else passing? */
function holdsAsDeployed(net: NetNode[], r: Requirement, model: FlowModel): boolean {
  return holdsWith(model, r, (n, c) => !net[n]!.rules || !firstMatchDrops(net[n]!, model.classes[c]!));
}

/**
 * Whether a proven coarse answer of a reconfiguration of deployed firewalls alone is proven on refined classes too:
 * it holds every requirement and makes no change, or one where the network as deployed breaks a requirement. A
 * refined answer of one change that removes a rule or flips the default is one on the coarse classes too (a flipped
 * default reaches no fewer refined classes than coarse ones); one that inserts a rule has no fewer rules than it.
 * Test5_5 with one requirement flipped: 224 refined classes at its firewall against 80, 63,712 clauses against 4,025.
 */
function settled(w: GraphWork, d: Decisions): boolean {
  if (!d.satisfied.every(Boolean)) return false;
  const changes = d.cost[1];
  return changes === 0 || (changes === 1 && w.reqs.some((r) => !holdsAsDeployed(w.net, r, w.model)));
}

/** Whether an answer's lower bounds (settled) reach its new firewalls and rules, with no change to a deployed one. */
function boundsMeet(d: Decisions): boolean {
  return d.cost[1] === 0 && d.lower[0] === d.cost[0] && d.lower[2] === d.cost[2];
}

/**
 * A proven coarse answer of one component whose settled bounds meet its firewalls and changes and fall one rule short:
 * those bounds, for its refined classes' formula to meet (allocate.ts, `within`). On the Zoo the refined optimum of
 * such answers was the bound in 9 of the 10 found (docs/performance-log.md, 3 December).
 */
function oneRuleOver(d: Decisions): number[] | undefined {
  const [firewalls, changes, rules] = d.lower;
  const near = d.cost[0] === firewalls && d.cost[1] === changes && d.cost[2] === rules! + 1;
  return d.components.length === 1 && near ? d.lower : undefined;
}

function reasonFor(r: Requirement, d: Decisions): string | undefined {
  if (d.satisfied[r.index]) return undefined;
  const others = d.conflicts.get(r.index) ?? [];
  if (others.length === 0) return 'cannot hold even on its own: the configured firewalls or the topology prevent it';
  return `conflicts with ${others.length === 1 ? 'requirement' : 'requirements'} ${others.join(', ')}`;
}

/**
 * What effort N buys (issue 48): N times the proof's work (and the refined classes' share) and the lower bounds'
 * (BOUND_WORK: a relaxation that converges may raise its bound, and its answer may be kept); N times our solver's
 * other limits (exact.ts, SolverLimits: conflicts per solve and per set of new firewalls, the sets solved apart and
 * listed by the probe), which at effort 10 ended most proofs before the work did (not ROUND_CUBES: more sets solved in
 * rounds lost Zoo Aarnet NAT's refined proof at effort 10, which the whole formula gives); N times the
 * variables of the refined classes' formula after a proven coarse answer, up to PROOF_VARIABLES_MAX (its memory);
 * and a component past ENCODING_LIMIT whose encoding is at most N times it (and WIDE_ENCODING_MAX) is no longer given
 * the fast answer at once but solved whole (allocate.ts, `wideLimit`). All counted in work or in counts, so an effort
 * gives the same answer on any machine; effort 1 is the engine without it.
 */
function effortTuning(options: SimulateOptions) {
  const effort = options.effort ?? SIMULATION_DEFAULTS.effort;
  const work = {
    proofWork: (options.proofWork ?? PROOF_WORK) * effort,
    refinedWork: REFINED_WORK * effort,
    refinedFirstWork: REFINED_FIRST_WORK * effort,
    boundWork: BOUND_WORK * effort,
  };
  const proofVariables = Math.min(effort * PROOF_MAX_VARIABLES, PROOF_VARIABLES_MAX);
  if (effort === 1) return { effort, ...work, proofVariables, tuning: options.tuning };
  const tuning = options.tuning ?? DEFAULT_TUNING;
  const wideLimit = Math.min(effort * (tuning.encodingLimit ?? ENCODING_LIMIT), WIDE_ENCODING_MAX);
  const base = tuning.solver ?? SOLVER_LIMITS;
  const { conflicts, splitAssignments, probeAssignments } = base;
  const solver = {
    ...base,
    conflicts: effort * conflicts,
    splitAssignments: effort * splitAssignments,
    probeAssignments: effort * probeAssignments,
  };
  return { effort, ...work, proofVariables, tuning: { ...tuning, wideLimit, solver } };
}

export async function simulate(input: NFV, options: SimulateOptions = {}): Promise<SimulationResult> {
  const algorithm = options.algorithm ?? SIMULATION_DEFAULTS.algorithm;
  if (!ALGORITHMS.includes(algorithm)) throw badRequest(`algorithm: ${quote(algorithm)} is not AP or MF`);
  const objective = options.objective ?? SIMULATION_DEFAULTS.objective;
  if (!OBJECTIVES.includes(objective))
    throw badRequest(`objective: ${quote(objective)} is not ${OBJECTIVES.join(' or ')}`);
  // A deployed firewall's kept rules are not chosen: least privilege over them is not what reconfiguration minimises.
  if (objective === 'least-privilege' && options.reconfigure)
    throw badRequest('objective: least-privilege does not apply to a reconfiguration (its kept rules are not chosen)');
  const timeoutMs = (options.timeoutSeconds ?? SIMULATION_DEFAULTS.timeoutSeconds) * 1000;
  const onPhase = options.onPhase ?? (() => undefined);
  const timings: Timings = {
    parse: 0,
    expansion: 0,
    paths: 0,
    flows: 0,
    solving: 0,
    placing: 0,
    writing: 0,
    components: [],
  };
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
  const { effort, proofWork, refinedWork, refinedFirstWork, boundWork, proofVariables, tuning } = effortTuning(options);
  // Shared by every component of every graph, the refined classes and the placement's allocations, in that order:
  // what is left for each depends only on the work done before it, never on the machine (issue 48).
  const limits = {
    proof: new WorkPool(proofWork),
    bounds: new WorkPool(boundWork),
    abortAt: deadline,
    // A proven coarse answer's rules bound waits for its refined classes (allocate.ts, `Pending`).
    pending: [] as Pending[],
  };

  const hosted = (nfv.hosts?.host?.length ?? 0) > 0;
  // With a substrate the places of all graphs are one set of nodes: their names must differ (P1).
  const taken = hosted ? new Set((nfv.graphs.graph ?? []).flatMap((g) => g.node.map((n) => n.name))) : undefined;
  const works: GraphWork[] = [];
  const forced: string[] = [];
  const unusedPlaces: string[] = [];
  for (const graph of nfv.graphs.graph ?? []) {
    const own = nfv.propertyDefinition.property.filter((p) => p.graph === graph.id);
    if (own.length === 0) continue;
    phase('expansion');
    if (graph.serviceGraph)
      for (const place of expandServiceGraph(graph, nfv.constraints, taken))
        if (place.functionalType) forced.push(place.name);
    const expanded = expandWildcards(graph, own);
    const net = buildNetwork(graph, nfv.constraints, options.reconfigure, objective === 'least-privilege');
    phase('paths');
    const reqs = requirementsOf(graph, net, expanded, nfv, options.paths ?? 'few');
    phase('flows');
    works.push(graphWork(graph, net, reqs, computeFlows(net, reqs)));
  }
  // The substrate's static checks (P10) come before any solving.
  const problem = hosted ? definePlacement(placementInput(nfv, [], new Set(forced))) : undefined;
  /** A time-out says the simulation's limit, not what was left of it. */
  const timedOut = (e: unknown): never => {
    throw e instanceof SolverTimeout ? new SolverTimeout(timeoutMs / 1000) : e;
  };
  const allocate = async (w: GraphWork, cuts: readonly AllocationCut[] = []) => {
    const before = current;
    phase('solving');
    const decisions = await allocatePlaces(w.net, w.reqs, w.model, limits, tuning, cuts).catch(timedOut);
    timings.components.push(...decisions.components);
    if (before === 'placing') phase('placing');
    return decisions;
  };
  // Where a rule could cut a class (flows.ts, cutFree), an answer is proven among every list only on the refined
  // classes: by our own solver in what is left of the proof budget; that answer is written. A graph small enough to
  // prove (refinedFirst) is solved on them first, its coarse classes only when that fails; a larger one first gets its
  // coarse answer, and the refined classes are tried only once it is proven. Each graph's refined classes are tried
  // once: the attempt is the same whenever it comes (the same formula, pruned by its own probe, not by the coarse
  // answer), so one that failed before the coarse answer would fail after it, in less work. With a substrate the
  // graphs are placed jointly, and a proof would need the refined classes throughout.
  const refined = async (k: number, work: number, within?: number[]): Promise<Decisions | undefined> => {
    const w = works[k]!;
    phase('flows');
    const model = w.model.refined();
    phase('solving');
    // A pool of its own within what is left, charged back after.
    const given = Math.min(limits.proof.left, work);
    const own = { ...limits, proof: new WorkPool(given) };
    const proven = await provenPlaces(w.net, w.reqs, model, own, tuning, proofVariables, within).catch(timedOut);
    limits.proof.spend(given - own.proof.left);
    timings.components.push(...(proven?.components ?? []));
    if (proven) works[k] = graphWork(w.graph, w.net, w.reqs, model);
    return proven;
  };
  const refinable = (w: GraphWork) => !problem && !w.model.cutFree;
  // A reconfiguration of deployed firewalls alone (no place, no optional firewall) is refined only for the rules it
  // may insert (flows.ts), and its coarse answer is usually settled without them (`settled`): coarse first.
  const deployedOnly = (w: GraphWork) =>
    w.reqs.every((r) => nodesOnWay(w.model, r).every((n) => !w.net[n]!.configurable && !w.net[n]!.optional));
  let chosen: Decisions[] = [];
  /** Runs the bounds put off that these answers need (allocate.ts, `Pending`), and every one before them. */
  const settle = (needed: Decisions[]) => {
    try {
      settleBounds(limits.pending, new Set(needed));
    } catch (e) {
      timedOut(e);
    }
  };
  /**
   * Whether a proven coarse answer's bounds, settled now, reach its cost: they hold over every list, cutting classes
   * or not (bounds.test.ts checks them against brute force over such lists), so it is proven on its refined classes
   * too, and their formula need not be built (generated wan-16 with NATs: 1.37 M clauses, 2.2 s).
   */
  const boundsReach = (d: Decisions) => {
    settle([d]);
    return boundsMeet(d);
  };
  const triedRefined = new Set<number>();
  const settledCoarse = new Set<number>();
  for (const [k, w] of works.entries()) {
    const early = refinable(w) && !deployedOnly(w) && refinedFirst(w.model, w.reqs);
    if (early) triedRefined.add(k);
    chosen.push((early ? await refined(k, refinedFirstWork) : undefined) ?? (await allocate(w)));
  }
  // A proven coarse answer stands if its refined proof fails; that proof comes after it only where it did not come
  // first. A graph proven on its refined classes has them as its model (cutFree), so it is not refinable here.
  for (const [k, w] of works.entries()) {
    if (!refinable(w) || !chosen[k]!.optimal) continue;
    if ((deployedOnly(w) && settled(w, chosen[k]!)) || (tuning?.boundsFirst !== false && boundsReach(chosen[k]!))) {
      settledCoarse.add(k);
      continue;
    }
    if (!triedRefined.has(k)) chosen[k] = (await refined(k, refinedWork, oneRuleOver(chosen[k]!))) ?? chosen[k]!;
  }
  let hosting: HostingReport = { status: 'none' };
  if (problem) {
    phase('placing');
    const joint = await placeJointly(
      {
        problem,
        graphs: works.map((w) => ({
          net: w.net,
          usedNames: (d) => decisionNames(w, d),
          shape: (d) => resultShape(w, d),
        })),
        always: [...forced, ...keptAlways(nfv, works)],
        allocate: (k, cuts) => allocate(works[k]!, cuts),
        deadline,
      },
      chosen,
    ).catch(timedOut);
    chosen = joint.decisions;
    hosting = joint.hosting;
    if (joint.placement) writeHosts(nfv, joint.placement);
  }
  // The bounds put off that an answer written still needs (its refined classes not proven), before the writing.
  settle(chosen);
  works.forEach((w, k) => {
    const { graph, net, reqs, model } = w;
    const decisions = chosen[k]!;
    // An answer not proven by its solver is still the fewest where its bounds, which hold over every answer, meet it.
    const proven = decisions.optimal && (model.cutFree || settledCoarse.has(k));
    optimal &&= proven || (decisions.satisfied.every(Boolean) && boundsMeet(decisions));
    phase('writing');
    const initial = options.reconfigure ? (nfv.initialProperty?.property ?? []) : [];
    const heldBefore = (r: Requirement) =>
      initial.some((p) => p.graph === graph.id && sameRequirement(p, r.property))
        ? { heldBefore: holdsAsDeployed(net, r, model) }
        : {};
    placements.push(...writeGraph(graph, net, reqs, model, decisions, unusedPlaces));
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
        ...heldBefore(r),
      });
    }
  });
  markTransparent(nfv, unusedPlaces);
  phase();
  for (const key of ['expansion', 'paths', 'flows', 'solving', 'placing', 'writing'] as const)
    timings[key] = Math.round(timings[key] * 1000) / 1000;
  // Properties of graphs that were not simulated keep their place after the others.
  const simulated = new Set(requirements.map((r) => r.graph));
  properties.push(...nfv.propertyDefinition.property.filter((p) => !simulated.has(p.graph)));
  nfv.propertyDefinition.property = properties;

  const satisfied = requirements.filter((r) => r.isSat).length;
  const firewalls = (nfv.graphs.graph ?? []).flatMap((g) => g.node).filter((n) => n.functionalType === 'FIREWALL');
  const rules = placements.filter((p) => p.synthesised).reduce((sum, p) => sum + p.rules, 0);
  // The bounds are on what the answer's soft groups count (new firewalls, rules): the answer's own counts less what
  // they are above them (the given firewalls are in both).
  const [cost, lower] = [0, 1].map((k) =>
    chosen.reduce((sum, d) => sum.map((x, g) => x + (k ? d.lower : d.cost)[g]!), [0, 0, 0]),
  ) as [number[], number[]];
  const lowerBound: LowerBoundReport | undefined = optimal
    ? undefined
    : {
        firewalls: Math.max(0, firewalls.length - (cost[0]! - lower[0]!)),
        rules: Math.min(rules, lower[2]!),
        method: BOUND_METHOD,
      };
  return {
    nfv,
    report: {
      verdict: satisfied === requirements.length ? 'SAT' : 'UNSAT',
      objective,
      effort,
      optimal,
      properties: requirements.length,
      satisfied,
      firewalls: firewalls.length,
      allocated: placements.filter((p) => p.allocated).length,
      rules,
      changes: options.reconfigure ? placements.reduce((sum, p) => sum + (p.change?.changes ?? 0), 0) : undefined,
      ...(lowerBound ? { lowerBound } : {}),
      requirements,
      placements,
      hosting,
      timings,
    },
  };
}
