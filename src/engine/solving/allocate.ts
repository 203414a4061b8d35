/**
 * Where firewalls go and what they drop, as MaxSAT (engine.md B 2.8, B 2.9, A.2).
 *
 * Variables: `used(n)` for allocation places and optional firewalls; `drop(n, c)` for each class c entering a node n
 * whose rules we synthesise; their default actions and candidate rules are rule-model.ts's, which counts rules as
 * they are deployed (a wildcard rule covering several classes is one).
 * Requirements become clauses over the atomic flows: isolation, every flow dropped somewhere; reachability, some
 * flow dropped nowhere; complete reachability, some path whose flows are all dropped nowhere. Objectives, in order:
 * most requirements satisfied (only when not all can be), fewest new firewalls, fewest rules.
 *
 * Before Z3 is called the problem is cut into independent components (requirements that share no decision), the
 * components without decisions are evaluated directly, and allocation places that see exactly the same flows are
 * collapsed into one.
 */
import {
  isDecision,
  nodesReached,
  reachabilityClasses,
  type AtomicFlow,
  type FlowModel,
  type Requirement,
  type StateGraph,
} from '../flows/flows.js';
import { withCadical } from './cadical.js';
import {
  EXACT_MAX_VARIABLES,
  OptimaProbe,
  ROUND_CUBES,
  SOLVER_LIMITS,
  exactCore,
  exactMaxSat,
  modelWithin,
  type SolverLimits,
} from './exact.js';
import { greedyDecisions, leastPrivileged, type GreedyDecisions } from './greedy.js';
import type { OracleMaker } from './oracle.js';
import { Clauses, conflictCore, solveMaxSat, type Lit, type MaxSatAnswer, type MaxSatProblem } from './maxsat.js';
import { firstMatchDrops, type NetNode } from '../flows/network.js';
import type { LazyClauses } from './cdcl.js';
import { WorkPool, WorkSpent, unbounded, z3Fits, type Spend } from './work.js';
import {
  blockConflict,
  firewallRelaxation,
  structuralBound,
  type FirewallRelaxation,
  type LowerBound,
  type StructuralBound,
} from './bounds.js';
import {
  RuleModel,
  candidateRules,
  exceptionsLowerBound,
  fewestRules,
  offered,
  type Candidate,
  type CandidateBound,
  type ChosenRules,
  type Exceptions,
  type Term,
} from '../rules/rule-model.js';
import { exactRules, synthesiseRules, widenedRule } from '../rules/rules.js';
import { ruleHolds, type PacketClass } from '../../model/space.js';
import type { Elements } from '../../model/types.js';

export interface Decisions {
  satisfied: boolean[];
  /** Decision nodes in use (mandatory ones included). */
  used: Set<number>;
  /** For nodes whose rules we synthesise: which entering classes they drop. */
  drops: Map<number, Map<number, boolean>>;
  /** For nodes whose rules we synthesise: default DENY (true) or ALLOW (false). */
  whitelist: Map<number, boolean>;
  /** For used nodes whose rules we synthesise: the list written (rule-model.ts; the fast answer's by rules.ts). */
  rules: Map<number, ChosenRules>;
  /** For each failed requirement, the requirements it conflicts with. */
  conflicts: Map<number, number[]>;
  /** Reconfiguration: for each deployed firewall on a path, what stays and what changes. */
  revisions: Map<number, Revision>;
  /** Every component's answer was proven minimal. */
  optimal: boolean;
  components: ComponentReport[];
  /**
   * The answer's cost, summed over components: new firewalls, rule changes, rules (the soft groups after the
   * requirements, in order); a fast component counts what its answer uses, as a proven one would.
   */
  cost: [newFirewalls: number, changes: number, rules: number];
  /**
   * What no answer meeting the same requirements can go below, in the same groups: the cost where proven, else the
   * greater of what the per-class optima proved and the structural bounds (bounds.ts).
   */
  lower: [newFirewalls: number, changes: number, rules: number];
}

/**
 * Allocation cuts (placement.md P8): each a set of decision nodes (places, optional firewalls) that must not all be
 * used, because together with the mandatory nodes they cannot be placed on the substrate.
 */
export type AllocationCut = readonly number[];

/**
 * A deployed firewall after reconfiguration: which of its rules stay (in their order), whether its default action
 * flips, and the rules inserted above the kept ones, in order (what it drops is in `Decisions.drops`, as for every
 * firewall whose rules are chosen).
 */
export interface Revision {
  keep: boolean[];
  flip: boolean;
  inserted: Elements[];
}

/** How one independent group of requirements was decided, for the report and --verbose. */
export interface ComponentReport {
  requirements: number;
  variables: number;
  clauses: number;
  /**
   * direct: nothing to decide; exact: proven minimal without Z3 (exact.ts); solver: Z3, proven minimal; model: a
   * solver's best model when its work ran out, not proven minimal; fast: the greedy answer, not proven minimal.
   */
  method: 'direct' | 'exact' | 'solver' | 'model' | 'fast';
  /** Building the clauses, then everything (encoding included). */
  encoding: number;
  seconds: number;
  /** Where not proven minimal: the lower bounds proven for it (new firewalls, rules). */
  bound?: LowerBound;
}

/** Soft groups, in priority order (the first only when not every requirement can hold). */
const REQUIREMENTS = 0;
const NEW_FIREWALLS = 1;
const CHANGES = 2;
const RULES = 3;
const OPTIONAL_FIREWALLS = 4;

class Builder {
  variables = 0;
  hard = new Clauses();
  soft: Lit[][] = [[], [], [], [], []];
  fresh(): Lit {
    return ++this.variables;
  }
  /** Per variable, how it occurs in the clauses of the requirements: 1 as itself, 2 negated, 3 both. */
  readonly polarity: number[] = [];
  /**
   * Adds a clause, simplified: true terms satisfy it, false terms vanish. The rule model's own clauses (`ofRules`)
   * do not count in `polarity`.
   */
  clause(terms: Term[], ofRules = false): void {
    for (let k = 0; k < terms.length; k++) if (terms[k] === true) return;
    for (let k = 0; k < terms.length; k++) {
      const t = terms[k]!;
      if (t === false) continue;
      const l = t as Lit;
      this.hard.push(l);
      if (!ofRules) this.occurs(l);
    }
    this.hard.close();
  }
  /** clause([a, c]) of two literals, without the array (once per flow and hop). */
  pair(a: Lit, c: Lit): void {
    this.hard.push(a);
    this.hard.push(c);
    this.hard.close();
    this.occurs(a);
    this.occurs(c);
  }
  private occurs(l: Lit): void {
    this.polarity[Math.abs(l)] = (this.polarity[Math.abs(l)] ?? 0) | (l > 0 ? 1 : 2);
  }
  /** A soft literal of a group costing `weight` when false (the same literal repeated). */
  cost(group: number, lit: Lit, weight = 1): void {
    for (let k = 0; k < weight; k++) this.soft[group]!.push(lit);
  }
  /** The clauses that cut a support going round (foundedClauses), where witnesses are not ranked. */
  lazy?: LazyClauses;
  problem(withRequirements: boolean): MaxSatProblem {
    const soft = withRequirements ? this.soft : this.soft.slice(1);
    return { variables: this.variables, hard: this.hard, soft, ...(this.lazy && { lazy: this.lazy }) };
  }
}

/** A reachability's witness as encodeGraph wrote it without ranks: what foundedClauses reads of a model. */
interface Witness {
  graph: StateGraph;
  guard: Term[];
  reached: Term[];
  pass: Term[];
  onward: Term[];
}

/**
 * The loop formulas a complete assignment breaks (Lin and Zhao's, as answer-set solvers check unfounded sets): for a
 * reachability whose arrival it reaches only through supports going round, the states it reaches that no walk from
 * the start reaches through states passing (U) each need a state outside U, reached and passing, with a link into
 * U. Every walk that reaches a state of U enters U that way, so the clauses keep every answer that truly holds.
 */
function foundedClauses(witnesses: Witness[]): LazyClauses {
  return (holds) => {
    const clauses: Lit[][] = [];
    let work = 0;
    const of = (t: Term) => (typeof t === 'boolean' ? t : holds(t));
    for (const { graph, guard, reached, pass, onward } of witnesses) {
      if (guard.some(of)) continue;
      const count = graph.node.length;
      work += count + graph.to.length;
      const walked = new Uint8Array(count);
      const queue = graph.start.filter((k) => !walked[k] && (walked[k] = 1));
      for (let h = 0; h < queue.length; h++) {
        const k = queue[h]!;
        if (!of(pass[k]!)) continue;
        for (let e = graph.first[k]!; e < graph.first[k + 1]!; e++) {
          const m = graph.to[e]!;
          if (!walked[m] && (walked[m] = 1)) queue.push(m);
        }
      }
      if (graph.arrive.some((k) => walked[k])) continue;
      const unfounded = new Uint8Array(count);
      for (let k = 0; k < count; k++) if (!walked[k] && of(reached[k]!)) unfounded[k] = 1;
      const entries = new Set<Lit>();
      for (let k = 0; k < count; k++) {
        const o = onward[k]!;
        if (unfounded[k] || typeof o !== 'number') continue;
        for (let e = graph.first[k]!; e < graph.first[k + 1]!; e++) if (unfounded[graph.to[e]!]) entries.add(o);
      }
      const entering = [...entries];
      for (let k = 0; k < count; k++) if (unfounded[k]) clauses.push([-(reached[k] as Lit), ...entering]);
    }
    return { clauses, work };
  };
}

/** How a solver's answer decided its component: by `prover`, or a model where the work ran out (not proven). */
const solvedBy = (a: MaxSatAnswer, prover: 'exact' | 'solver'): ComponentReport['method'] =>
  a.optimal === false ? 'model' : prover;

/** A (node, class) pair as one number: a text per hop was most of what an encoding's flows allocated. */
const dropKey = (n: number, cls: number, classes: number) => n * classes + cls;
/** dropKey's node and class back. */
const dropOf = (key: number, classes: number): [number, number] => [Math.floor(key / classes), key % classes];

const not = (t: Term): Term => (typeof t === 'boolean' ? !t : -t);

interface Encoding {
  builder: Builder;
  used: Map<number, Term>;
  /** The drop of class c at node n, by dropKey. */
  drop: Map<number, Term>;
  rules: RuleModel;
  selector: Map<number, Lit>;
  deployed: Map<number, DeployedTerms>;
  /** Every deployed firewall was offered every candidate rule to insert (none passed MAX_COMBINATIONS). */
  insertionsComplete: boolean;
  /** The variables and hard clauses before the rule model's own (written last, by `RuleModel.finish`). */
  beforeRules: { variables: number; clauses: number };
}

/**
 * The decisions about one deployed firewall: keep each rule, flip the default, and insert each candidate rule above
 * the kept ones, with either action.
 */
interface DeployedTerms {
  keep: Lit[];
  flip: Lit;
  /** Per entering class: its drop, what the kept rules and the default do with it, whether the firewall is used. */
  entering: { cls: number; drop: Lit; outcome: Term; used: Term }[];
  /** The candidates to insert (rule-model.ts, over the entering classes) with their selection literals. */
  allow: { candidate: Candidate; x: Lit }[];
  deny: { candidate: Candidate; x: Lit }[];
  /** Where inserted rules of both actions cover a class: true, the DENY ones are above the ALLOW ones. */
  denyFirst?: Lit;
}

/**
 * What the optima of the groups before the rules allow, asked of the per-class formula (the same hard clauses on
 * places, defaults and drops, without candidates): places none of them uses, and which exceptions a firewall's list
 * could hold. Most places of a redundant network could take the firewalls; few do in an optimum.
 */
interface Known {
  never: ReadonlySet<number>;
  exceptions: Exceptions;
  /**
   * The optimum of the whole per-class problem, solved on from the probe (OptimaProbe.rest), once every question
   * was asked; none when they are asked as the candidates need them.
   */
  rest?: () => MaxSatAnswer | undefined;
  /** What the optima cost in the groups before the rules. */
  costs: number[];
  /** A model costing those optima: an answer when the rules cannot be proven (its lists the fewest for its drops). */
  model: boolean[];
  /**
   * Per firewall of a free default, a lower bound on its rules where it is used under each default (index 1: DENY),
   * by exceptionsLowerBound over the classes every such optimum gives the other action; whether every optimum uses
   * it; and the narrower default, whose list may hold fewer classes.
   */
  bounds: Map<number, { lower: [number, number]; needed: boolean; narrower: boolean }>;
  /** A proof-only probe's sets of new firewalls at the optima (knownOptima's `sets`), each the places it uses. */
  sets?: { places: number[]; used: Set<number>[] };
}

/**
 * A firewall is narrowed to one default when the other leaves more than this many times the classes its list may
 * hold, and those left out are at least half of all: the formula then weighs the narrower default's candidates only,
 * and the whole formula is built only if that answer is not proven (`fewerRules`, `narrowProven`).
 */
const NARROWER = 2;

function knownOptima(perClass: Encoding, probe: OptimaProbe, classes: PacketClass[], sets: boolean): Known {
  const classCount = classes.length;
  const lits = (terms: Term[]) => terms.filter((t): t is Lit => typeof t === 'number');
  const possible = (terms: Term[]) => !terms.includes(false) && probe.possible(lits(terms));
  /** possible([...prefix, t]) for each term t, the prefix propagated once. */
  const possibleEach = (prefix: Term[], each: Term[]): boolean[] => {
    if (prefix.includes(false)) return each.map(() => false);
    const answers = probe.possibleEach(lits(prefix), lits(each));
    let k = 0;
    return each.map((t) => (typeof t === 'number' ? answers[k++]! : t && possible(prefix)));
  };
  // Where asked (`sets`: a proof-only solve, so no answer of the probe's solver follows and its search may change),
  // every set of new firewalls the optima use is listed: a firewall in none gets no candidates (propagation refutes
  // few: Zoo Aarnet plain's refined probe left 19 places, its optima's 5 sets use 9).
  const optima = sets ? probe.firstAssignments()?.map((fixed) => new Set(fixed)) : undefined;
  const first = optima?.[0];
  // An assignment holds each new firewall's `used` or its negation (its soft literal).
  const grouped = [...perClass.used].filter(([, t]) => typeof t === 'number' && (first?.has(t) || first?.has(-t)));
  const used = optima?.map((set) => new Set(grouped.filter(([, t]) => set.has(t as Lit)).map(([n]) => n)));
  const unused = new Set(grouped.filter(([n]) => !used!.some((set) => set.has(n))).map(([n]) => n));
  const never = new Set([...perClass.used].filter(([n, t]) => unused.has(n) || !possible([t])).map(([n]) => n));
  const whitelists = perClass.rules.whitelists();
  const { polarity } = perClass.builder;
  const status = new Map<string, ReturnType<Exceptions>>();
  /**
   * What the classes of firewall n do under one default (`deny`): each asked in turn when the candidates need it,
   * or all at once (`classes`, every class entering n), the firewall and its default propagated once for them all.
   */
  const askAll = (n: number, classes: number[], deny: boolean): ReturnType<Exceptions>[] => {
    const whitelist = whitelists.get(n)!;
    const prefix = [perClass.used.get(n)!, deny ? whitelist : not(whitelist)];
    // The other action: a default DENY list lets the class pass, a default ALLOW one drops it. It is free where no
    // requirement's clause can lose by it: the drop occurs in them only as the other action has it (a pure literal).
    const drops = classes.map((cls) => perClass.drop.get(dropKey(n, cls, classCount))!);
    const others = drops.map((drop) => (deny ? not(drop) : drop));
    const taken = possibleEach(prefix, others);
    const open = others.filter((_, k) => taken[k]);
    const declined = possibleEach(prefix, open.map(not));
    let k = 0;
    return classes.map((cls, i) => {
      const drop = drops[i]!;
      const harmless = typeof drop === 'number' && !((polarity[drop] ?? 0) & (deny ? 1 : 2));
      const answer = !taken[i] ? 'never' : !declined[k++] ? 'always' : harmless ? 'free' : 'maybe';
      status.set(`${n}:${cls}:${deny}`, answer);
      return answer;
    });
  };
  const ask = (n: number, cls: number, deny: boolean) =>
    status.get(`${n}:${cls}:${deny}`) ?? askAll(n, [cls], deny)[0]!;
  // A few questions are all asked now: the probe's solver may then go on to the later groups (rest), and the
  // defaults weighed for narrowing. Past EAGER_QUESTIONS (a network of many places) each is asked when the
  // candidates need it, and building them may stop first (CandidateBound).
  const firewalls = [...whitelists].filter(([n]) => !never.has(n));
  const defaults = (w: Term) => (typeof w === 'boolean' ? [w] : [false, true]);
  const questions = firewalls.reduce((sum, [n, w]) => sum + perClass.rules.entering(n).length * defaults(w).length, 0);
  const eager = questions <= EAGER_QUESTIONS;
  const exceptions: Exceptions = (n, cls, deny) => (never.has(n) ? 'maybe' : ask(n, cls, deny));
  const listed = used && { places: grouped.map(([n]) => n), used };
  if (!eager) return { never, exceptions, costs: probe.costs, model: probe.model, bounds: new Map(), sets: listed };
  for (const [n, w] of firewalls) for (const d of defaults(w)) askAll(n, perClass.rules.entering(n), d);
  const needed = (n: number) => !possible([not(perClass.used.get(n)!)]);
  const bounds = defaultBounds(perClass.rules, never, exceptions, needed, classes);
  return { never, exceptions, rest: () => probe.rest(), costs: probe.costs, model: probe.model, bounds, sets: listed };
}

/**
 * Questions (firewall, entering class, default) asked of the probe at once, up to which its solver then goes on to
 * the per-class answer and firewalls may be narrowed. Test5_4's refined classes ask 1,300; a leaf-spine 2x8 with
 * NATs asks tens of thousands (0.45 s), for candidates given up at their bound.
 */
const EAGER_QUESTIONS = 5_000;

/** Known.bounds: the firewalls worth narrowing to one default (NARROWER), with their lower bounds. */
function defaultBounds(
  rules: RuleModel,
  never: ReadonlySet<number>,
  exceptions: Exceptions,
  needed: (n: number) => boolean,
  classes: PacketClass[],
): Known['bounds'] {
  // Classes the lists may hold, over every firewall and default, and those narrowing would leave out.
  let open = 0;
  let away = 0;
  const narrowed = new Map<number, boolean>();
  const holding = (n: number, deny: boolean) => rules.entering(n).filter((cls) => exceptions(n, cls, deny) !== 'never');
  for (const [n, whitelist] of rules.whitelists()) {
    if (never.has(n)) continue;
    if (typeof whitelist === 'boolean') {
      open += holding(n, whitelist).length;
      continue;
    }
    const [allow, deny] = [holding(n, false).length, holding(n, true).length];
    open += allow + deny;
    const narrower = allow > NARROWER * deny ? true : deny > NARROWER * allow ? false : undefined;
    if (narrower === undefined) continue;
    away += narrower ? allow : deny;
    narrowed.set(n, narrower);
  }
  // Narrowing that leaves out less than half the classes is not worth a second formula when its proof fails.
  const bounds: Known['bounds'] = new Map();
  if (2 * away < open) return bounds;
  for (const [n, narrower] of narrowed) {
    const entering = rules.entering(n);
    const lower = (deny: boolean) => {
      const of = (s: string) => entering.flatMap((cls, k) => (exceptions(n, cls, deny) === s ? [k] : []));
      return exceptionsLowerBound(
        entering.map((cls) => classes[cls]!),
        of('always'),
        of('never'),
      );
    };
    bounds.set(n, { lower: [lower(false), lower(true)], needed: needed(n), narrower });
  }
  return bounds;
}

/**
 * Allocation places that see exactly the same flows are interchangeable: all but the first (by number) of each kind.
 * Without paths, a place is comparable only where every walk passes it (a cut vertex of each corridor) and no NAT
 * changes classes. A place's flows are its texts (a state's requirement and classes, or a hop's requirement, path,
 * flow and class), compared as sorted lists; each place's texts are hashed first, apart from their order, and made
 * and sorted only where another place has the same hash: made for every place, they were a fifth of an encoding's
 * CPU (Zoo Ans plain's refined classes) for a handful of places alike.
 */
function interchangeable(net: NetNode[], model: FlowModel, reqs: Requirement[], members: number[]): Set<number> {
  const incomparable = new Set<number>();
  const flat = new Map(members.map((r) => [r, model.graphs[r] ? [] : model.flows[r]!.flat()]));
  // Kept within 30 bits: V8's small integers, where a larger one is a heap number allocated per step.
  const mix = (h: number, x: number) => (Math.imul(h ^ x, 0x9e3779b1) ^ (h >>> 15)) & 0x3fffffff;
  /** A place's text: a state's (requirement r, state k) or a hop's (requirement r, flow k, hop i), and its hash. */
  const text = (r: number, k: number, i: number) => {
    const graph = model.graphs[r];
    if (graph) return `${r}:${graph.classes[k]!.join(',')}`;
    const f = flat.get(r)![k]!;
    return `${r}/${f.path}/${k}:${f.hops[i]!.cls}`;
  };
  const hash = (r: number, k: number, i: number) => {
    const graph = model.graphs[r];
    if (graph) return graph.classes[k]!.reduce(mix, mix(1, r));
    const f = flat.get(r)![k]!;
    return mix(mix(mix(mix(2, r), f.path), k), f.hops[i]!.cls);
  };
  /** Each place's texts, by seen(node, r, k, i). */
  const visit = (seen: (node: number, r: number, k: number, i: number) => void) => {
    for (const r of members) {
      const graph = model.graphs[r];
      if (graph) {
        const req = reqs[r]!;
        const plain = !req.corridor.joints.some((k) => net[k]!.role === 'nat');
        graph.node.forEach((n, k) => {
          if (!plain || !req.corridor.joints.includes(n)) incomparable.add(n);
          else if (net[n]!.role === 'place') seen(n, r, k, -1);
        });
        continue;
      }
      const flows = flat.get(r)!;
      for (let k = 0; k < flows.length; k++) {
        const { hops } = flows[k]!;
        for (let i = 0; i < hops.length; i++) if (net[hops[i]!.node]!.role === 'place') seen(hops[i]!.node, r, k, i);
      }
    }
  };
  // Their number and the sum of their hashes: the same texts give the same.
  const kinds = new Map<number, [number, number]>();
  visit((node, r, k, i) => {
    const kind = kinds.get(node) ?? kinds.set(node, [0, 0]).get(node)!;
    kind[0]++;
    kind[1] = (kind[1] + hash(r, k, i)) & 0x3fffffff;
  });
  const comparable = [...kinds.keys()].filter((n) => !incomparable.has(n)).sort((x, y) => x - y);
  const kindOf = (n: number) => kinds.get(n)!.join(':');
  const alike = new Map<string, number>();
  for (const n of comparable) alike.set(kindOf(n), (alike.get(kindOf(n)) ?? 0) + 1);
  // Texts only for places whose kind another place has.
  const texts = new Map(comparable.filter((n) => alike.get(kindOf(n))! > 1).map((n) => [n, [] as string[]]));
  if (texts.size > 0) visit((node, r, k, i) => texts.get(node)?.push(text(r, k, i)));
  const representative = new Map<string, number>();
  const collapsed = new Set<number>();
  for (const [n, sig] of texts) {
    const key = sig.sort().join(' ');
    if (representative.has(key)) collapsed.add(n);
    else representative.set(key, n);
  }
  return collapsed;
}

/**
 * Whether the answer of a formula whose firewalls were narrowed to one default (Known.bounds) is an optimum of the
 * whole: it costs what the optima cost in the groups before the rules, and an answer using a narrowed firewall
 * under its other default would need at least as many rules (its lower bound there, and those of the others every
 * optimum uses). Optima leaving it unused, or using its narrower default, are the narrowed formula's own.
 */
function narrowProven(known: Known, problem: MaxSatProblem, answer: MaxSatAnswer): boolean {
  const unmet = (group: Lit[]) => group.filter((l) => !value(l, answer.value)).length;
  if (known.costs.some((cost, g) => unmet(problem.soft[g]!) !== cost)) return false;
  const rules = unmet(problem.soft[known.costs.length]!);
  // The others' rules, counted only where every optimum uses them.
  const least = (b: { lower: number[]; needed: boolean }) => (b.needed ? Math.min(...b.lower) : 0);
  const others = [...known.bounds.values()].reduce((sum, b) => sum + least(b), 0);
  return [...known.bounds.values()].every((b) => b.lower[b.narrower ? 0 : 1]! + others - least(b) >= rules);
}

function encode(
  net: NetNode[],
  model: FlowModel,
  reqs: Requirement[],
  members: number[],
  selectors: boolean,
  collapse = true,
  cuts: readonly AllocationCut[] = [],
  perClass = false,
  known?: Known,
  bound?: CandidateBound,
  narrowed?: ReadonlyMap<number, boolean>,
  founded = false,
): Encoding {
  const b = new Builder();
  /** Reachabilities' witnesses not ranked, each checked as models are found (foundedClauses). */
  const witnesses: Witness[] | undefined = founded ? [] : undefined;
  const used = new Map<number, Term>();
  const drop = new Map<number, Term>();
  const rules = new RuleModel(
    net,
    model.classes,
    {
      fresh: () => b.fresh(),
      clause: (terms) => b.clause(terms, true),
      ruleCost: (lit, weight) => b.cost(RULES, lit, weight),
      occurrence: (v) => b.polarity[v] ?? 0,
    },
    perClass,
    known?.exceptions,
    narrowed,
    net.some((n) => n.leastPrivilege) ? reachabilityClasses(model, reqs, members) : undefined,
  );
  const selector = new Map<number, Lit>();
  const deployed = new Map<number, DeployedTerms>();

  const collapsed = collapse ? interchangeable(net, model, reqs, members) : new Set<number>();

  const usedTerm = (n: number): Term => {
    let t = used.get(n);
    if (t === undefined) {
      const node = net[n]!;
      t = collapsed.has(n) || known?.never.has(n) ? false : node.optional ? b.fresh() : true;
      used.set(n, t);
      if (typeof t === 'number') b.soft[node.costly ? NEW_FIREWALLS : OPTIONAL_FIREWALLS]!.push(-t);
    }
    return t;
  };
  /** x <-> (c ? yes : no), as a fresh variable. */
  const choice = (c: Lit, yes: Term, no: Term): Lit => {
    const x = b.fresh();
    b.clause([-c, -x, yes]);
    b.clause([-c, x, not(yes)]);
    b.clause([c, -x, no]);
    b.clause([c, x, not(no)]);
    return x;
  };
  /**
   * A deployed firewall drops class `cls` (a fresh d) as its kept rules and default say (first match), unless a rule
   * inserted above them says otherwise (`insertions`, once every class is known). Changes: each removed rule, each
   * inserted rule, each class reaching a flipped default.
   */
  const deployedTerm = (n: number, cls: number, u: Term): Term => {
    const node = net[n]!;
    const rules = node.rules!;
    let terms = deployed.get(n);
    if (!terms) {
      // The rules one live line became (an imported firewall, `origin`) are kept or removed together, as one change.
      const line = new Map<string, Lit>();
      const keep = rules.map((r) => {
        if (r.origin === undefined) return b.fresh();
        return line.get(r.origin) ?? line.set(r.origin, b.fresh()).get(r.origin)!;
      });
      terms = { keep, flip: b.fresh(), entering: [], allow: [], deny: [] };
      deployed.set(n, terms);
      for (const k of new Set(keep)) b.soft[CHANGES]!.push(k);
      for (const k of keep) b.soft[RULES]!.push(-k);
    }
    const box = model.classes[cls]!.boxes[0]!;
    const matching = rules.flatMap((rule, i) => (ruleHolds(rule, box) ? [i] : []));
    let outcome: Term = node.defaultAction === 'DENY' ? -terms.flip : terms.flip;
    for (const i of [...matching].reverse())
      outcome = choice(terms.keep[i]!, (rules[i]!.action ?? 'DENY') !== 'ALLOW', outcome);
    const falls = b.fresh();
    b.clause([...matching.map((i) => terms.keep[i]!), falls]);
    const flipped = b.fresh();
    b.clause([-terms.flip, -falls, flipped]);
    b.soft[CHANGES]!.push(-flipped);
    if (u === false) return false;
    const d = b.fresh();
    // The firewall's own clauses do not count in `polarity`: it tells which classes a requirement needs passed or
    // dropped, for the candidates to insert.
    b.clause([-d, u], true);
    terms.entering.push({ cls, drop: d, outcome, used: u });
    return d;
  };
  /**
   * The rules inserted above a deployed firewall's kept ones (issue 48, item 5): its candidates are those of a
   * synthesised firewall (rule-model.ts: deployable generalisations of the entering classes, each taking whole
   * classes), once with ALLOW for the classes some requirement needs passed, once with DENY for those it needs
   * dropped; each selected costs one change and one rule (a split class's pieces one each), so one wildcard rule
   * deciding three classes costs one, as deployed. A class is decided by the inserted rules iff a selected one
   * covers it; covered by both actions, `denyFirst` says which are above. What the rules cover only at the
   * firewall's other classes is left as the kept rules have it: a rule covering none that a requirement needs is in
   * no optimum (leaving it out sends its classes back to the kept rules, which no requirement minds, for fewer
   * changes). Of two rules of one action, one covering the other's classes and more, all of which no requirement
   * needs given the other action (`free`), the wider serves wherever the narrower does: only it is offered
   * (`offered`; Test5_5 with one requirement flipped: 114,530 clauses without it).
   */
  let insertionsComplete = true;
  const generalisations = new Map();
  const insertions = (terms: DeployedTerms) => {
    const needs = (bit: number) => (i: number) => ((b.polarity[terms.entering[i]!.drop] ?? 0) & bit) !== 0;
    // Per action, the classes whose drop no requirement needs the other way (ALLOW: none needs it dropped).
    const status = (bit: number) => terms.entering.map((_, i): 'maybe' | 'free' => (needs(bit)(i) ? 'maybe' : 'free'));
    const { candidates, complete } = candidateRules(
      terms.entering.map((e) => model.classes[e.cls]!),
      generalisations,
      [
        { wanted: needs(2), barred: () => false },
        { wanted: needs(1), barred: () => false },
      ],
    );
    insertionsComplete &&= complete;
    const selected = (list: Candidate[]) =>
      list.map((candidate) => {
        const x = b.fresh();
        b.cost(CHANGES, -x, candidate.cost);
        b.cost(RULES, -x, candidate.cost);
        return { candidate, x };
      });
    terms.allow = selected(offered(candidates[0]!, status(1), terms.entering.length));
    terms.deny = selected(offered(candidates[1]!, status(2), terms.entering.length));
    /** Per entering class, the term "a selected rule of this list covers it". */
    const covered = (list: { candidate: Candidate; x: Lit }[]): Term[] => {
      const by = terms.entering.map(() => [] as Lit[]);
      for (const { candidate, x } of list) for (const i of candidate.covers) by[i]!.push(x);
      return by.map((xs) => {
        if (xs.length <= 1) return xs[0] ?? false;
        const c = b.fresh();
        b.clause([-c, ...xs], true);
        for (const x of xs) b.clause([-x, c], true);
        return c;
      });
    };
    const [allowed, denied] = [covered(terms.allow), covered(terms.deny)];
    terms.entering.forEach(({ drop: d, outcome, used }, i) => {
      const [a, x, off] = [allowed[i]!, denied[i]!, not(used)];
      b.clause([off, not(x), a, d], true);
      b.clause([off, not(a), x, -d], true);
      if (a !== false && x !== false) {
        const q = (terms.denyFirst ??= b.fresh());
        b.clause([off, not(a), not(x), -q, d], true);
        b.clause([off, not(a), not(x), q, -d], true);
      }
      b.clause([off, a, x, not(outcome), d], true);
      b.clause([off, a, x, outcome, -d], true);
    });
  };
  const hopTerm = (n: number, cls: number): Term => {
    const node = net[n]!;
    if (!node.configurable && !node.deployed) return firstMatchDrops(node, model.classes[cls]!) ? usedTerm(n) : false;
    const key = dropKey(n, cls, model.classes.length);
    let t = drop.get(key);
    if (t === undefined) {
      t = node.deployed ? deployedTerm(n, cls, usedTerm(n)) : rules.term(n, cls, usedTerm(n));
      drop.set(key, t);
    }
    return t;
  };
  const passes = (f: AtomicFlow): Term => {
    // By index, every hop's term made (in order) before any is read: this runs once per flow, mostly cold.
    const live: Lit[] = [];
    let dropped = false;
    for (let i = 0; i < f.hops.length; i++) {
      const t = hopTerm(f.hops[i]!.node, f.hops[i]!.cls);
      if (t === true) dropped = true;
      else if (typeof t === 'number') live.push(t);
    }
    if (dropped) return false;
    if (live.length === 0) return true;
    const p = b.fresh();
    for (let i = 0; i < live.length; i++) b.pair(-p, -live[i]!);
    return p;
  };

  /** A state lets its classes through: none is dropped at its node (a node that decides nothing passes them). */
  const statePasses = (graph: StateGraph, k: number): Term => {
    const node = graph.node[k]!;
    if (!isDecision(net[node]!)) return true;
    const terms = graph.classes[k]!.map((c) => not(hopTerm(node, c)));
    if (terms.some((t) => t === false)) return false;
    const live = terms.filter((t): t is Lit => typeof t === 'number');
    if (live.length <= 1) return live[0] ?? true;
    const p = b.fresh();
    for (const t of live) b.clause([-p, t]);
    return p;
  };
  /**
   * A requirement over its state graph. Isolation is Horn: reached(start); reached(k) and passes(k) imply
   * reached(m) for each next state m; no arrival is reached. Its least model is walk reachability, so any model
   * cuts every walk. Reachability needs a witness: each reached state is supported by a reached predecessor that
   * passes, with a rank below its own inside a cycle (so the support cannot go round), and some arrival is reached.
   * Where `founded`, no ranks: a support going round is cut when a model has one (foundedClauses), so only our
   * solver takes the formula.
   */
  const encodeGraph = (req: Requirement, graph: StateGraph, guard: Term[]) => {
    const count = graph.node.length;
    const pass = Array.from({ length: count }, (_, k) => statePasses(graph, k));
    // States reached whatever is decided (through states that surely pass), and states never reached.
    const surely = new Uint8Array(count);
    const maybe = new Uint8Array(count);
    const spread = (mark: Uint8Array, through: (k: number) => boolean) => {
      const queue = graph.start.filter((k) => !mark[k] && (mark[k] = 1));
      for (let h = 0; h < queue.length; h++) {
        if (!through(queue[h]!)) continue;
        for (let e = graph.first[queue[h]!]!; e < graph.first[queue[h]! + 1]!; e++) {
          const m = graph.to[e]!;
          if (!mark[m] && (mark[m] = 1)) queue.push(m);
        }
      }
    };
    spread(surely, (k) => pass[k] === true);
    if (pass.every((t) => typeof t === 'boolean')) {
      // Nothing to decide here: the requirement holds or not as things are.
      const arrived = graph.arrive.some((k) => surely[k]);
      if (arrived === (req.kind === 'isolation')) b.clause(guard);
      return;
    }
    spread(maybe, (k) => pass[k] !== false);
    const reached: Term[] = Array.from({ length: count }, (_, k) => (surely[k] ? true : maybe[k] ? b.fresh() : false));
    if (req.kind === 'isolation') {
      for (let k = 0; k < count; k++) {
        if (reached[k] === false || pass[k] === false) continue;
        for (let e = graph.first[k]!; e < graph.first[k + 1]!; e++)
          b.clause([not(reached[k]!), not(pass[k]!), reached[graph.to[e]!]!]);
      }
      for (const k of graph.arrive) b.clause([...guard, not(reached[k]!)]);
      return;
    }
    const onward: Term[] = reached.map((r, k) => {
      const p = pass[k]!;
      if (r === false || p === false) return false;
      if (r === true && p === true) return true;
      const q = b.fresh();
      b.clause([-q, r]);
      b.clause([-q, p]);
      return q;
    });
    const bits = graph.componentSize.map((size) => (size > 1 ? Math.ceil(Math.log2(size)) : 0));
    const rank = new Map<number, Lit[]>();
    const rankOf = (k: number) => {
      let bitsOf = rank.get(k);
      if (!bitsOf) rank.set(k, (bitsOf = Array.from({ length: bits[graph.component[k]!]! }, () => b.fresh())));
      return bitsOf;
    };
    const support: Term[][] = reached.map(() => []);
    for (let k = 0; k < count; k++) {
      if (onward[k] === false) continue;
      for (let e = graph.first[k]!; e < graph.first[k + 1]!; e++) {
        const m = graph.to[e]!;
        if (typeof reached[m] !== 'number') continue;
        if (witnesses || graph.component[k] !== graph.component[m]) {
          support[m]!.push(onward[k]!);
          continue;
        }
        // Inside a cycle: rank(k) < rank(m), bit by bit from the top (less[i]: less on bits i..0).
        const [x, y] = [rankOf(k), rankOf(m)];
        const less = x.map(() => b.fresh());
        b.clause([-less[0]!, onward[k]!]);
        for (let i = 0; i < x.length; i++) {
          const below = less[i + 1];
          b.clause([-less[i]!, -x[i]!, y[i]!]);
          b.clause(below ? [-less[i]!, x[i]!, y[i]!, below] : [-less[i]!, x[i]!, y[i]!]);
          b.clause(below ? [-less[i]!, -x[i]!, -y[i]!, below] : [-less[i]!, -x[i]!, -y[i]!]);
        }
        support[m]!.push(less[0]!);
      }
    }
    for (let k = 0; k < count; k++) {
      if (typeof reached[k] === 'number') b.clause([not(reached[k]!), ...support[k]!]);
    }
    b.clause([...guard, ...graph.arrive.map((k) => reached[k]!)]);
    witnesses?.push({ graph, guard, reached, pass, onward });
  };

  for (const r of members) {
    const req = reqs[r]!;
    const guard: Term[] = [];
    if (selectors) {
      const s = b.fresh();
      selector.set(r, s);
      b.soft[REQUIREMENTS]!.push(s);
      guard.push(-s);
    }
    const graph = model.graphs[r];
    if (graph) {
      encodeGraph(req, graph, guard);
      continue;
    }
    const paths = model.flows[r]!;
    if (req.kind === 'isolation') {
      for (const f of paths.flat()) b.clause([...guard, ...f.hops.map((h) => hopTerm(h.node, h.cls))]);
    } else if (req.kind === 'reachability') {
      b.clause([...guard, ...paths.flat().map(passes)]);
    } else {
      const options = paths.map((flows) => {
        if (flows.length === 0) return false;
        const parts = flows.map(passes);
        if (parts.some((p) => p === false)) return false;
        const live = parts.filter((p): p is Lit => typeof p === 'number');
        if (live.length === 0) return true;
        const q = b.fresh();
        for (const p of live) b.clause([-q, p]);
        return q;
      });
      b.clause([...guard, ...options]);
    }
  }
  if (witnesses && witnesses.length > 0) b.lazy = foundedClauses(witnesses);
  // A cut belongs to the component whose flows reach its nodes (components() keeps a cut's nodes together).
  for (const cut of cuts) if (cut.every((n) => used.has(n))) b.clause(cut.map((n) => not(used.get(n)!)));
  // Before `beforeRules`: a deployed firewall is modelled alike in the per-class formula and the candidates' one, so
  // the optima the probe finds (changes among them) are the candidates' formula's too.
  for (const terms of deployed.values()) insertions(terms);
  const beforeRules = { variables: b.variables, clauses: b.hard.length };
  rules.finish(bound);
  return { builder: b, used, drop, rules, selector, deployed, insertionsComplete, beforeRules };
}

const value = (t: Term | undefined, v: boolean[]) =>
  typeof t === 'boolean' ? t : t === undefined ? false : t > 0 ? v[t]! : !v[-t];

/** Requirements that share a decision node, or decision nodes of one cut, solve together; the others are apart. */
function components(net: NetNode[], model: FlowModel, count: number, cuts: readonly AllocationCut[]): number[][] {
  const parent = Array.from({ length: count }, (_, k) => k);
  const find = (x: number): number => (parent[x] === x ? x : (parent[x] = find(parent[x]!)));
  const owner = new Map<number, number>();
  for (let r = 0; r < count; r++) {
    for (const n of nodesReached(model, r)) {
      const node = net[n]!;
      if (!isDecision(node) || (!node.configurable && !node.optional && !node.deployed)) continue;
      const o = owner.get(n);
      if (o === undefined) owner.set(n, r);
      else parent[find(r)] = find(o);
    }
  }
  for (const cut of cuts) {
    const owners = cut.map((n) => owner.get(n)).filter((o): o is number => o !== undefined);
    for (const o of owners.slice(1)) parent[find(o)] = find(owners[0]!);
  }
  const groups = new Map<number, number[]>();
  for (let r = 0; r < count; r++) (groups.get(find(r)) ?? groups.set(find(r), []).get(find(r))!).push(r);
  return [...groups.values()];
}

/**
 * Clauses beyond which a component is not encoded for a proof before its fast answer is tried: a formula this size
 * takes longer to build and load than the proof budget (PROOF_WORK) allows. Measured on fabrics (bench:fabric). Its
 * witnesses ranked, the formula is written again without ranks (foundedClauses) and tried where that fits: ranks are
 * 7 in 8 of the clauses of the Zoo's mid-sized WANs (Abvt plain: 49,517 ranked, 6,644 without).
 */
export const ENCODING_LIMIT = 30_000;

/**
 * The unranked formula (encodingSize without ranks) past which a proof-only allocation given lower bounds to meet
 * (`within`) is given up, as one without them is past ENCODING_LIMIT.
 */
export const WITHIN_LIMIT = 300_000;

/** The share of a proof-only allocation's work a model at its bounds may take before its cores' proof. */
const WITHIN_SHARE = 2;

/**
 * The work, as a share of the proof's left, any other allocation of one component gives a model at its structural
 * bounds before the cores' proof (`aimed`), apart from the proof's: where none is found, the answer is the one of no
 * aim (an eighth taken from the proof moved 9 of the Zoo's unproven answers, Geant plain 16 -> 20 rules). On the
 * Zoo's WANs such a model proves Globalcenter NAT (4 firewalls, 5 rules) where the proof ran out.
 */
const AIM_SHARE = 8;

/**
 * The largest encoding the wide path takes, whatever the effort (simulate.ts, effortTuning): CaDiCaL's WebAssembly
 * heap is at most 2 GB, and a refined formula of 593,892 aborted there (Zoo BtEurope NAT, 2.4 GB); the census's
 * widest coarse one, 141,636 (Garr NAT), runs its 300 M ticks in 0.36 GB, the whole process. It bounds the estimate
 * (encodingSize), not the heap: an abort past it is cadical.ts's 422.
 */
export const WIDE_ENCODING_MAX = 300_000;

/**
 * About how many clauses encode() writes for a component: one per link of each isolation state graph, a witness's
 * support and, inside cycles and where `ranked`, 3 per rank bit per link; a flow per clause for listed paths.
 */
function encodingSize(model: FlowModel, reqs: Requirement[], members: number[], ranked = true): number {
  let size = 0;
  for (const r of members) {
    const graph = model.graphs[r];
    if (!graph) {
      size += model.flows[r]!.reduce((sum, flows) => sum + flows.length, 0);
      continue;
    }
    if (!ranked) {
      size += graph.first[graph.node.length]! + (reqs[r]!.kind === 'isolation' ? 0 : graph.node.length);
      continue;
    }
    for (let k = 0; k < graph.node.length; k++) {
      const bits =
        graph.componentSize[graph.component[k]!]! > 1 ? Math.log2(graph.componentSize[graph.component[k]!]!) : 0;
      size += (graph.first[k + 1]! - graph.first[k]!) * (reqs[r]!.kind === 'isolation' ? 1 : 1 + 3 * Math.ceil(bits));
    }
  }
  return size;
}

/**
 * Coarse formulas (encodingSize) up to which a graph is proven on its refined classes before its coarse answer is
 * sought (simulate.ts): a formula so small is proven on them too, and the coarse answer would only be
 * thrown away. Measured: the 35 VEREFOO inputs whose classes a rule could cut are at most 96, all proven on their
 * refined classes; the smallest fabric or scale instance not cut-free is 435 (leaf-spine 2x8 with NATs), never proven
 * on them within the proof budget.
 */
export const REFINED_FIRST_LIMIT = 200;

export function refinedFirst(model: FlowModel, reqs: Requirement[]): boolean {
  const all = reqs.map((_, k) => k);
  return encodingSize(model, reqs, all) <= REFINED_FIRST_LIMIT;
}

/** Tuning switches, for the benchmark's same-run baseline: the plain encoding without them. */
export interface AllocationTuning {
  /** Solve independent components apart (and decision-free ones without Z3). */
  decompose: boolean;
  /** Collapse allocation places that see exactly the same flows. */
  collapse: boolean;
  /** Offer only the candidate rules some optimum before the rules could use (knownOptima). */
  prune: boolean;
  /**
   * Clauses past which a component goes to the fast answer first, its firewalls bounded by LP (ENCODING_LIMIT
   * unless given: tests give 0 to check that path against brute force on small networks).
   */
  encodingLimit?: number;
  /**
   * Clauses up to which a component past encodingLimit is still encoded without ranks, its witnesses checked as found
   * (encodingLimit unless given: a test gives Infinity to check that path on small networks).
   */
  foundedLimit?: number;
  /** Past that limit, the firewalls' LP relaxation even where our cores would solve them soon (tests: that path). */
  forceLp?: boolean;
  /**
   * Given each component's candidate formula (rules as deployed, no selectors) as it is built, before it is solved:
   * bench:rule-gap solves it offline to its true optimum (issue 48), never the shipped engine. `proofOnly`: the
   * refined classes' solve (provenPlaces), whose answer replaces the coarse one only where it is proven.
   */
  candidates?: (problem: MaxSatProblem, members: readonly number[], proofOnly: boolean) => void;
  /** Every exactMaxSat call answered by CaDiCaL (cadical.ts), not ours: benches only (it loses there, wt-cad19). */
  cadical?: boolean;
  /**
   * Clauses up to which a component past encodingLimit is still solved, whole (the wide path): set by the user's
   * effort (simulate.ts, effortTuning), none unless given.
   */
  wideLimit?: number;
  /** Our solver's limits besides the work, set by the user's effort (simulate.ts, effortTuning); else SOLVER_LIMITS. */
  solver?: SolverLimits;
  /**
   * A proven coarse answer's bounds settled before its refined proof, which is skipped where they reach its cost
   * (simulate.ts); unless false: tests compare with the refined proof.
   */
  boundsFirst?: boolean;
}

/** The engine's tuning (the benchmark's baseline switches these off). */
export const DEFAULT_TUNING: AllocationTuning = { decompose: true, collapse: true, prune: true };

/**
 * A candidates' formula's rules solved apart for each set of new firewalls at their optimum (exact.ts, splitOptimum),
 * not for an UNSAT answer's, whose first group is the requirements held, nor in a proof-only solve: there the sets'
 * enumeration and cores spent the work a proof needs (Zoo Belnet2008 plain's refined classes: 8 rules proven in
 * main before, 10 not proven with the split).
 */
function splitOnFirewalls(problem: MaxSatProblem, unsplit: boolean): MaxSatProblem {
  if (!unsplit) problem.split = NEW_FIREWALLS - 1;
  return problem;
}

/**
 * The probe's sets of new firewalls as assignments of an encoding's `used` literals (the places it decides): the
 * candidates' formula's last group solved over them (exact.ts, roundsOptimum).
 */
function cubesOf(e: Encoding, sets: NonNullable<Known['sets']>): Lit[][] {
  const decided = sets.places.flatMap((n) => {
    const t = e.used.get(n);
    return typeof t === 'number' ? [[n, t] as const] : [];
  });
  return sets.used.map((set) => decided.map(([n, t]) => (set.has(n) ? t : -t)));
}

/** Soft literals of the groups after the requirements that the values leave false: what the answer costs. */
function costOf(b: Builder, value: (lit: Lit) => boolean): [number, number, number] {
  const unmet = (group: number) => b.soft[group]!.filter((lit) => !value(lit)).length;
  return [unmet(NEW_FIREWALLS), unmet(CHANGES), unmet(RULES)];
}

/**
 * The most classes a firewall may have for a fast answer to look for a shorter list than the widened one: candidate
 * generation grows with them. The search itself is bounded by the exact solver's conflicts, not by the clock, so the
 * same fast answer writes the same lists on any machine.
 */
const FAST_RULES_CLASSES = 64;

/**
 * The lists a fast answer writes (the shorter of rules.ts's widened merge and the fewest candidate rules for its
 * drops, where those may take the classes it leaves free: `GreedyDecisions.free`), the drops they give, and what it
 * costs, counted as the soft groups count: costly nodes used, rules written.
 */
function fastRules(
  net: NetNode[],
  model: FlowModel,
  fast: GreedyDecisions,
): { rules: Map<number, ChosenRules>; drops: GreedyDecisions['drops']; cost: [number, number, number] } {
  const firewalls = [...fast.used].filter((n) => net[n]!.costly).length;
  const rules = new Map<number, ChosenRules>();
  const written = new Map(fast.drops);
  for (const [n, drops] of fast.drops) {
    const whitelist = fast.whitelist.get(n) ?? true;
    const sorted = [...drops].sort((a, b) => a[0] - b[0]);
    const entering = sorted.map(([c, drop]) => ({ cls: model.classes[c]!, drop }));
    const action: 'ALLOW' | 'DENY' = whitelist ? 'ALLOW' : 'DENY';
    // Least privilege under a default DENY (a fast or per-class answer's lists): rules exactly the classes passed.
    const exact = net[n]!.leastPrivilege === true && whitelist;
    const widened = exact
      ? exactRules(
          entering.filter((e) => !e.drop).flatMap((e) => e.cls.boxes),
          'ALLOW',
        )
      : synthesiseRules(entering, whitelist);
    const free = fast.free?.get(n);
    const fewest =
      entering.length <= FAST_RULES_CLASSES
        ? fewestRules(
            entering.map((e) => e.cls),
            sorted.map(([c, drop]) => (free?.has(c) ? undefined : drop !== whitelist)),
            unbounded(Infinity),
            exact,
          )
        : undefined;
    if (!fewest || fewest.elements.length >= widened.length) {
      rules.set(n, { whitelist, elements: widened });
      continue;
    }
    // A class the rules take gets the other action, every other one the default; a rule is widened only over
    // classes that keep the default nowhere it is written.
    const keep = entering.filter((_, i) => !fewest.taken.has(i)).flatMap((e) => e.cls.boxes);
    const elements = fewest.elements.map((r) => (exact ? { action, ...r } : widenedRule(r, action, keep)));
    rules.set(n, { whitelist, elements });
    written.set(n, new Map(sorted.map(([c], i) => [c, fewest.taken.has(i) !== whitelist])));
  }
  const count = [...rules.values()].reduce((sum, r) => sum + r.elements.length, 0);
  return { rules, drops: written, cost: [firewalls, 0, count] };
}

/**
 * What an answer decides (firewalls used, drops, defaults), the lists the per-class count's answer writes for its
 * drops, and what the answer costs, counted as the soft groups count.
 */
function decidedBy(
  net: NetNode[],
  model: FlowModel,
  enc: Encoding,
  v: boolean[],
): { mine: GreedyDecisions; written: Map<number, ChosenRules>; cost: [number, number, number] } {
  const cost = costOf(enc.builder, (lit) => value(lit, v));
  const mine: GreedyDecisions = { used: new Set(), drops: new Map(), whitelist: new Map() };
  for (const [n, t] of enc.used) if (value(t, v)) mine.used.add(n);
  for (const [key, t] of enc.drop) {
    const [n, c] = dropOf(key, model.classes.length);
    (mine.drops.get(n) ?? mine.drops.set(n, new Map()).get(n)!).set(c, value(t, v));
  }
  for (const [n, t] of enc.rules.whitelists()) mine.whitelist.set(n, value(t, v));
  if (!enc.rules.perClass) return { mine, written: new Map(), cost };
  // The per-class count chose the drops: the lists written are the fewest for them (deployed firewalls aside).
  const synthesised = new Map([...mine.drops].filter(([n]) => !enc.deployed.has(n) && mine.used.has(n)));
  const written = fastRules(net, model, { ...mine, drops: synthesised });
  cost[2] += written.cost[2] - enc.rules.counted((t) => value(t, v));
  return { mine, written: written.rules, cost };
}

/**
 * The rules a deployed firewall gets above its kept ones: the selected candidates, ALLOW ones first unless some
 * class is covered by both actions and the DENY ones were chosen above. Each is widened into simpler addresses
 * where that meets no entering class its action's rules leave alone (rules.ts, `widenedRule`).
 */
function insertedRules(model: FlowModel, terms: DeployedTerms, v: boolean[]): Elements[] {
  const selected = (list: { candidate: Candidate; x: Lit }[]) =>
    list.filter((s) => value(s.x, v)).map((s) => s.candidate);
  const [allow, deny] = [selected(terms.allow), selected(terms.deny)];
  const write = (list: Candidate[], action: 'ALLOW' | 'DENY') => {
    const covered = new Set(list.flatMap((c) => c.covers));
    const avoid = terms.entering.flatMap((e, i) => (covered.has(i) ? [] : model.classes[e.cls]!.boxes));
    return list.flatMap((c) => c.rules().map((r) => widenedRule(r, action, avoid)));
  };
  const allowed = new Set(allow.flatMap((c) => c.covers));
  const overlap = deny.some((c) => c.covers.some((i) => allowed.has(i)));
  const [allowRules, denyRules] = [write(allow, 'ALLOW'), write(deny, 'DENY')];
  return overlap && value(terms.denyFirst, v) ? [...denyRules, ...allowRules] : [...allowRules, ...denyRules];
}

/** Whether cost a is below cost b, the groups in order. */
function cheaper(a: readonly number[], b: readonly number[]): boolean {
  const k = a.findIndex((x, i) => x !== b[i]);
  return k >= 0 && a[k]! < b[k]!;
}

/** What an allocation may spend: the proof's work (shared by every component and call) and the job's time limit. */
export interface AllocationLimits {
  proof: WorkPool;
  /** What the lower bounds of unproven answers may spend (bounds.ts, BOUND_WORK); they never change an answer. */
  bounds: WorkPool;
  /** Date.now() past which the job stops with SolverTimeout (504); it never picks an answer. */
  abortAt: number;
  /** Where given, the rules bounds of proven coarse answers are put off here until known to be needed (`Pending`). */
  pending?: Pending[];
}

/**
 * A lower bound put off: a coarse answer proven over whole classes where a rule could cut one gets a rules bound for
 * the case its refined classes are not proven, which a proven refined answer never reads (Zoo Fatman plain: 0.22 of
 * its 1.3 CPU s, Belnet2008 plain 0.38). The bounds' pool is shared and each spend depends on those before it, so
 * whatever spends it next first runs every bound put off, in order, and `settleBounds` runs those an answer still
 * needs and every one before them: each spend sees the pool as it would have, and only bounds no answer reads, after
 * the last one read, are never worked out.
 */
export interface Pending {
  decisions: Decisions;
  run: () => void;
}

/**
 * Runs the bounds put off (`Pending`) up to the last one whose decisions are `needed`, in order; the rest stay put
 * off (simulate.ts settles one graph's before its refined proof, and the later graphs' after). The list is taken
 * whole while they run: a bound's own spend settles what is put off first, and must find none of the rest.
 */
export function settleBounds(pending: Pending[], needed: ReadonlySet<Decisions>): void {
  let last = -1;
  for (const [k, p] of pending.entries()) if (needed.has(p.decisions)) last = k;
  const taken = pending.splice(0);
  for (const p of taken.slice(0, last + 1)) p.run();
  pending.unshift(...taken.slice(last + 1));
}

/**
 * Decides every component: directly when nothing is to be decided; else proven minimal, by our own solver when the
 * component is small enough for it and by Z3 otherwise, while the proof's work (shared by all components) lasts;
 * else by the fast answer, or when that cannot meet every requirement, by Z3 again within the time limit. `cuts`
 * (P8) are hard: with them, places that see the same flows are no longer interchangeable (their hosts may differ),
 * so nothing is collapsed, and the fast answer, which knows nothing of cuts, is not used.
 */
export async function allocatePlaces(
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  limits: AllocationLimits,
  tuning: AllocationTuning = DEFAULT_TUNING,
  cuts: readonly AllocationCut[] = [],
): Promise<Decisions> {
  // Only a proof-only allocation answers undefined.
  return (await allocate(net, reqs, model, limits, tuning, cuts, false))!;
}

/**
 * Every component proven minimal by our own solver within the proof's work (never Z3, never a fast answer), or
 * undefined: for a second model of the same network, worth an answer only when proven.
 */
export function provenPlaces(
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  limits: AllocationLimits,
  tuning: AllocationTuning | undefined,
  maxVariables: number,
  within?: readonly number[],
): Promise<Decisions | undefined> {
  return allocate(net, reqs, model, limits, tuning, [], true, maxVariables, within).catch((e: unknown) => {
    if (e instanceof WorkSpent) return undefined;
    throw e;
  });
}

async function allocate(
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  { proof, bounds, abortAt, pending }: AllocationLimits,
  tuning: AllocationTuning = DEFAULT_TUNING,
  cuts: readonly AllocationCut[],
  proofOnly: boolean,
  /** Our solver's limit (only a proof-only allocation, which no Z3 follows, is given more). */
  maxVariables = EXACT_MAX_VARIABLES,
  /**
   * Proven lower bounds of a proof-only allocation of one component (new firewalls, changes, rules): a model costing
   * them is sought before the cores' proof (`optimum`); past the encoding limit and not founded, its formula is built
   * up to WITHIN_LIMIT for that alone.
   */
  within?: readonly number[],
): Promise<Decisions | undefined> {
  const decisions: Decisions = {
    satisfied: reqs.map(() => true),
    used: new Set(),
    drops: new Map(),
    whitelist: new Map(),
    rules: new Map(),
    conflicts: new Map(),
    revisions: new Map(),
    optimal: true,
    components: [],
    cost: [0, 0, 0],
    lower: [0, 0, 0],
  };
  const addCost = (cost: readonly number[]) => cost.forEach((c, k) => (decisions.cost[k] += c));
  /** A component's structural bounds, worked out once (the fast answers may ask before addLower does). */
  const structurals = new Map<number[], StructuralBound>();
  /** The firewalls' relaxation solved by LP (a large component's, asked before its fast answers). */
  const relaxations = new Map<number[], FirewallRelaxation>();
  /** The bounds put off so far (`Pending`), run before this allocation spends the bounds' pool. */
  const settle = () => pending && settleBounds(pending, new Set(pending.map((p) => p.decisions)));
  // Inside a bound put off, `settle` finds the list empty (settleBounds takes it whole before running any).
  const structuralOf = (members: number[]) => {
    settle();
    return (
      structurals.get(members) ??
      structurals
        .set(members, structuralBound(net, reqs, model, members, { work: bounds, abortAt }, relaxations.get(members)))
        .get(members)!
    );
  };
  const conflicts = new Map<number[], number>();
  /**
   * A component's rules bound over answers of at most `most` new firewalls, every requirement held: the rules'
   * relaxation, or where reachabilities chain isolations' ends a rule per firewall parting them (blockConflict, at
   * any size, worked out once: the aim and the lower bounds both ask).
   */
  const rulesBound = (members: number[], most: number) => {
    const conflict = conflicts.get(members) ?? conflicts.set(members, blockConflict(net, reqs, members)).get(members)!;
    return Math.max(structuralOf(members).rules(most), conflict);
  };
  /**
   * A component's lower bounds, each at most what its answer costs: proven costs where `proven` (the rules only where
   * no rule could cut a class), else those of `known` (the per-class optima of the groups before the rules) and the
   * structural ones, which need every requirement met. A proven one's rules bound is put off where `pending` is given.
   */
  const addLower = (members: number[], cost: readonly number[], proven: boolean, known?: readonly number[]) => {
    const met = members.every((r) => decisions.satisfied[r]);
    const lower = proven ? [...cost] : met ? [known?.[0] ?? 0, known?.[1] ?? 0, 0] : [0, 0, 0];
    const add = () => lower.forEach((l, k) => (decisions.lower[k] += l));
    if (proven && model.cutFree) return void add();
    const structurally = (): LowerBound => {
      const found = met ? structuralOf(members) : undefined;
      lower[0] = Math.max(lower[0]!, found?.firewalls ?? 0);
      // The optimum has no more new firewalls than this answer: the rules' relaxation counts only such answers.
      lower[2] = met ? rulesBound(members, cost[0]!) : 0;
      // A proven coarse answer one rule short of its bounds: the rules partial firewalls need together may settle it
      // without its refined proof (simulate.ts, boundsReach); dearer, so asked only there.
      if (proven && found && lower[0] === cost[0] && lower[2] === cost[2]! - 1)
        lower[2] = Math.max(lower[2], found.rules(cost[0], true));
      lower.forEach((l, k) => (lower[k] = Math.min(l, cost[k]!)));
      add();
      return { firewalls: lower[0]!, rules: lower[2]! };
    };
    if (!proven || !pending) return structurally();
    // Its component's report is the next one pushed (done); it gets the bound if the bound is worked out.
    const at = decisions.components.length;
    pending.push({ decisions, run: () => (decisions.components[at]!.bound = structurally()) });
    return undefined;
  };
  const collapse = tuning.collapse && cuts.length === 0;
  const solver = tuning.solver ?? SOLVER_LIMITS;
  /** Our solver's limits with `maxVariables` (every solve; a probe only where it serves a proof). */
  const allowed = { ...solver, variables: maxVariables };
  // The proof spends from the shared pool; an UNSAT answer and its cores are decided within the time limit alone.
  const proving: Spend = { work: proof, abortAt };
  const withinLimit = () => unbounded(abortAt);
  const groups = tuning.decompose ? components(net, model, reqs.length, cuts) : [reqs.map((_, k) => k)];
  for (const members of groups) {
    const started = performance.now();
    let bound: LowerBound | undefined;
    // A formula past ENCODING_LIMIT could not be proven in the proof budget, its witnesses ranked: without ranks it
    // may fit, and is then solved as a small one, by our solver alone (`founded`).
    const size = tuning.decompose ? encodingSize(model, reqs, members) : 0;
    const limit = tuning.encodingLimit ?? ENCODING_LIMIT;
    const past = tuning.decompose && size > limit;
    const unranked = past ? encodingSize(model, reqs, members, false) : 0;
    let founded = past && unranked <= (tuning.foundedLimit ?? limit);
    // A model costing proven lower bounds is an optimum (modelWithin). A proof-only allocation is given its graph's
    // (of use only where it is one component); any other of one component, placement's cuts aside (each would work
    // the bounds out again), aims at its structural bounds, worked out when a solve first asks (`aimed`).
    let target = proofOnly && groups.length === 1 ? within : undefined;
    let aimed = !proofOnly && groups.length === 1 && cuts.length === 0;
    const withinOnly = target !== undefined && past && !founded && unranked <= WITHIN_LIMIT;
    founded ||= withinOnly;
    /** This component's formula (encode), its witnesses ranked unless `founded`. */
    const encodeHere = (
      selectors: boolean,
      perClass = false,
      known?: Known,
      bound?: CandidateBound,
      narrowed?: ReadonlyMap<number, boolean>,
    ) => encode(net, model, reqs, members, selectors, collapse, cuts, perClass, known, bound, narrowed, founded);
    const report = (method: ComponentReport['method'], variables: number, clauses: number, encoding: number) =>
      decisions.components.push({
        requirements: members.length,
        variables,
        clauses,
        method,
        encoding,
        seconds: Math.round(performance.now() - started) / 1000,
        ...(bound ? { bound } : {}),
      });
    /**
     * The fast answer and its lists, its new firewalls `within` a set if given; undefined when it cannot meet every
     * requirement (or must not be used).
     */
    const fastAnswer = (within?: ReadonlySet<number>) => {
      // The fast answer knows nothing of rules to keep nor of cuts: a reconfiguration, or a cut, waits for the solver.
      const reached = new Set<number>();
      for (const r of members) for (const n of nodesReached(model, r)) reached.add(n);
      if ([...reached].some((n) => net[n]!.deployed) || cuts.some((c) => c.every((n) => reached.has(n)))) return;
      const fast = greedyDecisions(net, reqs, model, members, within);
      if (!fast) return;
      if ([...reached].some((n) => net[n]!.leastPrivilege))
        leastPrivileged(net, fast, reachabilityClasses(model, reqs, members));
      return { fast, written: fastRules(net, model, fast) };
    };
    /**
     * The cheapest of the fast answer anywhere and the fast answer on the firewalls of the bound's relaxation (a least
     * set meeting every isolation's walk: where the fast answer can meet every requirement there, it has the fewest
     * firewalls, which the fast answer anywhere seldom has on a WAN: Garr 2010, 54 PoPs, 28 against 15). On a tie the
     * one anywhere. Both spend work, never time: the same answer on any machine.
     */
    const leastFast = (): ReturnType<typeof fastAnswer> => {
      // A large component's LP places first (firewallRelaxation): on wan-750 with NATs 159 firewalls where these took
      // 255, and without the fast answer's max-flow cuts (a CPU second there), kept under 5 s.
      const relaxed = relaxations.get(members)?.places;
      const onPlaces = relaxed && relaxedAnswer((s) => s.answerOn(new Set(relaxed)));
      if (onPlaces) return onPlaces;
      const anywhere = fastAnswer();
      const places = anywhere ? structuralOf(members).places : undefined;
      const onBound = places && fastAnswer(new Set(places));
      const best = onBound && (!anywhere || cheaper(onBound.written.cost, anywhere.written.cost)) ? onBound : anywhere;
      if (!best) return best;
      // The relaxation's answers on the firewalls of both fast answers and of as many: which of the two costs less
      // turns on their lists, and the relaxation's answer on the other's firewalls may still cost least (Zoo Biznet
      // NAT: 27 rules there, 28 on the cheaper one's).
      const tried = new Set<string>();
      let least = best;
      for (const found of [best, onBound, anywhere]) {
        if (!found) continue;
        const newFirewalls = [...found.fast.used].filter((n) => net[n]!.costly);
        const [on, size] = [`on ${[...newFirewalls].sort((a, b) => a - b).join(',')}`, `of ${newFirewalls.length}`];
        for (const other of [
          tried.has(on) ? undefined : relaxedAnswer((s) => s.answerOn(new Set(newFirewalls))),
          tried.has(size) ? undefined : relaxedAnswer((s) => s.answer(newFirewalls.length)),
        ])
          if (other && cheaper(other.written.cost, least.written.cost)) least = other;
        tried.add(on).add(size);
      }
      return least;
    };
    /**
     * The rules' relaxation's optimum over answers of at most `most` new firewalls, as an answer (bounds.ts,
     * `answer`): firewalls blocking everything and others dropping only what isolations bring. Where the fast
     * answers cut every isolation apart, this one lets reachabilities go round blocks (Zoo Garr 2010: 58 rules ->
     * see docs/ARCHITECTURE.md). Work from the bounds' pool: the same answer on any machine.
     */
    const relaxedAnswer = (
      made: (s: StructuralBound) => GreedyDecisions | undefined,
    ): ReturnType<typeof fastAnswer> => {
      // Asked of each requirement's nodes in place: on wan-750 one list of them all was a million entries.
      const reaches = (p: (n: NetNode) => boolean) =>
        members.some((r) => nodesReached(model, r).some((n) => p(net[n]!)));
      if (reaches((n) => n.deployed === true) || cuts.length > 0) return undefined;
      const fast = made(structuralOf(members));
      if (!fast) return undefined;
      if (reaches((n) => n.leastPrivilege === true))
        leastPrivileged(net, fast, reachabilityClasses(model, reqs, members));
      return { fast, written: fastRules(net, model, fast) };
    };
    /** The fast answer, taken; false when there is none. `known`: the proven optima of the groups before the rules. */
    const takeFast = (found = fastAnswer(), known?: readonly number[]): boolean => {
      if (!found) return false;
      const { fast, written } = found;
      for (const n of fast.used) decisions.used.add(n);
      for (const [n, d] of written.drops) decisions.drops.set(n, d);
      for (const [n, w] of fast.whitelist) decisions.whitelist.set(n, w);
      for (const [n, r] of written.rules) decisions.rules.set(n, r);
      addCost(written.cost);
      bound = addLower(members, written.cost, false, known);
      // Proven after all where the bounds reach its cost (both count over every answer meeting the requirements).
      const reached = bound && bound.firewalls === written.cost[0] && bound.rules === written.cost[2];
      if (!reached || written.cost[1] !== 0) decisions.optimal = false;
      return true;
    };
    /** What an answer decides and costs, worked out once (the per-class answer's lists are a set cover each). */
    const decided = new Map<MaxSatAnswer, ReturnType<typeof decidedBy>>();
    const decide = (e: Encoding, a: MaxSatAnswer) =>
      decided.get(a) ?? decided.set(a, decidedBy(net, model, e, a.value)).get(a)!;
    /** A solver's answer taken; `known`: the proven optima of the groups before the rules, where asked. */
    const takeSolved = (e: Encoding, a: MaxSatAnswer, known?: Known) => {
      const { mine, written, cost } = decide(e, a);
      const v = a.value;
      for (const n of mine.used) decisions.used.add(n);
      for (const [n, d] of mine.drops) decisions.drops.set(n, d);
      for (const [n, w] of mine.whitelist) decisions.whitelist.set(n, w);
      for (const [n, r] of written) decisions.rules.set(n, r);
      addCost(cost);
      for (const [n, chosen] of e.rules.chosen((t) => value(t, v)))
        if (decisions.used.has(n)) decisions.rules.set(n, chosen);
      // A firewall offered too many candidate rules to weigh them all is not proven to have the fewest; nor is a model
      // whose optimum ran out of budget.
      const proven = e.rules.complete && e.insertionsComplete && a.optimal !== false;
      if (!proven) decisions.optimal = false;
      if (!proofOnly) bound = addLower(members, cost, proven, known?.costs);
      for (const [n, terms] of e.deployed) {
        decisions.revisions.set(n, {
          keep: terms.keep.map((k) => value(k, v)),
          flip: value(terms.flip, v),
          inserted: insertedRules(model, terms, v),
        });
      }
    };
    /**
     * The wide path (the user's effort, `wideLimit`): the candidates' formula of a component past the encoding limit,
     * built unpruned (the probe takes no formula this large) and solved whole by CaDiCaL, which is 3.5-4x faster than
     * ours on these long refutations (docs/performance-log.md, wt-cad19): no split over sets of firewalls (whose
     * enumeration and cores spend what the proof needs), no conflict limit and no variable cap, only the proof's work.
     * Its optimum; or its model where the work ran out, if that costs less than `fast`; else undefined.
     */
    const wideAnswer = async (fast: NonNullable<ReturnType<typeof fastAnswer>>) => {
      const e = encodeHere(false, false, undefined, {
        candidates: Infinity,
        ...proving,
      });
      const encoding = Math.round(performance.now() - started) / 1000;
      if (e.rules.abandoned) return undefined;
      const problem = e.builder.problem(false);
      // No neighbourhood search after a model that ran out (its own IMPROVE_WORK would double the effort's): the
      // model stands as found.
      problem.neighbourhoods = [];
      const found = await withCadical((make) =>
        exactMaxSat(problem, proving, { conflicts: Infinity, variables: Infinity }, make),
      );
      if (found?.status !== 'sat') return undefined;
      // Never costlier than the fast answer it replaces: that one's rules may be rules.ts's merge rather than
      // candidates, so not even the candidates' proven optimum is sure to cost less; a model that ran out must cost
      // less (at the same cost the fast answer's bytes stay, as at effort 1).
      const cost = decide(e, found).cost;
      if (found.optimal === false ? !cheaper(cost, fast.written.cost) : cheaper(fast.written.cost, cost))
        return undefined;
      return { e, found, encoding };
    };
    // Past ENCODING_LIMIT and not founded, the fast answer comes first (a proof is all a proof-only allocation is
    // for), unless the effort asks for the wide path.
    if (past && proofOnly && !founded) return undefined;
    if (past && !proofOnly) {
      // Its firewalls' relaxation by LP where our cores do not solve it soon (they spent the bounds' whole work on
      // wan-750's first round of walks); else as for any other component.
      settle();
      const relaxation = await firewallRelaxation(net, reqs, model, members, { work: bounds, abortAt }, tuning.forceLp);
      if (relaxation) relaxations.set(members, relaxation);
    }
    if (past && !founded) {
      const fast = leastFast();
      const wide = fast && size <= (tuning.wideLimit ?? 0) ? await wideAnswer(fast) : undefined;
      if (wide) {
        takeSolved(wide.e, wide.found);
        report(solvedBy(wide.found, 'exact'), wide.e.builder.variables, wide.e.builder.hard.length, wide.encoding);
        continue;
      }
      if (takeFast(fast)) {
        report('fast', 0, 0, 0);
        continue;
      }
    }
    let enc = encodeHere(false, true);
    const encoding = Math.round(performance.now() - started) / 1000;
    const done = (method: ComponentReport['method']) =>
      report(method, enc.builder.variables, enc.builder.hard.length, encoding);
    if (enc.builder.variables === 0 && tuning.decompose) {
      // Nothing to decide (a verification): each requirement holds or not on its own, no solver needed.
      for (const r of members) decisions.satisfied[r] = !encode(net, model, reqs, [r], false).builder.hard.hasEmpty();
      for (const [n, t] of enc.used) if (t === true) decisions.used.add(n);
      done('direct');
      continue;
    }
    // Our solver first: a small component is proven minimal before Z3 would have loaded.
    let z3Used = false;
    /** Our solver, then Z3; `tried`: ours already ran out on this problem (OptimaProbe.rest). */
    const optimum = async (problem: MaxSatProblem, spend: Spend, tried = false) => {
      if (aimed) {
        // The fewest new firewalls, then the fewest rules of answers with that many; no change to a deployed one.
        const firewalls = structuralOf(members).firewalls;
        target = [firewalls, 0, rulesBound(members, firewalls)];
        aimed = false;
      }
      if (target) {
        // A model at the bounds is an optimum: sought first, with the whole work where nothing else is asked and
        // WITHIN_SHARE of it before the cores' proof otherwise (an aim: AIM_SHARE, uncharged).
        const share = new WorkPool(spend.work.left / (withinOnly ? 1 : proofOnly ? WITHIN_SHARE : AIM_SHARE));
        const value = modelWithin(problem, target, { ...spend, work: share }, { ...allowed, conflicts: Infinity });
        // The aim's work is its own: where it finds nothing, the proof and its answer are those of no aim.
        if (proofOnly) spend.work.spend(share.size - share.left);
        if (value) return { status: 'sat' as const, value };
        if (withinOnly) throw new WorkSpent();
      }
      const solve = (make?: OracleMaker) => exactMaxSat(problem, spend, allowed, make);
      const exact = tried ? undefined : tuning.cadical ? await withCadical(solve) : solve();
      if (exact && exact.optimal !== false) return exact;
      if (proofOnly) throw new WorkSpent();
      // Z3 reads a large problem for seconds even with a small limit: no call once the work is spent, nor where
      // reading it would take most of what is left (z3Fits). Where it runs out too, our solver's improved model (not
      // proven) is the answer.
      const orImproved = (e: unknown) => {
        if (exact && e instanceof WorkSpent) return exact;
        throw e;
      };
      if (problem.lazy || !z3Fits(problem.hard.size, spend.work)) return orImproved(new WorkSpent());
      z3Used = true;
      return solveMaxSat(problem, spend).catch(orImproved);
    };
    const coreOf = async (problem: MaxSatProblem, assumptions: Lit[]) => {
      const exact = exactCore(problem, assumptions, withinLimit());
      if (exact) return exact;
      z3Used = true;
      return conflictCore(problem, assumptions, abortAt);
    };
    const proved =
      (spend: Spend, tried = false) =>
      (problem: MaxSatProblem) =>
        optimum(problem, spend, tried).catch((e: unknown) => {
          if (!(e instanceof WorkSpent)) throw e;
          return undefined;
        });
    // Rules as deployed (candidates): proven in the proof budget or, for an UNSAT answer, in the time limit; without
    // a proof, the per-class count's answer stands (a far smaller formula, proven where the candidates' is not), its
    // lists the fewest for its drops but not proven the fewest of all. Only the candidates some optimum so far could
    // use are offered (knownOptima).
    // A proof-only solve's probe takes what its solver takes (Zoo Ans plain's refined classes: 25,695 variables,
    // where no probe meant no pruning and 313,315 candidates, given up), and it also enumerates the optima's sets of
    // new firewalls (knownOptima's `sets`), whose rules are then solved per set in rounds of one bound (cubesOf).
    // Pruning alone, the rules solved whole, lost Zoo Belnet2008 plain's proof (its last model took 35 M ticks, the
    // whole formula's 0.25 M; wt-ref15).
    const opened = (problem: MaxSatProblem, groups: number, spend: Spend, proof = false): Known | undefined => {
      const probe = tuning.prune ? OptimaProbe.open(problem, groups, spend, proof ? allowed : solver) : undefined;
      return probe && knownOptima(enc, probe, model.classes, proof);
    };
    const fewerRules = async (
      selectors: boolean,
      spend: Spend,
      solve: (problem: MaxSatProblem) => Promise<MaxSatAnswer | undefined>,
      known: Known | undefined,
    ) => {
      // Our own solver takes at most maxVariables: a proof-only allocation stops building past that, and drops the
      // candidates that leave out unneeded classes.
      const bound: CandidateBound = { candidates: proofOnly ? maxVariables : Infinity, proofOnly, ...spend };
      // Firewalls narrowed to one default first: that answer stands when it is optimal in the groups before the rules
      // and the other defaults' lower bounds reach its rules (a list under one of them cannot be shorter). Not for an
      // UNSAT answer: which of equally many requirements hold would then be chosen by another formula.
      if (known && known.bounds.size > 0 && !selectors) {
        const narrowed = new Map([...known.bounds].map(([n, b]) => [n, b.narrower]));
        const part = encodeHere(selectors, false, known, bound, narrowed);
        const problem = splitOnFirewalls(part.builder.problem(selectors), selectors || proofOnly);
        const found = part.rules.abandoned ? undefined : await solve(problem);
        if (found?.status === 'sat' && narrowProven(known, problem, found)) return void ([enc, answer] = [part, found]);
      }
      const full = encodeHere(selectors, false, known, bound);
      if (full.rules.abandoned) return;
      // Where its optimum cannot be proven, our solver improves a model of it (not for an UNSAT answer, whose
      // requirements held are chosen on the per-class formula, nor where only a proof is of use). That model stands
      // only where it costs less than the answer so far.
      // A proof-only solve splits only over the probe's sets (cubes): enumerating them again spent its work.
      const sets = known?.sets && known.sets.used.length <= ROUND_CUBES ? known.sets : undefined;
      const problem = splitOnFirewalls(full.builder.problem(selectors), selectors || (proofOnly && !sets));
      if (sets) problem.cubes = cubesOf(full, sets);
      if (!selectors) tuning.candidates?.(problem, members, proofOnly);
      if (!selectors && !proofOnly) problem.neighbourhoods = full.rules.neighbourhoods();
      const better = await solve(problem);
      if (!better) return;
      if (better.optimal === false && answer && !cheaper(decide(full, better).cost, decide(enc, answer).cost)) return;
      [enc, answer] = [full, better];
    };
    const problem = splitOnFirewalls(enc.builder.problem(false), false);
    // With candidates to weigh, what the optima before the rules allow is asked first (it prunes the candidates), on
    // a solver that then goes on to the per-class count's later groups, within the same budget: the answer that
    // stands when the candidates' formula is not proven. Where that cannot be (no rest), the per-class problem is
    // solved on its own; where our solver's budget ran out, Z3 may take it, as when exactMaxSat runs out. A
    // proof-only allocation has no use for that answer.
    // A proof-only allocation with a probe never asks it for that answer (candidatesOnly): its solver is given the
    // formula without the per-class rules' own clauses, which decide nothing the probe asks (Test5_4: 2,396
    // variables and 3,686 clauses instead of 4,400 and 7,694).
    const { variables, clauses } = enc.beforeRules;
    const probed = proofOnly
      ? { variables, hard: enc.builder.hard.prefix(clauses), soft: problem.soft.slice(0, 2) }
      : problem;
    const known = enc.rules.size > 0 ? opened(probed, 2, proving, proofOnly) : undefined;
    const candidatesOnly = known !== undefined && proofOnly;
    // Where the probe's solver ran out after a model, that model is weighed below with the fast answers.
    const rested = candidatesOnly ? undefined : known?.rest?.();
    let answer = candidatesOnly
      ? undefined
      : ((rested?.optimal === false ? undefined : rested) ??
        (await proved(proving, known?.rest !== undefined)(problem)));
    if (candidatesOnly || (answer?.status === 'sat' && enc.rules.size > 0))
      await fewerRules(false, proving, proved(proving), known);
    // Offline (bench:rule-gap) the candidates' formula is wanted even where the per-class one is not solved.
    if (answer === undefined && tuning.candidates && !candidatesOnly)
      tuning.candidates(encodeHere(false, false, known).builder.problem(false), members, proofOnly);
    if (answer === undefined) {
      if (proofOnly) return undefined;
      // The probe's model has the fewest firewalls, its drops left as the search left them (or the best its solver
      // found on from there, if cheaper): it, the fast answer on its firewalls or the fast answer anywhere, whichever
      // costs least (on a tie a fast one, on its firewalls first).
      const own: MaxSatAnswer | undefined = known && { status: 'sat', value: known.model, optimal: false };
      const probed = rested && own && cheaper(decide(enc, rested).cost, decide(enc, own).cost) ? rested : own;
      const onProbed = probed && fastAnswer(new Set([...decide(enc, probed).mine.used].filter((n) => net[n]!.costly)));
      const anywhere = leastFast();
      const fast =
        onProbed && (!anywhere || !cheaper(anywhere.written.cost, onProbed.written.cost)) ? onProbed : anywhere;
      if (probed && (!fast || cheaper(decide(enc, probed).cost, fast.written.cost))) answer = probed;
      else if (takeFast(fast, known?.costs)) {
        done('fast');
        continue;
      } else {
        // Ranked: what our solver could not answer, Z3 may.
        if (founded) {
          founded = false;
          enc = encodeHere(false, true);
        }
        answer = await optimum(enc.builder.problem(false), withinLimit());
      }
    }
    if (answer.status === 'unsat') {
      // Which requirements hold together, and the conflicts of the others, do not depend on how rules are counted:
      // decided on the per-class formula, the smaller one. Its first group is the requirements held: the bounds,
      // which count answers holding every requirement, are no target there.
      target = undefined;
      aimed = false;
      // Ranked: Z3 may have to take it (and the cores after it).
      founded = false;
      enc = encodeHere(true, true);
      const perClass = enc.builder.problem(true);
      // The candidates' formula numbers its variables apart (pruned places have none): cores are the per-class one's.
      const selector = enc.selector;
      answer = await optimum(perClass, withinLimit());
      // An UNSAT answer is proven as before: within the time limit, not the proof budget.
      if (answer.status === 'sat' && enc.rules.size > 0) {
        const spend = withinLimit();
        await fewerRules(true, spend, (problem) => optimum(problem, spend), opened(perClass, 3, spend));
      }
      const v = answer.value;
      const kept = members.filter((r) => value(enc.selector.get(r), v));
      for (const r of members.filter((m) => !kept.includes(m))) {
        decisions.satisfied[r] = false;
        const core = await coreOf(perClass, [selector.get(r)!, ...kept.map((k) => selector.get(k)!)]);
        decisions.conflicts.set(
          r,
          members.filter((k) => k !== r && core.includes(selector.get(k)!)),
        );
      }
    }
    takeSolved(enc, answer, known);
    done(solvedBy(answer, z3Used ? 'solver' : 'exact'));
  }
  return proofOnly && !decisions.optimal ? undefined : decisions;
}
