/** The query language on hand-written data: every operator, null semantics, subqueries, extract, errors. */
import t from 'tap';
import { random } from '../../../src/bench/topology.js';
import { ENTITIES, events, indexOf, reports, resources } from '../../../src/inventory/entities.js';
import {
  SCANS_BEFORE_INDEX,
  compileFilter,
  compileQuery,
  parseQueryParameter,
  pgRegex,
  select,
} from '../../../src/inventory/query/ast.js';
import { canonicalJson } from '../../../src/inventory/values.js';
import { eventCounts, parseCountsFilter, queryEntity } from '../../../src/inventory/service.js';
import { NfvError } from '../../../src/model/errors.js';
import { deactivateNode, emptyInventory, replaceCatalog } from '../../../src/inventory/ingest.js';
import { catalog, sample } from '../data.js';
import { fails } from './refused.js';

const data = sample();
const rows = (entity = resources, query?: unknown, params: Record<string, string> = {}) => {
  const q = new URLSearchParams(params);
  if (query !== undefined) q.set('query', JSON.stringify(query));
  return queryEntity(entity, data, q).rows as any[];
};
const titles = (query: unknown) =>
  rows(resources, query)
    .map((r) => `${r.certname}:${r.title}`)
    .sort();

t.test('equality, regex, tags, booleans, numbers', async (t) => {
  t.same(titles(['=', 'type', 'User']), ['a.example:alice']);
  t.same(titles(['=', 'type', 'user']), [], 'case-sensitive');
  t.same(titles(['~', 'title', '^ngi']), ['a.example:nginx', 'b.example:nginx']);
  t.same(titles(['~', 'title', '(?i)NGINX']), ['a.example:nginx', 'b.example:nginx']);
  t.same(titles(['=', 'tag', 'WEB']), ['a.example:nginx', 'b.example:nginx'], 'tag is lower-cased');
  t.same(titles(['=', 'tags', 'WEB']), [], 'tags is exact');
  t.same(titles(['=', 'exported', true]), ['a.example:alice']);
  t.same(titles(['and', ['>=', 'line', 10], ['<', 'line', 20]]), ['a.example:nginx']);
  t.same(titles(['in', 'line', ['array', [20, 99]]]), ['b.example:nginx']);
});

t.test('SQL null semantics: not of an unknown comparison is unknown', async (t) => {
  t.same(titles(['not', ['=', 'file', '/site.pp']]), [], 'alice has file null: not matched either way');
  t.same(titles(['null?', 'file', true]), ['a.example:alice']);
  t.same(titles(['or', ['=', 'file', '/site.pp'], ['null?', 'line', true]]).length, 3);
  t.same(titles(['=', 'file', null]), ['a.example:alice'], '= null is null?');
});

t.test('parameters: the [parameter] form and dotted paths', async (t) => {
  t.same(titles(['=', ['parameter', 'port'], 80]), ['a.example:nginx', 'b.example:nginx']);
  t.same(titles(['=', ['parameter', 'port'], '80']), [], 'type-sensitive');
  t.same(titles(['=', ['parameter', 'groups'], ['wheel', 'dev']]), ['a.example:alice']);
  t.same(
    titles(['not', ['=', ['parameter', 'port'], 80]]),
    ['a.example:alice'],
    'not of [parameter] includes resources without it',
  );
  t.same(titles(['~', ['parameter', 'ensure'], 'runn']), [], 'the pattern must cover the JSON string');
  t.same(titles(['~', ['parameter', 'ensure'], 'runn.*']), ['a.example:nginx', 'b.example:nginx']);
  t.same(titles(['=', 'parameters.opts.tls', true]), ['a.example:nginx', 'b.example:nginx']);
  t.same(titles(['>', 'parameters.uid', 1000]), ['a.example:alice']);
  t.same(titles(['~', 'parameters.ensure', '^run']), ['a.example:nginx', 'b.example:nginx']);
  t.same(titles(['null?', 'parameters.nothing.here', true]), []);
});

t.test('subqueries and extract', async (t) => {
  t.same(titles(['in', 'certname', ['extract', 'certname', ['select_reports', ['=', 'status', 'changed']]]]).length, 3);
  t.same(titles(['subquery', 'events', ['=', 'status', 'failure']]), ['b.example:nginx']);
  t.same(
    rows(resources, ['extract', [['function', 'count'], 'type'], ['group_by', 'type']]).sort((a, b) =>
      a.type.localeCompare(b.type),
    ),
    [
      { count: 2, type: 'Service' },
      { count: 1, type: 'User' },
    ],
  );
  t.same(rows(resources, ['extract', ['title', 'parameters.port'], ['=', 'certname', 'b.example']]), [
    { title: 'nginx', 'parameters.port': 80 },
  ]);
  t.same(
    rows(events, ['extract', [['function', 'count']], ['=', 'latest_report?', true]]),
    [{ count: 3 }],
    "both reports are their node's latest",
  );
});

t.test('node_state on every entity with a certname: a deactivated node leaves or joins the answer', async (t) => {
  const gone = sample();
  deactivateNode(gone, { certname: 'b.example', producer_timestamp: '2025-03-01T00:00:00Z' });
  const on = (entity: typeof resources, query?: unknown) =>
    queryEntity(entity, gone, new URLSearchParams(query === undefined ? {} : { query: JSON.stringify(query) }))
      .rows as any[];
  const certnames = (entity: typeof resources, state?: string) =>
    [...new Set(on(entity, state && ['=', 'node_state', state]).map((r) => r.certname))].sort();
  t.same(certnames(reports), ['a.example', 'b.example'], 'reports: no restriction unless asked');
  t.same(certnames(reports, 'active'), ['a.example']);
  t.same(certnames(reports, 'INACTIVE'), ['b.example']);
  t.same(certnames(reports, 'any'), ['a.example', 'b.example']);
  t.same(certnames(events, 'active'), ['a.example']);
  t.same(certnames(events, 'inactive'), ['b.example']);
  t.same(certnames(resources), ['a.example'], 'resources: active nodes by default');
  t.same(certnames(resources, 'inactive'), ['b.example']);
  t.same(
    on(resources, ['subquery', 'catalogs', ['=', 'node_state', 'inactive']]),
    [],
    'in a subquery too: the active resources are on active nodes',
  );
  t.match(
    (() => {
      try {
        on(reports, ['=', 'node_state', 'gone']);
      } catch (e) {
        return (e as Error).message;
      }
    })(),
    /node_state: 'gone' is not active, inactive or any/,
  );
});

t.test('from subqueries: paging clauses select the page; subquery with no criteria', async (t) => {
  const sub = (clauses: unknown[], inner: unknown = ['=', 'type', 'Service']) =>
    titles(['in', 'line', ['from', 'resources', ['extract', ['line'], inner], ...clauses]]);
  t.same(sub([]), ['a.example:nginx', 'b.example:nginx']);
  t.same(
    sub([
      ['order_by', [['line', 'desc']]],
      ['limit', 1],
    ]),
    ['b.example:nginx'],
    'the highest line only',
  );
  t.same(
    sub([
      ['limit', 1],
      ['order_by', ['line']],
    ]),
    ['a.example:nginx'],
    'clauses in any order',
  );
  t.same(
    sub([
      ['offset', 1],
      ['order_by', [['certname', 'asc']]],
    ]),
    ['b.example:nginx'],
  );
  t.same(sub([['offset', 5]]), []);
  t.same(titles(['subquery', 'reports']).length, 3, 'every node with a report');
  fails(
    t,
    () =>
      sub([
        ['limit', 1],
        ['limit', 2],
      ]),
    /^Multiple 'limit' clauses are not permitted$/,
  );
  fails(t, () => sub([['offset']]), /^Received 'offset' clause without an argument$/);
  fails(t, () => sub([['limit', 0]]), /Illegal value '0' for :limit; expected a positive non-zero integer\./);
  fails(t, () => sub([['order_by', [['line', 'up']]]]), /'order' must be either 'asc' or 'desc'/);
  fails(t, () => sub([['order_by', [['nope']]]]), /Illegal value '\[\["nope"\]\]' for :order_by/);
  fails(t, () => sub([['order_by', ['nope']]]), /Unrecognized column 'nope' specified in :order_by/);
  fails(t, () => sub([['=', 'type', 'User']]), /^Your `from` query accepts an optional query only as a second/);
});

t.test('reports and events', async (t) => {
  t.equal(rows(reports).length, 2);
  t.same(rows(reports, ['=', 'agent_version', '8.1.0']).length, 2, 'agent_version is puppet_version');
  t.same(
    rows(reports, ['>', 'start_time', '2025-01-01T12:00:00+00:00']).map((r) => r.certname),
    ['b.example'],
  );
  t.same(
    rows(events, ['=', 'status', 'skipped']).map((e) => e.resource_title),
    ['cron'],
    'a skipped resource yields one event',
  );
  t.same(rows(events, ['=', 'containing_class', 'Web']).length, 3);
  t.same(rows(events, ['=', 'old_value', 'stopped']).length, 2);
});

t.test('paging', async (t) => {
  const all = rows(resources, undefined, {
    order_by: JSON.stringify([{ field: 'certname', order: 'desc' }, { field: 'title' }]),
  });
  t.same(
    all.map((r) => `${r.certname}:${r.title}`),
    ['b.example:nginx', 'a.example:alice', 'a.example:nginx'],
  );
  const q = new URLSearchParams({ limit: '1', offset: '1', include_total: 'true', order_by: '[{"field":"line"}]' });
  const page = queryEntity(resources, data, q);
  t.equal(page.total, 3);
  t.same(
    page.rows.map((r: any) => r.line),
    [20],
    'nulls sort last ascending',
  );
});

t.test("errors in PuppetDB's words", async (t) => {
  const compile = (entity: typeof resources, q: unknown) => () => compileQuery(entity, data, q);
  fails(t, compile(resources, ['=', 'type']), /^= requires exactly two arguments$/);
  fails(
    t,
    compile(resources, ['not', ['=', 'type', 'A'], ['=', 'type', 'B']]),
    /'not' takes exactly one argument, but 2 were supplied/,
  );
  fails(t, compile(resources, ['and']), /'and' takes at least one argument, but none were supplied/);
  fails(
    t,
    compile(resources, ['=', 'sourceline', 1]),
    new RegExp(
      "'sourceline' is not a queryable object for resources\\. Known queryable objects are 'certname', " +
        "'environment', 'exported', 'file', 'line', 'parameters', 'resource', 'tag', 'tags', 'title', and 'type'",
    ),
  );
  fails(t, compile(resources, ['=', 'line', '22']), /Argument "22" is incompatible with numeric field "line"\./);
  fails(t, compile(resources, ['<', 'line', '22']), /Argument "22" and operator "<" have incompatible types\./);
  fails(t, compile(resources, ['<', 'title', 'a']), /Query operators >,>=,<,<= are not allowed on field title/);
  fails(t, compile(resources, ['=', 'exported', 'true']), /incompatible with boolean field "exported"/);
  fails(t, compile(reports, ['=', 'start_time', 'yesterday']), /'yesterday' is not a valid timestamp value/);
  fails(
    t,
    compile(resources, ['extract', ['nothing', 'tag'], ['=', 'type', 'A']]),
    /Can't extract unknown 'resources' fields 'nothing' and 'tag'/,
  );
  fails(t, compile(resources, ['~', 'title', { a: 1 }]), /Invalid ~ clause/);
  fails(
    t,
    compile(resources, ['subquery', 'nowhere', ['=', 'certname', 'x']]),
    /No implicit relationship for entity 'nowhere'/,
  );
  fails(t, compile(resources, ['like', 'title', 'x']), /'like' is not a known query operator/);
  fails(t, compile(resources, ['in', 'tags', ['array', ['a']]]), /not supported on array types/);
  fails(t, () => pgRegex('*abc'), /quantifier operand invalid/);
  fails(t, () => pgRegex('[]'), /brackets \[\] not balanced/);
  t.ok(pgRegex('[]a]').test(']'), 'a ] right after [ is literal');
  fails(t, () => parseQueryParameter('["="'), /^Json parse error at line 1, column 5/);
  t.equal(parseQueryParameter(''), undefined);
});

t.test("counts_filter: one comparison; and, or and other operators refused in PuppetDB's words", async (t) => {
  const filter = (f: unknown) => () => parseCountsFilter(JSON.stringify(f));
  t.same(filter(['>=', 'failures', 1])(), { op: '>=', field: 'failures', value: 1 });
  fails(
    t,
    filter(['and', ['>', 'failures', 0], ['=', 'skips', 0]]),
    /^\["and" \[">" "failures" 0\] \["=" "skips" 0\]\] is not well-formed: query operator 'and' is unknown$/,
  );
  fails(
    t,
    filter(['or', ['>', 'failures', 0]]),
    /^\["or" \[">" "failures" 0\]\] is not well-formed: query operator 'or' is unknown$/,
  );
  fails(t, filter(['not', ['>', 'failures', 0]]), /query operator 'not' is unknown$/);
  fails(t, filter(['~', 'failures', 0]), /^\["~" "failures" 0\] is not well-formed: query operator '~' is unknown$/);
  fails(t, filter([]), /^\[\] is not well-formed: queries must contain at least one operator$/);
  fails(t, filter(['=', 'failures']), /^= requires exactly two arguments$/);
  fails(t, filter(['=', 'total', 1]), /^total is not a queryable object for event counts$/);
  fails(t, filter(['=', 'failures', '1']), /^Argument "1" and operator "=" have incompatible types\.$/);
  const counts = (f: unknown) => () =>
    eventCounts(data, new URLSearchParams({ summarize_by: 'certname', counts_filter: JSON.stringify(f) }));
  fails(t, counts(['and', ['=', 'failures', 1]]), /is not well-formed: query operator 'and' is unknown$/);
  t.same(
    counts(['>', 'failures', 0])().rows.map((r: any) => r.subject.title),
    ['b.example'],
    'a supported comparison still filters',
  );
});

t.test('a 100 KB value in any query error: quoted cut to 120 characters, the message within 300', async (t) => {
  const big = 'v'.repeat(100_000);
  const json = (v: unknown) => JSON.stringify(v);
  /** Each a call that fails quoting `big`, named by the kind of error. */
  const cases: [string, () => unknown][] = [];
  for (const entity of Object.values(ENTITIES)) {
    const query = (kind: string, params: Record<string, string>) =>
      cases.push([`${entity.name}: ${kind}`, () => queryEntity(entity, data, new URLSearchParams(params))]);
    query('query field', { query: json(['=', big, 1]) });
    query('null? field', { query: json(['null?', big, true]) });
    query('in field', { query: json(['in', big, ['array', [1]]]) });
    query('extract field', { query: json(['extract', [big], ['=', 'certname', 'a']]) });
    query('extract fields', { query: json(['extract', [big, `${big}w`], ['=', 'certname', 'a']]) });
    query('group_by field', { query: json(['extract', ['certname'], ['group_by', big]]) });
    query('aggregate field', { query: json(['extract', [['function', 'max', big]], ['=', 'certname', 'a']]) });
    query('function', { query: json(['extract', [['function', big]], ['=', 'certname', 'a']]) });
    query('operator', { query: json([big, 'certname', 'a']) });
    query('subquery entity', { query: json(['subquery', big, ['=', 'certname', 'a']]) });
    const field = entity.fields.certname ? 'certname' : 'name';
    query('subquery form', { query: json(['in', field, [big]]) });
    query('subquery extract field', {
      query: json(['in', field, ['extract', big, ['select_resources', ['=', 'type', 'A']]]]),
    });
    query('not a query', { query: json({ [big]: 1 }) });
    query('order_by field', { order_by: json([{ field: big }]) });
    query('order_by key', { order_by: json([{ field: 'certname', [big]: 1 }]) });
    query('order_by order', { order_by: json([{ field: 'certname', order: big }]) });
    query('order_by shape', { order_by: json([big]) });
    query('order_by JSON', { order_by: big });
    query('limit', { limit: big });
    query('offset', { offset: big });
    query('URL parameter', { [big]: '1' });
  }
  const q = (kind: string, entity: (typeof ENTITIES)[string], query: unknown) =>
    cases.push([kind, () => queryEntity(entity, data, new URLSearchParams({ query: json(query) }))]);
  q('numeric value', resources, ['=', 'line', big]);
  q('inequality value', resources, ['<', 'line', big]);
  q('boolean value', resources, ['=', 'exported', big]);
  q('node_state value', resources, ['=', 'node_state', big]);
  q('null? value', resources, ['null?', 'title', big]);
  q('inequality field', resources, ['<', ['parameter', big], 1]);
  q('path regex field', resources, ['~>', ['parameter', big], 'a']);
  q('timestamp value', reports, ['=', 'start_time', big]);
  q('string value', events, ['=', 'certname', { [big]: 1 }]);
  const counts = (kind: string, params: Record<string, string>) =>
    cases.push([`event-counts: ${kind}`, () => eventCounts(data, new URLSearchParams(params))]);
  counts('summarize_by', { summarize_by: big });
  counts('count_by', { summarize_by: 'certname', count_by: big });
  counts('counts_filter operator', { summarize_by: 'certname', counts_filter: json(['and', ['=', big, 1]]) });
  counts('counts_filter long operator', { summarize_by: 'certname', counts_filter: json([big, 'failures', 1]) });
  counts('counts_filter field', { summarize_by: 'certname', counts_filter: json(['=', big, 1]) });
  counts('counts_filter value', { summarize_by: 'certname', counts_filter: json(['=', 'failures', big]) });
  counts('counts_filter JSON', { summarize_by: 'certname', counts_filter: big });
  counts('distinct times', {
    summarize_by: 'certname',
    distinct_resources: 'true',
    distinct_start_time: big,
    distinct_end_time: big,
  });
  for (const [kind, run] of cases) {
    let message = '';
    try {
      run();
    } catch (e) {
      if (!(e instanceof NfvError) || e.status !== 400) throw e;
      message = e.message;
    }
    const quoted = Math.max(0, ...[...message.matchAll(/v{10,}…?/g)].map((m) => m[0].length));
    t.ok(message.length > 0 && message.length <= 300, `${kind}: ${message.length} characters`);
    t.ok(quoted >= 50 && quoted <= 120, `${kind}: the value quoted in ${quoted} characters`);
  }
  for (const text of [`["=", "${big}`, `["=", ${big}]`])
    fails(t, () => parseQueryParameter(text), /^Json parse error at line 1, column \d+: .{1,120}$/);
});

t.test('equality indexes and one-field groups give what a scan of every row gives, in its order', async (t) => {
  // Values of every JSON kind, alike as text ("80" and 80, "null" and null), resources without the parameter.
  const next = random(7);
  const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!;
  const values = [80, '80', null, 'null', true, 'true', 'running', ['a'], { a: 1 }, 0, -0, 1.5];
  const data = emptyInventory();
  for (let n = 0; n < 40; n++) {
    const resources = Array.from({ length: 30 }, (_, k) => ({
      type: pick(['Service', 'File', 'Package']),
      title: `t${k}`,
      exported: next() < 0.2,
      tags: ['x'],
      file: pick(['/a.pp', null]),
      line: pick([1, 2, null]),
      parameters: next() < 0.3 ? {} : { ensure: pick(values), port: pick(values) },
    }));
    replaceCatalog(data, catalog(`n${n}.example`, '2025-01-01T00:00:00Z', resources, pick(['DEV', 'PROD'])));
  }
  deactivateNode(data, { certname: 'n3.example', producer_timestamp: '2025-02-01T00:00:00Z' });
  const index = indexOf(data);
  const queries: unknown[] = [
    ['=', 'type', 'File'],
    ['=', 'line', 2],
    ['=', 'file', null],
    ['=', 'exported', true],
    ['and', ['=', 'environment', 'PROD'], ['=', 'type', 'Service'], ['not', ['=', 'line', 1]]],
    ['and', ['=', 'type', 'File'], ['or', ['=', 'line', 1], ['=', 'line', 2]]],
    ['and', ['=', 'node_state', 'any'], ['=', 'type', 'Package']],
    ...values.map((v) => ['=', ['parameter', 'ensure'], v]),
    ['and', ['=', ['parameter', 'port'], 80], ['=', ['parameter', 'ensure'], '80']],
  ];
  const fresh = indexOf(structuredClone(data));
  for (let k = 0; k < SCANS_BEFORE_INDEX; k++)
    t.notOk(compileFilter(resources, fresh, ['=', 'type', 'File']).candidates, `a field asked ${k + 1} times: a scan`);
  t.ok(compileFilter(resources, fresh, ['=', 'type', 'Package']).candidates, 'asked once more: its index');
  for (const query of queries) {
    // A field's rows are scanned SCANS_BEFORE_INDEX times; then its index answers.
    for (let time = 0; time <= SCANS_BEFORE_INDEX; time++) {
      const filter = compileFilter(resources, index, query);
      const scanned = filter.rows.filter((row) => filter.test(row) === true);
      t.same(select(filter), scanned, `${JSON.stringify(query)}, query ${time + 1}`);
      t.ok(
        select(filter).every((row, k) => row === scanned[k]),
        `${JSON.stringify(query)}: the same rows in order`,
      );
      if (time < SCANS_BEFORE_INDEX) continue;
      if (JSON.stringify(query).includes('{') || JSON.stringify(query).includes('["a"]')) t.notOk(filter.candidates);
      else t.ok(filter.candidates, `${JSON.stringify(query)}: answered from an index`);
    }
  }
  for (const field of ['type', 'line', 'file', 'exported', 'parameters']) {
    const q = new URLSearchParams({
      query: JSON.stringify(['extract', [['function', 'count'], field], ['group_by', field]]),
    });
    const answered = queryEntity(resources, data, q).rows as Record<string, unknown>[];
    // The groups as the record of each row says them, in the order of their first row.
    const expected = new Map<string, { count: number; value: unknown }>();
    for (const row of index.activeResources) {
      const value = resources.record(row)[field];
      const key = canonicalJson(value);
      const g = expected.get(key) ?? expected.set(key, { count: 0, value }).get(key)!;
      g.count++;
    }
    t.same(
      answered,
      [...expected.values()].map((g) => ({ count: g.count, [field]: g.value })),
      `count group_by ${field}`,
    );
  }
});
