/**
 * `-m recent --set` (issue 47, item 5): it records the packet's source and matches every packet (`! --set` none),
 * so nfv reads it exactly; `--rcheck`, `--update` and `--remove` depend on earlier packets and stay approximated,
 * said on their line. Checked by the kernel: seeded rule sets with `--set` lines (negated, with --rsource, --rdest,
 * --mask, beside addresses and ports) loaded by iptables-restore in a network namespace, each sampled packet sent as
 * a raw frame (forward.py); the kernel's verdict (forwarded or not) must be nfv's.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { Budget, allowsOf } from '../../../src/deploy/analysis/index.js';
import { importRules, importedList } from '../../../src/deploy/import/index.js';
import { ruleBox } from '../../../src/model/space.js';
import { ROOT, runProcess, scratch, seeded } from '../../helpers.js';
import { NAMESPACES, PYTHON, iptablesWhy, packetsWhy } from '../nft-harness.js';

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
    if (chance(0.7)) {
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
  'nfv reads -m recent --set as the kernel decides it',
  { skip: packetsWhy || iptablesWhy || false },
  async (t) => {
    const dir = await scratch(t);
    const g = seeded(4711);
    const jobs: { load: string[]; unload: string[]; packets: unknown[] }[] = [];
    const expected: { said: string; nfv: boolean }[][] = [];
    let setLines = 0;
    for (let k = 0; k < 12; k++) {
      const rules = ruleSet(2000 + k);
      setLines += rules.split('\n').filter((l) => l.includes('--set')).length;
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
        const src = g.pick(SOURCES);
        const dst = g.pick(DESTINATIONS);
        const [proto, name] = g.pick([
          [6, 'TCP'],
          [17, 'UDP'],
        ] as const);
        const dport = g.pick([22, 80, 443, 5000]);
        packets.push([proto, src, dst, 40000 + i, dport]);
        const box = ruleBox({
          source: src,
          destination: dst,
          protocol: name,
          srcPort: String(40000 + i),
          dstPort: String(dport),
        });
        want.push({
          said: `set ${k}: ${src} -> ${dst} ${name} ${dport}`,
          nfv: allowsOf(must, box, new Budget()).classes.length > 0,
        });
      }
      expected.push(want);
      const file = path.join(dir, `${k}.rules`);
      await writeFile(file, rules);
      jobs.push({
        load: ['iptables-restore', file],
        unload: ['sh', '-c', 'iptables -P FORWARD ACCEPT && iptables -F && iptables -X'],
        packets,
      });
    }
    const script = path.join(ROOT, 'test', 'deploy', 'forward.py');
    const r = await runProcess(t, 'unshare', [...NAMESPACES, PYTHON, script], JSON.stringify(jobs), 120_000);
    if (r.code !== 0) return t.fail(`forward.py exited ${r.code}: ${r.stderr.trim()}`);
    const results = JSON.parse(r.stdout) as boolean[][];
    const differ: string[] = [];
    let forwarded = 0;
    let total = 0;
    expected.forEach((want, k) =>
      want.forEach((w, i) => {
        const kernel = results[k]![i]!;
        total++;
        if (kernel) forwarded++;
        if (kernel !== w.nfv)
          differ.push(`${w.said}: kernel ${kernel ? 'forwards' : 'drops'}, nfv ${w.nfv ? 'allows' : 'denies'}`);
      }),
    );
    t.same(differ.slice(0, 5), [], `nfv's verdict is the kernel's on all ${total} packets (${setLines} --set lines)`);
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
