/**
 * PuppetDB's node, fact, catalog and edge entities on both backends: the same commands (replace facts v4 and v5,
 * a stale one, catalogs with edges, a report, a deactivation) applied to a workspace folder and to PostgreSQL, then
 * every entity and sub-route asked on each. Expectations are written by hand from the payloads below, and the fact
 * criteria are also checked by a small filter in this file (over the payloads, sharing no code with nfv's engine).
 * Both backends must give the same answers, byte for byte.
 */
import t from 'tap';
import { ingestDataset, readCases } from '../../src/bench/inventory-cases.js';
import { PostgresAreas } from '../../src/store/postgres.js';
import { Workspace } from '../../src/store/workspace.js';
import { call, content } from '../ops/call.js';
import { scratch } from '../helpers.js';
import { havePostgres, startPostgres } from '../postgres.js';

const T0 = '2025-12-31T00:00:00.000Z';
const T1 = '2026-01-01T00:00:00.000Z';
const T2 = '2026-01-02T00:00:00.000Z';
const T3 = '2026-01-03T00:00:00.000Z';
const R1 = '2026-01-01T00:00:05.000Z';

const factsA = {
  kernel: 'Linux',
  os: { family: 'Debian', release: { major: '12', full: '12.11' } },
  processors: { count: 4, models: ['Xeon', 'Epyc'] },
  uptime_seconds: 100,
  trusted: { certname: 'a.example', extensions: {} },
};
const factsB = { kernel: 'Linux', os: { family: 'RedHat' }, uptime_seconds: 5.5, virtual: null, is_virtual: true };
const factsC = { kernel: 'Windows' };

const resource = (type: string, title: string) => ({
  type,
  title,
  tags: [type.toLowerCase()],
  exported: false,
  parameters: {},
});
const edge = (st: string, sti: string, tt: string, tti: string, relationship: string) => ({
  source: { type: st, title: sti },
  target: { type: tt, title: tti },
  relationship,
});

const commands = [
  {
    command: 'replace catalog',
    version: 9,
    received: R1,
    payload: {
      certname: 'a.example',
      version: '7',
      environment: 'production',
      producer: 'puppet.example',
      producer_timestamp: T1,
      transaction_uuid: null,
      catalog_uuid: 'e8c5ff96-2c1d-4a41-9a8e-0c0e4f6b1a52',
      code_id: null,
      job_id: null,
      resources: [resource('Class', 'Main'), resource('Notify', 'hi'), resource('File', '/etc/motd')],
      edges: [
        edge('Class', 'Main', 'Notify', 'hi', 'contains'),
        edge('Class', 'Main', 'File', '/etc/motd', 'contains'),
        edge('Notify', 'hi', 'File', '/etc/motd', 'before'),
      ],
    },
  },
  {
    command: 'replace catalog',
    version: 9,
    received: R1,
    payload: {
      certname: 'b.example',
      version: '1',
      environment: 'PROD',
      producer_timestamp: T1,
      resources: [resource('Class', 'Main')],
    },
  },
  {
    command: 'replace facts',
    version: 5,
    received: R1,
    payload: {
      certname: 'a.example',
      environment: 'production',
      producer: 'puppet.example',
      producer_timestamp: T1,
      values: factsA,
    },
  },
  {
    command: 'replace facts',
    version: 4,
    received: R1,
    payload: { certname: 'b.example', environment: 'PROD', producer_timestamp: T1, values: factsB },
  },
  {
    command: 'replace facts',
    version: 5,
    received: R1,
    payload: {
      certname: 'c.example',
      environment: 'production',
      producer: 'other',
      producer_timestamp: T1,
      values: factsC,
    },
  },
  // Older than what a.example sent: ignored as stale.
  {
    command: 'replace facts',
    version: 5,
    payload: { certname: 'a.example', environment: 'production', producer: 'x', producer_timestamp: T0, values: {} },
  },
  { command: 'deactivate node', version: 3, payload: { certname: 'c.example', producer_timestamp: T2 } },
  {
    command: 'store report',
    version: 8,
    received: T3,
    payload: {
      certname: 'a.example',
      puppet_version: '7.23.0',
      report_format: 12,
      configuration_version: '7',
      start_time: T3,
      end_time: T3,
      producer_timestamp: T3,
      producer: 'puppet.example',
      transaction_uuid: null,
      environment: 'production',
      status: 'failed',
      noop: false,
      noop_pending: false,
      cached_catalog_status: 'not_used',
      metrics: [],
      logs: [],
      resources: [],
    },
  },
];

// ---- the independent evaluator: facts rows and criteria, from the payloads ---------------------------------------

interface FactRow {
  certname: string;
  environment: string;
  name: string;
  value: unknown;
}
const factRowsOf = (certname: string, environment: string, values: Record<string, unknown>): FactRow[] =>
  Object.entries(values).map(([name, value]) => ({ certname, environment, name, value }));
/** Facts of the active nodes (c.example is deactivated), by certname then name. */
const activeFacts = [...factRowsOf('a.example', 'production', factsA), ...factRowsOf('b.example', 'PROD', factsB)].sort(
  (x, y) => (x.certname + '\u0000' + x.name < y.certname + '\u0000' + y.name ? -1 : 1),
);

/** A few operators with SQL's rules where these rows meet them (no nulls among names; values compared as JSON). */
function holds(q: unknown[], row: FactRow): boolean {
  const [op, field, arg] = q as [string, keyof FactRow, unknown];
  switch (op) {
    case 'and':
      return q.slice(1).every((s) => holds(s as unknown[], row));
    case 'or':
      return q.slice(1).some((s) => holds(s as unknown[], row));
    case 'not':
      return !holds(field as unknown as unknown[], row);
    case '=':
      return JSON.stringify(row[field]) === JSON.stringify(arg);
    case '>':
      return typeof row[field] === 'number' && (row[field] as number) > (arg as number);
    case '~':
      return typeof row[field] === 'string' && new RegExp(arg as string).test(row[field] as string);
    default:
      throw new Error(`the test's evaluator has no ${op}`);
  }
}

// ---- the backends --------------------------------------------------------------------------------------------------

interface Backend {
  name: string;
  ws: Workspace;
}

async function folder(t: Tap.Test): Promise<Backend> {
  return { name: 'folder', ws: new Workspace(await scratch(t)) };
}

const backends: ((t: Tap.Test) => Promise<Backend>)[] = [folder];
if (havePostgres(t)) {
  const server = await startPostgres(t);
  let databases = 0;
  backends.push(async (t) => {
    const admin = new PostgresAreas(server.url, 5000);
    const name = `ent${databases++}`;
    await admin.session((c) => c.query(`CREATE DATABASE ${name}`));
    await admin.close();
    const areas = new PostgresAreas(server.url.replace(/\/postgres$/, `/${name}`), 5000);
    await areas.migrate();
    t.teardown(() => areas.close());
    return { name: 'database', ws: new Workspace(await scratch(t), { database: areas }) };
  });
}

/** Both backends loaded with the commands; answers of each, by request. */
async function loaded(t: Tap.Test): Promise<Backend[]> {
  const all = await Promise.all(backends.map((b) => b(t)));
  for (const b of all) {
    const applied = await call(b.ws, 'POST', '/v4/commands/batch', commands);
    t.ok(applied.ok, `${b.name}: the batch is taken`);
    t.same(
      (content(applied as never) as { applied: boolean }[]).map((r) => r.applied),
      [true, true, true, true, true, false, true, true],
      `${b.name}: the older facts are stale, everything else applies`,
    );
  }
  return all;
}

const target = (path: string, params: Record<string, unknown> = {}) => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) q.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
};

/** One request on every backend: the same status and bytes on each; answers the first one's value. */
async function ask(t: Tap.Test, all: Backend[], path: string, params: Record<string, unknown> = {}): Promise<any> {
  const answers = [];
  for (const b of all) {
    const o = await call(b.ws, 'GET', target(path, params));
    answers.push({ b, o, text: o.ok ? JSON.stringify(content(o)) : `${o.status} ${o.error}` });
  }
  for (const a of answers.slice(1)) t.equal(a.text, answers[0]!.text, `${path} ${JSON.stringify(params)}: ${a.b.name}`);
  const first = answers[0]!.o;
  return first.ok ? content(first) : { status: first.status, error: first.error };
}

t.test('every entity answers what the commands say, alike on both backends', async (t) => {
  const all = await loaded(t);
  for (const prefix of ['/v4', '/pdb/query/v4']) {
    const nodes = await ask(t, all, `${prefix}/nodes`);
    t.same(
      nodes.map((n: any) => n.certname),
      ['a.example', 'b.example'],
      'nodes: active ones only',
    );
    t.same(nodes[0], {
      certname: 'a.example',
      deactivated: null,
      expired: null,
      catalog_timestamp: R1,
      facts_timestamp: R1,
      report_timestamp: T3,
      catalog_environment: 'production',
      facts_environment: 'production',
      report_environment: 'production',
      latest_report_status: 'failed',
      latest_report_hash: nodes[0].latest_report_hash,
      latest_report_noop: false,
      latest_report_noop_pending: false,
      latest_report_corrective_change: null,
      latest_report_job_id: null,
      cached_catalog_status: 'not_used',
    });
    t.match(nodes[0].latest_report_hash, /^[0-9a-f]{40}$/);
    t.same(nodes[1].report_timestamp, null, 'b.example has sent no report');
    const c = await ask(t, all, `${prefix}/nodes/c.example`);
    t.same([c.certname, c.deactivated, c.facts_environment], ['c.example', T2, 'production'], 'one node, deactivated');
    t.same(await ask(t, all, `${prefix}/nodes/zz.example`), {
      status: 404,
      error: 'No information is known about node zz.example',
    });
    t.same(
      (await ask(t, all, `${prefix}/nodes`, { query: ['=', 'node_state', 'any'] })).map((n: any) => n.certname),
      ['a.example', 'b.example', 'c.example'],
    );
    t.same(
      await ask(t, all, `${prefix}/nodes`, {
        query: ['extract', ['certname'], ['null?', 'report_timestamp', true]],
      }),
      [{ certname: 'b.example' }],
      'Puppetboard\'s "unreported" criterion',
    );

    t.same(
      await ask(t, all, `${prefix}/fact-names`),
      ['is_virtual', 'kernel', 'os', 'processors', 'trusted', 'uptime_seconds', 'virtual'],
      'fact-names: sorted strings',
    );
    t.same(await ask(t, all, `${prefix}/facts`), activeFacts, 'facts: every top-level fact of the active nodes');
    t.same(await ask(t, all, `${prefix}/facts/kernel`), [
      { certname: 'a.example', environment: 'production', name: 'kernel', value: 'Linux' },
      { certname: 'b.example', environment: 'PROD', name: 'kernel', value: 'Linux' },
    ]);
    t.same(await ask(t, all, `${prefix}/facts/kernel/Windows`), [], 'the deactivated node is not answered');
    t.same((await ask(t, all, `${prefix}/nodes/b.example/facts/os`))[0].value, { family: 'RedHat' });
    t.same(
      (await ask(t, all, `${prefix}/factsets/a.example`)).facts,
      {
        href: '/pdb/query/v4/factsets/a.example/facts',
        data: Object.keys(factsA)
          .sort()
          .map((name) => ({ name, value: factsA[name as keyof typeof factsA] })),
      },
      'a factset: its facts behind an href',
    );
    const factset = await ask(t, all, `${prefix}/factsets`, { query: ['=', 'certname', 'b.example'] });
    t.same(
      [factset[0].environment, factset[0].producer, factset[0].timestamp, factset[0].producer_timestamp],
      ['PROD', null, R1, T1],
      'v4 facts have no producer',
    );
    t.same(await ask(t, all, `${prefix}/factsets/b.example/facts`), [
      { name: 'is_virtual', value: true },
      { name: 'kernel', value: 'Linux' },
      { name: 'os', value: { family: 'RedHat' } },
      { name: 'uptime_seconds', value: 5.5 },
      { name: 'virtual', value: null },
    ]);

    t.same(await ask(t, all, `${prefix}/fact-contents`, { query: ['~>', 'path', ['os', '.*']] }), [
      { certname: 'a.example', environment: 'production', path: ['os', 'family'], name: 'os', value: 'Debian' },
      { certname: 'b.example', environment: 'PROD', path: ['os', 'family'], name: 'os', value: 'RedHat' },
    ]);
    t.same(await ask(t, all, `${prefix}/fact-contents`, { query: ['=', 'path', ['processors', 'models', 1]] }), [
      {
        certname: 'a.example',
        environment: 'production',
        path: ['processors', 'models', 1],
        name: 'processors',
        value: 'Epyc',
      },
    ]);
    t.same(
      await ask(t, all, `${prefix}/fact-paths`, { query: ['=', 'name', 'uptime_seconds'] }),
      [
        { path: ['uptime_seconds'], name: 'uptime_seconds', type: 'float' },
        { path: ['uptime_seconds'], name: 'uptime_seconds', type: 'integer' },
      ],
      'one path per type it has, by type',
    );
    t.same(
      (await ask(t, all, `${prefix}/fact-paths`)).map((p: any) => `${p.path.join('.')}:${p.type}`),
      [
        'is_virtual:boolean',
        'kernel:string',
        'os.family:string',
        'os.release.full:string',
        'os.release.major:string',
        'processors.count:integer',
        'processors.models.0:string',
        'processors.models.1:string',
        'trusted.certname:string',
        'uptime_seconds:float',
        'uptime_seconds:integer',
        'virtual:null',
      ],
      'fact-paths of every node (deactivated ones too), leaves only',
    );

    t.same(
      await ask(t, all, `${prefix}/inventory`, {
        query: ['extract', ['certname', 'facts.os.family'], ['=', 'facts.processors.models[1]', 'Epyc']],
      }),
      [{ certname: 'a.example', 'facts.os.family': 'Debian' }],
    );
    const inventory = await ask(t, all, `${prefix}/inventory`, { query: ['=', 'trusted.certname', 'a.example'] });
    t.same(inventory, [
      { certname: 'a.example', timestamp: R1, environment: 'production', facts: factsA, trusted: factsA.trusted },
    ]);
    t.same(
      (await ask(t, all, `${prefix}/inventory`, { query: ['>', 'facts.uptime_seconds', 50] })).map(
        (r: any) => r.certname,
      ),
      ['a.example'],
    );

    t.same(await ask(t, all, `${prefix}/environments`), [{ name: 'PROD' }, { name: 'production' }]);
    t.same(await ask(t, all, `${prefix}/environments/PROD`), { name: 'PROD' });
    t.same(await ask(t, all, `${prefix}/environments/staging`), {
      status: 404,
      error: 'No information is known about environment staging',
    });
    t.same(
      (await ask(t, all, `${prefix}/environments/PROD/facts`)).map((f: any) => f.name),
      ['is_virtual', 'kernel', 'os', 'uptime_seconds', 'virtual'],
    );
    t.same(await ask(t, all, `${prefix}/producers`), [{ name: 'other' }, { name: 'puppet.example' }]);

    const edgesOfA = [
      ['Class', 'Main', 'Notify', 'hi', 'contains'],
      ['Class', 'Main', 'File', '/etc/motd', 'contains'],
      ['Notify', 'hi', 'File', '/etc/motd', 'before'],
    ].map(([st, sti, tt, tti, relationship]) => ({
      source_type: st,
      source_title: sti,
      target_type: tt,
      target_title: tti,
      relationship,
    }));
    t.same(
      await ask(t, all, `${prefix}/edges`),
      edgesOfA.map((e) => ({
        certname: 'a.example',
        relationship: e.relationship,
        source_type: e.source_type,
        source_title: e.source_title,
        target_type: e.target_type,
        target_title: e.target_title,
      })),
    );
    t.same(
      (await ask(t, all, `${prefix}/catalogs/a.example/edges`)).map((e: any) => e.target_title),
      ['hi', '/etc/motd', '/etc/motd'],
    );
    const catalog = await ask(t, all, `${prefix}/catalogs/a.example`);
    t.same(catalog.edges, { href: '/pdb/query/v4/catalogs/a.example/edges', data: edgesOfA });
    t.same(
      [catalog.version, catalog.environment, catalog.producer, catalog.catalog_uuid, catalog.producer_timestamp],
      ['7', 'production', 'puppet.example', 'e8c5ff96-2c1d-4a41-9a8e-0c0e4f6b1a52', T1],
    );
    t.match(catalog.hash, /^[0-9a-f]{40}$/);
    t.same(
      catalog.resources.data.map((r: any) => `${r.type}[${r.title}]`),
      ['Class[Main]', 'Notify[hi]', 'File[/etc/motd]'],
    );
    t.same(Object.keys(catalog.resources.data[0]), [
      'resource',
      'type',
      'title',
      'tags',
      'exported',
      'file',
      'line',
      'parameters',
    ]);
    t.same(
      (await ask(t, all, `${prefix}/catalogs/a.example/resources`)).map((r: any) => r.title),
      ['Main', 'hi', '/etc/motd'],
    );
    t.same(await ask(t, all, `${prefix}/catalogs/zz.example`), {
      status: 404,
      error: 'No information is known about catalog zz.example',
    });
    t.same(
      (await ask(t, all, `${prefix}/nodes/a.example/resources/File`)).map((r: any) => r.title),
      ['/etc/motd'],
    );
  }
});

t.test('fact criteria, paging and extract agree with a filter written in this test', async (t) => {
  const all = await loaded(t);
  const criteria: unknown[][] = [
    ['=', 'name', 'kernel'],
    ['=', 'value', 'Linux'],
    ['>', 'value', 50],
    ['>', 'value', 1],
    ['~', 'name', '^o'],
    ['=', 'value', { family: 'RedHat' }],
    ['=', 'value', null],
    ['=', 'value', true],
    ['not', ['=', 'certname', 'a.example']],
    ['or', ['=', 'name', 'os'], ['and', ['=', 'certname', 'b.example'], ['~', 'value', 'Lin']]],
  ];
  for (const query of criteria) {
    const expected = activeFacts.filter((row) => holds(query, row));
    t.same(await ask(t, all, '/pdb/query/v4/facts', { query }), expected, JSON.stringify(query));
  }
  const ordered = await ask(t, all, '/v4/facts', {
    order_by: [{ field: 'name', order: 'desc' }, { field: 'certname' }],
    limit: '3',
    offset: '1',
  });
  const byName = [...activeFacts].sort((x, y) =>
    x.name === y.name ? (x.certname < y.certname ? -1 : 1) : x.name < y.name ? 1 : -1,
  );
  t.same(ordered, byName.slice(1, 4), 'order_by name desc, certname; limit and offset');
  t.same(
    await ask(t, all, '/v4/facts', { query: ['extract', [['function', 'count'], 'name'], ['group_by', 'name']] }),
    Object.entries(
      activeFacts.reduce<Record<string, number>>((n, f) => ({ ...n, [f.name]: (n[f.name] ?? 0) + 1 }), {}),
    ).map(([name, count]) => ({ count, name })),
    'count per name, in the order of the first row of each',
  );
  t.same(
    await ask(t, all, '/v4/nodes', {
      query: ['in', 'certname', ['extract', 'certname', ['select_facts', ['=', 'value', 5.5]]]],
    }),
    (await ask(t, all, '/v4/nodes')).filter((n: any) => n.certname === 'b.example'),
    'nodes by a fact subquery',
  );
  // The Puppet terminus's facts search: ["fact", name] on nodes.
  const nodesWhere = async (query: unknown) =>
    (await ask(t, all, '/pdb/query/v4/nodes', { query })).map((n: any) => n.certname);
  t.same(await nodesWhere(['=', ['fact', 'kernel'], 'Linux']), ['a.example', 'b.example']);
  t.same(await nodesWhere(['>', ['fact', 'uptime_seconds'], 50]), ['a.example']);
  t.same(await nodesWhere(['~', ['fact', 'os'], 'Red']), ['b.example'], 'a structured fact matched as its JSON');
  t.same(await nodesWhere(['=', ['fact', 'os'], { family: 'RedHat' }]), ['b.example']);
  t.same(await nodesWhere(['not', ['=', ['fact', 'virtual'], null]]), ['a.example'], 'a missing fact is not null');
  t.same(await nodesWhere(['in', ['fact', 'kernel'], ['array', ['Linux', 'Windows']]]), ['a.example', 'b.example']);
});

t.test('PQL at the root endpoint over the new entities', async (t) => {
  const all = await loaded(t);
  const pql = (query: string) => ask(t, all, '/pdb/query/v4', { query });
  t.same(await pql('nodes[certname] { latest_report_status = "failed" }'), [{ certname: 'a.example' }]);
  t.same(await pql('facts[certname, value] { name = "kernel" }'), [
    { certname: 'a.example', value: 'Linux' },
    { certname: 'b.example', value: 'Linux' },
  ]);
  t.same(await pql('fact_contents[certname, value] { path ~> ["os", "fam.*"] and certname = "a.example" }'), [
    { certname: 'a.example', value: 'Debian' },
  ]);
  t.same(await pql('inventory[certname] { facts.os.release.major = "12" }'), [{ certname: 'a.example' }]);
  t.same(await pql('nodes[certname] { facts { name = "is_virtual" and value = true } }'), [{ certname: 'b.example' }]);
  t.same(await pql('environments { }'), [{ name: 'PROD' }, { name: 'production' }]);
  t.same(await pql('environments[name] { facts { certname = "b.example" } }'), [{ name: 'PROD' }]);
  t.same(await pql('facts[certname] { name = "kernel" and value = "Windows" }'), [], 'the root adds active nodes');
  t.same(await pql('facts[certname] { name = "kernel" and value = "Windows" and node_state = "inactive" }'), [
    { certname: 'c.example' },
  ]);
  t.same(await pql('catalogs[certname, producer] { environment = "PROD" }'), [
    { certname: 'b.example', producer: null },
  ]);
  t.same(await pql('edges[target_title] { relationship = "before" }'), [{ target_title: '/etc/motd' }]);
});

t.test('refusals name the field or value, on both backends alike', async (t) => {
  const all = await loaded(t);
  const refusal = async (path: string, params: Record<string, unknown>, message: RegExp) => {
    const a = await ask(t, all, path, params);
    t.equal(a.status, 400, `${path} ${JSON.stringify(params)}`);
    t.match(a.error, message);
  };
  await refusal('/v4/facts', { query: ['=', 'nope', 1] }, /^'nope' is not a queryable object for facts\. Known/);
  await refusal(
    '/v4/fact-contents',
    { query: ['~>', 'name', ['a']] },
    /^Query operator ~> is not allowed on field name/,
  );
  await refusal('/v4/fact-contents', { query: ['~>', 'path', 'os'] }, /^~> takes an array of regular expressions$/);
  await refusal('/v4/fact-contents', { query: ['=', 'path', 'os'] }, /is incompatible with path field "path"/);
  await refusal('/v4/nodes', { order_by: [{ field: 'facts' }] }, /^Unrecognized column 'facts' specified in :order_by/);
  await refusal('/v4/nodes/a.example', { query: '[]' }, /^Unsupported query parameter 'query'$/);
});

t.test('replace facts through /pdb/cmd/v1 as the Puppet terminus sends it', async (t) => {
  for (const make of backends) {
    const { ws, name } = await make(t);
    const payload = {
      certname: 'n.example',
      environment: 'production',
      producer: 'p',
      producer_timestamp: T1,
      values: factsB,
    };
    const sent = await call(
      ws,
      'POST',
      '/pdb/cmd/v1?command=replace_facts&version=5&certname=n.example&producer-timestamp=' + T1,
      payload,
    );
    t.match(sent, { ok: true, status: 200 }, name);
    const older = await call(ws, 'POST', '/pdb/cmd/v1?command=replace_facts&version=5&certname=n.example', {
      ...payload,
      producer_timestamp: T0,
      values: { kernel: 'old' },
    });
    t.match(older, { ok: true, status: 200 }, `${name}: an older one is answered`);
    const kernel = await call(ws, 'GET', '/pdb/query/v4/facts/kernel');
    t.same(
      content(kernel as never),
      [{ certname: 'n.example', environment: 'production', name: 'kernel', value: 'Linux' }],
      `${name}: and ignored`,
    );
    const newer = await call(ws, 'POST', '/pdb/cmd/v1?command=replace_facts&version=4&certname=n.example', {
      certname: 'n.example',
      environment: 'staging',
      producer_timestamp: T2,
      values: { kernel: 'new' },
    });
    t.match(newer, { ok: true, status: 200 });
    t.same(
      content((await call(ws, 'GET', '/v4/facts')) as never),
      [{ certname: 'n.example', environment: 'staging', name: 'kernel', value: 'new' }],
      `${name}: newer facts replace the node's facts whole`,
    );
    // A fresh process reads them back from the journal (or the database).
    const again = new Workspace(ws.dir, ws.database ? { database: ws.database } : {});
    t.same(
      content((await call(again, 'GET', '/v4/facts')) as never),
      [{ certname: 'n.example', environment: 'staging', name: 'kernel', value: 'new' }],
      `${name}: kept`,
    );
  }
});

t.test("Puppetboard 4.2.6's node and fact requests (puppet.md, appendix 1), alike on both backends", async (t) => {
  const all = await loaded(t);
  const env = ['=', 'catalog_environment', 'production'];
  t.same(await ask(t, all, '/pdb/query/v4/nodes', { query: ['extract', [['function', 'count']], ['and', env]] }), [
    { count: 1 },
  ]);
  t.same(
    await ask(t, all, '/pdb/query/v4/nodes', {
      query: ['extract', [['function', 'count']], ['and', ['=', 'catalog_environment', 'staging']]],
    }),
    [{ count: 0 }],
  );
  const failed = await ask(t, all, '/pdb/query/v4/nodes', {
    query: ['and', ['=', 'latest_report_status', 'failed'], env],
  });
  t.same(
    failed.map((n: any) => n.certname),
    ['a.example'],
  );
  t.same(
    (
      await ask(t, all, '/pdb/query/v4/nodes', {
        query: [
          'and',
          ['=', 'catalog_environment', 'PROD'],
          ['or', ['null?', 'report_timestamp', true], ['<=', 'report_timestamp', T2]],
        ],
      })
    ).map((n: any) => n.certname),
    ['b.example'],
    'unreported nodes',
  );
  const catalogsPage = await call(
    all[0]!.ws,
    'GET',
    target('/pdb/query/v4/nodes', {
      query: ['and', ['null?', 'catalog_timestamp', false]],
      order_by: [{ field: 'certname', order: 'asc' }],
      limit: '1',
      offset: '1',
      include_total: 'true',
    }),
  );
  t.match(catalogsPage, { ok: true, reply: { headers: { 'X-Records': '2' } } }, 'the catalogs table: total');
  t.same(
    (content(catalogsPage as never) as any[]).map((n) => n.certname),
    ['b.example'],
  );
  t.same(
    (
      await ask(t, all, '/pdb/query/v4/facts', {
        query: [
          'and',
          ['or', ['=', 'name', 'kernel'], ['=', 'name', 'uptime_seconds']],
          ['=', 'environment', 'production'],
        ],
      })
    ).map((f: any) => `${f.name}=${f.value}`),
    ['kernel=Linux', 'uptime_seconds=100'],
    'the inventory page',
  );
  t.same(
    await ask(t, all, '/pdb/query/v4/facts/os', { query: ['and', ['=', 'environment', 'PROD']] }),
    [{ certname: 'b.example', environment: 'PROD', name: 'os', value: { family: 'RedHat' } }],
    'a fact page',
  );
});

t.test("the population metrics Puppetboard shows, as PuppetDB's Jolokia answers them", async (t) => {
  const all = await loaded(t);
  const list = await ask(t, all, '/metrics/v2/list');
  t.same(Object.keys(list.value['puppetlabs.puppetdb.population']), [
    'name=num-nodes',
    'name=num-resources',
    'name=avg-resources-per-node',
    'name=pct-resource-dupes',
    'name=num-inactive-nodes',
  ]);
  t.same([list.request, list.status], [{ type: 'list' }, 200]);
  // Two active nodes with 3 and 1 resources; Class[Main] with the same parameters on both: one duplicate of four.
  const expected: [string, number][] = [
    ['num-nodes', 2],
    ['num-resources', 4],
    ['avg-resources-per-node', 2],
    ['pct-resource-dupes', 0.25],
    ['num-inactive-nodes', 1],
  ];
  for (const [name, value] of expected) {
    const mbean = `puppetlabs.puppetdb.population:name=${name}`;
    // As pypuppetdb sends it: the name percent-encoded in one segment. Each backend on its own: the timestamps differ.
    for (const b of all) {
      const read = content((await call(b.ws, 'GET', `/metrics/v2/read/${encodeURIComponent(mbean)}`)) as never);
      t.same(
        [read.request, read.value, read.status],
        [{ mbean, type: 'read' }, { Value: value }, 200],
        `${b.name}: ${name}`,
      );
      t.ok(Math.abs(read.timestamp - Date.now() / 1000) < 60, 'timestamp: seconds since the epoch');
    }
  }
  const unknown = await ask(t, all, '/metrics/v2/read/java.lang:type=Memory');
  t.same(unknown, {
    request: { mbean: 'java.lang:type=Memory', type: 'read' },
    error_type: 'javax.management.InstanceNotFoundException',
    error: 'javax.management.InstanceNotFoundException : java.lang:type=Memory',
    status: 404,
  });
});

t.test("the recorded dataset's nodes, latest reports, hashes and edges, as PuppetDB 7.12.1 derived them", async (t) => {
  const { dataset } = readCases();
  const all = await Promise.all(backends.map((b) => b(t)));
  for (const b of all) await ingestDataset(b.ws, dataset);
  const derived = dataset.derived;
  const fields = ['certname', 'deactivated', 'expired', 'latest_report_hash'];
  const nodes = await ask(t, all, '/pdb/query/v4/nodes', {
    query: ['extract', fields, ['=', 'node_state', 'any']],
  });
  t.same(
    [...nodes].sort((a: any, b: any) => (a.certname < b.certname ? -1 : 1)),
    derived.nodes
      .map((n: any) => ({
        certname: n.certname,
        deactivated: n.deactivated,
        expired: n.expired,
        latest_report_hash: derived.latest_report_per_certname[n.certname] ?? null,
      }))
      .sort((a: any, b: any) => (a.certname < b.certname ? -1 : 1)),
    'every node named by a command, with its deactivation and latest report',
  );
  t.same(
    (
      await ask(t, all, '/pdb/query/v4/nodes', {
        query: ['extract', ['certname'], ['and', ['=', 'node_state', 'any'], ['null?', 'catalog_timestamp', false]]],
      })
    )
      .map((n: any) => n.certname)
      .sort(),
    derived.nodes
      .filter((n: any) => n.has_catalog)
      .map((n: any) => n.certname)
      .sort(),
    'catalog_timestamp is set exactly for the nodes with a catalog',
  );
  const catalogs = await ask(t, all, '/pdb/query/v4/catalogs', { query: ['extract', ['certname', 'resources']] });
  for (const c of catalogs)
    for (const r of c.resources.data)
      t.equal(r.resource, derived.resource_hashes[`${r.type}[${r.title}]`], `${c.certname} ${r.type}[${r.title}]`);
  const recorded = dataset.catalogs.flatMap((c: any) =>
    (c.edges ?? []).map((e: any) => ({
      certname: c.certname,
      relationship: e.relationship,
      source_type: e.source.type,
      source_title: e.source.title,
      target_type: e.target.type,
      target_title: e.target.title,
    })),
  );
  t.same(await ask(t, all, '/pdb/query/v4/edges', { query: ['=', 'node_state', 'any'] }), recorded, 'edges as sent');
  t.same(
    await ask(t, all, '/pdb/query/v4/edges'),
    recorded.filter((e: any) => e.certname !== 'gone.local'),
    'edges of active nodes by default',
  );
});
