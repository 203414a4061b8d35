/**
 * Seeded generator of WANs (issue 48) for `npm run bench:wan`, built as the inputs from the Internet Topology
 * Zoo were: each PoP a router (FORWARDER), an allocation place on every link, one host per PoP behind a place of its
 * own, about two requirements per host (isolation or reachability between two hosts, half of them on a TCP port).
 * With `nat`, the host of about a quarter of the PoPs is private behind a NAT of its own (host - place - NAT - place -
 * router); private hosts are only ever sources.
 *
 * Shapes:
 * - wan N: a backbone: a spanning tree grown mostly as chains (a new PoP hangs from the last one) with a few hubs
 *   (otherwise from a PoP drawn in proportion to its degree), then links between PoPs of degree below 4 until there
 *   are `links` (default 1.2 N), as real backbones have: low degree, long chains, a few cycles;
 * - ring N: N PoPs on one cycle;
 * - ladder N: two chains of N/2 PoPs with a rung between every pair;
 * - mesh R x C: a grid;
 * - graph: a given one (a network of the Internet Topology Zoo, read by zoo.ts).
 *
 * One requirement per (source, destination) pair, so the policy never contradicts itself. Node names are IPv4
 * addresses: routers 10.x, places 172.x, NATs 200.x, public hosts 100.x.y.1, private hosts 192.168+.P.10 hidden
 * as 192.168+.P.-1.
 */
import type { NFV, Property } from '../model/types.js';
import { graphBuilder, numbered, privateHost, random, webserver } from './topology.js';

export type WanShape =
  | { kind: 'wan'; pops: number; links?: number }
  | { kind: 'ring'; pops: number }
  | { kind: 'ladder'; pops: number }
  | { kind: 'mesh'; rows: number; columns: number }
  /** A given backbone (an Internet Topology Zoo network, zoo.ts): PoPs 0..pops-1 and their links. */
  | { kind: 'graph'; name: string; pops: number; links: [number, number][] };

export interface WanSpec {
  shape: WanShape;
  /** A quarter of the PoPs' hosts private behind a NAT. */
  nat: boolean;
  seed: number;
  /** Requirements in all (default two per host). */
  requirements?: number;
}

/** Ports of the requirements on TCP: single ports and a range, any two nested or disjoint. */
const PORTS = ['22', '80', '443', '8080', '8000-8999'];
/** Degree below which a PoP may take an extra link (backbones have few hubs). */
const EXTRA_LINK_DEGREE = 4;

/** A short name of the shape, as the bench prints it ("wan-750", "ring-100", "mesh-6x10"). */
export function wanName(shape: WanShape): string {
  if (shape.kind === 'graph') return shape.name;
  return shape.kind === 'mesh' ? `mesh-${shape.rows}x${shape.columns}` : `${shape.kind}-${shape.pops}`;
}

/** PoPs of a shape. */
export const popsOf = (shape: WanShape) => (shape.kind === 'mesh' ? shape.rows * shape.columns : shape.pops);

/** The links between PoPs of a shape, as pairs of PoP positions. */
function backbone(shape: WanShape, rnd: () => number): [number, number][] {
  const n = popsOf(shape);
  if (shape.kind === 'graph') return shape.links;
  const links: [number, number][] = [];
  if (shape.kind === 'ring') for (let k = 0; k < n; k++) links.push([k, (k + 1) % n]);
  else if (shape.kind === 'ladder') {
    const half = Math.floor(n / 2);
    for (let k = 0; k < half; k++) {
      if (k + 1 < half) links.push([k, k + 1], [half + k, half + k + 1]);
      links.push([k, half + k]);
    }
  } else if (shape.kind === 'mesh') {
    for (let r = 0; r < shape.rows; r++)
      for (let c = 0; c < shape.columns; c++) {
        const k = r * shape.columns + c;
        if (c + 1 < shape.columns) links.push([k, k + 1]);
        if (r + 1 < shape.rows) links.push([k, k + shape.columns]);
      }
  } else {
    const degree = new Array<number>(n).fill(0);
    const adjacent = new Set<string>();
    const join = (a: number, b: number) => {
      adjacent.add(`${Math.min(a, b)} ${Math.max(a, b)}`);
      degree[a]!++;
      degree[b]!++;
      links.push([a, b]);
    };
    for (let k = 1; k < n; k++) {
      if (rnd() < 0.6) join(k, k - 1);
      else {
        // Preferential attachment (one more than the degree, so that leaves can be drawn): a few hubs.
        let x = rnd() * (degree.slice(0, k).reduce((s, d) => s + d, 0) + k);
        let at = 0;
        while (at < k - 1 && (x -= degree[at]! + 1) >= 0) at++;
        join(k, at);
      }
    }
    const wanted = shape.links ?? Math.round(1.2 * n);
    for (let tries = 0; links.length < wanted && tries < wanted * 1000; tries++) {
      const [a, b] = [Math.floor(rnd() * n), Math.floor(rnd() * n)];
      if (a === b || degree[a]! >= EXTRA_LINK_DEGREE || degree[b]! >= EXTRA_LINK_DEGREE) continue;
      if (adjacent.has(`${Math.min(a, b)} ${Math.max(a, b)}`)) continue;
      join(a, b);
    }
  }
  return links;
}

export function generateWan(spec: WanSpec): NFV {
  const rnd = random(spec.seed);
  const { nodes, add, connect } = graphBuilder();
  let places = 0;
  /** Joins two nodes through an allocation place (a node without a functional type). */
  const link = (a: string, b: string) => {
    const p = add(numbered(172, ++places), {});
    connect(a, p);
    connect(p, b);
  };
  const pops = Array.from({ length: popsOf(spec.shape) }, (_, k) =>
    add(numbered(10, k + 1), { functionalType: 'FORWARDER', configuration: { name: 'f', forwarder: { name: 'Fwd' } } }),
  );
  for (const [a, b] of backbone(spec.shape, rnd)) link(pops[a]!, pops[b]!);

  const hosts: string[] = [];
  const publicHosts: string[] = [];
  let nats = 0;
  pops.forEach((pop, k) => {
    if (spec.nat && rnd() < 0.25) {
      hosts.push(privateHost(add, link, nats++, pop));
    } else {
      const host = add(`100.${(k >> 8) & 255}.${k & 255}.1`, webserver());
      hosts.push(host);
      publicHosts.push(host);
      link(host, pop);
    }
  });

  const wanted = spec.requirements ?? 2 * hosts.length;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const properties: Property[] = [];
  const seen = new Set<string>();
  for (let tries = 0; properties.length < wanted && tries < wanted * 50; tries++) {
    const [src, dst] = [pick(hosts), pick(publicHosts)];
    if (src === dst || seen.has(`${src} ${dst}`)) continue;
    seen.add(`${src} ${dst}`);
    const name = rnd() < 0.5 ? 'ISOLATION_PROPERTY' : 'REACHABILITY_PROPERTY';
    const port = rnd() < 0.5 ? { lv4Proto: 'TCP' as const, dstPort: pick(PORTS) } : {};
    properties.push({ name, graph: 0, src, dst, ...port });
  }
  return {
    graphs: { graph: [{ id: 0, node: nodes }] },
    constraints: { nodeConstraints: {}, linkConstraints: {} },
    propertyDefinition: { property: properties },
  };
}
