import {
  simulationsByParams,
  simulationsRun,
  simulationsReconfigure,
  simulationsDelete,
  type SimulationReply,
  simulationsDiff,
  simulationsList,
  simulationsSummary,
  simulationsDeleteAll,
  simulationsGet,
  simulationsReport,
  answerHolds,
  warmSolver,
} from '../../ops/network/simulations.js';
import path from 'node:path';
import Table from 'cli-table3';
import { Command, Option } from 'commander';
import { encodeDocument, detectFormat } from '../../model/codec.js';
import { EXIT } from '../../model/errors.js';
import { NfvType } from '../../model/resources.js';
import type { Format } from '../../model/schema.js';
import type { NFV } from '../../model/types.js';
import type { Outcome } from '../../ops/operation.js';
import type { Report } from '../../engine/simulate.js';
import { takeEarlyDocument } from '../../engine/threads/early.js';
import { ALGORITHMS, MAX_EFFORT, MAX_TIMEOUT_SECONDS, OBJECTIVES, SIMULATION_DEFAULTS } from '../../model/limits.js';

import { parseParam } from '../../model/ids.js';

import { readInput, writeUserFile } from '../files.js';

import { group, opCommand } from '../op-command.js';
import { globals, outputFormat, state } from '../options.js';
import { printOutcome, runOperation } from '../requests.js';
import { badRequest } from '../../model/errors.js';
import { plainStyle, say, widthAtLeastOne, writeData } from '../output.js';
import { drawCommand } from '../draw.js';
import { simulationSummary } from '../summary.js';
import { plural } from '../../model/words.js';

interface SimulateOptions {
  gid?: string;
  rid?: string;
  sid?: string;
  algorithm: string;
  timeout?: string;
  fid: string[];
  store?: boolean;
  reconfigure?: boolean;
  objective: string;
  effort: string;
  output?: string;
}

/** With --verbose: where the time went, phase by phase and component by component. */
function sayTimings(self: Command, r: Report): void {
  const t = r.timings;
  if (!globals(self).verbose || !t) return;
  const phases = (['parse', 'expansion', 'paths', 'flows', 'solving', 'placing', 'writing'] as const).map(
    (k) => `${k} ${t[k]} s`,
  );
  say(`engine: ${phases.join(', ')}`);
  t.components.forEach((c, k) =>
    say(
      `  component ${k + 1}: ${plural(c.requirements, 'requirement')}, ${plural(c.variables, 'variable')}, ` +
        `${plural(c.clauses, 'clause')}; ` +
        `${c.method}; encoding ${c.encoding} s, total ${c.seconds} s`,
    ),
  );
}

/** One line for stderr: the verdict, what was placed, how long it took; then the requirements that failed. */
function summarise({ report: r, summary }: { report: Report; summary: string }, seconds: number): void {
  say(`${r.verdict}: ${summary}; ${seconds.toFixed(2)} s`);
  const failed = r.requirements.filter((q) => !q.isSat);
  for (const q of failed.slice(0, 10))
    say(`  ${q.unknown ? 'unknown' : 'not enforceable'}: #${q.index} ${q.name} ${q.src} -> ${q.dst}: ${q.reason}`);
  if (failed.length > 10) say(`  ... and ${failed.length - 10} more (nfv simulations report)`);
}

export const simulateCommand = new Command('simulate')
  .description('place and configure firewalls so that the requirements hold, or verify configured ones')
  .argument('[file]', 'NFV document, XML or JSON (- or none: stdin); or use --gid')
  .option('--gid <gid>', 'simulate a stored graph instead of a document')
  .option('--rid <rid>', 'with --gid: the requirement set (default: the properties that refer to the graph)')
  .option('--sid <sid>', 'with --gid: the substrate')
  .addOption(new Option('--algorithm <name>', 'algorithm').choices(ALGORITHMS).default(SIMULATION_DEFAULTS.algorithm))
  .option(
    '--timeout <seconds>',
    `solver time limit, at most ${MAX_TIMEOUT_SECONDS} ` +
      `(default: ${SIMULATION_DEFAULTS.timeoutSeconds} times the effort)`,
  )
  .option('--fid <type...>', 'functional types of interest (checked, informative)', [])
  .option('--store', 'also store the inputs and the result in the workspace')
  .option('--reconfigure', 'configured firewalls are deployed: change their rules as little as possible')
  .addOption(
    new Option(
      '--objective <name>',
      'fewest-rules (VEREFOO: fewest firewalls, then rules) or least-privilege (firewalls let through only ' +
        'what reachability requirements need, then fewest firewalls and rules)',
    )
      .choices(OBJECTIVES)
      .default(SIMULATION_DEFAULTS.objective),
  )
  .option(
    '--effort <n>',
    `how hard to try to prove the answer minimal, 1 to ${MAX_EFFORT}: N times the proof's and the bounds' work, ` +
      'and larger networks solved whole (the same answer on any machine; slower)',
    String(SIMULATION_DEFAULTS.effort),
  )
  .option('-o, --output <file>', 'write the result document to FILE (in the input format unless --format says)')
  .action(async (file: string | undefined, opts: SimulateOptions, self: Command) => {
    // The solver thread starts while the input is read and checked.
    warmSolver();
    if (opts.gid !== undefined && file !== undefined) throw badRequest(`give a document (${file}) or --gid, not both`);
    if (opts.gid === undefined && (opts.rid !== undefined || opts.sid !== undefined)) {
      throw badRequest(`${opts.rid !== undefined ? '--rid' : '--sid'} goes with --gid (the stored graph to simulate)`);
    }
    const query = new URLSearchParams({ algorithm: opts.algorithm });
    if (opts.timeout !== undefined) query.set('timeout', opts.timeout);
    for (const f of opts.fid) query.append('fid', f);
    if (opts.reconfigure) query.set('reconfigure', 'true');
    if (opts.objective !== SIMULATION_DEFAULTS.objective) query.set('objective', opts.objective);
    // Checked where the query is (ops): a bad value is the same one-line error from the CLI and over HTTP.
    if (opts.effort !== String(SIMULATION_DEFAULTS.effort)) query.set('effort', opts.effort);
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    if (opts.gid !== undefined) {
      for (const k of ['gid', 'rid', 'sid'] as const) if (opts[k] !== undefined) query.set(k, opts[k]!);
      const outcome = await spinning(started, (progress) =>
        runOperation(self, simulationsByParams, { query, progress }),
      );
      state.exitCode = printOutcome(self, outcome);
      if (!outcome.ok) return;
      summarise(outcome.reply, seconds());
      sayTimings(self, outcome.reply.report);
      state.exitCode = answerHolds(outcome.reply.report) ? EXIT.ok : EXIT.unsatisfied;
      return;
    }
    const body = await readInput(file);
    const inputFormat = globals(self).in ?? detectFormat(body);
    query.set('store', opts.store ? 'true' : 'false');
    if (file && file !== '-') query.set('origin', path.basename(file).slice(0, 200));
    const decoded = takeEarlyDocument(body, inputFormat);
    const outcome = await spinning(started, (progress) =>
      runOperation(self, simulationsRun, { query, body, decoded, format: inputFormat, progress }),
    );
    await showResult(self, outcome, inputFormat, opts.output, seconds);
  });

/** A simulation's answer: the summary for a person; for a pipe, --format xml|json or -o FILE, the document. */
async function showResult(
  self: Command,
  outcome: Outcome<SimulationReply<unknown>>,
  inputFormat: Format | undefined,
  output: string | undefined,
  seconds: () => number,
): Promise<void> {
  if (!outcome.ok) {
    state.exitCode = printOutcome(self, outcome);
    return;
  }
  const { report } = outcome.reply;
  const nfv = outcome.reply.content[0] as NFV;
  const format = globals(self).format ?? (process.stdout.isTTY ? 'table' : (inputFormat ?? 'json'));
  const documentFormat = format === 'table' ? (inputFormat ?? 'xml') : format;
  if (output) await writeUserFile('-o', output, encodeDocument(NfvType, nfv, documentFormat));
  if (format === 'table') writeData(`${simulationSummary(nfv, report)}\n(${seconds().toFixed(2)} s)`);
  else {
    if (!output) writeData(encodeDocument(NfvType, nfv, format));
    summarise(outcome.reply, seconds());
  }
  sayTimings(self, report);
  const stored = outcome.reply.links?.find((l) => l.rel === 'simulation');
  if (stored) say(`stored as ${stored.href}`);
  state.exitCode = answerHolds(report) ? EXIT.ok : EXIT.unsatisfied;
}

/** `simulations reconfigure SMID -f REQUIREMENTS`: new requirements against a stored result, stored anew. */
const reconfigureCommand = new Command('reconfigure')
  .description('new requirements against a stored result: its firewalls change as little as possible')
  .argument('<smid>', 'the stored simulation whose firewalls are deployed')
  .option('-f, --file <file>', 'the new requirements (a PropertyDefinition), XML or JSON (- or none: stdin)')
  .option(
    '--timeout <seconds>',
    `solver time limit, at most ${MAX_TIMEOUT_SECONDS}`,
    String(SIMULATION_DEFAULTS.timeoutSeconds),
  )
  .option('-o, --output <file>', 'write the result document to FILE')
  .action(async (smid: string, opts: { file?: string; timeout: string; output?: string }, self: Command) => {
    const params = { smid: parseParam('smid', smid) };
    warmSolver();
    const body = await readInput(opts.file);
    const inputFormat = globals(self).in ?? detectFormat(body);
    const query = new URLSearchParams({ timeout: opts.timeout });
    const started = performance.now();
    const outcome = await spinning(started, (progress) =>
      runOperation(self, simulationsReconfigure, { params, query, body, format: inputFormat, progress }),
    );
    await showResult(self, outcome, inputFormat, opts.output, () => (performance.now() - started) / 1000);
  });

/**
 * Runs `work` under a spinner on a terminal that says the phase and the seconds so far; the elapsed time keeps
 * counting while Z3 works, between phase changes.
 */
export async function spinning<T>(
  started: number,
  work: (progress: (phase: string) => void) => Promise<T>,
): Promise<T> {
  // Off a terminal nothing spins: ora is not even loaded (it costs a small simulation a tenth of its time).
  if (!process.stderr.isTTY) return work(() => {});
  // Loaded here, not at start-up: only simulate spins. discardStdin off: ora's raw-mode stdin never resumes a
  // stream that was not read yet, so Ctrl-C was swallowed.
  const { default: ora } = await import('ora');
  const spinner = ora({
    text: 'reading',
    stream: process.stderr,
    discardStdin: false,
  });
  let phase = 'reading';
  const show = () => {
    spinner.text = `${phase} (${((performance.now() - started) / 1000).toFixed(1)} s)`;
  };
  const ticker = setInterval(show, 100);
  const releaseWidth = widthAtLeastOne(process.stderr);
  spinner.start();
  try {
    return await work((next) => {
      phase = next;
      show();
    });
  } finally {
    clearInterval(ticker);
    spinner.stop();
    releaseWidth?.();
  }
}

/** `simulations list`: one line per stored result, a table for a person, the JSON list when piped. */
const listCommand = new Command('list')
  .description('stored simulation results: id, verdict, requirements held, firewalls, rules, how and when')
  .action(async (_opts: unknown, self: Command) => {
    const outcome = await runOperation(self, simulationsSummary);
    if (!outcome.ok || outputFormat(self) !== 'table') {
      state.exitCode = printOutcome(self, outcome);
      return;
    }
    const rows = outcome.reply.value;
    if (rows.length === 0) return writeData('no simulations');
    const table = new Table({
      head: ['id', 'verdict', 'held', 'firewalls', 'rules', 'algorithm', 'seconds', 'created', 'origin'],
      style: plainStyle(),
    });
    for (const r of rows) {
      table.push(
        [
          r.id,
          r.verdict,
          `${r.held}/${r.requirements}`,
          `${r.firewalls} (${r.placed} placed)`,
          r.rules,
          r.algorithm ?? '',
          r.seconds ?? '',
          r.created ?? '',
          r.origin ?? '',
        ].map((v) => String(v)),
      );
    }
    writeData(table.toString());
  });

/** `simulations diff A B`: what changed, as tables for a person (summary.ts), as JSON when piped. */
const diffCommand = new Command('diff')
  .description('what changed from stored result A to B: requirement verdicts, firewalls, rules')
  .argument('<smid>', 'the earlier simulation id')
  .argument('<other>', 'the later simulation id')
  .action(async (a: string, b: string, _opts: unknown, self: Command) => {
    const params = { smid: parseParam('smid', a), other: parseParam('other', b) };
    state.exitCode = printOutcome(self, await runOperation(self, simulationsDiff, { params }));
  });

export const simulationsCommand = group('simulations', 'stored simulation results', [
  listCommand,
  diffCommand,
  reconfigureCommand,
  drawCommand('simulations'),
  opCommand('get', simulationsGet),
  opCommand('report', simulationsReport),
  opCommand('delete', simulationsDelete),
  opCommand('delete-all', simulationsDeleteAll, {
    bulkDelete: { item: 'simulation result', items: 'simulation results', list: simulationsList },
  }),
]);
