/**
 * A solver worker thread: runs simulations sent by the pool in `pool.ts`. A thread that loaded Z3 or CaDiCaL says so
 * with its answer, and the pool retires it: Z3's search depends on what its context solved before, so each job that
 * needs Z3 gets a fresh one (the same input, the same answer, whatever the server solved earlier), and CaDiCaL's
 * WebAssembly memory, hundreds of MB after a wide solve, is never given back while the thread lives.
 *
 * For the tests of the pool's recovery and of cancellation, `NFV_SOLVER_FAULT` injects a fault into every job:
 * `throw[:ONCE_FILE]` and `exit[:ONCE_FILE]` crash the way a wasm trap or an abort inside Z3 does (an uncaught error,
 * or the thread exiting; with ONCE_FILE only the first job, the file recording that it happened), and
 * `delay:MS[:STARTED_FILE]` makes each job take MS milliseconds longer, as a large input would (STARTED_FILE, written
 * as the delay starts, tells a test that a job is under way), and `oom[:ONCE_FILE]` fills the thread's heap until V8
 * stops the thread, as a formula too large for it would (a test gives the process a small heap, so that it is quick).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { parentPort } from 'node:worker_threads';
import { NfvError } from '../../model/errors.js';
import type { NFV } from '../../model/types.js';
import { cadicalLoaded } from '../solving/cadical.js';
import { z3Started } from '../solving/maxsat.js';
import { simulate, type SimulateOptions, type SimulationResult } from '../simulate.js';

async function injectedFault(): Promise<void> {
  const spec = process.env.NFV_SOLVER_FAULT;
  if (!spec) return;
  const [mode, arg, started] = spec.split(':');
  if (mode === 'delay') {
    if (started) writeFileSync(started, 'started\n');
    return new Promise((resolve) => setTimeout(resolve, Number(arg)));
  }
  const once = arg;
  if (once) {
    if (existsSync(once)) return;
    writeFileSync(once, 'crashed\n');
  }
  if (mode === 'exit') process.exit(1);
  if (mode === 'oom') {
    const held: number[][] = [];
    for (;;) held.push(new Array<number>(1 << 16).fill(held.length));
  }
  // The job never finishes: the thread dies first, uncaught, as in a trap in the middle of a solve.
  if (mode === 'throw')
    return new Promise(() =>
      setImmediate(() => {
        throw new WebAssembly.RuntimeError('table index is out of bounds (injected)');
      }),
    );
}

interface Job {
  id: number;
  nfv: NFV;
  options: SimulateOptions;
  progress: boolean;
}

/** Who hears a solve's phases: the phase it is in, and where its next ones go. */
interface Progress {
  phase?: string;
  to?: (phase: string) => void;
}

/**
 * The early job of `nfv simulate FILE` (early.ts): its document, options, answer and progress, until a job takes
 * it.
 */
let early: { nfv: NFV; options: SimulateOptions; answer: Promise<SimulationResult>; progress: Progress } | undefined;

/**
 * The early job's answer when `job` is the same simulation (its answer once asked again), else undefined. A job that
 * asked for progress hears the phase the early solve is in, then each next one, as if it had started it.
 */
function earlyAnswer(job: Job, onPhase?: (phase: string) => void): Promise<SimulationResult> | undefined {
  const taken = early;
  early = undefined;
  if (!taken || !isDeepStrictEqual(taken.options, job.options) || !isDeepStrictEqual(taken.nfv, job.nfv))
    return undefined;
  if (onPhase && taken.progress.phase) onPhase(taken.progress.phase);
  taken.progress.to = onPhase;
  return taken.answer;
}

parentPort!.on('message', async (message: Job | { early: true; nfv: NFV; options: SimulateOptions }) => {
  if ('early' in message) {
    const progress: Progress = {};
    const onPhase = (phase: string) => {
      progress.phase = phase;
      progress.to?.(phase);
    };
    const answer = simulate(message.nfv, { ...message.options, onPhase });
    // Not awaited until a job takes it: a failure is that job's to report.
    answer.catch(() => {});
    early = { nfv: message.nfv, options: message.options, answer, progress };
    return;
  }
  const job = message;
  // A thread that loaded Z3 or CaDiCaL is retired after its answer (pool.ts).
  const retire = () => z3Started() || cadicalLoaded();
  try {
    await injectedFault();
    const onPhase = job.progress ? (phase: string) => parentPort!.postMessage({ id: job.id, phase }) : undefined;
    const answer = earlyAnswer(job, onPhase);
    const result = await (answer ?? simulate(job.nfv, { ...job.options, onPhase }));
    parentPort!.postMessage({ id: job.id, result, early: answer !== undefined, retire: retire() });
  } catch (e) {
    const status = e instanceof NfvError ? e.status : 500;
    const error = { status, message: (e as Error)?.message ?? String(e) };
    parentPort!.postMessage({ id: job.id, error, retire: retire() });
  }
});
