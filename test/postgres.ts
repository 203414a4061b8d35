/**
 * A throwaway PostgreSQL cluster for the tests that need one: initdb in a temporary folder, pg_ctl on a free port
 * of 127.0.0.1, a database, and a teardown that stops the server and removes the folder. As root (CI), the server
 * runs as the unprivileged `postgres` user (initdb refuses root). Without PostgreSQL installed the test is skipped
 * with the reason said, except under CI=true, where .ci/run installs it and a missing server is a failure.
 *
 * Nothing is left behind, whatever happens to the test: the teardown is registered before anything can fail, and a
 * detached reaper (`tail --pid` on the test process) stops the cluster and removes its folder when the test process
 * ends without running it (killed by tap's timeout, a crash). The port is taken by PostgreSQL itself: one chosen
 * below the kernel's ephemeral range (where port-0 listeners and outgoing connections take theirs), and another
 * chosen when the start fails because something took it meanwhile.
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The folder of initdb and pg_ctl: Debian keeps them under /usr/lib/postgresql/VERSION/bin. */
function binaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? path.join(root, versions[0]!, 'bin') : undefined;
}

/** The lowest port the kernel hands out for port 0 and outgoing connections (32768 on Linux unless changed). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return low > 12000 ? low : 32768;
  } catch {
    return 32768;
  }
}

/** Whether nothing listens on 127.0.0.1:port right now. */
const free = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** A port below the ephemeral range that is free now (PostgreSQL binds it a moment later; see the retry). */
async function freePort(): Promise<number> {
  const low = 10000;
  const high = ephemeralLow();
  for (;;) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (await free(port)) return port;
  }
}

/** How many ports a cluster start tries before it gives up. */
const START_ATTEMPTS = 8;

export interface Postgres {
  url: string;
}

/** Why PostgreSQL cannot run here, or undefined when it can. */
const postgresMissing = (): string | undefined =>
  binaries() ? undefined : 'PostgreSQL is not installed (.ci/run installs it from Debian)';

/** Whether a test file can use PostgreSQL; if not, it is skipped with the reason, or fails under CI=true. */
export function havePostgres(t: { fail: (why: string) => void; skip: (why: string) => void }): boolean {
  const missing = postgresMissing();
  if (missing && process.env.CI) t.fail(`CI must test PostgreSQL: ${missing}`);
  else if (missing) t.skip(missing);
  return missing === undefined;
}

const run = promisify(execFile);

const INITDB_ARGS = ['-U', 'nfv', '--auth=trust', '-E', 'UTF8', '--no-sync'];

/**
 * Fills `data` with a fresh cluster: a copy of the one initdb made for an earlier file of this checkout and
 * PostgreSQL version (kept in .tap/pg-template), else initdb's, then kept there. initdb took about 1.2 CPU s a
 * file, `cp -a` 0.2 (it keeps the owner and the folder's mode PostgreSQL asks for). initdb still writes into the
 * temporary folder, where the cluster's owner can reach; the copy is made aside and renamed, as two files may start
 * at once, and a template that cannot be kept (another's came first, .tap not writable) costs nothing more.
 */
async function initialData(bin: string, as: (cmd: string, args: string[]) => [string, string[]], data: string) {
  const key = createHash('sha256')
    .update(`${bin}\0${INITDB_ARGS.join('\0')}`)
    .digest('hex')
    .slice(0, 16);
  const template = fileURLToPath(new URL(`../.tap/pg-template/${key}`, import.meta.url));
  if (existsSync(template)) {
    await run('cp', ['-a', template, data]);
    return;
  }
  await run(...as(path.join(bin, 'initdb'), ['-D', data, ...INITDB_ARGS]));
  const aside = `${template}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  try {
    mkdirSync(path.dirname(template), { recursive: true });
    await run('cp', ['-a', data, aside]);
    renameSync(aside, template);
  } catch {
    // kept by another file first, or not at all: the next file copies that one or runs initdb again
  } finally {
    rmSync(aside, { recursive: true, force: true });
  }
}

const postgresUser = (flag: '-u' | '-g') => Number(execFileSync('id', [flag, 'postgres']).toString());

/** Starts a cluster for this test file; `t.teardown` stops it. Throws under CI when PostgreSQL is missing. */
export async function startPostgres(t: { teardown: (fn: () => unknown) => void }): Promise<Postgres> {
  const bin = binaries();
  if (!bin) throw new Error(postgresMissing());
  const dir = mkdtempSync(path.join(tmpdir(), 'nfv-pg-'));
  const data = path.join(dir, 'data');
  const root = process.getuid?.() === 0;
  /** A command as the cluster's owner: `postgres` when we are root. */
  const as = (cmd: string, args: string[]): [string, string[]] =>
    root ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  const stopCommand = as(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
  // Whatever ends this process, the cluster goes with it: the reaper waits for our pid, then stops and removes.
  spawn(
    'sh',
    [
      '-c',
      'tail --pid="$1" -f /dev/null; shift; d="$1"; shift; [ -f "$d/data/postmaster.pid" ] && "$@"; rm -rf "$d"',
      'nfv-pg-reaper',
      String(process.pid),
      dir,
      ...stopCommand.flat(),
    ],
    { detached: true, stdio: 'ignore' },
  ).unref();
  t.teardown(() => {
    if (existsSync(path.join(data, 'postmaster.pid'))) spawnSync(...stopCommand);
    rmSync(dir, { recursive: true, force: true });
  });
  if (root) {
    chownSync(dir, postgresUser('-u'), postgresUser('-g'));
    chmodSync(dir, 0o700);
  }
  await initialData(bin, as, data);
  const log = path.join(dir, 'log');
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      // -w: pg_ctl returns when the server accepts connections (or has failed), not after a fixed wait.
      await run(
        ...as(path.join(bin, 'pg_ctl'), [
          '-D',
          data,
          '-l',
          log,
          '-w',
          '-t',
          '120',
          '-o',
          `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
          'start',
        ]),
      );
      return { url: `postgres://nfv@127.0.0.1:${port}/postgres` };
    } catch (e) {
      const said = existsSync(log) ? readFileSync(log, 'utf8') : '';
      // Another process took the port between our look and PostgreSQL's bind: try another.
      if (attempt < START_ATTEMPTS && /could not (bind|create any TCP\/IP)|already in use/i.test(said)) continue;
      throw new Error(`PostgreSQL did not start on port ${port}: ${(e as Error).message}\n${said.slice(-2000)}`, {
        cause: e,
      });
    }
  }
}
