/**
 * A simulation's solver thread, started first thing by `bin/nfv` so that it loads the engine while the main thread
 * loads the rest of the CLI and reads the input: its first job starts about 20 ms sooner (the thread took 40 ms to
 * load, and was started only once the CLI had loaded). The pool (`pool.ts`) takes it instead of starting one.
 */
import { Worker } from 'node:worker_threads';

let early: { worker: Worker; exited: boolean; noted: () => void } | undefined;

const start = () => new Worker(new URL('./solve-worker.js', import.meta.url));

/** Starts the thread ahead of any need; it keeps no process alive until it has a job. */
export function startSolverThread(): void {
  if (early) return;
  const started = { worker: start(), exited: false, noted: () => (started.exited = true) };
  // Until the pool takes it, a thread that fails at start is only noted: the pool then starts another.
  started.worker.on('error', started.noted);
  started.worker.on('exit', started.noted);
  started.worker.unref();
  early = started;
}

/** The thread started ahead, if it still runs, or a new one. */
export function takeSolverThread(): Worker {
  const taken = early;
  early = undefined;
  if (taken && !taken.exited) {
    taken.worker.off('error', taken.noted);
    taken.worker.off('exit', taken.noted);
    return taken.worker;
  }
  return start();
}
