/**
 * The placement search (placement.md section 3). First fit decreasing, improved by moves that empty hosts and moves
 * that cut latency, gives a first placement; a depth-first branch and bound (fewest candidates first, bounds from
 * `PlacementState.scan`) then proves or improves the number of active hosts, and large neighbourhood search (part
 * of the placement freed and searched exactly, the rest held) improves what the proof cannot reach; the same two
 * then work on the total link latency with that number held. Everything stops at the deadline or the work budget;
 * what was not proven is said (`optimal: false`) with the lower bound reached.
 */
import type { SearchModel } from './model.js';
import { PlacementState } from './state.js';
import { checkAbort } from '../solving/work.js';

export interface SearchLimits {
  /** Epoch milliseconds (Date.now()) after which the search stops. */
  deadline: number;
  /** Candidate scans after which the search stops: a budget that gives the same answer on every run. */
  effort: number;
}

export interface Objective {
  activeHosts: number;
  totalLatency: number;
}

export type SearchOutcome =
  | { status: 'placed'; hostOf: Int32Array; objective: Objective; optimal: boolean; lowerBound: Objective }
  | { status: 'infeasible' }
  | { status: 'timeout' };

type Mode = 'count' | 'latency' | 'feasible';

interface Incumbent {
  hostOf: Int32Array;
  objective: Objective;
}

/** How often (in work units) the clock is read. */
const CLOCK_EVERY = 20_000;

class Stopwatch {
  private nextCheck: number;
  stopped = false;
  constructor(
    private readonly state: PlacementState,
    readonly deadline: number,
    readonly effort: number,
  ) {
    this.nextCheck = state.work + CLOCK_EVERY;
  }
  /**
   * Whether the stage's work is spent: the budget is checked every time (it is cheap and makes the stop exact). The
   * clock, read now and then, only stops the job (SolverTimeout): it never picks the answer (issue 48).
   */
  expired(): boolean {
    if (this.stopped) return true;
    const work = this.state.work;
    if (work >= this.effort) return (this.stopped = true);
    if (work < this.nextCheck) return false;
    this.nextCheck = work + CLOCK_EVERY;
    checkAbort(this.deadline);
    return false;
  }
}

const snapshot = (s: PlacementState): Incumbent => ({
  hostOf: Int32Array.from(s.hostOf),
  objective: { activeHosts: s.active, totalLatency: s.latency },
});

/** Positions in first-fit-decreasing order: pinned first, then fewest candidates, then largest demand. */
function decreasingOrder(m: SearchModel): number[] {
  const pinned = (p: number) => (m.instance.problem.nodes[m.instance.placed[p]!]!.pin ? 0 : 1);
  const size = (p: number) => m.cores[p]! + m.memory[p]! + m.storage[p]!;
  return Array.from({ length: m.nodeCount }, (_, p) => p).sort(
    (a, b) => pinned(a) - pinned(b) || m.domains[a]!.length - m.domains[b]!.length || size(b) - size(a) || a - b,
  );
}

/**
 * The candidate of p adding the least latency: an active host if one fits, else (when allowed) an empty one; with
 * `room`, the empty host with the most room first (fewer hosts), else the nearest (less latency).
 */
function choose(s: PlacementState, p: number, mayOpen: boolean, avoid = -1, room?: Float64Array): number {
  const d = s.model.domains[p]!;
  const cost = s.cost[p]!;
  let bestActive = -1;
  let bestEmpty = -1;
  const emptyBefore = (k: number, than: number) => {
    const j = s.slot(p, than);
    if (room && room[d[k]!] !== room[than]) return room[d[k]!]! > room[than]!;
    return cost[k]! < cost[j]!;
  };
  s.work += d.length;
  for (let k = 0; k < d.length; k++) {
    const h = d[k]!;
    if (h === avoid || !s.fits(p, h)) continue;
    if (s.load[h]! > 0) {
      if (bestActive < 0 || cost[k]! < cost[s.slot(p, bestActive)]!) bestActive = h;
    } else if (mayOpen && (bestEmpty < 0 || emptyBefore(k, bestEmpty))) bestEmpty = h;
  }
  return bestActive >= 0 ? bestActive : bestEmpty;
}

/** Tries to move every node off host h onto other active hosts; leaves the state as it was when that fails. */
function emptyHost(s: PlacementState, h: number, order: readonly number[]): boolean {
  const nodes = order.filter((p) => s.hostOf[p] === h);
  const moved: number[] = [];
  for (const p of nodes) {
    s.unassign(p);
    const to = choose(s, p, false, h);
    if (to < 0) {
      s.assign(p, h);
      for (const q of moved.reverse()) {
        s.unassign(q);
        s.assign(q, h);
      }
      return false;
    }
    s.assign(p, to);
    moved.push(p);
  }
  return true;
}

const clear = (s: PlacementState) => {
  for (let p = 0; p < s.model.nodeCount; p++) if (s.hostOf[p]! >= 0) s.unassign(p);
};

const better = (a: Objective, b: Objective) =>
  a.activeHosts < b.activeHosts || (a.activeHosts === b.activeHosts && a.totalLatency < b.totalLatency);

/** Moves that empty a host (least loaded first), then single-node moves that lower the latency. */
function improve(s: PlacementState, order: readonly number[], watch: Stopwatch) {
  const m = s.model;
  const pinned = (p: number) => m.instance.problem.nodes[m.instance.placed[p]!]!.pin !== undefined;
  for (let improved = true; improved && !watch.expired();) {
    improved = false;
    const hosts = [...new Set(s.hostOf)].sort((a, b) => s.load[a]! - s.load[b]! || a - b);
    for (const h of hosts) {
      if (order.some((p) => s.hostOf[p] === h && pinned(p))) continue;
      if (emptyHost(s, h, order)) {
        improved = true;
        break;
      }
    }
  }
  for (let pass = 0, improved = true; improved && pass < 20 && !watch.expired(); pass++) {
    improved = false;
    for (const p of order) {
      if (pinned(p)) continue;
      const from = s.hostOf[p]!;
      const before = s.added(p, from);
      s.unassign(p);
      const to = choose(s, p, false);
      const emptied = s.load[from] === 0;
      if (to >= 0 && to !== from && (emptied || s.added(p, to) < before)) {
        s.assign(p, to);
        improved = true;
      } else s.assign(p, from);
    }
  }
}

/**
 * First fit decreasing, opening the nearest empty host or, in a second pass, the roomiest, each followed by the
 * improving moves; the better of the two. Undefined when both meet a node they cannot place.
 */
function heuristic(s: PlacementState, watch: Stopwatch): Incumbent | undefined {
  const order = decreasingOrder(s.model);
  const room = s.room;
  let best: Incumbent | undefined;
  for (const roomy of [false, true]) {
    if (
      !order.every((p) => {
        const h = choose(s, p, true, -1, roomy ? room : undefined);
        if (h >= 0) s.assign(p, h);
        return h >= 0;
      })
    ) {
      clear(s);
      continue;
    }
    improve(s, order, watch);
    const found = snapshot(s);
    clear(s);
    if (!best || better(found.objective, best.objective)) best = found;
  }
  return best;
}

/** Depth-first branch and bound over the unplaced position with the fewest candidates. */
class BranchAndBound {
  best: Incumbent | undefined;
  /** The search can end early: the incumbent meets the root bound. */
  private reached = false;

  constructor(
    private readonly s: PlacementState,
    private readonly watch: Stopwatch,
    private readonly mode: Mode,
    incumbent: Incumbent | undefined,
    /** latency mode: most active hosts allowed. */
    private readonly hostLimit: number,
    /** What the incumbent cannot beat. */
    private readonly floor: number,
  ) {
    this.best = incumbent;
  }

  /** Whether the whole tree was searched (or the floor reached): the incumbent is then optimal. */
  run(): boolean {
    if (this.best && this.value(this.best.objective) <= this.floor) return true;
    this.dfs();
    return this.reached || !this.watch.stopped;
  }

  private value(o: Objective) {
    return this.mode === 'latency' ? o.totalLatency : o.activeHosts;
  }

  private mayOpen(): boolean {
    const s = this.s;
    if (this.mode === 'count') return !this.best || s.active + 1 < this.best.objective.activeHosts;
    if (this.mode === 'latency') return s.active < this.hostLimit;
    return true;
  }

  private dfs(): void {
    const s = this.s;
    if (this.reached || this.watch.expired()) return;
    if (s.unassignedCount === 0) {
      this.best = snapshot(s);
      if (this.mode === 'feasible' || this.value(this.best.objective) <= this.floor) this.reached = true;
      return;
    }
    const mayOpen = this.mayOpen();
    const bound = s.scan(mayOpen, this.mode === 'latency');
    if (!bound) return;
    if (this.mode === 'count' && this.best && s.active + bound.newHosts >= this.best.objective.activeHosts) return;
    if (this.mode === 'latency') {
      if (s.active + bound.newHosts > this.hostLimit) return;
      if (this.best && s.latency + bound.latency >= this.best.objective.totalLatency) return;
    }
    const p = bound.pick;
    for (const h of this.candidates(p, mayOpen)) {
      s.assign(p, h);
      const hopeless =
        (this.mode === 'count' && this.best && s.active >= this.best.objective.activeHosts) ||
        (this.mode === 'latency' && this.best && s.latency >= this.best.objective.totalLatency);
      if (!hopeless) this.dfs();
      s.unassign(p);
      if (this.reached || this.watch.stopped) return;
    }
  }

  /**
   * Hosts to try for p, best first: for the host count active hosts first, for latency the least added latency
   * first; of the empty hosts of one class only the first (they are interchangeable).
   */
  private candidates(p: number, mayOpen: boolean): number[] {
    const s = this.s;
    const m = s.model;
    const d = m.domains[p]!;
    const cost = s.cost[p]!;
    const list: number[] = [];
    for (let k = 0; k < d.length; k++) {
      const h = d[k]!;
      const open = s.load[h]! > 0;
      if (!open && (!mayOpen || s.classFirstEmpty[m.hostClass[h]!] !== h)) continue;
      if (s.fits(p, h)) list.push(k);
    }
    s.work += d.length;
    const activeFirst = this.mode !== 'latency';
    const room = s.room;
    list.sort((a, b) => {
      const openA = s.load[d[a]!]! > 0 ? 0 : 1;
      const openB = s.load[d[b]!]! > 0 ? 0 : 1;
      if (!activeFirst) return cost[a]! - cost[b]! || openA - openB || a - b;
      if (openA !== openB) return openA - openB;
      // A host to open: the roomiest, which can take more of what is still to place.
      if (openA === 1 && room[d[a]!] !== room[d[b]!]) return room[d[b]!]! - room[d[a]!]!;
      return cost[a]! - cost[b]! || a - b;
    });
    return list.map((k) => d[k]!);
  }
}

/**
 * The bound on active hosts with every pinned node on its host: pinned hosts count as active, and only the spare
 * capacity of hosts unpinned nodes may use absorbs their demand. Undefined when the pins alone do not fit.
 */
function pinnedBound(s: PlacementState): number | undefined {
  const m = s.model;
  const pinned = Array.from({ length: m.nodeCount }, (_, p) => p).filter(
    (p) => m.instance.problem.nodes[m.instance.placed[p]!]!.pin,
  );
  const done: number[] = [];
  for (const p of pinned) {
    const h = m.domains[p]![0]!;
    if (!s.fits(p, h)) break;
    s.assign(p, h);
    done.push(p);
  }
  const bound = done.length === pinned.length ? s.scan(true) : undefined;
  const hosts = bound && s.active + bound.newHosts;
  for (const p of done.reverse()) s.unassign(p);
  return hosts;
}

/** Whether any placement exists: the heuristic first, then the search for a first placement; and the work it took. */
export function findPlacement(
  model: SearchModel,
  limits: SearchLimits,
): { status: 'placed' | 'infeasible' | 'timeout'; work: number } {
  const s = new PlacementState(model);
  const watch = new Stopwatch(s, limits.deadline, limits.effort);
  if (!s.scan(true, false)) return { status: 'infeasible', work: s.work };
  if (heuristic(s, watch)) return { status: 'placed', work: s.work };
  const search = new BranchAndBound(s, watch, 'feasible', undefined, Infinity, -Infinity);
  const complete = search.run();
  return { status: search.best ? 'placed' : complete ? 'infeasible' : 'timeout', work: s.work };
}

/** Work one neighbourhood search may take. */
const NEIGHBOURHOOD_EFFORT = 400_000;
/** Nodes a neighbourhood frees at most; the nodes of two hosts, when they are this many at most. */
const NEIGHBOURHOOD_NODES = 16;
const HOST_PAIR_NODES = 32;

const placeAll = (s: PlacementState, incumbent: Incumbent) => incumbent.hostOf.forEach((h, p) => s.assign(p, h));

/**
 * Neighbourhoods of a placement, most promising first. For the host count: the nodes of a host without pins (least
 * loaded first: emptying it saves a host) with those of the active hosts they could move to. For latency: the
 * nodes of one host (to move together), then a node with its linked nodes and the nodes sharing its host, nodes with
 * the costliest links first.
 */
function neighbourhoods(s: PlacementState, incumbent: Incumbent, mode: 'count' | 'latency'): number[][] {
  const m = s.model;
  const n = m.hostCount;
  const dist = m.graph.dist;
  const hostOf = incumbent.hostOf;
  const free = (p: number) => !m.instance.problem.nodes[m.instance.placed[p]!]!.pin;
  const onHost = new Map<number, number[]>();
  hostOf.forEach((h, p) => onHost.set(h, [...(onHost.get(h) ?? []), p]));
  if (mode === 'count') {
    const hosts = [...onHost.keys()].sort((a, b) => onHost.get(a)!.length - onHost.get(b)!.length || a - b);
    return hosts
      .filter((h) => onHost.get(h)!.every(free))
      .map((h) => {
        const moving = onHost.get(h)!;
        // With the nodes of the hosts they could move to, least loaded first.
        const freed = [...moving];
        for (const x of hosts) {
          if (freed.length >= NEIGHBOURHOOD_NODES) break;
          if (x !== h && moving.some((p) => s.slot(p, x) >= 0)) freed.push(...onHost.get(x)!.filter(free));
        }
        return freed.slice(0, NEIGHBOURHOOD_NODES);
      });
  }
  const linked: number[][] = Array.from({ length: m.nodeCount }, () => []);
  const costs = new Float64Array(m.nodeCount);
  for (let i = 0; i < m.linkFrom.length; i++) {
    const [u, v] = [m.linkFrom[i]!, m.linkTo[i]!];
    linked[u]!.push(v);
    linked[v]!.push(u);
    const d = dist[hostOf[u]! * n + hostOf[v]!]!;
    costs[u]! += d;
    costs[v]! += d;
  }
  // Pairs of hosts first (their nodes may move together to better-placed hosts), then single nodes.
  const hosts = [...onHost.keys()].sort((a, b) => a - b).filter((h) => onHost.get(h)!.some(free));
  const wholeHosts = hosts.flatMap((h, i) =>
    hosts.slice(i + 1).map((x) => [...onHost.get(h)!, ...onHost.get(x)!].filter(free)),
  );
  const nodes = Array.from({ length: m.nodeCount }, (_, p) => p)
    .filter((p) => free(p) && costs[p]! > 0)
    .sort((a, b) => costs[b]! - costs[a]! || a - b)
    .map((p) =>
      [...new Set([p, ...linked[p]!, ...onHost.get(hostOf[p]!)!])].filter(free).slice(0, NEIGHBOURHOOD_NODES),
    );
  return [...wholeHosts.filter((list) => list.length <= HOST_PAIR_NODES), ...nodes];
}

/**
 * Large neighbourhood search: free one neighbourhood of the incumbent, search it exactly (the rest held) for a
 * better placement, keep any improvement, and go on until a whole round of neighbourhoods brings nothing, the floor
 * is met, or the watch stops.
 */
function improveByNeighbourhoods(
  s: PlacementState,
  incumbent: Incumbent,
  mode: 'count' | 'latency',
  watch: Stopwatch,
  hostLimit: number,
  floor: number,
): Incumbent {
  const value = (o: Objective) => (mode === 'count' ? o.activeHosts : o.totalLatency);
  let best = incumbent;
  let list = neighbourhoods(s, best, mode);
  for (let next = 0, fruitless = 0; fruitless < list.length && value(best.objective) > floor;) {
    if (watch.expired()) break;
    placeAll(s, best);
    for (const p of list[next]!) s.unassign(p);
    const sub = new Stopwatch(s, watch.deadline, Math.min(watch.effort, s.work + NEIGHBOURHOOD_EFFORT));
    const search = new BranchAndBound(s, sub, mode, best, hostLimit, floor);
    search.run();
    clear(s);
    if (value(search.best!.objective) < value(best.objective)) {
      best = search.best!;
      list = neighbourhoods(s, best, mode);
      [next, fruitless] = [0, 0];
    } else [next, fruitless] = [(next + 1) % Math.max(1, list.length), fruitless + 1];
  }
  return best;
}

/**
 * The least (active hosts, total latency) placement, lexicographically: the heuristic's placement, then the host
 * count by branch and bound (proving it when the tree is small enough) and by neighbourhood search, then the latency
 * with that count held by neighbourhood search (a good incumbent first makes the exact search prune far more) and
 * branch and bound. The stages end at a quarter, a half, three quarters and all of the work, counted from the
 * start, so what one stage leaves goes to the next.
 */
export function optimise(model: SearchModel, limits: SearchLimits): SearchOutcome {
  const s = new PlacementState(model);
  const root = s.scan(true);
  if (!root) return { status: 'infeasible' };
  const rootHosts = pinnedBound(s) ?? root.newHosts;
  const rootLatency = root.latency;
  const startWork = s.work;
  /** The watch of the stage that ends at this fraction of the work (the time limit only stops the job). */
  const until = (share: number) => new Stopwatch(s, limits.deadline, startWork + (limits.effort - startWork) * share);
  let incumbent = heuristic(s, until(0.25));
  const byCount = new BranchAndBound(s, until(0.25), 'count', incumbent, Infinity, rootHosts);
  let countProven = byCount.run();
  incumbent = byCount.best;
  if (!incumbent) return countProven ? { status: 'infeasible' } : { status: 'timeout' };
  if (!countProven) {
    incumbent = improveByNeighbourhoods(s, incumbent, 'count', until(0.5), Infinity, rootHosts);
    countProven = incumbent.objective.activeHosts <= rootHosts;
  }
  const hosts = incumbent.objective.activeHosts;
  incumbent = improveByNeighbourhoods(s, incumbent, 'latency', until(0.75), hosts, rootLatency);
  const byLatency = new BranchAndBound(s, until(1), 'latency', incumbent, hosts, rootLatency);
  const latencyProven = byLatency.run();
  const best = byLatency.best!;
  const optimal = countProven && latencyProven;
  return {
    status: 'placed',
    hostOf: best.hostOf,
    objective: best.objective,
    optimal,
    lowerBound: optimal
      ? best.objective
      : {
          activeHosts: countProven ? hosts : rootHosts,
          totalLatency: Math.min(rootLatency, best.objective.totalLatency),
        },
  };
}
