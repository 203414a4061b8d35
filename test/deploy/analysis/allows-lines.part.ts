/**
 * `allows` by allowing line (long lists, src/deploy/analysis/allows.ts `allowsByLine`), checked by code of its own:
 *
 * - against brute force on 80 seeded random lists (half within a random traffic filter): the lines listed are
 *   exactly the allowing lines (and the default) that decide packets of the filter, each with exactly as many
 *   packets as the grid's cells it decides hold, `except` exactly the earlier lines that decide packets of its
 *   boxes, and its example the lowest packet it decides (destination, source, protocol, ports);
 * - on a generated set of 2,000 rules with RETURNs and negations (imported, so with except boxes): every example
 *   is decided by its line, and every sampled packet that the first-match interpreter below finds allowed is
 *   decided by a listed line, with the line that takes it first among that line's `except` when it is not.
 */
import t from 'tap';
import { generatedDump } from '../../../src/bench/import.js';
import { allowsByLine, listOfNode, type RuleList, type RuleRef } from '../../../src/deploy/analysis/index.js';
import { importRules, importedList } from '../../../src/deploy/import/index.js';
import { ruleBox, UNIVERSE, type Box } from '../../../src/model/space.js';
import {
  Grid,
  defaultAllows,
  elementsOf,
  inBox,
  lowest,
  random,
  randomElement,
  randomFirewall,
  rulesBoxes,
} from './brute.js';

const LISTS = 80;
const position = (ref: RuleRef) => (ref === 'default' ? -1 : ref.position - 1);

/** `src=A dst=B proto=P [sport=N dport=N]` as a packet: source, destination octets, ports, protocol. */
function packetOf(text: string): number[] {
  const f = Object.fromEntries(text.split(' ').map((w) => w.split('=') as [string, string]));
  const octets = (a: string) => a.split('.').map(Number);
  const proto = ['tcp', 'udp'].indexOf(f.proto!);
  return [...octets(f.src!), ...octets(f.dst!), Number(f.sport ?? 0), Number(f.dport ?? 0), proto < 0 ? 2 : proto];
}

/** The order of examples: destination, source, protocol, source port, destination port (dimensions). */
const ORDER = [4, 5, 6, 7, 0, 1, 2, 3, 10, 8, 9];
/** Whether cell a's packet comes before cell b's in that order (a cell's packet is its lowest values). */
function lower(g: Grid, a: number, b: number): boolean {
  for (const d of ORDER) {
    const [x, y] = [g.value(a, d), g.value(b, d)];
    if (x !== y) return x < y;
  }
  return false;
}

t.test(`allows by line agrees with brute force on ${LISTS} random lists`, async (t) => {
  const rnd = random(47_31);
  let listed = 0;
  let excepts = 0;
  for (let n = 0; n < LISTS; n++) {
    const node = randomFirewall(rnd);
    const elements = elementsOf(node);
    const list = listOfNode(node, `list ${n}`);
    const filter: Box = rnd() < 0.5 ? UNIVERSE : ruleBox(randomElement(rnd));
    const report = allowsByLine(list, filter);
    const rules = rulesBoxes(elements);
    const g = new Grid([...rules, filter]);
    const masks = g.masks(rules);
    const allow = (at: number) => (at < 0 ? defaultAllows(node) : elements[at]!.action === 'ALLOW');
    // Per deciding line: its packets within the filter, its lowest packet, the earlier lines taking its packets.
    const count = new Map<number, bigint>();
    const lowestOf = new Map<number, number>();
    const takers = new Map<number, Set<number>>();
    for (const c of g.cellsIn(filter)) {
      const at = lowest(masks[c]!);
      for (let k = at + 1; k < rules.length && at >= 0; k++)
        if (masks[c]! & (1 << k)) takers.set(k, (takers.get(k) ?? new Set()).add(at));
      if (!allow(at)) continue;
      count.set(at, (count.get(at) ?? 0n) + g.size(c));
      if (!lowestOf.has(at) || lower(g, c, lowestOf.get(at)!)) lowestOf.set(at, c);
    }
    const want = [...count.keys()].sort((x, y) => (x < 0 ? 1 : y < 0 ? -1 : x - y));
    const got = report.lines.map((l) => position(l.rule));
    const wrong: string[] = [];
    if (JSON.stringify(got) !== JSON.stringify(want)) wrong.push(`lines ${got}, deciding allowed packets ${want}`);
    let total = 0n;
    for (const l of report.lines) {
      const at = position(l.rule);
      total += count.get(at) ?? 0n;
      if (l.packets !== String(count.get(at) ?? 0n)) wrong.push(`line ${at}: ${l.packets} packets, ${count.get(at)}`);
      const ex = [...(takers.get(at) ?? [])].sort((x, y) => x - y);
      if (at >= 0 && JSON.stringify((l.except ?? []).map(position)) !== JSON.stringify(ex))
        wrong.push(`line ${at}: except ${JSON.stringify(l.except)}, taken by ${ex}`);
      if (at < 0 && l.except !== undefined) wrong.push('the default names lines it is less of');
      const p = packetOf(l.example);
      const least = lowestOf.has(at) ? g.packet(lowestOf.get(at)!) : undefined;
      if (JSON.stringify(p) !== JSON.stringify(least))
        wrong.push(`line ${at}: example ${p}, its lowest packet ${least}`);
      listed++;
      excepts += ex.length;
    }
    if (report.packets !== String(total)) wrong.push(`${report.packets} packets in all, the lines' sum ${total}`);
    if (wrong.length) {
      t.same(wrong.slice(0, 3), [], `list ${n}: ${JSON.stringify(elements)}`);
      return;
    }
  }
  t.ok(listed > 80 && excepts > 25, `${listed} lines listed, ${excepts} lines named in their except`);
});

/** The line that decides a packet (its index), or -1: the first whose boxes hold it and whose except boxes do not. */
function decider(list: RuleList, p: readonly number[]): number {
  for (let k = 0; k < list.lines.length; k++) {
    const l = list.lines[k]!;
    if (l.boxes.some((b) => inBox(p, b)) && !(l.except ?? []).some((b) => inBox(p, b))) return k;
  }
  return -1;
}

t.test('a generated set of 2,000 rules with RETURNs and negations', async (t) => {
  const text = generatedDump(7, 2_000, 20, 200);
  const list = importedList(importRules('iptables', text, 'generated', { ignoreNat: true }), 'may');
  t.ok(list.lines.length > 1000 && list.lines.some((l) => l.except?.length), `${list.lines.length} lines`);
  const report = allowsByLine(list);
  const byLine = new Map(report.lines.map((l) => [position(l.rule), l]));
  const wrong: string[] = [];
  for (const [at, l] of byLine) {
    const d = decider(list, packetOf(l.example));
    if (d !== at) wrong.push(`line ${at}: its example ${l.example} is decided by ${d}`);
  }
  const rnd = random(47_32);
  const boxes = list.lines.flatMap((l, k) => l.boxes.map((b) => ({ b, k })));
  let allowed = 0;
  let taken = 0;
  for (let i = 0; i < 1500; i++) {
    const { b, k } = boxes[Math.floor(rnd() * boxes.length)]!;
    const p = Array.from({ length: 11 }, (_, d) => b[2 * d]! + Math.floor(rnd() * (b[2 * d + 1]! - b[2 * d]! + 1)));
    const at = decider(list, p);
    if (at < 0 ? list.defaultAllow : list.lines[at]!.allow) {
      allowed++;
      if (!byLine.has(at)) wrong.push(`packet ${p} is allowed by ${at}, which is not listed`);
    }
    // A packet of an allowing line k that an earlier line decides: that line is among k's except.
    const line = list.lines[k]!;
    if (line.allow && at >= 0 && at < k && !(line.except ?? []).some((x) => inBox(p, x))) {
      taken++;
      if (!(byLine.get(k)?.except ?? []).some((r) => position(r) === at))
        wrong.push(`packet ${p} of line ${k} is taken by ${at}, not in its except`);
    }
  }
  const sum = report.lines.reduce((n, l) => n + BigInt(l.packets), 0n);
  t.equal(report.packets, String(sum), 'the packets in all are the lines');
  t.same(wrong.slice(0, 5), [], `${report.lines.length} lines; ${allowed} sampled allowed, ${taken} taken first`);
});
