/**
 * The `/adp/requirements` operations in-process: requirement sets and their properties. Properties may name only
 * graphs that exist (424), keep their ids across a replacement, and a set never loses its last property.
 */
import t from 'tap';
import { requirementsDeleteAll, requirementsGet, requirementsList } from '../../../src/ops/network/requirements.js';
import { invoke } from '../../../src/ops/operation.js';
import { snapshot } from '../../helpers.js';
import { ok, refused, workspace } from '../call.js';

const graph = {
  graph: [
    {
      node: [
        { name: '10.0.0.1', neighbour: [{ name: '20.0.0.1' }] },
        { name: '20.0.0.1', neighbour: [{ name: '10.0.0.1' }] },
      ],
    },
  ],
};
const property = (graph: number, name = 'ISOLATION_PROPERTY', dstPort = '0-79') => ({
  name,
  graph,
  src: '10.0.0.1',
  dst: '20.0.0.1',
  lv4Proto: 'TCP',
  dstPort,
});

/** A workspace holding graph 1. */
async function withGraph(t: Tap.Test) {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/adp/graphs', graph, 201);
  return ws;
}

t.test('requirement sets: created with property ids, listed, read; only for graphs that exist', async (t) => {
  const ws = await withGraph(t);
  t.match(await invoke(requirementsList, ws), { ok: false, status: 404, empty: 'requirement sets' });
  await refused(
    t,
    ws,
    'POST',
    '/adp/requirements',
    { property: [property(9)] },
    424,
    /^property refers to graph 9, which does not exist$/,
  );
  const [rid] = await ok(t, ws, 'POST', '/adp/requirements', { property: [property(1), property(1)] }, 201);
  t.equal(rid, 1);
  const got = await invoke(requirementsGet, ws, { params: { rid } });
  if (!got.ok) return t.fail(got.error);
  t.same(
    got.reply.content[0]!.property.map((p) => p.id),
    [1, 2],
  );
  t.equal(got.reply.content[0]!.property[0]!.name, 'ISOLATION_PROPERTY');
  const xml = '<PropertyDefinition><Property name="ReachabilityProperty" graph="1" src="10.0.0.1" dst="20.0.0.1"/>';
  t.same(await ok(t, ws, 'POST', '/adp/requirements', `${xml}</PropertyDefinition>`, 201), [2]);
  const listed = await invoke(requirementsList, ws);
  t.same(listed.ok && listed.reply.content[0]!.map((s) => s.id), [1, 2]);
  await refused(t, ws, 'GET', '/adp/requirements/7', undefined, 404, /^requirement set 7 does not exist$/);
});

t.test('requirements.update keeps property ids by position, new ones for added properties', async (t) => {
  const ws = await withGraph(t);
  await ok(t, ws, 'POST', '/adp/requirements', { property: [property(1)] }, 201);
  await ok(t, ws, 'POST', '/adp/requirements', { property: [property(1)] }, 201);
  const next = [property(1, 'REACHABILITY_PROPERTY', '80'), property(1, 'ISOLATION_PROPERTY', '22')];
  await ok(t, ws, 'PUT', '/adp/requirements/1', { property: next }, 200);
  const [set] = await ok(t, ws, 'GET', '/adp/requirements/1');
  t.same(
    set.property.map((p: { id: number; name: string; dstPort: string }) => [p.id, p.name, p.dstPort]),
    [
      [1, 'REACHABILITY_PROPERTY', '80'],
      [3, 'ISOLATION_PROPERTY', '22'],
    ],
    'the first keeps id 1; the second is new (2 belongs to set 2)',
  );
  await refused(
    t,
    ws,
    'PUT',
    '/adp/requirements/1',
    { property: [property(8)] },
    424,
    /^property refers to graph 8, which does not exist$/,
  );
  await refused(t, ws, 'PUT', '/adp/requirements/5', { property: [property(1)] }, 404, /^requirement set 5/);
});

t.test('properties: added, read, replaced under their id, deleted but never the last', async (t) => {
  const ws = await withGraph(t);
  await ok(t, ws, 'POST', '/adp/requirements', { property: [property(1)] }, 201);
  const [pid] = await ok(t, ws, 'POST', '/adp/requirements/1/properties', property(1, 'REACHABILITY_PROPERTY'), 201);
  t.equal(pid, 2);
  const [p] = await ok(t, ws, 'GET', `/adp/requirements/1/properties/${pid}`, undefined, 200);
  t.match(p, { id: 2, name: 'REACHABILITY_PROPERTY', graph: 1 });
  await refused(
    t,
    ws,
    'POST',
    '/adp/requirements/1/properties',
    property(4),
    424,
    /^property refers to graph 4, which does not exist$/,
  );
  await refused(t, ws, 'POST', '/adp/requirements/3/properties', property(1), 404, /^requirement set 3 does not exist/);
  await ok(t, ws, 'PUT', `/adp/requirements/1/properties/${pid}`, property(1, 'ISOLATION_PROPERTY', '443'), 200);
  const [replaced] = await ok(t, ws, 'GET', `/adp/requirements/1/properties/${pid}`);
  t.match(replaced, { id: 2, name: 'ISOLATION_PROPERTY', dstPort: '443' });
  await refused(
    t,
    ws,
    'PUT',
    `/adp/requirements/1/properties/${pid}`,
    property(6),
    424,
    /^property refers to graph 6, which does not exist$/,
  );
  await refused(
    t,
    ws,
    'GET',
    '/adp/requirements/1/properties/9',
    undefined,
    404,
    /^property 9 does not exist in requirement set 1$/,
  );
  await ok(t, ws, 'DELETE', `/adp/requirements/1/properties/${pid}`, undefined, 200);
  await refused(
    t,
    ws,
    'DELETE',
    '/adp/requirements/1/properties/1',
    undefined,
    409,
    /^property 1 is the last of requirement set 1; delete the set instead$/,
  );
});

t.test('requirements.delete and deleteAll: one set, then all, then 304', async (t) => {
  const ws = await withGraph(t);
  for (let k = 0; k < 3; k++) await ok(t, ws, 'POST', '/adp/requirements', { property: [property(1)] }, 201);
  await ok(t, ws, 'DELETE', '/adp/requirements/2', undefined, 200);
  await refused(t, ws, 'DELETE', '/adp/requirements/2', undefined, 404, /^requirement set 2 does not exist$/);
  await refused(
    t,
    ws,
    'DELETE',
    '/adp/graphs/1',
    undefined,
    409,
    /^graph 1 is referred to by property 1 of requirement set 1, /,
  );
  const all = await invoke(requirementsDeleteAll, ws);
  t.match(all, { ok: true, status: 200 });
  const before = await snapshot(ws.dir);
  t.match(await invoke(requirementsDeleteAll, ws), {
    ok: true,
    status: 304,
    reply: { message: 'there are no requirement sets to delete' },
  });
  t.same(await snapshot(ws.dir), before);
  await ok(t, ws, 'DELETE', '/adp/graphs/1', undefined, 200);
  t.same(await ok(t, ws, 'POST', '/adp/graphs', graph), [[2]]);
});
