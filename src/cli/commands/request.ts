import { Command } from 'commander';
import { readInput } from '../files.js';
import { state } from '../options.js';
import { printOutcome, runRequest } from '../requests.js';

/** Any operation of the table by method and path, as serve mode would answer it. */
export const requestCommand = new Command('request')
  .description('send METHOD PATH to the operation table, like an HTTP request to nfv serve')
  .argument('<method>', 'GET, POST, PUT or DELETE')
  .argument('<path>', 'path with an optional query string, e.g. /adp/graphs/3')
  .option('-d, --data <data>', 'request body: @FILE, - for stdin, or the document itself')
  .action(async (method: string, path: string, opts: { data?: string }, self: Command) => {
    let body: string | undefined;
    if (opts.data === '-' || opts.data?.startsWith('@')) body = await readInput(opts.data);
    else body = opts.data;
    state.exitCode = printOutcome(self, await runRequest(self, { method, target: path, body }), { bodyOnError: true });
  });
