/**
 * First-match decomposition, the step every analysis shares: a set of packets split by the line that decides each
 * packet (the first line matching it) or by the default action. Exact, with the box arithmetic of model/space.ts,
 * and bounded: an analysis that would need more work than MAX_ANALYSIS_BOXES and MAX_ANALYSIS_TESTS allow is refused
 * rather than left to run.
 */
import { badRequest } from '../../model/errors.js';
import { plural } from '../../model/words.js';
import {
  DST,
  SRC,
  coalesce,
  coalesceWith,
  contains,
  intersect,
  meet,
  subtract,
  UNIVERSE,
  type Box,
} from '../../model/space.js';
import type { DiagramBounds } from './bdd.js';
import type { Line, RuleList } from './list.js';

/**
 * The work one analysis may do: boxes made by subtraction or intersection (at most about 700 MB of them), and tests
 * whether a rule's box meets a piece, boxes looked at while coalescing counting 20 tests each (at most a few seconds
 * of them here). Linting 5,000 random prefix-shaped rules made 0.64 million boxes and 6.5 million tests, in 0.35 s;
 * allows and diff of 300 random rules with wildcards in any octet, 0.6 million boxes and 65 and 190 million tests.
 */
export const MAX_ANALYSIS_BOXES = 3_000_000;
export const MAX_ANALYSIS_TESTS = 100_000_000;

/** Counts the work of an analysis and refuses to go beyond its bounds. */
export class Budget {
  boxes = 0;
  tests = 0;
  constructor(
    private readonly maxBoxes = MAX_ANALYSIS_BOXES,
    private readonly maxTests = MAX_ANALYSIS_TESTS,
    /** The bounds of its decision diagrams, when it has them (bdd.ts); counted there. */
    readonly diagrams: DiagramBounds = {},
  ) {}

  /** `boxes` made and `tests` of whether boxes meet. */
  spend(boxes: number, tests = 0): void {
    this.boxes += boxes;
    this.tests += tests;
    if (this.boxes > this.maxBoxes || this.tests > this.maxTests) {
      const what =
        this.boxes > this.maxBoxes ? plural(this.maxBoxes, 'box', 'boxes') : plural(this.maxTests, 'box test');
      throw badRequest(`rules: an exact analysis of these rules needs more than ${what}; give fewer rules`);
    }
  }
}

/** Boxes a step of coalescing looks at count as this many tests (hashing and grouping one box). */
const COALESCE_TESTS = 20;

/** Coalesces boxes (model/space.ts), counted. */
export const coalesced = (boxes: readonly Box[], budget: Budget) =>
  coalesce(boxes, (n) => budget.spend(0, COALESCE_TESTS * n));

/** `coalesceWith`, counted. */
export const coalescedWith = <T>(items: readonly { box: Box; tag: T }[], merge: (a: T, b: T) => T, budget: Budget) =>
  coalesceWith(items, merge, (n) => budget.spend(0, COALESCE_TESTS * n));

/** `region` minus one box, counted. */
export function without(region: readonly Box[], b: Box, budget: Budget): Box[] {
  const out: Box[] = [];
  for (const r of region) {
    if (!meet(r, b)) out.push(r);
    else {
      const parts = subtract(r, b);
      budget.spend(parts.length);
      out.push(...parts);
    }
  }
  return out;
}

/** `region` minus everything a line matches. */
export function withoutLine(region: readonly Box[], line: Line, budget: Budget): Box[] {
  let rest = [...region];
  for (const b of line.except?.length ? lineRegion(line, budget) : line.boxes)
    if (rest.length) rest = without(rest, b, budget);
  return rest;
}

/**
 * The packets a line matches as disjoint boxes, its `except` boxes subtracted (counted): for the analyses that
 * start from one line's packets (lint), and only for that line.
 */
export function lineRegion(line: Line, budget: Budget): Box[] {
  let out = line.boxes;
  for (const x of line.except ?? []) if (out.length) out = without(out, x, budget);
  return out;
}

/** Whether two boxes share a packet (without making their intersection). */
export function overlaps(a: Box, b: Box): boolean {
  for (let i = 0; i < a.length; i += 2) if (a[i]! > b[i + 1]! || b[i]! > a[i + 1]!) return false;
  return true;
}

interface Entry {
  line: number;
  box: Box;
}

/**
 * Where to look for the entries that may meet a piece: for the source and the destination address, the entries
 * by the octets their boxes fix there, leading ones first (`byPrefix[at][d]`: entries whose first d octets are
 * single values and the next is not, or d = 3, keyed by those values). A piece whose first three octets at `at` are
 * single values can only meet the entries of its own keys at each depth: four lists, merged in list order, instead
 * of every entry (a dump's rules mostly name hosts and /24s, so the lists are short).
 */
interface Lookup {
  entries: Entry[];
  start: number[];
  byPrefix: Map<number, number[]>[][];
}

const ADDRESSES = [SRC, DST];
const DEPTH = 3;

/** How many leading octets of the address at `at` are single values (at most DEPTH), and their value. */
function prefixOf(b: Box, at: number): { depth: number; key: number } {
  let key = 0;
  let depth = 0;
  while (depth < DEPTH && b[2 * (at + depth)] === b[2 * (at + depth) + 1]) {
    key = key * 256 + b[2 * (at + depth)]!;
    depth++;
  }
  return { depth, key };
}

/** The boxes of a list's lines in order, made once per list, where each line's boxes start, and the lookup. */
const flattened = new WeakMap<RuleList, Lookup>();
function lookupOf(list: RuleList): Lookup {
  let f = flattened.get(list);
  if (!f) {
    const entries: Entry[] = [];
    const start: number[] = [];
    list.lines.forEach((line, k) => {
      start.push(entries.length);
      for (const box of line.boxes) entries.push({ line: k, box });
    });
    start.push(entries.length);
    const byPrefix = ADDRESSES.map(() => Array.from({ length: DEPTH + 1 }, () => new Map<number, number[]>()));
    entries.forEach((e, i) =>
      ADDRESSES.forEach((at, a) => {
        const { depth, key } = prefixOf(e.box, at);
        const bucket = byPrefix[a]![depth]!;
        const known = bucket.get(key);
        if (known) known.push(i);
        else bucket.set(key, [i]);
      }),
    );
    flattened.set(list, (f = { entries, start, byPrefix }));
  }
  return f;
}

/** The lists of entries a piece can meet, when an address of the piece fixes its first DEPTH octets. */
function candidates(f: Lookup, box: Box): number[][] | undefined {
  let best: number[][] | undefined;
  let size = Infinity;
  ADDRESSES.forEach((at, a) => {
    const { depth, key } = prefixOf(box, at);
    if (depth < DEPTH) return;
    const lists: number[][] = [];
    let n = 0;
    for (let d = 0; d <= DEPTH; d++) {
      const list = f.byPrefix[a]![d]!.get(Math.floor(key / 256 ** (DEPTH - d)));
      if (list) {
        lists.push(list);
        n += list.length;
      }
    }
    if (n < size) [best, size] = [lists, n];
  });
  return best;
}

/** The first place in a sorted list holding `from` or more. */
function lowerBound(list: readonly number[], from: number): number {
  let [lo, hi] = [0, list.length];
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]! < from) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The lines from `from` to `to` (exclusive) whose boxes may meet one of `boxes`, in list order, each once: those
 * of the lookup's lists for each box, a few of the list's lines; undefined when some box fixes the first three
 * octets of neither address (then any line may meet it). `tested` is told how many entries were looked at.
 */
export function linesNear(
  list: RuleList,
  boxes: readonly Box[],
  from: number,
  to: number,
  tested: (n: number) => void,
): number[] | undefined {
  const f = lookupOf(list);
  const [first, end] = [f.start[from]!, f.start[to]!];
  const lines: number[] = [];
  for (const box of boxes) {
    const lists = candidates(f, box);
    if (!lists) return undefined;
    for (const l of lists) {
      const at = lowerBound(l, first);
      let k = at;
      for (; k < l.length && l[k]! < end; k++) lines.push(f.entries[l[k]!]!.line);
      tested(k - at + 1);
    }
  }
  lines.sort((a, b) => a - b);
  return lines.filter((line, k) => k === 0 || lines[k - 1] !== line);
}

/**
 * The first entry from `next` (before `end`) that meets `box`, or `end`; `tested` is told how many entries were
 * looked at. Entries the lookup rules out are not looked at.
 */
function firstMeeting(f: Lookup, box: Box, next: number, end: number, tested: (n: number) => void): number {
  const lists = candidates(f, box);
  if (!lists) {
    let at = next;
    while (at < end && !overlaps(f.entries[at]!.box, box)) at++;
    tested(at - next + 1);
    return at;
  }
  const heads = lists.map((l) => lowerBound(l, next));
  let n = 0;
  for (;;) {
    let k = -1;
    for (let j = 0; j < lists.length; j++)
      if (heads[j]! < lists[j]!.length && (k < 0 || lists[j]![heads[j]!]! < lists[k]![heads[k]!]!)) k = j;
    const at = k < 0 ? end : lists[k]![heads[k]!]!;
    n++;
    if (at >= end) {
      tested(n);
      return end;
    }
    if (overlaps(f.entries[at]!.box, box)) {
      tested(n);
      return at;
    }
    heads[k]!++;
  }
}

/**
 * Visits the packets of `region` (disjoint boxes) as disjoint pieces, each with the line that decides it among
 * lines `from` to `to` (exclusive; default all), or -1 when none of them matches it. Depth first: the first line
 * that meets a piece decides what of the piece it contains, the rest of the piece (box subtraction) goes on with
 * the lines after it. Stops when `visit` answers false, and then answers false.
 */
export function eachDecided(
  list: RuleList,
  budget: Budget,
  region: readonly Box[],
  visit: (box: Box, line: number) => boolean | void,
  { from = 0, to = list.lines.length }: { from?: number; to?: number } = {},
): boolean {
  const f = lookupOf(list);
  const { entries, start } = f;
  const end = start[to]!;
  // A piece goes on from the entry after the one that cut it; entries that miss it are skipped as they come.
  const stack = region.map((box) => ({ box, next: start[from]! }));
  budget.spend(stack.length);
  const tested = (n: number) => budget.spend(0, n);
  while (stack.length) {
    const piece = stack.pop()!;
    const { box } = piece;
    const at = firstMeeting(f, box, piece.next, end, tested);
    const first = entries[at];
    if (at === end || !first) {
      if (visit(box, -1) === false) return false;
      continue;
    }
    const inside = contains(first.box, box);
    const hit = inside ? box : intersect(box, first.box)!;
    // A line's except boxes (lazy splitting): the packets of the hit in one of them are not the line's; they go on
    // after the line, the rest of the hit is looked at again.
    const except = list.lines[first.line]!.except;
    const cut = except?.length ? exceptMeeting(except, hit, tested) : undefined;
    if (cut) {
      const past = start[first.line + 1]!;
      if (contains(cut, hit)) stack.push({ box: hit, next: past });
      else {
        stack.push({ box: intersect(hit, cut)!, next: past });
        const parts = subtract(hit, cut);
        budget.spend(parts.length + 1);
        for (const part of parts) stack.push({ box: part, next: at });
      }
    } else if (visit(hit, first.line) === false) return false;
    if (inside) continue;
    const parts = subtract(box, first.box);
    budget.spend(parts.length);
    for (const part of parts) stack.push({ box: part, next: at + 1 });
  }
  return true;
}

/** The first except box that meets `box`, if any. */
function exceptMeeting(except: readonly Box[], box: Box, tested: (n: number) => void): Box | undefined {
  for (let k = 0; k < except.length; k++)
    if (overlaps(except[k]!, box)) {
      tested(k + 1);
      return except[k];
    }
  tested(except.length);
  return undefined;
}

/** A piece of a decomposition: its packets and the line that decides them (an index into the list), or -1. */
export interface Decided {
  box: Box;
  line: number;
}

/** The packets of `region` (disjoint boxes; default all) by the line that decides them. */
export function decide(list: RuleList, budget: Budget, region: readonly Box[] = [UNIVERSE]): Decided[] {
  const out: Decided[] = [];
  eachDecided(list, budget, region, (box, line) => {
    out.push({ box, line });
  });
  return out;
}

/** The boxes of a decomposition by deciding line. */
export function byLine(pieces: readonly Decided[]): Map<number, Box[]> {
  const out = new Map<number, Box[]>();
  for (const p of pieces) {
    const boxes = out.get(p.line);
    if (boxes) boxes.push(p.box);
    else out.set(p.line, [p.box]);
  }
  return out;
}

/** The verdict of a decided piece. */
export const allows = (list: RuleList, line: number) => (line < 0 ? list.defaultAllow : list.lines[line]!.allow);
