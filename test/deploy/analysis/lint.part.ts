/**
 * lint against brute force: on 400 seeded random rule lists, every packet of the packet space (one per cell of the
 * grid the rules draw) is decided by first match, and from that alone: which rules no packet reaches, which are
 * redundant (removing one changes no packet's verdict), whether an earlier rule taking some of a blocked rule's
 * packets has the other action, and Batfish's choice of blocking rules (by overlap size, counted in packets).
 */
import t from 'tap';
import { Budget, allowsOf, diff, labelOf, lint, listOfNode, type RuleRef } from '../../../src/deploy/analysis/index.js';
import type { Elements } from '../../../src/model/types.js';
import { Grid, defaultAllows, elementsOf, inBox, lowest, random, randomFirewall, rulesBoxes } from './brute.js';

const LISTS = 400;

const isAllow = (e: Elements) => e.action === 'ALLOW';

interface Expected {
  finding: string;
  by: number[];
  differentAction: boolean;
}

/** What lint must say of rule k, from the packets alone (undefined: nothing). `masks`: the rules of each cell. */
function expected(
  elements: Elements[],
  defaultAllow: boolean,
  g: Grid,
  masks: Int32Array,
  k: number,
): Expected | undefined {
  const verdict = (at: number) => (at < 0 ? defaultAllow : isAllow(elements[at]!));
  const bit = 1 << k;
  const mine = g.cellsIn(rulesBoxes(elements)[k]!);
  const first = (c: number) => lowest(masks[c]!);
  if (!mine.some((c) => first(c) === k)) {
    // The earlier rules that decide some of its packets, each weighed by its overlap with the whole rule.
    const takers = [...new Set(mine.map(first))].sort((a, b) => a - b);
    const different = takers.some((j) => verdict(j) !== verdict(k));
    const weight = (j: number) => mine.filter((c) => masks[c]! & (1 << j)).reduce((sum, c) => sum + g.size(c), 0n);
    const order = takers
      .map((j) => ({ j, w: weight(j) }))
      .sort((a, b) => (a.w === b.w ? a.j - b.j : a.w > b.w ? -1 : 1));
    let uncovered = mine;
    let need = different;
    const by: number[] = [];
    for (const { j } of order) {
      const other = verdict(j) !== verdict(k);
      if (uncovered.length || (need && other)) {
        uncovered = uncovered.filter((c) => !(masks[c]! & (1 << j)));
        by.push(j);
        need &&= !other;
      }
      if (!uncovered.length && !need) break;
    }
    return {
      finding: different ? 'shadowed' : 'redundant-unreachable',
      by: by.sort((a, b) => a - b),
      differentAction: different,
    };
  }
  // Reachable: redundant when no packet's verdict changes once it is gone. Only the cells it decides can change
  // (elsewhere its bit is not the lowest, so the lowest stays), and they are among its own: no scan of the grid.
  for (const c of mine) if (first(c) === k && verdict(k) !== verdict(lowest(masks[c]! & ~bit))) return undefined;
  const takers = new Set(mine.filter((c) => first(c) === k).map((c) => lowest(masks[c]! & ~bit)));
  return {
    finding: 'redundant',
    by: [...takers].sort((a, b) => (a < 0 ? 1 : b < 0 ? -1 : a - b)),
    differentAction: false,
  };
}

t.test(`lint agrees with brute force on ${LISTS} random lists`, async (t) => {
  const rnd = random(23_5);
  let findings = 0;
  const kinds = new Map<string, number>();
  for (let n = 0; n < LISTS; n++) {
    const node = randomFirewall(rnd);
    const elements = elementsOf(node);
    const list = listOfNode(node, `list ${n}`);
    const report = lint(list);
    const boxes = rulesBoxes(elements);
    const g = new Grid(boxes);
    const masks = g.masks(boxes);
    // The grid itself, checked on a few cells: the packet it shows lies in exactly the rules its mask says.
    for (let c = 0; c < g.cells; c += 1 + Math.floor(g.cells / 7))
      if (boxes.some((b, k) => inBox(g.packet(c), b) !== Boolean(masks[c]! & (1 << k))))
        return t.fail(`list ${n}: cell ${c} of the grid is not in the rules its mask says`);
    const ref = (k: number): RuleRef =>
      k < 0
        ? 'default'
        : list.lines[k]!.id === undefined
          ? { position: k + 1 }
          : { position: k + 1, id: list.lines[k]!.id! };
    const want = elements.flatMap((_, k) => {
      const e = expected(elements, defaultAllows(node), g, masks, k);
      return e ? [{ rule: ref(k), finding: e.finding, by: e.by.map(ref), differentAction: e.differentAction }] : [];
    });
    const got = report.findings.map(({ rule, finding, by, differentAction }) => ({
      rule,
      finding,
      by,
      differentAction,
    }));
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      t.same(got, want, `list ${n}: ${JSON.stringify(node.configuration)}`);
      return;
    }
    findings += want.length;
    for (const f of want) kinds.set(f.finding, (kinds.get(f.finding) ?? 0) + 1);
  }
  t.pass(`${LISTS} lists, ${findings} findings, all as brute force says`);
  // The generator must exercise every kind, or the comparison above proves little.
  for (const kind of ['shadowed', 'redundant-unreachable', 'redundant'])
    t.ok((kinds.get(kind) ?? 0) >= 20, `${kind}: ${kinds.get(kind) ?? 0} findings`);
  t.ok(
    [...kinds.values()].reduce((a, b) => a + b, 0) < LISTS * 4,
    'and many rules without a finding (the lists are not all degenerate)',
  );
});

t.test('labels: rule ids, or positions for rules without ids, and the default', async (t) => {
  t.equal(labelOf({ position: 3, id: 40 }), '40');
  t.equal(labelOf({ position: 3 }), '#3');
  t.equal(labelOf('default'), 'default');
});

t.test('work is bounded: beyond the budget, a 400 naming the rules', async (t) => {
  const list = listOfNode(randomFirewall(random(1), 8), 'big');
  t.throws(() => lint(list, new Budget(1, 1e9)), {
    status: 400,
    message: 'rules: an exact analysis of these rules needs more than 1 box; give fewer rules',
  });
  t.throws(() => allowsOf(list, undefined, new Budget(1e9, 3)), { status: 400, message: /more than 3 box tests/ });
  t.throws(() => diff(list, list, new Budget(1e9, 3)), { status: 400 });
  t.doesNotThrow(() => diff(list, list), 'the default budget is far above a small list');
});
