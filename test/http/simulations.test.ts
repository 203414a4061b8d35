/** Simulations over a real listener: solved by the real engine, stored, read back, deleted. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ROOT, SHARED, request, startServer } from '../helpers.js';

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

t.test('reconfiguration: REACT=true or reconfigure=true, then new requirements against a stored result', async (t) => {
  const react = await readFile(path.join(SHARED, 'verefoo-testfile', 'REACT', 'Test2.xml'), 'utf8');
  for (const flag of ['REACT=true', 'reconfigure=true']) {
    const r = await call('POST', `/adp/simulations?store=false&${flag}`, react);
    t.equal(r.status, 200, flag);
    t.match(r.headers.get('x-nfv-summary'), /; 2 rule changes$/, flag);
  }
  t.equal((await call('POST', '/adp/simulations?reconfigure=yes', react)).status, 400);
  t.match((await call('POST', '/adp/simulations?reconfigure=yes', react)).json.error.message, /^reconfigure: "yes"/);

  const first = await call('POST', '/adp/simulations', office);
  const smid = Number(
    first.json.links
      .find((l: { rel: string }) => l.rel === 'simulation')
      .href.split('/')
      .pop(),
  );
  const wanted = {
    property: [
      { name: 'REACHABILITY_PROPERTY', graph: 0, src: '192.168.1.10', dst: '198.51.100.80' },
      { name: 'ISOLATION_PROPERTY', graph: 0, src: '198.51.100.66', dst: '192.168.1.10' },
    ],
  };
  const next = await call('POST', `/adp/simulations/${smid}/reconfigure`, JSON.stringify(wanted), {
    'Content-Type': 'application/json',
  });
  t.equal(next.status, 200, next.text);
  t.match(next.headers.get('x-nfv-summary'), /^2\/2 requirements hold; .*; \d+ rule changes$/);
  const later = Number(
    next.json.links
      .find((l: { rel: string }) => l.rel === 'simulation')
      .href.split('/')
      .pop(),
  );
  const diff = (await call('GET', `/adp/simulations/${smid}/diff/${later}`)).json;
  t.ok(diff.reconfigured.length >= 1, 'the diff carries the change per firewall');
  const fw = diff.reconfigured[0].firewall;
  const script = await call('GET', `/adp/simulations/${smid}/change/${later}?node=${fw}&format=iptables`);
  t.equal(script.status, 200);
  t.match(script.text, /^# nfv: firewall .*\n# load with: iptables-restore --noflush < FILE\n\*filter\n/);
  for (const format of ['nftables', 'ovs', 'ipfw', 'vendor'])
    t.equal((await call('GET', `/adp/simulations/${smid}/change/${later}?node=${fw}&format=${format}`)).status, 200);
  for (const format of ['pf', 'constructor'])
    t.equal((await call('GET', `/adp/simulations/${smid}/change/${later}?node=${fw}&format=${format}`)).status, 400);
  t.equal((await call('GET', `/adp/simulations/${smid}/change/${later}?node=9.9.9.9`)).status, 404);
  t.equal((await call('POST', `/adp/simulations/999/reconfigure`, JSON.stringify(wanted))).status, 404);
});

t.test('a substrate in the NFV: placed, with X-Nfv-Hosting; byParams?sid places on the stored substrate', async (t) => {
  const centre = await readFile(path.join(ROOT, 'samples', 'data-centre.xml'), 'utf8');
  const r = await call('POST', '/adp/simulations', centre);
  t.equal(r.status, 200);
  t.equal(r.headers.get('x-nfv-hosting'), 'placed');
  t.equal(r.headers.get('x-nfv-active-hosts'), '6');
  t.match(r.headers.get('x-nfv-summary'), /; hosting: 6 active hosts, total latency 28 \(optimal\)$/);
  const hosts = r.json.content[0].hosts.host as { name: string; active: boolean; nodeRef?: { node: string }[] }[];
  t.same(
    hosts.filter((h) => h.active).map((h) => h.name),
    ['internet', 'admin', 'web1', 'web2', 'db', 'core1'],
  );
  const stored = r.json.links.find((l: { rel: string }) => l.rel === 'simulation').href as string;
  const report = (await call('GET', `${stored}/report`)).json;
  t.equal(report.hosting.status, 'placed');
  // The stored inputs are the newest graph, requirement set and substrate.
  const list = async (collection: string) => (await call('GET', collection)).json.content[0];
  const gid = Math.max(...(await list('/adp/graphs')).graph.map((g: { id: number }) => g.id));
  const rid = Math.max(...(await list('/adp/requirements')).map((r: { id: number }) => r.id));
  const sid = Math.max(...((await list('/adp/substrates')) as number[]));
  const byParams = await call('POST', `/adp/simulations/byParams?gid=${gid}&rid=${rid}&sid=${sid}`);
  t.equal(byParams.status, 200);
  t.equal(byParams.headers.get('x-nfv-hosting'), 'placed');
  const again = (await call('GET', `/adp/simulations/${byParams.json.content[0]}/report`)).json;
  t.same(again.hosting.objective, report.hosting.objective, 'the stored substrate gives the same placement');
  const storedHosts = (await call('GET', `/adp/substrates/${sid}/hosts`)).json.content[0].host;
  t.notOk(
    storedHosts.some((h: { active?: boolean; nodeRef?: unknown }) => h.active !== undefined || h.nodeRef),
    'the stored substrate stays as given',
  );

  // No middlebox runs a load balancer: infeasible, the security answer, the hosts as given, still 200.
  const noBalancer = centre.replaceAll('<SupportedVNF functional_type="LOADBALANCER"/>', '');
  const infeasible = await call('POST', '/adp/simulations?store=false', noBalancer);
  t.equal(infeasible.status, 200);
  t.equal(infeasible.headers.get('x-nfv-hosting'), 'infeasible');
  t.equal(infeasible.headers.get('x-nfv-verdict'), 'SAT');
  t.match(infeasible.headers.get('x-nfv-summary'), /hosting: INFEASIBLE: 10\.0\.0\.1 \(LOADBALANCER\) fits no host/);
  t.notOk(infeasible.json.content[0].hosts.host.some((h: { active?: boolean }) => h.active));
});

t.test(
  'effort reaches the engine (the stored report says it); a bad value is 400 naming it, nothing stored',
  async (t) => {
    const r = await call('POST', '/adp/simulations?effort=7', office);
    t.equal(r.status, 200);
    const stored = r.json.links.find((l: { rel: string }) => l.rel === 'simulation').href;
    t.equal((await call('GET', `${stored}/report`)).json.effort, 7);
    const plain = await call('POST', '/adp/simulations', office);
    const plainStored = plain.json.links.find((l: { rel: string }) => l.rel === 'simulation').href;
    t.equal((await call('GET', `${plainStored}/report`)).json.effort, 1, 'effort 1 unless given');
    const before = (await call('GET', '/adp/simulations')).json;
    for (const bad of ['0', '101', '1.5', 'much', '']) {
      const b = await call('POST', `/adp/simulations?effort=${bad}`, office);
      t.equal(b.status, 400, `effort=${bad}`);
      t.match(b.json.error.message, /^effort: "[^"]*" is not a whole number from 1 to 100$/);
    }
    t.same((await call('GET', '/adp/simulations')).json, before, 'nothing stored');
  },
);

t.test(
  'objective=least-privilege: said in a header, the summary and the stored report; a bad value is 400',
  async (t) => {
    const r = await call('POST', '/adp/simulations?objective=least-privilege', office);
    t.equal(r.status, 200);
    t.equal(r.headers.get('x-nfv-objective'), 'least-privilege');
    t.match(r.headers.get('x-nfv-summary'), /; 1 rule \(least privilege\)/);
    const fw = r.json.content[0].graphs.graph[0].node.find((n: { name: string }) => n.name === '10.255.0.1');
    t.same(fw.configuration.firewall.elements, [
      {
        action: 'ALLOW',
        source: '192.168.1.10',
        destination: '198.51.100.80',
        protocol: 'TCP',
        srcPort: '*',
        dstPort: '443',
      },
    ]);
    const stored = r.json.links.find((l: { rel: string }) => l.rel === 'simulation').href;
    t.equal((await call('GET', `${stored}/report`)).json.objective, 'least-privilege');
    const plain = await call('POST', '/adp/simulations?store=false', office);
    t.equal(plain.headers.get('x-nfv-objective'), 'fewest-rules');
    const bad = await call('POST', '/adp/simulations?objective=fewest', office);
    t.equal(bad.status, 400);
    t.match(bad.json.error.message, /^objective: "fewest" is not fewest-rules or least-privilege$/);
    const both = await call('POST', '/adp/simulations?objective=least-privilege&reconfigure=true', office);
    t.equal(both.status, 400);
    t.match(both.json.error.message, /^objective: least-privilege does not apply to a reconfiguration/);
  },
);
