/** What the benches that run each instance in a child process of its own (fabric-bench.ts, wan-bench.ts) share. */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Peak resident memory of a running process in MB (Linux), read before it ends. */
export function peakOf(pid: number): number | undefined {
  try {
    const kb = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round(Number(kb) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/** A run that ran out of time: killed at its limit, or stopped by the engine's own time limit (504). */
export const timedOut = (run: { outcome: string; status?: number }) =>
  run.outcome === 'killed' || (run.outcome === 'refused' && run.status === 504);

/** How a child process ended: killed at its limit or not, its exit code, its whole seconds and peak memory. */
export interface ChildEnd {
  killed: boolean;
  code: number | null;
  processSeconds: number;
  peakMB?: number;
  /** The last line the child wrote on stderr, for a crash. */
  lastError: string;
}

/**
 * Runs `script` with `args` in a forked child, handing each IPC message to `onMessage`, and kills it with SIGKILL
 * `limitSeconds` after its start. Peak memory is read at each message and before the kill, while the process lives.
 */
export function runInChild<M>(
  script: string,
  args: string[],
  limitSeconds: number,
  onMessage: (message: M) => void,
): Promise<ChildEnd> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = fork(script, args, { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    let peak: number | undefined;
    let killed = false;
    const timer = setTimeout(() => {
      peak = peakOf(child.pid!) ?? peak;
      killed = true;
      child.kill('SIGKILL');
    }, limitSeconds * 1000);
    child.on('message', (m: M) => {
      peak = peakOf(child.pid!) ?? peak;
      onMessage(m);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      const processSeconds = (performance.now() - started) / 1000;
      resolve({ killed, code, processSeconds, peakMB: peak, lastError: stderr.trim().split('\n').at(-1) ?? '' });
    });
  });
}
