/**
 * One set of flags for reading a rule set (issues 46 item 5, 47 item 6): `import iptables|nftables` and `firewall
 * lint|allows|diff|explain` have the same reading flags with the same help, the HTTP bodies the same fields; every
 * refusal or approximation that advises a flag names one the command that said it has (run through bin/nfv, each
 * advice a `--flag` of the message that the input does not contain); the answers keep each rule's file and line.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import type { Command } from 'commander';
import { firewallCommand } from '../../src/cli/commands/firewall.js';
import { importCommandGroup } from '../../src/cli/commands/import.js';
import { scratch } from '../helpers.js';
import { nfvInProcess } from './in-process.js';

const ws = await scratch(t);
const dir = await scratch(t);
const run = (args: string[]) => nfvInProcess(args, { workspace: ws });

const sub = (group: Command, name: string) => group.commands.find((c) => c.name() === name)!;
const COMMANDS: Record<string, Command> = {
  'import iptables': sub(importCommandGroup, 'iptables'),
  'import nftables': sub(importCommandGroup, 'nftables'),
  'firewall lint': sub(firewallCommand, 'lint'),
  'firewall allows': sub(firewallCommand, 'allows'),
  'firewall diff': sub(firewallCommand, 'diff'),
  'firewall explain': sub(firewallCommand, 'explain'),
};
const READING = [
  '--chain',
  '--table',
  '--ignore-nat',
  '--nat-address',
  '--iface',
  '--host',
  '--ipset',
  '--routes',
  '--neighbours',
  '--approximation',
];
const longs = (c: Command) => c.options.map((o) => o.long!);

t.test('every command reading a rule set has the same reading flags, with the same help', async (t) => {
  const described = (c: Command) =>
    c.options.filter((o) => READING.includes(o.long!)).map((o) => `${o.flags}: ${o.description}`);
  const first = described(COMMANDS['import iptables']!);
  t.equal(first.length, READING.length, 'import has all of them');
  for (const [name, c] of Object.entries(COMMANDS)) t.same(described(c), first, `${name}: the same flags and help`);
});

const DNAT = [
  '*nat',
  '-A PREROUTING -i eth0 -p tcp --dport 80 -j DNAT --to-destination 10.0.0.5',
  'COMMIT',
  '*filter',
  ':FORWARD DROP [0:0]',
  '-A FORWARD -i eth0 -d 10.0.0.5 -p tcp --dport 80 -j ACCEPT',
  '-A FORWARD -m set --match-set blocked src -j DROP',
  '-A FORWARD -s 10.0.0.0/8 -j ACCEPT',
  '-A FORWARD -s 10.1.0.0/16 -j ACCEPT',
  'COMMIT',
  '',
].join('\n');
const MANGLE_ONLY = '*mangle\n-A PREROUTING -j MARK --set-mark 1\nCOMMIT\n';
const nft = (objects: object[]) => JSON.stringify({ nftables: objects });
const NFT_DNAT = nft([
  { table: { family: 'ip', name: 'nat', handle: 1 } },
  { chain: { family: 'ip', table: 'nat', name: 'pre', handle: 1, type: 'nat', hook: 'prerouting', prio: -100 } },
  {
    rule: {
      family: 'ip',
      table: 'nat',
      chain: 'pre',
      handle: 2,
      expr: [
        { match: { op: '==', left: { payload: { protocol: 'tcp', field: 'dport' } }, right: 80 } },
        { dnat: { addr: '10.0.0.5' } },
      ],
    },
  },
  { table: { family: 'ip', name: 't', handle: 2 } },
  {
    chain: {
      family: 'ip',
      table: 't',
      name: 'fw',
      handle: 1,
      type: 'filter',
      hook: 'forward',
      prio: 0,
      policy: 'drop',
    },
  },
  {
    rule: {
      family: 'ip',
      table: 't',
      chain: 'fw',
      handle: 2,
      expr: [{ match: { op: '==', left: { meta: { key: 'iifname' } }, right: 'eth0' } }, { accept: null }],
    },
  },
]);
const NFT_INPUT_ONLY = nft([
  { table: { family: 'ip', name: 't', handle: 2 } },
  { chain: { family: 'ip', table: 't', name: 'in', handle: 1, type: 'filter', hook: 'input', prio: 0 } },
]);

t.test('every flag a refusal or approximation advises is one the command has', async (t) => {
  const inputs: { name: string; text: string; format: 'iptables' | 'nftables'; extra?: string[] }[] = [
    { name: 'dnat.rules', text: DNAT, format: 'iptables' },
    { name: 'dnat-ignored.rules', text: DNAT, format: 'iptables', extra: ['--ignore-nat'] },
    { name: 'mangle.rules', text: MANGLE_ONLY, format: 'iptables' },
    { name: 'dnat.json', text: NFT_DNAT, format: 'nftables' },
    { name: 'dnat-ignored.json', text: NFT_DNAT, format: 'nftables', extra: ['--ignore-nat'] },
    { name: 'input.json', text: NFT_INPUT_ONLY, format: 'nftables' },
  ];
  let advised = 0;
  for (const input of inputs) {
    const file = path.join(dir, input.name);
    await writeFile(file, input.text);
    const calls: [string, string[]][] = [
      [`import ${input.format}`, ['import', input.format, file, '--node', '10.0.0.1', '--report', 'json']],
      ['firewall lint', ['firewall', 'lint', file]],
      ['firewall allows', ['firewall', 'allows', file]],
      ['firewall diff', ['firewall', 'diff', file, file]],
      ['firewall explain', ['firewall', 'explain', file, 'src=10.0.0.1 dst=10.0.0.5 proto=tcp dport=80']],
    ];
    for (const [name, args] of calls) {
      const r = await run([...args, ...(input.extra ?? [])]);
      // The advice: flags in what nfv said that the input itself does not contain (iptables' own options are).
      const flags = [...new Set(r.stderr.match(/--[a-z][a-z-]+/g) ?? [])].filter((f) => !input.text.includes(f));
      const missing = flags.filter((f) => !longs(COMMANDS[name]!).includes(f));
      advised += flags.length;
      t.same(missing, [], `${name} ${input.name}${flags.length ? `: advises ${flags.join(' ')}` : ''}`);
    }
  }
  t.ok(advised >= 10, `${advised} pieces of advice, each a flag of its command`);
});

t.test('the reading flags work on the analyses, and are refused where there is nothing to read', async (t) => {
  const file = path.join(dir, 'lint.rules');
  await writeFile(file, DNAT);
  const refused = await run(['firewall', 'lint', file]);
  t.equal(refused.code, 2, 'the DNAT refuses the file');
  t.match(refused.stderr, /give --ignore-nat/);
  const lint = await run(['firewall', 'lint', file, '--ignore-nat', '--iface', 'eth0=192.0.2.0/24']);
  t.equal(lint.code, 1, lint.stderr);
  const report = JSON.parse(lint.stdout);
  t.match(report.firewall, /lint\.rules, filter\/FORWARD \(may list/, 'the may list: the ipset is not given');
  t.same(
    report.findings.map((f: { rule: object; by: object[] }) => [f.rule, f.by]),
    [[{ position: 3, file, line: 9, where: `${file}:9` }, [{ position: 2, file, line: 8, where: `${file}:8` }]]],
    "each rule's file and line are kept",
  );
  const must = await run(['firewall', 'lint', file, '--ignore-nat', '--approximation', 'must']);
  t.match(JSON.parse(must.stdout).firewall, /\(must list/, '--approximation must: the must list');
  await writeFile(path.join(dir, 'blocked.ipset'), 'create blocked hash:ip\nadd blocked 10.9.9.9\n');
  const exact = await run([
    ...['firewall', 'lint', file, '--ignore-nat', '--ipset', path.join(dir, 'blocked.ipset')],
    ...['--iface', 'eth0=192.0.2.0/24'],
  ]);
  t.notMatch(JSON.parse(exact.stdout).firewall, /list/, 'with --ipset and --iface every line is exact: one list');
  const twice = await run(
    [...['firewall', 'lint', file, '--ignore-nat'], ...['--iface', 'a=10.0.0.0/8,192.0.2.0/24']].concat([
      '--iface',
      'eth0=192.0.2.0/24',
    ]),
  );
  t.equal(twice.code, 2, 'one prefix under two interfaces: bad input');
  t.match(
    twice.stderr,
    /^nfv: --iface a and --iface eth0 both name 192\.0\.2\.0\/24: [^\n]*\n$/,
    'naming both and the flag',
  );
  const mangle = path.join(dir, 'mangle.rules');
  await writeFile(mangle, MANGLE_ONLY);
  const table = await run(['firewall', 'allows', mangle, '--table', 'mangle', '--chain', 'PREROUTING']);
  t.equal(table.code, 0, table.stderr);
  t.match(JSON.parse(table.stdout), { firewall: /mangle\/PREROUTING/, defaultAction: 'ALLOW' }, '--table mangle');
  const stored = await run(['firewall', 'lint', 'fwd:1', '--chain', 'INPUT']);
  t.equal(stored.code, 2);
  t.match(stored.stderr, /^nfv: chain: fwd node 1 is not an iptables-save or nft file/);
  const doc = await run(['firewall', 'lint', path.join('samples', 'web-farm.xml'), '--ignore-nat']);
  t.equal(doc.code, 2, 'an NFV document has nothing to read with --ignore-nat');
  t.match(doc.stderr, /ignoreNat: samples\/web-farm\.xml is not an iptables-save or nft file/);
  const diff = await run(['firewall', 'diff', file, mangle, '--ignore-nat', '--chain', 'FORWARD']);
  t.equal(diff.code, 2, 'both sides read with the same flags: the mangle file has no filter FORWARD');
  t.match(diff.stderr, /mangle\.rules: no chain FORWARD in table filter \(give --chain INPUT or OUTPUT/);
});

t.test('--neighbours with --routes reads -m mac exactly; without --routes it is refused, naming both', async (t) => {
  const rules = path.join(dir, 'mac.rules');
  await writeFile(
    rules,
    [
      '*filter',
      ':FORWARD DROP [0:0]',
      '-A FORWARD -m mac --mac-source 02:00:00:00:00:0a -j ACCEPT',
      '-A FORWARD -s 10.2.0.0/16 -j ACCEPT',
      'COMMIT',
      '',
    ].join('\n'),
  );
  const routes = path.join(dir, 'mac.routes');
  await writeFile(routes, '10.1.0.0/24 dev eth1 scope link\n10.2.0.0/16 via 10.1.0.254 dev eth1\n');
  const neigh = path.join(dir, 'mac.neigh');
  await writeFile(neigh, '10.1.0.254 dev eth1 lladdr 02:00:00:00:00:0a REACHABLE\n');
  const lint = await run(['firewall', 'lint', rules, '--routes', routes, '--neighbours', neigh]);
  const report = JSON.parse(lint.stdout);
  t.notMatch(report.firewall, /list/, 'every line exact: one list');
  t.same(
    report.findings.map((f: { rule: { line: number }; by: { line: number }[] }) => [f.rule.line, f.by[0]!.line]),
    [[4, 3]],
    "line 4 is shadowed by the MAC line: the gateway's MAC is every source behind 10.2.0.0/16",
  );
  const approximated = await run(['firewall', 'lint', rules, '--routes', routes]);
  t.match(JSON.parse(approximated.stdout).firewall, /may list/, 'without the table: approximated');
  const refused = await run(['firewall', 'lint', rules, '--neighbours', neigh]);
  t.equal(refused.code, 2);
  t.match(refused.stderr, /^nfv: neighbours: give routes too \(--routes FILE\)/);
  t.equal(refused.stderr.trim().split('\n').length, 1, 'one line');
});
