/**
 * `deploy iptables --host` (issue 47 item 4): a host firewall's node written back as the host's INPUT and OUTPUT
 * chains. Round trips through the kernel: the file loaded with iptables-restore in a user and network namespace of
 * its own, listed with iptables-save, imported again with the same host, is equivalent to what was deployed on every
 * packet to or from the host (the packets that cross the node); an empty diff.
 */
import t from 'tap';
import { diff, listOfNode } from '../../src/deploy/analysis/index.js';
import { importRules, importedList, importedNode } from '../../src/deploy/import/index.js';
import { deployFile } from '../../src/deploy/index.js';
import { iptables } from '../../src/deploy/iptables.js';
import type { Node } from '../../src/model/types.js';
import { runProcess } from '../helpers.js';
import { iptablesWhy } from './nft-harness.js';

const NAMESPACES = ['-rn'];
const HOST = '10.0.9.1';
const HOST_DUMP = [
  '*filter',
  ':INPUT DROP [0:0]',
  ':FORWARD DROP [0:0]',
  ':OUTPUT ACCEPT [0:0]',
  ':services - [0:0]',
  '-A INPUT -i lo -j ACCEPT',
  '-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
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

/** A firewall node written by hand, its default ALLOW: the deployed chains' policies are ACCEPT. */
const HAND: Node = {
  name: '10.0.9.254',
  functionalType: 'FIREWALL',
  configuration: {
    name: 'fw',
    firewall: {
      defaultAction: 'ALLOW',
      elements: [
        { action: 'DENY', source: '10.0.3.-1', destination: '*', protocol: 'ANY' },
        { action: 'DENY', source: '*', destination: HOST, protocol: 'TCP', dstPort: '1000-2000' },
        { action: 'DENY', source: HOST, destination: '172.16.0.0/12', protocol: 'UDP', srcPort: '53' },
        { action: 'ALLOW', source: '*', destination: HOST, protocol: 'OTHER' },
      ],
    },
  },
};

/**
 * What a node means as a host firewall: its rules, then its default for the packets to or from the host (which
 * cross the node); the others it never sees, and the deployed host forwards nothing (HAND allows none of them).
 */
const asHost = (fw: Node): Node => {
  const { defaultAction, elements } = fw.configuration!.firewall!;
  const rest = [
    { action: defaultAction, source: '*', destination: HOST, protocol: 'ANY' },
    { action: defaultAction, source: HOST, destination: '*', protocol: 'ANY' },
  ] as const;
  return {
    ...fw,
    configuration: { name: 'as host', firewall: { defaultAction: 'DENY', elements: [...(elements ?? []), ...rest] } },
  };
};

t.test('the file has INPUT and OUTPUT chains, loopback first, no FORWARD rule; other formats refuse host', (t) => {
  const { node } = importedNode(importRules('iptables', HOST_DUMP, 'server.v4', { host: HOST }), '10.0.9.254');
  const text = iptables(node, 1, { host: HOST });
  const rules = text.split('\n').filter((l) => l.startsWith('-A '));
  t.same(
    rules.slice(0, 2),
    ['-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT', '-A INPUT -i lo -j ACCEPT'],
    'stateful, then loopback',
  );
  t.ok(rules.includes('-A OUTPUT -o lo -j ACCEPT'), 'loopback out too');
  t.notOk(
    rules.some((l) => l.startsWith('-A FORWARD')),
    'a host forwards nothing',
  );
  t.match(text, /\n:FORWARD DROP \[0:0\]\n/);
  t.ok(
    rules
      .filter((l) => l.startsWith('-A INPUT ') && !/ lo | conntrack /.test(l))
      .every((l) => l.includes(`-d ${HOST}`)),
    'every INPUT rule is for packets to the host',
  );
  t.throws(() => deployFile(node, 1, 'ovs', { host: HOST }), /^host: only iptables/);
  t.throws(() => iptables(node, 1, { host: '10.0.9.0/24' }), /^host: "10\.0\.9\.0\/24" is not an IPv4 address/);
  t.end();
});

t.test(
  'deploy --host, iptables-restore, iptables-save, import --host: the same',
  { skip: iptablesWhy || false },
  async (t) => {
    const imported = importRules('iptables', HOST_DUMP, 'server.v4', { host: HOST });
    const { node } = importedNode(imported, '10.0.9.254');
    for (const [name, fw, stateless] of [
      ['imported', node, false],
      ['imported, stateless', node, true],
      ['by hand', HAND, false],
    ] as const) {
      const text = iptables(fw, 1, { host: HOST, stateless });
      const r = await runProcess(t, 'unshare', [...NAMESPACES, 'sh', '-c', 'iptables-restore && iptables-save'], text);
      t.equal(r.code, 0, `${name}: the kernel loads it (${r.stderr.trim()})`);
      t.match(r.stdout, /\n-A INPUT /, `${name}: INPUT rules listed`);
      const back = importedList(importRules('iptables', r.stdout, 'saved.v4', { host: HOST }));
      const d = diff(listOfNode(asHost(fw), name), back);
      t.same(d.classes.slice(0, 3), [], `${name}: every packet has the same verdict`);
      if (fw === node) t.ok(diff(listOfNode(fw, name), back).equivalent, `${name}: the node itself too (default DENY)`);
    }
    // The first import and the second agree, through the kernel (the dump's RETURN and chain folded in between).
    const text = iptables(node, 1, { host: HOST });
    const r = await runProcess(t, 'unshare', [...NAMESPACES, 'sh', '-c', 'iptables-restore && iptables-save'], text);
    const again = importRules('iptables', r.stdout, 'saved.v4', { host: HOST });
    t.ok(diff(importedList(imported), importedList(again)).equivalent, 'the dump and its round trip: an empty diff');
  },
);
