/**
 * A weighted partial MaxSAT problem in clause form, solved by Z3's Optimize (npm z3-solver). The problem goes to
 * Z3 as one SMT-LIB text (one call instead of one per term) and the model comes back as one s-expression. Soft
 * constraints form lexicographic objectives in the order of their groups. Z3 is loaded and initialised lazily,
 * on the first solve, so that commands that do not solve start fast.
 */
import { grown, type LazyClauses } from './cdcl.js';
import { SolverTimeout, WorkSpent, Z3_TICKS_PER_RLIMIT, type Spend, type WorkPool } from './work.js';

/** A literal: +v or -v for variable v >= 1. */
export type Lit = number;

/**
 * Clauses one after the other in typed arrays. A refined candidate formula has some 70,000 clauses: as an array
 * each, they lived long enough to be copied by every young-generation collection (a fifth of the encoding's time).
 */
export class Clauses {
  /** Clause k's literals are literals[from(k) .. ends[k]). */
  literals: Int32Array = new Int32Array(1 << 10);
  ends: Int32Array = new Int32Array(1 << 8);
  /** How many clauses. */
  length = 0;
  /** Literals written, those of the clause still open included. */
  private written = 0;

  static of(list: readonly (readonly Lit[])[]): Clauses {
    const out = new Clauses();
    for (const c of list) out.add(c);
    return out;
  }

  /** Where clause k's literals start. */
  from(k: number): number {
    return k === 0 ? 0 : this.ends[k - 1]!;
  }

  /** The literals of every clause. */
  get size(): number {
    return this.from(this.length);
  }

  /** Appends a literal to the open clause (`close` ends it). */
  push(l: Lit): void {
    if (this.written === this.literals.length) this.literals = grown(this.literals, 2 * this.written);
    this.literals[this.written++] = l;
  }

  /** Ends the open clause: the literals pushed since the last close. */
  close(): void {
    if (this.length === this.ends.length) this.ends = grown(this.ends, 2 * this.length);
    this.ends[this.length++] = this.written;
  }

  add(c: readonly Lit[]): void {
    for (const l of c) this.push(l);
    this.close();
  }

  /** Clause k, as an array. */
  clause(k: number): Lit[] {
    return Array.from(this.literals.subarray(this.from(k), this.ends[k]!));
  }

  /** Every clause, as arrays (for readers that want them: Z3's text, tests). */
  list(): Lit[][] {
    return Array.from({ length: this.length }, (_, k) => this.clause(k));
  }

  /** The first k clauses, sharing this one's storage (read only: nothing may be added to it). */
  prefix(k: number): Clauses {
    const out = new Clauses();
    out.literals = this.literals;
    out.ends = this.ends;
    out.length = k;
    return out;
  }

  /** Whether some clause is empty (then no assignment satisfies them). */
  hasEmpty(): boolean {
    for (let k = 0; k < this.length; k++) if (this.ends[k] === this.from(k)) return true;
    return false;
  }
}

export interface MaxSatProblem {
  variables: number;
  hard: Clauses;
  /** Objectives in priority order; each soft literal of a group costs 1 when false. */
  soft: Lit[][];
  /**
   * Soft literals freed together to improve a model when a group's optimum cannot be proven in the budget (a
   * firewall's candidate rules, two or three firewalls' together): our own solver then answers that model (exact.ts).
   */
  neighbourhoods?: Iterable<Neighbourhood>;
  /**
   * A group whose assignments at the optima of the groups up to it are few (a candidates' formula's new firewalls):
   * our own solver may solve the last group apart for each (exact.ts, splitOptimum).
   */
  split?: number;
  /** Assignments of the split group, one of which every optimum has (a proof-only probe's sets): roundsOptimum. */
  cubes?: Lit[][];
  /** Clauses found as the search goes (cdcl.ts): only our solver takes such a problem, never Z3 or CaDiCaL. */
  lazy?: LazyClauses;
}

/** Soft literals to free together, worth freeing only where the model has every `needs` literal (firewalls used). */
export interface Neighbourhood {
  free: Lit[];
  needs: Lit[];
}

export interface MaxSatAnswer {
  status: 'sat' | 'unsat';
  /** value[v] for v in 1..variables. */
  value: boolean[];
  /** A model found when the optimum could not be proven (only where the problem has neighbourhoods). */
  optimal?: false;
}

const makeContext = async () => {
  const { init } = await import('z3-solver');
  const { Context } = await init();
  return new Context('nfv');
};
let context: ReturnType<typeof makeContext> | undefined;

/** Whether this process (or thread) has loaded Z3: small simulations never should (exact.ts). */
export const z3Started = () => context !== undefined;

/** One Z3 context per process: the wasm build never frees a context, so a fresh one per solve leaks until OOM. */
function z3(): ReturnType<typeof makeContext> {
  context ??= makeContext();
  return context;
}

const lit = (l: Lit) => (l > 0 ? `v${l}` : `(not v${-l})`);
const clause = (c: Lit[]) => (c.length === 1 ? lit(c[0]!) : `(or ${c.map(lit).join(' ')})`);

function smtlib(p: MaxSatProblem, softs: boolean): string {
  const lines: string[] = [];
  for (let v = 1; v <= p.variables; v++) lines.push(`(declare-const v${v} Bool)`);
  for (const c of p.hard.list()) lines.push(c.length === 0 ? '(assert false)' : `(assert ${clause(c)})`);
  if (softs)
    p.soft.forEach((group, g) => group.forEach((l) => lines.push(`(assert-soft ${lit(l)} :weight 1 :id g${g})`)));
  return lines.join('\n');
}

function readModel(sexpr: string, variables: number): boolean[] {
  const value = new Array<boolean>(variables + 1).fill(false);
  for (const m of sexpr.matchAll(/\(define-fun v(\d+) \(\) Bool\s+(true|false)\)/g))
    value[Number(m[1])] = m[2] === 'true';
  return value;
}

/** Z3's resource units the call may spend: its share of the work pool (work.ts); none where the pool is unbounded. */
const rlimitOf = (work: WorkPool) => (Number.isFinite(work.left) ? Math.floor(work.left / Z3_TICKS_PER_RLIMIT) : 0);

/** What Z3 has counted in this context so far (its resource limit is counted from there). */
const rlimitCount = (stats: { keys(): string[]; get(key: string): number }) =>
  stats.keys().includes('rlimit count') ? stats.get('rlimit count') : 0;

/** Milliseconds until the job's time limit, at least 1 (Z3 reads 0 as none). */
const msLeft = (abortAt: number) => Math.max(1, Math.round(abortAt - Date.now()));

/**
 * Solves the problem optimally within the work of `spend` (Z3's resource limit, which counts work, not time): past
 * it WorkSpent, past the job's time limit SolverTimeout. What Z3 counted leaves the pool.
 */
export async function solveMaxSat(p: MaxSatProblem, spend: Spend): Promise<MaxSatAnswer> {
  const ctx = await z3();
  const opt = new ctx.Optimize();
  try {
    const units = rlimitOf(spend.work);
    // Z3's time-out runs a timer thread; with it, a check stopped by its resource limit never returned in 3 runs of
    // Zoo Gridnet in 100 (none in 280 without it). A call with work to count gets no time-out: the solver pool stops a
    // job that outlasts its time limit (pool.ts).
    if (units > 0) opt.set('rlimit', units);
    else opt.set('timeout', msLeft(spend.abortAt));
    opt.fromString(smtlib(p, true));
    const before = rlimitCount(opt.statistics());
    const status = await opt.check();
    spend.work.spend((rlimitCount(opt.statistics()) - before) * Z3_TICKS_PER_RLIMIT);
    if (status === 'unknown') {
      if (Date.now() >= spend.abortAt) throw new SolverTimeout();
      throw new WorkSpent();
    }
    if (status === 'unsat') return { status, value: [] };
    return { status, value: readModel(opt.model().sexpr(), p.variables) };
  } finally {
    opt.release();
  }
}

/**
 * Which of the assumption literals together with the hard clauses are unsatisfiable (an unsat core), or none; past
 * the job's time limit SolverTimeout (never "none": a core not found is no answer).
 */
export async function conflictCore(p: MaxSatProblem, assumptions: Lit[], abortAt: number): Promise<Lit[]> {
  const ctx = await z3();
  const solver = new ctx.Solver();
  try {
    solver.set('timeout', msLeft(abortAt));
    solver.fromString(smtlib(p, false));
    const consts = assumptions.map((l) => (l > 0 ? ctx.Bool.const(`v${l}`) : ctx.Not(ctx.Bool.const(`v${-l}`))));
    const status = await solver.check(...consts);
    if (status === 'unknown') throw new SolverTimeout();
    if (status === 'sat') return [];
    const core = new Set(solver.unsatCore().sexpr().match(/v\d+/g) ?? []);
    return assumptions.filter((l) => core.has(`v${Math.abs(l)}`));
  } finally {
    solver.release();
  }
}
