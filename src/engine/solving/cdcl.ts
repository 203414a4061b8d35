/**
 * A conflict-driven clause-learning SAT solver in plain JavaScript, for the small components of an allocation: it
 * answers in microseconds where Z3 would first spend about 0.35 s loading and initialising its WebAssembly
 * (toolchain.md §1). Two watched literals, first-UIP learning, activity-ordered decisions with saved phases, Luby
 * restarts and solving under assumptions with the subset of them that failed (the core). Every call has a budget of
 * conflicts and of work (work.ts), checked at each conflict and every 1,024 decisions; running out answers 'unknown'
 * and leaves the solver usable. Past the job's time limit a call throws SolverTimeout. No learnt clause is ever
 * forgotten: the problems given to it are small by construction (`EXACT_MAX_VARIABLES`). Its state lives in typed
 * arrays, clauses in one flat arena, not an array each: a refined formula of 86,637 clauses allocated 26 MB of small
 * arrays, and their garbage collection cost more than the search. A clause is named by where its literals start in
 * the arena (no table from clause numbers to places to read on every visit). Clauses too many to write beforehand may
 * be asked of each complete assignment (`lazy`): those it breaks are added and the search goes on from the top.
 *
 * External literals are +v / -v for variables v >= 1; inside, literal 2v is v and 2v+1 is not v.
 */

export type SatStatus = 'sat' | 'unsat' | 'unknown';

/**
 * Clauses too many to write before the search, asked of each complete assignment: those it breaks, none when it
 * holds them all, and the work the question cost (ticks). Each must hold in every model of the problem meant.
 */
export type LazyClauses = (holds: (l: number) => boolean) => { clauses: number[][]; work: number };

/** What one solver may still spend, shared by all its calls: conflicts, and ticks from a work pool. */
export interface SatBudget extends Spend {
  conflicts: number;
}

/** A copy of a typed array, longer. */
export function grown<T extends Int8Array | Int32Array | Uint8Array | Float64Array>(old: T, length: number): T {
  const out = new (old.constructor as new (n: number) => T)(length);
  out.set(old);
  return out;
}

import { checkAbort, type Spend } from './work.js';

const code = (l: number) => (l > 0 ? 2 * l : -2 * l + 1);
const external = (c: number) => (c & 1 ? -(c >> 1) : c >> 1);

export class SatSolver {
  /**
   * Every clause, one after the other: its length, where the last search for a literal to watch stopped (an offset
   * into its literals), then its literals (the two watched ones first). The search goes on round from there (Gent,
   * JAIR 2013): restarting it at the front made falsifying a clause's literals in order quadratic in its length, and
   * a class's clause lists every candidate covering it, each assumed false in turn.
   */
  private arena = new Int32Array(1 << 12);
  private arenaUsed = 0;
  /** Assignments made so far (decisions and propagations): the work a call spends (work.ts). */
  private ticks = 0;
  /** Variables there is room for in the typed arrays below (they grow by doubling). */
  private capacity = 0;
  /** Per literal code: 1 true, -1 false, 0 unassigned (both literals of a variable are set together). */
  private value = new Int8Array(2);
  /** Per literal code: the `stamps`-th clause being added holds it (duplicates and tautologies, in linear time). */
  private stamp = new Int32Array(2);
  private stamps = 0;
  /** The clause being added, its literal codes (reused: an array emptied and refilled was allocated anew each time). */
  private adding = new Int32Array(16);
  /**
   * Watch lists, per literal code, each a contiguous block of one typed array (no array per literal: loading a
   * formula of 71,000 clauses allocated 25 MB of them), read in order when the literal becomes false. `watches`: the
   * clauses of three or more literals, in the order they came. `binaries`: its binary clauses as pairs (the other
   * literal, the clause), implied at once without reading the clause (most clauses of a candidate-rule formula are
   * binary). They replaced linked lists of entries in typed arrays, whose pointer chasing missed the cache on every
   * entry: the same clauses in the same order, a list kept in order as entries leave it, a clause that moves its
   * watch put at the end of its new literal's list.
   */
  private readonly watches = new Blocks(1);
  private readonly binaries = new Blocks(2);
  /** Per variable. */
  private level = new Int32Array(1);
  private reason = new Int32Array(1).fill(-1);
  private phase = new Uint8Array(1);
  private activity = new Float64Array(1);
  private seen = new Uint8Array(1);
  private variableCount = 0;
  /** The assigned literals in order (each variable at most once); `trailSize` of them are in use. */
  private trail = new Int32Array(1);
  private trailSize = 0;
  /**
   * Per decision level from 1: where its assignments start on the trail; `levels` of them are in use. Each
   * assumption takes a level of its own, so a solve under thousands of them (Geant's neighbourhoods: 3,200 on
   * average) pushes thousands, every call: a typed array, not an array pushed and cut.
   */
  private levelStart = new Int32Array(16);
  private levels = 0;
  private readonly heap = new ActivityHeap(this.activity);
  private qhead = 0;
  /**
   * What a bump adds, a double from the start: a field that turns from a small integer into a double changes the
   * solver's hidden class, and V8 then drops the optimised code of every method using it (with `model` and the
   * heap's `at` below, Test5_4's deoptimisations went 28 -> 16, and its cold solve about 15 ms faster).
   */
  private readonly increment = new Float64Array([1]);
  private ok = true;
  /** After 'unsat' under assumptions: the assumptions that together cannot hold (empty: no assumption needed). */
  core: number[] = [];

  constructor(variables = 0) {
    this.grow(variables);
    for (let v = 0; v < variables; v++) this.newVariable();
  }

  get variables(): number {
    return this.variableCount;
  }

  /** Room for `variables` variables in the typed arrays. */
  private grow(variables: number): void {
    if (variables <= this.capacity) return;
    const size = Math.max(variables, 2 * this.capacity);
    this.value = grown(this.value, 2 * size + 2);
    this.watches.grow(2 * size + 2);
    this.binaries.grow(2 * size + 2);
    this.trail = grown(this.trail, size + 1);
    this.stamp = grown(this.stamp, 2 * size + 2);
    this.level = grown(this.level, size + 1);
    this.reason = grown(this.reason, size + 1).fill(-1, this.capacity + 1);
    this.phase = grown(this.phase, size + 1);
    this.activity = grown(this.activity, size + 1);
    this.heap.activity = this.activity;
    this.heap.grow(size + 1);
    this.seen = grown(this.seen, size + 1);
    this.capacity = size;
  }

  newVariable(): number {
    const v = ++this.variableCount;
    this.grow(v);
    this.heap.insert(v);
    return v;
  }

  /** The polarity tried first when the solver decides v, and how early it is decided until conflicts say else. */
  prefer(l: number, priority = 0): void {
    const v = Math.abs(l);
    this.phase[v] = l > 0 ? 1 : 0;
    this.activity[v] = Math.max(this.activity[v]!, priority);
    this.heap.raise(v);
  }

  /**
   * The last model found ('sat'): per variable, 1 true and 0 false. Bytes, not an array of booleans: Geant's models
   * of 57,000 variables took 2.5 ms each to copy into one, a third of `search`.
   */
  model: Uint8Array = new Uint8Array(1);

  /** Asked of each complete assignment before it is a model: the clauses it breaks are added and the search goes on. */
  lazy?: LazyClauses;

  /** Adds a clause, lits[from .. to) (between solves); false when the clauses can no longer all hold. */
  addClause(lits: ArrayLike<number>, from = 0, to = lits.length): boolean {
    if (!this.ok) return false;
    this.backtrack(0);
    if (to - from > this.adding.length) this.adding = new Int32Array(to - from);
    const c = this.adding;
    let n = 0;
    const mark = ++this.stamps;
    const { value, stamp } = this;
    for (let i = from; i < to; i++) {
      const l = code(lits[i]!);
      if (stamp[l] === mark) continue;
      if (stamp[l ^ 1] === mark || value[l]! > 0) return true;
      if (value[l] === 0) {
        stamp[l] = mark;
        c[n++] = l;
      }
    }
    if (n === 0) return (this.ok = false);
    if (n === 1) {
      this.assign(c[0]!, -1);
      return (this.ok = this.propagate() < 0);
    }
    this.attach(c, n);
    return true;
  }

  /** Stores the clause c[0 .. n) and watches its first two literals; its name (where its literals start). */
  private attach(c: ArrayLike<number>, n = c.length): number {
    this.reserve(n + 2);
    const { arena } = this;
    let at = this.arenaUsed;
    arena[at++] = n;
    arena[at++] = 2;
    const k = at;
    for (let i = 0; i < n; i++) arena[at++] = c[i]!;
    this.arenaUsed = at;
    if (n === 2) {
      this.binaries.push2(c[0]!, c[1]!, k);
      this.binaries.push2(c[1]!, c[0]!, k);
    } else {
      this.watches.push(c[0]!, k);
      this.watches.push(c[1]!, k);
    }
    return k;
  }

  /**
   * Room for the clauses lits[ends[k - 1] .. ends[k]), k < count, before they are added: in the arena, and in the
   * watch lists, each list's block laid out once at its length. Grown by doubling as the clauses came, the binary
   * lists' memory was copied again and again (most of test/engine/solving/work's loading). The lists hold the same
   * entries in the same order, so the search is the same; a list past its room (a clause added changed, a learnt one)
   * moves as before.
   */
  reserveClauses(lits: ArrayLike<number>, ends: ArrayLike<number>, count: number): void {
    this.reserve(2 * count + (count > 0 ? ends[count - 1]! : 0));
    const lists = this.watches.size.length;
    const binary = new Int32Array(lists);
    const long = new Int32Array(lists);
    let from = 0;
    for (let k = 0; k < count; k++) {
      const to = ends[k]!;
      const counts = to - from === 2 ? binary : to - from > 2 ? long : undefined;
      if (counts) {
        // Not a destructured pair: run once per clause before V8 optimises it, that made an array and its iterator.
        const a = code(lits[from]!);
        const b = code(lits[from + 1]!);
        if (a < lists && b < lists) {
          counts[a]!++;
          counts[b]!++;
        }
      }
      from = to;
    }
    this.binaries.reserve(binary);
    this.watches.reserve(long);
  }

  private reserve(more: number): void {
    if (this.arenaUsed + more > this.arena.length)
      this.arena = grown(this.arena, Math.max(2 * this.arena.length, this.arenaUsed + more));
  }

  private assign(c: number, why: number): void {
    this.ticks++;
    const v = c >> 1;
    this.value[c] = 1;
    this.value[c ^ 1] = -1;
    this.level[v] = this.levels;
    this.reason[v] = why;
    this.trail[this.trailSize++] = c;
  }

  /** Unit propagation; the conflicting clause, or -1. */
  private propagate(): number {
    const { arena, value, trail, watches, binaries } = this;
    const { at: binaryAt, size: binarySize } = binaries;
    const { at: watchAt, size: watchSize } = watches;
    while (this.qhead < this.trailSize) {
      const falseLit = trail[this.qhead++]! ^ 1;
      const pairs = binaries.memory;
      for (let i = binaryAt[falseLit]!, end = i + 2 * binarySize[falseLit]!; i < end; i += 2) {
        const other = pairs[i]!;
        const now = value[other]!;
        if (now > 0) continue;
        if (now < 0) return pairs[i + 1]!;
        this.assign(other, pairs[i + 1]!);
      }
      // The list is compacted in place: i reads, j writes what stays.
      let memory = watches.memory;
      const from = watchAt[falseLit]!;
      const end = from + watchSize[falseLit]!;
      let i = from;
      let j = from;
      while (i < end) {
        // The clause's literals are arena[a .. last).
        const a = memory[i++]!;
        if (arena[a] === falseLit) {
          arena[a] = arena[a + 1]!;
          arena[a + 1] = falseLit;
        }
        const first = arena[a]!;
        if (value[first]! <= 0) {
          const last = a + arena[a - 2]!;
          const resume = a + arena[a - 1]!;
          let found = -1;
          for (let q = resume; q < last && found < 0; q++) if (value[arena[q]!]! >= 0) found = q;
          for (let q = a + 2; q < resume && found < 0; q++) if (value[arena[q]!]! >= 0) found = q;
          if (found >= 0) {
            // The clause now watches that literal: it leaves this list for the end of that literal's.
            const l = arena[found]!;
            arena[a + 1] = l;
            arena[found] = falseLit;
            arena[a - 1] = found - a;
            watches.push(l, a);
            // Growing copies the memory at the same offsets: this list's block is where it was, in the copy.
            memory = watches.memory;
            continue;
          }
          if (value[first]! < 0) {
            memory[j++] = a;
            while (i < end) memory[j++] = memory[i++]!;
            watchSize[falseLit] = j - from;
            return a;
          }
          this.assign(first, a);
        }
        memory[j++] = a;
      }
      watchSize[falseLit] = j - from;
    }
    return -1;
  }

  /** Opens a decision level at the end of the trail. */
  private newLevel(): void {
    if (this.levels === this.levelStart.length) this.levelStart = grown(this.levelStart, 2 * this.levels);
    this.levelStart[this.levels++] = this.trailSize;
  }

  private backtrack(level: number): void {
    if (this.levels <= level) return;
    const start = this.levelStart[level]!;
    const { value, phase } = this;
    for (let i = this.trailSize - 1; i >= start; i--) {
      const c = this.trail[i]!;
      phase[c >> 1] = c & 1 ? 0 : 1;
      value[c] = 0;
      value[c ^ 1] = 0;
      this.heap.insert(c >> 1);
    }
    this.trailSize = start;
    this.levels = level;
    this.qhead = start;
  }

  private bump(v: number): void {
    if ((this.activity[v]! += this.increment[0]!) > 1e100) {
      for (let u = 1; u <= this.variableCount; u++) this.activity[u]! *= 1e-100;
      this.increment[0]! *= 1e-100;
      this.heap.rescaled();
    }
    this.heap.raise(v);
  }

  /**
   * First-UIP learning: the learnt clause (asserting literal first) and the level to go back to. A reason holds the
   * literal it implied (true) anywhere, not only first: binary clauses are never reordered.
   */
  private analyze(conflict: number): { learnt: number[]; back: number } {
    const learnt = [0];
    const current = this.levels;
    let open = 0;
    let p = -1;
    let index = this.trailSize - 1;
    const { arena, seen, level } = this;
    let clause = conflict;
    for (;;) {
      const a = clause;
      const end = a + arena[a - 2]!;
      for (let j = a; j < end; j++) {
        const q = arena[j]!;
        const v = q >> 1;
        if (q === p || seen[v] || level[v] === 0) continue;
        seen[v] = 1;
        this.bump(v);
        if (level[v] === current) open++;
        else learnt.push(q);
      }
      while (!seen[this.trail[index]! >> 1]) index--;
      p = this.trail[index--]!;
      seen[p >> 1] = 0;
      if (--open === 0) break;
      clause = this.reason[p >> 1]!;
    }
    learnt[0] = p ^ 1;
    let back = 0;
    for (let j = 1; j < learnt.length; j++) {
      seen[learnt[j]! >> 1] = 0;
      if (level[learnt[j]! >> 1]! > back) {
        back = level[learnt[j]! >> 1]!;
        [learnt[1], learnt[j]] = [learnt[j]!, learnt[1]!];
      }
    }
    this.increment[0]! /= 0.95;
    return { learnt, back };
  }

  /** The assumptions that made `failed` (an assumption found false) false, `failed` included. */
  private analyzeFinal(failed: number): number[] {
    const core = [external(failed)];
    if (this.levels === 0) return core;
    const { seen, level } = this;
    seen[failed >> 1] = 1;
    for (let i = this.trailSize - 1; i >= this.levelStart[0]!; i--) {
      const v = this.trail[i]! >> 1;
      if (!seen[v]) continue;
      const why = this.reason[v]!;
      if (why < 0) core.push(external(this.trail[i]!));
      else {
        const a = why;
        for (let j = a; j < a + this.arena[a - 2]!; j++) {
          const u = this.arena[j]! >> 1;
          if (u !== v && level[u]! > 0) seen[u] = 1;
        }
      }
      seen[v] = 0;
    }
    seen[failed >> 1] = 0;
    return core;
  }

  /**
   * Whether unit propagation alone lets the assumptions (external literals) hold together: false proves they cannot;
   * true proves nothing. Far cheaper than a solve, for a question asked of many literals.
   */
  propagates(assumptions: number[]): boolean {
    if (!this.ok) return false;
    this.backtrack(0);
    const holds = this.assumed(assumptions);
    this.backtrack(0);
    return holds;
  }

  /**
   * `propagates([...prefix, l])` for each literal l of `each`, the prefix propagated once: the probe asks of each
   * class entering a firewall under one default, and the firewall and its default imply most of what is assigned
   * (Test5_4: 242 of 259 assignments per question).
   */
  propagatesEach(prefix: number[], each: number[]): boolean[] {
    if (!this.ok) return each.map(() => false);
    this.backtrack(0);
    const level = this.assumed(prefix) ? this.levels : -1;
    const out = each.map((a) => {
      if (level < 0) return false;
      const holds = this.assumed([a]);
      this.backtrack(level);
      return holds;
    });
    this.backtrack(0);
    return out;
  }

  /** Assumes each literal in turn at a level of its own, propagating; false at the first conflict. */
  private assumed(literals: number[]): boolean {
    for (const a of literals) {
      const l = code(a);
      const now = this.value[l]!;
      if (now > 0) continue;
      if (now < 0) return false;
      this.newLevel();
      this.assign(l, -1);
      if (this.propagate() >= 0) return false;
    }
    return true;
  }

  /** Solves under assumptions (external literals), spending from the budget: its ticks leave the work pool. */
  solve(assumptions: number[], budget: SatBudget): SatStatus {
    const start = this.ticks - this.variableCount;
    try {
      return this.search(assumptions, budget, start);
    } finally {
      budget.work.spend(this.ticks - start);
    }
  }

  private search(assumptions: number[], budget: SatBudget, start: number): SatStatus {
    this.core = [];
    if (!this.ok) return 'unsat';
    this.backtrack(0);
    if (budget.work.spent) return 'unknown';
    checkAbort(budget.abortAt);
    const overspent = () => this.ticks - start > budget.work.left;
    const wanted = assumptions.map(code);
    let decisions = 0;
    let restart = 0;
    let untilRestart = 100 * luby(restart);
    for (;;) {
      const conflict = this.propagate();
      if (conflict >= 0) {
        if (this.levels === 0) {
          this.ok = false;
          return 'unsat';
        }
        if (--budget.conflicts < 0 || overspent()) {
          this.backtrack(0);
          return 'unknown';
        }
        if ((budget.conflicts & 255) === 0) checkAbort(budget.abortAt);
        const { learnt, back } = this.analyze(conflict);
        this.backtrack(back);
        if (learnt.length === 1) this.assign(learnt[0]!, -1);
        else this.assign(learnt[0]!, this.attach(learnt));
        if (--untilRestart === 0) {
          untilRestart = 100 * luby(++restart);
          this.backtrack(0);
        }
        continue;
      }
      if ((++decisions & 1023) === 0) {
        if (overspent()) {
          this.backtrack(0);
          return 'unknown';
        }
        checkAbort(budget.abortAt);
      }
      let next = -1;
      while (this.levels < wanted.length) {
        const a = wanted[this.levels]!;
        const now = this.value[a]!;
        if (now > 0) this.newLevel();
        else if (now < 0) {
          this.core = this.analyzeFinal(a);
          this.backtrack(0);
          return 'unsat';
        } else {
          next = a;
          break;
        }
      }
      if (next < 0) {
        let v = this.heap.pop();
        while (v > 0 && this.value[2 * v] !== 0) v = this.heap.pop();
        if (v <= 0 && this.lazy) {
          const { value } = this;
          const asked = this.lazy((l) => value[code(l)]! > 0);
          this.ticks += asked.work;
          if (asked.clauses.length > 0) {
            for (const clause of asked.clauses) if (!this.addClause(clause)) return 'unsat';
            continue;
          }
        }
        if (v <= 0) {
          const n = this.variableCount;
          const { value } = this;
          const model = new Uint8Array(n + 1);
          for (let u = 1; u <= n; u++) model[u] = value[2 * u]! > 0 ? 1 : 0;
          this.model = model;
          this.backtrack(0);
          return 'sat';
        }
        next = this.phase[v] ? 2 * v : 2 * v + 1;
      }
      this.newLevel();
      this.assign(next, -1);
    }
  }
}

/** The Luby sequence 1 1 2 1 1 2 4 ..., the restart intervals. */
function luby(i: number): number {
  let size = 1;
  let seq = 0;
  while (size < i + 1) {
    seq++;
    size = 2 * size + 1;
  }
  let x = i;
  while (size - 1 !== x) {
    size = (size - 1) >> 1;
    seq--;
    x %= size;
  }
  return 2 ** seq;
}

/**
 * Lists per literal code, each a contiguous block of `memory`: `at` where it starts, `size` its entries, `room` the
 * entries its block holds; an entry is `width` numbers. A full list moves to a block twice its size at the end, its
 * old block left unused: a list never holds more than its literal's clauses, so the memory stays within a few times
 * the arena. Growing copies the memory at the same offsets, so a list being read stays where it was.
 */
class Blocks {
  memory = new Int32Array(1 << 12);
  private used = 0;
  at = new Int32Array(0);
  size = new Int32Array(0);
  private room = new Int32Array(0);

  constructor(private readonly width: number) {}

  /** Room for `literals` lists. */
  grow(literals: number): void {
    this.at = grown(this.at, literals);
    this.size = grown(this.size, literals);
    this.room = grown(this.room, literals);
  }

  /** Room for counts[lit] entries in each list still empty, laid out at once. */
  reserve(counts: Int32Array): void {
    let used = this.used;
    for (let lit = 0; lit < counts.length; lit++) {
      if (this.size[lit] !== 0 || counts[lit]! <= this.room[lit]!) continue;
      this.at[lit] = used;
      this.room[lit] = counts[lit]!;
      used += counts[lit]! * this.width;
    }
    if (used > this.memory.length) this.memory = grown(this.memory, used);
    this.used = used;
  }

  /** Where lit's next entry goes, its list one longer. */
  private next(lit: number): number {
    const size = this.size[lit]!;
    const { width } = this;
    let at = this.at[lit]!;
    if (size === this.room[lit]) {
      const room = size < 2 ? 4 : 2 * size;
      const need = this.used + room * width;
      if (need > this.memory.length) this.memory = grown(this.memory, Math.max(2 * this.memory.length, need));
      this.memory.copyWithin(this.used, at, at + size * width);
      at = this.at[lit] = this.used;
      this.used = need;
      this.room[lit] = room;
    }
    this.size[lit] = size + 1;
    return at + size * width;
  }

  push(lit: number, x: number): void {
    // Not `this.memory[this.next(lit)] = x`: that reads `memory` before next() may replace it.
    const i = this.next(lit);
    this.memory[i] = x;
  }

  push2(lit: number, x: number, y: number): void {
    const i = this.next(lit);
    this.memory[i] = x;
    this.memory[i + 1] = y;
  }
}

/**
 * Variables by descending activity, ties by smaller number (so that runs are reproducible): a total order, so any
 * heap pops the same variables; this one keeps its items and places in typed arrays, and each item's activity beside
 * it (`keys`), so that a comparison reads no other array: the heap's sifting was a fifth of Geant's proof.
 */
class ActivityHeap {
  private items = new Int32Array(1);
  /** keys[i] = activity[items[i]], always. */
  private keys = new Float64Array(1);
  private count = 0;
  /** Per variable, its index in items or -1. */
  private at = new Int32Array(1).fill(-1);
  /** The solver's, replaced when it grows. */
  constructor(public activity: Float64Array) {}

  /** Room for variables up to n - 1. */
  grow(n: number): void {
    if (n <= this.at.length) return;
    const old = this.at.length;
    this.items = grown(this.items, n);
    this.keys = grown(this.keys, n);
    this.at = grown(this.at, n).fill(-1, old);
  }

  private up(i: number): void {
    const { items, keys, at } = this;
    const v = items[i]!;
    const k = keys[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent]!;
      const pk = keys[parent]!;
      if (!(k > pk || (k === pk && v < p))) break;
      items[i] = p;
      keys[i] = pk;
      at[p] = i;
      i = parent;
    }
    items[i] = v;
    keys[i] = k;
    at[v] = i;
  }

  insert(v: number): void {
    if (this.at[v]! >= 0) return;
    this.items[this.count] = v;
    this.keys[this.count] = this.activity[v]!;
    this.up(this.count++);
  }

  /** After v's activity grew. */
  raise(v: number): void {
    const i = this.at[v]!;
    if (i < 0) return;
    this.keys[i] = this.activity[v]!;
    this.up(i);
  }

  /** After every activity was scaled down: the keys read again (the same products, so the same order). */
  rescaled(): void {
    const { items, keys, activity } = this;
    for (let i = 0; i < this.count; i++) keys[i] = activity[items[i]!]!;
  }

  /**
   * The most active variable, or 0 when empty. The hole at the top goes down to a leaf along the better child, and
   * the last item up from there (Floyd's heapsort): one comparison a level instead of two, as the last item mostly
   * belongs near the bottom. Geant's proof pops 12.6 M variables, most of them assigned and dropped at once.
   */
  pop(): number {
    if (this.count === 0) return 0;
    const { items, keys, at } = this;
    const top = items[0]!;
    at[top] = -1;
    const count = --this.count;
    if (count === 0) return top;
    let i = 0;
    for (let child = 1; child < count; child = 2 * i + 1) {
      const d = child + 1;
      if (d < count && (keys[d]! > keys[child]! || (keys[d] === keys[child] && items[d]! < items[child]!))) child = d;
      const c = items[child]!;
      items[i] = c;
      keys[i] = keys[child]!;
      at[c] = i;
      i = child;
    }
    items[i] = items[count]!;
    keys[i] = keys[count]!;
    this.up(i);
    return top;
  }
}
