import path from 'node:path';
import { Command, Option } from 'commander';
import { EXIT } from '../../model/errors.js';
import { parseCount } from '../../model/ids.js';
import {
  UsageError,
  executeFor,
  group,
  makeUserFolder,
  opCommand,
  printOutcome,
  readInput,
  runRequest,
  state,
  writeUserFile,
} from '../context.js';
import { say, writeData } from '../output.js';

const list = new Command('list')
  .description('firewall nodes with ids in a range')
  .option('--from <id>', 'lowest id', '1')
  .option('--to <id>', 'highest id', '10')
  .action(async (opts: { from: string; to: string }, self: Command) => {
    const [from, to] = [parseCount('--from', opts.from), parseCount('--to', opts.to)];
    if (from > to) throw new UsageError(`--from ${from} is above --to ${to}`);
    const query = new URLSearchParams({ beforeInclusive: String(from), afterInclusive: String(to) });
    state.exitCode = await runRequest(self, { method: 'GET', target: `/fwd/nodes?${query}` });
  });

const importCommand = new Command('import')
  .description('store every firewall of a stored simulation result; prints the new ids with the node names')
  .requiredOption('--simulation <smid>', 'the stored simulation')
  .action(async (opts: { simulation: string }, self: Command) => {
    state.exitCode = await runRequest(self, {
      method: 'POST',
      target: `/fwd/nodes/import?simulation=${encodeURIComponent(opts.simulation)}`,
    });
  });

export const fwdCommand = group('fwd', 'firewall nodes and policies kept for deployment', [
  group('nodes', 'firewall nodes', [
    list,
    opCommand('add', 'fwd.nodes.create'),
    opCommand('get', 'fwd.nodes.get'),
    opCommand('update', 'fwd.nodes.update'),
    opCommand('delete', 'fwd.nodes.delete'),
    opCommand('delete-all', 'fwd.nodes.deleteAll', {
      confirm: 'firewall nodes',
      countAt: `/fwd/nodes?beforeInclusive=0&afterInclusive=${Number.MAX_SAFE_INTEGER}`,
    }),
  ]),
  importCommand,
  group('configuration', 'the policy of a firewall node', [opCommand('set', 'fwd.configuration.update')]),
  group('rules', 'single rules of a firewall node', [
    opCommand('get', 'fwd.rules.get'),
    opCommand('update', 'fwd.rules.update'),
    opCommand('delete', 'fwd.rules.delete'),
  ]),
]);

const SEGMENTS = {
  iptables: 'getIptables',
  ovs: 'getOpenVswitch',
  ipfw: 'getIpfw',
  vendor: 'getVendorFirewall',
} as const;

export const deployCommand = new Command('deploy')
  .description('deployable configuration of a stored firewall node')
  .addArgument(
    new Command().createArgument('<format>', 'iptables, ovs, ipfw or vendor (FortiOS)').choices(Object.keys(SEGMENTS)),
  )
  .argument('<nid>', 'firewall node id')
  .option('-o, --output <file>', 'write to a file instead of stdout')
  .action(async (format: keyof typeof SEGMENTS, nid: string, opts: { output?: string }, self: Command) => {
    const outcome = await executeFor(self, {
      method: 'GET',
      target: `/fwd/deploy/${SEGMENTS[format]}/${encodeURIComponent(nid)}`,
    });
    const text = outcome.reply.text;
    if (outcome.error || !text) {
      state.exitCode = printOutcome(self, outcome);
      return;
    }
    if (opts.output) {
      await writeUserFile('-o', opts.output, text.body);
      say(`wrote ${opts.output}`);
    } else writeData(text.body);
  });

export const generateFilesCommand = new Command('generate-files')
  .description('configuration files for every firewall of an NFV document')
  .argument('[file]', 'NFV document in XML (- or none: stdin)')
  .addOption(
    new Option('--type <type>', 'iptables only, or every format').choices(['iptables', 'all']).default('iptables'),
  )
  .requiredOption('-o, --output <dir>', 'folder to write the files to')
  .action(async (file: string | undefined, opts: { type: string; output: string }, self: Command) => {
    const body = await readInput(file);
    const target = `/adp/venvironment/generateFiles?firewallType=${opts.type === 'all' ? 'ALL' : 'IPTABLES'}`;
    const outcome = await executeFor(self, { method: 'POST', target, body, format: 'xml' });
    if (outcome.error) {
      state.exitCode = printOutcome(self, outcome);
      return;
    }
    const files = (outcome.reply.content![0] as { file: { name: string; content: string }[] }).file;
    await makeUserFolder('-o', opts.output);
    for (const f of files) {
      await writeUserFile('-o', path.join(opts.output, f.name), f.content);
      writeData(path.join(opts.output, f.name));
    }
    state.exitCode = EXIT.ok;
  });
