/**
 * A router with a port forward imported into an NFV document (`POST /fwd/import` with `natAddress` and `into`;
 * docs/SEMANTICS.md, "Port forwards and masquerading"): its filter becomes the FIREWALL node, its translations the
 * NAT node outside it; `simulate` answers requirements through the port forward and the masquerading, and a
 * reconfiguration changes the filter only. Each answer's claims are checked by the independent evaluator
 * (test/engine/evaluator.ts, which shares no code with the engine).
 */
import t from 'tap';
import { fwdImport } from '../../src/ops/imports.js';
import { simulationsRun } from '../../src/ops/network/simulations.js';
import { invoke } from '../../src/ops/operation.js';
import type { NFV } from '../../src/model/types.js';
import { violations } from '../engine/evaluator.js';
import { call, content, ok, workspace } from './call.js';

const [ISP, OUTSIDER, WEB, SERVER, CLIENT, NAT, FW] = [
  '198.51.100.1',
  '198.51.100.66',
  '198.51.100.80',
  '10.0.9.1',
  '10.0.9.2',
  '203.0.113.1',
  '10.255.0.1',
];

/** The router's live file: HTTPS forwarded to the server, the inside masqueraded, a filter for both. */
const LIVE = [
  '*nat',
  ':PREROUTING ACCEPT [0:0]',
  ':POSTROUTING ACCEPT [0:0]',
  `-A PREROUTING -i wan -d ${NAT}/32 -p tcp --dport 443 -j DNAT --to-destination ${SERVER}`,
  '-A POSTROUTING -s 10.0.9.0/24 -o wan -j MASQUERADE',
  'COMMIT',
  '*filter',
  ':FORWARD DROP [0:0]',
  '-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
  `-A FORWARD -d ${SERVER}/32 -p tcp --dport 443 -j ACCEPT`,
  '-A FORWARD -s 10.0.9.0/24 -p tcp --dport 80 -j ACCEPT',
  'COMMIT',
  '',
].join('\n');

type Requirement = [string, string, string, string];

const property = ([name, src, dst, port]: Requirement) => ({
  name,
  graph: 0,
  src,
  dst,
  lv4Proto: 'TCP',
  dstPort: port,
});

/**
 * Outside: the outsider and a web server behind an ISP filter that passes only the router's public address (so what
 * reaches or leaves the inside does so translated); the NAT node; the firewall; inside.
 */
function network(requirements: Requirement[]): string {
  const node = (name: string, functionalType: string | undefined, neighbours: string[], configuration?: object) => ({
    name,
    ...(functionalType ? { functionalType } : {}),
    neighbour: neighbours.map((n) => ({ name: n })),
    ...(configuration ? { configuration } : {}),
  });
  const nfv = {
    graphs: {
      graph: [
        {
          id: 0,
          node: [
            node(OUTSIDER, 'WEBCLIENT', [ISP], { name: 'o', webclient: { nameWebServer: NAT } }),
            node(WEB, 'WEBSERVER', [ISP], { name: 'w', webserver: { name: WEB } }),
            node(ISP, 'FIREWALL', [OUTSIDER, WEB, NAT], {
              name: 'isp',
              firewall: {
                defaultAction: 'DENY',
                elements: [
                  { action: 'ALLOW', source: '*', destination: NAT },
                  { action: 'ALLOW', source: NAT, destination: '*' },
                ],
              },
            }),
            node(NAT, 'NAT', [ISP, FW], { name: 'router nat', nat: { source: ['10.0.9.1'] } }),
            node(FW, 'FIREWALL', [NAT, SERVER, CLIENT]),
            node(SERVER, 'WEBSERVER', [FW], { name: 's', webserver: { name: SERVER } }),
            node(CLIENT, 'WEBCLIENT', [FW], { name: 'c', webclient: { nameWebServer: WEB } }),
          ],
        },
      ],
    },
    propertyDefinition: { property: requirements.map(property) },
  };
  return JSON.stringify(nfv);
}

const REQUIREMENTS: Requirement[] = [
  // Through the port forward: the outsider addresses the router, the NAT node sends it on to the server.
  ['REACHABILITY_PROPERTY', OUTSIDER, SERVER, '443'],
  ['ISOLATION_PROPERTY', OUTSIDER, SERVER, '22'],
  ['ISOLATION_PROPERTY', OUTSIDER, CLIENT, '443'],
  // Through the masquerading: the web server sees the router's address.
  ['REACHABILITY_PROPERTY', CLIENT, WEB, '80'],
  ['ISOLATION_PROPERTY', CLIENT, WEB, '443'],
];

const nodeOf = (nfv: NFV, name: string) => nfv.graphs.graph![0]!.node.find((n) => n.name === name)!;

t.test('a router with a port forward: simulate answers through it, reconfigure changes the filter only', async (t) => {
  const ws = await workspace(t);
  const body = { format: 'iptables', text: LIVE, file: 'router.v4', node: FW, natAddress: NAT };
  const imported = await invoke(fwdImport, ws, {
    body: JSON.stringify({ ...body, into: network(REQUIREMENTS) }),
    format: 'json',
  });
  if (!imported.ok) return t.fail(imported.error);
  const answer = imported.reply.value;
  t.same(answer.nat, {
    name: NAT,
    functionalType: 'NAT',
    configuration: {
      name: 'iptables router.v4 nat',
      nat: { source: ['10.0.9.-1'], forward: [{ protocol: 'TCP', dstPort: '443', to: SERVER }] },
    },
  });
  const doc = JSON.parse(answer.document!) as NFV;
  t.same(nodeOf(doc, NAT).configuration, {
    name: 'router nat',
    nat: { source: ['10.0.9.-1'], forward: [{ protocol: 'TCP', dstPort: '443', to: SERVER }] },
  });
  t.equal(nodeOf(doc, FW).configuration!.firewall!.elements!.length, 2, 'the filter: two rules');

  const verified = await invoke(simulationsRun, ws, {
    body: answer.document!,
    format: 'json',
    query: new URLSearchParams({ store: 'true' }),
  });
  if (!verified.ok) return t.fail(verified.error);
  t.equal(verified.reply.report.verdict, 'SAT');
  const result = (await ok(t, ws, 'GET', '/adp/simulations/1'))[0] as NFV;
  t.same(
    result.propertyDefinition.property.map((p) => p.isSat),
    [true, true, true, true, true],
    'every requirement holds',
  );
  t.same(violations(result), [], 'the evaluator agrees');
  // Without the translations the reachabilities fail: they hold through the port forward and the masquerading.
  const untranslated = JSON.parse(answer.document!) as NFV;
  Object.assign(nodeOf(untranslated, NAT), {
    functionalType: 'FORWARDER',
    configuration: { name: 'f', forwarder: {} },
  });
  const plain = await invoke(simulationsRun, ws, {
    body: JSON.stringify(untranslated),
    format: 'json',
    query: new URLSearchParams({ store: 'false' }),
  });
  if (!plain.ok) return t.fail(plain.error);
  t.same(
    ((content(plain) as NFV[])[0] ?? (content(plain) as NFV)).propertyDefinition.property.map((p) => p.isSat),
    [false, true, true, false, true],
    'without the NAT node both reachabilities fail',
  );

  // Now the client may not browse the web server at all, and the server may.
  const wanted = [
    ...REQUIREMENTS.slice(0, 3),
    ['ISOLATION_PROPERTY', CLIENT, WEB, '80'],
    ['REACHABILITY_PROPERTY', SERVER, WEB, '80'],
  ] as Requirement[];
  const next = await call(ws, 'POST', '/adp/simulations/1/reconfigure', { property: wanted.map(property) });
  if (!next.ok) return t.fail(next.error);
  t.match(next.reply, { headers: { 'X-Nfv-Summary': /^5\/5 requirements hold; / } }, 'reconfigured');
  const after = content(next)[0] as NFV;
  t.same(violations(after), [], 'the evaluator agrees with the reconfigured answer');
  t.same(nodeOf(after, NAT), nodeOf(result, NAT), 'the NAT node is unchanged');
  t.notSame(
    nodeOf(after, FW).configuration!.firewall,
    nodeOf(result, FW).configuration!.firewall,
    'the filter changed',
  );
  const changed = after.graphs.graph![0]!.node.filter(
    (n) => JSON.stringify(n) !== JSON.stringify(nodeOf(result, n.name)),
  );
  // REACT may rewrite any firewall (the ISP's too); no other node changes.
  t.same(
    changed.filter((n) => n.functionalType !== 'FIREWALL').map((n) => n.name),
    [],
    'only firewall nodes changed',
  );

  // A document whose node of that name is no NAT is refused, naming the field.
  const without = JSON.parse(network(REQUIREMENTS)) as NFV;
  Object.assign(nodeOf(without, NAT), { functionalType: 'FORWARDER', configuration: { name: 'f', forwarder: {} } });
  const refused = await invoke(fwdImport, ws, {
    body: JSON.stringify({ ...body, into: JSON.stringify(without) }),
    format: 'json',
  });
  t.match(refused, { ok: false, status: 400 });
  if (!refused.ok) t.match(refused.error, /^natAddress: "203\.0\.113\.1" is a FORWARDER, not a NAT/);
});

t.test(
  'a router masquerading out of two interfaces: a NAT node on each side, simulate answers through both',
  async (t) => {
    const [VPN_NAT, VPN_GW, PEER] = ['10.8.0.1', '10.8.0.254', '10.8.0.5'];
    const live = [
      '*nat',
      ':PREROUTING ACCEPT [0:0]',
      ':POSTROUTING ACCEPT [0:0]',
      `-A PREROUTING -i wan -d ${NAT}/32 -p tcp --dport 443 -j DNAT --to-destination ${SERVER}`,
      '-A POSTROUTING -o wan -j MASQUERADE',
      '-A POSTROUTING -o vpn -j MASQUERADE',
      'COMMIT',
      '*filter',
      ':FORWARD DROP [0:0]',
      `-A FORWARD -d ${SERVER}/32 -p tcp --dport 443 -j ACCEPT`,
      '-A FORWARD -s 10.0.9.0/24 -p tcp --dport 80 -j ACCEPT',
      'COMMIT',
      '',
    ].join('\n');
    const requirements: Requirement[] = [
      ['REACHABILITY_PROPERTY', OUTSIDER, SERVER, '443'],
      ['REACHABILITY_PROPERTY', CLIENT, WEB, '80'],
      // The VPN's gateway passes only the router's VPN address: the client reaches the peer masqueraded.
      ['REACHABILITY_PROPERTY', CLIENT, PEER, '80'],
      ['ISOLATION_PROPERTY', CLIENT, PEER, '443'],
      ['ISOLATION_PROPERTY', PEER, CLIENT, '80'],
    ];
    const nfv = JSON.parse(network(requirements)) as NFV;
    const g = nfv.graphs.graph![0]!;
    nodeOf(nfv, FW).neighbour!.push({ name: VPN_NAT });
    g.node.push(
      { name: VPN_NAT, neighbour: [{ name: FW }, { name: VPN_GW }] },
      {
        name: VPN_GW,
        functionalType: 'FIREWALL',
        neighbour: [{ name: VPN_NAT }, { name: PEER }],
        configuration: {
          name: 'vpn gateway',
          firewall: {
            defaultAction: 'DENY',
            elements: [
              { action: 'ALLOW', source: VPN_NAT, destination: '*' },
              { action: 'ALLOW', source: PEER, destination: '*' },
            ],
          },
        },
      },
      {
        name: PEER,
        functionalType: 'WEBSERVER',
        neighbour: [{ name: VPN_GW }],
        configuration: { name: 'p', webserver: { name: PEER } },
      },
    );
    const ws = await workspace(t);
    const body = {
      format: 'iptables',
      text: live,
      file: 'home.v4',
      node: FW,
      natAddress: `wan=${NAT},vpn=${VPN_NAT}`,
      iface: ['wan=198.51.100.0/24', 'vpn=10.8.0.0/24', 'lan=10.0.9.0/24'],
    };
    const imported = await invoke(fwdImport, ws, {
      body: JSON.stringify({ ...body, into: JSON.stringify(nfv) }),
      format: 'json',
    });
    if (!imported.ok) return t.fail(imported.error);
    const answer = imported.reply.value;
    t.ok(Array.isArray(answer.nat), 'two NAT nodes: a list');
    t.same(
      (answer.nat as { name: string; configuration?: object }[]).map((n) => [n.name, n.configuration]),
      [
        [
          NAT,
          {
            name: 'iptables home.v4 nat',
            nat: { source: ['10.8.0.-1', '10.0.9.-1'], forward: [{ protocol: 'TCP', dstPort: '443', to: SERVER }] },
          },
        ],
        [VPN_NAT, { name: 'iptables home.v4 nat', nat: { source: ['198.51.100.-1', '10.0.9.-1'] } }],
      ],
    );
    const doc = JSON.parse(answer.document!) as NFV;
    t.equal(nodeOf(doc, NAT).functionalType, 'NAT');
    t.same(nodeOf(doc, VPN_NAT).configuration, {
      name: 'iptables home.v4 nat',
      nat: { source: ['198.51.100.-1', '10.0.9.-1'] },
    });
    const verified = await invoke(simulationsRun, ws, {
      body: answer.document!,
      format: 'json',
      query: new URLSearchParams({ store: 'true' }),
    });
    if (!verified.ok) return t.fail(verified.error);
    const result = (await ok(t, ws, 'GET', '/adp/simulations/1'))[0] as NFV;
    t.same(
      result.propertyDefinition.property.map((p) => p.isSat),
      [true, true, true, true, true],
      'every requirement holds, through the port forward and both masquerades',
    );
    t.same(violations(result), [], 'the evaluator agrees');
    // The VPN side's NAT node made a forwarder: the peer's gateway sees the client's own address and drops it.
    const bare = JSON.parse(answer.document!) as NFV;
    Object.assign(nodeOf(bare, VPN_NAT), { functionalType: 'FORWARDER', configuration: { name: 'f', forwarder: {} } });
    const plain = await invoke(simulationsRun, ws, {
      body: JSON.stringify(bare),
      format: 'json',
      query: new URLSearchParams({ store: 'false' }),
    });
    if (!plain.ok) return t.fail(plain.error);
    t.same(
      ((content(plain) as NFV[])[0] ?? (content(plain) as NFV)).propertyDefinition.property.map((p) => p.isSat),
      [true, true, false, true, true],
      'without the VPN side NAT node the client does not reach the peer',
    );
  },
);
