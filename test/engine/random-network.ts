/**
 * Small random networks with cycles for the engine's and the evaluators' tests: forwarders, places, configured
 * firewalls with random first-match rules, NATs on cycles and at the edge, one-way links, overlapping addresses,
 * forwarding paths; isolation, reachability and complete reachability, some on ports.
 */
import { random } from '../../src/bench/topology.js';
import type { PathListing, SimulationResult } from '../../src/engine/simulate.js';
import { NfvError } from '../../src/model/errors.js';
import type { Elements, NFV, Node, Property } from '../../src/model/types.js';
import { checkedSimulate } from './evaluator.js';
import { TooManyPaths, simplePaths } from './packets.js';

/** An answer re-checked by the evaluators, or the error the engine gave instead. */
export type Outcome = SimulationResult | { status: number; message: string };

/** The engine's answer for one way of finding paths, re-checked by the evaluators, or its error's status and text. */
export async function answer(nfv: NFV, paths: PathListing): Promise<Outcome> {
  try {
    return await checkedSimulate(structuredClone(nfv), { paths });
  } catch (e) {
    if (e instanceof NfvError) return { status: e.status, message: e.message };
    throw e;
  }
}

/**
 * One network answered with state graphs (`'needed'`) and with listed paths (`'all'`): both outcomes, and what
 * differs between them (another error, or another verdict on some requirement), if anything.
 */
export async function bothWays(nfv: NFV, seed: number): Promise<{ graphs: Outcome; paths: Outcome; differs?: string }> {
  const [graphs, paths] = [await answer(nfv, 'needed'), await answer(nfv, 'all')];
  if (!('report' in graphs) || !('report' in paths)) {
    const [a, b] = [JSON.stringify(graphs), JSON.stringify(paths)];
    return { graphs, paths, ...(a !== b ? { differs: `seed ${seed}: ${a.slice(0, 200)} / ${b.slice(0, 200)}` } : {}) };
  }
  const held = (r: SimulationResult) => r.report.requirements.map((q) => (q.isSat ? 1 : 0)).join('');
  const [a, b] = [held(graphs), held(paths)];
  return { graphs, paths, ...(a !== b ? { differs: `seed ${seed}: held ${a} / ${b}` } : {}) };
}

/** A small random network with at least one cycle, every requirement claimed satisfied. */
export function smallNetwork(seed: number): NFV {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const chance = (p: number) => rnd() < p;
  const nodes: Node[] = [];
  const byName = new Map<string, Node>();
  const add = (node: Node) => {
    nodes.push(node);
    byName.set(node.name, node);
    return node.name;
  };
  const link = (a: string, b: string, oneWay = false) => {
    const na = byName.get(a)!;
    if (!na.neighbour!.some((n) => n.name === b)) na.neighbour!.push({ name: b });
    const nb = byName.get(b)!;
    if (!oneWay && !nb.neighbour!.some((n) => n.name === a)) nb.neighbour!.push({ name: a });
  };
  const coreCount = 3 + Math.floor(rnd() * 5);
  const core: string[] = [];
  const nats: { name: string; pool: string }[] = [];
  for (let k = 1; k <= coreCount; k++) {
    const roll = rnd();
    // Sometimes an intermediate node is addressed inside a host network (100.0.1.-1): traffic to it is delivered.
    const name = chance(0.1) ? `100.0.1.${50 + k}` : `10.0.0.${k}`;
    if (roll < 0.2) add({ name, neighbour: [] });
    else if (roll < 0.35)
      add({ name, functionalType: 'FORWARDER', neighbour: [], configuration: { name: 'f', forwarder: { name: 'F' } } });
    else if (roll < 0.55) {
      const pool = `192.168.${nats.length}.-1`;
      nats.push({ name, pool });
      add({ name, functionalType: 'NAT', neighbour: [], configuration: { name: 'n', nat: { source: [pool] } } });
    } else add({ name, functionalType: 'FIREWALL', neighbour: [] });
    core.push(name);
  }
  // A random tree, then extra links: at least one cycle.
  for (let k = 1; k < core.length; k++) link(core[k]!, core[Math.floor(rnd() * k)]!);
  const extra = 1 + Math.floor(rnd() * 3);
  for (let k = 0; k < extra; k++) {
    const [a, b] = [pick(core), pick(core)];
    if (a !== b) link(a, b, chance(0.15));
  }
  const hosts: string[] = [];
  const hostCount = 3 + Math.floor(rnd() * 3);
  for (let k = 1; k <= hostCount; k++) {
    const nat = nats.length && chance(0.4) ? pick(nats) : undefined;
    const name = nat ? nat.pool.replace('-1', String(10 + k)) : k === 1 && chance(0.3) ? '100.0.1.-1' : `100.0.${k}.1`;
    if (byName.has(name)) continue;
    add({
      name,
      functionalType: chance(0.5) ? 'WEBCLIENT' : 'WEBSERVER',
      neighbour: [],
      configuration: { name: 'h', webclient: { nameWebServer: 'x' } },
    });
    hosts.push(name);
    link(name, nat && chance(0.7) ? nat.name : pick(core));
    if (chance(0.3)) link(name, pick(core));
  }
  // Rules from the network's addresses and their generalisations.
  const addresses = [
    ...hosts,
    ...core,
    '*',
    '192.168.0.-1',
    '100.0.-1.-1',
    '-1.-1.-1.-1',
    '100.0.0.0/16',
    '10.0.0.0/30',
  ];
  const portChoices = ['*', '*', '80', '0-79', '81-65535', '22', '1000-2000'];
  for (const n of nodes) {
    if (n.functionalType !== 'FIREWALL') continue;
    const rules: Elements[] = Array.from({ length: Math.floor(rnd() * 4) }, () => ({
      action: chance(0.5) ? 'ALLOW' : 'DENY',
      source: pick(addresses),
      destination: pick(addresses),
      protocol: pick(['ANY', 'ANY', 'TCP', 'UDP'] as const),
      srcPort: '*',
      dstPort: pick(portChoices),
    }));
    n.configuration = { name: 'fw', firewall: { defaultAction: chance(0.5) ? 'ALLOW' : 'DENY', elements: rules } };
  }
  const kinds: Property['name'][] = ['ISOLATION_PROPERTY', 'REACHABILITY_PROPERTY', 'COMPLETE_REACHABILITY_PROPERTY'];
  const properties: Property[] = [];
  const ends = [...hosts, ...nats.map((n) => n.name)];
  for (let k = 0; k < 6; k++) {
    const src = pick(hosts);
    const dst = chance(0.85) ? pick(hosts) : pick(ends);
    const port = chance(0.4)
      ? { dstPort: pick(['80', '0-79', '22', '1000-1500']), lv4Proto: pick(['TCP', 'UDP'] as const) }
      : {};
    properties.push({ name: pick(kinds), graph: 0, src, dst, ...port, isSat: true });
  }
  const nfv: NFV = {
    graphs: { graph: [{ id: 0, node: nodes }] },
    constraints: { nodeConstraints: {}, linkConstraints: {} },
    propertyDefinition: { property: properties },
  };
  if (chance(0.1)) {
    const p = properties[0]!;
    nfv.networkForwardingPaths = { path: [{ id: 1, pathNode: [p.src, pick(core), p.dst].map((name) => ({ name })) }] };
  }
  return nfv;
}

/**
 * A random network of the evaluator's tests with decisions to make (places and rule-less firewalls), keeping the
 * requirements whose ends some path joins (the others are 400s, the same both ways).
 */
export function withDecisions(seed: number): NFV {
  const nfv = smallNetwork(seed);
  const nodes = new Map(nfv.graphs.graph![0]!.node.map((n) => [n.name, n]));
  const joined = (src: string, dst: string) => {
    try {
      return simplePaths(nodes, src, dst, 1000).length > 0;
    } catch (e) {
      if (e instanceof TooManyPaths) return true;
      throw e;
    }
  };
  const properties = nfv.propertyDefinition.property;
  nfv.propertyDefinition.property = properties.filter((p) => joined(p.src, p.dst));
  if (nfv.networkForwardingPaths && !nfv.propertyDefinition.property.includes(properties[0]!))
    delete nfv.networkForwardingPaths;
  const rnd = random(seed + 10_000);
  for (const n of nfv.graphs.graph![0]!.node) {
    if (n.functionalType !== 'FIREWALL') continue;
    const roll = rnd();
    if (roll < 0.5) {
      delete n.functionalType;
      delete n.configuration;
    } else if (roll < 0.75) n.configuration = { name: 'fw', firewall: { defaultAction: 'DENY' } };
  }
  return nfv;
}
