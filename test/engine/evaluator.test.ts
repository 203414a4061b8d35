/**
 * The independent evaluator: it catches a claim that does not hold, and it re-checks the engine's answers on
 * generated networks (and, with NFV_SCALE_RESULTS=DIR, every answer the scale benchmark stored there).
 */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { generateTopology } from '../../src/bench/topology.js';
import { EXACT_MAX_VARIABLES } from '../../src/engine/solving/exact.js';
import { simulate } from '../../src/engine/simulate.js';
import type { NFV } from '../../src/model/types.js';
import { firewall, isolation, nat, network, place, reachability, webclient, webserver } from './build.js';
import { violations } from './evaluator.js';
import { pathFreeViolations } from './evaluator-pathfree.js';

t.test('a claim that does not hold is caught', async (t) => {
  const nfv = network(
    [
      webclient('10.0.0.1', '1.0.0.1'),
      webclient('10.0.0.2', '1.0.0.1'),
      place('1.0.0.1', '10.0.0.1', '10.0.0.2', '20.0.0.1'),
      webserver('20.0.0.1', '1.0.0.1'),
    ],
    [isolation('10.0.0.1', '20.0.0.1'), reachability('10.0.0.2', '20.0.0.1')],
  );
  const { nfv: out } = await simulate(nfv);
  t.same(violations(out), [], 'the engine answer holds');
  const fw = out.graphs.graph![0]!.node.find((n) => n.name === '1.0.0.1')!;
  t.equal(fw.functionalType, 'FIREWALL');
  /** The answer with the placed firewall's rules replaced by one default action for everything. */
  const failingWith = (defaultAction: 'ALLOW' | 'DENY') => {
    const changed = structuredClone(out);
    changed.graphs.graph![0]!.node.find((n) => n.name === '1.0.0.1')!.configuration!.firewall = { defaultAction };
    return violations(changed).map((v) => v.index);
  };
  t.same(failingWith('ALLOW'), [0], 'a firewall that lets everything through breaks the isolation');
  t.same(failingWith('DENY'), [1], 'a firewall that drops everything breaks the reachability');
});

t.test('NAT: hidden sources leave as the NAT, and the NAT address leads back to them', async (t) => {
  const nfv = network(
    [
      webclient('192.168.0.1', '5.0.0.1'),
      nat('5.0.0.1', ['192.168.0.-1'], '192.168.0.1', '1.0.0.1'),
      firewall(
        '1.0.0.1',
        'ALLOW',
        [
          {
            action: 'DENY',
            source: '192.168.0.1',
            destination: '30.0.0.1',
            protocol: 'ANY',
            srcPort: '*',
            dstPort: '*',
          },
        ],
        '5.0.0.1',
        '30.0.0.1',
      ),
      webserver('30.0.0.1', '1.0.0.1'),
    ],
    [{ ...isolation('192.168.0.1', '30.0.0.1'), isSat: true }],
  );
  t.match(
    violations(nfv),
    [{ index: 0, why: /traffic arrives along 192\.168\.0\.1 > 5\.0\.0\.1 > 1\.0\.0\.1 > 30\.0\.0\.1/ }],
    'after the NAT the source is 5.0.0.1: a rule on the private address does not isolate',
  );
  const fixed = structuredClone(nfv);
  fixed.graphs.graph![0]!.node[2]!.configuration!.firewall!.elements![0]!.source = '5.0.0.1';
  t.same(violations(fixed), [], 'a rule on the NAT address does');
  const inbound: NFV = structuredClone(nfv);
  inbound.propertyDefinition.property = [{ ...isolation('30.0.0.1', '192.168.0.1'), isSat: true }];
  t.match(violations(inbound), [{ index: 0 }], 'traffic to the NAT address reaches the hidden host');
});

const SIZES = [
  { nodes: 60, requirements: 40 },
  { nodes: 150, requirements: 100 },
];
for (const size of SIZES) {
  for (const natAndPorts of [false, true]) {
    for (const seed of [1, 2]) {
      const name = `generated: ${size.nodes} nodes, ${size.requirements} requirements, ${
        natAndPorts ? 'NAT and ports' : 'plain'
      }, seed ${seed}`;
      t.test(name, async (t) => {
        const nfv = generateTopology({ ...size, nat: natAndPorts, seed });
        const { nfv: out, report } = await simulate(nfv, { timeoutSeconds: 600 });
        t.ok(report.satisfied > 0, `${report.satisfied}/${report.properties} hold`);
        t.same(pathFreeViolations(out), [], 'every requirement claimed satisfied holds');
        // No work to prove anything minimal: the fast answer stands in, says so, and holds as well.
        const fast = await simulate(nfv, { timeoutSeconds: 600, proofWork: 0 });
        const searched = fast.report.timings.components.filter((c) => c.method !== 'direct');
        t.ok(searched.length > 0, 'some component needs a search');
        const unproven = searched.some((c) => c.method === 'fast');
        const largest = searched.reduce((a, b) => (b.variables > a.variables ? b : a));
        if (largest.variables > EXACT_MAX_VARIABLES)
          t.equal(largest.method, 'fast', 'the largest gets the fast answer');
        t.equal(fast.report.optimal, !unproven, 'the report says optimal="false"');
        t.equal(fast.report.verdict, 'SAT');
        t.same(pathFreeViolations(fast.nfv), [], 'every requirement of the fast answer holds');
        if (report.optimal)
          t.ok(fast.report.allocated >= report.allocated, 'the proven answer places no more firewalls');
      });
    }
  }
}

const stored = process.env.NFV_SCALE_RESULTS;
t.test(
  'every answer the scale benchmark stored holds',
  { skip: !stored && 'NFV_SCALE_RESULTS is not set' },
  async (t) => {
    const files = (await readdir(stored!)).filter((f) => f.endsWith('.result.json')).sort();
    t.ok(files.length > 0, `${files.length} stored answers`);
    for (const f of files) {
      const out = JSON.parse(await readFile(path.join(stored!, f), 'utf8')) as NFV;
      t.same(pathFreeViolations(out), [], f);
    }
  },
);
