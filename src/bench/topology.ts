/**
 * Seeded generator of networks in the style of VEREFOO's RegressioneTestCases, at any size, for `npm run bench:scale`
 * and the engine tests.
 *
 * A core of FORWARDER nodes joined as a random tree plus a few extra links (parallel paths); WEBCLIENT endpoints
 * (single hosts and whole /24 networks named with a -1 octet), WEBSERVER endpoints, some dual-homed, some behind two
 * places in parallel; with `nat`,
 * NAT nodes hiding private client networks (private clients are only ever sources) and ports on the requirements;
 * LOADBALANCER nodes in front of server pools. An allocation place sits on every link between two of those nodes,
 * some links have two in parallel; some places are replaced by configured firewalls (default ALLOW, a few DENY rules
 * taken from the policy), by mandatory rule-less firewalls or by optional ones.
 *
 * Requirements come from one consistent policy per (client, server) pair: isolate everything, reach anything, "only
 * port P" (reach P, isolate the ports below and above), or one port or sub-range reached or isolated. The ports of one
 * instance form a laminar family (any two are nested or disjoint), so the policy never contradicts itself.
 */
import { random } from '../model/random.js';
import type { Elements, NFV, Node, NodeMetrics, Property } from '../model/types.js';

export interface TopologySpec {
  /** About this many nodes (the result is within a few percent). */
  nodes: number;
  requirements: number;
  /** NAT nodes with private client networks, and ports on requirements. */
  nat: boolean;
  seed: number;
}

/** The benches' generator is the engine's (`model/random.ts`): one mulberry32 in `src`. */
export { random };

/** Ports of an instance: "only 80" uses 0-79 and 81-65535; every other range lies inside one of those. */
const ONLY_PORT = 80;
const BELOW = `0-${ONLY_PORT - 1}`;
const ABOVE = `${ONLY_PORT + 1}-65535`;
const OTHER_PORTS = ['22', '443', '8000-8999', '8080', '8443'];

/** Extra links of the forwarder core beyond its spanning tree, at every size (parallel paths). */
const EXTRA_CORE_LINKS = 3;

type PolicyKind = 'isolate' | 'reach' | 'only' | 'port-reach' | 'port-isolate';

const address = (a: number, k: number, last: number | '-1' = 1) => `${a}.${(k >> 8) & 255}.${k & 255}.${last}`;

/** A graph being generated: nodes in the order added, and links both ways. */
export function graphBuilder() {
  const nodes: Node[] = [];
  const byName = new Map<string, Node>();
  const add = (name: string, node: Omit<Node, 'name' | 'neighbour'>): string => {
    const n: Node = { name, neighbour: [], ...node };
    nodes.push(n);
    byName.set(name, n);
    return name;
  };
  const connect = (a: string, b: string) => {
    byName.get(a)!.neighbour!.push({ name: b });
    byName.get(b)!.neighbour!.push({ name: a });
  };
  return { nodes, byName, add, connect };
}

export function generateTopology(spec: TopologySpec): NFV {
  const rnd = random(spec.seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const chance = (p: number) => rnd() < p;
  const { nodes, byName, add, connect } = graphBuilder();
  let places = 0;
  const placeNames: string[] = [];
  /** Joins two nodes through an allocation place, sometimes (endpoint links) through two in parallel. */
  const link = (a: string, b: string, parallel = 0.1) => {
    const count = chance(parallel) ? 2 : 1;
    for (let i = 0; i < count; i++) {
      const p = add(address(172, ++places), {});
      placeNames.push(p);
      connect(a, p);
      connect(p, b);
    }
  };

  // A core of a tenth of the nodes; endpoints (with their places) are added until the size is reached.
  const core = Math.max(3, Math.round(spec.nodes * 0.1));
  const forwarders = Array.from({ length: core }, (_, k) =>
    add(address(10, k + 1), { functionalType: 'FORWARDER', configuration: { name: 'f', forwarder: { name: 'Fwd' } } }),
  );
  // The tree, then a few extra links: each closes a cycle, and paths through k cycles number 2^k.
  for (let k = 1; k < core; k++) link(forwarders[k]!, forwarders[Math.floor(rnd() * k)]!, 0);
  for (let k = 0; k < EXTRA_CORE_LINKS; k++) {
    const a = pick(forwarders);
    const b = pick(forwarders);
    if (a !== b) link(a, b, 0);
  }

  const clients: string[] = [];
  const privateClients: string[] = [];
  const servers: string[] = [];
  const attach = (endpoint: string) => {
    link(endpoint, pick(forwarders));
    if (chance(0.08)) link(endpoint, pick(forwarders));
  };
  let serial = 0;
  let privateNetworks = 0;
  while (nodes.length < spec.nodes || servers.length === 0 || clients.length === 0) {
    serial++;
    const roll = rnd();
    if (spec.nat && roll < 0.12) {
      // A NAT hiding one or two private client networks.
      const natName = address(200, serial);
      const pools = chance(0.5) ? 2 : 1;
      // Private networks never overlap: 192.168.0.-1 up to 192.168.255.-1, then 192.169.0.-1 and so on.
      const sources = Array.from({ length: pools }, () => {
        const k = privateNetworks++;
        return `192.${168 + (k >> 8)}.${k & 255}.-1`;
      });
      add(natName, { functionalType: 'NAT', configuration: { name: 'n', nat: { source: sources } } });
      link(natName, pick(forwarders), 0);
      for (const [k, src] of sources.entries()) {
        const host = chance(0.5) ? src : src.replace('-1', String(10 + k));
        add(host, webclient());
        privateClients.push(host);
        link(host, natName, 0);
      }
    } else if (roll < 0.22) {
      // A load balancer in front of a pool of servers (a plain forwarder in the model); the schema wants the pool
      // named, or nfv would refuse the document the bench solved.
      const pool: string[] = [];
      const lb = add(address(140, serial), {
        functionalType: 'LOADBALANCER',
        configuration: { name: 'lb', loadbalancer: { pool } },
      });
      link(lb, pick(forwarders), 0);
      const size = 2 + Math.floor(rnd() * 3);
      for (let k = 0; k < size; k++) {
        const s = add(address(141, serial, k + 1), webserver());
        servers.push(s);
        pool.push(s);
        link(s, lb, 0);
      }
    } else if (roll < 0.55) {
      const s = add(address(130, serial), webserver());
      servers.push(s);
      attach(s);
    } else {
      const c = add(chance(0.3) ? address(101, serial, '-1') : address(100, serial), webclient());
      clients.push(c);
      attach(c);
    }
  }

  // The policy, one per (client, server) pair, until the requirements are reached.
  const { properties, isolatedPairs } = policyRequirements(rnd, [...clients, ...privateClients], servers, {
    requirements: spec.requirements,
    ports: spec.nat,
  });

  // Some places become firewalls: configured ones (rules from the policy), mandatory rule-less and optional ones.
  const metrics: NodeMetrics[] = [];
  for (const name of placeNames) {
    const node = byName.get(name)!;
    const roll = rnd();
    if (roll < 0.04 && isolatedPairs.length) {
      const rules: Elements[] = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => {
        const [source, destination] = pick(isolatedPairs);
        return { action: 'DENY', source, destination, protocol: 'ANY', srcPort: '*', dstPort: '*' };
      });
      node.functionalType = 'FIREWALL';
      node.configuration = { name: 'fw', firewall: { defaultAction: 'ALLOW', elements: rules } };
    } else if (roll < 0.06) {
      node.functionalType = 'FIREWALL';
      node.configuration = { name: 'fw', firewall: { defaultAction: chance(0.5) ? 'DENY' : 'ALLOW' } };
    } else if (roll < 0.08) {
      node.functionalType = 'FIREWALL';
      node.configuration = { name: 'fw', firewall: { defaultAction: 'DENY' } };
      metrics.push({ node: name, optional: true });
    }
  }
  return {
    graphs: { graph: [{ id: 0, node: nodes }] },
    constraints: { nodeConstraints: { nodeMetrics: metrics }, linkConstraints: {} },
    propertyDefinition: { property: properties },
  };
}

/** Requirements and the (source, destination) pairs they isolate wholly, one consistent policy per pair. */
export interface Policy {
  properties: Property[];
  isolatedPairs: [string, string][];
}

/**
 * One policy per (source, destination) pair until `requirements` are reached: isolate or reach everything, and with
 * `ports` also "only port 80" (three requirements) or one port or range reached or isolated (laminar ports, so the
 * policy never contradicts itself).
 */
export function policyRequirements(
  rnd: () => number,
  sources: readonly string[],
  destinations: readonly string[],
  options: { requirements: number; ports: boolean },
): Policy {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const properties: Property[] = [];
  const isolatedPairs: [string, string][] = [];
  const seen = new Set<string>();
  const policies: PolicyKind[] = options.ports
    ? ['isolate', 'reach', 'only', 'port-reach', 'port-isolate']
    : ['isolate', 'reach'];
  const requirement = (name: Property['name'], src: string, dst: string, dstPort?: string): Property => ({
    name,
    graph: 0,
    src,
    dst,
    ...(dstPort ? { dstPort, lv4Proto: 'TCP' as const } : {}),
  });
  for (let tries = 0; properties.length < options.requirements && tries < options.requirements * 50; tries++) {
    const src = pick(sources);
    const dst = pick(destinations);
    const key = `${src} ${dst}`;
    if (src === dst || seen.has(key)) continue;
    seen.add(key);
    const policy = pick(policies);
    if (policy === 'isolate') {
      properties.push(requirement('ISOLATION_PROPERTY', src, dst));
      isolatedPairs.push([src, dst]);
    } else if (policy === 'reach') properties.push(requirement('REACHABILITY_PROPERTY', src, dst));
    else if (policy === 'only') {
      properties.push(requirement('REACHABILITY_PROPERTY', src, dst, String(ONLY_PORT)));
      properties.push(requirement('ISOLATION_PROPERTY', src, dst, BELOW));
      properties.push(requirement('ISOLATION_PROPERTY', src, dst, ABOVE));
    } else {
      const port = pick(OTHER_PORTS);
      const kind = policy === 'port-reach' ? 'REACHABILITY_PROPERTY' : 'ISOLATION_PROPERTY';
      properties.push(requirement(kind, src, dst, port));
    }
  }
  properties.length = Math.min(properties.length, options.requirements);
  return { properties, isolatedPairs };
}

export function webclient(): Omit<Node, 'name' | 'neighbour'> {
  return { functionalType: 'WEBCLIENT', configuration: { name: 'c', webclient: { nameWebServer: 'any' } } };
}

export function webserver(): Omit<Node, 'name' | 'neighbour'> {
  return { functionalType: 'WEBSERVER', configuration: { name: 's', webserver: { name: 'web' } } };
}

/** A generated node's address: `first` then k in the three lower octets. */
export const numbered = (first: number, k: number) => `${first}.${(k >> 16) & 255}.${(k >> 8) & 255}.${k & 255}`;

/**
 * The k-th private host of a generated network (k from 0): a web client in 192.168+.x.10, hidden behind a NAT node of
 * its own (200.0.0.k+1), which `link` joins to `at`. Returns the host's name.
 */
export function privateHost(
  add: ReturnType<typeof graphBuilder>['add'],
  link: (a: string, b: string) => void,
  k: number,
  at: string,
): string {
  const hidden = `192.${168 + (k >> 8)}.${k & 255}.-1`;
  const nat = add(numbered(200, k + 1), {
    functionalType: 'NAT',
    configuration: { name: 'n', nat: { source: [hidden] } },
  });
  const host = add(hidden.replace('-1', '10'), webclient());
  link(host, nat);
  link(nat, at);
  return host;
}
