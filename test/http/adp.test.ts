/**
 * Every /adp workspace operation over a real listener on 127.0.0.1: success statuses, failure statuses, no change on
 * failure; every 201 names what it created in an absolute Location that a GET answers.
 */
import t from 'tap';
import { resolve } from '../../src/ops/operation.js';
import { OPERATIONS } from '../../src/ops/table.js';
import { fixture, request, startServer, type HttpAnswer } from '../helpers.js';

const s = await startServer();
t.teardown(s.close);
const call = (method: string, target: string, body?: string, headers?: Record<string, string>) =>
  request(s.url, method, target, body, headers);
const snapshot = async () => (await call('GET', '/adp/graphs')).text;

/** The /adp operations whose 201 was checked below; the last test wants every one of them. */
const located = new Set<string>();

/** A POST to `target` answered 201 with Location `path` (absolute), and a GET of it answers 200. */
async function created(t: Tap.Test, target: string, answer: HttpAnswer, path: string): Promise<void> {
  t.equal(answer.status, 201, `POST ${target}`);
  t.equal(answer.headers.get('location'), `${s.url}${path}`, `POST ${target}: Location ${path}`);
  t.equal((await call('GET', path)).status, 200, `GET ${path}`);
  located.add(resolve(OPERATIONS, 'POST', target).op.name);
}

const property = (graph: number, src = '10.0.0.1', dst = '20.0.0.1') =>
  JSON.stringify({ property: [{ name: 'ISOLATION_PROPERTY', graph, src, dst, lv4Proto: 'TCP', dstPort: '0-79' }] });

t.test('empty workspace: lists are 404, bulk deletes 304', async (t) => {
  for (const path of ['/adp/graphs', '/adp/requirements', '/adp/substrates']) {
    const r = await call('GET', path);
    t.equal(r.status, 404, `GET ${path}`);
    t.same(r.json.content, [], 'failed read keeps the envelope kind');
    t.match(r.json.error.message, /holds no/);
    t.equal((await call('DELETE', path)).status, 304, `DELETE ${path}`);
  }
});

t.test('graphs', async (t) => {
  const first = await call('POST', '/adp/graphs', await fixture('graphs.xml'), { Accept: 'application/json' });
  await created(t, '/adp/graphs', first, '/adp/graphs/1');
  t.same(first.json.content, [[1]], 'IDLIST of generated ids; the id in the document is ignored');
  t.same(
    first.json.links.map((l: { rel: string }) => l.rel),
    ['self', 'collection'],
  );
  const second = await call('POST', '/adp/graphs', await fixture('graphs.json'));
  t.equal(second.json.content[0][0], 2);
  await created(t, '/adp/graphs', second, '/adp/graphs/2');

  const xml = await call('GET', '/adp/graphs/1', undefined, { Accept: 'application/xml' });
  t.equal(xml.status, 200);
  t.match(xml.headers.get('content-type'), /application\/xml/);
  t.match(xml.text, /<entities>[\s\S]*<link rel="self" href="\/adp\/graphs\/1"[\s\S]*<content>\s*<graph id="1"/);
  t.equal((await call('GET', '/adp/graphs')).json.content[0].graph.length, 2);
  t.equal((await call('GET', '/adp/graphs/99')).status, 404);
  t.equal((await call('GET', '/adp/graphs/abc')).status, 400);

  const before = await snapshot();
  const bad = await call(
    'POST',
    '/adp/graphs',
    '<graphs><graph><node name="a" functional_type="FIREWAL"/></graph></graphs>',
  );
  t.equal(bad.status, 400);
  t.match(bad.json.error.message, /graphs\.graph\[0\]\.node\[0\]\.functional_type: "FIREWAL" is not a functional type/);
  t.equal((await call('POST', '/adp/graphs', '{"graph": [')).status, 400, 'bad JSON');
  t.equal((await call('POST', '/adp/graphs', '<graphs><graph>')).status, 400, 'bad XML');
  t.equal(await snapshot(), before, 'failed creates change nothing');

  // PUT keeps node ids by name, gives new nodes new ids.
  const g2 = (await call('GET', '/adp/graphs/2')).json.content[0];
  g2.node.push({ name: '30.0.0.9', functionalType: 'FORWARDER', neighbour: [{ name: '10.0.0.1' }] });
  t.equal((await call('PUT', '/adp/graphs/2', JSON.stringify(g2))).status, 200);
  const after = (await call('GET', '/adp/graphs/2')).json.content[0];
  t.equal(after.node[0].id, g2.node[0].id, 'kept id');
  t.ok(after.node[2].id > g2.node[1].id, 'new id');
  t.equal((await call('PUT', '/adp/graphs/77', JSON.stringify(g2))).status, 404);
  t.equal((await call('PUT', '/adp/graphs/2', '{"node": []}')).status, 400);
});

t.test('nodes, neighbours and configurations', async (t) => {
  const node = JSON.stringify({
    name: '50.0.0.1',
    functionalType: 'FORWARDER',
    neighbour: [{ name: '30.0.0.1' }],
    configuration: { name: 'f', forwarder: { name: 'Forwarder' } },
  });
  const added = await call('POST', '/adp/graphs/1/nodes', node);
  const nid = added.json.content[0];
  await created(t, '/adp/graphs/1/nodes', added, `/adp/graphs/1/nodes/${nid}`);
  t.equal((await call('POST', '/adp/graphs/1/nodes', node)).status, 400, 'duplicate name');
  t.equal(
    (await call('POST', '/adp/graphs/1/nodes', JSON.stringify({ name: '50.0.0.2', neighbour: [{ name: '9.9.9.9' }] })))
      .status,
    404,
    'unknown neighbour',
  );
  t.equal((await call('POST', '/adp/graphs/42/nodes', node)).status, 404, 'unknown graph');
  t.equal((await call('POST', '/adp/graphs/1/nodes', '{"functionalType":"NAT"}')).status, 400, 'no name');

  const got = await call('GET', `/adp/graphs/1/nodes/${nid}`);
  t.equal(got.status, 200);
  t.equal(got.json.content[0].configuration.forwarder.name, 'Forwarder');
  t.equal((await call('GET', '/adp/graphs/1/nodes/999')).status, 404);

  // PUT node ignores the neighbour field.
  const put = JSON.stringify({ name: '50.0.0.1', functionalType: 'TRAFFIC_MONITOR', neighbour: [] });
  t.equal((await call('PUT', `/adp/graphs/1/nodes/${nid}`, put)).status, 200);
  const updated = (await call('GET', `/adp/graphs/1/nodes/${nid}`)).json.content[0];
  t.equal(updated.functionalType, 'TRAFFIC_MONITOR');
  t.same(
    updated.neighbour.map((n: { name: string }) => n.name),
    ['30.0.0.1'],
    'neighbours kept',
  );
  t.equal((await call('PUT', '/adp/graphs/1/nodes/999', put)).status, 404);

  const nb = await call('POST', '/adp/graphs/1/nodes/2/neighbours', JSON.stringify({ name: '50.0.0.1' }));
  // A neighbour has no GET of its own: the Location is its node, which lists it.
  await created(t, '/adp/graphs/1/nodes/2/neighbours', nb, '/adp/graphs/1/nodes/2');
  t.equal(
    (await call('POST', '/adp/graphs/1/nodes/2/neighbours', '<neighbour name="8.8.8.8"/>')).status,
    404,
    'neighbour must be a node',
  );
  t.equal((await call('DELETE', `/adp/graphs/1/nodes/${nid}`)).status, 409, 'node referred to by a neighbour');
  t.equal((await call('DELETE', `/adp/graphs/1/nodes/2/neighbours/${nb.json.content[0]}`)).status, 200);
  t.equal((await call('DELETE', `/adp/graphs/1/nodes/2/neighbours/${nb.json.content[0]}`)).status, 404);
  t.equal((await call('DELETE', `/adp/graphs/1/nodes/${nid}`)).status, 200, 'no longer referred to');
  t.equal((await call('DELETE', `/adp/graphs/1/nodes/${nid}`)).status, 404);

  const fw = (await call('GET', '/adp/graphs/1')).json.content[0].node.find(
    (n: { name: string }) => n.name === '40.0.0.1',
  );
  const conf = await call('GET', `/adp/graphs/1/nodes/${fw.id}/configuration`);
  t.equal(conf.status, 200);
  t.equal(conf.json.content[0].firewall.elements.length, 2);
  t.equal((await call('GET', '/adp/graphs/1/nodes/2/configuration')).status, 404, 'node without configuration');
  const cid = conf.json.content[0].id;
  const newConf = '<configuration name="fw2"><firewall defaultAction="ALLOW"/></configuration>';
  t.equal((await call('PUT', `/adp/graphs/1/nodes/${fw.id}/configuration/${cid}`, newConf)).status, 200);
  t.equal(
    (await call('GET', `/adp/graphs/1/nodes/${fw.id}/configuration`)).json.content[0].firewall.defaultAction,
    'ALLOW',
  );
  t.equal((await call('PUT', `/adp/graphs/1/nodes/${fw.id}/configuration/${cid + 100}`, newConf)).status, 404);
});

t.test('constraints', async (t) => {
  t.equal((await call('GET', '/adp/graphs/1/constraints')).status, 404);
  const full =
    '<Constraints><NodeConstraints><NodeMetrics node="30.0.0.1" optional="true"/></NodeConstraints>' +
    '<LinkConstraints/></Constraints>';
  t.equal((await call('PUT', '/adp/graphs/1/constraints', full)).status, 200);
  t.equal((await call('PUT', '/adp/graphs/55/constraints', full)).status, 404);
  const alloc =
    '{"allocationConstraints":{"allocationConstraint":[{"type":"FORBIDDEN","nodeA":"10.0.0.1","nodeB":"30.0.0.1"}]}}';
  const posted = await call('POST', '/adp/graphs/1/constraints', alloc);
  await created(t, '/adp/graphs/1/constraints', posted, '/adp/graphs/1/constraints');
  const c = (await call('GET', '/adp/graphs/1/constraints')).json.content[0];
  t.equal(c.nodeConstraints.nodeMetrics[0].node, '30.0.0.1', 'POST replaces shallowly: node constraints kept');
  t.equal(c.allocationConstraints.allocationConstraint[0].type, 'FORBIDDEN');
  const node3 = (await call('GET', '/adp/graphs/1')).json.content[0].node.find(
    (n: { name: string }) => n.name === '30.0.0.1',
  );
  t.equal(
    (await call('PUT', `/adp/graphs/1/nodes/${node3.id}`, JSON.stringify({ name: '30.0.0.7' }))).status,
    409,
    'renaming a referred node',
  );
  t.equal((await call('DELETE', '/adp/graphs/1/constraints')).status, 200);
  t.equal((await call('DELETE', '/adp/graphs/1/constraints')).status, 404);
});

t.test('requirement sets and properties', async (t) => {
  t.equal((await call('POST', '/adp/requirements', property(9))).status, 424, 'missing graph');
  t.equal((await call('GET', '/adp/requirements')).status, 404, 'nothing was stored');
  const r = await call('POST', '/adp/requirements', property(1));
  const rid = r.json.content[0];
  await created(t, '/adp/requirements', r, `/adp/requirements/${rid}`);
  t.equal((await call('GET', '/adp/requirements')).json.content[0].length, 1, 'PROPDEFLIST');
  const set = (await call('GET', `/adp/requirements/${rid}`)).json.content[0];
  t.equal(set.property[0].name, 'ISOLATION_PROPERTY');
  t.equal((await call('GET', '/adp/requirements/77')).status, 404);
  t.equal((await call('PUT', `/adp/requirements/${rid}`, property(1, '10.0.0.1', '40.0.0.1'))).status, 200);
  t.equal(
    (await call('GET', `/adp/requirements/${rid}`)).json.content[0].property[0].id,
    set.property[0].id,
    'property keeps its id',
  );
  t.equal((await call('PUT', `/adp/requirements/${rid}`, property(8))).status, 424);
  t.equal((await call('PUT', '/adp/requirements/77', property(1))).status, 404);

  const one = '<Property name="ReachabilityProperty" graph="1" src="10.0.0.1" dst="20.0.0.1"/>';
  const p = await call('POST', `/adp/requirements/${rid}/properties`, one);
  const pid = p.json.content[0];
  await created(t, `/adp/requirements/${rid}/properties`, p, `/adp/requirements/${rid}/properties/${pid}`);
  t.equal((await call('POST', '/adp/requirements/77/properties', one)).status, 404);
  t.equal(
    (await call('POST', `/adp/requirements/${rid}/properties`, one.replace('graph="1"', 'graph="5"'))).status,
    424,
  );
  t.equal(
    (await call('GET', `/adp/requirements/${rid}/properties/${pid}`)).json.content[0].name,
    'REACHABILITY_PROPERTY',
  );
  t.equal((await call('GET', `/adp/requirements/${rid}/properties/999`)).status, 404);
  t.equal(
    (await call('PUT', `/adp/requirements/${rid}/properties/${pid}`, one.replace('Reachability', 'Isolation'))).status,
    200,
  );
  t.equal(
    (await call('PUT', `/adp/requirements/${rid}/properties/${pid}`, one.replace('graph="1"', 'graph="5"'))).status,
    424,
  );
  t.equal((await call('PUT', `/adp/requirements/${rid}/properties/999`, one)).status, 404);
  t.equal((await call('DELETE', `/adp/requirements/${rid}/properties/${pid}`)).status, 200);
  t.equal((await call('DELETE', `/adp/requirements/${rid}/properties/${pid}`)).status, 404);

  // A referred graph cannot be deleted, alone or in bulk; nothing changes.
  const before = await snapshot();
  t.equal((await call('DELETE', '/adp/graphs/1')).status, 409);
  t.equal((await call('DELETE', '/adp/graphs')).status, 424);
  t.equal(await snapshot(), before, 'graphs unchanged');

  t.equal((await call('DELETE', `/adp/requirements/${rid}`)).status, 200);
  t.equal((await call('DELETE', `/adp/requirements/${rid}`)).status, 404);
  await call('POST', '/adp/requirements', property(2, '10.0.0.1', '20.0.0.1'));
  t.equal((await call('DELETE', '/adp/requirements')).status, 200);
  t.equal((await call('DELETE', '/adp/requirements')).status, 304);
});

t.test('substrates, hosts and connections', async (t) => {
  const substrate = await call('POST', '/adp/substrates');
  const sid = substrate.json.content[0];
  // The interface has no GET of a substrate: the Location is its host list.
  await created(t, '/adp/substrates', substrate, `/adp/substrates/${sid}/hosts`);
  t.same((await call('GET', '/adp/substrates')).json.content, [[sid]]);
  const hosts =
    '<Hosts><Host name="h1" cpu="1" cores="1" diskStorage="1" memory="1"><NodeRef node="10.0.0.1"/></Host><Host ' +
    'name="h2" type="MIDDLEBOX"/></Hosts>';
  // Two hosts created: the Location is the first.
  await created(
    t,
    `/adp/substrates/${sid}/hosts`,
    await call('POST', `/adp/substrates/${sid}/hosts`, hosts),
    `/adp/substrates/${sid}/hosts/h1`,
  );
  t.equal((await call('POST', `/adp/substrates/${sid}/hosts`, hosts)).status, 400, 'host names are unique');
  t.equal(
    (
      await call(
        'POST',
        `/adp/substrates/${sid}/hosts`,
        '<Hosts><Host name="h9"><NodeRef node="1.1.1.1"/></Host></Hosts>',
      )
    ).status,
    424,
    'NodeRef to a missing node',
  );
  t.equal((await call('POST', '/adp/substrates/99/hosts', hosts)).status, 404);
  t.equal((await call('GET', `/adp/substrates/${sid}/hosts`)).json.content[0].host.length, 2);
  t.equal((await call('GET', `/adp/substrates/${sid}/hosts/h1`)).json.content[0].nodeRef[0].node, '10.0.0.1');
  t.equal((await call('GET', `/adp/substrates/${sid}/hosts/nope`)).status, 404);
  t.equal((await call('PUT', `/adp/substrates/${sid}/hosts/h2`, '<Host name="h2" type="SERVER"/>')).status, 200);
  t.equal(
    (await call('PUT', `/adp/substrates/${sid}/hosts/h2`, '<Host name="h2"><NodeRef node="7.7.7.7"/></Host>')).status,
    424,
  );
  t.equal((await call('PUT', `/adp/substrates/${sid}/hosts/h2`, '<Host name="h3"/>')).status, 400);
  t.equal((await call('PUT', `/adp/substrates/${sid}/hosts/zz`, '<Host name="zz"/>')).status, 404);
  t.equal((await call('DELETE', '/adp/graphs/1')).status, 409, 'graph named by a host NodeRef');

  const conns =
    '<Connections><Connection sourceHost="h1" destHost="h2"/><Connection sourceHost="h1" destHost="h2" ' +
    'avgLatency="4"/></Connections>';
  // Connections have no ids: the Location is their list.
  for (let k = 0; k < 2; k++) {
    const answer = await call('POST', `/adp/substrates/${sid}/connections`, conns);
    await created(t, `/adp/substrates/${sid}/connections`, answer, `/adp/substrates/${sid}/connections`);
  }
  t.equal(
    (await call('GET', `/adp/substrates/${sid}/connections`)).json.content[0].connection.length,
    1,
    'duplicates dropped',
  );
  t.equal(
    (
      await call(
        'POST',
        `/adp/substrates/${sid}/connections`,
        '<Connections><Connection sourceHost="h1" destHost="hx"/></Connections>',
      )
    ).status,
    424,
  );
  t.equal(
    (
      await call(
        'PUT',
        `/adp/substrates/${sid}/connections`,
        '<Connections><Connection sourceHost="h2" destHost="h1"/></Connections>',
      )
    ).status,
    200,
  );
  t.equal(
    (await call('GET', `/adp/substrates/${sid}/connections`)).json.content[0].connection[0].sourceHost,
    'h2',
    'PUT replaced all',
  );
  t.equal(
    (
      await call(
        'PUT',
        `/adp/substrates/${sid}/connections`,
        '<Connections><Connection sourceHost="q" destHost="h1"/></Connections>',
      )
    ).status,
    424,
  );
  t.equal((await call('DELETE', `/adp/substrates/${sid}/hosts/h1`)).status, 409, 'host in a connection');
  t.equal((await call('DELETE', `/adp/substrates/${sid}/hosts`)).status, 409, 'host list while connections exist');
  t.equal((await call('DELETE', `/adp/substrates/${sid}/connections`)).status, 200);
  t.equal((await call('DELETE', `/adp/substrates/${sid}/hosts/h1`)).status, 200);
  t.equal((await call('DELETE', `/adp/substrates/${sid}/hosts/h1`)).status, 404);
  t.equal((await call('DELETE', `/adp/substrates/${sid}/hosts`)).status, 200);
  t.equal((await call('DELETE', `/adp/substrates/${sid}`)).status, 200);
  t.equal((await call('DELETE', `/adp/substrates/${sid}`)).status, 404);
  await call('POST', '/adp/substrates');
  t.equal((await call('DELETE', '/adp/substrates')).status, 200);
  t.equal((await call('DELETE', '/adp/substrates')).status, 304);
});

t.test('graph deletion', async (t) => {
  t.equal((await call('DELETE', '/adp/graphs/2')).status, 200);
  t.equal((await call('DELETE', '/adp/graphs/2')).status, 404);
  t.equal((await call('DELETE', '/adp/graphs')).status, 200);
  t.equal((await call('GET', '/adp/graphs')).status, 404);
  const again = await call('POST', '/adp/graphs', await fixture('graphs.json'));
  t.equal(again.json.content[0][0], 3, 'ids are never reused');
  await created(t, '/adp/graphs', again, '/adp/graphs/3');
});

t.test('every /adp operation that answers 201 was checked for its Location', async (t) => {
  const creates = OPERATIONS.filter((op) => op.path.startsWith('/adp/') && op.status === 201).map((op) => op.name);
  t.same([...located].sort(), creates.sort());
});

t.test('HTTP: unknown paths, methods, media types and sizes', async (t) => {
  t.equal((await call('GET', '/adp/nothing')).status, 404);
  const wrong = await call('PATCH', '/adp/graphs');
  t.equal(wrong.status, 405);
  t.equal(wrong.headers.get('allow'), 'GET, POST, DELETE');
  const xmlError = await call('GET', '/adp/graphs/99', undefined, { Accept: 'application/xml' });
  t.match(xmlError.text, /<error status="404">graph 99 does not exist<\/error>/);
  const jsonTyped = await call('POST', '/adp/graphs', '<graphs/>', { 'Content-Type': 'application/json' });
  t.equal(jsonTyped.status, 400, 'Content-Type decides the parser');
  const huge = await call('POST', '/adp/graphs', `{"graph":[], "pad": "${'x'.repeat(33 * 1024 * 1024)}"}`);
  t.equal(huge.status, 413);
  const nobody = await call('POST', '/adp/graphs');
  t.equal(nobody.status, 400);
  t.match(nobody.json.error.message, /body is required/);
});

t.test("VEREFOO's context path: its clients' base URL answers, and so does every operation under it", async (t) => {
  // TestRestClient: GET http://127.0.0.1:8085/verefoo with Accept text/plain must answer 200.
  for (const base of ['/verefoo', '/verefoo/', '/']) {
    const index = await call('GET', base, undefined, { Accept: 'text/plain' });
    t.equal(index.status, 200, `GET ${base}`);
    t.match(index.text, /^GET +\/adp\/graphs\/\{gid\} /m, `GET ${base} lists the operations`);
  }
  const posted = await call('POST', '/verefoo/adp/graphs', await fixture('graphs.json'), {
    Accept: 'application/json',
  });
  t.equal(posted.status, 201);
  const id = posted.json.content[0][0] as number;
  t.equal(posted.headers.get('location'), `${s.url}/verefoo/adp/graphs/${id}`, 'the Location keeps the context path');
  const read = await call('GET', `/verefoo/adp/graphs/${id}?x=1`);
  t.equal(read.status, 200);
  t.same(read.json.content, (await call('GET', `/adp/graphs/${id}`)).json.content, 'the same operation');
  t.equal((await call('DELETE', `/verefoo/adp/graphs/${id}`)).status, 200);
  t.equal((await call('GET', `/adp/graphs/${id}`)).status, 404, 'deleted through the context path');
  t.equal((await call('GET', '/verefoox/adp/graphs')).status, 404, 'only the context path itself');
});
