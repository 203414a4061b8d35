/**
 * `nfv db migrate | status | import DIR`: the PostgreSQL side of a workspace (`--database URL` or
 * `NFV_DATABASE_URL`). Migrations are versioned (store/postgres.ts); status says the version and what is stored;
 * import moves a local workspace folder's graphs, requirement sets, substrates, simulations, /fwd nodes and
 * inventory into an empty database.
 */
import path from 'node:path';
import { Command } from 'commander';
import { NfvError, badRequest } from '../../model/errors.js';
import { FWD_AREA } from '../../store/firewalls.js';
import { ADP_AREA } from '../../store/network.js';
import { SCHEMA_VERSION } from '../../store/postgres.js';
import { Workspace } from '../../store/workspace.js';
import { type AreaSpec } from '../../store/area.js';
import { group } from '../op-command.js';
import { outputFormat, workspaceOf } from '../options.js';
import { say, writeData } from '../output.js';
import { plural } from '../../model/words.js';

/** The workspace of the command, which must have a database. */
function withDatabase(self: Command) {
  const ws = workspaceOf(self);
  if (!ws.database)
    throw badRequest('--database: give the database (postgres://USER@HOST:PORT/DATABASE or $NFV_DATABASE_URL)');
  return { ws, db: ws.database };
}

const migrateCommand = new Command('migrate')
  .description('create or upgrade the nfv schema of the database')
  .action(async (_opts: unknown, self: Command) => {
    const { db } = withDatabase(self);
    const { from, to } = await db.migrate();
    say(from === to ? `the database is at schema version ${to} already` : `schema version ${from} -> ${to}`);
  });

const statusCommand = new Command('status')
  .description('the schema version of the database and what it holds')
  .action(async (_opts: unknown, self: Command) => {
    const { ws, db } = withDatabase(self);
    const { version, areas } = await db.status();
    const adp = version ? await ws.read(ADP_AREA) : undefined;
    const fwd = version ? await ws.read(FWD_AREA) : undefined;
    // The inventory (with its regular-expression engine) loads only here: every other command starts without it.
    const { PostgresInventoryStore } = await import('../../inventory/postgres.js');
    const inventory = version >= 2 ? await new PostgresInventoryStore(db).counts() : {};
    const status = {
      database: db.where,
      version,
      latest: SCHEMA_VERSION,
      counts: {
        graphs: adp?.graphs.length ?? 0,
        requirementSets: adp?.requirementSets.length ?? 0,
        substrates: adp?.substrates.length ?? 0,
        simulations: adp?.simulations.length ?? 0,
        firewallNodes: fwd?.nodes.length ?? 0,
        inventoryNodes: inventory.nodes ?? 0,
        resources: inventory.resources ?? 0,
        reports: inventory.reports ?? 0,
        events: inventory.events ?? 0,
        factsets: inventory.factsets ?? 0,
      },
      areas,
    };
    if (outputFormat(self) !== 'table') return writeData(JSON.stringify(status, null, 2));
    const lines = [
      `database ${status.database}: schema version ${version} of ${SCHEMA_VERSION}` +
        (version < SCHEMA_VERSION ? ' (run nfv db migrate)' : ''),
      ...Object.entries(status.counts).map(([k, n]) => `  ${k}: ${n}`),
    ];
    writeData(lines.join('\n'));
  });

const importCommand = new Command('import')
  .description('move a local workspace folder into the (empty) database')
  .argument('<dir>', 'the workspace folder to import')
  .action(async (dir: string, _opts: unknown, self: Command) => {
    const { ws } = withDatabase(self);
    const local = new Workspace(path.resolve(dir), { mustExist: true, lockTimeoutMs: ws.lockTimeoutMs, warn: ws.warn });
    const [adp, fwd] = [await local.read(ADP_AREA), await local.read(FWD_AREA)];
    const adpEmpty = (d: typeof adp) =>
      d.graphs.length + d.requirementSets.length + d.substrates.length + d.simulations.length === 0;
    const fwdEmpty = (d: typeof fwd) => d.nodes.length === 0;
    const { PostgresInventoryStore } = await import('../../inventory/postgres.js');
    const { JournalInventoryStore, preparedOf } = await import('../../inventory/store.js');
    const inventory = new PostgresInventoryStore(ws.database!);
    const held = await inventory.counts();
    if (!adpEmpty(await ws.read(ADP_AREA)) || !fwdEmpty(await ws.read(FWD_AREA)) || held.nodes)
      throw new NfvError(409, `the database ${ws.database!.where} holds data already; nothing was imported`);
    const commands = preparedOf(await new JournalInventoryStore(local).data());
    // Each area in one transaction, found empty again under its lock; its ids are not handed out again.
    const fill = <T extends object>(area: AreaSpec<T>, data: T, empty: (d: T) => boolean) =>
      ws.mutate(area, async (current, ids) => {
        if (!empty(current))
          throw new NfvError(409, `the database's ${area.name} area was written meanwhile; it was not imported`);
        const counters = area.ids!.counters(data);
        Object.assign(current, data);
        for (const kind of area.ids!.kinds) await ids.skipPast(kind, counters[kind] ?? 0);
        return true;
      });
    await fill(ADP_AREA, adp, adpEmpty);
    await fill(FWD_AREA, fwd, fwdEmpty);
    if (!(await inventory.importPrepared(commands)))
      throw new NfvError(409, "the database's inventory was written meanwhile; it was not imported");
    const catalogs = commands.filter((c) => c.kind === 'catalog').length;
    const reports = commands.filter((c) => c.kind === 'report').length;
    const factsets = commands.filter((c) => c.kind === 'facts').length;
    say(
      `imported ${plural(adp.graphs.length, 'graph')}, ${plural(adp.requirementSets.length, 'requirement set')}, ` +
        `${plural(adp.substrates.length, 'substrate')}, ${plural(adp.simulations.length, 'simulation')}, ` +
        `${plural(fwd.nodes.length, 'firewall node')}, ${plural(catalogs, 'catalog')}, ` +
        `${plural(factsets, 'factset')}, ` +
        `${plural(reports, 'report')}`,
    );
  });

export const dbCommand = group('db', 'the PostgreSQL database of a workspace (--database URL)', [
  migrateCommand,
  statusCommand,
  importCommand,
]);
