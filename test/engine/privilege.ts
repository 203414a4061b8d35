/**
 * An independent check of least privilege (docs/SEMANTICS.md), sharing no code with the engine: for every firewall
 * whose rules the simulation wrote and that its answer uses, what its list lets through (first match over every
 * packet, its default included) lies inside the traffic of some reachability requirement arriving at it, on some
 * simple path from that requirement's source to its destination, as the NATs before it rewrote that traffic. A
 * firewall the input gives a default ALLOW lets through what no requirement speaks of; there, what it lets through
 * of each requirement's own packets that arrive at it on a simple path and would go on to their destination (not
 * addressed to a node after it) must lie inside that reachability traffic.
 *
 * The packet semantics are those of `packets.ts` (the evaluators'): a requirement's traffic is its own packets and
 * the same addressed to each NAT on the path; what arrives at a node is what the nodes before it forward, firewalls
 * forwarding everything (what a requirement needs there does not depend on what other firewalls decide).
 */
import type { NFV, Node } from '../../src/model/types.js';
import {
  addressed,
  behave,
  everything,
  isNat,
  minus,
  octets,
  requirementBox,
  set,
  simplePaths,
  DST,
  type Box,
} from './packets.js';

/** Nodes whose rules the simulation writes: allocation places and firewalls given without rules. */
export function synthesised(input: NFV): Set<string> {
  const out = new Set<string>();
  for (const g of input.graphs.graph ?? [])
    for (const n of g.node) {
      const fw = n.functionalType === 'FIREWALL' && (n.configuration?.firewall?.elements ?? []).length === 0;
      if (n.functionalType === undefined || fw) out.add(`${g.id ?? 0}/${n.name}`);
    }
  return out;
}

/** What a firewall's list lets through, over every packet (packets addressed to it are delivered, not passed). */
export const letThrough = (node: Node): Box[] => behave(node, [everything()], true);

/**
 * The packets of the graph's requirements (reachability ones only with `reachability`) that arrive at `at` on some
 * simple path through it; `own`: only their own packets (not those addressed to a NAT), and only those that would
 * go on to their destination (not addressed to a node after `at`).
 */
export function arriving(result: NFV, graph: number, at: string, reachability: boolean, own: boolean): Box[] {
  const g = (result.graphs.graph ?? []).find((x) => (x.id ?? 0) === graph);
  const nodes = new Map((g?.node ?? []).map((n) => [n.name, n]));
  const fixedPaths = result.networkForwardingPaths?.path ?? [];
  const out: Box[] = [];
  for (const p of result.propertyDefinition.property) {
    if (p.graph !== graph || (reachability && p.name === 'ISOLATION_PROPERTY')) continue;
    const base = requirementBox(p);
    const dst = octets(p.dst);
    if (!base || !dst) continue;
    const fixed = fixedPaths.filter((f) => f.pathNode[0]?.name === p.src && f.pathNode.at(-1)?.name === p.dst).at(-1);
    const paths = fixed ? [fixed.pathNode.map((n) => n.name)] : simplePaths(nodes, p.src, p.dst, 20_000);
    for (const path of paths) {
      const k = path.indexOf(at);
      if (k <= 0 || k === path.length - 1) continue;
      const nats = path.slice(1, -1).filter((n) => isNat(nodes.get(n)!));
      let region = [set(base, DST, dst), ...(own ? [] : nats.map((n) => set(base, DST, octets(n)!)))];
      for (const name of path.slice(1, k)) region = behave(nodes.get(name)!, region, false);
      if (own)
        for (const name of path.slice(k, -1)) if (octets(name)) region = minus(region, addressed(octets(name)!, DST));
      out.push(...region);
    }
  }
  return out;
}

/** A firewall that lets through more than reachability needs: its name and a box of packets it should not pass. */
export interface Excess {
  graph: number;
  node: string;
  box: Box;
}

/** Every used firewall of `result` whose rules were written (per `input`) and that passes traffic no one needs. */
export function privilegeExcess(input: NFV, result: NFV): Excess[] {
  const written = synthesised(input);
  // The default the input gave (a place has none): one the answer chose is held to what it lets through.
  const givenAllow = new Set(
    (input.graphs.graph ?? []).flatMap((g) =>
      g.node.filter((n) => n.configuration?.firewall?.defaultAction === 'ALLOW').map((n) => `${g.id ?? 0}/${n.name}`),
    ),
  );
  const out: Excess[] = [];
  for (const g of result.graphs.graph ?? []) {
    const graph = g.id ?? 0;
    for (const n of g.node) {
      if (n.functionalType !== 'FIREWALL' || !written.has(`${graph}/${n.name}`)) continue;
      const need = arriving(result, graph, n.name, true, false);
      const given = givenAllow.has(`${graph}/${n.name}`);
      const passed = given ? behave(n, arriving(result, graph, n.name, false, true), true) : letThrough(n);
      const extra = need.reduce((rest, b) => minus(rest, b), passed);
      if (extra.length > 0) out.push({ graph, node: n.name, box: extra[0]! });
    }
  }
  return out;
}
