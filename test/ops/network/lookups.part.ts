/**
 * The lookups and reference rules the `/adp` handlers share, on in-memory network data: finding things (404s in
 * one wording), handing out ids in one request per kind, what refers to a graph or a node, the 424 checks, and the
 * bulk delete that writes nothing when there is nothing to delete.
 */
import t from 'tap';
import { NfvError } from '../../../src/model/errors.js';
import type { Graph } from '../../../src/model/types.js';
import {
  addGraph,
  assignNodeIds,
  checkHostNodes,
  checkPropertyGraphs,
  clearCollection,
  describeRefs,
  findGraph,
  findNode,
  findRequirementSet,
  findSubstrate,
  graphReferences,
  nodeReferences,
} from '../../../src/ops/network/lookups.js';
import { ADP_AREA, type AdpData } from '../../../src/store/network.js';
import { nextId, type IdSource } from '../../../src/store/area.js';
import { snapshot } from '../../helpers.js';
import { workspace } from '../call.js';

/** Ids from in-memory counters, with the requests made. */
function counters(): IdSource & { requests: string[] } {
  const last: Record<string, number> = {};
  const requests: string[] = [];
  return {
    requests,
    take: async (kind, count) => {
      requests.push(`${kind} ${count}`);
      const from = last[kind] ?? 0;
      last[kind] = from + count;
      return Array.from({ length: count }, (_, k) => from + k + 1);
    },
    skipPast: async (kind, id) => {
      last[kind] = Math.max(last[kind] ?? 0, id);
    },
    restart: async (kind) => {
      last[kind] = 0;
    },
  };
}

const refusal = (t: Tap.Test, run: () => unknown, status: number, message: RegExp) => {
  try {
    run();
    t.fail(`accepted, expected ${status}`);
  } catch (e) {
    t.ok(e instanceof NfvError && e.status === status, `a ${status}`);
    t.match((e as Error).message, message);
  }
};

const chain = (): Graph => ({
  id: 99,
  node: [
    { id: 5, name: 'a', neighbour: [{ name: 'b' }], configuration: { name: 'c', webclient: { nameWebServer: 'c' } } },
    { name: 'b', neighbour: [{ name: 'a' }, { name: 'c' }] },
    { name: 'c', neighbour: [{ name: 'b' }] },
  ],
});

t.test('addGraph: fresh ids for the graph and all it holds, one request per kind of id', async (t) => {
  const data = ADP_AREA.initial();
  const ids = counters();
  t.equal(await addGraph(data, ids, chain()), 1);
  t.equal(await addGraph(data, ids, chain()), 2);
  const g = findGraph(data, 2);
  t.same(
    g.node.map((n) => n.id),
    [4, 5, 6],
    'the id 5 the client gave is not kept',
  );
  t.same(
    g.node.flatMap((n) => (n.neighbour ?? []).map((nb) => nb.id)),
    [5, 6, 7, 8],
  );
  t.equal(g.node[0]!.configuration!.id, 2);
  t.same(ids.requests.slice(0, 4), ['graph 1', 'node 3', 'neighbour 4', 'configuration 1']);
});

t.test('assignNodeIds: a node whose entry in keep is a number keeps that id', async (t) => {
  const ids = counters();
  const nodes = await assignNodeIds(ids, chain().node, [40, undefined, 41]);
  t.same(
    nodes.map((n) => n.id),
    [40, 1, 41],
  );
  t.same(ids.requests, ['node 1', 'neighbour 4', 'configuration 1'], 'only the new node takes a node id');
});

t.test('find*: the thing, or a 404 that names it', async (t) => {
  const data = ADP_AREA.initial();
  await addGraph(data, counters(), chain());
  data.requirementSets.push({ id: 3, property: [] });
  data.substrates.push({ id: 4, hosts: [], connections: [] });
  t.equal(findNode(findGraph(data, 1), 2).name, 'b');
  t.equal(findRequirementSet(data, 3).id, 3);
  t.equal(findSubstrate(data, 4).id, 4);
  refusal(t, () => findGraph(data, 2), 404, /^graph 2 does not exist$/);
  refusal(t, () => findNode(findGraph(data, 1), 9), 404, /^node 9 does not exist in graph 1$/);
  refusal(t, () => findRequirementSet(data, 1), 404, /^requirement set 1 does not exist$/);
  refusal(t, () => findSubstrate(data, 1), 404, /^substrate 1 does not exist$/);
});

t.test('references: properties, constraints, neighbours and hosts that name a graph or a node', async (t) => {
  const data: AdpData = ADP_AREA.initial();
  await addGraph(data, counters(), chain());
  const graph = findGraph(data, 1);
  t.same(graphReferences(data, graph), [], 'nothing outside refers to it yet');
  t.same(nodeReferences(data, graph, 'a'), ['a neighbour of node 2 (b)']);

  data.requirementSets.push({
    id: 1,
    property: [{ id: 7, name: 'ISOLATION_PROPERTY', graph: 1, src: 'a', dst: 'c' }],
  });
  data.constraints.push({
    graph: 1,
    constraints: { allocationConstraints: { allocationConstraint: [{ type: 'FORBIDDEN', nodeA: 'b', nodeB: 'c' }] } },
  });
  data.substrates.push({
    id: 2,
    hosts: [
      { name: 'h1', nodeRef: [{ node: 'c' }] },
      { name: 'h2', fixedEndpoint: 'a' },
    ],
    connections: [],
  });
  t.same(graphReferences(data, graph), [
    'property 7 of requirement set 1',
    'host h1 of substrate 2',
    'host h2 of substrate 2',
  ]);
  t.same(nodeReferences(data, graph, 'c'), [
    'a neighbour of node 2 (b)',
    'property 7 of requirement set 1',
    'the constraints of graph 1',
    'host h1 of substrate 2',
  ]);
  t.same(nodeReferences(data, graph, 'b'), [
    'a neighbour of node 1 (a)',
    'a neighbour of node 3 (c)',
    'the constraints of graph 1',
  ]);
  t.equal(describeRefs(['w', 'x', 'y']), 'w, x, y');
  t.equal(describeRefs(['v', 'w', 'x', 'y', 'z']), 'v, w, x and 2 more');
});

t.test('checkHostNodes and checkPropertyGraphs: 424 for what does not exist', async (t) => {
  const data = ADP_AREA.initial();
  await addGraph(data, counters(), chain());
  checkHostNodes(data, [{ name: 'h', nodeRef: [{ node: 'a' }], fixedEndpoint: 'c' }]);
  refusal(
    t,
    () => checkHostNodes(data, [{ name: 'h', nodeRef: [{ node: 'a' }, { node: 'x' }] }]),
    424,
    /^host h refers to node x, which no graph has$/,
  );
  refusal(t, () => checkHostNodes(data, [{ name: 'h', fixedEndpoint: 'y' }]), 424, /refers to node y/);
  checkPropertyGraphs(data, { property: [{ name: 'ISOLATION_PROPERTY', graph: 1, src: 'a', dst: 'c' }] });
  refusal(
    t,
    () => checkPropertyGraphs(data, { property: [{ name: 'ISOLATION_PROPERTY', graph: 2, src: 'a', dst: 'c' }] }),
    424,
    /^property refers to graph 2, which does not exist$/,
  );
});

t.test('clearCollection: 304 and no write when empty, else the collection goes', async (t) => {
  const ws = await workspace(t);
  const before = await snapshot(ws.dir);
  t.match(await clearCollection(ws, 'substrates', 'substrates'), {
    kind: 'notModified',
    message: 'there are no substrates to delete',
  });
  t.same(await snapshot(ws.dir), before, 'nothing written');
  await ws.mutate(ADP_AREA, async (data, ids) => {
    data.substrates.push({ id: await nextId(ids, 'substrate'), hosts: [], connections: [] });
    data.requirementSets.push({ id: await nextId(ids, 'requirementSet'), property: [] });
  });
  t.match(await clearCollection(ws, 'substrates', 'substrates'), { kind: 'done' });
  const data = await ws.read(ADP_AREA);
  t.same(data.substrates, []);
  t.equal(data.requirementSets.length, 1, 'the other collections stay');
});
