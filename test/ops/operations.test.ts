/**
 * Operations called in-process, as the CLI calls them: typed constants run by `invoke` on a fresh workspace each,
 * no listener and no child process. What the front ends rely on: typed replies, 304 as an outcome, the declared
 * error format, and that every operation of the table is reachable by its path.
 */
import t from 'tap';
import { parseTarget } from '../../src/model/target.js';
import { ingestCommand, queryEndpoints } from '../../src/ops/inventory.js';
import { graphsCreate, graphsDeleteAll, graphsGet, graphsList } from '../../src/ops/network/graphs.js';
import { simulationsRun } from '../../src/ops/network/simulations.js';
import { invoke, pathOf, route } from '../../src/ops/operation.js';
import { render } from '../../src/ops/render.js';
import { OPERATIONS } from '../../src/ops/table.js';
import { Workspace } from '../../src/store/workspace.js';
import { fixture, scratch, snapshot } from '../helpers.js';

const workspace = async (t: Tap.Test) => new Workspace(await scratch(t));

t.test('a create answers the typed ids; a get answers the typed resource', async (t) => {
  const ws = await workspace(t);
  const created = await invoke(graphsCreate, ws, { body: await fixture('graphs.json') });
  if (!created.ok) return t.fail(created.error);
  t.equal(created.status, 201);
  t.same(created.reply.content, [[1]]);
  const got = await invoke(graphsGet, ws, { params: { gid: 1 } });
  if (!got.ok) return t.fail(got.error);
  t.equal(got.reply.content[0]!.node[0]!.name, '10.0.0.1', 'a Graph, not unknown: its nodes are typed');
  t.same(got.links?.[0], { rel: 'self', href: '/adp/graphs/1', title: 'get the resource' });
});

t.test('a bulk delete of nothing is a 304 outcome that writes nothing', async (t) => {
  const ws = await workspace(t);
  const before = await snapshot(ws.dir);
  const outcome = await invoke(graphsDeleteAll, ws);
  t.ok(outcome.ok);
  t.equal(outcome.status, 304);
  t.match(outcome.ok && outcome.reply, { kind: 'notModified', message: 'there are no graphs to delete' });
  t.same(await snapshot(ws.dir), before, 'the workspace is as it was');
  t.equal(render(outcome, 'json').body, '', 'HTTP answers 304 with no body');
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

t.test('a simulation answers its result and its report, typed', async (t) => {
  const ws = await workspace(t);
  const body = await fixture('nfv.xml');
  const outcome = await invoke(simulationsRun, ws, { body, query: new URLSearchParams({ store: 'false' }) });
  if (!outcome.ok) return t.fail(outcome.error);
  t.equal(outcome.reply.report.verdict, 'SAT');
  t.match(outcome.reply.summary, /^\d+\/\d+ requirements hold; \d+ firewalls? \(\d+ placed\); \d+ rules?$/);
  t.equal(outcome.reply.headers?.['X-Nfv-Summary'], outcome.reply.summary, 'the header is the same summary');
  t.ok(outcome.reply.content[0]!.graphs.graph?.length, 'the result NFV');
  t.equal((await snapshot(ws.dir)).size, 0, 'nothing stored without store=true');
});

t.test('every operation of the table is found again by its own path', async (t) => {
  for (const op of OPERATIONS) {
    // 7 is an id and a name alike: every parameter parses.
    const params = Object.fromEntries([...op.path.matchAll(/\{(\w+)\}/g)].map((m) => [m[1]!, 7]));
    const found = route(OPERATIONS, op.method, parseTarget(pathOf(op, params)).segments);
    t.equal(found.op, op, `${op.method} ${op.path}`);
  }
});
