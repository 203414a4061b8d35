/**
 * Findings that rest on approximated lines (issue 47, item 6). An approximated import has two readings (B.5): the
 * may list (maybe accepts taken, maybe drops left out) and the must list (the opposite). The analyses answer on
 * the may list; a finding, allowed class or diff class is firm only when the must list says the same of it, and is
 * marked `approximated` (with the approximated lines it rests on) otherwise: with `-i lo` approximated to any
 * interface, `-i lo -j ACCEPT` takes every packet in the may list, and what it seems to make redundant is not.
 */
import type { Box } from '../../model/space.js';
import { Budget, allows, decide } from './decide.js';
import type { LintReport } from './lint.js';
import { labelOf, refOf, type Line, type RuleList } from './list.js';

const MAX_NAMED = 3;

/** The approximated lines among `lines`, by where they are, each once, a few named. */
function named(list: RuleList, at: Iterable<number>): string {
  const wheres = [
    ...new Set([...at].filter((k) => k >= 0 && list.lines[k]?.maybe).map((k) => labelOf(refOf(list.lines[k]!)))),
  ];
  if (!wheres.length) return '';
  const more = wheres.length > MAX_NAMED ? ` and ${wheres.length - MAX_NAMED} more` : '';
  return `; approximated: ${wheres.slice(0, MAX_NAMED).join(', ')}${more}`;
}

/** The positions of the lines of `list` that are approximated (maybe entries), in order. */
const maybeLines = (list: RuleList, keep: (k: number) => boolean = () => true) =>
  list.lines.flatMap((l, k) => (l.maybe && keep(k) ? [k] : []));

const key = (line: Line | undefined) => (line?.entry === undefined ? undefined : String(line.entry));

/**
 * Marks each finding of the may list's lint that the must list's lint does not make too (the same line, the same
 * kind), or whose own line is approximated.
 */
export function markLint(report: LintReport, may: RuleList, mustReport: LintReport, must: RuleList): LintReport {
  const confirmed = new Set(
    mustReport.findings.flatMap((f) => {
      const k = f.rule === 'default' ? undefined : key(must.lines[f.rule.position - 1]);
      return k === undefined ? [] : [`${k} ${f.finding}`];
    }),
  );
  const findings = report.findings.map((f) => {
    if (f.rule === 'default') return f;
    const at = f.rule.position - 1;
    const line = may.lines[at];
    if (line?.maybe) return { ...f, approximated: `the line itself is approximated${named(may, [at])}` };
    if (confirmed.has(`${key(line)} ${f.finding}`)) return f;
    // Lines before it decide whether it is reached; lines after it whether it is redundant.
    const around = maybeLines(may, (k) => (f.finding === 'redundant' ? k > at : k < at));
    const dropped = maybeLines(must, (k) => must.lines[k]!.entry !== undefined && !must.lines[k]!.allow);
    const text = named(may, around) || named(must, dropped);
    return { ...f, approximated: `the must reading does not find it${text}` };
  });
  return { ...report, findings };
}

/** For `allowsOf`: why a class the may list allows is not allowed whole by the must list, or undefined. */
export function allowsCheck(may: RuleList, must: RuleList, budget: Budget) {
  return (box: Box, lines: readonly number[]): string | undefined => {
    const denied = decide(must, budget, [box]).filter((p) => !allows(must, p.line));
    if (!denied.length) return undefined;
    const text = named(may, lines) || named(must, new Set(denied.map((p) => p.line)));
    return `the must reading denies some of these packets${text}`;
  };
}

/**
 * For the per-line `allows` of long lists (allows.ts): why the packets line `at` (or the default, -1) of the may
 * list allows are not all allowed by the must list, given the must list's lines that deny some of them.
 */
export function deniedText(may: RuleList, must: RuleList, at: number, denying: Iterable<number>): string {
  return `the must reading denies some of these packets${named(may, [at]) || named(must, denying)}`;
}

/** For `diff`: why a class's verdicts differ between the readings of either side, or undefined. */
export function diffCheck(
  a: { may: RuleList; must?: RuleList },
  b: { may: RuleList; must?: RuleList },
  budget: Budget,
) {
  const side = (s: { may: RuleList; must?: RuleList }, box: Box, at: number, name: string) => {
    if (!s.must) return '';
    const want = allows(s.may, at);
    const other = decide(s.must, budget, [box]).filter((p) => allows(s.must!, p.line) !== want);
    if (!other.length) return '';
    const text = named(s.may, [at]) || named(s.must, new Set(other.map((p) => p.line)));
    return `${name}'s must reading gives some of these packets another verdict${text}`;
  };
  return (box: Box, from: number, to: number): string | undefined =>
    [side(a, box, from, 'A'), side(b, box, to, 'B')].filter(Boolean).join('; ') || undefined;
}
