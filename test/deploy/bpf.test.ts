/**
 * The Polycube pcn-iptables (bpf) script, judged by parts that share nothing with src/deploy:
 * - the real shell: `sh -n`, then the script run with a stand-in polycubectl that records its arguments (and fails
 *   on demand: the script stops there);
 * - a checker of pcn-iptables' grammar written here from its YANG model (chains, `set default`, `rule del`,
 *   `append`/`insert id=N`, the rule fields and their values);
 * - each line mapped 1:1 to iptables-restore input, which the real parser checks (`--test`);
 * - first-match verdicts of sampled packets (random, and the edges of every rule's ranges): the polycubectl lines
 *   read as pcn-iptables reads them against the node's own rules as test/engine/packets.ts decides them;
 * - refusals beyond the documented bounds: an NfvError 400 naming the node and the rule;
 * - stateful by default: the chain starts with `conntrack=ESTABLISHED` and `conntrack=RELATED` ACCEPT rules, which
 *   match no sampled packet (each is the first of its connection: NEW); with `stateless`, the rules alone.
 * Without iptables-restore its check is skipped, saying why (under CI=true that fails: .ci/run installs it).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { BPF_MAX_LINES_PER_RULE, BPF_MAX_RULES, BPF_STATEFUL, bpf } from '../../src/deploy/bpf.js';
import { DEPLOY_FORMATS, deployFile } from '../../src/deploy/index.js';
import { NfvError } from '../../src/model/errors.js';
import type { Elements, Node } from '../../src/model/types.js';
import { behave, everything, octets, type Box } from '../engine/packets.js';
import { scratch } from '../helpers.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './rules-except.part.js';

// Not an address: packets.ts would take it for the firewall's own and keep packets to it.
const firewall = (defaultAction: 'ALLOW' | 'DENY', elements: Elements[], name = 'edge-fw'): Node => ({
  id: 7,
  name,
  functionalType: 'FIREWALL',
  configuration: { name: 'c', description: 'fw1', firewall: { defaultAction, elements } },
});

/** Every kind of rule within the bounds: prefixes, -1 before a fixed octet, ranges, OTHER, directional, ANY. */
const TABLE: Elements[] = [
  { id: 1, action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.1', protocol: 'TCP', dstPort: '80' },
  { id: 2, action: 'DENY', source: '10.0.1.5', destination: '-1.-1.-1.-1', protocol: 'UDP', srcPort: '1000-1100' },
  { id: 3, action: 'ALLOW', source: '*', destination: '20.0.-1.-1', protocol: 'ANY', dstPort: '1-100' },
  { id: 4, action: 'DENY', source: '10.-1.0.1', destination: '20.0.0.2', protocol: 'OTHER' },
  { id: 5, source: '192.168.0.-1', destination: '*', directional: true, dstPort: '443' },
  { id: 6, action: 'ALLOW', source: '172.16.0.0/12', destination: '10.1.2.128/25', protocol: 'TCP', srcPort: '65535' },
  { id: 7, action: 'DENY', source: '10.16.0.0/12', destination: '10.-1.0.-1', protocol: 'UDP', dstPort: '53' },
  { id: 8, action: 'ALLOW', source: '1.2.3.4', destination: '5.6.7.8', priority: '5' },
  { id: 9, action: 'ALLOW', source: '192.168.1.48/28', destination: '10.0.0.4/31', dstPort: '65530-65535' },
];

const have = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const restoreWhy = have('iptables-restore') ? '' : 'iptables-restore is not installed here (.ci/run installs it)';
if (process.env.CI === 'true' && restoreWhy) t.fail(`${restoreWhy}; under CI=true .ci/run must provide it`);

// ---- pcn-iptables grammar (src/services/pcn-iptables/datamodel/iptables.yang), written here ----

interface Command {
  chain: string;
  verb: 'set' | 'del' | 'append' | 'insert';
  default?: string;
  id?: number;
  fields: Map<string, string>;
}

const FIELDS = ['in-iface', 'out-iface', 'src', 'dst', 'l4proto', 'sport', 'dport', 'tcpflags', 'conntrack', 'action'];
const uint = (text: string, max: number) => /^(0|[1-9]\d*)$/.test(text) && Number(text) <= max;

/** The problem with a rule field's value, or '' (the YANG types, and what pcn-iptables parses them with). */
function fieldProblem(key: string, value: string, fields: Map<string, string>): string {
  switch (key) {
    case 'src':
    case 'dst': {
      const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(value);
      if (!m || !m.slice(1, 5).every((o) => uint(o, 255)) || !uint(m[5]!, 32)) return 'not a.b.c.d/len';
      const ip = m.slice(1, 5).reduce((v, o) => v * 256 + Number(o), 0);
      const host = 2 ** (32 - Number(m[5]));
      return ip % host === 0 ? '' : 'host bits set';
    }
    case 'l4proto':
      return /^(tcp|udp|icmp|gre)$/i.test(value) ? '' : 'not a protocol pcn-iptables knows';
    case 'sport':
    case 'dport':
      if (!uint(value, 65535)) return 'not a uint16';
      // pcn-iptables keeps port 0 under its port table's "any port" key.
      if (value === '0') return 'port 0 reads as any port';
      return /^(tcp|udp)$/i.test(fields.get('l4proto') ?? '') ? '' : 'a port without l4proto tcp or udp';
    case 'action':
      return value === 'ACCEPT' || value === 'DROP' ? '' : 'not ACCEPT or DROP';
    case 'conntrack':
      return /^(NEW|ESTABLISHED|RELATED|INVALID)$/.test(value) ? '' : 'not a conntrack status';
    default:
      return `${key}: not written by nfv`;
  }
}

/** Checks every line of a script; returns its commands, or the problems. */
function parseScript(script: string): { commands: Command[]; problems: string[] } {
  const commands: Command[] = [];
  const problems: string[] = [];
  let cmd = false;
  const lines = script.split('\n');
  if (lines.pop() !== '') problems.push('no final newline');
  lines.forEach((line, k) => {
    const bad = (why: string) => problems.push(`line ${k + 1}: ${why}: ${line}`);
    if (k === 0) return line === '#!/bin/sh' ? undefined : bad('not #!/bin/sh');
    if (line.startsWith('#') || line === 'set -e') return;
    if (line === 'cmd="polycubectl pcn-iptables chain"') return void (cmd = true);
    const words = line.split(' ');
    if (words[0] !== '${cmd}' || !cmd) return bad('not a ${cmd} line after cmd=');
    const chain = words[1]!;
    if (!['INPUT', 'FORWARD', 'OUTPUT'].includes(chain)) return bad('no such chain');
    const rest = words.slice(2).join(' ');
    const set = /^set default=(DROP|ACCEPT)$/.exec(rest);
    if (set) return void commands.push({ chain, verb: 'set', default: set[1]!, fields: new Map() });
    if (rest === 'rule del') return void commands.push({ chain, verb: 'del', fields: new Map() });
    const verb = words[2];
    if (verb !== 'append' && verb !== 'insert') return bad('not set default, rule del, append or insert');
    const pairs = words.slice(3).map((w) => w.split('='));
    let id: number | undefined;
    if (verb === 'insert') {
      const first = pairs.shift();
      if (first?.[0] !== 'id' || !uint(first[1] ?? '', 2 ** 32 - 1)) return bad('insert without id=N');
      id = Number(first[1]);
    }
    const fields = new Map<string, string>();
    for (const pair of pairs) {
      if (pair.length !== 2 || !FIELDS.includes(pair[0]!)) return bad(`${pair.join('=')}: not a rule field`);
      if (fields.has(pair[0]!)) return bad(`${pair[0]} twice`);
      fields.set(pair[0]!, pair[1]!);
    }
    for (const [key, value] of fields) {
      const problem = fieldProblem(key, value, fields);
      if (problem) return bad(`${key}=${value}: ${problem}`);
    }
    // The YANG default action is DROP; nfv writes every verdict.
    if (!fields.has('action')) return bad('no action');
    commands.push({ chain, verb, id, fields });
  });
  return { commands, problems };
}

// ---- the commands mapped 1:1 to iptables-restore input ----

function iptablesRestore(commands: Command[]): string {
  const flags: [string, string][] = [
    ['src', '-s'],
    ['dst', '-d'],
    ['l4proto', '-p'],
    ['sport', '--sport'],
    ['dport', '--dport'],
    ['conntrack', '-m conntrack --ctstate'],
    ['action', '-j'],
  ];
  const spec = (c: Command) =>
    flags.flatMap(([key, flag]) => {
      const value = c.fields.get(key);
      return value === undefined ? [] : [`${flag} ${key === 'l4proto' ? value.toLowerCase() : value}`];
    });
  const lines = commands.map((c) =>
    c.verb === 'set'
      ? `:${c.chain} ${c.default} [0:0]`
      : c.verb === 'del'
        ? `-F ${c.chain}`
        : c.verb === 'append'
          ? [`-A ${c.chain}`, ...spec(c)].join(' ')
          : [`-I ${c.chain} ${c.id! + 1}`, ...spec(c)].join(' '),
  );
  return ['*filter', ...lines, 'COMMIT', ''].join('\n');
}

// ---- first-match verdicts ----

/** packet: 4 source octets, 4 destination octets, source port, destination port, protocol (0 TCP, 1 UDP, 2 other). */
type Packet = number[];
const ip = (p: Packet, at: number) => p.slice(at, at + 4).reduce((v, o) => v * 256 + o, 0);

interface Loaded {
  defaultAccept?: boolean;
  /** `src` and `dst`: the packet's addresses as numbers, read once per packet rather than once per rule. */
  rules: { test: (p: Packet, src: number, dst: number) => boolean; accept: boolean }[];
}

/** The FORWARD chain the commands leave, as pcn-iptables matches it. */
function load(commands: Command[]): Loaded {
  const state: Loaded = { rules: [] };
  const prefix = (text: string | undefined) => {
    if (text === undefined) return () => true;
    const [addr, len] = text.split('/');
    const size = 2 ** (32 - Number(len));
    const net = addr!.split('.').reduce((v, o) => v * 256 + Number(o), 0);
    return (address: number) => Math.floor(address / size) === net / size;
  };
  for (const c of commands.filter((c) => c.chain === 'FORWARD')) {
    if (c.verb === 'set') state.defaultAccept = c.default === 'ACCEPT';
    else if (c.verb === 'del') state.rules = [];
    else {
      const f = c.fields;
      const src = prefix(f.get('src'));
      const dst = prefix(f.get('dst'));
      const proto = f.has('l4proto') ? ['tcp', 'udp'].indexOf(f.get('l4proto')!.toLowerCase()) : undefined;
      const port = (key: string, at: number, want = Number(f.get(key))) =>
        f.has(key) ? (p: Packet) => p[10]! === 2 || p[at] === want : () => true;
      const [sport, dport] = [port('sport', 8), port('dport', 9)];
      // Every sampled packet is the first of its connection: a conntrack rule matches it only if it says NEW.
      const isNew = !f.has('conntrack') || f.get('conntrack') === 'NEW';
      const conntrack = () => isNew;
      // The port stages let packets of other protocols through: only l4proto keeps them out.
      const test = (p: Packet, s: number, d: number) =>
        src(s) && dst(d) && (proto === undefined || p[10] === proto) && sport(p) && dport(p) && conntrack();
      const rule = { test, accept: f.get('action') === 'ACCEPT' };
      if (c.verb === 'append') state.rules.push(rule);
      else state.rules.splice(c.id!, 0, rule);
    }
  }
  return state;
}

function verdict(chain: Loaded, p: Packet): boolean {
  const [s, d] = [ip(p, 0), ip(p, 4)];
  const hit = chain.rules.find((r) => r.test(p, s, d));
  if (hit) return hit.accept;
  if (chain.defaultAccept === undefined) throw new Error('no default set on FORWARD');
  return chain.defaultAccept;
}

/**
 * The node's own verdict, as the evaluators of test/engine decide: its rules applied to every packet at once (first
 * match decides each packet alone, so the packets that pass are those of `behave` on the whole space), then the
 * packet looked up in what passes. Applied to each packet instead, parsing the rules again each time, it was half
 * of this file's CPU.
 */
const passing = new WeakMap<Node, Box[]>();
function allows(node: Node, p: Packet): boolean {
  let region = passing.get(node);
  if (!region) passing.set(node, (region = behave(node, [everything()], true)));
  return region.some((b) => p.every((v, d) => b[2 * d]! <= v && v <= b[2 * d + 1]!));
}

let seed = 20260601;
// A 32-bit LCG in integer arithmetic (a product of doubles would lose its low bits), read by its high bits.
const rand = (n: number) => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return Math.floor((seed / 2 ** 32) * n);
};
const pick = <T>(xs: readonly T[]) => xs[rand(xs.length)]!;

/** Packets at the edges of the node's ranges (each bound, and one past it) and at random. */
function packets(node: Node, n: number): Packet[] {
  const near = (lo: number, hi: number, max: number) => [lo - 1, lo, hi, hi + 1].filter((v) => v >= 0 && v <= max);
  const octet = Array.from({ length: 4 }, () => new Set([0, 255]));
  const port = new Set([0, 1, 65535]);
  for (const e of node.configuration!.firewall!.elements!) {
    for (const pattern of [e.source, e.destination])
      octets(pattern)!.forEach(([lo, hi], k) => near(lo, hi, 255).forEach((v) => octet[k]!.add(v)));
    for (const ports of [e.srcPort, e.dstPort])
      if (ports && ports !== '*') {
        const [lo, hi = lo] = ports.split('-').map(Number);
        near(lo!, hi!, 65535).forEach((v) => port.add(v));
      }
  }
  const pools = octet.map((s) => [...s]);
  const ports = [...port];
  const inside = node.configuration!.firewall!.elements!.flatMap((e) => [octets(e.source)!, octets(e.destination)!]);
  return Array.from({ length: n }, () => {
    const addr = () =>
      inside.length && rand(2)
        ? pick(inside).map(([lo, hi]) => (rand(3) ? lo + rand(hi - lo + 1) : pick([lo, hi])))
        : pools.map((pool) => (rand(5) ? pick(pool) : rand(256)));
    const p = () => (rand(5) ? pick(ports) : rand(65536));
    return [...addr(), ...addr(), p(), p(), rand(3)];
  });
}

function disagreements(node: Node, script: string, n: number): string[] {
  const chain = load(parseScript(script).commands);
  return packets(node, n).flatMap((p) => {
    const [mine, theirs] = [verdict(chain, p), allows(node, p)];
    return mine === theirs ? [] : [`${p.join(' ')}: lines ${mine ? 'accept' : 'drop'}, rules ${theirs}`];
  });
}

/**
 * Seeded random rule lists, nearly all within the bounds: an address with a -1 before a fixed octet (256 prefixes)
 * only in a rule without ports and not of OTHER (whose TCP and UDP part would take later rules' ports).
 */
function randomNode(k: number): Node {
  const addresses = ['*', '10.0.0.1', '10.0.0.-1', '10.0.-1.-1', '10.0.0.0/30', '10.0.0.128/25', '10.0.16.0/20'];
  const rare = ['10.-1.0.1', '10.0.-1.1', '-1.0.0.1'];
  const portsOf = ['*', '*', '80', '79-81', '1', '65535', '65534-65535', '1-4'];
  const elements = Array.from({ length: 1 + rand(8) }, (_, j): Elements => {
    const protocol = pick(['TCP', 'UDP', 'ANY', 'OTHER', undefined] as const);
    const [srcPort, dstPort] = protocol === 'OTHER' ? ['*', '*'] : [pick(portsOf), pick(portsOf)];
    const wide = protocol !== 'OTHER' && srcPort === '*' && dstPort === '*' ? rand(3) : -1;
    return {
      id: j + 1,
      action: pick(['ALLOW', 'DENY', undefined] as const),
      source: wide === 0 ? pick(rare) : pick(addresses),
      destination: wide === 1 ? pick(rare) : pick(addresses),
      protocol,
      ...(protocol === 'OTHER' ? {} : { srcPort, dstPort }),
      directional: rand(3) === 0,
    };
  });
  return firewall(rand(2) ? 'ALLOW' : 'DENY', elements, `random-${k}`);
}

// ---- the tests ----

t.test('the real shell: sh -n parses it; run, it calls polycubectl line by line and stops at a failure', async (t) => {
  // A short list: each call starts a shell.
  const script = bpf(firewall('ALLOW', [TABLE[0]!, TABLE[4]!, TABLE[5]!, TABLE[7]!]), 7);
  const syntax = spawnSync('sh', ['-n'], { input: script, encoding: 'utf8' });
  t.equal(syntax.status, 0, `sh -n: ${syntax.stderr}`);
  const broken = spawnSync('sh', ['-n'], { input: `${script}if\n`, encoding: 'utf8' });
  t.not(broken.status, 0, 'sh -n does judge: a stray `if` is refused');
  const dir = await scratch(t);
  const stub = path.join(dir, 'polycubectl');
  // Records its arguments, one per field (so word splitting shows), and fails at call FAIL_AT.
  writeFileSync(
    stub,
    '#!/bin/sh\nprintf \'%s|\' "$@" >> "$LOG"; echo >> "$LOG"\n[ "$(wc -l < "$LOG")" -ne "${FAIL_AT:-0}" ]\n',
  );
  chmodSync(stub, 0o755);
  writeFileSync(path.join(dir, 'fw.sh'), script);
  const run = (log: string, failAt = 0) =>
    spawnSync('sh', [path.join(dir, 'fw.sh')], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${dir}:${process.env.PATH}`, LOG: path.join(dir, log), FAIL_AT: String(failAt) },
    });
  const ok = run('all.log');
  t.equal(ok.status, 0, ok.stderr);
  const expected = script
    .split('\n')
    .filter((l) => l.startsWith('${cmd} '))
    .map((l) => ['pcn-iptables', 'chain', ...l.split(' ').slice(1)].join('|') + '|');
  t.same(readFileSync(path.join(dir, 'all.log'), 'utf8').split('\n').slice(0, -1), expected, 'one call per line');
  t.ok(expected.length > 8, `${expected.length} calls`);
  const failed = run('fail.log', 3);
  t.not(failed.status, 0, 'a failing polycubectl fails the script');
  t.same(
    readFileSync(path.join(dir, 'fail.log'), 'utf8').split('\n').slice(0, -1),
    expected.slice(0, 3),
    'set -e: nothing after the failed call runs (the chain stays under default DROP)',
  );
});

t.test('every line is pcn-iptables grammar; FORWARD only, loaded under default DROP', async (t) => {
  for (const [defaultAction, stateless] of [
    ['ALLOW', false],
    ['DENY', false],
    ['DENY', true],
  ] as const) {
    const script = bpf(firewall(defaultAction, TABLE), 7, { stateless });
    const { commands, problems } = parseScript(script);
    t.same(problems, [], `${defaultAction}${stateless ? ', stateless' : ''}: every line parses`);
    const conntrack = commands.filter((c) => c.fields.has('conntrack'));
    t.same(
      conntrack.map((c) => [commands.indexOf(c), c.fields.get('conntrack'), c.fields.get('action'), c.fields.size]),
      stateless
        ? []
        : [
            [2, 'ESTABLISHED', 'ACCEPT', 2],
            [3, 'RELATED', 'ACCEPT', 2],
          ],
      stateless ? 'stateless: no conntrack rule' : 'stateful: ESTABLISHED (rule 0) and RELATED accepted first',
    );
    t.ok(
      commands.every((c) => c.chain === 'FORWARD'),
      'INPUT and OUTPUT are left alone',
    );
    t.same(
      commands.slice(0, 2).map((c) => c.verb),
      ['set', 'del'],
    );
    t.equal(commands[0]!.default, 'DROP', 'default DROP before the old rules go');
    const sets = commands.filter((c) => c.verb === 'set').map((c) => c.default);
    t.same(sets, defaultAction === 'ALLOW' ? ['DROP', 'ACCEPT'] : ['DROP'], 'ACCEPT only once every rule is in');
    if (defaultAction === 'ALLOW') t.equal(commands.at(-1)!.verb, 'set');
    t.ok(
      commands.slice(2, defaultAction === 'ALLOW' ? -1 : undefined).every((c) => c.verb === 'append'),
      'then appends only',
    );
  }
  // The checker does judge.
  for (const bad of [
    '${cmd} FORWARD append src=10.0.0.1/24 action=DROP',
    '${cmd} FORWARD append src=10.0.0.0/33 action=DROP',
    '${cmd} FORWARD append dport=80 action=DROP',
    '${cmd} FORWARD append l4proto=tcp dport=65536 action=DROP',
    '${cmd} FORWARD append l4proto=tcp dport=0 action=DROP',
    '${cmd} FORWARD append l4proto=tcp dport=80-81 action=DROP',
    '${cmd} FORWARD append l4proto=sctp action=DROP',
    '${cmd} FORWARD append src=10.0.0.0/8',
    '${cmd} FORWARD append proto=tcp action=DROP',
    '${cmd} NAT append action=DROP',
    '${cmd} FORWARD set default=REJECT',
    '${cmd} FORWARD insert src=10.0.0.0/8 action=DROP',
    '${cmd} FORWARD append conntrack=established action=ACCEPT',
    '${cmd} FORWARD append conntrack=ESTABLISHED,RELATED action=ACCEPT',
  ])
    t.notSame(parseScript(`#!/bin/sh\ncmd="polycubectl pcn-iptables chain"\n${bad}\n`).problems, [], `refused: ${bad}`);
});

t.test('VEREFOO worked example A: same form, exact where VEREFOO widens or drops', async (t) => {
  const node = firewall('DENY', [
    { id: 1, action: 'ALLOW', source: '10.0.0.1', destination: '10.0.0.-1', protocol: 'TCP', dstPort: '80' },
    { id: 2, action: 'DENY', source: '-1.-1.-1.-1', destination: '-1.-1.-1.-1', protocol: 'ANY', srcPort: '*' },
  ]);
  const stateless = [
    '#!/bin/sh',
    'set -e',
    'cmd="polycubectl pcn-iptables chain"',
    '${cmd} FORWARD set default=DROP',
    '${cmd} FORWARD rule del',
    '${cmd} FORWARD append src=10.0.0.1/32 dst=10.0.0.0/24 l4proto=tcp dport=80 action=ACCEPT',
    // VEREFOO writes a tcp and a udp line: packets of other protocols would fall to the default.
    '${cmd} FORWARD append action=DROP',
    '',
  ];
  t.equal(bpf(node, 1, { stateless: true }).replace(/\n(#.*\n)+/, '\n'), stateless.join('\n'));
  t.equal(
    bpf(node, 1).replace(/\n(#.*\n)+/, '\n'),
    [
      ...stateless.slice(0, 5),
      '${cmd} FORWARD append conntrack=ESTABLISHED action=ACCEPT',
      '${cmd} FORWARD append conntrack=RELATED action=ACCEPT',
      ...stateless.slice(5),
    ].join('\n'),
    'stateful (the default): replies of allowed connections first (VEREFOO writes none)',
  );
  t.same(BPF_STATEFUL, ['conntrack=ESTABLISHED action=ACCEPT', 'conntrack=RELATED action=ACCEPT']);
});

t.test('semantics: iptables-restore --test takes the 1:1 mapping; sampled verdicts equal the rules', async (t) => {
  const fixed = [
    firewall('DENY', TABLE),
    firewall('ALLOW', TABLE),
    // Reversed without the OTHER rule (whose TCP and UDP part would take rule 3's 100 ports times 256 prefixes).
    firewall('ALLOW', TABLE.filter((e) => e.id !== 4).reverse()),
    firewall('DENY', []),
    firewall('ALLOW', [{ action: 'DENY', source: '*', destination: '*', protocol: 'OTHER' }]),
  ];
  const randoms = Array.from({ length: 60 }, (_, k) => randomNode(k));
  let refused = 0;
  let sampled = 0;
  for (const [k, node] of [...fixed, ...randoms].entries()) {
    let script: string;
    try {
      // Stateful (the default) and stateless in turn: the conntrack rules decide no first packet.
      script = bpf(node, 1, { stateless: k % 2 === 1 });
    } catch (e) {
      if (fixed.includes(node)) throw e;
      t.ok(e instanceof NfvError && e.status === 400 && e.message.startsWith(`node ${node.name}: `), String(e));
      refused++;
      continue;
    }
    const { commands, problems } = parseScript(script);
    t.same(problems, [], `${node.name}: the grammar holds`);
    const n = fixed.includes(node) ? 10000 : 2000;
    const wrong = disagreements(node, script, n);
    sampled += n;
    t.same(wrong.slice(0, 5), [], `${node.name}: ${n} packets, ${commands.length} commands, every verdict the same`);
    if (restoreWhy) continue;
    const check = spawnSync('iptables-restore', ['--test'], { input: iptablesRestore(commands), encoding: 'utf8' });
    t.equal(check.status, 0, `${node.name}: iptables-restore --test: ${check.stderr}`);
  }
  t.ok(refused < randoms.length / 4, `${refused} of ${randoms.length} random lists refused (beyond the bounds)`);
  t.ok(sampled > 100000, `${sampled} packets`);
  if (restoreWhy) t.skip(restoreWhy);
  // The mapping is 1:1, and iptables-restore does judge it.
  const mapped = iptablesRestore(parseScript(bpf(firewall('DENY', TABLE), 1, { stateless: true })).commands);
  t.match(
    mapped,
    /^\*filter\n:FORWARD DROP \[0:0\]\n-F FORWARD\n-A FORWARD -s 10\.0\.0\.0\/24 -d 20\.0\.0\.1\/32 -p tcp/,
  );
  const statefulMapped = iptablesRestore(parseScript(bpf(firewall('DENY', TABLE), 1)).commands);
  t.match(
    statefulMapped,
    new RegExp(
      '^\\*filter\\n:FORWARD DROP \\[0:0\\]\\n-F FORWARD\\n' +
        '-A FORWARD -m conntrack --ctstate ESTABLISHED -j ACCEPT\\n' +
        '-A FORWARD -m conntrack --ctstate RELATED -j ACCEPT\\n' +
        '-A FORWARD -s 10\\.0\\.0\\.0/24 -d 20\\.0\\.0\\.1/32 -p tcp',
    ),
  );
  if (!restoreWhy) {
    const bad = spawnSync('iptables-restore', ['--test'], { input: mapped.replace('--dport 80', '--dport 65536') });
    t.not(bad.status, 0, 'iptables-restore refuses a port beyond uint16');
    const good = spawnSync('iptables-restore', ['--test'], { input: statefulMapped, encoding: 'utf8' });
    t.equal(good.status, 0, `the stateful rules: iptables-restore --test: ${good.stderr}`);
  }
  // The evaluator and the sampling do judge: a line dropped from the script changes verdicts.
  const node = firewall('DENY', TABLE);
  const script = bpf(node, 1);
  const cut = (line: string) => {
    t.ok(script.includes(`\${cmd} FORWARD append ${line}\n`), line);
    return script.replace(`\${cmd} FORWARD append ${line}\n`, '');
  };
  const udp = [10, 0, 1, 5, 20, 0, 0, 9, 1000, 53, 1];
  t.equal(allows(node, udp), false, 'rule 2 drops it');
  t.equal(verdict(load(parseScript(cut('src=10.0.1.5/32 l4proto=udp sport=1000 action=DROP')).commands), udp), true);
  t.ok(
    disagreements(node, cut('src=1.2.3.4/32 dst=5.6.7.8/32 action=ACCEPT'), 40000).length > 5,
    'without rule 8, sampled verdicts differ',
  );
});

t.test('-1 before a fixed octet: one prefix per value, exact; ranges: one line per port', async (t) => {
  const appends = (elements: Elements[], stateless = true) =>
    bpf(firewall('DENY', elements), 1, { stateless })
      .split('\n')
      .filter((l) => l.includes(' append '))
      .map((l) => l.slice('${cmd} FORWARD append '.length));
  const wildcard = appends([{ action: 'ALLOW', source: '10.-1.0.1', destination: '*' }]);
  t.equal(wildcard.length, 256);
  t.same([wildcard[0], wildcard[255]], ['src=10.0.0.1/32 action=ACCEPT', 'src=10.255.0.1/32 action=ACCEPT']);
  t.same(
    appends([{ action: 'ALLOW', source: '10.-1.0.1', destination: '*' }], false),
    [...BPF_STATEFUL, ...wildcard],
    'stateful: the two conntrack rules, then the same',
  );
  // OTHER compiled away: its UDP part is what rule 2 decides for its addresses, a /12 crossed with a wildcard.
  const crossed = appends([
    { action: 'DENY', source: '10.-1.0.1', destination: '*', protocol: 'OTHER' },
    { action: 'ALLOW', source: '10.16.0.0/12', destination: '*', protocol: 'UDP', dstPort: '1-3' },
  ]);
  const accepted = crossed.filter((l) => l.endsWith('ACCEPT'));
  t.equal(accepted.length, 16 * 3 + 3, '16 prefixes times 3 ports, then rule 2 itself');
  t.same(
    [accepted[0], accepted[47], ...accepted.slice(48)],
    [
      'src=10.16.0.1/32 l4proto=udp dport=1 action=ACCEPT',
      'src=10.31.0.1/32 l4proto=udp dport=3 action=ACCEPT',
      'src=10.16.0.0/12 l4proto=udp dport=1 action=ACCEPT',
      'src=10.16.0.0/12 l4proto=udp dport=2 action=ACCEPT',
      'src=10.16.0.0/12 l4proto=udp dport=3 action=ACCEPT',
    ],
  );
  t.equal(crossed.length, 256 * 3 + 16 * 3 + 3, 'TCP, UDP and all protocols of rule 1: 256 prefixes each');
  t.equal(new Set(crossed).size, crossed.length, 'no line twice');
});

t.test('refusals beyond the bounds name the node and the rule; file name', async (t) => {
  const refusal = (elements: Elements[], pattern: RegExp, what: string, stateless = false) => {
    try {
      bpf(firewall('DENY', elements, 'fw-core'), 1, { stateless });
      t.fail(`${what}: not refused`);
    } catch (e) {
      t.ok(e instanceof NfvError, what);
      t.equal((e as NfvError).status, 400, what);
      t.match((e as Error).message, pattern, what);
    }
  };
  const first: Elements = {
    id: 1,
    action: 'ALLOW',
    source: '10.0.0.1',
    destination: '*',
    protocol: 'TCP',
    dstPort: '80',
  };
  refusal(
    [first, { id: 2, action: 'ALLOW', source: '*', destination: '*', protocol: 'UDP', dstPort: '1000-2000' }],
    /^node fw-core: rule 2: destination ports 1000-2000 \(1001 ports\) would be 1001 pcn-iptables rules, more than 256 /,
    'a range of 1001 ports',
  );
  refusal(
    [first, { id: 2, action: 'DENY', source: '-1.-1.0.1', destination: '10.0.0.1' }],
    /^node fw-core: rule 2: source 0\.0\.0\.1\/0\.0\.255\.255 \(65536 prefixes\) would be 65536 pcn-iptables rules/,
    'a wildcard before a fixed octet: 65536 prefixes',
  );
  refusal(
    [{ id: 4, action: 'DENY', source: '10.-1.0.1', destination: '*', protocol: 'TCP', dstPort: '80-81' }],
    /^node fw-core: rule 4: source 10\.0\.0\.1\/255\.0\.255\.255 \(256 prefixes\) x destination ports 80-81 \(2 ports\) would be 512 /,
    'both within the bound alone, beyond it together',
  );
  refusal(
    [{ id: 3, action: 'DENY', source: '*', destination: '*', protocol: 'UDP', srcPort: '0-10' }],
    /^node fw-core: rule 3: source ports 0-10 include port 0, which pcn-iptables cannot match/,
    'port 0',
  );
  const many = Array.from({ length: 33 }, (_, k) => ({
    id: k + 1,
    action: 'ALLOW',
    source: `10.${k}.-1.1`,
    destination: '*',
  }));
  refusal(
    many,
    new RegExp(`^node fw-core: ${33 * 256} rules are more than pcn-iptables takes in a chain \\(${BPF_MAX_RULES}\\)`),
    'more rules than a chain takes',
    true,
  );
  refusal(
    many,
    new RegExp(`^node fw-core: ${33 * 256 + 2} rules are more than pcn-iptables takes in a chain`),
    'stateful: the two conntrack rules count too',
  );
  t.equal(BPF_MAX_LINES_PER_RULE, 256);
  const at = (dstPort: string) =>
    bpf(firewall('DENY', [{ action: 'ALLOW', source: '*', destination: '*', protocol: 'TCP', dstPort }]), 1, {
      stateless: true,
    });
  t.equal(
    at('1-256')
      .split('\n')
      .filter((l) => l.includes(' append ')).length,
    256,
    'at the bound: deployed',
  );
  t.throws(() => at('1-257'), /rule 1: destination ports 1-257 \(257 ports\) would be 257 /, 'one past it: refused');
  t.equal(deployFile(firewall('DENY', TABLE), 7, 'bpf').filename, 'bpf_fw1_7.sh');
  t.notOk(DEPLOY_FORMATS.includes('bpf'), 'asked for by name, not in an every-format export');
  t.throws(() => deployFile(firewall('DENY', TABLE), 7, 'bpf', { json: true }), /bpf has no JSON form/);
});
