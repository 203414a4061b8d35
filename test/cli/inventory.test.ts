/** nfv inventory through the binary. */
import t from 'tap';
import { scratch } from '../helpers.js';
import { nfv } from './in-process.js';
import { catalog, changed, report, web } from '../inventory/data.js';

const ws = await scratch(t);
const run = (args: string[], input?: string) => nfv(args, { workspace: ws, input });

t.test('ingest and query', async (t) => {
  const c = await run(
    ['inventory', 'ingest', 'catalog', '-'],
    JSON.stringify(catalog('a.example', '2025-01-01T00:00:00Z', [web])),
  );
  t.equal(c.code, 0, c.stderr);
  t.equal(
    (
      await run(
        ['inventory', 'ingest', 'report'],
        JSON.stringify(report('a.example', '2025-01-01T10:00:00Z', [changed('nginx')])),
      )
    ).code,
    0,
  );
  const rows = JSON.parse((await run(['inventory', 'resources', 'Service', '--query', '["=","tag","web"]'])).stdout);
  t.equal(rows[0].title, 'nginx');
  const table = await run(['inventory', 'resources', '--format', 'table']);
  t.match(table.stdout, /a\.example\s*│ Service\s*│ nginx\s*│ \/site\.pp:10/);
  const reports = await run(['inventory', 'reports', '--format', 'table', '--total']);
  t.match(reports.stdout, /a\.example\s*│ changed\s*│ 2025-01-01T10:00:00\.000Z/);
  t.match(reports.stderr, /total: 1/);
  t.equal(JSON.parse((await run(['inventory', 'event-counts', '--summarize-by', 'certname'])).stdout)[0].successes, 1);
});

t.test('query: PQL or an AST; a table on a terminal, JSON when piped', async (t) => {
  const pql = await run(['inventory', 'query', 'resources[certname, title] { type = "Service" }']);
  t.equal(pql.code, 0, pql.stderr);
  t.same(JSON.parse(pql.stdout), [{ certname: 'a.example', title: 'nginx' }]);
  const ast = await run(['inventory', 'query', '["from", "resources", ["=", "type", "Service"]]']);
  t.match(JSON.parse(ast.stdout), [{ certname: 'a.example', type: 'Service', title: 'nginx', line: 10 }]);
  const table = await run(['inventory', 'query', 'resources { }', '--format', 'table', '--total']);
  t.match(table.stdout, /a\.example\s*│ Service\s*│ nginx\s*│ \/site\.pp:10/);
  t.match(table.stderr, /total: 1/);
  const reports = await run(['inventory', 'query', 'reports { }', '--format', 'table']);
  t.match(reports.stdout, /a\.example\s*│ changed\s*│ 2025-01-01T10:00:00\.000Z/);
  const counted = await run(['inventory', 'query', 'resources[type, count()] { group by type }', '--format', 'table']);
  t.match(counted.stdout, /type\s*│ count[\s\S]*Service\s*│ 1/);
  t.match(
    (await run(['inventory', 'query', 'events { status = "nope" }', '--format', 'table'])).stdout,
    /^\(no events\)$/m,
  );
  const piped = await run(['inventory', 'query', '-', '--limit', '1'], 'resources[title] { }');
  t.same(JSON.parse(piped.stdout), [{ title: 'nginx' }], '- reads the query from stdin');
  const astOnly = await run(['inventory', 'query', 'nodes[certname] { }', '--ast-only', '--format', 'table']);
  t.same(JSON.parse(astOnly.stdout), ['from', 'nodes', ['extract', ['certname']]]);
  const bad = await run(['inventory', 'query', 'resources { title = }']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /^nfv: PQL parse error at line 1, column 21: found '}'\. Expected one of: /);
  const unknown = await run(['inventory', 'query', 'packages { }']);
  t.equal(unknown.code, 2);
  t.equal(unknown.stderr, "nfv: Invalid entity 'packages' in query\n");
});

t.test('errors', async (t) => {
  const bad = await run(['inventory', 'resources', '--query', '["=","nope",1]']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /^nfv: 'nope' is not a queryable object for resources/);
  t.equal((await run(['inventory', 'ingest', 'catalog'], '{"certname": 1}')).code, 2);
  t.equal((await run(['inventory', 'ingest', 'facts'], '{}')).code, 2);
});
