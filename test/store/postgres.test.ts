/**
 * The workspace areas in a real PostgreSQL: migrations (with the upgrade that moves counters into sequences),
 * whole-or-absent changes, ids from sequences, and two `nfv serve` processes on one database whose clients create
 * and delete concurrently without losing anything or giving an id twice.
 */
import { createServer, type AddressInfo, type Socket } from 'node:net';
import t from 'tap';
import { DATABASE_CONNECT_TIMEOUT_MS } from '../../src/model/limits.js';
import { NfvError } from '../../src/model/errors.js';
import { ADP_AREA } from '../../src/store/network.js';
import { MIGRATIONS, PostgresAreas, SCHEMA_VERSION } from '../../src/store/postgres.js';
import { Unchanged } from '../../src/store/area.js';
import { rawRequest, saidOnStderr, scratch, spawnNfv } from '../helpers.js';
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
    await db.mutate(ADP_AREA, async (d, ids) => {
      d.graphs.push({
        id: (await ids.take('graph', 1))[0],
        node: [{ id: (await ids.take('node', 1))[0], name: '10.0.0.1' }],
      });
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

  t.test('ids come from the sequences: a rolled-back change leaves a gap, never a reuse', async (t) => {
    await t.rejects(
      db.mutate(ADP_AREA, async (_d, ids) => {
        t.same(await ids.take('graph', 3), [2, 3, 4], 'three at once, ascending');
        throw new NfvError(400, 'changed my mind');
      }),
    );
    const counters = await db.mutate(ADP_AREA, async (d, ids) => {
      t.same(await ids.take('graph', 1), [5], 'the rolled-back ids are not handed out again');
      t.same(await ids.take('node', 0), [], 'none asked, none taken');
      await ids.skipPast('node', 40);
      t.same(await ids.take('node', 1), [41], 'skipped past');
      await ids.skipPast('node', 10);
      t.same(await ids.take('node', 1), [42], 'skipping past a smaller id changes nothing');
      return { ...d.counters };
    });
    t.match(counters, { graph: 5, node: 42 }, "the area's counters follow the sequences");
    await t.rejects(
      db.mutate(ADP_AREA, (_d, ids) => ids.take('rule', 1)),
      /the adp area hands out no rule ids/,
    );
    const rows = await db.session((c) => c.query('SELECT last_value FROM nfv_adp_graph_id'));
    t.equal(Number(rows.rows[0].last_value), 5);
  });

  t.test('migrating from schema 2 starts each sequence after the counters already held', async (t) => {
    await db.session((c) => c.query('CREATE DATABASE old'));
    const old = new PostgresAreas(pg.url.replace(/\/postgres$/, '/old'), 2000);
    t.teardown(() => old.close());
    await old.session(async (c) => {
      await c.query('CREATE TABLE nfv_schema_migrations (version int PRIMARY KEY, name text NOT NULL)');
      for (const m of MIGRATIONS.filter((x) => x.version <= 2)) {
        await c.query(m.sql);
        await c.query('INSERT INTO nfv_schema_migrations VALUES ($1, $2)', [m.version, m.name]);
      }
      const doc = { ...ADP_AREA.initial(), counters: { graph: 7, simulation: 3 } };
      await c.query("INSERT INTO nfv_areas (name, doc) VALUES ('adp', $1)", [JSON.stringify(doc)]);
    });
    t.same(await old.migrate(), { from: 2, to: SCHEMA_VERSION });
    const taken = await old.mutate(ADP_AREA, async (_d, ids) => [
      await ids.take('graph', 1),
      await ids.take('simulation', 1),
      await ids.take('substrate', 1),
    ]);
    t.same(taken, [[8], [4], [1]]);
  });

  t.test('a lock held too long: 503 after the bounded wait', async (t) => {
    let release!: () => void;
    let holding!: () => void;
    const inside = new Promise<void>((resolve) => (holding = resolve));
    const held = db.mutate(
      ADP_AREA,
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
          holding();
        }),
    );
    // The first change holds the row's lock once its function runs (not after a guessed delay).
    await inside;
    const other = new PostgresAreas(pg.url, 300);
    const started = Date.now();
    await t.rejects(
      other.mutate(ADP_AREA, () => 1),
      { status: 503, message: /busy/ },
    );
    // The holder keeps the lock until released below, so any answer at all came from the 300 ms bound; the margin
    // is for a loaded machine (a new connection, a forked backend).
    const seconds = (Date.now() - started) / 1000;
    t.ok(seconds < 5, `gave up after the lock timeout (${seconds.toFixed(2)} s)`);
    release();
    await held;
    await other.close();
  });

  /** What the concurrent clients create and delete: where, the body, the id in the answer, and the ids listed. */
  interface Collection {
    path: string;
    /** The whole list (`/fwd/nodes` lists ids 1 to 10 unless told). */
    all: string;
    /** The sequence its ids come from. */
    sequence: string;
    body: string;
    created: (json: any) => number;
    listed: (json: any) => number[];
  }
  const collections: Record<string, Collection> = {
    graphs: {
      path: '/adp/graphs',
      all: '/adp/graphs',
      sequence: 'nfv_adp_graph_id',
      body: JSON.stringify({ graph: [{ node: [{ name: '10.0.0.1', neighbour: [{ name: '10.0.0.1' }] }] }] }),
      created: (json) => Number(json?.content?.[0]?.[0]),
      listed: (json) => json.content[0].graph.map((g: { id: number }) => g.id),
    },
    'firewall nodes': {
      path: '/fwd/nodes',
      all: '/fwd/nodes?afterInclusive=100000',
      sequence: 'nfv_fwd_node_id',
      body: JSON.stringify({
        name: '30.0.0.1',
        functionalType: 'FIREWALL',
        configuration: {
          name: 'c',
          firewall: { defaultAction: 'DENY', elements: [{ action: 'ALLOW', source: '*', destination: '20.0.0.2' }] },
        },
      }),
      created: (json) => Number(json?.id),
      listed: (json) => json.map((n: { id: number }) => n.id),
    },
  };

  /**
   * One request through node:http: the clients below send 1,600, and fetch (undici) costs about three times the CPU
   * per request (2.3 against 0.6 ms, client and server in one process).
   */
  const request = (base: string, method: string, target: string, body?: string) =>
    rawRequest(base, method, target, body, body === undefined ? {} : { 'Content-Type': 'application/json' });
  /**
   * The two serve processes on the database, started once for the tests below: the areas they serve are the
   * database's (the one all these tests share), and serve keeps nothing else between requests.
   */
  const serve = async () => {
    const child = spawnNfv(['serve', '--port', '0', '--database', pg.url], { NFV_WORKSPACE: await scratch(t) });
    t.teardown(() => void child.kill());
    return (await saidOnStderr(child, /listening on (\S+)/))[1]!;
  };
  let started: Promise<string[]> | undefined;
  const servers = () => (started ??= Promise.all([serve(), serve()]));

  for (const [name, c] of Object.entries(collections)) {
    t.test(
      `${name}: two serve processes, two clients each, 200 creates and deletes each: nothing lost, no id twice`,
      async (t) => {
        const urls = await servers();
        const list = async (base: string) => {
          const r = await request(base, 'GET', c.all);
          return r.status === 200 ? c.listed(r.json) : [];
        };
        const before = await list(urls[0]!);
        const created: number[] = [];
        const deleted: number[] = [];
        const client = async (base: string) => {
          const mine: number[] = [];
          for (let k = 0; k < 200; k++) {
            if (k % 3 === 2) {
              const id = mine.shift()!;
              const r = await request(base, 'DELETE', `${c.path}/${id}`);
              if (r.status !== 204 && r.status !== 200) t.fail(`DELETE ${id}: ${r.status} ${r.text}`);
              deleted.push(id);
            } else {
              const r = await request(base, 'POST', c.path, c.body);
              if (r.status !== 201) t.fail(`POST: ${r.status} ${r.text}`);
              const id = c.created(r.json);
              mine.push(id);
              created.push(id);
            }
          }
        };
        await Promise.all(urls.flatMap((url) => [client(url), client(url)]));
        t.equal(new Set(created).size, created.length, `${created.length} ids handed out, each once`);
        const left = await list(urls[0]!);
        const expected = [...before, ...created.filter((id) => !deleted.includes(id))];
        t.same(
          [...left].sort((a, b) => a - b),
          [...expected].sort((a, b) => a - b),
          'every create and delete stayed',
        );
        t.same(
          (await request(urls[1]!, 'GET', c.all)).json,
          (await request(urls[0]!, 'GET', c.all)).json,
          'both servers answer the same',
        );
        const { rows } = await db.session((client) => client.query(`SELECT last_value FROM ${c.sequence}`));
        t.equal(Number(rows[0].last_value), Math.max(...created), "the last id is the sequence's last value");
      },
    );
  }

  t.test('a bulk delete of the firewall nodes starts their sequences again at 1 (VEREFOO)', async (t) => {
    const url = (await servers())[0]!;
    const body = collections['firewall nodes']!.body;
    t.equal((await request(url, 'POST', '/fwd/nodes', body)).status, 201);
    t.equal((await request(url, 'DELETE', '/fwd/nodes')).status, 204);
    const again = await request(url, 'POST', '/fwd/nodes', body);
    t.match(again.json, { id: 1, configuration: { firewall: { elements: [{ id: 1 }] } } });
    t.equal((await request(url, 'DELETE', '/fwd/nodes')).status, 204);
    t.equal((await request(url, 'DELETE', '/fwd/nodes')).status, 404, 'nothing left to delete');
  });
}

t.test('a server that never answers: 503 after the connection bound, not after the lock timeout', async (t) => {
  // A listener that takes connections and says nothing, as a PostgreSQL too loaded to fork a backend in time.
  const held = new Set<Socket>();
  const server = createServer((socket) => held.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const socket of held) socket.destroy();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const areas = new PostgresAreas(`postgres://nfv@127.0.0.1:${port}/nfv`, 300);
  t.teardown(() => areas.close());
  const started = Date.now();
  const within = `${DATABASE_CONNECT_TIMEOUT_MS / 1000} s`;
  await t.rejects(areas.read(ADP_AREA), {
    status: 503,
    message: `the database postgres://nfv@127.0.0.1:${port}/nfv gave nfv no connection within ${within}`,
  });
  // A timer never fires early: the 300 ms lock timeout did not bound the connection.
  t.ok(Date.now() - started >= DATABASE_CONNECT_TIMEOUT_MS - 50, 'waited for the connection bound');
});
