/**
 * Where simulations run: in worker threads, each with its own Z3, at most `size` at once and at most `maxQueue`
 * waiting (more are refused with 503). Z3's wasm build serialises every call of one instance behind a global lock
 * (toolchain.md §1), a solve in the main thread would stall the event loop for every other request, and only a
 * worker can be stopped at once: a cancelled simulation (client gone, Ctrl-C) terminates its worker, and a worker
 * that crashes (a wasm trap, an abort inside Z3) is replaced and its job tried once more in the fresh worker.
 */
import { getHeapStatistics } from 'node:v8';
import type { Worker } from 'node:worker_threads';
import { takeSolverThread } from './early.js';
import { NfvError, beyondBound, interrupted } from '../../model/errors.js';
import { MAX_QUEUED_SOLVES, SIMULATION_DEFAULTS } from '../../model/limits.js';
import type { SimulationQueue } from '../../store/jobs.js';
import type { NFV } from '../../model/types.js';
import type { SimulateOptions, SimulationResult } from '../simulate.js';
import { plural } from '../../model/words.js';
import { SolverTimeout } from '../solving/work.js';

interface Job {
  id: number;
  nfv: NFV;
  options: Omit<SimulateOptions, 'onPhase'>;
  onPhase?: (phase: string) => void;
  resolve: (r: SimulationResult) => void;
  reject: (e: Error) => void;
  /** Runs so far; a job whose worker crashed runs once more in a fresh worker. */
  attempts: number;
  worker?: Worker;
  settled?: boolean;
  /** Takes its listener off the caller's signal, which may outlive it (one per process for the CLI). */
  detach?: () => void;
  /** Stops the job at its time limit where the engine's own checks do not (`WATCHDOG_GRACE_MS`). */
  watchdog?: NodeJS.Timeout;
}

type WorkerMessage =
  | { id: number; phase: string }
  | { id: number; result: SimulationResult; early: boolean; retire: boolean }
  | { id: number; error: { status: number; message: string }; retire: boolean };

const MAX_ATTEMPTS = 2;

/**
 * How long after a job's time limit, counted from its first start, the pool stops it itself: the engine checks its
 * deadline between steps of work, but a call that never returns (a hang inside Z3's WebAssembly threads) or a retry
 * after a crash (whose engine counts its limit afresh) would outlast `--timeout`. The answer is the engine's own
 * time-out, 504 / exit 5.
 */
const WATCHDOG_GRACE_MS = 1000;

/** A solve past the solver thread's heap (V8's limit, the process's `--max-old-space-size`): a limit, not a crash. */
function beyondHeap(): NfvError {
  const megabytes = Math.round(getHeapStatistics().heap_size_limit / 2 ** 20);
  return beyondBound(
    `the solver ran out of memory on this input (its heap of ${megabytes} MB); nothing was stored: ` +
      'a lower effort, or a smaller network',
  );
}

class SolverPool {
  private readonly idle: Worker[] = [];
  private readonly busy = new Map<Worker, Job>();
  /** Workers we stopped on purpose: their exit is not a crash. */
  private readonly retired = new WeakSet<Worker>();
  private readonly queue: Job[] = [];
  private nextId = 1;

  constructor(
    private readonly size: number,
    private readonly maxQueue: number,
  ) {}

  run(nfv: NFV, options: SimulateOptions, signal?: AbortSignal): Promise<SimulationResult> {
    const { onPhase, ...portable } = options;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(interrupted());
      if (this.queue.length >= this.maxQueue) {
        return reject(
          new NfvError(
            503,
            `${plural(this.busy.size, 'simulation')} being solved and ${this.queue.length} waiting; try again shortly`,
          ),
        );
      }
      const job: Job = { id: this.nextId++, nfv, options: portable, onPhase, resolve, reject, attempts: 0 };
      if (signal) {
        const abort = () => this.stop(job, interrupted());
        signal.addEventListener('abort', abort, { once: true });
        job.detach = () => signal.removeEventListener('abort', abort);
      }
      this.queue.push(job);
      this.dispatch();
    });
  }

  /** Starts a worker before a job needs it (idle, so it keeps no process alive). */
  warm(): void {
    if (this.idle.length + this.busy.size >= this.size) return;
    const worker = this.spawn();
    worker.unref();
    this.idle.push(worker);
  }

  private settle(job: Job, outcome: { result?: SimulationResult; error?: Error }): void {
    if (job.settled) return;
    job.settled = true;
    job.detach?.();
    clearTimeout(job.watchdog);
    if (outcome.error) job.reject(outcome.error);
    else job.resolve(outcome.result!);
  }

  /** Stops a job with `error`: out of the queue, or its worker terminated (a fresh one is started when needed). */
  private stop(job: Job, error: Error): void {
    const k = this.queue.indexOf(job);
    if (k >= 0) this.queue.splice(k, 1);
    if (job.worker) this.retire(job.worker);
    this.settle(job, { error });
    this.dispatch();
  }

  private retire(worker: Worker): void {
    this.retired.add(worker);
    this.busy.delete(worker);
    const k = this.idle.indexOf(worker);
    if (k >= 0) this.idle.splice(k, 1);
    void worker.terminate();
  }

  /** `outOfMemory`: V8 stopped the thread at its heap's limit, which the same job would reach again: not retried. */
  private crashed(worker: Worker, why: string, outOfMemory = false): void {
    if (this.retired.has(worker)) return;
    const job = this.busy.get(worker);
    this.retire(worker);
    if (job && !job.settled) {
      job.worker = undefined;
      if (outOfMemory) this.settle(job, { error: beyondHeap() });
      else if (job.attempts < MAX_ATTEMPTS) this.queue.unshift(job);
      else
        this.settle(job, {
          error: new NfvError(500, `the solver crashed twice on this input (${why}); nothing was stored`),
        });
    }
    this.dispatch();
  }

  private spawn(): Worker {
    const worker = takeSolverThread();
    worker.on('message', (msg: WorkerMessage) => {
      const job = this.busy.get(worker);
      if (!job || job.id !== msg.id) return;
      if ('phase' in msg) return job.onPhase?.(msg.phase);
      job.worker = undefined;
      // A thread whose Z3 has solved a job would solve the next one differently, and one that loaded CaDiCaL holds its
      // memory: a fresh thread takes the next job (solve-worker.ts).
      if (msg.retire) this.retire(worker);
      else {
        this.busy.delete(worker);
        this.idle.push(worker);
        worker.unref();
      }
      if ('error' in msg) this.settle(job, { error: new NfvError(msg.error.status, msg.error.message) });
      else this.settle(job, { result: msg.result });
      this.dispatch();
    });
    worker.on('error', (e: NodeJS.ErrnoException) =>
      this.crashed(worker, e.message, e.code === 'ERR_WORKER_OUT_OF_MEMORY'),
    );
    worker.on('exit', (code) => this.crashed(worker, `the solver thread exited with code ${code}`));
    return worker;
  }

  private dispatch(): void {
    while (this.queue.length) {
      const worker = this.idle.pop() ?? (this.busy.size < this.size ? this.spawn() : undefined);
      if (!worker) return;
      const job = this.queue.shift()!;
      if (job.attempts++ === 0) this.watch(job);
      job.worker = worker;
      this.busy.set(worker, job);
      // A busy worker keeps the process alive; an idle one does not (unref after the listeners, which ref it).
      worker.ref();
      worker.postMessage({ id: job.id, nfv: job.nfv, options: job.options, progress: job.onPhase !== undefined });
    }
  }

  /** Times the job from its first start: past its limit and WATCHDOG_GRACE_MS, its worker is stopped. */
  private watch(job: Job): void {
    const seconds = job.options.timeoutSeconds ?? SIMULATION_DEFAULTS.timeoutSeconds;
    // A retry waiting for a thread leaves the queue too, so that no thread solves a job already answered.
    job.watchdog = setTimeout(() => this.stop(job, new SolverTimeout(seconds)), seconds * 1000 + WATCHDOG_GRACE_MS);
    // The busy worker keeps the process alive while the job runs; the timer alone must not.
    job.watchdog.unref();
  }

  async close(): Promise<void> {
    const workers = [...this.idle, ...this.busy.keys()];
    for (const job of [...this.busy.values(), ...this.queue])
      this.settle(job, { error: new NfvError(503, 'the server is stopping') });
    this.queue.length = 0;
    workers.forEach((w) => this.retired.add(w));
    this.idle.length = 0;
    this.busy.clear();
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

let pool: SolverPool | undefined;
let queue: SimulationQueue | undefined;

/** What a worker answers for a job: the result, or the failure a client should get (no retry for those). */
type JobAnswer = { result: SimulationResult } | { error: { status: number; message: string } };

/** Serve with workers: simulations go to the database's job queue and `nfv worker` processes solve them. */
export function useSolverQueue(q: SimulationQueue): void {
  queue = q;
}

/** A worker's side: solves one job's payload here (in this process's solver threads) and answers its text. */
export async function solveJob(payload: string): Promise<string> {
  const { nfv, options } = JSON.parse(payload) as { nfv: NFV; options: SimulateOptions };
  let answer: JobAnswer;
  try {
    answer = { result: await runSimulation(nfv, options) };
  } catch (e) {
    // A crash of the solver thread was retried here already; what remains is the client's answer.
    if (!(e instanceof NfvError)) throw e;
    answer = { error: { status: e.status, message: e.message } };
  }
  return JSON.stringify(answer);
}

async function solveQueued(
  q: SimulationQueue,
  nfv: NFV,
  options: SimulateOptions,
  signal?: AbortSignal,
): Promise<SimulationResult> {
  const { onPhase: _onPhase, ...portable } = options;
  const timeout = options.timeoutSeconds ?? SIMULATION_DEFAULTS.timeoutSeconds;
  const answer = JSON.parse(await q.solve(JSON.stringify({ nfv, options: portable }), timeout, signal)) as JobAnswer;
  if ('error' in answer) throw new NfvError(answer.error.status, answer.error.message);
  return answer.result;
}

/** Serve mode: solve in up to `size` worker threads, with at most `maxQueue` simulations waiting. */
export function useSolverWorkers(size: number, maxQueue = MAX_QUEUED_SOLVES): void {
  pool = new SolverPool(size, maxQueue);
}

export async function stopSolverWorkers(): Promise<void> {
  await pool?.close();
  pool = undefined;
}

/**
 * Starts this process's solver thread ahead of its first simulation, so that the thread's start (loading the engine)
 * overlaps the caller's reading of the input; nothing when simulations go to a queue.
 */
export function warmSolver(): void {
  if (queue) return;
  pool ??= new SolverPool(1, MAX_QUEUED_SOLVES);
  pool.warm();
}

/** Runs a simulation in a solver worker (one, unless serve mode asked for more). Rejects with 499 when aborted. */
export function runSimulation(
  nfv: NFV,
  options: SimulateOptions = {},
  signal?: AbortSignal,
): Promise<SimulationResult> {
  if (queue) return solveQueued(queue, nfv, options, signal);
  pool ??= new SolverPool(1, MAX_QUEUED_SOLVES);
  return pool.run(nfv, options, signal);
}
