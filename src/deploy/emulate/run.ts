/**
 * Runs an emulation plan in a sandbox of its own and reads the kernel's verdicts back.
 *
 * The sandbox is `unshare --net --mount --pid --fork --kill-child` (with `-r`, a user namespace, when not root):
 * every namespace, veth and process of the emulation lives inside it, and nothing outside refers to them, so when
 * its first process ends (normally, on a failure, on Ctrl-C, or because nfv died and its pipe closed) the kernel
 * removes all of it. The prober reads the plan as one line and then watches its standard input: nfv killed, even by
 * SIGKILL, closes that pipe and the prober exits, taking the sandbox with it.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { NfvError, beyondBound, interrupted } from '../../model/errors.js';
import type { Plan } from './plan.js';
import { PROBER } from './prober.js';

/** Per probe: arrived, dropped, or no route where one was set up. */
export type Arrived = (boolean | 'unreachable' | null)[];

/** A probe to send again alone, and the rules (by position in each firewall's loaded chain) to watch. */
export interface BlameRequest {
  probe: number;
  arrived: boolean;
  watch: Record<string, number[]>;
}

/** Per request: the watched rules whose counters rose, as [namespace, position]. */
export type Blamed = [string, number][][];

/** What the prober used, said as it ends: its peak memory, and CPU seconds of it and of its children (ip). */
export interface ProberUsage {
  peakKB: number;
  cpuSeconds: number;
  childCpuSeconds: number;
}

const PYTHONS = ['/usr/bin/python3', '/usr/local/bin/python3'];

/** The sandbox's command: as root the namespaces alone, otherwise inside a user namespace. */
export function sandboxCommand(root = process.getuid?.() === 0): string[] {
  const python = PYTHONS.find((p) => existsSync(p)) ?? 'python3';
  return [
    'unshare',
    ...(root ? [] : ['-r']),
    '--net',
    '--mount',
    '--pid',
    '--fork',
    '--kill-child',
    python,
    '-c',
    PROBER,
  ];
}

const missing = (what: string) => beyondBound(`emulate: the kernel or system lacks what it needs: ${what}`);

export async function runPlan(
  plan: Plan,
  ask: (arrived: Arrived) => BlameRequest[],
  options: { signal?: AbortSignal; progress?: (phase: string) => void; root?: boolean } = {},
): Promise<{ arrived: Arrived; blamed: Blamed; usage?: ProberUsage }> {
  const [command, ...args] = sandboxCommand(options.root);
  const child = spawn(command!, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const err: string[] = [];
  const answers: string[] = [];
  let arrived: Arrived | undefined;
  let pending = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (t: string) => {
    pending += t;
    for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
      answers.push(pending.slice(0, at));
      pending = pending.slice(at + 1);
      if (answers.length === 2) options.progress?.('removing');
      if (answers.length === 1) {
        // The first answer: the verdicts; which rules decided the probes shown is asked of the same network.
        arrived = JSON.parse(answers[0]!) as Arrived;
        options.progress?.('reading counters');
        child.stdin.write(`${JSON.stringify(ask(arrived))}\n`);
      }
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (t: string) => {
    for (const line of t.split('\n').filter(Boolean)) {
      if (line === 'built') options.progress?.('probing');
      else err.push(line);
    }
  });
  const abort = () => child.kill('SIGKILL');
  options.signal?.addEventListener('abort', abort, { once: true });
  child.stdin.on('error', () => undefined); // the prober may have failed before reading it all
  child.stdin.write(`${JSON.stringify(plan)}\n`);
  options.progress?.('building');
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', (e) => reject(missing(`unshare: ${e.message}`)));
      child.on('close', (c) => resolve(c));
    });
    if (options.signal?.aborted) throw interrupted();
    const last = err.at(-1) ?? `exit ${code}`;
    if (code === 3) throw missing(last);
    if (code === 4) throw beyondBound(`emulate: ${last}`);
    if (code !== 0 && /^unshare: /.test(last)) throw missing(last);
    if (code !== 0 || !arrived || answers.length < 2) throw new NfvError(500, `emulate: the prober failed: ${last}`);
    const usage = answers[2] ? (JSON.parse(answers[2]) as ProberUsage) : undefined;
    return { arrived, blamed: JSON.parse(answers[1]!) as Blamed, usage };
  } finally {
    options.signal?.removeEventListener('abort', abort);
    child.stdin.end();
  }
}
