/**
 * The workspace areas in a real PostgreSQL: migrations, whole-or-absent changes, and two `nfv serve` processes on
 * one database whose clients create and delete concurrently without losing anything or giving an id twice.
 */
import t from 'tap';
import { NfvError } from '../../src/model/errors.js';
import { ADP_AREA } from '../../src/store/network.js';
import { PostgresAreas, SCHEMA_VERSION } from '../../src/store/postgres.js';
import { Unchanged } from '../../src/store/workspace.js';
import { request, saidOnStderr, scratch, spawnNfv } from '../helpers.js';
import { havePostgres, startPostgres } from '../postgres.js';

if (havePostgres(t)) {
  const pg = await startPostgres(t);
  const db = new PostgresAreas(pg.url, 2000);
  t.teardown(() => db.close());

  t.test('before migrating, a change says what to run', async (t) => {
    await t.rejects(
      db.mutate(ADP_AREA, () => 1),
      { status: 424, message: /run nfv db migrate/ },
    );
    t.same(await db.status(), { version: 0, areas: [] });
  });

  t.test('migrate creates the schema once', async (t) => {
    t.same(await db.migrate(), { from: 0, to: SCHEMA_VERSION });
    t.same(await db.migrate(), { from: SCHEMA_VERSION, to: SCHEMA_VERSION }, 'a second run has nothing to do');
    t.equal((await db.status()).version, SCHEMA_VERSION);
  });

  t.test('a change is whole or absent', async (t) => {
    t.same((await db.read(ADP_AREA)).graphs, [], 'an area never written reads as empty');
    await db.mutate(ADP_AREA, (d) => {
      d.graphs.push({ id: 1, node: [{ id: 1, name: '10.0.0.1' }] });
      d.counters.graph = 1;
      d.counters.node = 1;
    });
    await t.rejects(
      db.mutate(ADP_AREA, (d) => {
        d.graphs.length = 0;
        throw new NfvError(400, 'changed my mind');
      }),
      { status: 400 },
    );
    t.equal(await db.mutate(ADP_AREA, () => new Unchanged('same')), 'same');
    t.same(
      (await db.read(ADP_AREA)).graphs,
      [{ id: 1, node: [{ id: 1, name: '10.0.0.1' }] }],
      'the failed change left nothing',
    );
    t.equal((await db.status()).areas[0]!.changes, 2, 'one insert and one write');
  });

  t.test('a lock held too long: 503 after the bounded wait', async (t) => {
    let release!: () => void;
    const held = db.mutate(ADP_AREA, () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((r) => setTimeout(r, 100));
    const other = new PostgresAreas(pg.url, 300);
    const started = Date.now();
    await t.rejects(
      other.mutate(ADP_AREA, () => 1),
      { status: 503, message: /busy/ },
    );
    t.ok(Date.now() - started < 2000, 'gave up after the lock timeout');
    release();
    await held;
    await other.close();
  });

  t.test(
    'two serve processes, two clients each, 200 creates and deletes each: nothing lost, no id twice',
    async (t) => {
      const serve = async () => {
        const child = spawnNfv(['serve', '--port', '0', '--database', pg.url], { NFV_WORKSPACE: await scratch(t) });
        t.teardown(() => void child.kill());
        return { url: (await saidOnStderr(child, /listening on (\S+)/))[1]! };
      };
      const servers = [await serve(), await serve()];
      const before = (await db.read(ADP_AREA)).graphs.map((g) => g.id!);
      const graph = JSON.stringify({ graph: [{ node: [{ name: '10.0.0.1' }] }] });
      const created: number[] = [];
      const deleted: number[] = [];
      const client = async (base: string) => {
        const mine: number[] = [];
        for (let k = 0; k < 200; k++) {
          if (k % 3 === 2) {
            const id = mine.shift()!;
            const r = await request(base, 'DELETE', `/adp/graphs/${id}`);
            if (r.status !== 204 && r.status !== 200) t.fail(`DELETE ${id}: ${r.status} ${r.text}`);
            deleted.push(id);
          } else {
            const r = await request(base, 'POST', '/adp/graphs', graph);
            if (r.status !== 201) t.fail(`POST: ${r.status} ${r.text}`);
            const id = Number(r.json?.content?.[0]?.[0]);
            mine.push(id);
            created.push(id);
          }
        }
      };
      await Promise.all(servers.flatMap((s) => [client(s.url), client(s.url)]));
      t.equal(new Set(created).size, created.length, `${created.length} ids handed out, each once`);
      const left = (await request(servers[0]!.url, 'GET', '/adp/graphs')).json.content[0].graph.map(
        (g: { id: number }) => g.id,
      );
      const expected = [...before, ...created.filter((id) => !deleted.includes(id))];
      t.same(
        [...left].sort((a, b) => a - b),
        [...expected].sort((a, b) => a - b),
        'every create and delete stayed',
      );
      t.same(
        (await request(servers[1]!.url, 'GET', '/adp/graphs')).json,
        (await request(servers[0]!.url, 'GET', '/adp/graphs')).json,
        'both servers answer the same',
      );
    },
  );
}
