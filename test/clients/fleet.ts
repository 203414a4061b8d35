/**
 * The Puppet ecosystem's own clients against `nfv serve --tls-*`, as test/clients runs them on both backends at once:
 * a throwaway CA with a server certificate and one client certificate per node, one serve per backend (the folder,
 * and PostgreSQL when given), Puppet confdirs pointing the PuppetDB terminus at them (puppet.conf, puppetdb.conf,
 * routes.yaml, as docs/inventory.md shows), `puppet apply` of the fleet in site.pp, and the Python clients (pypuppetdb
 * 2.2.0 from Debian, 3.1.0 and Puppetboard 4.2.6 from ../shared/vendor) run by Debian's /usr/bin/python3. Whatever a
 * client reports, the test asserts on what nfv answers.
 *
 * One `puppet apply` cost about 4.7 s of CPU (Ruby loading Puppet about 1.2 s, Facter 1.7-1.9 s), so each run feeds
 * every serve: puppetdb.conf lists them all with `command_broadcast` and `min_successful_submissions` = their number,
 * so the terminus sends each command to each and fails the run when one refuses. Queries (exported resources,
 * puppetdb_query()) go to the first of `server_urls` only, so the node that queries runs once per serve with a
 * confdir of that serve alone (`Fleet.apply`'s `to`). Ruby loads Puppet through ruby_load.rb (RUBYOPT), which takes
 * Ruby 3.1's feature-index rebuilds out and keeps the compiled files between runs (in .tap/ruby-iseq, for the next
 * suites too): about 2.7-3.1 s of CPU a run since.
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  PYTHON,
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
export { PYTHON };
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
  // Found, not imported: importing them (Flask, pkg_resources) cost 0.9 s of CPU, and the clients import them anyway.
  const probe = spawnSync(
    PYTHON,
    [
      '-c',
      'import importlib.util, sys\n' +
        'missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]\n' +
        'sys.exit("No module named " + ", ".join(missing) if missing else 0)',
      ...PYTHON_MODULES,
    ],
    { encoding: 'utf8' },
  );
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

/**
 * Facter's configuration for the fleet's runs: what costs most and no test reads is left out, as an operator would
 * in /etc/facter/facter.conf: hypervisor and virtualisation detection, DMI, disks, file systems, Augeas and the
 * clouds (groups), the Linux distribution (os.distro and the lsbdist* facts: `lsb_release`, a Python program, twice
 * a run) and the DHCP servers. Facter took 1.7-1.9 s of CPU in each `puppet apply`, with this 0.8-0.9 s (84 facts
 * -> 68 at the top level); os (family, name, release), kernel, networking, the other legacy facts and the FACTER_*
 * ones stay, and every fact stored is still Facter's.
 */
const FACTER_CONF = `facts : { blocklist : [ ${[
  'hypervisors',
  'virtualization',
  'desktop management interface',
  'disks',
  'file system',
  'augeas',
  'EC2',
  'GCE',
  'Xen',
  'os.distro',
  'lsbdistcodename',
  'lsbdistdescription',
  'lsbdistid',
  'lsbdistrelease',
  'lsbmajdistrelease',
  'lsbminordistrelease',
  'lsbrelease',
  'dhcp_servers',
  'networking.dhcp',
]
  .map((g) => `"${g}"`)
  .join(', ')} ] }\n`;

/**
 * Runs "$@" with FACTER_CONF at /etc/facter/facter.conf, the only place Facter reads it from when Puppet calls it:
 * in a mount namespace of its own (`unshare --mount`, private), /etc is an overlay of the real one with that file
 * added, its upper layer on a tmpfs, so the machine's /etc is never written and nothing outlives the run. Mounts
 * inside /etc (a container's hosts, hostname, resolv.conf) are bound again on top, so the rest of /etc reads as
 * before. `exec`: the timeout's signal reaches puppet itself. Where mount namespaces need a root this user is not,
 * Puppet runs as it is, Facter reading everything (slower, the same assertions).
 */
const PRIVATE_MOUNTS = spawnSync('unshare', ['--mount', 'true']).status === 0;
const PRIVATE_ETC = [
  'set -e',
  'conf=$1 t=$2',
  'shift 2',
  'mount -t tmpfs nfv-etc "$t"',
  'mkdir -p "$t/upper/facter" "$t/work" "$t/etc"',
  'cp "$conf" "$t/upper/facter/facter.conf"',
  'mount -t overlay nfv-etc -o "lowerdir=/etc,upperdir=$t/upper,workdir=$t/work" "$t/etc"',
  `awk '$5 ~ "^/etc/" { print $5 }' /proc/self/mountinfo |`,
  '  while read -r m; do mount --bind "$m" "$t/etc${m#/etc}"; done',
  'mount --rbind "$t/etc" /etc',
  'exec "$@"',
].join('\n');

/** One backend for serve: the workspace folder alone, or with PostgreSQL at `database`. */
export interface Backend {
  name: string;
  database?: string;
}

/** One `nfv serve` of the fleet. */
export interface Server {
  name: string;
  /** https://127.0.0.1:PORT of serve. */
  url: string;
  port: number;
  /** An https request to serve as a node with its client certificate would make it. */
  get: (target: string) => Promise<HttpAnswer>;
}

export interface Fleet {
  /** The test's folder: certificates, confdirs, vardirs, ssldir, the files Puppet writes. */
  dir: string;
  /** One serve per backend, in the order given. */
  servers: Server[];
  /**
   * `puppet apply site.pp` as `certname`, with `extra` arguments, sent to every serve or, with `to`, to that one
   * alone (then with a vardir of its own: each such run is that node's first); its exit code and output.
   */
  apply: (certname: string, extra?: string[], to?: Server) => Promise<{ code: number; output: string }>;
  /** `puppet node deactivate certname` through the terminus, sent to every serve. */
  deactivate: (certname: string) => Promise<{ code: number; output: string }>;
  /** /usr/bin/python3 with `script` from test/clients and the environment given; its exit code and output. */
  python: (script: string, pythonPath: string[], env?: Record<string, string>) => Promise<ClientRun>;
  /** Extracts a vendored archive into the test's folder (once); the folder it made. */
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
 * Certificates, Puppet confdirs and one `nfv serve --tls-cert --tls-key --tls-ca` per backend, each on a fresh
 * workspace, all removed or stopped when the test ends, even when it fails.
 */
export async function startFleet(t: Tap.Test, backends: Backend[]): Promise<Fleet> {
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
  const tls = {
    ca: path.join(dir, 'ca.pem'),
    cert: path.join(dir, 'board.example.com.pem'),
    key: path.join(dir, 'board.example.com.key'),
  };
  const [ca, cert, key] = await Promise.all([tls.ca, tls.cert, tls.key].map((f) => readFile(f, 'utf8')));

  const servers: Server[] = [];
  for (const backend of backends) {
    const workspace = path.join(dir, `workspace-${backend.name}`);
    await mkdir(workspace);
    const child = spawnNfv([
      'serve',
      '--port',
      '0',
      '--workspace',
      workspace,
      ...(backend.database ? ['--database', backend.database] : []),
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
    servers.push({
      name: backend.name,
      url,
      port,
      get: (target) =>
        new Promise((resolve, reject) => {
          const req = https.request(
            { host: '127.0.0.1', port, path: target, ca, cert, key, headers: { Accept: 'application/json' } },
            (res) => answerOf(res).then(resolve, reject),
          );
          req.on('error', reject);
          req.end();
        }),
    });
  }

  const manifests = path.join(dir, 'code', 'environments', 'production', 'manifests');
  await mkdir(manifests, { recursive: true });
  await copyFile(path.join(HERE, 'site.pp'), path.join(manifests, 'site.pp'));
  const facterConf = path.join(dir, 'facter.conf');
  await writeFile(facterConf, FACTER_CONF);
  const etc = path.join(dir, 'etc');
  await mkdir(etc);
  // Kept for the next runs of the suite, as .tap/pg-template: the first Puppet run compiling Ruby's files cost 1.5 CPU
  // s more than the others (ruby_load.rb).
  const rubyCache = path.join(ROOT, '.tap', 'ruby-iseq');
  await mkdir(rubyCache, { recursive: true });

  /** A confdir whose terminus sends to `to` (the first of them answers queries); its name names them. */
  const confdir = async (name: string, to: Server[]) => {
    const conf = path.join(dir, `conf-${name}`);
    await mkdir(conf);
    await writeFile(
      path.join(conf, 'puppet.conf'),
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
      path.join(conf, 'puppetdb.conf'),
      [
        '[main]',
        `server_urls = ${to.map((s) => s.url).join(',')}`,
        'soft_write_failure = false',
        // Every command to every serve, and the run fails unless each took it.
        'command_broadcast = true',
        `min_successful_submissions = ${to.length}`,
        '',
      ].join('\n'),
    );
    await writeFile(
      path.join(conf, 'routes.yaml'),
      ['---', 'apply:', '  facts:', '    terminus: facter', '    cache: puppetdb_apply', ''].join('\n'),
    );
    return ['--confdir', conf, '--vardir', path.join(dir, `var-${name}`), '--ssldir', ssldir];
  };
  const everyServer = await confdir('all', servers);
  const oneServer = new Map<Server, string[]>();
  for (const s of servers) oneServer.set(s, await confdir(s.name, [s]));

  const puppet = async (certname: string, args: string[], conf: string[]) => {
    const argv = [...args, ...conf, '--certname', certname, '--color=false'];
    try {
      const { stdout, stderr } = await run(
        PRIVATE_MOUNTS ? 'unshare' : 'puppet',
        PRIVATE_MOUNTS
          ? ['--mount', '--propagation', 'private', 'sh', '-c', PRIVATE_ETC, 'sh', facterConf, etc, 'puppet', ...argv]
          : argv,
        {
          env: {
            ...process.env,
            FACTER_nfv_dir: dir,
            FACTER_nfv_role: ROLES.get(certname) ?? '',
            HOME: dir,
            RUBYOPT: `-r${path.join(HERE, 'ruby_load.rb')}`,
            NFV_RUBY_CACHE: rubyCache,
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

  const vendored = new Map<string, Promise<string>>();
  return {
    dir,
    servers,
    tls,
    apply: (certname, extra = [], to) =>
      puppet(
        certname,
        ['apply', '--detailed-exitcodes', ...extra, path.join(manifests, 'site.pp')],
        to ? oneServer.get(to)! : everyServer,
      ),
    deactivate: (certname) => puppet(certname, ['node', 'deactivate', certname], everyServer),
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
    vendor: (name) => {
      if (!vendored.has(name))
        vendored.set(
          name,
          run('tar', ['-xzf', path.join(VENDOR, `${name}.tar.gz`), '-C', dir]).then(() => path.join(dir, name)),
        );
      return vendored.get(name)!;
    },
  };
}

/**
 * One check a Python client made: printed as a JSON line `{"check": ..., "ok": ..., "got": ...}`, with `"server"`
 * (a backend's name) when one process checked several serves.
 */
export interface Check {
  server?: string;
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
