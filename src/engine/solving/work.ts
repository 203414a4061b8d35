/**
 * What proving and improving an answer may spend, counted in solver work, never in seconds: the same input gets the
 * same answer on any machine and under any load (issue 48). A tick is one assignment made by our SAT solver (a
 * decision or a propagation) plus, per solve call, its variable count (the model copy and the backtrack); Z3's
 * resource units are charged at Z3_TICKS_PER_RLIMIT ticks each. The job's time limit only stops a job
 * (SolverTimeout, 504); it never picks which answer is written.
 */
import { NfvError } from '../../model/errors.js';

/** The job's time ran out; `seconds` is the limit the user set, when known. */
export class SolverTimeout extends NfvError {
  constructor(seconds?: number) {
    super(
      504,
      `the solver did not finish within the time limit${seconds === undefined ? '' : ` of ${seconds} s`}; ` +
        'nothing was stored as satisfied (raise --timeout)',
    );
  }
}

/** Work left to spend, shared by reference among the calls it bounds. */
export class WorkPool {
  /** What the pool held at first (a share of it may be set aside for one step: bounds.ts). */
  readonly size: number;

  constructor(public left: number) {
    this.size = left;
  }

  get spent(): boolean {
    return this.left <= 0;
  }

  spend(ticks: number): void {
    this.left -= ticks;
  }
}

/** How a solver call may spend: from a pool, and until the job's time limit (an absolute Date.now() value). */
export interface Spend {
  work: WorkPool;
  abortAt: number;
}

/** The budget ran out: the caller takes the answer it falls back on (the same on any machine). */
export class WorkSpent extends Error {
  constructor() {
    super('the work budget ran out');
  }
}

/** Past the job's time limit: the job stops (504), whatever it was doing. */
export function checkAbort(abortAt: number): void {
  if (Date.now() > abortAt) throw new SolverTimeout();
}

/** A spend bounded by the time limit alone (answers decided within the limit, such as an UNSAT answer's). */
export const unbounded = (abortAt: number): Spend => ({ work: new WorkPool(Infinity), abortAt });

/** Z3 resource units per tick of our solver: Z3 makes 0.3-1.1 M units a second here, our solver 6-7 M ticks. */
export const Z3_TICKS_PER_RLIMIT = 10;

/**
 * Ticks charged for Z3's reading of one literal of a formula (our SMT-LIB text, then Z3's parser), which its resource
 * limit does not count: ring-100 of bench:wan, 212,585 literals, 2.2 CPU s of writing and loading (load 11), about
 * 10 us a literal, or 65 ticks at our solver's 6.5 M ticks a second.
 */
export const Z3_LOAD_TICKS_PER_LITERAL = 65;

/**
 * Whether Z3 may try to prove a problem of `literals` literals within `work`: not where reading it would take more
 * than a quarter of what is left, so that its search gets at least three times its reading. ring-100 of bench:wan
 * (212,585 literals, 14 M ticks to read against 30 M left) read for 2.2 CPU s, then searched 13 CPU s through its 3 M
 * units without an answer, where the fast answer stood anyway.
 */
export const z3Fits = (literals: number, work: WorkPool) =>
  !work.spent && 4 * literals * Z3_LOAD_TICKS_PER_LITERAL <= work.left;
