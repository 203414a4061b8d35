/**
 * A solver worker thread: runs simulations sent by the pool in `pool.ts`, each with its own Z3 instance.
 *
 * For the tests of the pool's recovery and of cancellation, `NFV_SOLVER_FAULT` injects a fault into every job:
 * `throw[:ONCE_FILE]` and `exit[:ONCE_FILE]` crash the way a wasm trap or an abort inside Z3 does (an uncaught error,
 * or the thread exiting; with ONCE_FILE only the first job, the file recording that it happened), and `delay:MS`
 * makes each job take MS milliseconds longer, as a large input would.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { NfvError } from '../../model/errors.js';
import type { NFV } from '../../model/types.js';
import { simulate, type SimulateOptions } from '../simulate.js';

async function injectedFault(): Promise<void> {
  const spec = process.env.NFV_SOLVER_FAULT;
  if (!spec) return;
  const [mode, arg] = spec.split(':');
  if (mode === 'delay') return new Promise((resolve) => setTimeout(resolve, Number(arg)));
  const once = arg;
  if (once) {
    if (existsSync(once)) return;
    writeFileSync(once, 'crashed\n');
  }
  if (mode === 'exit') process.exit(1);
  // The job never finishes: the thread dies first, uncaught, as in a trap in the middle of a solve.
  if (mode === 'throw')
    return new Promise(() =>
      setImmediate(() => {
        throw new WebAssembly.RuntimeError('table index is out of bounds (injected)');
      }),
    );
}

parentPort!.on('message', async (job: { id: number; nfv: NFV; options: SimulateOptions; progress: boolean }) => {
  try {
    await injectedFault();
    const onPhase = job.progress ? (phase: string) => parentPort!.postMessage({ id: job.id, phase }) : undefined;
    parentPort!.postMessage({ id: job.id, result: await simulate(job.nfv, { ...job.options, onPhase }) });
  } catch (e) {
    const status = e instanceof NfvError ? e.status : 500;
    parentPort!.postMessage({ id: job.id, error: { status, message: (e as Error)?.message ?? String(e) } });
  }
});
