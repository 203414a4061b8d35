/**
 * The MaxSAT problems of small components solved exactly without Z3, so that a small simulation never loads it.
 *
 * Objectives are lexicographic (maxsat.ts): for each group in order, core-guided search (OLL, coreGuided). The
 * group's soft literals are assumed; each unsatisfiable core raises the lower bound, and its violations are counted
 * by a totalizer whose "one more" becomes a soft literal in turn; the first model under the assumptions left is
 * optimal, and those assumptions become hard before the next group. It replaced a model-improving linear search,
 * whose totalizers grew with the cost (bench: all VEREFOO inputs 16.0 s -> 8.9 s, MF/scalability02 6.9 s -> 0.9 s).
 * Unsatisfiable cores are made minimal by deletion, so a failed requirement names only requirements it truly
 * conflicts with. Whatever runs out of budget answers undefined, and the caller falls back to Z3.
 */
import { SatSolver, type SatBudget } from './cdcl.js';
import type { OracleMaker, SatOracle } from './oracle.js';
import { WorkPool, type Spend } from './work.js';
import type { Lit, MaxSatAnswer, MaxSatProblem, Neighbourhood } from './maxsat.js';

/**
 * The components solved here: up to this many variables (every VEREFOO input; Z3 is faster beyond, where learnt
 * clauses grow long), and up to this many conflicts (VEREFOO's inputs need a few hundred at most) before Z3 takes over.
 */
export const EXACT_MAX_VARIABLES = 20_000;
export const EXACT_MAX_CONFLICTS = 20_000;
/**
 * The variables of a proof-only solve (allocate.ts: the refined classes, before or after the coarse answer), where no
 * Z3 takes over and only a proof is of use. Measured (docs/performance-log.md, wt-ref11, wt-ref12): Garr199901 NAT's
 * refined formula, 34,327 variables, is proven in 6.1 M of PROOF_WORK's 30 M ticks; Belnet2008's, 74,119 before
 * dominated candidates were dropped (rule-model.ts, `offered`), was not; its 45,055 since are, in 13.5 M.
 */
export const PROOF_MAX_VARIABLES = 60_000;
/**
 * The most a proof-only solve's variables (and candidates: rule-model.ts, CandidateBound) grow with the user's effort
 * (simulate.ts, effortTuning): the formula's clause arrays take about 2.2 KB a variable (wt-ref19: 900,760 variables,
 * 1,988 MB), so about 0.4 GB here; the whole process peaked at 1.47 GB on Zoo Belnet2009 NAT at effort 10 (wt-eff20),
 * within V8's default heap of 4 GB on a 64-bit machine of 16 GB or more (less memory, a smaller heap).
 */
export const PROOF_VARIABLES_MAX = 180_000;

/**
 * Our solver's limits besides the work: effort 1's are these constants, and the user's effort scales them
 * (simulate.ts, effortTuning), since at effort 10 they, not the work, ended most of the Zoo census's proofs
 * (docs/performance-log.md, wt-eff20).
 */
export interface SolverLimits {
  /** Conflicts of one solve, and of each set of new firewalls the split solves apart (EXACT_MAX_CONFLICTS). */
  conflicts: number;
  /** The most variables of a problem taken (EXACT_MAX_VARIABLES; PROOF_MAX_VARIABLES in a refined classes' proof). */
  variables: number;
  /** The most sets of new firewalls solved apart (SPLIT_ASSIGNMENTS). */
  splitAssignments: number;
  /** The most sets of new firewalls a proof-only probe lists (PROBE_ASSIGNMENTS). */
  probeAssignments: number;
}

/**
 * Whether a problem has more variables than our solver takes. A problem with lazy clauses (witnesses checked as found,
 * allocate.ts) goes to no other solver (Z3 takes none), so it is allowed as many as a proof-only solve: with 20,000,
 * 15 of the Zoo census's 161 answers past the encoding limit were fast ones at once; with 60,000, 5 of them have 3-7
 * fewer rules, for about 3 s more each (docs/performance-log.md, 2 December).
 */
const tooLarge = (p: MaxSatProblem, limits: SolverLimits) =>
  p.variables > (p.lazy ? Math.max(limits.variables, PROOF_MAX_VARIABLES) : limits.variables);

/** Our solver: every call of the engine's but the wide path's (CaDiCaL's, cadical.ts). */
const ours: OracleMaker = (variables) => new SatSolver(variables);

function loaded(p: MaxSatProblem, make = ours): SatOracle | undefined {
  const sat = make(p.variables);
  if (sat instanceof SatSolver) sat.lazy = p.lazy;
  const { hard } = p;
  sat.reserveClauses(hard.literals, hard.ends, hard.length);
  for (let k = 0; k < hard.length; k++) if (!sat.addClause(hard.literals, hard.from(k), hard.ends[k])) return undefined;
  return sat;
}

/** Outputs o[k-1] that must hold when at least k of the inputs hold, for k up to `cap`. */
function totalizer(sat: SatOracle, inputs: Lit[], cap: number): Lit[] {
  // Each clause written into one buffer, not an array of its own: a core's totalizer is thousands of them, made
  // mostly before V8 optimises this (the same clauses, variables and order as before).
  const clause = new Int32Array(3);
  const sum = (from: number, to: number): Lit[] => {
    if (to - from === 1) return [inputs[from]!];
    const mid = from + ((to - from) >> 1);
    const a = sum(from, mid);
    const b = sum(mid, to);
    const out = Array.from({ length: Math.min(cap, a.length + b.length) }, () => sat.newVariable());
    for (let i = 0; i <= a.length; i++) {
      for (let j = 0; j <= b.length && i + j <= out.length; j++) {
        if (i + j === 0) continue;
        let n = 0;
        clause[n++] = out[i + j - 1]!;
        if (i > 0) clause[n++] = -a[i - 1]!;
        if (j > 0) clause[n++] = -b[j - 1]!;
        sat.addClause(clause, 0, n);
      }
    }
    return out;
  };
  return inputs.length === 1 ? inputs : sum(0, inputs.length);
}

/** A solver's model (1 true, 0 false per variable) as answers carry it: over the problem's own variables. */
const answerValue = (model: Uint8Array, variables: number) =>
  Array.from(model.subarray(0, variables + 1), (x) => x === 1);

const holds = (model: Uint8Array, l: Lit) => (l > 0 ? model[l] === 1 : model[-l] !== 1);

/**
 * One group by its cores (OLL), the `fixed` literals assumed as well: while the soft literals cannot all hold, a core
 * (its fixed literals aside) raises the lower bound by its least weight, and a totalizer over the core's violations
 * offers "at most one more" as a new soft literal. The model found once the remaining soft literals hold costs
 * exactly the bound; it comes with those literals, which keep that optimum when made hard. When the budget runs out,
 * or once the bound reaches `enough`, the bound the cores proved so far (`lower`), and no model. `cores`: those of
 * earlier runs on the same solver and group, taken before any solve where they hold; this run's new ones are added.
 */
function coreGuided(
  sat: SatOracle,
  fixed: Lit[],
  group: Lit[],
  upper: number,
  budget: SatBudget,
  enough = Infinity,
  cores?: CoreStep[],
): { model: Uint8Array; assumed: Lit[] } | { lower: number; unknown?: true } {
  let lower = 0;
  const weight = new Map<Lit, number>();
  const add = (l: Lit, w: number) => weight.set(l, (weight.get(l) ?? 0) + w);
  // By index, and the assumptions below by forEach: roundsOptimum runs this once per cube and turn, over thousands
  // of literals, mostly before V8 optimises it, where each step of a for-of allocated its iterator's result.
  for (let i = 0; i < group.length; i++) add(group[i]!, 1);
  /** For a soft literal standing for "fewer than k + 1 of a core violated": that totalizer's outputs, and k. */
  const sums = new Map<Lit, { outputs: Lit[]; k: number }>();
  const isFixed = new Set(fixed);
  // A core found before (another run's) is a core again where the fixed literals it rests on are fixed here and its
  // soft literals are all still assumed (a totalizer's output too: its clauses are in the solver): no solve.
  const reusable = cores?.filter((k) => k.on.every((l) => isFixed.has(l))) ?? [];
  for (;;) {
    const step = reusable.find((k) => k.core.every((l) => (weight.get(l) ?? 0) > 0));
    // Listed only for a solve: a replayed core needs none (roundsOptimum replays many, over thousands of literals).
    const assumptions = step ? [] : fixed.slice();
    if (!step) weight.forEach((w, l) => w > 0 && assumptions.push(l));
    const status = step ? 'unsat' : sat.solve(assumptions, budget);
    if (status === 'unknown') return { lower, unknown: true };
    if (status === 'sat') return { model: sat.model, assumed: assumptions.slice(fixed.length) };
    // A fixed literal may be a soft one too (splitOptimum's): once its weight is spent it is no part of a core.
    const core = step?.core ?? sat.core.filter((l) => (weight.get(l) ?? 0) > 0);
    // Unsatisfiable without any soft literal: cannot happen once a model with the fixed literals exists.
    if (core.length === 0) return { lower };
    const least = Math.min(...core.map((l) => weight.get(l)!));
    lower += least;
    const made: CoreStep = step ?? { on: sat.core.filter((l) => isFixed.has(l)), core };
    if (!step) cores?.push(made);
    if (lower >= enough) return { lower };
    for (const l of core) {
      weight.set(l, weight.get(l)! - least);
      const sum = sums.get(l);
      if (sum && sum.k + 1 < sum.outputs.length) {
        const next = -sum.outputs[sum.k + 1]!;
        sums.set(next, { outputs: sum.outputs, k: sum.k + 1 });
        add(next, least);
      }
    }
    if (core.length > 1) {
      // Each violated core literal costs at least 1, and a known model costs `upper`: counting past upper + 1
      // violations could only prove what cannot be (a bound above a known cost), so the totalizer stops there.
      // A replayed core's totalizer is there already (its clauses only define its outputs).
      made.outputs ??= totalizer(
        sat,
        core.map((l) => -l),
        Math.min(core.length, upper + 1),
      );
      sums.set(-made.outputs[1]!, { outputs: made.outputs, k: 1 });
      add(-made.outputs[1]!, least);
    }
  }
}

/** One core of a coreGuided run: the fixed literals it rests on, its soft literals, the totalizer made over them. */
interface CoreStep {
  on: Lit[];
  core: Lit[];
  outputs?: Lit[];
}

const unmet = (model: Uint8Array, group: Lit[]) => group.filter((l) => !holds(model, l)).length;

/**
 * A group's model improved where its optimum could not be proven (large neighbourhood search): each neighbourhood's
 * soft literals in turn are solved to their optimum with every other literal of the group kept as the model has it,
 * once over all of them (a second pass found nothing more on Geant, in twice the time), until the budget runs out or
 * IMPROVE_NEIGHBOURHOODS were solved.
 * Geant's candidate formula: OLL's bound reaches 24 of the first model's 50 rules in 120 s; its firewalls one at a
 * time, then two at a time, find 33 in a second; then three at a time, 30 in about 3 s more.
 */
function improved(
  solver: () => SatOracle,
  group: Lit[],
  model: Uint8Array,
  neighbourhoods: Iterable<Neighbourhood>,
  budget: SatBudget,
) {
  let best = model;
  // Loaded once some neighbourhood leaves a literal unmet: where none does, the model cannot be improved.
  let sat: SatOracle | undefined;
  let solved = 0;
  // How often each literal stands in the group (a candidate of several rules is repeated): a neighbourhood's cost
  // without scanning the whole group, which those left out (nothing unmet) would otherwise each do, beyond the bound.
  const times = new Map<Lit, number>();
  for (const l of group) times.set(l, (times.get(l) ?? 0) + 1);
  for (const { free: literals, needs } of neighbourhoods) {
    if (!needs.every((l) => holds(best, l))) continue;
    const cost = literals.reduce((sum, l) => (holds(best, l) ? sum : sum + (times.get(l) ?? 0)), 0);
    if (cost === 0) continue;
    if (++solved > IMPROVE_NEIGHBOURHOODS) break;
    const free = new Set(literals);
    const open = group.filter((l) => free.has(l));
    sat ??= solver();
    const fixed = group.filter((l) => !free.has(l)).map((l) => (holds(best, l) ? l : -l));
    const found = coreGuided(sat, fixed, open, cost, budget);
    if (!('model' in found)) break;
    if (unmet(found.model, open) < cost) best = found.model;
  }
  return best;
}

/**
 * How many neighbourhoods improving a model solves at most (Geant: 212): each takes a few solver calls over the whole
 * formula (10-20 ms on Geant's) that may find no conflict to spend, and three firewalls at a time are cubic in them.
 */
export const IMPROVE_NEIGHBOURHOODS = 1_000;

/**
 * The work improving a model may spend, past the proof budget (work.ts): about 30 s here, four times what Geant's
 * takes (52 M ticks). It ends sooner by its conflicts (EXACT_MAX_CONFLICTS; Geant's takes 2,400) or when every
 * neighbourhood was solved.
 */
export const IMPROVE_WORK = 200_000_000;

/**
 * The most assignments of the split group's literals (MaxSatProblem.split) solved apart; past it, the group is solved
 * whole. Zoo Belnet2009 plain: 20 sets of 7 firewalls; the per-class rules of Agis plain 107, Cudi plain 320, Digex
 * plain 504 (each enumerated for about 10,000 ticks). Agis NAT has 1,706, Biznet NAT more than 5,000.
 */
export const SPLIT_ASSIGNMENTS = 512;

/**
 * The most sets of new firewalls a proof-only probe lists to prune places (OptimaProbe.firstAssignments): wt-ref15
 * measured its answers at 64, before the split's limit rose to 512; Carnet plain's refined probe has 65.
 */
export const PROBE_ASSIGNMENTS = 64;

/**
 * The last group's optimum as the least of its optima with the `on` group's literals fixed to each of their
 * assignments the groups before allow (they are hard at their optima), each proven by its own cores and given up once
 * they reach the best model so far: cores over every assignment at once are the union of each one's (Belnet2009
 * plain's candidates: cores of 88-356 literals, 8 of the 20 rules needed in 30 M ticks; 0.2-0.7 M ticks for most
 * firewall sets fixed). The best model, proven unless the budget ran out first (then the model to improve), or
 * 'whole' when the assignments are fewer than two (nothing to split) or more than SPLIT_ASSIGNMENTS.
 */
function splitOptimum(
  sat: SatOracle,
  on: Lit[],
  group: Lit[],
  model: Uint8Array,
  budget: SatBudget,
  limits: SolverLimits,
): { best: Uint8Array; proven: boolean } | 'whole' {
  let best = model;
  let cost = unmet(model, group);
  const most = limits.splitAssignments;
  const assignments = assignmentsOf(sat, on, most, budget, (found) => {
    if (unmet(found, group) < cost) [best, cost] = [found, unmet(found, group)];
  });
  if (assignments === undefined) return { best, proven: false };
  if (assignments.length < 2 || assignments.length > most) return 'whole';
  // The assignments differ in a few places, so most cores of one hold for the others, found again without a solve
  // (Zoo Cudi plain's per-class rules: 320 sets, proven at 31 in 5.8 M ticks; each solved afresh, 69 sets in 28.7 M).
  // Sorted by place, sets sharing their first places come one after another, and so do the cores resting on those
  // (Digex plain's per-class rules: 74 of 504 sets refuted in the work, 51 in the order found; each place unused
  // before used, as byPlaces puts the engine's negative firewall literals first: the other way round, 41).
  assignments.sort(byPlaces);
  const known: CoreStep[] = [];
  for (const fixed of assignments) {
    // Each assignment its own conflicts (a hard one takes 12,000 of Belnet2009's); the work is the budget's.
    const found = coreGuided(sat, fixed, group, cost, { ...budget, conflicts: limits.conflicts }, cost, known);
    if ('model' in found) [best, cost] = [found.model, unmet(found.model, group)];
    else if (found.lower < cost) return { best, proven: false };
  }
  return { best, proven: true };
}

/** Assignments in the order of their literals, each place's negative literal first. */
function byPlaces(a: Lit[], b: Lit[]): number {
  const k = a.findIndex((l, i) => l !== b[i]);
  return k < 0 ? 0 : a[k]! - b[k]!;
}

/**
 * The last group's optimum over `cubes`, assignments of the split group one of which every optimum has (a proof-only
 * probe's sets of new firewalls), raised one bound at a time: first the cores over every cube at once while they are
 * cheap (ROUND_WHOLE_CONFLICTS, or a hundredth of the solver's conflicts where fewer: tests reach the rounds so; each
 * core, with its totalizer, is then taken by every cube without a solve), then
 * each cube's own cores up to the bound, in turns of conflicts doubled from ROUND_TURN_CONFLICTS, so that a cube with
 * a model at the bound ends the proof before the others are refuted at it. Over the whole formula the model at the
 * bound is one call that the phases the cores left decide: Zoo Belnet2008 plain's took 0.25 M ticks unpruned, 35 M
 * pruned to its 5 sets; here 2-3 M (docs/performance-log.md, wt-ref16).
 */
function roundsOptimum(
  sat: SatOracle,
  rounds: Rounds,
  group: Lit[],
  model: Uint8Array,
  budget: SatBudget,
): { best: Uint8Array; proven: boolean } {
  const cost = unmet(model, group);
  const known: CoreStep[] = [];
  const whole = coreGuided(sat, [], group, cost, { ...budget, conflicts: rounds.whole }, Infinity, known);
  if ('model' in whole) return { best: whole.model, proven: true };
  // Every optimum has a cube, so the least bound over the cubes not refuted is the group's.
  let floor = whole.lower;
  let open = rounds.cubes;
  while (floor < cost && open.length > 0) {
    const next: Lit[][] = [];
    let least = Infinity;
    let pending = open;
    for (let conflicts = ROUND_TURN_CONFLICTS; pending.length > 0; conflicts *= 2) {
      const still: Lit[][] = [];
      for (const fixed of pending) {
        const found = coreGuided(sat, fixed, group, cost, { ...budget, conflicts }, floor + 1, known);
        if ('model' in found) return { best: found.model, proven: true };
        if (found.unknown) {
          if (budget.work.spent) return { best: model, proven: false };
          still.push(fixed);
        } else if (found.lower > floor) {
          if (found.lower < cost) next.push(fixed);
          least = Math.min(least, found.lower);
        }
        // Else not past the bound without running out: no model at all with this cube (an empty core).
      }
      pending = still;
    }
    open = next;
    floor = least;
  }
  return { best: model, proven: true };
}

/** roundsOptimum's cubes, and the conflicts of its cores over all of them at once. */
interface Rounds {
  cubes: Lit[][];
  whole: number;
}

/**
 * The conflicts of roundsOptimum's cores over every cube at once, and of each cube's first turn. Zoo Belnet2008 and
 * Aarnet plain's refined formulas are proven with 200 and 64 (1.9 and 6.3 M of 15 M ticks to spare), not with 500
 * and 64, nor 200 and 32: which cube's turn comes when decides how soon the model is found.
 */
export const ROUND_WHOLE_CONFLICTS = 200;
export const ROUND_TURN_CONFLICTS = 64;
/**
 * The most cubes solved in rounds (allocate.ts; else the group is solved whole): each cube's turn rebuilds its weights
 * and replays the cores known, CPU the ticks do not count (Zoo Cudi NAT's refined formula: past its 300 s limit).
 */
export const ROUND_CUBES = 8;

/** Effort 1's limits (SolverLimits). */
export const SOLVER_LIMITS: SolverLimits = {
  conflicts: EXACT_MAX_CONFLICTS,
  variables: EXACT_MAX_VARIABLES,
  splitAssignments: SPLIT_ASSIGNMENTS,
  probeAssignments: PROBE_ASSIGNMENTS,
};

/**
 * The assignments of `on` the solver's clauses allow, up to one past `most` (the caller then knows there are more),
 * each blocked once found under an activation literal made false after, so the clauses allow what they did; undefined
 * when the budget ran out. `seen` is given each model found.
 */
function assignmentsOf(
  sat: SatOracle,
  on: Lit[],
  most: number,
  budget: SatBudget,
  seen: (model: Uint8Array) => void = () => {},
): Lit[][] | undefined {
  const enumerating = sat.newVariable();
  const assignments: Lit[][] = [];
  let status: ReturnType<SatOracle['solve']> = 'sat';
  while (assignments.length <= most) {
    status = sat.solve([enumerating], budget);
    if (status !== 'sat') break;
    const found = sat.model;
    const fixed = on.map((l) => (holds(found, l) ? l : -l));
    assignments.push(fixed);
    seen(found);
    sat.addClause([-enumerating, ...fixed.map((l) => -l)]);
  }
  sat.addClause([-enumerating]);
  return status === 'unknown' ? undefined : assignments;
}

const splitOn = (p: MaxSatProblem) => (p.split === undefined ? undefined : p.soft[p.split]);

/**
 * Solves the groups in order on a loaded solver, each kept at its optimum (hard) before the next: the last model, or
 * 'unsat' when the hard clauses cannot hold, or undefined when the budget ran out before a first model. When it runs
 * out in a group's optimum, the model so far and that group (`unproven`). `split`: the group whose assignments the
 * last group is solved apart for (splitOptimum).
 */
function optimise(
  sat: SatOracle,
  groups: Lit[][],
  budget: SatBudget,
  limits: SolverLimits,
  split?: Lit[],
  rounds?: Rounds,
): { model: Uint8Array; unproven?: number } | 'unsat' | undefined {
  // Soft variables are decided first, each the way that satisfies it, so that the first model is a greedy one: a
  // group it already satisfies needs no core.
  groups.forEach((group, g) => group.forEach((l) => sat.prefer(l, groups.length - g)));
  const first = sat.solve([], budget);
  if (first !== 'sat') return first === 'unsat' ? 'unsat' : undefined;
  let model = sat.model;
  for (const [g, group] of groups.entries()) {
    if (group.every((l) => holds(model, l))) {
      group.forEach((l) => sat.addClause([l]));
      continue;
    }
    const last = groups.slice(g + 1).every((later) => later.length === 0);
    if (rounds && split && split !== group && last) {
      const found = roundsOptimum(sat, rounds, group, model, budget);
      return found.proven ? { model: found.best } : { model: found.best, unproven: g };
    }
    if (split && split !== group && last) {
      const found = splitOptimum(sat, split, group, model, budget, limits);
      if (found !== 'whole') return found.proven ? { model: found.best } : { model: found.best, unproven: g };
    }
    const optimum = coreGuided(sat, [], group, unmet(model, group), budget);
    if (!('model' in optimum)) return { model, unproven: g };
    for (const l of optimum.assumed) sat.addClause([l]);
    model = optimum.model;
  }
  return { model };
}

/** optimise's outcome as an answer over the problem's own variables, if proven. */
function answerOf(found: ReturnType<typeof optimise>, p: MaxSatProblem): MaxSatAnswer | undefined {
  if (found === 'unsat') return { status: 'unsat', value: [] };
  if (!found || found.unproven !== undefined) return undefined;
  return { status: 'sat', value: answerValue(found.model, p.variables) };
}

/**
 * The optimum of the lexicographic objectives, or undefined when the problem is too large (`limits.variables`) or the
 * budget (`limits.conflicts`, the work of `spend`) ran out; for a problem with neighbourhoods, when it ran out after a
 * first model, that model improved (`optimal: false`) with as many conflicts again and IMPROVE_WORK of its own.
 * `limits` not given are SOLVER_LIMITS'; `oracle` makes the SAT solvers it asks (ours unless given).
 */
export function exactMaxSat(
  p: MaxSatProblem,
  spend: Spend,
  given: Partial<SolverLimits> = {},
  oracle = ours,
): MaxSatAnswer | undefined {
  const limits = { ...SOLVER_LIMITS, ...given };
  const { conflicts } = limits;
  if (tooLarge(p, limits) || (p.lazy && oracle !== ours)) return undefined;
  const budget: SatBudget = { conflicts, ...spend };
  const rounds = p.cubes && { cubes: p.cubes, whole: Math.min(ROUND_WHOLE_CONFLICTS, Math.floor(conflicts / 100)) };
  const sat = loaded(p, oracle);
  const found = sat ? optimise(sat, p.soft, budget, limits, splitOn(p), rounds) : 'unsat';
  if (typeof found !== 'object' || found.unproven === undefined || !p.neighbourhoods) return answerOf(found, p);
  const { model, unproven } = found;
  // A fresh solver, without the totalizers and learnt clauses of the search that ran out: the groups before keep
  // the values of their optima.
  const fresh = () => {
    const sat = loaded(p, oracle)!;
    for (const group of p.soft.slice(0, unproven)) for (const l of group) if (holds(model, l)) sat.addClause([l]);
    return sat;
  };
  const own = { conflicts, work: new WorkPool(IMPROVE_WORK), abortAt: spend.abortAt };
  const better = improved(fresh, p.soft[unproven]!, model, p.neighbourhoods, own);
  return { status: 'sat', value: answerValue(better, p.variables), optimal: false };
}

/**
 * A model of `p` whose soft groups cost at most `most` each (a group past `most`'s length must be empty), by one solve
 * under totalizers capped there: where proven lower bounds are `most`, that model is an optimum without the cores'
 * proof, which must raise its own bound core by core (Zoo Rediris plain's refined formula: a model at its bound in
 * 2.5 M ticks, where the proof ran out of 20 M). Undefined where none exists, the problem is too large or the budget
 * ran out.
 */
export function modelWithin(
  p: MaxSatProblem,
  most: readonly number[],
  spend: Spend,
  given: Partial<SolverLimits> = {},
): boolean[] | undefined {
  const limits = { ...SOLVER_LIMITS, ...given };
  if (tooLarge(p, limits) || p.soft.slice(most.length).some((group) => group.length > 0)) return undefined;
  const sat = loaded(p);
  if (!sat) return undefined;
  const assumptions: Lit[] = [];
  for (const [g, group] of p.soft.entries()) {
    for (const l of group) sat.prefer(l);
    // A group past `most` is empty (above).
    const cap = most[g] ?? 0;
    if (group.length <= cap) continue;
    // outputs[cap]: at least cap + 1 of the group's soft literals false; assumed not to hold.
    const falsified = group.map((l) => -l);
    assumptions.push(-totalizer(sat, falsified, cap + 1)[cap]!);
  }
  const status = sat.solve(assumptions, { conflicts: limits.conflicts, ...spend });
  return status === 'sat' ? answerValue(sat.model, p.variables) : undefined;
}

/**
 * Questions about the optima of a problem's first soft groups, answered by unit propagation over the problem, those
 * optima kept hard and what the search learnt: a literal it refutes is in no optimum; one it does not may still be
 * in none (a safe answer for pruning, and cheap enough to ask of every class at every place).
 */
export class OptimaProbe {
  private constructor(
    private readonly sat: SatOracle,
    private readonly p: MaxSatProblem,
    private readonly groups: number,
    private readonly budget: SatBudget,
    private readonly limits: SolverLimits,
    /** What the optima cost in each of the first groups. */
    readonly costs: number[],
    /** A model of the whole problem that costs those optima (the later groups left as the search left them). */
    readonly model: boolean[],
  ) {}

  /**
   * Undefined when the problem is too large (`limits.variables`), cannot hold, or the budget ran out; `limits` not
   * given are SOLVER_LIMITS'.
   */
  static open(
    p: MaxSatProblem,
    groups: number,
    spend: Spend,
    given: Partial<SolverLimits> = {},
  ): OptimaProbe | undefined {
    const limits = { ...SOLVER_LIMITS, ...given };
    if (tooLarge(p, limits)) return undefined;
    const budget: SatBudget = { conflicts: limits.conflicts, ...spend };
    const sat = loaded(p);
    const first = sat && optimise(sat, p.soft.slice(0, groups), budget, limits);
    if (!first || first === 'unsat' || first.unproven !== undefined) return undefined;
    const costs = p.soft.slice(0, groups).map((group) => unmet(first.model, group));
    return new OptimaProbe(sat!, p, groups, budget, limits, costs, answerValue(first.model, p.variables));
  }

  /**
   * Every assignment of the first group's literals at those optima, or undefined when they are more than
   * `limits.probeAssignments` or the budget ran out: a literal true in none is in no optimum, which propagation alone
   * may not show (Zoo Aarnet plain's refined classes: 5 sets of 5 firewalls over 9 places, where 19 were not refuted).
   */
  firstAssignments(): Lit[][] | undefined {
    const most = this.limits.probeAssignments;
    const found = assignmentsOf(this.sat, this.p.soft[0]!, most, this.budget);
    if (!found || found.length > most) return undefined;
    // One of them holds (a selector per assignment implying its literals): propagation then knows it too.
    const selectors = found.map((fixed) => {
      const s = this.sat.newVariable();
      for (const l of fixed) this.sat.addClause([-s, l]);
      return s;
    });
    this.sat.addClause(selectors);
    return found;
  }

  /** False when no optimum makes all of `lits` true; true when that is not refuted. */
  possible(lits: Lit[]): boolean {
    return this.sat.propagates(lits);
  }

  /** possible([...prefix, l]) for each literal l of `each`. */
  possibleEach(prefix: Lit[], each: Lit[]): boolean[] {
    return this.sat.propagatesEach(prefix, each);
  }

  /**
   * The optimum of the whole problem, its later groups solved on top of the first ones with what is left of the
   * budget (exactMaxSat's answer, without solving the first groups again); where the budget ran out after a model,
   * the best model found (`optimal: false`); undefined where it ran out before. The probe is spent: ask nothing after.
   */
  rest(): MaxSatAnswer | undefined {
    const found = optimise(this.sat, this.p.soft.slice(this.groups), this.budget, this.limits, splitOn(this.p));
    if (typeof found !== 'object' || found.unproven === undefined) return answerOf(found, this.p);
    return { status: 'sat', value: answerValue(found.model, this.p.variables), optimal: false };
  }
}

/**
 * A minimal set of the assumptions that cannot hold together with the hard clauses ([] when they can), or undefined
 * when the problem is too large or the budget ran out.
 */
export function exactCore(p: MaxSatProblem, assumptions: Lit[], spend: Spend): Lit[] | undefined {
  if (p.variables > EXACT_MAX_VARIABLES) return undefined;
  const budget: SatBudget = { conflicts: EXACT_MAX_CONFLICTS, ...spend };
  const sat = loaded(p);
  if (!sat) return [];
  const within = (trial: Lit[]) => trial.filter((l) => sat.core.includes(l));
  const status = sat.solve(assumptions, budget);
  if (status !== 'unsat') return status === 'sat' ? [] : undefined;
  let core = within(assumptions);
  for (const l of [...core]) {
    if (!core.includes(l)) continue;
    const trial = core.filter((x) => x !== l);
    const s = sat.solve(trial, budget);
    if (s === 'unknown') return undefined;
    if (s === 'unsat') core = within(trial);
  }
  return core;
}

/**
 * A lower bound on the least cost (soft literals left false) of clauses too many to list, found as needed: `missed`
 * names clauses the best model so far breaks. The optimum of the clauses listed when it names none, else the bound
 * the cores proved when the budget ran out or after LAZY_ROUNDS rounds: each round's optimum is that of a
 * relaxation (fewer clauses), so every one is a lower bound. Variables are 1..`variables`, and `free` are decided
 * false first (they cost nothing, and a model that sets fewer of them breaks fewer clauses); `hard` clauses are
 * there from the start. With the bound, the model where `missed` named no clause it breaks: an optimum of all the
 * clauses as far as `missed` can tell (`holds` answers of it; none when it stopped first). `replay`: each round takes
 * the cores of the rounds before without a solve (they stay cores, as clauses are only added), so that it solves only
 * for new ones; the rules' relaxation asks for it (bounds.ts). The hitting sets do not: replayed cores lead them to
 * other least sets among equals, and the fast answers on those places differ (Zoo Garr plain, no proof work: 42
 * rules -> 53).
 */
export function lazyOptimum(
  variables: number,
  soft: Lit[],
  free: Lit[],
  missed: (holds: (l: Lit) => boolean) => Lit[][],
  spend: Spend,
  hard: Lit[][] = [],
  replay = false,
): { bound: number; holds?: (l: Lit) => boolean } {
  const sat = new SatSolver(variables);
  for (const l of free) sat.prefer(-l);
  for (const clause of hard) if (!sat.addClause(clause)) return { bound: 0 };
  const budget: SatBudget = { conflicts: EXACT_MAX_CONFLICTS, ...spend };
  let model: Uint8Array = new Uint8Array(0);
  let bound = 0;
  const cores: CoreStep[] | undefined = replay ? [] : undefined;
  for (let round = 0; round < LAZY_ROUNDS; round++) {
    const current = model;
    const holding = (l: Lit) => (current.length === 0 ? l < 0 : holds(current, l));
    const more = missed(holding);
    if (more.length === 0) return { bound, holds: holding };
    for (const clause of more) if (!sat.addClause(clause)) return { bound };
    const found = coreGuided(sat, [], soft, soft.length, budget, Infinity, cores);
    if (!('model' in found)) return { bound: Math.max(bound, found.lower) };
    model = found.model;
    bound = Math.max(bound, unmet(model, soft));
  }
  return { bound };
}

/** Rounds of lazyOptimum, each one more solve over clauses that only grow. */
export const LAZY_ROUNDS = 40;
