/**
 * The CDCL solver against brute force on random small formulas: every 'sat' comes with a model that satisfies every
 * clause, every 'unsat' has no model at all, and a core under assumptions is itself unsatisfiable.
 */
import t from 'tap';
import { random } from '../../../src/bench/topology.js';
import { SatSolver } from '../../../src/engine/solving/cdcl.js';
import { WorkPool } from '../../../src/engine/solving/work.js';

function randomCnf(rnd: () => number, variables: number, clauses: number): number[][] {
  return Array.from({ length: clauses }, () =>
    Array.from({ length: 2 + Math.floor(rnd() * 2) }, () => {
      const v = 1 + Math.floor(rnd() * variables);
      return rnd() < 0.5 ? v : -v;
    }),
  );
}

const holds = (clauses: number[][], value: (v: number) => boolean) =>
  clauses.every((c) => c.some((l) => (l > 0 ? value(l) : !value(-l))));

/** Is there any assignment satisfying the clauses and the given literals? */
function bruteForce(variables: number, clauses: number[][], fixed: number[] = []): boolean {
  for (let bits = 0; bits < 1 << variables; bits++) {
    const value = (v: number) => ((bits >> (v - 1)) & 1) === 1;
    if (
      holds(clauses, value) &&
      holds(
        fixed.map((l) => [l]),
        value,
      )
    )
      return true;
  }
  return false;
}

const budget = () => ({ conflicts: 1e6, work: new WorkPool(Infinity), abortAt: Date.now() + 60_000 });

t.test('random formulas: the same verdict as brute force, and every model holds', async (t) => {
  const rnd = random(7);
  let sat = 0;
  for (let k = 0; k < 400; k++) {
    const variables = 3 + Math.floor(rnd() * 10);
    const cnf = randomCnf(rnd, variables, Math.floor(variables * (2 + rnd() * 5)));
    const solver = new SatSolver(variables);
    cnf.forEach((c) => solver.addClause(c));
    const status = solver.solve([], budget());
    const expected = bruteForce(variables, cnf);
    if (status !== (expected ? 'sat' : 'unsat')) t.fail(`formula ${k}: ${status}, brute force ${expected}`);
    if (status === 'sat') {
      sat++;
      if (!holds(cnf, (v) => solver.model[v]!)) t.fail(`formula ${k}: the model breaks a clause`);
    }
  }
  t.ok(sat > 50 && sat < 350, `both verdicts occur (${sat} of 400 satisfiable)`);
});

t.test('assumptions: verdicts as brute force, and each core is unsatisfiable on its own', async (t) => {
  const rnd = random(11);
  let cores = 0;
  for (let k = 0; k < 300; k++) {
    const variables = 4 + Math.floor(rnd() * 8);
    const cnf = randomCnf(rnd, variables, variables * 2);
    const solver = new SatSolver(variables);
    cnf.forEach((c) => solver.addClause(c));
    // The same solver answers several calls, as the MaxSAT search uses it.
    for (let call = 0; call < 3; call++) {
      const assumptions = [...new Set(Array.from({ length: 3 }, () => 1 + Math.floor(rnd() * variables)))].map((v) =>
        rnd() < 0.5 ? v : -v,
      );
      const status = solver.solve(assumptions, budget());
      const expected = bruteForce(variables, cnf, assumptions);
      if (status !== (expected ? 'sat' : 'unsat')) t.fail(`formula ${k}: ${status}, brute force ${expected}`);
      if (status === 'sat' && !holds([...cnf, ...assumptions.map((l) => [l])], (v) => solver.model[v]!))
        t.fail(`formula ${k}: the model breaks a clause or an assumption`);
      if (status === 'unsat') {
        cores++;
        if (!solver.core.every((l) => assumptions.includes(l))) t.fail(`formula ${k}: the core is not assumptions`);
        if (bruteForce(variables, cnf, solver.core)) t.fail(`formula ${k}: the core ${solver.core} is satisfiable`);
      }
    }
  }
  t.ok(cores > 30, `${cores} cores checked`);
});

t.test('a budget that runs out answers unknown, and the solver still answers afterwards', async (t) => {
  // Pigeonhole: 9 pigeons in 8 holes, hard for resolution.
  const p = (i: number, h: number) => i * 8 + h + 1;
  const solver = new SatSolver(72);
  for (let i = 0; i < 9; i++) solver.addClause(Array.from({ length: 8 }, (_, h) => p(i, h)));
  for (let h = 0; h < 8; h++)
    for (let i = 0; i < 9; i++) for (let j = i + 1; j < 9; j++) solver.addClause([-p(i, h), -p(j, h)]);
  t.equal(solver.solve([], { ...budget(), conflicts: 100 }), 'unknown', 'by conflicts');
  // Work: what a call spent leaves the pool; a fresh solver with the same pool stops at the same point every time.
  const spentBy = (ticks: number) => {
    const fresh = new SatSolver(72);
    for (let i = 0; i < 9; i++) fresh.addClause(Array.from({ length: 8 }, (_, h) => p(i, h)));
    for (let h = 0; h < 8; h++)
      for (let i = 0; i < 9; i++) for (let j = i + 1; j < 9; j++) fresh.addClause([-p(i, h), -p(j, h)]);
    const work = new WorkPool(ticks);
    const status = fresh.solve([], { ...budget(), work });
    return { status, left: work.left };
  };
  const first = spentBy(5_000);
  t.equal(first.status, 'unknown', 'by work');
  t.ok(first.left <= 0, 'the pool is spent');
  t.same(spentBy(5_000), first, 'the same stop again: work, not time');
  t.equal(solver.solve([], { ...budget(), work: new WorkPool(0) }), 'unknown', 'an empty pool: no search');
  // The time limit stops the job, it never answers.
  const late = () => solver.solve([], { ...budget(), abortAt: Date.now() - 1 });
  t.throws(late, { status: 504 }, 'past the time limit: SolverTimeout');
  t.equal(solver.solve([p(0, 0), p(1, 0)], budget()), 'unsat', 'two pigeons in one hole');
  t.same(solver.core.sort(), [p(0, 0), p(1, 0)].sort(), 'the core names both');
});

/** Whether unit propagation over the clauses from the literals ends without a conflict, computed naively. */
function propagationHolds(clauses: number[][], literals: number[]): boolean {
  const value = new Map<number, boolean>();
  for (const l of literals) {
    if (value.get(Math.abs(l)) === l < 0) return false;
    value.set(Math.abs(l), l > 0);
  }
  for (let changed = true; changed;) {
    changed = false;
    for (const c of clauses) {
      const open = [...new Set(c.filter((l) => !value.has(Math.abs(l))))];
      if (c.some((l) => value.get(Math.abs(l)) === l > 0)) continue;
      if (open.length === 0) return false;
      if (open.length === 1) {
        value.set(Math.abs(open[0]!), open[0]! > 0);
        changed = true;
      }
    }
  }
  return true;
}

t.test('propagates: the same answer as unit propagation computed naively, as clauses are added', async (t) => {
  // Many questions to one solver, as the probe asks them: an answer may come from an earlier question's trail, and
  // a clause added since must be heeded.
  const rnd = random(13);
  let refuted = 0;
  let asked = 0;
  for (let k = 0; k < 200; k++) {
    const variables = 5 + Math.floor(rnd() * 10);
    const cnf = randomCnf(rnd, variables, Math.floor(variables * (1 + rnd() * 2)));
    const solver = new SatSolver(variables);
    const added: number[][] = [];
    for (const c of cnf) {
      if (!solver.addClause(c)) break;
      added.push(c);
      for (let q = 0; q < 4; q++) {
        const lits = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => {
          const v = 1 + Math.floor(rnd() * variables);
          return rnd() < 0.5 ? v : -v;
        });
        const expected = propagationHolds(added, lits);
        asked++;
        if (!expected) refuted++;
        if (solver.propagates(lits) !== expected) t.fail(`formula ${k}: ${lits} after ${added.length} clauses`);
        // The same questions with their first literals as a prefix shared by several last ones.
        const [last, ...prefix] = [...lits].reverse();
        const each = [last!, -last!, 1 + Math.floor(rnd() * variables)];
        const answers = solver.propagatesEach(prefix.reverse(), each);
        each.forEach((l, i) => {
          if (answers[i] !== propagationHolds(added, [...prefix, l])) t.fail(`formula ${k}: ${prefix} then ${l}`);
        });
        asked += each.length;
      }
    }
  }
  t.ok(refuted > 100 && refuted < asked - 100, `both answers occur (${refuted} of ${asked} refuted)`);
});
