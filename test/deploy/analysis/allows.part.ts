/**
 * allows against brute force: on 400 seeded random rule lists, half of them looked at within a random traffic
 * filter, the classes (read back from their text) are disjoint, hold exactly the packets first match allows within
 * the filter, and each names exactly the rules (and the default) that decide its packets.
 */
import t from 'tap';
import { allowsOf, listOfNode, type RuleRef } from '../../../src/deploy/analysis/index.js';
import { ruleBox, UNIVERSE, type Box } from '../../../src/model/space.js';
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

const LISTS = 400;

t.test(`allows agrees with brute force on ${LISTS} random lists`, async (t) => {
  const rnd = random(23_52);
  let classes = 0;
  let filtered = 0;
  for (let n = 0; n < LISTS; n++) {
    const node = randomFirewall(rnd);
    const elements = elementsOf(node);
    const list = listOfNode(node, `list ${n}`);
    const filter: Box = rnd() < 0.5 ? UNIVERSE : ruleBox(randomElement(rnd));
    if (filter !== UNIVERSE) filtered++;
    const report = allowsOf(list, filter);
    const boxes = report.classes.map(boxOfClass);
    const rules = rulesBoxes(elements);
    const g = new Grid([...rules, ...boxes, filter]);
    const masks = g.masks(rules);
    // Per deciding rule (index + 1, the default first) its verdict, read once rather than once per cell.
    const allows = Uint8Array.from({ length: elements.length + 1 }, (_, k) =>
      (k === 0 ? defaultAllows(node) : elements[k - 1]!.action === 'ALLOW') ? 1 : 0,
    );
    const inFilter = g.masks([filter]);
    const owner = new Int32Array(g.cells).fill(-1);
    const problem = (): string | undefined => {
      for (const [k, b] of boxes.entries()) {
        // Bit at + 1 for each deciding rule (the default's is bit 0): a set without a Set's cost per cell.
        let seen = 0;
        for (const c of g.cellsIn(b)) {
          if (owner[c] !== -1) return `classes ${owner[c]} and ${k} overlap`;
          owner[c] = k;
          seen |= 1 << (lowest(masks[c]!) + 1);
        }
        const deciders = Array.from({ length: 32 }, (_, bit) => bit - 1).filter((at) => seen & (1 << (at + 1)));
        const ref = (at: number): RuleRef =>
          at < 0
            ? 'default'
            : list.lines[at]!.id === undefined
              ? { position: at + 1 }
              : { position: at + 1, id: list.lines[at]!.id! };
        const want = deciders.sort((x, y) => (x < 0 ? 1 : y < 0 ? -1 : x - y)).map(ref);
        if (JSON.stringify(report.classes[k]!.rules) !== JSON.stringify(want))
          return (
            `class ${k} names ${JSON.stringify(report.classes[k]!.rules)}, ` +
            `its packets are decided by ${JSON.stringify(want)}`
          );
      }
      for (let c = 0; c < g.cells; c++) {
        const allowed = inFilter[c] === 1 && allows[lowest(masks[c]!) + 1] === 1;
        if (allowed !== owner[c] >= 0)
          return `packet ${g.packet(c).join(',')}: ${allowed ? 'allowed but in no class' : 'in a class, not allowed'}`;
      }
      return undefined;
    };
    const wrong = problem();
    if (wrong) return t.fail(`list ${n}: ${wrong}: ${JSON.stringify(node.configuration)}`);
    classes += boxes.length;
  }
  t.pass(`${LISTS} lists (${filtered} within a filter), ${classes} classes, all as brute force says`);
  t.ok(classes > LISTS, 'the lists allow something');
});

t.test('classes as people read them', async (t) => {
  const node = {
    name: '30.0.0.1',
    functionalType: 'FIREWALL' as const,
    configuration: {
      name: 'c',
      firewall: {
        defaultAction: 'DENY' as const,
        elements: [
          { action: 'DENY' as const, source: '10.0.0.1', destination: '*' },
          {
            action: 'ALLOW' as const,
            source: '10.0.0.-1',
            destination: '20.-1.0.1',
            protocol: 'TCP' as const,
            dstPort: '80',
          },
          {
            action: 'ALLOW' as const,
            source: '10.0.0.-1',
            destination: '20.-1.0.1',
            protocol: 'TCP' as const,
            dstPort: '81-90',
          },
        ],
      },
    },
  };
  const report = allowsOf(listOfNode(node, 'fw'));
  t.same(report.classes, [
    // 10.0.0.0/24 without 10.0.0.1: 10.0.0.0 and 10.0.0.2-255; ports 80 and 81-90 joined.
    {
      source: '10.0.0.0',
      destination: '20.*.0.1',
      protocol: 'TCP',
      srcPort: '*',
      dstPort: '80-90',
      rules: [{ position: 2 }, { position: 3 }],
    },
    {
      source: '10.0.0.2-255',
      destination: '20.*.0.1',
      protocol: 'TCP',
      srcPort: '*',
      dstPort: '80-90',
      rules: [{ position: 2 }, { position: 3 }],
    },
  ]);
  t.same(report.within, { source: '*', destination: '*', protocol: 'ANY', srcPort: '*', dstPort: '*' });
  t.equal(report.defaultAction, 'DENY');
  const open = allowsOf(
    listOfNode({ ...node, configuration: { name: 'c', firewall: { defaultAction: 'ALLOW', elements: [] } } }, 'fw'),
  );
  t.same(open.classes, [
    { source: '*', destination: '*', protocol: 'ANY', srcPort: '*', dstPort: '*', rules: ['default'] },
  ]);
  const prefixes = allowsOf(
    listOfNode(
      {
        ...node,
        configuration: {
          name: 'c',
          firewall: {
            defaultAction: 'ALLOW',
            elements: [
              { action: 'DENY', source: '*', destination: '-1.-1.-1.-1', protocol: 'UDP' },
              { action: 'DENY', source: '*', destination: '*', protocol: 'OTHER' },
            ],
          },
        },
      },
      'fw',
    ),
  );
  t.same(
    prefixes.classes.map((c) => c.protocol),
    ['TCP'],
    'protocols by name',
  );
});
