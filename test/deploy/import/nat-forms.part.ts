/**
 * Routers in the forms the routes make exact (issue 47, item 1; docs/SEMANTICS.md, "Port forwards and
 * masquerading"): MASQUERADE `-o` the outside without `-s`, DNAT with `-s`, without `-d`, with `-d` another address,
 * with `--ctstate NEW`, `-i` the outside. The kernel decides each packet (nat-harness.ts, nat-probe.py) as nfv's
 * model does, on generated routers and on the two real routers these forms made importable.
 */
import t from 'tap';
import { fixture } from '../../helpers.js';
import { generator, kernelCheck, kernelWhy, routerFile, type Router, type Sent } from './nat-harness.js';

if (process.env.CI === 'true' && kernelWhy) t.fail(`${kernelWhy}; .ci/run must provide it`);

/**
 * A generated router in the forms the routes make exact (issue 47 item 1): MASQUERADE or SNAT `-o wan` without
 * `-s` (the hidden side: what routes out of lan), DNAT lines with `-s`, without `-d` (any address arriving on wan,
 * the jump's `-i wan` included), with `-d` an inside address, with `-m conntrack --ctstate NEW`, and with `-d N`.
 * Every inside network is hidden, so `-i wan` is the outside exactly: no packet is documented apart.
 */
function formsRouter(seed: number, count: number): Router {
  const { rnd, pick, int } = generator(seed);
  const nat = `203.0.113.${int(1, 254)}`;
  const inside = ['10.1.0.0/16', '192.168.7.0/24'];
  const hostAddress = () => (rnd() < 0.5 ? `10.1.${int(0, 3)}.${int(1, 254)}` : `192.168.7.${int(1, 254)}`);
  const hosts = Array.from({ length: int(2, 4) }, hostAddress);
  const moved = [22, 80, 443, 8080];
  const forwards: { proto: 6 | 17; port: number; dst?: string }[] = [];
  const nats = [':PREROUTING ACCEPT [0:0]', ':INPUT ACCEPT [0:0]', ':OUTPUT ACCEPT [0:0]', ':POSTROUTING ACCEPT [0:0]'];
  nats.push(':PF - [0:0]');
  const pf: string[] = [];
  for (let k = int(3, 7); k > 0; k--) {
    const proto = pick([6, 17] as const);
    const p = proto === 6 ? 'tcp' : 'udp';
    const port = forwards.length && rnd() < 0.3 ? pick(forwards).port : pick([22, 80, 443, 53, int(1, 65000)]);
    const to = rnd() < 0.4 ? `${pick(hosts)}:${pick(moved)}` : pick(hosts);
    const x = rnd();
    if (x < 0.25) {
      forwards.push({ proto, port });
      const source = pick(['45.0.0.0/8', '8.1.0.0/16', '198.2.3.0/24']);
      nats.push(`-A PREROUTING -i wan -s ${source} -p ${p} -m ${p} --dport ${port} -j DNAT --to-destination ${to}`);
    } else if (x < 0.5) {
      forwards.push({ proto, port });
      const ct = rnd() < 0.5 ? '-m conntrack --ctstate NEW ' : '';
      pf.push(`-A PF -p ${p} ${ct}-m ${p} --dport ${port} -j DNAT --to-destination ${to}`);
    } else if (x < 0.75) {
      const dst = pick(hosts);
      forwards.push({ proto, port, dst });
      nats.push(`-A PREROUTING -i wan -d ${dst}/32 -p ${p} --dport ${port} -j DNAT --to-destination ${to}`);
    } else {
      forwards.push({ proto, port, dst: nat });
      pf.push(`-A PF -d ${nat}/32 -p ${p} --dport ${port} -j DNAT --to-destination ${to}`);
    }
  }
  nats.push('-A PREROUTING -i wan -j PF', ...pf);
  nats.push(rnd() < 0.5 ? '-A POSTROUTING -o wan -j MASQUERADE' : `-A POSTROUTING -o wan -j SNAT --to-source ${nat}`);
  const outsideAddress = () => `${pick([8, 45, 198])}.${int(0, 3)}.${int(0, 3)}.${int(1, 254)}`;
  const filter = [
    `:FORWARD ${rnd() < 0.5 ? 'DROP' : 'ACCEPT'} [0:0]`,
    '-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
  ];
  for (let k = int(4, 12); k > 0; k--) {
    const parts = ['-A FORWARD'];
    if (rnd() < 0.3) parts.push(pick(['-i lan', '-i wan', '-o wan', '-o lan']));
    if (rnd() < 0.4) parts.push(`-s ${rnd() < 0.5 ? `${hostAddress()}/32` : pick(['45.0.0.0/8', '10.1.0.0/16'])}`);
    if (rnd() < 0.5) parts.push(`-d ${rnd() < 0.7 ? pick(hosts) : outsideAddress()}/32`);
    if (rnd() < 0.6) parts.push(`-p ${pick(['tcp', 'udp'])} --dport ${pick([...moved, pick(forwards).port])}`);
    parts.push(`-j ${pick(['ACCEPT', 'ACCEPT', 'DROP'])}`);
    filter.push(parts.join(' '));
  }
  const text = routerFile(nats, filter);
  const packets: Sent[] = [];
  while (packets.length < count) {
    const proto = pick([6, 6, 17, 17, 50]);
    const f = pick(forwards);
    const port = () => (rnd() < 0.7 ? f.port : pick([f.port - 1, f.port + 1, 80, int(1, 65535)]));
    const x = rnd();
    const sport = int(1024, 65535);
    if (x < 0.3) packets.push([rnd() < 0.8 ? f.proto : proto, outsideAddress(), nat, sport, port(), 'out']);
    else if (x < 0.55) {
      const to =
        f.dst !== undefined && f.dst !== nat && rnd() < 0.6 ? f.dst : rnd() < 0.5 ? pick(hosts) : hostAddress();
      packets.push([rnd() < 0.8 ? f.proto : proto, outsideAddress(), to, sport, port(), 'out']);
    } else if (x < 0.92) packets.push([proto, hostAddress(), outsideAddress(), sport, port(), 'in']);
    else packets.push([rnd() < 0.8 ? f.proto : proto, hostAddress(), nat, sport, port(), 'in']);
  }
  return {
    file: `forms-${seed}.rules`,
    text,
    wan: 'wan',
    lan: 'lan',
    nat,
    inside,
    iface: [],
    routes: `default dev wan\n${inside.map((p) => `${p} dev lan`).join('\n')}\n`,
    packets,
  };
}

t.test(
  'routers in the new forms: the kernel decides 5,000 packets with their translations as the model does',
  async (t) => {
    if (kernelWhy) return t.skip(kernelWhy);
    let [exact, translated, sent, forwarded] = [0, 0, 0, 0];
    const kinds = { source: false, anyDestination: false, otherDestination: false };
    for (const seed of [11, 12, 13, 14, 15]) {
      const r = formsRouter(seed, 1000);
      const tally = await kernelCheck(t, r);
      t.equal(tally.exact, r.packets.length, `${r.file}: every packet exact`);
      kinds.source ||= tally.forwards.some((f) => f.src !== undefined);
      kinds.anyDestination ||= tally.forwards.some((f) => f.dst === '*');
      kinds.otherDestination ||= tally.forwards.some((f) => f.dst !== undefined && f.dst !== '*');
      [exact, translated, sent, forwarded] = [
        exact + tally.exact,
        translated + tally.translated,
        sent + r.packets.length,
        forwarded + tally.forwarded,
      ];
      t.comment(
        `${r.file}: ${tally.exact} exact (${tally.translated} translated, ${tally.forwarded} by a forward), ` +
          `${tally.forwards.length} forward table entries`,
      );
    }
    t.same(kinds, { source: true, anyDestination: true, otherDestination: true }, 'every new form');
    t.comment(
      `routers in the new forms: ${exact} of ${sent} exact (${translated} translated, ${forwarded} by a forward)`,
    );
    t.ok(forwarded >= 300, 'packets the forward table sends on, and the filter lets through');
    t.ok(translated >= 800, 'forwards and masquerading both seen');
  },
);

/**
 * The two real routers the routes made importable (they masquerade `-o` the outside without `-s`): openvpn.eu's
 * and rlworkman.net's, each with a routing table assumed from its own lines (the corpus gives none): the default
 * route out of the masquerading interface, 192.168.0.0/16 out of the other (openvpn.eu: `-s 192.168.0.0/16 -i
 * eth0 -j ACCEPT`; rlworkman.net: its LAN, unnamed in the file, taken as 192.168.0.0/16).
 */
t.test('the real routers masquerading -o without -s: the kernel decides 2,000 packets as the model does', async (t) => {
  if (kernelWhy) return t.skip(kernelWhy);
  let total = 0;
  for (const [file, wan, lan, seed] of [
    ['openvpn-eu.rules', 'eth1', 'eth0', 21],
    ['rlworkman.rules', 'ppp0', 'eth0', 22],
  ] as const) {
    const text = await fixture(`iptables/real/${file}`);
    const { rnd, pick, int } = generator(seed);
    const nat = '198.51.100.47';
    const inside = () => `192.168.${int(0, 255)}.${int(1, 254)}`;
    const outside = () => `${pick([8, 45, 91, 185])}.${int(0, 255)}.${int(0, 255)}.${int(1, 254)}`;
    const port = () => pick([22, 25, 53, 80, 110, 137, 443, 445, 1080, 2049, 3128, int(1, 65535)]);
    const packets: Sent[] = [];
    while (packets.length < 1000) {
      const proto = pick([6, 6, 17, 17, 50]);
      const x = rnd();
      const sport = int(1024, 65535);
      if (x < 0.15) packets.push([proto, outside(), nat, sport, port(), 'out']);
      else if (x < 0.35) packets.push([proto, outside(), inside(), sport, port(), 'out']);
      else if (x < 0.95) packets.push([proto, inside(), outside(), sport, port(), 'in']);
      else packets.push([proto, inside(), nat, sport, port(), 'in']);
    }
    const tally = await kernelCheck(t, {
      file,
      text,
      wan,
      lan,
      nat,
      inside: ['192.168.0.0/16'],
      iface: [],
      routes: `default dev ${wan}\n192.168.0.0/16 dev ${lan}\n`,
      packets,
    });
    t.same(tally.sources, ['192.168.-1.-1'], `${file}: the NAT node hides what routes out of ${lan}`);
    t.equal(tally.exact, packets.length, `${file}: every packet exact`);
    t.ok(tally.translated >= 100, `${file}: ${tally.translated} translated`);
    t.comment(`${file}: ${tally.exact} exact (${tally.translated} translated)`);
    total += tally.exact;
  }
  t.equal(total, 2000);
});
