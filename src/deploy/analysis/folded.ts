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

/** A list's line sets on one diagram store: each line's packets, its except boxes taken out. */
export interface Lines {
  bdd: Bdd;
  list: RuleList;
  matches: number[];
}

export interface Folded extends Lines {
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

/** A line's packets as a key, for lines of two lists that are the same (`lineSets`' `known`). */
type Keys = Map<string, number>;

/**
 * Each line's packets (its boxes less its except boxes), held for as long as the diagrams are used. `known` maps
 * the lines already made on this store (another list's, by their boxes' values) to their sets: a line of a second
 * snapshot that is the same as one of the first is not made again; each line's key is added to it.
 */
export function lineSets(bdd: Bdd, list: RuleList, known?: Keys): Lines {
  bdd.reserve(NODES_PER_LINE * list.lines.length);
  const matches: number[] = [];
  // An unfolded list's except lists grow by a RETURN's boxes at a time, each a new array beginning with the
  // previous one's boxes (unfold.ts): the union of the last one is reused, so that the work stays linear.
  const unions = new Map<readonly Box[], number>();
  let last: { boxes: readonly Box[]; set: number; key: string } = { boxes: [], set: FALSE, key: '' };
  const exceptKeys = new Map<readonly Box[], string>();
  const keyOf = (boxes: readonly Box[]) => boxes.map((b) => b.join()).join(';');
  // Keys of except lists the same way: one that extends the last extends its key.
  const exceptKey = (boxes: readonly Box[]): string => {
    let key = exceptKeys.get(boxes);
    if (key !== undefined) return key;
    const extends_ = last.boxes.length <= boxes.length && last.boxes.every((b, i) => boxes[i] === b);
    const more = keyOf(extends_ ? boxes.slice(last.boxes.length) : boxes);
    key = extends_ && last.key ? (more ? `${last.key};${more}` : last.key) : more;
    exceptKeys.set(boxes, key);
    return key;
  };
  const exceptOf = (boxes: readonly Box[], key: string): number => {
    let set = unions.get(boxes);
    if (set !== undefined) return set;
    const extends_ = last.boxes.length <= boxes.length && last.boxes.every((b, i) => boxes[i] === b);
    set = extends_ ? last.set : FALSE;
    for (let i = extends_ ? last.boxes.length : 0; i < boxes.length; i++) set = bdd.or(set, bdd.box(boxes[i]!));
    unions.set(boxes, set);
    last = { boxes, set, key };
    return set;
  };
  bdd.hold((mark) => {
    for (const u of matches) mark(u);
    for (const u of unions.values()) mark(u);
    mark(last.set);
  });
  for (const line of list.lines) {
    const except = line.except?.length ? line.except : undefined;
    const ek = known && except ? exceptKey(except) : '';
    const key = known && `${keyOf(line.boxes)}|${ek}`;
    let m = key === undefined ? undefined : known!.get(key);
    if (m === undefined) {
      m = except ? bdd.diff(bdd.boxes(line.boxes), exceptOf(except, ek)) : bdd.boxes(line.boxes);
      if (key !== undefined) known!.set(key, m);
    }
    matches.push(m);
    bdd.collect();
  }
  unions.clear();
  last = { boxes: [], set: FALSE, key: '' };
  return { bdd, list, matches };
}

/**
 * The first-match fold: each line's reached set (its packets less every earlier line's), the default's, and with
 * `allowed` the packets the list allows.
 */
export function fold(bdd: Bdd, list: RuleList, { allowed: withAllowed = false } = {}): Folded {
  const { matches } = lineSets(bdd, list);
  const reached: number[] = [];
  let covered = FALSE;
  let allowed = FALSE;
  let rest = FALSE;
  // The reached sets, for as long as the diagrams are used; the covered set during the fold only.
  bdd.hold((mark) => {
    for (const u of reached) mark(u);
    mark(covered);
    mark(allowed);
    mark(rest);
  });
  list.lines.forEach((line, k) => {
    const m = matches[k]!;
    const r = m === FALSE ? FALSE : bdd.diff(m, covered);
    reached.push(r);
    // A line no packet reaches (most of a real router's: unmatchable or shadowed) adds nothing to what is covered.
    if (r !== FALSE) covered = bdd.or(covered, r);
    if (withAllowed && line.allow) allowed = bdd.or(allowed, r);
    bdd.collect();
  });
  rest = bdd.diff(bdd.valid, covered);
  if (withAllowed && list.defaultAllow) allowed = bdd.or(allowed, rest);
  covered = FALSE;
  return { bdd, list, matches, reached, rest, allowed };
}

/**
 * The packets a list allows, from the bottom up: the default's verdict, then each line's over it (allowing: its
 * packets added; denying: taken out), one operation a line where the first-match fold takes two, and no reached
 * set made. `below`, when given, is what the lines from `from` on (and the default) allow, made already; `keep`
 * asks also for what the lines from `keep` on allow.
 */
export function allowedBy(f: Lines, { from = f.list.lines.length, below = -1, keep = -1 } = {}) {
  const { bdd, list, matches } = f;
  let acc = below >= 0 ? below : list.defaultAllow ? bdd.valid : FALSE;
  let kept = from === keep ? acc : FALSE;
  for (let k = from - 1; k >= 0; k--) {
    bdd.collect(acc, kept);
    const m = matches[k]!;
    if (m !== FALSE) acc = list.lines[k]!.allow ? bdd.or(m, acc) : bdd.diff(acc, m);
    if (k === keep) kept = acc;
  }
  return { allowed: acc, kept };
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
  f: Lines,
  set: number,
  budget: Budget,
  how: Splitting & { stop: (line: number) => boolean },
): Parts | undefined;
export function split(f: Lines, set: number, budget: Budget, how?: Splitting): Parts;
export function split(
  f: Lines,
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
export function boxesOf(f: Lines, set: number, budget: Budget): Box[] {
  const out = f.bdd.toBoxes(set, MAX_ANALYSIS_BOXES);
  budget.spend(out.length);
  return out;
}
