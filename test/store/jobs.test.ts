/**
 * Simulations as jobs: one `nfv serve --workers`, two `nfv worker` processes on one real PostgreSQL, 20
 * simulations; the first worker is killed in the middle of a solve, and its job is picked up again by the second.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { PostgresAreas } from '../../src/store/postgres.js';
import { ROOT, cli, request, saidOnStderr, scratch, spawnNfv } from '../helpers.js';
import { havePostgres, startPostgres } from '../postgres.js';

if (havePostgres(t)) {
  const server = await startPostgres(t);
  const areas = new PostgresAreas(server.url, 2000);
  await areas.migrate();
  await areas.close();
  const sql = new pg.Client({ connectionString: server.url });
  await sql.connect();
  t.teardown(() => sql.end());

  /** Starts `nfv ARGS --database URL` and waits for the line it says when ready. */
  const start = async (args: string[], ready: RegExp, env: Record<string, string> = {}) => {
    const child = spawnNfv([...args, '--database', server.url], { NFV_WORKSPACE: await scratch(t), ...env });
    t.teardown(() => void child.kill('SIGKILL'));
    const said = await saidOnStderr(child, ready);
    return { child, line: said[1] ?? said[0] };
  };

  t.test('a worker killed mid-solve loses no job', async (t) => {
    const serve = await start(['serve', '--port', '0', '--workers'], /listening on (\S+)/);
    const url = serve.line;
    // The first worker takes a second and a half over each job, so that it is surely killed in the middle of one.
    const first = await start(['worker', '--solvers', '1'], /solving simulations/, { NFV_SOLVER_FAULT: 'delay:1500' });
    const office = await readFile(path.join(ROOT, 'samples', 'office-nat.xml'), 'utf8');
    const answers = Array.from({ length: 20 }, () => request(url, 'POST', '/adp/simulations?timeout=3', office));
    for (let k = 0; k < 100; k++) {
      const active = await sql.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE state = 'active'`);
      if (active.rows[0].n > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 300));
    first.child.kill('SIGKILL');
    await start(['worker', '--solvers', '2'], /solving simulations/);
    const done = await Promise.all(answers);
    t.same(
      done.map((a) => a.status),
      Array(20).fill(200),
      'every simulation answered',
    );
    t.same(new Set(done.map((a) => JSON.stringify(a.json.content))).size, 1, 'the same answer for the same input');
    t.equal(done[0]!.headers.get('x-nfv-verdict'), 'SAT');
    const retried = await sql.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE retry_count > 0`);
    t.ok(retried.rows[0].n >= 1, `${retried.rows[0].n} job(s) of the killed worker solved again by the other`);
    const stored = await request(url, 'GET', '/adp/simulations/summary');
    t.equal(stored.json.length, 20, 'each stored once');
  });

  t.test('--workers and worker need the database', async (t) => {
    const ws = await scratch(t);
    const run = (args: string[]) => cli(args, { workspace: ws, env: { NFV_DATABASE_URL: '' } });
    const worker = await run(['worker']);
    t.equal(worker.code, 2);
    t.match(worker.stderr, /^nfv: --database: a worker needs the database/);
    const serve = await run(['serve', '--port', '0', '--workers']);
    t.equal(serve.code, 2);
    t.match(serve.stderr, /^nfv: --database: --workers needs the database/);
  });
}
