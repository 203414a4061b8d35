/**
 * `nfv emulate --iptables`: every firewall loaded with iptables-restore of `nfv deploy iptables` of its node, the
 * deciding rule read from iptables' own counters. A network worked out here by hand (a client, a firewall that lets
 * TCP 443 through and drops the rest, a server; a second client behind a forwarder, on a path with no firewall),
 * with one claim wrong on purpose; the CLI flag and its refusal of a bad value over HTTP.
 */
import t from 'tap';
import { emulate, planEmulation } from '../../../src/deploy/emulate/index.js';
import type { NFV } from '../../../src/model/types.js';
import { nfvInProcess } from '../../cli/in-process.js';
import { scratch } from '../../helpers.js';
import { packetsWhy } from '../nft-harness.js';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

const skip = packetsWhy || false;

const network = (claims: boolean[]): NFV => ({
  graphs: {
    graph: [
      {
        id: 0,
        node: [
          { name: '10.0.0.1', functionalType: 'WEBCLIENT', neighbour: [{ name: '10.0.1.2' }] },
          {
            name: '10.0.1.2',
            functionalType: 'FIREWALL',
            neighbour: [{ name: '10.0.0.1' }, { name: '10.0.1.4' }],
            configuration: {
              name: 'fw',
              firewall: {
                defaultAction: 'DENY',
                elements: [
                  { action: 'ALLOW', source: '10.0.0.1', destination: '10.0.0.2', protocol: 'TCP', dstPort: '443' },
                ],
              },
            },
          },
          {
            name: '10.0.1.4',
            functionalType: 'FORWARDER',
            neighbour: [{ name: '10.0.1.2' }, { name: '10.0.0.2' }, { name: '10.0.0.3' }],
          },
          { name: '10.0.0.2', functionalType: 'WEBSERVER', neighbour: [{ name: '10.0.1.4' }] },
          { name: '10.0.0.3', functionalType: 'WEBCLIENT', neighbour: [{ name: '10.0.1.4' }] },
        ],
      },
    ],
  },
  propertyDefinition: {
    property: [
      { graph: 0, name: 'REACHABILITY_PROPERTY', src: '10.0.0.1', dst: '10.0.0.2', lv4Proto: 'TCP', dstPort: '443' },
      { graph: 0, name: 'ISOLATION_PROPERTY', src: '10.0.0.1', dst: '10.0.0.2', lv4Proto: 'UDP' },
      { graph: 0, name: 'REACHABILITY_PROPERTY', src: '10.0.0.1', dst: '10.0.0.2', lv4Proto: 'TCP', dstPort: '22' },
      { graph: 0, name: 'ISOLATION_PROPERTY', src: '10.0.0.3', dst: '10.0.0.2' },
    ].map((p, k) => ({ ...p, isSat: claims[k] })) as NFV['propertyDefinition']['property'],
  },
});

const ACCEPT_443 = '-s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp --dport 443 -j ACCEPT';

t.test('the deployed iptables file is what is loaded: its rules, as nfv deploy iptables writes them', async (t) => {
  const plan = planEmulation(network([]), { iptables: true });
  t.match(plan.iptables.n1, /^\*filter\n:INPUT ACCEPT \[0:0\]\n:FORWARD DROP \[0:0\]\n/m);
  t.same(plan.firewalls[0]!.rules, ['-m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT', ACCEPT_443]);
  t.equal(plan.firewalls[0]!.policy, 'drop');
  t.notMatch(plan.nft.n1 ?? '', /table ip nfv /, 'no nftables copy of the rules');
});

t.test('iptables in the kernel: verdicts, and the deciding rule from its counters', { skip }, async (t) => {
  const r = await emulate(network([true, true, true, true]), { iptables: true });
  t.same(
    r.requirements.map((q) => [q.index, q.kernel, q.claim, q.agree, q.rule]),
    [
      [0, 'holds', 'holds', true, `10.0.1.2 #2 ${ACCEPT_443}`],
      [1, 'holds', 'holds', true, '10.0.1.2 policy drop'],
      // Claimed on purpose: TCP 22 meets the policy, which drops it.
      [2, 'fails', 'holds', false, '10.0.1.2 policy drop'],
      [3, 'fails', 'holds', false, 'no firewall on the path'],
    ],
  );
  t.ok(r.notCovered.includes('Linux iptables (nfv deploy iptables, stateful) stands for every firewall'));
});

t.test('the CLI: --iptables, exit 1 on the disagreements; ?iptables= checked', { skip }, async (t) => {
  const ws = await scratch(t);
  const file = path.join(ws, 'answer.json');
  await writeFile(file, JSON.stringify(network([true, false, false, false])));
  const r = await nfvInProcess(['--format', 'json', 'emulate', '--iptables', file], { workspace: ws });
  t.equal(r.code, 1, 'the UDP isolation holds in the kernel, not as claimed');
  const report = JSON.parse(r.stdout) as { requirements: { agree: boolean; rule: string }[] };
  t.same(
    report.requirements.map((q) => q.agree),
    [true, false, true, true],
  );
  t.equal(report.requirements[0]!.rule, `10.0.1.2 #2 ${ACCEPT_443}`);
  const bad = await nfvInProcess(['request', 'POST', '/adp/emulation?iptables=yes', '-d', `@${file}`], {
    workspace: ws,
  });
  t.equal(bad.code, 2);
  t.match(bad.stderr, /^nfv: iptables: "yes" is not true or false\n$/);
});
