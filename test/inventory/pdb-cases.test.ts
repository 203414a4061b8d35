/**
 * The cases recorded from PuppetDB 7.12.1 over the node, fact, catalog and edge entities, PQL and the root endpoint
 * (test/fixtures/pdb-cases.json, by record-pdb-cases.py): all pass on the folder and on PostgreSQL, with the same
 * bytes on both.
 */
import t from 'tap';
import { PDB_CASES_FILE, ingestDataset, readCases, runCases } from '../../src/bench/inventory-cases.js';
import { PostgresAreas } from '../../src/store/postgres.js';
import { Workspace } from '../../src/store/workspace.js';
import { saidOnStderr, scratch, spawnNfv } from '../helpers.js';
import { havePostgres, startPostgres } from '../postgres.js';

const { dataset, cases } = readCases(PDB_CASES_FILE);

/** `nfv serve` on a workspace folder, with or without the database; stopped at teardown. */
const serve = async (t: Tap.Test, dir: string, url?: string): Promise<string> => {
  const child = spawnNfv(['serve', '--port', '0', '--workspace', dir, ...(url ? ['--database', url] : [])]);
  t.teardown(() => child.kill());
  return (await saidOnStderr(child, /listening on (\S+)/))[1]!;
};

t.test('recorded from PuppetDB: at least 60 cases, every new entity, PQL and the root endpoint', async (t) => {
  t.ok(cases.length >= 60, `${cases.length} cases`);
  for (const entity of ['nodes', 'facts', 'fact-names', 'fact-paths', 'fact-contents', 'factsets', 'inventory'])
    t.ok(
      cases.some((c) => c.path.startsWith(`/pdb/query/v4/${entity}`)),
      entity,
    );
  for (const entity of ['environments', 'catalogs', 'edges', 'producers'])
    t.ok(
      cases.some((c) => c.path.startsWith(`/pdb/query/v4/${entity}`)),
      entity,
    );
  t.ok(cases.filter((c) => c.path === '/pdb/query/v4').length >= 15, 'the root endpoint, PQL and AST');
});

/** The folder's answers to every case: ingested, served and asked once, for both tests that read them. */
let onFolder: ReturnType<typeof runCases> | undefined;
const folderRun = (t: Tap.Test) =>
  (onFolder ??= (async () => {
    const folder = await scratch(t);
    await ingestDataset(new Workspace(folder), dataset);
    return runCases(await serve(t, folder), cases);
  })());

t.test('the folder answers every case as PuppetDB did', async (t) => {
  const run = await folderRun(t);
  t.same(run.failures, []);
  t.equal(run.passed, cases.length);
});

t.test("PostgreSQL answers every case as PuppetDB did, with the folder's bytes", async (t) => {
  if (!havePostgres(t)) return;
  const server = await startPostgres(t);
  const areas = new PostgresAreas(server.url, 5000);
  await areas.migrate();
  t.teardown(() => areas.close());
  const dbFolder = await scratch(t);
  await ingestDataset(new Workspace(dbFolder, { database: areas }), dataset);
  const onDatabase = await runCases(await serve(t, dbFolder, server.url), cases);
  t.same(onDatabase.failures, []);
  // Receive times are each ingest's own clock.
  const received = (answers: string[]) =>
    answers.map((a) => a.replace(/"(catalog_timestamp|facts_timestamp|timestamp)":"[^"]+"/g, '"$1":"(received)"'));
  t.same(
    received(onDatabase.answers),
    received((await folderRun(t)).answers),
    'byte for byte alike, but for receive times',
  );
});
