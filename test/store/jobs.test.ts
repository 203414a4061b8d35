/**
 * Simulations as jobs: one `nfv serve --workers`, two `nfv worker` processes on one real PostgreSQL, 20
 * simulations; the first worker is killed in the middle of a solve, its heartbeat stops, and its job is put back at
 * once and solved by the second (long before the job's expiry, the time limit plus 5 s). With no worker at all, a
 * simulation is answered 503 within its time limit plus 5 s. Both figures are printed.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { PostgresAreas } from '../../src/store/postgres.js';
import { ROOT, cli, request, saidOnStderr, scratch, spawnNfv } from '../helpers.js';
import { havePostgres, startPostgres } from '../postgres.js';
import { JOB_EXPIRY_MARGIN_SECONDS } from '../../src/store/jobs.js';

if (havePostgres(t)) {
  const server = await startPostgres(t);
  const areas = new PostgresAreas(server.url, 2000);
  await areas.migrate();
  await areas.close();
  const sql = new pg.Client({ connectionString: server.url });
  await sql.connect();
  t.teardown(() => sql.end());

  /** Starts `nfv ARGS --database URL` (killed when the test `t` ends) and waits for the line it says when ready. */
  const start = async (
    t: { teardown: (fn: () => unknown) => void },
    args: string[],
    ready: RegExp,
    env: Record<string, string> = {},
    url = server.url,
  ) => {
    const child = spawnNfv([...args, '--database', url], { NFV_WORKSPACE: await scratch(t), ...env });
    t.teardown(() => void child.kill('SIGKILL'));
    const said = await saidOnStderr(child, ready);
    return { child, line: said[1] ?? said[0] };
  };
  /** Polls `query` until its first row's `n` is positive; the seconds it took from `since`. */
  const until = async (query: string, since: number, limitSeconds: number) => {
    while (Date.now() - since < limitSeconds * 1000) {
      if ((await sql.query(query)).rows[0].n > 0) return (Date.now() - since) / 1000;
      await new Promise((r) => setTimeout(r, 100));
    }
    return Infinity;
  };

  // One `serve --workers` and one healthy worker on the file's database for the first two tests, which need no more
  // than some serve and some worker there: each process about half a CPU second to start. Stopped with the file.
  let serving: Promise<string> | undefined;
  const served = () =>
    (serving ??= start(t, ['serve', '--port', '0', '--workers'], /listening on (\S+)/)).then((s) => s.line);
  let working: Promise<unknown> | undefined;
  const worker = () => (working ??= start(t, ['worker', '--solvers', '2'], /solving simulations/));

  t.test('a worker killed mid-solve is noticed by its heartbeat, and its job is retried at once', async (t) => {
    const url = await served();
    // The first worker takes a second and a half over each job, so that it is surely killed in the middle of one.
    const first = await start(t, ['worker', '--solvers', '1'], /solving simulations/, {
      NFV_SOLVER_FAULT: 'delay:1500',
    });
    const office = await readFile(path.join(ROOT, 'samples', 'office-nat.xml'), 'utf8');
    // The default time limit (60 s): the job's expiry would put the lost job back only after 65 s.
    const limit = 60;
    const answers = Array.from({ length: 20 }, () => request(url, 'POST', `/adp/simulations?timeout=${limit}`, office));
    const taken = await until(`SELECT count(*)::int AS n FROM pgboss.job WHERE state = 'active'`, Date.now(), 20);
    t.ok(taken < 20, 'the first worker took a job');
    await new Promise((r) => setTimeout(r, 300));
    first.child.kill('SIGKILL');
    const killed = Date.now();
    await worker();
    const lost = `SELECT count(*)::int AS n FROM pgboss.job WHERE state = 'retry' OR retry_count > 0`;
    const noticed = await until(lost, killed, 60);
    const done = await Promise.all(answers);
    const finished = (Date.now() - killed) / 1000;
    t.comment(
      `killed worker noticed and its job put back after ${noticed.toFixed(1)} s; ` +
        `all answered ${finished.toFixed(1)} s after the kill`,
    );
    t.ok(noticed < 10, `the dead worker noticed within 10 s (${noticed.toFixed(1)} s)`);
    t.ok(
      finished < (limit + JOB_EXPIRY_MARGIN_SECONDS) / 2,
      `its job solved again long before the job's expiry of ${limit + JOB_EXPIRY_MARGIN_SECONDS} s ` +
        `(${finished.toFixed(1)} s)`,
    );
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

  t.test('a simulation with a substrate is placed by a worker as in one process', async (t) => {
    const url = await served();
    await worker();
    const centre = await readFile(path.join(ROOT, 'samples', 'data-centre.xml'), 'utf8');
    const answer = await request(url, 'POST', '/adp/simulations?store=false', centre);
    t.equal(answer.status, 200);
    t.equal(answer.headers.get('x-nfv-hosting'), 'placed');
    t.equal(answer.headers.get('x-nfv-active-hosts'), '6');
    const core1 = answer.json.content[0].hosts.host.find((h: { name: string }) => h.name === 'core1');
    t.same(core1.nodeRef, [{ node: '172.16.0.1' }, { node: '10.0.0.1' }]);
  });

  t.test('with no worker alive, a simulation is answered 503 within its time limit plus 5 s', async (t) => {
    // A database of its own, where no worker of the test above ever beat.
    await sql.query('CREATE DATABASE noworker');
    const url = server.url.replace(/\/postgres$/, '/noworker');
    const migrated = new PostgresAreas(url, 2000);
    await migrated.migrate();
    await migrated.close();
    const serve = await start(t, ['serve', '--port', '0', '--workers'], /listening on (\S+)/, {}, url);
    const office = await readFile(path.join(ROOT, 'samples', 'office-nat.xml'), 'utf8');
    const limit = 3;
    const began = Date.now();
    const answer = await request(serve.line, 'POST', `/adp/simulations?timeout=${limit}`, office);
    const seconds = (Date.now() - began) / 1000;
    t.comment(`503 with no worker after ${seconds.toFixed(1)} s (?timeout=${limit})`);
    t.equal(answer.status, 503);
    t.match(answer.text, /no nfv worker is running/);
    t.ok(
      seconds < limit + JOB_EXPIRY_MARGIN_SECONDS,
      `answered within the time limit plus ${JOB_EXPIRY_MARGIN_SECONDS} s (${seconds.toFixed(1)} s)`,
    );
    const jobs = await new pg.Client({ connectionString: url });
    await jobs.connect();
    t.teardown(() => jobs.end());
    const left = await jobs.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE state < 'completed'`);
    t.equal(left.rows[0].n, 0, 'its job cancelled, not left for a later worker');
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
