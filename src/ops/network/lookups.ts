/**
 * The lookups and reference rules the `/adp` handlers share, over the network area of the workspace.
 */
import { failedDependency, notFound } from '../../model/errors.js';
import type { Graph, Host, Node, PropertyDefinition } from '../../model/types.js';
import { ADP_AREA, type AdpData, type Substrate } from '../../store/network.js';
import { type Workspace } from '../../store/workspace.js';
import { Unchanged, nextId, type IdSource } from '../../store/area.js';
import { done, notModified, type DoneReply, type NotModifiedReply, type Reply } from '../operation.js';

/**
 * A 201's answer with the path of what it created, which serve sends as an absolute Location. A create of several
 * (graphs, hosts) names the first; what has no GET of its own names what holds it (a neighbour: its node).
 */
export const createdAt = <R extends Reply>(reply: R, path: string): R => ({ ...reply, location: path });

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

/**
 * Gives nodes and everything nested in them fresh ids, in order; a node whose entry in `keep` is a number keeps that
 * id. One request per kind of id, however many nodes.
 */
export async function assignNodeIds(ids: IdSource, nodes: Node[], keep: (number | undefined)[] = []): Promise<Node[]> {
  const nodeIds = await ids.take('node', nodes.filter((_, i) => keep[i] === undefined).length);
  const neighbourIds = await ids.take(
    'neighbour',
    nodes.reduce((n, node) => n + (node.neighbour?.length ?? 0), 0),
  );
  const configurationIds = await ids.take('configuration', nodes.filter((node) => node.configuration).length);
  for (const [i, node] of nodes.entries()) {
    node.id = keep[i] ?? nodeIds.shift();
    for (const nb of node.neighbour ?? []) nb.id = neighbourIds.shift();
    if (node.configuration) node.configuration.id = configurationIds.shift();
  }
  return nodes;
}

/** Stores a graph with fresh ids for it and everything nested; ids sent by the client are ignored. */
export async function addGraph(data: AdpData, ids: IdSource, graph: Graph): Promise<number> {
  const id = await nextId(ids, 'graph');
  graph.id = id;
  await assignNodeIds(ids, graph.node);
  data.graphs.push(graph);
  return id;
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
export function clearCollection(
  ws: Workspace,
  key: 'requirementSets' | 'substrates' | 'simulations',
  label: string,
): Promise<DoneReply | NotModifiedReply> {
  return ws.mutate<AdpData, DoneReply | NotModifiedReply>(ADP_AREA, (data) => {
    if (data[key].length === 0) return new Unchanged(notModified(`there are no ${label} to delete`));
    data[key] = [];
    return done();
  });
}
