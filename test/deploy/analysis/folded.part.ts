/**
 * The analyses of long lists (more than 1,000 lines: decision diagrams, src/deploy/analysis/folded.ts) against a
 * first-match interpreter of the rule list written here (a packet's line is the first whose boxes hold it and whose
 * except boxes do not), on the chair's router (May and September 2015, test/fixtures/iptables/real, NOTICE.md
 * there) and on a generated set of 2,000 rules with RETURNs, negations and user chains and an edit of it:
 *
 * - diff: every class's example and packets sampled in it get the verdicts and deciding lines the class states on
 *   either side; packets sampled in the lines' boxes lie in a class exactly when the verdicts differ, in one only;
 * - lint: a finding's example is taken by an earlier line (unreachable) or decided by the line and given the same
 *   verdict without it (redundant); a line deciding a sampled packet is not reported unreachable, nor redundant
 *   when the packet's verdict changes without it;
 * - allows: a sampled packet lies in a class (one) exactly when it is allowed, and its deciding line is among the
 *   class's lines.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { generatedDump } from '../../../src/bench/import.js';
import { REPO } from '../../../src/bench/reference.js';
import { random } from '../../../src/bench/topology.js';
import { Budget, allowsOf, diff, lint, type RuleList, type RuleRef } from '../../../src/deploy/analysis/index.js';
import { importRules, importedList } from '../../../src/deploy/import/index.js';
import { decider, inside } from '../first-match.js';
import { boxOfClass } from './brute.js';

type Point = number[];
const TOPS = [255, 255, 255, 255, 255, 255, 255, 255, 65535, 65535, 2];

/**
 * The boxes holding a packet, in order: per address octet and value, a bit for each box reaching it; a packet's
 * candidates are the boxes whose bits are set for all 8 of its octets, each then checked whole (answers hold
 * thousands of boxes; buckets by one octet left hundreds to check per packet).
 */
function locator(boxes: readonly (readonly number[])[]): (p: Point) => number[] {
  const words = (boxes.length + 31) >>> 5;
  const rows = Array.from({ length: 8 * 256 }, () => new Int32Array(words));
  boxes.forEach((b, k) => {
    for (let d = 0; d < 8; d++)
      for (let v = b[2 * d]!; v <= b[2 * d + 1]!; v++) rows[256 * d + v]![k >>> 5]! |= 1 << (k & 31);
  });
  return (p) => {
    const out: number[] = [];
    for (let w = 0; w < words; w++) {
      let bits = -1;
      for (let d = 0; d < 8 && bits; d++) bits &= rows[256 * d + p[d]!]![w]!;
      for (; bits; bits &= bits - 1) {
        const k = 32 * w + 31 - Math.clz32(bits & -bits);
        if (inside(boxes[k]!, p)) out.push(k);
      }
    }
    return out;
  };
}

const allows = (list: RuleList, at: number) => (at < 0 ? list.defaultAllow : list.lines[at]!.allow);
const position = (ref: RuleRef) => (ref === 'default' ? -1 : ref.position - 1);

/** `src=A dst=B proto=P [sport=N dport=N]` as a packet. */
function packetOf(text: string): Point {
  const f = Object.fromEntries(text.split(' ').map((w) => w.split('=') as [string, string]));
  const octets = (a: string) => a.split('.').map(Number);
  const proto = ['tcp', 'udp'].indexOf(f.proto!);
  return [...octets(f.src!), ...octets(f.dst!), Number(f.sport ?? 0), Number(f.dport ?? 0), proto < 0 ? 2 : proto];
}

/** A packet in a box: a corner or inside, each dimension on its own; OTHER packets with port 0. */
function pointIn(rnd: () => number, b: readonly number[]): Point {
  const p = TOPS.map((_, d) => {
    const [lo, hi] = [b[2 * d]!, b[2 * d + 1]!];
    const r = rnd();
    return r < 0.3 ? lo : r < 0.5 ? hi : lo + Math.floor(rnd() * (hi - lo + 1));
  });
  if (p[10] === 2) p[8] = p[9] = 0;
  return p;
}

/** Packets in the boxes of random lines of the lists (where verdicts change). */
function samples(rnd: () => number, lists: RuleList[], n: number): Point[] {
  const boxes = lists.flatMap((l) => l.lines.flatMap((line) => line.boxes));
  return Array.from({ length: n }, () => pointIn(rnd, boxes[Math.floor(rnd() * boxes.length)]!));
}

function checkDiff(t: Test, name: string, a: RuleList, b: RuleList, rnd: () => number): void {
  const report = diff(a, b, undefined, true);
  const boxes = report.classes.map(boxOfClass);
  const locate = locator(boxes);
  const wrong: string[] = [];
  const expect = (p: Point, k: number, what: string) => {
    const c = report.classes[k]!;
    const [da, db] = [decider(a, p), decider(b, p)];
    const got = [position(c.from.rule), position(c.to.rule), c.from.verdict, c.to.verdict].join();
    const want = [da, db, allows(a, da) ? 'ALLOW' : 'DENY', allows(b, db) ? 'ALLOW' : 'DENY'].join();
    if (got !== want || !inside(boxes[k]!, p)) wrong.push(`${what} ${p.join()} of class ${k}: ${got}, packet ${want}`);
  };
  report.classes.forEach((c, k) => {
    expect(packetOf(c.example!), k, 'example');
    expect(pointIn(rnd, boxes[k]!), k, 'packet');
  });
  let differing = 0;
  for (const p of samples(rnd, [a, b], SAMPLES)) {
    const differs = allows(a, decider(a, p)) !== allows(b, decider(b, p));
    const classes = locate(p);
    if (classes.length !== (differs ? 1 : 0)) wrong.push(`packet ${p.join()}: differs ${differs}, classes ${classes}`);
    else if (differs) expect(p, classes[0]!, 'sampled');
    if (differs) differing++;
  }
  t.same(wrong.slice(0, 5), [], `${name}: ${report.classes.length} classes; ${differing} of ${SAMPLES} sampled differ`);
  t.equal(report.equivalent, report.classes.length === 0);
}

/** A list's lint, made once: the last test compares the generated list's with the lint that collects early. */
const lints = new WeakMap<RuleList, ReturnType<typeof lint>>();
function lintOf(list: RuleList): ReturnType<typeof lint> {
  let report = lints.get(list);
  if (!report) lints.set(list, (report = lint(list, undefined, true)));
  return report;
}

function checkLint(t: Test, name: string, list: RuleList, rnd: () => number): void {
  const report = lintOf(list);
  const wrong: string[] = [];
  const found = new Map(report.findings.map((f) => [position(f.rule), f]));
  for (const f of report.findings) {
    const k = position(f.rule);
    const line = list.lines[k]!;
    if (f.finding === 'unmatchable') {
      if (f.example !== undefined) wrong.push(`line ${k + 1}: an example for an unmatchable line`);
      continue;
    }
    const p = packetOf(f.example!);
    const mine = line.boxes.some((b) => inside(b, p)) && !(line.except ?? []).some((b) => inside(b, p));
    const at = decider(list, p);
    if (f.finding === 'redundant') {
      const without = decider(list, p, k + 1);
      if (at !== k || allows(list, without) !== line.allow || !f.by.some((r) => position(r) === without))
        wrong.push(`line ${k + 1} redundant: its example ${p.join()} is decided by ${at}, without it by ${without}`);
    } else if (!mine || at < 0 || at >= k) wrong.push(`line ${k + 1} ${f.finding}: example ${p.join()} taken by ${at}`);
  }
  let decided = 0;
  for (const p of samples(rnd, [list], SAMPLES)) {
    const at = decider(list, p);
    if (at < 0) continue;
    decided++;
    const f = found.get(at);
    if (!f) continue;
    const changes = allows(list, decider(list, p, at + 1)) !== list.lines[at]!.allow;
    if (f.finding !== 'redundant' || changes) wrong.push(`line ${at + 1} decides ${p.join()} but is ${f.finding}`);
  }
  const kinds = [...new Set(report.findings.map((f) => f.finding))].sort();
  t.same(wrong.slice(0, 5), [], `${name}: ${report.findings.length} findings (${kinds}); ${decided} packets checked`);
}

function checkAllows(t: Test, name: string, list: RuleList, rnd: () => number): void {
  const report = allowsOf(list, undefined, undefined, true);
  const boxes = report.classes.map(boxOfClass);
  const locate = locator(boxes);
  const wrong: string[] = [];
  // Sampled packets, and the examples of some classes.
  const examples = report.classes.filter((_, k) => k % 10 === 0).map((c) => packetOf(c.example!));
  for (const p of [...samples(rnd, [list], SAMPLES), ...examples]) {
    const at = decider(list, p);
    const classes = locate(p);
    if (classes.length !== (allows(list, at) ? 1 : 0)) wrong.push(`packet ${p.join()}: decided by ${at} in ${classes}`);
    else if (classes.length && !report.classes[classes[0]!]!.rules.some((r) => position(r) === at))
      wrong.push(`packet ${p.join()}: decided by ${at}, not among its class's lines`);
  }
  t.same(wrong.slice(0, 5), [], `${name}: ${report.classes.length} allowed classes`);
}

/** Packets sampled per check: each costs a walk of the list (about 5,000 lines here). */
const SAMPLES = 1500;

const listOf = (text: string, name: string) =>
  importedList(importRules('iptables', text, name, { ignoreNat: true }), 'may');

/** The generated set of the last two tests, imported once (both read the same list). */
const GENERATED = generatedDump(5, 2_000, 20, 200);
const generated = listOf(GENERATED, 'generated');

t.test("the chair's router, May and September 2015", async (t) => {
  const dir = path.join(REPO, 'test', 'fixtures', 'iptables', 'real');
  const [may, sept] = ['tum-2015-05.rules', 'tum-2015-09.rules'].map((f) =>
    listOf(readFileSync(path.join(dir, f), 'utf8'), f),
  );
  t.ok(may!.lines.length > 1000 && sept!.lines.length > 1000, 'long lists');
  const rnd = random(47_3);
  checkDiff(t, 'diff May September', may!, sept!, rnd);
  checkLint(t, 'lint May', may!, rnd);
  checkAllows(t, 'allows May', may!, rnd);
});

t.test('a generated set of 2,000 rules and an edit of it', async (t) => {
  const edited = GENERATED.split('\n')
    .map((l, k) => (k % 97 === 0 && l.endsWith('-j ACCEPT') ? l.replace(/ACCEPT$/, 'DROP') : l))
    .join('\n');
  const [a, b] = [generated, listOf(edited, 'edited')];
  t.ok(a.lines.length > 1000, `${a.lines.length} lines`);
  const rnd = random(47_5);
  checkDiff(t, 'diff generated edited', a, b, rnd);
  checkLint(t, 'lint generated', a, rnd);
});

t.test('collections between lines change no byte of any answer', async (t) => {
  const edited = GENERATED.replace(/ACCEPT\n/, 'DROP\n');
  const [a, b] = [generated, listOf(edited, 'edited')];
  // The fold of this list makes far more than 20,000 nodes: with this bound it collects between most lines.
  const early = () => new Budget(undefined, undefined, { collectFrom: 20_000 });
  t.equal(JSON.stringify(lint(a, early(), true)), JSON.stringify(lintOf(a)), 'lint');
  t.equal(JSON.stringify(diff(a, b, early(), true)), JSON.stringify(diff(a, b, new Budget(), true)), 'diff');
  t.equal(
    JSON.stringify(allowsOf(a, undefined, early(), true)),
    JSON.stringify(allowsOf(a, undefined, new Budget(), true)),
    'allows',
  );
});
