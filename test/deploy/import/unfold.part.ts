/**
 * Unfolding checked against a direct interpreter of iptables' chain semantics, written here from the manual: 300
 * seeded iptables-save files with user chains, jumps, gotos, RETURNs (also in FORWARD), chains called from several
 * places, negations and approximated lines (`-m limit`), each run on sampled packets. For each packet the
 * interpreter walks the chains as the kernel does, with every approximated line matching or not as a seeded coin
 * says: an exact import gives the interpreter's verdict on every packet; with approximated lines, the must list
 * accepts only what every run accepts, the may list drops only what every run drops. The nfv rules written from
 * the import (CIDR prefixes and octet patterns) are equivalent to its list, and number about as many as the lines.
 */
import t from 'tap';
import { random } from '../../../src/bench/topology.js';
import { diff, listOfNode, type RuleList } from '../../../src/deploy/analysis/index.js';
import { importRules, importedList, importedNode } from '../../../src/deploy/import/index.js';

interface Rule {
  src?: [number, number];
  dst?: [number, number];
  negateSrc: boolean;
  proto?: 'tcp' | 'udp';
  dport?: number;
  approx: boolean;
  target: string;
  goto: boolean;
}

type Packet = { src: number; dst: number; proto: number; dport: number };

const PREFIXES: [number, number][] = [
  [0x0a000000, 8],
  [0x0a010000, 16],
  [0x0a010200, 24],
  [0x0a010280, 25],
  [0x0a0102f0, 28],
  [0xac100000, 12],
  [0xc0a80000, 16],
  [0x0a010205, 32],
];
const ip = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
const inPrefix = (a: number, [base, len]: [number, number]) => len === 0 || a >>> (32 - len) === base >>> (32 - len);

function generate(seed: number): { text: string; chains: Map<string, Rule[]>; policy: string } {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  const users = Array.from({ length: 1 + Math.floor(rnd() * 4) }, (_, k) => `u${k}`);
  const chains = new Map<string, Rule[]>();
  // Chains are numbered so that a chain only calls later ones: no loops.
  const names = ['FORWARD', ...users];
  names.forEach((name, k) => {
    const callable = names.slice(k + 1);
    const rules: Rule[] = [];
    const count = 1 + Math.floor(rnd() * 7);
    for (let i = 0; i < count; i++) {
      const r = rnd();
      const target =
        r < 0.3 ? 'ACCEPT' : r < 0.55 ? 'DROP' : r < 0.75 ? 'RETURN' : callable.length ? pick(callable) : 'DROP';
      rules.push({
        ...(rnd() < 0.6 ? { src: pick(PREFIXES) } : {}),
        ...(rnd() < 0.5 ? { dst: pick(PREFIXES) } : {}),
        negateSrc: rnd() < 0.15,
        ...(rnd() < 0.4
          ? { proto: pick(['tcp', 'udp'] as const), ...(rnd() < 0.6 ? { dport: pick([22, 80]) } : {}) }
          : {}),
        approx: rnd() < 0.1,
        target,
        goto: !['ACCEPT', 'DROP', 'RETURN'].includes(target) && rnd() < 0.3,
      });
    }
    chains.set(name, rules);
  });
  const policy = pick(['ACCEPT', 'DROP']);
  const lines = ['*filter', `:FORWARD ${policy} [0:0]`, ...users.map((u) => `:${u} - [0:0]`)];
  for (const [name, rules] of chains)
    for (const r of rules) {
      const parts = [`-A ${name}`];
      if (r.src) parts.push(`${r.negateSrc ? '! ' : ''}-s ${ip(r.src[0])}/${r.src[1]}`);
      if (r.dst) parts.push(`-d ${ip(r.dst[0])}/${r.dst[1]}`);
      if (r.proto) parts.push(`-p ${r.proto}`);
      if (r.dport !== undefined) parts.push(`--dport ${r.dport}`);
      if (r.approx) parts.push('-m limit --limit 5/min');
      parts.push(`${r.goto ? '-g' : '-j'} ${r.target}`);
      lines.push(parts.join(' '));
    }
  lines.push('COMMIT', '');
  return { text: lines.join('\n'), chains, policy };
}

/** The kernel's walk: each packet through FORWARD and its calls; `coin` says whether an approximated line matches. */
function interpret(chains: Map<string, Rule[]>, policy: string, p: Packet, coin: () => boolean): boolean {
  const matches = (r: Rule) => {
    if (r.src && inPrefix(p.src, r.src) === r.negateSrc) return false;
    if (r.dst && !inPrefix(p.dst, r.dst)) return false;
    if (r.proto && p.proto !== (r.proto === 'tcp' ? 0 : 1)) return false;
    if (r.dport !== undefined && p.dport !== r.dport) return false;
    return r.approx ? coin() : true;
  };
  // A verdict, or 'return' when the packet leaves the chain (RETURN, falling off, or a goto's chain returning).
  const walk = (name: string): boolean | 'return' => {
    for (const r of chains.get(name)!) {
      if (!matches(r)) continue;
      if (r.target === 'ACCEPT') return true;
      if (r.target === 'DROP') return false;
      if (r.target === 'RETURN') return 'return';
      const called = walk(r.target);
      if (called !== 'return') return called;
      if (r.goto) return 'return';
    }
    return 'return';
  };
  const v = walk('FORWARD');
  return v === 'return' ? policy === 'ACCEPT' : v;
}

function packets(rnd: () => number): Packet[] {
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  // Addresses at and around the prefixes' edges.
  const address = () => {
    const [base, len] = pick(PREFIXES);
    const size = 2 ** (32 - len);
    return (base + pick([0, 1, size - 1, size, size + 5, -1, Math.floor(size / 2)])) >>> 0;
  };
  return Array.from({ length: 200 }, () => ({
    src: address(),
    dst: address(),
    proto: pick([0, 1, 2]),
    dport: pick([22, 80, 443]),
  }));
}

function verdictOf(list: RuleList, p: Packet): boolean {
  const octets = (a: number) => [24, 16, 8, 0].map((s) => (a >>> s) & 255);
  const point = [...octets(p.src), ...octets(p.dst), 0, p.proto === 2 ? 0 : p.dport, p.proto];
  // Packets of other protocols have no ports: boxes hold them for every port value.
  const holds = (b: readonly number[]) => point.every((v, d) => b[2 * d]! <= v && v <= b[2 * d + 1]!);
  // A line matches the packets of its boxes but those of its except boxes (what RETURNs before it took out).
  const line = list.lines.find((l) => l.boxes.some(holds) && !(l.except ?? []).some(holds));
  return line ? line.allow : list.defaultAllow;
}

t.test('unfolding gives the kernel walk of 300 generated rule sets', async (t) => {
  const rnd = random(4242);
  let checked = 0;
  let approximated = 0;
  let lines = 0;
  let rules = 0;
  const wrong: string[] = [];
  for (let seed = 1; seed <= 300; seed++) {
    const { text, chains, policy } = generate(seed);
    const imported = importRules('iptables', text, `gen${seed}.rules`);
    const [may, must] = [importedList(imported, 'may'), importedList(imported, 'must')];
    const exact = !imported.report.approximated;
    if (!exact) approximated++;
    for (const p of packets(rnd)) {
      checked++;
      const runs = Array.from({ length: exact ? 1 : 8 }, () => interpret(chains, policy, p, () => rnd() < 0.5));
      const [mayAllow, mustAllow] = [verdictOf(may, p), verdictOf(must, p)];
      const bad = exact
        ? mayAllow !== runs[0] || mustAllow !== runs[0]
        : (mustAllow && runs.some((v) => !v)) || (!mayAllow && runs.some((v) => v));
      if (bad)
        wrong.push(`gen${seed}: ${JSON.stringify(p)}: kernel ${runs.join()}, may ${mayAllow}, must ${mustAllow}`);
    }
    for (const which of ['may', 'must'] as const) {
      const { node } = importedNode(imported, '10.255.0.1', which);
      const list = which === 'may' ? may : must;
      if (!diff(listOfNode(node, 'node'), list).equivalent) wrong.push(`gen${seed}: the ${which} node differs`);
      if (which === 'may') rules += node.configuration!.firewall!.elements!.length;
    }
    lines += [...chains.values()].reduce((n, r) => n + r.length, 0);
  }
  t.same(wrong.slice(0, 5), [], `${checked} packets, ${approximated} of 300 rule sets approximated`);
  // Negations spell the rest of the address space (up to 32 prefixes); without them a line is a few rules.
  t.ok(rules < 4 * lines, `${rules} nfv rules for ${lines} lines`);
  t.ok(approximated > 20 && approximated < 280, 'both exact and approximated rule sets');
});

t.test('a raw chain drop spelled wide (unfold.ts `wide`) decides every packet as its cut region does', (t) => {
  const rnd = random(47);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const cidr = (p: [number, number]) => `${ip(p[0])}/${p[1]}`;
  // A packet as a point of the entries' boxes: source and destination octets, ports, protocol (0 TCP, 1 UDP).
  const point = (p: Packet) => [
    ...[24, 16, 8, 0].map((s) => (p.src >>> s) & 255),
    ...[24, 16, 8, 0].map((s) => (p.dst >>> s) & 255),
    1234,
    p.dport,
    p.proto,
  ];
  const inBox = (x: number[], b: readonly number[]) => x.every((v, d) => v >= b[2 * d]! && v <= b[2 * d + 1]!);
  let [wides, files] = [0, 0];
  for (let seed = 0; seed < 40; seed++) {
    const raw = Array.from({ length: 4 + Math.floor(rnd() * 8) }, () => {
      const where = rnd() < 0.5 ? `-s ${cidr(pick(PREFIXES))}` : `-d ${cidr(pick(PREFIXES))}`;
      return `-A PREROUTING ${where} -j ${rnd() < 0.7 ? 'DROP' : 'ACCEPT'}`;
    });
    const text = [
      '*raw',
      ':PREROUTING ACCEPT [0:0]',
      ...raw,
      'COMMIT',
      '*filter',
      ':FORWARD DROP [0:0]',
      `-A FORWARD -s ${cidr(pick(PREFIXES))} -j ACCEPT`,
      `-A FORWARD -d ${cidr(pick(PREFIXES))} -j ACCEPT`,
      'COMMIT',
      '',
    ].join('\n');
    const { entries, defaultAllow } = importRules('iptables', text, `raw-${seed}`);
    const withWide = entries.filter((e) => e.wide);
    if (!withWide.length) continue;
    files++;
    wides += withWide.length;
    const decide = (x: number[], wide: boolean) => {
      for (const e of entries) {
        const region = wide && e.wide ? e.wide : e.region;
        if (region.some((b) => inBox(x, b)) && !e.except.some((b) => inBox(x, b))) return e.allow;
      }
      return defaultAllow;
    };
    let differ = 0;
    for (let k = 0; k < 400; k++) {
      const near = () => (pick(PREFIXES)[0] + Math.floor(rnd() * 512)) >>> 0;
      const x = point({ src: near(), dst: near(), proto: Math.floor(rnd() * 2), dport: 80 });
      if (decide(x, true) !== decide(x, false)) differ++;
    }
    t.equal(differ, 0, `raw-${seed}: ${withWide.length} drops spelled wide, each packet decided alike`);
    for (const e of withWide)
      t.ok(
        e.region.every((b) => e.wide!.some((w) => b.every((v, i) => (i % 2 ? v <= w[i]! : v >= w[i]!)))),
        `raw-${seed}: a wide region holds its cut one`,
      );
  }
  t.ok(files >= 20 && wides >= 40, `drops spelled wide occur (${wides} in ${files} files)`);
  t.end();
});

t.test('a wide drop of a host firewall stays within the packets to the host', (t) => {
  const rnd = random(48);
  // 200 raw drops of a /16's TCP from one source port each, then all TCP: the last line cut by them is refused,
  // spelled wide it is one rule.
  const drops = Array.from(
    { length: 200 },
    (_, k) =>
      `-A PREROUTING -s ${11 + Math.floor(rnd() * 190)}.${Math.floor(rnd() * 256)}.0.0/16 -p tcp --sport ${1000 + k} ` +
      '-j DROP',
  );
  const text = [
    '*raw',
    ':PREROUTING ACCEPT [0:0]',
    ...drops,
    '-A PREROUTING -p tcp -j DROP',
    'COMMIT',
    '*filter',
    ':INPUT ACCEPT [0:0]',
    ':FORWARD DROP [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    'COMMIT',
    '',
  ].join('\n');
  const imported = importRules('iptables', text, 'raw-host', { host: '10.0.0.1' });
  t.ok(
    imported.entries.some((e) => e.wide),
    'some drop spelled wide',
  );
  const rules = importedNode(imported, '10.0.0.254').node.configuration!.firewall!.elements!;
  const last = rules.filter((r) => r.origin === 'raw-host:203');
  t.match(
    last[0],
    { action: 'DENY', source: '*', destination: '10.0.0.1', protocol: 'TCP', srcPort: '*' },
    'the last drop: one rule, to the host only (spelled wide, restricted as its cut region is)',
  );
  t.ok(
    last.every((r) => r.destination === '10.0.0.1' || r.source === '10.0.0.1'),
    'every rule of it to or from the host',
  );
  t.end();
});
