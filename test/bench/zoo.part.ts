/**
 * The Internet Topology Zoo reader of `npm run bench:zoo` (src/bench/zoo.ts): the largest connected part of a
 * network, the same from its GML and its GraphML file, with counts taken by networkx (`nx.Graph(nx.parse_graphml)`
 * less self-loops, its largest connected component) on the shipped files; a hand-written GML with two parts, a
 * self-loop and a parallel link; and a Zoo WAN built, solved and re-checked by the independent evaluator.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { generateWan } from '../../src/bench/wan.js';
import { openZoo, readZoo, type ZooGraph } from '../../src/bench/zoo.js';
import { checkedSimulate } from '../engine/evaluator.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'zoo');

/** A graph's links as a sorted list of "low-high" pairs: the same graph whatever order the file lists them in. */
const linkSet = (g: ZooGraph) =>
  g.links
    .map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`)
    .sort()
    .join(' ');

t.test('the shipped Zoo files: PoPs and links as networkx counts them, the same from GML and GraphML', async (t) => {
  // [PoPs, links] of the largest connected part, by networkx 3.6 on the graphml files.
  const expected: Record<string, [number, number]> = { Abilene: [11, 14], Eunetworks: [14, 16] };
  const gml = openZoo(FIXTURES, 'gml')!;
  const graphml = openZoo(FIXTURES, 'graphml')!;
  t.same(gml.names, ['Abilene', 'Eunetworks']);
  t.same(graphml.names, gml.names);
  for (const name of gml.names) {
    const [a, b] = [gml.read(name), graphml.read(name)];
    t.same([a.pops, a.links.length], expected[name], `${name}: PoPs and links`);
    t.equal(linkSet(a), linkSet(b), `${name}: GML and GraphML agree`);
    t.ok(
      a.links.every(([x, y]) => x !== y && x >= 0 && y >= 0 && x < a.pops && y < a.pops),
      `${name}: links between PoPs of the part`,
    );
  }
  t.equal(openZoo(path.join(FIXTURES, 'none')), undefined, 'no Zoo there: undefined');
});

t.test('a hand-written GML: the largest part, a self-loop dropped, a parallel link once', async (t) => {
  const text = `graph [ multigraph 1 label "two parts"
    node [ id 7 label "a" ] node [ id 3 label "b [x]" ] node [ id 5 ] node [ id 9 ] node [ id 11 ]
    edge [ source 9 target 11 ]
    edge [ source 7 target 3 ] edge [ source 3 target 7 LinkLabel "parallel" ] edge [ source 3 target 3 ]
    edge [ source 5 target 3 ]
  ]`;
  // Part {7, 3, 5} (three PoPs, in file order 0, 1, 2) beats {9, 11}; 7-3 once, 3-3 dropped.
  t.same(readZoo(text, 'gml'), {
    pops: 3,
    links: [
      [0, 1],
      [2, 1],
    ],
  });
  t.throws(() => readZoo('graph [ node [ id 1 ]', 'gml'), /without/);
  t.throws(() => readZoo('graph [ edge [ source 1 target 2 ] ]', 'gml'), /node 1/);
});

t.test('a Zoo WAN: a router per PoP, a place per link, SAT and re-checked', async (t) => {
  const abilene = readZoo(readFileSync(path.join(FIXTURES, 'gml', 'Abilene.gml'), 'utf8'), 'gml');
  for (const nat of [false, true]) {
    const nfv = generateWan({ shape: { kind: 'graph', name: 'Abilene', ...abilene }, nat, seed: 1 });
    const nodes = nfv.graphs.graph![0]!.node;
    const type = new Map(nodes.map((n) => [n.name, n.functionalType]));
    t.equal(nodes.filter((n) => n.functionalType === 'FORWARDER').length, 11, 'a router per PoP');
    const backbone = nodes.filter(
      (n) => n.functionalType === undefined && n.neighbour!.every((nb) => type.get(nb.name) === 'FORWARDER'),
    );
    t.equal(backbone.length, 14, 'a place on each link');
    const { report } = await checkedSimulate(nfv, {});
    t.equal(report.verdict, 'SAT', nat ? 'nat' : 'plain');
    t.equal(report.satisfied, report.properties);
  }
});
