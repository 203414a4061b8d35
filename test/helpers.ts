/** Shared test helpers: temporary workspaces, a real listener on 127.0.0.1, the CLI binary as a child process. */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import tap from 'tap';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BIN = path.join(ROOT, 'bin', 'nfv');
export const SHARED = path.resolve(ROOT, '..', 'shared');
/** The system's Python for the kernel probes, by its path: a `python3` on PATH may be a shim starting ~30 processes. */
export const PYTHON = '/usr/bin/python3';

export const fixture = (name: string) => readFile(path.join(ROOT, 'test', 'fixtures', name), 'utf8');

/**
 * A seeded generator (mulberry32) of the tests' own, so that a run replays exactly and the tests share no code with
 * what they check: `rnd` in [0, 1), `int(n)` in 0..n-1, `pick` of a list, `chance(p)`.
 */
export function seeded(seed: number) {
  let a = seed >>> 0;
  const rnd = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), a | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(rnd() * n);
  return { rnd, int, pick: <T>(list: readonly T[]): T => list[int(list.length)]!, chance: (p: number) => rnd() < p };
}

/**
 * The temporary folders this test process made, removed as it exits whatever ended it: a test that times out (tap
 * ends the file at its limit) never runs its teardowns, and its folders stayed behind in the temporary directory.
 * A process tap had to SIGKILL (its event loop blocked in a synchronous child, so the timeout never reached it)
 * runs no exit hook either: each folder's name carries the pid that made it, and the first test process after it
 * removes the folders of processes that no longer exist.
 */
const made = new Set<string>();
const removeMade = () => made.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
process.once('exit', removeMade);
tap.on('timeout', removeMade);

/** Whether process `pid` exists (signal 0; EPERM: it does, another user's). */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};
for (const name of readdirSync(tmpdir())) {
  const pid = /^nfv-[a-z]+-(\d+)-[A-Za-z0-9]{6}$/.exec(name)?.[1];
  if (pid && !alive(Number(pid))) rmSync(path.join(tmpdir(), name), { recursive: true, force: true });
}

export const tempDir = async (prefix = 'nfv-test-') => {
  const dir = await mkdtemp(path.join(tmpdir(), `${prefix}${process.pid}-`));
  made.add(dir);
  return dir;
};

export interface Server {
  url: string;
  dir: string;
  close: () => Promise<void>;
}

/** serve on 127.0.0.1 over `dir`, or over a temporary workspace that `close` removes. */
export async function startServer(dir?: string): Promise<Server> {
  // Imported here, not at load: the listener's module graph is some 40 modules, each a round trip through the
  // module hooks thread, which every test process importing these helpers paid, most of them never serving.
  const [{ listen }, { Workspace }] = await Promise.all([
    import('../src/http/server.js'),
    import('../src/store/workspace.js'),
  ]);
  const workspaceDir = dir ?? (await tempDir());
  const { server, url } = await listen(new Workspace(workspaceDir), '127.0.0.1', 0);
  const close = async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if (dir === undefined) await rm(workspaceDir, { recursive: true, force: true });
  };
  return { url, dir: workspaceDir, close };
}

export interface HttpAnswer {
  status: number;
  text: string;
  json: any;
  headers: Headers;
}

/** One real HTTP request; JSON bodies by default. */
export async function request(
  base: string,
  method: string,
  target: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<HttpAnswer> {
  const contentType =
    body === undefined
      ? {}
      : { 'Content-Type': body.trimStart().startsWith('<') ? 'application/xml' : 'application/json' };
  const res = await fetch(base + target, {
    method,
    body,
    headers: { Accept: 'application/json', ...contentType, ...headers },
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The command line that starts bin/nfv from a test. tap's process-info hook re-adds its loader to node children;
 * env -u drops it right before exec. setpriv (util-linux) gives the child a parent-death signal, so that a serve or
 * worker started by a test dies with the test process even when that is killed (tap's timeout) before its teardown.
 */
export const NFV_ARGV: readonly string[] = [
  ...(existsSync('/usr/bin/setpriv') ? ['/usr/bin/setpriv', '--pdeathsig', 'KILL'] : []),
  '/usr/bin/env',
  '-u',
  'NODE_OPTIONS',
  BIN,
];

/** Starts bin/nfv as a user runs it: without the test runner's TypeScript loader hooks, colour off, `env` added. */
export function spawnNfv(args: string[], env: Record<string, string> = {}): ChildProcessWithoutNullStreams {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS' && !k.startsWith('_TAPJS_')),
  );
  return spawn(NFV_ARGV[0]!, [...NFV_ARGV.slice(1), ...args], {
    env: { ...inherited, NO_COLOR: '1', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** The first match of `pattern` in what a child writes to stderr; rejects when the child ends first. */
export function saidOnStderr(child: ChildProcessWithoutNullStreams, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let said = '';
    child.stderr.on('data', (d) => {
      said += d;
      const m = pattern.exec(said);
      if (m) resolve(m);
    });
    child.on('exit', (code) => reject(new Error(`nfv ended (${code}) before saying ${pattern}: ${said}`)));
  });
}

/** Runs bin/nfv with a workspace, feeding `input` on stdin. */
export function cli(
  args: string[],
  options: { workspace?: string; input?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnNfv(args, {
      ...(options.workspace ? { NFV_WORKSPACE: options.workspace } : {}),
      ...options.env,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/**
 * One HTTP request whose target is sent byte for byte (fetch would resolve `%2e%2e` and `..` first), with a body
 * of raw bytes when given.
 */
export function rawRequest(
  base: string,
  method: string,
  target: string,
  body?: Buffer | string,
  headers: Record<string, string> = {},
): Promise<HttpAnswer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: hostname, port, method, path: target, headers: { Accept: 'application/json', ...headers } },
      (res) => answerOf(res).then(resolve, reject),
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A response read whole: status, text, the JSON it parses to (if any), headers. For http and https alike. */
export function answerOf(res: http.IncomingMessage): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('error', reject);
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      const headers = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
      resolve({ status: res.statusCode ?? 0, text, json, headers });
    });
  });
}

/** Every file of a workspace folder with its bytes, to check that a refused request changed nothing. */
export async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (name.endsWith('.lock')) continue;
    out.set(name, (await readFile(path.join(dir, name))).toString('base64'));
  }
  return out;
}

/**
 * A child process with its output; killed at the deadline or when the test `t` ends. The deadline is a net for a
 * hang, as long as tap's per file (.taprc): namespaces cut at 60-120 s beside other files at load 20-24 returned
 * part of their output, and every case after the cut failed.
 */
export function runProcess(
  t: { teardown: (fn: () => unknown) => void },
  command: string,
  args: string[],
  input = '',
  timeoutMs = 1_800_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // With a parent-death signal, as NFV_ARGV: `unshare --fork` ignores SIGTERM, and a test that tap timed out
    // (its teardowns never run) left its namespaces running their loops for minutes.
    const pdeath = existsSync('/usr/bin/setpriv') ? ['/usr/bin/setpriv', '--pdeathsig', 'KILL'] : [];
    const child = spawn(pdeath[0] ?? command, [...pdeath.slice(1), ...(pdeath.length ? [command] : []), ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const stop = () => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL');
    const timer = setTimeout(stop, timeoutMs);
    t.teardown(stop);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.on('error', () => {}); // a child that exits early closes its input
    child.stdin.end(input);
  });
}

/** Waits until `check` holds, looking every 20 ms, at most `seconds`; whether it held. */
export async function until(check: () => boolean | Promise<boolean>, seconds = 10): Promise<boolean> {
  const deadline = performance.now() + seconds * 1000;
  while (!(await check())) {
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** A fresh temporary folder removed when the test ends. */
export async function scratch(t: { teardown: (fn: () => unknown) => void }, prefix = 'nfv-test-'): Promise<string> {
  const dir = await tempDir(prefix);
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs openssl in `dir`; a failure (or no openssl at all) throws with its words. */
export function openssl(dir: string, ...args: string[]): void {
  const run = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (run.error) throw new Error(`openssl could not run (Debian: apt-get install openssl): ${run.error.message}`);
  if (run.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${run.stderr}`);
}

/** A new P-256 key without a passphrase, for the throwaway certificates of TLS tests. */
const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

/** A throwaway CA in `dir`: its certificate `<name>.pem` and key `<name>.key`, valid two days. */
export function authority(dir: string, name: string): void {
  openssl(
    dir,
    'req',
    '-x509',
    ...EC_KEY,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
  );
}

/** A certificate `<name>.pem` with key `<name>.key` in `dir`, signed by CA `ca`, with the extensions given. */
export async function issue(
  dir: string,
  name: string,
  ca: string,
  subject: string,
  extensions: string[],
): Promise<void> {
  openssl(dir, 'req', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
  await writeFile(path.join(dir, `${name}.ext`), `${extensions.join('\n')}\n`);
  const serial = String(Math.floor(Math.random() * 1e9) + 2);
  openssl(
    dir,
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-set_serial',
    serial,
    '-days',
    '2',
    '-out',
    `${name}.pem`,
    '-extfile',
    `${name}.ext`,
  );
}
