/**
 * What every operation shares (`operation.ts`, `render.ts`, `table.ts`), in-process: `execute` routes a request by
 * method and path (404, 405, 400 for a malformed id or target) and never throws, failures are written in the format
 * the operation declares, and every operation of the table is found again by its own path. Each domain's
 * operations are tested in the file that mirrors theirs (`network/`, `firewalls`, `inventory`).
 */
import t from 'tap';
import { parseTarget } from '../../src/model/target.js';
import { ingestCommand, queryEndpoints } from '../../src/ops/inventory.js';
import { graphsList } from '../../src/ops/network/graphs.js';
import { invoke, pathOf, route } from '../../src/ops/operation.js';
import { render } from '../../src/ops/render.js';
import { OPERATIONS } from '../../src/ops/table.js';
import { call, refused, workspace } from './call.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './analysis.part.js';
import './analysis-approx.part.js';
import './firewalls.part.js';
import './imports.part.js';
import './imports-nat.part.js';
import './inventory.part.js';
import './real-routes.part.js';

t.test('execute routes by method and path; what it cannot route is an outcome, not a throw', async (t) => {
  const ws = await workspace(t);
  await refused(t, ws, 'GET', '/adp/nothing', undefined, 404, /^no operation at "\/adp\/nothing"$/);
  await refused(
    t,
    ws,
    'PATCH',
    '/adp/graphs',
    undefined,
    405,
    /^PATCH is not allowed on "\/adp\/graphs" \(allowed: GET, POST, DELETE\)$/,
  );
  await refused(t, ws, 'GET', '/adp/graphs/1x', undefined, 400, /^gid: "1x" is not an id/);
  await refused(t, ws, 'GET', 'adp/graphs', undefined, 400, /^request target "adp\/graphs" is not a path/);
  await refused(t, ws, 'POST', '/adp/graphs', undefined, 400, /^a request body is required$/);
  const found = await call(ws, 'get', '/adp/graphs?x=1');
  t.match(found, { ok: false, status: 404, empty: 'graphs' }, 'the method in any case; the query is not the path');
});

t.test('failures are written in the format the operation declares', async (t) => {
  const ws = await workspace(t);
  const list = await invoke(graphsList, ws);
  t.match(list, { ok: false, status: 404, empty: 'graphs' });
  t.match(JSON.parse(render(list, 'json').body), { content: [], error: { status: 404 } }, '/adp reads: an envelope');
  const missing = await invoke(queryEndpoints['reports.metrics'].get, ws, { params: { hash: 'abc' } });
  t.match(missing, { ok: false, status: 404 });
  t.same(JSON.parse(render(missing, 'xml').body), { error: 'No information is known about report abc' }, 'PuppetDB');
  const bad = await invoke(ingestCommand, ws, { body: '{"command": "nonsense"}', format: 'json' });
  t.match(bad, { ok: false, status: 400 });
  t.equal(render(bad, 'json').mediaType, 'text/plain', 'PuppetDB: a one-line text');
});

t.test('every operation of the table is found again by its own path', async (t) => {
  for (const op of OPERATIONS) {
    // 7 is an id and a name alike: every parameter parses.
    const params = Object.fromEntries([...op.path.matchAll(/\{(\w+)\}/g)].map((m) => [m[1]!, 7]));
    const found = route(OPERATIONS, op.method, parseTarget(pathOf(op, params)).segments);
    t.equal(found.op, op, `${op.method} ${op.path}`);
  }
});
