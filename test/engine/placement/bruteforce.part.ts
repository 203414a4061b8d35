/**
 * Brute force on 600 seeded random inputs (up to 8 nodes, 6 hosts): every answer passes the independent checker,
 * a placed answer's objective is the least over all placements, an infeasible one has no placement at all, every
 * conflict code occurs, and the same input gives the same answer twice. Then the P8 cut on the allocations that
 * cannot be placed: the cut itself cannot be placed, and dropping any one element of it can.
 */
import t from 'tap';
import {
  definePlacement,
  minimalConflict,
  placeNodes,
  type ConflictCode,
  type PlacementInput,
} from '../../../src/engine/placement/index.js';
import { bruteForce, violations } from './checker.js';
import { generateInstance } from './generate.js';

const SEEDS = 600;
const later = () => Date.now() + 60_000;

t.test('random inputs: checked answers, optimum equal to brute force, each conflict code seen', async (t) => {
  const codes = new Map<ConflictCode, number>();
  let placed = 0;
  let infeasible = 0;
  const cuts: PlacementInput[] = [];
  for (let seed = 1; seed <= SEEDS; seed++) {
    const given = generateInstance(seed);
    const problem = definePlacement(given);
    const outcome = placeNodes(problem, { deadline: later() });
    const again = placeNodes(problem, { deadline: later() });
    const best = bruteForce(given);
    const wrong = violations(given, outcome);
    if (wrong.length) t.fail(`seed ${seed}: ${wrong.join('; ')}`);
    if (JSON.stringify(again) !== JSON.stringify(outcome)) t.fail(`seed ${seed}: a second run answers otherwise`);
    if (outcome.status === 'placed') {
      placed++;
      if (!outcome.optimal) t.fail(`seed ${seed}: not proven optimal`);
      if (JSON.stringify(outcome.objective) !== JSON.stringify(best))
        t.fail(`seed ${seed}: objective ${JSON.stringify(outcome.objective)}, brute force ${JSON.stringify(best)}`);
    } else if (outcome.status === 'infeasible') {
      infeasible++;
      if (best) t.fail(`seed ${seed}: said infeasible, brute force places it at ${JSON.stringify(best)}`);
      for (const c of outcome.conflicts) codes.set(c.code, (codes.get(c.code) ?? 0) + 1);
      if (outcome.conflicts.some((c) => c.code === 'COMBINED' && !c.minimal))
        t.fail(`seed ${seed}: COMBINED not minimal`);
      if (given.used.length) cuts.push(given);
    } else t.fail(`seed ${seed}: timed out`);
  }
  t.ok(placed >= 100, `${placed} placed`);
  t.ok(infeasible >= 50, `${infeasible} infeasible`);
  for (const code of ['EMPTY_DOMAIN', 'PIN_OVERLOAD', 'AGGREGATE', 'LINK_BOUND', 'UNREACHABLE', 'COMBINED'] as const)
    t.ok((codes.get(code) ?? 0) > 0, `${code} occurs (${codes.get(code) ?? 0} times)`);
  t.comment(JSON.stringify(Object.fromEntries(codes)));

  let checked = 0;
  for (const given of cuts) {
    const answer = minimalConflict(definePlacement(given), given.used, { deadline: later() });
    if (answer.status !== 'conflict') {
      t.fail(`cut: ${answer.status} for an allocation brute force cannot place`);
      continue;
    }
    if (!answer.minimal) t.fail('cut not minimal');
    const mandatory = new Set(given.used);
    if (answer.cut.some((x) => !mandatory.has(x))) t.fail('the cut names nodes outside the allocation');
    if (bruteForce({ ...given, used: answer.cut })) t.fail(`cut ${answer.cut.join(',')} can be placed`);
    for (const x of answer.cut) {
      if (!bruteForce({ ...given, used: answer.cut.filter((y) => y !== x) }))
        t.fail(`cut ${answer.cut.join(',')} without ${x} still cannot be placed`);
    }
    checked++;
  }
  t.ok(checked >= 20, `${checked} cuts checked against brute force`);
});

t.test('under a small work budget every answer still holds, and one said optimal is', async (t) => {
  let cut = 0;
  for (let seed = 1; seed <= 200; seed++) {
    const given = generateInstance(seed);
    const outcome = placeNodes(definePlacement(given), { deadline: later(), effort: 150 });
    const wrong = violations(given, outcome);
    if (wrong.length) t.fail(`seed ${seed}: ${wrong.join('; ')}`);
    if (outcome.status === 'placed' && !outcome.optimal) cut++;
    if (outcome.status === 'placed' && outcome.optimal) {
      const best = bruteForce(given);
      if (JSON.stringify(best) !== JSON.stringify(outcome.objective)) t.fail(`seed ${seed}: said optimal, is not`);
    }
    if (outcome.status === 'infeasible' && bruteForce(given)) t.fail(`seed ${seed}: said infeasible, is not`);
  }
  t.ok(cut >= 5, `${cut} answers stopped short of a proof`);
});
