/**
 * A fast answer for a component whose optimum the solver cannot prove in time: every requirement holds, with few
 * new firewalls and few rules, but no proof that fewer would not do (the report then says optimal="false").
 *
 * 1. Each reachability requirement keeps one witness flow (complete reachability: every flow of one path) that no
 *    mandatory configured firewall drops; the classes of witness flows at each hop are protected: never dropped.
 * 2. Each isolation flow needs a hop that drops it: a mandatory configured firewall that already does, or a node
 *    that may drop its class there (not protected). Nodes that cost no new firewall are taken first (mandatory
 *    rule-less firewalls, optional configured ones that drop no protected class); then allocation places by greedy
 *    set cover, most uncovered flows first, and places that turn out redundant are given back.
 * 3. Drops: nodes whose default is DENY drop every unprotected class for free; elsewhere the (node, class) pairs
 *    covering most uncovered flows are dropped first. A node with a free default takes the one needing fewer rules.
 * Returns undefined when a requirement cannot be met this way (then only the solver can decide).
 */
import type { AtomicFlow, FlowModel, Requirement } from './flows.js';
import type { NetNode } from './network.js';
import { firstMatchDrops } from './allocate.js';

export interface GreedyDecisions {
  used: Set<number>;
  drops: Map<number, Map<number, boolean>>;
  whitelist: Map<number, boolean>;
}

const pair = (node: number, cls: number) => `${node}:${cls}`;

/** The key with the largest count; among equal counts the smallest key, so that answers are deterministic. */
function largest<K extends number | string>(counts: Map<K, number>): K | undefined {
  let best: K | undefined;
  for (const [k, c] of counts) {
    const b = best === undefined ? undefined : counts.get(best)!;
    if (b === undefined || c > b || (c === b && k < best!)) best = k;
  }
  return best;
}

export function greedyDecisions(
  net: NetNode[],
  reqs: Requirement[],
  model: FlowModel,
  members: number[],
): GreedyDecisions | undefined {
  const fixedDrops = (n: number, cls: number) => firstMatchDrops(net[n]!, model.classes[cls]!);
  const mandatoryBlock = (f: AtomicFlow) =>
    f.hops.some((h) => !net[h.node]!.configurable && !net[h.node]!.optional && fixedDrops(h.node, h.cls));

  // 1. Witnesses of reachability, and the protected (node, class) pairs they pass.
  const protectedPairs = new Set<string>();
  const isolationFlows: AtomicFlow[] = [];
  for (const r of members) {
    const req = reqs[r]!;
    const paths = model.flows[r]!;
    if (req.kind === 'isolation') {
      isolationFlows.push(...paths.flat());
      continue;
    }
    const witness =
      req.kind === 'reachability'
        ? paths
            .flat()
            .filter((f) => !mandatoryBlock(f))
            .slice(0, 1)
        : (paths.find((flows) => flows.length > 0 && !flows.some(mandatoryBlock)) ?? []);
    if (witness.length === 0) return undefined;
    for (const f of witness) for (const h of f.hops) protectedPairs.add(pair(h.node, h.cls));
  }
  // An optional configured firewall may be used only where it drops nothing protected.
  const harmless = (n: number) =>
    [...protectedPairs].every((p) => {
      const [node, cls] = p.split(':').map(Number) as [number, number];
      return node !== n || !fixedDrops(n, cls);
    });

  // 2. Which nodes are used. `canDrop(f, n)`: n may drop flow f, given what n is.
  const canDrop = (h: { node: number; cls: number }) => {
    const node = net[h.node]!;
    if (!node.configurable) return fixedDrops(h.node, h.cls);
    return !protectedPairs.has(pair(h.node, h.cls));
  };
  // Mandatory nodes are used whatever they carry.
  const used = new Set<number>();
  for (const r of members)
    for (const f of model.flows[r]!.flat())
      for (const h of f.hops) {
        if (!net[h.node]!.optional) used.add(h.node);
      }
  const free = new Set<number>();
  for (const f of isolationFlows) {
    for (const h of f.hops) {
      const node = net[h.node]!;
      if (node.optional && !node.costly && !node.configurable && harmless(h.node)) free.add(h.node);
    }
  }
  const coveredBy = (f: AtomicFlow, nodes: Set<number>) => f.hops.some((h) => nodes.has(h.node) && canDrop(h));
  let open = isolationFlows.filter((f) => !coveredBy(f, used));
  if (open.some((f) => !f.hops.some(canDrop))) return undefined;
  // Optional configured firewalls cost nothing but the last objective: use those that cover something.
  for (const n of [...free].sort((a, b) => a - b)) {
    if (open.some((f) => f.hops.some((h) => h.node === n && canDrop(h)))) {
      used.add(n);
      open = open.filter((f) => !coveredBy(f, used));
    }
  }
  const chosen: number[] = [];
  while (open.length) {
    const gain = new Map<number, number>();
    for (const f of open) {
      const seen = new Set<number>();
      for (const h of f.hops) {
        if (net[h.node]!.costly && canDrop(h) && !seen.has(h.node)) {
          seen.add(h.node);
          gain.set(h.node, (gain.get(h.node) ?? 0) + 1);
        }
      }
    }
    const best = largest(gain);
    if (best === undefined) return undefined;
    chosen.push(best);
    used.add(best);
    open = open.filter((f) => !coveredBy(f, used));
  }
  for (const n of [...chosen].reverse()) {
    used.delete(n);
    if (isolationFlows.some((f) => !coveredBy(f, used))) used.add(n);
  }

  // 3. Drops and default actions of the used nodes whose rules we synthesise.
  const entering = new Map<number, Set<number>>();
  for (const r of members) {
    for (const f of model.flows[r]!.flat()) {
      for (const h of f.hops) {
        if (used.has(h.node) && net[h.node]!.configurable) {
          (entering.get(h.node) ?? entering.set(h.node, new Set()).get(h.node)!).add(h.cls);
        }
      }
    }
  }
  const dropped = new Set<string>();
  const denyAll = (n: number) => net[n]!.defaultAction === 'DENY';
  const droppedAt = (h: { node: number; cls: number }) =>
    used.has(h.node) &&
    (net[h.node]!.configurable
      ? !protectedPairs.has(pair(h.node, h.cls)) && (denyAll(h.node) || dropped.has(pair(h.node, h.cls)))
      : fixedDrops(h.node, h.cls));
  open = isolationFlows.filter((f) => !f.hops.some(droppedAt));
  while (open.length) {
    const gain = new Map<string, number>();
    for (const f of open) {
      for (const h of f.hops) {
        if (used.has(h.node) && net[h.node]!.configurable && canDrop(h)) {
          gain.set(pair(h.node, h.cls), (gain.get(pair(h.node, h.cls)) ?? 0) + 1);
        }
      }
    }
    const best = largest(gain);
    if (best === undefined) return undefined;
    dropped.add(best);
    open = open.filter((f) => !f.hops.some(droppedAt));
  }
  const drops = new Map<number, Map<number, boolean>>();
  const whitelist = new Map<number, boolean>();
  for (const [n, classes] of [...entering].sort((a, b) => a[0] - b[0])) {
    const passing = [...classes].filter((c) => protectedPairs.has(pair(n, c))).length;
    const denying = [...classes].filter((c) => dropped.has(pair(n, c))).length;
    const deny = net[n]!.defaultAction === 'DENY' || (net[n]!.defaultAction === undefined && passing < denying);
    whitelist.set(n, deny);
    const d = new Map<number, boolean>();
    for (const c of [...classes].sort((a, b) => a - b))
      d.set(c, deny ? !protectedPairs.has(pair(n, c)) : dropped.has(pair(n, c)));
    drops.set(n, d);
  }
  return { used, drops, whitelist };
}
