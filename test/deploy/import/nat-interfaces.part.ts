/**
 * A NAT node per masqueraded interface (issue 47, item 1; docs/SEMANTICS.md, "Masquerading out of several
 * interfaces"): `--nat-address IFACE=ADDR,IFACE2=ADDR2` reads each interface's nat lines (DNAT `-i`, MASQUERADE and
 * SNAT `-o`) as a node of its own, hiding what routes out of the other interfaces less its own addresses. The home
 * user's dump (eth1 and tun0 masqueraded) imports with it and is refused without it.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { importRules, importedNats, importedNode, interfaceMap, routeMap } from '../../../src/deploy/import/index.js';
import { natAddresses, patternLess } from '../../../src/deploy/import/nat.js';
import { NfvError } from '../../../src/model/errors.js';
import { ROOT } from '../../helpers.js';

const HOME = path.join(ROOT, 'test', 'fixtures', 'iptables', 'real', 'home-user.rules');
/** Routes assumed for the home dump: eth1 the internet (three /8s), tun0 a VPN /24, each eth0.N 192.168.N.0/24. */
const HOME_IFACE = [
  'eth1=8.0.0.0/8,45.0.0.0/8,91.0.0.0/8',
  'tun0=10.8.0.0/24',
  ...[10, 11, 12, 13, 14, 19, 20, 21, 22, 23, 24, 50].map((v) => `eth0.${v}=192.168.${v}.0/24`),
];

/** The message of what `f` throws, or undefined. */
const thrown = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof NfvError ? `${e.status} ${e.message}` : String(e);
  }
  return undefined;
};

/**
 * Whether an address is in an octet pattern: the test's own reading (-1: any octet). Each pattern is read once: the
 * checks below ask 765 patterns for thousands of addresses.
 */
const patternOctets = new Map<string, number[]>();
const inPattern = (a: number[], p: string) => {
  let octets = patternOctets.get(p);
  if (!octets) patternOctets.set(p, (octets = p.split('.').map(Number)));
  return octets.every((o, k) => o === -1 || o === a[k]);
};

t.test('--nat-address: ADDR or IFACE=ADDR,...; anything else is refused naming the flag', async (t) => {
  t.same(natAddresses('203.0.113.1'), [{ address: '203.0.113.1' }]);
  t.same(natAddresses('eth1=203.0.113.1,tun0=10.8.0.1'), [
    { interface: 'eth1', address: '203.0.113.1' },
    { interface: 'tun0', address: '10.8.0.1' },
  ]);
  for (const bad of ['eth1=', 'eth1=1.2.3', '=1.2.3.4', 'eth1=1.2.3.4,eth1=5.6.7.8', 'a=1.2.3.4,b=1.2.3.4', 'x'])
    t.match(
      thrown(() => natAddresses(bad)),
      /^400 natAddress: .* \(--nat-address\)$/,
      bad,
    );
});

t.test('a pattern less another: every address of the first not in the second, checked address by address', (t) => {
  const cases: [string, string, number][] = [
    ['-1.-1.-1.-1', '10.8.0.-1', 765],
    ['10.-1.-1.-1', '10.8.0.7', 765],
    ['192.168.1.-1', '10.8.0.-1', 1],
    ['10.8.0.-1', '10.-1.-1.-1', 0],
  ];
  for (const [p, q, count] of cases) {
    const less = patternLess(p, q);
    t.equal(less.length, count, `${p} less ${q}: ${count} patterns`);
    // Sampled addresses of p (every value of each octet p leaves open, in turn, the rest at q's or 0).
    let wrong = 0;
    const qs = q.split('.');
    for (let k = 0; k < 4; k++)
      for (let v = 0; v < 256; v++) {
        const a = p
          .split('.')
          .map((o, j) => (o !== '-1' ? Number(o) : j === k ? v : qs[j] === '-1' ? 0 : Number(qs[j])));
        if (less.some((x) => inPattern(a, x)) !== (inPattern(a, p) && !inPattern(a, q))) wrong++;
      }
    t.equal(wrong, 0, `${p} less ${q}: each sampled address as the sets say`);
  }
  t.end();
});

t.test('the home router: refused with one address, imported with one per interface', async (t) => {
  const text = await readFile(HOME, 'utf8');
  const iface = interfaceMap(HOME_IFACE);
  const file = 'home-user.rules';
  t.equal(text.split('\n').length - 1, 276, 'the dump: 276 lines');
  t.match(
    thrown(() => importRules('iptables', text, file, { natAddress: '198.51.100.1', iface })),
    /^400 home-user\.rules:118: -j MASQUERADE -o eth1 without -s: .* \(and 5 more lines refused\)$/,
    'one address: the six MASQUERADE lines refused (198.51.100.1 is routed out of no interface)',
  );
  t.match(
    thrown(() => importRules('iptables', text, file, { natAddress: 'eth1=8.8.8.8', iface })),
    /^400 home-user\.rules:121: -o tun0: no address for it in --nat-address \(give tun0=ADDR beside eth1\) \(and 2 more/,
    'eth1 alone: tun0 lines refused, naming the line and the flag',
  );
  const imported = importRules('iptables', text, file, { natAddress: 'eth1=8.8.8.8,tun0=10.8.0.1', iface });
  const r = imported.report;
  t.same(r.counts, { exact: 106, 'new-connection': 29, 'no-verdict': 17, approximated: 22, refused: 0 });
  t.equal(r.lines.length, 174, '174 lines reached');
  const nats = importedNats(imported);
  t.same(
    nats.map((n) => n.name),
    ['8.8.8.8', '10.8.0.1'],
  );
  const lans = [10, 11, 12, 13, 14, 19, 20, 21, 22, 23, 24, 50].map((v) => `192.168.${v}.-1`);
  t.same(nats[0]!.configuration!.nat, {
    source: ['10.8.0.-1', ...lans],
    forward: [{ protocol: 'TCP', dstPort: '24562', dst: '*', to: '192.168.10.64', toPort: '443' }],
  });
  t.same(nats[1]!.configuration!.nat, { source: ['8.-1.-1.-1', '45.-1.-1.-1', '91.-1.-1.-1', ...lans] });
  t.ok(Array.isArray(r.nat) && r.nat.map((n) => n.interface).join() === 'eth1,tun0', 'the report: a list');
  const said = (line: number) => r.lines.find((l) => l.line === line);
  for (const line of [116, 117, 118, 119, 120, 121, 122, 123])
    t.not(said(line)?.class, 'refused', `line ${line} is read, not refused`);
  t.match(said(123)?.reason, /masquerade as 10\.8\.0\.1 .*every packet leaving by tun0/);
});

t.test('with the internet out of eth1, tun0 hides every address but its own', async (t) => {
  const text = [
    '*nat',
    ':POSTROUTING ACCEPT [0:0]',
    '-A POSTROUTING -o wan -j MASQUERADE',
    '-A POSTROUTING -o vpn -j MASQUERADE',
    'COMMIT',
    '*filter',
    ':FORWARD ACCEPT [0:0]',
    'COMMIT',
    '',
  ].join('\n');
  const iface = interfaceMap(['wan=0.0.0.0/0', 'vpn=10.8.0.0/24', 'lan=10.1.0.0/16']);
  const imported = importRules('iptables', text, 'r', { natAddress: 'wan=203.0.113.1,vpn=10.8.0.1', iface });
  const [wan, vpn] = importedNats(imported).map((n) => n.configuration!.nat!.source!);
  t.same(wan, ['10.8.0.-1', '10.1.-1.-1']);
  t.equal(vpn!.length, 765, 'vpn: 765 patterns for every address but 10.8.0.0/24 (10.1.0.0/16 one of them)');
  t.notOk(
    vpn!.some((p) => inPattern([10, 8, 0, 5], p)),
    'vpn hides no address of its own',
  );
  t.ok(
    [
      [8, 8, 8, 8],
      [10, 1, 2, 3],
      [10, 8, 1, 0],
    ].every((a) => vpn!.some((p) => inPattern(a, p))),
    'vpn hides the rest',
  );
});

t.test('with several nodes, a line naming no given interface is refused, naming the line and flag', async (t) => {
  const iface = interfaceMap(['wan=0.0.0.0/0', 'vpn=10.8.0.0/24', 'lan=10.1.0.0/16']);
  const run = (nat: string[]) =>
    thrown(() =>
      importRules(
        'iptables',
        [
          '*nat',
          ':PREROUTING ACCEPT [0:0]',
          ':POSTROUTING ACCEPT [0:0]',
          ...nat,
          'COMMIT',
          '*filter',
          ':FORWARD ACCEPT [0:0]',
          'COMMIT',
          '',
        ].join('\n'),
        'r',
        { natAddress: 'wan=203.0.113.1,vpn=10.8.0.1', iface },
      ),
    );
  t.match(
    run(['-A POSTROUTING -o wan -j MASQUERADE', '-A POSTROUTING -s 10.1.0.0/16 -j MASQUERADE']),
    /^400 r:5: -j MASQUERADE without -o: with a NAT node per interface \(--nat-address wan=203\.0\.113\.1,vpn=10\.8\.0\.1\)/,
  );
  t.match(
    run([
      '-A POSTROUTING -o wan -j MASQUERADE',
      '-A POSTROUTING -o vpn -j MASQUERADE',
      '-A PREROUTING -p tcp --dport 80 -j DNAT --to-destination 10.1.0.2',
    ]),
    /^400 r:6: -j DNAT without -i: /,
  );
  t.match(
    run(['-A POSTROUTING -o wan -j MASQUERADE']),
    /^400 natAddress: no nat line reached names vpn \(-i or -o\); nothing for its NAT node 10\.8\.0\.1$/,
  );
  t.match(
    run(['-A POSTROUTING -o wan -j MASQUERADE', '-A POSTROUTING -o vpn -j SNAT --to-source 10.8.0.9']),
    /^400 r:5: -j SNAT --to-source 10\.8\.0\.9: not --nat-address 10\.8\.0\.1/,
  );
});

t.test('the home router with its real routes: the default out of eth1, imported without unfolding', async (t) => {
  const text = await readFile(HOME, 'utf8');
  const lans = [10, 11, 12, 13, 14, 19, 20, 21, 22, 23, 24, 50];
  const routes = [
    'default via 203.0.113.1 dev eth1',
    '10.8.0.0/24 dev tun0 proto kernel scope link src 10.8.0.1',
    ...lans.map((v) => `192.168.${v}.0/24 dev eth0.${v} proto kernel scope link src 192.168.${v}.1`),
  ].join('\n');
  const iface = routeMap(routes, 'home.routes');
  t.equal(iface.get('eth1')!.length, 53, 'eth1: 53 prefixes, everything the others leave');
  const imported = importRules('iptables', text, 'home-user.rules', {
    natAddress: 'eth1=8.8.8.8,tun0=10.8.0.1',
    iface,
  });
  t.same(imported.report.counts, { exact: 106, 'new-connection': 29, 'no-verdict': 17, approximated: 22, refused: 0 });
  const [eth1, tun0] = importedNats(imported).map((n) => n.configuration!.nat!.source!);
  t.same(eth1, ['10.8.0.-1', ...lans.map((v) => `192.168.${v}.-1`)], 'eth1 hides the VPN and the LANs');
  // Every address but the VPN's /24: 254 first octets, 255 of 10.x, 255 of 10.8.x (the 1,275 the routes give, merged).
  t.equal(tun0!.length, 765, 'tun0: 765 patterns');
  let wrong = 0;
  for (let k = 0; k < 4096; k++) {
    const a = [(k * 37) % 256, k % 3 ? 8 : (k * 11) % 256, k % 5 ? 0 : k % 256, (k * 7) % 256];
    if (k % 4 === 0) [a[0], a[1]] = [10, 8];
    if (k % 4 === 1) [a[0], a[1], a[2]] = [192, 168, lans[k % lans.length]!];
    const hidden = tun0!.some((p) => inPattern(a, p));
    if (hidden !== !(a[0] === 10 && a[1] === 8 && a[2] === 0)) wrong++;
  }
  t.equal(wrong, 0, 'tun0 hides each sampled address but those of 10.8.0.0/24');
  const { node, origins } = importedNode(imported, 'fw');
  const line196 = origins.find((o) => o.line === 196)!;
  const rules = line196.elements.map((id) => node.configuration!.firewall!.elements![id - 1]!);
  t.equal(rules.length, 1, 'line 196 (-i eth1 -s 192.168.0.0/16 -j DROP in raw): one rule');
  t.match(rules[0], { action: 'DENY', source: '192.168.0.0/16', destination: '*' });
  t.same(
    rules[0]!.except!.map((x) => x.source),
    [
      '192.168.10.0/23',
      '192.168.12.0/23',
      '192.168.14.0/24',
      '192.168.19.0/24',
      '192.168.20.0/22',
      '192.168.24.0/24',
      '192.168.50.0/24',
    ],
    'less the LANs (adjacent ones as one prefix), which come in by their own interfaces',
  );
});

t.test(
  'the home router with --iface eth1=0.0.0.0/0 beside the LANs: read as its routes, by longest prefix',
  async (t) => {
    const text = await readFile(HOME, 'utf8');
    const lans = [10, 11, 12, 13, 14, 19, 20, 21, 22, 23, 24, 50];
    const routes = [
      'default via 203.0.113.1 dev eth1',
      '10.8.0.0/24 dev tun0',
      ...lans.map((v) => `192.168.${v}.0/24 dev eth0.${v}`),
    ].join('\n');
    const given = ['eth1=0.0.0.0/0', 'tun0=10.8.0.0/24', ...lans.map((v) => `eth0.${v}=192.168.${v}.0/24`)];
    const read = (iface: Map<string, string[]>) =>
      importRules('iptables', text, 'home-user.rules', { natAddress: 'eth1=8.8.8.8,tun0=10.8.0.1', iface });
    const [listed, routed] = [read(interfaceMap(given)), read(routeMap(routes, 'home.routes'))];
    t.same(listed.report.counts, routed.report.counts);
    const [a, b] = [importedNode(listed, 'fw'), importedNode(routed, 'fw')];
    t.equal(a.node.configuration!.firewall!.elements!.length, 1364, '1,364 nfv rules, as with the routes');
    t.equal(JSON.stringify(a), JSON.stringify(b), 'the same firewall node, byte for byte');
    // Raw line 196 (-i eth1 -s 192.168.0.0/16 -j DROP): the LANs come in by their own interfaces, not eth1.
    const line196 = a.origins.find((o) => o.line === 196)!;
    const rule = a.node.configuration!.firewall!.elements![line196.elements[0]! - 1]!;
    t.equal(line196.elements.length, 1);
    t.equal(rule.except?.length, 7, 'line 196 drops 192.168.0.0/16 less the seven LAN prefixes');
    const sorted = (i: typeof listed) =>
      importedNats(i).map((n) => [n.name, [...n.configuration!.nat!.source!].sort()]);
    t.same(sorted(listed), sorted(routed), 'the NAT nodes hide the same patterns');
  },
);
