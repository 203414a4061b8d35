/**
 * kill -9 at random moments of every kind of writer: CLI creates, simulate --store, bulk deletes, inventory
 * ingest, and serve in the middle of writes. After each kill the workspace loads and every operation is whole or
 * absent. NFV_KILLS sets how many kills (60 by default, as CI runs it). Then the inventory journal's end damaged by
 * hand: reads and the next write judge it alike, and nothing answered as applied is lost. The kills are of real
 * bin/nfv processes; the journal's readers and writers run in this process (test/cli/in-process.ts: the same
 * command, a fresh workspace and store each time, as a new process has), serve as a process.
 */
import { spawn } from 'node:child_process';
import { appendFile, readFile, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { JournalInventoryStore } from '../../src/inventory/store.js';
import { ADP_AREA } from '../../src/store/network.js';
import { FWD_AREA } from '../../src/store/firewalls.js';
import { Workspace } from '../../src/store/workspace.js';
import { nfvInProcess } from '../cli/in-process.js';
import { BIN, ROOT, saidOnStderr, scratch, spawnNfv } from '../helpers.js';
import { catalog, changed, report, web } from '../inventory/data.js';

const KILLS = Number(process.env.NFV_KILLS ?? 60);
const NODES = 2000;
const SAMPLE_NODES = 9;
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS' && !k.startsWith('_TAPJS_'))),
  NFV_LOCK_TIMEOUT: '15',
};

let seed = 7;
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo));

function nfv(args: string[], workspace: string) {
  const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', BIN, ...args, '--workspace', workspace], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stderr })),
  );
  return { child, exited };
}

/** Runs a command and kills it with SIGKILL after `ms` (or lets it finish first). */
async function killedAfter(args: string[], workspace: string, ms: number) {
  const run = nfv(args, workspace);
  const timer = setTimeout(() => run.child.kill('SIGKILL'), ms);
  const result = await run.exited;
  clearTimeout(timer);
  return result;
}

t.test(
  `kill -9 at random moments, ${KILLS} times: the workspace loads and each operation is whole or absent`,
  async (t) => {
    const ws = await scratch(t);
    const dir = await scratch(t);
    const graphFile = path.join(dir, 'graph.json');
    const nodes = Array.from({ length: NODES }, (_, k) => ({
      name: `10.${k >> 16}.${(k >> 8) & 255}.${k & 255}`,
      functionalType: 'WEBCLIENT',
    }));
    await writeFile(graphFile, JSON.stringify({ graph: [{ node: nodes }] }));
    const sample = path.join(ROOT, 'samples', 'office-nat.xml');
    const workspace = new Workspace(ws);
    let killed = 0;
    let completed = 0;
    const tally = (r: { signal: NodeJS.Signals | null; code: number | null; stderr: string }, what: string) => {
      if (r.signal === 'SIGKILL') killed++;
      else if (r.code === 0) completed++;
      else t.fail(`${what} failed on its own: ${r.code} ${r.stderr.trim()}`);
    };

    /** Loads every area through its decoder (as any command would) and checks that each change is whole. */
    const check = async (label: string, catalogSizes: number[]) => {
      const adp = await workspace.read(ADP_AREA);
      await workspace.read(FWD_AREA);
      // A fresh store, as a new process would read the journal.
      const inventory = await new JournalInventoryStore(workspace).data();
      // Whole graphs only: from graphs create, from serve's posts, or the sample's graph stored by simulate --store.
      const broken = adp.graphs.filter((g) => ![NODES, 3, SAMPLE_NODES].includes(g.node.length));
      if (broken.length) t.fail(`${label}: a graph with ${broken[0]!.node.length} nodes`);
      for (const s of adp.simulations) {
        if (!s.result || !s.report || !s.source.gids.every((gid) => adp.graphs.some((g) => g.id === gid)))
          t.fail(`${label}: simulation ${s.id} is partial`);
      }
      const resources = inventory.catalogs['k.example']?.resources.length ?? 0;
      if (!catalogSizes.includes(resources))
        t.fail(`${label}: catalog of ${resources} resources, expected one of ${catalogSizes}`);
      for (const [certname, c] of Object.entries(inventory.catalogs)) {
        if (![100, 400].includes(c.resources.length))
          t.fail(`${label}: the catalog of ${certname} has ${c.resources.length} resources`);
      }
      return adp;
    };

    const catalogs = [100, 400].map((n, k) => ({ n, k }));
    let catalogSize = 0;
    let at = Date.parse('2025-01-01T00:00:00Z');
    const kinds = ['create', 'simulate', 'delete-all', 'ingest', 'serve'] as const;
    for (let round = 0; killed < KILLS && round < KILLS * 3; round++) {
      const kind = kinds[round % kinds.length]!;
      const label = `round ${round} (${kind})`;
      if (kind === 'create') {
        tally(await killedAfter(['graphs', 'create', '-f', graphFile], ws, between(150, 600)), label);
        await check(label, [catalogSize]);
      } else if (kind === 'simulate') {
        tally(await killedAfter(['simulate', '--store', sample], ws, between(300, 1500)), label);
        await check(label, [catalogSize]);
      } else if (kind === 'delete-all') {
        const before = (await workspace.read(ADP_AREA)).simulations.length;
        const r = await killedAfter(['simulations', 'delete-all', '--yes'], ws, between(100, 400));
        const after = (await check(label, [catalogSize])).simulations.length;
        if (after !== before && after !== 0) t.fail(`${label}: ${after} of ${before} simulations left`);
        tally(r, label);
      } else if (kind === 'ingest') {
        const next = catalogs[round % 2]!;
        const file = path.join(dir, `catalog-${round}.json`);
        at += 60_000;
        const resources = Array.from({ length: next.n }, (_, k) => ({ ...web, title: `svc-${k}` }));
        await writeFile(file, JSON.stringify(catalog('k.example', new Date(at).toISOString(), resources)));
        // Every other round, a batch: the same catalog plus catalogs of other nodes, as JSON Lines.
        const batch = path.join(dir, `batch-${round}.jsonl`);
        const others = Array.from({ length: 8 }, (_, k) => ({
          command: 'replace catalog',
          version: 9,
          payload: catalog(`b${k}.example`, new Date(at).toISOString(), resources),
        }));
        await writeFile(
          batch,
          [
            {
              command: 'replace catalog',
              version: 9,
              payload: catalog('k.example', new Date(at).toISOString(), resources),
            },
            ...others,
          ]
            .map((c) => JSON.stringify(c))
            .join('\n'),
        );
        const args = round % 2 ? ['inventory', 'ingest', 'commands', batch] : ['inventory', 'ingest', 'catalog', file];
        const r = await killedAfter(args, ws, between(150, 500));
        await check(label, [catalogSize, next.n]);
        catalogSize = (await new JournalInventoryStore(workspace).data()).catalogs['k.example']?.resources.length ?? 0;
        tally(r, label);
      } else {
        const server = nfv(['serve', '--port', '0'], ws);
        const url = await new Promise<string>((resolve) => {
          let err = '';
          server.child.stderr!.on('data', (d) => {
            err += d;
            const m = /listening on (\S+)/.exec(err);
            if (m) resolve(m[1]!);
          });
        });
        const body = JSON.stringify({ graph: [{ node: nodes.slice(0, 3) }] });
        const posts = Array.from({ length: 6 }, () =>
          fetch(`${url}/adp/graphs`, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } }).then(
            (r) => r.status,
            () => 'cut',
          ),
        );
        await new Promise((r) => setTimeout(r, between(5, 60)));
        server.child.kill('SIGKILL');
        await Promise.all(posts);
        tally(await server.exited, label);
        await check(label, [catalogSize]);
      }
    }
    t.ok(killed >= KILLS, `${killed} writers killed mid-run (${completed} finished before their kill)`);
    const final = nfv(['graphs', 'create', '-f', graphFile], ws);
    t.equal(
      (await final.exited).code,
      0,
      'a writer after all the kills succeeds (stale locks taken over, temporary files swept)',
    );
  },
);

/** Commands for `nfv inventory ingest commands`: per node a catalog and a report (the last line a report). */
function inventoryLines(first: number, count: number, catalogs = true): string {
  const lines = [];
  for (let k = first; k < first + count; k++) {
    const at = new Date(Date.parse('2025-01-01T00:00:00Z') + k * 60_000).toISOString();
    if (catalogs) lines.push({ command: 'replace catalog', version: 9, payload: catalog(`n${k}.example`, at, [web]) });
    lines.push({ command: 'store report', version: 8, payload: report(`n${k}.example`, at, [changed('nginx')]) });
  }
  return lines.map((l) => JSON.stringify(l)).join('\n');
}

/** A workspace holding 20 catalogs and 20 reports, its journal, and a file of 2 more reports. */
async function twentyNodes(t: Tap.Test) {
  const ws = await scratch(t);
  const dir = await scratch(t);
  const batch = path.join(dir, 'batch.jsonl');
  const more = path.join(dir, 'more.jsonl');
  await writeFile(batch, inventoryLines(0, 20));
  await writeFile(more, inventoryLines(20, 2, false));
  const ingested = await nfvInProcess(['inventory', 'ingest', 'commands', batch], { workspace: ws });
  t.equal(ingested.code, 0, ingested.stderr);
  t.equal(JSON.parse(ingested.stdout).applied, 40);
  return { ws, more, journal: path.join(ws, 'inventory.journal') };
}

/** The reports that `nfv inventory reports` lists, with what it said on stderr (or its exit code when it fails). */
async function reportsOf(ws: string) {
  const r = await nfvInProcess(['inventory', 'reports'], { workspace: ws });
  return { ...r, count: r.code === 0 ? (JSON.parse(r.stdout) as unknown[]).length : undefined };
}

const tornSaid = (stderr: string) =>
  [...stderr.matchAll(/ends in a torn write of (\d+) bytes/g)].map((m) => Number(m[1]));

t.test('the journal ends in a line with a newline that claims more bytes than it has', async (t) => {
  const { ws, more, journal } = await twentyNodes(t);
  const whole = await readFile(journal);
  // Not a write of nfv's cut short (that never ends in a newline): damage, which reads and writes refuse alike.
  await appendFile(journal, '{"k":"c","n":"x.example.com","t":1,"b":500}\t{"certname":"x"}\n');
  const damaged = await readFile(journal);
  const damage = new RegExp(`the line at byte ${whole.length} does not have the length its header gives`);
  const read = await reportsOf(ws);
  t.equal(read.code, 4, 'a read refuses it (409)');
  t.match(read.stderr, damage);
  const write = await nfvInProcess(['inventory', 'ingest', 'commands', more], { workspace: ws });
  t.equal(write.code, 4, 'the next write refuses it too, and answers nothing as applied');
  t.match(write.stderr, damage);
  t.same(await readFile(journal), damaged, 'the journal is left as it was');
  // Repaired by hand, everything nfv answered as applied is there, and writing goes on.
  await truncate(journal, whole.length);
  t.equal((await reportsOf(ws)).count, 20);
  const again = await nfvInProcess(['inventory', 'ingest', 'commands', more], { workspace: ws });
  t.equal(again.code, 0, again.stderr);
  t.equal(JSON.parse(again.stdout).applied, 2);
  t.equal((await reportsOf(ws)).count, 22);
});

t.test(
  'a journal cut 3 bytes short: reads leave the torn line out and say so once, the next write cuts it',
  async (t) => {
    const { ws, more, journal } = await twentyNodes(t);
    const whole = await readFile(journal);
    await truncate(journal, whole.length - 3);
    const lastLine = whole.lastIndexOf('\n', whole.length - 2) + 1;
    const torn = whole.length - 3 - lastLine;

    const read = await reportsOf(ws);
    t.equal(read.code, 0, read.stderr);
    t.equal(read.count, 19, 'the torn report is left out');
    t.same(tornSaid(read.stderr), [torn], 'a read says it once, with its size');

    const server = spawnNfv(['serve', '--port', '0', '--workspace', ws]);
    const closed = new Promise<string>((resolve) => {
      let said = '';
      server.stderr.on('data', (d) => (said += d));
      server.on('close', () => resolve(said));
    });
    t.teardown(() => {
      if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
    });
    const url = (await saidOnStderr(server, /listening on (\S+)/))[1]!;
    for (let k = 0; k < 3; k++) {
      const answer = await fetch(`${url}/v4/reports`);
      t.equal(answer.status, 200);
      t.equal(((await answer.json()) as unknown[]).length, 19);
    }
    server.kill('SIGTERM');
    t.same(tornSaid(await closed), [torn], "serve's log says it once over several reads");

    const write = await nfvInProcess(['inventory', 'ingest', 'commands', more], { workspace: ws });
    t.equal(write.code, 0, write.stderr);
    t.equal(JSON.parse(write.stdout).applied, 2);
    t.same(tornSaid(write.stderr), [torn], 'the writer says it once too');
    const after = await readFile(journal);
    t.same(after.subarray(0, lastLine), whole.subarray(0, lastLine), 'every whole line is kept');
    t.equal(after.subarray(lastLine).toString().split('\n').length, 3, 'the torn line is cut, two lines follow');
    const final = await reportsOf(ws);
    t.equal(final.count, 21, 'the 19 reports read before and the 2 applied');
    t.same(tornSaid(final.stderr), [], 'nothing torn is left to say');
  },
);
