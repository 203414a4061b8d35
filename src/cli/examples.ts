/**
 * Examples at the end of every command's --help: written for the commands people start with, generated for the
 * rest from the command's arguments and input file (so no command is without one).
 */
import type { Command } from 'commander';

const WRITTEN: Record<string, string[]> = {
  'nfv init': ['nfv init ~/nfv-demo'],
  'nfv simulate': [
    'nfv simulate samples/office-nat.xml                 # a summary on a terminal',
    'nfv simulate samples/office-nat.xml > result.xml    # the result document when piped',
    'nfv simulate --store samples/web-farm.xml -o out.xml',
    'nfv simulate --gid 1 --rid 1 --timeout 120',
    'nfv simulate --reconfigure deployed.xml             # change configured firewalls as little as possible',
    'nfv simulate --objective least-privilege samples/office-nat.xml   # only what reachability needs passes',
    'nfv simulate --effort 10 wan.xml                    # more work to prove a large answer minimal',
  ],
  'nfv emulate': [
    'nfv simulate network.xml > answer.xml && nfv emulate answer.xml   # the kernel beside every claim',
    'nfv emulate 1 --format json       # a stored result; exit 1 where the kernel disagrees',
    'nfv emulate --gid 1 --rid 1       # simulate stored resources, then emulate the result',
    'nfv emulate --iptables answer.xml # every firewall loaded with nfv deploy iptables instead',
    'nfv emulate 1 --format xml        # the report as XML',
  ],
  'nfv worker': ['NFV_DATABASE_URL=postgres://nfv@db.example:5432/nfv nfv worker --solvers 4   # on each machine'],
  'nfv db migrate': ['NFV_DATABASE_URL=postgres://nfv@db.example:5432/nfv nfv db migrate'],
  'nfv db import': ['nfv db import workspaces/default --database postgres://nfv@db.example:5432/nfv'],
  'nfv simulations reconfigure': [
    'nfv simulations reconfigure 1 -f new-requirements.xml',
    'nfv simulations diff 1 2                              # what changed, firewall by firewall',
  ],
  'nfv simulations list': [
    'nfv simulations list',
    'nfv simulations list --format json | jq ".[] | select(.verdict == \\"UNSAT\\")"',
  ],
  'nfv simulations diff': ['nfv simulations diff 1 2'],
  'nfv simulations draw': ['nfv simulations draw 1 -o result.svg', 'nfv simulations draw 1 | dot -Tpng > result.png'],
  'nfv graphs draw': ['nfv graphs draw 1 -o graph.svg'],
  'nfv deploy': [
    'nfv deploy iptables 1 | iptables-restore --test',
    'nfv deploy ovs 1 -o br0.flows',
    'nfv deploy nftables 1 -o fw.nft && nft -c -f fw.nft && nft -f fw.nft   # replaces table ip nfv atomically',
    'nfv deploy nftables 1 --sets --format json | nft -j -f -                # rules grouped in sets, as JSON',
    'nfv deploy iptables --from 1 2 10.255.0.1 | iptables-restore --noflush   # from result 1 to result 2',
    'nfv deploy nftables --from 1 2 10.255.0.1 -o change.sh && sh change.sh  # refuses a chain that drifted',
    'nfv deploy iptables --from 1 2 10.255.0.1 --live rules.v4 | iptables-restore --noflush   # the live lines',
    'nfv deploy iptables 1 --host 10.0.9.1 | iptables-restore --test   # a host firewall: its INPUT and OUTPUT',
  ],
  'nfv import iptables': [
    'nfv import iptables rules.v4 --node 10.255.0.1 --report table > fw.json   # rules.v4: iptables-save output',
    'nfv import iptables rules.v4 --node 10.255.0.1 --into network.xml -o network-fw.xml && ' +
      'nfv simulate network-fw.xml',
    'nfv import iptables rules.v4 --node 10.255.0.1 --iface eth1=10.1.0.0/16 --ipset ipset.save --store',
    'nfv import iptables server.v4 --node 10.0.9.254 --host 10.0.9.1 --into network.json   # a host firewall',
    'nfv import iptables router.v4 --node 10.255.0.1 --nat-address 203.0.113.1 --into office.xml -o office-fw.xml' +
      '   # port forwards: the NAT node 203.0.113.1 beside the firewall',
  ],
  'nfv import nftables': [
    'nfv import nftables ruleset.json --node 10.255.0.1   # ruleset.json: nft -j list ruleset',
    'nfv import nftables ruleset.nft --node 10.255.0.1 --into network.xml -o network-fw.xml   # text: nft converts it',
  ],
  'nfv generate-files': ['nfv generate-files result.xml --type all -o out/'],
  'nfv fwd import': ['nfv fwd import --simulation 1'],
  'nfv firewall lint': [
    'nfv firewall lint fwd:1                                  # shadowed, redundant and unmatchable rules',
    'nfv firewall lint simulation:1 --node 10.255.0.1',
  ],
  'nfv firewall allows': [
    'nfv firewall allows fwd:1 --dport 443           # what passes, as packet classes',
    'nfv firewall allows router.rules --ignore-nat   # over 1,000 lines: by allowing line; --classes for classes',
  ],
  'nfv firewall diff': ['nfv firewall diff fwd:1 fwd:2 && echo same        # the packets whose verdict changed'],
  'nfv firewall explain': [
    "nfv firewall explain samples/router.rules 'src=192.168.1.10 dst=198.51.100.80 proto=tcp dport=443'",
    "nfv firewall explain rules.v4 'src=10.0.0.1 dst=10.0.2.1 proto=udp sport=5353 dport=53 iif=eth1' --ignore-nat",
  ],
  'nfv fwd nodes list': ['nfv fwd nodes list --from 1 --to 50'],
  'nfv inventory ingest': [
    'nfv inventory ingest catalog catalog.json',
    'nfv inventory ingest facts facts.json                   # replace facts v5',
    'nfv inventory ingest commands fleet/',
    'cat commands.jsonl | nfv inventory ingest commands',
  ],
  'nfv inventory query': [
    'nfv inventory query \'resources[certname, title] { type = "File" and tag = "web" }\'',
    'nfv inventory query \'reports { latest_report? = true and status = "failed" }\' --total',
    'nfv inventory query \'nodes[certname] { latest_report_status = "failed" }\'',
    'nfv inventory query \'["from", "events", ["=", "status", "failure"]]\'     # or the AST',
    "nfv inventory query 'resources[type, count()] { group by type }' --ast-only",
  ],
  'nfv inventory resources': [
    'nfv inventory resources File',
    'nfv inventory resources --query \'["=","tag","web"]\' --limit 20 --total',
  ],
  'nfv inventory reports': ['nfv inventory reports --query \'["=","latest_report?",true]\''],
  'nfv inventory events': ['nfv inventory events --query \'["=","status","failure"]\''],
  'nfv inventory event-counts': [
    'nfv inventory event-counts --summarize-by resource --counts-filter \'[">","failures",0]\'',
  ],
  'nfv inventory aggregate-event-counts': ['nfv inventory aggregate-event-counts --summarize-by certname'],
  'nfv inventory nodes': ['nfv inventory nodes --query \'["=","latest_report_status","failed"]\''],
  'nfv inventory facts': ['nfv inventory facts --query \'["=","name","os"]\''],
  'nfv inventory fact-contents': ['nfv inventory fact-contents --query \'["~>","path",["os","family"]]\''],
  'nfv inventory inventory': [
    'nfv inventory inventory --query \'["extract",["certname","facts.os.family"],["=","facts.kernel","Linux"]]\'',
  ],
  'nfv request': ['nfv request GET /adp/graphs/1', 'nfv request POST /adp/graphs -d @graphs.xml'],
  'nfv serve': [
    'nfv serve --port 8085 --log',
    'NFV_TOKEN=secret nfv serve --host 0.0.0.0',
    'nfv serve --port 8081 --tls-cert cert.pem --tls-key key.pem --tls-ca ca.pem',
  ],
  'nfv completion': ['source <(nfv completion bash)', 'nfv completion fish > ~/.config/fish/completions/nfv.fish'],
  'nfv help': ['nfv help graphs create'],
};

const SAMPLE_VALUES: Record<string, string> = {
  hid: 'h1',
  type: 'File',
  title: 'nginx',
  format: 'iptables',
  kind: 'catalog',
  shell: 'bash',
};

const pathOf = (cmd: Command): string[] => (cmd.parent ? [...pathOf(cmd.parent), cmd.name()] : [cmd.name()]);

/** The examples of one command: written ones, else one built from its arguments and its -f option. */
export function examplesOf(cmd: Command): string[] {
  const name = pathOf(cmd).join(' ');
  if (WRITTEN[name]) return WRITTEN[name]!;
  const args = cmd.registeredArguments.map((a) => SAMPLE_VALUES[a.name()] ?? (a.required ? '1' : '')).filter(Boolean);
  const file = cmd.options.some((o) => o.long === '--file') ? ` -f ${cmd.parent?.name() ?? 'input'}.xml` : '';
  const yes = cmd.options.some((o) => o.long === '--yes') ? ' --yes' : '';
  return [`${[name, ...args].join(' ')}${file}${yes}`];
}

export const ROOT_EXAMPLES = [
  'nfv init ~/nfv-demo',
  'nfv simulate samples/office-nat.xml',
  'nfv simulations draw 1 -o result.svg',
  'nfv deploy iptables 1 | iptables-restore --test',
  'nfv inventory ingest commands fleet/',
  'nfv serve --log',
];

/** The commands given their examples: the subcommands are module-level objects, and a program is built per run. */
const withExamples = new WeakSet<Command>();

/**
 * Adds the examples to every command's help, groups included (their subcommands' first examples), once per
 * command: a second `run` in one process (the CLI tests' in-process calls) added them again, and Node warned of
 * 11 afterHelp listeners on stderr.
 */
export function addExamples(cmd: Command): void {
  for (const c of cmd.commands) addExamples(c);
  if (withExamples.has(cmd)) return;
  withExamples.add(cmd);
  const examples = !cmd.parent
    ? ROOT_EXAMPLES
    : cmd.commands.length
      ? cmd.commands.map((c) => examplesOf(c)[0]!)
      : examplesOf(cmd);
  cmd.addHelpText('after', `\nExamples:\n${examples.map((e) => `  $ ${e}`).join('\n')}\n`);
}
