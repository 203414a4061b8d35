/**
 * Matches nfv reads exactly on a forwarded packet (issue 47, item 5). `-m recent --set` records the packet's source
 * and matches every packet (`! --set` none); `--rcheck`, `--update` and `--remove` depend on earlier packets and
 * stay approximated, said on their line. `-m addrtype --dst-type` in FORWARD: UNICAST outside 224.0.0.0/4,
 * MULTICAST inside, LOCAL and BROADCAST never (the box delivers those itself). Checked by the kernel: seeded rule
 * sets with such lines (negated, lists of types, --rsource, --rdest, --mask, beside addresses and ports) loaded by
 * iptables-restore in a network namespace, each sampled packet sent as a raw frame (forward.py); the kernel's
 * verdict (forwarded or not) must be nfv's.
 */
import t from 'tap';
import { Budget, allowsOf } from '../../../src/deploy/analysis/index.js';
import { importRules, importedList } from '../../../src/deploy/import/index.js';
import { seeded } from '../../helpers.js';
import { type ForwardCase, iptablesWhy, kernelForwards, packetsWhy, sampledPacket } from '../nft-harness.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './mac.part.js';
import './explain.part.js';
import './routes.part.js';
import './nftables.part.js';

const SOURCES = ['10.1.0.5', '10.1.0.9', '10.2.3.4', '172.20.1.1', '8.8.8.8'];
const DESTINATIONS = ['198.18.0.1', '198.18.5.9', '198.19.255.1'];

function ruleSet(seed: number) {
  const { int, pick, chance } = seeded(seed);
  const lines: string[] = [];
  for (let k = 0, n = 3 + int(6); k < n; k++) {
    const w: string[] = ['-A', 'FORWARD'];
    if (chance(0.5)) w.push('-s', pick(['10.1.0.0/24', '10.0.0.0/8', '8.8.8.8', '172.16.0.0/12']));
    if (chance(0.3)) w.push('-d', pick(['198.18.0.0/16', '198.19.0.0/16']));
    if (chance(0.4)) w.push('-p', pick(['tcp', 'udp']), '--dport', pick(['22', '80', '443']));
    if (chance(0.6)) {
      const types = pick(['UNICAST', 'LOCAL', 'BROADCAST', 'MULTICAST', 'UNICAST,LOCAL', 'LOCAL,BROADCAST']);
      w.push('-m', 'addrtype', ...(chance(0.3) ? ['!'] : []), pick(['--dst-type', '--dst-type', '--src-type']), types);
      // --src-type is exact for MULTICAST alone: keep the others out of the exact sets.
      if (w.includes('--src-type')) w[w.length - 1] = 'MULTICAST';
    }
    if (chance(0.6)) {
      w.push('-m', 'recent', ...(chance(0.3) ? ['!'] : []), '--set', '--name', `n${int(3)}`);
      if (chance(0.5)) w.push(pick(['--rsource', '--rdest']));
      if (chance(0.3)) w.push('--mask', '255.255.255.0');
    }
    w.push('-j', pick(['ACCEPT', 'DROP']));
    lines.push(w.join(' '));
  }
  return ['*filter', `:FORWARD ${pick(['ACCEPT', 'DROP'])} [0:0]`, ...lines, 'COMMIT', ''].join('\n');
}

t.test(
  'nfv reads -m recent --set and -m addrtype as the kernel decides them',
  { skip: packetsWhy || iptablesWhy || false },
  async (t) => {
    const g = seeded(4711);
    const cases: ForwardCase[] = [];
    let setLines = 0;
    let addrtypeLines = 0;
    for (let k = 0; k < 16; k++) {
      const rules = ruleSet(2000 + k);
      setLines += rules.split('\n').filter((l) => l.includes('--set')).length;
      addrtypeLines += rules.split('\n').filter((l) => l.includes('addrtype')).length;
      const imported = importRules('iptables', rules, `recent-${k}.rules`, { chain: 'FORWARD' });
      t.same(
        imported.report.lines.filter((l) => l.class === 'approximated' || l.class === 'refused').map((l) => l.where),
        [],
        `set ${k}: every line exact`,
      );
      const must = importedList(imported, 'must');
      const packets: unknown[] = [];
      const want: { said: string; nfv: boolean }[] = [];
      for (let i = 0; i < 120; i++) {
        const { packet, box, said } = sampledPacket(g, SOURCES, DESTINATIONS, 40000 + i);
        packets.push(packet);
        want.push({ said: `set ${k}: ${said}`, nfv: allowsOf(must, box, new Budget()).classes.length > 0 });
      }
      cases.push({ rules, packets, want });
    }
    const { differ, forwarded, total } = await kernelForwards(t, cases);
    t.same(
      differ.slice(0, 5),
      [],
      `nfv's verdict is the kernel's on all ${total} packets (${setLines} --set, ${addrtypeLines} addrtype lines)`,
    );
    t.ok(forwarded > total / 10 && forwarded < (total * 9) / 10, `${forwarded} of ${total} forwarded`);
  },
);

t.test('-m recent --rcheck, --update and --remove stay approximated, said on their line', async (t) => {
  const rules = [
    '*filter',
    ':FORWARD ACCEPT [0:0]',
    '-A FORWARD -p tcp --dport 22 -m recent --set --name ssh --rsource',
    '-A FORWARD -p tcp --dport 22 -m recent --update --seconds 60 --hitcount 4 --name ssh --rsource -j DROP',
    '-A FORWARD -m recent --rcheck --name ssh -j DROP',
    '-A FORWARD -m recent --remove --name ssh -j ACCEPT',
    'COMMIT',
    '',
  ].join('\n');
  const lines = importRules('iptables', rules, 'r.rules', { chain: 'FORWARD' }).report.lines;
  t.same(
    lines.map((l) => l.class),
    ['no-verdict', 'approximated', 'approximated', 'approximated'],
  );
  t.match(lines[1]!.reason, /-m recent --update: whether the source was seen depends on earlier packets/);
});

t.test('-m addrtype: what nfv cannot know stays approximated', async (t) => {
  const rules = (extra = '') =>
    [
      '*filter',
      ':FORWARD ACCEPT [0:0]',
      '-A FORWARD -m addrtype --src-type LOCAL -j DROP',
      '-A FORWARD -m addrtype --dst-type ANYCAST -j DROP',
      '-A FORWARD -m addrtype --dst-type UNICAST --limit-iface-in -j DROP',
      '-A FORWARD -m addrtype --dst-type LOCAL -j DROP',
      'COMMIT',
      extra,
    ].join('\n');
  const classes = (text: string, chain = 'FORWARD') =>
    importRules('iptables', text, 'a.rules', { chain, ignoreNat: true }).report.lines.map((l) => l.class);
  t.same(classes(rules()), ['approximated', 'approximated', 'approximated', 'exact']);
  const dnat = '*nat\n-A PREROUTING -p tcp --dport 80 -j DNAT --to-destination 10.0.0.5\nCOMMIT\n';
  t.equal(classes(rules(dnat))[3], 'approximated', 'a DNAT ignored may have changed the destination');
  t.equal(classes(rules().replace(/FORWARD/g, 'INPUT'), 'INPUT')[3], 'approximated', 'in INPUT: the box is asked');
});
