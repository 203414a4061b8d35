/**
 * Seeded generator of redundant networks (issue 26), for `npm run bench:fabric` and the engine tests: the shapes
 * real networks are built in, where the number of simple paths between two hosts grows factorially.
 *
 * - leaf-spine S x L: every leaf linked to every spine, H hosts per leaf;
 * - fat-tree k: k pods of k/2 edge and k/2 aggregation switches (complete bipartite inside a pod), (k/2)^2 core
 *   switches, aggregation switch j of each pod linked to cores j*k/2 .. j*k/2+k/2-1, k/2 hosts per edge switch;
 * - rings of rings: an outer ring of R routers, each the first of an inner ring of r routers, one host on each other
 *   inner router;
 * - mesh: N routers with the degree distribution of backbone networks (Geant, Internet2: most routers of degree 2 or
 *   3, a few hubs): a ring (every router on a cycle) plus links drawn by preferential attachment up to the average
 *   degree asked for, one host on about half of the routers.
 *
 * Switches and routers are FORWARDER nodes; an allocation place sits on every link (between two switches, and
 * between a host and its switch). With `nat`, a quarter of the hosts are private clients behind a NAT of their own
 * (host - place - NAT - place - switch; private hosts are only ever sources) and requirements carry TCP ports.
 * Requirements come from `policyRequirements` over host pairs, about `requirementsPerHost` per host. Node names are
 * IPv4 addresses: switches 10.x, places 172.x, NATs 200.x, hosts 100.G.0.J (G the switch they hang from, so the
 * hosts of one switch share a /24), private hosts 192.168+.P.10 hidden as 192.168+.P.-1.
 */
import type { NFV } from '../model/types.js';
import { graphBuilder, numbered, policyRequirements, privateHost, random, webserver } from './topology.js';

export type FabricShape =
  | { kind: 'leaf-spine'; spines: number; leaves: number; hostsPerLeaf: number }
  | { kind: 'fat-tree'; k: number }
  | { kind: 'rings'; rings: number; ringSize: number }
  | { kind: 'mesh'; routers: number; degree: number };

export interface FabricSpec {
  shape: FabricShape;
  /** Private hosts behind NATs, and ports on requirements. */
  nat: boolean;
  seed: number;
  /** Requirements per host (default 2). */
  requirementsPerHost?: number;
}

/** A short name of the shape, as the bench prints it ("leaf-spine 8x32", "fat-tree k=8"). */
export function shapeName(shape: FabricShape): string {
  switch (shape.kind) {
    case 'leaf-spine':
      return `leaf-spine ${shape.spines}x${shape.leaves}`;
    case 'fat-tree':
      return `fat-tree k=${shape.k}`;
    case 'rings':
      return `rings ${shape.rings}x${shape.ringSize}`;
    case 'mesh':
      return `mesh ${shape.routers} deg ${shape.degree}`;
  }
}

export function generateFabric(spec: FabricSpec): NFV {
  const rnd = random(spec.seed);
  const { nodes, add, connect } = graphBuilder();
  let places = 0;
  /** Joins two nodes through an allocation place. */
  const link = (a: string, b: string) => {
    const p = add(numbered(172, ++places), {});
    connect(a, p);
    connect(p, b);
  };
  let switches = 0;
  const router = () =>
    add(numbered(10, ++switches), {
      functionalType: 'FORWARDER',
      configuration: { name: 'f', forwarder: { name: 'Fwd' } },
    });

  const publicHosts: string[] = [];
  const privateHosts: string[] = [];
  let groups = 0;
  let nats = 0;
  /** `count` hosts below one switch; with `nat` about a quarter of them private behind a NAT each. */
  const hostsOn = (at: string, count: number) => {
    const group = ++groups;
    for (let j = 0; j < count; j++) {
      if (spec.nat && rnd() < 0.25) {
        privateHosts.push(privateHost(add, link, nats++, at));
      } else {
        const host = add(`100.${(group >> 8) & 255}.${group & 255}.${j + 1}`, webserver());
        publicHosts.push(host);
        link(host, at);
      }
    }
  };

  const shape = spec.shape;
  if (shape.kind === 'leaf-spine') {
    const spines = Array.from({ length: shape.spines }, router);
    for (let l = 0; l < shape.leaves; l++) {
      const leaf = router();
      for (const s of spines) link(leaf, s);
      hostsOn(leaf, shape.hostsPerLeaf);
    }
  } else if (shape.kind === 'fat-tree') {
    const half = shape.k / 2;
    const cores = Array.from({ length: half * half }, router);
    for (let pod = 0; pod < shape.k; pod++) {
      const aggregation = Array.from({ length: half }, router);
      aggregation.forEach((agg, j) => {
        for (let c = 0; c < half; c++) link(agg, cores[j * half + c]!);
      });
      for (let e = 0; e < half; e++) {
        const edge = router();
        for (const agg of aggregation) link(edge, agg);
        hostsOn(edge, half);
      }
    }
  } else if (shape.kind === 'rings') {
    const outer = Array.from({ length: shape.rings }, router);
    outer.forEach((r, k) => link(r, outer[(k + 1) % outer.length]!));
    for (const head of outer) {
      const inner = [head, ...Array.from({ length: shape.ringSize - 1 }, router)];
      inner.forEach((r, k) => link(r, inner[(k + 1) % inner.length]!));
      for (const r of inner.slice(1)) hostsOn(r, 1);
    }
  } else {
    const routers = Array.from({ length: shape.routers }, router);
    const degree = routers.map(() => 2);
    const adjacent = new Set<string>();
    const pair = (a: number, b: number) => `${Math.min(a, b)} ${Math.max(a, b)}`;
    // A ring in a random order, so that every router lies on a cycle, as in a backbone.
    const order = routers.map((_, k) => k);
    for (let k = order.length - 1; k > 0; k--) {
      const j = Math.floor(rnd() * (k + 1));
      [order[k], order[j]] = [order[j]!, order[k]!];
    }
    order.forEach((a, k) => {
      const b = order[(k + 1) % order.length]!;
      adjacent.add(pair(a, b));
      link(routers[a]!, routers[b]!);
    });
    // Preferential attachment: a router gains links in proportion to those it has, which makes a few hubs.
    const extra = Math.round((shape.routers * shape.degree) / 2) - shape.routers;
    const weighted = () => {
      let x = rnd() * degree.reduce((s, d) => s + d, 0);
      for (const [k, d] of degree.entries()) if ((x -= d) < 0) return k;
      return degree.length - 1;
    };
    for (let added = 0, tries = 0; added < extra && tries < extra * 100; tries++) {
      const a = weighted();
      const b = Math.floor(rnd() * routers.length);
      if (a === b || adjacent.has(pair(a, b))) continue;
      adjacent.add(pair(a, b));
      degree[a]!++;
      degree[b]!++;
      link(routers[a]!, routers[b]!);
      added++;
    }
    for (const r of routers) if (rnd() < 0.5) hostsOn(r, 1);
  }

  const hosts = publicHosts.length + privateHosts.length;
  const { properties } = policyRequirements(rnd, [...publicHosts, ...privateHosts], publicHosts, {
    requirements: Math.round(hosts * (spec.requirementsPerHost ?? 2)),
    ports: spec.nat,
  });
  return {
    graphs: { graph: [{ id: 0, node: nodes }] },
    constraints: { nodeConstraints: {}, linkConstraints: {} },
    propertyDefinition: { property: properties },
  };
}
