/**
 * The `/v4` operations in-process on a folder workspace: ingest of one command or a batch (each applied or refused
 * on its own, PuppetDB's words for a refusal, nothing written for it), and every query endpoint in its GET and POST
 * forms, with the criteria its route adds, paging headers and PuppetDB's 404s and 400s.
 */
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { MAX_BATCH } from '../../src/model/limits.js';
import { PUPPETDB_VERSION, ingestBatch, ingestCommand, queryEndpoints } from '../../src/ops/inventory.js';
import { execute, invoke, type JsonReply } from '../../src/ops/operation.js';
import { render } from '../../src/ops/render.js';
import { OPERATIONS } from '../../src/ops/table.js';
import type { Workspace } from '../../src/store/workspace.js';
import { snapshot } from '../helpers.js';
import { catalog, changed, report, user, web } from '../inventory/data.js';
import { call, content, ok, refused, workspace } from './call.js';

const command = (command: string, version: number, payload: unknown, more: object = {}) =>
  JSON.stringify({ command, version, payload, ...more });

/** A workspace with a.example (web, user) and b.example (web, deactivated), and one report of a.example. */
async function populated(t: Tap.Test): Promise<{ ws: Workspace; hash: string }> {
  const ws = await workspace(t);
  const batch = [
    { command: 'replace catalog', version: 9, payload: catalog('a.example', '2025-01-01T00:00:00Z', [web, user]) },
    { command: 'replace catalog', version: 9, payload: catalog('b.example', '2025-01-01T00:00:00Z', [web], 'PROD') },
    {
      command: 'store report',
      version: 8,
      payload: report('a.example', '2025-01-01T10:00:00Z', [changed('nginx'), changed('cron', 'failure')]),
      received: '2025-01-01T10:05:00Z',
    },
    { command: 'deactivate node', version: 3, payload: { certname: 'b.example', producer_timestamp: '2025-02-01' } },
  ];
  const results = await ok(t, ws, 'POST', '/v4/commands/batch', batch, 200);
  t.ok(
    results.every((r: { applied?: boolean }) => r.applied === true),
    'the four commands applied',
  );
  return { ws, hash: results[2].hash };
}

/** The GET form of an endpoint, with URL parameters (non-strings as JSON). */
const query = (ws: Workspace, endpoint: keyof typeof queryEndpoints, params: Record<string, unknown> = {}, path = {}) =>
  invoke(queryEndpoints[endpoint].get, ws, {
    params: path,
    query: new URLSearchParams(
      Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
    ),
  });
const rows = async (...args: Parameters<typeof query>) => {
  const o = await query(...args);
  if (!o.ok) throw new Error(`${args[1]}: ${o.status} ${o.error}`);
  return o.reply.value as any[];
};

t.test('ingest: a command applied, a stale one answered as not applied, a bad one refused', async (t) => {
  const ws = await workspace(t);
  const first = await invoke(ingestCommand, ws, {
    body: command('replace catalog', 9, catalog('a.example', '2025-01-02T00:00:00Z', [web])),
  });
  t.match(first, { ok: true, status: 200, reply: { value: { command: 'replace catalog', applied: true } } });
  const stale = await invoke(ingestCommand, ws, {
    body: command('replace_catalog', 9, catalog('a.example', '2025-01-01T00:00:00Z', [user])),
  });
  t.match(stale, { ok: true, reply: { value: { applied: false } } }, 'older than the stored catalog');
  t.same(
    (await rows(ws, 'resources')).map((r) => r.title),
    ['nginx'],
    'the newer catalog stays',
  );

  const refusals: [string, RegExp][] = [
    [command('store report', 8, { certname: 'x' }), /payload\.puppet_version: is required/],
    [command('replace catalog', 8, {}), /^command\.version: 8 is not supported for replace catalog \(use 9\)$/],
    [command('nonsense', 1, {}), /^command\.command: "nonsense" is not replace catalog, replace facts, store report/],
    ['[]', /^expected a command object \{command, version, payload\}$/],
  ];
  for (const [body, message] of refusals) await refused(t, ws, 'POST', '/v4/commands', body, 400, message);
  const bad = await invoke(ingestCommand, ws, { body: '{"command": "nonsense"}', format: 'json' });
  t.equal(render(bad, 'json').mediaType, 'text/plain', 'PuppetDB: a one-line text');
});

t.test('batch: each command applied or refused on its own; not an array or too many: 400', async (t) => {
  const ws = await workspace(t);
  const batch = [
    JSON.parse(command('replace catalog', 9, catalog('a.example', '2025-01-01T00:00:00Z', [web]))),
    { command: 'replace catalog', version: 9, payload: { certname: 'b.example' } },
    JSON.parse(command('replace catalog', 9, catalog('c.example', '2025-01-01T00:00:00Z', [user]))),
  ];
  const answered = await invoke(ingestBatch, ws, { body: JSON.stringify(batch) });
  if (!answered.ok) return t.fail(answered.error);
  t.match(answered.reply, { compact: true });
  const [a, b, c] = answered.reply.value as any[];
  t.match(a, { command: 'replace catalog', applied: true });
  t.match(b, { error: { status: 400, message: /^payload\./ } });
  t.match(c, { applied: true });
  t.same(
    (await rows(ws, 'resources')).map((r) => r.certname),
    ['a.example', 'c.example'],
  );
  await refused(t, ws, 'POST', '/v4/commands/batch', batch[0], 400, /^the body must be a JSON array of commands$/);
  await refused(
    t,
    ws,
    'POST',
    '/v4/commands/batch',
    `[${Array(MAX_BATCH + 1).fill('{}')}]`,
    400,
    new RegExp(`^a batch holds at most ${MAX_BATCH} commands, not ${MAX_BATCH + 1}$`),
  );
});

t.test('queries: each endpoint answers its rows; routes add their criteria', async (t) => {
  const { ws, hash } = await populated(t);
  t.same(
    (await rows(ws, 'resources')).map((r) => `${r.certname} ${r.title}`),
    ['a.example nginx', 'a.example alice'],
    'resources of active nodes',
  );
  t.equal((await rows(ws, 'resources', { query: ['=', 'node_state', 'any'] })).length, 3);
  t.same(
    (await rows(ws, 'resources.type', {}, { type: 'User' })).map((r) => r.title),
    ['alice'],
  );
  t.same(await rows(ws, 'resources.type', {}, { type: 'user' }), [], 'types are exact; no 404');
  t.equal((await rows(ws, 'resources.title', {}, { type: 'Service', title: 'nginx' })).length, 1);
  t.same(
    await rows(ws, 'resources.title', { query: ['=', 'exported', true] }, { type: 'Service', title: 'nginx' }),
    [],
    'the query is ANDed onto the route',
  );
  const [r] = await rows(ws, 'reports');
  t.match(r, { hash, certname: 'a.example', agent_version: '8.1.0' });
  t.same(await rows(ws, 'reports.metrics', {}, { hash }), [{ category: 'time', name: 'total', value: 1.5 }]);
  t.same(await rows(ws, 'reports.logs', {}, { hash }), []);
  t.same(
    (await rows(ws, 'reports.events', { query: ['=', 'status', 'failure'] }, { hash })).map((e) => e.resource_title),
    ['cron'],
  );
  t.equal((await rows(ws, 'events')).length, 2);
  t.same(await rows(ws, 'event-counts', { summarize_by: 'resource', counts_filter: ['>', 'failures', 0] }), [
    {
      subject_type: 'resource',
      subject: { type: 'Service', title: 'cron' },
      failures: 1,
      successes: 0,
      noops: 0,
      skips: 0,
    },
  ]);
  t.same(await rows(ws, 'aggregate-event-counts', { summarize_by: 'certname' }), [
    { summarize_by: 'certname', successes: 1, failures: 1, noops: 0, skips: 0, total: 1 },
  ]);
});

t.test('POST forms take the parameters from a JSON body; paging headers; compact unless pretty', async (t) => {
  const { ws } = await populated(t);
  const post = await invoke(queryEndpoints.resources.post, ws, {
    body: JSON.stringify({ query: ['=', 'type', 'User'], limit: 5, include_total: true }),
  });
  if (!post.ok) return t.fail(post.error);
  t.same(
    (post.reply.value as any[]).map((r) => r.title),
    ['alice'],
  );
  t.same(post.reply.headers, { 'X-Records': '1' });
  t.equal(post.reply.compact, true);
  const pretty = await query(ws, 'resources', { pretty: 'true', order_by: [{ field: 'title' }], limit: '1' });
  t.match(pretty, { ok: true, reply: { compact: false, headers: undefined } });
  t.same(pretty.ok && (pretty.reply.value as any[]).map((r) => r.title), ['alice']);
  await refused(
    t,
    ws,
    'POST',
    '/v4/resources',
    '["=", "type", "User"]',
    400,
    /^the body must be a JSON object of query parameters$/,
  );
});

t.test("unknown reports are 404s and bad queries 400s, in PuppetDB's words, changing nothing", async (t) => {
  const { ws } = await populated(t);
  for (const part of ['metrics', 'logs', 'events'])
    await refused(
      t,
      ws,
      'GET',
      `/v4/reports/0000/${part}`,
      undefined,
      404,
      /^No information is known about report 0000$/,
    );
  const long = await query(ws, 'reports.metrics', {}, { hash: 'f'.repeat(100_000) });
  t.match(long, { ok: false, status: 404 });
  t.ok(!long.ok && long.error.length <= 300, 'a 100 KB hash is cut in the message');
  const before = await snapshot(ws.dir);
  const bad: [keyof typeof queryEndpoints, Record<string, unknown>, RegExp][] = [
    ['resources', { query: ['=', 'nope', 1] }, /^'nope' is not a queryable object for resources\. Known queryable/],
    ['resources', { limit: '0' }, /^Illegal value '0' for :limit; expected a positive non-zero integer\.$/],
    ['reports', { frobnicate: '1' }, /^Unsupported query parameter 'frobnicate'$/],
    ['event-counts', {}, /^Missing required query parameter 'summarize_by'$/],
    [
      'event-counts',
      { summarize_by: 'certname', counts_filter: ['and', ['>', 'failures', 0]] },
      /^\["and" \[">" "failures" 0\]\] is not well-formed: query operator 'and' is unknown$/,
    ],
    ['aggregate-event-counts', { summarize_by: 'resource', limit: '1' }, /^Unsupported query parameter 'limit'$/],
  ];
  for (const [endpoint, params, message] of bad) {
    const o = await query(ws, endpoint, params);
    t.match(o, { ok: false, status: 400 }, endpoint);
    t.match(!o.ok && o.error, message);
    t.equal(render(o, 'json').mediaType, 'text/plain');
  }
  t.same(await snapshot(ws.dir), before, 'nothing written');
});

t.test('the root endpoint: PQL or AST, GET or POST, active nodes only, PuppetDB names', async (t) => {
  const { ws } = await populated(t);
  // A report of b.example older than its deactivation: stored, and b stays deactivated.
  await ok(t, ws, 'POST', '/v4/commands', {
    command: 'store report',
    version: 8,
    payload: report('b.example', '2025-01-01T11:00:00Z', [changed('nginx')], { environment: 'PROD' }),
  });
  const root = (params: Record<string, unknown>) =>
    ok(
      t,
      ws,
      'GET',
      `/pdb/query/v4?${new URLSearchParams(
        Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
      )}`,
    );
  const pql = (query: string, more: Record<string, unknown> = {}) => root({ query, ...more });

  t.same(
    (await pql('resources { }')).map((r: any) => `${r.certname} ${r.title}`),
    ['a.example nginx', 'a.example alice'],
  );
  t.same(await pql('resources { }'), await rows(ws, 'resources'), 'as /v4/resources answers');
  t.same(await pql('resources[title] { type = "User" }'), [{ title: 'alice' }]);
  t.same(await root({ query: ['from', 'resources', ['extract', ['title'], ['=', 'type', 'User']]] }), [
    { title: 'alice' },
  ]);
  t.same(
    (await pql('resources[certname] { node_state = "any" and type = "Service" }')).map((r: any) => r.certname),
    ['a.example', 'b.example'],
    'node_state in the query: no restriction',
  );

  const reportsOf = async (query: string) => ((await pql(query)) as any[]).map((r) => r.certname);
  t.same(await reportsOf('reports { }'), ['a.example'], 'reports of deactivated nodes are not answered here');
  t.same(
    (await rows(ws, 'reports')).map((r) => r.certname),
    ['a.example', 'b.example'],
    'but /v4/reports answers them',
  );
  t.same(await reportsOf('reports { node_state = "any" }'), ['a.example', 'b.example']);
  t.same(await reportsOf('reports { node_state = "inactive" }'), ['b.example']);
  t.same(
    ((await pql('events { }')) as any[]).map((e) => e.certname),
    ['a.example', 'a.example'],
    'events likewise',
  );
  const [record] = await pql('reports { }');
  t.equal(record.puppet_version, '8.1.0', 'reports answer puppet_version');
  t.notOk('agent_version' in record);
  t.same(Object.keys(record).slice(0, 4), ['hash', 'certname', 'puppet_version', 'report_format'], 'in its place');
  t.same(await pql('reports[agent_version] { }'), [{ agent_version: '8.1.0' }], 'an extract keeps the names asked for');

  t.same(
    (await pql('resources[title] { order by title desc limit 1 }', { limit: 5, order_by: [{ field: 'title' }] })).map(
      (r: any) => r.title,
    ),
    ['nginx'],
    "the from's paging clauses take the place of the URL's",
  );
  t.same(
    (await pql('resources[title] { }', { limit: 1, offset: 1, order_by: [{ field: 'title' }] })).map(
      (r: any) => r.title,
    ),
    ['nginx'],
    "the URL's paging otherwise",
  );
  const counted = await call(
    ws,
    'GET',
    `/pdb/query/v4?${new URLSearchParams({ query: 'resources{}', include_total: 'true', limit: '1' })}`,
  );
  t.match(counted, { ok: true, reply: { headers: { 'X-Records': '2' } } });

  const post = (body: object) => ok(t, ws, 'POST', '/pdb/query/v4', body, 200);
  t.same(await post({ query: 'resources[title] { type = "User" }' }), [{ title: 'alice' }]);
  t.same(await post({ query: ['from', 'resources', ['extract', ['title']]], limit: 1 }), [{ title: 'nginx' }]);
  t.same(await post({ query: 'reports { }', ast_only: true }), ['from', 'reports'], 'ast_only: the AST as parsed');
  t.same(await pql('nodes[certname] { facts { name = "os" } }', { ast_only: 'TRUE' }), [
    'from',
    'nodes',
    ['extract', ['certname'], ['subquery', 'facts', ['=', 'name', 'os']]],
  ]);
});

t.test("the root endpoint refuses in PuppetDB's words, changing nothing", async (t) => {
  const { ws } = await populated(t);
  const bad: [Record<string, string>, RegExp][] = [
    [{ query: 'nodes { certname = }' }, /^PQL parse error at line 1, column 20: found '}'\. Expected one of: /],
    [{ query: '["from", "resources"' }, /^Json parse error at line 1, column/],
    [{}, /^Missing required query parameter 'query'$/],
    [{ query: 'resources {}', summarize_by: 'certname' }, /^Unsupported query parameter 'summarize_by'$/],
    [{ query: '["=", "type", "File"]' }, /^Your initial query must be of the form: \["from",<entity>,/],
    [{ query: 'packages { }' }, /^Invalid entity 'packages' in query$/],
    [{ query: '["from", "frobs"]', ast_only: 'true' }, /^Invalid entity 'frobs' in query$/],
    [{ query: 'resources { nope = 1 }' }, /^'nope' is not a queryable object for resources\. Known queryable/],
    [{ query: 'resources { nope = 1 }', ast_only: 'true' }, /^'nope' is not a queryable object for resources/],
    [{ query: 'resources { limit 1 limit 2 }' }, /^Multiple 'limit' clauses are not permitted$/],
    [{ query: 'resources { limit 0 }' }, /^Illegal value '0' for :limit; expected a positive non-zero integer\.$/],
    [{ query: 'resources[to_string(line, "9")] { }' }, /^function to_string is not supported/],
  ];
  for (const [params, message] of bad)
    await refused(t, ws, 'GET', `/pdb/query/v4?${new URLSearchParams(params)}`, undefined, 400, message);
  await refused(t, ws, 'POST', '/pdb/query/v4', '{"query": "nodes {"}', 400, /^PQL parse error at line 1, column 8/);
});

t.test('/pdb/query/v4 entity routes: what their /v4 twins answer, reports in PuppetDB names', async (t) => {
  const { ws, hash } = await populated(t);
  // A report of b.example older than its deactivation: stored, and b stays deactivated.
  await ok(t, ws, 'POST', '/v4/commands', {
    command: 'store report',
    version: 8,
    payload: report('b.example', '2025-01-01T11:00:00Z', [changed('nginx')], { environment: 'PROD' }),
  });
  const target = (path: string, params: Record<string, unknown>) => {
    const q = new URLSearchParams(
      Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
    );
    return `${path}${q.size ? `?${q}` : ''}`;
  };
  const twins = async (path: string, params: Record<string, unknown> = {}) => {
    const pdb = await call(ws, 'GET', target(`/pdb/query/v4${path}`, params));
    const v4 = await call(ws, 'GET', target(`/v4${path}`, params));
    if (!pdb.ok || !v4.ok) throw new Error(`${path}: ${!pdb.ok ? pdb.error : ''} ${!v4.ok ? v4.error : ''}`);
    t.equal(pdb.status, v4.status, `${path}: status`);
    t.same(pdb.reply.kind === 'json' && pdb.reply.headers, v4.reply.kind === 'json' && v4.reply.headers, 'headers');
    return { pdb: content(pdb) as any[], v4: content(v4) as any[] };
  };
  const same = async (path: string, params: Record<string, unknown> = {}, expected?: number) => {
    const { pdb, v4 } = await twins(path, params);
    t.same(pdb, v4, `/pdb/query/v4${path} answers as /v4${path}`);
    if (expected !== undefined) t.equal(pdb.length, expected, `${path}: ${expected} rows`);
    return pdb;
  };

  t.same(
    (await same('/resources', {}, 2)).map((r) => r.certname),
    ['a.example', 'a.example'],
    'resources of active nodes only',
  );
  await same('/resources', { query: ['=', 'node_state', 'any'], order_by: [{ field: 'certname' }] }, 3);
  await same('/resources', { query: ['extract', [['function', 'count']]] }, 1);
  await same('/resources/Service', { include_total: true }, 1);
  await same('/resources/User/alice', { query: ['=', 'exported', true] }, 1);
  await same('/resources/Service/nginx', { query: ['=', 'node_state', 'inactive'] }, 1);
  await same(`/reports/${hash}/events`, { query: ['=', 'status', 'failure'] }, 1);
  await same(`/reports/${hash}/metrics`, {}, 1);
  await same(`/reports/${hash}/logs`, {}, 0);
  await same('/events', { order_by: [{ field: 'resource_title' }], limit: 2, offset: 1 }, 2);
  await same('/event-counts', { summarize_by: 'certname' }, 2);
  await same('/aggregate-event-counts', { summarize_by: 'resource', count_by: 'certname' }, 1);

  const { pdb, v4 } = await twins('/reports', {
    order_by: [{ field: 'certname', order: 'desc' }],
    include_total: true,
  });
  t.same(
    pdb.map((r) => r.certname),
    ['b.example', 'a.example'],
    "reports of every node, the deactivated one's too, as PuppetDB's entity endpoint answers them",
  );
  t.equal(pdb[0].puppet_version, '8.1.0');
  t.same(Object.keys(pdb[0]).slice(0, 4), ['hash', 'certname', 'puppet_version', 'report_format'], 'in its place');
  t.notOk('agent_version' in pdb[0]);
  t.same(
    pdb,
    v4.map(({ agent_version, ...rest }) => ({ ...rest, puppet_version: agent_version })),
    'otherwise the /v4 records',
  );
  t.same(
    await ok(t, ws, 'GET', target('/pdb/query/v4/reports', { query: ['~', 'puppet_version', '^8'] })),
    pdb.slice().reverse(),
    'puppet_version is a criterion',
  );
  t.same(
    await ok(t, ws, 'GET', target('/pdb/query/v4/reports', { query: ['extract', ['agent_version', 'certname']] })),
    [
      { agent_version: '8.1.0', certname: 'a.example' },
      { agent_version: '8.1.0', certname: 'b.example' },
    ],
    'an extract keeps the names asked for, as at the root endpoint',
  );
  const posted = await ok(t, ws, 'POST', '/pdb/query/v4/reports', { query: ['=', 'certname', 'a.example'] }, 200);
  t.same(posted, [pdb[1]], 'the POST form takes the same names');
});

t.test('/pdb/query/v4 entity routes refuse as their /v4 twins do; entities nfv lacks stay unrouted', async (t) => {
  const { ws } = await populated(t);
  const cases: [string, RegExp][] = [
    ['/resources?query=["=","nope",1]', /^'nope' is not a queryable object for resources\. Known queryable/],
    ['/resources/Service?limit=0', /^Illegal value '0' for :limit; expected a positive non-zero integer\.$/],
    ['/resources/Service/nginx?order_by=[{"field":"nope"}]', /nope/],
    ['/reports?frobnicate=1', /^Unsupported query parameter 'frobnicate'$/],
    ['/reports?query=["=","puppet_version"', /^Json parse error at line 1, column/],
    ['/events?distinct_resources=true', /^'distinct_resources' query parameter requires accompanying parameters/],
    ['/event-counts', /^Missing required query parameter 'summarize_by'$/],
    ['/aggregate-event-counts?summarize_by=resource&limit=1', /^Unsupported query parameter 'limit'$/],
  ];
  for (const [path, message] of cases) {
    await refused(t, ws, 'GET', `/pdb/query/v4${path}`, undefined, 400, message);
    const v4 = await call(ws, 'GET', `/v4${path}`);
    const pdb = await call(ws, 'GET', `/pdb/query/v4${path}`);
    t.same(!pdb.ok && [pdb.status, pdb.error], !v4.ok && [v4.status, v4.error], `${path}: the same refusal as /v4`);
  }
  for (const part of ['events', 'metrics', 'logs'])
    await refused(
      t,
      ws,
      'GET',
      `/pdb/query/v4/reports/0000/${part}`,
      undefined,
      404,
      /^No information is known about report 0000$/,
    );
  await refused(
    t,
    ws,
    'POST',
    '/pdb/query/v4/events',
    '[]',
    400,
    /^the body must be a JSON object of query parameters$/,
  );
  for (const path of ['/packages', '/package-inventory', '/catalog-inputs'])
    await refused(t, ws, 'GET', `/pdb/query/v4${path}`, undefined, 404, /^no operation at/);
});

t.test("PuppetDB's meta endpoints: the API version its clients check, the server's clock", async (t) => {
  const ws = await workspace(t);
  const version = await ok(t, ws, 'GET', '/pdb/meta/v1/version', undefined, 200);
  t.same(version, { version: PUPPETDB_VERSION });
  // Puppetboard 4.2.6 (check_db_version): version.split('-')[0] compared with 5.2.0, or it exits at start.
  const [major, minor] = (version.version as string).split('-')[0]!.split('.').map(Number);
  t.ok(major! > 5 || (major === 5 && minor! >= 2), 'at least 5.2.0');

  const before = Date.now();
  const { server_time: time } = await ok(t, ws, 'GET', '/pdb/meta/v1/server-time', undefined, 200);
  t.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'ISO 8601, UTC, milliseconds');
  t.ok(Date.parse(time) >= before - 1 && Date.parse(time) <= Date.now() + 1, 'now');

  for (const path of ['/pdb/meta/v1/version', '/pdb/meta/v1/server-time'])
    await refused(t, ws, 'GET', `${path}?pretty=true`, undefined, 400, /^Unsupported query parameter 'pretty'$/);
  await refused(t, ws, 'POST', '/pdb/meta/v1/version', undefined, 405, /POST is not allowed/);
});

t.test('the puppetdb-status service: running while the inventory answers, 503 and the reason when not', async (t) => {
  const { ws } = await populated(t);
  const running = {
    service_version: PUPPETDB_VERSION,
    service_status_version: 1,
    detail_level: 'info',
    state: 'running',
    status: { 'maintenance_mode?': false, queue_depth: 0, 'read_db_up?': true, 'write_db_up?': true },
    active_alerts: [],
    service_name: 'puppetdb-status',
  };
  t.same(await ok(t, ws, 'GET', '/status/v1/services/puppetdb-status', undefined, 200), running);
  t.same(await ok(t, ws, 'GET', '/status/v1/services/puppetdb-status?level=debug&service_status_version=1'), {
    ...running,
    detail_level: 'debug',
  });
  const fresh = await workspace(t);
  t.same(
    await ok(t, fresh, 'GET', '/status/v1/services/puppetdb-status', undefined, 200),
    running,
    'an empty inventory is running too',
  );
  const bad: [string, RegExp][] = [
    ['level=verbose', /^Invalid level: verbose$/],
    ['service_status_version=2', /^No status function with version 2 found for service puppetdb-status$/],
    ['timeout=5', /^Unsupported query parameter 'timeout'$/],
  ];
  for (const [params, message] of bad)
    await refused(t, ws, 'GET', `/status/v1/services/puppetdb-status?${params}`, undefined, 400, message);

  // A journal damaged in its middle is refused by every read: the service says so instead of answering running.
  const damaged = await workspace(t);
  await writeFile(path.join(damaged.dir, 'inventory.journal'), 'not a journal line\n');
  const o = await call(damaged, 'GET', '/status/v1/services/puppetdb-status');
  t.match(o, { ok: true, status: 503 });
  const answer = o.ok ? (o.reply as { value: any }).value : undefined;
  t.match(answer, {
    state: 'error',
    status: { 'read_db_up?': false, 'write_db_up?': false },
    active_alerts: [{ severity: 'error', message: /inventory\.journal/ }],
  });
  const rendered = render(o, 'json');
  t.equal(rendered.status, 503);
  t.same(JSON.parse(rendered.body), answer, 'served as the status document, not as an error text');
});

/** A `/pdb/cmd/v1` request through the table, as serve passes it (the Content-Type header given or not). */
const pdbCmd = (ws: Workspace, params: Record<string, string>, body: string | object, contentType?: string) =>
  execute(OPERATIONS, ws, {
    method: 'POST',
    target: `/pdb/cmd/v1${Object.keys(params).length ? `?${new URLSearchParams(params)}` : ''}`,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    contentType,
  });
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('/pdb/cmd/v1: the query-parameter form and the body form, answered with a fresh uuid once stored', async (t) => {
  const ws = await workspace(t);
  const payload = JSON.stringify(catalog('a.example', '2025-01-02T00:00:00Z', [web, user]));
  const params = {
    checksum: sha1(payload),
    version: '9',
    certname: 'a.example',
    command: 'replace_catalog',
    'producer-timestamp': '2025-01-02T00:00:00.000Z',
  };
  const first = await pdbCmd(ws, params, payload, 'application/json; charset=utf-8');
  t.match(first, { ok: true, status: 200 });
  const { uuid } = first.ok ? (first.reply as JsonReply<{ uuid: string }>).value : { uuid: '' };
  t.match(uuid, UUID, 'a UUID v4');
  t.same(Object.keys(first.ok ? (first.reply as JsonReply<object>).value : {}), ['uuid'], 'only the uuid');
  t.same((await rows(ws, 'resources')).map((r) => r.title).sort(), ['alice', 'nginx'], 'stored before the answer');

  // The checksum the Puppet terminus sends: SHA-1 of {command (with spaces), version, certname, payload} as one line.
  const older = JSON.stringify(catalog('a.example', '2025-01-01T00:00:00Z', [web]));
  const terminus = sha1(`{"command":"replace catalog","version":9,"certname":"a.example","payload":${older}}`);
  const stale = await pdbCmd(ws, { ...params, checksum: terminus }, older);
  t.match(stale, { ok: true, status: 200 }, 'a stale catalog is answered too');
  t.not(stale.ok && (stale.reply as JsonReply<{ uuid: string }>).value.uuid, uuid, 'a fresh uuid each time');
  t.same((await rows(ws, 'resources')).length, 2, 'the stale catalog changed nothing');

  // The body form (pypuppetdb's older clients), the command with spaces; and with secondsToWaitForCompletion.
  const report8 = report('a.example', '2025-01-02T10:00:00Z', [changed('nginx')]);
  const body = JSON.stringify({ command: 'store report', version: 8, payload: report8 });
  const waited = await pdbCmd(ws, { checksum: sha1(body), secondsToWaitForCompletion: '5' }, body);
  t.match(waited, { ok: true, status: 200, reply: { value: { uuid: UUID, processed: true, timed_out: false } } });
  t.equal((await rows(ws, 'reports')).length, 1, 'the report is stored');

  // pypuppetdb's command(): its checksum is the SHA-1 of Python's str(payload), which PuppetDB has not compared since
  // 4.0; a checksum of anything is taken.
  const deactivate = { certname: 'a.example', producer_timestamp: '2025-03-01T00:00:00Z' };
  const pythonStr = "{'certname': 'a.example', 'producer_timestamp': '2025-03-01T00:00:00Z'}";
  const deactivation = { command: 'deactivate node', version: '3', certname: 'a.example', checksum: sha1(pythonStr) };
  const gone = await pdbCmd(ws, deactivation, deactivate, 'application/json');
  t.match(gone, { ok: true, status: 200, reply: { value: { uuid: UUID } } });
  t.same(await rows(ws, 'resources'), [], 'a deactivated node has no active resources');

  // Replace catalog inputs: checked and not kept.
  const inputs = {
    certname: 'a.example',
    catalog_uuid: '0c2cb7a0-9b6a-4a43-9a5b-9d8ae6f7c6a1',
    producer_timestamp: '2025-03-02T00:00:00Z',
    inputs: [['hiera', 'ntp::servers']],
  };
  const before = await snapshot(ws.dir);
  const kept = await pdbCmd(ws, { command: 'replace_catalog_inputs', version: '1', certname: 'a.example' }, inputs);
  t.match(kept, { ok: true, status: 200, reply: { value: { uuid: UUID } } });
  t.same(await snapshot(ws.dir), before, 'catalog inputs are not stored');
});

t.test('/pdb/cmd/v1: refusals in PuppetDB words, and nothing stored for them', async (t) => {
  const { ws } = await populated(t);
  const payload = JSON.stringify(catalog('a.example', '2025-06-01T00:00:00Z', [web]));
  const q = { command: 'replace_catalog', version: '9', certname: 'a.example' };
  const cases: [Record<string, string>, string | object, number, RegExp, string?][] = [
    [
      { command: 'replace_facts', version: '5' },
      '{}',
      400,
      /^Command "replace facts" for certname nil is invalid\. Command is missing required parameters: certname\.$/,
    ],
    [
      { version: '9', certname: 'a.example' },
      payload,
      400,
      /^Command nil for certname "a.example" is invalid\. Command is missing required parameters: command\.$/,
    ],
    [
      { ...q, foo: '1', bar: '2' },
      payload,
      400,
      /^Command "replace catalog" for certname "a\.example" is invalid\. Command has invalid parameters: foo, bar\.$/,
    ],
    [
      { ...q, command: 'replace_everything' },
      payload,
      400,
      new RegExp(
        '^Command "replace everything" for certname "a\\.example" is invalid\\. Command must be one of: ' +
          'configure expiration, deactivate node, replace catalog, replace catalog inputs, replace facts, ' +
          'store report\\.$',
      ),
    ],
    [
      { command: 'replace facts', version: '3', certname: 'a.example' },
      '{}',
      400,
      new RegExp(
        '^Command "replace facts" for certname "a\\.example" is invalid\\. ' +
          'Version 3 of command "replace facts" is retired\\. The minimum supported version is 4\\.$',
      ),
    ],
    [
      { ...q, version: '5' },
      payload,
      400,
      /is invalid\. Version 5 of command "replace catalog" is retired\. The minimum supported version is 6\.$/,
    ],
    [{ ...q, command: 'store_report', version: '4' }, '{}', 400, /The minimum supported version is 5\.$/],
    [{ ...q, command: 'deactivate_node', version: '2' }, '{}', 400, /The minimum supported version is 3\.$/],
    [{ ...q, version: '8' }, payload, 400, /is invalid\. nfv takes version 9 of command "replace catalog", not 8\.$/],
    [{ ...q, version: 'nine' }, payload, 400, /is invalid\. Version "nine" is not a whole number\.$/],
    [
      { command: 'replace_facts', version: '5', certname: 'a.example' },
      { certname: 'a.example', values: {} },
      400,
      /^payload\.producer_timestamp: is required$/,
    ],
    [
      { command: 'replace_facts', version: '6', certname: 'a.example' },
      { certname: 'a.example', values: {} },
      400,
      /is invalid\. nfv takes version 5 or 4 of command "replace facts", not 6\.$/,
    ],
    [
      { ...q, certname: 'b.example' },
      payload,
      400,
      /The payload's certname "a\.example" is not the certname parameter\.$/,
    ],
    [{ ...q, 'producer-timestamp': 'yesterday' }, payload, 400, /producer-timestamp "yesterday" is not a timestamp\.$/],
    [{ ...q, secondsToWaitForCompletion: 'soon' }, payload, 400, /secondsToWaitForCompletion "soon" is not a number/],
    [q, '[1]', 400, /The payload must be a JSON object\.$/],
    [q, '{"certname":', 400, /^JSON: /],
    [q, '', 400, /^a request body is required$/],
    [q, payload, 415, /^content type text\/plain not supported$/, 'text/plain'],
    [q, payload, 415, /^content type application\/xml not supported$/, 'application/xml'],
    [
      { command: 'replace_catalog_inputs', version: '1', certname: 'a.example' },
      { certname: 'a.example', catalog_uuid: 'x', producer_timestamp: '2025-01-01', inputs: [['hiera']] },
      400,
      /The payload's inputs must be a list of \[type, name\] string pairs\.$/,
    ],
    [{}, { command: 'replace catalog', version: 9, payload: {}, extra: 1 }, 400, /unknown key "extra"/],
    [{}, { command: 'store report', version: 8, payload: { certname: 'a.example' } }, 400, /payload\.puppet_version/],
    [
      {},
      { command: 'replace catalog', payload: { certname: 'a.example' } },
      400,
      new RegExp(
        '^Command "replace catalog" for certname "a\\.example" is invalid\\. ' +
          'Command is missing required parameters: version\\.$',
      ),
    ],
  ];
  const before = await snapshot(ws.dir);
  for (const [params, body, status, message, contentType] of cases) {
    const o = await pdbCmd(ws, params, body, contentType);
    t.match(o, { ok: false, status }, `${JSON.stringify(params)}: ${status}`);
    if (!o.ok) {
      t.match(o.error, message);
      t.notMatch(o.error, /\n/, 'one line');
      t.match(render(o, 'json'), { mediaType: 'application/json', body: `${JSON.stringify({ error: o.error })}\n` });
    }
  }
  t.same(await snapshot(ws.dir), before, 'no refused command stored anything');
});
