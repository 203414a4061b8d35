/**
 * The Puppet ecosystem's own clients against `nfv serve --tls-*`, as test/clients runs them on each backend: a
 * throwaway CA with a server certificate and one client certificate per node, a Puppet confdir pointing the PuppetDB
 * terminus at serve (puppet.conf, puppetdb.conf, routes.yaml, as the README shows), `puppet apply` of the fleet in
 * site.pp, and the Python clients (pypuppetdb 2.2.0 from Debian, 3.1.0 and Puppetboard 4.2.6 from ../shared/vendor)
 * run by Debian's /usr/bin/python3. Whatever a client reports, the test asserts on what nfv answers.
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  ROOT,
  SHARED,
  answerOf,
  authority,
  issue,
  saidOnStderr,
  scratch,
  spawnNfv,
  type HttpAnswer,
} from '../helpers.js';

export const HERE = path.join(ROOT, 'test', 'clients');
export const PYTHON = '/usr/bin/python3';
export const VENDOR = path.join(SHARED, 'vendor');

/** The nodes of site.pp, each with the role fact the test gives it. */
export const ROLES = new Map([
  ['app1.example.com', 'app'],
  ['db1.example.com', 'db'],
  ['fail1.example.com', 'fail'],
  ['noop1.example.com', 'noop'],
  ['gone1.example.com', 'gone'],
  ['web1.example.com', 'web'],
]);

/** The Debian packages these tests need, with a file each installs; .ci/run installs them. */
const NEEDED = new Map([
  ['puppet-agent', '/usr/bin/puppet'],
  ['puppet-terminus-puppetdb', '/usr/lib/ruby/vendor_ruby/puppet/util/puppetdb.rb'],
  ['openssl', '/usr/bin/openssl'],
  ['python3', PYTHON],
]);

/** Python modules Debian packages (python3-pypuppetdb, python3-flask, ...) that the Python clients import. */
const PYTHON_MODULES = [
  'pypuppetdb',
  'requests',
  'flask',
  'flask_wtf',
  'wtforms',
  'jinja2',
  'commonmark',
  'packaging',
  'pkg_resources',
];

/** Why the real clients cannot run here, or undefined when they can. */
export function clientsMissing(): string | undefined {
  const packages = [...NEEDED].filter(([, file]) => !existsSync(file)).map(([name]) => name);
  if (packages.length) return `Debian packages missing: ${packages.join(', ')} (.ci/run installs them)`;
  const probe = spawnSync(PYTHON, ['-c', `import ${PYTHON_MODULES.join(', ')}`], { encoding: 'utf8' });
  if (probe.status !== 0) return `Python modules missing for ${PYTHON}: ${probe.stderr.trim().split('\n').pop()}`;
  for (const archive of ['puppetboard-4.2.6.tar.gz', 'pypuppetdb-3.1.0.tar.gz'])
    if (!existsSync(path.join(VENDOR, archive))) return `${path.join(VENDOR, archive)} is missing`;
  return undefined;
}

/** Whether this file can run the clients; if not, skipped with the reason, or failed under CI=true (.ci/run). */
export function haveClients(t: { fail: (why: string) => void; skip: (why: string) => void }): boolean {
  const missing = clientsMissing();
  if (missing && process.env.CI) t.fail(`CI must run the real Puppet clients: ${missing}`);
  else if (missing) t.skip(missing);
  return missing === undefined;
}

const run = promisify(execFile);

export interface Fleet {
  /** The test's folder: certificates, confdir, vardir, ssldir, the files Puppet writes. */
  dir: string;
  /** https://127.0.0.1:PORT of serve. */
  url: string;
  port: number;
  /** An https request to serve as a node with its client certificate would make it. */
  get: (target: string) => Promise<HttpAnswer>;
  /** `puppet apply site.pp` as `certname`, with `extra` arguments; its exit code and output. */
  apply: (certname: string, ...extra: string[]) => Promise<{ code: number; output: string }>;
  /** `puppet node deactivate certname` through the terminus. */
  deactivate: (certname: string) => Promise<{ code: number; output: string }>;
  /** /usr/bin/python3 with `script` from test/clients and the environment given; its exit code and output. */
  python: (script: string, pythonPath: string[], env?: Record<string, string>) => Promise<ClientRun>;
  /** Extracts a vendored archive into the test's folder; the folder it made. */
  vendor: (name: 'puppetboard-4.2.6' | 'pypuppetdb-3.1.0') => Promise<string>;
  /** Client certificate and key of the Python clients, and the CA they trust. */
  tls: { ca: string; cert: string; key: string };
}

export interface ClientRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Certificates, a Puppet confdir and `nfv serve --tls-cert --tls-key --tls-ca` on a fresh workspace (on `database`
 * when given), all removed or stopped when the test ends, even when it fails.
 */
export async function startFleet(t: Tap.Test, database?: string): Promise<Fleet> {
  const dir = await scratch(t, 'nfv-clients-');
  authority(dir, 'ca');
  await issue(dir, 'server', 'ca', '/CN=127.0.0.1', [
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
    'extendedKeyUsage=serverAuth',
    'basicConstraints=CA:FALSE',
  ]);
  // Puppet finds its host certificate and key by certname in the ssldir (certs/, private_keys/), the CA as ca.pem.
  const ssldir = path.join(dir, 'ssl');
  await mkdir(path.join(ssldir, 'certs'), { recursive: true });
  await mkdir(path.join(ssldir, 'private_keys'), { recursive: true });
  await copyFile(path.join(dir, 'ca.pem'), path.join(ssldir, 'certs', 'ca.pem'));
  for (const certname of [...ROLES.keys(), 'board.example.com']) {
    await issue(dir, certname, 'ca', `/CN=${certname}`, ['extendedKeyUsage=clientAuth', 'basicConstraints=CA:FALSE']);
    await copyFile(path.join(dir, `${certname}.pem`), path.join(ssldir, 'certs', `${certname}.pem`));
    await copyFile(path.join(dir, `${certname}.key`), path.join(ssldir, 'private_keys', `${certname}.pem`));
  }

  const workspace = path.join(dir, 'workspace');
  await mkdir(workspace);
  const child = spawnNfv([
    'serve',
    '--port',
    '0',
    '--workspace',
    workspace,
    ...(database ? ['--database', database] : []),
    '--tls-cert',
    path.join(dir, 'server.pem'),
    '--tls-key',
    path.join(dir, 'server.key'),
    '--tls-ca',
    path.join(dir, 'ca.pem'),
  ]);
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  t.teardown(async () => {
    child.kill('SIGTERM');
    await exited;
  });
  const url = (await saidOnStderr(child, /^listening on (\S+)$/m))[1]!;
  const port = Number(new URL(url).port);

  const confdir = path.join(dir, 'conf');
  const manifests = path.join(dir, 'code', 'environments', 'production', 'manifests');
  await mkdir(confdir, { recursive: true });
  await mkdir(manifests, { recursive: true });
  await copyFile(path.join(HERE, 'site.pp'), path.join(manifests, 'site.pp'));
  await writeFile(
    path.join(confdir, 'puppet.conf'),
    [
      '[main]',
      `codedir = ${path.join(dir, 'code')}`,
      'storeconfigs = true',
      'storeconfigs_backend = puppetdb',
      'reports = puppetdb',
      // The throwaway CA has no revocation list.
      'certificate_revocation = false',
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(confdir, 'puppetdb.conf'),
    ['[main]', `server_urls = ${url}`, 'soft_write_failure = false', ''].join('\n'),
  );
  await writeFile(
    path.join(confdir, 'routes.yaml'),
    ['---', 'apply:', '  facts:', '    terminus: facter', '    cache: puppetdb_apply', ''].join('\n'),
  );
  const puppetArgs = ['--confdir', confdir, '--vardir', path.join(dir, 'var'), '--ssldir', ssldir];

  const puppet = async (certname: string, args: string[]) => {
    try {
      const { stdout, stderr } = await run(
        'puppet',
        [...args, ...puppetArgs, '--certname', certname, '--color=false'],
        {
          env: {
            ...process.env,
            FACTER_nfv_dir: dir,
            FACTER_nfv_role: ROLES.get(certname) ?? '',
            HOME: dir,
          },
          timeout: 120_000,
        },
      );
      return { code: 0, output: stdout + stderr };
    } catch (e) {
      const failed = e as { code?: number; stdout?: string; stderr?: string };
      if (typeof failed.code !== 'number') throw e;
      return { code: failed.code, output: (failed.stdout ?? '') + (failed.stderr ?? '') };
    }
  };

  const tls = {
    ca: path.join(dir, 'ca.pem'),
    cert: path.join(dir, 'board.example.com.pem'),
    key: path.join(dir, 'board.example.com.key'),
  };
  const [ca, cert, key] = await Promise.all([tls.ca, tls.cert, tls.key].map((f) => readFile(f, 'utf8')));

  return {
    dir,
    url,
    port,
    tls,
    get: (target) =>
      new Promise((resolve, reject) => {
        const req = https.request(
          { host: '127.0.0.1', port, path: target, ca, cert, key, headers: { Accept: 'application/json' } },
          (res) => answerOf(res).then(resolve, reject),
        );
        req.on('error', reject);
        req.end();
      }),
    apply: (certname, ...extra) =>
      puppet(certname, ['apply', '--detailed-exitcodes', ...extra, path.join(manifests, 'site.pp')]),
    deactivate: (certname) => puppet(certname, ['node', 'deactivate', certname]),
    python: async (script, pythonPath, env = {}) => {
      try {
        const { stdout, stderr } = await run(PYTHON, [path.join(HERE, script)], {
          cwd: dir,
          env: {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            HOME: dir,
            PYTHONPATH: pythonPath.join(':'),
            PYTHONDONTWRITEBYTECODE: '1',
            NFV_DIR: dir,
            PUPPETDB_PORT: String(port),
            ...env,
          },
          timeout: 120_000,
          maxBuffer: 64 * 1024 * 1024,
        });
        return { code: 0, stdout, stderr };
      } catch (e) {
        const failed = e as { code?: number; stdout?: string; stderr?: string };
        if (typeof failed.code !== 'number') throw e;
        return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
      }
    },
    vendor: async (name) => {
      await run('tar', ['-xzf', path.join(VENDOR, `${name}.tar.gz`), '-C', dir]);
      return path.join(dir, name);
    },
  };
}

/** One check a Python client made: printed as a JSON line `{"check": ..., "ok": ..., "got": ...}`. */
export interface Check {
  check: string;
  ok: boolean;
  got?: unknown;
}

/** The checks a Python client printed, one JSON object per line; other lines are not checks. */
export function checksOf(stdout: string): Check[] {
  const checks: Check[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const parsed = JSON.parse(line) as Check;
    if (typeof parsed.check === 'string' && typeof parsed.ok === 'boolean') checks.push(parsed);
  }
  return checks;
}
