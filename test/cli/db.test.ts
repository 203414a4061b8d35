/**
 * nfv db migrate | status | import, and the same commands answering from a database and from a folder alike.
 * The commands on a folder run in this process (test/cli/in-process.ts), and so do the eight reads compared
 * between the folder and the database (the CLI keeps one pool per database for its process: here one for the
 * file, ended with the cluster); the other commands on a database are bin/nfv processes.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { SCHEMA_VERSION } from '../../src/store/postgres.js';
import { cli, scratch } from '../helpers.js';
import { nfvInProcess } from './in-process.js';
import { catalog, report, user, web } from '../inventory/data.js';
import { havePostgres, startPostgres } from '../postgres.js';

if (havePostgres(t)) {
  const pg = await startPostgres(t);
  const office = path.join('samples', 'office-nat.xml');

  t.test('a database is required, and a bad one is said in a sentence', async (t) => {
    const ws = await scratch(t);
    const none = await nfvInProcess(['db', 'status'], { workspace: ws });
    t.equal(none.code, 2);
    t.match(none.stderr, /^nfv: --database: give the database/);
    const bad = await nfvInProcess(['db', 'status', '--database', 'mysql://x'], { workspace: ws });
    t.equal(bad.code, 2);
    t.match(bad.stderr, /^nfv: --database: mysql: is not postgres:/);
    const down = await cli(['graphs', 'list', '--database', 'postgres://nfv@127.0.0.1:1/postgres'], { workspace: ws });
    t.equal(down.code, 4, down.stderr);
    t.match(down.stderr, /cannot be reached \(ECONNREFUSED\)/);
    const early = await cli(['graphs', 'list', '--database', pg.url], { workspace: ws });
    t.match(early.stderr, /run nfv db migrate/);
  });

  t.test('migrate, import a workspace, and read it back byte for byte', async (t) => {
    const local = await scratch(t);
    const env = { NFV_DATABASE_URL: pg.url };
    t.equal((await nfvInProcess(['simulate', '--store', office], { workspace: local })).code, 0);
    t.equal((await nfvInProcess(['fwd', 'import', '--simulation', '1'], { workspace: local })).code, 0);
    const commands = path.join(local, 'commands.jsonl');
    await writeFile(
      commands,
      [
        { command: 'replace catalog', version: 9, payload: catalog('a.example', '2024-01-01T00:00:00Z', [web, user]) },
        { command: 'store report', version: 8, payload: report('a.example', '2024-01-02T00:00:00Z', []) },
        {
          command: 'replace facts',
          version: 5,
          received: '2024-01-01T00:00:01Z',
          payload: {
            certname: 'a.example',
            environment: 'DEV',
            producer: 'p',
            producer_timestamp: '2024-01-01T00:00:00Z',
            values: { kernel: 'Linux', os: { family: 'Debian' } },
          },
        },
      ]
        .map((c) => JSON.stringify(c))
        .join('\n'),
    );
    t.equal((await nfvInProcess(['inventory', 'ingest', 'commands', commands], { workspace: local })).code, 0);
    const migrated = await cli(['db', 'migrate'], { workspace: local, env });
    t.equal(migrated.code, 0, migrated.stderr);
    t.equal(migrated.stderr, `schema version 0 -> ${SCHEMA_VERSION}\n`);
    const imported = await cli(['db', 'import', local], { workspace: local, env });
    t.equal(imported.code, 0, imported.stderr);
    t.match(
      imported.stderr,
      /imported 1 graph, 1 requirement set, 0 substrates, 1 simulation, 1 firewall node, 1 catalog, 1 factset, 1 report/,
    );
    const status = JSON.parse((await cli(['db', 'status'], { workspace: local, env })).stdout);
    t.match(status, {
      version: SCHEMA_VERSION,
      latest: SCHEMA_VERSION,
      counts: { graphs: 1, simulations: 1, firewallNodes: 1, inventoryNodes: 1, resources: 2, reports: 1, factsets: 1 },
    });
    for (const args of [
      ['simulations', 'get', '1', '--format', 'xml'],
      ['simulations', 'report', '1'],
      ['fwd', 'nodes', 'list'],
      ['graphs', 'list', '--format', 'json'],
      ['inventory', 'resources', '--format', 'json'],
      ['inventory', 'reports'],
      ['inventory', 'fact-contents', '--format', 'json'],
      ['inventory', 'factsets', '--format', 'json'],
    ]) {
      const fromFolder = await nfvInProcess(args, { workspace: local });
      const fromDatabase = await nfvInProcess(args, { workspace: local, env });
      t.ok(fromFolder.code === 0 && fromFolder.stdout.length > 2, `${args.join(' ')} answers`);
      t.equal(fromDatabase.stdout, fromFolder.stdout, `${args.join(' ')}: the same bytes`);
    }
    const again = await cli(['db', 'import', local], { workspace: local, env });
    t.equal(again.code, 4);
    t.match(again.stderr, /holds data already; nothing was imported/);
    const stored = await cli(['simulate', '--store', office], { workspace: local, env });
    t.match(stored.stderr, /stored as \/adp\/simulations\/2\n/, 'ids go on after the imported ones');
    const graphs = JSON.parse((await cli(['graphs', 'list', '--format', 'json'], { workspace: local, env })).stdout);
    t.same(
      graphs.content[0].graph.map((g: { id: number }) => g.id),
      [1, 2],
    );
    t.match(JSON.parse((await cli(['db', 'status'], { workspace: local, env })).stdout).counts, { simulations: 2 });
  });
}
