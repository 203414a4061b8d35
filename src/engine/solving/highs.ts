/**
 * HiGHS (the `highs` package, WebAssembly) for linear programs written as CPLEX LP text: loaded once, on the first
 * solve, so that inputs that never need it never pay its load. Its limit is a count of simplex iterations, never
 * time: the same answer on any machine. (Its MIP was tried on wan-750 and dropped: docs/ARCHITECTURE.md.)
 */
import type highsTypes from 'highs';

/** The package's loader, as its types name it (as CommonJS, a default of the default). */
type Loader = typeof highsTypes.default;
type Highs = Awaited<ReturnType<Loader>>;

export interface LpLimits {
  /** Simplex iterations at most. */
  iterations: number;
}

export interface LpResult {
  /** 'optimal' only where HiGHS proved it; a limit's values are feasible at most, and bound nothing. */
  status: 'optimal' | 'infeasible' | 'limit' | 'error';
  objective: number;
  /** Each column's value, by name. */
  values: Map<string, number>;
  /** Each row's dual value, in the model's order (an LP's, where optimal). */
  duals: number[];
}

let loading: Promise<Highs> | undefined;

// The module's own loader reads highs.wasm beside it. Node loads its ES module, whose default is the loader.
const highs = () => (loading ??= import('highs').then((m) => (m.default as unknown as Loader)()));

/** A linear program's optimum (written without integrality markers: this is no MIP). */
export async function solveLp(model: string, limits: LpLimits): Promise<LpResult> {
  const solver = await highs();
  const found = solver.solve(model, {
    output_flag: false,
    // Presolve off: on the hitting sets of bounds.ts it took 2.9 CPU s of a 3 s solve, the simplex alone 1.1 s.
    presolve: 'off',
    simplex_iteration_limit: limits.iterations,
    // One thread, and no random seed left to chance: the same pivots on every run.
    threads: 1,
    random_seed: 0,
  });
  const values = new Map<string, number>();
  const status =
    found.Status === 'Optimal'
      ? 'optimal'
      : found.Status === 'Infeasible'
        ? 'infeasible'
        : /limit/i.test(found.Status)
          ? 'limit'
          : 'error';
  if (status === 'optimal' || status === 'limit')
    for (const [name, column] of Object.entries(found.Columns as Record<string, { Primal?: number }>))
      if (typeof column.Primal === 'number') values.set(name, column.Primal);
  const duals = status === 'optimal' ? found.Rows.map((row) => ('Dual' in row ? row.Dual : 0)) : [];
  return { status, objective: found.ObjectiveValue, values, duals };
}
