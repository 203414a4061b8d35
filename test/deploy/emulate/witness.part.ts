/**
 * Witness paths (src/deploy/emulate/witness.ts, docs/emulate.md): a network of 17 nodes whose 9 shortest paths from
 * the client to the server all cross a firewall that drops SSH, while one longer path, beyond the 8 pinned shortest
 * ones, crosses a firewall that lets it through. The claims come from the independent evaluator
 * (test/engine/evaluator.ts, which shares no code with emulate or the engine); the kernel must agree with each, on
 * the witness path the emulation pins for it, and say what happened on the default route.
 */
import t from 'tap';
import { emulate, planEmulation } from '../../../src/deploy/emulate/index.js';
import { PINNED_PATHS } from '../../../src/deploy/emulate/plan.js';
import type { NFV, Node } from '../../../src/model/types.js';
import { claimed } from '../../engine/evaluator.js';
import { packetsWhy } from '../nft-harness.js';

const skip = packetsWhy || false;

const [CLIENT, SERVER, A, B, BLOCK, PASS] = ['10.0.0.1', '10.0.0.2', '10.1.0.1', '10.1.0.2', '10.2.0.1', '10.2.0.2'];
const XS = ['10.1.1.1', '10.1.1.2', '10.1.1.3'];
const YS = ['10.1.2.1', '10.1.2.2', '10.1.2.3'];
const LONG = ['10.1.3.1', '10.1.3.2', '10.1.3.3', '10.1.3.4', '10.1.3.5'];

/**
 * Client - A - (3 x 3 forwarders, 9 ways) - B - BLOCK (allows TCP 80 only) - server, and client - A - 5 forwarders
 * - PASS (allows TCP 22 and 23) - server. Requirements: SSH reaches the server (only through PASS), UDP is isolated
 * (both firewalls drop it), TCP 23 is isolated (broken through PASS only), HTTP reaches it (through BLOCK, on the
 * default route).
 */
function ladder(): NFV {
  const node = (name: string, functionalType: string, neighbours: string[], extra: Partial<Node> = {}): Node =>
    ({ name, functionalType, neighbour: neighbours.map((n) => ({ name: n })), ...extra }) as Node;
  const firewall = (name: string, neighbours: string[], ports: string[]) =>
    node(name, 'FIREWALL', neighbours, {
      configuration: {
        name: `fw-${name}`,
        firewall: {
          defaultAction: 'DENY',
          elements: ports.map((dstPort) => ({
            action: 'ALLOW',
            source: CLIENT,
            destination: SERVER,
            protocol: 'TCP',
            dstPort,
          })),
        },
      },
    });
  const chain = [A, ...LONG, PASS];
  return {
    graphs: {
      graph: [
        {
          id: 0,
          node: [
            node(CLIENT, 'WEBCLIENT', [A]),
            node(A, 'FORWARDER', [CLIENT, ...XS, LONG[0]!]),
            ...XS.map((x) => node(x, 'FORWARDER', [A, ...YS])),
            ...YS.map((y) => node(y, 'FORWARDER', [...XS, B])),
            node(B, 'FORWARDER', [...YS, BLOCK]),
            firewall(BLOCK, [B, SERVER], ['80']),
            ...LONG.map((l, i) => node(l, 'FORWARDER', [chain[i]!, chain[i + 2]!])),
            firewall(PASS, [LONG.at(-1)!, SERVER], ['22', '23']),
            node(SERVER, 'WEBSERVER', [BLOCK, PASS]),
          ],
        },
      ],
    },
    propertyDefinition: {
      property: [
        { graph: 0, name: 'REACHABILITY_PROPERTY', src: CLIENT, dst: SERVER, lv4Proto: 'TCP', dstPort: '22' },
        { graph: 0, name: 'ISOLATION_PROPERTY', src: CLIENT, dst: SERVER, lv4Proto: 'UDP' },
        { graph: 0, name: 'ISOLATION_PROPERTY', src: CLIENT, dst: SERVER, lv4Proto: 'TCP', dstPort: '23' },
        { graph: 0, name: 'REACHABILITY_PROPERTY', src: CLIENT, dst: SERVER, lv4Proto: 'TCP', dstPort: '80' },
      ],
    },
  } as NFV;
}

const long = [CLIENT, A, ...LONG, PASS, SERVER].join(' > ');

t.test('the plan pins each requirement’s witness beside the shortest paths', async (t) => {
  const nfv = claimed(ladder());
  t.equal(nfv.graphs.graph![0]!.node.length, 17);
  t.same(
    nfv.propertyDefinition.property.map((p) => p.isSat),
    [true, true, false, true],
    'the evaluator: SSH reaches the server, UDP is isolated, TCP 23 leaks through PASS, HTTP reaches it',
  );
  const plan = planEmulation(nfv);
  const [ssh, udp, telnet, http] = plan.requirements;
  t.equal(ssh!.paths.length, PINNED_PATHS + 1, 'the default route and 7 more');
  t.equal(ssh!.paths[0]!.nodes.length, 7, 'the default route is a shortest path (through BLOCK)');
  t.ok(ssh!.paths[0]!.nodes.includes(BLOCK));
  t.equal(ssh!.witness, 1, 'the witness is pinned right after the default route');
  t.equal(ssh!.paths[1]!.nodes.join(' > '), long, 'the witness is the one path through PASS');
  t.equal(ssh!.witnessSearch, 'found');
  t.equal(telnet!.paths[telnet!.witness!]!.nodes.join(' > '), long, 'the leak of TCP 23, the model’s claim, too');
  t.equal(udp!.witness, undefined, 'an isolation claimed to hold has no witness to search for');
  t.equal(udp!.witnessSearch, 'not searched');
  t.equal(http!.witness, 0, 'HTTP passes on the default route, its witness');
  t.ok(
    plan.requirements.every((r) => r.unprobedPaths !== 'more' && r.unprobedPaths > 0),
    'more simple paths than slots: the 9 shortest do not all fit',
  );
  t.equal(JSON.stringify(planEmulation(nfv)), JSON.stringify(plan), 'the same plan, byte for byte');
});

t.test('the kernel agrees with every claim, on the witness paths', { skip }, async (t) => {
  const nfv = claimed(ladder());
  const r = await emulate(nfv);
  t.same(
    r.requirements.map((q) => [q.kernel, q.claim, q.agree]),
    [
      ['holds', 'holds', true],
      ['holds', 'holds', true],
      ['fails', 'fails', true],
      ['holds', 'holds', true],
    ],
  );
  t.ok(r.agree);
  const ssh = r.requirements[0]!;
  t.equal(ssh.path, long, 'SSH is shown on its witness path');
  t.equal(ssh.witness, long);
  t.match(ssh.rule, `${PASS} #2 ip saddr ${CLIENT} ip daddr ${SERVER} tcp dport 22 accept`, 'let through by PASS');
  const def = ssh.onPaths.find((p) => p.role === 'default route')!;
  t.equal(def.arrived, 0, 'on the default route SSH was dropped (BLOCK), and reported so');
  t.ok(def.control, 'while the default route itself works');
  const w = ssh.onPaths.find((p) => p.role === 'witness')!;
  t.ok(w.arrived > 0 && w.control, 'on the witness path it arrived');
  t.equal(r.requirements[2]!.path, long, 'TCP 23 leaks through PASS, where the model says it does');
  t.same(r.requirements[3]!.onPaths[0]!.role, 'default route, witness');
});
