/**
 * A NAT node per masqueraded interface, checked by real packets (issue 47, item 1; docs/SEMANTICS.md, "Masquerading
 * out of several interfaces"): a generated router with three sides (wan: the default route; vpn: 10.8.0.0/24; lan:
 * 10.1.0.0/16) masquerading out of wan and vpn, forwarding ports from both, is loaded by iptables-restore into a
 * namespace that is the router (nat-probe.py), and each sampled packet's way out (side and header, or none) is
 * compared with what nfv's model makes of it: the imported filter (first match) and the two NAT nodes as the test
 * reads the semantics (its own code here and in nat-harness.ts, not the engine's).
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { importRules, importedNats, importedNode, interfaceMap } from '../../../src/deploy/import/index.js';
import type { Node } from '../../../src/model/types.js';
import { scratch } from '../../helpers.js';
import {
  generator,
  inPrefix,
  inSome,
  kernelWhy,
  nfvVerdict,
  octets,
  probeKernel,
  routerFile,
  tableSends,
  type Forward,
  type Sent,
} from './nat-harness.js';

if (process.env.CI === 'true' && kernelWhy) t.fail(`${kernelWhy}; .ci/run must provide it`);

type Side = 'wan' | 'vpn' | 'lan';
/** A packet as sent: protocol, source, destination, ports, and the side it comes in by. */
type Sent3 = [number, string, string, number, number, Side];
type Seen3 = [Side, string, string, number, number] | null;

const VPN = '10.8.0.0/24';
const LAN = '10.1.0.0/16';

interface Router3 {
  file: string;
  text: string;
  addresses: { wan: string; vpn: string };
  packets: Sent3[];
}

/**
 * `extra`: filter lines put first (the interface lines of the second test); the generator draws as without them, so
 * the first test's routers are the same.
 */
function router3(seed: number, count: number, extra: string[] = []): Router3 {
  const { rnd, pick, int } = generator(seed);
  const addresses = { wan: `203.0.113.${int(1, 254)}`, vpn: '10.8.0.1' };
  const hosts = Array.from({ length: 4 }, (_, k) => `10.1.${k}.${int(2, 250)}`);
  const ports = [22, 53, 80, 443, 8080];
  const nats = [':PREROUTING ACCEPT [0:0]', ':INPUT ACCEPT [0:0]', ':OUTPUT ACCEPT [0:0]', ':POSTROUTING ACCEPT [0:0]'];
  for (let k = int(2, 5); k > 0; k--) {
    const side = rnd() < 0.7 ? 'wan' : 'vpn';
    const proto = pick(['tcp', 'udp']);
    const moved = rnd() < 0.4 ? `:${pick(ports)}` : '';
    nats.push(
      `-A PREROUTING -i ${side} -d ${addresses[side]}/32 -p ${proto} -m ${proto} --dport ${pick([...ports, 2222])} ` +
        `-j DNAT --to-destination ${pick(hosts)}${moved}`,
    );
  }
  if (rnd() < 0.5) nats.push('-A POSTROUTING -o vpn -p tcp -j MASQUERADE --to-ports 1024-65535');
  nats.push('-A POSTROUTING -o vpn -j MASQUERADE');
  nats.push(
    rnd() < 0.5 ? '-A POSTROUTING -o wan -j MASQUERADE' : `-A POSTROUTING -o wan -j SNAT --to-source ${addresses.wan}`,
  );
  const filter = [':FORWARD DROP [0:0]', ...extra];
  const prefixes = ['10.1.0.0/24', '10.1.1.0/24', '10.1.2.0/24', VPN, '8.0.0.0/8', '45.0.0.0/8'];
  for (let k = int(3, 7); k > 0; k--) {
    const proto = pick(['tcp', 'udp']);
    const where = rnd() < 0.5 ? `-s ${pick(prefixes)}` : `-d ${pick(prefixes)}`;
    filter.push(`-A FORWARD ${where} -p ${proto} -m ${proto} --dport ${pick(ports)} -j ${pick(['ACCEPT', 'DROP'])}`);
  }
  filter.push(
    `-A FORWARD -s ${LAN} -j ACCEPT`,
    `-A FORWARD -s ${VPN} -p tcp -j ACCEPT`,
    `-A FORWARD -d ${LAN} -j ACCEPT`,
  );
  const of: Record<Side, () => string> = {
    wan: () => `${pick([8, 45, 91])}.${int(0, 255)}.${int(0, 255)}.${int(1, 254)}`,
    vpn: () => `10.8.0.${int(2, 254)}`,
    lan: () => (rnd() < 0.5 ? pick(hosts) : `10.1.${int(0, 3)}.${int(2, 250)}`),
  };
  const port = () => (rnd() < 0.8 ? pick([...ports, 2222]) : int(1, 65535));
  const packets: Sent3[] = [];
  while (packets.length < count) {
    const side = pick<Side>(['wan', 'wan', 'vpn', 'lan']);
    const to =
      rnd() < 0.3
        ? pick([addresses.wan, addresses.vpn])
        : of[pick((['wan', 'vpn', 'lan'] as Side[]).filter((s) => s !== side))]();
    packets.push([pick([6, 6, 17, 17, 50]), of[side](), to, int(1024, 65535), port(), side]);
  }
  return { file: `three-sides-${seed}.rules`, text: routerFile(nats, filter), addresses, packets };
}

/** Where the router sends a destination: its routes (vpn's /24, lan's /16, else the default out of wan). */
const route = (a: string): Side => (inPrefix(a, VPN) ? 'vpn' : inPrefix(a, LAN) ? 'lan' : 'wan');

interface NatSide {
  address: string;
  sources: string[];
  forwards: Forward[];
}

/**
 * The model's answer (docs/SEMANTICS.md, as the test reads it): the NAT node of the side the packet comes by (its
 * forward table for what comes from outside what it hides; to its address otherwise: delivered there), the filter,
 * then the NAT node of the side it leaves by (a source it hides, to a destination it does not, becomes its address).
 */
function model(node: Node, nats: Partial<Record<Side, NatSide>>, p: Sent3): Seen3 {
  const [proto, src, dst, sport, dport, side] = p;
  const hides = (n: NatSide, a: string) => inSome(a, n.sources);
  let [to, port] = [dst, dport];
  const first = nats[side];
  if (first && !hides(first, src)) {
    const sent = tableSends(first.forwards, first.address, [proto, src, dst, sport, dport, 'out'] as Sent);
    if (sent) [to, port] = sent;
    else if (dst === first.address) return null;
  } else if (first && dst === first.address) return null;
  // To another NAT node's address: that node hides the source (every other side), so it is delivered there.
  if (Object.values(nats).some((n) => n.address === to)) return null;
  if (!nfvVerdict(node, { proto, src: octets(src), dst: octets(to), sport, dport: port })) return null;
  const out = route(to);
  const last = nats[out];
  const from = last && hides(last, src) && !hides(last, to) ? last.address : src;
  return [out, from, to, sport, port];
}

const GIVEN = ['wan=0.0.0.0/0', `vpn=${VPN}`, `lan=${LAN}`];

/** The two NAT nodes as the model's answer reads them. */
function natSides(t: Tap, imported: ReturnType<typeof importRules>, r: Router3): Partial<Record<Side, NatSide>> {
  const made = importedNats(imported);
  const nats: Partial<Record<Side, NatSide>> = {};
  (['wan', 'vpn'] as const).forEach((s, k) => {
    const c = made[k]!.configuration!.nat!;
    nats[s] = { address: made[k]!.name, sources: c.source ?? [], forwards: c.forward ?? [] };
  });
  t.same(
    made.map((n) => n.name),
    [r.addresses.wan, r.addresses.vpn],
    `${r.file}: a NAT node per interface`,
  );
  return nats;
}

/** The router's packets through the kernel: where each left, and how (nat-probe.py). */
async function kernelSees(t: Tap, r: Router3): Promise<Seen3[]> {
  const dir = await scratch(t, 'nfv-nat3-');
  const load = path.join(dir, r.file);
  await writeFile(load, r.text);
  const sides = [
    { name: 'wan', address: r.addresses.wan, routes: ['0.0.0.0/0'] },
    { name: 'vpn', address: r.addresses.vpn, routes: [VPN] },
    { name: 'lan', routes: [LAN] },
  ];
  return (await probeKernel(t, { sides, load, packets: r.packets }, `${r.file}: `)) as Seen3[];
}

type Tap = Parameters<Parameters<typeof t.test>[1]>[0];

t.test(
  'a router masquerading out of two interfaces: the kernel decides 5,000 packets as the two NAT nodes do',
  async (t) => {
    if (kernelWhy) return t.skip(kernelWhy);
    const iface = interfaceMap(GIVEN);
    let [exact, translated, forwarded, total] = [0, 0, 0, 0];
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = router3(seed, 1000);
      const natAddress = `wan=${r.addresses.wan},vpn=${r.addresses.vpn}`;
      const imported = importRules('iptables', r.text, r.file, { natAddress, iface });
      t.equal(imported.report.counts.refused, 0, `seed ${seed}: nothing refused`);
      const node = importedNode(imported, '10.255.0.1', 'may').node;
      const nats = natSides(t, imported, r);
      const seen = await kernelSees(t, r);
      const wrong: string[] = [];
      r.packets.forEach((p, k) => {
        const expected = model(node, nats, p);
        const got = seen[k] ?? null;
        total++;
        if (JSON.stringify(expected) !== JSON.stringify(got))
          return wrong.push(`${JSON.stringify(p)}: kernel ${JSON.stringify(got)}, model ${JSON.stringify(expected)}`);
        exact++;
        if (got && got[1] !== p[1]) translated++;
        if (got && got[2] !== p[2]) forwarded++;
      });
      t.same(wrong.slice(0, 10), [], `seed ${seed}: the kernel decides each packet as the model does`);
    }
    t.comment(`${exact} of ${total} exact (${translated} sources translated, ${forwarded} forwarded)`);
    t.equal(exact, 5000, 'every packet exact');
    t.ok(translated >= 200 && forwarded >= 50, 'translations and forwards occur');
  },
);

/**
 * Filter lines on the outer interface (wan, the default route) that the inner ones' packets (lan's and vpn's own
 * sources, arriving by lan and vpn) must not match, and lines on the inner ones.
 */
const INTERFACE_LINES = [
  `-A FORWARD -i wan -s ${LAN} -j DROP`,
  '-A FORWARD -i wan -p tcp -m tcp --dport 22 -j DROP',
  '-A FORWARD -i wan -p udp -m udp --dport 53 -j DROP',
  '-A FORWARD -o wan -p tcp -m tcp --dport 443 -j DROP',
  `-A FORWARD -o wan -d ${LAN} -j DROP`,
  '-A FORWARD -i wan -o lan -p tcp -m tcp --dport 8080 -j DROP',
  '-A FORWARD -i vpn -o lan -p udp -j DROP',
  '-A FORWARD -i lan -o vpn -p tcp -m tcp --dport 80 -j DROP',
  '-A FORWARD ! -i wan -p tcp -m tcp --dport 53 -j DROP',
];

t.test(
  '--iface wan=0.0.0.0/0 beside lan and vpn: -i wan and -o wan lines as the kernel sees them, by longest prefix',
  async (t) => {
    if (kernelWhy) return t.skip(kernelWhy);
    const iface = interfaceMap(GIVEN);
    // The lists taken literally (the reading before the longest prefix): -i wan would hold the lan's sources too.
    const literal = new Map(GIVEN.map((g) => [g.split('=')[0]!, [g.split('=')[1]!]]));
    let [exact, inner, literalWrong, total] = [0, 0, 0, 0];
    for (const seed of [11, 12, 13]) {
      const { pick } = generator(seed + 100);
      const extra = [...new Set(Array.from({ length: 5 }, () => pick(INTERFACE_LINES)))];
      const r = router3(seed, 1000, extra);
      const natAddress = `wan=${r.addresses.wan},vpn=${r.addresses.vpn}`;
      const imported = importRules('iptables', r.text, r.file, { natAddress, iface });
      t.equal(imported.report.counts.approximated + imported.report.counts.refused, 0, `seed ${seed}: all exact`);
      const node = importedNode(imported, '10.255.0.1', 'may').node;
      const nats = natSides(t, imported, r);
      const old = importRules('iptables', r.text, r.file, { natAddress, iface: literal });
      const oldNode = importedNode(old, '10.255.0.1', 'may').node;
      const seen = await kernelSees(t, r);
      const wrong: string[] = [];
      r.packets.forEach((p, k) => {
        const got = seen[k] ?? null;
        const expected = model(node, nats, p);
        total++;
        if (p[5] !== 'wan') inner++;
        if (JSON.stringify(model(oldNode, nats, p)) !== JSON.stringify(got)) literalWrong++;
        if (JSON.stringify(expected) !== JSON.stringify(got))
          return wrong.push(`${JSON.stringify(p)}: kernel ${JSON.stringify(got)}, model ${JSON.stringify(expected)}`);
        exact++;
      });
      t.same(wrong.slice(0, 10), [], `seed ${seed} (${extra.length} interface lines): each packet as the kernel`);
    }
    t.comment(`${exact} of ${total} exact (${inner} from lan and vpn); the literal lists: ${literalWrong} wrong`);
    t.equal(exact, 3000, 'every packet exact');
    t.ok(literalWrong >= 50, 'the lists taken literally are wrong on packets of the inner sides: the case is tested');
  },
);
