/**
 * The decision diagrams of the analyses (src/deploy/analysis/bdd.ts) against plain box membership written here: on
 * seeded random unions of boxes, and, or, xor and difference hold exactly the packets the same formula over the
 * boxes says (checked at the boxes' corners and around them, where sets change); `toBoxes` gives disjoint boxes
 * whose union is the set (every packet checked lies in exactly one of them when in the set, else in none); `first` is a packet of the set; past its node bound a diagram is refused with 400.
 */
import t from 'tap';
import { Bdd, FALSE } from '../../../src/deploy/analysis/bdd.js';
import { random } from '../../../src/bench/topology.js';
import { NfvError } from '../../../src/model/errors.js';
import { inside } from '../first-match.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './examples.part.js';
import './batfish.part.js';

type Box = number[];
const TOPS = [255, 255, 255, 255, 255, 255, 255, 255, 65535, 65535, 2];

function randomBox(rnd: () => number): Box {
  // Few distinct values per dimension, so that boxes overlap often; sometimes the whole range.
  return TOPS.flatMap((top) => {
    if (rnd() < 0.4) return [0, top];
    const values = top === 2 ? [0, 1, 2] : [0, 1, 7, 8, 100, 128, 200, top];
    const [a, b] = [values[Math.floor(rnd() * values.length)]!, values[Math.floor(rnd() * values.length)]!];
    return [Math.min(a, b), Math.max(a, b)];
  });
}

/** Packets at the boxes' corners and next to them, and random ones. */
function points(rnd: () => number, boxes: readonly Box[], n: number): number[][] {
  return Array.from({ length: n }, () => {
    const b = boxes[Math.floor(rnd() * boxes.length)]!;
    return TOPS.map((top, d) => {
      const r = rnd();
      const v = r < 0.3 ? b[2 * d]! : r < 0.6 ? b[2 * d + 1]! : r < 0.8 ? Math.floor(rnd() * (top + 1)) : b[2 * d]! - 1;
      return Math.max(0, Math.min(top, r > 0.9 ? v + 1 : v));
    });
  });
}

t.test('operations, boxes back and first packets agree with box membership', async (t) => {
  const rnd = random(4_7_3);
  let checked = 0;
  let bdd = new Bdd();
  for (let round = 0; round < 100; round++) {
    if (round % 20 === 0) bdd = new Bdd();
    const as = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => randomBox(rnd));
    const bs = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => randomBox(rnd));
    const [a, b] = [bdd.boxes(as), bdd.boxes(bs)];
    const sets = { and: bdd.and(a, b), or: bdd.or(a, b), xor: bdd.xor(a, b), diff: bdd.diff(a, b) };
    const formula = {
      and: (x: boolean, y: boolean) => x && y,
      or: (x: boolean, y: boolean) => x || y,
      xor: (x: boolean, y: boolean) => x !== y,
      diff: (x: boolean, y: boolean) => x && !y,
    };
    const back = Object.fromEntries(Object.entries(sets).map(([k, u]) => [k, bdd.toBoxes(u, 1e6)])) as Record<
      keyof typeof sets,
      number[][]
    >;
    for (const p of points(rnd, [...as, ...bs, ...Object.values(back).flat()], 60)) {
      const [x, y] = [as.some((q) => inside(q, p)), bs.some((q) => inside(q, p))];
      const point = bdd.box(p.flatMap((v) => [v, v]));
      for (const k of Object.keys(sets) as (keyof typeof sets)[]) {
        const want = formula[k](x, y);
        const got = bdd.and(sets[k], point) !== FALSE;
        const boxes = back[k].filter((q) => inside(q, p)).length;
        if (got !== want || boxes !== (want ? 1 : 0))
          return t.fail(`round ${round}, ${k}, packet ${p.join()}: want ${want}, diagram ${got}, in ${boxes} boxes`);
        checked++;
      }
    }
    for (const [k, u] of Object.entries(sets)) {
      if (u === FALSE) continue;
      const first = bdd.first(u);
      const p = TOPS.map((_, d) => first[2 * d]!);
      const want = formula[k as keyof typeof sets](
        as.some((q) => inside(q, p)),
        bs.some((q) => inside(q, p)),
      );
      if (!want || first.some((v, i) => v !== first[i - (i % 2)]))
        return t.fail(`round ${round}: ${k}'s first packet ${p.join()} is not one of its packets`);
    }
  }
  t.pass(`${checked} packet memberships as the boxes say`);
});

t.test('the node bound refuses with 400 naming the rules', async (t) => {
  const rnd = random(11);
  const bdd = new Bdd({ maxNodes: 500 });
  let caught: unknown;
  try {
    for (let k = 0; k < 1000; k++) bdd.boxes([randomBox(rnd)]);
  } catch (e) {
    caught = e;
  }
  t.ok(caught instanceof NfvError && caught.status === 400, 'refused with 400');
  t.match((caught as Error).message, /^rules: .*more than 500 decision-diagram nodes/);
});
