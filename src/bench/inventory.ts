/**
 * npm run bench:inventory: the inventory store at 1k, 10k and 100k resources, with the fleet generator and the
 * operator query set of ../shared/bench/inventory (the material of the PuppetDB comparison), each figure beside a
 * plain-JavaScript baseline measured in the same run:
 * - batch load (`nfv inventory ingest commands`), and commands posted one after another to `nfv serve`
 *   (POST /v4/commands; each durable when answered) beside a plain durable append (write + fsync) of the same bytes;
 * - the 17 queries over HTTP at 100k beside a plain scan of the entity's rows plus JSON encoding of the same answer;
 * - the longest a query waits while commands are written;
 * - serve's memory beside a plain process holding the parsed commands;
 * - one CLI query and one CLI ingest, end to end, beside `node -e 0`;
 * - the fact entities at 10k nodes on the folder and PostgreSQL (inventory-facts.ts).
 * Prints tables and writes bench-results/inventory.{md,json}.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Table from 'cli-table3';
import { factsBench } from './inventory-facts.js';
import { GENERATOR, queryUrl, querySet, rssMb, serve } from './inventory-bench.js';
import { NFV_BIN, REPO, median, withThisNode } from './reference.js';

// PostgreSQL only for the facts part, where each child gets --database; the rest measures the folder.
const databaseUrl = process.env.NFV_DATABASE_URL;
delete process.env.NFV_DATABASE_URL;
const SIZES = (process.env.NFV_BENCH_NODES ?? '10,100,1000').split(',').map(Number);
const POSTS = 40;
const work = mkdtempSync(path.join(tmpdir(), 'nfv-bench-inventory-'));
const progress = (text: string) => process.stderr.isTTY && process.stderr.write(`\r\x1b[K${text}`);

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');

function generate(nodes: number): string {
  const dir = path.join(work, `gen-${nodes}`);
  execFileSync(
    'python3',
    [
      path.join(GENERATOR, 'gen_dataset.py'),
      dir,
      '--nodes',
      String(nodes),
      '--per-node',
      '100',
      '--reports-per-node',
      '10',
    ],
    { stdio: 'ignore' },
  );
  return dir;
}

function seconds(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return (performance.now() - t0) / 1000;
}

async function post(url: string, body: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v4/commands`, {
    method: 'POST',
    body,
    headers: { 'Content-Type': 'application/json' },
  });
  const text = await res.text();
  const answer = (res.status === 200 ? JSON.parse(text) : { error: text }) as { applied?: boolean };
  if (res.status !== 200 || !answer.applied)
    throw new Error(`command not applied: ${res.status} ${JSON.stringify(answer)} for ${body.slice(0, 200)}`);
  return performance.now() - t0;
}

/** Fresh commands for nodes of the dataset: catalogs with a newer timestamp, reports of a later run. */
function freshCommands(dir: string, kind: 'catalogs' | 'reports', n: number, fromEnd = false): string[] {
  return lines(path.join(dir, `${kind}.jsonl`))
    .slice(fromEnd ? -n : 0, fromEnd ? undefined : n)
    .map((line, k) => {
      const c = JSON.parse(line) as { payload: Record<string, unknown> };
      c.payload.producer_timestamp = new Date(Date.UTC(2030, 0, 1, 0, k)).toISOString();
      if (kind === 'reports') c.payload.configuration_version = `bench-${k}`;
      return JSON.stringify(c);
    });
}

/** The plain baseline of a durable command: append the same bytes to a file and fsync, one after another. */
function plainAppend(bodies: string[]): number[] {
  const file = path.join(work, 'plain.log');
  const fd = openSync(file, 'a');
  const times = bodies.map((b) => {
    const t0 = performance.now();
    writeSync(fd, `${b}\n`);
    fsyncSync(fd);
    return performance.now() - t0;
  });
  closeSync(fd);
  rmSync(file);
  return times;
}

const ingestTable = new Table({
  head: [
    'resources',
    'batch load s',
    'catalog ms',
    'plain append ms',
    'resources/s',
    'report ms',
    'plain append ms',
    'reports/s',
    'CLI ingest s',
  ],
  style: { head: [], border: [] },
});
const ingestRows: Record<string, unknown>[] = [];
let big: { dir: string; workspace: string } | undefined;
for (const nodes of SIZES) {
  progress(`generating ${nodes * 100} resources`);
  const dir = generate(nodes);
  const workspace = path.join(work, `ws-${nodes}`);
  const files = ['catalogs', 'reports', 'deactivations'].map((k) => path.join(dir, `${k}.jsonl`));
  progress(`loading ${nodes * 100} resources`);
  const load = seconds(() =>
    execFileSync(NFV_BIN, ['inventory', 'ingest', 'commands', ...files, '--workspace', workspace], {
      env: withThisNode(),
      stdio: 'ignore',
    }),
  );
  const s = await serve(workspace);
  await fetch(`${s.url}/v4/resources?limit=1`); // the server reads the journal once
  const catalogs = freshCommands(dir, 'catalogs', POSTS);
  const reports = freshCommands(dir, 'reports', POSTS);
  // Warm-up (the server's first commands compile its code paths): older catalogs and other runs, not timed.
  for (const c of catalogs.slice(0, 5)) await post(s.url, c.replace('"2030-', '"2029-'));
  for (const r of reports.slice(0, 5)) await post(s.url, r.replace('"bench-', '"warm-'));
  const catalogMs: number[] = [];
  for (const c of catalogs) catalogMs.push(await post(s.url, c));
  const reportMs: number[] = [];
  for (const r of reports) reportMs.push(await post(s.url, r));
  await s.stop();
  // One `nfv inventory ingest catalog` process, end to end (median of 3), for nodes the other phases leave alone.
  const cliCatalogs = freshCommands(dir, 'catalogs', 3, true).map((c, k) => {
    const file = path.join(work, `cli-${nodes}-${k}.json`);
    writeFileSync(file, JSON.stringify((JSON.parse(c.replace('"2030-', '"2033-')) as { payload: unknown }).payload));
    return file;
  });
  const cliIngest = median(
    cliCatalogs.map((f) =>
      seconds(() =>
        spawnSync(NFV_BIN, ['inventory', 'ingest', 'catalog', f, '--workspace', workspace], {
          env: withThisNode(),
          stdio: 'ignore',
        }),
      ),
    ),
  );
  const resourcesPerCatalog = catalogs.map(
    (c) => (JSON.parse(c) as { payload: { resources: unknown[] } }).payload.resources.length,
  );
  const perCatalog = resourcesPerCatalog.reduce((a, b) => a + b, 0) / POSTS;
  const row = {
    resources: nodes * 100,
    loadSeconds: load,
    catalogMs: median(catalogMs),
    catalogBaselineMs: median(plainAppend(catalogs)),
    resourcesPerSecond: (perCatalog * POSTS) / (catalogMs.reduce((a, b) => a + b, 0) / 1000),
    reportMs: median(reportMs),
    reportBaselineMs: median(plainAppend(reports)),
    reportsPerSecond: POSTS / (reportMs.reduce((a, b) => a + b, 0) / 1000),
    cliIngestSeconds: cliIngest,
  };
  ingestRows.push(row);
  ingestTable.push([
    row.resources,
    row.loadSeconds.toFixed(1),
    row.catalogMs.toFixed(1),
    row.catalogBaselineMs.toFixed(1),
    row.resourcesPerSecond.toFixed(0),
    row.reportMs.toFixed(1),
    row.reportBaselineMs.toFixed(1),
    row.reportsPerSecond.toFixed(0),
    row.cliIngestSeconds.toFixed(2),
  ]);
  big = { dir, workspace };
}
const flat = {
  catalog: (ingestRows.at(-1)!.catalogMs as number) / (ingestRows[0]!.catalogMs as number),
  report: (ingestRows.at(-1)!.reportMs as number) / (ingestRows[0]!.reportMs as number),
};

// ---- the query set at 100k ------------------------------------------------------------------------------------------
const meta = JSON.parse(readFileSync(path.join(big!.dir, 'meta.json'), 'utf8')) as Record<string, unknown>;
const queries = querySet(path.join(big!.dir, 'meta.json'));
const s = await serve(big!.workspace);
const target = (p: string, params: Record<string, unknown>) => queryUrl(s.url, p, params);
// The baseline's rows: the entity's rows as plain objects, from the same commands.
const plainRows = {
  resources: lines(path.join(big!.dir, 'catalogs.jsonl')).flatMap(
    (l) => (JSON.parse(l) as { payload: { resources: unknown[] } }).payload.resources,
  ),
  reports: lines(path.join(big!.dir, 'reports.jsonl')).map((l) => (JSON.parse(l) as { payload: unknown }).payload),
};
const eventRows = plainRows.reports.flatMap((r) =>
  (r as { resources: { events: unknown[] }[] }).resources.flatMap((x) => x.events),
);
const rowsOf = (p: string) =>
  p.startsWith('/resources') ? plainRows.resources : p.startsWith('/reports') ? plainRows.reports : eventRows;
const queryTable = new Table({
  head: ['query', 'rows', 'nfv HTTP ms', 'plain scan + encode ms', 'ratio'],
  style: { head: [], border: [] },
});
const queryRows: Record<string, unknown>[] = [];
for (const [name, p, params] of queries) {
  progress(name);
  const times: number[] = [];
  let answer: unknown[] = [];
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now();
    answer = (await (await fetch(target(p, params))).json()) as unknown[];
    times.push(performance.now() - t0);
  }
  const rows = rowsOf(p);
  const base: number[] = [];
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now();
    void rows.filter((r) => r !== null);
    void JSON.stringify(answer);
    base.push(performance.now() - t0);
  }
  const row = { query: name, rows: answer.length, ms: median(times), baselineMs: median(base) };
  queryRows.push(row);
  queryTable.push([
    name,
    row.rows,
    row.ms.toFixed(1),
    row.baselineMs.toFixed(1),
    `${(row.ms / row.baselineMs).toFixed(1)}x`,
  ]);
}
const serveRss = rssMb(s.pid);

// A query while commands are written: how much longer than alone.
const small = target('/resources/Package/openssh-server', {});
const alone: number[] = [];
for (let k = 0; k < 20; k++) {
  const t0 = performance.now();
  await (await fetch(small)).text();
  alone.push(performance.now() - t0);
}
const during: number[] = [];
let writing = true;
const writer = (async () => {
  for (const c of freshCommands(big!.dir, 'catalogs', 30).map((c) => c.replace('"2030-', '"2031-')))
    await post(s.url, c);
  writing = false;
})();
while (writing) {
  const t0 = performance.now();
  await (await fetch(small)).text();
  during.push(performance.now() - t0);
}
await writer;
await s.stop();

// Memory baseline: a plain process holding the same commands parsed.
const plainRss = Number(
  execFileSync(
    process.execPath,
    [
      '-e',
      `const fs=require('fs');const d=['catalogs','reports'].map(k=>fs.readFileSync(${JSON.stringify(big!.dir)}` +
        `+'/'+k+'.jsonl','utf8').split('\\n').filter(Boolean).map(l=>JSON.parse(l)));` +
        `console.log(process.memoryUsage().rss/1048576)`,
    ],
    { encoding: 'utf8' },
  ),
);

// The CLI end to end at 100k, beside node -e 0.
const processSeconds = ([command, ...args]: string[], runs = 3) =>
  median(
    Array.from({ length: runs }, () =>
      seconds(() => spawnSync(command!, args, { env: withThisNode(), stdio: 'ignore' })),
    ),
  );
const nodeStart = processSeconds([process.execPath, '-e', '0'], 5);
const cliQuery = processSeconds([
  NFV_BIN,
  'inventory',
  'resources',
  '--query',
  '["=","type","Service"]',
  '--format',
  'json',
  '--workspace',
  big!.workspace,
]);
const catalogFiles = freshCommands(big!.dir, 'catalogs', 20).map((c, k) => {
  const file = path.join(work, `catalog-${k}.json`);
  writeFileSync(file, JSON.stringify((JSON.parse(c.replace('"2030-', '"2032-')) as { payload: unknown }).payload));
  return file;
});
const loop = seconds(() =>
  catalogFiles.forEach((f) =>
    spawnSync(NFV_BIN, ['inventory', 'ingest', 'catalog', f, '--workspace', big!.workspace], {
      env: withThisNode(),
      stdio: 'ignore',
    }),
  ),
);
const loopBaseline = seconds(() =>
  catalogFiles.forEach(() => spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore' })),
);
const facts = await factsBench(databaseUrl, progress);
progress('');

const cliFlatness = (ingestRows.at(-1)!.cliIngestSeconds as number) / (ingestRows[0]!.cliIngestSeconds as number);
const report = [
  `inventory: generator ${path.relative(REPO, GENERATOR)} (100 resources and 10 reports per node); ` +
    `${POSTS} commands posted one after another per size`,
  ingestTable.toString(),
  `flatness, 100k over 1k: catalog ${flat.catalog.toFixed(2)}x, report ${flat.report.toFixed(2)}x ` +
    `(medians per command), CLI ingest ${cliFlatness.toFixed(2)}x`,
  '',
  `query set at ${(meta.resources as number) ?? 100_000} resources, over HTTP (medians of 5):`,
  queryTable.toString(),
  `a small query alone: median ${median(alone).toFixed(1)} ms; while catalogs are written: ` +
    `median ${median(during).toFixed(1)} ms, longest ${Math.max(...during).toFixed(1)} ms ` +
    `(held back at most ${(Math.max(...during) - median(alone)).toFixed(1)} ms)`,
  `serve RSS after the query set: ${serveRss.toFixed(0)} MB ` +
    `(plain process holding the parsed commands: ${plainRss.toFixed(0)} MB)`,
  `one CLI query end to end: ${cliQuery.toFixed(2)} s (node -e 0: ${nodeStart.toFixed(2)} s)`,
  `CLI ingest from a shell loop: ${(catalogFiles.length / loop).toFixed(1)} catalogs/s ` +
    `(${catalogFiles.length} processes; node -e 0 in the same loop: ` +
    `${(catalogFiles.length / loopBaseline).toFixed(1)}/s)`,
  '',
  ...facts.lines,
];
process.stdout.write(`${report.join('\n')}\n`);
const out = path.join(REPO, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(
  path.join(out, 'inventory.md'),
  `# Inventory benchmark (${new Date().toISOString()})\n\n\`\`\`\n${report.join('\n')}\n\`\`\`\n`,
);
writeFileSync(
  path.join(out, 'inventory.json'),
  `${JSON.stringify(
    {
      ingest: ingestRows,
      flat,
      queries: queryRows,
      during: { alone: median(alone), median: median(during), max: Math.max(...during) },
      serveRss,
      plainRss,
      cliQuery,
      nodeStart,
      cliLoopPerSecond: catalogFiles.length / loop,
      facts: facts.json,
    },
    null,
    2,
  )}\n`,
);
rmSync(work, { recursive: true, force: true });
process.exit(0);
