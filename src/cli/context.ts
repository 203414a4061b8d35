/**
 * What every CLI command shares: the global options, reading an input document, running a request against the
 * operation table and printing its outcome, and turning an operation of the table into a subcommand.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { decodeUtf8 } from '../model/codec.js';
import { CLIENT_GONE, EXIT, exitCodeFor } from '../model/errors.js';
import { parseParam } from '../model/ids.js';
import type { Format } from '../model/schema.js';
import { execute, route, type Operation, type Outcome, type Request } from '../ops/operation.js';
import { parseTarget } from '../model/target.js';
import { render } from '../ops/render.js';
import { OPERATIONS, operationNamed } from '../ops/table.js';
import { Workspace, resolveWorkspaceDir } from '../store/workspace.js';
import { isInteractive, say, sayError, tableOfOutcome, writeData, type OutputFormat } from './output.js';

export interface GlobalOptions {
  workspace?: string;
  quiet?: boolean;
  verbose?: boolean;
  lockTimeout?: number;
  format?: OutputFormat;
  in?: Format;
}

/** The exit code of the command that ran; commands set it, `run` returns it. */
export const state = { exitCode: 0 as number };

export const globals = (cmd: Command) => cmd.optsWithGlobals<GlobalOptions>();
export const workspaceOf = (cmd: Command) => {
  const g = globals(cmd);
  const seconds =
    g.lockTimeout ??
    (process.env.NFV_LOCK_TIMEOUT ? lockSeconds('NFV_LOCK_TIMEOUT', process.env.NFV_LOCK_TIMEOUT) : undefined);
  // A workspace the user named (-w, NFV_WORKSPACE) must exist to be read; the default one reads as empty.
  const named = g.workspace !== undefined || process.env.NFV_WORKSPACE !== undefined;
  return new Workspace(resolveWorkspaceDir(g.workspace), {
    lockTimeoutMs: seconds === undefined ? undefined : seconds * 1000,
    mustExist: named,
  });
};

/** A lock wait in seconds, 0 to 600, from a flag or the environment. */
function lockSeconds(name: string, text: string): number {
  const n = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || n > 600)
    throw new UsageError(`${name}: ${JSON.stringify(text).slice(0, 40)} is not a number of seconds from 0 to 600`);
  return n;
}

let interruption: AbortController | undefined;

/**
 * Aborted on Ctrl-C: the running request stops (a simulation's solver thread is terminated) and stores nothing. If
 * the command has not ended a second later, or on a second Ctrl-C, the process exits 130 at once.
 */
export function interruptSignal(): AbortSignal {
  if (!interruption) {
    const controller = (interruption = new AbortController());
    process.once('SIGINT', () => {
      controller.abort();
      setTimeout(() => process.exit(EXIT.interrupted), 1000).unref();
      process.once('SIGINT', () => process.exit(EXIT.interrupted));
    });
  }
  return interruption.signal;
}

export function addGlobalOptions(program: Command): Command {
  return program
    .option('-w, --workspace <dir>', 'workspace folder (default $NFV_WORKSPACE or ./workspaces/default)')
    .option(
      '--lock-timeout <seconds>',
      'how long to wait for another process holding the workspace lock (default 5, $NFV_LOCK_TIMEOUT)',
      (v) => lockSeconds('--lock-timeout', v),
    )
    .addOption(
      new Option('--format <format>', 'output format (default: table on a terminal, json when piped)').choices([
        'xml',
        'json',
        'table',
      ]),
    )
    .addOption(new Option('--in <format>', 'input format (default: detected)').choices(['xml', 'json']))
    .option('-q, --quiet', 'no messages on stderr but errors')
    .option('-v, --verbose', 'also say each request to the operation table, its status and time, on stderr');
}

/** Why the operating system refused a path the user gave, in words. */
function pathProblem(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code;
  const words: Record<string, string> = {
    ENOENT: 'no such file or folder',
    EISDIR: 'it is a folder',
    ENOTDIR: 'a part of the path is not a folder',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EROFS: 'read-only file system',
    ENOSPC: 'no space left on the device',
    EEXIST: 'it exists and is not a folder',
  };
  return (code && Object.hasOwn(words, code) ? words[code] : undefined) ?? (e as Error).message;
}

/** Writes a file the user named (`what` is the flag, e.g. `-o`); the OS's refusal is a usage error naming it. */
export async function writeUserFile(what: string, file: string, content: string): Promise<void> {
  try {
    await writeFile(file, content);
  } catch (e) {
    throw new UsageError(`${what} ${file}: ${pathProblem(e)}`);
  }
}

/** Creates a folder the user named, with its parents. */
export async function makeUserFolder(what: string, dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (e) {
    throw new UsageError(`${what} ${dir}: ${pathProblem(e)}`);
  }
}

/** Reads an input document from a file, or from stdin for `-` or when no file is given and stdin is not a terminal. */
export async function readInput(file: string | undefined): Promise<string> {
  if (file && file !== '-') {
    const name = file.startsWith('@') ? file.slice(1) : file;
    let bytes: Buffer;
    try {
      bytes = await readFile(name);
    } catch (e) {
      throw new UsageError(`cannot read ${file}: ${pathProblem(e)}`);
    }
    return decodeUtf8(bytes, name);
  }
  if (process.stdin.isTTY) throw new UsageError('no input: give -f FILE or pipe a document to stdin');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return decodeUtf8(Buffer.concat(chunks), 'standard input');
}

/** A mistake in how the command was called (exit 2). */
export class UsageError extends Error {}

export const outputFormat = (cmd: Command): OutputFormat =>
  globals(cmd).format ?? (process.stdout.isTTY ? 'table' : 'json');

/**
 * Prints an outcome: data on stdout in the chosen format, failures as one line on stderr. Returns the exit code.
 * A list of an empty collection is an empty list here (exit 0); serve keeps the interface's 404.
 */
export function printOutcome(cmd: Command, outcome: Outcome, options: { bodyOnError?: boolean } = {}): number {
  const format = outputFormat(cmd);
  if (outcome.empty !== undefined) {
    if (format === 'table') writeData(`no ${outcome.empty}`);
    else
      writeData(
        render({ ...outcome, status: 200, error: undefined, reply: { content: [emptyItem(outcome.op)] } }, format).body,
      );
    return EXIT.ok;
  }
  if (outcome.error) {
    if (options.bodyOnError && format !== 'table') writeData(render(outcome, format).body);
    if (outcome.status === 304) {
      say(outcome.error);
      return EXIT.ok;
    }
    // 499 is no HTTP status a user knows: an interruption says so in words.
    sayError(outcome.status === CLIENT_GONE ? outcome.error : `${outcome.error} (${outcome.status})`);
    return exitCodeFor(outcome.status);
  }
  if (format === 'table') writeData(tableOfOutcome(outcome));
  else writeData(render(outcome, format).body);
  if (outcome.op?.reply === 'none' && process.stderr.isTTY) say(`done (${outcome.status})`);
  return EXIT.ok;
}

/** The empty answer of a list operation: an empty list, or its resource with every list field empty (`{graph: []}`). */
function emptyItem(op: Operation | undefined): unknown {
  const content = typeof op?.reply === 'object' ? op.reply.envelope : undefined;
  if (!content || typeof content.item !== 'object' || ('many' in content && content.many)) return [];
  return Object.fromEntries(content.item.fields.filter((f) => f.list).map((f) => [f.key, []]));
}

/** The formats an operation's answer has: XML only for the `/adp` envelopes, text for deployment files. */
function refuseFormat(cmd: Command, op: Operation | undefined): void {
  const format = globals(cmd).format;
  if (format === 'xml' && op && typeof op.reply !== 'object')
    throw new UsageError('--format xml: this command answers in JSON (or a table)');
}

/**
 * Runs one request of the CLI on the operation table: the workspace of the command, Ctrl-C as the abort signal,
 * `--in` as the body format; with --verbose, says the request and its status. An output format the operation
 * cannot give is refused before anything runs.
 */
export async function executeFor(cmd: Command, request: Request): Promise<Outcome> {
  try {
    refuseFormat(cmd, route(OPERATIONS, request.method, parseTarget(request.target).segments).op);
  } catch (e) {
    if (e instanceof UsageError) throw e;
    // A malformed target or an unknown path: execute answers it as serve mode would.
  }
  const started = performance.now();
  const outcome = await execute(OPERATIONS, workspaceOf(cmd), {
    format: globals(cmd).in,
    signal: interruptSignal(),
    ...request,
  });
  if (globals(cmd).verbose)
    say(`${request.method} ${request.target}: ${outcome.status} in ${(performance.now() - started).toFixed(1)} ms`);
  return outcome;
}

export async function runRequest(
  cmd: Command,
  request: Request,
  options: { bodyOnError?: boolean } = {},
): Promise<number> {
  return printOutcome(cmd, await executeFor(cmd, request), options);
}

const PARAM_HELP: Record<string, string> = {
  gid: 'graph id',
  nid: 'node id',
  noid: 'node id',
  neid: 'neighbour id',
  cid: 'configuration id',
  rid: 'requirement set id',
  pid: 'property id',
  sid: 'substrate id',
  hid: 'host name',
  smid: 'simulation id',
  eid: 'rule id',
};

/** How many items a bulk delete would remove: the size of the collection it empties. */
async function itemsAt(cmd: Command, path: string): Promise<number> {
  const outcome = await execute(OPERATIONS, workspaceOf(cmd), { method: 'GET', target: path });
  if (outcome.error) return 0;
  // A list (simulations, firewall nodes), or a resource holding one (graphs: {graph: [...]}, hosts: {host: [...]}).
  const answer = outcome.reply.content?.[0] ?? outcome.reply.value;
  const list = Array.isArray(answer) ? answer : Object.values(answer as object).find(Array.isArray);
  return list?.length ?? 0;
}

/** Asks before a bulk delete on a terminal; elsewhere requires --yes. */
export async function confirmed(question: string, yes: boolean | undefined): Promise<boolean> {
  if (yes) return true;
  if (!isInteractive()) throw new UsageError(`${question} Pass --yes to confirm when not on a terminal.`);
  const { default: inquirer } = await import('inquirer');
  const answer = await inquirer.prompt<{ ok: boolean }>([
    { type: 'confirm', name: 'ok', message: question, default: false },
  ]);
  return answer.ok;
}

/** A subcommand for one operation of the table: its path parameters become arguments, its body `-f FILE`. */
export function opCommand(
  name: string,
  opName: string,
  options: { confirm?: string; countAt?: string; description?: string } = {},
): Command {
  // options.confirm names the items a bulk delete removes ("simulation results"); the prompt says how many, counted
  // by a GET of the same path (or of options.countAt).
  const op = operationNamed(opName);
  const params = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const cmd = new Command(name).description(options.description ?? op.summary);
  for (const p of params) cmd.argument(`<${p}>`, PARAM_HELP[p] ?? p);
  if (op.body) cmd.option('-f, --file <file>', 'input document, XML or JSON (- or none: stdin)');
  if (options.confirm) cmd.option('-y, --yes', 'do not ask for confirmation');
  cmd.action(async (...args: unknown[]) => {
    const self = args.at(-1) as Command;
    const opts = self.opts<{ file?: string; yes?: boolean }>();
    // Arguments go through the same parser as path segments, so that '' or '..' is refused here, by name.
    params.forEach((p, k) => parseParam(p, String(args[k])));
    const target = params.reduce((path, p, k) => path.replace(`{${p}}`, encodeURIComponent(String(args[k]))), op.path);
    if (options.confirm && !opts.yes) {
      const count = await itemsAt(self, options.countAt ?? target);
      if (count > 0 && !(await confirmed(`Delete all ${count} ${options.confirm}?`, opts.yes))) {
        say('cancelled');
        return;
      }
    }
    const body = op.body ? await readInput(opts.file) : undefined;
    state.exitCode = await runRequest(self, { method: op.method, target, body });
  });
  return cmd;
}

/** A command group: `nfv graphs ...`. */
export function group(name: string, description: string, commands: Command[]): Command {
  const g = new Command(name).description(description);
  for (const c of commands) g.addCommand(c);
  return g;
}
