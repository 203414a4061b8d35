/**
 * What the exact MaxSAT search (exact.ts) asks of a SAT solver, so that it does not know which one answers: ours
 * (cdcl.ts, the default) or CaDiCaL's (cadical.ts: the wide path's, docs/ARCHITECTURE.md).
 */
import type { SatBudget, SatStatus } from './cdcl.js';
import type { Lit } from './maxsat.js';

export interface SatOracle {
  newVariable(): number;
  /** The polarity tried first when the solver decides v, and (where the solver can) how early. */
  prefer(l: Lit, priority?: number): void;
  /** Room for the clauses lits[ends[k - 1] .. ends[k]), k < count, before they are added. */
  reserveClauses(lits: ArrayLike<number>, ends: ArrayLike<number>, count: number): void;
  /** Adds lits[from .. to) (between solves); false where the solver already knows the clauses cannot all hold. */
  addClause(lits: ArrayLike<number>, from?: number, to?: number): boolean;
  /** Solves under assumptions, spending from the budget (its work leaves the pool, work.ts). */
  solve(assumptions: number[], budget: SatBudget): SatStatus;
  /** After 'unsat': assumptions that cannot hold together. */
  readonly core: number[];
  /** After 'sat': per variable, 1 true and 0 false. */
  readonly model: Uint8Array;
  /** False proves the assumptions cannot hold together; true proves nothing. */
  propagates(assumptions: number[]): boolean;
  /** propagates([...prefix, l]) for each literal l of `each`. */
  propagatesEach(prefix: number[], each: number[]): boolean[];
}

/** Makes an empty solver over variables 1..n. */
export type OracleMaker = (variables: number) => SatOracle;
