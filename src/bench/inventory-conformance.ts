/**
 * npm run conformance:inventory [FILE] [--database URL]: loads the dataset of a cases file (default
 * ../shared/inventory-cases.json) into a fresh workspace (a folder, or the given database's inventory), starts
 * `nfv serve` on it, runs every case over HTTP and prints passed/failed with the differences.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PostgresAreas } from '../store/postgres.js';
import { Workspace } from '../store/workspace.js';
import { DECISIONS, ingestDataset, readCases, runCases } from './inventory-cases.js';
import { REPO } from './reference.js';

const args = process.argv.slice(2);
const at = args.indexOf('--database');
const database = at >= 0 ? args.splice(at, 2)[1] : undefined;
const { dataset, cases } = readCases(args[0] && path.resolve(args[0]));

const dir = mkdtempSync(path.join(tmpdir(), 'nfv-inventory-'));
const areas = database ? new PostgresAreas(database, 10_000) : undefined;
await areas?.migrate();
await ingestDataset(new Workspace(dir, { database: areas }), dataset);
await areas?.close();

const server = spawn(
  process.execPath,
  [
    path.join(REPO, 'bin', 'nfv'),
    'serve',
    '--port',
    '0',
    '--workspace',
    dir,
    ...(database ? ['--database', database] : []),
  ],
  { stdio: ['ignore', 'ignore', 'pipe'] },
);
const base = await new Promise<string>((resolve, reject) => {
  let err = '';
  server.stderr.on('data', (d: Buffer) => {
    err += d;
    const m = /listening on (\S+)/.exec(err);
    if (m) resolve(m[1]!);
  });
  server.on('exit', () => reject(new Error(`nfv serve exited: ${err}`)));
});
const { passed, failures } = await runCases(base, cases);
server.kill();
for (const f of failures) process.stdout.write(`${f}\n`);
for (const d of DECISIONS) process.stdout.write(`applied on purpose: ${d}\n`);
process.stdout.write(`inventory conformance: ${passed} passed, ${failures.length} failed (of ${cases.length})\n`);
process.exit(failures.length ? 1 : 0);
