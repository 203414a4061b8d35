/**
 * CaDiCaL (the `cadical-wasm` package: CaDiCaL 3.0.1 compiled to WebAssembly) behind the SatOracle surface exact.ts
 * uses, for the wide path only (allocate.ts, at an effort above 1; docs/performance-log.md, wt-cad19 and wt-eff19):
 * 3.5-4x faster than ours on long refutations, 2-4x slower on the census's proofs, whose many calls under thousands
 * of assumptions over formulas of 200,000-600,000 clauses cost it 100-260 ms each.
 * Its work is counted, never timed: each poll of its terminate callback (CaDiCaL polls every `terminateint`, 10, turns
 * of its search loop) is CADICAL_TICKS_PER_POLL ticks of the pool, and where the budget's conflicts are limited each
 * clause it learns (its learn callback) one of them, so the same formula stops at the same place on any machine. The
 * job's time limit only stops the job: checked in the callback, which ends the call, and thrown once CaDiCaL has
 * returned (a throw inside the WebAssembly call would leave the solver unusable). Loaded once per thread (a module's
 * state is its thread's), and only when asked (cadicalOracle).
 */
import type { Cadical, CadicalModule } from 'cadical-wasm';
import { beyondBound } from '../../model/errors.js';
import type { SatBudget, SatStatus } from './cdcl.js';
import type { Lit } from './maxsat.js';
import type { OracleMaker, SatOracle } from './oracle.js';
import { SolverTimeout } from './work.js';

/**
 * Ticks (work.ts) per poll: the same CPU as our solver's ticks on the census's candidates' formulas (wt-cad19: ours
 * 4.9-9.3 M ticks a CPU second, CaDiCaL 70-185 k polls, in exactMaxSat on the same 14 formulas).
 */
export const CADICAL_TICKS_PER_POLL = 60;

/** How many polls pass between two looks at the clock for the job's time limit. */
const POLLS_PER_CLOCK = 256;

/**
 * The longest learnt clause CaDiCaL passes to the learn callback: its C int's largest, so every one is counted
 * (Number.MAX_SAFE_INTEGER becomes -1 there, and then none is).
 */
const ANY_LENGTH = 2 ** 31 - 1;

let loading: Promise<void> | undefined;
let loaded: { Solver: typeof Cadical; mod: CadicalModule } | undefined;

/**
 * Whether this thread loaded CaDiCaL: its WebAssembly memory never shrinks (a wide solve leaves it at up to 2 GB), so
 * a solver thread that did is retired after its job (threads/pool.ts), as one that loaded Z3.
 */
export function cadicalLoaded(): boolean {
  return loading !== undefined;
}

/**
 * What an abort inside CaDiCaL's WebAssembly (a trap: above all its heap's 2 GB running out, WIDE_ENCODING_MAX's
 * reason) becomes: the user's one line, 422 (exit 2), instead of Emscripten's `Aborted()` text.
 */
function aborted<T>(call: () => T): T {
  try {
    return call();
  } catch (e) {
    if (!(e instanceof WebAssembly.RuntimeError)) throw e;
    throw beyondBound(
      "the wide path's SAT solver (CaDiCaL) aborted, most likely out of its 2 GB of WebAssembly memory: " +
        'a lower effort keeps this network off the wide path',
    );
  }
}

/** CaDiCaL's solvers, once its WebAssembly module is loaded (once per thread). */
export async function cadicalOracle(): Promise<OracleMaker> {
  await (loading ??= import('cadical-wasm').then(async (m) => {
    // Its own prints silenced: an abort reaches the user as `aborted`'s one line, not as its stderr's.
    const quiet = () => {};
    loaded = { Solver: m.Cadical, mod: await m.createModule({ print: quiet, printErr: quiet }) };
  }));
  return (variables) => new CadicalOracle(variables);
}

/**
 * Runs `use` with CaDiCaL's solvers, and frees each one it made once it returns: otherwise a solver's memory, the
 * module's heap and not V8's, came back only when a finalizer ran after some garbage collection, which nothing
 * hurries, and each further wide solve of a job grew the heap by as much again.
 */
export async function withCadical<T>(use: (make: OracleMaker) => T): Promise<T> {
  await cadicalOracle();
  const made: CadicalOracle[] = [];
  try {
    return use((variables) => made[made.push(new CadicalOracle(variables)) - 1]!);
  } finally {
    for (const solver of made) solver.dispose();
  }
}

export class CadicalOracle implements SatOracle {
  private readonly solver: Cadical;
  private variableCount: number;
  /** Variables CaDiCaL was told of (it reports a model over those only). */
  private declared = 0;
  core: number[] = [];
  model: Uint8Array = new Uint8Array(1);
  /** The current call's polls and learnt clauses, the polls it may take, and whether the job's time ran out. */
  private polls = 0;
  private learnt = 0;
  private pollLimit = Infinity;
  private abortAt = Infinity;
  private timedOut = false;
  /** Whether learnt clauses are counted: from the first call whose conflicts are limited (the wide path's are not). */
  private counting = false;

  constructor(variables = 0) {
    if (!loaded) throw new Error('CaDiCaL is not loaded: await cadicalOracle() first');
    this.solver = new loaded.Solver(loaded.mod, { quiet: true });
    this.variableCount = variables;
    this.solver.setTerminate(() => {
      if (++this.polls > this.pollLimit) return true;
      if (this.polls % POLLS_PER_CLOCK === 0 && Date.now() > this.abortAt) this.timedOut = true;
      return this.timedOut;
    });
  }

  newVariable(): number {
    return ++this.variableCount;
  }

  /** CaDiCaL takes a phase, not an order of decisions. */
  prefer(l: Lit): void {
    this.solver.phase(l);
  }

  /** CaDiCaL keeps its own room. */
  reserveClauses(): void {}

  /** Always true: CaDiCaL tells an empty clause only when solving. */
  addClause(lits: ArrayLike<number>, from = 0, to = lits.length): boolean {
    aborted(() => this.solver.addClause(Array.prototype.slice.call(lits, from, to) as number[]));
    return true;
  }

  solve(assumptions: number[], budget: SatBudget): SatStatus {
    this.core = [];
    if (budget.work.spent || budget.conflicts < 0) return 'unknown';
    if (Date.now() > budget.abortAt) throw new SolverTimeout();
    if (this.declared < this.variableCount) this.declared = aborted(() => this.solver.ensureVars(this.variableCount));
    this.polls = 0;
    this.learnt = 0;
    this.pollLimit = Math.ceil(budget.work.left / CADICAL_TICKS_PER_POLL);
    this.abortAt = budget.abortAt;
    const { conflicts } = budget;
    if (Number.isFinite(conflicts) && !this.counting) {
      this.counting = true;
      // Only counted, but each clause is copied into JavaScript to be: not where no conflict limit needs the count.
      this.solver.setLearn(ANY_LENGTH, () => void this.learnt++);
    }
    const status = aborted(() =>
      this.solver.solve(Number.isFinite(conflicts) ? { assumptions, conflicts } : { assumptions }),
    );
    // As ours: a call also spends its variables (the model read or the state reset).
    budget.work.spend(this.polls * CADICAL_TICKS_PER_POLL + this.variableCount);
    budget.conflicts -= this.learnt;
    if (this.timedOut) throw new SolverTimeout();
    if (status === 'satisfiable') {
      const n = this.variableCount;
      const model = new Uint8Array(n + 1);
      for (let v = 1; v <= n; v++) model[v] = this.solver.value(v) ? 1 : 0;
      this.model = model;
      return 'sat';
    }
    if (status === 'unsatisfiable') {
      this.core = this.solver.failedAssumptions();
      return 'unsat';
    }
    // Stopped by its conflicts: none are left.
    if (this.polls <= this.pollLimit) budget.conflicts = Math.min(budget.conflicts, -1);
    return 'unknown';
  }

  /** A call allowed no decision of its own: 'unsat' refutes the assumptions, anything else proves nothing. */
  propagates(assumptions: number[]): boolean {
    return aborted(() => this.solver.solve({ assumptions, decisions: 0 })) !== 'unsatisfiable';
  }

  propagatesEach(prefix: number[], each: number[]): boolean[] {
    return each.map((l) => this.propagates([...prefix, l]));
  }

  /** Frees the solver's memory in the module at once (withCadical); ask nothing after. */
  dispose(): void {
    aborted(() => this.solver.dispose());
  }
}
