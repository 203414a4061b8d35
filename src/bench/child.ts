/** What the benches that run each instance in a child process of its own (fabric-bench.ts, wan-bench.ts) share. */
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
