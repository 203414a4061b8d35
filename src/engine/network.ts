/**
 * From an NFV graph to the network the engine reasons about: service-graph expansion (B 2.2), wildcard requirement
 * expansion (B 2.3), what each node does (A.2), and the paths of each requirement (B 2.5, B 1.8).
 */
import { parseAddress } from '../model/address.js';
import { badRequest, quote } from '../model/errors.js';
import type { Constraints, Elements, ForwardingPath, Graph, Node, Property } from '../model/types.js';
import { octetBounds } from '../model/space.js';

/** Types where traffic starts or stops and never transits (A.2). */
export const END_HOSTS = new Set(['WEBCLIENT', 'WEBSERVER', 'ENDHOST', 'ENDPOINT', 'MAILCLIENT', 'MAILSERVER']);
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
   * Reconfiguration: a deployed firewall (`rules`, `defaultAction`) whose rules may change (each kept, removed, or
   * overridden by a new rule above them) and whose default may flip, at the fewest changes.
   */
  deployed?: boolean;
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
  const expandSide = (list: Property[], side: 'src' | 'dst'): Property[] =>
    list.flatMap((p) => {
      if (!p[side].includes('-1')) return [p];
      const net = parseAddress(p[side]);
      if (!net) throw badRequest(`property ${side} ${quote(p[side])} is not an address pattern`);
      const inside = graph.node.filter((n) => {
        const a = parseAddress(n.name);
        return (
          n.functionalType &&
          WILDCARD_TARGETS.has(n.functionalType) &&
          a &&
          a.every((o, k) => net[k] === -1 || net[k] === o)
        );
      });
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

/** The nodes of a graph; with `reconfigure`, every configured firewall is deployed and may change (issue 14). */
export function buildNetwork(graph: Graph, constraints: Constraints | undefined, reconfigure = false): NetNode[] {
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
      return { ...base, role: 'nat', natSources: sources.map(octetBounds) };
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

/** Simple directed paths from src to dst; end hosts never transit. A matching forwarding path replaces them. */
export function pathsBetween(
  net: NetNode[],
  src: number,
  dst: number,
  forwarding: ForwardingPath[],
  limit: number,
): number[][] {
  const byName = new Map(net.map((n) => [n.name, n.index]));
  const fixed = forwarding
    .filter((p) => p.pathNode[0]?.name === net[src]!.name && p.pathNode.at(-1)?.name === net[dst]!.name)
    .at(-1);
  if (fixed) return [fixed.pathNode.map((pn) => byName.get(pn.name)!)];
  const paths: number[][] = [];
  const onPath = new Set<number>([src]);
  const stack = [src];
  const walk = (at: number) => {
    for (const next of net[at]!.next) {
      if (onPath.has(next)) continue;
      if (next === dst) {
        paths.push([...stack, dst]);
        if (paths.length > limit)
          throw badRequest(`more than ${limit} paths between ${net[src]!.name} and ${net[dst]!.name}`);
        continue;
      }
      if (net[next]!.role === 'endhost') continue;
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
