/**
 * The chair's router (tum-2015-05.rules; issue 47, item 1), refused before for its three SNATs by destination (to
 * its LDAP servers): they import as the NAT node's translate list (docs/SEMANTICS.md, "Translation by
 * destination"), and the kernel, the router's own file loaded, decides 1,000 packets as nfv's model does
 * (nat-harness.ts, nat-probe.py). The file is 4,949 lines: the same net as .taprc gives every file.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { importRules, routeMap } from '../../../src/deploy/import/index.js';
import { fixture } from '../../helpers.js';
import { generator, kernelCheck, kernelWhy, type Sent } from './nat-harness.js';

if (process.env.CI === 'true' && kernelWhy) t.fail(`${kernelWhy}; .ci/run must provide it`);
// Its import, two lists of 10,450 rules per packet and the kernel's load of the file take about 90 s at load 16.
t.setTimeout(1_800_000);

/**
 * The chair's router's fixture, its anonymised MACs taken as the sender's own and its two `-m recent --update` lines
 * of FORWARD left out (see the test below).
 */
async function chair(): Promise<string> {
  return (await fixture('iptables/real/tum-2015-05.rules'))
    .replaceAll(' -m mac --mac-source XX:XX:XX:XX:XX:XX', '')
    .split('\n')
    .filter((l) => !(l.startsWith('-A FORWARD') && l.includes('-m recent --update')))
    .join('\n');
}

t.test('the chair router refused before: its three SNATs by destination import as a translate list', async (t) => {
  const routes = routeMap(await fixture('iptables/real/tum-net-2014-07-25.routes'), 'routes');
  const imported = importRules('iptables', await chair(), 'tum-2015-05.rules', {
    natAddress: '131.159.252.150',
    iface: routes,
  });
  const nat = imported.report.nat!;
  t.same(nat.sources, ['-1.-1.-1.-1']);
  t.same(
    nat.translates.map((e) => `${e.protocol}/${e.dstPort} ${e.dst}`),
    ['42', '43', '44'].flatMap((h) => [`TCP/389 131.159.254.${h}`, `TCP/636 131.159.254.${h}`]),
  );
  // A destination routed out of another interface than the outside is refused: the NAT node is outside the filter.
  const inward = (await chair()).replace('-d 131.159.254.42/32', '-d 131.159.14.7/32');
  t.throws(
    () => importRules('iptables', inward, 'tum.rules', { natAddress: '131.159.252.150', iface: routes }),
    /tum\.rules:37: -j SNAT for -d 131\.159\.14\.7\/32, routed out of eth1\.96, not the outside eth1\.110/,
  );
});

/**
 * The chair's router's own file, changed where no kernel or no model can read it alike, in the file nfv reads and
 * the kernel loads: its 1,641 anonymised `-m mac --mac-source XX:XX:XX:XX:XX:XX` (no MAC the kernel reads) taken as
 * matching (each host sends from its registered MAC), and FORWARD's two `-m recent --update` lines (approximated)
 * left out: here they match nothing in the kernel (no line sets the list DEFAULT; ratessh counts 41 packets of one
 * source from outside, and no two packets from outside share a source). The probe's router has the outside
 * eth1.110 (the default route, N on it) and eth1.96 (131.159.14.0/25) as its inside; packets go between them and
 * to the LDAP servers. eth1.1024, which the routes leave without a prefix, gets TEST-NET-1 (192.0.2.0/24), which no
 * packet uses, so its `-i`/`-o` lines are exact: no packet of the probe's crosses it. A packet the may and must
 * lists decide differently is not compared, and counted. iptables-legacy-restore loads the file: iptables-nft's one
 * message for its 4,949 lines is more than the kernel takes ("Message too long").
 */
t.test('the chair router: the kernel decides 1,000 packets with its SNATs as the model does', async (t) => {
  if (kernelWhy) return t.skip(kernelWhy);
  const legacy = spawnSync('unshare', ['-rn', 'iptables-legacy-restore', '--version'], { encoding: 'utf8' });
  if (legacy.status !== 0) return t.skip(`iptables-legacy-restore in a namespace: ${legacy.stderr.trim()}`);
  const { rnd, pick, int } = generator(47);
  const text = await chair();
  const nat = '131.159.252.150';
  const used = new Set<string>();
  const fresh = (make: () => string) => {
    for (;;) {
      const a = make();
      if (!used.has(a)) return (used.add(a), a);
    }
  };
  // Mostly the hosts the router knows on eth1.96 (its mac_96 lines): the filter lets few others out.
  const known = [...text.matchAll(/^-A mac_96 -s (131\.159\.14\.\d+)\/32 -j RETURN$/gm)].map((m) => m[1]!);
  const inside = () => (rnd() < 0.7 && known.length ? pick(known) : `131.159.14.${int(1, 126)}`);
  const outside = () => fresh(() => `${pick([8, 45, 91])}.${int(0, 255)}.${int(0, 255)}.${int(1, 254)}`);
  const ldap = () => `131.159.254.${int(41, 45)}`;
  const port = () => (rnd() < 0.8 ? pick([22, 53, 80, 389, 443, 636]) : int(1, 65535));
  const packets: Sent[] = [];
  while (packets.length < 1000) {
    const proto = pick([6, 6, 17, 17, 50]);
    const x = rnd();
    const sport = int(1024, 65535);
    // To the LDAP servers mostly LDAP's own ports over TCP, which the three lines translate (and .41, .45 not).
    if (x < 0.45) packets.push([pick([6, 6, 6, proto]), inside(), ldap(), sport, pick([389, 636, port()]), 'in']);
    else if (x < 0.6) packets.push([proto, inside(), outside(), sport, port(), 'in']);
    else if (x < 0.65) packets.push([proto, inside(), nat, sport, port(), 'in']);
    else if (x < 0.95) packets.push([proto, outside(), `131.159.14.${int(1, 126)}`, sport, port(), 'out']);
    else packets.push([proto, outside(), nat, sport, port(), 'out']);
  }
  const tally = await kernelCheck(t, {
    file: 'tum-2015-05.rules',
    text,
    wan: 'eth1.110',
    lan: 'eth1.96',
    nat,
    inside: ['131.159.14.0/25'],
    iface: [],
    routes: `${await fixture('iptables/real/tum-net-2014-07-25.routes')}192.0.2.0/24 dev eth1.1024\n`,
    packets,
    approximated: true,
    legacy: true,
  });
  t.equal(tally.exact + tally.uncertain, packets.length, 'every packet compared is exact');
  t.ok(tally.translated >= 100, `${tally.translated} translated`);
  t.comment(`${tally.exact} exact (${tally.translated} translated), ${tally.uncertain} decided by approximated lines`);
});
