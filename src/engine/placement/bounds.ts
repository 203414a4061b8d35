/**
 * Preprocessing (placement.md section 3): the conflicts that need no search, each found by a cheap necessary
 * condition, and the candidate hosts of every placed node narrowed by the conditions that hold.
 *
 * EMPTY_DOMAIN: a node fits no host on its own. PIN_OVERLOAD: pinned nodes alone overfill their host. UNREACHABLE:
 * linked nodes can only go on hosts in parts of the substrate that are not connected. LINK_BOUND: a LinkMetrics
 * chain's least latency over the candidates (layered shortest paths) exceeds reqLatency. AGGREGATE: the nodes whose
 * candidates all lie in a host set need more of a resource than that set offers (Hall's condition).
 */
import { plural } from '../../model/words.js';
import { domainOf, type Instance } from './instance.js';
import { CAPACITIES, layered } from './model.js';
import type { HostGraph } from './paths.js';

export type ConflictCode = 'EMPTY_DOMAIN' | 'PIN_OVERLOAD' | 'AGGREGATE' | 'LINK_BOUND' | 'UNREACHABLE' | 'COMBINED';

export interface Conflict {
  code: ConflictCode;
  message: string;
  nodes: string[];
  hosts: string[];
  /** The constraint groups at fault: `domain of N`, `cores of H` (and memory, diskStorage, maxVNF), `link U -> V`,
   * `LinkMetrics S -> D <= R`. */
  constraints: string[];
  /** No element can be dropped with the conflict remaining. */
  minimal: boolean;
}

/** Names in a message: at most `max`, then how many more. */
export function nameList(names: readonly string[], max = 8): string {
  if (names.length <= max) return names.join(', ');
  return `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

export const metricLabel = (src: string, dst: string, bound: number | null) =>
  `LinkMetrics ${src} -> ${dst}${bound === null ? '' : ` <= ${bound}`}`;

export type Preprocessed = { conflicts: Conflict[]; domains?: undefined } | { conflicts: []; domains: Int32Array[] };

interface Context {
  instance: Instance;
  graph: HostGraph;
  nodeName: (position: number) => string;
  hostName: (host: number) => string;
  /** Per position, the constraints (links, LinkMetrics) that narrowed its candidates: part of later conflicts. */
  narrowed: Set<string>[];
}

/** The labels of the constraints that narrowed these positions' candidates, in a stable order. */
const narrowing = (c: Context, positions: readonly number[]) =>
  [...new Set(positions.flatMap((p) => [...c.narrowed[p]!]))].sort();
const linkLabel = (c: Context, u: number, v: number) => `link ${c.nodeName(u)} -> ${c.nodeName(v)}`;

function emptyDomains(c: Context): { conflicts: Conflict[]; domains: Int32Array[] } {
  const { problem, placed } = c.instance;
  const conflicts: Conflict[] = [];
  const domains = placed.map((k, position) => {
    const d = domainOf(problem, k);
    if (d.hosts.length === 0) {
      const n = problem.nodes[k]!;
      const pin = n.pin ? ` Pinned by ${n.pin.by} to ${c.hostName(n.pin.host)};` : '';
      const reasons = d.excluded.length
        ? d.excluded.map((e) => `${e.reason}: ${nameList(e.hosts.map(c.hostName))}`).join('; ')
        : 'The substrate has no hosts';
      conflicts.push({
        code: 'EMPTY_DOMAIN',
        message: `${n.name} (${n.type}) fits no host.${pin} ${reasons}`,
        nodes: [c.nodeName(position)],
        hosts: d.excluded.flatMap((e) => e.hosts.map(c.hostName)),
        constraints: [`domain of ${n.name}`],
        minimal: true,
      });
    }
    return Int32Array.from(d.hosts);
  });
  return { conflicts, domains };
}

/** Per resource, the demand of each position (maxVNF: 1 per function) and the capacity of each host. */
function resources(instance: Instance) {
  const { problem, placed } = instance;
  const node = (p: number) => problem.nodes[placed[p]!]!;
  return CAPACITIES.map((name) => ({
    name,
    need: (p: number) =>
      name === 'cores'
        ? node(p).demand.cores
        : name === 'memory'
          ? node(p).demand.memory
          : name === 'diskStorage'
            ? node(p).demand.storage
            : node(p).kind === 'endhost'
              ? 0
              : 1,
    has: (h: number) => {
      const s = problem.hosts[h]!;
      return name === 'maxVNF' ? (s.maxVNF ?? Infinity) : s[name];
    },
  }));
}

function pinOverload(c: Context): Conflict[] {
  const { problem, placed } = c.instance;
  const byHost = new Map<number, number[]>();
  placed.forEach((k, p) => {
    const pin = problem.nodes[k]!.pin;
    if (pin) byHost.set(pin.host, [...(byHost.get(pin.host) ?? []), p]);
  });
  const conflicts: Conflict[] = [];
  for (const h of [...byHost.keys()].sort((a, b) => a - b)) {
    for (const r of resources(c.instance)) {
      const sum = (list: number[]) => list.reduce((s, p) => s + r.need(p), 0);
      let nodes = byHost.get(h)!;
      const total = sum(nodes);
      if (total <= r.has(h)) continue;
      // Dropped one at a time while the rest still overfills the host: the set that remains is minimal.
      for (const p of [...nodes]) {
        const rest = nodes.filter((q) => q !== p);
        if (sum(rest) > r.has(h)) nodes = rest;
      }
      const what =
        r.name === 'maxVNF' ? `${total} functions, maxVNF is ${r.has(h)}` : `${total} ${r.name}, it has ${r.has(h)}`;
      conflicts.push({
        code: 'PIN_OVERLOAD',
        message: `nodes pinned to ${c.hostName(h)} need ${what}: ${nameList(byHost.get(h)!.map(c.nodeName))}`,
        nodes: nodes.map(c.nodeName),
        hosts: [c.hostName(h)],
        constraints: [`${r.name} of ${c.hostName(h)}`, ...nodes.map((p) => `domain of ${c.nodeName(p)}`)],
        minimal: true,
      });
    }
  }
  return conflicts;
}

/** Linked nodes must share a connected part; pairs that cannot are conflicts, else candidates are narrowed. */
function reachability(c: Context, domains: Int32Array[]): { conflicts: Conflict[]; changed: boolean } {
  const { links } = c.instance;
  const part = c.graph.part;
  const partsOf = (p: number) => new Set(Array.from(domains[p]!, (h) => part[h]!));
  const conflicts: Conflict[] = [];
  const reported = new Set<string>();
  for (const [u, v] of links) {
    const pu = partsOf(u);
    if ([...partsOf(v)].some((x) => pu.has(x))) continue;
    const key = u < v ? `${u},${v}` : `${v},${u}`;
    if (reported.has(key)) continue;
    reported.add(key);
    const on = (p: number) => nameList(Array.from(domains[p]!, c.hostName), 5);
    conflicts.push({
      code: 'UNREACHABLE',
      message:
        `no eligible host of ${c.nodeName(u)} reaches an eligible host of ${c.nodeName(v)}: ` +
        `${c.nodeName(u)} can go on ${on(u)}, ${c.nodeName(v)} on ${on(v)}, and no connections join them`,
      nodes: [c.nodeName(u), c.nodeName(v)],
      hosts: [...new Set([...domains[u]!, ...domains[v]!])].sort((a, b) => a - b).map(c.hostName),
      constraints: [
        linkLabel(c, u, v),
        `domain of ${c.nodeName(u)}`,
        `domain of ${c.nodeName(v)}`,
        ...narrowing(c, [u, v]),
      ],
      // The two domains and the link: minimal unless earlier narrowing took part.
      minimal: narrowing(c, [u, v]).length === 0,
    });
  }
  if (conflicts.length) return { conflicts, changed: false };
  // Pairs can meet, but a whole group of linked nodes must also meet in one part.
  const members = new Map<number, number[]>();
  const parent = Int32Array.from(domains, (_, p) => p);
  const find = (p: number): number => (parent[p] === p ? p : (parent[p] = find(parent[p]!)));
  for (const [u, v] of links) parent[find(u)] = find(v);
  domains.forEach((_, p) => members.set(find(p), [...(members.get(find(p)) ?? []), p]));
  let changed = false;
  for (const group of members.values()) {
    let common = partsOf(group[0]!);
    for (const p of group.slice(1)) common = new Set([...partsOf(p)].filter((x) => common.has(x)));
    if (common.size === 0) {
      const names = group.map(c.nodeName);
      conflicts.push({
        code: 'UNREACHABLE',
        message: `the linked nodes ${nameList(names)} have no connected part of the substrate where all can go`,
        nodes: names,
        hosts: [],
        constraints: [...names.map((n) => `domain of ${n}`), ...narrowing(c, group)],
        minimal: false,
      });
      continue;
    }
    for (const p of group) {
      const kept = domains[p]!.filter((h) => common.has(part[h]!));
      if (kept.length === domains[p]!.length) continue;
      [domains[p], changed] = [kept, true];
      for (const [u, v] of links) if (u === p || v === p) c.narrowed[p]!.add(linkLabel(c, u, v));
    }
  }
  return { conflicts, changed };
}

function linkBounds(c: Context, domains: Int32Array[]): { conflicts: Conflict[]; changed: boolean } {
  const { problem, metrics } = c.instance;
  const conflicts: Conflict[] = [];
  let changed = false;
  for (const use of metrics) {
    const m = problem.linkMetrics[use.metric]!;
    if (m.reqLatency === null) continue;
    let worst: { least: number; route: readonly number[] } | undefined;
    for (const chain of use.chains) {
      const positions = Int32Array.from(chain.positions);
      const { forward, backward } = layered(c.graph, positions, domains);
      const last = forward[positions.length - 1]!;
      const least = Math.min(...Array.from(domains[positions.at(-1)!]!, (h) => last[h]!));
      if (least > m.reqLatency) {
        if (!worst || least > worst.least) worst = { least, route: chain.route };
        continue;
      }
      positions.forEach((p, i) => {
        const kept = domains[p]!.filter((h) => forward[i]![h]! + backward[i]![h]! <= m.reqLatency!);
        if (kept.length === domains[p]!.length) return;
        [domains[p], changed] = [kept, true];
        c.narrowed[p]!.add(metricLabel(problem.nodes[m.src]!.name, problem.nodes[m.dst]!.name, m.reqLatency));
      });
    }
    if (!worst) continue;
    const src = problem.nodes[m.src]!.name;
    const dst = problem.nodes[m.dst]!.name;
    const route = worst.route.map((k) => problem.nodes[k]!.name);
    const least =
      worst.least === Infinity ? 'no host path carries it' : `the least achievable latency is ${worst.least}`;
    conflicts.push({
      code: 'LINK_BOUND',
      message: `LinkMetrics ${src} -> ${dst} (reqLatency ${m.reqLatency}): ${least} (route ${route.join(', ')})`,
      nodes: worst.route.filter((k) => c.instance.position[k]! >= 0).map((k) => problem.nodes[k]!.name),
      hosts: [],
      constraints: [
        metricLabel(src, dst, m.reqLatency),
        ...narrowing(
          c,
          worst.route.map((k) => c.instance.position[k]!).filter((p) => p >= 0),
        ).filter((label) => label !== metricLabel(src, dst, m.reqLatency)),
      ],
      minimal: false,
    });
  }
  return { conflicts, changed };
}

/** Hall-type sums over host sets made of the distinct candidate sets and their overlapping unions. */
function aggregate(c: Context, domains: Int32Array[]): Conflict[] {
  const n = c.graph.count;
  const keyOf = (mask: Uint8Array) => Array.from(mask).join('');
  const seen = new Set<string>();
  const sets: Uint8Array[] = [];
  const add = (mask: Uint8Array) => {
    const key = keyOf(mask);
    if (seen.has(key)) return;
    seen.add(key);
    sets.push(mask);
  };
  const distinct = domains.map((d) => {
    const mask = new Uint8Array(n);
    for (const h of d) mask[h] = 1;
    return mask;
  });
  distinct.forEach(add);
  const overlap = (a: Uint8Array, b: Uint8Array) => a.some((x, h) => x && b[h]);
  // Unions of overlapping candidate sets, breadth first, up to a bound on the work.
  const MOST_SETS = 200;
  for (let i = 0; i < sets.length && sets.length < MOST_SETS; i++) {
    for (const d of distinct) {
      if (sets.length >= MOST_SETS) break;
      if (overlap(sets[i]!, d)) add(sets[i]!.map((x, h) => x | d[h]!));
    }
  }
  const all = new Uint8Array(n);
  for (const d of distinct) d.forEach((x, h) => (all[h] = all[h]! | x));
  add(all);
  const size = (mask: Uint8Array) => mask.reduce((s, x) => s + x, 0);
  const order = sets.map((mask, i) => ({ mask, i, size: size(mask) })).sort((a, b) => a.size - b.size || a.i - b.i);
  const found: Uint8Array[] = [];
  const conflicts: Conflict[] = [];
  const hallResources = resources(c.instance);
  for (const { mask } of order) {
    if (found.some((f) => f.every((x, h) => !x || mask[h]))) continue;
    const inside = domains.flatMap((d, p) => (d.every((h) => mask[h]) ? [p] : []));
    if (inside.length === 0) continue;
    const hosts = Array.from(mask).flatMap((x, h) => (x ? [h] : []));
    for (const r of hallResources) {
      const need = inside.reduce((s, p) => s + r.need(p), 0);
      const has = hosts.reduce((s, h) => s + r.has(h), 0);
      if (need <= has) continue;
      found.push(mask);
      const names = inside.map(c.nodeName);
      const offer =
        r.name === 'maxVNF'
          ? `take ${plural(has, 'function')} in all (maxVNF); they are ${need}`
          : `offer ${has} ${r.name} in all; they need ${need}`;
      conflicts.push({
        code: 'AGGREGATE',
        message: `${nameList(names)} can only go on ${nameList(hosts.map(c.hostName))}, which ${offer}`,
        nodes: names,
        hosts: hosts.map(c.hostName),
        constraints: [
          ...hosts.map((h) => `${r.name} of ${c.hostName(h)}`),
          ...names.map((x) => `domain of ${x}`),
          ...narrowing(c, inside),
        ],
        minimal: false,
      });
      break;
    }
  }
  return conflicts;
}

/** The conflicts found without search, or the narrowed candidate hosts of every placed position. */
export function preprocess(instance: Instance, graph: HostGraph): Preprocessed {
  const { problem, placed } = instance;
  const c: Context = {
    instance,
    graph,
    nodeName: (p) => problem.nodes[placed[p]!]!.name,
    hostName: (h) => problem.hosts[h]!.name,
    narrowed: placed.map(() => new Set<string>()),
  };
  const { conflicts, domains } = emptyDomains(c);
  conflicts.push(...pinOverload(c));
  if (conflicts.length) return { conflicts };
  for (;;) {
    const reach = reachability(c, domains);
    if (reach.conflicts.length) return { conflicts: reach.conflicts };
    const bound = linkBounds(c, domains);
    if (bound.conflicts.length) return { conflicts: bound.conflicts };
    if (!bound.changed) break;
  }
  const hall = aggregate(c, domains);
  if (hall.length) return { conflicts: hall };
  return { conflicts: [], domains };
}
