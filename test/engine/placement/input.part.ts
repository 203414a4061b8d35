/**
 * The input checks of P10 (each a 400 naming the element), demands (P2), pins (P3), one node per name across graphs
 * (P1), LinkMetrics routes (P7), and the input built from an NFV document.
 */
import t from 'tap';
import { definePlacement, placementInput, withAllocation } from '../../../src/engine/placement/index.js';
import type { PlacementInput } from '../../../src/engine/placement/index.js';
import type { NFV } from '../../../src/model/types.js';
import { conn, endhost, exampleA, fn, host, input, metrics, place } from './build.js';

/** A 400 whose message names the element. */
const refused = (t: Tap.Test, given: PlacementInput, message: RegExp, what: string) =>
  t.throws(() => definePlacement(given), { name: 'NfvError', status: 400, message }, what);

const small = (more: Partial<PlacementInput> = {}, hosts = [host('m1', { supports: ['NAT'] })]) =>
  input([endhost('c', ['n']), fn('n', ['c'])], hosts, [], more);

t.test('P10: host fields missing or negative, unknown type, a name twice', async (t) => {
  for (const field of ['cpu', 'cores', 'diskStorage', 'memory'] as const) {
    const h = host('m1');
    delete h[field];
    refused(t, small({}, [h]), new RegExp(`host "m1": ${field} is missing`), `${field} missing`);
    refused(
      t,
      small({}, [host('m1', { [field]: -1 })]),
      new RegExp(`host "m1": ${field} -1 is negative`),
      `${field} < 0`,
    );
  }
  refused(t, small({}, [host('m1', { maxVNF: -2 })]), /host "m1": maxVNF -2 is negative/, 'maxVNF < 0');
  refused(t, small({}, [host('m1', { type: 'ROUTER' as 'CLIENT' })]), /host "m1": unknown type "ROUTER"/, 'type');
  refused(t, small({}, [host('m1'), host('m1')]), /host "m1" is named twice/, 'duplicate host');
});

t.test('P10: connections with an end that is no host, listed twice, without or with a negative latency', async (t) => {
  const two = [host('m1'), host('m2')];
  refused(t, small({ connections: [conn('m1', 'zz', 1)] }, two), /connection "m1" -> "zz": "zz" is not a host/, 'dest');
  refused(t, small({ connections: [conn('zz', 'm1', 1)] }, two), /"zz" is not a host/, 'source');
  refused(
    t,
    small({ connections: [conn('m1', 'm2', 1), conn('m1', 'm2', 2)] }, two),
    /connection "m1" -> "m2" is listed twice/,
    'pair twice',
  );
  refused(
    t,
    small({ connections: [{ sourceHost: 'm1', destHost: 'm2' }] } as Partial<PlacementInput>, two),
    /connection "m1" -> "m2": avgLatency is missing/,
    'no latency',
  );
  refused(t, small({ connections: [conn('m1', 'm2', -3)] }, two), /avgLatency -3 is negative/, 'negative latency');
  t.doesNotThrow(
    () => definePlacement(small({ connections: [conn('m1', 'm2', 1), conn('m2', 'm1', 2)] }, two)),
    'both directions listed, each its own',
  );
});

t.test('P10: pins', async (t) => {
  const client = host('hc', { type: 'CLIENT', fixedEndpoint: 'c' });
  const mb = host('m1', { supports: ['NAT'] });
  refused(
    t,
    small({}, [host('hc', { type: 'CLIENT', fixedEndpoint: 'zz' }), mb]),
    /fixedEndpoint "zz" is not a node/,
    'unknown',
  );
  refused(
    t,
    small({}, [host('hc', { type: 'CLIENT', fixedEndpoint: 'n' }), mb]),
    /fixedEndpoint "n" is not an end host/,
    'function',
  );
  refused(
    t,
    small({}, [host('m1', { fixedEndpoint: 'c' })]),
    /host "m1": a MIDDLEBOX host has no fixedEndpoint/,
    'fixedEndpoint on a middlebox (type absent means MIDDLEBOX)',
  );
  refused(
    t,
    small({}, [client, host('m1', { refs: ['c'] })]),
    /NodeRef "c" pins an end host to a MIDDLEBOX host/,
    'end host',
  );
  refused(
    t,
    small({}, [client, host('m1', { refs: ['zz'] })]),
    /host "m1": NodeRef "zz" is not a node/,
    'NodeRef unknown',
  );
  refused(
    t,
    small({}, [client, host('hs', { type: 'SERVER', refs: ['c'] })]),
    /node "c" is pinned to two hosts: "hc" \(fixedEndpoint\) and "hs" \(NodeRef\)/,
    'two hosts',
  );
  refused(
    t,
    small({}, [host('m1', { refs: ['n'] }), host('m2', { refs: ['n'] })]),
    /node "n" is pinned to two hosts/,
    'two NodeRefs',
  );
  const p = definePlacement(small({}, [client, host('m1', { supports: ['NAT'], refs: ['n'] })]));
  t.same(p.nodes[1]!.pin, { host: 1, by: 'NodeRef' });
  const same = definePlacement(small({}, [host('hc', { type: 'CLIENT', fixedEndpoint: 'c', refs: ['c'] })]));
  t.same(same.nodes[0]!.pin, { host: 0, by: 'fixedEndpoint' }, 'pinned twice to the same host: one pin');
});

t.test('P10: NodeMetrics given twice or negative', async (t) => {
  refused(
    t,
    small({ nodeMetrics: [metrics('n', {}), metrics('n', { cores: 1 })] }),
    /NodeMetrics "n" is given twice/,
    'twice',
  );
  for (const field of ['nrOfOperations', 'maxNodeLatency', 'reqStorage', 'cores', 'memory'] as const)
    refused(
      t,
      small({ nodeMetrics: [metrics('n', { [field]: -1 })] }),
      new RegExp(`NodeMetrics "n": ${field} -1`),
      field,
    );
});

t.test('P10: LinkMetrics', async (t) => {
  const pinnedClient = [host('hc', { type: 'CLIENT', fixedEndpoint: 'c' }), host('m1', { supports: ['NAT'] })];
  const lm = (src: string, dst: string, reqLatency = 3) => ({ linkMetrics: [{ src, dst, reqLatency }] });
  refused(t, small(lm('zz', 'n'), pinnedClient), /LinkMetrics "zz" -> "n": src "zz" is not a node/, 'src');
  refused(t, small(lm('n', 'zz'), pinnedClient), /dst "zz" is not a node/, 'dst');
  refused(t, small(lm('n', 'n'), pinnedClient), /src and dst are the same node/, 'src = dst');
  refused(t, small(lm('c', 'n')), /"c" is an end host no Host pins, so it has no position/, 'external end host');
  refused(t, small(lm('n', 'c', -1), pinnedClient), /reqLatency -1 is negative/, 'negative');
  const chain = input(
    [endhost('c', ['p1']), place('p1', ['c', 'x']), fn('x', ['p1', 'y']), fn('y', ['x'])],
    pinnedClient,
    [],
    { linkMetrics: [{ src: 'c', dst: 'y', reqLatency: 9 }] },
  );
  refused(t, chain, /LinkMetrics "c" -> "y" names no link/, 'a typed function in between: no route');
  const ok = definePlacement({ ...chain, linkMetrics: [{ src: 'c', dst: 'x', reqLatency: 9 }] });
  t.same(ok.linkMetrics[0]!.routes, [[0, 1, 2]], 'the route runs through the place');
  t.same(
    definePlacement({ ...chain, linkMetrics: [{ src: 'x', dst: 'c' }] }).linkMetrics[0]!.reqLatency,
    null,
    'no reqLatency: no bound',
  );
});

t.test('P1: one node per name across graphs; two types for one name are refused', async (t) => {
  const two: PlacementInput = {
    graphs: [
      { id: 1, nodes: [fn('n', ['m']), fn('m', ['n'], 'FIREWALL')] },
      { id: 2, nodes: [fn('n', ['k']), fn('k', ['n'], 'CACHE')] },
    ],
    hosts: [host('m1')],
    connections: [],
    used: [],
  };
  const p = definePlacement(two);
  t.same(
    p.nodes.map((n) => [n.name, n.graph, n.next.map((k) => p.nodes[k]!.name)]),
    [
      ['n', 1, ['m', 'k']],
      ['m', 1, ['n']],
      ['k', 2, ['n']],
    ],
  );
  two.graphs[1]!.nodes[0]!.functionalType = 'CACHE';
  refused(t, two, /node "n" is NAT in graph 1 and CACHE in graph 2/, 'two types');
  refused(
    t,
    input([fn('n', ['zz'])], [host('m1')]),
    /node "n": neighbour "zz" is not a node/,
    'a neighbour that is not a node',
  );
});

t.test('P2: demands: own entry, else for a place the most specific pattern, else zero', async (t) => {
  const p = definePlacement(
    input(
      [place('20.0.0.1', ['20.0.1.1']), place('20.0.1.1', ['20.0.0.1']), fn('20.0.0.2', []), place('x', [])],
      [host('m1')],
      [],
      {
        nodeMetrics: [
          metrics('20.0.-1.-1', { cores: 1 }),
          metrics('20.0.0.-1', { cores: 2, memory: 3 }),
          metrics('20.0.1.-1', { cores: 4 }),
          metrics('20.0.1.1', { cores: 7, nrOfOperations: 5, maxNodeLatency: 2 }),
        ],
      },
    ),
  );
  t.same(
    p.nodes.map((n) => [n.name, n.demand.cores, n.demand.memory]),
    [
      ['20.0.0.1', 2, 3],
      ['20.0.1.1', 7, 0],
      ['20.0.0.2', 0, 0],
      ['x', 0, 0],
    ],
    'fewest -1 octets wins; an own entry beats patterns; patterns never size typed nodes or non-addresses',
  );
  t.same(p.nodes[1]!.demand, { cores: 7, memory: 0, storage: 0, operations: 5, maxLatency: 2 });
});

t.test('the allocation: only places and optional firewalls, swapped with withAllocation', async (t) => {
  const p = definePlacement(exampleA({ used: ['fw2'] }));
  t.same([...p.used], [2]);
  t.same([...withAllocation(p, ['fw1', 'fw3']).used].sort(), [1, 3]);
  t.throws(() => withAllocation(p, ['a']), /neither a place nor optional/);
  t.throws(() => withAllocation(p, ['zz']), /not a node/);
});

t.test('placementInput: kinds from the NFV, optional only with optional="true"', async (t) => {
  const nfv: Pick<NFV, 'graphs' | 'constraints' | 'hosts' | 'connections'> = {
    graphs: {
      graph: [
        {
          id: 3,
          node: [
            { name: 'c', functionalType: 'WEBCLIENT', neighbour: [{ name: 'p' }] },
            { name: 'p', neighbour: [{ name: 'c' }, { name: 'f1' }] },
            { name: 'f1', functionalType: 'FIREWALL', neighbour: [{ name: 'p' }, { name: 'f2' }] },
            { name: 'f2', functionalType: 'FIREWALL', neighbour: [{ name: 'f1' }, { name: 'forced' }] },
            { name: 'forced', functionalType: 'FIREWALL', neighbour: [{ name: 'f2' }] },
          ],
        },
      ],
    },
    constraints: {
      nodeConstraints: {
        nodeMetrics: [
          { node: 'f1', optional: true },
          { node: 'f2', cores: 2 },
        ],
      },
      linkConstraints: { linkMetrics: [{ src: 'f1', dst: 'f2', reqLatency: 4 }] },
    },
    hosts: { host: [host('m1', { supports: ['FIREWALL'] })] },
    connections: { connection: [] },
  };
  const given = placementInput(nfv, ['p'], new Set(['forced']));
  t.same(
    given.graphs[0]!.nodes.map((n) => [n.name, n.kind]),
    [
      ['c', 'endhost'],
      ['p', 'place'],
      ['f1', 'optional'],
      ['f2', 'function'],
      ['forced', 'place'],
    ],
    'a NodeMetrics entry without optional="true" leaves f2 mandatory',
  );
  t.equal(given.graphs[0]!.id, 3);
  t.same(given.linkMetrics, [{ src: 'f1', dst: 'f2', reqLatency: 4 }]);
  t.same(given.used, ['p']);
  t.ok(definePlacement(given));
  t.same(placementInput({ graphs: {} }, []).hosts, [], 'no Hosts: an empty substrate');
});
