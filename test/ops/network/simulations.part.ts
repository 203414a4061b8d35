/**
 * The `/adp/simulations` operations in-process, on the small samples: a run answers its result and report (and
 * stores its inputs unless told not to), stored results are listed, summarised, reported, diffed, drawn,
 * reconfigured and deleted, and refused queries store nothing.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import {
  simulationsByParams,
  simulationsDeleteAll,
  simulationQuery,
  simulationsRun,
  type SimulationLine,
} from '../../../src/ops/network/simulations.js';
import { invoke } from '../../../src/ops/operation.js';
import { ROOT, fixture, snapshot } from '../../helpers.js';
import { call, content, ok, refused, workspace } from '../call.js';

const office = () => readFile(path.join(ROOT, 'samples', 'office-nat.xml'), 'utf8');

/** The id of the stored simulation an answer links to. */
const storedId = (links: { rel: string; href: string }[] | undefined) =>
  Number(
    links
      ?.find((l) => l.rel === 'simulation')
      ?.href.split('/')
      .pop(),
  );

t.test('a simulation answers its result and its report, typed; store=false stores nothing', async (t) => {
  const ws = await workspace(t);
  const body = await fixture('nfv.xml');
  const outcome = await invoke(simulationsRun, ws, { body, query: new URLSearchParams({ store: 'false' }) });
  if (!outcome.ok) return t.fail(outcome.error);
  t.equal(outcome.reply.report.verdict, 'SAT');
  // The fixture's two hosts cannot carry a firewall (h1 is a CLIENT host, h2 supports no FIREWALL).
  t.match(
    outcome.reply.summary,
    /^2\/2 requirements hold; \d+ firewalls? \(\d+ placed\); \d+ rules?; hosting: INFEASIBLE: 30\.0\.0\.1 \(FIREWALL\)/,
  );
  t.equal(outcome.reply.headers?.['X-Nfv-Hosting'], 'infeasible');
  t.equal(outcome.reply.headers?.['X-Nfv-Summary'], outcome.reply.summary, 'the header is the same summary');
  t.equal(outcome.reply.headers?.['X-Nfv-Verdict'], 'SAT');
  t.ok(outcome.reply.content[0]!.graphs.graph?.length, 'the result NFV');
  t.notOk(
    outcome.links?.some((l) => l.rel === 'simulation'),
    'no stored simulation to link to',
  );
  t.equal((await snapshot(ws.dir)).size, 0, 'nothing stored without store=true');
});

t.test('a stored run keeps its inputs and result: list, summary, get, report, draw', async (t) => {
  const ws = await workspace(t);
  const query = new URLSearchParams({ origin: 'office-nat.xml' });
  const run = await invoke(simulationsRun, ws, { body: await office(), query });
  if (!run.ok) return t.fail(run.error);
  t.equal(storedId(run.links), 1, 'linked to simulation 1');
  const { report } = run.reply;
  t.equal(report.verdict, 'SAT');
  t.ok(report.allocated >= 1, 'firewalls were placed');

  // The inputs, under new ids: the graph, a requirement set naming it, no substrate (the sample has no hosts).
  const [graphs] = await ok(t, ws, 'GET', '/adp/graphs');
  t.same(
    graphs.graph.map((g: { id: number }) => g.id),
    [1],
  );
  const [set] = await ok(t, ws, 'GET', '/adp/requirements/1');
  t.same(
    set.property.map((p: { graph: number }) => p.graph),
    [1, 1, 1],
    'properties name the stored graph',
  );
  await refused(t, ws, 'GET', '/adp/substrates', undefined, 404, /holds no substrates/);

  const [line] = (await ok(t, ws, 'GET', '/adp/simulations/summary', undefined, 200)) as SimulationLine[];
  t.match(line, {
    id: 1,
    verdict: 'SAT',
    held: 3,
    requirements: 3,
    firewalls: report.firewalls,
    placed: report.allocated,
    rules: report.rules,
    algorithm: 'AP',
    origin: 'office-nat.xml',
  });
  const listed = await ok(t, ws, 'GET', '/adp/simulations', undefined, 200);
  t.equal(listed[0].length, 1, 'one stored result');
  const [result] = await ok(t, ws, 'GET', '/adp/simulations/1', undefined, 200);
  t.same(result, run.reply.content[0], 'the stored result is the answered one');

  const full = await ok(t, ws, 'GET', '/adp/simulations/1/report', undefined, 200);
  t.match(full, { simulation: 1, source: { gids: [1], rid: 1 }, verdict: 'SAT' });
  t.match(full.requirements[0], { protocol: 'TCP', srcPort: '*', dstPort: '443', isSat: true });
  t.ok(
    full.placements.every((p: { elements: unknown[] }) => Array.isArray(p.elements)),
    "each firewall's rules",
  );

  const drawn = await call(ws, 'GET', '/adp/simulations/1/draw');
  if (!drawn.ok) return t.fail(drawn.error);
  t.match(drawn.reply, { kind: 'text', filename: 'simulation-1.dot', mediaType: /^text\/vnd\.graphviz/ });
  t.match(content(drawn), /^digraph "simulation 1: SAT" \{/);
  t.match(content(drawn), /FIREWALL \(placed\)/);
  t.match(content(drawn), /allocation place \(unused\)/);

  for (const target of ['/adp/simulations/2', '/adp/simulations/2/report', '/adp/simulations/2/draw'])
    await refused(t, ws, 'GET', target, undefined, 404, /^simulation 2 does not exist$/);
});

t.test('the time limit is 60 s times the effort unless given, at most 600', async (t) => {
  const seconds = (query: string) => simulationQuery(new URLSearchParams(query)).timeoutSeconds;
  t.equal(seconds(''), 60, 'effort 1');
  t.equal(seconds('effort=3'), 180);
  t.equal(seconds('effort=10'), 600);
  t.equal(seconds('effort=100'), 600, 'never past the largest accepted');
  t.equal(seconds('effort=3&timeout=5'), 5, 'a given limit stands');
  t.throws(() => seconds('effort=0&timeout=5'), /^effort: "0" is not a whole number from 1 to 100$/);
});

t.test('refused simulation queries and bodies store nothing', async (t) => {
  const ws = await workspace(t);
  const body = await fixture('nfv.xml');
  const cases: [string, RegExp][] = [
    ['timeout=0', /^timeout: "0" is not a number of seconds above 0 and at most \d+$/],
    ['timeout=601', /^timeout: "601" is not a number of seconds/],
    ['timeout=1e3', /^timeout: "1e3"/],
    ['algorithm=XY', /^algorithm: "XY" is not AP or MF$/],
    ['store=maybe', /^store: "maybe" is not true or false$/],
    ['reconfigure=yes', /^reconfigure: "yes" is not true or false$/],
    ['fid=NOPE', /^fid: "NOPE" is not a functional type$/],
    ['origin=', /^origin: give 1 to 200 characters$/],
  ];
  for (const [query, message] of cases) await refused(t, ws, 'POST', `/adp/simulations?${query}`, body, 400, message);
  await refused(t, ws, 'POST', '/adp/simulations', undefined, 400, /^a request body is required$/);
  await refused(t, ws, 'POST', '/adp/simulations', '<NFV><graphs>', 400, /./);
  t.equal((await snapshot(ws.dir)).size, 0);
});

t.test('byParams simulates stored resources and answers the id of the stored result', async (t) => {
  const ws = await workspace(t);
  const byParams = (query: Record<string, string>) =>
    invoke(simulationsByParams, ws, { query: new URLSearchParams(query) });
  await refused(t, ws, 'POST', '/adp/simulations/byParams', undefined, 400, /^gid: the graph to simulate is required$/);
  await refused(t, ws, 'POST', '/adp/simulations/byParams?gid=3', undefined, 404, /^graph 3 does not exist$/);
  // Store the sample's inputs without solving them again: a run with store=true stores graph 1 and set 1.
  await ok(t, ws, 'POST', '/adp/simulations', await office(), 200);
  await ok(t, ws, 'POST', '/adp/graphs', { graph: [{ node: [{ name: '10.0.0.1' }] }] }, 201);
  await refused(
    t,
    ws,
    'POST',
    '/adp/simulations/byParams?gid=2',
    undefined,
    400,
    /^rid: no requirement set given, and no property refers to graph 2$/,
  );
  await refused(t, ws, 'POST', '/adp/simulations/byParams?gid=1&rid=5', undefined, 404, /requirement set 5/);
  await refused(t, ws, 'POST', '/adp/simulations/byParams?gid=1&sid=5', undefined, 404, /^substrate 5 does not/);
  const answered = await byParams({ gid: '1', rid: '1' });
  if (!answered.ok) return t.fail(answered.error);
  t.same(answered.reply.content, [2], 'the stored id');
  t.equal(answered.reply.report.verdict, 'SAT');
  const summary = await ok(t, ws, 'GET', '/adp/simulations/summary');
  t.match(summary[1], { id: 2, verdict: 'SAT', origin: 'gid 1 rid 1' });
  const implicit = await byParams({ gid: '1' });
  t.same(implicit.ok && implicit.reply.content, [3], 'the properties naming the graph, without rid');
});

t.test('reconfigure, diff and change scripts between stored results', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/adp/simulations', await office(), 200);
  const wanted = {
    property: [
      { name: 'REACHABILITY_PROPERTY', graph: 0, src: '192.168.1.10', dst: '198.51.100.80' },
      { name: 'ISOLATION_PROPERTY', graph: 0, src: '198.51.100.66', dst: '192.168.1.10' },
    ],
  };
  const next = await call(ws, 'POST', '/adp/simulations/1/reconfigure', wanted);
  if (!next.ok) return t.fail(next.error);
  t.equal(storedId(next.links), 2, 'stored as a new simulation');
  t.match(next.reply, { headers: { 'X-Nfv-Summary': /^2\/2 requirements hold; .*; \d+ rule changes?$/ } });
  t.match(await ok(t, ws, 'GET', '/adp/simulations/2/report'), { source: { reconfigured: 1 } });
  await refused(t, ws, 'POST', '/adp/simulations/9/reconfigure', wanted, 404, /^simulation 9 does not exist$/);

  const diff = await ok(t, ws, 'GET', '/adp/simulations/1/diff/2', undefined, 200);
  t.match(diff, { from: 1, to: 2 });
  t.ok(
    diff.requirements.some(
      (r: { requirement: string; to: unknown }) =>
        /^ISOLATION_PROPERTY 192\.168\.1\.11 /.test(r.requirement) && r.to === null,
    ),
    'the dropped requirement is in only one of them',
  );
  t.ok(diff.reconfigured.length >= 1, 'each deployed firewall with its change');
  const firewall = diff.reconfigured[0].firewall;
  const script = await call(ws, 'GET', `/adp/simulations/1/change/2?node=${firewall}&format=iptables`);
  if (!script.ok) return t.fail(script.error);
  t.match(script.reply, { kind: 'text', filename: `iptables_${firewall}_1-2.rules` });
  t.match(content(script), /^# nfv: firewall .*\n# load with: iptables-restore --noflush < FILE\n\*filter\n/);
  await refused(
    t,
    ws,
    'GET',
    `/adp/simulations/1/change/2?node=${firewall}&format=pf`,
    undefined,
    400,
    /^format: "pf": change scripts exist for /,
  );
  const nft = await call(ws, 'GET', `/adp/simulations/1/change/2?node=${firewall}&format=nftables&sets=true`);
  if (!nft.ok) return t.fail(nft.error);
  t.match(nft.reply, { kind: 'text', filename: `nftables_${firewall}_1-2.sh` });
  t.match(content(nft), /^#!\/bin\/sh\n# nfv: firewall .*\n# .*\n# chain forward, with --sets\);/);
  await refused(
    t,
    ws,
    'GET',
    `/adp/simulations/1/change/2?node=${firewall}&format=iptables&sets=true`,
    undefined,
    400,
    /^sets: only nftables groups rules into sets$/,
  );
  await refused(t, ws, 'GET', '/adp/simulations/1/change/2', undefined, 400, /^node: the firewall node/);
  await refused(
    t,
    ws,
    'GET',
    '/adp/simulations/1/change/2?node=9.9.9.9',
    undefined,
    404,
    /^node: simulation 1 has no node "9\.9\.9\.9"$/,
  );
  await refused(t, ws, 'GET', '/adp/simulations/1/diff/7', undefined, 404, /^simulation 7 does not exist$/);
});

t.test('delete one stored result, then all; then 304', async (t) => {
  const ws = await workspace(t);
  const body = await fixture('nfv.xml');
  await ok(t, ws, 'POST', '/adp/simulations', body, 200);
  await ok(t, ws, 'POST', '/adp/simulations', body, 200);
  await ok(t, ws, 'DELETE', '/adp/simulations/1', undefined, 200);
  await refused(t, ws, 'DELETE', '/adp/simulations/1', undefined, 404, /^simulation 1 does not exist$/);
  t.same(
    (await ok(t, ws, 'GET', '/adp/simulations/summary')).map((l: SimulationLine) => l.id),
    [2],
  );
  t.match(await invoke(simulationsDeleteAll, ws), { ok: true, status: 200 });
  await refused(t, ws, 'GET', '/adp/simulations', undefined, 404, /holds no simulations/);
  t.same(await ok(t, ws, 'GET', '/adp/simulations/summary'), [], 'the summary of nothing is an empty list');
  const before = await snapshot(ws.dir);
  t.match(await invoke(simulationsDeleteAll, ws), { ok: true, status: 304 });
  t.same(await snapshot(ws.dir), before);
});
