/**
 * `nfv emulate` of answers with NAT nodes and load balancers (docs/emulate.md, NAT): the shipped samples that
 * `nfv simulate` answers, where the kernel must agree with every claim; a NAT network worked out by hand, whose
 * claims come from the independent evaluator (test/engine/evaluator.ts, no code shared with emulate or the engine),
 * where a host hidden by the NAT is reached only through the NAT's address; the same network with its NAT dropped,
 * where emulate must report each break; and the one place the kernel's NAT differs from the model's.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { emulate, planEmulation } from '../../../src/deploy/emulate/index.js';
import type { NFV, Node } from '../../../src/model/types.js';
import { ROOT, cli, scratch } from '../../helpers.js';
import { violations } from '../../engine/evaluator.js';
import { packetsWhy } from '../nft-harness.js';

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

/** The claims the independent evaluator makes: each requirement holds unless it finds it broken. */
function claimed(nfv: NFV): NFV {
  const copy = structuredClone(nfv);
  for (const p of copy.propertyDefinition.property) p.isSat = true;
  const broken = new Set(violations(copy).map((v) => v.index));
  copy.propertyDefinition.property.forEach((p, k) => (p.isSat = !broken.has(k)));
  return copy;
}

t.test('the shipped samples that nfv simulate answers: the kernel agrees with every claim', { skip }, async (t) => {
  const ws = await scratch(t);
  const files = (await readdir(path.join(ROOT, 'samples'))).filter((f) => f.endsWith('.xml')).sort();
  const emulated: string[] = [];
  for (const file of files) {
    const simulated = await cli(['simulate', path.join(ROOT, 'samples', file), '--format', 'json'], { workspace: ws });
    // The data-centre pieces are parts of a document (one resource each), not answers to emulate.
    if (simulated.code !== 0) continue;
    const r = await cli(['emulate', '-', '--format', 'json'], { workspace: ws, input: simulated.stdout });
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

t.test('a NAT with a forward table is refused, naming it', async (t) => {
  const nfv = natNetwork();
  const nat = nfv.graphs.graph![0]!.node.find((n) => n.functionalType === 'NAT')!;
  nat.configuration!.nat!.forward = [{ protocol: 'TCP', dstPort: '443', to: SERVER }];
  t.throws(() => planEmulation(nfv), {
    status: 422,
    message: `emulate: NAT ${nat.name} has a forward table; emulate renders address-only NATs`,
  });
});
