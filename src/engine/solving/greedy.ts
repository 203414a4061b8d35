/**
 * A fast answer for a component whose optimum the solver cannot prove in time: every requirement holds, with few
 * new firewalls and few rules, but no proof that fewer would not do (the report then says optimal="false").
 *
 * 1. Each reachability requirement keeps one witness that no mandatory configured firewall drops: a flow of a listed
 *    path (complete reachability: every flow of one path), or a shortest run of states of its state graph. The
 *    classes the witness carries at each node are protected: never dropped there.
 * 2. Each isolation requirement needs its traffic cut: every flow of its listed paths, or every walk of its state
 *    graph from a start to an arrival, must meet a node that drops the class it carries. Requirements are cut one
 *    after the other, each by a minimum vertex cut (max-flow, O(states x links) per augmentation), where a node
 *    already in use costs one rule, an optional configured firewall two, a new firewall a thousand, and a protected
 *    class or a firewall that passes the class cannot be cut at all.
 * 3. Drops: nodes whose default is DENY drop every unprotected class for free; elsewhere the cut classes are dropped.
 *    A node with a free default takes the one needing fewer rules.
 * 4. Least privilege (`leastPrivileged`): the answer narrowed afterwards.
 * Returns undefined when a requirement cannot be met this way (then only the solver can decide). With `within`, new
 * firewalls are taken only from those nodes (a set the solver proved has the fewest, allocate.ts).
 */
import { isDecision, type FlowModel, type Requirement } from '../flows/flows.js';
import { firstMatchDrops, type NetNode } from '../flows/network.js';

export interface GreedyDecisions {
  used: Set<number>;
  drops: Map<number, Map<number, boolean>>;
  whitelist: Map<number, boolean>;
  /**
   * Per node, the classes whose action no requirement needs there (no witness passes them, no cut drops them): its
   * lists may take them or not, whichever needs fewer rules (allocate.ts, `fastRules`). Only the greedy answer
   * knows them; none at a node whose configured default is DENY (isolations may rest on any of its drops).
   */
  free?: Map<number, Set<number>>;
}

/** What must be cut or witnessed: states (a node and the classes it holds), links between them, starts, arrivals. */
interface Traffic {
  node: number[];
  classes: number[][];
  /** The links of state k: to[first[k]] up to to[first[k + 1] - 1] (flows.ts, StateGraph). */
  first: Int32Array;
  to: Int32Array;
  start: number[];
  arrive: number[];
}

/** The key with the largest count; among equal counts the smallest key, so that answers are deterministic. */
function largest<K extends number | string>(counts: Map<K, number>): K | undefined {
  let best: K | undefined;
  for (const [k, c] of counts) {
    const b = best === undefined ? undefined : counts.get(best)!;
    if (b === undefined || c > b || (c === b && k < best!)) best = k;
  }
  return best;
}

/** A flow of a listed path as a chain of states, ending in an arrival that decides nothing. */
function chain(hops: { node: number; cls: number }[]): Traffic {
  const count = hops.length;
  return {
    node: [...hops.map((h) => h.node), -1],
    classes: [...hops.map((h) => [h.cls]), []],
    first: Int32Array.from({ length: count + 2 }, (_, i) => Math.min(i, count)),
    to: Int32Array.from({ length: count }, (_, i) => i + 1),
    start: [0],
    arrive: [count],
  };
}

const INFINITE = 1e9;

/** The states of a minimum-weight set that every start-to-arrival walk meets (node-split max-flow), or undefined. */
function minimumCut(t: Traffic, weight: (k: number) => number): number[] | undefined {
  const count = t.node.length;
  // Vertices: in(k) = 2k, out(k) = 2k + 1, source 2n, sink 2n + 1.
  const source = 2 * count;
  const sink = source + 1;
  const head: number[] = [];
  const cap: number[] = [];
  const adjacent: number[][] = Array.from({ length: sink + 1 }, () => []);
  const edge = (a: number, b: number, c: number) => {
    adjacent[a]!.push(head.length);
    head.push(b);
    cap.push(c);
    adjacent[b]!.push(head.length);
    head.push(a);
    cap.push(0);
  };
  const arrive = new Set(t.arrive);
  for (let k = 0; k < count; k++) {
    edge(2 * k, 2 * k + 1, arrive.has(k) ? INFINITE : weight(k));
    for (let e = t.first[k]!; e < t.first[k + 1]!; e++) edge(2 * k + 1, 2 * t.to[e]!, INFINITE);
  }
  for (const k of t.start) edge(source, 2 * k, INFINITE);
  for (const k of t.arrive) edge(2 * k + 1, sink, INFINITE);
  let flow = 0;
  const reachable = () => {
    const from = new Int32Array(sink + 1).fill(-1);
    from[source] = -2;
    const queue = [source];
    for (let h = 0; h < queue.length && from[sink] === -1; h++) {
      for (const e of adjacent[queue[h]!]!) {
        if (cap[e]! > 0 && from[head[e]!] === -1) {
          from[head[e]!] = e;
          queue.push(head[e]!);
        }
      }
    }
    return from;
  };
  for (;;) {
    const from = reachable();
    if (from[sink] === -1) {
      const cut: number[] = [];
      for (let k = 0; k < count; k++) if (from[2 * k] !== -1 && from[2 * k + 1] === -1) cut.push(k);
      return cut;
    }
    let bottleneck = Infinity;
    for (let v = sink; v !== source; v = head[from[v]! ^ 1]!) bottleneck = Math.min(bottleneck, cap[from[v]!]!);
    flow += bottleneck;
    if (flow >= INFINITE) return undefined;
    for (let v = sink; v !== source; v = head[from[v]! ^ 1]!) {
      cap[from[v]!]! -= bottleneck;
      cap[from[v]! ^ 1]! += bottleneck;
    }
  }
}

/** A shortest run of open states from a start to an arrival (breadth first, in state order), or undefined. */
function witness(t: Traffic, open: (k: number) => boolean): number[] | undefined {
  const from = new Int32Array(t.node.length).fill(-2);
  const queue: number[] = [];
  for (const k of t.start)
    if (from[k] === -2) {
      from[k] = -1;
      queue.push(k);
    }
  const arrive = new Set(t.arrive);
  for (let h = 0; h < queue.length; h++) {
    const k = queue[h]!;
    if (arrive.has(k)) {
      const run: number[] = [];
      for (let x = k; x !== -1; x = from[x]!) run.unshift(x);
      return run;
    }
    if (!open(k)) continue;
    for (let e = t.first[k]!; e < t.first[k + 1]!; e++) {
      const m = t.to[e]!;
      if (from[m] === -2) {
        from[m] = k;
        queue.push(m);
      }
    }
  }
  return undefined;
}

export function greedyDecisions(
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  members: number[],
  within?: ReadonlySet<number>,
): GreedyDecisions | undefined {
  // A (node, class) pair as one number: a string per pair was most of the cuts' weights (wan-750 of bench:wan).
  const classCount = model.classes.length;
  const pair = (node: number, cls: number) => node * classCount + cls;
  /** A new firewall that may be taken. */
  const newFirewall = (n: number) => net[n]!.costly && (!within || within.has(n));
  const fixedDrops = (n: number, cls: number) => firstMatchDrops(net[n]!, model.classes[cls]!);
  const decides = (n: number) => n >= 0 && isDecision(net[n]!);
  const mandatory = (n: number) => !net[n]!.configurable && !net[n]!.optional;
  /** A mandatory configured firewall drops one of the state's classes: nothing decided can let it through. */
  const blocked = (t: Traffic, k: number) =>
    decides(t.node[k]!) && mandatory(t.node[k]!) && t.classes[k]!.some((c) => fixedDrops(t.node[k]!, c));
  const traffics = (r: number): Traffic[] => {
    const graph = model.graphs[r];
    return graph ? [graph] : model.flows[r]!.flat().map((f) => chain(f.hops));
  };

  // 1. Witnesses of reachability, and the protected (node, class) pairs they pass.
  const protectedPairs = new Set<number>();
  const isolation: Traffic[] = [];
  const protect = (t: Traffic, run: number[]) => {
    for (const k of run)
      for (const c of t.classes[k]!) if (decides(t.node[k]!)) protectedPairs.add(pair(t.node[k]!, c));
  };
  for (const r of members) {
    const req = reqs[r]!;
    if (req.kind === 'isolation') {
      isolation.push(...traffics(r));
      continue;
    }
    if (model.graphs[r]) {
      const t = model.graphs[r];
      const run = witness(t, (k) => !blocked(t, k));
      if (!run) return undefined;
      protect(t, run);
      continue;
    }
    const paths = model.flows[r]!.map((flows) => flows.map((f) => chain(f.hops)));
    const open = (t: Traffic) => !t.node.some((_, k) => blocked(t, k));
    const taken =
      req.kind === 'reachability'
        ? paths.flat().filter(open).slice(0, 1)
        : (paths.find((flows) => flows.length > 0 && flows.every(open)) ?? []);
    if (taken.length === 0) return undefined;
    for (const t of taken)
      protect(
        t,
        t.node.map((_, k) => k),
      );
  }
  // An optional configured firewall may be used only where it drops nothing protected.
  const harmless = (n: number) =>
    [...protectedPairs].every((p) => Math.floor(p / classCount) !== n || !fixedDrops(n, p % classCount));

  // Mandatory decision nodes are used whatever they carry.
  const used = new Set<number>();
  const entering = new Map<number, Set<number>>();
  for (const r of members)
    for (const t of traffics(r))
      for (let k = 0; k < t.node.length; k++) {
        const n = t.node[k]!;
        if (!decides(n)) continue;
        if (!net[n]!.optional) used.add(n);
        const into = entering.get(n) ?? entering.set(n, new Set()).get(n)!;
        for (const c of t.classes[k]!) into.add(c);
      }

  // 2a. Flows of listed paths: nodes by greedy set cover, as many open flows per new firewall as possible (free
  // nodes first, then places by largest gain; places that turn out redundant are given back).
  const canDrop = (t: Traffic, k: number) => {
    const n = t.node[k]!;
    if (!decides(n)) return false;
    const c = t.classes[k]![0]!;
    return net[n]!.configurable ? !protectedPairs.has(pair(n, c)) : fixedDrops(n, c);
  };
  const chains = isolation.filter((t) => t.node.at(-1) === -1);
  const coveredBy = (t: Traffic, nodes: Set<number>) => t.node.some((n, k) => nodes.has(n) && canDrop(t, k));
  let open = chains.filter((t) => !coveredBy(t, used));
  if (open.some((t) => !t.node.some((_, k) => canDrop(t, k)))) return undefined;
  const free = new Set<number>();
  for (const t of chains)
    for (const n of t.node)
      if (decides(n) && net[n]!.optional && !net[n]!.costly && !net[n]!.configurable && harmless(n)) free.add(n);
  for (const n of [...free].sort((a, b) => a - b)) {
    if (open.some((t) => t.node.some((m, k) => m === n && canDrop(t, k)))) {
      used.add(n);
      open = open.filter((t) => !coveredBy(t, used));
    }
  }
  const chosen: number[] = [];
  while (open.length) {
    const gain = new Map<number, number>();
    for (const t of open) {
      const seen = new Set<number>();
      t.node.forEach((n, k) => {
        if (decides(n) && newFirewall(n) && canDrop(t, k) && !seen.has(n)) {
          seen.add(n);
          gain.set(n, (gain.get(n) ?? 0) + 1);
        }
      });
    }
    const best = largest(gain);
    if (best === undefined) return undefined;
    chosen.push(best);
    used.add(best);
    open = open.filter((t) => !coveredBy(t, used));
  }
  for (const n of [...chosen].reverse()) {
    used.delete(n);
    if (chains.some((t) => !coveredBy(t, used))) used.add(n);
  }

  // 2b. Which classes those nodes drop: nodes whose default is DENY drop every unprotected class for free; elsewhere
  // the (node, class) pairs on most open flows first.
  const dropped = new Set<number>();
  const denyAll = (n: number) => net[n]!.defaultAction === 'DENY';
  const droppedAt = (t: Traffic, k: number) => {
    const n = t.node[k]!;
    if (!used.has(n) || !canDrop(t, k)) return false;
    return !net[n]!.configurable || denyAll(n) || dropped.has(pair(n, t.classes[k]![0]!));
  };
  open = chains.filter((t) => !t.node.some((_, k) => droppedAt(t, k)));
  while (open.length) {
    // Keyed "node:class" as before: ties go to the smallest key as a string.
    const gain = new Map<string, number>();
    for (const t of open)
      t.node.forEach((n, k) => {
        if (used.has(n) && net[n]!.configurable && canDrop(t, k)) {
          const key = `${n}:${t.classes[k]![0]!}`;
          gain.set(key, (gain.get(key) ?? 0) + 1);
        }
      });
    const best = largest(gain);
    if (best === undefined) return undefined;
    const [n, cls] = best.split(':').map(Number) as [number, number];
    dropped.add(pair(n, cls));
    open = open.filter((t) => !t.node.some((_, k) => droppedAt(t, k)));
  }

  // 2c. State graphs: each isolation requirement cut by a minimum vertex cut under the weights above, where a class
  // already dropped at a node costs nothing more.
  const weight = (t: Traffic) => (k: number) => {
    const n = t.node[k]!;
    if (!decides(n)) return INFINITE;
    const node = net[n]!;
    const cls = t.classes[k]!;
    if (!node.configurable) {
      if (!cls.every((c) => fixedDrops(n, c))) return INFINITE;
      return used.has(n) ? 0 : harmless(n) ? 2 : INFINITE;
    }
    if (cls.some((c) => protectedPairs.has(pair(n, c)))) return INFINITE;
    if (used.has(n) && (denyAll(n) || cls.every((c) => dropped.has(pair(n, c))))) return 0;
    if (!used.has(n) && node.costly && !newFirewall(n)) return INFINITE;
    return used.has(n) || !node.costly ? 1 : 1000;
  };
  for (const t of isolation) {
    if (t.node.at(-1) === -1) continue;
    const cut = minimumCut(t, weight(t));
    if (!cut) return undefined;
    for (const k of cut) {
      const n = t.node[k]!;
      used.add(n);
      for (const c of t.classes[k]!) if (net[n]!.configurable) dropped.add(pair(n, c));
    }
  }

  // 3. Drops and default actions of the used nodes whose rules we synthesise.
  const drops = new Map<number, Map<number, boolean>>();
  const whitelist = new Map<number, boolean>();
  const undecided = new Map<number, Set<number>>();
  for (const [n, classes] of [...entering].sort((a, b) => a[0] - b[0])) {
    if (!used.has(n) || !net[n]!.configurable) continue;
    const passing = [...classes].filter((c) => protectedPairs.has(pair(n, c))).length;
    const denying = [...classes].filter((c) => dropped.has(pair(n, c))).length;
    const deny = net[n]!.defaultAction === 'DENY' || (net[n]!.defaultAction === undefined && passing < denying);
    whitelist.set(n, deny);
    const d = new Map<number, boolean>();
    for (const c of [...classes].sort((a, b) => a - b))
      d.set(c, deny ? !protectedPairs.has(pair(n, c)) : dropped.has(pair(n, c)));
    drops.set(n, d);
    if (denyAll(n)) continue;
    const neither = [...d.keys()].filter((c) => !protectedPairs.has(pair(n, c)) && !dropped.has(pair(n, c)));
    if (neither.length) undecided.set(n, new Set(neither));
  }
  return { used, drops, whitelist, free: undecided };
}

/**
 * A fast answer made least privilege (docs/SEMANTICS.md): at each used firewall so marked, every class no
 * reachability requirement brings there (`reaching`, flows.ts's `reachabilityClasses`) is dropped, and the default is
 * DENY unless the input gives ALLOW. Every requirement still holds: a witness carries only its requirement's own
 * classes, and an isolation only gains drops. Drops are per class, so the default changes only how lists are written.
 */
export function leastPrivileged(net: NetNode[], fast: GreedyDecisions, reaching: ReadonlySet<string>): void {
  for (const [n, drops] of fast.drops) {
    if (!net[n]!.leastPrivilege) continue;
    fast.free?.delete(n);
    for (const [c, drop] of drops) if (!drop && !reaching.has(`${n}:${c}`)) drops.set(c, true);
    fast.whitelist.set(n, net[n]!.defaultAction !== 'ALLOW');
  }
}
