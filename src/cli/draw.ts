/**
 * `nfv graphs draw` and `nfv simulations draw`: Graphviz DOT on stdout or in a .dot file, or rendered to .svg or
 * .png through Graphviz's `dot` when it is installed.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Command } from 'commander';
import { parseParam } from '../model/ids.js';
import { writeUserFile } from './files.js';
import { state } from './options.js';
import { printOutcome, runOperation } from './requests.js';
import { graphsDraw } from '../ops/network/draw.js';
import { simulationsDraw } from '../ops/network/simulations.js';
import { badRequest } from '../model/errors.js';
import { say, writeData } from './output.js';

const RENDERED: Record<string, string> = { '.svg': 'svg', '.png': 'png', '.pdf': 'pdf' };

/** Renders DOT with Graphviz into FILE; a missing `dot` or a refusal is a sentence (exit 2). */
function render(dot: string, file: string): void {
  const format = RENDERED[path.extname(file).toLowerCase()]!;
  const run = spawnSync('dot', [`-T${format}`, '-o', file], { input: dot, encoding: 'utf8' });
  if (run.error && (run.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw badRequest(
      `-o ${file}: rendering needs Graphviz's dot (apt-get install graphviz); -o FILE.dot writes the DOT instead`,
    );
  }
  if (run.status !== 0) throw badRequest(`-o ${file}: dot failed: ${(run.stderr || '').split('\n')[0]}`);
}

export function drawCommand(what: 'graphs' | 'simulations'): Command {
  const param = what === 'graphs' ? 'gid' : 'smid';
  return new Command('draw')
    .description(
      what === 'graphs'
        ? 'a picture of a graph (Graphviz DOT, or .svg/.png with -o)'
        : 'a picture of a stored result: placed firewalls, unused places, failed requirements',
    )
    .argument(`<${param}>`, what === 'graphs' ? 'graph id' : 'simulation id')
    .option('-o, --output <file>', 'FILE.dot, or FILE.svg / FILE.png / FILE.pdf rendered with Graphviz')
    .action(async (id: string, opts: { output?: string }, self: Command) => {
      const op = what === 'graphs' ? graphsDraw : simulationsDraw;
      const outcome = await runOperation(self, op, { params: { [param]: parseParam(param, id) } });
      if (!outcome.ok) {
        state.exitCode = printOutcome(self, outcome);
        return;
      }
      const dot = outcome.reply.body;
      if (!opts.output) return writeData(dot);
      if (RENDERED[path.extname(opts.output).toLowerCase()]) render(dot, opts.output);
      else await writeUserFile('-o', opts.output, dot);
      say(`wrote ${opts.output}`);
    });
}
