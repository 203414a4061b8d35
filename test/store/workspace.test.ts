/** The workspace store on real files: atomic changes, several processes at once, and a process killed mid-write. */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { Workspace, resolveWorkspaceDir } from '../../src/store/workspace.js';
import { ADP_AREA } from '../../src/store/network.js';
import { BIN, ROOT, scratch } from '../helpers.js';

interface Counter {
  n: number;
  items: number[];
}
const AREA = {
  name: 'counter',
  initial: (): Counter => ({ n: 0, items: [] }),
  decode: (raw: unknown) => raw as Counter,
};
const WORKER = path.join(ROOT, 'test', 'fixtures', 'create-worker.mjs');

function runWorker(dir: string, count: number, kind = 'substrates') {
  return spawn(process.execPath, [WORKER, dir, String(count), kind], { stdio: ['ignore', 'ignore', 'pipe'] });
}
/** The substrate ids a workspace file holds now ([] while it does not exist or is being replaced). */
const storedIds = (file: string): number[] => {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { substrates: { id: number }[] }).substrates.map((s) => s.id);
  } catch {
    return [];
  }
};
const exited = (child: ReturnType<typeof spawn>) =>
  new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));

t.test('a change is written to a real file and read back', async (t) => {
  const dir = await scratch(t);
  const ws = new Workspace(dir);
  t.same(await ws.read(AREA), { n: 0, items: [] }, 'an area never written reads as its initial contents');
  t.same(await readdir(dir), [], 'reading creates nothing');
  await ws.mutate(AREA, (d) => void d.items.push(++d.n));
  t.same(JSON.parse(await readFile(path.join(dir, 'counter.json'), 'utf8')), { n: 1, items: [1] });
  t.same((await ws.read(AREA)).items, [1]);
});

t.test('a change that throws leaves the file as it was', async (t) => {
  const dir = await scratch(t);
  const ws = new Workspace(dir);
  await ws.mutate(AREA, (d) => void (d.n = 5));
  const before = await readFile(path.join(dir, 'counter.json'), 'utf8');
  await t.rejects(
    ws.mutate(AREA, (d) => {
      d.n = 99;
      throw new Error('half-way');
    }),
    /half-way/,
  );
  t.equal(await readFile(path.join(dir, 'counter.json'), 'utf8'), before);
  t.equal((await ws.read(AREA)).n, 5);
});

t.test('concurrent changes in one process are serialised', async (t) => {
  const ws = new Workspace(await scratch(t));
  await Promise.all(Array.from({ length: 50 }, () => ws.mutate(AREA, (d) => void d.items.push(++d.n))));
  const data = await ws.read(AREA);
  t.equal(data.n, 50);
  t.same(
    data.items,
    Array.from({ length: 50 }, (_, k) => k + 1),
  );
});

t.test('4 processes, 200 creates each: all 800 ids present', async (t) => {
  const dir = await scratch(t);
  const workers = Array.from({ length: 4 }, () => runWorker(dir, 200));
  const codes = await Promise.all(workers.map(exited));
  t.same(codes, [0, 0, 0, 0], 'every worker succeeded');
  const data = JSON.parse(await readFile(path.join(dir, 'adp.json'), 'utf8'));
  const ids = data.substrates.map((s: { id: number }) => s.id).sort((a: number, b: number) => a - b);
  t.equal(ids.length, 800);
  t.same(
    ids,
    Array.from({ length: 800 }, (_, k) => k + 1),
    'ids 1..800, none lost, none repeated',
  );
});

t.test('a process killed with SIGKILL while writing leaves a loadable workspace', async (t) => {
  const dir = await scratch(t);
  const ws = new Workspace(dir);
  const graphsNow = async () => {
    const text = await readFile(path.join(dir, 'adp.json'), 'utf8').catch(() => '{"graphs":[]}');
    return (JSON.parse(text) as { graphs: unknown[] }).graphs.length;
  };
  let before = 0;
  for (let round = 0; round < 4; round++) {
    const child = runWorker(dir, 100_000, 'graphs');
    // Kill once this writer has written something (it may first wait for a lock its killed predecessor left).
    const deadline = Date.now() + 120_000;
    while ((await graphsNow()) <= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 30 * round));
    child.kill('SIGKILL');
    await exited(child);
    const count = await graphsNow();
    t.ok(count > before, `round ${round}: the file parses and grew (${count} graphs)`);
    before = count;
  }
  // The killed writer's lock goes stale and its temporary files are swept: the next change succeeds.
  const AdpLike = {
    name: 'adp',
    initial: () => ({ graphs: [] as unknown[] }),
    decode: (raw: unknown) => raw as { graphs: unknown[] },
  };
  t.equal(await ws.mutate(AdpLike, (d) => d.graphs.length), before, 'the next change sees every completed write');
  t.same(
    (await readdir(dir)).filter((f) => f.endsWith('.tmp')),
    [],
    'no temporary files left',
  );
});

t.test('a corrupt file is reported, not overwritten', async (t) => {
  const dir = await scratch(t);
  await writeFile(path.join(dir, 'counter.json'), '{"n": 1,');
  await t.rejects(
    new Workspace(dir).mutate(AREA, (d) => void d.n++),
    /not valid JSON/,
  );
  t.equal(await readFile(path.join(dir, 'counter.json'), 'utf8'), '{"n": 1,');
});

t.test('workspace folder resolution', async (t) => {
  const saved = process.env.NFV_WORKSPACE;
  t.teardown(() => {
    if (saved === undefined) delete process.env.NFV_WORKSPACE;
    else process.env.NFV_WORKSPACE = saved;
  });
  t.equal(resolveWorkspaceDir('/x/y'), '/x/y');
  process.env.NFV_WORKSPACE = '/from/env';
  t.equal(resolveWorkspaceDir(), '/from/env');
  delete process.env.NFV_WORKSPACE;
  t.equal(resolveWorkspaceDir(), path.resolve('workspaces/default'));
});

t.test('a lock taken over while this process stalled fails the change, never the process', async (t) => {
  const dir = await scratch(t);
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const ws = new Workspace(dir);
  let childDone: Promise<number | null> | undefined;
  const change = ws.mutate(ADP_AREA, (data) => {
    // Another writer starts while this one holds the lock; this one then stalls past the stale time.
    childDone = exited(
      spawn(
        '/usr/bin/env',
        ['-u', 'NODE_OPTIONS', BIN, 'substrates', 'create', '--lock-timeout', '20', '--workspace', dir],
        { stdio: 'ignore' },
      ),
    );
    // Stalled (the event loop blocked, asleep rather than spinning) until the other writer has stored its change,
    // however long its start takes on a loaded machine; the limit is only a safety net.
    const stored = () => storedIds(path.join(dir, 'adp.json')).includes(1);
    const until = Date.now() + 120_000;
    while (!stored() && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    data.substrates.push({ id: 99, hosts: [], connections: [] });
  });
  await t.rejects(change, {
    status: 503,
    message: /another process took the lock of the workspace .* nothing was written/,
  });
  t.equal(await childDone, 0, 'the other writer went ahead');
  const data = JSON.parse(await readFile(path.join(dir, 'adp.json'), 'utf8'));
  t.same(
    data.substrates.map((s: { id: number }) => s.id),
    [1],
    "only the other writer's change is stored",
  );
  t.same(
    (await readdir(dir)).filter((f) => f.endsWith('.tmp')),
    [],
    'the failed write left no temporary file',
  );
  t.equal(await ws.mutate(ADP_AREA, (d) => d.substrates.length), 1, 'this process goes on writing');
});
