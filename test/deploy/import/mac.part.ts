/**
 * `-m mac --mac-source` with `--neighbours FILE` and `--routes FILE` (issue 47, item 5): exact under the model's
 * premise that a packet from S arrives by the route to S, from its gateway (or from S itself on the link), with that
 * neighbour's MAC. Checked by the kernel: seeded rule sets with MAC lines (negated, beside -s and ports, in a user
 * chain that RETURNs as the chair's router's `mac_N` chains do) are loaded by iptables-restore in a network
 * namespace, and each sampled packet is sent as a raw frame whose source MAC this test works out from the routing
 * and neighbour text with its own longest-prefix lookup; the kernel's verdict (forwarded or not, forward.py) must be
 * nfv's. A MAC the table does not list, or a line without the table, stays approximated, said on its line.
 */
import t from 'tap';
import { Budget, allowsOf } from '../../../src/deploy/analysis/index.js';
import { importRules, importedList, macMap, routeMap } from '../../../src/deploy/import/index.js';
import { seeded } from '../../helpers.js';
import { type ForwardCase, iptablesWhy, kernelForwards, packetsWhy, sampledPacket } from '../nft-harness.js';

const num = (a: string) => a.split('.').reduce((v, o) => v * 256 + Number(o), 0);
function within(cidr: string, addr: string): boolean {
  const [a, p] = cidr.split('/');
  const size = 2 ** (32 - Number(p ?? 32));
  const lo = num(a!) - (num(a!) % size);
  return num(addr) >= lo && num(addr) < lo + size;
}

/** The router's table as nfv reads it (never installed: forward.py's kernel routes every test packet out). */
const ROUTES = [
  'default via 10.1.0.250 dev in1',
  '10.1.0.0/24 dev in1 proto kernel scope link src 10.1.0.1',
  '10.2.0.0/16 via 10.1.0.254 dev in1',
  '10.2.128.0/17 via 10.1.0.253 dev in1 metric 10',
  '172.16.0.0/12 via 10.1.0.252 dev in1',
  'unreachable 192.168.0.0/16',
];
/** Gateways and hosts on the link; 10.1.0.252 (a gateway) and 10.1.0.7 are not in the table. */
const NEIGHBOURS: [string, number | undefined][] = [
  ['10.1.0.250', 0],
  ['10.1.0.254', 1],
  ['10.1.0.253', 2],
  ['10.1.0.5', 3],
  ['10.1.0.6', 3], // one host with two addresses
  ['10.1.0.9', 4],
  ['10.1.0.11', undefined], // FAILED: no address
];
const SOURCES = [
  '10.1.0.5',
  '10.1.0.6',
  '10.1.0.7',
  '10.1.0.9',
  '10.1.0.11',
  '10.1.0.254',
  '10.2.3.4',
  '10.2.200.1',
  '172.20.1.1',
  '8.8.8.8',
  '100.64.1.2',
];
const DESTINATIONS = ['198.18.0.1', '198.18.5.9', '198.19.255.1'];

/** The four first bytes of MAC k; the last two are the job's conntrack zone (forward.py). */
const macHead = (k: number) => `02:a0:00:${(16 + k).toString(16)}`;
const zoneTail = (zone: number) =>
  `${(zone >> 8).toString(16).padStart(2, '0')}:${(zone & 255).toString(16).padStart(2, '0')}`;
const STRANGER = '02:ee:ee:ee';

/** The test's own reading of the premise: the first four bytes of the MAC a packet from `src` arrives with. */
function arrivesWith(src: string): string {
  const table = ROUTES.map((r) => {
    const w = r.split(' ');
    const unreachable = w[0] === 'unreachable';
    const dest = unreachable ? w[1]! : w[0]!;
    const via = w.includes('via') ? w[w.indexOf('via') + 1] : undefined;
    return {
      cidr: dest === 'default' ? '0.0.0.0/0' : dest,
      via,
      unreachable,
      metric: Number(w[w.indexOf('metric') + 1] ?? 0),
    };
  });
  const length = (c: string) => Number(c.split('/')[1] ?? 32);
  const best = table
    .filter((r) => within(r.cidr, src))
    .sort((a, b) => length(b.cidr) - length(a.cidr) || a.metric - b.metric)[0]!;
  const hop = best.via ?? src;
  const n = NEIGHBOURS.find(([a]) => a === hop);
  return n?.[1] === undefined ? STRANGER : macHead(n[1]);
}

function scenario(seed: number, zone: number) {
  const { int, pick, chance } = seeded(seed);
  const mac = (k: number) => `${macHead(k)}:${zoneTail(zone)}`;
  const neigh = [
    ...NEIGHBOURS.map(([a, k]) => (k === undefined ? `${a} dev in1  FAILED` : `${a} dev in1 lladdr ${mac(k)} STALE`)),
    'fe80::1 dev in1 lladdr 02:00:00:00:00:99 router REACHABLE',
  ].join('\n');
  const lines: string[] = [];
  const known = () => int(5);
  const cond = () => {
    const w: string[] = [];
    if (chance(0.4)) w.push('-s', pick(['10.1.0.0/24', '10.2.0.0/16', '10.1.0.5', '10.1.0.9', '172.16.0.0/12']));
    if (chance(0.3)) w.push('-p', 'tcp', '--dport', pick(['22', '80', '443']));
    w.push('-m', 'mac', ...(chance(0.3) ? ['!'] : []), '--mac-source', mac(known()));
    return w.join(' ');
  };
  for (let k = 0, n = 4 + int(5); k < n; k++) lines.push(`-A FORWARD ${cond()} -j ${pick(['ACCEPT', 'DROP'])}`);
  // The chair's router's pattern: a host's address with its MAC returns, the address with another is dropped.
  const host = pick(['10.1.0.5', '10.1.0.9', '10.1.0.7']);
  lines.splice(
    int(lines.length),
    0,
    `-A FORWARD -s 10.1.0.0/24 -j macchk`,
    `-A macchk -s ${host}/32 -m mac --mac-source ${mac(known())} -j RETURN`,
    `-A macchk -s ${host}/32 -j DROP`,
    `-A macchk -j RETURN`,
  );
  const chains = lines.filter((l) => l.startsWith('-A FORWARD')).concat(lines.filter((l) => l.startsWith('-A macchk')));
  const policy = pick(['ACCEPT', 'DROP']);
  const rules = ['*filter', `:FORWARD ${policy} [0:0]`, ':macchk - [0:0]', ...chains, 'COMMIT', ''].join('\n');
  return { rules, neigh };
}

t.test(
  'nfv reads -m mac as the kernel decides it, for the sources the routes and neighbours place',
  { skip: packetsWhy || iptablesWhy || false },
  async (t) => {
    const routes = ROUTES.join('\n');
    const SETS = 12;
    const cases: (ForwardCase & { want: { blind: boolean }[] })[] = [];
    const g = seeded(47);
    let exactLines = 0;
    for (let k = 0; k < SETS; k++) {
      const zone = k + 1; // forward.py: job k's zone
      const { rules, neigh } = scenario(1000 + k, zone);
      const file = `mac-${k}.rules`;
      const imported = importRules('iptables', rules, file, {
        chain: 'FORWARD',
        iface: routeMap(routes, 'routes'),
        macs: macMap(routes, neigh, 'routes', 'neighbours'),
      });
      t.same(
        imported.report.lines.filter((l) => l.class === 'approximated' || l.class === 'refused').map((l) => l.where),
        [],
        `set ${k}: every line exact`,
      );
      exactLines += imported.report.lines.length;
      const must = importedList(imported, 'must');
      // The same rules with their MAC matches left out: the kernel must disagree with them somewhere.
      const blindRules = rules.replace(/ -m mac (! )?--mac-source \S+/g, '');
      const blind = importedList(importRules('iptables', blindRules, file, { chain: 'FORWARD' }), 'must');
      const packets: unknown[] = [];
      const want: { said: string; nfv: boolean; blind: boolean }[] = [];
      for (let i = 0; i < 160; i++) {
        const { src, packet, box, said } = sampledPacket(g, SOURCES, DESTINATIONS, 40000 + i);
        packets.push([...packet, { mac: arrivesWith(src) }]);
        const allowed = (list: typeof must) => allowsOf(list, box, new Budget()).classes.length > 0;
        want.push({ said: `set ${k}: ${said}`, nfv: allowed(must), blind: allowed(blind) });
      }
      cases.push({ rules, packets, want });
    }
    const { kernel, differ, forwarded, total } = await kernelForwards(t, cases);
    const blindDiffer = cases.flatMap(({ want }, k) => want.filter((w, i) => w.blind !== kernel[k]![i])).length;
    t.same(differ.slice(0, 5), [], `nfv's verdict is the kernel's on all ${total} packets (${exactLines} exact lines)`);
    t.ok(
      forwarded > total / 10 && forwarded < (total * 9) / 10,
      `${forwarded} of ${total} forwarded: both verdicts seen`,
    );
    t.ok(blindDiffer > total / 20, `the MAC matches decide: ${blindDiffer} packets differ without them`);
  },
);

t.test('a MAC the table does not list, or no table, stays approximated and says why', async (t) => {
  const routes = ROUTES.join('\n');
  const neigh = '10.1.0.5 dev in1 lladdr 02:a0:00:10:00:01 REACHABLE\n';
  const rules = [
    '*filter',
    ':FORWARD DROP [0:0]',
    '-A FORWARD -m mac --mac-source 02:A0:00:10:00:01 -j ACCEPT',
    '-A FORWARD -m mac --mac-source 02:a0:00:99:00:01 -j ACCEPT',
    '-A FORWARD -m mac --mac-source XX:XX:XX:XX:XX:XX -j ACCEPT',
    'COMMIT',
    '',
  ].join('\n');
  const read = (macs?: ReturnType<typeof macMap>) =>
    importRules('iptables', rules, 'm.rules', { chain: 'FORWARD', ...(macs ? { macs } : {}) }).report.lines.map(
      (l) => `${l.class}${l.reason ? `: ${l.reason}` : ''}`,
    );
  const withTable = read(macMap(routes, neigh, 'routes', 'neighbours'));
  t.equal(withTable[0], 'exact', 'a MAC the table lists, in upper case too');
  t.match(withTable[1], /approximated: -m mac: 02:a0:00:99:00:01: no neighbour in the --neighbours table has it/);
  t.match(withTable[2], /approximated: -m mac: XX:XX:XX:XX:XX:XX is not a MAC address/);
  t.match(read()[0], /approximated: -m mac: .*no neighbour table \(--neighbours FILE/);
});

t.test('the neighbour table: bad lines named, one address with two MACs refused', async (t) => {
  const routes = ROUTES.join('\n');
  t.throws(() => macMap(routes, '10.1.0.5 dev in1 lladdr zz STALE', 'routes', 'neigh'), {
    message: 'neigh:1: zz is not a MAC address (aa:bb:cc:dd:ee:ff)',
  });
  t.throws(() => macMap(routes, 'hello', 'routes', 'neigh'), { message: /neigh:1: not an ip neigh line/ });
  t.throws(
    () =>
      macMap(
        routes,
        '10.1.0.5 dev in1 lladdr 02:00:00:00:00:01 STALE\n10.1.0.5 dev in2 lladdr 02:00:00:00:00:02 STALE',
        'routes',
        'neigh',
      ),
    { message: /neigh:2: 10.1.0.5 has two MAC addresses/ },
  );
});
