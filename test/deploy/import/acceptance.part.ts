/**
 * Whatever iptables reads, nfv reads (issue 47, item 2): generated iptables-save files of every form real dumps take
 * (tables filter/nat/mangle/raw, built-in chains with and without their `:CHAIN POLICY [p:b]` line, user chains by
 * `:NAME -` or `-N`, counters, comments, quoting, negations old and new, targets before matches, `-I`, `-P`, `-F`,
 * blank and comment lines) and the real fixtures are each loaded by iptables-restore in a network namespace of
 * their own; every file the kernel takes, nfv parses: no reading refusal. A refusal about meaning (a translation
 * before filtering, an IPv6 address, no FORWARD chain) is counted apart, as the modelling refusal it is.
 *
 * The oracle is a real load, not `iptables-restore --test`: iptables-nft's --test skips the lookup of chains and
 * takes a jump to a chain that does not exist. Likewise for nft: 150 generated rulesets (ip and inet tables, base and
 * regular chains, sets, concatenations, verdict maps, jumps, gotos, returns, statements dumps carry) that `nft -c -f`
 * checks are loaded and listed as JSON by nft, as `nfv import` has nft do it, and nfv reads every listing.
 */
import { spawnSync } from 'node:child_process';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { importRules } from '../../../src/deploy/import/index.js';
import { parseIptables } from '../../../src/deploy/import/iptables.js';
import { readNftables } from '../../../src/deploy/import/nftables.js';
import { NfvError } from '../../../src/model/errors.js';
import { ROOT, runProcess, scratch, seeded } from '../../helpers.js';
import { libnft, skipLibnft } from '../nft-harness.js';

const probe = spawnSync('unshare', ['-rn', 'iptables-restore', '--version'], { encoding: 'utf8' });
const kernelWhy = probe.status !== 0 ? `iptables-restore in a namespace: ${(probe.stderr || '').trim()}` : '';
if (process.env.CI === 'true' && kernelWhy) t.fail(`${kernelWhy}; .ci/run must provide it`);

const BUILT_IN: Record<string, string[]> = {
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  raw: ['PREROUTING', 'OUTPUT'],
};

/** One iptables-save-like file. */
function generate(seed: number): string {
  const { rnd, pick, chance } = seeded(seed);
  const out: string[] = [];
  const neg = (s: string) => (chance(0.15) ? `! ${s}` : s);
  const address = () =>
    pick([
      `10.${Math.floor(rnd() * 4)}.0.0/16`,
      `192.168.${Math.floor(rnd() * 3)}.${Math.floor(rnd() * 255)}`,
      '0/0',
      '10/8',
      '172.16.0.0/255.240.0.0',
      '192.168.1.7/32',
      '10.1.2.3/24',
      '1.2.3.4,5.6.7.8',
    ]);
  const port = () => pick(['22', '80', '443', '1024:65535', ':1023', '53', 'ssh', 'https', 'domain', '8000:']);
  const comment = () => pick(['"x y"', 'plain', '"allow \\"web\\" in"', '"with # hash"', '"-j DROP inside"']);
  // iptables refuses a negated list of addresses, and iptables-nft a negated 0/0.
  const addressMatch = (opt: string) => {
    const a = address();
    return a.includes(',') || a === '0/0' ? `${opt} ${a}` : `${neg(opt)} ${a}`;
  };
  const matches = (table: string, chain: string): string[] => {
    const m: string[] = [];
    if (chance(0.5)) m.push(addressMatch('-s'));
    if (chance(0.4)) m.push(addressMatch('-d'));
    const proto = pick(['tcp', 'udp', 'icmp', 'all', 'none', 'none', '47', 'TCP']);
    if (proto === 'tcp' || proto === 'TCP') {
      const how = pick(['-m tcp ', '', '-m multiport ']);
      if (how === '-m multiport ') m.push(`-p tcp -m multiport ${neg('--dports')} 22,80,1000:2000`);
      else {
        const parts = [`-p ${proto}`, how];
        if (chance(0.6)) parts.push(`${neg('--dport')} ${port()}`);
        if (chance(0.2)) parts.push(`--sport ${port()}`);
        if (chance(0.2)) parts.push(pick(['--syn', '! --syn', '--tcp-flags SYN,RST,ACK SYN', '--tcp-flags ALL NONE']));
        m.push(parts.join(' ').replace(/ +/g, ' ').trim());
      }
    } else if (proto === 'udp') m.push(`-p udp ${chance(0.5) ? '-m udp ' : ''}--dport ${port()}`);
    else if (proto === 'icmp')
      m.push(pick(['-p icmp', '-p icmp -m icmp --icmp-type 8', '-p icmp --icmp-type echo-request']));
    else if (proto === 'all') m.push('-p all');
    else if (proto !== 'none') m.push(`${neg('-p')} ${proto}`);
    // -i where a packet has come in, -o where it goes out (iptables refuses the others).
    const ways = [
      ...(['OUTPUT', 'POSTROUTING'].includes(chain) ? [] : ['-i']),
      ...(['PREROUTING', 'INPUT'].includes(chain) ? [] : ['-o']),
    ];
    if (chance(0.3) && ways.length) m.push(`${neg(pick(ways))} ${pick(['eth0', 'eth1', 'ppp+', 'br-lan', 'lo'])}`);
    if (chance(0.3) && table !== 'raw')
      m.push(
        pick([
          '-m state --state NEW',
          '-m conntrack --ctstate RELATED,ESTABLISHED',
          '-m conntrack ! --ctstate INVALID',
        ]),
      );
    if (chance(0.2)) m.push(`-m comment --comment ${comment()}`);
    if (chance(0.1)) m.push('-m iprange --src-range 10.0.0.1-10.0.0.9');
    if (chance(0.1))
      m.push(
        pick([
          '-m limit --limit 5/min --limit-burst 10',
          '-m addrtype --dst-type LOCAL',
          '-m pkttype --pkt-type unicast',
        ]),
      );
    if (chance(0.05)) m.push('-f');
    return m;
  };
  const tables = ['raw', 'mangle', 'nat', 'filter'].filter(() => chance(0.7));
  if (!tables.includes('filter') && chance(0.8)) tables.push('filter');
  if (chance(0.3)) out.push(`# Generated by iptables-save v1.8.9 on day ${seed}`);
  for (const table of tables) {
    out.push(`*${table}`);
    const builtIn = BUILT_IN[table]!;
    const counters = () => `[${Math.floor(rnd() * 99)}:${Math.floor(rnd() * 9999)}]`;
    for (const c of builtIn)
      if (chance(0.6)) out.push(`:${c} ${table === 'filter' ? pick(['ACCEPT', 'DROP']) : 'ACCEPT'} ${counters()}`);
    const users = Array.from({ length: Math.floor(rnd() * 3) }, (_, k) => `${table.toUpperCase()}_U${k}`);
    const byDash = chance(0.3);
    for (const u of users) if (!byDash) out.push(`:${u} - [0:0]`);
    if (chance(0.2)) out.push('');
    for (const u of users) if (byDash) out.push(`-N ${u}`);
    if (table === 'filter' && chance(0.2)) out.push(`-P FORWARD ${pick(['ACCEPT', 'DROP'])}`);
    const chains = [...builtIn.filter((c) => table !== 'filter' || c !== 'OUTPUT'), ...users];
    const count = Math.floor(rnd() * 12);
    for (let k = 0; k < count; k++) {
      const chain = pick(chains);
      const user = users.includes(chain);
      // A user chain jumps only to a later one, so no loop: iptables refuses loops, and so does nfv.
      const later = users.slice(user ? users.indexOf(chain) + 1 : 0);
      // The nat table takes no DROP, REJECT only filter's chains.
      const targets = [
        'ACCEPT',
        table === 'nat' ? 'RETURN' : 'DROP',
        table === 'filter' ? '-j REJECT --reject-with icmp-port-unreachable' : 'ACCEPT',
        'LOG --log-prefix "FW drop: " --log-level 4',
        'RETURN',
        ...later.map((u) => (chance(0.3) ? `GOTO ${u}` : u)),
      ];
      if (table === 'nat' && (chain === 'PREROUTING' || chain === 'OUTPUT'))
        targets.push('DNAT --to-destination 10.0.0.9:8080', 'REDIRECT --to-ports 3128');
      if (table === 'nat' && chain === 'POSTROUTING') targets.push('MASQUERADE', 'SNAT --to-source 198.51.100.1');
      if (table === 'mangle') targets.push('MARK --set-mark 0x1', 'TCPMSS --clamp-mss-to-pmtu');
      if (table === 'raw') targets.push('CT --notrack', 'NOTRACK');
      let target = pick(targets);
      if (target === 'TCPMSS --clamp-mss-to-pmtu')
        target = '-p tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu';
      if (target === 'REDIRECT --to-ports 3128') target = '-p tcp -j REDIRECT --to-ports 3128';
      if (target === 'DNAT --to-destination 10.0.0.9:8080') target = '-p tcp -j DNAT --to-destination 10.0.0.9:8080';
      const jump = target.startsWith('-')
        ? target
        : target.startsWith('GOTO ')
          ? `-g ${target.slice(5)}`
          : `-j ${target}`;
      let m = matches(table, chain);
      // TCP options of a target need -p tcp once: drop a protocol the matches gave.
      if (jump.startsWith('-p tcp'))
        m = m.filter((x) => !/(^|\s)-p\s/.test(x) && !/--(d|s)port|--syn|--tcp-flags|multiport|icmp/.test(x));
      const first = chance(0.1) && !jump.startsWith('-p') ? [jump, ...m] : [...m, jump];
      const command = chance(0.1) ? `-I ${chain}${chance(0.5) ? ' 1' : ''}` : `-A ${chain}`;
      const counter = chance(0.15) ? `[${Math.floor(rnd() * 9)}:${Math.floor(rnd() * 999)}] ` : '';
      const four = chance(0.05) ? ' -4' : '';
      out.push(`${counter}${command}${four} ${first.join(' ')}${chance(0.1) ? '  ' : ''}`);
      if (chance(0.05)) out.push('# a comment line');
    }
    if (chance(0.05)) out.push('-Z');
    out.push('COMMIT');
    if (chance(0.3)) out.push(`# Completed on day ${seed}`);
  }
  return `${out.join('\n')}\n`;
}

/** How nfv takes a file: parsed, or refused for reading or for modelling, with the first reason. */
function nfvTakes(text: string, file: string): { reading?: string; modelling?: string } {
  try {
    const parsed = parseIptables(text, file);
    const refused = [...parsed.chains.values()].flatMap((c) => c.rules).find((r) => r.refused && !r.modelling);
    if (refused) return { reading: `${refused.where}: ${refused.refused}` };
  } catch (e) {
    if (e instanceof NfvError) return { reading: e.message };
    throw e;
  }
  try {
    importRules('iptables', text, file);
    return {};
  } catch (e) {
    if (e instanceof NfvError) return { modelling: e.message };
    throw e;
  }
}

t.test('every file iptables-restore loads, nfv parses', { skip: kernelWhy || false }, async (t) => {
  const dir = await scratch(t);
  const files: { name: string; text: string }[] = [];
  for (let k = 0; k < 300; k++) files.push({ name: `gen${k}.rules`, text: generate(4700 + k) });
  const fixtures = path.join(ROOT, 'test', 'fixtures', 'iptables');
  for (const f of (await readdir(fixtures)).filter((f) => f.endsWith('.rules')).sort())
    files.push({ name: f, text: await readFile(path.join(fixtures, f), 'utf8') });
  const paths = files.map((f) => path.join(dir, f.name));
  for (const [k, f] of files.entries()) await writeFile(paths[k]!, f.text);
  // All files in one namespace, in turn: iptables-restore replaces each table a file names, and whether a file loads
  // depends on those tables only (a table it does not name keeps the one before's rules, which no rule of it can
  // reach); a namespace per file cost more CPU than the loads.
  const script = 'for f do if iptables-restore "$f" 2>/dev/null; then echo 1; else echo 0; fi; done';
  const r = await runProcess(t, 'unshare', ['-rn', 'sh', '-c', script, 'sh', ...paths], '');
  const kernel = r.stdout.trim().split('\n');
  t.equal(kernel.length, files.length, 'the kernel answered for every file');
  const gaps: string[] = [];
  let loaded = 0;
  let modelling = 0;
  let nfvOnly = 0;
  const reasons = new Map<string, number>();
  for (const [k, f] of files.entries()) {
    const takes = nfvTakes(f.text, f.name);
    if (kernel[k] !== '1') {
      if (!takes.reading) nfvOnly++;
      continue;
    }
    loaded++;
    if (takes.reading) gaps.push(`${takes.reading}`);
    if (takes.modelling) {
      modelling++;
      const kind = takes.modelling
        .replace(/^\S+: /, '')
        .replace(/\d+/g, 'N')
        .slice(0, 50);
      reasons.set(kind, (reasons.get(kind) ?? 0) + 1);
    }
  }
  t.same(gaps.slice(0, 5), [], `the kernel loads ${loaded} of ${files.length} files; nfv reads every one`);
  t.ok(loaded >= files.length * 0.6, `most generated files are ones the kernel loads (${loaded})`);
  t.ok(modelling > 0, `${modelling} of them nfv reads and cannot model (refused as such, not as unreadable)`);
  for (const [why, n] of [...reasons].sort((a, b) => b[1] - a[1])) t.comment(`modelling refusal x${n}: ${why}`);
  t.comment(`${files.length - loaded} files the kernel refuses; nfv reads ${nfvOnly} of them`);
});

t.test('built-in chains without their declaration line, and what iptables-restore reads besides', async (t) => {
  const cases: [string, string][] = [
    [
      'nat POSTROUTING, no :POSTROUTING line',
      '*nat\n-A POSTROUTING -o eth0 -j MASQUERADE\nCOMMIT\n*filter\n-A FORWARD -s 10.0.0.0/8 -j ACCEPT\nCOMMIT\n',
    ],
    [
      '-N, -P, -I N',
      '*filter\n-N X\n-P FORWARD DROP\n-A X -j ACCEPT\n-I FORWARD -j X\n-I FORWARD 1 -s 1.1.1.1 -j DROP\nCOMMIT\n',
    ],
    [
      'matches after the target',
      '*filter\n-A FORWARD -p udp --dport 53 -j ACCEPT -m comment --comment "a b"\nCOMMIT\n',
    ],
    ['-p after its match, service names', '*filter\n-A FORWARD -m tcp --dport ssh -p tcp -j ACCEPT\nCOMMIT\n'],
    ['-p icmp --icmp-type without -m icmp', '*filter\n-A FORWARD -p icmp --icmp-type 8 -j ACCEPT\nCOMMIT\n'],
    ['partial addresses', '*filter\n-A FORWARD -s 0/0 -d 10/8 -j ACCEPT\nCOMMIT\n'],
  ];
  for (const [name, text] of cases) t.same(nfvTakes(text, 'f'), {}, name);
  const fwd = (text: string) => importRules('iptables', text, 'f').report;
  t.equal(fwd(cases[1]![1]).defaultAction, 'DENY', '-P FORWARD DROP is the policy');
  t.same(
    fwd(cases[1]![1]).lines.map((l) => l.line),
    [6, 5, 4],
    '-I puts a rule first, -I 1 before it; the jump reaches X',
  );
  t.match(fwd(cases[0]![1]).notes.join('\n'), /filter\/FORWARD has no :FORWARD line; its policy is ACCEPT/);
  // A second section of a table replaces the first, as iptables-restore does.
  const twice = '*filter\n-A FORWARD -s 1.1.1.1 -j ACCEPT\nCOMMIT\n*filter\n-A FORWARD -s 2.2.2.2 -j DROP\nCOMMIT\n';
  t.same(
    fwd(twice).lines.map((l) => l.text),
    ['-A FORWARD -s 2.2.2.2 -j DROP'],
    'the later *filter section replaces the earlier',
  );
  t.same(nfvTakes('*filter\n-A FORWARD -6 -s ::1 -j ACCEPT\nCOMMIT\n', 'f'), {}, '-6 rules are skipped');
  t.match(
    nfvTakes('*filter\n-A FOO -j ACCEPT\nCOMMIT\n', 'f').reading ?? '',
    /chain FOO is not declared in table filter/,
  );
  t.match(nfvTakes('*filter\n-A FORWARD -j ACCEPT\n', 'f').reading ?? '', /no COMMIT/);
  t.match(
    nfvTakes('*nat\n-A PREROUTING -p tcp -j DNAT --to-destination 10.0.0.1\nCOMMIT\n*filter\nCOMMIT\n', 'f')
      .modelling ?? '',
    /DNAT in table nat PREROUTING/,
    'a translation before filtering is a modelling refusal',
  );
  t.match(nfvTakes('*filter\n-A FORWARD -s 2001:db8::1 -j DROP\nCOMMIT\n', 'f').modelling ?? '', /IPv6/);
});

/** One nft ruleset text: tables ip and inet, base and regular chains, sets, maps, and the statements dumps carry. */
function generateNft(seed: number): string {
  const { rnd, pick, chance } = seeded(seed);
  const matches = [
    'ip saddr 10.0.0.0/8',
    'ip daddr != 192.168.1.0/24',
    'ip saddr 172.16.0.1-172.16.0.9',
    'tcp dport { 22, 80, 443 }',
    'udp dport 53',
    'tcp dport 1000-2000',
    'tcp sport != 1024-65535',
    'th dport 5060',
    'meta l4proto { tcp, udp }',
    'meta l4proto icmp',
    'ip protocol gre',
    'ct state established,related',
    'ct state new',
    'ct state invalid',
    'tcp flags & (syn | ack) == syn',
    'iifname "eth0"',
    'oifname != "ppp*"',
    'ip saddr @blocked',
    'ip saddr . tcp dport { 10.0.0.1 . 22, 10.0.0.2 . 80 }',
    'meta nfproto ipv4',
    'icmp type echo-request',
    'meta mark 0x1',
    'limit rate 5/minute',
    'ip6 saddr ::1',
    'fib daddr type local',
  ];
  const statements = ['counter', 'log prefix "fw: "', 'meta mark set 0x2', 'counter packets 0 bytes 0'];
  const table = pick(['ip', 'inet']);
  const users = Array.from({ length: Math.floor(rnd() * 3) }, (_, k) => `c${k}`);
  const verdicts = (k: number) => [
    'accept',
    'drop',
    'reject',
    ...(users.length > k ? ['return'] : []),
    ...users.slice(k).flatMap((u) => [`jump ${u}`, `goto ${u}`]),
    `ip daddr vmap { 10.5.0.1 : accept, 10.5.0.2 : drop }`,
  ];
  const rules = (k: number) =>
    Array.from({ length: Math.floor(rnd() * 6) }, () => {
      const parts = Array.from({ length: Math.floor(rnd() * 3) }, () => pick(matches));
      if (chance(0.3)) parts.push(pick(statements));
      const v = pick(verdicts(k));
      parts.push(v);
      if (chance(0.1) && !v.includes('vmap')) parts.push('comment "a rule"');
      return `    ${[...new Set(parts)].join(' ')}`;
    });
  const out = [`table ${table} t${seed} {`];
  out.push(
    '  set blocked {',
    '    type ipv4_addr',
    '    flags interval',
    '    elements = { 10.9.0.0/16, 192.0.2.7 }',
    '  }',
  );
  const hook = pick(['forward', 'forward', 'input']);
  out.push(
    '  chain base {',
    `    type filter hook ${hook} priority ${pick(['0', 'filter', '-10'])}; policy ${pick(['accept', 'drop'])};`,
  );
  out.push(...rules(0), '  }');
  users.forEach((u, k) => out.push(`  chain ${u} {`, ...rules(k + 1), '  }'));
  if (chance(0.3))
    out.push(
      '  chain pre {',
      '    type nat hook prerouting priority dstnat; policy accept;',
      `    ${pick(['tcp dport 8080 dnat ip to 10.0.0.5:80', 'tcp dport 8080 redirect to :3128', 'counter'])}`,
      '  }',
    );
  out.push('}', '');
  return out.join('\n');
}

const nftWhy = kernelWhy || skipLibnft || false;
t.test('every ruleset nft -c -f checks, nfv reads once nft has listed it', { skip: nftWhy }, async (t) => {
  const dir = await scratch(t);
  const paths: string[] = [];
  for (let k = 0; k < 150; k++) {
    paths.push(path.join(dir, `gen${k}.nft`));
    await writeFile(paths[k]!, generateNft(9100 + k));
  }
  // Each ruleset checked, loaded and listed as JSON (what `nfv import` asks nft for) on an empty ruleset: one
  // namespace, flushed before each (a namespace and four processes per ruleset cost more CPU than nft's work), nft's
  // commands through libnftables as nft's main() calls it (libnft.py).
  const done = await libnft(
    t,
    paths.map((f) => [
      ['nft', 'flush', 'ruleset'],
      ['nft', '-c', '-f', f],
      ['nft', '-f', f],
      ['nft', '-j', 'list', 'ruleset'],
    ]),
  );
  // The flush and the loads write nothing: a step that did all four wrote the listing alone.
  const unflushed = done.find((d) => d.code !== 0 && d.ran === 1);
  if (unflushed) throw new Error(`nft flush ruleset failed: ${unflushed.stderr}`);
  const listed = done.map((d) => (d.code === 0 ? d.stdout.trim() : 'REFUSED'));
  const gaps: string[] = [];
  let checked = 0;
  let modelling = 0;
  for (const [k, json] of listed.entries()) {
    if (json === 'REFUSED') continue;
    checked++;
    try {
      const set = readNftables(json, `gen${k}.json`);
      const refused = [...set.chains.values()].flatMap((c) => c.rules).find((x) => x.refused && !x.modelling);
      if (refused) gaps.push(`gen${k}: ${refused.where}: ${refused.refused} (${refused.text})`);
      else if ([...set.chains.values()].some((c) => c.rules.some((x) => x.modelling))) modelling++;
    } catch (e) {
      if (!(e instanceof NfvError)) throw e;
      // Nothing at the hook asked for is a choice of what to import, not a reading gap.
      if (/no base chain of type filter/.test(e.message)) modelling++;
      else gaps.push(e.message);
    }
  }
  t.same(gaps.slice(0, 5), [], `nft checks and lists ${checked} of ${listed.length} rulesets; nfv reads every one`);
  t.ok(checked >= listed.length * 0.5, `most generated rulesets are ones nft takes (${checked})`);
  t.comment(`${modelling} of them read and refused for modelling (dnat before filtering, no forward hook)`);
});
