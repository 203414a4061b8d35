/**
 * bench:rule-gap's MIP (src/bench/rule-gap.ts), which names the true optimum over the candidate rules in
 * docs/ARCHITECTURE.md: on 150 random small MaxSAT problems it finds the lexicographic optimum that a brute force over
 * every assignment finds, and on three small WANs whose answers the engine proves minimal it finds the same firewalls
 * and rules as the proof, over the formula the engine built.
 */
import t from 'tap';
import { seeded } from '../helpers.js';
import { generateWan, type WanShape } from '../../src/bench/wan.js';
import { optimum } from '../../src/bench/rule-gap.js';
import { simulate } from '../../src/engine/simulate.js';
import { Clauses, type Lit, type MaxSatProblem } from '../../src/engine/solving/maxsat.js';

/** The least cost vector (each group's false soft literals, compared in order) over every assignment. */
function bruteForce(variables: number, clauses: Lit[][], soft: Lit[][]): number[] {
  const holds = (l: Lit, bits: number) => ((bits >> (Math.abs(l) - 1)) & 1) === (l > 0 ? 1 : 0);
  let best: number[] | undefined;
  for (let bits = 0; bits < 1 << variables; bits++) {
    if (!clauses.every((c) => c.some((l) => holds(l, bits)))) continue;
    const cost = soft.map((group) => group.filter((l) => !holds(l, bits)).length);
    const k = best ? cost.findIndex((x, g) => x !== best![g]) : -1;
    if (!best || (k >= 0 && cost[k]! < best[k]!)) best = cost;
  }
  return best!;
}

t.test('the MIP finds the brute force optimum of small MaxSAT problems', async (t) => {
  const { rnd } = seeded(48);
  for (let round = 0; round < 150; round++) {
    const variables = 3 + Math.floor(rnd() * 7);
    const literal = () => (1 + Math.floor(rnd() * variables)) * (rnd() < 0.5 ? -1 : 1);
    // Clauses a planted assignment satisfies, so that every problem has a model.
    const planted = Math.floor(rnd() * (1 << variables));
    const satisfied = (c: Lit[]) => c.some((l) => ((planted >> (Math.abs(l) - 1)) & 1) === (l > 0 ? 1 : 0));
    const clauses: Lit[][] = [];
    while (clauses.length < 2 + Math.floor(rnd() * 3 * variables)) {
      const c = Array.from({ length: 1 + Math.floor(rnd() * 3) }, literal);
      if (satisfied(c)) clauses.push(c);
    }
    // Groups as allocate.ts orders them (firewalls, changes, rules, optional), some empty, literals repeated.
    const soft = Array.from({ length: 4 }, () => Array.from({ length: Math.floor(rnd() * 5) }, literal));
    const problem: MaxSatProblem = { variables, hard: Clauses.of(clauses), soft };
    const found = await optimum(problem);
    t.ok(found.optimal, `round ${round}: proven by HiGHS`);
    t.same(found.cost, bruteForce(variables, clauses, soft), `round ${round}: ${JSON.stringify({ clauses, soft })}`);
  }
});

t.test('on small WANs proven by the engine, the same firewalls and rules', async (t) => {
  const cases: [WanShape, boolean][] = [
    [{ kind: 'wan', pops: 6 }, true],
    [{ kind: 'mesh', rows: 2, columns: 3 }, false],
    [{ kind: 'ring', pops: 5 }, false],
  ];
  for (const [shape, nat] of cases) {
    const formulas: MaxSatProblem[] = [];
    const { report } = await simulate(generateWan({ shape, nat, seed: 1 }), {
      tuning: { decompose: true, collapse: true, prune: true, candidates: (problem) => void formulas.push(problem) },
    });
    const name = `${JSON.stringify(shape)} ${nat ? 'NAT' : 'plain'}`;
    t.equal(report.optimal, true, `${name}: proven by the engine`);
    // One formula here (the refined classes' proof, these being small): the answer is its optimum.
    t.equal(formulas.length, 1, `${name}: one candidate formula`);
    const found = await optimum(formulas[0]!);
    t.ok(found.optimal, `${name}: proven by HiGHS`);
    t.same([found.cost[0], found.cost[2]], [report.firewalls, report.rules], `${name}: firewalls, rules`);
  }
});
