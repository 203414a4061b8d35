/**
 * The nftables --from change script in the kernel (nft-harness.ts): applied to the old list it leaves the new one, and
 * it refuses a chain that drifted; a file nft refuses leaves the running table as it was.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { nftables, nftablesChange } from '../../src/deploy/nftables.js';
import type { Elements, Node } from '../../src/model/types.js';
import { scratch } from '../helpers.js';
import { generator, holdHooks, inNamespace, inWorkers, libnft, ruleLines, skipLibnft, skipNft } from './nft-harness.js';

/** Pairs of lists drawn from a small pool of rules, so that they share some and differ in others. */
function pairs(seed: number, count: number) {
  const g = generator(seed);
  const pool = Array.from({ length: 12 }, g.element);
  const list = (max: number) => Array.from({ length: Math.floor(g.rnd() * (max + 1)) }, () => g.pick(pool));
  const fw = (elements: Elements[]): Node => ({
    name: '10.255.0.1',
    functionalType: 'FIREWALL',
    configuration: { name: 'fw', firewall: { defaultAction: g.rnd() < 0.5 ? 'ALLOW' : 'DENY', elements } },
  });
  return Array.from({ length: count }, (_, k) => {
    const max = k < 60 ? 9 : 29;
    return [fw(list(max)), fw(list(max))] as const;
  });
}

/** Length of a longest common subsequence (the rules a change leaves alone). */
function lcs(a: string[], b: string[]): number {
  let row = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    const next = [0];
    for (let j = 0; j < b.length; j++) next.push(x === b[j] ? row[j]! + 1 : Math.max(row[j + 1]!, next[j]!));
    row = next;
  }
  return row[b.length]!;
}

t.test('the --from change script takes the chain from the old list to the new one', { skip: skipLibnft }, async (t) => {
  const dir = await scratch(t);
  const cases: { dir: string; label: string; deleted: number; inserted: number }[] = [];
  for (const [k, [a, b]] of pairs(31, 100).entries()) {
    for (const sets of [false, true]) {
      const at = path.join(dir, `${k}${sets ? 's' : ''}`);
      await mkdir(at);
      // Stateful (the default) and stateless in turn; the stateful rule is common to both lists, so it stays.
      const options = { sets, stateless: k % 2 === 1 };
      const [old, next] = [nftables(a, 1, options), nftables(b, 2, options)];
      const change = nftablesChange(a, b, 'test', options);
      await writeFile(path.join(at, 'a.nft'), old);
      await writeFile(path.join(at, 'b.nft'), next);
      await writeFile(path.join(at, 'change.sh'), change);
      const same = lcs(ruleLines(old), ruleLines(next));
      const m = /: (\d+) deleted, (\d+) inserted, policy /.exec(change)!;
      cases.push({
        dir: at,
        label: `case ${k}${sets ? ' --sets' : ''}${options.stateless ? ' --stateless' : ''}`,
        deleted: Number(m[1]),
        inserted: Number(m[2]),
      });
      if (Number(m[1]) !== ruleLines(old).length - same || Number(m[2]) !== ruleLines(next).length - same)
        t.fail(`case ${k}: the header says ${m[0]}, the lists share ${same} rules`);
    }
  }
  // Per case: the old list loaded, the change script run (a real sh, calling the real nft), the ruleset listed; the
  // new list loaded alone and listed. The loads and listings go through libnftables (libnft.py): nft's own four
  // processes per case cost more CPU than the kernel's work.
  const outputs = await inWorkers(cases, 4, async (slice) => {
    const steps = slice.flatMap((c) => [
      [
        ['nft', '-f', path.join(c.dir, 'a.nft')],
        ['sh', path.join(c.dir, 'change.sh')],
        ['nft', 'list', 'ruleset'],
      ],
      [
        ['nft', '-f', path.join(c.dir, 'b.nft')],
        ['nft', 'list', 'ruleset'],
      ],
    ]);
    const done = await libnft(t, steps);
    return slice.map((c, i) => ({
      c,
      applied: done[2 * i]!.code === 0 ? done[2 * i]!.stdout : '',
      fresh: done[2 * i + 1]!.code === 0 ? done[2 * i + 1]!.stdout : '',
      err: done[2 * i]!.stderr + done[2 * i + 1]!.stderr,
    }));
  });
  let equal = 0;
  for (const { c, applied, fresh, err } of outputs.flat()) {
    if (applied && applied === fresh) equal++;
    else t.fail(`${c.label}: after the change\n${applied}\nloaded alone\n${fresh}\n${err}`);
  }
  t.equal(equal, cases.length, `${equal} of ${cases.length} chains equal the new list loaded alone`);
  t.ok(
    cases.some((c) => c.deleted + c.inserted > 9),
    'some scripts refer to rule handles beyond the ninth (${10})',
  );
});

t.test('a chain that drifted is refused and left as it was', { skip: skipNft }, async (t) => {
  await holdHooks();
  const dir = await scratch(t);
  const fw = (n: number, defaultAction: 'ALLOW' | 'DENY'): Node => ({
    name: '10.255.0.1',
    functionalType: 'FIREWALL',
    configuration: {
      name: 'fw',
      firewall: {
        defaultAction,
        elements: Array.from({ length: n }, (_, k) => ({
          action: 'ALLOW',
          source: `10.0.${k}.-1`,
          destination: '20.0.0.1',
        })),
      },
    },
  });
  const [old, next] = [fw(3, 'DENY'), fw(2, 'ALLOW')];
  await writeFile(path.join(dir, 'a.nft'), nftables(old, 1));
  await writeFile(path.join(dir, 'change.sh'), nftablesChange(old, next, 'test'));
  await writeFile(path.join(dir, 'a-stateless.nft'), nftables(old, 1, { stateless: true }));
  await writeFile(path.join(dir, 'change-stateless.sh'), nftablesChange(old, next, 'test', { stateless: true }));
  const last = 'nft -a list chain ip nfv forward | sed -n "s/.* # handle \\([0-9]*\\)$/\\1/p" | tail -1';
  const drifts = {
    'one rule more': 'nft add rule ip nfv forward ip saddr 1.1.1.1 accept',
    'a rule replaced':
      `h=$(${last}) && nft insert rule ip nfv forward ip saddr 1.1.1.1 accept && ` +
      'nft delete rule ip nfv forward handle $h',
    'the policy changed': `nft 'chain ip nfv forward { type filter hook forward priority filter; policy accept; }'`,
    'no table': 'nft delete table ip nfv',
    // A stateful change for a chain deployed --stateless: the conntrack rule it would keep is not there.
    'deployed the other way': 'nft -f a-stateless.nft',
  };
  for (const [what, drift] of Object.entries(drifts)) {
    const r = inNamespace(
      `cd ${dir} && nft -f a.nft && ${drift} && before=$(nft list ruleset) && ` +
        `{ sh change.sh; echo "exit $?"; } && [ "$(nft list ruleset)" = "$before" ] && echo unchanged`,
    );
    t.match(r.stdout, /exit 1\nunchanged\n$/, `${what}: refused, nothing changed`);
    t.match(r.stderr, /^nfv: (chain ip nfv forward is not the list this change starts from|no chain ip nfv forward)/m);
  }
  const clean = inNamespace(`cd ${dir} && nft -f a.nft && sh change.sh && nft list ruleset`);
  t.equal(clean.status, 0, `the same script applies to the chain as deployed ${clean.stderr}`);
  t.match(
    clean.stdout,
    [
      'policy accept;',
      '\t\tct state established,related accept',
      '\t\tip saddr 10.0.0.0/24 ip daddr 20.0.0.1 accept',
      '\t\tip saddr 10.0.1.0/24 ip daddr 20.0.0.1 accept',
      '\t}',
    ].join('\n'),
    'stateful: the ct state rule stays first',
  );
  const stateless = inNamespace(`cd ${dir} && nft -f a-stateless.nft && sh change-stateless.sh && nft list ruleset`);
  t.equal(stateless.status, 0, `--stateless: the script applies to the chain as deployed ${stateless.stderr}`);
  t.match(
    stateless.stdout,
    [
      'policy accept;',
      '\t\tip saddr 10.0.0.0/24 ip daddr 20.0.0.1 accept',
      '\t\tip saddr 10.0.1.0/24 ip daddr 20.0.0.1 accept',
      '\t}',
    ].join('\n'),
  );
});

t.test('a file nft refuses leaves the running table as it was', { skip: skipNft }, async (t) => {
  await holdHooks();
  const dir = await scratch(t);
  const g = generator(8);
  const [a, b] = [g.firewall(10), g.firewall(10)];
  await writeFile(path.join(dir, 'a.nft'), nftables(a, 1));
  await writeFile(
    path.join(dir, 'b.nft'),
    nftables(b, 2).replace(/policy (\w+);/, 'policy $1;\n\t\ttcp dport 9-8 drop'),
  );
  const r = inNamespace(
    `cd ${dir} && nft -f a.nft && nft -f a.nft && before=$(nft list ruleset) && ` +
      `{ nft -f b.nft; echo "exit $?"; } && [ "$(nft list ruleset)" = "$before" ] && echo unchanged`,
  );
  t.match(r.stdout, /exit 1\nunchanged\n$/, 'reloads work, and a refused file changes nothing');
});
