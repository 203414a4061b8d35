/**
 * Subcommands made from operations: the operation's path parameters become arguments and its body `-f FILE`; a bulk
 * delete asks first, saying how many items go.
 */
import { Command } from 'commander';
import { badRequest } from '../model/errors.js';
import { parseParam } from '../model/ids.js';
import type { Operation } from '../ops/operation.js';
import { readInput } from './files.js';
import { state } from './options.js';
import { isInteractive, say } from './output.js';
import { printOutcome, runOperation } from './requests.js';

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

/** How many items a bulk delete would remove: the size of the collection its `list` operation reads. */
async function itemsIn(cmd: Command, bulk: BulkDelete, params: Record<string, string | number>): Promise<number> {
  const outcome = await runOperation(cmd, bulk.list, { params, query: bulk.query });
  if (!outcome.ok) return 0;
  const { reply } = outcome;
  // A list (simulations, firewall nodes), or a resource holding one (graphs: {graph: [...]}, hosts: {host: [...]}).
  const answer = reply.kind === 'envelope' ? reply.content[0] : reply.kind === 'json' ? reply.value : undefined;
  if (Array.isArray(answer)) return answer.length;
  const inner = typeof answer === 'object' && answer !== null ? Object.values(answer).find(Array.isArray) : undefined;
  return inner?.length ?? 0;
}

/** Asks before a bulk delete on a terminal; elsewhere requires --yes. */
export async function confirmed(question: string, yes: boolean | undefined): Promise<boolean> {
  if (yes) return true;
  if (!isInteractive()) throw badRequest(`${question} Pass --yes to confirm when not on a terminal.`);
  const { default: inquirer } = await import('inquirer');
  const answer = await inquirer.prompt<{ ok: boolean }>([
    { type: 'confirm', name: 'ok', message: question, default: false },
  ]);
  return answer.ok;
}

export interface BulkDelete {
  /** What it removes, one and many ("simulation result", "simulation results"), for the question. */
  item: string;
  items: string;
  /** The operation that lists them, to say how many, and its query. */
  list: Operation;
  query?: URLSearchParams;
}

/** A subcommand for one operation: its path parameters become arguments, its body `-f FILE`. */
export function opCommand(
  name: string,
  op: Operation,
  options: { bulkDelete?: BulkDelete; description?: string } = {},
): Command {
  const params = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const cmd = new Command(name).description(options.description ?? op.summary);
  for (const p of params) cmd.argument(`<${p}>`, PARAM_HELP[p] ?? p);
  if (op.body) cmd.option('-f, --file <file>', 'input document, XML or JSON (- or none: stdin)');
  if (options.bulkDelete) cmd.option('-y, --yes', 'do not ask for confirmation');
  cmd.action(async (...args: unknown[]) => {
    const self = args.at(-1) as Command;
    const opts = self.opts<{ file?: string; yes?: boolean }>();
    // Arguments go through the same parser as path segments, so that '' or '..' is refused here, by name.
    const values: Record<string, string | number> = Object.create(null);
    params.forEach((p, k) => (values[p] = parseParam(p, String(args[k]))));
    const bulk = options.bulkDelete;
    if (bulk && !opts.yes) {
      const count = await itemsIn(self, bulk, values);
      const question = count === 1 ? `Delete the 1 ${bulk.item}?` : `Delete all ${count} ${bulk.items}?`;
      if (count > 0 && !(await confirmed(question, opts.yes))) {
        say('cancelled');
        return;
      }
    }
    const body = op.body ? await readInput(opts.file) : undefined;
    state.exitCode = printOutcome(self, await runOperation(self, op, { params: values, body }));
  });
  return cmd;
}

/** A command group: `nfv graphs ...`. */
export function group(name: string, description: string, commands: Command[]): Command {
  const g = new Command(name).description(description);
  for (const c of commands) g.addCommand(c);
  return g;
}
