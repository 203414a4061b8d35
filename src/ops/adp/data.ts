/**
 * The `/adp` area of the workspace (`adp.json`) and the lookups and reference rules the handlers share.
 */
import { NfvError, failedDependency, notFound } from '../../model/errors.js';
import type { Connection, Constraints, Graph, Host, Node, PropertyDefinition } from '../../model/types.js';
import { IdLedger, array, id, object } from '../../store/shape.js';
import type { AreaSpec, Workspace } from '../../store/workspace.js';

export interface Substrate {
  id: number;
  hosts: Host[];
  connections: Connection[];
}

export interface SimulationRecord {
  id: number;
  /** The stored result NFV (JSON model form). */
  result: unknown;
  /** The non-enforceability report and the solve summary. */
  report: unknown;
  /** Where the inputs came from: the workspace resources it created or was given. */
  source: { gids: number[]; rid?: number; sid?: number };
  /** How it was run (absent in results stored by nfv 0.1). */
  run?: SimulationRun;
}

export interface SimulationRun {
  algorithm: string;
  /** Solving time, seconds. */
  seconds: number;
  /** When it was stored, ISO 8601. */
  created: string;
  /** What the client named its input (the CLI: the file name), when it did. */
  origin?: string;
}

export interface AdpData {
  /** Last id given out per kind; ids are never reused. */
  counters: Record<string, number>;
  graphs: Graph[];
  constraints: { graph: number; constraints: Constraints }[];
  requirementSets: PropertyDefinition[];
  substrates: Substrate[];
  simulations: SimulationRecord[];
}

/** Checks the structure of `adp.json`: every list present, ids unique per kind and not above their counters. */
function decodeAdp(raw: unknown): AdpData {
  const d = object(raw, 'the file');
  const ids = new IdLedger();
  array(d.graphs, 'graphs').forEach((g, i) => {
    const graph = object(g, `graphs[${i}]`);
    ids.add('graph', graph.id, `graphs[${i}]`);
    array(graph.node, `graphs[${i}].node`).forEach((n, j) => {
      const w = `graphs[${i}].node[${j}]`;
      const node = object(n, w);
      ids.add('node', node.id, w);
      array(node.neighbour ?? [], `${w}.neighbour`).forEach((nb, k) =>
        ids.add('neighbour', object(nb, `${w}.neighbour[${k}]`).id, `${w}.neighbour[${k}]`),
      );
      if (node.configuration !== undefined)
        ids.add('configuration', object(node.configuration, `${w}.configuration`).id, `${w}.configuration`);
    });
  });
  array(d.constraints, 'constraints').forEach((c, i) =>
    id(object(c, `constraints[${i}]`).graph, `constraints[${i}].graph`),
  );
  array(d.requirementSets, 'requirementSets').forEach((r, i) => {
    const set = object(r, `requirementSets[${i}]`);
    ids.add('requirementSet', set.id, `requirementSets[${i}]`);
    array(set.property, `requirementSets[${i}].property`).forEach((p, j) =>
      ids.add('property', object(p, `requirementSets[${i}].property[${j}]`).id, `requirementSets[${i}].property[${j}]`),
    );
  });
  array(d.substrates, 'substrates').forEach((s, i) => {
    const substrate = object(s, `substrates[${i}]`);
    ids.add('substrate', substrate.id, `substrates[${i}]`);
    array(substrate.hosts, `substrates[${i}].hosts`);
    array(substrate.connections, `substrates[${i}].connections`);
  });
  array(d.simulations, 'simulations').forEach((s, i) =>
    ids.add('simulation', object(s, `simulations[${i}]`).id, `simulations[${i}]`),
  );
  ids.check(d.counters);
  return d as unknown as AdpData;
}

export const ADP_AREA: AreaSpec<AdpData> = {
  name: 'adp',
  initial: () => ({ counters: {}, graphs: [], constraints: [], requirementSets: [], substrates: [], simulations: [] }),
  decode: decodeAdp,
};

export function nextId(data: AdpData, kind: string): number {
  data.counters[kind] = (data.counters[kind] ?? 0) + 1;
  return data.counters[kind];
}

export function findGraph(data: AdpData, gid: number): Graph {
  const g = data.graphs.find((x) => x.id === gid);
  if (!g) throw notFound(`graph ${gid} does not exist`);
  return g;
}

export function findNode(graph: Graph, nid: number): Node {
  const n = graph.node.find((x) => x.id === nid);
  if (!n) throw notFound(`node ${nid} does not exist in graph ${graph.id}`);
  return n;
}

export function findRequirementSet(data: AdpData, rid: number): PropertyDefinition {
  const r = data.requirementSets.find((x) => x.id === rid);
  if (!r) throw notFound(`requirement set ${rid} does not exist`);
  return r;
}

export function findSubstrate(data: AdpData, sid: number): Substrate {
  const s = data.substrates.find((x) => x.id === sid);
  if (!s) throw notFound(`substrate ${sid} does not exist`);
  return s;
}

/** Gives a node (unless it keeps `id`) and everything nested in it fresh ids. */
export function assignNodeIds(data: AdpData, node: Node, id?: number): Node {
  node.id = id ?? nextId(data, 'node');
  for (const nb of node.neighbour ?? []) nb.id = nextId(data, 'neighbour');
  if (node.configuration) node.configuration.id = nextId(data, 'configuration');
  return node;
}

/** Stores a graph with fresh ids for it and everything nested; ids sent by the client are ignored. */
export function addGraph(data: AdpData, graph: Graph): number {
  graph.id = nextId(data, 'graph');
  graph.node.forEach((n) => assignNodeIds(data, n));
  data.graphs.push(graph);
  return graph.id;
}

const hostNodeNames = (h: Host) => [
  ...(h.nodeRef ?? []).map((r) => r.node),
  ...(h.fixedEndpoint ? [h.fixedEndpoint] : []),
];

/** What refers to a graph from outside it: properties naming it, hosts naming one of its nodes. */
export function graphReferences(data: AdpData, graph: Graph): string[] {
  const refs: string[] = [];
  for (const set of data.requirementSets) {
    for (const p of set.property) if (p.graph === graph.id) refs.push(`property ${p.id} of requirement set ${set.id}`);
  }
  const names = new Set(graph.node.map((n) => n.name));
  for (const s of data.substrates) {
    for (const h of s.hosts)
      if (hostNodeNames(h).some((n) => names.has(n))) refs.push(`host ${h.name} of substrate ${s.id}`);
  }
  return refs;
}

/** What refers to a node: neighbour entries of other nodes, properties and constraints of its graph, hosts. */
export function nodeReferences(data: AdpData, graph: Graph, name: string): string[] {
  const refs: string[] = [];
  for (const n of graph.node) {
    if (n.name !== name && (n.neighbour ?? []).some((nb) => nb.name === name))
      refs.push(`a neighbour of node ${n.id} (${n.name})`);
  }
  for (const set of data.requirementSets) {
    for (const p of set.property) {
      if (p.graph === graph.id && (p.src === name || p.dst === name))
        refs.push(`property ${p.id} of requirement set ${set.id}`);
    }
  }
  const c = data.constraints.find((x) => x.graph === graph.id)?.constraints;
  const inConstraints =
    (c?.nodeConstraints?.nodeMetrics ?? []).some((m) => m.node === name) ||
    (c?.linkConstraints?.linkMetrics ?? []).some((m) => m.src === name || m.dst === name) ||
    (c?.allocationConstraints?.allocationConstraint ?? []).some((a) => a.nodeA === name || a.nodeB === name);
  if (inConstraints) refs.push(`the constraints of graph ${graph.id}`);
  for (const s of data.substrates) {
    for (const h of s.hosts) if (hostNodeNames(h).includes(name)) refs.push(`host ${h.name} of substrate ${s.id}`);
  }
  return refs;
}

/** A host may name only nodes that exist in some graph of the workspace (424 otherwise). */
export function checkHostNodes(data: AdpData, hosts: Host[]): void {
  const names = new Set(data.graphs.flatMap((g) => g.node.map((n) => n.name)));
  for (const h of hosts) {
    const missing = hostNodeNames(h).find((n) => !names.has(n));
    if (missing !== undefined) throw failedDependency(`host ${h.name} refers to node ${missing}, which no graph has`);
  }
}

/** A property may name only an existing graph (424 otherwise). */
export function checkPropertyGraphs(data: AdpData, set: PropertyDefinition): void {
  for (const p of set.property) {
    if (!data.graphs.some((g) => g.id === p.graph))
      throw failedDependency(`property refers to graph ${p.graph}, which does not exist`);
  }
}

export const describeRefs = (refs: string[]) =>
  `${refs.slice(0, 3).join(', ')}${refs.length > 3 ? ` and ${refs.length - 3} more` : ''}`;

/** Bulk delete of a whole collection: 304 when there is nothing to delete (interface section 7). */
export function clearCollection(ws: Workspace, key: 'requirementSets' | 'substrates' | 'simulations', label: string) {
  return ws.mutate(ADP_AREA, (data) => {
    if (data[key].length === 0) throw new NfvError(304, `there are no ${label} to delete`);
    data[key] = [];
    return {};
  });
}
