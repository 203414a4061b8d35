/**
 * A solver worker thread: runs simulations sent by the pool in `pool.ts`, each with its own Z3 instance.
 */
import { parentPort } from 'node:worker_threads';
import { NfvError } from '../model/errors.js';
import { simulate, type SimulateOptions } from './simulate.js';
import type { NFV } from '../model/types.js';

parentPort!.on('message', async (job: { id: number; nfv: NFV; options: SimulateOptions }) => {
  try {
    parentPort!.postMessage({ id: job.id, result: await simulate(job.nfv, job.options) });
  } catch (e) {
    const status = e instanceof NfvError ? e.status : 500;
    parentPort!.postMessage({ id: job.id, error: { status, message: (e as Error)?.message ?? String(e) } });
  }
});
