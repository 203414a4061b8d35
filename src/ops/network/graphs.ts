/**
 * `/adp/graphs`: graphs, their nodes, neighbours, configurations and constraints (interface section 4, "Graphs").
 */
import { EmptyCollection, badRequest, conflict, failedDependency, notFound } from '../../model/errors.js';
import {
  ConfigurationType,
  ConstraintsType,
  GraphType,
  GraphsType,
  NeighbourType,
  NodeType,
} from '../../model/resources.js';
import type { Constraints, Graph, Graphs, Node } from '../../model/types.js';
import {
  done,
  envelope,
  notModified,
  operation,
  type DoneReply,
  type Input,
  type NotModifiedReply,
} from '../operation.js';
import {
  addGraph,
  assignNodeIds,
  createdAt,
  describeRefs,
  findGraph,
  findNode,
  graphReferences,
  nodeReferences,
} from './lookups.js';
import { ADP_AREA, type AdpData } from '../../store/network.js';
import { Unchanged, nextId } from '../../store/area.js';

const ids = { envelope: { item: 'id' } } as const;
const idList = { envelope: { item: 'ids' } } as const;

const gid = (i: Input) => i.params.gid as number;
const nid = (i: Input) => i.params.nid as number;

function checkNeighboursExist(graph: Graph, node: Node): void {
  for (const nb of node.neighbour ?? []) {
    if (nb.name !== node.name && !graph.node.some((n) => n.name === nb.name)) {
      throw notFound(`neighbour ${nb.name} is not a node of graph ${graph.id}`);
    }
  }
}

export const graphsList = operation({
  name: 'graphs.list',
  method: 'GET',
  path: '/adp/graphs',
  summary: 'List all graphs',
  reply: { envelope: { item: GraphsType } },
  status: 200,
  errors: 'envelope',
  handler: async ({ ws }) => {
    const data = await ws.read(ADP_AREA);
    if (data.graphs.length === 0) throw new EmptyCollection('graphs');
    return envelope({ graph: data.graphs } satisfies Graphs);
  },
});

export const graphsCreate = operation({
  name: 'graphs.create',
  method: 'POST',
  path: '/adp/graphs',
  summary: 'Create graphs; ids are generated and returned',
  body: GraphsType,
  reply: idList,
  status: 201,
  errors: 'envelope',
  handler: async ({ ws, body }) => {
    if (!body.graph?.length) throw badRequest('graphs.graph: at least one graph is required');
    const created = await ws.mutate(ADP_AREA, async (data, ids) => {
      const gids: number[] = [];
      for (const g of body.graph!) gids.push(await addGraph(data, ids, g));
      return gids;
    });
    return createdAt(envelope(created), `/adp/graphs/${created[0]}`);
  },
});

export const graphsDeleteAll = operation({
  name: 'graphs.deleteAll',
  method: 'DELETE',
  path: '/adp/graphs',
  summary: 'Delete all graphs, none if any is referred to',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async ({ ws }) =>
    ws.mutate<AdpData, DoneReply | NotModifiedReply>(ADP_AREA, (data) => {
      if (data.graphs.length === 0) return new Unchanged(notModified('there are no graphs to delete'));
      for (const g of data.graphs) {
        const refs = graphReferences(data, g);
        if (refs.length)
          throw failedDependency(`graph ${g.id} is referred to by ${describeRefs(refs)}; nothing was deleted`);
      }
      data.graphs = [];
      data.constraints = [];
      return done();
    }),
});

export const graphsGet = operation({
  name: 'graphs.get',
  method: 'GET',
  path: '/adp/graphs/{gid}',
  summary: 'Get a graph',
  reply: { envelope: { item: GraphType } },
  status: 200,
  errors: 'envelope',
  handler: async (i) => envelope(findGraph(await i.ws.read(ADP_AREA), gid(i))),
});

export const graphsUpdate = operation({
  name: 'graphs.update',
  method: 'PUT',
  path: '/adp/graphs/{gid}',
  summary: 'Replace a graph; nodes keep their ids by name, new nodes get new ones',
  body: GraphType,
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, async (data, ids) => {
      const graph = findGraph(data, gid(i));
      const kept = new Map(graph.node.map((n) => [n.name, n]));
      const dropped = graph.node.filter((n) => !i.body.node.some((m) => m.name === n.name));
      const outside = { ...graph, node: i.body.node };
      for (const n of dropped) {
        const refs = nodeReferences(data, outside, n.name).filter((r) => !r.startsWith('a neighbour'));
        if (refs.length) throw conflict(`node ${n.id} (${n.name}) is referred to by ${describeRefs(refs)}`);
      }
      graph.serviceGraph = i.body.serviceGraph;
      graph.node = await assignNodeIds(
        ids,
        i.body.node,
        i.body.node.map((n) => kept.get(n.name)?.id),
      );
      return done();
    }),
});

export const graphsDelete = operation({
  name: 'graphs.delete',
  method: 'DELETE',
  path: '/adp/graphs/{gid}',
  summary: 'Delete a graph and what it holds, unless it is referred to',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const graph = findGraph(data, gid(i));
      const refs = graphReferences(data, graph);
      if (refs.length) throw conflict(`graph ${graph.id} is referred to by ${describeRefs(refs)}`);
      data.graphs = data.graphs.filter((g) => g !== graph);
      data.constraints = data.constraints.filter((c) => c.graph !== graph.id);
      return done();
    }),
});

export const nodesCreate = operation({
  name: 'nodes.create',
  method: 'POST',
  path: '/adp/graphs/{gid}/nodes',
  summary: 'Add a node, with its neighbours and configuration',
  body: NodeType,
  reply: ids,
  status: 201,
  errors: 'envelope',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, async (data, ids) => {
      const graph = findGraph(data, gid(i));
      if (graph.node.some((n) => n.name === i.body.name))
        throw badRequest(`node.name: graph ${graph.id} already has a node ${i.body.name}`);
      checkNeighboursExist(graph, i.body);
      graph.node.push(...(await assignNodeIds(ids, [i.body])));
      return createdAt(envelope(i.body.id), `/adp/graphs/${graph.id}/nodes/${i.body.id}`);
    }),
});

export const nodesGet = operation({
  name: 'nodes.get',
  method: 'GET',
  path: '/adp/graphs/{gid}/nodes/{nid}',
  summary: 'Get a node',
  reply: { envelope: { item: NodeType } },
  status: 200,
  errors: 'envelope',
  handler: async (i) => envelope(findNode(findGraph(await i.ws.read(ADP_AREA), gid(i)), nid(i))),
});

export const nodesUpdate = operation({
  name: 'nodes.update',
  method: 'PUT',
  path: '/adp/graphs/{gid}/nodes/{nid}',
  summary: 'Update a node (name, type, configuration); its neighbours are kept',
  body: NodeType,
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, async (data, ids) => {
      const graph = findGraph(data, gid(i));
      const node = findNode(graph, nid(i));
      if (i.body.name !== node.name) {
        if (graph.node.some((n) => n.name === i.body.name))
          throw badRequest(`node.name: graph ${graph.id} already has a node ${i.body.name}`);
        const refs = nodeReferences(data, graph, node.name);
        if (refs.length)
          throw conflict(
            `node ${node.id} (${node.name}) cannot be renamed: it is referred to by ${describeRefs(refs)}`,
          );
      }
      node.name = i.body.name;
      node.functionalType = i.body.functionalType;
      if (i.body.configuration) {
        const id = node.configuration?.id ?? (await nextId(ids, 'configuration'));
        node.configuration = { ...i.body.configuration, id };
      } else delete node.configuration;
      return done();
    }),
});

export const nodesDelete = operation({
  name: 'nodes.delete',
  method: 'DELETE',
  path: '/adp/graphs/{gid}/nodes/{nid}',
  summary: 'Delete a node, unless it is referred to',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const graph = findGraph(data, gid(i));
      const node = findNode(graph, nid(i));
      const refs = nodeReferences(data, graph, node.name);
      if (refs.length) throw conflict(`node ${node.id} (${node.name}) is referred to by ${describeRefs(refs)}`);
      if (graph.node.length === 1)
        throw conflict(`node ${node.id} is the last node of graph ${graph.id}; delete the graph instead`);
      graph.node = graph.node.filter((n) => n !== node);
      return done();
    }),
});

export const neighboursCreate = operation({
  name: 'neighbours.create',
  method: 'POST',
  path: '/adp/graphs/{gid}/nodes/{nid}/neighbours',
  summary: 'Add a neighbour (an outgoing link) to a node',
  body: NeighbourType,
  reply: ids,
  status: 201,
  errors: 'envelope',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, async (data, ids) => {
      const graph = findGraph(data, gid(i));
      const node = findNode(graph, nid(i));
      if (!graph.node.some((n) => n.name === i.body.name))
        throw notFound(`neighbour ${i.body.name} is not a node of graph ${graph.id}`);
      if ((node.neighbour ?? []).some((nb) => nb.name === i.body.name)) {
        throw badRequest(`neighbour.name: node ${node.id} already has neighbour ${i.body.name}`);
      }
      const neighbour = { id: await nextId(ids, 'neighbour'), name: i.body.name };
      (node.neighbour ??= []).push(neighbour);
      // A neighbour has no GET of its own: its node lists it.
      return createdAt(envelope(neighbour.id), `/adp/graphs/${graph.id}/nodes/${node.id}`);
    }),
});

export const neighboursDelete = operation({
  name: 'neighbours.delete',
  method: 'DELETE',
  path: '/adp/graphs/{gid}/nodes/{noid}/neighbours/{neid}',
  summary: 'Remove a neighbour from a node',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const node = findNode(findGraph(data, gid(i)), i.params.noid as number);
      const before = node.neighbour?.length ?? 0;
      node.neighbour = (node.neighbour ?? []).filter((nb) => nb.id !== i.params.neid);
      if (node.neighbour.length === before)
        throw notFound(`neighbour ${i.params.neid} does not exist on node ${node.id}`);
      return done();
    }),
});

export const configurationGet = operation({
  name: 'configuration.get',
  method: 'GET',
  path: '/adp/graphs/{gid}/nodes/{nid}/configuration',
  summary: 'Get the configuration of a node',
  reply: { envelope: { item: ConfigurationType } },
  status: 200,
  errors: 'envelope',
  handler: async (i) => {
    const node = findNode(findGraph(await i.ws.read(ADP_AREA), gid(i)), nid(i));
    if (!node.configuration) throw notFound(`node ${node.id} has no configuration`);
    return envelope(node.configuration);
  },
});

export const configurationUpdate = operation({
  name: 'configuration.update',
  method: 'PUT',
  path: '/adp/graphs/{gid}/nodes/{nid}/configuration/{cid}',
  summary: 'Replace the configuration of a node',
  body: ConfigurationType,
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const node = findNode(findGraph(data, gid(i)), nid(i));
      if (node.configuration?.id !== i.params.cid)
        throw notFound(`configuration ${i.params.cid} does not exist on node ${node.id}`);
      node.configuration = { ...i.body, id: node.configuration.id };
      return done();
    }),
});

/** The constraints entry of a graph, if it has one. */
const constraintsOf = (data: { constraints: { graph: number; constraints: Constraints }[] }, g: number) =>
  data.constraints.find((c) => c.graph === g);

export const constraintsGet = operation({
  name: 'constraints.get',
  method: 'GET',
  path: '/adp/graphs/{gid}/constraints',
  summary: 'Get the constraints of a graph',
  reply: { envelope: { item: ConstraintsType } },
  status: 200,
  errors: 'envelope',
  handler: async (i) => {
    const data = await i.ws.read(ADP_AREA);
    findGraph(data, gid(i));
    const c = constraintsOf(data, gid(i));
    if (!c) throw notFound(`graph ${gid(i)} has no constraints`);
    return envelope(c.constraints);
  },
});

export const constraintsReplace = operation({
  name: 'constraints.replace',
  method: 'PUT',
  path: '/adp/graphs/{gid}/constraints',
  summary: 'Set the constraints of a graph, replacing any it had',
  body: ConstraintsType,
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      findGraph(data, gid(i));
      const c = constraintsOf(data, gid(i));
      if (c) c.constraints = i.body;
      else data.constraints.push({ graph: gid(i), constraints: i.body });
      return done();
    }),
});

export const constraintsCreate = operation({
  name: 'constraints.create',
  method: 'POST',
  path: '/adp/graphs/{gid}/constraints',
  summary: 'Add constraints to a graph; the kinds given replace those the graph had (shallow)',
  body: ConstraintsType,
  reply: 'none',
  status: 201,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      findGraph(data, gid(i));
      const c = constraintsOf(data, gid(i));
      if (c) c.constraints = { ...c.constraints, ...i.body };
      else data.constraints.push({ graph: gid(i), constraints: i.body });
      return createdAt(done(), `/adp/graphs/${gid(i)}/constraints`);
    }),
});

export const constraintsDelete = operation({
  name: 'constraints.delete',
  method: 'DELETE',
  path: '/adp/graphs/{gid}/constraints',
  summary: 'Delete the constraints of a graph',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      findGraph(data, gid(i));
      if (!constraintsOf(data, gid(i))) throw notFound(`graph ${gid(i)} has no constraints`);
      data.constraints = data.constraints.filter((c) => c.graph !== gid(i));
      return done();
    }),
});

/** The operations of this file, in the order of the interface document. */
export const graphOperations = [
  graphsList,
  graphsCreate,
  graphsDeleteAll,
  graphsGet,
  graphsUpdate,
  graphsDelete,
  nodesCreate,
  nodesGet,
  nodesUpdate,
  nodesDelete,
  neighboursCreate,
  neighboursDelete,
  configurationGet,
  configurationUpdate,
  constraintsGet,
  constraintsReplace,
  constraintsCreate,
  constraintsDelete,
];
