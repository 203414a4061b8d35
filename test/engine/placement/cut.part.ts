/**
 * P8's monotone feasibility test and the cut for the allocate-place-cut loop, on a hand-made case: two optional
 * firewalls each fit beside the mandatory function, not both; a third is harmless. (The brute-force test checks
 * cuts on hundreds of random allocations.)
 */
import t from 'tap';
import { definePlacement, isPlaceable, minimalConflict } from '../../../src/engine/placement/index.js';
import { bruteForce } from './checker.js';
import { fn, host, input, metrics, optional, place } from './build.js';

const given = input(
  [
    fn('n', ['o1']),
    optional('o1', ['n', 'o2']),
    optional('o2', ['o1', 'p']),
    place('p', ['o2', 'o3']),
    optional('o3', ['p']),
  ],
  [host('m1', { supports: ['NAT', 'FIREWALL'], cores: 6 }), host('m2', { supports: ['FIREWALL'], cores: 1 })],
  [],
  {
    nodeMetrics: [
      metrics('n', { cores: 3 }),
      metrics('o1', { cores: 2, optional: true }),
      metrics('o2', { cores: 2, optional: true }),
      metrics('o3', { cores: 1, optional: true }),
    ],
  },
);
const problem = definePlacement(given);

t.test('feasibility is monotone: what fits stays fitting when nodes are dropped', async (t) => {
  const all = ['o1', 'o2', 'o3', 'p'];
  t.equal(isPlaceable(problem, all), 'infeasible');
  t.equal(isPlaceable(problem, ['o1', 'o3', 'p']), 'placed');
  t.equal(isPlaceable(problem, ['o2', 'o3']), 'placed');
  t.equal(isPlaceable(problem, []), 'placed');
  for (const used of [all, ['o1', 'o3', 'p'], ['o2', 'o3'], []])
    t.equal(isPlaceable(problem, used) === 'placed', bruteForce({ ...given, used }) !== undefined, used.join(','));
});

t.test('the cut: both firewalls that cannot go together, and nothing else', async (t) => {
  const answer = minimalConflict(problem, ['p', 'o3', 'o2', 'o1']);
  t.same(answer, { status: 'conflict', cut: ['o1', 'o2'], minimal: true }, 'in document order');
  if (answer.status !== 'conflict') return;
  t.equal(bruteForce({ ...given, used: answer.cut }), undefined, 'the cut itself cannot be placed');
  for (const x of answer.cut)
    t.ok(bruteForce({ ...given, used: answer.cut.filter((y) => y !== x) }), `without ${x} it can`);
  t.same(minimalConflict(problem, ['o1', 'o3']), { status: 'placeable' });
});

t.test('the cut is empty when the mandatory nodes alone cannot be placed', async (t) => {
  const crowded = definePlacement({ ...given, nodeMetrics: [metrics('n', { cores: 7 })] });
  t.same(minimalConflict(crowded, ['o1', 'o2']), { status: 'conflict', cut: [], minimal: true });
});
