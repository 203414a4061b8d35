/**
 * npm run bench:inventory-pdb: the comparison set of ../shared/bench/inventory side by side with a real PuppetDB
 * 7.12.1 in one run (puppet.md, appendix 4). It needs Debian's `puppetdb` package (and java) and NFV_DATABASE_URL, a
 * PostgreSQL whose user may create databases; without them it says what is missing and stops (exit 0). It generates
 * one fleet (NFV_BENCH_PDB_NODES nodes of 100 resources, default 1,000, with NFV_BENCH_PDB_REPORTS reports each,
 * default 10), starts PuppetDB on a fresh database of that cluster (-Xmx1g), posts the fleet to /pdb/cmd/v1 and
 * waits until PuppetDB has stored all of it; loads the same commands into nfv on a folder and on a fresh database of
 * the same cluster (`nfv inventory ingest commands`); then asks each server every query of the set at
 * /pdb/query/v4 (both databases vacuumed first; one warm-up, then NFV_BENCH_PDB_ROUNDS rounds, default 7, servers
 * taking turns within a round) and prints the medians with PuppetDB's median over nfv's, rows compared by count.
 * PuppetDB is stopped and its database and folders removed at the end, whatever happened. Writes
 * bench-results/inventory-pdb.{md,json}.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import Table from 'cli-table3';
import pg from 'pg';
import { GENERATOR, querySet, serve, type Serve } from './inventory-bench.js';
import { NFV_BIN, REPO, median, withThisNode } from './reference.js';

const JAR = '/usr/share/puppetdb/puppetdb.jar';
const BOOTSTRAP = '/etc/puppetdb/bootstrap.cfg';
const AUTH = '/etc/puppetdb/conf.d/auth.conf';
/** The queries this comparison is about (those not yet 3x faster than PuppetDB before); all are measured. */
const FOCUS = ['Q04', 'Q10', 'Q15'];

const progress = (text: string) => process.stderr.isTTY && process.stderr.write(`\r\x1b[K${text}`);
const databaseUrl = process.env.NFV_DATABASE_URL;
delete process.env.NFV_DATABASE_URL; // the nfv children choose their backend by flag only
const NODES = Number(process.env.NFV_BENCH_PDB_NODES ?? 1000);
const REPORTS = Number(process.env.NFV_BENCH_PDB_REPORTS ?? 10);
const ROUNDS = Number(process.env.NFV_BENCH_PDB_ROUNDS ?? 7);

function missing(): string | undefined {
  if (!existsSync(JAR)) return `${JAR} is not installed (Debian package puppetdb)`;
  try {
    execFileSync('java', ['-version'], { stdio: 'ignore' });
  } catch {
    return 'java is not installed';
  }
  if (!databaseUrl) return 'NFV_DATABASE_URL is not set (PuppetDB and nfv each get a fresh database of it)';
  return undefined;
}

const until = async (what: string, seconds: number, ready: () => Promise<boolean>, child?: ChildProcess) => {
  const end = Date.now() + seconds * 1000;
  let failed = '';
  const check = () =>
    ready().catch((e: Error) => {
      failed = ` (last: ${e.message})`;
      return false;
    });
  while (!(await check())) {
    if (child && child.exitCode !== null) throw new Error(`${what}: PuppetDB exited (${child.exitCode})`);
    if (Date.now() > end) throw new Error(`${what}: not within ${seconds} s${failed}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
};

/** PuppetDB's configuration in `dir`: its database, port, folders and logs all under `dir`. */
function configure(dir: string, db: URL, port: number): string {
  const conf = path.join(dir, 'conf.d');
  mkdirSync(conf, { recursive: true });
  mkdirSync(path.join(dir, 'var'));
  writeFileSync(
    path.join(dir, 'logback.xml'),
    `<configuration><appender name="F" class="ch.qos.logback.core.FileAppender">
      <file>${path.join(dir, 'puppetdb.log')}</file><encoder><pattern>%d %-5p [%c{2}] %m%n</pattern></encoder>
      </appender><root level="info"><appender-ref ref="F"/></root></configuration>\n`,
  );
  writeFileSync(
    path.join(conf, 'config.ini'),
    `[global]\nvardir = ${path.join(dir, 'var')}\nlogging-config = ${path.join(dir, 'logback.xml')}\n\n` +
      `[database]\nsubname = //${db.hostname}:${db.port || 5432}${db.pathname}\n` +
      `username = ${decodeURIComponent(db.username)}\npassword = ${decodeURIComponent(db.password) || 'unused'}\n` +
      `node-ttl = 0s\nnode-purge-ttl = 0s\ngc-interval = 0\n` +
      // PuppetDB drops at ingest every event older than resource-events-ttl (report-ttl unless set; 0s stores
      // none), and the fleet's reports are dated from a fixed day: ten years keep them all.
      `report-ttl = 3650d\n\n` +
      `[puppetdb]\ndisable-update-checking = true\n`,
  );
  writeFileSync(path.join(conf, 'jetty.ini'), `[jetty]\nhost = 127.0.0.1\nport = ${port}\n`);
  writeFileSync(path.join(conf, 'auth.conf'), readFileSync(AUTH));
  return conf;
}

/** A free TCP port of loopback (PuppetDB takes its port from a file, not port 0). */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Posts commands to PuppetDB's /pdb/cmd/v1 (queued there), `parallel` at a time. */
async function post(base: string, bodies: string[], parallel = 8): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const res = await fetch(`${base}/pdb/cmd/v1`, {
        method: 'POST',
        body,
        headers: { 'Content-Type': 'application/json' },
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`PuppetDB refused a command: ${res.status} ${text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

/** Rows of an entity: of every node, or (`active`) of active nodes only, PuppetDB's default. */
const count = async (base: string, entity: string, active = false) => {
  const extract = ['extract', [['function', 'count']], ...(active ? [] : [['=', 'node_state', 'any']])];
  const q = new URLSearchParams({ query: JSON.stringify(extract) });
  const res = await fetch(`${base}/pdb/query/v4/${entity}?${q}`);
  return ((await res.json()) as { count: number }[])[0]!.count;
};

/** The rows answered, once when every server answered as many, else each server's count (not the same answer). */
const rowsOf = (rows: number[]) => (rows.every((r) => r === rows[0]) ? String(rows[0]) : `differ: ${rows.join(' / ')}`);

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');

async function main(): Promise<void> {
  const why = missing();
  if (why) {
    process.stdout.write(`PuppetDB comparison skipped: ${why}\n`);
    return;
  }
  const work = mkdtempSync(path.join(tmpdir(), 'nfv-bench-pdb-'));
  const admin = new pg.Client({ connectionString: databaseUrl });
  const databases = [`nfv_bench_pdb_${process.pid}`, `nfv_bench_pdbnfv_${process.pid}`];
  let puppetdb: ChildProcess | undefined;
  const servers: Serve[] = [];
  const stop = () => {
    if (puppetdb && puppetdb.exitCode === null) puppetdb.kill('SIGKILL');
  };
  process.once('SIGINT', () => {
    stop();
    rmSync(work, { recursive: true, force: true });
    process.exit(130);
  });
  try {
    await admin.connect();
    for (const d of databases) await admin.query(`CREATE DATABASE ${d}`);
    const dbUrl = (name: string) => {
      const u = new URL(databaseUrl!);
      u.pathname = `/${name}`;
      return u;
    };
    const pdbDb = new pg.Client({ connectionString: dbUrl(databases[0]!).toString() });
    await pdbDb.connect();
    await pdbDb.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    await pdbDb.end();

    progress(`generating ${NODES} nodes x 100 resources, ${REPORTS} reports each`);
    const fleet = path.join(work, 'fleet');
    execFileSync(
      'python3',
      [
        path.join(GENERATOR, 'gen_dataset.py'),
        fleet,
        ...['--nodes', String(NODES), '--per-node', '100', '--reports-per-node', String(REPORTS)],
      ],
      { stdio: 'ignore' },
    );
    const meta = JSON.parse(readFileSync(path.join(fleet, 'meta.json'), 'utf8')) as {
      resources: number;
      active_resources: number;
      reports: number;
      events: number;
    };
    const files = ['catalogs', 'reports', 'deactivations'].map((k) => path.join(fleet, `${k}.jsonl`));

    // ---- PuppetDB ----
    const port = await freePort();
    const pdbDir = path.join(work, 'puppetdb');
    const conf = configure(pdbDir, dbUrl(databases[0]!), port);
    progress('starting PuppetDB (schema migrations take a minute or two)');
    const started = performance.now();
    const java = [
      '-Xmx1g',
      ...['-cp', JAR, 'clojure.main', '-m', 'puppetlabs.puppetdb.core', 'services'],
      ...['--config', conf, '--bootstrap-config', BOOTSTRAP, '--restart-file', path.join(pdbDir, 'restart')],
    ];
    // With setpriv, PuppetDB dies with this process even if it is killed outright.
    const withSetpriv = existsSync('/usr/bin/setpriv');
    puppetdb = spawn(
      withSetpriv ? '/usr/bin/setpriv' : 'java',
      withSetpriv ? ['--pdeathsig', 'SIGKILL', 'java', ...java] : java,
      {
        stdio: 'ignore',
      },
    );
    const base = `http://127.0.0.1:${port}`;
    await until('PuppetDB start', 600, async () => (await fetch(`${base}/pdb/meta/v1/version`)).ok, puppetdb);
    const startSeconds = (performance.now() - started) / 1000;
    const version = ((await (await fetch(`${base}/pdb/meta/v1/version`)).json()) as { version: string }).version;

    progress('PuppetDB: storing the fleet');
    const loadStarted = performance.now();
    await post(base, lines(files[0]!));
    await post(base, lines(files[1]!));
    const expected = { resources: meta.resources, reports: meta.reports };
    await until('PuppetDB storing the fleet', 3600, async () => {
      const [r, p] = [await count(base, 'resources'), await count(base, 'reports')];
      progress(`PuppetDB: ${r} of ${expected.resources} resources, ${p} of ${expected.reports} reports stored`);
      return r === expected.resources && p === expected.reports;
    });
    // Events are stored with their report: fewer here means PuppetDB dropped them (its resource-events-ttl). Every
    // node is still active here, so no node_state clause is needed.
    const stored = await count(base, 'events', true);
    if (stored !== meta.events) throw new Error(`PuppetDB stored ${stored} of the fleet's ${meta.events} events`);
    await post(base, lines(files[2]!));
    await until(
      'PuppetDB deactivations',
      600,
      async () => (await count(base, 'resources', true)) === meta.active_resources,
    );
    const pdbLoadSeconds = (performance.now() - loadStarted) / 1000;

    // ---- nfv, on a folder and on PostgreSQL ----
    const nfvLoad: Record<string, number> = {};
    const backends = [
      { name: 'nfv folder', args: [] as string[] },
      { name: 'nfv PostgreSQL', args: ['--database', dbUrl(databases[1]!).toString()] },
    ];
    for (const b of backends) {
      const workspace = path.join(work, `ws-${b.name.replace(/\W/g, '')}`);
      mkdirSync(workspace);
      if (b.args.length)
        execFileSync(NFV_BIN, ['db', 'migrate', '--workspace', workspace, ...b.args], {
          env: withThisNode(),
          stdio: 'ignore',
        });
      progress(`${b.name}: storing the fleet`);
      const t0 = performance.now();
      execFileSync(NFV_BIN, ['inventory', 'ingest', 'commands', ...files, '--workspace', workspace, ...b.args], {
        env: withThisNode(),
        stdio: 'ignore',
      });
      nfvLoad[b.name] = (performance.now() - t0) / 1000;
      servers.push(await serve(workspace, b.args));
    }

    // Both databases settled as autovacuum leaves them within a minute or so (visibility map, statistics), so that
    // neither is measured on tables just written.
    for (const d of databases) {
      const c = new pg.Client({ connectionString: dbUrl(d).toString() });
      await c.connect();
      await c.query('VACUUM (ANALYZE)').finally(() => c.end());
    }

    // ---- the queries ----
    const targets = [
      { name: `PuppetDB ${version}`, url: base },
      ...backends.map((b, k) => ({ name: b.name, url: servers[k]!.url })),
    ];
    const set = querySet(path.join(fleet, 'meta.json'));
    const results: { query: string; rows: number[]; ms: number[] }[] = [];
    for (const [name, p, params] of set) {
      const pairs = Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
      const url = (b: string) => `${b}/pdb/query/v4${p}${pairs.length ? `?${new URLSearchParams(pairs)}` : ''}`;
      const times = targets.map(() => [] as number[]);
      const rows = targets.map(() => 0);
      for (let round = 0; round <= ROUNDS; round++) {
        progress(`${name}: round ${round} of ${ROUNDS}`);
        for (let k = 0; k < targets.length; k++) {
          // Servers take turns, starting with a different one each round, so load drifts alike on all.
          const t = (k + round) % targets.length;
          const t0 = performance.now();
          const res = await fetch(url(targets[t]!.url));
          const body = await res.text();
          const ms = performance.now() - t0;
          if (res.status !== 200) throw new Error(`${targets[t]!.name}: ${name}: ${res.status} ${body.slice(0, 300)}`);
          if (round > 0) times[t]!.push(ms);
          rows[t] = (JSON.parse(body) as unknown[]).length;
        }
      }
      results.push({ query: name, rows, ms: times.map(median) });
    }
    progress('');

    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    const table = new Table({
      head: ['query', 'rows', ...targets.map((t) => `${t.name} ms`), 'folder x', 'PostgreSQL x'],
      style: { head: [], border: [] },
    });
    for (const r of results)
      table.push([
        `${FOCUS.some((f) => r.query.startsWith(f)) ? '* ' : ''}${r.query}`,
        rowsOf(r.rows),
        ...r.ms.map((m) => m.toFixed(1)),
        (r.ms[0]! / r.ms[1]!).toFixed(2),
        (r.ms[0]! / r.ms[2]!).toFixed(2),
      ]);
    const header = [
      `PuppetDB ${version} beside nfv, one run: ${NODES} nodes x 100 resources (${meta.resources} resources), ` +
        `${meta.reports} reports; ${cpus().length} cores, load average ${load} after the queries`,
      `store the fleet: PuppetDB ${pdbLoadSeconds.toFixed(0)} s (started in ${startSeconds.toFixed(0)} s, -Xmx1g), ` +
        backends.map((b) => `${b.name} ${nfvLoad[b.name]!.toFixed(1)} s`).join(', '),
      `queries at /pdb/query/v4, median of ${ROUNDS} after a warm-up; x = PuppetDB's median over nfv's ` +
        `(* the three queries this comparison was made for):`,
    ];
    const text = `${header.join('\n')}\n${table.toString()}\n`;
    process.stdout.write(text);
    const out = path.join(REPO, 'bench-results');
    mkdirSync(out, { recursive: true });
    const md = [
      ...header.map((h) => `${h}\n`),
      '',
      `| query | rows | ${targets.map((t) => `${t.name} ms`).join(' | ')} | folder x | PostgreSQL x |`,
      `|---|---|${targets.map(() => '---|').join('')}---|---|`,
      ...results.map(
        (r) =>
          `| ${r.query} | ${rowsOf(r.rows)} | ${r.ms.map((m) => m.toFixed(1)).join(' | ')} | ` +
          `${(r.ms[0]! / r.ms[1]!).toFixed(2)} | ${(r.ms[0]! / r.ms[2]!).toFixed(2)} |`,
      ),
    ].join('\n');
    writeFileSync(path.join(out, 'inventory-pdb.md'), `${md}\n`);
    const names = targets.map((t) => t.name);
    const summary = {
      version,
      nodes: NODES,
      meta,
      load,
      startSeconds,
      pdbLoadSeconds,
      nfvLoad,
      targets: names,
      results,
    };
    writeFileSync(path.join(out, 'inventory-pdb.json'), `${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    for (const s of servers) await s.stop();
    if (puppetdb && puppetdb.exitCode === null) {
      const exited = new Promise((r) => puppetdb!.once('exit', r));
      puppetdb.kill('SIGTERM');
      const timer = setTimeout(stop, 20_000);
      await exited;
      clearTimeout(timer);
    }
    for (const d of databases) await admin.query(`DROP DATABASE IF EXISTS ${d} WITH (FORCE)`).catch(() => undefined);
    await admin.end().catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
