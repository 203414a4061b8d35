/**
 * A throwaway PostgreSQL cluster for the tests that need one: initdb in a temporary folder, pg_ctl on a free port
 * of 127.0.0.1, a database, and a teardown that stops the server and removes the folder. As root (CI), the server
 * runs as the unprivileged `postgres` user (initdb refuses root). Without PostgreSQL installed the test is skipped
 * with the reason said, except under CI=true, where .ci/run installs it and a missing server is a failure.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The folder of initdb and pg_ctl: Debian keeps them under /usr/lib/postgresql/VERSION/bin. */
function binaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? path.join(root, versions[0]!, 'bin') : undefined;
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

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

/** Starts a cluster for this test file; `t.teardown` stops it. Throws under CI when PostgreSQL is missing. */
export async function startPostgres(t: { teardown: (fn: () => unknown) => void }): Promise<Postgres> {
  const bin = binaries();
  if (!bin) throw new Error(postgresMissing());
  const dir = mkdtempSync(path.join(tmpdir(), 'nfv-pg-'));
  const data = path.join(dir, 'data');
  const root = process.getuid?.() === 0;
  const as = (cmd: string, args: string[]) =>
    root
      ? execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { stdio: 'pipe' })
      : execFileSync(cmd, args, { stdio: 'pipe' });
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  as(path.join(bin, 'initdb'), ['-D', data, '-U', 'nfv', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  as(path.join(bin, 'pg_ctl'), [
    '-D',
    data,
    '-l',
    path.join(dir, 'log'),
    '-w',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    'start',
  ]);
  t.teardown(() => {
    spawnSync(root ? 'runuser' : path.join(bin, 'pg_ctl'), [
      ...(root ? ['-u', 'postgres', '--', path.join(bin, 'pg_ctl')] : []),
      '-D',
      data,
      '-m',
      'immediate',
      'stop',
    ]);
    rmSync(dir, { recursive: true, force: true });
  });
  return { url: `postgres://nfv@127.0.0.1:${port}/postgres` };
}
