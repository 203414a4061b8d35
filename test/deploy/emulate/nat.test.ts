/**
 * `nfv emulate` of answers with NAT nodes and load balancers (docs/emulate.md, NAT): the shipped samples that
 * `nfv simulate` answers, where the kernel must agree with every claim; a NAT network worked out by hand, whose
 * claims come from the independent evaluator (test/engine/evaluator.ts, no code shared with emulate or the engine),
 * where a host hidden by the NAT is reached only through the NAT's address; the same network with its NAT dropped,
 * where emulate must report each break; and the one place the kernel's NAT differs from the model's.
 */
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { emulate, planEmulation, type EmulationReport } from '../../../src/deploy/emulate/index.js';
import type { NFV, Node } from '../../../src/model/types.js';
import { nfvInProcess } from '../../cli/in-process.js';
import { ROOT, scratch } from '../../helpers.js';
import { claimed } from '../../engine/evaluator.js';
import { packetsWhy } from '../nft-harness.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './answers.part.js';
import './iptables.part.js';
import './witness.part.js';

const skip = packetsWhy || false;

const [STAFF, GUEST, OUTSIDER, SERVER, NAT] = [
  '192.168.1.10',
  '192.168.1.11',
  '198.51.100.66',
  '198.51.100.80',
  '203.0.113.1',
];

/**
 * Two laptops hidden by a NAT; after it a firewall that lets the NAT's address reach the server over HTTPS and lets
 * the outsider reach the NAT's address, nothing else. Requirements: staff reaches the
 * server (through the NAT's source translation only), the guest is isolated from the server over UDP, the outsider
 * isolated from staff (broken through the NAT's address only: directly the firewall drops it).
 */
const natNetwork = (): NFV => {
  const node = (name: string, functionalType: string, neighbours: string[], extra: Partial<Node> = {}): Node =>
    ({ name, functionalType, neighbour: neighbours.map((n) => ({ name: n })), ...extra }) as Node;
  return {
    graphs: {
      graph: [
        {
          id: 0,
          node: [
            node(STAFF, 'WEBCLIENT', ['192.168.1.1']),
            node(GUEST, 'WEBCLIENT', ['192.168.1.1']),
            node('192.168.1.1', 'FORWARDER', [STAFF, GUEST, NAT]),
            node(NAT, 'NAT', ['192.168.1.1', '198.51.100.2'], {
              configuration: { name: 'nat', nat: { source: ['192.168.1.-1'] } },
            }),
            node('198.51.100.2', 'FIREWALL', [NAT, '198.51.100.1'], {
              configuration: {
                name: 'fw',
                firewall: {
                  defaultAction: 'DENY',
                  elements: [
                    { action: 'ALLOW', source: NAT, destination: SERVER, protocol: 'TCP', dstPort: '443' },
                    { action: 'ALLOW', source: OUTSIDER, destination: NAT },
                  ],
                },
              },
            }),
            node('198.51.100.1', 'FORWARDER', ['198.51.100.2', SERVER, OUTSIDER]),
            node(SERVER, 'WEBSERVER', ['198.51.100.1']),
            node(OUTSIDER, 'WEBCLIENT', ['198.51.100.1']),
          ],
        },
      ],
    },
    propertyDefinition: {
      property: [
        { graph: 0, name: 'REACHABILITY_PROPERTY', src: STAFF, dst: SERVER, lv4Proto: 'TCP', dstPort: '443' },
        { graph: 0, name: 'ISOLATION_PROPERTY', src: GUEST, dst: SERVER, lv4Proto: 'UDP' },
        { graph: 0, name: 'ISOLATION_PROPERTY', src: OUTSIDER, dst: STAFF },
      ],
    },
  } as NFV;
};

t.test('the shipped samples that nfv simulate answers: the kernel agrees with every claim', { skip }, async (t) => {
  const ws = await scratch(t);
  const files = (await readdir(path.join(ROOT, 'samples'))).filter((f) => f.endsWith('.xml')).sort();
  const emulated: string[] = [];
  for (const file of files) {
    const simulated = await nfvInProcess(['simulate', path.join(ROOT, 'samples', file), '--format', 'json'], {
      workspace: ws,
    });
    // The data-centre pieces are parts of a document (one resource each), not answers to emulate.
    if (simulated.code !== 0) continue;
    const r = await nfvInProcess(['emulate', '-', '--format', 'json'], { workspace: ws, input: simulated.stdout });
    t.equal(r.code, 0, `${file}: exit 0 (${r.stderr.trim()})`);
    const report = JSON.parse(r.stdout) as { agree: boolean; requirements: { agree: boolean; claim: string }[] };
    t.ok(report.agree, `${file}: the kernel agrees with every claim`);
    t.ok(report.requirements.length > 0 && report.requirements.every((q) => q.agree && q.claim === 'holds'));
    emulated.push(file);
  }
  t.same(emulated, ['data-centre.xml', 'office-nat.xml', 'web-farm.xml'], 'the NAT and load-balancer samples too');
});

t.test('a NAT network: its translations in the kernel, the NAT dropped reported', { skip }, async (t) => {
  const nfv = claimed(natNetwork());
  t.same(
    nfv.propertyDefinition.property.map((p) => p.isSat),
    [true, true, false],
    'the evaluator: staff reaches the server, the guest is isolated, the outsider reaches staff through the NAT',
  );
  const plan = planEmulation(nfv);
  const natNs = `n${nfv.graphs.graph![0]!.node.findIndex((n) => n.name === NAT)}`;
  t.match(plan.nft[natNs], `ip saddr ${OUTSIDER} ip daddr ${NAT} dnat to ${STAFF}\n`, 'one static dnat');
  t.match(plan.nft[natNs], `ip saddr & 255.255.255.0 == 192.168.1.0 snat to ${NAT}\n`, 'one snat of the hidden hosts');
  const r = await emulate(nfv);
  t.same(
    r.requirements.map((q) => [q.kernel, q.claim, q.agree]),
    [
      ['holds', 'holds', true],
      ['holds', 'holds', true],
      ['fails', 'fails', true],
    ],
    'the kernel agrees with every claim',
  );
  // Staff's HTTPS is let through by the rule on the NAT's address: its source was translated.
  t.match(r.requirements[0]!.rule, `198.51.100.2 #2 ip saddr ${NAT} ip daddr ${SERVER} tcp dport 443 accept`);
  t.ok(r.requirements[2]!.arrived > 0, 'the outsider reaches staff through the NAT');

  // The NAT dropped (a plain forwarder): staff's packets reach the firewall with their own source and are dropped,
  // and the outsider's packets to the NAT's address stop there.
  const dropped = structuredClone(nfv);
  const natNode = dropped.graphs.graph![0]!.node.find((n) => n.name === NAT)!;
  natNode.functionalType = 'FORWARDER';
  delete natNode.configuration;
  const expected = claimed(dropped).propertyDefinition.property.map((p) => p.isSat);
  t.same(expected, [false, true, true], 'the evaluator: without the NAT, staff is cut off and the outsider too');
  const e = await emulate(dropped);
  t.same(
    e.requirements.map((q) => [q.kernel, q.agree]),
    [
      ['fails', false],
      ['holds', true],
      ['holds', false],
    ],
    'each broken requirement reported',
  );
  t.match(e.requirements[0]!.rule, '198.51.100.2 policy drop', 'naming the firewall that dropped it');
  t.equal(e.agree, false);
});

/**
 * The same network with a NAT translating by destination (docs/SEMANTICS.md, "Translation by destination"): only
 * HTTPS to the server leaves as the NAT; the firewall lets the hidden network's own address reach port 8080, and
 * what comes to the NAT's address is delivered there. Claims from the evaluator; the kernel must agree.
 */
t.test('a NAT translating by destination: snat of the entries only, in the kernel', { skip }, async (t) => {
  const nfv = natNetwork();
  const nodes = nfv.graphs.graph![0]!.node;
  nodes.find((n) => n.name === NAT)!.configuration!.nat!.translate = [{ protocol: 'TCP', dst: SERVER, dstPort: '443' }];
  nodes
    .find((n) => n.name === '198.51.100.2')!
    .configuration!.firewall!.elements!.push({
      action: 'ALLOW',
      source: '192.168.1.-1',
      destination: SERVER,
      protocol: 'TCP',
      dstPort: '8080',
    });
  nfv.propertyDefinition.property.push({
    graph: 0,
    name: 'REACHABILITY_PROPERTY',
    src: STAFF,
    dst: SERVER,
    lv4Proto: 'TCP',
    dstPort: '8080',
  });
  const claims = claimed(nfv);
  t.same(
    claims.propertyDefinition.property.map((p) => p.isSat),
    [true, true, true, true],
    'the evaluator: HTTPS as the NAT, 8080 as staff itself, the outsider stopped at the NAT',
  );
  const plan = planEmulation(claims);
  const natNs = `n${nodes.findIndex((n) => n.name === NAT)}`;
  t.match(
    plan.nft[natNs],
    `ip saddr & 255.255.255.0 == 192.168.1.0 ip daddr ${SERVER} meta l4proto tcp th dport 443 snat to ${NAT}\n`,
    'one snat, for the entry',
  );
  t.notMatch(plan.nft[natNs], 'dnat', 'no dnat: what comes to the NAT is delivered there');
  const r = await emulate(claims);
  t.same(
    r.requirements.map((q) => [q.kernel, q.agree]),
    claims.propertyDefinition.property.map(() => ['holds', true]),
    'the kernel agrees with every claim',
  );
  // Without the list every packet to outside leaves as the NAT: 8080 is dropped and the outsider gets through.
  const plain = structuredClone(claims);
  delete plain.graphs.graph![0]!.node.find((n) => n.name === NAT)!.configuration!.nat!.translate;
  const expected = claimed(plain).propertyDefinition.property.map((p) => p.isSat);
  t.same(expected, [true, true, false, false], 'the evaluator: without it, 8080 and the isolation break');
  const e = await emulate(plain);
  t.same(
    e.requirements.map((q) => q.agree),
    expected,
    'the kernel disagrees with the claims exactly where the evaluator says they break',
  );
});

t.test('where the kernel differs from the model: one hidden host per outside source', { skip }, async (t) => {
  // The outsider isolated from the guest too: in the model its packets to the NAT's address go to every hidden
  // host, the guest included, so the isolation fails; the kernel's static dnat takes them to staff, the host the
  // outsider's first requirement asks for, and directly the firewall drops them: the isolation holds.
  const nfv = natNetwork();
  nfv.propertyDefinition.property.push({ graph: 0, name: 'ISOLATION_PROPERTY', src: OUTSIDER, dst: GUEST });
  const claims = claimed(nfv);
  t.equal(claims.propertyDefinition.property[3]!.isSat, false, 'the model: the guest is reached through the NAT');
  const r = await emulate(claims);
  t.same(r.requirements[3]!.kernel, 'holds', 'the kernel: not through the NAT, which takes the outsider to staff');
  t.equal(r.requirements[3]!.agree, false);
  t.ok(
    r.notCovered.some((n) => /one hidden host a source’s requirements ask for/.test(n)),
    'and every report says so',
  );
  t.same(
    r.requirements.slice(0, 3).map((q) => q.agree),
    [true, true, true],
  );
});

const [WAN_CLIENT, PORTAL, GATE, WEB, SSH_HOST] = [
  '198.51.100.5',
  '203.0.113.9',
  '198.51.100.254',
  '10.0.0.5',
  '10.0.0.6',
];

/**
 * A router's port forwards: an outside client, a firewall that lets it reach the NAT's address on TCP 80, 2222 and
 * 23 (and nothing else), the NAT hiding 10.0.0.-1 with a forward table (TCP 80 to the web host, TCP 2222 to the SSH
 * host's port 22), the two hosts behind it. Directly the firewall drops everything, so every packet that arrives
 * went through the table. Requirements: HTTP reaches the web host (N:80), port 2222 reaches the SSH host (N:2222 to
 * its port 22), TCP 23 is isolated from the web host (N:23 no entry forwards: delivered to the NAT), port 2222 is
 * isolated from the web host (N:2222 goes to the other host) and HTTP from the SSH host.
 */
const forwardNetwork = (): NFV => {
  const node = (name: string, functionalType: string, neighbours: string[], extra: Partial<Node> = {}): Node =>
    ({ name, functionalType, neighbour: neighbours.map((n) => ({ name: n })), ...extra }) as Node;
  const allow = (dstPort: string) => ({
    action: 'ALLOW' as const,
    source: WAN_CLIENT,
    destination: PORTAL,
    protocol: 'TCP' as const,
    dstPort,
  });
  return {
    graphs: {
      graph: [
        {
          id: 0,
          node: [
            node(WAN_CLIENT, 'WEBCLIENT', [GATE]),
            node(GATE, 'FIREWALL', [WAN_CLIENT, PORTAL], {
              configuration: {
                name: 'gate',
                firewall: { defaultAction: 'DENY', elements: [allow('80'), allow('2222'), allow('23')] },
              },
            }),
            node(PORTAL, 'NAT', [GATE, '10.0.0.1'], {
              configuration: {
                name: 'portal',
                nat: {
                  source: ['10.0.0.-1'],
                  forward: [
                    { protocol: 'TCP', dstPort: '80', to: WEB },
                    { protocol: 'TCP', dstPort: '2222', to: SSH_HOST, toPort: '22' },
                  ],
                },
              },
            }),
            node('10.0.0.1', 'FORWARDER', [PORTAL, WEB, SSH_HOST]),
            node(WEB, 'WEBSERVER', ['10.0.0.1']),
            node(SSH_HOST, 'WEBSERVER', ['10.0.0.1']),
          ],
        },
      ],
    },
    propertyDefinition: {
      property: [
        { graph: 0, name: 'REACHABILITY_PROPERTY', src: WAN_CLIENT, dst: WEB, lv4Proto: 'TCP', dstPort: '80' },
        { graph: 0, name: 'REACHABILITY_PROPERTY', src: WAN_CLIENT, dst: SSH_HOST, lv4Proto: 'TCP', dstPort: '2222' },
        { graph: 0, name: 'ISOLATION_PROPERTY', src: WAN_CLIENT, dst: WEB, lv4Proto: 'TCP', dstPort: '23' },
        { graph: 0, name: 'ISOLATION_PROPERTY', src: WAN_CLIENT, dst: WEB, lv4Proto: 'TCP', dstPort: '2222' },
        { graph: 0, name: 'ISOLATION_PROPERTY', src: WAN_CLIENT, dst: SSH_HOST, lv4Proto: 'TCP', dstPort: '80' },
      ],
    },
  } as NFV;
};

t.test('a NAT forward table: first-match dnat in the kernel, probed through its ports', { skip }, async (t) => {
  const nfv = claimed(forwardNetwork());
  t.same(
    nfv.propertyDefinition.property.map((p) => p.isSat),
    [true, true, true, true, true],
    'the evaluator: both forwards reach their hosts, nothing else does',
  );
  const plan = planEmulation(nfv);
  const natNs = `n${nfv.graphs.graph![0]!.node.findIndex((n) => n.name === PORTAL)}`;
  t.match(plan.nft[natNs], `ip daddr ${PORTAL} meta l4proto tcp th dport 80 dnat to ${WEB}\n`);
  t.match(plan.nft[natNs], `ip daddr ${PORTAL} meta l4proto tcp th dport 2222 dnat to ${SSH_HOST}:22\n`);
  const sshNs = `n${nfv.graphs.graph![0]!.node.findIndex((n) => n.name === SSH_HOST)}`;
  t.ok(
    plan.listeners.find((l) => l.ns === sshNs)!.tcp.includes(22),
    'the SSH host listens on the port the forward gives',
  );
  const viaNat = (r: number) => plan.requirements[r]!.paths[0]!.probes.map((k) => plan.probes[k]!);
  t.ok(
    viaNat(2).some((p) => p.dst === PORTAL && p.dport === 23 && p.connect === true),
    'TCP 23 to the NAT is probed: it must not reach the web host (the NAT’s own reset does not count)',
  );
  t.notOk(
    viaNat(3).some((p) => p.dst === PORTAL),
    'port 2222 of the NAT leads to the other host: not this isolation’s traffic',
  );
  const r = await emulate(nfv);
  t.same(
    r.requirements.map((q) => [q.kernel, q.claim, q.agree]),
    nfv.propertyDefinition.property.map(() => ['holds', 'holds', true]),
    'the kernel agrees with every claim',
  );
  t.ok(r.requirements[1]!.arrived > 0, 'port 2222 reached the SSH host, on its port 22');
  t.match(r.requirements[0]!.rule, `${GATE} #2 ip saddr ${WAN_CLIENT} ip daddr ${PORTAL} tcp dport 80 accept`);

  // The forwards swapped (80 to the SSH host, 2222 to the web host's port 22): each requirement breaks, and the
  // kernel says so where the evaluator does.
  const swapped = structuredClone(nfv);
  const table = swapped.graphs.graph![0]!.node.find((n) => n.name === PORTAL)!.configuration!.nat!.forward!;
  table[0]!.to = SSH_HOST;
  table[1]!.to = WEB;
  const expected = claimed(swapped).propertyDefinition.property.map((p) => p.isSat);
  t.same(expected, [false, false, true, false, false], 'the evaluator: the swap breaks all but TCP 23');
  const e = await emulate(swapped);
  t.same(
    e.requirements.map((q) => q.agree),
    expected,
    'the kernel disagrees with the original claims exactly where the evaluator says they break',
  );
});

/**
 * A real router with a port forward (test/fixtures/iptables/real/medium-sized-company.rules, NOTICE.md: TCP 4081 to
 * 172.16.2.34, MASQUERADE of 172.16.2.0/24), imported with `nfv import iptables --nat-address` into a small graph
 * (an outside client, the NAT node, the router's filter, three inside hosts), answered by `nfv simulate` and
 * emulated: the kernel must agree with every claim.
 */
t.test('a real router’s port forward, imported, simulated and emulated', { skip }, async (t) => {
  const ws = await scratch(t);
  const [outside, nat, fw, lan] = ['198.51.100.9', '203.0.113.7', '172.16.2.254', '172.16.2.253'];
  const hosts = ['172.16.2.34', '172.16.2.10', '172.16.2.100'];
  const node = (name: string, functionalType: string, neighbours: string[]) => ({
    name,
    functionalType,
    neighbour: neighbours.map((n) => ({ name: n })),
  });
  const property = (name: string, src: string, dst: string, lv4Proto?: string, dstPort?: string) => ({
    graph: 0,
    name,
    src,
    dst,
    ...(lv4Proto ? { lv4Proto } : {}),
    ...(dstPort ? { dstPort } : {}),
  });
  const graph = {
    graphs: {
      graph: [
        {
          id: 0,
          node: [
            node(outside, 'WEBCLIENT', [nat]),
            node(nat, 'NAT', [outside, fw]),
            node(fw, 'FIREWALL', [nat, lan]),
            node(lan, 'FORWARDER', [fw, ...hosts]),
            ...hosts.map((h) => node(h, 'WEBCLIENT', [lan])),
          ],
        },
      ],
    },
    propertyDefinition: {
      property: [
        property('REACHABILITY_PROPERTY', outside, hosts[0]!, 'TCP', '4081'),
        property('ISOLATION_PROPERTY', outside, hosts[0]!, 'TCP', '22'),
        property('ISOLATION_PROPERTY', outside, hosts[1]!),
        property('REACHABILITY_PROPERTY', hosts[1]!, outside, 'TCP', '443'),
        property('ISOLATION_PROPERTY', hosts[2]!, outside, 'TCP', '22'),
        property('REACHABILITY_PROPERTY', hosts[2]!, outside, 'TCP', '80'),
      ],
    },
  };
  const into = path.join(ws, 'graph.json');
  await writeFile(into, JSON.stringify(graph));
  const rules = path.join(ROOT, 'test', 'fixtures', 'iptables', 'real', 'medium-sized-company.rules');
  // --approximation may: its rpfilter and ICMP-type lines are approximated, and emulate loads one rule list.
  const imported = await nfvInProcess(
    ['import', 'iptables', rules, '--node', fw, '--nat-address', nat, '--iface', 'eth0=172.16.2.0/24'].concat([
      '--approximation',
      'may',
      '--into',
      into,
    ]),
    { workspace: ws },
  );
  t.equal(imported.code, 0, imported.stderr);
  t.match(imported.stderr, 'forwards tcp/4081 to 172.16.2.34');
  const simulated = await nfvInProcess(['simulate', '-', '--format', 'json'], {
    workspace: ws,
    input: imported.stdout,
  });
  t.equal(simulated.code, 0, simulated.stderr);
  const answer = JSON.parse(simulated.stdout) as NFV;
  t.same(
    answer.propertyDefinition.property.map((p) => p.isSat),
    [true, true, true, true, true, true],
  );
  const r = await nfvInProcess(['emulate', '-', '--format', 'json'], { workspace: ws, input: simulated.stdout });
  t.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as EmulationReport;
  t.ok(report.agree, 'the kernel agrees with every claim');
  t.same(
    report.requirements.map((q) => q.kernel),
    ['holds', 'holds', 'holds', 'holds', 'holds', 'holds'],
  );
  t.match(report.requirements[0]!.rule, `${fw} #54 ip daddr 172.16.2.34 tcp dport 4081 accept`);
  t.match(report.requirements[1]!.rule, `${fw} #65 drop`, 'the router’s last line (its REJECT) drops SSH');
});
