/** What the benches that run each instance in a child process of its own (fabric-bench.ts, wan-bench.ts) share. */
import { fork, spawn, type ChildProcess } from 'node:child_process';
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

/** How a command ended (runCommand): as a forked child's, with what it wrote on stderr (its last 8,000 characters). */
export interface CommandEnd extends ChildEnd {
  stderr: string;
}

/**
 * A started process followed to its end: its stderr kept, SIGKILL `limitSeconds` after `started`, its peak memory
 * read whenever `readPeak` is called and once more before the kill, while the process lives.
 */
function followed(
  child: ChildProcess,
  started: number,
  limitSeconds: number,
): { readPeak: () => void; ended: Promise<CommandEnd> } {
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8000)));
  let peak: number | undefined;
  const readPeak = () => (peak = peakOf(child.pid!) ?? peak);
  let killed = false;
  const timer = setTimeout(() => {
    readPeak();
    killed = true;
    child.kill('SIGKILL');
  }, limitSeconds * 1000);
  // 'close', not 'exit': stderr is read to its end (a command's summary may come after its exit).
  const ended = new Promise<CommandEnd>((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      const processSeconds = (performance.now() - started) / 1000;
      const lastError = stderr.trim().split('\n').at(-1) ?? '';
      resolve({ killed, code, processSeconds, peakMB: peak, lastError, stderr });
    }),
  );
  return { readPeak, ended };
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
  const started = performance.now();
  const child = fork(script, args, { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  const { readPeak, ended } = followed(child, started, limitSeconds);
  child.on('message', (m: M) => {
    readPeak();
    onMessage(m);
  });
  return ended;
}

/** How often runCommand reads a command's peak memory: it has no IPC message to read it at. */
const PEAK_POLL_MS = 20;

/**
 * Runs `command` with `args` as a user would (stdin and stdout closed, stderr kept), and kills it with SIGKILL
 * `limitSeconds` after its start. Peak memory is read every PEAK_POLL_MS while it runs: the last reading before its
 * end, so it may miss what it allocates in its last few milliseconds.
 */
export async function runCommand(command: string, args: string[], limitSeconds: number): Promise<CommandEnd> {
  const started = performance.now();
  const { readPeak, ended } = followed(
    spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] }),
    started,
    limitSeconds,
  );
  const poll = setInterval(readPeak, PEAK_POLL_MS);
  try {
    return await ended;
  } finally {
    clearInterval(poll);
  }
}

/** What `nfv simulate` says of its answer on stderr (reportSummary's line and the seconds the CLI adds). */
export interface SimulateSummary {
  verdict: string;
  held: string;
  firewalls: number;
  rules: number;
  optimal: boolean;
  /** Each count's proven lower bound: the count itself where the line names none below it. */
  bound: { firewalls: number; rules: number };
  seconds: number;
}

const SUMMARY = new RegExp(
  [
    String.raw`^(\w+): (\d+\/\d+) requirements hold; (?:[^;]*unknown[^;]*; )?`,
    String.raw`(\d+) firewalls? \(\d+ placed\)(?:, at least (\d+) \(gap \d+ %\))?; `,
    String.raw`(\d+) rules?(?:, at least (\d+) \(gap \d+ %\))?(.*); ([\d.]+) s$`,
  ].join(''),
  'm',
);

/** The summary line `nfv simulate` writes on stderr (src/ops/network/simulations.ts, reportSummary), read back. */
export function simulateSummary(stderr: string): SimulateSummary | undefined {
  const m = SUMMARY.exec(stderr);
  if (!m) return undefined;
  const [firewalls, rules] = [Number(m[3]), Number(m[5])];
  return {
    verdict: m[1]!,
    held: m[2]!,
    firewalls,
    rules,
    optimal: !m[7]!.includes('not proven minimal'),
    bound: { firewalls: m[4] ? Number(m[4]) : firewalls, rules: m[6] ? Number(m[6]) : rules },
    seconds: Number(m[8]),
  };
}
