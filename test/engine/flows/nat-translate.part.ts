/**
 * A NAT translating by destination (docs/SEMANTICS.md, "Translation by destination"; `-d X -j SNAT`): a packet from
 * what it hides gets its address as source only where a `translate` entry matches it; others go on unchanged. The
 * engine's verdicts are the ones worked out by hand here, every answer claimed satisfied is re-checked by both
 * independent evaluators, and on random networks whose NATs translate by destination the state graphs and the
 * listed paths give the same verdicts.
 */
import t from 'tap';
import { simulate } from '../../../src/engine/simulate.js';
import type { NFV, Property } from '../../../src/model/types.js';
import { firewall, isolation, network, reachability, webclient, webserver } from '../build.js';
import { violations } from '../evaluator.js';
import { pathFreeViolations } from '../evaluator-pathfree.js';
import { random } from '../../../src/bench/topology.js';
import { bothWays, withDecisions } from '../random-network.js';

const N = '198.51.100.1';
const CLIENT = '10.0.0.5';
const LDAP = '203.0.113.42';
const WEB = '203.0.113.80';

/** The filter: LDAP takes the NAT's address only, WEB the hidden network's own. */
const FILTER = firewall(
  '1.0.0.1',
  'DENY',
  [
    { action: 'ALLOW', source: N, destination: LDAP, protocol: 'TCP', srcPort: '*', dstPort: '*' },
    { action: 'ALLOW', source: '10.0.0.-1', destination: WEB, protocol: 'ANY', srcPort: '*', dstPort: '*' },
  ],
  N,
  LDAP,
  WEB,
);

/** CLIENT - NAT N (hides 10.0.0.-1, translates TCP 389 to LDAP only) - filter - LDAP, WEB. */
function router(requirements: Property[], translate = true, filter = FILTER): NFV {
  return network(
    [
      webclient(CLIENT, N),
      [
        N,
        'NAT',
        [CLIENT, '1.0.0.1'],
        {
          name: 'n',
          nat: {
            source: ['10.0.0.-1'],
            ...(translate ? { translate: [{ protocol: 'TCP', dst: LDAP, dstPort: '389' }] } : {}),
          },
        },
      ],
      filter,
      webserver(LDAP, '1.0.0.1'),
      webserver(WEB, '1.0.0.1'),
    ],
    requirements,
  );
}

const tcp = (dstPort: string) => ({ lv4Proto: 'TCP' as const, dstPort });

t.test('only the entries are translated: verdicts by hand, both evaluators agreeing', async (t) => {
  const requirements = [
    reachability(CLIENT, LDAP, tcp('389')), // translated to N: allowed
    reachability(CLIENT, LDAP, tcp('636')), // not an entry: 10.0.0.5 to LDAP, denied
    reachability(CLIENT, WEB, tcp('80')), // not an entry: 10.0.0.5 to WEB, allowed
    isolation(CLIENT, LDAP, tcp('636')), // as the second: denied
    isolation(CLIENT, WEB, tcp('389')), // port 389 to WEB is no entry either: allowed, so no isolation
  ];
  const { nfv: out } = await simulate(router(requirements));
  t.same(
    out.propertyDefinition.property.map((p) => p.isSat),
    [true, false, true, true, false],
  );
  t.same(violations(out), [], 'the path evaluator finds no claim that does not hold');
  t.same(pathFreeViolations(out), [], 'the path-free evaluator neither');
  // The evaluators read the list: without it the NAT translates everything to outside 10.0.0.-1, so WEB sees N
  // (denied) and LDAP on 636 too (allowed).
  const stripped = structuredClone(out);
  delete stripped.graphs.graph![0]!.node.find((n) => n.name === N)!.configuration!.nat!.translate;
  t.same(
    violations(stripped).map((v) => v.index),
    [2, 3],
  );
  t.same(
    pathFreeViolations(stripped).map((v) => v.index),
    [2, 3],
  );
  const { nfv: plain } = await simulate(router(requirements, false));
  t.same(
    plain.propertyDefinition.property.map((p) => p.isSat),
    [true, true, false, false, true],
    'without the list: LDAP sees N on 636 as well (allowed), WEB sees N (denied, so 389 to WEB is isolated)',
  );
});

t.test('what comes to the NAT from outside is delivered there, as with an empty forward table', async (t) => {
  // From WEB to N: not turned towards 10.0.0.-1 (a NAT without a list would), so CLIENT is reached only directly.
  const open = firewall(
    '1.0.0.1',
    'ALLOW',
    [{ action: 'DENY', source: WEB, destination: CLIENT, protocol: 'ANY', srcPort: '*', dstPort: '*' }],
    N,
    LDAP,
    WEB,
  );
  const { nfv: out } = await simulate(router([reachability(WEB, CLIENT)], true, open));
  t.same(
    out.propertyDefinition.property.map((p) => p.isSat),
    [false],
    'WEB to CLIENT is denied, and WEB to N is delivered to N',
  );
  t.same(violations(out), []);
  t.same(pathFreeViolations(out), []);
  const { nfv: plain } = await simulate(router([reachability(WEB, CLIENT)], false, open));
  t.same(
    plain.propertyDefinition.property.map((p) => p.isSat),
    [true],
    'without the list, WEB to N goes on to CLIENT',
  );
  t.same(violations(plain), []);
});

const NETWORKS = 80;

t.test(`random networks whose NATs translate by destination (${NETWORKS})`, async (t) => {
  const differing: string[] = [];
  let [requirements, failing, translating] = [0, 0, 0];
  for (let seed = 1; seed <= NETWORKS; seed++) {
    const nfv = withDecisions(seed);
    const rnd = random(1000 + seed);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
    const nodes = nfv.graphs.graph![0]!.node;
    const names = nodes.map((n) => n.name);
    for (const n of nodes) {
      if (n.functionalType !== 'NAT' || rnd() < 0.2) continue;
      translating++;
      n.configuration!.nat!.translate = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => ({
        protocol: pick(['TCP', 'UDP', 'ANY'] as const),
        dst: pick([...names, '100.0.0.0/16', '*']),
        ...(rnd() < 0.5 ? { dstPort: pick(['80', '0-79', '22', '1000-1500']) } : {}),
        ...(rnd() < 0.2 ? { src: pick(n.configuration!.nat!.source ?? ['*']) } : {}),
      }));
    }
    const { graphs, paths, differs } = await bothWays(nfv, seed);
    if (differs) differing.push(differs);
    if (!('report' in graphs) || !('report' in paths)) continue;
    requirements += graphs.report.properties;
    failing += graphs.report.properties - graphs.report.satisfied;
  }
  t.same(differing, [], 'the same verdicts both ways, each answer holding for both evaluators');
  t.comment(`${translating} NATs translating by destination; ${requirements} requirements, ${failing} cannot hold`);
  t.ok(translating > NETWORKS / 2, 'most networks have such a NAT');
  t.ok(failing > 0 && failing < requirements, 'holding and failing requirements both occur');
});
