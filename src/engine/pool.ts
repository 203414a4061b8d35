/**
 * Where simulations run. By default in this thread (the CLI solves one problem and exits). Serve mode calls
 * `useSolverWorkers`: then each simulation runs in a worker thread with its own Z3, at most `size` at once and the
 * rest queued, because Z3's wasm build serialises every call of one instance behind a global lock (toolchain.md §1)
 * and a solve would otherwise also stall the event loop for every other request.
 */
import { Worker } from 'node:worker_threads';
import { NfvError } from '../model/errors.js';
import type { NFV } from '../model/types.js';
import { simulate, type SimulateOptions, type SimulationResult } from './simulate.js';

interface Job {
  id: number;
  nfv: NFV;
  options: SimulateOptions;
  resolve: (r: SimulationResult) => void;
  reject: (e: Error) => void;
}

class SolverPool {
  private readonly idle: Worker[] = [];
  private readonly busy = new Map<Worker, Job>();
  private readonly queue: Job[] = [];
  private started = 0;
  private nextId = 1;

  constructor(private readonly size: number) {}

  run(nfv: NFV, options: SimulateOptions): Promise<SimulationResult> {
    const { onPhase: _progress, ...portable } = options;
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, nfv, options: portable, resolve, reject });
      this.dispatch();
    });
  }

  private spawn(): Worker {
    const worker = new Worker(new URL('./solve-worker.js', import.meta.url));
    worker.unref();
    worker.on('message', (msg: { id: number; result?: SimulationResult; error?: { status: number; message: string } }) => {
      const job = this.busy.get(worker);
      this.busy.delete(worker);
      this.idle.push(worker);
      if (job) {
        if (msg.error) job.reject(new NfvError(msg.error.status, msg.error.message));
        else job.resolve(msg.result!);
      }
      this.dispatch();
    });
    worker.on('error', (e) => {
      const job = this.busy.get(worker);
      this.busy.delete(worker);
      this.started--;
      job?.reject(new NfvError(500, `solver worker failed: ${e.message}`));
      this.dispatch();
    });
    this.started++;
    return worker;
  }

  private dispatch(): void {
    while (this.queue.length) {
      const worker = this.idle.pop() ?? (this.started < this.size ? this.spawn() : undefined);
      if (!worker) return;
      const job = this.queue.shift()!;
      this.busy.set(worker, job);
      worker.postMessage({ id: job.id, nfv: job.nfv, options: job.options });
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.idle, ...this.busy.keys()].map((w) => w.terminate()));
    this.idle.length = 0;
    this.busy.clear();
    this.started = 0;
  }
}

let pool: SolverPool | undefined;

/** Serve mode: solve in up to `size` worker threads. */
export function useSolverWorkers(size: number): void {
  pool = new SolverPool(size);
}

export async function stopSolverWorkers(): Promise<void> {
  await pool?.close();
  pool = undefined;
}

/** Runs a simulation where this process solves: in a worker when serving, else in this thread. */
export function runSimulation(nfv: NFV, options: SimulateOptions = {}): Promise<SimulationResult> {
  return pool ? pool.run(nfv, options) : simulate(nfv, options);
}
