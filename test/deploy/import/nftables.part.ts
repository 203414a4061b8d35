/**
 * The nft reader on what nft rule sets use beyond single rules (firewall-io.md B.6): named sets (addresses,
 * prefixes, ranges), anonymous and named concatenations, verdict maps (also on a concatenated key and jumping to
 * chains), each written in nft's own text, loaded by the real nft in a namespace of its own and listed back with
 * `nft -j list ruleset`. Each imports equivalent (an empty diff) to the same rules written one by one without
 * those constructs, imported the same way; a verdict map whose elements overlap with different verdicts is
 * refused, naming the rule.
 */
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { diff } from '../../../src/deploy/analysis/index.js';
import { importRules, importedList } from '../../../src/deploy/import/index.js';
import { scratch } from '../../helpers.js';

const NAMESPACES = ['-rnp', '--fork', '--kill-child'];
const probe = spawnSync('unshare', [...NAMESPACES, 'nft', 'list', 'ruleset'], { encoding: 'utf8' });
const kernelWhy = probe.status === 0 ? '' : `nft in a namespace is not available here (${probe.stderr.trim()})`;
if (process.env.CI === 'true' && kernelWhy) t.fail(`${kernelWhy}; .ci/run must provide it`);

/** `nft -j list ruleset` of nft text, loaded in a namespace of its own. */
async function listed(t: Tap.Test, text: string): Promise<string> {
  const dir = await scratch(t);
  const file = path.join(dir, 'ruleset.nft');
  await writeFile(file, text);
  const r = spawnSync('unshare', [...NAMESPACES, 'sh', '-c', 'nft -f "$1" && nft -j list ruleset', 'sh', file], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`nft: ${r.stderr}`);
  return r.stdout;
}

const table = (sets: string, rules: string, extra = '') =>
  `table inet f {\n${sets}\n\tchain forward_filter {\n\t\ttype filter hook forward priority 0; policy drop;\n${rules}\n\t}\n${extra}}\n`;

const CASES: { name: string; rich: string; plain: string }[] = [
  {
    name: 'a named set of addresses, prefixes and a range',
    rich: table(
      '\tset trusted { type ipv4_addr; flags interval; elements = { 10.0.0.1, 172.16.0.0/12, 192.168.1.10-192.168.1.20 } }',
      '\t\tip saddr @trusted tcp dport 22 accept\n\t\tip daddr != @trusted drop\n\t\tudp dport 53 accept',
    ),
    plain: table(
      '',
      [
        'ip saddr 10.0.0.1 tcp dport 22 accept',
        'ip saddr 172.16.0.0/12 tcp dport 22 accept',
        'ip saddr 192.168.1.10-192.168.1.20 tcp dport 22 accept',
        'ip daddr 10.0.0.1 udp dport 53 accept',
        'ip daddr 172.16.0.0/12 udp dport 53 accept',
        'ip daddr 192.168.1.10-192.168.1.20 udp dport 53 accept',
      ]
        .map((r) => `\t\t${r}`)
        .join('\n'),
    ),
  },
  {
    name: 'anonymous and named concatenations',
    rich: table(
      '\tset pairs { type ipv4_addr . inet_service; flags interval; elements = { 10.1.0.0/16 . 80, 10.2.0.5 . 8000-8080 } }',
      '\t\tip saddr . tcp dport @pairs accept\n\t\tip saddr . ip daddr { 10.3.0.1 . 10.9.0.0/24, 10.4.0.0/24 . 10.9.0.7 } drop\n\t\tip daddr 10.9.0.0/16 accept',
    ),
    plain: table(
      '',
      [
        'ip saddr 10.1.0.0/16 tcp dport 80 accept',
        'ip saddr 10.2.0.5 tcp dport 8000-8080 accept',
        'ip saddr 10.3.0.1 ip daddr 10.9.0.0/24 drop',
        'ip saddr 10.4.0.0/24 ip daddr 10.9.0.7 drop',
        'ip daddr 10.9.0.0/16 accept',
      ]
        .map((r) => `\t\t${r}`)
        .join('\n'),
    ),
  },
  {
    name: 'verdict maps: on a port, on a concatenated key, and jumping to a chain',
    rich: table(
      '',
      '\t\ttcp dport vmap { 22 : accept, 23 : drop, 8000-8999 : jump web }\n' +
        '\t\tip saddr . udp dport vmap { 10.0.0.0/8 . 53 : accept, 192.168.0.0/16 . 53 : drop }\n' +
        '\t\tip daddr 10.5.0.0/16 accept',
      '\tchain web {\n\t\tip saddr 10.7.0.0/16 return\n\t\tip daddr 10.8.0.1 accept\n\t\tdrop\n\t}\n',
    ),
    plain: table(
      '',
      [
        'tcp dport 22 accept',
        'tcp dport 23 drop',
        'ip saddr != 10.7.0.0/16 tcp dport 8000-8999 ip daddr 10.8.0.1 accept',
        'ip saddr != 10.7.0.0/16 tcp dport 8000-8999 drop',
        'ip saddr 10.0.0.0/8 udp dport 53 accept',
        'ip saddr 192.168.0.0/16 udp dport 53 drop',
        'ip daddr 10.5.0.0/16 accept',
      ]
        .map((r) => `\t\t${r}`)
        .join('\n'),
    ),
  },
];

t.test(
  'named sets, concatenations and verdict maps import as their rules one by one',
  { skip: kernelWhy || false },
  async (t) => {
    for (const c of CASES) {
      const [rich, plain] = [await listed(t, c.rich), await listed(t, c.plain)];
      const a = importRules('nftables', rich, 'rich.json');
      const b = importRules('nftables', plain, 'plain.json');
      t.equal(a.report.counts.approximated, 0, `${c.name}: exact`);
      const d = diff(importedList(a), importedList(b));
      t.ok(
        d.equivalent,
        `${c.name}: equivalent to the plain rules${d.equivalent ? '' : ` (${d.classes.length} classes differ)`}`,
      );
    }
    // A different ruleset is told apart (the check can fail): the set without its range.
    const narrower = await listed(t, CASES[0]!.rich.replace(', 192.168.1.10-192.168.1.20', ''));
    const plain = await listed(t, CASES[0]!.plain);
    t.notOk(
      diff(
        importedList(importRules('nftables', narrower, 'n.json')),
        importedList(importRules('nftables', plain, 'p.json')),
      ).equivalent,
      'a set with one element less differs',
    );
  },
);

t.test(
  'a verdict map with overlapping elements of different verdicts is refused',
  { skip: kernelWhy || false },
  async (t) => {
    // nft keeps overlapping elements out of its own maps; a JSON document (from another tool) may still have them.
    const json = JSON.parse(await listed(t, table('', '\t\ttcp dport vmap { 22 : accept, 23 : drop }'))) as {
      nftables: Record<string, any>[];
    };
    const rule = json.nftables.find((x) => 'rule' in x)!.rule;
    const vmap = rule.expr.find((e: Record<string, unknown>) => 'vmap' in e).vmap;
    t.same(vmap.data.set[1][0], 23, 'the second element as nft listed it');
    vmap.data.set[1][0] = 22;
    t.throws(
      () => importRules('nftables', JSON.stringify(json), 'm.json'),
      /^inet f\/forward_filter\/handle \d+: verdict map elements overlap with different verdicts \(the kernel picks one\)/,
    );
  },
);
