/** Simulations over a real listener: solved by the real engine, stored, read back, deleted. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ROOT, request, startServer } from '../helpers.js';

const s = await startServer();
t.teardown(s.close);
const call = (method: string, target: string, body?: string, headers?: Record<string, string>) =>
  request(s.url, method, target, body, headers);
const office = await readFile(path.join(ROOT, 'samples', 'office-nat.xml'), 'utf8');

t.test('nothing stored yet', async (t) => {
  t.equal((await call('GET', '/adp/simulations')).status, 404);
  t.equal((await call('DELETE', '/adp/simulations')).status, 304);
});

t.test('POST /adp/simulations solves, stores the inputs and the result', async (t) => {
  const r = await call('POST', '/adp/simulations?fid=FIREWALL&algorithm=AP', office);
  t.equal(r.status, 200);
  t.equal(r.headers.get('x-nfv-verdict'), 'SAT');
  const nfv = r.json.content[0];
  t.ok(
    nfv.graphs.graph[0].node.some((n: { functionalType?: string }) => n.functionalType === 'FIREWALL'),
    'a firewall was placed',
  );
  t.ok(nfv.propertyDefinition.property.every((p: { isSat: boolean }) => p.isSat));
  const stored = r.json.links.find((l: { rel: string }) => l.rel === 'simulation').href;
  t.equal(stored, '/adp/simulations/1');
  // The inputs are workspace resources now.
  t.equal((await call('GET', '/adp/graphs')).json.content[0].graph.length, 1);
  const set = (await call('GET', '/adp/requirements/1')).json.content[0];
  t.equal(set.property[0].graph, 1, 'properties refer to the stored graph');
  const again = await call('GET', stored, undefined, { Accept: 'application/xml' });
  t.match(again.text, /<content>\s*<NFV>/);
  const report = await call('GET', `${stored}/report`);
  t.equal(report.json.verdict, 'SAT');
  t.equal(report.json.requirements.length, 3);
  t.equal((await call('GET', '/adp/simulations')).json.content[0].length, 1);
});

t.test('an unsatisfiable input: 200, per-property answers and a conflict report', async (t) => {
  const conflicting = office.replace(
    '<Property graph="0" name="IsolationProperty" src="192.168.1.11"',
    '<Property graph="0" name="IsolationProperty" src="192.168.1.10"',
  );
  const r = await call('POST', '/adp/simulations?store=false', conflicting);
  t.equal(r.status, 200);
  t.equal(r.headers.get('x-nfv-verdict'), 'UNSAT');
  t.same(
    r.json.content[0].propertyDefinition.property.map((p: { isSat: boolean }) => p.isSat).filter((x: boolean) => !x)
      .length,
    1,
  );
  t.equal((await call('GET', '/adp/simulations')).json.content[0].length, 1, 'store=false stored nothing');
});

t.test('bad simulations are 400 and store nothing', async (t) => {
  const before = (await call('GET', '/adp/graphs')).text;
  t.equal((await call('POST', '/adp/simulations?fid=FIREWAL', office)).status, 400);
  t.equal((await call('POST', '/adp/simulations?algorithm=XY', office)).status, 400);
  t.equal((await call('POST', '/adp/simulations?timeout=-1', office)).status, 400);
  const unknownNode = office.replace('dst="198.51.100.80" lv4proto="TCP"', 'dst="10.9.9.9" lv4proto="TCP"');
  const r = await call('POST', '/adp/simulations', unknownNode);
  t.equal(r.status, 400);
  t.match(r.json.error.message, /dst "10\.9\.9\.9" is not a node of graph 0/);
  t.equal((await call('GET', '/adp/graphs')).text, before);
});

t.test('byParams simulates stored resources and answers the simulation id', async (t) => {
  t.equal((await call('POST', '/adp/simulations/byParams')).status, 400, 'gid is required');
  t.equal((await call('POST', '/adp/simulations/byParams?gid=99')).status, 404);
  t.equal((await call('POST', '/adp/simulations/byParams?gid=1&rid=99')).status, 404);
  t.equal((await call('POST', '/adp/simulations/byParams?gid=1&rid=1&sid=99')).status, 404);
  const r = await call('POST', '/adp/simulations/byParams?gid=1&rid=1');
  t.equal(r.status, 200);
  t.same(r.json.content, [2]);
  t.equal((await call('GET', '/adp/simulations/2/report')).json.verdict, 'SAT');
  t.equal(
    (await call('POST', '/adp/simulations/byParams?gid=1')).status,
    200,
    'without rid: the properties that refer to the graph',
  );
});

t.test('reading and deleting stored results', async (t) => {
  t.equal((await call('GET', '/adp/simulations/77')).status, 404);
  t.equal((await call('GET', '/adp/simulations/77/report')).status, 404);
  t.equal((await call('DELETE', '/adp/simulations/1')).status, 200);
  t.equal((await call('DELETE', '/adp/simulations/1')).status, 404);
  t.equal((await call('DELETE', '/adp/simulations')).status, 200);
  t.equal((await call('GET', '/adp/simulations')).status, 404);
});
