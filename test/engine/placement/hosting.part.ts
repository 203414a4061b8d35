/**
 * Placement inside a simulation (placement.md P1, P8, P9): every answer's security claims checked by the evaluator
 * and its placement by the independent checker; the allocate-place-cut contract on inputs where the cheapest
 * allocation cannot be placed, against a brute force over allocations.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { decodeDocument, encodeDocument } from '../../../src/model/codec.js';
import { NfvError } from '../../../src/model/errors.js';
import { NfvType } from '../../../src/model/resources.js';
import type { Host, NFV, NodeMetrics } from '../../../src/model/types.js';
import { checkedSimulate as simulate } from '../evaluator.js';
import { isolation, network, place, webclient, webserver } from '../build.js';
import { conn, host } from './build.js';
import { hostingViolations, resultInput } from './answer.js';
import { bruteForce } from './checker.js';

const withSubstrate = (
  nfv: NFV,
  hosts: Host[],
  connections: ReturnType<typeof conn>[],
  metrics: NodeMetrics[] = [],
) => {
  nfv.hosts = { host: hosts };
  nfv.connections = { connection: connections };
  nfv.constraints = { ...nfv.constraints, nodeConstraints: { nodeMetrics: metrics } };
  return nfv;
};

async function placed(t: Tap.Test, input: NFV) {
  const result = await simulate(input);
  t.same(hostingViolations(input, result.nfv, result.report.hosting), [], 'the placement holds under the checker');
  return result;
}

const firewallsOf = (nfv: NFV) =>
  (nfv.graphs.graph ?? []).flatMap((g) => g.node.filter((n) => n.functionalType === 'FIREWALL').map((n) => n.name));

t.test('without Hosts nothing is placed and the report says none', async (t) => {
  const nfv = network(
    [webclient('10.0.0.1', '1.0.0.1'), place('1.0.0.1', '10.0.0.1', '10.0.1.1'), webserver('10.0.1.1', '1.0.0.1')],
    [isolation('10.0.0.1', '10.0.1.1')],
  );
  const { nfv: out, report } = await simulate(nfv);
  t.same(report.hosting, { status: 'none' });
  t.equal(out.hosts, undefined);
});

t.test(
  'the shipped data-centre sample is placed, optimal, and resubmitting the result pins the same placement',
  async (t) => {
    const input = decodeDocument(NfvType, readFileSync('samples/data-centre.xml', 'utf8'), 'xml') as NFV;
    const first = await placed(t, input);
    const h = first.report.hosting;
    t.equal(h.status, 'placed');
    t.equal(h.optimal, true);
    t.same(h.objective, { activeHosts: 6, totalLatency: 28 });
    t.same(
      h.links?.map((l) => [l.src, l.dst, l.latency, l.status]),
      [['198.51.100.7', '10.0.0.1', 3, 'ok']],
    );
    const again = await simulate(input);
    t.equal(encodeDocument(NfvType, again.nfv, 'xml'), encodeDocument(NfvType, first.nfv, 'xml'), 'same bytes twice');
    // The result as input: its NodeRefs pin every placed node where it is.
    const resubmitted = await simulate(structuredClone(first.nfv));
    t.same(resubmitted.nfv.hosts, first.nfv.hosts);
    t.same(resubmitted.report.hosting.objective, h.objective);
    // Reconfiguration of the placed result: its firewalls are deployed, its NodeRefs pin them where they run.
    const reconfigured = await simulate(structuredClone(first.nfv), { reconfigure: true });
    t.equal(reconfigured.report.hosting.status, 'placed');
    t.same(reconfigured.nfv.hosts, first.nfv.hosts);
  },
);

/** c1, c2 -> places p1, p2 -> 1.0.0.9 (NAT-free forwarder path) -> p3 -> server: one firewall at p3 isolates both. */
function funnel(): NFV {
  return network(
    [
      webclient('10.0.0.1', '1.0.0.1'),
      webclient('10.0.0.2', '1.0.0.2'),
      place('1.0.0.1', '10.0.0.1', '1.0.0.9'),
      place('1.0.0.2', '10.0.0.2', '1.0.0.9'),
      ['1.0.0.9', 'FORWARDER', ['1.0.0.1', '1.0.0.2', '1.0.0.3'], { name: 'f', forwarder: { name: 'Forwarder' } }],
      place('1.0.0.3', '1.0.0.9', '10.0.1.1'),
      webserver('10.0.1.1', '1.0.0.3'),
    ],
    [isolation('10.0.0.1', '10.0.1.1'), isolation('10.0.0.2', '10.0.1.1')],
  );
}
const funnelHosts = (mb2: Partial<Host> = {}) => [
  host('hc', { type: 'CLIENT', refs: ['10.0.0.1', '10.0.0.2'] }),
  host('hs', { type: 'SERVER', fixedEndpoint: '10.0.1.1' }),
  host('mb1', { supports: ['FIREWALL', 'FORWARDER'] }),
  host('mb2', { supports: ['FIREWALL'], ...mb2 }),
];
const funnelLinks = [conn('hc', 'mb1', 1), conn('mb1', 'mb2', 1), conn('mb2', 'hs', 1)];

t.test('the cheapest allocation that cannot be placed is cut, and the next cheapest is placed (P8)', async (t) => {
  // Without a substrate one firewall at 1.0.0.3 isolates both clients.
  t.same(firewallsOf((await simulate(funnel())).nfv), ['1.0.0.3']);
  // 1.0.0.3 pinned to a host that cannot run a firewall: it must not be used; 1.0.0.1 and 1.0.0.2 can.
  const input = withSubstrate(
    funnel(),
    [...funnelHosts(), host('tiny', { supports: ['WEBCLIENT'], refs: ['1.0.0.3'] })],
    [...funnelLinks, conn('tiny', 'mb2', 1)],
  );
  const { nfv, report } = await placed(t, input);
  t.equal(report.verdict, 'SAT');
  t.same(firewallsOf(nfv), ['1.0.0.1', '1.0.0.2']);
  t.equal(report.hosting.status, 'placed');
  t.same(report.hosting.allocationCuts, [['1.0.0.3']]);
});

t.test(
  'when no allocation can be placed the answer is infeasible, the security answer and the hosts as given',
  async (t) => {
    // The forwarder 1.0.0.9 is a function no host supports.
    const hosts = funnelHosts().map((h) => (h.name === 'mb1' ? host('mb1', { supports: ['FIREWALL'] }) : h));
    const input = withSubstrate(funnel(), hosts, funnelLinks);
    const { nfv, report } = await placed(t, input);
    t.equal(report.verdict, 'SAT', 'placement does not change the verdict');
    t.same(firewallsOf(nfv), ['1.0.0.3'], 'the graph of the first allocation');
    t.equal(report.hosting.status, 'infeasible');
    t.equal(report.hosting.conflicts?.[0]?.code, 'EMPTY_DOMAIN');
    t.match(report.hosting.conflicts?.[0]?.message, /1\.0\.0\.9 \(FORWARDER\) fits no host/);
    t.same(nfv.hosts, input.hosts);
  },
);

/** The funnel with its forwarder configured as VEREFOO's own inputs configure every forwarder. */
function verefooForwarder(): NFV {
  const nfv = funnel();
  const fwd = nfv.graphs.graph![0]!.node.find((n) => n.name === '1.0.0.9')!;
  fwd.configuration = { name: 'ForwardConf', forwarder: { name: 'Forwarder' } };
  return nfv;
}

t.test("a user's forwarder configured 'ForwardConf' is placed like any function (P2)", async (t) => {
  const metrics = [{ node: '1.0.0.9', cores: 2, memory: 4 }];
  const input = withSubstrate(verefooForwarder(), funnelHosts(), funnelLinks, metrics);
  const { nfv, report } = await placed(t, input);
  t.equal(report.hosting.status, 'placed');
  const on = report.hosting.nodes?.find((n) => n.node === '1.0.0.9');
  t.equal(on?.host, 'mb1', 'on the only host that supports FORWARDER');
  t.ok(nfv.hosts?.host?.find((h) => h.name === 'mb1')?.nodeRef?.some((r) => r.node === '1.0.0.9'));
  t.notOk(
    nfv.constraints?.nodeConstraints?.nodeMetrics?.some((m) => m.node === '1.0.0.9' && m.optional),
    'a forwarder of the input is not marked transparent',
  );
});

t.test("a user's forwarder configured 'ForwardConf' that no host supports: EMPTY_DOMAIN", async (t) => {
  const hosts = funnelHosts().map((h) => (h.name === 'mb1' ? host('mb1', { supports: ['FIREWALL'] }) : h));
  const input = withSubstrate(verefooForwarder(), hosts, funnelLinks);
  const { report } = await placed(t, input);
  t.equal(report.hosting.status, 'infeasible');
  t.equal(report.hosting.conflicts?.[0]?.code, 'EMPTY_DOMAIN');
  t.match(report.hosting.conflicts?.[0]?.message, /1\.0\.0\.9 \(FORWARDER\) fits no host/);
});

t.test(
  'the places an answer leaves unused are marked transparent, and stay so when it is submitted again',
  async (t) => {
    const input = withSubstrate(funnel(), funnelHosts(), funnelLinks);
    const first = await placed(t, input);
    const unused = ['1.0.0.1', '1.0.0.2'];
    const forwarders = (nfv: NFV) =>
      nfv.graphs.graph![0]!.node.filter((n) => n.functionalType === 'FORWARDER').map((n) => n.name);
    t.same(forwarders(first.nfv), [...unused, '1.0.0.9']);
    t.same(
      first.nfv.constraints?.nodeConstraints?.nodeMetrics?.filter((m) => m.optional).map((m) => m.node),
      unused,
      'NodeMetrics optional="true" on each unused place, nothing else',
    );
    const again = await placed(t, structuredClone(first.nfv));
    t.same(again.nfv.hosts, first.nfv.hosts, 'placed as before');
    t.same(again.report.hosting.transparent, first.report.hosting.transparent);
    t.ok(unused.every((n) => again.report.hosting.transparent?.includes(n)));
    // Without the mark the same forwarders are functions: they need a host of their own.
    const unmarked = structuredClone(first.nfv);
    unmarked.constraints!.nodeConstraints!.nodeMetrics = [];
    const placedAsFunctions = await placed(t, unmarked);
    t.ok(unused.every((n) => placedAsFunctions.report.hosting.nodes?.some((x) => x.node === n)));
  },
);

t.test('a pattern NodeMetrics sizes every firewall on an allocation place (P2)', async (t) => {
  // Every firewall needs 3 cores; mb2 (next to the server) has 2, so 1.0.0.3 goes on mb1.
  const metrics = [{ node: '1.0.0.-1', cores: 3 }];
  const input = withSubstrate(funnel(), funnelHosts({ cores: 2 }), funnelLinks, metrics);
  const { report } = await placed(t, input);
  t.equal(report.hosting.status, 'placed');
  t.equal(report.firewalls, 1, 'one firewall still fits');
  t.same(report.hosting.hosts?.find((h) => h.nodes.includes('1.0.0.3'))?.cores, [3, 100], 'on mb1, with 3 cores');
});

t.test('P10: a NodeRef naming no node is refused before any solving', async (t) => {
  const input = withSubstrate(funnel(), [...funnelHosts(), host('x', { refs: ['9.9.9.9'] })], funnelLinks);
  const error = await simulate(input).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(error instanceof NfvError, 'an NfvError');
  t.equal((error as NfvError).status, 400);
  t.match((error as NfvError).message, /NodeRef "9\.9\.9\.9" is not a node/);
});

t.test('places of two service graphs get different names and share the substrate', async (t) => {
  const graph = (id: number, c: string, s: string) => ({
    id,
    serviceGraph: true,
    node: [
      {
        name: c,
        functionalType: 'WEBCLIENT' as const,
        neighbour: [{ name: s }],
        configuration: { name: 'c', webclient: { nameWebServer: s } },
      },
      {
        name: s,
        functionalType: 'WEBSERVER' as const,
        neighbour: [{ name: c }],
        configuration: { name: 's', webserver: { name: s } },
      },
    ],
  });
  const input: NFV = {
    graphs: { graph: [graph(0, '10.0.0.1', '10.0.1.1'), graph(1, '10.0.0.2', '10.0.1.2')] },
    constraints: { nodeConstraints: {}, linkConstraints: {} },
    propertyDefinition: {
      property: [isolation('10.0.0.1', '10.0.1.1'), { ...isolation('10.0.0.2', '10.0.1.2'), graph: 1 }],
    },
    hosts: {
      host: [host('mb', { supports: ['FIREWALL'], maxVNF: 1 }), host('mb2', { supports: ['FIREWALL'], maxVNF: 1 })],
    },
    connections: { connection: [conn('mb', 'mb2', 5)] },
  };
  const { nfv, report } = await placed(t, input);
  const names = (nfv.graphs.graph ?? []).map((g) => firewallsOf({ ...nfv, graphs: { graph: [g] } }));
  t.equal(names.flat().length, 2);
  t.not(names[0]![0], names[1]![0], 'one place name per graph');
  t.same(report.hosting.objective, { activeHosts: 2, totalLatency: 0 }, 'maxVNF 1 spreads them over two hosts');
});

t.test('random funnels: the answer is the cheapest placeable allocation (brute force over allocations)', async (t) => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  let infeasible = 0;
  let cut = 0;
  for (let run = 0; run < 60; run++) {
    const metrics = ['1.0.0.1', '1.0.0.2', '1.0.0.3'].map((node) => ({ node, cores: pick([1, 2, 3]) }));
    const hosts = [
      host('hc', { type: 'CLIENT', refs: ['10.0.0.1', '10.0.0.2'] }),
      host('hs', { type: 'SERVER', fixedEndpoint: '10.0.1.1' }),
      host('mb1', { supports: ['FIREWALL', 'FORWARDER'], cores: pick([1, 2, 3, 4]), maxVNF: pick([1, 2, 3]) }),
      host('mb2', { supports: random() < 0.5 ? ['FIREWALL'] : [], cores: pick([0, 1, 2, 3]) }),
      // Half the time 1.0.0.3 (the one-firewall answer) is pinned next to the server, where it may not fit.
      ...(random() < 0.5 ? [host('pin', { supports: ['FIREWALL'], cores: pick([0, 2]), refs: ['1.0.0.3'] })] : []),
    ];
    const links = hosts.some((h) => h.name === 'pin') ? [...funnelLinks, conn('pin', 'hs', 1)] : funnelLinks;
    const input = withSubstrate(funnel(), hosts, links, metrics);
    const { nfv, report } = await placed(t, input);
    // Allocations meeting both isolations: a set of places covering both paths, i.e. {3} or {1, 2} and supersets.
    const candidates = [['1.0.0.3'], ['1.0.0.1', '1.0.0.2']];
    const placeable = candidates.filter((used) => bruteForce({ ...resultInput(input, funnel()), used }));
    const got = firewallsOf(nfv);
    if (placeable.length === 0) {
      infeasible++;
      t.equal(report.hosting.status, 'infeasible', `run ${run}: nothing can be placed`);
      t.same(got, ['1.0.0.3'], `run ${run}: the first allocation`);
    } else {
      if (placeable[0]![0] !== '1.0.0.3') cut++;
      t.equal(report.hosting.status, 'placed', `run ${run}`);
      t.same(got, placeable[0], `run ${run}: the cheapest placeable allocation`);
    }
  }
  t.ok(infeasible > 0 && cut > 0, `the runs include infeasible (${infeasible}) and cut (${cut}) answers`);
});
