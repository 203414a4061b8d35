/** The early job of `nfv simulate FILE` (src/engine/threads/early.ts): which commands send one, and how it is used. */
import { execFileSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import {
  plainSimulation,
  startSolverThread,
  takeEarlyDocument,
  takeSolverThread,
} from '../../../src/engine/threads/early.js';
import { runSimulation, stopSolverWorkers } from '../../../src/engine/threads/pool.js';
import { SIMULATION_DEFAULTS } from '../../../src/model/limits.js';
import { simulate, type SimulationResult } from '../../../src/engine/simulate.js';
import { decodeDocument } from '../../../src/model/codec.js';
import { NfvType } from '../../../src/model/resources.js';
import type { NFV } from '../../../src/model/types.js';
import { cli, scratch, spawnNfv } from '../../helpers.js';

const sample = (name: string) => path.join('samples', name);
const load = (name: string) => decodeDocument<NFV>(NfvType, readFileSync(sample(name), 'utf8'));

t.test('only a simulation of a file without a flag that changes the job is sent early', async (t) => {
  t.equal(plainSimulation(['simulate', 'a.xml']), 'a.xml');
  t.equal(plainSimulation(['-w', 'ws', 'simulate', '--format', 'json', 'a.xml', '-o', 'out.xml', '--store']), 'a.xml');
  t.equal(plainSimulation(['simulate', '--format=json', '-q', 'a.xml']), 'a.xml');
  const changing = [
    ['simulate'],
    ['simulate', '-'],
    ['simulate', '@a.xml'],
    ['simulate', 'a.xml', '--timeout', '5'],
    ['simulate', '--algorithm', 'MF', 'a.xml'],
    ['simulate', '--reconfigure', 'a.xml'],
    ['simulate', '--in', 'json', 'a.xml'],
    ['simulate', '--gid', '1'],
    ['simulate', 'a.xml', 'b.xml'],
    ['simulate', '--', 'a.xml'],
    ['simulations', 'reconfigure', '1'],
    ['graphs', 'create', 'a.xml'],
  ];
  for (const args of changing) t.equal(plainSimulation(args), undefined, args.join(' '));
});

t.test('the thread answers the same job with the early answer, and any other by solving it', async (t) => {
  const worker = new Worker(new URL('../../../dist/bundle/solve-worker.js', import.meta.url));
  t.teardown(() => worker.terminate());
  type Reply = { id: number; result: SimulationResult; early: boolean };
  const reply = (id: number) =>
    new Promise<Reply>((resolve) => {
      const heard = (m: Reply) => {
        if (m.id !== id) return;
        worker.off('message', heard);
        resolve(m);
      };
      worker.on('message', heard);
    });
  const [office, farm] = [load('office-nat.xml'), load('web-farm.xml')];
  const ask = (id: number, nfv: NFV, options = SIMULATION_DEFAULTS) => {
    worker.postMessage({ id, nfv, options, progress: false });
    return reply(id);
  };
  const sendEarly = (nfv: NFV) => worker.postMessage({ early: true, nfv, options: SIMULATION_DEFAULTS });
  const solved = async (nfv: NFV) => (await simulate(nfv, SIMULATION_DEFAULTS)).nfv;

  sendEarly(office);
  const same = await ask(1, office);
  t.equal(same.early, true, 'the same document and options: the early answer');
  t.same(same.result.nfv, await solved(office));
  t.equal((await ask(2, office)).early, false, 'an early answer is used once');

  sendEarly(office);
  const other = await ask(3, farm);
  t.equal(other.early, false, 'another document is solved');
  t.same(other.result.nfv, await solved(farm));

  sendEarly(office);
  const slower = await ask(4, office, { ...SIMULATION_DEFAULTS, timeoutSeconds: 30 });
  t.equal(slower.early, false, 'other options: solved');
  t.same(slower.result.nfv, await solved(office));
});

t.test('a job answered early hears the phases of the early solve when it asks for progress', async (t) => {
  const worker = new Worker(new URL('../../../dist/bundle/solve-worker.js', import.meta.url));
  t.teardown(() => worker.terminate());
  const office = load('office-nat.xml');
  const phases: string[] = [];
  const done = new Promise<{ early: boolean }>((resolve) =>
    worker.on('message', (m: { id: number; phase?: string; early: boolean }) => {
      if (m.id !== 1) return;
      if (m.phase !== undefined) phases.push(m.phase);
      else resolve(m);
    }),
  );
  worker.postMessage({ early: true, nfv: office, options: SIMULATION_DEFAULTS });
  worker.postMessage({ id: 1, nfv: office, options: SIMULATION_DEFAULTS, progress: true });
  t.equal((await done).early, true);
  // The job may arrive at any phase of the early solve: it hears that one and every later one, in order.
  const order = ['expanding', 'paths', 'flows', 'solving', 'placing', 'writing'];
  t.ok(phases.length > 0, 'some phase heard');
  t.equal(phases.at(-1), 'writing', 'the last phase heard is the last of the solve');
  t.ok(
    phases.every((p) => order.includes(p)),
    `phases named as a solve names them: ${phases.join(', ')}`,
  );
});

/** What `nfv simulate FILE --format json` writes for each sample, run once: two tests compare against it. */
const sentEarly = new Map<string, ReturnType<typeof cli>>();
const simulatedEarly = async (name: string, workspace: string) =>
  sentEarly.get(name) ??
  sentEarly.set(name, cli(['simulate', sample(name), '--format', 'json'], { workspace })).get(name)!;

t.test('a simulation sent early writes the same bytes as one that is not', async (t) => {
  const ws = await scratch(t);
  for (const name of ['office-nat.xml', 'web-farm.xml', 'data-centre.xml']) {
    const early = await simulatedEarly(name, ws);
    // A time limit, even the default one, is a flag that keeps the document from being sent early.
    const late = await cli(['simulate', '--timeout', '60', sample(name), '--format', 'json'], { workspace: ws });
    t.equal(early.code, late.code, name);
    t.equal(early.stdout, late.stdout, name);
  }
});

t.test('a document from a pipe is read by the CLI, not early', async (t) => {
  const ws = await scratch(t);
  const office = sample('office-nat.xml');
  const fromFile = await simulatedEarly('office-nat.xml', ws);
  // A named pipe, as a shell's <(...) gives: read early, it would be empty when the CLI reads it.
  const fifo = path.join(ws, 'document.fifo');
  execFileSync('mkfifo', [fifo]);
  const child = spawnNfv(['simulate', fifo, '--format', 'json'], { NFV_WORKSPACE: ws });
  // A regression leaves nfv waiting on the pipe: it is stopped when the test ends, passed or not.
  t.teardown(() => void child.kill());
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = new Promise<number | null>((resolve) => child.on('close', resolve));
  await writeFile(fifo, readFileSync(office));
  t.equal(await code, 0, stderr);
  t.equal(stdout, fromFile.stdout);
});

t.test('a signal that outlives its simulations keeps none of their listeners', async (t) => {
  // The CLI's interrupt signal is one per process: a listener left per simulation passes Node's warning at 11.
  t.teardown(stopSolverWorkers);
  const signal = new AbortController().signal;
  const office = load('office-nat.xml');
  for (let k = 0; k < 3; k++) {
    t.equal((await runSimulation(office, {}, signal)).report.verdict, 'SAT');
    t.equal(getEventListeners(signal, 'abort').length, 0, `after simulation ${k + 1}`);
  }
});

t.test('the CLI takes the early decoded document once, and only for the same text and format', async (t) => {
  const file = sample('office-nat.xml');
  const text = readFileSync(file, 'utf8');
  // Each round starts the thread ahead with the document, as bin/nfv does; the thread is stopped after each.
  const sentEarly = async () => {
    await startSolverThread(['simulate', file]);
    const worker = takeSolverThread();
    t.teardown(() => worker.terminate());
  };
  await sentEarly();
  t.same(takeEarlyDocument(text, 'xml'), load('office-nat.xml'));
  t.equal(takeEarlyDocument(text, 'xml'), undefined, 'taken once');
  await sentEarly();
  t.equal(takeEarlyDocument(`${text} `, 'xml'), undefined, 'another text');
  t.equal(takeEarlyDocument(text, 'xml'), undefined, 'dropped after a miss');
  await sentEarly();
  t.equal(takeEarlyDocument(text, 'json'), undefined, 'another format');
  t.equal(takeEarlyDocument(text, undefined), undefined, 'no format');
  await startSolverThread(['simulate', '--timeout', '5', file]);
  const worker = takeSolverThread();
  t.teardown(() => worker.terminate());
  t.equal(takeEarlyDocument(text, 'xml'), undefined, 'not a plain simulation: nothing decoded');
});
