/**
 * npm run conformance:inventory [FILE...] [--database URL]: for each cases file (default: PuppetDB's recorded cases,
 * ../shared/inventory-cases.json, and those recorded over the new entities and PQL, test/fixtures/pdb-cases.json),
 * loads its dataset into a fresh workspace (a folder, or the given database's inventory), starts
 * `nfv serve` on it, runs every case over HTTP and prints passed/failed with the differences.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PostgresAreas } from '../store/postgres.js';
import { Workspace } from '../store/workspace.js';
import { serve } from './inventory-bench.js';
import { CASES_FILE, DECISIONS, PDB_CASES_FILE, ingestDataset, readCases, runCases } from './inventory-cases.js';

const args = process.argv.slice(2);
const at = args.indexOf('--database');
const database = at >= 0 ? args.splice(at, 2)[1] : undefined;
const files = args.length ? args.map((a) => path.resolve(a)) : [CASES_FILE, PDB_CASES_FILE];

let failed = 0;
for (const file of files) {
  const { dataset, cases } = readCases(file);
  const dir = mkdtempSync(path.join(tmpdir(), 'nfv-inventory-'));
  let outcome: Awaited<ReturnType<typeof runCases>>;
  try {
    const areas = database ? new PostgresAreas(database, 10_000) : undefined;
    await areas?.migrate();
    await ingestDataset(new Workspace(dir, { database: areas }), dataset);
    await areas?.close();
    const server = await serve(dir, database ? ['--database', database] : []);
    try {
      outcome = await runCases(server.url, cases);
    } finally {
      await server.stop();
    }
  } finally {
    // The workspace is this run's alone: gone when it ends, whatever happened.
    rmSync(dir, { recursive: true, force: true });
  }
  const { passed, failures } = outcome;
  for (const f of failures) process.stdout.write(`${f}\n`);
  process.stdout.write(
    `inventory conformance, ${path.basename(file)}: ${passed} passed, ${failures.length} failed (of ${cases.length})\n`,
  );
  failed += failures.length;
}
for (const d of DECISIONS) process.stdout.write(`applied on purpose: ${d}\n`);
process.exit(failed ? 1 : 0);
