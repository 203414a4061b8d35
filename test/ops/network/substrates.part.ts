/**
 * The `/adp/substrates` operations in-process: substrates, their hosts and the connections between them. Hosts
 * name only nodes some graph has, connections only hosts of their substrate, and what takes part in a connection
 * stays until the connection goes.
 */
import t from 'tap';
import { hostsGet, substratesDeleteAll, substratesList } from '../../../src/ops/network/substrates.js';
import { invoke } from '../../../src/ops/operation.js';
import { snapshot } from '../../helpers.js';
import { ok, refused, workspace } from '../call.js';

const hosts = {
  host: [
    { name: 'h1', cores: 2, nodeRef: [{ node: '10.0.0.1' }] },
    { name: 'h2', type: 'MIDDLEBOX' },
  ],
};
const connections = (...pairs: [string, string][]) => ({
  connection: pairs.map(([sourceHost, destHost]) => ({ sourceHost, destHost })),
});

/** A workspace with graph 1 (node 10.0.0.1) and an empty substrate 1. */
async function withSubstrate(t: Tap.Test) {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/adp/graphs', { graph: [{ node: [{ name: '10.0.0.1' }] }] }, 201);
  t.same(await ok(t, ws, 'POST', '/adp/substrates', undefined, 201), [1]);
  return ws;
}

t.test('substrates: created empty, listed by id, deleted with what they hold', async (t) => {
  const ws = await workspace(t);
  t.match(await invoke(substratesList, ws), { ok: false, status: 404, empty: 'substrates' });
  await ok(t, ws, 'POST', '/adp/substrates', undefined, 201);
  await ok(t, ws, 'POST', '/adp/substrates', undefined, 201);
  const listed = await invoke(substratesList, ws);
  t.same(listed.ok && listed.reply.content, [[1, 2]]);
  t.same(await ok(t, ws, 'GET', '/adp/substrates/2/hosts', undefined, 200), [{ host: [] }]);
  await ok(t, ws, 'DELETE', '/adp/substrates/1', undefined, 200);
  await refused(t, ws, 'DELETE', '/adp/substrates/1', undefined, 404, /^substrate 1 does not exist$/);
  t.match(await invoke(substratesDeleteAll, ws), { ok: true, status: 200 });
  const before = await snapshot(ws.dir);
  t.match(await invoke(substratesDeleteAll, ws), {
    ok: true,
    status: 304,
    reply: { message: 'there are no substrates to delete' },
  });
  t.same(await snapshot(ws.dir), before);
  t.same(await ok(t, ws, 'POST', '/adp/substrates'), [3], 'ids are never reused');
});

t.test('hosts: added with unique names naming existing nodes, read, replaced under their name', async (t) => {
  const ws = await withSubstrate(t);
  await ok(t, ws, 'POST', '/adp/substrates/1/hosts', hosts, 201);
  const got = await invoke(hostsGet, ws, { params: { sid: 1, hid: 'h1' } });
  t.same(got.ok && got.reply.content[0]!.nodeRef, [{ node: '10.0.0.1' }]);
  const [listed] = await ok(t, ws, 'GET', '/adp/substrates/1/hosts', undefined, 200);
  t.same(
    listed.host.map((h: { name: string }) => h.name),
    ['h1', 'h2'],
  );
  await refused(
    t,
    ws,
    'POST',
    '/adp/substrates/1/hosts',
    { host: [{ name: 'h2' }] },
    400,
    /^host\.name: substrate 1 already has a host h2$/,
  );
  await refused(
    t,
    ws,
    'POST',
    '/adp/substrates/1/hosts',
    { host: [{ name: 'h3', nodeRef: [{ node: '1.1.1.1' }] }] },
    424,
    /^host h3 refers to node 1\.1\.1\.1, which no graph has$/,
  );
  await refused(t, ws, 'POST', '/adp/substrates/1/hosts', { host: [] }, 400, /^hosts\.host: at least one host/);
  await refused(t, ws, 'POST', '/adp/substrates/9/hosts', hosts, 404, /^substrate 9 does not exist$/);
  await refused(t, ws, 'GET', '/adp/substrates/1/hosts/h9', undefined, 404, /^host h9 does not exist in substrate 1$/);

  await ok(t, ws, 'PUT', '/adp/substrates/1/hosts/h2', { name: 'h2', type: 'SERVER', memory: 16 }, 200);
  const [h2] = await ok(t, ws, 'GET', '/adp/substrates/1/hosts/h2');
  t.match(h2, { name: 'h2', type: 'SERVER', memory: 16 });
  await refused(
    t,
    ws,
    'PUT',
    '/adp/substrates/1/hosts/h2',
    { name: 'h3' },
    400,
    /^host\.name: "h3" differs from the host in the path \(h2\)$/,
  );
  await refused(
    t,
    ws,
    'PUT',
    '/adp/substrates/1/hosts/h2',
    { name: 'h2', fixedEndpoint: '7.7.7.7' },
    424,
    /^host h2 refers to node 7\.7\.7\.7, which no graph has$/,
  );
});

t.test('connections: only between hosts of the substrate, duplicates dropped; they hold their hosts', async (t) => {
  const ws = await withSubstrate(t);
  await ok(t, ws, 'POST', '/adp/substrates/1/hosts', hosts, 201);
  await ok(t, ws, 'POST', '/adp/substrates/1/connections', connections(['h1', 'h2'], ['h1', 'h2']), 201);
  await ok(t, ws, 'POST', '/adp/substrates/1/connections', connections(['h1', 'h2'], ['h2', 'h1']), 201);
  const [listed] = await ok(t, ws, 'GET', '/adp/substrates/1/connections', undefined, 200);
  t.same(
    listed.connection.map((c: { sourceHost: string; destHost: string }) => `${c.sourceHost}>${c.destHost}`),
    ['h1>h2', 'h2>h1'],
    'one per (source, destination)',
  );
  await refused(
    t,
    ws,
    'POST',
    '/adp/substrates/1/connections',
    connections(['h1', 'hx']),
    424,
    /^host hx does not exist in substrate 1$/,
  );
  await ok(t, ws, 'PUT', '/adp/substrates/1/connections', connections(['h2', 'h1']), 200);
  const [replaced] = await ok(t, ws, 'GET', '/adp/substrates/1/connections');
  t.same(replaced.connection, [{ sourceHost: 'h2', destHost: 'h1' }], 'PUT replaced them all');
  await refused(
    t,
    ws,
    'PUT',
    '/adp/substrates/1/connections',
    connections(['q', 'h1']),
    424,
    /^host q does not exist in substrate 1$/,
  );

  await refused(
    t,
    ws,
    'DELETE',
    '/adp/substrates/1/hosts/h1',
    undefined,
    409,
    /^host h1 takes part in a connection of substrate 1$/,
  );
  await refused(
    t,
    ws,
    'DELETE',
    '/adp/substrates/1/hosts',
    undefined,
    409,
    /^substrate 1 has 1 connection; delete them first$/,
  );
  await refused(t, ws, 'DELETE', '/adp/graphs/1', undefined, 409, /^graph 1 is referred to by host h1 of substrate 1$/);
  await ok(t, ws, 'DELETE', '/adp/substrates/1/connections', undefined, 200);
  await ok(t, ws, 'DELETE', '/adp/substrates/1/hosts/h1', undefined, 200);
  await refused(t, ws, 'DELETE', '/adp/substrates/1/hosts/h1', undefined, 404, /^host h1 does not exist/);
  await ok(t, ws, 'DELETE', '/adp/substrates/1/hosts', undefined, 200);
  t.same(await ok(t, ws, 'GET', '/adp/substrates/1/hosts'), [{ host: [] }]);
});
