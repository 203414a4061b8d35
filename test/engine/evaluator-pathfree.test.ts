/**
 * The path-free evaluator against the path-enumerating one: the same verdict for every requirement of 600 small
 * random networks with cycles (forwarders, places, configured firewalls with random first-match rules, NATs on
 * cycles and at the edge, one-way links, overlapping addresses, forwarding paths; isolation, reachability and
 * complete reachability, some on ports); and on a fabric with too many paths to list, the path evaluator hands over.
 */
import t from 'tap';
import { random } from '../../src/bench/topology.js';
import { generateFabric } from '../../src/bench/fabric.js';
import type { Elements, NFV, Node, Property } from '../../src/model/types.js';
import { firewall, forwarder, isolation, nat, network, reachability, webclient, webserver } from './build.js';
import { violations } from './evaluator.js';
import { pathFreeViolations, verdicts } from './evaluator-pathfree.js';
import { TooManyPaths, simplePaths } from './packets.js';

const NETWORKS = 600;

/** A small random network with at least one cycle, every requirement claimed satisfied. */
function smallNetwork(seed: number): NFV {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const chance = (p: number) => rnd() < p;
  const nodes: Node[] = [];
  const byName = new Map<string, Node>();
  const add = (node: Node) => {
    nodes.push(node);
    byName.set(node.name, node);
    return node.name;
  };
  const link = (a: string, b: string, oneWay = false) => {
    const na = byName.get(a)!;
    if (!na.neighbour!.some((n) => n.name === b)) na.neighbour!.push({ name: b });
    const nb = byName.get(b)!;
    if (!oneWay && !nb.neighbour!.some((n) => n.name === a)) nb.neighbour!.push({ name: a });
  };
  const coreCount = 3 + Math.floor(rnd() * 5);
  const core: string[] = [];
  const nats: { name: string; pool: string }[] = [];
  for (let k = 1; k <= coreCount; k++) {
    const roll = rnd();
    // Sometimes an intermediate node is addressed inside a host network (100.0.1.-1): traffic to it is delivered.
    const name = chance(0.1) ? `100.0.1.${50 + k}` : `10.0.0.${k}`;
    if (roll < 0.2) add({ name, neighbour: [] });
    else if (roll < 0.35)
      add({ name, functionalType: 'FORWARDER', neighbour: [], configuration: { name: 'f', forwarder: { name: 'F' } } });
    else if (roll < 0.55) {
      const pool = `192.168.${nats.length}.-1`;
      nats.push({ name, pool });
      add({ name, functionalType: 'NAT', neighbour: [], configuration: { name: 'n', nat: { source: [pool] } } });
    } else add({ name, functionalType: 'FIREWALL', neighbour: [] });
    core.push(name);
  }
  // A random tree, then extra links: at least one cycle.
  for (let k = 1; k < core.length; k++) link(core[k]!, core[Math.floor(rnd() * k)]!);
  const extra = 1 + Math.floor(rnd() * 3);
  for (let k = 0; k < extra; k++) {
    const [a, b] = [pick(core), pick(core)];
    if (a !== b) link(a, b, chance(0.15));
  }
  const hosts: string[] = [];
  const hostCount = 3 + Math.floor(rnd() * 3);
  for (let k = 1; k <= hostCount; k++) {
    const nat = nats.length && chance(0.4) ? pick(nats) : undefined;
    const name = nat ? nat.pool.replace('-1', String(10 + k)) : k === 1 && chance(0.3) ? '100.0.1.-1' : `100.0.${k}.1`;
    if (byName.has(name)) continue;
    add({
      name,
      functionalType: chance(0.5) ? 'WEBCLIENT' : 'WEBSERVER',
      neighbour: [],
      configuration: { name: 'h', webclient: { nameWebServer: 'x' } },
    });
    hosts.push(name);
    link(name, nat && chance(0.7) ? nat.name : pick(core));
    if (chance(0.3)) link(name, pick(core));
  }
  // Rules from the network's addresses and their generalisations.
  const addresses = [
    ...hosts,
    ...core,
    '*',
    '192.168.0.-1',
    '100.0.-1.-1',
    '-1.-1.-1.-1',
    '100.0.0.0/16',
    '10.0.0.0/30',
  ];
  const portChoices = ['*', '*', '80', '0-79', '81-65535', '22', '1000-2000'];
  for (const n of nodes) {
    if (n.functionalType !== 'FIREWALL') continue;
    const rules: Elements[] = Array.from({ length: Math.floor(rnd() * 4) }, () => ({
      action: chance(0.5) ? 'ALLOW' : 'DENY',
      source: pick(addresses),
      destination: pick(addresses),
      protocol: pick(['ANY', 'ANY', 'TCP', 'UDP'] as const),
      srcPort: '*',
      dstPort: pick(portChoices),
    }));
    n.configuration = { name: 'fw', firewall: { defaultAction: chance(0.5) ? 'ALLOW' : 'DENY', elements: rules } };
  }
  const kinds: Property['name'][] = ['ISOLATION_PROPERTY', 'REACHABILITY_PROPERTY', 'COMPLETE_REACHABILITY_PROPERTY'];
  const properties: Property[] = [];
  const ends = [...hosts, ...nats.map((n) => n.name)];
  for (let k = 0; k < 6; k++) {
    const src = pick(hosts);
    const dst = chance(0.85) ? pick(hosts) : pick(ends);
    const port = chance(0.4)
      ? { dstPort: pick(['80', '0-79', '22', '1000-1500']), lv4Proto: pick(['TCP', 'UDP'] as const) }
      : {};
    properties.push({ name: pick(kinds), graph: 0, src, dst, ...port, isSat: true });
  }
  const nfv: NFV = {
    graphs: { graph: [{ id: 0, node: nodes }] },
    constraints: { nodeConstraints: {}, linkConstraints: {} },
    propertyDefinition: { property: properties },
  };
  if (chance(0.1)) {
    const p = properties[0]!;
    nfv.networkForwardingPaths = { path: [{ id: 1, pathNode: [p.src, pick(core), p.dst].map((name) => ({ name })) }] };
  }
  return nfv;
}

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
