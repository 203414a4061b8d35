/** /v4 over a real listener: ingest through POST /v4/commands, every endpoint, paging, errors. */
import t from 'tap';
import { rawRequest, request, startServer } from '../helpers.js';
import { catalog, changed, report, user, web } from '../inventory/data.js';

const s = await startServer();
t.teardown(s.close);
const get = (path: string, params: Record<string, unknown> = {}) => {
  const q = new URLSearchParams(
    Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
  );
  return request(s.url, 'GET', `${path}${q.size ? `?${q}` : ''}`);
};
const command = (command: string, version: number, payload: unknown, more: object = {}) =>
  request(s.url, 'POST', '/v4/commands', JSON.stringify({ command, version, payload, ...more }));

t.test('ingest', async (t) => {
  t.equal((await command('replace catalog', 9, catalog('a.example', '2025-01-01T00:00:00Z', [web, user]))).status, 200);
  t.equal(
    (await command('replace_catalog', 9, catalog('b.example', '2025-01-01T00:00:00Z', [web], 'PROD'))).status,
    200,
  );
  const r = await command(
    'store report',
    8,
    report('a.example', '2025-01-01T10:00:00Z', [changed('nginx'), changed('cron', 'failure')]),
    { received: '2025-01-01T10:05:00Z' },
  );
  t.equal(r.status, 200);
  t.match(r.json, { applied: true, hash: /^[0-9a-f]{40}$/ });
  const bad = await command('store report', 8, { certname: 'x' });
  t.equal(bad.status, 400);
  t.match(bad.text, /payload\.puppet_version: is required/);
  t.equal(
    (await command('deactivate node', 3, { certname: 'b.example', producer_timestamp: '2025-02-01T00:00:00Z' })).json
      .applied,
    true,
  );
});

t.test('resources and their routes', async (t) => {
  const all = await get('/v4/resources');
  t.equal(all.status, 200);
  t.equal(all.json.length, 2, 'the deactivated node is left out');
  t.equal((await get('/v4/resources', { query: ['=', 'node_state', 'any'] })).json.length, 3);
  t.same(
    (await get('/v4/resources/Service')).json.map((r: { title: string }) => r.title),
    ['nginx'],
  );
  t.same((await get('/v4/resources/User/alice', { query: ['=', 'exported', true] })).json.length, 1);
  t.same((await get('/v4/resources/user')).json, [], 'no case folding, and no 404');
  const paged = await get('/v4/resources', {
    order_by: [{ field: 'title', order: 'desc' }],
    limit: '1',
    include_total: 'true',
  });
  t.same(
    paged.json.map((r: { title: string }) => r.title),
    ['nginx'],
  );
  t.equal(paged.headers.get('x-records'), '2');
});

t.test('reports, their parts, events and counts', async (t) => {
  const reports = (await get('/v4/reports')).json;
  t.equal(reports.length, 1);
  const hash = reports[0].hash;
  t.equal(reports[0].agent_version, '8.1.0');
  t.equal(reports[0].resource_events.href, `/pdb/query/v4/reports/${hash}/events`);
  t.same((await get(`/v4/reports/${hash}/metrics`)).json, [{ category: 'time', name: 'total', value: 1.5 }]);
  t.same((await get(`/v4/reports/${hash}/logs`)).json, []);
  t.equal((await get(`/v4/reports/${hash}/events`, { query: ['=', 'status', 'failure'] })).json.length, 1);
  const missing = await get('/v4/reports/0000/metrics');
  t.equal(missing.status, 404);
  t.same(missing.json, { error: 'No information is known about report 0000' });
  t.equal((await get('/v4/events', { query: ['=', 'certname', 'a.example'] })).json.length, 2);
  const counts = await get('/v4/event-counts', { summarize_by: 'resource', counts_filter: ['>', 'failures', 0] });
  t.same(counts.json, [
    {
      subject_type: 'resource',
      subject: { type: 'Service', title: 'cron' },
      failures: 1,
      successes: 0,
      noops: 0,
      skips: 0,
    },
  ]);
  t.same((await get('/v4/aggregate-event-counts', { summarize_by: 'certname,resource' })).json, [
    { summarize_by: 'certname', successes: 1, failures: 1, noops: 0, skips: 0, total: 1 },
    { summarize_by: 'resource', successes: 1, failures: 1, noops: 0, skips: 0, total: 2 },
  ]);
});

t.test('POST queries: the parameters in a JSON body', async (t) => {
  const r = await request(
    s.url,
    'POST',
    '/v4/resources',
    JSON.stringify({ query: ['=', 'type', 'User'], limit: 5, include_total: true }),
  );
  t.equal(r.status, 200);
  t.same(
    r.json.map((x: { title: string }) => x.title),
    ['alice'],
  );
  t.equal(r.headers.get('x-records'), '1');
  const bad = await request(s.url, 'POST', '/v4/resources', '["=", "type", "User"]');
  t.equal(bad.status, 400);
  t.match(bad.text, /the body must be a JSON object of query parameters/);
});

t.test('errors: one-line text/plain 400s', async (t) => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['/v4/resources', { query: ['=', 'nope', 1] }, /'nope' is not a queryable object for resources/],
    ['/v4/resources', { query: '["="' }, /^Json parse error at line 1, column 5/],
    ['/v4/resources', { limit: '0' }, /Illegal value '0' for :limit; expected a positive non-zero integer\./],
    ['/v4/resources', { offset: '-1' }, /Illegal value '-1' for :offset; expected a non-negative integer\./],
    ['/v4/resources', { order_by: [{ field: 'nope' }] }, /Unrecognized column 'nope' specified in :order_by/],
    ['/v4/resources', { frobnicate: '1' }, /Unsupported query parameter 'frobnicate'/],
    ['/v4/event-counts', {}, /Missing required query parameter 'summarize_by'/],
    ['/v4/event-counts', { summarize_by: 'x' }, /Unsupported value for 'summarize_by': 'x'/],
    ['/v4/aggregate-event-counts', { summarize_by: 'resource', limit: '1' }, /Unsupported query parameter 'limit'/],
    ['/v4/events', { distinct_resources: 'true' }, /requires accompanying parameters/],
  ];
  for (const [path, params, message] of cases) {
    const r = await get(path, params);
    t.equal(r.status, 400, String(message));
    t.match(r.headers.get('content-type'), /^text\/plain/);
    t.match(r.text, message);
  }
});

t.test('a title is any non-empty string: file paths, percent-encoded in the path', async (t) => {
  const file = { ...web, type: 'File', title: '/etc/passwd', parameters: { mode: '0644' } };
  const dotted = { ...web, type: 'File', title: '..', parameters: {} };
  t.equal(
    (await command('replace catalog', 9, catalog('c.example', '2025-01-01T00:00:00Z', [file, dotted]))).status,
    200,
  );
  const passwd = await get('/v4/resources/File/%2Fetc%2Fpasswd');
  t.equal(passwd.status, 200, passwd.text);
  t.same(
    passwd.json.map((r: { certname: string; title: string }) => [r.certname, r.title]),
    [['c.example', '/etc/passwd']],
  );
  // pypuppetdb (2.2.0 and 3.1.0) puts the title in the path unescaped: PuppetDB's title takes the rest of the path.
  for (const target of [
    '/v4/resources/File//etc/passwd',
    '/pdb/query/v4/resources/File//etc/passwd',
    '/pdb/query/v4/nodes/c.example/resources/File//etc/passwd',
  ]) {
    const raw = await rawRequest(s.url, 'GET', target);
    t.equal(raw.status, 200, `${target}: ${raw.text}`);
    t.same(
      raw.json.map((r: { certname: string; title: string }) => [r.certname, r.title]),
      [['c.example', '/etc/passwd']],
      target,
    );
  }
  t.equal((await get('/v4/resources/File/%2e%2e')).status, 400, 'a dot segment stays refused by the router');
  t.equal((await rawRequest(s.url, 'GET', '/v4/resources/File//etc/../passwd')).status, 400, 'in a title too');
  t.equal((await rawRequest(s.url, 'GET', '/v4/resources//File/a/b')).status, 400, "the router's own segments");
  t.equal((await get('/v4/resources/File/%2Fetc%2Fshadow')).json.length, 0);
});

t.test('/pdb/query/v4: PQL over GET and POST as puppetdb_query() and pypuppetdb send it', async (t) => {
  const got = await get('/pdb/query/v4', { query: 'resources[certname, title] { type = "User" }' });
  t.equal(got.status, 200, got.text);
  t.match(got.headers.get('content-type'), /^application\/json/);
  t.same(got.json, [{ certname: 'a.example', title: 'alice' }]);
  const posted = await request(
    s.url,
    'POST',
    '/pdb/query/v4',
    JSON.stringify({ query: '["from", "resources", ["extract", ["title"], ["=", "type", "User"]]]' }),
    { 'Content-Type': 'application/json; charset=UTF-8' },
  );
  t.equal(posted.status, 200, posted.text);
  t.same(posted.json, [{ title: 'alice' }]);
  const bad = await get('/pdb/query/v4', { query: 'resources { type = }' });
  t.equal(bad.status, 400);
  t.match(bad.headers.get('content-type'), /^text\/plain/);
  t.match(bad.text, /^PQL parse error at line 1, column 20: found '}'\. Expected one of: /);
  t.equal((await request(s.url, 'PUT', '/pdb/query/v4?query=resources{}')).status, 405);
});

t.test(
  "/pdb/query/v4 entity routes as pypuppetdb asks them: reports with puppet_version, PuppetDB's errors",
  async (t) => {
    const reports = await get('/pdb/query/v4/reports', {
      query: ['=', 'certname', 'a.example'],
      order_by: [{ field: 'end_time', order: 'desc' }],
      limit: '1',
      include_total: 'true',
    });
    t.equal(reports.status, 200, reports.text);
    t.equal(reports.headers.get('x-records'), '1');
    t.equal(reports.json[0].puppet_version, '8.1.0');
    t.notOk('agent_version' in reports.json[0]);
    const events = await get(`/pdb/query/v4/reports/${reports.json[0].hash}/events`, {
      query: ['=', 'status', 'failure'],
    });
    t.same(events.json, (await get('/v4/events', { query: ['=', 'status', 'failure'] })).json);
    t.equal((await get('/pdb/query/v4/resources/User/alice')).json.length, 1);
    const bad = await get('/pdb/query/v4/event-counts');
    t.equal(bad.status, 400);
    t.match(bad.headers.get('content-type'), /^text\/plain/);
    t.equal(bad.text.trimEnd(), "Missing required query parameter 'summarize_by'");
    t.equal((await get('/pdb/query/v4/packages')).status, 404, 'entities nfv does not have stay unrouted');
  },
);
