/**
 * The engine without listing paths (issue 26): on small random networks with cycles, where firewalls are placed and
 * configured, the state graphs (`paths: 'needed'`) give every requirement the verdict the listed paths (`'all'`)
 * give, and the same cost when both are proven minimal; every answer holds for the path-free evaluator. Redundant
 * fabrics are answered, never refused as bad input; a NAT on a cycle with too many paths is a 422 naming the bound.
 */
import t from 'tap';
import { generateFabric } from '../../src/bench/fabric.js';
import type { SimulationResult } from '../../src/engine/simulate.js';
import { checkedSimulate } from './evaluator.js';
import { answer, bothWays, withDecisions } from './random-network.js';

const NETWORKS = 300;

t.test(`state graphs and listed paths agree on ${NETWORKS} random networks with cycles`, async (t) => {
  const differing: string[] = [];
  let requirements = 0;
  let failing = 0;
  let provenBoth = 0;
  for (let seed = 1; seed <= NETWORKS; seed++) {
    const nfv = withDecisions(seed);
    const { graphs, paths, differs } = await bothWays(nfv, seed);
    if (differs) differing.push(differs);
    if (!('report' in graphs) || !('report' in paths)) continue;
    requirements += graphs.report.properties;
    failing += graphs.report.properties - graphs.report.satisfied;
    if (graphs.report.optimal && paths.report.optimal) {
      provenBoth++;
      const cost = (r: SimulationResult) => `${r.report.allocated} firewalls, ${r.report.rules} rules`;
      if (cost(graphs) !== cost(paths)) differing.push(`seed ${seed}: ${cost(graphs)} / ${cost(paths)}`);
    }
  }
  t.same(differing, [], 'the same verdicts, and the same cost where both are proven minimal');
  t.comment(`${requirements} requirements, ${failing} cannot hold; ${provenBoth} networks proven minimal both ways`);
  t.ok(failing > 0 && failing < requirements, 'holding and failing requirements both occur');
  t.ok(provenBoth > NETWORKS / 2, 'most answers proven minimal both ways');
});

t.test('redundant fabrics are answered, every answer holding', async (t) => {
  for (const nat of [false, true]) {
    const nfv = generateFabric({ shape: { kind: 'leaf-spine', spines: 8, leaves: 16, hostsPerLeaf: 2 }, nat, seed: 2 });
    const { report } = await checkedSimulate(nfv, { timeoutSeconds: 600 });
    t.equal(report.verdict, 'SAT', `leaf-spine 8x16 ${nat ? 'with NATs' : 'plain'}: every requirement holds`);
    t.ok(report.allocated > 0, `${report.allocated} firewalls placed`);
  }
});

t.test('a NAT on a cycle with more paths than the bound: a 422 naming it, not a 400', async (t) => {
  const nfv = generateFabric({
    shape: { kind: 'leaf-spine', spines: 8, leaves: 16, hostsPerLeaf: 2 },
    nat: false,
    seed: 2,
  });
  const nodes = nfv.graphs.graph![0]!.node;
  // The busiest switch is a spine: every host pair's traffic may cross it.
  const spine = nodes
    .filter((n) => n.name.startsWith('10.'))
    .reduce((a, b) => ((b.neighbour?.length ?? 0) > (a.neighbour?.length ?? 0) ? b : a));
  spine.functionalType = 'NAT';
  spine.configuration = { name: 'n', nat: { source: ['192.168.0.-1'] } };
  const outcome = await answer(nfv, 'few');
  t.match(outcome, { status: 422, message: /more than 20000 simple paths .* NAT .* on a cycle/ });
});
