/**
 * Running operations for a command and printing their outcomes: data on stdout in the chosen format, failures as one
 * line on stderr, the exit code derived from the status.
 */
import type { Command } from 'commander';
import { EXIT, badRequest, exitCodeFor } from '../model/errors.js';
import {
  execute,
  invoke,
  json,
  pathOf,
  resolve,
  type Answered,
  type Call,
  type Operation,
  type Outcome,
  type Reply,
  type Request,
  type Resolved,
} from '../ops/operation.js';
import { simulationsDiff, simulationsReport } from '../ops/network/simulations.js';
import { render } from '../ops/render.js';
import { interruptSignal } from './interrupt.js';
import { globals, outputFormat, workspaceOf } from './options.js';
import { say, sayError, tableOfOutcome, writeData } from './output.js';
import { diffTable, reportTable } from './summary.js';

/** Answers with a table of their own (summary.ts); the others get the generic one (output.ts), whoever asks. */
const TABLES = new Map<string, (value: never) => string>([
  [simulationsReport.name, reportTable],
  [simulationsDiff.name, diffTable],
]);

function tableFor(outcome: Answered): string {
  const { op, reply } = outcome;
  const own = TABLES.get(op.name);
  return own && reply.kind === 'json' ? own(reply.value as never) : tableOfOutcome(outcome);
}

/**
 * The formats an operation's answer has: XML for the `/adp` envelopes and for JSON answers that declare their
 * resource type (`replySchema`), text for deployment files.
 */
function refuseFormat(cmd: Command, op: Operation): void {
  if (globals(cmd).format === 'xml' && typeof op.reply !== 'object' && !op.replySchema)
    throw badRequest('--format xml: this command answers in JSON (or a table)');
}

/** With --verbose, says a request, its status and its time on stderr. */
function sayRequest(cmd: Command, request: string, outcome: Outcome, started: number): void {
  if (globals(cmd).verbose) say(`${request}: ${outcome.status} in ${(performance.now() - started).toFixed(1)} ms`);
}

/**
 * Runs one operation for a command: the workspace of the command, Ctrl-C as the abort signal, `--in` as the body
 * format; with --verbose, says the request and its status. An output format the operation cannot give is refused
 * before anything runs. `path` is the path the user asked for, when it was one (`nfv request`).
 */
export async function runOperation<B, R extends Reply>(
  cmd: Command,
  op: Operation<B, R>,
  call: Call = {},
  path = pathOf(op, call.params ?? {}),
): Promise<Outcome<R>> {
  refuseFormat(cmd, op);
  const started = performance.now();
  const ws = workspaceOf(cmd);
  const outcome = await invoke(op, ws, { format: globals(cmd).in, signal: interruptSignal(), ...call }, path);
  sayRequest(cmd, `${op.method} ${path}${call.query?.size ? `?${call.query}` : ''}`, outcome, started);
  return outcome;
}

/**
 * Runs an HTTP-style request (`nfv request`) on the operation table, as serve mode would. The table is imported here
 * alone: every other command runs its own operations, and loading the table would load every operation's handler.
 */
export async function runRequest(cmd: Command, request: Request): Promise<Outcome> {
  const { OPERATIONS } = await import('../ops/table.js');
  let found: Resolved;
  try {
    found = resolve(OPERATIONS, request.method, request.target);
  } catch {
    // A malformed target, an unknown path or a bad id: execute answers it as serve mode would.
    const started = performance.now();
    const outcome = await execute(OPERATIONS, workspaceOf(cmd), request);
    sayRequest(cmd, `${request.method} ${request.target}`, outcome, started);
    return outcome;
  }
  const { params, query, path } = found;
  return runOperation(cmd, found.op, { params, query, body: request.body }, path);
}

/**
 * Prints an outcome: data on stdout in the chosen format, failures as one line on stderr. Returns the exit code.
 * A list of an empty collection is an empty list here (exit 0); serve keeps the interface's 404.
 */
export function printOutcome(cmd: Command, outcome: Outcome, options: { bodyOnError?: boolean } = {}): number {
  const format = outputFormat(cmd);
  if (!outcome.ok) {
    if (outcome.empty !== undefined && outcome.op) {
      // A bulk delete that finds nothing (VEREFOO's 404 for /fwd) changed nothing: said, exit 0, as a 304 is.
      if (outcome.op.method === 'DELETE') {
        say(outcome.error);
        return EXIT.ok;
      }
      if (format === 'table') writeData(`no ${outcome.empty}`);
      else {
        const empty = { ok: true, status: 200, op: outcome.op, links: outcome.links } as const;
        const reply: Reply =
          outcome.op.reply === 'json' ? json([]) : { kind: 'envelope', content: [emptyItem(outcome.op)] };
        writeData(render({ ...empty, reply }, format).body);
      }
      return EXIT.ok;
    }
    if (options.bodyOnError && format !== 'table') writeData(render(outcome, format).body);
    // In words only: the exit code gives the kind of failure, and --verbose the HTTP status.
    sayError(outcome.error);
    return exitCodeFor(outcome.status);
  }
  if (outcome.reply.kind === 'notModified') {
    say(outcome.reply.message);
    return EXIT.ok;
  }
  if (format === 'table') writeData(tableFor(outcome));
  else writeData(render(outcome, format).body);
  if (outcome.reply.kind === 'done' && process.stderr.isTTY) say('done');
  return EXIT.ok;
}

/** The empty answer of a list operation: an empty list, or its resource with every list field empty (`{graph: []}`). */
function emptyItem(op: Operation): unknown {
  const content = typeof op.reply === 'object' ? op.reply.envelope : undefined;
  if (!content || typeof content.item !== 'object' || ('many' in content && content.many)) return [];
  return Object.fromEntries(content.item.fields.filter((f) => f.list).map((f) => [f.key, []]));
}
