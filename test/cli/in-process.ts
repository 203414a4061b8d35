/**
 * `nfv ARGS` run inside the test process: the CLI's own `run` (src/cli/main.ts, what bin/nfv calls before it drains
 * and exits) with what a child would see: NO_COLOR, the workspace in NFV_WORKSPACE, stdout and stderr pipes (not a
 * terminal) and `input` on stdin; it answers as `cli` (test/helpers.ts) does, with the exit code and both outputs.
 * For the tests about an operation's answers, flags and messages: a bin/nfv child costs about 0.4 s of CPU to start
 * (Node and the bundle), this a few milliseconds. The tests about the process itself (exit on a signal, draining a
 * large answer, argv as a shell gives it, no stack trace when something throws) keep real children: test/cli/errors,
 * test/reliability/cli.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Readable } from 'node:stream';
import chalk from 'chalk';
import { run } from '../../src/cli/main.js';
import { BIN, cli, type CliResult } from '../helpers.js';

type Write = NodeJS.WriteStream['write'];

/** One command at a time: the process's env, stdin and chalk are swapped for the length of a command. */
let queue: Promise<unknown> = Promise.resolve();
/**
 * What the running command wrote. Only writes made within the command's own calls are kept: tap writes its results
 * to the same process.stdout meanwhile, and those go on to tap.
 */
const captured = new AsyncLocalStorage<{ stdout: string; stderr: string }>();

/** Runs `nfv ARGS` in this process, feeding `input` on stdin. */
export function nfvInProcess(
  args: string[],
  options: { workspace?: string; input?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  const next = queue.then(() => once(args, options));
  queue = next.catch(() => undefined);
  return next;
}

async function once(
  args: string[],
  options: { workspace?: string; input?: string; env?: Record<string, string> },
): Promise<CliResult> {
  const env: Record<string, string | undefined> = {
    NO_COLOR: '1',
    ...(options.workspace ? { NFV_WORKSPACE: options.workspace } : {}),
    ...options.env,
  };
  const savedEnv = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  const out = { stdout: '', stderr: '' };
  const swapped = (['stdout', 'stderr'] as const).map((name) => {
    const stream = process[name];
    const saved = { write: stream.write, isTTY: stream.isTTY };
    // As a pipe: the chunk kept, the callback called (main's drain waits for it), no terminal.
    stream.write = function (this: NodeJS.WriteStream, chunk: string | Uint8Array, ...rest: unknown[]) {
      const into = captured.getStore();
      if (into === undefined) return (saved.write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
      into[name] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const done = rest.find((r) => typeof r === 'function');
      if (done) process.nextTick(done as () => void);
      return true;
    } as Write;
    stream.isTTY = false as true;
    return () => Object.assign(stream, saved);
  });
  const stdin = Object.getOwnPropertyDescriptor(process, 'stdin')!;
  Object.defineProperty(process, 'stdin', {
    value: Object.assign(Readable.from([Buffer.from(options.input ?? '')]), { isTTY: false }),
    configurable: true,
    enumerable: true,
  });
  const level = chalk.level;
  chalk.level = 0;
  // A command adds its Ctrl-C listener (src/cli/interrupt.ts); a child's ends with it, here it is taken off after.
  const listening = new Set(process.listeners('SIGINT'));
  try {
    const code = await captured.run(out, () => run([process.execPath, BIN, ...args]));
    return { code, ...out };
  } finally {
    for (const l of process.listeners('SIGINT')) if (!listening.has(l)) process.removeListener('SIGINT', l);
    chalk.level = level;
    Object.defineProperty(process, 'stdin', stdin);
    for (const restore of swapped) restore();
    for (const [k, v] of Object.entries(savedEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/**
 * `nfv ARGS` as the CLI tests run it: with `input`, bin/nfv as a child process reading it from a real pipe (each file
 * that feeds stdin keeps its real process checks that way); without, in this process.
 */
export function nfv(
  args: string[],
  options: { workspace?: string; input?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  return options.input === undefined ? nfvInProcess(args, options) : cli(args, options);
}
