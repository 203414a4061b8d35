/**
 * npm run conformance:inventory [FILE] [--database URL]: loads the dataset of a cases file (default
 * ../shared/inventory-cases.json) into a fresh workspace (a folder, or the given database's inventory), starts
 * `nfv serve` on it, runs every case over HTTP and prints passed/failed with the differences.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PostgresAreas } from '../store/postgres.js';
import { Workspace } from '../store/workspace.js';
import { serve } from './inventory-bench.js';
import { DECISIONS, ingestDataset, readCases, runCases } from './inventory-cases.js';

const args = process.argv.slice(2);
const at = args.indexOf('--database');
const database = at >= 0 ? args.splice(at, 2)[1] : undefined;
const { dataset, cases } = readCases(args[0] && path.resolve(args[0]));

const dir = mkdtempSync(path.join(tmpdir(), 'nfv-inventory-'));
const areas = database ? new PostgresAreas(database, 10_000) : undefined;
await areas?.migrate();
await ingestDataset(new Workspace(dir, { database: areas }), dataset);
await areas?.close();

const server = await serve(dir, database ? ['--database', database] : []);
const { passed, failures } = await runCases(server.url, cases);
await server.stop();
for (const f of failures) process.stdout.write(`${f}\n`);
for (const d of DECISIONS) process.stdout.write(`applied on purpose: ${d}\n`);
process.stdout.write(`inventory conformance: ${passed} passed, ${failures.length} failed (of ${cases.length})\n`);
process.exit(failures.length ? 1 : 0);
