/**
 * The translators on a table of rules, stateful (the default) and stateless; iptables, nftables and Open vSwitch
 * output fed to the real tools.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { fortios } from '../../src/deploy/fortios.js';
import { deployFile } from '../../src/deploy/index.js';
import { ipfw } from '../../src/deploy/ipfw.js';
import { iptables } from '../../src/deploy/iptables.js';
import { nftables, nftablesJson } from '../../src/deploy/nftables.js';
import { openVswitch, portMasks } from '../../src/deploy/openvswitch.js';
import { normalisedRules } from '../../src/deploy/rules.js';
import { contains, ruleBox } from '../../src/model/space.js';
import type { Elements, Node } from '../../src/model/types.js';
import { nfvInProcess } from '../cli/in-process.js';
import { scratch } from '../helpers.js';
import { ok, refused, workspace } from '../ops/call.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './change.part.js';
import './iptables-host.part.js';
import './nftables-host.part.js';

const firewall = (defaultAction: 'ALLOW' | 'DENY', elements: Elements[], description = 'fw1'): Node => ({
  id: 7,
  name: '30.0.0.1',
  functionalType: 'FIREWALL',
  configuration: { name: 'c', description, firewall: { defaultAction, elements } },
});

const TABLE: Elements[] = [
  { action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.1', protocol: 'TCP', dstPort: '80' },
  { action: 'DENY', source: '10.0.1.5', destination: '-1.-1.-1.-1', protocol: 'UDP', srcPort: '1000-2000' },
  { action: 'ALLOW', source: '*', destination: '20.0.-1.-1', protocol: 'ANY', dstPort: '0-1023' },
  { action: 'DENY', source: '10.-1.0.1', destination: '20.0.0.2', protocol: 'OTHER' },
  { source: '192.168.0.-1', destination: '*', directional: true, dstPort: '443' },
  { action: 'ALLOW', source: '1.2.3.4', destination: '5.6.7.8', priority: '5' },
];

const have = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

t.test('port ranges become exact value/mask pairs, ranges from 0 included', async (t) => {
  t.same(portMasks(80, 80), ['0x50']);
  t.same(portMasks(0, 65535), []);
  t.same(portMasks(1000, 2000), [
    '0x3e8/0xfff8',
    '0x3f0/0xfff0',
    '0x400/0xfe00',
    '0x600/0xff00',
    '0x700/0xff80',
    '0x780/0xffc0',
    '0x7c0/0xfff0',
    '0x7d0',
  ]);
  for (const [lo, hi] of [
    [0, 79],
    [0, 0],
    [81, 65535],
    [1, 65534],
    [22, 23],
  ] as const) {
    const covered = new Set<number>();
    for (const m of portMasks(lo, hi)) {
      const [v, mask] = m.split('/').map((x) => parseInt(x, 16)) as [number, number | undefined];
      for (let p = 0; p <= 65535; p++) if ((p & (mask ?? 0xffff)) === v) covered.add(p);
    }
    t.equal(covered.size, hi - lo + 1, `${lo}-${hi}: no port more, none less`);
    t.ok([...covered].every((p) => p >= lo && p <= hi));
  }
});

t.test('normalisation keeps first-match semantics while removing protocol OTHER', async (t) => {
  const node = firewall('ALLOW', TABLE);
  const { rules, defaultAllow } = normalisedRules(node);
  t.notOk(
    rules.some((r) => r.box[20] === 2 && r.box[21] === 2),
    'no rule for OTHER alone is left',
  );
  const listed = TABLE.flatMap((e) => {
    const box = ruleBox(e);
    const rule = {
      allow: e.action === 'ALLOW',
      box: e.protocol === 'OTHER' ? [...box.slice(0, 16), 0, 65535, 0, 65535, 2, 2] : box,
    };
    return e.directional
      ? [
          rule,
          {
            allow: rule.allow,
            box: [...box.slice(8, 16), ...box.slice(0, 8), box[18]!, box[19]!, box[16]!, box[17]!, box[20]!, box[21]!],
          },
        ]
      : [rule];
  });
  const decide = (list: { allow: boolean; box: readonly number[] }[], packet: number[]) => {
    const p = packet.flatMap((v) => [v, v]);
    return list.find((r) => contains(r.box, p))?.allow ?? defaultAllow;
  };
  let seed = 42;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  const pick = (choices: number[]) => choices[rand(choices.length)]!;
  let disagreements = 0;
  for (let k = 0; k < 20000; k++) {
    const packet = [
      pick([10, 192, 1, 20]),
      pick([0, 168, 2]),
      pick([0, 1, 3]),
      pick([1, 5, 4, 9]),
      pick([20, 5, 10]),
      pick([0, 6]),
      pick([0, 7, 1]),
      pick([1, 2, 8, 3]),
      pick([0, 443, 1000, 1500, 2001]),
      pick([0, 80, 443, 1023, 1024]),
      rand(3),
    ];
    if (decide(rules, packet) !== decide(listed, packet)) disagreements++;
  }
  t.equal(disagreements, 0, 'the deployed list decides every sampled packet as the original does');
});

t.test('iptables: CIDRs, masks for non-trailing wildcards, ranges, protocols, directional, default', async (t) => {
  const text = iptables(firewall('DENY', TABLE), 7, { stateless: true });
  t.match(text, /^# nfv: firewall 30\.0\.0\.1 \(node 7\)/);
  t.match(text, /\n# stateless: the rules alone, one way/);
  t.notMatch(text, /conntrack/);
  t.match(text, /:OUTPUT ACCEPT \[0:0\]\n-A FORWARD -s 10\.0\.0\.0\/24 /, 'stateless: the rules alone');
  t.match(text, /:FORWARD DROP \[0:0\]/);
  t.match(text, /-A FORWARD -s 10\.0\.0\.0\/24 -d 20\.0\.0\.1\/32 -p tcp --dport 80 -j ACCEPT/);
  t.match(text, /-A FORWARD -s 10\.0\.1\.5\/32 -p udp --sport 1000:2000 -j DROP/);
  t.match(
    text,
    [
      '-A FORWARD -d 20.0.0.0/16 -p tcp --dport 0:1023 -j ACCEPT',
      '-A FORWARD -d 20.0.0.0/16 -p udp --dport 0:1023 -j ACCEPT',
    ].join('\n'),
  );
  t.match(
    text,
    /-s 10\.0\.0\.1\/255\.0\.255\.255 -d 20\.0\.0\.2\/32 -j DROP/,
    'OTHER: after the TCP/UDP part, an all-protocols rule',
  );
  t.match(
    text,
    [
      '-s 192.168.0.0/24 -p tcp --dport 443 -j DROP',
      '-A FORWARD -s 192.168.0.0/24 -p udp --dport 443 -j DROP',
      '-A FORWARD -d 192.168.0.0/24 -p tcp --sport 443 -j DROP',
    ].join('\n'),
    'directional adds the reverse',
  );
  t.match(text, /COMMIT\n$/);
  const stateful = iptables(firewall('DENY', TABLE), 7);
  t.match(stateful, /\n# stateful: replies of allowed connections come back \(conntrack ESTABLISHED,RELATED first\)/);
  t.equal(
    stateful.slice(stateful.indexOf('*filter')),
    text
      .slice(text.indexOf('*filter'))
      .replace(
        ':OUTPUT ACCEPT [0:0]\n',
        ':OUTPUT ACCEPT [0:0]\n-A FORWARD -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n',
      ),
    'stateful (the default): the conntrack rule first, then the same rules',
  );
  if (!have('iptables-restore')) return t.skip('iptables-restore not installed (.ci/run installs it)');
  for (const [what, input] of [
    ['stateless', text],
    ['stateful', stateful],
  ]) {
    const check = spawnSync('iptables-restore', ['--test'], { input });
    t.equal(check.status, 0, `${what}: iptables-restore --test: ${check.stderr}`);
  }
});

t.test('nftables: one atomic file, ANY with ports as one rule for TCP and UDP only, OTHER as one rule', async (t) => {
  const text = nftables(firewall('DENY', TABLE), 7, { stateless: true });
  t.match(text, /^# nfv: firewall 30\.0\.0\.1 \(node 7\), load with: nft -f FILE\n# stateless: /);
  t.equal(
    text.slice(text.indexOf('\ntable ip nfv\n') + 1),
    [
      'table ip nfv',
      'delete table ip nfv',
      'table ip nfv {',
      '\tchain forward {',
      '\t\ttype filter hook forward priority filter; policy drop;',
      '\t\tip saddr 10.0.0.0/24 ip daddr 20.0.0.1 tcp dport 80 accept',
      '\t\tip saddr 10.0.1.5 udp sport 1000-2000 drop',
      '\t\tip daddr 20.0.0.0/16 meta l4proto { tcp, udp } th dport 0-1023 accept',
      '\t\tip saddr & 255.0.255.255 == 10.0.0.1 ip daddr 20.0.0.2 meta l4proto != { tcp, udp } drop',
      '\t\tip saddr 192.168.0.0/24 meta l4proto { tcp, udp } th dport 443 drop',
      '\t\tip daddr 192.168.0.0/24 meta l4proto { tcp, udp } th sport 443 drop',
      '\t\tip saddr 1.2.3.4 ip daddr 5.6.7.8 accept',
      '\t}',
      '}',
      '',
    ].join('\n'),
    'the table deleted and defined again in one file; 7 rules where iptables has 12',
  );
  const stateful = nftables(firewall('DENY', TABLE), 7);
  t.match(
    stateful,
    /^# nfv: firewall .*\n# stateful: replies of allowed connections come back \(ct state established,related/,
  );
  t.equal(
    stateful.slice(stateful.indexOf('\ntable ip nfv\n')),
    text
      .slice(text.indexOf('\ntable ip nfv\n'))
      .replace('policy drop;\n', 'policy drop;\n\t\tct state established,related accept\n'),
    'stateful (the default): ct state established,related accept first, then the same rules',
  );
  t.match(
    nftables(firewall('ALLOW', []), 1, { stateless: true }),
    /policy accept;\n\t}\n}\n$/,
    'the default is the policy',
  );
  t.match(nftables(firewall('ALLOW', []), 1), /policy accept;\n\t\tct state established,related accept\n\t}\n}\n$/);
  t.match(
    nftables(firewall('DENY', [{ action: 'ALLOW', source: '*', destination: '*', srcPort: '2000', dstPort: '22' }]), 1),
    /\n\t\tmeta l4proto \{ tcp, udp \} th sport \. th dport \{ 2000 \. 22 \} accept\n/,
    'two single ports of TCP and UDP as a concatenation (nft would list th sport 2000 th dport 22 as @th,0,32)',
  );
  const json = JSON.parse(nftablesJson(firewall('DENY', TABLE), 7, { stateless: true })) as {
    nftables: Record<string, any>[];
  };
  t.same(
    json.nftables.slice(0, 5),
    [
      { metainfo: { json_schema_version: 1 } },
      { add: { table: { family: 'ip', name: 'nfv' } } },
      { delete: { table: { family: 'ip', name: 'nfv' } } },
      { add: { table: { family: 'ip', name: 'nfv' } } },
      {
        add: {
          chain: {
            family: 'ip',
            table: 'nfv',
            name: 'forward',
            type: 'filter',
            hook: 'forward',
            prio: 0,
            policy: 'drop',
          },
        },
      },
    ],
    'JSON: the same transaction for nft -j -f',
  );
  t.same(json.nftables[7]!.add.rule.expr, [
    {
      match: {
        op: '==',
        left: { payload: { protocol: 'ip', field: 'daddr' } },
        right: { prefix: { addr: '20.0.0.0', len: 16 } },
      },
    },
    { match: { op: '==', left: { meta: { key: 'l4proto' } }, right: { set: ['tcp', 'udp'] } } },
    { match: { op: '==', left: { payload: { protocol: 'th', field: 'dport' } }, right: { range: [0, 1023] } } },
    { accept: null },
  ]);
  t.same(json.nftables[8]!.add.rule.expr[0], {
    match: {
      op: '==',
      left: { '&': [{ payload: { protocol: 'ip', field: 'saddr' } }, '255.0.255.255'] },
      right: '10.0.0.1',
    },
  });
  t.same(json.nftables[8]!.add.rule.expr[2], {
    match: { op: '!=', left: { meta: { key: 'l4proto' } }, right: { set: ['tcp', 'udp'] } },
  });
  t.equal(json.nftables.length, 5 + 7, 'one command per rule');
  const statefulJson = JSON.parse(nftablesJson(firewall('DENY', TABLE), 7)) as { nftables: Record<string, any>[] };
  t.same(statefulJson.nftables[5], {
    add: {
      rule: {
        family: 'ip',
        table: 'nfv',
        chain: 'forward',
        expr: [
          { match: { op: 'in', left: { ct: { key: 'state' } }, right: ['established', 'related'] } },
          { accept: null },
        ],
      },
    },
  });
  t.same(
    [...statefulJson.nftables.slice(0, 5), ...statefulJson.nftables.slice(6)],
    json.nftables,
    'JSON stateful: the same commands with the ct state rule first',
  );
  const probe = spawnSync('unshare', ['-rn', 'nft', 'list', 'ruleset']);
  if (probe.status !== 0) return t.skip('nft in a network namespace is not available here (.ci/run installs nftables)');
  const dir = await scratch(t);
  writeFileSync(path.join(dir, 'fw.nft'), text);
  writeFileSync(path.join(dir, 'fw.json'), nftablesJson(firewall('DENY', TABLE), 7, { stateless: true }));
  writeFileSync(path.join(dir, 'stateful.nft'), stateful);
  writeFileSync(path.join(dir, 'stateful.json'), nftablesJson(firewall('DENY', TABLE), 7));
  const files = ['fw.nft', 'stateful.nft'].map((f) => `nft -c -f ${dir}/${f}`);
  files.push(...['fw.json', 'stateful.json'].map((f) => `nft -j -c -f ${dir}/${f}`));
  const check = spawnSync('unshare', ['-rn', 'sh', '-c', files.join(' && ')], { encoding: 'utf8' });
  t.equal(check.status, 0, `nft -c accepts all four (text and JSON, stateless and stateful): ${check.stderr}`);
});

/** Prefixes of any length (/12, /25, /28, /31, /0, /32), alone and crossed with a -1 before a fixed octet. */
const CIDR: Elements[] = [
  { action: 'ALLOW', source: '172.16.0.0/12', destination: '10.1.2.128/25', protocol: 'TCP', dstPort: '443' },
  { action: 'DENY', source: '192.168.1.48/28', destination: '10.0.0.4/31', dstPort: '0-1023' },
  { action: 'ALLOW', source: '0.0.0.0/0', destination: '1.2.3.4/32', protocol: 'UDP' },
  { action: 'DENY', source: '10.0.0.0/9', destination: '*', protocol: 'OTHER' },
  { action: 'ALLOW', source: '-1.-1.0.1', destination: '10.64.0.0/10', directional: true },
];

t.test('CIDR prefixes of any length in every format, checked by the real parsers', async (t) => {
  const node = firewall('DENY', CIDR);
  const rules = iptables(node, 7);
  for (const line of [
    '-A FORWARD -s 172.16.0.0/12 -d 10.1.2.128/25 -p tcp --dport 443 -j ACCEPT',
    '-A FORWARD -s 192.168.1.48/28 -d 10.0.0.4/31 -p tcp --dport 0:1023 -j DROP',
    '-A FORWARD -s 192.168.1.48/28 -d 10.0.0.4/31 -p udp --dport 0:1023 -j DROP',
    '-A FORWARD -d 1.2.3.4/32 -p udp -j ACCEPT',
    '-A FORWARD -s 10.0.0.0/9 -j DROP',
    '-A FORWARD -s 0.0.0.1/0.0.255.255 -d 10.64.0.0/10 -j ACCEPT',
    '-A FORWARD -s 10.64.0.0/10 -d 0.0.0.1/0.0.255.255 -j ACCEPT',
  ])
    t.ok(rules.includes(`${line}\n`), `iptables: ${line}`);
  const nft = nftables(node, 7);
  for (const line of [
    'ip saddr 172.16.0.0/12 ip daddr 10.1.2.128/25 tcp dport 443 accept',
    'ip saddr 192.168.1.48/28 ip daddr 10.0.0.4/31 meta l4proto { tcp, udp } th dport 0-1023 drop',
    'ip daddr 1.2.3.4 meta l4proto udp accept',
    'ip saddr 10.0.0.0/9 meta l4proto != { tcp, udp } drop',
    'ip saddr & 0.0.255.255 == 0.0.0.1 ip daddr 10.64.0.0/10 accept',
  ])
    t.ok(nft.includes(`\t\t${line}\n`), `nftables: ${line}`);
  // A prefix crossed with a wildcard octet: a mask that is not contiguous and cuts inside an octet.
  const crossed = firewall('DENY', [
    { action: 'DENY', source: '10.-1.0.1', destination: '*', protocol: 'OTHER' },
    { action: 'ALLOW', source: '10.16.0.0/12', destination: '*' },
  ]);
  t.match(iptables(crossed, 1), /-A FORWARD -s 10\.16\.0\.1\/255\.240\.255\.255 -p tcp -j ACCEPT\n/);
  t.match(
    nftables(crossed, 1),
    /\t\tip saddr & 255\.0\.255\.255 == 10\.0\.0\.1 meta l4proto != \{ tcp, udp \} drop\n\t\tip saddr 10\.16\.0\.0\/12 accept\n/,
    'nftables says OTHER in one rule: nothing to compile away',
  );
  const flows = openVswitch(node, 7, { stateless: true });
  t.match(flows, /priority=\d+,tcp,nw_src=172\.16\.0\.0\/12,nw_dst=10\.1\.2\.128\/25,tp_dst=0x1bb,actions=NORMAL/);
  t.ok(
    openVswitch(node, 7).includes(
      '\ntable=1,priority=60000,tcp,nw_src=172.16.0.0/12,nw_dst=10.1.2.128/25,tp_dst=0x1bb,actions=ct(commit),NORMAL\n',
    ),
    'stateful: in table 1, committed',
  );
  t.match(ipfw(node, 7, { stateless: true }), /allow tcp from 172\.16\.0\.0\/12 to 10\.1\.2\.128\/25 443\n/);
  t.match(ipfw(node, 7, { stateless: true }), /allow ip from 0\.0\.0\.1:0\.0\.255\.255 to 10\.64\.0\.0\/10\n/);
  t.match(ipfw(node, 7), /allow tcp from 172\.16\.0\.0\/12 to 10\.1\.2\.128\/25 443 keep-state\n/);
  t.match(ipfw(node, 7), /allow ip from 0\.0\.0\.1:0\.0\.255\.255 to 10\.64\.0\.0\/10 keep-state\n/);
  const conf = fortios(node, 7);
  t.match(conf, /set comment "172\.16\.0\.0\/12"\n\s+set subnet 172\.16\.0\.0 255\.240\.0\.0/);
  t.match(conf, /set comment "10\.0\.0\.4\/31"\n\s+set subnet 10\.0\.0\.4 255\.255\.255\.254/);
  const dir = await scratch(t);
  const files = {
    rules: iptables(node, 7) + iptables(crossed, 1),
    flows: flows + openVswitch(node, 7),
    nft: nftables(node, 7),
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, `fw.${name}`), text);
  writeFileSync(path.join(dir, 'crossed.nft'), nftables(crossed, 1));
  writeFileSync(path.join(dir, 'fw.json'), nftablesJson(node, 7, { sets: true }));
  writeFileSync(path.join(dir, 'sets.nft'), nftables(node, 7, { sets: true }));
  if (have('iptables-restore')) {
    for (const n of [node, crossed])
      for (const stateless of [false, true]) {
        const check = spawnSync('iptables-restore', ['--test'], { input: iptables(n, 1, { stateless }) });
        t.equal(check.status, 0, `iptables-restore --test: ${check.stderr}`);
      }
  } else t.skip('iptables-restore not installed (.ci/run installs it)');
  if (have('ovs-ofctl'))
    t.doesNotThrow(
      () => execFileSync('ovs-ofctl', ['parse-flows', path.join(dir, 'fw.flows')], { stdio: 'pipe' }),
      'ovs-ofctl parse-flows accepts the flows',
    );
  else t.skip('ovs-ofctl not installed (.ci/run installs it)');
  const probe = spawnSync('unshare', ['-rn', 'nft', 'list', 'ruleset']);
  if (probe.status !== 0) return t.skip('nft in a network namespace is not available here');
  // Loaded, each lists back as written: nft reads the prefixes and masks as nfv meant them.
  const script = ['fw.nft', 'crossed.nft']
    .map((f) => `nft -f ${dir}/${f} && nft list ruleset && nft delete table ip nfv`)
    .concat(`nft -c -f ${dir}/sets.nft`, `nft -j -c -f ${dir}/fw.json`)
    .join(' && ');
  const check = spawnSync('unshare', ['-rn', 'sh', '-c', script], { encoding: 'utf8' });
  t.equal(check.status, 0, `nft accepts text, sets and JSON: ${check.stderr}`);
  const body = (text: string) => text.slice(text.indexOf('table ip nfv {'));
  t.equal(check.stdout, body(files.nft) + body(nftables(crossed, 1)), 'nft lists both tables as written');
});

t.test('nftables --sets: runs of one action as concatenated sets, elements of a set never overlap', async (t) => {
  const allow = (source: string, destination: string, more: Partial<Elements> = {}): Elements => ({
    action: 'ALLOW',
    source,
    destination,
    ...more,
  });
  const web = { protocol: 'TCP', dstPort: '80' } as const;
  const node = firewall('DENY', [
    allow('10.0.0.-1', '20.0.0.1', web),
    allow('10.0.1.-1', '20.0.0.1', web),
    allow('10.0.0.5', '20.0.0.1', web), // inside the first: left out
    allow('10.0.0.-1', '20.0.0.-1', { protocol: 'TCP', dstPort: '80-90' }), // overlaps the first: another set
    allow('1.2.3.4', '5.6.7.8'),
    allow('1.2.3.5', '5.6.7.8'),
    allow('10.-1.0.1', '*'), // a non-contiguous mask: a rule of its own
    { action: 'DENY', source: '9.9.9.9', destination: '*' },
    allow('10.0.2.-1', '20.0.0.1', web),
  ]);
  const text = nftables(node, 1, { sets: true, stateless: true });
  t.equal(
    text.slice(text.indexOf('\t\ttype')),
    [
      '\t\ttype filter hook forward priority filter; policy drop;',
      '\t\tmeta l4proto { tcp, udp } ip saddr . ip daddr . meta l4proto . th sport . th dport ' +
        '{ 10.0.0.0/24 . 20.0.0.1 . tcp . 0-65535 . 80, 10.0.1.0/24 . 20.0.0.1 . tcp . 0-65535 . 80 } accept',
      '\t\tip saddr 10.0.0.0/24 ip daddr 20.0.0.0/24 tcp dport 80-90 accept',
      '\t\tip saddr . ip daddr { 1.2.3.4 . 5.6.7.8, 1.2.3.5 . 5.6.7.8 } accept',
      '\t\tip saddr & 255.0.255.255 == 10.0.0.1 accept',
      '\t\tip saddr 9.9.9.9 drop',
      '\t\tip saddr 10.0.2.0/24 ip daddr 20.0.0.1 tcp dport 80 accept',
      '\t}',
      '}',
      '',
    ].join('\n'),
    'a rule of the other action ends a run: the last rule stays after the drop',
  );
  const stateful = nftables(node, 1, { sets: true });
  t.equal(
    stateful.slice(stateful.indexOf('\t\ttype')),
    text
      .slice(text.indexOf('\t\ttype'))
      .replace('policy drop;\n', 'policy drop;\n\t\tct state established,related accept\n'),
    'stateful: the ct state rule before the sets',
  );
  const json = JSON.parse(nftablesJson(node, 1, { sets: true, stateless: true })) as {
    nftables: Record<string, any>[];
  };
  t.same(json.nftables[7]!.add.rule.expr[0].match.right, {
    set: [{ concat: ['1.2.3.4', '5.6.7.8'] }, { concat: ['1.2.3.5', '5.6.7.8'] }],
  });
  const statefulJson = JSON.parse(nftablesJson(node, 1, { sets: true })) as { nftables: Record<string, any>[] };
  t.same(statefulJson.nftables[5]!.add.rule.expr[0].match.left, { ct: { key: 'state' } });
  t.same(statefulJson.nftables[8], json.nftables[7], 'the same sets, one command later');
});

t.test('Open vSwitch: priorities in list order, port masks, default flow', async (t) => {
  const text = openVswitch(firewall('ALLOW', TABLE, 'br-edge:port1'), 7, { stateless: true });
  t.match(text, /add-flows br-edge FILE\n# stateless: /);
  t.notMatch(text, /table=|ct_state|ct\(/, 'stateless: one table, no conntrack');
  t.match(text, /priority=60000,tcp,nw_src=10\.0\.0\.0\/24,nw_dst=20\.0\.0\.1\/32,tp_dst=0x50,actions=NORMAL/);
  t.match(text, /udp,nw_src=10\.0\.1\.5\/32,tp_src=0x3e8\/0xfff8,actions=drop/);
  t.match(text, /tcp,nw_dst=20\.0\.0\.0\/16,tp_dst=0x0\/0xfc00,actions=NORMAL/, 'a range from 0 keeps its port match');
  t.match(text, /priority=0,actions=NORMAL\n$/);
  const priorities = [...text.matchAll(/priority=(\d+)/g)].map((m) => Number(m[1]));
  t.same(
    priorities,
    [...priorities].sort((a, b) => b - a),
    'earlier rules have higher priorities',
  );
  const stateful = openVswitch(firewall('ALLOW', TABLE, 'br-edge:port1'), 7);
  const flowLines = (flows: string) => flows.split('\n').filter((l) => l && !l.startsWith('#'));
  t.match(stateful, /add-flows br-edge FILE\n# stateful: replies of allowed connections come back \(ct_state \+est/);
  t.same(
    flowLines(stateful).slice(0, 4),
    [
      'table=0,priority=1,ip,ct_state=-trk,actions=ct(table=1)',
      'table=0,priority=0,actions=NORMAL',
      'table=1,priority=60001,ip,ct_state=+trk+est,actions=NORMAL',
      'table=1,priority=60001,ip,ct_state=+trk+rel,actions=NORMAL',
    ],
    'IPv4 through conntrack into table 1, where tracked and related packets pass first; others by the default',
  );
  t.same(
    flowLines(stateful).slice(4),
    flowLines(text).map(
      (l) => `table=1,${l.replace(/actions=NORMAL$/, 'actions=ct(commit),NORMAL').replace(/^priority=0,/, '$&ip,')}`,
    ),
    'then the same flows in table 1, a packet they let through committed (its replies are +est); the default for IPv4',
  );
  const denying = openVswitch(firewall('DENY', TABLE), 7);
  t.match(denying, /\ntable=0,priority=0,actions=drop\n/);
  t.match(denying, /\ntable=1,priority=0,ip,actions=drop\n$/, 'a drop is never committed: its replies find nothing');
  if (!have('ovs-ofctl')) return t.skip('ovs-ofctl not installed (.ci/run installs it)');
  const dir = await scratch(t);
  for (const [name, flows] of Object.entries({ stateless: text, stateful, denying })) {
    const file = path.join(dir, name);
    writeFileSync(file, flows);
    t.doesNotThrow(
      () => execFileSync('ovs-ofctl', ['parse-flows', file], { stdio: 'pipe' }),
      `ovs-ofctl parse-flows accepts the ${name} file`,
    );
  }
  const parsed = execFileSync('ovs-ofctl', ['parse-flows', path.join(dir, 'stateful')], { encoding: 'utf8' });
  t.match(parsed, /ADD table:1 priority=60001,ct_state=\+est\+trk,ip actions=NORMAL/, 'ct_state read as meant');
  t.match(parsed, /ADD priority=1,ct_state=-trk,ip actions=ct\(table=1\)/);
  t.match(
    parsed,
    /ADD table:1 priority=60000,tcp,nw_src=10\.0\.0\.0\/24,nw_dst=20\.0\.0\.1,tp_dst=80 actions=ct\(commit\),NORMAL/,
  );
});

t.test('ipfw and FortiOS', async (t) => {
  const script = ipfw(firewall('DENY', TABLE), 7, { stateless: true });
  t.match(script, /^#!\/bin\/sh\n/);
  t.notMatch(script, /-state/, 'stateless: no check-state, no keep-state');
  t.match(script, /\$\{cmd\} add 100 allow tcp from 10\.0\.0\.0\/24 to 20\.0\.0\.1\/32 80\n/);
  t.match(script, /deny udp from 10\.0\.1\.5\/32 1000-2000 to any\n/);
  t.match(script, /from 10\.0\.0\.1:255\.0\.255\.255 to 20\.0\.0\.2\/32/);
  t.match(script, /\$\{cmd\} add 65534 deny ip from any to any\n$/);
  const stateful = ipfw(firewall('DENY', TABLE), 7);
  t.match(stateful, /\n# stateful: replies of allowed connections come back \(check-state first, keep-state/);
  t.match(
    stateful,
    /\n\$\{cmd\} -f flush\n\$\{cmd\} add 1 check-state\n\$\{cmd\} add 100 /,
    'check-state before every rule',
  );
  t.match(stateful, /\$\{cmd\} add 100 allow tcp from 10\.0\.0\.0\/24 to 20\.0\.0\.1\/32 80 keep-state\n/);
  t.match(stateful, /deny udp from 10\.0\.1\.5\/32 1000-2000 to any\n/, 'a deny rule keeps no state');
  t.match(stateful, /\$\{cmd\} add 65534 deny ip from any to any\n$/);
  t.same(
    stateful.split('\n').filter((l) => l.startsWith('${cmd} add ') && !l.includes('check-state')),
    script
      .split('\n')
      .filter((l) => l.startsWith('${cmd} add '))
      .map((l) => (/ add \d+ allow /.test(l) ? `${l} keep-state` : l)),
    'the same rules under the same numbers, allow rules with keep-state',
  );
  t.match(
    ipfw(firewall('ALLOW', TABLE), 7),
    /\$\{cmd\} add 65534 allow ip from any to any keep-state\n$/,
    'a default that allows keeps state too (conntrack tracks what a policy ACCEPT lets through)',
  );
  t.match(ipfw(firewall('ALLOW', TABLE), 7, { stateless: true }), /\$\{cmd\} add 65534 allow ip from any to any\n$/);
  const conf = fortios(firewall('ALLOW', TABLE), 7);
  t.match(conf, /^# nfv: .*\n# stateful: as FortiOS policies always are/, 'FortiOS: stateful, and says so');
  t.match(conf, /set subnet 10\.0\.0\.0 255\.255\.255\.0/);
  t.match(conf, /set type wildcard\n\s+set wildcard 10\.0\.0\.1 255\.0\.255\.255/);
  t.match(conf, /set tcp-portrange 80-80:0-65535/);
  t.match(conf, /set udp-portrange 0-65535:1000-2000/);
  // TABLE's `0-1023` (ANY): both protocols, port 0 included (it was once written 1-1023).
  t.match(conf, /set tcp-portrange 0-1023:0-65535\n\s+set udp-portrange 0-1023:0-65535\n/);
  t.match(conf, /set name "nfv-7-default"[\s\S]*set action accept/);
  t.notMatch(conf, /uuid/, 'no random ids: the same node gives the same file');
});

t.test('FortiOS: port ranges from 0 are written from 0 (0-0 was the empty 1-0)', async (t) => {
  const conf = fortios(
    firewall('DENY', [
      { action: 'ALLOW', source: '*', destination: '*', protocol: 'TCP', dstPort: '0' },
      { action: 'ALLOW', source: '*', destination: '*', protocol: 'UDP', srcPort: '0-79', dstPort: '53' },
    ]),
    1,
  );
  const ranges = [...conf.matchAll(/set (tcp|udp)-portrange (\S+)/g)].map((m) => `${m[1]} ${m[2]}`);
  t.same(ranges, ['tcp 0-0:0-65535', 'udp 53-53:0-79']);
  for (const r of ranges) {
    const [lo, hi] = r.split(' ')[1]!.split(/[-:]/).map(Number);
    t.ok(lo! <= hi!, `${r}: a range low to high`);
  }
});

t.test('file names, and rules that cannot be deployed', async (t) => {
  t.equal(deployFile(firewall('DENY', TABLE), 7, 'iptables').filename, 'iptables_fw1_7.rules');
  t.equal(deployFile(firewall('DENY', TABLE, ''), 7, 'ovs').filename, 'ovs_30.0.0.1_7.flows');
  t.equal(deployFile(firewall('DENY', TABLE), 7, 'nftables').filename, 'nftables_fw1_7.nft');
  t.equal(deployFile(firewall('DENY', TABLE.slice(0, 1)), 7, 'bpf').filename, 'bpf_fw1_7.sh');
  // pcn-iptables takes single ports: a range beyond its bound is refused, never approximated (bpf.test.ts).
  t.throws(() => deployFile(firewall('DENY', TABLE), 7, 'bpf'), {
    status: 400,
    message: /^node 30\.0\.0\.1: rule 2: source ports 1000-2000 \(1001 ports\) would be 1001 pcn-iptables rules/,
  });
  const json = deployFile(firewall('DENY', TABLE), 7, 'nftables', { json: true, sets: true });
  t.equal(json.filename, 'nftables_fw1_7.json');
  t.doesNotThrow(() => JSON.parse(json.content));
  t.throws(() => deployFile(firewall('DENY', TABLE), 7, 'iptables', { sets: true }), /sets: only nftables/);
  t.throws(() => deployFile(firewall('DENY', TABLE), 7, 'ovs', { json: true }), /ovs has no JSON form/);
  t.throws(() => deployFile(firewall('DENY', TABLE), 7, 'fortios', { stateless: true }), {
    status: 400,
    message: /^stateless: FortiOS policies are stateful/,
  });
  const small = firewall('DENY', TABLE.slice(0, 1));
  for (const format of ['iptables', 'nftables', 'ovs', 'ipfw', 'bpf'] as const) {
    const line = (options: { stateless?: boolean }) => deployFile(small, 7, format, options).content.split('\n');
    t.match(
      line({}).find((l) => l.includes('stateful')),
      /^# stateful: /,
      `${format}: stateful by default`,
    );
    t.match(
      line({ stateless: true }).find((l) => l.includes('stateless:')),
      /^# stateless: /,
      `${format}: --stateless`,
    );
  }
  t.throws(
    () => iptables(firewall('DENY', [{ action: 'ALLOW_COND', source: '*', destination: '*' }]), 1),
    /ALLOW_COND cannot be deployed/,
  );
  t.throws(() => iptables({ name: 'x', functionalType: 'NAT' }, 1), /not a firewall/);
});

t.test('?stateless=true on /fwd/deploy/*, nfv deploy --stateless', async (t) => {
  const ws = await workspace(t);
  const stored = await ok(t, ws, 'POST', '/fwd/nodes', firewall('DENY', TABLE.slice(0, 1)), 201);
  const id = String(stored.id);
  const heads = {
    getIptables: /\n-A FORWARD -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n/,
    getNftables: /\n\t\tct state established,related accept\n/,
    getOpenVswitch: /\ntable=1,priority=60001,ip,ct_state=\+trk\+est,actions=NORMAL\n/,
    getIpfw: /\n\$\{cmd\} add 1 check-state\n/,
    getBpfFirewall: /\n\$\{cmd\} FORWARD append conntrack=ESTABLISHED action=ACCEPT\n/,
  };
  for (const [segment, head] of Object.entries(heads)) {
    const target = `/fwd/deploy/${segment}/${id}`;
    t.match(await ok(t, ws, 'GET', target), head, `${segment}: stateful by default`);
    t.match(await ok(t, ws, 'GET', `${target}?stateless=false`), head, `${segment}: ?stateless=false, the same`);
    const stateless = await ok(t, ws, 'GET', `${target}?stateless=true`);
    t.notMatch(stateless, head, `${segment}: ?stateless=true, the rules alone`);
    t.match(stateless, /\n# stateless: /);
  }
  const json = await ok(t, ws, 'GET', `/fwd/deploy/getNftables/${id}?stateless=true&sets=true&format=json`);
  t.notMatch(json, /"ct"/, 'nftables JSON: stateless with the other options');
  t.match(await ok(t, ws, 'GET', `/fwd/deploy/getNftables/${id}?format=json`), /"left":\{"ct":\{"key":"state"\}\}/);
  await refused(
    t,
    ws,
    'GET',
    `/fwd/deploy/getVendorFirewall/${id}?stateless=true`,
    undefined,
    400,
    /^stateless: FortiOS/,
  );
  t.match(
    await ok(t, ws, 'GET', `/fwd/deploy/getVendorFirewall/${id}`),
    /\n# stateful: as FortiOS policies always are/,
  );
  await refused(
    t,
    ws,
    'GET',
    `/fwd/deploy/getIptables/${id}?stateless=yes`,
    undefined,
    400,
    /^stateless: .*yes.* is not/,
  );
  // The CLI's own run in this process: the answers and exit codes are the point, a bin/nfv child cost ~0.4 CPU s each.
  const run = (args: string[]) => nfvInProcess(args, { workspace: ws.dir });
  const stateful = await run(['deploy', 'iptables', id]);
  t.equal(stateful.code, 0, stateful.stderr);
  t.match(stateful.stdout, heads.getIptables, 'nfv deploy: stateful by default');
  const stateless = await run(['deploy', 'iptables', id, '--stateless']);
  t.equal(stateless.code, 0, stateless.stderr);
  t.notMatch(stateless.stdout, /conntrack/, 'nfv deploy --stateless: the rules alone');
  const nft = await run(['deploy', 'nftables', id, '--stateless', '--sets']);
  t.equal(nft.code, 0, nft.stderr);
  t.notMatch(nft.stdout, /ct state/);
  const vendor = await run(['deploy', 'vendor', id, '--stateless']);
  t.equal(vendor.code, 2);
  t.match(vendor.stderr, /stateless: FortiOS policies are stateful/);
  const change = await run(['deploy', 'iptables', '2', '30.0.0.1', '--from', '1', '--stateless']);
  t.equal(change.code, 2);
  t.match(change.stderr, /^nfv: --stateless: change scripts \(--from\) are for stateful files\n/);
});
