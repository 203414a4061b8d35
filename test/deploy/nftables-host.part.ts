/**
 * `deploy nftables --host` (issue 47 item 4): a host firewall's node written back as chains at the input and
 * output hooks. Round trip through the kernel: loaded with `nft -f` in a user and network namespace of its own,
 * listed with `nft -j list ruleset`, imported again with the same host: an empty diff with the node.
 */
import t from 'tap';
import { diff, listOfNode } from '../../src/deploy/analysis/index.js';
import { importRules, importedList, importedNode } from '../../src/deploy/import/index.js';
import { nftables } from '../../src/deploy/nftables.js';
import { runProcess } from '../helpers.js';
import { skipNft } from './nft-harness.js';

const HOST = '10.0.9.1';
const HOST_DUMP = [
  '*filter',
  ':INPUT DROP [0:0]',
  ':FORWARD DROP [0:0]',
  ':OUTPUT ACCEPT [0:0]',
  ':services - [0:0]',
  '-A INPUT -i lo -j ACCEPT',
  '-A INPUT -s 10.0.1.0/24 -p tcp --dport 22 -j ACCEPT',
  '-A INPUT -s 10.0.0.0/8 -j services',
  '-A INPUT -p udp --dport 53 -j ACCEPT',
  '-A services -s 10.0.2.0/24 -j RETURN',
  '-A services -p tcp -m multiport --dports 80,443 -j ACCEPT',
  '-A OUTPUT -d 10.0.2.0/24 -j DROP',
  '-A OUTPUT -p tcp --dport 25 -j REJECT',
  'COMMIT',
  '',
].join('\n');

t.test('deploy nftables --host, nft -f, nft -j list ruleset, import --host: the same', { skip: skipNft }, async (t) => {
  const { node } = importedNode(importRules('iptables', HOST_DUMP, 'server.v4', { host: HOST }), '10.0.9.254');
  for (const options of [{}, { stateless: true }, { sets: true }]) {
    const text = nftables(node, 1, { host: HOST, ...options });
    t.match(text, /\n\t\ttype filter hook input priority filter; policy drop;\n/, 'an input chain');
    t.match(text, /\n\t\ttype filter hook output priority filter; policy drop;\n/, 'an output chain');
    const r = await runProcess(t, 'unshare', ['-rn', 'sh', '-c', 'nft -f - && nft -j list ruleset'], text);
    t.equal(r.code, 0, `${JSON.stringify(options)}: nft loads it (${r.stderr.trim()})`);
    const back = importedList(importRules('nftables', r.stdout, 'listed.json', { host: HOST }));
    t.ok(diff(listOfNode(node, 'node'), back).equivalent, `${JSON.stringify(options)}: an empty diff`);
  }
});
