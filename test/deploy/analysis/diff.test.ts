/**
 * diff against brute force: on 400 seeded pairs of random rule lists (the second an edit of the first: two rules
 * swapped, an action or the default flipped, a rule removed or added; or a list of its own), the classes (read back
 * from their text) are disjoint, hold exactly the packets whose verdicts differ, and name on each side the rule (or
 * default) that decides them. Reordering rules that share no packet changes nothing; reordering two overlapping
 * rules of different actions is seen and named.
 */
import t from 'tap';
import { diff, listOfNode, type RuleList, type RuleRef } from '../../../src/deploy/analysis/index.js';
import type { Elements, Node } from '../../../src/model/types.js';
import {
  Grid,
  boxOfClass,
  defaultAllows,
  elementsOf,
  lowest,
  random,
  randomElement,
  randomFirewall,
  rulesBoxes,
} from './brute.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './allows.part.js';
import './allows-lines.part.js';
import './folded.part.js';
import './lint.part.js';

const PAIRS = 400;

const withRules = (
  node: Node,
  elements: Elements[],
  defaultAction = node.configuration!.firewall!.defaultAction,
): Node => ({
  ...node,
  configuration: { name: 'edited', firewall: { ...(defaultAction ? { defaultAction } : {}), elements } },
});

/** An edit of a list, or another list. */
function edit(rnd: () => number, node: Node): Node {
  const elements = [...elementsOf(node)];
  const k = Math.floor(rnd() * elements.length);
  const r = rnd();
  if (r < 0.3 && elements.length > 1) {
    const j = (k + 1 + Math.floor(rnd() * (elements.length - 1))) % elements.length;
    [elements[k], elements[j]] = [elements[j]!, elements[k]!];
    return withRules(node, elements);
  }
  if (r < 0.45) {
    elements[k] = { ...elements[k]!, action: elements[k]!.action === 'ALLOW' ? 'DENY' : 'ALLOW' };
    return withRules(node, elements);
  }
  if (r < 0.55) return withRules(node, elements, defaultAllows(node) ? 'DENY' : 'ALLOW');
  if (r < 0.7)
    return withRules(
      node,
      elements.filter((_, j) => j !== k),
    );
  if (r < 0.85) {
    elements.splice(k, 0, randomElement(rnd, 900));
    return withRules(node, elements);
  }
  return randomFirewall(rnd);
}

const refOf = (list: RuleList, at: number): RuleRef =>
  at < 0
    ? 'default'
    : list.lines[at]!.id === undefined
      ? { position: at + 1 }
      : { position: at + 1, id: list.lines[at]!.id! };

t.test(`diff agrees with brute force on ${PAIRS} random pairs`, async (t) => {
  const rnd = random(23_53);
  let differing = 0;
  let classes = 0;
  for (let n = 0; n < PAIRS; n++) {
    const a = randomFirewall(rnd);
    const b = edit(rnd, a);
    const [la, lb] = [listOfNode(a, 'A'), listOfNode(b, 'B')];
    const report = diff(la, lb);
    const boxes = report.classes.map(boxOfClass);
    const [ra, rb] = [rulesBoxes(elementsOf(a)), rulesBoxes(elementsOf(b))];
    const g = new Grid([...ra, ...rb, ...boxes]);
    const [ma, mb] = [g.masks(ra), g.masks(rb)];
    const allow = (node: Node, at: number) => (at < 0 ? defaultAllows(node) : elementsOf(node)[at]!.action === 'ALLOW');
    // Per deciding rule (index + 1, the default first) its verdict, and per pair of deciding rules (at most 31
    // each) the sides as text: made once, not once per cell (the cells were most of this file's CPU).
    const verdicts = (node: Node) => Array.from({ length: elementsOf(node).length + 1 }, (_, k) => allow(node, k - 1));
    const [va, vb] = [verdicts(a), verdicts(b)];
    const wants = new Map<number, string>();
    const wantOf = (da: number, db: number) => {
      const key = (da + 1) * 64 + (db + 1);
      let want = wants.get(key);
      if (want === undefined) {
        want = JSON.stringify([
          refOf(la, da),
          refOf(lb, db),
          allow(a, da) ? 'ALLOW' : 'DENY',
          allow(b, db) ? 'ALLOW' : 'DENY',
        ]);
        wants.set(key, want);
      }
      return want;
    };
    const owner = new Int32Array(g.cells).fill(-1);
    // Per class, whether each pair of deciding rules has the class's sides (0: not compared yet, 1: yes, 2: no):
    // compared once per pair, not once per cell (94 million cells of classes, each comparing two texts).
    const agrees = new Uint8Array(64 * 64);
    const problem = (): string | undefined => {
      for (const [k, box] of boxes.entries()) {
        const c0 = report.classes[k]!;
        const sides = JSON.stringify([c0.from.rule, c0.to.rule, c0.from.verdict, c0.to.verdict]);
        agrees.fill(0);
        for (const c of g.cellsIn(box)) {
          if (owner[c] !== -1) return `classes ${owner[c]} and ${k} overlap`;
          owner[c] = k;
          const [da, db] = [lowest(ma[c]!), lowest(mb[c]!)];
          const key = (da + 1) * 64 + (db + 1);
          if (agrees[key] === 0) agrees[key] = sides === wantOf(da, db) ? 1 : 2;
          if (agrees[key] === 2)
            return `class ${k} says ${sides}, packet ${g.packet(c).join(',')} has ${wantOf(da, db)}`;
        }
      }
      for (let c = 0; c < g.cells; c++) {
        const differs = va[lowest(ma[c]!) + 1] !== vb[lowest(mb[c]!) + 1];
        if (differs !== owner[c] >= 0)
          return (
            `packet ${g.packet(c).join(',')}: ` +
            (differs ? 'verdicts differ but it is in no class' : 'in a class but the verdicts agree')
          );
      }
      return undefined;
    };
    const wrong = problem();
    if (wrong) return t.fail(`pair ${n}: ${wrong}: ${JSON.stringify([a.configuration, b.configuration])}`);
    if (report.equivalent !== (boxes.length === 0)) return t.fail(`pair ${n}: equivalent is ${report.equivalent}`);
    if (!report.equivalent) differing++;
    classes += boxes.length;
  }
  t.pass(`${PAIRS} pairs, ${differing} of them not equivalent, ${classes} classes, all as brute force says`);
  t.ok(differing > PAIRS / 4 && differing < PAIRS, 'both equivalent and differing pairs were seen');
});

t.test('reordering: disjoint rules change nothing; overlapping rules of different actions are named', async (t) => {
  const node = (elements: Elements[]): Node => ({
    name: '30.0.0.1',
    functionalType: 'FIREWALL',
    configuration: { name: 'c', firewall: { defaultAction: 'DENY', elements } },
  });
  const web: Elements = {
    id: 1,
    action: 'ALLOW',
    source: '10.0.0.-1',
    destination: '20.0.0.1',
    protocol: 'TCP',
    dstPort: '80',
  };
  const dns: Elements = {
    id: 2,
    action: 'ALLOW',
    source: '10.0.0.-1',
    destination: '20.0.0.2',
    protocol: 'UDP',
    dstPort: '53',
  };
  const block: Elements = { id: 3, action: 'DENY', source: '10.0.0.66', destination: '*' };
  const same = diff(listOfNode(node([web, dns, block]), 'A'), listOfNode(node([dns, web, block]), 'B'));
  t.same(same, { from: 'A', to: 'B', equivalent: true, classes: [] });
  const swapped = diff(listOfNode(node([block, web, dns]), 'A'), listOfNode(node([web, block, dns]), 'B'));
  t.equal(swapped.equivalent, false);
  t.same(swapped.classes, [
    {
      source: '10.0.0.66',
      destination: '20.0.0.1',
      protocol: 'TCP',
      srcPort: '*',
      dstPort: '80',
      from: { verdict: 'DENY', rule: { position: 1, id: 3 }, text: 'DENY ANY 10.0.0.66 -> *' },
      to: { verdict: 'ALLOW', rule: { position: 1, id: 1 }, text: 'ALLOW TCP 10.0.0.-1 -> 20.0.0.1 dport 80' },
    },
  ]);
  const opened = diff(
    listOfNode(node([web]), 'A'),
    listOfNode(
      { ...node([web]), configuration: { name: 'c', firewall: { defaultAction: 'ALLOW', elements: [web] } } },
      'B',
    ),
  );
  t.equal(opened.classes.length > 1, true, 'the rest of the space, in classes');
  t.ok(opened.classes.every((c) => c.from.rule === 'default' && c.to.rule === 'default' && c.from.verdict === 'DENY'));
});
