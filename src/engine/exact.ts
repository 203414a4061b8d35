/**
 * The MaxSAT problems of small components solved exactly without Z3, so that a small simulation never loads it.
 *
 * Objectives are lexicographic (maxsat.ts): for each group in order, a model-improving linear search. The first
 * model, found with every soft literal preferred true, gives an upper bound c; a totalizer over the group's
 * violations (outputs "at least k violated", only up to c + 1) then asks for at most c - 1, and so on until the
 * solver proves that no better model exists; the optimum is then fixed as a hard bound before the next group.
 * Unsatisfiable cores are made minimal by deletion, so a failed requirement names only requirements it truly
 * conflicts with. Whatever runs out of budget answers undefined, and the caller falls back to Z3.
 */
import { SatSolver, type SatBudget } from './cdcl.js';
import type { Lit, MaxSatAnswer, MaxSatProblem } from './maxsat.js';

/**
 * The components solved here: up to this many variables (every VEREFOO input; Z3 is faster beyond, where learnt
 * clauses grow long), and up to this many conflicts (VEREFOO's inputs need a few hundred at most) before Z3 takes over.
 */
export const EXACT_MAX_VARIABLES = 20_000;
export const EXACT_MAX_CONFLICTS = 20_000;
/** Largest totalizer (inputs times bound) built here; beyond it the encoding alone would cost more than Z3's start. */
const MAX_TOTALIZER = 100_000;

function loaded(p: MaxSatProblem): SatSolver | undefined {
  const sat = new SatSolver(p.variables);
  for (const c of p.hard) if (!sat.addClause(c)) return undefined;
  return sat;
}

/** Outputs o[k-1] that must hold when at least k of the inputs hold, for k up to `cap`. */
function totalizer(sat: SatSolver, inputs: Lit[], cap: number): Lit[] {
  if (inputs.length === 1) return inputs;
  const mid = inputs.length >> 1;
  const a = totalizer(sat, inputs.slice(0, mid), cap);
  const b = totalizer(sat, inputs.slice(mid), cap);
  const out = Array.from({ length: Math.min(cap, a.length + b.length) }, () => sat.newVariable());
  for (let i = 0; i <= a.length; i++) {
    for (let j = 0; j <= b.length && i + j <= out.length; j++) {
      if (i + j === 0) continue;
      const clause = [out[i + j - 1]!];
      if (i > 0) clause.push(-a[i - 1]!);
      if (j > 0) clause.push(-b[j - 1]!);
      sat.addClause(clause);
    }
  }
  return out;
}

const holds = (model: boolean[], l: Lit) => (l > 0 ? model[l]! : !model[-l]);

/** The optimum of the lexicographic objectives, or undefined when the problem is too large or the budget ran out. */
export function exactMaxSat(p: MaxSatProblem, deadline: number): MaxSatAnswer | undefined {
  if (p.variables > EXACT_MAX_VARIABLES) return undefined;
  const budget: SatBudget = { conflicts: EXACT_MAX_CONFLICTS, deadline };
  const sat = loaded(p);
  if (!sat) return { status: 'unsat', value: [] };
  // Soft variables are decided first, each the way that satisfies it, so that every model found is a greedy one,
  // close to the optimum (and the totalizer bounded by the first one's cost stays small). Before each call the
  // phases the search saved are set back, else each new model is only one better than the last.
  const prefer = (from: number) =>
    p.soft.slice(from).forEach((group, g) => group.forEach((l) => sat.prefer(l, p.soft.length - g)));
  prefer(0);
  const first = sat.solve([], budget);
  if (first !== 'sat') return first === 'unsat' ? { status: 'unsat', value: [] } : undefined;
  let model = sat.model;
  for (const [g, group] of p.soft.entries()) {
    const violated = (m: boolean[]) => group.filter((l) => !holds(m, l)).length;
    let cost = violated(model);
    if (cost === 0) {
      group.forEach((l) => sat.addClause([l]));
      continue;
    }
    if (group.length * (cost + 1) > MAX_TOTALIZER) return undefined;
    const atLeast = totalizer(
      sat,
      group.map((l) => -l),
      cost + 1,
    );
    while (cost > 0) {
      prefer(g);
      const status = sat.solve([-atLeast[cost - 1]!], budget);
      if (status === 'unknown') return undefined;
      if (status === 'unsat') break;
      model = sat.model;
      cost = violated(model);
    }
    if (cost < atLeast.length) sat.addClause([-atLeast[cost]!]);
  }
  return { status: 'sat', value: model.slice(0, p.variables + 1) };
}

/**
 * A minimal set of the assumptions that cannot hold together with the hard clauses ([] when they can), or undefined
 * when the problem is too large or the budget ran out.
 */
export function exactCore(p: MaxSatProblem, assumptions: Lit[], deadline: number): Lit[] | undefined {
  if (p.variables > EXACT_MAX_VARIABLES) return undefined;
  const budget: SatBudget = { conflicts: EXACT_MAX_CONFLICTS, deadline };
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
