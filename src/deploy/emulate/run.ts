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

export interface Measured {
  /** Per probe: arrived, dropped, or no route where one was set up. */
  arrived: (boolean | 'unreachable')[];
  /** Per blame group: the firewall namespace and loaded-chain rule whose drop counter rose. */
  blamed: ({ probe: number; ns?: string; rule?: number } | null)[];
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
  options: { signal?: AbortSignal; progress?: (phase: string) => void; root?: boolean } = {},
): Promise<Measured> {
  const [command, ...args] = sandboxCommand(options.root);
  const child = spawn(command!, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: string[] = [];
  child.stdout.on('data', (b: Buffer) => out.push(b));
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
    if (code !== 0 && /^unshare: /.test(last)) throw missing(last);
    if (code !== 0) throw new NfvError(500, `emulate: the prober failed: ${last}`);
    return JSON.parse(Buffer.concat(out).toString('utf8')) as Measured;
  } finally {
    options.signal?.removeEventListener('abort', abort);
    child.stdin.end();
  }
}
