/**
 * Host paths (P5): the directed, mirrored connection graph, least-latency distances between all hosts (one Dijkstra
 * per host), its connected parts, and the one host path a report shows for a pair (least latency, then fewest hops,
 * then the smallest host sequence in document order).
 */
import type { PlacementProblem } from './input.js';
import { IndexHeap } from '../heap.js';

export interface HostGraph {
  count: number;
  /** Out-edges of each host in compressed rows: targets `to[start[h]..start[h+1])` with their latencies. */
  start: Int32Array;
  to: Int32Array;
  latency: Float64Array;
  /** dist[a * count + b]: least latency from a to b, Infinity when b cannot be reached. */
  dist: Float64Array;
  /** Connected part of each host (mirroring makes reachability symmetric), numbered from 0 in host order. */
  part: Int32Array;
  parts: number;
}

function compress(count: number, edges: readonly { from: number; to: number; latency: number }[], reverse: boolean) {
  const start = new Int32Array(count + 1);
  for (const e of edges) start[(reverse ? e.to : e.from) + 1]!++;
  for (let h = 0; h < count; h++) start[h + 1]! += start[h]!;
  const fill = start.slice(0, count);
  const to = new Int32Array(edges.length);
  const latency = new Float64Array(edges.length);
  for (const e of edges) {
    const at = fill[reverse ? e.to : e.from]!++;
    to[at] = reverse ? e.from : e.to;
    latency[at] = e.latency;
  }
  return { start, to, latency };
}

/** Least latencies from `source` into `out` (a row of `count`). */
function dijkstra(g: Pick<HostGraph, 'count' | 'start' | 'to' | 'latency'>, source: number, out: Float64Array) {
  out.fill(Infinity);
  out[source] = 0;
  const heap = new IndexHeap((a, b) => out[a]! < out[b]!);
  const done = new Uint8Array(g.count);
  heap.push(source);
  while (heap.size > 0) {
    const h = heap.pop();
    if (done[h]) continue;
    done[h] = 1;
    for (let e = g.start[h]!; e < g.start[h + 1]!; e++) {
      const next = g.to[e]!;
      const d = out[h]! + g.latency[e]!;
      if (d < out[next]!) {
        out[next] = d;
        heap.push(next);
      }
    }
  }
}

export function hostGraph(problem: PlacementProblem): HostGraph {
  const count = problem.hosts.length;
  const { start, to, latency } = compress(count, problem.edges, false);
  const dist = new Float64Array(count * count);
  const g = { count, start, to, latency };
  for (let h = 0; h < count; h++) dijkstra(g, h, dist.subarray(h * count, (h + 1) * count));
  const part = new Int32Array(count).fill(-1);
  let parts = 0;
  for (let h = 0; h < count; h++) {
    if (part[h]! >= 0) continue;
    const stack = [h];
    part[h] = parts;
    while (stack.length) {
      const at = stack.pop()!;
      for (let e = start[at]!; e < start[at + 1]!; e++) {
        if (part[to[e]!]! < 0) {
          part[to[e]!] = parts;
          stack.push(to[e]!);
        }
      }
    }
    parts++;
  }
  return { count, start, to, latency, dist, part, parts };
}

/**
 * Shows host paths by the tie rule. For each target it keeps the (latency, hops) to it from every host; a path then
 * walks from the source to the smallest-index next host that stays on a least (latency, hops) path.
 */
export class HostPaths {
  private readonly towards = new Map<number, { latency: Float64Array; hops: Float64Array }>();
  private readonly reverse: ReturnType<typeof compress>;

  constructor(
    private readonly graph: HostGraph,
    edges: PlacementProblem['edges'],
  ) {
    this.reverse = compress(graph.count, edges, true);
  }

  private toTarget(target: number) {
    let known = this.towards.get(target);
    if (known) return known;
    const n = this.graph.count;
    const latency = new Float64Array(n).fill(Infinity);
    const hops = new Float64Array(n).fill(Infinity);
    latency[target] = 0;
    hops[target] = 0;
    const less = (a: number, b: number) =>
      latency[a]! < latency[b]! || (latency[a] === latency[b] && hops[a]! < hops[b]!);
    const heap = new IndexHeap(less);
    const done = new Uint8Array(n);
    heap.push(target);
    const { start, to, latency: weight } = this.reverse;
    while (heap.size > 0) {
      const h = heap.pop();
      if (done[h]) continue;
      done[h] = 1;
      for (let e = start[h]!; e < start[h + 1]!; e++) {
        const from = to[e]!;
        const l = latency[h]! + weight[e]!;
        const k = hops[h]! + 1;
        if (l < latency[from]! || (l === latency[from] && k < hops[from]!)) {
          latency[from] = l;
          hops[from] = k;
          heap.push(from);
        }
      }
    }
    known = { latency, hops };
    this.towards.set(target, known);
    return known;
  }

  /** Host indices from `from` to `to`, both included; undefined when `to` cannot be reached. */
  path(from: number, to: number): number[] | undefined {
    const { latency, hops } = this.toTarget(to);
    if (latency[from] === Infinity) return undefined;
    const g = this.graph;
    const path = [from];
    let at = from;
    while (at !== to) {
      let best = -1;
      for (let e = g.start[at]!; e < g.start[at + 1]!; e++) {
        const next = g.to[e]!;
        const onBest = latency[next]! + g.latency[e]! === latency[at] && hops[next]! + 1 === hops[at];
        if (onBest && (best < 0 || next < best)) best = next;
      }
      at = best;
      path.push(at);
    }
    return path;
  }
}
