/**
 * A simulation's solver thread, started first thing by `bin/nfv` so that it loads the engine while the main thread
 * loads the rest of the CLI and reads the input: its first job starts about 20 ms sooner (the thread took 40 ms to
 * load, and was started only once the CLI had loaded). The pool (`pool.ts`) takes it instead of starting one.
 *
 * For `nfv simulate FILE` with no flag that changes what is solved, the document is also read and decoded here and
 * sent to the thread as an early job, before the CLI has loaded (the thread was otherwise idle 30 ms waiting for
 * it). The thread answers the CLI's own job with the early one's answer when both are the same document and options
 * (`solve-worker.ts`); any other job waits for the early one, which is why only what cannot differ is sent early.
 */
import { readFileSync, statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { MAX_DOCUMENT_BYTES, SIMULATION_DEFAULTS } from '../../model/limits.js';
import type { Format } from '../../model/schema.js';
import type { NFV } from '../../model/types.js';

let early: { worker: Worker; exited: boolean; noted: () => void } | undefined;

/** The early job's document as read and decoded here, until the CLI takes it (`takeEarlyDocument`). */
let decoded: { text: string; format: Format | undefined; nfv: NFV } | undefined;

const start = () => new Worker(new URL('./solve-worker.js', import.meta.url));

/** Flags that change neither the document nor how it is solved: where the output goes and what is said. */
const WITH_VALUE = new Set(['-w', '--workspace', '--database', '--lock-timeout', '--format', '-o', '--output']);
const ALONE = new Set(['-q', '--quiet', '-v', '--verbose', '--store']);

/** The file of `nfv simulate FILE` with no flag that could change the job, or undefined. */
export function plainSimulation(args: readonly string[]): string | undefined {
  const rest: string[] = [];
  for (let k = 0; k < args.length; k++) {
    const arg = args[k]!;
    if (WITH_VALUE.has(arg)) k++;
    else if (!ALONE.has(arg) && !WITH_VALUE.has(arg.split('=')[0]!)) rest.push(arg);
  }
  const [command, file] = rest;
  return rest.length === 2 && command === 'simulate' && !file!.startsWith('-') && !file!.startsWith('@')
    ? file
    : undefined;
}

/**
 * Starts the thread ahead of any need; it keeps no process alive until it has a job. With the CLI's arguments, the
 * early job of a plain `nfv simulate FILE` is sent too (resolved once sent, or once found not to be one).
 */
export async function startSolverThread(args: readonly string[] = []): Promise<void> {
  if (early) return;
  const started = { worker: start(), exited: false, noted: () => (started.exited = true) };
  // Until the pool takes it, a thread that fails at start is only noted: the pool then starts another.
  started.worker.on('error', started.noted);
  started.worker.on('exit', started.noted);
  started.worker.unref();
  early = started;
  const file = plainSimulation(args);
  if (file !== undefined) await sendEarlyJob(started.worker, file);
}

async function sendEarlyJob(worker: Worker, file: string): Promise<void> {
  try {
    // Only a regular file: a pipe (`<(...)`, /dev/stdin) read here would be empty for the CLI. Any size the CLI reads:
    // it takes this decode (`takeEarlyDocument`), so a large document gains most (wan-750's solver thread waited
    // about 240 ms for the CLI to load, read and decode its 466 KB). The bound was 64 KiB while the CLI decoded twice.
    const stat = statSync(file);
    if (!stat.isFile() || stat.size > MAX_DOCUMENT_BYTES) return;
    const [{ decodeDocument, decodeUtf8, detectFormat }, { NfvType }, { approximatedNodes }] = await Promise.all([
      import('../../model/codec.js'),
      import('../../model/resources.js'),
      import('../../model/approximation.js'),
    ]);
    const text = decodeUtf8(readFileSync(file), file);
    const nfv = decodeDocument(NfvType, text);
    decoded = { text, format: detectFormat(text), nfv };
    // Approximated firewalls are solved once per list (ops): not one job.
    if (approximatedNodes(nfv).length === 0) worker.postMessage({ early: true, nfv, options: SIMULATION_DEFAULTS });
  } catch {
    // Nothing sent: the CLI reads the input again and says what is wrong with it.
  }
}

/**
 * The document decoded for the early job when the CLI has read the same text in the same format, else undefined;
 * once. The CLI then does not decode it a second time (Zoo Cesnet1999's 13 KB: 20-40 ms of a cold main thread).
 * `postMessage` sent the thread a copy, so the CLI owns this one.
 */
export function takeEarlyDocument(text: string, format: Format | undefined): NFV | undefined {
  const taken = decoded;
  decoded = undefined;
  return taken && taken.format === format && taken.text === text ? taken.nfv : undefined;
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
