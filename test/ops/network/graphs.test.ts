/**
 * The `/adp/graphs` operations in-process: graphs, nodes, neighbours, configurations and constraints. Ids are the
 * service's, references are guarded (409, 424) and a refusal leaves the workspace as it was.
 */
import t from 'tap';
import { graphsCreate, graphsDeleteAll, graphsGet, graphsList } from '../../../src/ops/network/graphs.js';
import { invoke } from '../../../src/ops/operation.js';
import { render } from '../../../src/ops/render.js';
import { ADP_AREA } from '../../../src/store/network.js';
import { fixture, snapshot } from '../../helpers.js';
import { ok, refused, workspace } from '../call.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './draw.part.js';
import './generate.part.js';
import './lookups.part.js';
import './requirements.part.js';
import './simulations.part.js';
import './substrates.part.js';

/** Client, middlebox, server; the ids the client sends are ignored. */
const chain = () => ({
  graph: [
    {
      id: 99,
      node: [
        {
          id: 7,
          name: '10.0.0.1',
          functionalType: 'WEBCLIENT',
          neighbour: [{ name: '30.0.0.1' }],
          configuration: { name: 'c', webclient: { nameWebServer: '20.0.0.1' } },
        },
        { name: '30.0.0.1', neighbour: [{ name: '10.0.0.1' }, { name: '20.0.0.1' }] },
        { name: '20.0.0.1', functionalType: 'WEBSERVER', neighbour: [{ name: '30.0.0.1' }] },
      ],
    },
  ],
});

const isolation = (graph: number, src = '10.0.0.1', dst = '20.0.0.1') => ({
  property: [{ name: 'ISOLATION_PROPERTY', graph, src, dst, lv4Proto: 'TCP', dstPort: '0-79' }],
});

t.test('graphs.create gives the graph and all it holds fresh ids; get answers the typed graph', async (t) => {
  const ws = await workspace(t);
  const created = await invoke(graphsCreate, ws, { body: await fixture('graphs.json') });
  if (!created.ok) return t.fail(created.error);
  t.equal(created.status, 201);
  t.same(created.reply.content, [[1]], 'the id the document gives (4) is not used');
  const got = await invoke(graphsGet, ws, { params: { gid: 1 } });
  if (!got.ok) return t.fail(got.error);
  t.equal(got.reply.content[0]!.node[0]!.name, '10.0.0.1', 'a Graph, not unknown: its nodes are typed');
  t.same(got.links?.[0], { rel: 'self', href: '/adp/graphs/1', title: 'get the resource' });

  t.same(await ok(t, ws, 'POST', '/adp/graphs', chain(), 201), [[2]]);
  const [graph] = await ok(t, ws, 'GET', '/adp/graphs/2', undefined, 200);
  t.equal(graph.id, 2);
  t.same(
    graph.node.map((n: { id: number }) => n.id),
    [3, 4, 5],
    'node ids follow those of graph 1, the client id 7 is dropped',
  );
  t.ok(
    graph.node.every((n: any) => (n.neighbour ?? []).every((nb: { id?: number }) => typeof nb.id === 'number')),
    'each neighbour has an id',
  );
  t.type(graph.node[0].configuration.id, 'number');
  const listed = await invoke(graphsList, ws);
  t.same(listed.ok && listed.reply.content[0]!.graph!.map((g) => g.id), [1, 2]);
});

t.test('graphs.create and get refuse with a message and store nothing', async (t) => {
  const ws = await workspace(t);
  t.match(await invoke(graphsList, ws), { ok: false, status: 404, empty: 'graphs' });
  await refused(t, ws, 'POST', '/adp/graphs', { graph: [] }, 400, /^graphs\.graph: at least one graph is required$/);
  await refused(
    t,
    ws,
    'POST',
    '/adp/graphs',
    '<graphs><graph><node name="a" functional_type="FIREWAL"/></graph></graphs>',
    400,
    /graphs\.graph\[0\]\.node\[0\]\.functional_type: "FIREWAL" is not a functional type/,
  );
  const twice = chain();
  twice.graph[0]!.node[2]!.name = '10.0.0.1';
  await refused(t, ws, 'POST', '/adp/graphs', twice, 400, /"10\.0\.0\.1" is used by another node of the graph/);
  await refused(t, ws, 'GET', '/adp/graphs/9', undefined, 404, /^graph 9 does not exist$/);
  await refused(t, ws, 'GET', '/adp/graphs/x', undefined, 400, /gid: "x" is not an id/);
});

t.test('graphs.deleteAll: 304 when empty, 424 while a graph is referred to, then all go', async (t) => {
  const ws = await workspace(t);
  const before = await snapshot(ws.dir);
  const nothing = await invoke(graphsDeleteAll, ws);
  t.match(nothing, { ok: true, status: 304, reply: { kind: 'notModified', message: 'there are no graphs to delete' } });
  t.same(await snapshot(ws.dir), before, 'the workspace is as it was');
  t.equal(render(nothing, 'json').body, '', 'HTTP answers 304 with no body');

  await ok(t, ws, 'POST', '/adp/graphs', chain(), 201);
  await ok(t, ws, 'POST', '/adp/graphs', chain(), 201);
  await ok(t, ws, 'POST', '/adp/requirements', isolation(2), 201);
  await refused(
    t,
    ws,
    'DELETE',
    '/adp/graphs',
    undefined,
    424,
    /^graph 2 is referred to by property \d+ of requirement set 1; nothing was deleted$/,
  );
  await ok(t, ws, 'DELETE', '/adp/requirements/1', undefined, 200);
  await ok(t, ws, 'DELETE', '/adp/graphs', undefined, 200);
  t.match(await invoke(graphsList, ws), { ok: false, status: 404 });
  t.same(await ok(t, ws, 'POST', '/adp/graphs', chain()), [[3]], 'ids are never reused');
});

t.test('graphs.update keeps node ids by name and gives new nodes new ids; referred nodes stay', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/adp/graphs', chain(), 201);
  const [graph] = await ok(t, ws, 'GET', '/adp/graphs/1');
  const via40 = [{ name: '40.0.0.1' }];
  const replaced = {
    serviceGraph: true,
    node: [
      { ...graph.node[0], neighbour: via40 },
      { ...graph.node[2], neighbour: via40 },
      { name: '40.0.0.1', neighbour: [{ name: '10.0.0.1' }, { name: '20.0.0.1' }] },
    ],
  };
  await ok(t, ws, 'PUT', '/adp/graphs/1', replaced, 200);
  const [after] = await ok(t, ws, 'GET', '/adp/graphs/1');
  t.equal(after.serviceGraph, true);
  t.same(
    after.node.map((n: { name: string; id: number }) => [n.name, n.id]),
    [
      ['10.0.0.1', 1],
      ['20.0.0.1', 3],
      ['40.0.0.1', 4],
    ],
  );

  await ok(t, ws, 'POST', '/adp/requirements', isolation(1, '10.0.0.1', '40.0.0.1'), 201);
  await refused(
    t,
    ws,
    'PUT',
    '/adp/graphs/1',
    { node: [after.node[0], after.node[1]].map(({ neighbour: _n, ...n }) => n) },
    409,
    /^node 4 \(40\.0\.0\.1\) is referred to by property \d+ of requirement set 1$/,
  );
  await refused(t, ws, 'PUT', '/adp/graphs/7', replaced, 404, /^graph 7 does not exist$/);
  await refused(t, ws, 'PUT', '/adp/graphs/1', { node: [] }, 400, /node/);
});

t.test('graphs.delete: refused while a host names one of its nodes; its constraints go with it', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/adp/graphs', chain(), 201);
  await ok(t, ws, 'PUT', '/adp/graphs/1/constraints', { nodeConstraints: { nodeMetrics: [{ node: '30.0.0.1' }] } });
  await ok(t, ws, 'POST', '/adp/substrates', undefined, 201);
  await ok(t, ws, 'POST', '/adp/substrates/1/hosts', { host: [{ name: 'h1', nodeRef: [{ node: '20.0.0.1' }] }] }, 201);
  await refused(t, ws, 'DELETE', '/adp/graphs/1', undefined, 409, /^graph 1 is referred to by host h1 of substrate 1$/);
  await ok(t, ws, 'DELETE', '/adp/substrates/1', undefined, 200);
  await ok(t, ws, 'DELETE', '/adp/graphs/1', undefined, 200);
  await refused(t, ws, 'DELETE', '/adp/graphs/1', undefined, 404, /^graph 1 does not exist$/);
  t.same((await ws.read(ADP_AREA)).constraints, [], 'its constraints went with it');
});

t.test('nodes: added with their neighbours, updated without them, deleted unless referred to', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/adp/graphs', chain(), 201);
  const node = { name: '50.0.0.1', functionalType: 'FORWARDER', neighbour: [{ name: '30.0.0.1' }] };
  const [nid] = await ok(t, ws, 'POST', '/adp/graphs/1/nodes', node, 201);
  t.equal(nid, 4);
  const [got] = await ok(t, ws, 'GET', `/adp/graphs/1/nodes/${nid}`, undefined, 200);
  t.match(got, { id: 4, name: '50.0.0.1', functionalType: 'FORWARDER', neighbour: [{ name: '30.0.0.1' }] });
  await refused(
    t,
    ws,
    'POST',
    '/adp/graphs/1/nodes',
    node,
    400,
    /^node\.name: graph 1 already has a node 50\.0\.0\.1$/,
  );
  await refused(
    t,
    ws,
    'POST',
    '/adp/graphs/1/nodes',
    { name: '50.0.0.2', neighbour: [{ name: '9.9.9.9' }] },
    404,
    /^neighbour 9\.9\.9\.9 is not a node of graph 1$/,
  );
  await refused(t, ws, 'POST', '/adp/graphs/5/nodes', node, 404, /^graph 5 does not exist$/);
  await refused(t, ws, 'GET', '/adp/graphs/1/nodes/99', undefined, 404, /^node 99 does not exist in graph 1$/);

  // An update takes name, function and configuration; the neighbours stay as they were.
  const update = { name: '50.0.0.1', functionalType: 'TRAFFIC_MONITOR', neighbour: [] };
  await ok(t, ws, 'PUT', `/adp/graphs/1/nodes/${nid}`, update, 200);
  const [updated] = await ok(t, ws, 'GET', `/adp/graphs/1/nodes/${nid}`);
  t.equal(updated.functionalType, 'TRAFFIC_MONITOR');
  t.same(
    updated.neighbour.map((n: { name: string }) => n.name),
    ['30.0.0.1'],
  );
  await refused(
    t,
    ws,
    'PUT',
    '/adp/graphs/1/nodes/2',
    { name: '30.0.0.9' },
    409,
    /^node 2 \(30\.0\.0\.1\) cannot be renamed: it is referred to by a neighbour of node 1 \(10\.0\.0\.1\), /,
  );
  await refused(t, ws, 'PUT', '/adp/graphs/1/nodes/2', { name: '20.0.0.1' }, 400, /already has a node 20\.0\.0\.1/);

  await ok(t, ws, 'POST', '/adp/graphs/1/nodes/2/neighbours', { name: '50.0.0.1' }, 201);
  await refused(
    t,
    ws,
    'DELETE',
    `/adp/graphs/1/nodes/${nid}`,
    undefined,
    409,
    /^node 4 \(50\.0\.0\.1\) is referred to by a neighbour of node 2 \(30\.0\.0\.1\)$/,
  );
  const [middle] = await ok(t, ws, 'GET', '/adp/graphs/1/nodes/2');
  await ok(t, ws, 'DELETE', `/adp/graphs/1/nodes/2/neighbours/${middle.neighbour.at(-1).id}`, undefined, 200);
  await ok(t, ws, 'DELETE', `/adp/graphs/1/nodes/${nid}`, undefined, 200);
  await refused(t, ws, 'DELETE', `/adp/graphs/1/nodes/${nid}`, undefined, 404, /^node 4 does not exist in graph 1$/);

  await ok(t, ws, 'POST', '/adp/graphs', { graph: [{ node: [{ name: '1.1.1.1' }] }] }, 201);
  await refused(
    t,
    ws,
    'DELETE',
    '/adp/graphs/2/nodes/5',
    undefined,
    409,
    /^node 5 is the last node of graph 2; delete the graph instead$/,
  );
});

t.test('neighbours: only nodes of the graph, once each; removed by id', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/adp/graphs', chain(), 201);
  const [id] = await ok(t, ws, 'POST', '/adp/graphs/1/nodes/1/neighbours', '<neighbour name="20.0.0.1"/>', 201);
  t.type(id, 'number');
  const [node] = await ok(t, ws, 'GET', '/adp/graphs/1/nodes/1');
  t.same(
    node.neighbour.map((n: { name: string }) => n.name),
    ['30.0.0.1', '20.0.0.1'],
  );
  await refused(
    t,
    ws,
    'POST',
    '/adp/graphs/1/nodes/1/neighbours',
    { name: '20.0.0.1' },
    400,
    /^neighbour\.name: node 1 already has neighbour 20\.0\.0\.1$/,
  );
  await refused(
    t,
    ws,
    'POST',
    '/adp/graphs/1/nodes/1/neighbours',
    { name: '8.8.8.8' },
    404,
    /^neighbour 8\.8\.8\.8 is not a node of graph 1$/,
  );
  await ok(t, ws, 'DELETE', `/adp/graphs/1/nodes/1/neighbours/${id}`, undefined, 200);
  await refused(
    t,
    ws,
    'DELETE',
    `/adp/graphs/1/nodes/1/neighbours/${id}`,
    undefined,
    404,
    new RegExp(`^neighbour ${id} does not exist on node 1$`),
  );
});

t.test('configurations: read, replaced under their id, 404 without one', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/adp/graphs', chain(), 201);
  const [conf] = await ok(t, ws, 'GET', '/adp/graphs/1/nodes/1/configuration', undefined, 200);
  t.match(conf, { name: 'c', webclient: { nameWebServer: '20.0.0.1' } });
  const next = '<configuration name="c2"><webclient nameWebServer="30.0.0.1"/></configuration>';
  await ok(t, ws, 'PUT', `/adp/graphs/1/nodes/1/configuration/${conf.id}`, next, 200);
  const [after] = await ok(t, ws, 'GET', '/adp/graphs/1/nodes/1/configuration');
  t.match(after, { id: conf.id, name: 'c2', webclient: { nameWebServer: '30.0.0.1' } }, 'the id stays');
  await refused(
    t,
    ws,
    'PUT',
    `/adp/graphs/1/nodes/1/configuration/${conf.id + 1}`,
    next,
    404,
    new RegExp(`^configuration ${conf.id + 1} does not exist on node 1$`),
  );
  await refused(t, ws, 'GET', '/adp/graphs/1/nodes/2/configuration', undefined, 404, /^node 2 has no configuration$/);
});

t.test('constraints: PUT replaces, POST replaces the kinds it gives, DELETE removes', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/adp/graphs', chain(), 201);
  await refused(t, ws, 'GET', '/adp/graphs/1/constraints', undefined, 404, /^graph 1 has no constraints$/);
  const nodes = { nodeConstraints: { nodeMetrics: [{ node: '30.0.0.1', optional: true }] } };
  await ok(t, ws, 'PUT', '/adp/graphs/1/constraints', nodes, 200);
  const alloc = {
    allocationConstraints: { allocationConstraint: [{ type: 'FORBIDDEN', nodeA: '10.0.0.1', nodeB: '30.0.0.1' }] },
  };
  await ok(t, ws, 'POST', '/adp/graphs/1/constraints', alloc, 201);
  const [both] = await ok(t, ws, 'GET', '/adp/graphs/1/constraints', undefined, 200);
  t.match(both, { ...nodes, ...alloc }, 'POST kept the node constraints');
  await ok(t, ws, 'PUT', '/adp/graphs/1/constraints', alloc, 200);
  const [replaced] = await ok(t, ws, 'GET', '/adp/graphs/1/constraints');
  t.notOk(replaced.nodeConstraints, 'PUT replaced them all');
  await refused(
    t,
    ws,
    'PUT',
    '/adp/graphs/1/nodes/2',
    { name: '30.0.0.7' },
    409,
    /is referred to by .*the constraints of graph 1/,
  );
  await refused(t, ws, 'PUT', '/adp/graphs/4/constraints', nodes, 404, /^graph 4 does not exist$/);
  await ok(t, ws, 'DELETE', '/adp/graphs/1/constraints', undefined, 200);
  await refused(t, ws, 'DELETE', '/adp/graphs/1/constraints', undefined, 404, /^graph 1 has no constraints$/);
});
