/**
 * A rule list as decision diagrams (bdd.ts), for lists too long for the box decomposition of decide.ts: each
 * line's packets, the packets it decides (first match: its packets less every earlier line's), the default's and
 * those the list allows. Answers are made of these sets and turned back into boxes exactly (`Bdd.toBoxes`).
 */
import { MAX_ANALYSIS_BOXES, linesNear, overlaps, type Budget } from './decide.js';
import { Bdd, FALSE } from './bdd.js';
import type { RuleList } from './list.js';
import type { Box } from '../../model/space.js';

/**
 * Lists of more lines than this (either list of a diff) are analysed with decision diagrams; shorter ones with
 * boxes, as before, so that their answers stay the same byte for byte. No shipped list but the chair's router
 * (4,841 lines) is that long; the box decomposition is refused by its work bound on it.
 */
export const DIAGRAM_LINES = 1_000;

export const byDiagrams = (...lists: RuleList[]) => lists.some((l) => l.lines.length > DIAGRAM_LINES);

export interface Folded {
  bdd: Bdd;
  list: RuleList;
  /** Each line's packets, its except boxes taken out. */
  matches: number[];
  /** The packets each line decides. */
  reached: number[];
  /** The packets no line matches: the default decides them. */
  rest: number;
  /** The packets the list allows (FALSE unless asked for: only diff needs it). */
  allowed: number;
}

/**
 * Nodes a fold makes per line, about: the generated 20,000-rule set's makes 240 (4.3 million for 17,800 entries),
 * the chair's router's 100. Room for them is made at once (`Bdd.reserve`).
 */
const NODES_PER_LINE = 256;

export function fold(bdd: Bdd, list: RuleList, { allowed: withAllowed = false } = {}): Folded {
  bdd.reserve(NODES_PER_LINE * list.lines.length);
  const matches: number[] = [];
  const reached: number[] = [];
  let covered = FALSE;
  let allowed = FALSE;
  // An unfolded list's except lists grow by a RETURN's boxes at a time, each a new array beginning with the
  // previous one's boxes (unfold.ts): the union of the last one is reused, so that the work stays linear.
  const unions = new Map<readonly Box[], number>();
  let last: { boxes: readonly Box[]; set: number } = { boxes: [], set: FALSE };
  const exceptOf = (boxes: readonly Box[]): number => {
    let set = unions.get(boxes);
    if (set !== undefined) return set;
    const extends_ = last.boxes.length <= boxes.length && last.boxes.every((b, i) => boxes[i] === b);
    set = extends_ ? last.set : FALSE;
    for (let i = extends_ ? last.boxes.length : 0; i < boxes.length; i++) set = bdd.or(set, bdd.box(boxes[i]!));
    unions.set(boxes, set);
    last = { boxes, set };
    return set;
  };
  let rest = FALSE;
  // The per-line sets, for as long as the diagrams are used; the covered set and the unions during the fold only.
  bdd.hold((mark) => {
    for (const u of matches) mark(u);
    for (const u of reached) mark(u);
    for (const u of unions.values()) mark(u);
    mark(last.set);
    mark(covered);
    mark(allowed);
    mark(rest);
  });
  for (const line of list.lines) {
    const m = line.except?.length ? bdd.diff(bdd.boxes(line.boxes), exceptOf(line.except)) : bdd.boxes(line.boxes);
    const r = m === FALSE ? FALSE : bdd.diff(m, covered);
    matches.push(m);
    reached.push(r);
    // A line no packet reaches (most of a real router's: unmatchable or shadowed) adds nothing to what is covered.
    if (r !== FALSE) covered = bdd.or(covered, r);
    if (withAllowed && line.allow) allowed = bdd.or(allowed, r);
    bdd.collect();
  }
  rest = bdd.diff(bdd.valid, covered);
  if (withAllowed && list.defaultAllow) allowed = bdd.or(allowed, rest);
  unions.clear();
  last = { boxes: [], set: FALSE };
  covered = FALSE;
  return { bdd, list, matches, reached, rest, allowed };
}

/** The packets a line decides, or the default (-1). */
export const decidedBy = (f: Folded, at: number) => (at < 0 ? f.rest : f.reached[at]!);

interface Splitting {
  from?: number;
  to?: number;
  within?: readonly Box[];
}
type Parts = { line: number; set: number }[];

/**
 * The packets of `set` by the line among `from` to `to` (exclusive) that decides them, in list order, and -1 for
 * those none of these lines matches. `within`, when given, holds every packet of `set` as boxes: only lines whose
 * boxes meet one of them are looked at (a few of a large list's, found by the prefix lookup of decide.ts; each test
 * of a box counted in `budget`). With `stop`, the split ends at the first part whose line (or -1) it holds for, and
 * answers undefined.
 */
export function split(
  f: Folded,
  set: number,
  budget: Budget,
  how: Splitting & { stop: (line: number) => boolean },
): Parts | undefined;
export function split(f: Folded, set: number, budget: Budget, how?: Splitting): Parts;
export function split(
  f: Folded,
  set: number,
  budget: Budget,
  { from = 0, to = f.list.lines.length, within, stop }: Splitting & { stop?: (line: number) => boolean } = {},
): Parts | undefined {
  const { bdd, list, matches } = f;
  const tested = (n: number) => budget.spend(0, n);
  const near = within && linesNear(list, within, from, to, tested);
  const out: Parts = [];
  let rest = set;
  const n = near ? near.length : to - from;
  for (let i = 0; i < n && rest !== FALSE; i++) {
    const j = near ? near[i]! : from + i;
    if (matches[j] === FALSE) continue;
    if (within) {
      const boxes = list.lines[j]!.boxes;
      tested(boxes.length * within.length);
      if (!boxes.some((b) => within.some((w) => overlaps(b, w)))) continue;
    }
    const part = bdd.and(rest, matches[j]!);
    if (part === FALSE) continue;
    if (stop?.(j)) return undefined;
    out.push({ line: j, set: part });
    rest = bdd.diff(rest, matches[j]!);
  }
  if (rest !== FALSE) {
    if (stop?.(-1)) return undefined;
    out.push({ line: -1, set: rest });
  }
  return out;
}

/** A set as disjoint boxes, counted as boxes made. */
export function boxesOf(f: Folded, set: number, budget: Budget): Box[] {
  const out = f.bdd.toBoxes(set, MAX_ANALYSIS_BOXES);
  budget.spend(out.length);
  return out;
}
