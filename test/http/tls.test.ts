/**
 * nfv serve over TLS (--tls-cert, --tls-key, --tls-ca), as a process on 127.0.0.1: a throwaway CA, server and client
 * certificates made with openssl; trusted and untrusted clients, client certificates, the bearer token, the body and
 * header limits over TLS, the same listener settings as plain HTTP, and every bad file refused before listening.
 */
import { spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import t from 'tap';
import { LISTENER_SETTINGS, createServer } from '../../src/http/server.js';
import { MAX_DOCUMENT_BYTES, MAX_HEADER_BYTES, MAX_TLS_FILE_BYTES } from '../../src/model/limits.js';
import { PUPPETDB_VERSION } from '../../src/ops/inventory.js';
import { Workspace } from '../../src/store/workspace.js';
import { nfvInProcess } from '../cli/in-process.js';
import {
  answerOf,
  authority,
  issue,
  openssl,
  saidOnStderr,
  scratch,
  spawnNfv,
  until,
  type HttpAnswer,
} from '../helpers.js';

const dir = await scratch(t, 'nfv-tls-');

authority(dir, 'ca');
authority(dir, 'rogue-ca');
await issue(dir, 'server', 'ca', '/CN=127.0.0.1', [
  'subjectAltName=IP:127.0.0.1,DNS:localhost',
  'extendedKeyUsage=serverAuth',
  'basicConstraints=CA:FALSE',
]);
await issue(dir, 'agent', 'ca', '/CN=agent.example', ['extendedKeyUsage=clientAuth', 'basicConstraints=CA:FALSE']);
await issue(dir, 'rogue', 'rogue-ca', '/CN=rogue.example', [
  'extendedKeyUsage=clientAuth',
  'basicConstraints=CA:FALSE',
]);

const file = (name: string) => path.join(dir, name);
const pem = async (name: string) => readFile(file(name), 'utf8');
const CA = await pem('ca.pem');
const AGENT = { cert: await pem('agent.pem'), key: await pem('agent.key') };
const ROGUE = { cert: await pem('rogue.pem'), key: await pem('rogue.key') };
const SERVER = ['--tls-cert', file('server.pem'), '--tls-key', file('server.key')];

interface Running {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stderr: () => string;
}

/** `nfv serve --port 0 ARGS` on a fresh workspace; the URL it says; stopped (and awaited) when the test ends. */
async function serve(t: Tap.Test, args: string[], env: Record<string, string> = {}): Promise<Running> {
  const child = spawnNfv(['serve', '--port', '0', '--workspace', await scratch(t), ...args], env);
  let said = '';
  child.stderr.on('data', (d) => (said += d));
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  t.teardown(async () => {
    child.kill('SIGTERM');
    await exited;
  });
  const url = (await saidOnStderr(child, /^listening on (\S+)$/m))[1]!;
  return { child, url, stderr: () => said };
}

interface Client {
  /** The name the server's certificate must carry (default: the URL's host). */
  servername?: string;
  ca?: string;
  cert?: string;
  key?: string;
  method?: string;
  body?: Buffer | string;
  headers?: Record<string, string>;
}

/** One https request with a client of its own (no agent: a fresh TLS handshake each time). */
function tls(url: string, target: string, client: Client = {}): Promise<HttpAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: hostname,
        port,
        path: target,
        method: client.method ?? 'GET',
        headers: { Accept: 'application/json', ...client.headers },
        servername: client.servername,
        ca: client.ca,
        cert: client.cert,
        key: client.key,
        agent: false,
      },
      (res) => answerOf(res).then(resolve, reject),
    );
    req.on('error', reject);
    req.end(client.body);
  });
}

/** Why a request failed (its error code or message), or `answered STATUS` when it did not. */
const failure = (p: Promise<HttpAnswer>): Promise<string> =>
  p.then(
    (a) => `answered ${a.status}`,
    (e: NodeJS.ErrnoException) => e.code ?? e.message,
  );

t.test(
  'https with the CA trusted: the https URL said, answers as over http; an untrusted client refuses',
  async (t) => {
    const s = await serve(t, SERVER);
    t.match(s.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const version = await tls(s.url, '/pdb/meta/v1/version', { ca: CA });
    t.equal(version.status, 200);
    t.same(version.json, { version: PUPPETDB_VERSION });
    const graphs = await tls(s.url, '/adp/graphs', { ca: CA });
    t.equal(graphs.status, 404, 'the operation table, as over http (an empty workspace)');
    const status = await tls(s.url, '/status/v1/services/puppetdb-status', { ca: CA });
    t.match(status, { status: 200, json: { state: 'running', service_name: 'puppetdb-status' } });
    t.equal(
      await failure(tls(s.url, '/pdb/meta/v1/version')),
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'a client that does not trust the CA refuses the certificate',
    );
    const byName = await tls(s.url, '/pdb/meta/v1/version', { ca: CA, servername: 'localhost' });
    t.equal(byName.status, 200, 'the certificate names localhost too');
    t.match(
      await failure(tls(s.url, '/pdb/meta/v1/version', { ca: CA, servername: 'nfv.example' })),
      /^ERR_TLS_CERT_ALTNAME_INVALID$/,
      'and no other name',
    );
  },
);

t.test('curl, a real client: --cacert, and --cert with --tls-ca', async (t) => {
  if (spawnSync('curl', ['--version']).error) return t.skip('curl is not installed (Node https covers the same)');
  const curl = (...args: string[]) => spawnSync('curl', ['-sS', ...args], { encoding: 'utf8', timeout: 120_000 });
  const s = await serve(t, SERVER);
  const ok = curl('--cacert', file('ca.pem'), `${s.url}/pdb/meta/v1/version`);
  t.equal(ok.status, 0, ok.stderr);
  t.same(JSON.parse(ok.stdout), { version: PUPPETDB_VERSION });
  const untrusted = curl(`${s.url}/pdb/meta/v1/version`);
  t.equal(untrusted.status, 60, 'curl: the peer certificate cannot be authenticated with known CA certificates');

  const mutual = await serve(t, [...SERVER, '--tls-ca', file('ca.pem')]);
  const agent = curl('--cacert', file('ca.pem'), '--cert', file('agent.pem'), '--key', file('agent.key'), mutual.url);
  t.equal(agent.status, 0, agent.stderr);
  t.match(agent.stdout, /^nfv serve: \d+ operations$/m, "the agent's certificate lets it in: the answer of GET /");
  const anonymous = curl('--cacert', file('ca.pem'), `${mutual.url}/pdb/meta/v1/version`);
  t.not(anonymous.status, 0, 'without a certificate curl fails');
  t.equal(anonymous.stdout, '', 'and gets no answer');
});

t.test('plain http to the https port fails, and the access log says why', async (t) => {
  const s = await serve(t, [...SERVER, '--log']);
  const { port } = new URL(s.url);
  const plain = await new Promise<string>((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/pdb/meta/v1/version', agent: false }, (res) =>
      resolve(`answered ${res.statusCode}`),
    );
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
  t.match(plain, /^(ECONNRESET|EPIPE|HPE_INVALID_CONSTANT)$/, `refused: ${plain}`);
  await until(() => /TLS handshake failed/.test(s.stderr()));
  t.match(
    s.stderr(),
    /^\d{4}-\d\d-\d\dT[\d:.]+Z 127\.0\.0\.1 TLS handshake failed: http request \(ERR_SSL_HTTP_REQUEST\)$/m,
  );
  t.equal((await tls(s.url, '/pdb/meta/v1/version', { ca: CA })).status, 200, 'https still answers');
});

t.test('--tls-ca: a client certificate the CA signed is required', async (t) => {
  const s = await serve(t, [...SERVER, '--tls-ca', file('ca.pem'), '--log']);
  const signed = await tls(s.url, '/pdb/meta/v1/version', { ca: CA, ...AGENT });
  t.equal(signed.status, 200, 'the agent certificate signed by the CA');
  t.same(signed.json, { version: PUPPETDB_VERSION });
  t.match(
    await failure(tls(s.url, '/pdb/meta/v1/version', { ca: CA })),
    /^(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED|ECONNRESET|EPIPE)$/,
    'no client certificate: refused',
  );
  t.match(
    await failure(tls(s.url, '/pdb/meta/v1/version', { ca: CA, ...ROGUE })),
    /^(ECONNRESET|EPIPE)$/,
    'a certificate of another CA: refused',
  );
  await until(() => (s.stderr().match(/TLS handshake failed/g) ?? []).length >= 2);
  t.match(s.stderr(), /TLS handshake failed: peer did not return a certificate/, 'the log says why: none');
  t.match(
    s.stderr(),
    /TLS handshake failed: client certificate refused \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)/,
    'another CA',
  );
  t.equal((await tls(s.url, '/adp/graphs', { ca: CA, ...AGENT })).status, 404, 'still serving the agent');
});

t.test(
  '--tls-ca counts as authentication off loopback; without it a token or --insecure is still needed',
  async (t) => {
    const refused = spawnNfv(['serve', '--port', '0', '--host', '0.0.0.0', ...SERVER, '--workspace', await scratch(t)]);
    const code = await new Promise<number | null>((resolve) => refused.on('close', resolve));
    t.equal(code, 2);
    // The certificate followed by its chain, as a CA hands it out, works as the certificate alone does.
    await writeFile(file('chain.pem'), (await pem('server.pem')) + CA);
    const chain = ['--tls-cert', file('chain.pem'), '--tls-key', file('server.key')];
    const s = await serve(t, ['--host', '0.0.0.0', ...chain, '--tls-ca', file('ca.pem')]);
    t.match(s.url, /^https:\/\/0\.0\.0\.0:\d+$/);
    const url = s.url.replace('0.0.0.0', '127.0.0.1');
    t.equal((await tls(url, '/pdb/meta/v1/version', { ca: CA, ...AGENT })).status, 200);
    t.notMatch(s.stderr(), /warning/, 'no warning: every client is authenticated by its certificate');
  },
);

t.test('the bearer token is required over TLS when set', async (t) => {
  const s = await serve(t, SERVER, { NFV_TOKEN: 's3cret' });
  const without = await tls(s.url, '/pdb/meta/v1/version', { ca: CA });
  t.equal(without.status, 401);
  const wrong = await tls(s.url, '/pdb/meta/v1/version', { ca: CA, headers: { Authorization: 'Bearer nope' } });
  t.equal(wrong.status, 401);
  const right = await tls(s.url, '/pdb/meta/v1/version', { ca: CA, headers: { Authorization: 'Bearer s3cret' } });
  t.equal(right.status, 200);
  t.same(right.json, { version: PUPPETDB_VERSION });
});

t.test('the body and header limits answer 413 and 431 over TLS as over http', async (t) => {
  const s = await serve(t, SERVER);
  const big = await tls(s.url, '/v4/commands', {
    ca: CA,
    method: 'POST',
    body: Buffer.alloc(MAX_DOCUMENT_BYTES + 1, 0x20),
    headers: { 'Content-Type': 'application/json' },
  });
  t.equal(big.status, 413);
  t.match(big.text, /request body larger than 33554432 bytes/);
  const fits = await tls(s.url, '/v4/commands', {
    ca: CA,
    method: 'POST',
    body: '{}',
    headers: { 'Content-Type': 'application/json' },
  });
  t.equal(fits.status, 400, 'a small body is read and checked');
  const header = await tls(s.url, '/pdb/meta/v1/version', {
    ca: CA,
    headers: { 'X-Long': 'a'.repeat(MAX_HEADER_BYTES) },
  });
  t.equal(header.status, 431);
});

t.test('the TLS listener gets the same settings as the plain one', async (t) => {
  const ws = new Workspace(await scratch(t));
  const plain = createServer(ws);
  const secure = createServer(ws, { tls: { cert: await pem('server.pem'), key: await pem('server.key'), ca: CA } });
  t.ok(secure instanceof https.Server, 'https with --tls-*');
  t.notOk(plain instanceof https.Server, 'http without');
  for (const [name, value] of Object.entries(LISTENER_SETTINGS)) {
    t.equal((plain as any)[name], value, `plain ${name}`);
    t.equal((secure as any)[name], value, `TLS ${name}`);
  }
});

/** `nfv serve ARGS` that must exit 2 before listening; killed if it listens (then the test fails). */
async function refusedStart(t: Tap.Test, args: string[]): Promise<string> {
  const child = spawnNfv(['serve', '--port', '0', '--workspace', await scratch(t), ...args]);
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
    if (/listening on/.test(stderr)) child.kill('SIGTERM');
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  t.equal(code, 2, `exit 2: ${args.join(' ')}`);
  t.notMatch(stderr, /listening on/, 'nothing listened');
  return stderr;
}

/**
 * The same refusal by the CLI's own run in this process (test/cli/in-process.ts). Should it listen instead, the
 * SIGTERM listener it added is called after a net of 120 s, which stops it, and the test fails.
 */
async function refusedInProcess(t: Tap.Test, args: string[]): Promise<string> {
  const before = new Set(process.listeners('SIGTERM'));
  const run = nfvInProcess(['serve', '--port', '0', '--workspace', await scratch(t), ...args]);
  let timer: NodeJS.Timeout | undefined;
  const net = new Promise<'listening'>((resolve) => (timer = setTimeout(() => resolve('listening'), 120_000)));
  const first = await Promise.race([run, net]);
  clearTimeout(timer);
  if (first === 'listening')
    for (const stop of process.listeners('SIGTERM')) if (!before.has(stop)) (stop as () => void)();
  const { code, stderr } = await run;
  t.equal(code, 2, `exit 2: ${args.join(' ')}`);
  t.notMatch(stderr, /listening on/, 'nothing listened');
  return stderr;
}

t.test('bad TLS files and flags: exit 2 naming the flag and the file, before listening', async (t) => {
  await writeFile(file('hello.txt'), 'hello\n');
  await writeFile(file('empty.pem'), '');
  await writeFile(file('huge.pem'), Buffer.alloc(MAX_TLS_FILE_BYTES + 1, 0x41));
  await mkdir(file('folder'), { recursive: true });
  openssl(dir, 'x509', '-in', 'server.pem', '-outform', 'der', '-out', 'server.der');
  openssl(dir, 'pkey', '-in', 'server.key', '-aes256', '-passout', 'pass:secret', '-out', 'encrypted.key');
  const cert = file('server.pem');
  const key = file('server.key');
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const cases: [string[], RegExp][] = [
    [['--tls-cert', file('none.pem'), '--tls-key', key], /--tls-cert \S+none\.pem: no such file or folder/],
    [['--tls-cert', cert, '--tls-key', file('none.key')], /--tls-key \S+none\.key: no such file or folder/],
    [['--tls-cert', file('folder'), '--tls-key', key], /--tls-cert \S+folder: it is a folder/],
    [['--tls-cert', file('hello.txt'), '--tls-key', key], /--tls-cert \S+hello\.txt: no PEM certificate .*DER/],
    [['--tls-cert', file('empty.pem'), '--tls-key', key], /--tls-cert \S+empty\.pem: no PEM certificate/],
    [['--tls-cert', file('huge.pem'), '--tls-key', key], /--tls-cert \S+huge\.pem: larger than 1048576 bytes/],
    [['--tls-cert', file('server.der'), '--tls-key', key], /--tls-cert \S+server\.der: no PEM certificate/],
    [['--tls-cert', key, '--tls-key', cert], /--tls-cert \S+server\.key: no PEM certificate .*holds a private key/],
    [['--tls-cert', cert, '--tls-key', file('hello.txt')], /--tls-key \S+hello\.txt: no PEM private key/],
    [['--tls-cert', cert, '--tls-key', file('encrypted.key')], /--tls-key \S+encrypted\.key: the key is encrypted/],
    [
      ['--tls-cert', cert, '--tls-key', file('agent.key')],
      new RegExp(`--tls-key \\S+agent\\.key: not the private key of the certificate in --tls-cert ${esc(cert)}`),
    ],
    [[...SERVER, '--tls-ca', file('none.pem')], /--tls-ca \S+none\.pem: no such file or folder/],
    [[...SERVER, '--tls-ca', file('hello.txt')], /--tls-ca \S+hello\.txt: no PEM certificate/],
    [[...SERVER, '--tls-ca', key], /--tls-ca \S+server\.key: no PEM certificate .*holds a private key/],
    [['--tls-cert', cert], /--tls-cert needs --tls-key/],
    [['--tls-key', key], /--tls-key needs --tls-cert/],
    [['--tls-ca', file('ca.pem')], /--tls-ca needs --tls-cert and --tls-key/],
  ];
  if (process.getuid?.() !== 0) {
    await writeFile(file('secret.key'), await pem('server.key'), { mode: 0o000 });
    cases.push([['--tls-cert', cert, '--tls-key', file('secret.key')], /--tls-key \S+secret\.key: permission denied/]);
  }
  // The first through a real bin/nfv process, the others in this process: the same run, the same checks.
  for (const [k, [args, message]] of cases.entries()) {
    const stderr = await (k === 0 ? refusedStart : refusedInProcess)(t, args);
    t.match(stderr, new RegExp(`^nfv: ${message.source}`, 'm'), args.join(' '));
    t.equal(stderr.trim().split('\n').length, 1, 'one line');
  }
});
