/**
 * Proven lower bounds on the new firewalls and the rules of an answer not proven minimal (issue 48, item 2), from the
 * structure of the requirements: relaxations that every valid answer satisfies, solved by our own solver's cores.
 *
 * - Firewalls: each walk of an isolation's traffic must meet a node that drops it. A walk through a free dropper (a
 *   configurable firewall that costs no new firewall, or a given one whose rules drop that traffic) needs nothing
 *   more; any other needs one of the new firewalls (allocation places, optional firewalls) on it: a hitting set.
 * - Rules: a firewall whose rules we write either drops nothing, or everything that reaches it (default DENY, no
 *   rule: a block), or some and not the rest (a rule at least, whatever its default). Each isolation's walk needs a
 *   block or a partial firewall on it (or a free dropper: a deployed one, a given one whose rules drop it), and each
 *   reachability a walk past every block: the fewest partial firewalls under those clauses, and a second rule at
 *   each partial one where one rule cannot part what it must pass from what it must drop (rulesNeeded, `separated`).
 *   A rule is a box there: its addresses octet patterns or CIDR prefixes, never `except` nor directional (nfv writes
 *   neither). Where the partial firewalls together need more rules than that, as many as the rule model's candidates
 *   over refined classes count (rulesNeeded, `together`), lists being the rule model's (rule-model.ts).
 *
 * Both count over every valid answer, so they bound the lexicographic optimum too (its rules are among them). Only
 * components whose every requirement holds are bounded (which requirements an optimum meets may differ otherwise).
 * Walks and cuts are found as needed (lazyOptimum asks for those the best choice so far breaks), and the solver
 * spends from its own pool (model/limits.ts, BOUND_WORK): the same bound on any machine, never a changed answer.
 */
import {
  addressedOnWay,
  intermediates,
  isDecision,
  type FlowModel,
  type Requirement,
  type StateGraph,
} from '../flows/flows.js';
import { contains, DIMS, DST, meet, SPORT, SRC, type Box, type PacketClass } from '../../model/space.js';
import { firstMatchDrops, type NetNode } from '../flows/network.js';
import { candidateRules, type Candidate } from '../rules/rule-model.js';
import { exactMaxSat, lazyOptimum } from './exact.js';
import type { GreedyDecisions } from './greedy.js';
import { hittingSetLp } from './highs.js';
import { improveHittingSet } from './hitting.js';
import { Clauses, type Lit } from './maxsat.js';
import { checkAbort, WorkPool, type Spend } from './work.js';

/**
 * The share of the bounds' pool the rules' bound over answers of few firewalls may spend (see `rules` in
 * structuralBound): a half, 2.5 M ticks of BOUND_WORK at effort 1. A fifth before its rounds replayed their cores
 * (exact.ts, lazyOptimum): with them, a half raises 8 of the Zoo census's 42 bounds (Biznet plain 4 -> 7, Belnet2005
 * plain 5 -> 7) for about a third more time in the bounds.
 */
const FEW_FIREWALLS_SHARE = 2;

export interface LowerBound {
  firewalls: number;
  rules: number;
}

/**
 * The firewalls' relaxation solved by linear programming (firewallRelaxation): a proven bound, and a set of new
 * firewalls meeting every isolation's walk as the walk finders see them (`places`), where one was found.
 */
export interface FirewallRelaxation {
  firewalls: number;
  places?: number[];
}

/**
 * The bounds, and the new firewalls of the firewalls' relaxation's optimum where it was found (`places`): a least set
 * meeting every isolation's walk as the walk finders saw them. Where no rule need cut a class that a requirement
 * reaches, firewalls there can meet every requirement, so that an answer on them has the fewest (allocate.ts).
 */
export interface StructuralBound {
  firewalls: number;
  places?: number[];
  /**
   * The rules' bound over the answers of at most `most` new firewalls (the lexicographic optimum has no more than
   * any answer has: so bounded by an answer's own count, the bound stays sound and rises, since fewer firewalls
   * that each drop some and pass some need a rule each); over every answer without `most`. `together`: also with the
   * rules the partial firewalls need together counted (rulesNeeded), dearer: allocate.ts asks it only where that can
   * settle a proven coarse answer.
   */
  rules: (most?: number, together?: boolean) => number;
  /**
   * An answer of the rules' relaxation's optimum over answers of at most `most` new firewalls (answerOf), where its
   * solver converged and that optimum is one; its rules then often meet `rules(most)`, proving it minimal.
   */
  answer: (most: number) => GreedyDecisions | undefined;
  /**
   * An answer on the given new firewalls (another answer's, which meet every isolation's walk): reachabilities past
   * as few of them as they can, so that many block (no rule) and the others pass few classes.
   */
  answerOn: (firewalls: ReadonlySet<number>) => GreedyDecisions | undefined;
}

/**
 * For one requirement, a walk of its traffic that meets no node `blocks` stops, as the nodes on it that could drop it
 * (configurable or deployed firewalls and places, in order); undefined when every walk is stopped. `blocks` is asked
 * of those nodes only: the others drop as their given rules say, or not at all.
 */
type WalkFinder = (blocks: (node: number) => boolean) => number[] | undefined;

/** Who may drop a requirement's traffic at a node, whatever is decided: a given firewall whose rules drop it. */
function givenDrop(net: NetNode[], model: FlowModel, node: number, classes: number[]): boolean {
  const n = net[node]!;
  if (!isDecision(n) || choosable(n)) return false;
  return classes.some((c) => firstMatchDrops(n, model.classes[c]!));
}

const choosable = (n: NetNode) => isDecision(n) && (n.configurable || n.deployed === true);

/** A firewall whose rules we write: configurable and not deployed. */
const written = (n: NetNode) => n.configurable && !n.deployed;

/** Whether a walk stops at a node: a choosable one as `blocks` says, any other as its given rules drop. */
function stopsAt(net: NetNode[], model: FlowModel, blocks: (node: number) => boolean, node: number, classes: number[]) {
  return choosable(net[node]!) ? blocks(node) : givenDrop(net, model, node, classes);
}

/**
 * A requirement's walk finder, charging the states or hops it looks at to `spend`'s pool; once it is spent, every
 * walk is stopped (a relaxation with fewer clauses: its optimum is still a lower bound).
 */
function walkFinder(net: NetNode[], model: FlowModel, r: number, spend: Spend): WalkFinder {
  const graph = model.graphs[r];
  if (graph) {
    return (blocks) => {
      if (spend.work.spent) return undefined;
      spend.work.spend(graph.node.length);
      return graphWalk(net, model, graph, blocks);
    };
  }
  const flows = model.flows[r]!.flat();
  return (blocks) => {
    if (spend.work.spent) return undefined;
    for (const f of flows) {
      spend.work.spend(f.hops.length);
      const stopped = f.hops.some((h) => stopsAt(net, model, blocks, h.node, [h.cls]));
      if (!stopped) return f.hops.filter((h) => choosable(net[h.node]!)).map((h) => h.node);
    }
    return undefined;
  };
}

/** A shortest walk from a start to an arrival through states that pass (breadth first, so the same on every run). */
function graphWalk(
  net: NetNode[],
  model: FlowModel,
  graph: StateGraph,
  blocks: (node: number) => boolean,
): number[] | undefined {
  const run = stateWalk(graph, (k) => stopsAt(net, model, blocks, graph.node[k]!, graph.classes[k]!));
  if (!run) return undefined;
  return [...new Set(run.map((k) => graph.node[k]!).filter((n) => choosable(net[n]!)))];
}

/** The states and moves of a requirement's traffic, as a state graph has them. */
type Walks = Pick<StateGraph, 'node' | 'classes' | 'first' | 'to' | 'start' | 'arrive'>;

/**
 * A requirement's traffic as states: its state graph, or its listed paths' flows as chains side by side (each a run
 * from its first hop to its last); undefined for a complete reachability over listed paths (every flow of one path
 * together, not modelled here) or a flow with no hop.
 */
function walksOf(model: FlowModel, reqs: Requirement[], r: number): Walks | undefined {
  const graph = model.graphs[r];
  if (graph) return graph;
  if (reqs[r]!.kind === 'complete') return undefined;
  const node: number[] = [];
  const classes: number[][] = [];
  const start: number[] = [];
  const arrive: number[] = [];
  const chained: boolean[] = [];
  for (const f of model.flows[r]!.flat()) {
    if (f.hops.length === 0) return undefined;
    start.push(node.length);
    f.hops.forEach((h, i) => {
      chained.push(i + 1 < f.hops.length);
      node.push(h.node);
      classes.push([h.cls]);
    });
    arrive.push(node.length - 1);
  }
  // Each state of a chain moves to the next state, if any: the links in StateGraph's two-array form.
  const first = new Int32Array(node.length + 1);
  const to: number[] = [];
  chained.forEach((more, k) => {
    if (more) to.push(k + 1);
    first[k + 1] = to.length;
  });
  return { node, classes, first, to: Int32Array.from(to), start, arrive };
}

/** What one more state on a walk costs in cheapestWalk, beside what it costs to pass: shorter walks win ties. */
const WALK_STEP = 1_000;

/**
 * cheapestWalk's buffers, kept between calls (the LP's separation walks every isolation's graph each round: fresh
 * arrays per call were a third of its time, in the collector): a state's entries count only where its stamp is the
 * call's, so nothing is cleared; the heap's entries (cost, state) side by side in typed arrays.
 */
const scratch = {
  stamp: new Int32Array(0),
  call: 0,
  best: new Float64Array(0),
  from: new Int32Array(0),
  /** 1: done, 2: an arrival (bits, valid where stamped). */
  flags: new Uint8Array(0),
  costs: new Float64Array(1024),
  states: new Int32Array(1024),
};

/** scratch sized for `count` states and a fresh stamp (all stamps cleared when the counter would wrap). */
function freshScratch(count: number) {
  if (scratch.stamp.length < count) {
    const size = Math.max(count, 2 * scratch.stamp.length);
    scratch.stamp = new Int32Array(size);
    scratch.best = new Float64Array(size);
    scratch.from = new Int32Array(size);
    scratch.flags = new Uint8Array(size);
    scratch.call = 0;
  }
  if (scratch.call === 0x7fffffff) {
    scratch.stamp.fill(0);
    scratch.call = 0;
  }
  return ++scratch.call;
}

/**
 * The states of a cheapest run from a start to an arrival, each state costing `cost(k)` + 1 (Infinity: impassable),
 * by Dijkstra's search with a binary heap of (cost, state); ties to the lower state, so the same on every run.
 */
function cheapestWalk(graph: Walks, cost: (k: number) => number): number[] | undefined {
  const call = freshScratch(graph.node.length);
  const { stamp, best, from, flags } = scratch;
  for (const k of graph.arrive) {
    stamp[k] = call;
    best[k] = Infinity;
    flags[k] = 2;
  }
  // A state is pushed again when its cost falls; an entry whose cost is no longer the state's best is passed over.
  let size = 0;
  const push = (w: number, k: number) => {
    if (size === scratch.costs.length) {
      const [costs, states] = [new Float64Array(2 * size), new Int32Array(2 * size)];
      costs.set(scratch.costs);
      states.set(scratch.states);
      [scratch.costs, scratch.states] = [costs, states];
    }
    const { costs, states } = scratch;
    let i = size++;
    while (i > 0) {
      const up = (i - 1) >> 1;
      const c = costs[up]!;
      const s = states[up]!;
      if (c < w || (c === w && s < k)) break;
      costs[i] = c;
      states[i] = s;
      i = up;
    }
    costs[i] = w;
    states[i] = k;
  };
  /** Takes the least entry off the heap into `top`. */
  const top = { w: 0, k: 0 };
  const pop = () => {
    const { costs, states } = scratch;
    top.w = costs[0]!;
    top.k = states[0]!;
    const w = costs[--size]!;
    const k = states[size]!;
    let i = 0;
    for (;;) {
      let m = 2 * i + 1;
      if (m >= size) break;
      const r = m + 1;
      if (r < size && (costs[r]! < costs[m]! || (costs[r] === costs[m] && states[r]! < states[m]!))) m = r;
      if (w < costs[m]! || (w === costs[m] && k < states[m]!)) break;
      costs[i] = costs[m]!;
      states[i] = states[m]!;
      i = m;
    }
    costs[i] = w;
    states[i] = k;
  };
  const reach = (k: number, w: number, via: number) => {
    if (stamp[k] !== call) {
      stamp[k] = call;
      flags[k] = 0;
    } else if (w >= best[k]!) return;
    best[k] = w;
    from[k] = via;
    push(w, k);
  };
  for (const k of graph.start) reach(k, cost(k) + 1, -1);
  while (size > 0) {
    pop();
    const { w: at, k } = top;
    if (flags[k]! & 1 || best[k] !== at) continue;
    flags[k] = flags[k]! | 1;
    if (flags[k]! & 2) return runTo(from, k);
    for (let e = graph.first[k]!; e < graph.first[k + 1]!; e++) {
      const m = graph.to[e]!;
      if (stamp[m] !== call || !(flags[m]! & 1)) reach(m, at + cost(m) + 1, k);
    }
  }
  return undefined;
}

/** The states of the run ending at `k`, from its arrival back to its start (`from`: each state's predecessor, -1). */
function runTo(from: Int32Array, k: number): number[] {
  const run: number[] = [];
  for (let s = k; s >= 0; s = from[s]!) run.push(s);
  return run;
}

/**
 * stateWalk's buffers, kept between calls as cheapestWalk's are (the bounds' walk finders, the LP's greedy cover and
 * the local search's checks walk every isolation again and again): a state is seen where its stamp is the call's.
 */
const bfs = {
  stamp: new Int32Array(0),
  call: 0,
  from: new Int32Array(0),
  arrival: new Int32Array(0),
  queue: new Int32Array(0),
};

/** The states of a shortest run from a start to an arrival meeting no state that `stops` (breadth first). */
function stateWalk(graph: Walks, stops: (k: number) => boolean): number[] | undefined {
  const count = graph.node.length;
  if (bfs.stamp.length < count) {
    const size = Math.max(count, 2 * bfs.stamp.length);
    bfs.stamp = new Int32Array(size);
    bfs.from = new Int32Array(size);
    bfs.arrival = new Int32Array(size);
    bfs.queue = new Int32Array(size);
    bfs.call = 0;
  }
  if (bfs.call === 0x7fffffff) {
    bfs.stamp.fill(0);
    bfs.arrival.fill(0);
    bfs.call = 0;
  }
  const call = ++bfs.call;
  const { stamp, from, arrival, queue } = bfs;
  for (const k of graph.arrive) arrival[k] = call;
  let tail = 0;
  for (const k of graph.start) {
    if (stamp[k] === call || stops(k)) continue;
    stamp[k] = call;
    from[k] = -1;
    queue[tail++] = k;
  }
  for (let h = 0; h < tail; h++) {
    const k = queue[h]!;
    if (arrival[k] === call) return runTo(from, k);
    for (let e = graph.first[k]!; e < graph.first[k + 1]!; e++) {
      const m = graph.to[e]!;
      if (stamp[m] === call || stops(m)) continue;
      stamp[m] = call;
      from[m] = k;
      queue[tail++] = m;
    }
  }
  return undefined;
}

/**
 * Whether every rule that matches a packet of each of the boxes `a` and `b` also matches a packet of `e`. A rule is a
 * box, so it misses `e` only where, in some dimension, the packets can be chosen so that what it must hold there
 * misses `e`: in ports and protocols the interval between them, in an address octet the least aligned block of values
 * holding both (an octet pattern holds every value where they differ, a CIDR prefix an aligned block).
 */
function hullsMeet(a: Box, b: Box, e: Box): boolean {
  for (let d = 0; d < DIMS; d++) {
    const [lo, hi] = [2 * d, 2 * d + 1];
    const avoids =
      d < SPORT
        ? blockAvoids(a[lo]!, a[hi]!, b[lo]!, b[hi]!, e[lo]!, e[hi]!)
        : (a[lo]! < e[lo]! && b[lo]! < e[lo]!) || (a[hi]! > e[hi]! && b[hi]! > e[hi]!);
    if (avoids) return false;
  }
  return true;
}

/**
 * Whether an aligned block of octet values (1, 2, 4 ... 256 of them) meets both ranges `a` and `b` and misses `e`: of
 * those of one size meeting both, the first ends lowest and the last starts highest.
 */
function blockAvoids(aLo: number, aHi: number, bLo: number, bHi: number, eLo: number, eHi: number): boolean {
  for (let size = 1; size <= 256; size *= 2) {
    const first = Math.max(Math.floor(aLo / size), Math.floor(bLo / size));
    const last = Math.min(Math.floor(aHi / size), Math.floor(bHi / size));
    if (first <= last && ((first + 1) * size - 1 < eLo || last * size > eHi)) return true;
  }
  return false;
}

/** An address field's four octets (at SRC or DST) in a box's lows (0) or highs (1), as one 32-bit number. */
const addressOf = (b: Box, at: number, side: 0 | 1) =>
  [0, 1, 2, 3].reduce((v, k) => v * 256 + b[2 * (at + k) + side]!, 0);

/**
 * What every rule holding all of `boxes` holds: their hull in each dimension, and in each address field what both the
 * least octet pattern (an octet of more than one value any) and the least CIDR prefix holding them hold, a rule's
 * address being one or the other (space.ts, ruleAddressBounds).
 */
function held(boxes: readonly Box[]): Box {
  const out = [...boxes[0]!];
  for (const b of boxes)
    for (let i = 0; i < 2 * DIMS; i += 2) {
      out[i] = Math.min(out[i]!, b[i]!);
      out[i + 1] = Math.max(out[i + 1]!, b[i + 1]!);
    }
  for (const at of [SRC, DST]) {
    const [lo, hi] = [addressOf(out, at, 0), addressOf(out, at, 1)];
    let size = 1;
    while (lo - (lo % size) + size - 1 < hi) size *= 2;
    const [first, last] = [lo - (lo % size), lo - (lo % size) + size - 1];
    for (let k = 0; k < 4; k++) {
      const i = 2 * (at + k);
      const octet = (v: number) => Math.floor(v / 256 ** (3 - k)) % 256;
      // The prefix's octet, within the pattern's (all values where the boxes' octet has more than one).
      if (out[i] === out[i + 1]) continue;
      [out[i], out[i + 1]] = [octet(first), octet(last)];
    }
  }
  return out;
}

/**
 * The refined classes (rule-model.ts, refineForRules) within each of the model's classes, worked out when first
 * asked: each lies within one, the one its first box meets (the classes are disjoint).
 */
function refinedWithin(model: FlowModel): (c: number) => PacketClass[] {
  let within: PacketClass[][] | undefined;
  return (c) => {
    if (!within) {
      const fine = model.refined();
      within = model.classes.map((k) => (fine === model ? [k] : []));
      if (fine !== model)
        for (const f of fine.classes) {
          const owner = model.classes.findIndex((k) => k.boxes.some((b) => meet(b, f.boxes[0]!)));
          if (owner >= 0) within[owner]!.push(f);
        }
    }
    return within[c]!;
  };
}

/**
 * A firewall's candidate rules for the classes it must drop and those it may pass (rule-model.ts, candidateRules):
 * its ALLOW ones, and its DENY ones that no other does better (`undominated`), covering dropped classes as `good`.
 */
interface FirewallCandidates {
  index: Map<PacketClass, number>;
  dropped: Set<number>;
  allow: Candidate[];
  deny: Weighed[];
  denying: number[][];
}

function firewallCandidates(drops: PacketClass[], passes: PacketClass[], spend: Spend): FirewallCandidates | undefined {
  const classes = [...new Set([...drops, ...passes])];
  const index = new Map(classes.map((c, k) => [c, k]));
  const dropped = new Set(drops.map((c) => index.get(c)!));
  const { candidates, complete } = candidateRules(classes, new Map(), [
    { wanted: (k) => !dropped.has(k), barred: (k) => dropped.has(k) },
    { wanted: (k) => dropped.has(k), barred: () => false },
  ]);
  spend.work.spend(
    Math.ceil((classes.length * (candidates[0]!.length + candidates[1]!.length)) / CANDIDATE_PAIRS_PER_TICK),
  );
  if (!complete) return undefined;
  const deny = undominated(
    candidates[1]!.map((c) => ({
      cost: c.cost,
      good: bitSet(
        classes.length,
        c.covers.filter((k) => dropped.has(k)),
      ),
      bad: bitSet(
        classes.length,
        c.covers.filter((k) => !dropped.has(k)),
      ),
      covers: c.covers,
    })),
  );
  // Each class's DENY candidates, by their place in `deny`.
  const denying = classes.map((): number[] => []);
  deny.forEach((c, x) => c.covers.forEach((k) => denying[k]!.push(x)));
  return { index, dropped, allow: candidates[0]!, deny, denying };
}

/** What one of a few firewalls counted together (fewestTogether) must do, and its candidates for it. */
interface CountedAt {
  candidates: FirewallCandidates;
  /** For each reachability that may pass here, its classes here. */
  passes: Map<number, PacketClass[]>;
  /** The reachabilities that must pass here (every walk past the blocks crosses it). */
  must: ReadonlySet<number>;
}

/**
 * The fewest rules in all of lists at a few firewalls, each list dropping every class of its `drops`, and each
 * reachability passing a class of its at one of them at least, and at each whose `must` holds it. Lists as
 * rule-model.ts counts them (one action's candidate rules under the other default), over refined classes; undefined
 * where some firewall's candidates are not every candidate, no lists do, or `spend` runs out. One MaxSAT problem: per
 * firewall w (its default DENY), its ALLOW candidates (each implying w) and DENY ones (each implying not w), a class
 * passing by an ALLOW candidate under w or by no DENY candidate under not w.
 */
function fewestTogether(at: CountedAt[], spend: Spend): number | undefined {
  let variables = 0;
  const hard: Lit[][] = [];
  /** A candidate's variable once per rule it stands for. */
  const rules: Lit[] = [];
  /** Each reachability's ways through: a class of its passing at one of the firewalls. */
  const ways = new Map<number, Lit[]>();
  /** A variable for a kept candidate, implying the default it needs. */
  const choice = (cost: number, needs: Lit) => {
    const x = ++variables;
    hard.push([-x, needs]);
    for (let k = 0; k < cost; k++) rules.push(x);
    return x;
  };
  for (const { candidates, passes, must } of at) {
    const { index, dropped } = candidates;
    const w = ++variables;
    const groups = [...passes].map(([r, g]) => ({
      r,
      classes: g.map((c) => index.get(c)!).filter((k) => !dropped.has(k)),
    }));
    const groupsOf = new Map<number, number[]>();
    groups.forEach((g, i) => g.classes.forEach((k) => (groupsOf.get(k) ?? groupsOf.set(k, []).get(k)!).push(i)));
    // An ALLOW candidate counts by the reachabilities it passes here (any class of theirs), the most for its rules.
    const none = new Uint32Array(0);
    const passed = new Map<string, Weighed>();
    for (const c of candidates.allow) {
      const good = bitSet(
        groups.length,
        c.covers.flatMap((k) => groupsOf.get(k) ?? []),
      );
      const key = good.join(',');
      if ((passed.get(key)?.cost ?? Infinity) > c.cost) passed.set(key, { cost: c.cost, good, bad: none });
    }
    const allow = undominated([...passed.values()]).map((c) => ({ ...c, x: choice(c.cost, w) }));
    const deny = candidates.deny.map((c) => choice(c.cost, -w));
    const denying = (k: number) => candidates.denying[k]!.map((x) => deny[x]!);
    for (const k of dropped) hard.push([w, ...denying(k)]);
    groups.forEach(({ r, classes: group }, i) => {
      const here = allow.filter((c) => hasBit(c.good, i)).map((c) => c.x);
      for (const k of group) {
        const byDeny = ++variables;
        hard.push([-byDeny, -w], ...denying(k).map((x) => [-byDeny, -x]));
        here.push(byDeny);
      }
      (ways.get(r) ?? ways.set(r, []).get(r)!).push(...here);
      if (must.has(r)) hard.push(here);
    });
  }
  hard.push(...ways.values());
  if (hard.some((c) => c.length === 0)) return undefined;
  const found = exactMaxSat({ variables, hard: Clauses.of(hard), soft: [rules.map((x) => -x)] }, spend);
  return found?.status === 'sat' ? rules.filter((x) => found.value[x]).length : undefined;
}

/** A candidate as the count weighs it: its rules, what it should cover and what it should not (bit sets). */
interface Weighed {
  cost: number;
  good: Uint32Array;
  bad: Uint32Array;
}

/** A bit set of the given members, of `size` bits. */
function bitSet(size: number, members: Iterable<number>): Uint32Array {
  const out = new Uint32Array((size + 31) >> 5);
  for (const k of members) out[k >> 5]! |= 1 << (k & 31);
  return out;
}

const hasBit = (bits: Uint32Array, k: number) => ((bits[k >> 5]! >>> (k & 31)) & 1) === 1;

function bitCount(bits: Uint32Array): number {
  let n = 0;
  for (let v of bits) for (; v !== 0; v &= v - 1) n++;
  return n;
}

/**
 * The candidates no other does as well as (covering all it covers of `good`, nothing more of `bad`, for no more
 * rules): a list using one can use its better instead. The best first, so that each is checked against those kept.
 */
function undominated<T extends Weighed>(list: T[]): T[] {
  const weighed = list.map((c) => ({ c, good: bitCount(c.good), bad: bitCount(c.bad) }));
  weighed.sort((a, b) => b.good - a.good || a.bad - b.bad || a.c.cost - b.c.cost);
  const kept: T[] = [];
  const within = (a: Uint32Array, b: Uint32Array) => {
    for (let i = 0; i < a.length; i++) if ((a[i]! & ~b[i]!) !== 0) return false;
    return true;
  };
  const better = (k: T, c: T) => k.cost <= c.cost && within(c.good, k.good) && within(k.bad, c.bad);
  for (const { c } of weighed) {
    let beaten = false;
    for (let i = 0; i < kept.length && !beaten; i++) beaten = better(kept[i]!, c);
    if (!beaten) kept.push(c);
  }
  return kept;
}

/**
 * A firewall's candidates for a count (firewallCandidates) are charged a tick per this many pairs of a class and a
 * candidate, about our solver's ticks for the same CPU (candidate generation and the pruning of dominated ones).
 */
const CANDIDATE_PAIRS_PER_TICK = 8;

/** The counts of one relaxation (rulesNeeded, `together`) spend at most 1 / COUNT_SHARE of the bounds' pool left. */
const COUNT_SHARE = 2;

/** The most rules the rules' relaxation counts at one firewall (its levels, structuralBound). */
const RULE_LEVELS = 6;

/** The most reachabilities whose pairs are tried at one firewall, and pairs of their classes' boxes per pair. */
const SEPARATION_REACHABILITIES = 24;
const SEPARATION_BOXES = 64;

/** An isolation's traffic that a firewall must drop in the relaxation's model, and the other nodes of its walk. */
interface Forced {
  boxes: Box[];
  classes: number[];
  around: number[];
}

/**
 * A reachability's traffic at a firewall it must pass: its classes' boxes there, and the blocks that leave it no walk
 * but through the firewall (none where its every walk crosses it).
 */
interface Passing {
  boxes: Box[];
  classes: number[];
  blocks: number[];
}

/** Why a firewall needs a second rule: the isolations it alone drops, the blocks that force reachabilities through. */
interface Separation {
  isolations: Forced[];
  blocks: number[];
}

/**
 * Where firewalls we write need more rules than one each (the rules' relaxation, structuralBound). A second rule at
 * one: it must let through a packet of each of two reachabilities that have no walk around it, so that an ALLOW rule
 * holding both also passes some packet of an isolation it alone must drop; and it must drop isolations' traffic, so
 * that a DENY rule holding all of it stops every packet a reachability could bring. One rule, with either default,
 * then does not do: ALLOW r with default DENY lets that isolation through, DENY r with default ALLOW stops that
 * reachability. This counts the rules nfv writes (boxes, never `except` nor directional), as the answers' rules are.
 *
 * `separated` gives, for a firewall the model makes partial, the isolations its walks force on it (every other node
 * of the walk lets it through in the model) and the reachabilities the model's blocks force through it, for the
 * clause "a second rule here, or one of those walks stopped elsewhere, or one of those blocks not a block": it holds
 * for every answer, whatever the model.
 *
 * `together` counts the rules the model's partial firewalls need in all, exactly as the rule model counts lists of
 * candidates over refined classes (fewestTogether), for the clause "this many rules at them, or one of the
 * isolations' walks stopped elsewhere, or one of the blocks not a block". Its lists are the rule model's: one action's
 * rules under the other default, which test/engine/rules/rule-model.part.ts's brute force found no longer than any list
 * of up to three rules; test/engine/solving/bounds.test.ts checks its counts against every list of up to two rules at
 * one firewall.
 */
function rulesNeeded(net: NetNode[], reqs: Requirement[], model: FlowModel, members: number[], spend: Spend) {
  const walks = new Map(members.map((r) => [r, walksOf(model, reqs, r)] as const));
  const boxesOf = (classes: readonly number[]) => classes.flatMap((c) => model.classes[c]!.boxes);
  const reachabilities = members.filter((r) => reqs[r]!.kind === 'reachability' && walks.get(r));
  /** A reachability's classes at `n`: those of every state there. */
  const classesAt = (graph: Walks, n: number) => [
    ...new Set(graph.node.flatMap((m, k) => (m === n ? graph.classes[k]! : []))),
  ];
  const passing = (graph: Walks, n: number, blocks: number[]): Passing => {
    const classes = classesAt(graph, n);
    return { boxes: boxesOf(classes), classes, blocks };
  };
  /** A run of a requirement's states past the nodes `stops` stops (stopsAt), charged to the pool. */
  const runPast = (graph: Walks, stops: (m: number) => boolean) => {
    spend.work.spend(graph.node.length);
    return stateWalk(graph, (k) => stopsAt(net, model, stops, graph.node[k]!, graph.classes[k]!));
  };
  const walkPast = (graph: Walks, cut: ReadonlySet<number>) => runPast(graph, (m) => cut.has(m));
  /** For each node, the reachabilities every walk of which crosses it (found on one walk's firewalls only). */
  const reachedThrough = () => {
    const through = new Map<number, number[]>();
    for (const r of reachabilities) {
      const graph = walks.get(r)!;
      if (spend.work.spent) break;
      for (const n of new Set((walkPast(graph, new Set()) ?? []).map((k) => graph.node[k]!))) {
        if (!written(net[n]!) || spend.work.spent || walkPast(graph, new Set([n]))) continue;
        (through.get(n) ?? through.set(n, []).get(n)!).push(r);
      }
    }
    return through;
  };
  let through: Map<number, number[]> | undefined;
  const throughAt = (n: number) => (through ??= reachedThrough()).get(n) ?? [];
  /** The reachabilities that must pass `n`: those every walk of which crosses it, then those `blocked` forces there. */
  const passingAt = (n: number, blocked: number[]): Passing[] => {
    const always = throughAt(n);
    const found = always.map((r) => passing(walks.get(r)!, n, []));
    for (const r of reachabilities) {
      const graph = walks.get(r)!;
      if (always.includes(r) || !graph.node.includes(n) || spend.work.spent) continue;
      const cut = new Set(blocked);
      // A reachability the blocks cut off anyway is the kept clauses' (structuralBound), not this one's.
      if (!walkPast(graph, cut)) continue;
      cut.add(n);
      if (walkPast(graph, cut)) continue;
      // As few of the blocks as still force it through `n` (a shorter clause).
      for (const m of blocked) {
        cut.delete(m);
        if (walkPast(graph, cut)) cut.add(m);
      }
      cut.delete(n);
      found.push(passing(graph, n, [...cut]));
    }
    return found.slice(0, SEPARATION_REACHABILITIES);
  };
  /** Isolations whose walk, in the model `stops`, is stopped at `n` alone. */
  const forcedAt = (n: number, stops: (m: number) => boolean): Forced[] => {
    const forced: Forced[] = [];
    for (const r of members) {
      const graph = walks.get(r);
      if (reqs[r]!.kind !== 'isolation' || !graph || !graph.node.includes(n) || spend.work.spent) continue;
      const run = runPast(graph, (m) => m !== n && stops(m));
      const at = run?.filter((k) => graph.node[k] === n);
      if (!run || at!.length !== 1) continue;
      const around = [...new Set(run.map((k) => graph.node[k]!))].filter((m) => m !== n && choosable(net[m]!));
      const classes = graph.classes[at![0]!]!;
      forced.push({ boxes: boxesOf(classes), classes, around });
    }
    return forced;
  };
  /** Fewer blocks first: a witness its walks alone force is the best. */
  const byBlocks = (a: { blocks: number[] }, b: { blocks: number[] }) => a.blocks.length - b.blocks.length;
  /**
   * Why one rule is too few at `n` in the model (`stops`, `blocked` its blocks): an isolation an ALLOW rule passing
   * two reachabilities would let through, and isolations a DENY rule would stop a reachability with; or undefined.
   */
  const separated = (n: number, stops: (m: number) => boolean, blocked: number[]): Separation | undefined => {
    const reach = passingAt(n, blocked);
    if (reach.length < 2) return undefined;
    const forced = forcedAt(n, stops);
    if (forced.length === 0) return undefined;
    // Pairs of reachabilities, fewest blocks first; an ALLOW rule holds a packet of each.
    const pairs: { blocks: number[]; combos: [Box, Box][] }[] = [];
    for (let x = 0; x < reach.length; x++)
      for (let y = x + 1; y < reach.length; y++) {
        const combos = reach[x]!.boxes.flatMap((a) => reach[y]!.boxes.map((b) => [a, b] as [Box, Box]));
        const blocks = [...new Set([...reach[x]!.blocks, ...reach[y]!.blocks])];
        if (combos.length <= SEPARATION_BOXES) pairs.push({ blocks, combos });
      }
    pairs.sort(byBlocks);
    // Of the isolations such a rule would let through, the one leaving the clause fewest ways out (Zoo EliBackbone
    // plain: its relaxation converged at 4 rules on the first one found, at 5 on this).
    let allow: { isolation: Forced; blocks: number[] } | undefined;
    const ways = (w: { isolation: Forced; blocks: number[] }) => 2 * w.isolation.around.length + w.blocks.length;
    for (const { blocks, combos } of pairs)
      for (const isolation of forced) {
        if (allow && ways({ isolation, blocks }) >= ways(allow)) continue;
        if (isolation.boxes.some((e) => combos.every(([a, b]) => hullsMeet(a, b, e)))) allow = { isolation, blocks };
      }
    if (!allow) return undefined;
    // A DENY rule holds all of them: the reachability it stops with fewest blocks, and as few of them as still do.
    const fewestBlocks = [...reach].sort(byBlocks);
    const stopped = (ds: Forced[]) => {
      if (ds.length === 0) return undefined;
      const dropped = held(ds.flatMap((d) => d.boxes));
      return fewestBlocks.find((p) => p.boxes.every((b) => contains(dropped, b)));
    };
    const deny = stopped(forced);
    if (!deny) return undefined;
    let kept = forced;
    for (const d of forced) {
      const fewer = kept.filter((e) => e !== d);
      if (stopped(fewer) === deny) kept = fewer;
    }
    return { isolations: [allow.isolation, ...kept], blocks: [...new Set([...allow.blocks, ...deny.blocks])] };
  };
  /** Whether every walk of some reachability crosses `n`: it is never a block. */
  const crossed = (n: number) => throughAt(n).length > 0;
  const refined = refinedWithin(model);
  const fine = (classes: number[]) => [...new Set(classes.flatMap(refined))].sort((a, b) => a.id - b.id);
  /**
   * What the relaxation's rounds ask again and again, worked out once: each firewall's candidates by what it must
   * drop and may pass, and each count by what the firewalls must do.
   */
  const offers = new Map<string, FirewallCandidates | undefined>();
  const counts = new Map<string, number | undefined>();
  const once = <T>(known: Map<string, T>, key: string, make: () => T): T =>
    known.has(key) ? known.get(key)! : known.set(key, make()).get(key)!;
  /** The counts' own share of the pool (COUNT_SHARE), set aside at the first; what they spend is charged to it too. */
  let counting: WorkPool | undefined;
  const counted = <T>(count: (s: Spend) => T): T => {
    counting ??= new WorkPool(spend.work.left / COUNT_SHARE);
    const before = counting.left;
    const out = count({ work: counting, abortAt: spend.abortAt });
    spend.work.spend(before - counting.left);
    return out;
  };
  /**
   * Where the model's partial firewalls (`partials`; `stops`, `blocked` its blocks) need more rules in all than it
   * gives them (`has`): each isolation the model stops at one of them alone is dropped there, and each reachability
   * whose every walk past the blocks crosses one of them passes a class of its at one, and at each that every such
   * walk crosses (where a walk crosses two, at both: this asks less). Firewalls that a reachability may pass by are
   * counted together (fewestTogether), up to SEPARATION_REACHABILITIES reachabilities.
   */
  const together = (
    partials: number[],
    stops: (m: number) => boolean,
    blocked: number[],
    has: (n: number) => number,
  ) => {
    const forcedThrough: { r: number; options: number[]; must: number[]; blocks: number[] }[] = [];
    for (const r of reachabilities) {
      const graph = walks.get(r)!;
      if (spend.work.spent) return [];
      if (walkPast(graph, new Set([...blocked, ...partials])) || !walkPast(graph, new Set(blocked))) continue;
      const options = partials.filter((n) => graph.node.includes(n));
      const must = options.filter((n) => !walkPast(graph, new Set([...blocked, n])));
      // As few of the blocks as still leave it no walk but through the partial firewalls, and through each of `must`.
      const cut = new Set(blocked);
      const forcing = () =>
        !walkPast(graph, new Set([...cut, ...partials])) && must.every((n) => !walkPast(graph, new Set([...cut, n])));
      for (const m of blocked) {
        cut.delete(m);
        if (spend.work.spent || !forcing()) cut.add(m);
      }
      forcedThrough.push({ r, options, must, blocks: [...cut] });
    }
    const ids = (cs: PacketClass[]) => cs.map((c) => c.id).join(',');
    // Firewalls joined by a reachability that may pass at either (union-find, smallest node first).
    const root = new Map(partials.map((n) => [n, n]));
    const find = (n: number): number => (root.get(n) === n ? n : find(root.get(n)!));
    for (const { options } of forcedThrough) for (const n of options.slice(1)) root.set(find(n), find(options[0]!));
    const found: (Separation & { nodes: number[]; rules: number })[] = [];
    for (const head of partials.filter((n) => find(n) === n)) {
      const nodes = partials.filter((n) => find(n) === head);
      const reach = forcedThrough.filter((p) => nodes.includes(p.options[0]!)).slice(0, SEPARATION_REACHABILITIES);
      const forced = nodes.map((n) => forcedAt(n, stops));
      if (reach.length === 0 || forced.every((f) => f.length === 0) || spend.work.spent || counting?.spent) continue;
      const at: CountedAt[] = [];
      let key = '';
      for (const [k, n] of nodes.entries()) {
        const drops = fine(forced[k]!.flatMap((d) => d.classes));
        const here = reach.filter((p) => p.options.includes(n));
        const passes = new Map(here.map((p) => [p.r, fine(classesAt(walks.get(p.r)!, n))] as const));
        const must = new Set(here.filter((p) => p.must.includes(n)).map((p) => p.r));
        const passable = [...new Set([...passes.values()].flat())].sort((a, b) => a.id - b.id);
        const kind = `${ids(drops)}|${ids(passable)}`;
        const candidates = once(offers, kind, () => counted((s) => firewallCandidates(drops, passable, s)));
        if (!candidates) break;
        at.push({ candidates, passes, must });
        key += ` ${kind}:${[...passes].map(([r, g]) => `${must.has(r) ? '!' : ''}${r}=${ids(g)}`)}`;
      }
      if (at.length < nodes.length) continue;
      const rules = once(counts, key, () => counted((s) => fewestTogether(at, s)));
      if (rules === undefined || rules <= nodes.reduce((sum, n) => sum + has(n), 0)) continue;
      const blocks = [...new Set(reach.flatMap((p) => p.blocks))];
      found.push({ nodes, rules, isolations: forced.flat(), blocks });
    }
    return found;
  };
  return { separated, crossed, together };
}

/**
 * Lower bounds on the new firewalls and the rules of any answer meeting every requirement of `members` (see the
 * head of this file).
 */
export function structuralBound(
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  members: number[],
  spend: Spend,
  relaxation?: FirewallRelaxation,
): StructuralBound {
  const finders = (isolation: boolean) =>
    members.filter((r) => (reqs[r]!.kind === 'isolation') === isolation).map((r) => walkFinder(net, model, r, spend));
  const [isolations, reachabilities] = [finders(true), finders(false)];
  if (isolations.length === 0)
    return { firewalls: 0, rules: () => 0, answer: () => undefined, answerOn: () => undefined };
  /** Variables numbered as nodes come, `per` for each. */
  const numbering = (per: number) => {
    const first = new Map<number, number>();
    return (n: number) => first.get(n) ?? first.set(n, first.size * per + 1).get(n)!;
  };
  // A clause of what an isolation's walk needs (a walk nothing can stop asks nothing: its requirement cannot hold).
  const needs = (walk: number[] | undefined, lits: (n: number) => number[]) =>
    walk === undefined ? [] : [walk.flatMap(lits)].filter((c) => c.length > 0);

  // Firewalls: u(n) for each new firewall; a walk through another choosable node is stopped there at no cost. Where
  // the linear relaxation was solved (a large component), its bound and places stand instead.
  const used = numbering(1);
  const costly = (n: number) => net[n]!.costly;
  const hitting: ReturnType<typeof lazyOptimum> = relaxation
    ? { bound: relaxation.firewalls }
    : lazyOptimum(
        net.length,
        net.filter((n) => costly(n.index)).map((n) => -used(n.index)),
        [],
        (holds) =>
          isolations.flatMap((find) => {
            const walk = find((n) => !costly(n) || holds(used(n)));
            return needs(walk, (n) => (costly(n) ? [used(n)] : []));
          }),
        spend,
      );
  // Once the work is spent the finders find no walk: the model then may miss some, and is no answer's help.
  const chosen = spend.work.spent ? undefined : hitting.holds;

  // Rules: per firewall whose rules we write, b(n) it drops everything (no rule needed) or p(n) it drops some and
  // passes some (a rule, at least); a deployed one drops what it likes here. Reachabilities keep a walk past b.
  // l(n, j) it has j rules at least (2 <= j <= RULE_LEVELS), which implies p(n): a second where one rule cannot
  // part what it must (rulesNeeded, `separated`), more where the partial firewalls together need them (`together`).
  const synthesised = (n: number) => written(net[n]!);
  const nodes = net.filter((n) => synthesised(n.index)).map((n) => n.index);
  const separation = rulesNeeded(net, reqs, model, members, spend);
  const slot = new Map(nodes.map((n, k) => [n, k]));
  /**
   * The relaxation with levels up to `top` (2, or RULE_LEVELS where the partial firewalls are counted together):
   * b(n), p(n) and l(n, j) it has j rules at least (2 <= j <= top), which implies l(n, j - 1) and p(n).
   */
  const relaxed = (most: number | undefined, solving: Spend, top: number) => {
    const block = (n: number) => slot.get(n)! * (top + 1) + 1;
    const part = (n: number) => block(n) + 1;
    const level = (n: number, j: number) => block(n) + j;
    const levels = [...Array(top - 1).keys()].map((k) => k + 2);
    const atMost =
      most === undefined ? undefined : fewFirewalls(nodes.filter(costly), block, part, (top + 1) * nodes.length, most);
    const found = lazyOptimum(
      atMost?.variables ?? (top + 1) * nodes.length,
      [...nodes.map((n) => -part(n)), ...nodes.flatMap((n) => levels.map((j) => -level(n, j)))],
      nodes.map(block),
      (holds) => {
        const stops = (n: number) => !synthesised(n) || holds(block(n)) || holds(part(n));
        const cut = isolations.flatMap((find) =>
          needs(find(stops), (n) => (synthesised(n) ? [block(n), part(n)] : [])),
        );
        // A reachability the blocks cut off: not all of a least set of them that still cuts it.
        const blocked = nodes.filter((n) => holds(block(n)));
        // Once the work is spent a finder finds nothing, which here would claim a cut: no clause is asked then.
        const kept = reachabilities.flatMap((find) => {
          const cutting = new Set(blocked);
          if (spend.work.spent || find((m) => cutting.has(m))) return [];
          for (const n of blocked) {
            cutting.delete(n);
            if (spend.work.spent) return [];
            if (find((m) => cutting.has(m))) cutting.add(n);
          }
          return [[...cutting].map((n) => -block(n))];
        });
        if (cut.length > 0 || kept.length > 0) return [...cut, ...kept];
        // A model meeting every walk found: where a partial firewall needs a second rule, that clause, unless an
        // isolation's walk is stopped elsewhere or a block is not one (the isolations' walks avoid every block of
        // the model: no block is in the clause both ways).
        const unless = (why: Separation) => {
          const around = new Set(why.isolations.flatMap((f) => f.around).filter(synthesised));
          return [...[...around].flatMap((m) => [block(m), part(m)]), ...why.blocks.map((m) => -block(m))];
        };
        const seconds = nodes.flatMap((n) => {
          const why = holds(part(n)) && !holds(level(n, 2)) ? separation.separated(n, stops, blocked) : undefined;
          return why ? [[level(n, 2), ...unless(why)]] : [];
        });
        if (seconds.length > 0 || top === 2) return seconds;
        // Then where partial firewalls need more rules in all than the model gives them: some has more than in the
        // model, the first that can take them as many more as the count asks.
        const rulesOf = (n: number) => levels.filter((j) => holds(level(n, j))).length + 1;
        const partials = nodes.filter((n) => holds(part(n)));
        return separation.together(partials, stops, blocked, rulesOf).flatMap((why) => {
          if (why.nodes.some((n) => rulesOf(n) === top)) return [];
          let slack = why.rules - 1 - why.nodes.reduce((sum, n) => sum + rulesOf(n), 0);
          const at = why.nodes.map((n) => {
            const more = Math.max(0, Math.min(slack, top - 1 - rulesOf(n)));
            slack -= more;
            return level(n, rulesOf(n) + more + 1);
          });
          return [[...at, ...unless(why)]];
        });
      },
      solving,
      [
        ...(atMost?.clauses ?? []),
        ...nodes.map((n) => [-level(n, 2), part(n)]),
        ...nodes.flatMap((n) => levels.slice(1).map((j) => [-level(n, j), level(n, j - 1)])),
        // Known before any round (the lazy solve would find each as a reachability's cut, a round at a time).
        ...nodes.filter(separation.crossed).map((n) => [-block(n)]),
      ],
      // Without it each round found the cores of the rounds before again, by solving (lazyOptimum, `replay`).
      true,
    );
    return { ...found, block, part };
  };
  // Over every answer first; then over those of at most `most` firewalls, its solver given at most a half of the
  // pool (FEW_FIREWALLS_SHARE) of what is left: the counter can make cores costly (Garr 2010 spent the whole pool on
  // it and proved 0).
  // Each solved once (the answer and the report both ask): the bound and, where it converged, its optimum's model.
  const solved = new Map<string, ReturnType<typeof relaxed>>();
  const solve = (most?: number, top = 2) => {
    const key = `${most} ${top}`;
    const known = solved.get(key);
    if (known) return known;
    let found: ReturnType<typeof relaxed>;
    if (most === undefined || spend.work.spent) found = relaxed(undefined, spend, top);
    else {
      const given = Math.min(spend.work.size / FEW_FIREWALLS_SHARE, spend.work.left);
      const few = new WorkPool(given);
      found = relaxed(most, { work: few, abortAt: spend.abortAt }, top);
      spend.work.spend(given - few.left);
    }
    solved.set(key, found);
    return found;
  };
  const rules = (most?: number, together = false) => {
    const bound = Math.max(solve(undefined).bound, most === undefined ? 0 : solve(most).bound);
    return together && most !== undefined ? Math.max(bound, solve(most, RULE_LEVELS).bound) : bound;
  };
  /** The relaxation's optimum over answers of at most `most` firewalls made an answer (answerOf), if it is one. */
  const answer = (most: number) => {
    solve(undefined);
    const { holds, block, part } = solve(most);
    if (!holds) return undefined;
    const parts = new Set(nodes.filter((n) => holds(part(n))));
    const blocks = new Set(nodes.filter((n) => !parts.has(n) && holds(block(n))));
    return answerOf(net, reqs, model, members, blocks, parts);
  };
  const firewalls = hitting.bound;
  const places = relaxation
    ? relaxation.places
    : chosen && net.filter((n) => costly(n.index) && chosen(used(n.index))).map((n) => n.index);
  /** An answer on the given new firewalls, each dropping what isolations bring and passing the fewest it can. */
  const answerOn = (firewalls: ReadonlySet<number>) =>
    answerOf(net, reqs, model, members, new Set(), new Set(nodes.filter((n) => firewalls.has(n))));
  return { firewalls, rules, answer, answerOn, ...(places ? { places } : {}) };
}

/**
 * Ticks our cores may spend on a large component's least hitting set before the LP takes over: Zoo Garr 2010 and
 * Geant 2012 (past the encoding limit) converge within them, their exact optimum a firmer bound and fewer places than
 * the LP's rounding (15 against 16 firewalls); wan-100 and larger do not.
 */
const HITTING_TRY_WORK = 1_500_000;

/** Whether our cores find the least hitting set of every isolation's walks within HITTING_TRY_WORK. */
function exactHittingSet(net: NetNode[], reqs: Requirement[], model: FlowModel, members: number[], abortAt: number) {
  const trial: Spend = { work: new WorkPool(HITTING_TRY_WORK), abortAt };
  const finders = members.filter((r) => reqs[r]!.kind === 'isolation').map((r) => walkFinder(net, model, r, trial));
  const costly = (n: number) => net[n]!.costly;
  const found = lazyOptimum(
    net.length,
    net.filter((n) => n.costly).map((n) => -(n.index + 1)),
    [],
    (holds) =>
      finders.flatMap((find) => {
        const walk = find((n) => !costly(n) || holds(n + 1));
        const clause = walk?.filter(costly).map((n) => n + 1);
        return clause && clause.length > 0 ? [clause] : [];
      }),
    trial,
  );
  return !trial.work.spent && found.holds !== undefined;
}

/** Rounds of firewallRelaxation's row generation at most: each an LP solve and a separation over every isolation. */
const LP_ROUNDS = 3;
/** Simplex iterations of one LP solve at most. */
const LP_ITERATIONS = 500_000;
/** Ticks (states looked at) that leaving out places the rounding took needlessly may spend. */
const PRUNE_WORK = 1_000_000;
/** Row visits and states looked at by the local search over the places (hitting.ts) and its checks. */
const SEARCH_WORK = 6_000_000;
/** LP values at most this scaled, so that cheapestWalk's one per state only breaks ties between walks. */
const LP_SCALE = 1e6;

/**
 * A proven bound from an LP's row duals, whatever its float error: the duals (below 0 read as 0) weigh the walks,
 * scaled so that no node's walks weigh more than 1 in all, a packing whose weight no hitting set can go below (each
 * node of it meets walks of weight 1 at most, and every walk is met). Rounded up past the sums' own error.
 */
function packing(rows: number[][], duals: number[]): number {
  const load = new Map<number, number>();
  let total = 0;
  rows.forEach((row, i) => {
    const y = Math.max(0, duals[i] ?? 0);
    total += y;
    for (const n of row) load.set(n, (load.get(n) ?? 0) + y);
  });
  const most = Math.max(1, ...load.values());
  return Math.max(0, Math.ceil(total / most - 1e-6));
}

/**
 * The firewalls' relaxation of a large component (one past the encoding limit, where the cores of lazyOptimum spend
 * every tick of BOUND_WORK on a first round of hundreds of walks: wan-750 54 of 264) solved as a linear program by
 * HiGHS, its rows (isolation walks) generated lazily: the LP over the walks found so far, then for each isolation
 * its cheapest walk with the LP values as costs (a free dropper impassable); a walk whose values sum below 1 is a
 * violated row, added; until none is, LP_ROUNDS or the work of `spend` run out. The LP over any subset of the rows
 * is a relaxation of the least hitting set over every walk, so each LP optimum bounds it (read from its duals:
 * packing). The places: the LP's values of at least a half, then while some isolation has a walk they miss, a greedy
 * cover of those walks, then each place left out where every isolation stays cut (PRUNE_WORK); no places when the
 * work ran out first. Undefined (the component bounded as any other) where our cores find the least hitting set
 * within HITTING_TRY_WORK, unless `force`.
 */
export async function firewallRelaxation(
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  members: number[],
  spend: Spend,
  force = false,
): Promise<FirewallRelaxation | undefined> {
  if (!force && exactHittingSet(net, reqs, model, members, spend.abortAt)) return undefined;
  // Each isolation's states: the new firewall there (-1: none), or stopped at no cost (a free or given dropper).
  const isolations: { g: Walks; place: Int32Array; free: Uint8Array }[] = [];
  for (const r of members) {
    if (reqs[r]!.kind !== 'isolation') continue;
    const g = walksOf(model, reqs, r);
    // An isolation whose walks are not modelled adds no row: still a relaxation.
    if (!g) continue;
    const place = new Int32Array(g.node.length).fill(-1);
    const free = new Uint8Array(g.node.length);
    g.node.forEach((n, k) => {
      if (choosable(net[n]!)) {
        if (net[n]!.costly) place[k] = n;
        else free[k] = 1;
      } else if (givenDrop(net, model, n, g.classes[k]!)) free[k] = 1;
    });
    isolations.push({ g, place, free });
  }
  /** The new firewalls on an isolation's cheapest walk under `cost` per new firewall (Infinity: stopped there). */
  const cheapest = (iso: (typeof isolations)[number], cost: Float64Array) => {
    spend.work.spend(iso.g.node.length);
    const { free, place } = iso;
    const run = cheapestWalk(iso.g, (k) => (free[k] ? Infinity : place[k]! < 0 ? 0 : cost[place[k]!]!));
    if (!run) return undefined;
    return [...new Set(run.map((k) => iso.place[k]!).filter((n) => n >= 0))].sort((a, b) => a - b);
  };
  const rows: number[][] = [];
  const listed = new Set<string>();
  let values = new Map<number, number>();
  let bound = 0;
  for (let round = 0; round < LP_ROUNDS && !spend.work.spent; round++) {
    checkAbort(spend.abortAt);
    const before = rows.length;
    // Each node's cost on a walk, looked up once here rather than in the map for every state walked.
    const price = new Float64Array(net.length);
    for (const [n, v] of values) price[n] = LP_SCALE * v;
    for (const iso of isolations) {
      if (spend.work.spent) break;
      const walk = cheapest(iso, price);
      // No walk: every one is stopped for free. No new firewall: the isolation cannot hold (not bounded here).
      if (!walk || walk.length === 0) continue;
      if (walk.reduce((s, n) => s + (values.get(n) ?? 0), 0) >= 1 - 1e-6) continue;
      const key = walk.join(' ');
      if (listed.has(key)) continue;
      listed.add(key);
      rows.push(walk);
    }
    if (rows.length === before) break;
    const lp = await hittingSetLp(rows, { iterations: LP_ITERATIONS });
    if (lp.status !== 'optimal') break;
    bound = Math.max(bound, packing(rows, lp.duals));
    values = lp.values;
  }
  if (rows.length === 0) return { firewalls: 0, places: [] };
  // The places: those the LP takes whole, then while some isolation has a walk they miss, a greedy cover of those
  // walks (the place on most of them, then of highest LP value, then the lowest).
  const value = (n: number) => values.get(n) ?? 0;
  const chosen = new Set([...values].filter(([, v]) => v >= 0.5).map(([n]) => n));
  /** An isolation's walk that no chosen place nor free dropper stops (its states), if any. */
  const missing = (iso: (typeof isolations)[number]) =>
    stateWalk(iso.g, (k) => iso.free[k] === 1 || chosen.has(iso.place[k]!));
  const seen = [...rows];
  for (;;) {
    const missed: number[][] = [];
    for (const iso of isolations) {
      if (spend.work.spent) return { firewalls: bound };
      spend.work.spend(iso.g.node.length);
      const walk = missing(iso)
        ?.map((k) => iso.place[k]!)
        .filter((n) => n >= 0);
      if (walk && walk.length > 0) missed.push(walk);
    }
    if (missed.length === 0) break;
    seen.push(...missed);
    let open = missed;
    while (open.length > 0) {
      const count = new Map<number, number>();
      for (const walk of open) for (const n of new Set(walk)) count.set(n, (count.get(n) ?? 0) + 1);
      let best = -1;
      for (const [n, c] of count) {
        const b = count.get(best) ?? 0;
        if (best < 0 || c > b || (c === b && (value(n) > value(best) || (value(n) === value(best) && n < best))))
          best = n;
      }
      chosen.add(best);
      open = open.filter((walk) => !walk.includes(best));
    }
  }
  // Then a local search over the walks seen (the LP's rows and those missed; hitting.ts), each move checked against
  // the isolations through the places it takes out, whose walks it misses are learnt as rows.
  const searching = new WorkPool(SEARCH_WORK);
  // Each isolation's places where its walks stop now (a cut), and the isolations stopped at each place: a move taking
  // places out need check only the isolations stopped there (every other keeps its cut).
  const stoppedAt = new Map<number, Set<number>>();
  const stops: number[][] = [];
  /** An isolation's walk's places that `among` misses, or where it stops every walk. */
  const cutBy = (i: number, among: ReadonlySet<number>) => {
    const iso = isolations[i]!;
    searching.spend(iso.g.node.length);
    const at = new Set<number>();
    const run = stateWalk(iso.g, (k) => {
      if (iso.free[k] === 1) return true;
      if (!among.has(iso.place[k]!)) return false;
      at.add(iso.place[k]!);
      return true;
    });
    return run ? { walk: run.map((k) => iso.place[k]!).filter((n) => n >= 0) } : { at: [...at].sort((a, b) => a - b) };
  };
  const stopAt = (i: number, at: number[]) => {
    for (const n of stops[i] ?? []) stoppedAt.get(n)?.delete(i);
    stops[i] = at;
    for (const n of at) (stoppedAt.get(n) ?? stoppedAt.set(n, new Set()).get(n)!).add(i);
  };
  isolations.forEach((_, i) => stopAt(i, cutBy(i, chosen).at ?? []));
  const failed: number[] = [];
  let failures = 0;
  const missedAfter = (among: ReadonlySet<number>, left: readonly number[]) => {
    const missed: number[][] = [];
    const cuts: [number, number[]][] = [];
    // The isolations that failed a check last first, and the first miss ends the check: most moves fail.
    const order = [...new Set(left.flatMap((n) => [...(stoppedAt.get(n) ?? [])]))].sort(
      (a, b) => (failed[b] ?? 0) - (failed[a] ?? 0) || a - b,
    );
    for (const i of order) {
      const cut = cutBy(i, among);
      if (cut.walk && cut.walk.length > 0) {
        missed.push(cut.walk);
        failed[i] = ++failures;
        break;
      }
      if (cut.at) cuts.push([i, cut.at]);
    }
    // Kept: the isolations' new stops hold.
    if (missed.length === 0) for (const [i, at] of cuts) stopAt(i, at);
    return missed;
  };
  const prefer = (a: number, b: number) => value(b) - value(a) || a - b;
  const better = improveHittingSet(seen, chosen, searching, prefer, missedAfter);
  chosen.clear();
  for (const n of better) chosen.add(n);
  // Then each place in turn, the lowest LP value first, left out where every isolation through it stays cut (the
  // rounding takes more than the fewest: 4 where 2 do on small networks), within PRUNE_WORK of its own.
  const through = new Map<number, number[]>();
  isolations.forEach((iso, i) => {
    for (const n of new Set(iso.place)) if (n >= 0) (through.get(n) ?? through.set(n, []).get(n)!).push(i);
  });
  const pruning = new WorkPool(PRUNE_WORK);
  const order = [...chosen].sort((a, b) => value(a) - value(b) || b - a);
  for (const n of order) {
    chosen.delete(n);
    const cut = (through.get(n) ?? []).every((i) => {
      const iso = isolations[i]!;
      pruning.spend(iso.g.node.length);
      return !pruning.spent && !missing(iso);
    });
    if (!cut) chosen.add(n);
    if (pruning.spent) break;
  }
  return { firewalls: bound, places: [...chosen].sort((a, b) => a - b) };
}

/** Steps (vertices and candidates looked at) the clique search of colourBound may take in one component. */
const CLIQUE_WORK = 200_000;

/**
 * A lower bound on the rules of any answer meeting the requirements of `members`, from chains of reachabilities
 * joining isolations' ends (combinatorial; docs/ARCHITECTURE.md), else 0. Take any answer, and for each reachability
 * a simple path its traffic takes (some packet of it passes every node on it). Reachabilities sharing an end are one
 * group (a union-find over their ends, links being two-way); the union U of a group's paths is connected. An
 * isolation from a to b, both ends in one group, has a simple path from a to b within U, and its traffic must be
 * dropped there: for every such path, by a node of U. A node of U passes some packet (the path it lies on), so one
 * that drops the isolation's both drops and passes: a firewall holding a rule at least (without one it does the same
 * to everything). Call those the partial firewalls P. Removing P from U leaves the ends of each such isolation apart,
 * so the parts of U - P colour the group's isolation graph (ends as vertices, isolations as edges) properly: at least
 * chi parts, chi its chromatic number. Removing a node of d neighbours splits one part into d at most, so
 * 1 + |P| (d - 1) >= chi, d the most neighbours of a firewall on the group's ways: |P| >= (chi - 1) / (d - 1),
 * and an answer has at least one rule per partial firewall. chi is bounded below by the largest clique found and by 3
 * where the graph has an odd cycle; this bound is the largest over groups (groups' U may share partial firewalls, so
 * they are not summed). Each such isolation's partial firewall is also on its corridor among the firewalls its
 * group's paths may cross (their corridors'), so isolations whose such firewalls are disjoint, whatever their groups,
 * need one each: a greedy packing (fewest firewalls first). The answer is the larger of the two. It counts over
 * every answer, whatever its firewalls, so it bounds the lexicographic optimum too. Where traffic on a requirement's
 * way could be stopped or changed by something else the argument fails for it, and it is left out (the argument over
 * the others holds for every answer meeting them all): a NAT on the way, a firewall that is not a new one whose
 * rules we write (given rules, deployed, free, least privilege), an end that is not an end host, a path the input
 * fixes, or a node on an isolation's way that its traffic addresses (delivered there). An end host with more than
 * one neighbour would have to be transited to join two paths (end hosts never are), so it is a separate vertex per
 * requirement (a leaf of U), joining nothing.
 */
export function blockConflict(net: NetNode[], reqs: Requirement[], members: number[]): number {
  const plain = (n: number) => {
    const x = net[n]!;
    if (x.role === 'nat') return false;
    return !isDecision(x) || (x.configurable && x.costly && !x.deployed && !x.leastPrivilege && !x.rules);
  };
  // The argument over some of the requirements holds for every answer meeting them all: those it can read.
  const readable = (r: number) => {
    const q = reqs[r]!;
    if (q.fixed || net[q.src]!.role !== 'endhost' || net[q.dst]!.role !== 'endhost') return false;
    if (!intermediates(q).every(plain)) return false;
    // An isolation's traffic addressed to a node on its way is delivered there, not at its end.
    return q.kind !== 'isolation' || addressedOnWay(net, q, [...intermediates(q)]) === undefined;
  };
  const used = members.filter(readable);
  // Union-find over the ends of reachabilities; an end that cannot be a junction is one element per requirement.
  const parent = new Map<string, string>();
  const find = (k: string): string => {
    let root = k;
    while (parent.has(root) && parent.get(root) !== root) root = parent.get(root)!;
    parent.set(k, root);
    return root;
  };
  const copies = new Map<number, string[]>();
  const key = (n: number, r: number) => {
    const k = net[n]!.next.length === 1 ? `${n}` : `${n}:${r}`;
    const list = copies.get(n) ?? copies.set(n, []).get(n)!;
    if (!list.includes(k)) list.push(k);
    return k;
  };
  for (const r of used) {
    const q = reqs[r]!;
    if (q.kind === 'isolation') continue;
    const [a, b] = [find(key(q.src, r)), find(key(q.dst, r))];
    if (a !== b) parent.set(a, b);
  }
  // Each group's isolation graph (the ends' elements, joined by each isolation whose ends are both in the group).
  const graphs = new Map<string, Map<string, Set<string>>>();
  const join = (g: Map<string, Set<string>>, a: string, b: string) => (g.get(a) ?? g.set(a, new Set()).get(a)!).add(b);
  const chained: [number, string[]][] = [];
  for (const r of used) {
    const q = reqs[r]!;
    if (q.kind !== 'isolation') continue;
    const roots = new Set<string>();
    for (const a of copies.get(q.src) ?? []) {
      for (const b of copies.get(q.dst) ?? []) {
        const root = find(a);
        if (a === b || root !== find(b)) continue;
        roots.add(root);
        const g = graphs.get(root) ?? graphs.set(root, new Map()).get(root)!;
        join(g, a, b);
        join(g, b, a);
      }
    }
    if (roots.size > 0) chained.push([r, [...roots]]);
  }
  if (graphs.size === 0) return 0;
  // For each group with an isolation inside: the firewalls its paths may cross (its reachabilities' corridors'), and
  // d, the most neighbours of one (links read both ways).
  const neighbours = degreesOf(net);
  const crossed = new Map<string, Uint8Array>();
  const most = new Map<string, number>();
  for (const r of used) {
    const q = reqs[r]!;
    if (q.kind === 'isolation') continue;
    const root = find(key(q.src, r));
    if (!graphs.has(root)) continue;
    const marks = crossed.get(root) ?? crossed.set(root, new Uint8Array(net.length)).get(root)!;
    for (const n of intermediates(q)) {
      if (!isDecision(net[n]!)) continue;
      marks[n] = 1;
      most.set(root, Math.max(most.get(root) ?? 0, neighbours[n]!));
    }
  }
  // A firewall of one neighbour parts nothing: no answer then meets a group with an isolation inside (never asked).
  let partial = 0;
  for (const root of [...graphs.keys()].sort()) {
    const d = most.get(root) ?? 0;
    if (d >= 2) partial = Math.max(partial, Math.ceil((colourBound(graphs.get(root)!) - 1) / (d - 1)));
  }
  // Each isolation's places: the firewalls of its corridor that its group's paths may cross (none: it cannot hold,
  // never asked). Those whose places are disjoint need a partial firewall each: a greedy packing, the fewest first.
  const places = chained
    .map(([r, roots]) => intermediates(reqs[r]!).filter((n) => roots.some((root) => crossed.get(root)?.[n] === 1)))
    .filter((at) => at.length > 0);
  const taken = new Set<number>();
  let packed = 0;
  const order = places.map((_, i) => i).sort((i, j) => places[i]!.length - places[j]!.length || i - j);
  for (const i of order) {
    if (places[i]!.some((n) => taken.has(n))) continue;
    packed++;
    for (const n of places[i]!) taken.add(n);
  }
  return Math.max(packed, partial);
}

/** Each network's nodes' neighbour counts, links read both ways: worked out once (asked once per component). */
const degrees = new WeakMap<NetNode[], Int32Array>();

function degreesOf(net: NetNode[]): Int32Array {
  const known = degrees.get(net);
  if (known) return known;
  const neighbours = net.map((x) => new Set(x.next));
  for (const x of net) for (const m of x.next) neighbours[m]!.add(x.index);
  const counts = Int32Array.from(neighbours, (n) => n.size);
  degrees.set(net, counts);
  return counts;
}

/**
 * A lower bound on the chromatic number of a graph with an edge (each vertex's neighbours): the largest of 2, 3
 * where breadth first search finds an odd cycle, and the largest clique a branch and bound (vertices and candidates
 * in sorted order, so the same on every run) finds within CLIQUE_WORK steps.
 */
function colourBound(graph: Map<string, Set<string>>): number {
  const vertices = [...graph.keys()].sort();
  let best = 2;
  const side = new Map<string, number>();
  for (const v of vertices) {
    if (side.has(v)) continue;
    side.set(v, 0);
    const queue = [v];
    for (let h = 0; h < queue.length && best < 3; h++) {
      const u = queue[h]!;
      for (const w of graph.get(u)!) {
        if (!side.has(w)) {
          side.set(w, 1 - side.get(u)!);
          queue.push(w);
        } else if (side.get(w) === side.get(u)) best = 3;
      }
    }
  }
  // Each clique is grown from its first vertex in sorted order, among that vertex's later neighbours (few on a WAN).
  let steps = 0;
  const grow = (size: number, candidates: string[]) => {
    steps += 1 + candidates.length;
    if (steps > CLIQUE_WORK) return;
    best = Math.max(best, size);
    for (let i = 0; i < candidates.length && size + candidates.length - i > best; i++) {
      const near = graph.get(candidates[i]!)!;
      grow(
        size + 1,
        candidates.slice(i + 1).filter((c) => near.has(c)),
      );
    }
  };
  for (const v of vertices) grow(1, [...graph.get(v)!].filter((w) => w > v).sort());
  return best;
}

/**
 * What answerOf needs of a component's state graphs whatever the firewalls: the graphs, the classes entering each new
 * firewall's place, and the given firewalls met; undefined where answerOf has no answer (a requirement listed by
 * paths, a node it cannot decide). Worked out once per component and model: on wan-750 its loop, over a million
 * states, was the line of answerOf most sampled, on every call.
 */
function decisionsMet(
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  members: number[],
): DecisionsMet | undefined {
  const known = decisionsKnown.get(members);
  if (known && known.model === model) return known.met;
  const find = (): DecisionsMet | undefined => {
    const graphs = members.map((r) => walksOf(model, reqs, r));
    if (graphs.some((g) => g === undefined)) return undefined;
    const entering = new Map<number, Set<number>>();
    const given = new Set<number>();
    for (const g of graphs as Walks[]) {
      for (let k = 0; k < g.node.length; k++) {
        const n = g.node[k]!;
        const x = net[n]!;
        if (!isDecision(x)) continue;
        if (x.deployed || (x.configurable && !x.costly) || (!x.configurable && x.optional)) return undefined;
        if (!x.configurable) given.add(n);
        else for (const c of g.classes[k]!) (entering.get(n) ?? entering.set(n, new Set()).get(n)!).add(c);
      }
    }
    return { graphs: graphs as Walks[], entering, given };
  };
  const met = find();
  decisionsKnown.set(members, { model, met });
  return met;
}

interface DecisionsMet {
  graphs: Walks[];
  entering: ReadonlyMap<number, ReadonlySet<number>>;
  given: ReadonlySet<number>;
}

const decisionsKnown = new WeakMap<number[], { model: FlowModel; met: DecisionsMet | undefined }>();

/**
 * The rules' relaxation's optimum as an answer (issue 48: on a WAN it often needs far fewer rules than the fast
 * answer's cuts): each firewall of `blocks` drops everything entering it (default DENY, no rule), each reachability
 * keeps a shortest walk past them (its classes passed on it), and each firewall of `parts` drops every class an
 * isolation brings there and passes those walks' classes, under the default needing fewer exceptions. Undefined where
 * that is no answer: a requirement listed by paths, a node it cannot decide (a deployed firewall, a configured one
 * that is not new, an optional given one), a class both passed and dropped at one firewall, or a requirement that
 * does not hold as checked here over the same state graphs (an isolation stopped only where every class of a state
 * is dropped, a reachability passing only where none is), so an answer returned meets every requirement.
 */
function answerOf(
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  members: number[],
  blocks: ReadonlySet<number>,
  parts: ReadonlySet<number>,
): GreedyDecisions | undefined {
  const met = decisionsMet(net, reqs, model, members);
  if (!met) return undefined;
  const { graphs, entering } = met;
  const classCount = model.classes.length;
  const pair = (n: number, c: number) => n * classCount + c;
  const used = new Set(met.given);
  // Witnesses past the blocks, and what they pass.
  const blocked = (m: number) => blocks.has(m);
  const passed = new Set<number>();
  const opened = new Set<number>();
  const isolated = new Set<number>();
  for (const [i, r] of members.entries()) {
    const g = graphs[i]!;
    if (reqs[r]!.kind === 'isolation') {
      g.node.forEach((n, k) => {
        if (parts.has(n)) for (const c of g.classes[k]!) isolated.add(pair(n, c));
      });
      continue;
    }
    // Past the firewalls of `parts` as little as it can: through one that passes nothing yet costs most (it would
    // need a rule), then a class not yet passed there; one passing nothing stays a block (no rule).
    const cost = (k: number) => {
      const n = g.node[k]!;
      if (stopsAt(net, model, blocked, n, g.classes[k]!)) return Infinity;
      if (!parts.has(n)) return 0;
      if (!opened.has(n)) return 2 * WALK_STEP;
      return g.classes[k]!.every((c) => passed.has(pair(n, c))) ? 0 : WALK_STEP;
    };
    const run = cheapestWalk(g, cost);
    if (!run) return undefined;
    for (const k of run) {
      const n = g.node[k]!;
      if (parts.has(n)) opened.add(n);
      for (const c of g.classes[k]!) passed.add(pair(n, c));
    }
  }
  const drops = new Map<number, Map<number, boolean>>();
  const whitelist = new Map<number, boolean>();
  for (const n of [...blocks, ...parts].sort((a, b) => a - b)) {
    const classes = [...(entering.get(n) ?? [])].sort((a, b) => a - b);
    const given = net[n]!.defaultAction;
    const d = new Map<number, boolean>();
    if (blocks.has(n)) {
      for (const c of classes) d.set(c, true);
      whitelist.set(n, given !== 'ALLOW');
    } else {
      if (classes.some((c) => passed.has(pair(n, c)) && isolated.has(pair(n, c)))) return undefined;
      const passing = classes.filter((c) => passed.has(pair(n, c))).length;
      const dropping = classes.filter((c) => isolated.has(pair(n, c))).length;
      const deny = given === 'DENY' || (given === undefined && passing <= dropping);
      for (const c of classes) d.set(c, deny ? !passed.has(pair(n, c)) : isolated.has(pair(n, c)));
      whitelist.set(n, deny);
    }
    used.add(n);
    drops.set(n, d);
  }
  // Checked over the state graphs whatever the construction meant.
  const dropsAt = (n: number, c: number) =>
    used.has(n) && (drops.get(n)?.get(c) ?? (!net[n]!.configurable && firstMatchDrops(net[n]!, model.classes[c]!)));
  for (const [i, r] of members.entries()) {
    const g = graphs[i]!;
    const isolation = reqs[r]!.kind === 'isolation';
    // An isolation stops where every class of the state is dropped (and it has one), a reachability where any is:
    // asked in place, no array per state walked (wan-750 walks millions).
    const stops = (k: number) => {
      const [n, classes] = [g.node[k]!, g.classes[k]!];
      if (!isDecision(net[n]!)) return false;
      if (isolation) return classes.length > 0 && classes.every((c) => dropsAt(n, c));
      return classes.some((c) => dropsAt(n, c));
    };
    if ((stateWalk(g, stops) === undefined) !== isolation) return undefined;
  }
  return { used, drops, whitelist };
}

/**
 * Clauses that at most `most` of the new firewalls `nodes` drop anything (block or part), over variables after the
 * first `first`: one "used" variable per node and a sequential counter over them (Sinz 2005), nodes x most variables.
 */
function fewFirewalls(
  nodes: number[],
  block: (n: number) => Lit,
  part: (n: number) => Lit,
  first: number,
  most: number,
): { variables: number; clauses: Lit[][] } {
  let variables = first;
  const clauses: Lit[][] = [];
  const used = nodes.map((n) => {
    const u = ++variables;
    clauses.push([-block(n), u], [-part(n), u]);
    return u;
  });
  if (most === 0) return { variables, clauses: [...clauses, ...used.map((u) => [-u])] };
  // s[i][j]: at least j + 1 of the first i + 1 nodes are used.
  const s = used.map(() => Array.from({ length: most }, () => ++variables));
  used.forEach((u, i) => {
    clauses.push([-u, s[i]![0]!]);
    if (i === 0) {
      for (let j = 1; j < most; j++) clauses.push([-s[0]![j]!]);
      return;
    }
    for (let j = 0; j < most; j++) {
      clauses.push([-s[i - 1]![j]!, s[i]![j]!]);
      if (j > 0) clauses.push([-u, -s[i - 1]![j - 1]!, s[i]![j]!]);
    }
    clauses.push([-u, -s[i - 1]![most - 1]!]);
  });
  return { variables, clauses };
}
