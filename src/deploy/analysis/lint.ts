/**
 * `lint`: lines that never decide a packet, and lines whose removal changes no verdict (firewall-io.md B.9.1).
 *
 * As Batfish's filterLineReachability: a line that matches nothing is *unmatchable*; a line whose packets earlier
 * lines all match is unreachable: *shadowed* when some earlier line that takes some of its packets has the other
 * action, else *redundant-unreachable*. Its blocking lines are chosen as Batfish chooses them (#2823, approach D):
 * the earlier lines that take some of its packets, by the size of their overlap with it, largest first (ties: the
 * earlier line), until they cover it, plus the largest one with the other action if none is among them yet. A
 * reachable line is *redundant* when every packet it decides gets its action from the later lines and the default
 * anyway: removing it alone changes no packet's verdict; it names the lines (and the default) that would decide
 * its packets. Al-Shaer's correlation and generalisation are not defects and are not reported.
 */
import { volume, intersect, type Box } from '../../model/space.js';
import { Budget, byLine, decide, eachDecided, lineRegion, withoutLine } from './decide.js';
import { examplePacket } from './classes.js';
import { Bdd, FALSE } from './bdd.js';
import { byDiagrams, fold, split } from './folded.js';
import { refOf, verdict, type RuleList, type RuleRef } from './list.js';

export type FindingKind = 'unmatchable' | 'shadowed' | 'redundant-unreachable' | 'redundant';

export interface Finding {
  rule: RuleRef;
  action: 'ALLOW' | 'DENY';
  text: string;
  finding: FindingKind;
  /**
   * Unreachable lines: the earlier lines that block it (Batfish's choice). Redundant lines: the later lines, and
   * the default, that decide its packets once it is gone. Empty for an unmatchable line.
   */
  by: RuleRef[];
  /** Unreachable lines: some earlier line that takes some of its packets has the other action. */
  differentAction: boolean;
  /**
   * With `examples`: one packet of the line, as `firewall explain` reads it: one the line decides (redundant), or
   * one the earlier lines take from it (unreachable). None for an unmatchable line.
   */
  example?: string;
  /** The finding rests on approximated lines: why, and which (analysis/readings.ts). */
  approximated?: string;
}

export interface LintReport {
  firewall: string;
  rules: number;
  defaultAction: 'ALLOW' | 'DENY';
  findings: Finding[];
}

/** The packets two unions of disjoint boxes share, counted exactly. */
function overlap(a: readonly Box[], b: readonly Box[]): bigint {
  let n = 0n;
  for (const x of a)
    for (const y of b) {
      const both = intersect(x, y);
      if (both) n += volume(both);
    }
  return n;
}

/**
 * What becomes of line k: its packets decided by the lines around it. Those an earlier line matches are taken
 * from it (`takers`); the others it decides (`reachable` when there are any), and without it the later lines and
 * the default would (`later`). That stops as soon as one of them would give another action: the line is then
 * reachable and not redundant, nothing to report.
 */
function fate(list: RuleList, k: number, region: Box[], budget: Budget) {
  const { lines } = list;
  const line = lines[k]!;
  const takers = new Set<number>();
  const later = new Set<number>();
  const rest: Box[] = [];
  eachDecided(
    list,
    budget,
    region,
    (box, at) => {
      if (at < 0) rest.push(box);
      else takers.add(at);
    },
    { to: k },
  );
  const redundant = eachDecided(
    list,
    budget,
    rest,
    (_box, at) => {
      if ((at < 0 ? list.defaultAllow : lines[at]!.allow) !== line.allow) return false;
      later.add(at);
    },
    { from: k + 1 },
  );
  return { takers, reachable: rest.length > 0, redundant, later };
}

/**
 * An unreachable line's blocking lines, of those that take its packets (`takers`): by overlap with the whole line,
 * largest first, until the line is covered, and the largest with the other action.
 */
function blocking(list: RuleList, k: number, region: Box[], takers: Set<number>, budget: Budget): number[] {
  const { lines } = list;
  const line = lines[k]!;
  const weighed = [...takers]
    .map((at) => ({ at, weight: overlap(lineRegion(lines[at]!, budget), region) }))
    .sort((a, b) => (a.weight === b.weight ? a.at - b.at : a.weight > b.weight ? -1 : 1));
  let uncovered: Box[] = [...region];
  let needDifferent = weighed.some(({ at }) => lines[at]!.allow !== line.allow);
  const by: number[] = [];
  for (const { at } of weighed) {
    const blocker = lines[at]!;
    const otherAction = blocker.allow !== line.allow;
    if (uncovered.length || (needDifferent && otherAction)) {
      uncovered = withoutLine(uncovered, blocker, budget);
      by.push(at);
      needDifferent &&= !otherAction;
    }
    if (!uncovered.length && !needDifferent) break;
  }
  return by.sort((a, b) => a - b);
}

/**
 * The same findings with decision diagrams (long lists): a line is unreachable when the packets it decides are
 * none; reachable, redundant when each of those packets gets its action from the line that decides it once the
 * line is gone (split by the lines after it, stopping at the first that gives another action). Examples: the first
 * packet the line decides (redundant), the lowest corner of its first box (unreachable).
 */
function lintByDiagrams(list: RuleList, budget: Budget, examples: boolean): Finding[] {
  const { lines } = list;
  const ref = (at: number): RuleRef => (at < 0 ? 'default' : refOf(lines[at]!));
  const f = fold(new Bdd(budget.diagrams), list);
  const { bdd, matches, reached } = f;
  // Which reachable lines are redundant, from the bottom up: `after` is what the lines after k (and the default)
  // allow, one set held at a time.
  const redundant = new Uint8Array(lines.length);
  let after = list.defaultAllow ? bdd.valid : FALSE;
  for (let k = lines.length - 1; k >= 0; k--) {
    bdd.collect(after);
    const line = lines[k]!;
    const r = reached[k]!;
    if (r !== FALSE && (line.allow ? bdd.diff(r, after) : bdd.and(r, after)) === FALSE) redundant[k] = 1;
    if (matches[k] !== FALSE) after = line.allow ? bdd.or(matches[k]!, after) : bdd.diff(after, matches[k]!);
  }
  const findings: Finding[] = [];
  lines.forEach((line, k) => {
    // Between lines the fold's sets are all this holds: the rest is collected.
    bdd.collect();
    const base = { rule: refOf(line), action: verdict(line.allow), text: line.text };
    if (matches[k] === FALSE) {
      findings.push({ ...base, finding: 'unmatchable', by: [], differentAction: false });
      return;
    }
    const within = line.boxes;
    if (reached[k] === FALSE) {
      const takers = new Set(split(f, matches[k]!, budget, { to: k, within }).map((p) => p.line));
      const different = [...takers].some((at) => lines[at]!.allow !== line.allow);
      const by = blocking(list, k, lineRegion(line, budget), takers, budget).map(ref);
      const example = examples ? { example: examplePacket(lineRegion(line, budget)[0]!) } : {};
      findings.push({
        ...base,
        finding: different ? 'shadowed' : 'redundant-unreachable',
        by,
        differentAction: different,
        ...example,
      });
      return;
    }
    if (!redundant[k]) return;
    const by = split(f, reached[k]!, budget, { from: k + 1, within })
      .map((p) => p.line)
      .sort((a, b) => (a < 0 ? 1 : b < 0 ? -1 : a - b))
      .map(ref);
    const example = examples ? { example: examplePacket(bdd.first(reached[k]!)) } : {};
    findings.push({ ...base, finding: 'redundant', by, differentAction: false, ...example });
  });
  return findings;
}

export function lint(list: RuleList, budget = new Budget(), examples = false): LintReport {
  const { lines } = list;
  if (byDiagrams(list))
    return {
      firewall: list.name,
      rules: lines.length,
      defaultAction: verdict(list.defaultAllow),
      findings: lintByDiagrams(list, budget, examples),
    };
  const ref = (at: number): RuleRef => (at < 0 ? 'default' : refOf(lines[at]!));
  const findings: Finding[] = [];
  lines.forEach((line, k) => {
    const base = { rule: refOf(line), action: verdict(line.allow), text: line.text };
    const region = lineRegion(line, budget);
    if (!region.length) {
      findings.push({ ...base, finding: 'unmatchable', by: [], differentAction: false });
      return;
    }
    const { takers, reachable, redundant, later } = fate(list, k, region, budget);
    if (!reachable) {
      const different = [...takers].some((at) => lines[at]!.allow !== line.allow);
      const by = blocking(list, k, region, takers, budget).map(ref);
      findings.push({
        ...base,
        finding: different ? 'shadowed' : 'redundant-unreachable',
        by,
        differentAction: different,
      });
    } else if (redundant) {
      const by = [...later].sort((a, b) => (a < 0 ? 1 : b < 0 ? -1 : a - b)).map(ref);
      findings.push({ ...base, finding: 'redundant', by, differentAction: false });
    }
  });
  if (examples && findings.length) {
    // The pieces each line decides, for a packet a redundant line decides itself.
    const decided = byLine(decide(list, budget));
    for (const f of findings) {
      if (f.finding === 'unmatchable' || f.rule === 'default') continue;
      const at = f.rule.position - 1;
      const box = (f.finding === 'redundant' ? decided.get(at)?.[0] : undefined) ?? lineRegion(lines[at]!, budget)[0]!;
      f.example = examplePacket(box);
    }
  }
  return {
    firewall: list.name,
    rules: lines.length,
    defaultAction: verdict(list.defaultAllow),
    findings,
  };
}
