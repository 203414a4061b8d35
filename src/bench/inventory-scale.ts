/**
 * npm run bench:inventory-scale: the inventory at fleet size on both backends, side by side. The fleet generator of
 * ../shared/bench/inventory makes NFV_BENCH_NODES nodes (default 10,000) of 100 resources with 5 reports each
 * (1,000,000 resources, 50,000 reports); each backend ingests it with `nfv inventory ingest commands`, then `nfv
 * serve` answers the 17 queries of the comparison set (median of 3 over HTTP). The PostgreSQL backend runs on a fresh
 * database made beside the one NFV_DATABASE_URL names, dropped afterwards. Answers are compared byte for byte
 * (apart from receive_time: when each backend's ingest received a report).
 * NFV_BENCH_DATASET reuses a generated folder. Prints a table and writes bench-results/inventory-scale.{md,json}.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Table from 'cli-table3';
import pg from 'pg';
import { GENERATOR, queryUrl, querySet, rssMb, serve } from './inventory-bench.js';
import { NFV_BIN, REPO, median, withThisNode } from './reference.js';

const NODES = Number(process.env.NFV_BENCH_NODES ?? 10_000);
const url = process.env.NFV_DATABASE_URL;
if (!url) {
  process.stderr.write('bench:inventory-scale needs NFV_DATABASE_URL (a PostgreSQL where it may create a database)\n');
  process.exit(2);
}
// The children choose their backend by flag only.
delete process.env.NFV_DATABASE_URL;
const work = mkdtempSync(path.join(tmpdir(), 'nfv-bench-scale-'));
const progress = (text: string) => process.stderr.isTTY && process.stderr.write(`\r\x1b[K${text}`);

const dataset = process.env.NFV_BENCH_DATASET ?? path.join(work, 'fleet');
if (!existsSync(path.join(dataset, 'meta.json'))) {
  progress(`generating ${NODES} nodes`);
  execFileSync('python3', [
    path.join(GENERATOR, 'gen_dataset.py'),
    dataset,
    '--nodes',
    String(NODES),
    '--per-node',
    '100',
    '--reports-per-node',
    '5',
  ]);
}
const meta = JSON.parse(readFileSync(path.join(dataset, 'meta.json'), 'utf8')) as Record<string, number>;
const comparisonSet = querySet(path.join(dataset, 'meta.json'));

// A fresh database beside the given one.
const database = `nfv_bench_scale_${process.pid}`;
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const dbUrl = new URL(url);
dbUrl.pathname = `/${database}`;

interface Backend {
  name: string;
  args: string[];
}
const backends: Backend[] = [
  { name: 'folder', args: [] },
  { name: 'PostgreSQL', args: ['--database', dbUrl.toString()] },
];

function ingest(workspace: string, b: Backend, files: string[]): { seconds: number; applied: number } {
  const out = execFileSync(
    NFV_BIN,
    ['inventory', 'ingest', 'commands', ...files, '--workspace', workspace, ...b.args],
    { env: withThisNode(), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  const summary = JSON.parse(out) as { seconds: number; applied: number; refused: number };
  if (summary.refused) throw new Error(`${b.name}: ${summary.refused} commands refused`);
  return summary;
}

const results: Record<string, any> = {};
for (const b of backends) {
  const workspace = path.join(work, `ws-${b.name}`);
  mkdirSync(workspace);
  if (b.args.length)
    execFileSync(NFV_BIN, ['db', 'migrate', '--workspace', workspace, ...b.args], { env: withThisNode() });
  progress(`${b.name}: ingesting catalogs`);
  const catalogs = ingest(workspace, b, [path.join(dataset, 'catalogs.jsonl')]);
  progress(`${b.name}: ingesting reports`);
  const reports = ingest(
    workspace,
    b,
    ['reports', 'deactivations'].map((k) => path.join(dataset, `${k}.jsonl`)),
  );
  const s = await serve(workspace, b.args);
  await fetch(queryUrl(s.url, '/resources', { limit: 1 })); // the folder backend reads its journal once
  const queries: Record<string, { ms: number; rows: number; sha: string }> = {};
  for (const [name, p, params] of comparisonSet) {
    progress(`${b.name}: ${name}`);
    const times: number[] = [];
    let body = '';
    for (let k = 0; k < 3; k++) {
      const t0 = performance.now();
      const res = await fetch(queryUrl(s.url, p, params));
      body = `${res.status} ${res.headers.get('x-records') ?? ''} ${await res.text()}`;
      times.push(performance.now() - t0);
    }
    const rows = (JSON.parse(body.slice(body.indexOf(' ', 4) + 1)) as unknown[]).length;
    // Reports carry the time each backend's ingest received them; everything else must match byte for byte.
    const compared = body.replace(/"(report_)?receive_time":"[^"]*"/g, '"$1receive_time":""');
    queries[name] = { ms: median(times), rows, sha: createHash('sha256').update(compared).digest('hex') };
  }
  results[b.name] = {
    catalogSeconds: catalogs.seconds,
    resourcesPerSecond: meta.resources! / catalogs.seconds,
    reportSeconds: reports.seconds,
    reportsPerSecond: meta.reports! / reports.seconds,
    serveRssMb: rssMb(s.pid),
    queries,
  };
  await s.stop();
}
progress('');
await admin.query(`DROP DATABASE ${database}`);
await admin.end();
rmSync(work, { recursive: true, force: true });

const [folder, postgres] = [results.folder, results.PostgreSQL];
const ingestTable = new Table({
  head: ['backend', 'catalogs s', 'resources/s', 'reports s', 'reports/s', 'serve RSS MB'],
  style: { head: [], border: [] },
});
for (const b of backends) {
  const r = results[b.name];
  ingestTable.push([
    b.name,
    r.catalogSeconds.toFixed(1),
    r.resourcesPerSecond.toFixed(0),
    r.reportSeconds.toFixed(1),
    r.reportsPerSecond.toFixed(0),
    r.serveRssMb.toFixed(0),
  ]);
}
const queryTable = new Table({
  head: ['query', 'rows', 'folder ms', 'PostgreSQL ms', 'PostgreSQL / folder', 'same bytes'],
  style: { head: [], border: [] },
});
for (const [name] of comparisonSet) {
  const f = folder.queries[name];
  const p = postgres.queries[name];
  queryTable.push([name, p.rows, f.ms.toFixed(0), p.ms.toFixed(0), (p.ms / f.ms).toFixed(2), f.sha === p.sha]);
}
const heading =
  `Inventory at ${meta.resources} resources, ${meta.reports} reports, ${meta.events} events ` +
  `(${meta.nodes} nodes); median of 3 over HTTP`;
process.stdout.write(`${heading}\n${ingestTable.toString()}\n${queryTable.toString()}\n`);
mkdirSync(path.join(REPO, 'bench-results'), { recursive: true });
writeFileSync(path.join(REPO, 'bench-results', 'inventory-scale.json'), JSON.stringify({ meta, results }, null, 2));
writeFileSync(
  path.join(REPO, 'bench-results', 'inventory-scale.md'),
  `${heading}\n\n\`\`\`\n${ingestTable.toString()}\n${queryTable.toString()}\n\`\`\`\n`,
);
