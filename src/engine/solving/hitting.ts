/**
 * A small hitting set of explicit rows (each a list of nodes) by local search from a given one (issue 48, item 4):
 * the firewalls' relaxation of a large WAN (bounds.ts, firewallRelaxation) rounds its LP to a set of places about
 * twice its bound, and most of them can go two for one. Moves: a node all of whose rows another chosen node also
 * hits leaves; a node leaves for one outside that hits every row only it hit, where that makes another chosen node
 * needless (two for one); and where no such move is left, a node leaves for such an outsider anyway (a plateau move,
 * picked by a seeded generator and kept off the nodes it just moved for a while), so that the search leaves a local
 * minimum. The best set seen is returned. Every step is counted in `work` (row visits): the same set on any machine.
 */
import { random } from '../../model/random.js';
import type { WorkPool } from './work.js';

/** Moves a node just moved stays out of plateau moves: long enough not to undo a swap at once. */
const TABU = 8;

/**
 * Rows the set `chosen` misses among those the nodes `left` (just taken out of it) hit, as far as the caller knows
 * more rows than it listed (an isolation's walks, found as needed): none where `chosen` still hits every row.
 */
export type MissedRows = (chosen: ReadonlySet<number>, left: readonly number[]) => number[][];

/**
 * A hitting set of `rows` no larger than `start` (completed first, the node on most unhit rows then the lowest, where
 * it misses a row), smaller where the moves find one within `work`. `prefer` orders nodes (lower first: tried first
 * to leave and to enter). With `missed`, `start` must hit every row it knows of, and a move is kept only where it
 * reports none missed (those it reports are learnt as rows): the set returned then hits them all too. Rows with no
 * node cannot be hit and are passed over.
 */
export function improveHittingSet(
  rows: readonly (readonly number[])[],
  start: Iterable<number>,
  work: WorkPool,
  prefer: (a: number, b: number) => number = (a, b) => a - b,
  missed: MissedRows = () => [],
  seed = 1,
): number[] {
  const live: number[][] = [];
  const rowsOf = new Map<number, number[]>();
  const chosen = new Set<number>();
  const cover: number[] = [];
  const learn = (row: readonly number[]) => {
    const nodes = [...new Set(row)];
    if (nodes.length === 0) return;
    const i = live.push(nodes) - 1;
    for (const n of nodes) (rowsOf.get(n) ?? rowsOf.set(n, []).get(n)!).push(i);
    cover.push(nodes.filter((n) => chosen.has(n)).length);
    work.spend(nodes.length);
  };
  for (const row of rows) learn(row);
  const add = (n: number) => {
    chosen.add(n);
    for (const i of rowsOf.get(n) ?? []) cover[i]!++;
    work.spend(1 + (rowsOf.get(n)?.length ?? 0));
  };
  const remove = (n: number) => {
    chosen.delete(n);
    for (const i of rowsOf.get(n) ?? []) cover[i]!--;
    work.spend(1 + (rowsOf.get(n)?.length ?? 0));
  };
  for (const n of [...new Set(start)].sort(prefer)) add(n);
  // Completed greedily where the start misses rows.
  for (;;) {
    const count = new Map<number, number>();
    live.forEach((row, i) => {
      if (cover[i] === 0) for (const n of row) count.set(n, (count.get(n) ?? 0) + 1);
    });
    work.spend(live.length);
    if (count.size === 0) break;
    let best = -1;
    for (const [n, c] of count) {
      const b = count.get(best) ?? 0;
      if (best < 0 || c > b || (c === b && prefer(n, best) < 0)) best = n;
    }
    add(best);
  }
  /** The rows only `n` hits among the chosen. */
  const only = (n: number) => {
    const own = rowsOf.get(n) ?? [];
    work.spend(1 + own.length);
    return own.filter((i) => cover[i] === 1);
  };
  /** Whether the set as it now is (after taking out `left`) misses nothing more; rows it misses are learnt. */
  const holds = (left: number[]) => {
    const rows = missed(chosen, left);
    for (const row of rows) learn(row);
    return rows.length === 0;
  };
  /** Takes out each chosen node none of whose rows needs it (lowest preference first), where nothing is missed. */
  const dropNeedless = () => {
    let dropped = false;
    for (const n of [...chosen].sort(prefer)) {
      if (work.spent) break;
      if (only(n).length > 0) continue;
      remove(n);
      if (holds([n])) dropped = true;
      else add(n);
    }
    return dropped;
  };
  /** Outsiders that hit every row of `own` (rows only one chosen node hits), in preference order. */
  const replacements = (own: number[]) => {
    if (own.length === 0) return [];
    // Candidates from the row of fewest nodes, kept where they hit every other one.
    const first = own.reduce((a, b) => (live[a]!.length <= live[b]!.length ? a : b));
    work.spend(live[first]!.length * own.length);
    return live[first]!.filter((m) => !chosen.has(m) && own.every((i) => live[i]!.includes(m))).sort(prefer);
  };
  dropNeedless();
  let best = [...chosen].sort((a, b) => a - b);
  const draw = random(seed);
  const tabu = new Map<number, number>();
  let step = 0;
  let cursor = best[0] ?? 0;
  while (!work.spent) {
    step++;
    // Two for one: n leaves for m, after which some other chosen node q, sharing a row with m, is needless.
    let improved = false;
    // From where the last sweep stopped, round the chosen nodes once: a sweep from the first would retry the same.
    const sweep = [...chosen].sort(prefer);
    const at = sweep.findIndex((n) => prefer(n, cursor) >= 0);
    for (const n of [...sweep.slice(Math.max(0, at)), ...sweep.slice(0, Math.max(0, at))]) {
      if (work.spent || improved) break;
      cursor = n;
      for (const m of replacements(only(n))) {
        if (work.spent) break;
        remove(n);
        add(m);
        const twice = (rowsOf.get(m) ?? []).filter((i) => cover[i] === 2);
        const others = [...new Set(twice.flatMap((i) => live[i]!))].filter((q) => q !== m && chosen.has(q));
        const q = others.sort(prefer).find((q) => only(q).length === 0);
        if (q !== undefined) {
          remove(q);
          if (holds([n, q])) {
            improved = true;
            break;
          }
          add(q);
        }
        remove(m);
        add(n);
      }
    }
    if (work.spent) break;
    if (improved || dropNeedless()) {
      if (chosen.size < best.length) best = [...chosen].sort((a, b) => a - b);
      continue;
    }
    // A plateau move: a chosen node not moved lately leaves for an outsider hitting every row only it hit.
    const movable = [...chosen].sort(prefer).filter((n) => (tabu.get(n) ?? -TABU) + TABU <= step);
    let moved = false;
    for (let tries = 0; tries < movable.length && !moved && !work.spent; tries++) {
      const n = movable[Math.floor(draw() * movable.length)]!;
      const options = replacements(only(n)).filter((m) => (tabu.get(m) ?? -TABU) + TABU <= step);
      if (options.length === 0) continue;
      const m = options[Math.floor(draw() * options.length)]!;
      remove(n);
      add(m);
      if (!holds([n])) {
        remove(m);
        add(n);
        continue;
      }
      tabu.set(n, step);
      tabu.set(m, step);
      moved = true;
    }
    if (!moved) break;
  }
  return best;
}
