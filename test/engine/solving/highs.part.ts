/**
 * The hitting-set LP handed to HiGHS as arrays (highs.ts, `hittingSetLp`), checked without HiGHS: its values cover
 * every row, its duals are a packing no node overloads, the two sums meet (LP duality: both optimal), and the optimum
 * lies between the packing and the least hitting set found by brute force.
 */
import t from 'tap';
import { hittingSetLp } from '../../../src/engine/solving/highs.js';
import { seeded } from '../../helpers.js';

/** The fewest nodes meeting every row, trying every subset of `nodes`. */
function leastHittingSet(rows: number[][], nodes: number): number {
  let best = nodes;
  for (let mask = 0; mask < 1 << nodes; mask++) {
    const size = [...Array(nodes).keys()].filter((n) => mask & (1 << n)).length;
    if (size < best && rows.every((row) => row.some((n) => mask & (1 << n)))) best = size;
  }
  return best;
}

t.test(
  'random hitting sets: a covering optimum, a packing of the same weight, under the least hitting set',
  async (t) => {
    const { rnd } = seeded(7);
    for (let round = 0; round < 60; round++) {
      const nodes = 3 + Math.floor(rnd() * 8);
      const rows: number[][] = [];
      for (let r = 0, count = 1 + Math.floor(rnd() * 12); r < count; r++) {
        // Node numbers spread out (as places are), none twice in a row.
        const row = [...Array(nodes).keys()].filter(() => rnd() < 0.35);
        rows.push(row.length > 0 ? row : [Math.floor(rnd() * nodes)]);
      }
      const spread = rows.map((row) => row.map((n) => 10 * n + 3));
      const lp = await hittingSetLp(spread, { iterations: 10_000 });
      t.equal(lp.status, 'optimal', `round ${round}: optimal`);
      const value = (n: number) => lp.values.get(n) ?? 0;
      const covered = spread.every((row) => row.reduce((s, n) => s + value(n), 0) >= 1 - 1e-7);
      const total = [...lp.values.values()].reduce((s, v) => s + v, 0);
      const load = new Map<number, number>();
      spread.forEach((row, i) => row.forEach((n) => load.set(n, (load.get(n) ?? 0) + (lp.duals[i] ?? 0))));
      const packing = lp.duals.every((y) => y >= -1e-9) && [...load.values()].every((l) => l <= 1 + 1e-7);
      const weight = lp.duals.reduce((s, y) => s + y, 0);
      const least = leastHittingSet(rows, nodes);
      const ok =
        covered &&
        packing &&
        Math.abs(weight - total) < 1e-6 &&
        total <= least + 1e-7 &&
        [...lp.values.values()].every((v) => v >= -1e-9);
      t.ok(ok, `round ${round}: ${rows.length} rows over ${nodes} nodes, LP ${total.toFixed(3)}, least ${least}`);
    }
  },
);

t.test('the same values and duals on a second solve', async (t) => {
  const rows = [
    [3, 13, 23],
    [13, 33],
    [23, 33, 43],
    [3, 43],
  ];
  const [a, b] = [await hittingSetLp(rows, { iterations: 1000 }), await hittingSetLp(rows, { iterations: 1000 })];
  t.same([...a.values], [...b.values]);
  t.same(a.duals, b.duals);
});
