/**
 * One example packet per answer (issue 47 item 7): with `examples`, each lint finding, allowed class and diff class
 * carries one packet in `firewall explain`'s syntax. Checked by a first-match evaluator written here, on 200 seeded
 * iptables FORWARD lists: a shadowed or unreachable line's example matches the line and an earlier line takes it; a
 * redundant line's example is decided by the line itself; an allowed class's example is allowed, by one of the
 * class's lines; a diff class's example gets the verdict each side states, from the line each side names.
 */
import t from 'tap';
import { allowsOf, Budget, diff, lint } from '../../../src/deploy/analysis/index.js';
import { importRules, importedList } from '../../../src/deploy/import/index.js';
import { random } from '../../../src/bench/topology.js';

interface Rule {
  line: number;
  src?: [number, number];
  dst?: [number, number];
  proto?: 'tcp' | 'udp';
  dport?: [number, number];
  accept: boolean;
}
interface List {
  text: string;
  rules: Rule[];
  policy: boolean;
}
interface Packet {
  src: number;
  dst: number;
  proto: string;
  dport?: number;
}

const PREFIXES: [number, number][] = [
  [0x0a000000, 8],
  [0x0a010000, 16],
  [0x0a010200, 24],
  [0x0a010205, 32],
  [0xc0a80000, 16],
];
const ip = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
const num = (a: string) => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
const inPrefix = (a: number, [base, len]: [number, number]) => a >>> (32 - len) === base >>> (32 - len);

function generate(rnd: () => number, rules?: Rule[]): List {
  const pick = <T>(l: readonly T[]) => l[Math.floor(rnd() * l.length)]!;
  const fresh = (): Rule => ({
    line: 0,
    ...(rnd() < 0.6 ? { src: pick(PREFIXES) } : {}),
    ...(rnd() < 0.5 ? { dst: pick(PREFIXES) } : {}),
    ...(rnd() < 0.5
      ? {
          proto: pick(['tcp', 'udp'] as const),
          dport: pick([
            [22, 22],
            [80, 80],
            [1, 1023],
          ] as const),
        }
      : {}),
    accept: rnd() < 0.5,
  });
  const list = rules
    ? rules.map((r) => (rnd() < 0.2 ? fresh() : { ...r }))
    : Array.from({ length: 2 + Math.floor(rnd() * 9) }, fresh);
  const policy = rnd() < 0.5;
  const out = ['*filter', `:FORWARD ${policy ? 'ACCEPT' : 'DROP'} [0:0]`];
  for (const r of list) {
    const p = ['-A FORWARD'];
    if (r.src) p.push(`-s ${ip(r.src[0])}/${r.src[1]}`);
    if (r.dst) p.push(`-d ${ip(r.dst[0])}/${r.dst[1]}`);
    if (r.proto) p.push(`-p ${r.proto} --dport ${r.dport![0]}:${r.dport![1]}`);
    p.push(`-j ${r.accept ? 'ACCEPT' : 'DROP'}`);
    out.push(p.join(' '));
    r.line = out.length;
  }
  out.push('COMMIT', '');
  return { text: out.join('\n'), rules: list, policy };
}

function parse(example: string): Packet {
  const f = Object.fromEntries(example.split(' ').map((kv) => kv.split('=') as [string, string]));
  return { src: num(f.src!), dst: num(f.dst!), proto: f.proto!, ...(f.dport ? { dport: Number(f.dport) } : {}) };
}

const matches = (r: Rule, p: Packet) =>
  (!r.src || inPrefix(p.src, r.src)) &&
  (!r.dst || inPrefix(p.dst, r.dst)) &&
  (!r.proto || (p.proto === r.proto && p.dport! >= r.dport![0] && p.dport! <= r.dport![1]));

/** The first line matching, or 0 for the policy, and the verdict. */
function firstMatch(l: List, p: Packet): { line: number; allow: boolean } {
  const r = l.rules.find((x) => matches(x, p));
  return r ? { line: r.line, allow: r.accept } : { line: 0, allow: l.policy };
}

const lineOf = (ref: unknown) => (ref === 'default' ? 0 : (ref as { line: number }).line);

t.test('every example packet is one its answer is about', async (t) => {
  const rnd = random(4707);
  const wrong: string[] = [];
  const counts = { findings: 0, allowed: 0, differ: 0 };
  for (let k = 0; k < 200; k++) {
    const a = generate(rnd);
    const b = generate(rnd, a.rules);
    const [la, lb] = [
      importedList(importRules('iptables', a.text, 'a')),
      importedList(importRules('iptables', b.text, 'b')),
    ];
    for (const f of lint(la, new Budget(), true).findings) {
      if (f.finding === 'unmatchable' || f.rule === 'default') continue;
      counts.findings++;
      const line = lineOf(f.rule);
      const rule = a.rules.find((r) => r.line === line)!;
      const p = parse(f.example!);
      const first = firstMatch(a, p);
      const ok =
        matches(rule, p) && (f.finding === 'redundant' ? first.line === line : first.line < line && first.line > 0);
      if (!ok) wrong.push(`list ${k}: ${f.finding} line ${line}: ${f.example} first matches ${first.line}`);
    }
    for (const c of allowsOf(la, undefined, new Budget(), true).classes) {
      counts.allowed++;
      const first = firstMatch(a, parse(c.example!));
      if (!first.allow || !c.rules.map(lineOf).includes(first.line))
        wrong.push(`list ${k}: allowed ${c.example} decided by ${first.line} (${first.allow})`);
    }
    for (const c of diff(la, lb, new Budget(), true).classes) {
      counts.differ++;
      const p = parse(c.example!);
      const [x, y] = [firstMatch(a, p), firstMatch(b, p)];
      const stated = (s: { verdict: string; rule: unknown }, m: { line: number; allow: boolean }) =>
        (s.verdict === 'ALLOW') === m.allow && lineOf(s.rule) === m.line;
      if (!stated(c.from, x) || !stated(c.to, y) || x.allow === y.allow)
        wrong.push(`lists ${k}: diff ${c.example}: a ${x.line} ${x.allow}, b ${y.line} ${y.allow}`);
    }
  }
  t.same(wrong.slice(0, 5), [], `examples of ${JSON.stringify(counts)} all as stated`);
  t.ok(counts.findings > 50 && counts.allowed > 200 && counts.differ > 100, 'every kind of answer checked');
  const plain = lint(importedList(importRules('iptables', generate(random(1)).text, 'p')));
  t.ok(
    plain.findings.every((f) => f.example === undefined),
    'no example unless asked: answers keep their figures',
  );
});
