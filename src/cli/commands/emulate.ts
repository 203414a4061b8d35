/** `nfv emulate`: an answer in Linux network namespaces, the kernel's verdict beside every claim (docs/emulate.md). */
import Table from 'cli-table3';
import { Command } from 'commander';
import { detectFormat } from '../../model/codec.js';
import { EXIT, badRequest } from '../../model/errors.js';
import { parseParam } from '../../model/ids.js';
import type { EmulationReport } from '../../deploy/emulate/index.js';
import { emulationRun, simulationsEmulate } from '../../ops/network/emulation.js';
import { simulationsByParams } from '../../ops/network/simulations.js';
import type { Outcome, JsonReply } from '../../ops/operation.js';
import { plural } from '../../model/words.js';
import { readInput } from '../files.js';
import { globals, outputFormat, state } from '../options.js';
import { plainStyle, say, writeData } from '../output.js';
import { printOutcome, runOperation } from '../requests.js';
import { spinning } from './simulate.js';

const pathMark = (role: string) =>
  role === 'pinned' ? '' : `${role.includes('default') ? 'D' : ''}${role.includes('witness') ? 'W' : ''} `;

/** The report on a terminal: one line per requirement, then what it does not cover. */
function tableOfReport(r: EmulationReport): string {
  const table = new Table({
    head: ['#', 'requirement', 'traffic', 'kernel', 'nfv', 'agree', 'path', 'deciding rule', 'arrived per path'],
    style: plainStyle(),
  });
  for (const q of r.requirements)
    table.push([
      q.index,
      q.requirement,
      q.traffic,
      q.kernel,
      q.claim,
      q.agree ? 'yes' : 'NO',
      q.path,
      q.rule,
      // D the default route, W the witness: where the model lets the requirement through.
      q.onPaths.map((p) => `${pathMark(p.role)}${p.arrived}/${p.probes}`).join(', '),
    ]);
  const head =
    `${r.agree ? 'the kernel agrees with every claim' : 'the kernel DISAGREES'}: ` +
    `${plural(r.requirements.length, 'requirement')}, ${plural(r.probes, 'probe')}, ` +
    `${plural(r.namespaces, 'namespace')}, ${plural(r.links, 'link')}, ${plural(r.firewalls, 'firewall')}`;
  return [head, table.toString(), 'not covered:', ...r.notCovered.map((n) => `  - ${n}`)].join('\n');
}

function show(self: Command, outcome: Outcome<JsonReply<EmulationReport>>): void {
  if (!outcome.ok || outputFormat(self) !== 'table') {
    state.exitCode = printOutcome(self, outcome);
    if (!outcome.ok) return;
  } else writeData(tableOfReport(outcome.reply.value));
  const report = outcome.reply.value;
  if (!report.agree) say(`nfv: the kernel disagrees with ${report.requirements.filter((q) => !q.agree).length} claims`);
  state.exitCode = report.agree ? EXIT.ok : EXIT.unsatisfied;
}

interface EmulateOptions {
  gid?: string;
  rid?: string;
  sid?: string;
  iptables?: boolean;
}

export const emulateCommand = new Command('emulate')
  .description('build an answer in Linux network namespaces and probe every requirement with real packets')
  .argument('[result]', 'a result NFV (as nfv simulate writes it; - or none: stdin), or a stored simulation id')
  .option('--gid <gid>', 'simulate a stored graph first (stored), then emulate its result')
  .option('--rid <rid>', 'with --gid: the requirement set')
  .option('--sid <sid>', 'with --gid: the substrate')
  .option('--iptables', 'load every firewall with nfv deploy iptables (iptables-restore), not nftables')
  .action(async (result: string | undefined, opts: EmulateOptions, self: Command) => {
    if (opts.gid !== undefined && result !== undefined)
      throw badRequest(`give a result (${result}) or --gid, not both`);
    if (opts.gid === undefined && (opts.rid !== undefined || opts.sid !== undefined))
      throw badRequest(`${opts.rid !== undefined ? '--rid' : '--sid'} goes with --gid (the stored graph to simulate)`);
    const started = performance.now();
    let smid: number | undefined;
    if (opts.gid !== undefined) {
      const query = new URLSearchParams();
      for (const k of ['gid', 'rid', 'sid'] as const) if (opts[k] !== undefined) query.set(k, opts[k]!);
      const simulated = await spinning(started, (progress) =>
        runOperation(self, simulationsByParams, { query, progress }),
      );
      if (!simulated.ok) {
        state.exitCode = printOutcome(self, simulated);
        return;
      }
      smid = simulated.reply.content[0] as number;
      say(`simulated as simulation ${smid}`);
    } else if (result !== undefined && /^\d+$/.test(result)) smid = parseParam('smid', result) as number;
    const query = new URLSearchParams(opts.iptables ? { iptables: 'true' } : {});
    if (smid !== undefined) {
      const params = { smid };
      show(
        self,
        await spinning(started, (progress) => runOperation(self, simulationsEmulate, { params, query, progress })),
      );
      return;
    }
    const body = await readInput(result);
    const format = globals(self).in ?? detectFormat(body);
    show(
      self,
      await spinning(started, (progress) => runOperation(self, emulationRun, { body, format, query, progress })),
    );
  });
