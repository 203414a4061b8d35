/**
 * SNAT by destination (issue 47, item 1; docs/SEMANTICS.md, "Translation by destination"): `-d X -j SNAT
 * --to-source N` (or MASQUERADE) becomes the NAT node's translate list, which only the packets it takes leave with
 * source N. The kernel decides each packet (nat-harness.ts, nat-probe.py) as nfv's model does, on generated routers
 * (the chair's router, whose only nat lines are three such SNATs: nat-chair.part.ts).
 */
import t from 'tap';
import { generator, kernelCheck, kernelWhy, routerFile, type Router, type Sent } from './nat-harness.js';

if (process.env.CI === 'true' && kernelWhy) t.fail(`${kernelWhy}; .ci/run must provide it`);

/**
 * A generated router: SNAT and MASQUERADE lines each for one outside host or prefix (`-d`, no `-s`), some for a
 * protocol and ports (`--dport`, multiport `--dports`); a filter of first-match
 * lines on the inside networks and ports. Its sides: lan holds 10.1.0.0/16, the default route is out of wan.
 */
function destinationRouter(seed: number, count: number): Router {
  const { rnd, pick, int } = generator(seed);
  const nat = `203.0.113.${int(1, 254)}`;
  const servers = Array.from({ length: 6 }, (_, k) => `198.51.100.${10 + k}`);
  const nats = [':PREROUTING ACCEPT [0:0]', ':INPUT ACCEPT [0:0]', ':OUTPUT ACCEPT [0:0]', ':POSTROUTING ACCEPT [0:0]'];
  const ports = [22, 53, 80, 389, 443, 636];
  for (let k = int(2, 5); k > 0; k--) {
    const dst = rnd() < 0.2 ? '198.51.100.8/29' : pick(servers);
    const proto = pick(['', ' -p tcp', ' -p udp', ' -p tcp', ' -p udp']);
    const dport = !proto
      ? ''
      : pick([
          '',
          ` -m ${proto.slice(4)} --dport ${pick(ports)}`,
          ` -m multiport --dports ${pick(ports)},${pick([1000, 2000])}:${pick([3000, 4000])}`,
        ]);
    const target = rnd() < 0.5 ? `-j SNAT --to-source ${nat}` : '-j MASQUERADE';
    nats.push(`-A POSTROUTING -d ${dst}${proto}${dport} ${target}`);
  }
  const filter = [':FORWARD DROP [0:0]'];
  for (let k = int(2, 5); k > 0; k--) {
    const proto = pick(['tcp', 'udp']);
    filter.push(`-A FORWARD -s 10.1.${int(0, 3)}.0/24 -p ${proto} -m ${proto} --dport ${pick(ports)} -j DROP`);
  }
  filter.push('-A FORWARD -d 10.1.0.0/16 -p tcp -m tcp --dport 22 -j ACCEPT');
  filter.push(`-A FORWARD -s 10.1.${int(0, 3)}.0/24 -d ${pick(servers)} -j DROP`);
  filter.push('-A FORWARD -s 10.1.0.0/16 -j ACCEPT');
  const inside = () => `10.1.${int(0, 3)}.${int(1, 254)}`;
  const outside = () => `${pick([8, 45, 91])}.${int(0, 255)}.${int(0, 255)}.${int(1, 254)}`;
  const port = () => (rnd() < 0.8 ? pick([...ports, 1500, 2500, 3500]) : int(1, 65535));
  const packets: Sent[] = [];
  while (packets.length < count) {
    const proto = pick([6, 6, 17, 17, 50]);
    const x = rnd();
    const sport = int(1024, 65535);
    if (x < 0.5)
      packets.push([proto, inside(), pick([...servers, '198.51.100.9', '198.51.100.16']), sport, port(), 'in']);
    else if (x < 0.7) packets.push([proto, inside(), outside(), sport, port(), 'in']);
    else if (x < 0.75) packets.push([proto, inside(), nat, sport, port(), 'in']);
    else if (x < 0.95) packets.push([proto, outside(), inside(), sport, port(), 'out']);
    else packets.push([proto, outside(), nat, sport, port(), 'out']);
  }
  return {
    file: `by-destination-${seed}.rules`,
    text: routerFile(nats, filter),
    wan: 'wan',
    lan: 'lan',
    nat,
    inside: ['10.1.0.0/16'],
    iface: [],
    routes: 'default dev wan\n10.1.0.0/16 dev lan\n',
    packets,
  };
}

t.test(
  'generated routers translating by destination: the kernel decides 4,000 packets as the model does',
  async (t) => {
    if (kernelWhy) return t.skip(kernelWhy);
    let [exact, translated] = [0, 0];
    for (const seed of [1, 2, 3, 4]) {
      const router = destinationRouter(seed, 1000);
      const tally = await kernelCheck(t, router);
      t.same(tally.sources, ['-1.-1.-1.-1'], `seed ${seed}: by destination, the NAT node hides every source`);
      t.ok(tally.translates.length > 0, `seed ${seed}: ${tally.translates.length} translate entries`);
      t.equal(tally.exact, 1000, `seed ${seed}: every packet exact`);
      exact += tally.exact;
      translated += tally.translated;
    }
    t.comment(`${exact} exact (${translated} translated)`);
    t.ok(translated >= 100, 'translations occur');
  },
);
