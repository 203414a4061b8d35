/**
 * From an NFV graph to the network the engine reasons about: service-graph expansion (B 2.2), wildcard requirement
 * expansion (B 2.3), what each node does (A.2), and where each requirement's traffic can go (B 2.5, B 1.8): its
 * corridor of blocks, and simple paths only where a NAT makes walks and simple paths differ.
 */
import { parseAddress, parsePorts } from '../../model/address.js';
import { END_HOSTS } from '../../model/resources.js';
import { badRequest, beyondBound, quote } from '../../model/errors.js';
import type { Constraints, Elements, ForwardingPath, Graph, Node, Property } from '../../model/types.js';
import { boxOf, octetBounds, ruleHolds, type Box, type PacketClass } from '../../model/space.js';

/** Types where traffic starts or stops and never transits (A.2), kept in the model for emulate too. */
export { END_HOSTS };
/** Types a wildcard requirement expands to (B 2.3). */
const WILDCARD_TARGETS = new Set(['WEBCLIENT', 'MAILCLIENT', 'ENDHOST', 'WEBSERVER', 'MAILSERVER']);

export type Role = 'endhost' | 'place' | 'firewall' | 'nat' | 'transparent';

export interface NetNode {
  index: number;
  name: string;
  /** The node of the output graph, changed in place when the result is written. */
  node: Node;
  role: Role;
  /** Octet bounds of the node's address, when its name is an address pattern. */
  address?: number[];
  next: number[];
  /** Firewalls: the rules (first match) of a configured one; none for one whose rules we synthesise. */
  rules?: Elements[];
  defaultAction?: 'ALLOW' | 'DENY';
  /** Rules are synthesised (allocation place, or a firewall without rules). */
  configurable: boolean;
  /** May be left out: allocation places, and firewalls named by a NodeMetrics entry with optional="true". */
  optional: boolean;
  /** Using it counts as a newly allocated firewall. */
  costly: boolean;
  /** NAT: the private address patterns it hides. */
  natSources?: number[][];
  /**
   * NAT with a forward table: each entry's packets (protocol and destination port) in order, the address bounds they
   * are sent to and the port they get, if it changes; what comes to the NAT from outside and no entry takes is
   * delivered to the NAT itself.
   */
  natForwards?: { match: Box; to: number[]; toPort?: number }[];
  /**
   * NAT translating by destination (`translate`): the packets whose source it makes its address, each entry's
   * protocol, destination port, source and destination; absent: every packet from what it hides to outside it.
   */
  natTranslates?: Box[];
  /**
   * Reconfiguration: a deployed firewall (`rules`, `defaultAction`) whose rules may change (each kept, removed, or
   * overridden by a new rule above them) and whose default may flip, at the fewest changes.
   */
  deployed?: boolean;
  /**
   * Least privilege (docs/SEMANTICS.md): a node whose rules we synthesise lets through only traffic of reachability
   * requirements arriving there: its default is DENY (unless the input gives ALLOW: then every requirement's class
   * arriving there that no reachability brings is denied) and each ALLOW rule lies inside that traffic.
   */
  leastPrivilege?: boolean;
}

const AP_PREFIX = '20.0.0.';

/**
 * Inserts an allocation place on every link of a service graph, except forbidden ones; forced ones get a firewall.
 * Places are named 20.0.0.k with the least k free in the graph, as VEREFOO does, or free in `taken` (names of every
 * graph, added to as places are named) when places of several graphs must differ (placement.md P1). Returns the
 * places added.
 */
export function expandServiceGraph(graph: Graph, constraints: Constraints | undefined, taken?: Set<string>): Node[] {
  const rules = constraints?.allocationConstraints?.allocationConstraint ?? [];
  const ruleFor = (a: string, b: string) =>
    rules.find((r) => (r.nodeA === a && r.nodeB === b) || (r.nodeA === b && r.nodeB === a))?.type;
  const used = taken ?? new Set<string>();
  for (const n of graph.node) used.add(n.name);
  const byName = new Map(graph.node.map((n) => [n.name, n]));
  let k = 0;
  const added: Node[] = [];
  for (const n of [...graph.node]) {
    for (const nb of [...(n.neighbour ?? [])]) {
      if (nb.name.startsWith(AP_PREFIX) && !byName.has(nb.name)) continue;
      if (added.some((a) => a.name === nb.name)) continue;
      const kind = ruleFor(n.name, nb.name);
      if (kind === 'FORBIDDEN') continue;
      let name: string;
      do name = `${AP_PREFIX}${++k}`;
      while (used.has(name));
      used.add(name);
      const m = byName.get(nb.name);
      const place: Node = { name, neighbour: [{ name: nb.name }] };
      if (kind === 'FORCED') {
        place.functionalType = 'FIREWALL';
        place.configuration = {
          name: 'FWConfiguration',
          description: 'FWDescription',
          firewall: { defaultAction: 'DENY' },
        };
      }
      n.neighbour = [...(n.neighbour ?? []).filter((x) => x !== nb), { name }];
      const back = m?.neighbour?.find((x) => x.name === n.name);
      if (m && back) {
        m.neighbour = [...m.neighbour!.filter((x) => x !== back), { name }];
        place.neighbour!.push({ name: n.name });
      }
      added.push(place);
    }
  }
  graph.node.push(...added);
  return added;
}

/** Replaces each requirement whose src or dst is a network (a -1 octet) by one copy per end host inside it. */
export function expandWildcards(graph: Graph, properties: Property[]): Property[] {
  // The end hosts a network can contain, their addresses parsed once rather than once per requirement naming one.
  const hosts = graph.node.flatMap((n) => {
    const a = n.functionalType && WILDCARD_TARGETS.has(n.functionalType) ? parseAddress(n.name) : undefined;
    return a ? [{ n, a }] : [];
  });
  const expandSide = (list: Property[], side: 'src' | 'dst'): Property[] =>
    list.flatMap((p) => {
      if (!p[side].includes('-1')) return [p];
      const net = parseAddress(p[side]);
      if (!net) throw badRequest(`property ${side} ${quote(p[side])} is not an address pattern`);
      const inside = hosts.filter(({ a }) => a.every((o, k) => net[k] === -1 || net[k] === o)).map(({ n }) => n);
      if (!inside.length)
        throw badRequest(`the network ${p[side]} of a ${p.name} contains no end host of graph ${graph.id}`);
      return inside.map((n) => {
        const { body: _body, isSat: _isSat, ...rest } = p;
        return { ...rest, [side]: n.name };
      });
    });
  return expandSide(expandSide(properties, 'src'), 'dst');
}

/**
 * Names of the firewalls that may be left out. optional="true" makes a firewall optional, not the mere presence of a
 * NodeMetrics entry: with substrates, entries carry the resources of mandatory nodes too (placement.md P2, A.1).
 */
export function optionalNames(constraints: Constraints | undefined): Set<string> {
  return new Set(
    (constraints?.nodeConstraints?.nodeMetrics ?? []).filter((m) => m.optional === true).map((m) => m.node),
  );
}

/**
 * The nodes of a graph; with `reconfigure`, every configured firewall is deployed and may change (issue 14); with
 * `leastPrivilege`, every node whose rules are synthesised lets through only what reachability needs (issue 48).
 */
export function buildNetwork(
  graph: Graph,
  constraints: Constraints | undefined,
  reconfigure = false,
  leastPrivilege = false,
): NetNode[] {
  const nodes = networkNodes(graph, constraints, reconfigure);
  if (!leastPrivilege) return nodes;
  for (const n of nodes) if (n.configurable) n.leastPrivilege = true;
  return nodes;
}

function networkNodes(graph: Graph, constraints: Constraints | undefined, reconfigure: boolean): NetNode[] {
  const optionalFirewalls = optionalNames(constraints);
  const index = new Map(graph.node.map((n, k) => [n.name, k]));
  return graph.node.map((node, k) => {
    const type = node.functionalType;
    const addr = parseAddress(node.name);
    const base: NetNode = {
      index: k,
      name: node.name,
      node,
      role: 'transparent',
      address: addr ? octetBounds(node.name) : undefined,
      next: (node.neighbour ?? []).map((nb) => index.get(nb.name)).filter((x): x is number => x !== undefined),
      configurable: false,
      optional: false,
      costly: false,
    };
    if (type === undefined) return { ...base, role: 'place', configurable: true, optional: true, costly: true };
    if (END_HOSTS.has(type)) return { ...base, role: 'endhost' };
    if (type === 'NAT') {
      const sources = node.configuration?.nat?.source ?? [];
      for (const s of sources)
        if (!parseAddress(s)) throw badRequest(`NAT ${node.name}: source ${quote(s)} is not an address pattern`);
      const forward = node.configuration?.nat?.forward;
      const natForwards = forward?.map((f) => {
        const to = parseAddress(f.to);
        if (!to) throw badRequest(`NAT ${node.name}: forward to ${quote(f.to)} is not an address pattern`);
        // An entry's packets: its protocol and ports, from its source (any) to its destination (the NAT itself).
        const match = boxOf({ src: f.src ?? '*', dst: f.dst ?? node.name, dstPort: f.dstPort, proto: f.protocol });
        const port = f.toPort === undefined ? undefined : parsePorts(f.toPort);
        if (f.toPort !== undefined && (!port || port.lo !== port.hi))
          throw badRequest(`NAT ${node.name}: forward to_port ${quote(f.toPort)} is not one port`);
        return { match, to: octetBounds(f.to), ...(port ? { toPort: port.lo } : {}) };
      });
      const translate = node.configuration?.nat?.translate;
      const natTranslates = translate?.map((f) =>
        boxOf({ src: f.src ?? '*', dst: f.dst, dstPort: f.dstPort, proto: f.protocol }),
      );
      // A NAT translating by destination sends nothing to its hidden networks by address: what comes to it and no
      // entry of its table (if any) takes is delivered there, as with an empty table.
      const table = natForwards ?? (natTranslates ? [] : undefined);
      return {
        ...base,
        role: 'nat',
        natSources: sources.map(octetBounds),
        ...(table ? { natForwards: table } : {}),
        ...(natTranslates ? { natTranslates } : {}),
      };
    }
    if (type === 'FIREWALL') {
      const fw = node.configuration?.firewall;
      const rules = fw?.elements ?? [];
      const optional = optionalFirewalls.has(node.name);
      if (reconfigure && fw) {
        const defaultAction = fw.defaultAction === 'ALLOW' ? 'ALLOW' : 'DENY';
        return { ...base, role: 'firewall', rules, defaultAction, optional, deployed: true };
      }
      const configurable = rules.length === 0;
      return {
        ...base,
        role: 'firewall',
        rules: configurable ? undefined : rules,
        defaultAction:
          fw?.defaultAction === 'ALLOW'
            ? 'ALLOW'
            : fw?.defaultAction === 'DENY'
              ? 'DENY'
              : configurable
                ? undefined
                : 'DENY',
        configurable,
        optional,
        costly: optional && configurable,
      };
    }
    return base;
  });
}

/**
 * Simple directed paths from src to dst inside its corridor (the links of corridorLinks); end hosts never transit.
 * Used only where the corridor has few cycles or walks and simple paths may differ (simulate.ts says when). More than
 * `limit` paths, or more than STEPS_PER_PATH x `limit` steps of the search, is a 422 naming the figure.
 */
export function pathsBetween(net: NetNode[], corridor: Corridor, limit: number, why: string): number[][] {
  const src = corridor.joints[0]!;
  const dst = corridor.joints.at(-1)!;
  const links = corridorLinks(net, corridor);
  const paths: number[][] = [];
  const onPath = new Set<number>([src]);
  const stack = [src];
  let steps = 0;
  const beyond = () =>
    beyondBound(
      `more than ${limit} simple paths between ${net[src]!.name} and ${net[dst]!.name}, the bound where ${why} ` +
        `makes the engine list them`,
    );
  const walk = (at: number) => {
    for (const next of links.get(at) ?? []) {
      if (++steps > STEPS_PER_PATH * limit) throw beyond();
      if (onPath.has(next)) continue;
      if (next === dst) {
        paths.push([...stack, dst]);
        if (paths.length > limit) throw beyond();
        continue;
      }
      onPath.add(next);
      stack.push(next);
      walk(next);
      stack.pop();
      onPath.delete(next);
    }
  };
  walk(src);
  return paths;
}

/** Search steps allowed per path listed: a search that finds few paths in many steps stops too. */
const STEPS_PER_PATH = 100;

/** The last NetworkForwardingPath from src to dst, as node indexes. */
export function forwardingPath(
  net: NetNode[],
  src: number,
  dst: number,
  forwarding: ForwardingPath[],
): number[] | undefined {
  if (forwarding.length === 0) return undefined;
  const byName = new Map(net.map((n) => [n.name, n.index]));
  const fixed = forwarding
    .filter((p) => p.pathNode[0]?.name === net[src]!.name && p.pathNode.at(-1)?.name === net[dst]!.name)
    .at(-1);
  return fixed?.pathNode.map((pn) => byName.get(pn.name)!);
}

/**
 * Where a requirement's traffic can go without listing paths: the blocks (biconnected components) of the transit
 * graph (src, dst and every node that is not an end host, links undirected) on the block-cut tree path from src to
 * dst, in order, and the cut vertices joining them. Every simple src-dst path runs through the blocks in order,
 * entering block j at joints[j] and leaving at joints[j + 1]; the nodes of the blocks are exactly the nodes on some
 * simple path. O(V + E).
 */
export interface Corridor {
  blocks: number[][];
  /** src, the cut vertices in order, dst. */
  joints: number[];
}

export function corridorOf(net: NetNode[], src: number, dst: number): Corridor | undefined {
  const transit = (k: number) => k === src || k === dst || net[k]!.role !== 'endhost';
  const adjacent: Set<number>[] = net.map(() => new Set());
  for (const n of net) {
    if (!transit(n.index)) continue;
    for (const m of n.next) {
      if (m === n.index || !transit(m)) continue;
      adjacent[n.index]!.add(m);
      adjacent[m]!.add(n.index);
    }
  }
  const blocks = blocksFrom(
    adjacent.map((a) => [...a].sort((x, y) => x - y)),
    src,
  );
  // Breadth first over the block-cut tree: vertex v is v, block b is net.length + b.
  const blocksOf = net.map((): number[] => []);
  blocks.forEach((b, k) => b.forEach((v) => blocksOf[v]!.push(k)));
  const from = new Map<number, number>([[src, -1]]);
  const queue = [src];
  for (let head = 0; head < queue.length && !from.has(dst); head++) {
    const x = queue[head]!;
    const next = x < net.length ? blocksOf[x]!.map((b) => net.length + b) : blocks[x - net.length]!;
    for (const y of next) {
      if (from.has(y)) continue;
      from.set(y, x);
      queue.push(y);
    }
  }
  if (!from.has(dst)) return undefined;
  const chain: number[] = [];
  for (let x = dst; x !== -1; x = from.get(x)!) chain.unshift(x);
  return {
    blocks: chain.filter((x) => x >= net.length).map((x) => blocks[x - net.length]!.sort((a, b) => a - b)),
    joints: chain.filter((x) => x < net.length),
  };
}

/**
 * corridorOf for many requirements of one network: the blocks of the transit graph without end hosts, and their
 * block-cut tree, are found once (O(V + E)), and each corridor is the tree path between its ends (O(path)). An end
 * host with one neighbour adds a block of its own (that link) and changes no other block; any other end (several
 * neighbours, another end host beside it, src = dst) is left to corridorOf. Same corridors, same arrays in the same
 * order. bench:wan's wan-750 (3,150 nodes, 800 requirements): corridorOf's 800 searches over the whole graph were
 * 4 s of its 14 CPU s.
 */
export function corridors(net: NetNode[]): (src: number, dst: number) => Corridor | undefined {
  const size = net.length;
  const core = (k: number) => net[k]!.role !== 'endhost';
  const adjacent: Set<number>[] = net.map(() => new Set());
  /** For end hosts: the one core neighbour, or -1 (none, several, or an end host beside it). */
  const only = new Int32Array(size).fill(-1);
  const hostSides: Set<number>[] = net.map(() => new Set());
  for (const n of net)
    for (const m of n.next) {
      if (m === n.index) continue;
      if (core(n.index) && core(m)) {
        adjacent[n.index]!.add(m);
        adjacent[m]!.add(n.index);
      } else {
        hostSides[n.index]!.add(m);
        hostSides[m]!.add(n.index);
      }
    }
  for (const n of net) {
    if (core(n.index)) continue;
    const sides = [...hostSides[n.index]!];
    if (sides.length === 1 && core(sides[0]!)) only[n.index] = sides[0]!;
  }
  const blocks = allBlocks(adjacent.map((a) => [...a].sort((x, y) => x - y))).map((b) => b.sort((x, y) => x - y));
  // The block-cut tree: vertex v is v, block b is size + b; each tree rooted at its first vertex.
  const blocksOf = net.map((): number[] => []);
  blocks.forEach((b, k) => b.forEach((v) => blocksOf[v]!.push(k)));
  const parent = new Int32Array(size + blocks.length).fill(-1);
  const depth = new Int32Array(size + blocks.length);
  const tree = new Int32Array(size + blocks.length).fill(-1);
  for (let root = 0; root < size; root++) {
    if (tree[root] !== -1 || !core(root)) continue;
    tree[root] = root;
    const queue = [root];
    for (let head = 0; head < queue.length; head++) {
      const x = queue[head]!;
      const next = x < size ? blocksOf[x]!.map((b) => size + b) : blocks[x - size]!;
      for (const y of next) {
        if (tree[y] !== -1) continue;
        [tree[y], parent[y], depth[y]] = [root, x, depth[x]! + 1];
        queue.push(y);
      }
    }
  }
  /** The tree path from core vertex a to core vertex b, or undefined when they are apart. */
  const between = (a: number, b: number): number[] | undefined => {
    if (tree[a] !== tree[b]) return undefined;
    const up: number[] = [];
    const down: number[] = [];
    for (; depth[a]! > depth[b]!; a = parent[a]!) up.push(a);
    for (; depth[b]! > depth[a]!; b = parent[b]!) down.push(b);
    for (; a !== b; a = parent[a]!, b = parent[b]!) {
      up.push(a);
      down.push(b);
    }
    return [...up, a, ...down.reverse()];
  };
  return (src, dst) => {
    const ends = [src, dst].map((k) => (core(k) ? k : only[k]!));
    if (src === dst || ends.includes(-1)) return corridorOf(net, src, dst);
    const chain = between(ends[0]!, ends[1]!);
    if (!chain) return undefined;
    const link = (host: number, side: number) => (host < side ? [host, side] : [side, host]);
    const inner = chain.filter((x) => x >= size).map((x) => blocks[x - size]!);
    const joints = chain.filter((x) => x < size);
    return {
      blocks: [...(core(src) ? [] : [link(src, ends[0]!)]), ...inner, ...(core(dst) ? [] : [link(dst, ends[1]!)])],
      joints: [...(core(src) ? [] : [src]), ...joints, ...(core(dst) ? [] : [dst])],
    };
  };
}

/**
 * The cycle rank of a corridor (links - nodes + 1 of the union of its blocks). A simple src-dst path differs from a
 * fixed one by an element of the cycle space, so there are at most 2^rank of them.
 */
export function cycleRank(net: NetNode[], corridor: Corridor): number {
  // Blocks share only the joints between them, and a link lies in one block: the rank is the sum of the blocks'
  // ranks, each counted once per block (corridors() shares block arrays among requirements). No block: one node.
  if (corridor.blocks.length === 0) return 1;
  let rank = 0;
  for (const block of corridor.blocks) {
    let own = ranks.get(block);
    if (own === undefined) {
      const inside = new Set(block);
      const links = new Set<number>();
      for (const u of block)
        for (const v of net[u]!.next)
          if (inside.has(v) && u !== v) links.add(Math.min(u, v) * net.length + Math.max(u, v));
      ranks.set(block, (own = links.size - inside.size + 1));
    }
    rank += own;
  }
  return rank;
}

const ranks = new WeakMap<readonly number[], number>();

/**
 * The links a walk may take inside a corridor: within one block, never back into the block's entry nor on from its
 * exit (the next block goes on from there), nothing after dst. So a walk passes each cut vertex once, and a NAT there
 * acts once, as on every simple path.
 */
export function corridorLinks(net: NetNode[], corridor: Corridor): ReadonlyMap<number, readonly number[]> {
  // Not kept per corridor: that held every requirement's links through the simulation (wan-750: peak 677 MB against
  // 439 MB, for no CPU time measurable under load 30).
  const next = corridorNext(net, corridor);
  const nodes = new Set<number>();
  for (const b of corridor.blocks) for (const v of b) nodes.add(v);
  return new Map([...nodes].sort((a, b) => a - b).map((u) => [u, next(u)]));
}

/**
 * corridorLinks as a function of the node, for walks that look at each node once or twice: nothing per node is
 * built for the corridor. Each block's own links are found once per block (corridors() shares a block's array among
 * the requirements crossing it), so that wan-750's 800 corridors through one block of 1,240 nodes do not each map
 * it: that was a tenth of its CPU time, and much of its collection. Same lists, in the order of `next`.
 */
export function corridorNext(net: NetNode[], corridor: Corridor): (u: number) => readonly number[] {
  const { blocks, joints } = corridor;
  const dst = joints.at(-1)!;
  const inside = blocks.map((b) => blockLinks(net, b));
  // Per node: 1 + the one corridor block holding it, 0 for none, -1 for a joint of two.
  const where = new Int32Array(net.length);
  blocks.forEach((b, j) => b.forEach((v) => (where[v] = where[v] === 0 ? j + 1 : -1)));
  return (u) => {
    if (u === dst || where[u] === 0) return [];
    if (where[u]! > 0) {
      const only = where[u]! - 1;
      // Never back into the block's entry, nor on from its exit.
      if (u === joints[only + 1]) return [];
      const own = inside[only]!.get(u)!;
      const entry = joints[only];
      return own.includes(entry!) ? own.filter((v) => v !== entry) : own;
    }
    // A joint of two blocks: its links in the order of `next`, as through either block.
    const out: number[] = [];
    for (const v of net[u]!.next) {
      if (out.includes(v)) continue;
      for (let j = 0; j < blocks.length; j++)
        if (inside[j]!.has(u) && inside[j]!.has(v) && v !== joints[j] && u !== joints[j + 1]) {
          out.push(v);
          break;
        }
    }
    return out;
  };
}

/** The links of a block's nodes to nodes of the same block, in the order of `next`, once per block array. */
function blockLinks(net: NetNode[], block: readonly number[]): ReadonlyMap<number, readonly number[]> {
  const known = blockLinksKnown.get(block);
  if (known && known.net === net) return known.links;
  const members = new Set(block);
  const map = new Map<number, number[]>();
  for (const u of block) {
    const out: number[] = [];
    for (const v of net[u]!.next) if (members.has(v) && !out.includes(v)) out.push(v);
    map.set(u, out);
  }
  blockLinksKnown.set(block, { net, links: map });
  return map;
}

const blockLinksKnown = new WeakMap<readonly number[], { net: NetNode[]; links: Map<number, number[]> }>();

/** Biconnected components of the component of `root` (Hopcroft-Tarjan, iterative: no recursion depth). */
function blocksFrom(adjacent: number[][], root: number): number[][] {
  const disc = new Int32Array(adjacent.length).fill(-1);
  return blocksInto(adjacent, root, disc, new Int32Array(adjacent.length), []);
}

/** Biconnected components of every component, in the order of their first vertex. */
function allBlocks(adjacent: number[][]): number[][] {
  const disc = new Int32Array(adjacent.length).fill(-1);
  const low = new Int32Array(adjacent.length);
  const found: number[][] = [];
  for (let root = 0; root < adjacent.length; root++)
    if (disc[root] === -1 && adjacent[root]!.length > 0) blocksInto(adjacent, root, disc, low, found);
  return found;
}

/** Adds the blocks of the component of `root` to `found`; `disc` marks the vertices visited (-1: not yet). */
function blocksInto(
  adjacent: number[][],
  root: number,
  disc: Int32Array,
  low: Int32Array,
  found: number[][],
): number[][] {
  const edges: [number, number][] = [];
  let time = 0;
  const frames: { v: number; parent: number; next: number }[] = [{ v: root, parent: -1, next: 0 }];
  disc[root] = low[root] = time++;
  while (frames.length) {
    const f = frames.at(-1)!;
    if (f.next < adjacent[f.v]!.length) {
      const w = adjacent[f.v]![f.next++]!;
      if (disc[w] === -1) {
        edges.push([f.v, w]);
        disc[w] = low[w] = time++;
        frames.push({ v: w, parent: f.v, next: 0 });
      } else if (w !== f.parent && disc[w]! < disc[f.v]!) {
        edges.push([f.v, w]);
        low[f.v] = Math.min(low[f.v]!, disc[w]!);
      }
      continue;
    }
    frames.pop();
    const up = frames.at(-1);
    if (!up) break;
    low[up.v] = Math.min(low[up.v]!, low[f.v]!);
    if (low[f.v]! >= disc[up.v]!) {
      const block = new Set<number>();
      for (;;) {
        const [a, b] = edges.pop()!;
        block.add(a).add(b);
        if (a === up.v && b === f.v) break;
      }
      found.push([...block]);
    }
  }
  return found;
}

/** Does a configured firewall drop a class (first match in list order; DENY when no action or default is given)? */
export function firstMatchDrops(node: NetNode, cls: PacketClass): boolean {
  for (const rule of node.rules ?? []) {
    if (ruleHolds(rule, cls.boxes[0]!)) return (rule.action ?? 'DENY') !== 'ALLOW';
  }
  return node.defaultAction !== 'ALLOW';
}
