/**
 * A solver worker thread: runs simulations sent by the pool in `pool.ts`, each with its own Z3 instance.
 *
 * `NFV_SOLVER_FAULT=throw|exit[:ONCE_FILE]` makes the worker crash on a job the way a wasm trap or an abort inside
 * Z3 does (an uncaught error, or the thread exiting), so that the tests can check the pool's recovery; with
 * ONCE_FILE only the first job crashes (the file records that it happened).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { NfvError } from '../model/errors.js';
import type { NFV } from '../model/types.js';
import { simulate, type SimulateOptions } from './simulate.js';

function injectedFault(): void {
  const spec = process.env.NFV_SOLVER_FAULT;
  if (!spec) return;
  const [mode, once] = spec.split(':');
  if (once) {
    if (existsSync(once)) return;
    writeFileSync(once, 'crashed\n');
  }
  if (mode === 'exit') process.exit(1);
  if (mode === 'throw') setImmediate(() => {
    throw new WebAssembly.RuntimeError('table index is out of bounds (injected)');
  });
}

parentPort!.on('message', async (job: { id: number; nfv: NFV; options: SimulateOptions; progress: boolean }) => {
  injectedFault();
  try {
    const onPhase = job.progress ? (phase: string) => parentPort!.postMessage({ id: job.id, phase }) : undefined;
    parentPort!.postMessage({ id: job.id, result: await simulate(job.nfv, { ...job.options, onPhase }) });
  } catch (e) {
    const status = e instanceof NfvError ? e.status : 500;
    parentPort!.postMessage({ id: job.id, error: { status, message: (e as Error)?.message ?? String(e) } });
  }
});
