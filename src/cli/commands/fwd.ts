import {
  deployIpfw,
  deployIptables,
  deployNftables,
  deployOpenVswitch,
  deployVendorFirewall,
  fwdConfigurationUpdate,
  fwdNodesImport,
  fwdNodesList,
  fwdNodesCreate,
  fwdNodesDelete,
  fwdNodesDeleteAll,
  fwdNodesGet,
  fwdNodesUpdate,
  fwdRulesDelete,
  fwdRulesGet,
  fwdRulesUpdate,
} from '../../ops/firewalls.js';
import path from 'node:path';
import { Command, Option } from 'commander';
import { EXIT } from '../../model/errors.js';
import { parseCount, parseParam } from '../../model/ids.js';
import { venvironmentGenerateFiles } from '../../ops/network/generate.js';
import { simulationsChange } from '../../ops/network/simulations.js';
import { makeUserFolder, readInput, writeUserFile } from '../files.js';
import { group, opCommand } from '../op-command.js';
import { globals, state } from '../options.js';
import { printOutcome, runOperation } from '../requests.js';
import { badRequest } from '../../model/errors.js';
import { say, writeData } from '../output.js';

const list = new Command('list')
  .description('firewall nodes with ids in a range')
  .option('--from <id>', 'lowest id', '1')
  .option('--to <id>', 'highest id', '10')
  .action(async (opts: { from: string; to: string }, self: Command) => {
    const [from, to] = [parseCount('--from', opts.from), parseCount('--to', opts.to)];
    if (from > to) throw badRequest(`--from ${from} is above --to ${to}`);
    const query = new URLSearchParams({ beforeInclusive: String(from), afterInclusive: String(to) });
    state.exitCode = printOutcome(self, await runOperation(self, fwdNodesList, { query }));
  });

const importCommand = new Command('import')
  .description('store every firewall of a stored simulation result; prints the new ids with the node names')
  .requiredOption('--simulation <smid>', 'the stored simulation')
  .action(async (opts: { simulation: string }, self: Command) => {
    const query = new URLSearchParams({ simulation: opts.simulation });
    state.exitCode = printOutcome(self, await runOperation(self, fwdNodesImport, { query }));
  });

export const fwdCommand = group('fwd', 'firewall nodes and policies kept for deployment', [
  group('nodes', 'firewall nodes', [
    list,
    opCommand('add', fwdNodesCreate),
    opCommand('get', fwdNodesGet),
    opCommand('update', fwdNodesUpdate),
    opCommand('delete', fwdNodesDelete),
    opCommand('delete-all', fwdNodesDeleteAll, {
      bulkDelete: {
        item: 'firewall node',
        items: 'firewall nodes',
        list: fwdNodesList,
        query: new URLSearchParams({ beforeInclusive: '0', afterInclusive: String(Number.MAX_SAFE_INTEGER) }),
      },
    }),
  ]),
  importCommand,
  group('configuration', 'the policy of a firewall node', [opCommand('set', fwdConfigurationUpdate)]),
  group('rules', 'single rules of a firewall node', [
    opCommand('get', fwdRulesGet),
    opCommand('update', fwdRulesUpdate),
    opCommand('delete', fwdRulesDelete),
  ]),
]);

const TRANSLATORS = {
  iptables: deployIptables,
  nftables: deployNftables,
  ovs: deployOpenVswitch,
  ipfw: deployIpfw,
  vendor: deployVendorFirewall,
};

export const deployCommand = new Command('deploy')
  .description('deployable configuration of a stored firewall node')
  .addArgument(
    new Command()
      .createArgument('<format>', 'iptables, nftables, ovs, ipfw or vendor (FortiOS)')
      .choices(Object.keys(TRANSLATORS)),
  )
  .argument('<nid>', 'firewall node id; with --from, the later simulation id')
  .argument('[node]', 'with --from: the firewall node (its name) whose rules change')
  .option('--from <smid>', 'the commands that take NODE from its rules in simulation SMID to those in the later one')
  .option('--sets', 'nftables: group adjacent rules of one action into concatenated sets (same verdicts, fewer rules)')
  .option('-o, --output <file>', 'write to a file instead of stdout')
  .action(async (format: keyof typeof TRANSLATORS, nid: string, node: string | undefined, opts, self: Command) => {
    const { from, output, sets } = opts as { from?: string; output?: string; sets?: boolean };
    if (from === undefined && node !== undefined) throw badRequest(`${node}: a node name goes with --from`);
    if (from !== undefined && node === undefined) throw badRequest('--from SMID_OLD SMID_NEW NODE: name the node');
    if (sets && format !== 'nftables') throw badRequest(`--sets: only nftables groups rules into sets, not ${format}`);
    // The JSON form only when asked for: piped, a deployment file is still the text its tool reads.
    const json = globals(self).format === 'json' && format === 'nftables';
    if (json && from !== undefined) throw badRequest('--format json: a change script (--from) is a shell script');
    const options = new URLSearchParams(format === 'nftables' ? { sets: String(Boolean(sets)) } : {});
    if (json) options.set('format', 'json');
    const outcome =
      from === undefined
        ? await runOperation(self, TRANSLATORS[format], { params: { nid: parseParam('nid', nid) }, query: options })
        : await runOperation(self, simulationsChange, {
            params: { smid: parseParam('smid', from), other: parseParam('other', nid) },
            query: new URLSearchParams({ format, node: node!, ...Object.fromEntries(options) }),
          });
    if (!outcome.ok) {
      state.exitCode = printOutcome(self, outcome);
      return;
    }
    if (output) {
      await writeUserFile('-o', output, outcome.reply.body);
      say(`wrote ${output}`);
    } else writeData(outcome.reply.body);
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
    const query = new URLSearchParams({ firewallType: opts.type === 'all' ? 'ALL' : 'IPTABLES' });
    const outcome = await runOperation(self, venvironmentGenerateFiles, { query, body, format: 'xml' });
    if (!outcome.ok) {
      state.exitCode = printOutcome(self, outcome);
      return;
    }
    const files = outcome.reply.content.flatMap((c) => c.file ?? []);
    await makeUserFolder('-o', opts.output);
    for (const f of files) {
      await writeUserFile('-o', path.join(opts.output, f.name), f.content);
      writeData(path.join(opts.output, f.name));
    }
    state.exitCode = EXIT.ok;
  });
