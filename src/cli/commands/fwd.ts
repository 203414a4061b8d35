import {
  deployBpf,
  deployIpfw,
  deployIptables,
  deployNftables,
  deployOpenVswitch,
  deployVendorFirewall,
  fwdConfigurationUpdate,
  fwdFirewallCreate,
  fwdNodesAddGraph,
  fwdNodesAddNfv,
  fwdNodesImport,
  fwdNodesList,
  fwdNodesCreate,
  fwdNodesDelete,
  fwdNodesDeleteAll,
  fwdNodesGet,
  fwdNodesUpdate,
  fwdRulesCreate,
  fwdRulesDelete,
  fwdRulesGet,
  fwdRulesUpdate,
} from '../../ops/firewalls.js';
import path from 'node:path';
import { Command, Option } from 'commander';
import { EXIT } from '../../model/errors.js';
import { parseCount, parseParam } from '../../model/ids.js';
import { venvironmentGenerateFiles } from '../../ops/network/generate.js';
import { simulationsChange, simulationsLiveChange } from '../../ops/network/simulations.js';
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
    opCommand('addnfv', fwdNodesAddNfv),
    opCommand('addgraph', fwdNodesAddGraph),
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
  group('configuration', 'the policy of a firewall node', [
    opCommand('set', fwdConfigurationUpdate),
    opCommand('create', fwdFirewallCreate),
  ]),
  group('rules', 'single rules of a firewall node', [
    opCommand('add', fwdRulesCreate),
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
  bpf: deployBpf,
};

const collect = (value: string, previous: string[]) => [...previous, value];

/** The body of a change against a live file: the live file as `nfv import iptables` reads it. */
async function liveBody(live: string, node: string, opts: { iface: string[]; ipset?: string }) {
  return {
    format: 'iptables',
    text: await readInput(live),
    file: live === '-' ? 'standard input' : path.basename(live),
    node,
    iface: opts.iface,
    ...(opts.ipset === undefined ? {} : { ipset: await readInput(opts.ipset) }),
  };
}

export const deployCommand = new Command('deploy')
  .description('deployable configuration of a stored firewall node')
  .addArgument(
    new Command()
      .createArgument('<format>', 'iptables, nftables, ovs, ipfw, vendor (FortiOS) or bpf (Polycube pcn-iptables)')
      .choices(Object.keys(TRANSLATORS)),
  )
  .argument('<nid>', 'firewall node id; with --from, the later simulation id')
  .argument('[node]', 'with --from: the firewall node (its name) whose rules change')
  .option('--from <smid>', 'the commands that take NODE from its rules in simulation SMID to those in the later one')
  .option('--sets', 'nftables: group adjacent rules of one action into concatenated sets (same verdicts, fewer rules)')
  .option(
    '--stateless',
    'the rules alone, one way: no conntrack rule letting replies of allowed connections back (all but vendor)',
  )
  .option('--host <address>', "iptables, nftables: the node is this end host's firewall; write its INPUT/OUTPUT chains")
  .option('--live <file>', 'iptables, with --from: the change against this iptables-save file NODE was imported from')
  .option('--iface <name=addresses>', 'with --live: as given to nfv import; repeat', collect, [])
  .option('--ipset <file>', 'with --live: as given to nfv import')
  .option('-o, --output <file>', 'write to a file instead of stdout')
  .action(async (format: keyof typeof TRANSLATORS, nid: string, node: string | undefined, opts, self: Command) => {
    const { from, output, sets, live, stateless, host } = opts as {
      from?: string;
      host?: string;
      output?: string;
      sets?: boolean;
      live?: string;
      stateless?: boolean;
    };
    if (from === undefined && node !== undefined) throw badRequest(`${node}: a node name goes with --from`);
    if (from !== undefined && node === undefined) throw badRequest('--from SMID_OLD SMID_NEW NODE: name the node');
    if (live !== undefined && (from === undefined || format !== 'iptables'))
      throw badRequest('--live goes with iptables --from A B NODE');
    if (sets && format !== 'nftables') throw badRequest(`--sets: only nftables groups rules into sets, not ${format}`);
    // The change operation does not take it yet: its scripts are for the stateful files deploy writes by default.
    if (stateless && from !== undefined)
      throw badRequest('--stateless: change scripts (--from) are for stateful files');
    // The JSON form only when asked for: piped, a deployment file is still the text its tool reads.
    const json = globals(self).format === 'json' && format === 'nftables';
    if (json && from !== undefined) throw badRequest('--format json: a change script (--from) is a shell script');
    const options = new URLSearchParams(format === 'nftables' ? { sets: String(Boolean(sets)) } : {});
    if (json) options.set('format', 'json');
    if (stateless) options.set('stateless', 'true');
    if (host !== undefined && ((format !== 'iptables' && format !== 'nftables') || from !== undefined || json))
      throw badRequest('--host: only deploy iptables|nftables NID (text) writes a host firewall (INPUT and OUTPUT)');
    if (host !== undefined) options.set('host', host);
    const change = () => ({ smid: parseParam('smid', from!), other: parseParam('other', nid) });
    const outcome =
      from === undefined
        ? await runOperation(self, TRANSLATORS[format], { params: { nid: parseParam('nid', nid) }, query: options })
        : live !== undefined
          ? await runOperation(self, simulationsLiveChange, {
              params: change(),
              body: JSON.stringify(await liveBody(live, node!, opts as { iface: string[]; ipset?: string })),
              format: 'json',
            })
          : await runOperation(self, simulationsChange, {
              params: change(),
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
