/**
 * A conflict-driven clause-learning SAT solver in plain JavaScript, for the small components of an allocation: it
 * answers in microseconds where Z3 would first spend about 0.35 s loading and initialising its WebAssembly
 * (toolchain.md §1). Two watched literals, first-UIP learning, activity-ordered decisions with saved phases, Luby
 * restarts and solving under assumptions with the subset of them that failed (the core). Every call has a budget of
 * conflicts and of work (work.ts), checked at each conflict and every 1,024 decisions; running out answers 'unknown'
 * and leaves the solver usable. Past the job's time limit a call throws SolverTimeout. No learnt clause is ever
 * forgotten: the problems given to it are small by construction (`EXACT_MAX_VARIABLES`). Its state lives in typed
 * arrays, clauses in one flat arena, not an array each: a refined formula of 86,637 clauses allocated 26 MB of small
 * arrays, and their garbage collection cost more than the search.
 *
 * External literals are +v / -v for variables v >= 1; inside, literal 2v is v and 2v+1 is not v.
 */

export type SatStatus = 'sat' | 'unsat' | 'unknown';

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
  /** Per clause: where its literals start in the arena. */
  private start = new Int32Array(1 << 10);
  private clauses = 0;
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
   * Watch lists, per literal code, as linked lists of entries in typed arrays (no array per literal, none to grow:
   * loading a formula of 71,000 clauses allocated 25 MB of them). `watchHead` / `watchTail`: the clauses of three or
   * more literals to look at when the literal becomes false, in the order they came. `binaryHead` / `binaryTail`:
   * its binary clauses, whose entries also hold the other literal, implied at once without reading the clause (most
   * clauses of a candidate-rule formula are binary). -1 ends a list.
   */
  private watchHead = new Int32Array(2).fill(-1);
  private watchTail = new Int32Array(2).fill(-1);
  private binaryHead = new Int32Array(2).fill(-1);
  private binaryTail = new Int32Array(2).fill(-1);
  /** Per entry: its clause, the other literal (binary clauses), the next entry of its list. */
  private entryClause = new Int32Array(1 << 11);
  private entryOther = new Int32Array(1 << 11);
  private entryNext = new Int32Array(1 << 11);
  private entries = 0;
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
  private readonly trailLim: number[] = [];
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
    for (const list of ['watchHead', 'watchTail', 'binaryHead', 'binaryTail'] as const)
      this[list] = grown(this[list], 2 * size + 2).fill(-1, 2 * this.capacity + 2);
    this.trail = grown(this.trail, size + 1);
    this.stamp = grown(this.stamp, 2 * size + 2);
    this.level = grown(this.level, size + 1);
    this.reason = grown(this.reason, size + 1).fill(-1, this.capacity + 1);
    this.phase = grown(this.phase, size + 1);
    this.activity = grown(this.activity, size + 1);
    this.heap.activity = this.activity;
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

  /** The last model found ('sat'), by variable (an array of booleans from the start, for the same reason). */
  model: boolean[] = [false];

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

  /** Stores the clause c[0 .. n) and watches its first two literals; its index. */
  private attach(c: ArrayLike<number>, n = c.length): number {
    const k = this.clauses++;
    if (k === this.start.length) this.start = grown(this.start, 2 * k);
    this.reserve(n + 2);
    const { arena } = this;
    let at = this.arenaUsed;
    arena[at++] = n;
    arena[at++] = 2;
    this.start[k] = at;
    for (let i = 0; i < n; i++) arena[at++] = c[i]!;
    this.arenaUsed = at;
    const binary = n === 2;
    const head = binary ? this.binaryHead : this.watchHead;
    const tail = binary ? this.binaryTail : this.watchTail;
    this.append(head, tail, c[0]!, this.entry(k, c[1]!));
    this.append(head, tail, c[1]!, this.entry(k, c[0]!));
    return k;
  }

  /** A new list entry for clause k (other: the clause's other literal, read for binary clauses). */
  private entry(k: number, other: number): number {
    const e = this.entries++;
    if (e === this.entryNext.length) {
      this.entryClause = grown(this.entryClause, 2 * e);
      this.entryOther = grown(this.entryOther, 2 * e);
      this.entryNext = grown(this.entryNext, 2 * e);
    }
    this.entryClause[e] = k;
    this.entryOther[e] = other;
    return e;
  }

  /** Puts entry e at the end of literal lit's list (of those `head` and `tail` keep). */
  private append(head: Int32Array, tail: Int32Array, lit: number, e: number): void {
    this.entryNext[e] = -1;
    const last = tail[lit]!;
    if (last < 0) head[lit] = e;
    else this.entryNext[last] = e;
    tail[lit] = e;
  }

  /** Room for `clauses` more clauses of `literals` literals in all (when known, before adding them). */
  reserveClauses(clauses: number, literals: number): void {
    this.reserve(2 * clauses + literals);
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
    this.level[v] = this.trailLim.length;
    this.reason[v] = why;
    this.trail[this.trailSize++] = c;
  }

  /** Unit propagation; the index of a conflicting clause, or -1. */
  private propagate(): number {
    const { arena, start, value, entryClause, entryOther, entryNext, watchHead, watchTail } = this;
    while (this.qhead < this.trailSize) {
      const falseLit = this.trail[this.qhead++]! ^ 1;
      for (let e = this.binaryHead[falseLit]!; e >= 0; e = entryNext[e]!) {
        const other = entryOther[e]!;
        const now = value[other]!;
        if (now > 0) continue;
        if (now < 0) return entryClause[e]!;
        this.assign(other, entryClause[e]!);
      }
      let before = -1;
      for (let e = watchHead[falseLit]!; e >= 0;) {
        const next = entryNext[e]!;
        const k = entryClause[e]!;
        // The clause's literals are arena[a .. end).
        const a = start[k]!;
        const end = a + arena[a - 2]!;
        if (arena[a] === falseLit) {
          arena[a] = arena[a + 1]!;
          arena[a + 1] = falseLit;
        }
        const first = arena[a]!;
        if (value[first]! <= 0) {
          let found = -1;
          const from = a + arena[a - 1]!;
          for (let j = from; j < end && found < 0; j++) if (value[arena[j]!]! >= 0) found = j;
          for (let j = a + 2; j < from && found < 0; j++) if (value[arena[j]!]! >= 0) found = j;
          if (found >= 0) {
            // The clause now watches that literal: its entry moves to the end of that literal's list.
            const l = arena[found]!;
            arena[a + 1] = l;
            arena[found] = falseLit;
            arena[a - 1] = found - a;
            if (before < 0) watchHead[falseLit] = next;
            else entryNext[before] = next;
            if (watchTail[falseLit] === e) watchTail[falseLit] = before;
            this.append(watchHead, watchTail, l, e);
            e = next;
            continue;
          }
          if (value[first]! < 0) return k;
          this.assign(first, k);
        }
        before = e;
        e = next;
      }
    }
    return -1;
  }

  private backtrack(level: number): void {
    if (this.trailLim.length <= level) return;
    const start = this.trailLim[level]!;
    const { value, phase } = this;
    for (let i = this.trailSize - 1; i >= start; i--) {
      const c = this.trail[i]!;
      phase[c >> 1] = c & 1 ? 0 : 1;
      value[c] = 0;
      value[c ^ 1] = 0;
      this.heap.insert(c >> 1);
    }
    this.trailSize = start;
    this.trailLim.length = level;
    this.qhead = start;
  }

  private bump(v: number): void {
    if ((this.activity[v]! += this.increment[0]!) > 1e100) {
      for (let u = 1; u <= this.variableCount; u++) this.activity[u]! *= 1e-100;
      this.increment[0]! *= 1e-100;
    }
    this.heap.raise(v);
  }

  /**
   * First-UIP learning: the learnt clause (asserting literal first) and the level to go back to. A reason holds the
   * literal it implied (true) anywhere, not only first: binary clauses are never reordered.
   */
  private analyze(conflict: number): { learnt: number[]; back: number } {
    const learnt = [0];
    const current = this.trailLim.length;
    let open = 0;
    let p = -1;
    let index = this.trailSize - 1;
    const { arena, start, seen, level } = this;
    let clause = conflict;
    for (;;) {
      const a = start[clause]!;
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
    if (this.trailLim.length === 0) return core;
    const { seen, level } = this;
    seen[failed >> 1] = 1;
    for (let i = this.trailSize - 1; i >= this.trailLim[0]!; i--) {
      const v = this.trail[i]! >> 1;
      if (!seen[v]) continue;
      const why = this.reason[v]!;
      if (why < 0) core.push(external(this.trail[i]!));
      else {
        const a = this.start[why]!;
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
    const level = this.assumed(prefix) ? this.trailLim.length : -1;
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
      this.trailLim.push(this.trailSize);
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
        if (this.trailLim.length === 0) {
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
      while (this.trailLim.length < wanted.length) {
        const a = wanted[this.trailLim.length]!;
        const now = this.value[a]!;
        if (now > 0) this.trailLim.push(this.trailSize);
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
        if (v <= 0) {
          const model = [false];
          for (let u = 1; u <= this.variableCount; u++) model.push(this.value[2 * u]! > 0);
          this.model = model;
          this.backtrack(0);
          return 'sat';
        }
        next = this.phase[v] ? 2 * v : 2 * v + 1;
      }
      this.trailLim.push(this.trailSize);
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

/** Variables by descending activity, ties by smaller number (so that runs are reproducible). */
class ActivityHeap {
  private readonly items: number[] = [];
  /** Per variable, its index in items or -1; from 1 up, so entry 0 is there to keep the array without holes. */
  private readonly at: number[] = [-1];
  /** The solver's, replaced when it grows. */
  constructor(public activity: Float64Array) {}

  private before(a: number, b: number): boolean {
    const x = this.activity[a]!;
    const y = this.activity[b]!;
    return x > y || (x === y && a < b);
  }

  private up(i: number): void {
    const v = this.items[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(v, this.items[parent]!)) break;
      this.items[i] = this.items[parent]!;
      this.at[this.items[i]!] = i;
      i = parent;
    }
    this.items[i] = v;
    this.at[v] = i;
  }

  private down(i: number): void {
    const v = this.items[i]!;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= this.items.length) break;
      if (child + 1 < this.items.length && this.before(this.items[child + 1]!, this.items[child]!)) child++;
      if (!this.before(this.items[child]!, v)) break;
      this.items[i] = this.items[child]!;
      this.at[this.items[i]!] = i;
      i = child;
    }
    this.items[i] = v;
    this.at[v] = i;
  }

  insert(v: number): void {
    if ((this.at[v] ?? -1) >= 0) return;
    this.items.push(v);
    this.up(this.items.length - 1);
  }

  raise(v: number): void {
    if ((this.at[v] ?? -1) >= 0) this.up(this.at[v]!);
  }

  /** The most active variable, or 0 when empty. */
  pop(): number {
    if (this.items.length === 0) return 0;
    const top = this.items[0]!;
    this.at[top] = -1;
    const last = this.items.pop()!;
    if (this.items.length > 0) {
      this.items[0] = last;
      this.down(0);
    }
    return top;
  }
}
