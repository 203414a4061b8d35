/** The query language on hand-written data: every operator, null semantics, subqueries, extract, errors. */
import t from 'tap';
import { events, reports, resources } from '../../src/inventory/entities.js';
import { compileQuery, parseQueryParameter, pgRegex } from '../../src/inventory/query.js';
import { queryEntity } from '../../src/inventory/service.js';
import { NfvError } from '../../src/model/errors.js';
import { sample } from './data.js';

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
const fails = (t: Tap.Test, run: () => unknown, message: RegExp) => {
  try {
    run();
    t.fail(`accepted, expected ${message}`);
  } catch (e) {
    t.ok(e instanceof NfvError && e.status === 400, 'a 400');
    t.match((e as Error).message, message);
  }
};

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
