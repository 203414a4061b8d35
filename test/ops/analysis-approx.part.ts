/**
 * Findings that rest on approximated lines are marked (issue 47, item 6), through the operations as serve mode runs
 * them. An INPUT chain whose first line is `-i lo -j ACCEPT` (no --iface for lo: approximated to any interface) made
 * every later line look redundant. Checked by a first-match interpreter of this test's own over sample packets
 * arriving on lo and on eth0, the two behaviours the approximation covers: every finding the interpreter disproves
 * must be marked, and an unmarked finding must hold on both.
 */
import t from 'tap';
import { ok, workspace } from './call.js';

const RULES = [
  '-i lo -j ACCEPT',
  '-p tcp --dport 22 -j ACCEPT',
  '-s 10.0.0.0/8 -p tcp --dport 80 -j ACCEPT',
  '-s 10.1.0.0/16 -p tcp --dport 80 -j ACCEPT',
  '-p udp --dport 53 -j ACCEPT',
  '-s 192.168.0.0/16 -p tcp --dport 443 -j ACCEPT',
  '-s 192.168.0.0/16 -j DROP',
];
const FILE = [
  '*filter',
  ':INPUT DROP [0:0]',
  ':FORWARD DROP [0:0]',
  ':OUTPUT ACCEPT [0:0]',
  ...RULES.map((r) => `-A INPUT ${r}`),
  'COMMIT',
  '',
].join('\n');
/** The file line of rule k (0-based). */
const LINE = (k: number) => k + 5;

interface Packet {
  iif: string;
  src: string;
  proto: string;
  dport: number;
}

const num = (a: string) => a.split('.').reduce((v, o) => v * 256 + Number(o), 0);
function inPrefix(cidr: string, addr: string): boolean {
  const [a, p] = cidr.split('/');
  const size = 2 ** (32 - Number(p));
  return Math.floor(num(addr) / size) === Math.floor(num(a!) / size);
}

/** Whether rule text `r` matches packet `p`, read word by word. */
function matches(r: string, p: Packet): boolean {
  const w = r.split(' ');
  for (let k = 0; k < w.length; k += 2) {
    const [opt, v] = [w[k]!, w[k + 1]!];
    if (opt === '-i' && p.iif !== v) return false;
    if (opt === '-s' && !inPrefix(v, p.src)) return false;
    if (opt === '-p' && p.proto !== v) return false;
    if (opt === '--dport' && p.dport !== Number(v)) return false;
  }
  return true;
}

/** The verdict of the chain, without rule `skip`; and the rule that decides (-1: the policy DROP). */
function decide(p: Packet, skip = -1): { allow: boolean; by: number } {
  for (let k = 0; k < RULES.length; k++)
    if (k !== skip && matches(RULES[k]!, p)) return { allow: RULES[k]!.endsWith('ACCEPT'), by: k };
  return { allow: false, by: -1 };
}

const PACKETS: Packet[] = [];
for (const iif of ['lo', 'eth0'])
  for (const src of ['10.1.2.3', '10.200.0.1', '192.168.1.1', '8.8.8.8'])
    for (const proto of ['tcp', 'udp', 'icmp'])
      for (const dport of proto === 'icmp' ? [0] : [22, 53, 80, 443, 8080]) PACKETS.push({ iif, src, proto, dport });

/** Whether the interpreter agrees with a finding on line k, on the sample packets. */
function holds(kind: string, k: number): boolean {
  if (kind === 'redundant') return PACKETS.every((p) => decide(p).allow === decide(p, k).allow);
  // Unreachable (shadowed or redundant-unreachable): no packet is decided by the line.
  return PACKETS.every((p) => decide(p).by !== k);
}

const source = { kind: 'document', document: FILE, name: 'host.rules' };

t.test('lint: findings resting on -i lo approximated are marked; the others hold', async (t) => {
  const ws = await workspace(t);
  const report = await ok(t, ws, 'POST', '/fwd/analysis/lint', { source, chain: 'INPUT' }, 200);
  const findings = report.findings as { rule: { line: number }; finding: string; approximated?: string }[];
  t.ok(findings.length >= 5, `${findings.length} findings`);
  let firm = 0;
  let marked = 0;
  for (const f of findings) {
    const k = f.rule.line - 5;
    const real = holds(f.finding, k);
    if (f.approximated === undefined) {
      firm++;
      t.ok(real, `line ${f.rule.line} ${f.finding}, unmarked, holds on lo and eth0`);
    } else {
      marked++;
      t.match(f.approximated, /host\.rules:5|must reading/, `line ${f.rule.line}: ${f.approximated}`);
    }
    if (!real) t.ok(f.approximated, `line ${f.rule.line} ${f.finding} does not hold for eth0: marked`);
  }
  t.ok(firm >= 1 && marked >= 4, `${firm} firm, ${marked} marked`);
  // The line 10.1.0.0/16 port 80 is unreachable whatever lo does: found, and not marked.
  t.ok(
    findings.some((f) => f.rule.line === LINE(3) && f.approximated === undefined),
    'line 8 unreachable, firm',
  );
  // Asked for the may list alone, the answer is the old one: nothing marked.
  const may = await ok(t, ws, 'POST', '/fwd/analysis/lint', { source, chain: 'INPUT', approximation: 'may' }, 200);
  t.notOk(
    (may.findings as { approximated?: string }[]).some((f) => f.approximated),
    'approximation: may, unmarked',
  );
});

t.test('allows: classes that lo on another interface would deny are marked', async (t) => {
  const ws = await workspace(t);
  const report = await ok(t, ws, 'POST', '/fwd/analysis/allows?proto=tcp&dport=8080', { source, chain: 'INPUT' }, 200);
  const classes = report.classes as { source: string; approximated?: string }[];
  t.ok(classes.length > 0, 'the may list allows tcp 8080 (by -i lo)');
  // From eth0 nothing allows tcp 8080: every class must be marked.
  t.ok(
    PACKETS.some((p) => p.iif === 'eth0' && p.dport === 8080 && !decide(p).allow),
    'the interpreter denies some tcp 8080 from eth0',
  );
  for (const c of classes) t.match(c.approximated, /must reading denies/, `${c.source} marked`);
  // SSH is allowed whatever the interface: its class is firm.
  const ssh = await ok(t, ws, 'POST', '/fwd/analysis/allows?proto=tcp&dport=22', { source, chain: 'INPUT' }, 200);
  t.ok(
    PACKETS.filter((p) => p.proto === 'tcp' && p.dport === 22).every((p) => decide(p).allow),
    'the interpreter allows all ssh',
  );
  t.same(
    (ssh.classes as { approximated?: string }[]).map((c) => c.approximated),
    [undefined],
    'ssh: one class, unmarked',
  );
});

t.test('diff: a class whose verdict rests on -i lo is marked', async (t) => {
  const ws = await workspace(t);
  // The other file drops ssh before -i lo: for ssh from lo, the verdicts differ whatever -i lo does; from eth0 too.
  const other = FILE.replace(
    '-A INPUT -i lo -j ACCEPT',
    '-A INPUT -p tcp --dport 443 -j DROP\n-A INPUT -i lo -j ACCEPT',
  );
  const to = { kind: 'document', document: other, name: 'other.rules' };
  const report = await ok(t, ws, 'POST', '/fwd/analysis/diff', { from: source, to, chain: 'INPUT' }, 200);
  const classes = report.classes as { protocol: string; dstPort: string; source: string; approximated?: string }[];
  t.ok(classes.length > 0, 'https differs');
  for (const c of classes) {
    t.equal(c.dstPort, '443', 'only port 443 differs');
    // Only 192.168/16 https is allowed whatever lo does; the rest of https is allowed only by -i lo in A.
    const fromLan = c.source.startsWith('192.168.');
    t.equal(c.approximated === undefined, fromLan, `${c.source}: ${c.approximated ?? 'firm'}`);
  }
});
