/**
 * Routers with port forwards (issue 47, item 1; docs/SEMANTICS.md, "Port forwards and masquerading"): `--nat-address`
 * reads a router's DNAT, SNAT and MASQUERADE lines as a NAT node outside its firewall, and refuses, naming the line,
 * what that node cannot say. The evaluator is the kernel: in `unshare -rn`, the router's own iptables-save file is
 * loaded by iptables-restore into a namespace that is the router (nat-probe.py), real packets are sent through it,
 * and what leaves on the other side (header as translated, or nothing) is compared with what nfv's model makes of
 * the same packet: the imported filter (first match) and the NAT node (engine.md B 2.6.2: from outside to N, to the
 * hidden host; from a hidden source to outside, source N). The port forward each packet meets is the test's own
 * reading of the lines it wrote (or, for the real dump, of its one DNAT line), not nfv's. The two places the model
 * is documented to be broader than the kernel are counted apart, and the kernel's side of them checked: a packet
 * to N that no DNAT line matches (the kernel delivers it to the router itself) and, for a DNAT line without `-d`,
 * a packet to another address that the line matches (the kernel translates it; nfv reads the line as to N).
 */
import t from 'tap';
import { importRules, interfaceMap, routeMap } from '../../../src/deploy/import/index.js';
import { NfvError } from '../../../src/model/errors.js';
import { fixture } from '../../helpers.js';
import {
  generator,
  inPrefix,
  kernelCheck,
  kernelWhy,
  onlyNat,
  routerFile,
  type Router,
  type Sent,
} from './nat-harness.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './nat-forms.part.js';
import './nat-by-destination.part.js';
import './nat-chair.part.js';
import './nat-interfaces-kernel.part.js';
import './nat-home-kernel.part.js';

if (process.env.CI === 'true' && kernelWhy) t.fail(`${kernelWhy}; .ci/run must provide it`);

const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    if (e instanceof NfvError) return e.message;
    throw e;
  }
  return '';
};

// ---------------------------------------------------------------------------------------------------------------
// What the import says and refuses

const router = (nat: string, filter = '') =>
  `*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n${nat}COMMIT\n` +
  `*filter\n:FORWARD DROP [0:0]\n${filter}COMMIT\n`;

t.test('the real dump: refused without --nat-address, a NAT node with it', async (t) => {
  const text = await fixture('iptables/real/medium-sized-company.rules');
  t.match(
    refusal(() => importRules('iptables', text, 'msc.rules')),
    /^msc\.rules:30: -j DNAT in table nat PREROUTING .*--nat-address.*--ignore-nat/,
  );
  const imported = importRules('iptables', text, 'msc.rules', {
    natAddress: '203.0.113.7',
    iface: interfaceMap(['eth0=172.16.2.0/24']),
  });
  t.same(imported.report.nat?.sources, ['172.16.2.-1']);
  t.same(onlyNat(imported), {
    name: '203.0.113.7',
    functionalType: 'NAT',
    configuration: {
      name: 'iptables msc.rules nat',
      // No -d: to any address (the kernel translates what arrives on ppp0 with port 4081, whatever its address).
      nat: {
        source: ['172.16.2.-1'],
        forward: [{ protocol: 'TCP', dst: '*', dstPort: '4081', to: '172.16.2.34' }],
      },
    },
  });
  const line = (n: number) => imported.report.lines.find((l) => l.line === n)!;
  t.match(
    line(30).reason,
    /port forward of tcp port 4081 \(to any address\) to 172\.16\.2\.34: .*not only those of this line \(-i ppp0\)/,
  );
  t.match(line(31).reason, /masquerade as 203\.0\.113\.7 .*hides 172\.16\.2\.0\/24.*\(-o ppp0\)/);
});

t.test('what the NAT node cannot say is refused, naming the line', async (t) => {
  const cases: [string, RegExp][] = [
    [
      '-A PREROUTING -p tcp --dport 80 -j DNAT --to-destination 10.0.0.5-10.0.0.9\n',
      /r:4: --to-destination 10\.0\.0\.5-10\.0\.0\.9: .*one address/,
    ],
    [
      '-A PREROUTING -p tcp --dport 80:90 -j DNAT --to-destination 10.0.0.5:85-95\n',
      /r:4: --to-destination 10\.0\.0\.5:85-95: a port range the line's ports are not all in/,
    ],
    ['-A PREROUTING -p tcp ! --dport 80 -j DNAT --to-destination 10.0.0.5\n', /r:4: ! --dport: /],
    ['-A PREROUTING -j DNAT --to-destination 10.0.0.5:80\n', /r:4: .*a port for packets without one/],
    ['-A PREROUTING -j NETMAP --to 10.0.0.0/24\n', /r:4: -j NETMAP maps networks/],
    [
      '-A PREROUTING ! -d 198.51.100.9/32 -p tcp --dport 80 -j DNAT --to-destination 10.0.0.5\n',
      /r:4: -j DNAT for ! -d 198\.51\.100\.9\/32: the forward table names the destinations it takes/,
    ],
    [
      '-A PREROUTING ! -s 198.51.100.0/24 -p tcp --dport 80 -j DNAT --to-destination 10.0.0.5\n',
      /r:4: -j DNAT for ! -s 198\.51\.100\.0\/24: the forward table names the sources it takes/,
    ],
    ['-A PREROUTING -p tcp --dport 80 -j REDIRECT\n', /r:4: -j REDIRECT without -d: only packets to 203\.0\.113\.1/],
    [
      '-A PREROUTING -d 203.0.113.1 -s 198.51.100.0/24 -p tcp --dport 80 -j REDIRECT\n',
      /r:4: -j REDIRECT for -s 198\.51\.100\.0\/24: /,
    ],
    [
      '-A PREROUTING -d 203.0.113.1 -p tcp --dport 80:90 -j REDIRECT\n' +
        '-A PREROUTING -p tcp --dport 85 -j DNAT --to-destination 10.0.0.5\n',
      /r:5: an earlier REDIRECT \(r:4\) takes some of its packets/,
    ],
    [
      '-A POSTROUTING ! -d 198.51.100.0/24 -j SNAT --to-source 203.0.113.1\n',
      /r:4: -j SNAT without -s or -o \(for -d !/,
    ],
    // By destination (the translate list) beside a translation of every destination, or beside a port forward.
    [
      '-A POSTROUTING -d 198.51.100.0/24 -j SNAT --to-source 203.0.113.1\n-A POSTROUTING -s 10.0.0.0/8 -j MASQUERADE\n',
      /r:4: -j SNAT for -d 198\.51\.100\.0\/24 only, beside r:5's translation of every destination/,
    ],
    [
      '-A PREROUTING -p tcp --dport 80 -j DNAT --to-destination 10.0.0.5\n' +
        '-A POSTROUTING -d 198.51.100.0/24 -j SNAT --to-source 203.0.113.1\n',
      /r:5: -j SNAT for -d 198\.51\.100\.0\/24 only, beside the port forward r:4/,
    ],
    ['-A POSTROUTING -s 10.0.0.0/8 -j SNAT --to-source 198.51.100.2\n', /r:4: -j SNAT --to-source 198\.51\.100\.2/],
    [
      '-A POSTROUTING -s 10.0.0.0/8 -p tcp -j MASQUERADE --to-ports 5000\n',
      /r:4: --to-ports 5000: the kernel moves source ports/,
    ],
    ['-A POSTROUTING -o eth0 -j MASQUERADE\n', /r:4: -j MASQUERADE -o eth0 without -s: .*give --routes FILE/],
  ];
  for (const [nat, expected] of cases)
    t.match(
      refusal(() => importRules('iptables', router(nat), 'r', { natAddress: '203.0.113.1' })),
      expected,
      nat,
    );
  t.match(
    refusal(() => importRules('iptables', router(''), 'r', { natAddress: '203.0.113.1' })),
    /^natAddress: no DNAT, SNAT or MASQUERADE line is reached/,
  );
  t.match(
    refusal(() => importRules('iptables', router(''), 'r', { natAddress: '203.0.113.1', ignoreNat: true })),
    /^natAddress: .*give one/,
  );
  // Several hosts, ports moved, a REDIRECT taking ports first, shadowed lines: the forward table, first match.
  const table = importRules(
    'iptables',
    router(
      '-A PREROUTING -d 203.0.113.1/32 -p tcp --dport 8000:8100 -j REDIRECT --to-ports 3128\n' +
        '-A PREROUTING -d 203.0.113.1/32 -p tcp -m multiport --dports 22,7000:8050 -j DNAT --to-destination 10.0.0.6\n' +
        '-A PREROUTING -d 203.0.113.1/32 -p tcp --dport 80 -j DNAT --to-destination 10.0.0.5:8080\n' +
        '-A PREROUTING -d 203.0.113.1/32 -p tcp --dport 80 -j DNAT --to-destination 10.0.0.7\n' +
        '-A PREROUTING -d 203.0.113.1/32 -p udp --dport 53 -j DNAT --to-destination 10.0.0.7\n' +
        '-A PREROUTING -d 203.0.113.1/32 -p tcp --dport 8000:8200 -j DNAT --to-destination 10.0.0.8:8000-8200\n',
    ),
    'r',
    { natAddress: '203.0.113.1' },
  );
  t.same(onlyNat(table)!.configuration!.nat, {
    forward: [
      { protocol: 'TCP', dstPort: '22', to: '10.0.0.6' },
      { protocol: 'TCP', dstPort: '7000-7999', to: '10.0.0.6' },
      { protocol: 'TCP', dstPort: '80', to: '10.0.0.5', toPort: '8080' },
      { protocol: 'UDP', dstPort: '53', to: '10.0.0.7' },
      { protocol: 'TCP', dstPort: '8101-8200', to: '10.0.0.8' },
    ],
  });
  const said = (n: number) => table.report.lines.find((l) => l.line === n)!.reason;
  t.match(said(4), /^redirect of tcp port 8000-8100: delivered to the router itself/);
  t.match(said(7), /^port forward of tcp port 80 to 10\.0\.0\.7 \(every packet of it taken by earlier lines\)/);
  // A /28 is 16 addresses, a /20 16 patterns with a wildcard octet.
  const hidden = importRules('iptables', router('-A POSTROUTING -s 10.9.16.0/20 -o wan -j MASQUERADE\n'), 'r', {
    natAddress: '203.0.113.1',
  }).report.nat!.sources;
  t.same(
    hidden,
    Array.from({ length: 16 }, (_, k) => `10.9.${16 + k}.-1`),
  );
});

t.test('with the routes: MASQUERADE -o without -s, DNAT -i, -s, without -d, --ctstate NEW', async (t) => {
  const routes = routeMap('default dev wan\n10.1.0.0/16 dev lan\n192.168.7.0/24 dev dmz\n', 'routes');
  const read = (nat: string) => importRules('iptables', router(nat), 'r', { natAddress: '203.0.113.1', iface: routes });
  const imported = read(
    '-A PREROUTING -i wan -s 198.51.100.0/24 -p tcp --dport 22 -j DNAT --to-destination 10.1.0.9\n' +
      '-A PREROUTING -i wan -p tcp -m conntrack --ctstate NEW --dport 22 -j DNAT --to-destination 10.1.0.5\n' +
      '-A PREROUTING -i wan -d 198.51.100.77 -p udp --dport 53 -j DNAT --to-destination 192.168.7.53\n' +
      '-A PREROUTING -d 203.0.113.1/32 -p tcp --dport 443 -j DNAT --to-destination 10.1.0.5\n' +
      '-A POSTROUTING -o wan -j MASQUERADE\n',
  );
  t.same(onlyNat(imported)!.configuration!.nat, {
    source: ['192.168.7.-1', '10.1.-1.-1'],
    forward: [
      { protocol: 'TCP', src: '198.51.100.0/24', dst: '*', dstPort: '22', to: '10.1.0.9' },
      { protocol: 'TCP', dst: '*', dstPort: '22', to: '10.1.0.5' },
      { protocol: 'UDP', dst: '198.51.100.77', dstPort: '53', to: '192.168.7.53' },
      { protocol: 'TCP', dstPort: '443', to: '10.1.0.5' },
    ],
  });
  const said = (n: number) => imported.report.lines.find((l) => l.line === n)!.reason;
  // -i wan is the outside exactly (every other interface's addresses are hidden), and NEW is every nat packet.
  t.match(said(4), /^port forward of tcp port 22 \(from 198\.51\.100\.0\/24, to any address\) to 10\.1\.0\.9: [^(]*$/);
  t.match(said(5), /^port forward of tcp port 22 \(to any address\) to 10\.1\.0\.5: [^(]*$/);
  t.match(said(7), /no -i: packets from the hidden side are not forwarded in the model/);
  t.match(said(8), /^masquerade as 203\.0\.113\.1 .*every packet leaving by wan; .*dmz 192\.168\.7\.0\/24; lan 10\.1/);
  // A side not hidden: -i wan is no longer exact, and says so.
  const partly = read(
    '-A PREROUTING -i wan -p tcp --dport 22 -j DNAT --to-destination 10.1.0.5\n' +
      '-A POSTROUTING -s 10.1.0.0/16 -o wan -j MASQUERADE\n',
  );
  t.match(partly.report.lines.find((l) => l.line === 4)!.reason, /not only those of this line \(-i wan\)/);
  const cases: [string, RegExp][] = [
    [
      '-A PREROUTING -i lan -p tcp --dport 80 -j DNAT --to-destination 10.1.0.5\n',
      /r:4: -i lan: packets from the hidden/,
    ],
    ['-A POSTROUTING -o dmz -j MASQUERADE\n', /r:4: -j MASQUERADE -o dmz: .*routed out of wan: one outside interface/],
    ['-A POSTROUTING -j MASQUERADE\n', /r:4: -j MASQUERADE without -s or -o/],
    ['-A POSTROUTING ! -o lan -j MASQUERADE\n', /r:4: -j MASQUERADE without -s for ! -o lan/],
  ];
  for (const [nat, expected] of cases)
    t.match(
      refusal(() => read(nat)),
      expected,
      nat,
    );
  // A jump's conditions hold for the lines it reaches: -i wan on the jump, -d on the line.
  const jumped = read(
    ':PF - [0:0]\n-A PREROUTING -i wan -j PF\n-A PF -p tcp --dport 80 -j DNAT --to-destination 10.1.0.5\n' +
      '-A POSTROUTING -o wan -j MASQUERADE\n',
  );
  t.same(onlyNat(jumped)!.configuration!.nat!.forward, [{ protocol: 'TCP', dst: '*', dstPort: '80', to: '10.1.0.5' }]);
  t.match(jumped.report.lines.find((l) => l.line === 6)!.reason, /^port forward [^(]*\(to any address\)[^(]*$/);
});

const REAL_NAT = '203.0.113.7';

/** Packets through the real router: its own addresses, those its lines name, and others. */
function realPackets(text: string, count: number): Sent[] {
  const { rnd, pick, int } = generator(47);
  const named = [...new Set(text.match(/\d{1,3}(?:\.\d{1,3}){3}(?=\/32)/g) ?? [])];
  const outsideNamed = named.filter((a) => !inPrefix(a, '172.16.2.0/24'));
  const insideNamed = named.filter((a) => inPrefix(a, '172.16.2.0/24'));
  const outside = () =>
    rnd() < 0.5
      ? pick(outsideNamed)
      : rnd() < 0.3
        ? `192.168.255.${int(1, 254)}`
        : `${pick([8, 45, 91, 151, 185, 212])}.${int(0, 255)}.${int(0, 255)}.${int(1, 254)}`;
  const inside = () => (rnd() < 0.5 ? pick(insideNamed) : `172.16.2.${int(1, 254)}`);
  const port = () => pick([4081, 4081, 4080, 4082, 80, 443, 22, 53, int(1, 65535)]);
  const out: Sent[] = [];
  while (out.length < count) {
    const proto = pick([6, 6, 17]);
    const x = rnd();
    if (x < 0.35)
      out.push(
        rnd() < 0.6
          ? [6, outside(), REAL_NAT, int(1024, 65535), 4081, 'out']
          : [proto, outside(), REAL_NAT, int(1024, 65535), port(), 'out'],
      );
    else if (x < 0.5) out.push([proto, outside(), pick(['172.16.2.34', inside()]), int(1024, 65535), port(), 'out']);
    else if (x < 0.95) out.push([proto, inside(), outside(), int(1024, 65535), port(), 'in']);
    else out.push([proto, inside(), REAL_NAT, int(1024, 65535), port(), 'in']);
  }
  return out;
}

t.test('nft: iifname, oifname and ct state new read as -i, -o and --ctstate NEW', async (t) => {
  const chain = (table: string, name: string, type: string, hook: string) => ({
    chain: { family: 'ip', table, name, handle: 1, type, hook, prio: 0, policy: 'accept' },
  });
  const rule = (table: string, name: string, handle: number, expr: unknown[]) => ({
    rule: { family: 'ip', table, chain: name, handle, expr },
  });
  const meta = (key: string, right: string) => ({ match: { op: '==', left: { meta: { key } }, right } });
  const listing = {
    nftables: [
      { table: { family: 'ip', name: 'nat', handle: 1 } },
      chain('nat', 'pre', 'nat', 'prerouting'),
      chain('nat', 'post', 'nat', 'postrouting'),
      { table: { family: 'ip', name: 'filter', handle: 2 } },
      chain('filter', 'forward', 'filter', 'forward'),
      rule('nat', 'pre', 3, [
        meta('iifname', 'wan'),
        { match: { op: 'in', left: { ct: { key: 'state' } }, right: 'new' } },
        { match: { op: '==', left: { payload: { protocol: 'tcp', field: 'dport' } }, right: 80 } },
        { dnat: { addr: '10.1.0.5' } },
      ]),
      rule('nat', 'post', 4, [meta('oifname', 'wan'), { masquerade: null }]),
    ],
  };
  const imported = importRules('nftables', JSON.stringify(listing), 'r.json', {
    natAddress: '203.0.113.1',
    iface: routeMap('default dev wan\n10.1.0.0/16 dev lan\n', 'routes'),
  });
  t.same(onlyNat(imported)!.configuration!.nat, {
    source: ['10.1.-1.-1'],
    forward: [{ protocol: 'TCP', dst: '*', dstPort: '80', to: '10.1.0.5' }],
  });
  // Exact: -i wan is the outside, and every other side is hidden.
  t.notMatch(imported.report.notes.join('\n'), /not only those of this line/);
});

t.test('the real dump: the kernel decides 3,000 packets with their translations as the model does', async (t) => {
  if (kernelWhy) return t.skip(kernelWhy);
  const text = await fixture('iptables/real/medium-sized-company.rules');
  const tally = await kernelCheck(t, {
    file: 'medium-sized-company.rules',
    text,
    wan: 'ppp0',
    lan: 'eth0',
    nat: REAL_NAT,
    inside: ['172.16.2.0/24'],
    iface: ['eth0=172.16.2.0/24'],
    // ppp0 is not mapped: -i ppp0 is read as from outside what the NAT hides.
    insideForwarded: true,
    packets: realPackets(text, 3000),
  });
  t.ok(tally.exact >= 2500, `${tally.exact} packets as the model says (${tally.translated} of them translated)`);
  t.ok(tally.translated >= 200, 'port forwards and masquerading both seen');
  t.comment(
    `medium-sized-company: ${tally.exact} exact (${tally.translated} translated, ${tally.forwarded} by a forward), ` +
      `${tally.inside} from inside to N`,
  );
});

/**
 * The second public dump with port forwards: a Docker and Rancher host (pastebin.rules), forwards of four ports to
 * two hosts, one moved (13001 to 8080), the Docker chain's own forwards of the same ports shadowed, MASQUERADE with
 * `--to-ports 1024-65535` (the probe's source ports are in the range). Its inside: docker0, both container networks.
 */
t.test(
  'the Docker host dump: the kernel decides 2,000 packets with their translations as the model does',
  async (t) => {
    if (kernelWhy) return t.skip(kernelWhy);
    const text = await fixture('iptables/real/pastebin.rules');
    const { rnd, pick, int } = generator(4747);
    const nat = '198.51.100.47';
    const inside = () =>
      pick([
        '10.42.125.17',
        '10.42.165.214',
        '172.17.0.1',
        `10.42.${int(0, 255)}.${int(1, 254)}`,
        `172.17.0.${int(2, 254)}`,
      ]);
    const outside = () => pick(['213.1.221.154', `${pick([8, 45, 91])}.${int(0, 255)}.${int(0, 255)}.${int(1, 254)}`]);
    const port = () => pick([4500, 500, 13001, 50001, 8080, 13000, 13002, 22, int(1, 65535)]);
    const packets: Sent[] = [];
    while (packets.length < 2000) {
      const proto = pick([6, 6, 17, 17, 50]);
      const x = rnd();
      if (x < 0.4) {
        const forward = pick<[number, number]>([
          [17, 4500],
          [17, 500],
          [6, 13001],
          [6, 50001],
          [proto, port()],
        ]);
        packets.push([forward[0], outside(), nat, int(1024, 65535), forward[1], 'out']);
      } else if (x < 0.55) packets.push([proto, outside(), inside(), int(1024, 65535), port(), 'out']);
      else if (x < 0.95) packets.push([proto, inside(), outside(), int(1024, 65535), port(), 'in']);
      else packets.push([proto, inside(), nat, int(1024, 65535), port(), 'in']);
    }
    const tally = await kernelCheck(t, {
      file: 'pastebin.rules',
      text,
      wan: 'eth0',
      lan: 'docker0',
      nat,
      inside: ['172.17.0.0/16', '10.42.0.0/16'],
      iface: ['docker0=172.17.0.0/16,10.42.0.0/16'],
      insideForwarded: true,
      // Its DNAT lines have no -d but -m addrtype --dst-type LOCAL: the router's own addresses, which the probe never
      // sends to but N.
      packets,
    });
    t.same(tally.forwards, [
      { protocol: 'UDP', dstPort: '4500', to: '10.42.125.17', toPort: '4500' },
      { protocol: 'UDP', dstPort: '500', to: '10.42.125.17', toPort: '500' },
      { protocol: 'TCP', dstPort: '13001', to: '10.42.165.214', toPort: '8080' },
      { protocol: 'TCP', dstPort: '50001', to: '10.42.165.214', toPort: '50001' },
    ]);
    t.equal(tally.exact + tally.inside, packets.length, 'every packet exact or documented');
    t.ok(tally.translated >= 300, `${tally.translated} translated`);
    t.comment(
      `pastebin: ${tally.exact} exact (${tally.translated} translated, ${tally.forwarded} by a forward), ` +
        `${tally.inside} from inside to N`,
    );
  },
);

/**
 * A generated router: forwards to several hosts (some through a user chain), single ports moved to others, port
 * ranges and multiport lists, a REDIRECT that takes ports before later lines, lines that shadow each other,
 * masquerading or SNAT of some inside networks (a forwarded host not always among them), a filter.
 */
function generatedRouter(seed: number, count: number): Router {
  const { rnd, pick, int } = generator(seed);
  const nat = `203.0.113.${int(1, 254)}`;
  const inside = ['10.1.0.0/16', '192.168.7.0/24'];
  const hostAddress = () => (rnd() < 0.5 ? `10.1.${int(0, 3)}.${int(1, 254)}` : `192.168.7.${int(1, 254)}`);
  const hosts = Array.from({ length: int(1, 3) }, hostAddress);
  const forwards: { proto: 6 | 17; lo: number; hi: number; toPort?: number }[] = [];
  const nats: string[] = [':PREROUTING ACCEPT [0:0]', ':INPUT ACCEPT [0:0]', ':OUTPUT ACCEPT [0:0]'];
  nats.push(':POSTROUTING ACCEPT [0:0]', ':PF - [0:0]', '-A PREROUTING -i wan -j PF');
  const chain = () => (rnd() < 0.5 ? 'PF' : 'PREROUTING -i wan');
  if (rnd() < 0.5) {
    const lo = pick([80, 443, 8000, int(1, 65000)]);
    const hi = lo + int(0, 20);
    forwards.push({ proto: 6, lo, hi });
    nats.push(`-A PF -d ${nat}/32 -p tcp --dport ${lo}:${hi} -j REDIRECT --to-ports 3128`);
  }
  for (let k = int(2, 6); k > 0; k--) {
    const proto = pick([6, 17] as const);
    const p = proto === 6 ? 'tcp' : 'udp';
    const host = pick(hosts);
    const lo = rnd() < 0.3 && forwards.length ? pick(forwards).lo : pick([22, 80, 443, 3389, 8080, int(1, 65000)]);
    const x = rnd();
    if (x < 0.45) {
      const moved = rnd() < 0.6 ? pick([22, 80, 443, 8080, int(1, 65535)]) : undefined;
      forwards.push({ proto, lo, hi: lo, ...(moved === undefined ? {} : { toPort: moved }) });
      const to = moved === undefined ? host : `${host}:${moved}`;
      nats.push(`-A ${chain()} -d ${nat}/32 -p ${p} -m ${p} --dport ${lo} -j DNAT --to-destination ${to}`);
    } else if (x < 0.75) {
      const hi = lo + int(1, 50);
      forwards.push({ proto, lo, hi });
      const to = rnd() < 0.3 ? `${host}:${lo}-${hi + int(0, 5)}` : host;
      nats.push(`-A ${chain()} -d ${nat}/32 -p ${p} --dport ${lo}:${hi} -j DNAT --to-destination ${to}`);
    } else {
      const list = [lo, lo + int(2, 9)];
      for (const q of list) forwards.push({ proto, lo: q, hi: q });
      const to = rnd() < 0.5 ? `${host}:${pick([22, 8443])}` : host;
      nats.push(
        `-A ${chain()} -d ${nat}/32 -p ${p} -m multiport --dports ${list.join(',')} -j DNAT --to-destination ${to}`,
      );
    }
  }
  for (const prefix of inside.filter(() => rnd() < 0.8))
    nats.push(
      rnd() < 0.5
        ? `-A POSTROUTING -s ${prefix} -o wan -j MASQUERADE`
        : `-A POSTROUTING -s ${prefix} -o wan -j SNAT --to-source ${nat}`,
    );
  const insideAddress = () => (rnd() < 0.3 ? pick(hosts) : hostAddress());
  const outsideAddress = () => `${pick([8, 45, 198])}.${int(0, 3)}.${int(0, 3)}.${int(1, 254)}`;
  const where = (a: string) => (rnd() < 0.2 ? `${a.split('.').slice(0, 3).join('.')}.0/24` : `${a}/32`);
  const filter = [
    `:FORWARD ${rnd() < 0.5 ? 'DROP' : 'ACCEPT'} [0:0]`,
    '-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
  ];
  for (let k = int(4, 14); k > 0; k--) {
    const parts = ['-A FORWARD'];
    if (rnd() < 0.5) parts.push(`-s ${where(rnd() < 0.5 ? insideAddress() : outsideAddress())}`);
    if (rnd() < 0.6) parts.push(`-d ${where(rnd() < 0.6 ? insideAddress() : outsideAddress())}`);
    if (rnd() < 0.2) parts.push('-i lan');
    if (rnd() < 0.6) {
      const f = pick(forwards);
      parts.push(`-p ${pick(['tcp', 'udp'])} --dport ${rnd() < 0.6 ? (f.toPort ?? f.lo) : int(1, 65535)}`);
    }
    parts.push(`-j ${pick(['ACCEPT', 'ACCEPT', 'DROP'])}`);
    filter.push(parts.join(' '));
  }
  const text = routerFile(nats, filter);
  const packets: Sent[] = [];
  while (packets.length < count) {
    const proto = pick([6, 6, 17, 17, 50]); // 50: ESP (a GRE or ICMP header of random bytes is invalid to conntrack)
    const f = pick(forwards);
    const port = () => (rnd() < 0.6 ? int(f.lo, f.hi) : pick([f.lo, f.hi, f.lo - 1, f.hi + 1, 80, int(1, 65535)]));
    const x = rnd();
    if (x < 0.45) packets.push([rnd() < 0.8 ? f.proto : proto, outsideAddress(), nat, int(1024, 65535), port(), 'out']);
    else if (x < 0.55) packets.push([proto, outsideAddress(), insideAddress(), int(1024, 65535), port(), 'out']);
    else if (x < 0.92) packets.push([proto, insideAddress(), outsideAddress(), int(1024, 65535), port(), 'in']);
    else packets.push([rnd() < 0.8 ? f.proto : proto, insideAddress(), nat, int(1024, 65535), port(), 'in']);
  }
  return {
    file: `router-${seed}.rules`,
    text,
    wan: 'wan',
    lan: 'lan',
    nat,
    inside,
    iface: [`lan=${inside.join(',')}`],
    insideForwarded: true,
    packets,
  };
}

t.test('generated routers: the kernel decides 5,000 packets with their translations as the model does', async (t) => {
  if (kernelWhy) return t.skip(kernelWhy);
  let [exact, translated, inside, sent, forwarded] = [0, 0, 0, 0, 0];
  const kinds = { hosts: false, moved: false, redirect: false };
  for (const seed of [1, 2, 3, 4, 5]) {
    const r = generatedRouter(seed, 1000);
    const tally = await kernelCheck(t, r);
    forwarded += tally.forwarded;
    kinds.hosts ||= new Set(tally.forwards.map((f) => f.to)).size > 1;
    kinds.moved ||= tally.forwards.some((f) => f.toPort !== undefined && f.toPort !== f.dstPort);
    kinds.redirect ||= r.text.includes('-j REDIRECT');
    t.equal(tally.exact + tally.inside, r.packets.length, `${r.file}: every packet exact or documented`);
    [exact, translated, inside, sent] = [
      exact + tally.exact,
      translated + tally.translated,
      inside + tally.inside,
      sent + r.packets.length,
    ];
    t.comment(
      `${r.file}: ${tally.exact} exact (${tally.translated} translated, ${tally.forwarded} by a forward), ` +
        `${tally.inside} from inside to N ` +
        `(the table does not read -i), ${tally.forwards.length} forward table entries`,
    );
  }
  t.ok(kinds.hosts, 'a router forwards to several hosts');
  t.ok(kinds.moved, 'a forward moves the port');
  t.ok(kinds.redirect, 'a router redirects ports to itself');
  t.comment(
    `generated routers: ${exact} of ${sent} exact (${translated} translated, ${forwarded} by a forward), ` +
      `${inside} from inside to N`,
  );
  t.ok(forwarded >= 300, 'packets the forward table sends on, and the filter lets through');
  t.ok(exact >= 4500, `${exact} packets as the model says, ${translated} of them translated`);
  t.ok(translated >= 500, 'forwards and masquerading both seen');
});

t.test(
  'an nft router: redirect, dnat and masquerade read as one NAT node, and the kernel agrees on 1,000 packets',
  async (t) => {
    if (kernelWhy) return t.skip(kernelWhy);
    const [nat, host, ssh] = ['203.0.113.9', '10.1.0.20', '192.168.7.22'];
    const text = [
      'table ip nat {',
      '\tchain pre {',
      '\t\ttype nat hook prerouting priority dstnat;',
      `\t\tiifname "wan" ip daddr ${nat} tcp dport 8000-8010 redirect to :3128`,
      `\t\tiifname "wan" ip daddr ${nat} tcp dport 443 dnat to ${host}`,
      `\t\tiifname "wan" ip daddr ${nat} tcp dport { 2222, 8005 } dnat to ${ssh}:22`,
      `\t\tiifname "wan" ip daddr ${nat} udp dport 5000-5010 dnat to ${host}`,
      '\t}',
      '\tchain post {',
      '\t\ttype nat hook postrouting priority srcnat;',
      '\t\tip saddr 10.1.0.0/16 oifname "wan" masquerade',
      `\t\tip saddr 192.168.7.0/24 oifname "wan" snat to ${nat}`,
      '\t}',
      '}',
      'table ip filter {',
      '\tchain forward {',
      '\t\ttype filter hook forward priority 0; policy drop;',
      '\t\tct state established,related accept',
      `\t\tip daddr ${host} tcp dport 443 accept`,
      `\t\tip daddr ${host} udp dport 5000-5005 accept`,
      `\t\tip daddr ${ssh} tcp dport 22 accept`,
      '\t\tip saddr 10.1.0.0/16 tcp dport { 80, 443 } accept',
      '\t\tip saddr 192.168.7.0/24 ip daddr 8.0.0.0/8 accept',
      '\t}',
      '}',
      '',
    ].join('\n');
    const { rnd, pick, int } = generator(9);
    const inside = () => pick([host, `10.1.${int(0, 3)}.${int(1, 254)}`, `192.168.7.${int(1, 254)}`]);
    const outside = () => `${pick([8, 45, 198])}.${int(0, 3)}.${int(0, 3)}.${int(1, 254)}`;
    const port = () => pick([443, 80, 5000, 5005, 5006, 5010, 5011, 2222, 8005, 22, int(1, 65535)]);
    const packets: Sent[] = [];
    while (packets.length < 1000) {
      const proto = pick([6, 6, 17, 17, 50]);
      const x = rnd();
      if (x < 0.4) {
        const forward =
          rnd() < 0.6
            ? pick<[number, number]>([
                [6, 443],
                [17, int(5000, 5010)],
                [6, 2222],
                [6, int(7999, 8011)],
              ])
            : [proto, port()];
        packets.push([forward[0], outside(), nat, int(1024, 65535), forward[1], 'out']);
      } else if (x < 0.55) packets.push([proto, outside(), inside(), int(1024, 65535), port(), 'out']);
      else if (x < 0.95) packets.push([proto, inside(), outside(), int(1024, 65535), port(), 'in']);
      else packets.push([proto, inside(), nat, int(1024, 65535), port(), 'in']);
    }
    const tally = await kernelCheck(t, {
      file: 'router.nft',
      nft: true,
      text,
      wan: 'wan',
      lan: 'lan',
      nat,
      inside: ['10.1.0.0/16', '192.168.7.0/24'],
      iface: [],
      insideForwarded: true,
      packets,
    });
    t.same(tally.sources, ['10.1.-1.-1', '192.168.7.-1'], 'the NAT node hides both networks');
    t.same(tally.forwards, [
      { protocol: 'TCP', dstPort: '443', to: host },
      { protocol: 'TCP', dstPort: '2222', to: ssh, toPort: '22' },
      { protocol: 'UDP', dstPort: '5000-5010', to: host },
    ]);
    t.ok(tally.exact >= 800, `${tally.exact} packets as the model says (${tally.translated} translated)`);
    t.ok(tally.translated >= 100, 'forwards and masquerading both seen');
    t.equal(tally.exact + tally.inside, packets.length, 'every packet exact or documented');
    t.comment(
      `router.nft: ${tally.exact} exact (${tally.translated} translated, ${tally.forwarded} by a forward), ` +
        `${tally.inside} from inside to N`,
    );
  },
);
