/**
 * npm run bench:database (with NFV_DATABASE_URL): the same /adp operations through the operation table on a
 * workspace folder and on PostgreSQL, side by side, in one process: graph creates one after another, creates from
 * 4 concurrent clients, reads, and the list of 500 graphs. The figures say when a shared database pays and what
 * it costs a single user. Prints a table, writes bench-results/database.{md,json}.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Table from 'cli-table3';
import { OPERATIONS } from '../ops/table.js';
import { execute } from '../ops/operation.js';
import { PostgresAreas } from '../store/postgres.js';
import { Workspace } from '../store/workspace.js';
import { REPO } from './reference.js';

const url = process.env.NFV_DATABASE_URL;
if (!url) {
  process.stderr.write('bench:database: set NFV_DATABASE_URL to an empty database nfv may write (it is migrated)\n');
  process.exit(2);
}
const COUNT = 500;
const graph = JSON.stringify({ graph: [{ node: [{ name: '10.0.0.1', functionalType: 'WEBCLIENT' }] }] });

async function measure(ws: Workspace): Promise<Record<string, number>> {
  const call = async (method: string, target: string, body?: string) => {
    const outcome = await execute(OPERATIONS, ws, { method, target, body, format: body ? 'json' : undefined });
    if (!outcome.ok) throw new Error(`${method} ${target}: ${outcome.error}`);
    return outcome;
  };
  const rate = async (n: number, work: () => Promise<unknown>) => {
    const t0 = performance.now();
    await work();
    return n / ((performance.now() - t0) / 1000);
  };
  const out: Record<string, number> = {};
  out['create, one client (ops/s)'] = await rate(COUNT, async () => {
    for (let k = 0; k < COUNT; k++) await call('POST', '/adp/graphs', graph);
  });
  out['create, 4 clients (ops/s)'] = await rate(COUNT, () =>
    Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let k = 0; k < COUNT / 4; k++) await call('POST', '/adp/graphs', graph);
      }),
    ),
  );
  out['read one graph (ops/s)'] = await rate(COUNT, async () => {
    for (let k = 1; k <= COUNT; k++) await call('GET', `/adp/graphs/${k}`);
  });
  out[`list ${2 * COUNT} graphs (ops/s)`] = await rate(50, async () => {
    for (let k = 0; k < 50; k++) await call('GET', '/adp/graphs');
  });
  return out;
}

const dir = mkdtempSync(path.join(tmpdir(), 'nfv-bench-database-'));
const database = new PostgresAreas(url, 5000);
await database.migrate();
const folder = await measure(new Workspace(dir));
const db = await measure(new Workspace(dir, { database }));
await database.close();
rmSync(dir, { recursive: true, force: true });

const table = new Table({
  head: ['operation', 'folder', 'PostgreSQL', 'PostgreSQL/folder'],
  style: { head: [], border: [] },
});
const rows = Object.keys(folder).map((op) => ({ op, folder: folder[op]!, database: db[op]! }));
for (const r of rows)
  table.push([r.op, r.folder.toFixed(0), r.database.toFixed(0), `${(r.database / r.folder).toFixed(2)}x`]);
const report = [`/adp through the operation table, ${COUNT} graphs per run`, table.toString()];
process.stdout.write(`${report.join('\n')}\n`);
const out = path.join(REPO, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(
  path.join(out, 'database.md'),
  `# Folder and PostgreSQL (${new Date().toISOString()})\n\n\`\`\`\n${report.join('\n')}\n\`\`\`\n`,
);
writeFileSync(path.join(out, 'database.json'), `${JSON.stringify(rows, null, 2)}\n`);
process.exit(0);
