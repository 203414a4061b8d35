/** nfv serve as a process: concurrent simulations solved in worker threads, and a clean stop. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ROOT, cli, saidOnStderr, scratch, spawnNfv } from '../helpers.js';

const ws = await scratch(t);
const server = spawnNfv(['serve', '--port', '0', '--workspace', ws]);
const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
// Stopped when the file ends, whether or not its tests passed (the last test stops it first when all goes well).
t.teardown(() => void server.kill('SIGKILL'));
const url = (await saidOnStderr(server, /^listening on (http:\/\/127\.0\.0\.1:\d+)$/m))[1]!;

t.test('three simulations at once: each answered as the CLI answers it', async (t) => {
  const files = ['office-nat.xml', 'web-farm.xml', 'office-nat.xml'].map((f) => path.join(ROOT, 'samples', f));
  const answers = await Promise.all(
    files.map(async (f) => {
      const res = await fetch(`${url}/adp/simulations?store=false`, {
        method: 'POST',
        body: await readFile(f, 'utf8'),
        headers: { 'Content-Type': 'application/xml', Accept: 'application/json' },
      });
      return { status: res.status, verdict: res.headers.get('x-nfv-verdict'), nfv: (await res.json()).content[0] };
    }),
  );
  t.same(
    answers.map((a) => [a.status, a.verdict]),
    [
      [200, 'SAT'],
      [200, 'SAT'],
      [200, 'SAT'],
    ],
  );
  t.same(answers[0]!.nfv, answers[2]!.nfv, 'the same input gives the same answer');
  const local = await cli(['simulate', files[1]!, '--format', 'json'], { workspace: ws });
  t.same(answers[1]!.nfv, JSON.parse(local.stdout), 'a worker solves exactly as the CLI does');
});

t.test('a solver error in a worker is the same 400', async (t) => {
  const bad = (await readFile(path.join(ROOT, 'samples', 'office-nat.xml'), 'utf8')).replace(
    'dst="198.51.100.80" lv4proto',
    'dst="10.9.9.9" lv4proto',
  );
  const res = await fetch(`${url}/adp/simulations`, {
    method: 'POST',
    body: bad,
    headers: { 'Content-Type': 'application/xml', Accept: 'application/json' },
  });
  t.equal(res.status, 400);
  t.match((await res.json()).error.message, /dst "10\.9\.9\.9" is not a node of graph 0/);
});

t.test('SIGTERM stops the server and its solver threads', async (t) => {
  server.kill('SIGTERM');
  // The net's timer is cleared once the server has exited: left running, it kept this process alive for its 60 s.
  let net: NodeJS.Timeout | undefined;
  const code = await Promise.race([exited, new Promise((r) => (net = setTimeout(() => r('timeout'), 60_000)))]);
  clearTimeout(net);
  t.equal(code, 0);
});
