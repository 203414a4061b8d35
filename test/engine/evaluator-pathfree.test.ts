/**
 * The path-free evaluator against the path-enumerating one: the same verdict for every requirement of 600 small
 * random networks with cycles (forwarders, places, configured firewalls with random first-match rules, NATs on
 * cycles and at the edge, one-way links, overlapping addresses, forwarding paths; isolation, reachability and
 * complete reachability, some on ports); and on a fabric with too many paths to list, the path evaluator hands over.
 */
import t from 'tap';
import { random } from '../../src/bench/topology.js';
import { smallNetwork } from './random-network.js';
import { generateFabric } from '../../src/bench/fabric.js';
import type { Elements } from '../../src/model/types.js';
import { firewall, forwarder, isolation, nat, network, reachability, webclient, webserver } from './build.js';
import { violations } from './evaluator.js';
import { pathFreeViolations, verdicts } from './evaluator-pathfree.js';
import { TooManyPaths, simplePaths } from './packets.js';

const NETWORKS = 600;

t.test(`the same verdicts as the path evaluator on ${NETWORKS} small random networks with cycles`, async (t) => {
  let requirements = 0;
  let failing = 0;
  let natOnCycle = 0;
  const byMethod = new Map<string, number>();
  const differing: string[] = [];
  for (let seed = 1; seed <= NETWORKS; seed++) {
    const nfv = smallNetwork(seed);
    const byPaths = violations(nfv).map((v) => v.index);
    const withoutPaths = pathFreeViolations(nfv).map((v) => v.index);
    if (JSON.stringify(byPaths) !== JSON.stringify(withoutPaths))
      differing.push(`seed ${seed}: paths ${byPaths.join(',')} path-free ${withoutPaths.join(',')}`);
    requirements += nfv.propertyDefinition.property.length;
    failing += byPaths.length;
    for (const v of verdicts(nfv)) {
      byMethod.set(v.method, (byMethod.get(v.method) ?? 0) + 1);
      if (v.method === 'simple paths') natOnCycle++;
    }
  }
  t.same(differing, [], 'every requirement has the same verdict');
  const methods = [...byMethod].map(([m, n]) => `${n} ${m}`).join(', ');
  t.comment(`${requirements} requirements, ${failing} do not hold; decided by ${methods}`);
  // The comparison says something only if both verdicts are common and most are decided without any path.
  t.ok(failing > requirements / 5 && failing < (requirements * 4) / 5, 'holding and failing requirements both common');
  t.ok((byMethod.get('blocks') ?? 0) > requirements / 2, 'most requirements decided block by block');
  t.ok(natOnCycle > 0, 'some requirements meet a NAT on a cycle (kept to simple paths)');
});

t.test('a fabric with too many paths to list: the path evaluator hands over to the path-free one', async (t) => {
  const nfv = generateFabric({
    shape: { kind: 'leaf-spine', spines: 8, leaves: 16, hostsPerLeaf: 1 },
    nat: true,
    seed: 3,
  });
  const rnd = random(7);
  // Every place a firewall that drops one random host's traffic: some requirements hold, others do not.
  const hosts = nfv.graphs.graph![0]!.node.filter((n) => n.functionalType === 'WEBSERVER').map((n) => n.name);
  for (const n of nfv.graphs.graph![0]!.node) {
    if (n.functionalType) continue;
    const host = hosts[Math.floor(rnd() * hosts.length)]!;
    n.functionalType = 'FIREWALL';
    n.configuration = {
      name: 'fw',
      firewall: {
        defaultAction: 'ALLOW',
        elements: [{ action: 'DENY', source: '*', destination: host, protocol: 'ANY', srcPort: '*', dstPort: '*' }],
      },
    };
  }
  for (const p of nfv.propertyDefinition.property) p.isSat = true;
  const nodes = new Map(nfv.graphs.graph![0]!.node.map((n) => [n.name, n]));
  const first = nfv.propertyDefinition.property[0]!;
  const listed = (() => {
    try {
      return simplePaths(nodes, first.src, first.dst, 20_000);
    } catch (e) {
      return e;
    }
  })();
  t.ok(listed instanceof TooManyPaths, 'too many paths to list');
  const found = violations(nfv);
  t.same(found, pathFreeViolations(nfv), 'the same answer');
  t.ok(found.length > 0 && found.length < nfv.propertyDefinition.property.length, `${found.length} do not hold`);
  t.ok(
    verdicts(nfv).every((v) => v.method === 'blocks'),
    'NATs at the edge are cut vertices: no path is listed',
  );
});

t.test('a NAT on a cycle: a walk would differ, the simple-path meaning is kept', async (t) => {
  // 1.0.0.1, 1.0.0.3, 5.0.0.1, 1.0.0.2 and 1.0.0.4 form one block. 1.0.0.4 lets through only what the NAT 5.0.0.1
  // sent, and every simple path through the NAT also passes 1.0.0.2, which drops everything. The walk
  // 1.0.0.1 > 1.0.0.3 > 5.0.0.1 > 1.0.0.3 > 1.0.0.4 would arrive; no simple path does.
  const rule = (source: string): Elements => ({
    action: 'ALLOW',
    source,
    destination: '*',
    protocol: 'ANY',
    srcPort: '*',
    dstPort: '*',
  });
  const nfv = network(
    [
      webclient('192.168.0.10', '1.0.0.1'),
      forwarder('1.0.0.1', '192.168.0.10', '1.0.0.3', '1.0.0.2'),
      forwarder('1.0.0.3', '1.0.0.1', '5.0.0.1', '1.0.0.4'),
      nat('5.0.0.1', ['192.168.0.-1'], '1.0.0.3', '1.0.0.2'),
      firewall('1.0.0.2', 'DENY', [], '1.0.0.1', '5.0.0.1', '1.0.0.4'),
      firewall('1.0.0.4', 'DENY', [rule('5.0.0.1')], '1.0.0.3', '1.0.0.2', '30.0.0.1'),
      webserver('30.0.0.1', '1.0.0.4'),
    ],
    [
      { ...isolation('192.168.0.10', '30.0.0.1'), isSat: true },
      { ...reachability('192.168.0.10', '30.0.0.1'), isSat: true },
    ],
  );
  t.same(
    violations(nfv).map((v) => v.index),
    [1],
    'on every simple path it is dropped',
  );
  t.same(
    pathFreeViolations(nfv).map((v) => v.index),
    [1],
    'the path-free evaluator agrees',
  );
  t.same(
    verdicts(nfv).map((v) => v.method),
    ['simple paths', 'simple paths'],
    'decided over the simple paths of the blocks',
  );
});
