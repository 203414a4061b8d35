/**
 * HiGHS (the `highs` package, WebAssembly) for the linear programs of bounds.ts: loaded once, on the first solve, so
 * that inputs that never need it never pay its load. Its limit is a count of simplex iterations, never time: the
 * same answer on any machine. (Its MIP was tried on wan-750 and dropped: docs/ARCHITECTURE.md.)
 */
import type highsTypes from 'highs';

/** The package's loader, as its types name it (as CommonJS, a default of the default). */
type Loader = typeof highsTypes.default;
type Highs = Awaited<ReturnType<Loader>>;

export interface LpLimits {
  /** Simplex iterations at most. */
  iterations: number;
}

/** An LP's answer: 'optimal' only where HiGHS proved it (a limit's values bound nothing). */
export interface LpResult {
  status: 'optimal' | 'infeasible' | 'limit' | 'error';
  /** Each column's value, by node. */
  values: Map<number, number>;
  /** Each row's dual value, in the order the rows were added (an LP's, where optimal). */
  duals: number[];
}

let loading: Promise<Highs> | undefined;

// The module's own loader reads highs.wasm beside it. Node loads its ES module, whose default is the loader.
const highs = () => (loading ??= import('highs').then((m) => (m.default as unknown as Loader)()));

/** HiGHS's model status for a proven optimum, an infeasible model and a simplex iteration limit (types.d.ts). */
const [OPTIMAL, INFEASIBLE, ITERATION_LIMIT] = [7, 8, 14];

/**
 * The least fractional hitting set of `rows` (lists of nodes, none twice in a row: each row's nodes weigh at least 1
 * in all, each node costing 1, its column; columns lowest node first), handed to HiGHS as arrays: the CPLEX LP text it
 * read before cost its writing, copying and parsing (about a quarter of the solves on wan-750), for the same model in
 * the same order, so the same pivots and answer. Kept from scratch on each call: started from the last round's basis
 * (tried) it reached other optima, whose places on wan-750 with NATs gave no answer (255 firewalls where 129).
 */
export async function hittingSetLp(rows: readonly (readonly number[])[], limits: LpLimits): Promise<LpResult> {
  const solver = await highs();
  const nodes = [...new Set(rows.flat())].sort((a, b) => a - b);
  const column = new Map(nodes.map((n, j) => [n, j]));
  const starts = new Int32Array(rows.length + 1);
  rows.forEach((row, i) => (starts[i + 1] = starts[i]! + row.length));
  const model = solver.createModel({
    numCols: nodes.length,
    numRows: rows.length,
    colCost: new Float64Array(nodes.length).fill(1),
    colLower: new Float64Array(nodes.length),
    colUpper: new Float64Array(nodes.length).fill(solver.infinity),
    rowLower: new Float64Array(rows.length).fill(1),
    rowUpper: new Float64Array(rows.length).fill(solver.infinity),
    matrix: {
      format: 'csr',
      numRows: rows.length,
      numCols: nodes.length,
      starts,
      indices: Int32Array.from(rows.flat(), (n) => column.get(n)!),
      values: new Float64Array(starts[rows.length]!).fill(1),
    },
  });
  try {
    model.options.set({
      output_flag: false,
      // Presolve off: on the hitting sets of bounds.ts it took 2.9 CPU s of a 3 s solve, the simplex alone 1.1 s.
      presolve: 'off',
      simplex_iteration_limit: limits.iterations,
      // No random seed left to chance (the package's persistent models run on one thread, always): the same pivots
      // on every run.
      random_seed: 0,
    });
    model.run();
    const code: number = model.getModelStatus();
    const status =
      code === OPTIMAL ? 'optimal' : code === INFEASIBLE ? 'infeasible' : code === ITERATION_LIMIT ? 'limit' : 'error';
    const values = new Map<number, number>();
    if (status !== 'optimal' && status !== 'limit') return { status, values, duals: [] };
    const solution = model.getSolution();
    nodes.forEach((n, j) => values.set(n, solution.colValue[j]!));
    return { status, values, duals: status === 'optimal' ? [...solution.rowDual] : [] };
  } finally {
    // WebAssembly memory is never collected: each model is freed here.
    model.dispose();
  }
}
