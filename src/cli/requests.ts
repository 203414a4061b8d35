/**
 * Running operations for a command and printing their outcomes: data on stdout in the chosen format, failures as one
 * line on stderr, the exit code derived from the status.
 */
import type { Command } from 'commander';
import { CLIENT_GONE, EXIT, badRequest, exitCodeFor } from '../model/errors.js';
import {
  execute,
  invoke,
  pathOf,
  route,
  type Call,
  type Operation,
  type Outcome,
  type Reply,
  type Request,
} from '../ops/operation.js';
import { parseTarget } from '../model/target.js';
import { render } from '../ops/render.js';
import { OPERATIONS } from '../ops/table.js';
import { interruptSignal } from './interrupt.js';
import { globals, outputFormat, workspaceOf } from './options.js';
import { say, sayError, tableOfOutcome, writeData } from './output.js';

/** The formats an operation's answer has: XML only for the `/adp` envelopes, text for deployment files. */
function refuseFormat(cmd: Command, op: Operation): void {
  if (globals(cmd).format === 'xml' && typeof op.reply !== 'object')
    throw badRequest('--format xml: this command answers in JSON (or a table)');
}

/**
 * Runs one operation for a command: the workspace of the command, Ctrl-C as the abort signal, `--in` as the body
 * format; with --verbose, says the request and its status. An output format the operation cannot give is refused
 * before anything runs.
 */
export async function runOperation<B, R extends Reply>(
  cmd: Command,
  op: Operation<B, R>,
  call: Call = {},
): Promise<Outcome<R>> {
  refuseFormat(cmd, op);
  const started = performance.now();
  const outcome = await invoke(op, workspaceOf(cmd), { format: globals(cmd).in, signal: interruptSignal(), ...call });
  if (globals(cmd).verbose) {
    const query = call.query?.size ? `?${call.query}` : '';
    const ms = (performance.now() - started).toFixed(1);
    say(`${op.method} ${pathOf(op, call.params ?? {})}${query}: ${outcome.status} in ${ms} ms`);
  }
  return outcome;
}

/** Runs an HTTP-style request (`nfv request`) on the operation table, as serve mode would. */
export async function runRequest(cmd: Command, request: Request): Promise<Outcome> {
  let op: Operation | undefined;
  try {
    op = route(OPERATIONS, request.method.toUpperCase(), parseTarget(request.target).segments).op;
  } catch {
    // A malformed target or an unknown path: execute answers it as serve mode would.
  }
  if (op) refuseFormat(cmd, op);
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

/**
 * Prints an outcome: data on stdout in the chosen format, failures as one line on stderr. Returns the exit code.
 * A list of an empty collection is an empty list here (exit 0); serve keeps the interface's 404.
 */
export function printOutcome(cmd: Command, outcome: Outcome, options: { bodyOnError?: boolean } = {}): number {
  const format = outputFormat(cmd);
  if (!outcome.ok) {
    if (outcome.empty !== undefined && outcome.op) {
      if (format === 'table') writeData(`no ${outcome.empty}`);
      else {
        const empty = { ok: true, status: 200, op: outcome.op, links: outcome.links } as const;
        writeData(render({ ...empty, reply: { kind: 'envelope', content: [emptyItem(outcome.op)] } }, format).body);
      }
      return EXIT.ok;
    }
    if (options.bodyOnError && format !== 'table') writeData(render(outcome, format).body);
    // 499 is no HTTP status a user knows: an interruption says so in words.
    sayError(outcome.status === CLIENT_GONE ? outcome.error : `${outcome.error} (${outcome.status})`);
    return exitCodeFor(outcome.status);
  }
  if (outcome.reply.kind === 'notModified') {
    say(outcome.reply.message);
    return EXIT.ok;
  }
  if (format === 'table') writeData(tableOfOutcome(outcome));
  else writeData(render(outcome, format).body);
  if (outcome.reply.kind === 'done' && process.stderr.isTTY) say(`done (${outcome.status})`);
  return EXIT.ok;
}

/** The empty answer of a list operation: an empty list, or its resource with every list field empty (`{graph: []}`). */
function emptyItem(op: Operation): unknown {
  const content = typeof op.reply === 'object' ? op.reply.envelope : undefined;
  if (!content || typeof content.item !== 'object' || ('many' in content && content.many)) return [];
  return Object.fromEntries(content.item.fields.filter((f) => f.list).map((f) => [f.key, []]));
}
