/**
 * A path-free evaluator (issue 26): decides each requirement of a result network with the meaning of
 * `evaluator.ts` (every simple path, engine.md 2.8) without listing the simple paths. It shares nothing with
 * src/engine; the packet semantics (boxes, what each node does) are `packets.ts`, shared with the path evaluator.
 *
 * Method, per requirement from S to D:
 * 1. The transit graph: S, D and every node that is not an end host (end hosts never transit), a link between two of
 *    them in either direction as an undirected edge. Its blocks (biconnected components, Hopcroft-Tarjan) and the
 *    path S, B1, c1, B2, ..., ck-1, Bk, D of its block-cut tree: every simple S-D path (directed, so undirected too)
 *    runs through B1..Bk in order, entering Bi at c(i-1) and leaving at ci, and any simple paths inside the blocks
 *    joined at the cut vertices make a simple S-D path (blocks share only cut vertices). A node in no Bi lies on no
 *    simple S-D path; in a block of three or more nodes every node lies on some simple path between any two others
 *    (Menger), so the union of the Bi is exactly the set of nodes on some simple S-D path of the undirected graph.
 *    O(V + E).
 * 2. Isolation and reachability: what arrives over all simple paths is a union over paths, and every node acts on
 *    each packet alone, so it is computed block by block: the packets leaving c(i-1) spread inside Bi along links
 *    (never back into c(i-1), stopping at ci), each node keeping the packets it has seen so that each is
 *    propagated once (a fixpoint over (node, packet region): O(|Bi| + links of Bi) region steps, each bounded by the
 *    packet classes present); at ci its behaviour applies once, then Bi+1. The requirement's packets are its own
 *    plus those addressed to each NAT among c1..ck-1 (every simple path passes all of them, so every path seeds the
 *    same).
 *    Walks and simple paths agree here: inside a block without a NAT, nodes only pass or drop a packet (firewalls,
 *    delivery to an intermediate node's address), never change it, so a walk that lets a packet through contains a
 *    simple path (its loops cut out) whose nodes all let it through as well. A NAT changes packets (engine.md
 *    B 2.6.2); at a cut vertex it acts exactly once on every path, as here. A NAT inside a block is where a walk
 *    could differ (a packet changed on a cycle, then passing a node it passed before): the simple-path meaning is
 *    kept by deciding such a requirement over the simple paths of its blocks only (method 'simple paths'), the one
 *    place this evaluator lists paths, bounded like the path evaluator (TooManyPaths). Result networks of fabrics
 *    put NATs at the edge, as cut vertices; the tests count the requirements that needed the fallback.
 * 3. Complete reachability (some path on which all the traffic that arrives with every firewall removed arrives):
 *    with no NAT among the nodes of the Bi and no intermediate node addressed inside the requirement's packets,
 *    every simple path carries the same open traffic T (the requirement's packets, to D); a path lets all of T
 *    arrive exactly when each of its nodes passes all of T, so the question is plain reachability from S to D over
 *    the nodes that pass all of T: O(V + E) after one check per node. Otherwise, the simple paths of the blocks.
 *
 * A NetworkForwardingPath matching the requirement is its only path, evaluated as such.
 */
import type { NFV, Node, Property } from '../../src/model/types.js';
import {
  DST,
  END_HOSTS,
  addressed,
  arrives,
  behave,
  intersect,
  isNat,
  minus,
  octets,
  requirementBox,
  set,
  simplePaths,
  within,
  type Box,
  type Violation,
} from './packets.js';

/** How a requirement was decided: its fixed forwarding path, block by block, or over the simple paths of its blocks. */
export type Method = 'fixed path' | 'blocks' | 'simple paths';

export interface Verdict {
  index: number;
  property: Property;
  holds: boolean;
  why?: string;
  method: Method;
}

/** The blocks on the block-cut tree path from S to D: each block's nodes and the cut vertices joining them. */
interface BlockPath {
  blocks: Set<string>[];
  /** S, c1, ..., ck-1, D. */
  joints: string[];
}

/** Biconnected components of the component of `root` (Hopcroft-Tarjan, iterative: no recursion depth). */
function blocksFrom(adjacent: number[][], root: number): number[][] {
  const n = adjacent.length;
  const disc = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const edges: [number, number][] = [];
  const found: number[][] = [];
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

/** The block-cut tree path from src to dst over the transit graph, or undefined when no path joins them. */
function blockPath(nodes: Map<string, Node>, src: string, dst: string): BlockPath | undefined {
  const names = [...nodes.keys()].filter(
    (k) => k === src || k === dst || !END_HOSTS.has(nodes.get(k)!.functionalType ?? ''),
  );
  const at = new Map(names.map((k, i) => [k, i]));
  const adjacent: Set<number>[] = names.map(() => new Set());
  for (const [i, k] of names.entries()) {
    for (const nb of nodes.get(k)!.neighbour ?? []) {
      const j = at.get(nb.name);
      if (j === undefined || j === i) continue;
      adjacent[i]!.add(j);
      adjacent[j]!.add(i);
    }
  }
  const blocks = blocksFrom(
    adjacent.map((s) => [...s]),
    at.get(src)!,
  );
  // Breadth first over the tree of vertices and blocks (vertex v is v, block b is names.length + b).
  const blocksOf = names.map((): number[] => []);
  blocks.forEach((b, k) => b.forEach((v) => blocksOf[v]!.push(k)));
  const from = new Map<number, number>([[at.get(src)!, -1]]);
  const queue = [at.get(src)!];
  const target = at.get(dst)!;
  while (queue.length && !from.has(target)) {
    const x = queue.shift()!;
    const next = x < names.length ? blocksOf[x]!.map((b) => names.length + b) : blocks[x - names.length]!;
    for (const y of next) {
      if (from.has(y)) continue;
      from.set(y, x);
      queue.push(y);
    }
  }
  if (!from.has(target)) return undefined;
  const chain: number[] = [];
  for (let x = target; x !== -1; x = from.get(x)!) chain.unshift(x);
  return {
    blocks: chain.filter((x) => x >= names.length).map((x) => new Set(blocks[x - names.length]!.map((v) => names[v]!))),
    joints: chain.filter((x) => x < names.length).map((v) => names[v]!),
  };
}

/**
 * Packets leaving `from` spread through one block to `to`: what reaches `to` along any walk inside the block that
 * never returns to `from` and passes no end host.
 */
function acrossBlock(nodes: Map<string, Node>, block: Set<string>, from: string, to: string, leaving: Box[]): Box[] {
  const seen = new Map<string, Box[]>();
  const arrived: Box[] = [];
  const queue: [string, Box[]][] = [];
  const onwards = (at: string, region: Box[]) => {
    if (region.length === 0) return;
    for (const nb of nodes.get(at)!.neighbour ?? []) {
      if (!block.has(nb.name) || nb.name === from) continue;
      if (nb.name === to) arrived.push(...region);
      else if (!END_HOSTS.has(nodes.get(nb.name)!.functionalType ?? '')) queue.push([nb.name, region]);
    }
  };
  onwards(from, leaving);
  while (queue.length) {
    const [at, region] = queue.shift()!;
    const known = seen.get(at) ?? [];
    const fresh = known.reduce((rest, b) => minus(rest, b), region);
    if (fresh.length === 0) continue;
    seen.set(at, [...known, ...fresh]);
    onwards(at, behave(nodes.get(at)!, fresh, true));
  }
  return arrived;
}

/** Does `passed` hold all of `open`? */
const covers = (passed: Box[], open: Box[]) => passed.reduce((rest, b) => minus(rest, b), open).length === 0;

/** One requirement's verdict (true: it holds) in the graph `nodes`, with its fixed forwarding path if any. */
export function decide(
  nodes: Map<string, Node>,
  p: Property,
  fixed: string[] | undefined,
  limit = 20_000,
): Omit<Verdict, 'index' | 'property'> {
  const failing = (method: Method, why: string) => ({ holds: false, why, method });
  const kind = p.name;
  const judge = (method: Method, arrivedSomething: boolean, whole: boolean, along?: string) => {
    if (kind === 'ISOLATION_PROPERTY')
      return arrivedSomething
        ? failing(method, `traffic arrives${along ? ` along ${along}` : ''}`)
        : { holds: true, method };
    if (kind === 'REACHABILITY_PROPERTY')
      return arrivedSomething ? { holds: true, method } : failing(method, 'no traffic arrives on any path');
    return whole ? { holds: true, method } : failing(method, 'no path lets all of its traffic arrive');
  };
  /** The path evaluator's meaning over the given paths. */
  const overPaths = (method: Method, paths: string[][]) => {
    const arrived = paths.map((path) => arrives(nodes, p, path, true));
    const k = arrived.findIndex((r) => r.length > 0);
    const whole =
      kind === 'COMPLETE_REACHABILITY_PROPERTY' &&
      paths.some((path, i) => {
        const open = arrives(nodes, p, path, false);
        return open.length > 0 && covers(arrived[i]!, open);
      });
    return judge(method, k >= 0, whole, k >= 0 ? paths[k]!.join(' > ') : undefined);
  };
  if (fixed) return overPaths('fixed path', [fixed]);
  const route = p.src === p.dst ? undefined : blockPath(nodes, p.src, p.dst);
  if (!route) return judge('blocks', false, false);
  const inside = new Set(route.blocks.flatMap((b) => [...b]));
  inside.delete(p.src);
  inside.delete(p.dst);
  const cuts = new Set(route.joints.slice(1, -1));
  const base = requirementBox(p);
  const dst = octets(p.dst)!;
  /** The simple paths of the blocks only: nodes on no simple S-D path are left out of the search. */
  const blockPaths = () => {
    const kept = new Map([...nodes].filter(([k]) => inside.has(k) || k === p.src || k === p.dst));
    return overPaths('simple paths', simplePaths(kept, p.src, p.dst, limit));
  };
  if (kind === 'COMPLETE_REACHABILITY_PROPERTY') {
    const open = base ? [set(base, DST, dst)] : [];
    const delivering = [...inside].some((k) => {
      const own = octets(k);
      return own !== undefined && open.some((b) => intersect(b, addressed(own, DST)));
    });
    if ([...inside].some((k) => isNat(nodes.get(k)!)) || delivering) return blockPaths();
    if (open.length === 0) return judge('blocks', false, false);
    // Reachability over the nodes that pass all of the open traffic.
    const passing = (k: string) => covers(behave(nodes.get(k)!, open, true), open);
    const reached = new Set([p.src]);
    const queue = [p.src];
    while (queue.length && !reached.has(p.dst)) {
      for (const nb of nodes.get(queue.shift()!)!.neighbour ?? []) {
        if (reached.has(nb.name) || !(nb.name === p.dst || (inside.has(nb.name) && passing(nb.name)))) continue;
        reached.add(nb.name);
        queue.push(nb.name);
      }
    }
    return judge('blocks', false, reached.has(p.dst));
  }
  if ([...inside].some((k) => !cuts.has(k) && isNat(nodes.get(k)!))) return blockPaths();
  if (!base) return judge('blocks', false, false);
  let region = [
    set(base, DST, dst),
    ...[...cuts].filter((k) => isNat(nodes.get(k)!)).map((k) => set(base, DST, octets(k)!)),
  ];
  route.blocks.forEach((block, i) => {
    const [from, to] = [route.joints[i]!, route.joints[i + 1]!];
    region = acrossBlock(nodes, block, from, to, region);
    if (to !== p.dst) region = behave(nodes.get(to)!, region, true);
  });
  return judge('blocks', within(region, addressed(dst, DST)).length > 0, false);
}

/** The verdict of every requirement of a result network, claimed satisfied or not. */
export function verdicts(result: NFV, limit = 20_000): Verdict[] {
  const graphs = new Map((result.graphs.graph ?? []).map((g) => [g.id ?? 0, g]));
  const fixedPaths = result.networkForwardingPaths?.path ?? [];
  return result.propertyDefinition.property.map((p, index) => {
    const nodes = new Map((graphs.get(p.graph)?.node ?? []).map((n) => [n.name, n]));
    if (!nodes.has(p.src) || !nodes.has(p.dst) || !octets(p.src) || !octets(p.dst))
      return {
        index,
        property: p,
        holds: false,
        why: 'its source or destination is not an addressed node of the result',
        method: 'blocks',
      };
    const fixed = fixedPaths.filter((f) => f.pathNode[0]?.name === p.src && f.pathNode.at(-1)?.name === p.dst).at(-1);
    return {
      index,
      property: p,
      ...decide(
        nodes,
        p,
        fixed?.pathNode.map((n) => n.name),
        limit,
      ),
    };
  });
}

/** Requirements of `result` claimed satisfied that do not hold, found without listing paths. */
export function pathFreeViolations(result: NFV): Violation[] {
  return verdicts(result)
    .filter((v) => v.property.isSat === true && !v.holds)
    .map((v) => ({ index: v.index, property: v.property, why: v.why! }));
}
