/**
 * The parts between input and search: which nodes an allocation places and how they link (P2, P6, P7), and every
 * conflict code on a hand-made input, with its message, its nodes, hosts and constraints, and brute force agreeing
 * that nothing can be placed.
 */
import t from 'tap';
import { preprocess } from '../../../src/engine/placement/bounds.js';
import { definePlacement, placeNodes } from '../../../src/engine/placement/index.js';
import type { Conflict, PlacementInput } from '../../../src/engine/placement/index.js';
import { instanceOf } from '../../../src/engine/placement/instance.js';
import { hostGraph } from '../../../src/engine/placement/paths.js';
import { bruteForce } from './checker.js';
import { conn, endhost, fn, host, input, metrics, optional, place } from './build.js';

t.test('an allocation: placed, transparent and external nodes; links through transparent ones', async (t) => {
  const given = input(
    [
      endhost('c', ['p1']),
      place('p1', ['c', 'f']),
      fn('f', ['p1', 'o']),
      optional('o', ['f', 'e']),
      endhost('e', ['o'], 'WEBSERVER'),
      place('p2', ['f']),
    ],
    [host('hc', { type: 'CLIENT', fixedEndpoint: 'c' }), host('m1')],
    [],
    {
      used: ['p2'],
      linkMetrics: [
        { src: 'c', dst: 'f', reqLatency: 5 },
        { src: 'p2', dst: 'f', reqLatency: 5 },
      ],
    },
  );
  const i = instanceOf(definePlacement(given));
  const name = (k: number) => i.problem.nodes[k]!.name;
  t.same(i.placed.map(name), ['c', 'f', 'p2']);
  t.same(i.transparent.map(name), ['p1', 'o']);
  t.same(i.external.map(name), ['e'], 'an end host no Host pins');
  t.same(
    i.links.map(([u, v]) => `${name(i.placed[u]!)}>${name(i.placed[v]!)}`),
    ['c>f', 'f>c', 'p2>f'],
    'p2 lists f, f does not list p2 (one way); e is external, so o leads nowhere placed',
  );
  t.same(
    i.metrics[0]!.chains.map((c) => c.positions),
    [[0, 1]],
    'c -> f through the unused place',
  );
  t.same(
    i.metrics[1]!.chains.map((c) => c.positions),
    [[2, 1]],
    'p2 -> f, the used place placed itself',
  );
});

/** The conflicts of an input, which brute force must also find unplaceable. */
function conflicts(t: Tap.Test, given: PlacementInput): Conflict[] {
  const outcome = placeNodes(definePlacement(given));
  t.equal(bruteForce(given), undefined, 'brute force finds no placement');
  if (outcome.status !== 'infeasible') throw new Error(`expected infeasible, got ${outcome.status}`);
  return outcome.conflicts;
}

t.test('EMPTY_DOMAIN: every reason, and a pin that cannot hold', async (t) => {
  const [c] = conflicts(
    t,
    input(
      [fn('n', [], 'NAT')],
      [
        host('small', { supports: ['NAT'], cores: 1 }),
        host('low', { supports: ['NAT'], memory: 1 }),
        host('disk', { supports: ['NAT'], diskStorage: 1 }),
        host('full', { supports: ['NAT'], maxVNF: 0 }),
        host('slow', { supports: ['NAT'], cpu: 0.5 }),
        host('srv', { type: 'SERVER' }),
      ],
      [],
      {
        nodeMetrics: [
          metrics('n', { cores: 2, memory: 2, reqStorage: 2, nrOfOperations: 1_000_000_000, maxNodeLatency: 1 }),
        ],
      },
    ),
  );
  t.equal(c!.code, 'EMPTY_DOMAIN');
  t.equal(
    c!.message,
    'n (NAT) fits no host. fewer than 2 cores: small; less than 2 memory: low; less than 2 diskStorage: disk; ' +
      'maxVNF 0: full; cpu too slow for 1000000000 operations within 1 s: slow; ' +
      'SERVER host (functions go on MIDDLEBOX hosts): srv',
  );
  const [pinned] = conflicts(
    t,
    input([fn('n', [])], [host('hc', { type: 'CLIENT', refs: ['n'] }), host('m1', { supports: ['NAT'] })]),
  );
  t.equal(
    pinned!.message,
    'n (NAT) fits no host. Pinned by NodeRef to hc; CLIENT host (functions go on MIDDLEBOX hosts): hc',
  );
  t.same(pinned!.hosts, ['hc'], 'only the pinned host is considered');
});

t.test(
  'PIN_OVERLOAD: pinned nodes alone overfill a host; the nodes listed are a minimal overfilling set',
  async (t) => {
    const given = input(
      [fn('a', []), fn('b', []), fn('z', [])],
      [host('m1', { supports: ['NAT'], cores: 4, maxVNF: 2, refs: ['a', 'b', 'z'] })],
      [],
      { nodeMetrics: [metrics('a', { cores: 3 }), metrics('b', { cores: 3 })] },
    );
    const found = conflicts(t, given);
    t.same(
      found.map((c) => [c.code, c.message, c.nodes, c.constraints[0], c.minimal]),
      [
        ['PIN_OVERLOAD', 'nodes pinned to m1 need 6 cores, it has 4: a, b, z', ['a', 'b'], 'cores of m1', true],
        [
          'PIN_OVERLOAD',
          'nodes pinned to m1 need 3 functions, maxVNF is 2: a, b, z',
          ['a', 'b', 'z'],
          'maxVNF of m1',
          true,
        ],
      ],
    );
  },
);

t.test('UNREACHABLE: linked nodes whose hosts are in parts not joined', async (t) => {
  const pair = conflicts(
    t,
    input(
      [fn('a', ['b'], 'NAT'), fn('b', ['a'], 'CACHE')],
      [host('m1', { supports: ['NAT'] }), host('m2', { supports: ['CACHE'] }), host('m3', { supports: ['CACHE'] })],
      [conn('m2', 'm3', 1)],
    ),
  );
  t.same(
    pair.map((c) => [c.code, c.nodes, c.hosts, c.minimal]),
    [['UNREACHABLE', ['a', 'b'], ['m1', 'm2', 'm3'], true]],
    'one conflict for the pair, though the link runs both ways',
  );
  t.match(pair[0]!.message, /^no eligible host of a reaches an eligible host of b: a can go on m1, b on m2, m3/);
  // Pairs can meet (u with v in part 1, v with w in part 2), the three cannot.
  const group = conflicts(
    t,
    input(
      [fn('u', ['v'], 'NAT'), fn('v', ['u', 'w'], 'FIREWALL'), fn('w', ['v'], 'CACHE')],
      [host('m1', { supports: ['NAT', 'FIREWALL'] }), host('m2', { supports: ['CACHE', 'FIREWALL'] })],
    ),
  );
  t.same(
    group.map((c) => [c.code, c.message, c.minimal]),
    [['UNREACHABLE', 'the linked nodes u, v, w have no connected part of the substrate where all can go', false]],
  );
});

t.test('LINK_BOUND: the least latency over the candidates exceeds reqLatency', async (t) => {
  const [c] = conflicts(
    t,
    input(
      [endhost('c', ['p']), place('p', ['c', 'f']), fn('f', ['p'])],
      [host('hc', { type: 'CLIENT', fixedEndpoint: 'c' }), host('m1'), host('m2', { supports: ['NAT', 'FIREWALL'] })],
      [conn('hc', 'm1', 2), conn('m1', 'm2', 3)],
      { used: ['p'], linkMetrics: [{ src: 'c', dst: 'f', reqLatency: 4 }] },
    ),
  );
  t.same(c, {
    code: 'LINK_BOUND',
    message: 'LinkMetrics c -> f (reqLatency 4): the least achievable latency is 5 (route c, p, f)',
    nodes: ['c', 'p', 'f'],
    hosts: [],
    constraints: ['LinkMetrics c -> f <= 4'],
    minimal: false,
  });
});

t.test('a LinkMetrics entry narrows the candidates before search', async (t) => {
  const problem = definePlacement(
    input(
      [endhost('c', ['f']), fn('f', ['c'])],
      [
        host('hc', { type: 'CLIENT', fixedEndpoint: 'c' }),
        host('near', { supports: ['NAT'] }),
        host('far', { supports: ['NAT'] }),
      ],
      [conn('hc', 'near', 1), conn('near', 'far', 5)],
      { linkMetrics: [{ src: 'c', dst: 'f', reqLatency: 3 }] },
    ),
  );
  const pre = preprocess(instanceOf(problem), hostGraph(problem));
  t.same(
    pre.domains?.map((d) => Array.from(d)),
    [[0], [1]],
    'far is 6 away from c: gone',
  );
});

t.test('AGGREGATE: the nodes that can only go on a host set need more than it offers', async (t) => {
  const [cores] = conflicts(
    t,
    input(
      [fn('a', []), fn('b', []), fn('c', []), fn('d', [], 'CACHE')],
      [host('m1', { supports: ['NAT'], cores: 4 }), host('m2', { supports: ['NAT', 'CACHE'], cores: 4 })],
      [],
      { nodeMetrics: ['a', 'b', 'c'].map((n) => metrics(n, { cores: 3 })) },
    ),
  );
  t.same(
    [cores!.code, cores!.message, cores!.nodes, cores!.constraints],
    [
      'AGGREGATE',
      'a, b, c, d can only go on m1, m2, which offer 8 cores in all; they need 9',
      ['a', 'b', 'c', 'd'],
      ['cores of m1', 'cores of m2', 'domain of a', 'domain of b', 'domain of c', 'domain of d'],
    ],
  );
  const [vnf] = conflicts(
    t,
    input(
      [fn('a', []), fn('b', []), fn('c', [])],
      [host('m1', { supports: ['NAT'], maxVNF: 1 }), host('m2', { supports: ['NAT'], maxVNF: 1 })],
    ),
  );
  t.equal(vnf!.message, 'a, b, c can only go on m1, m2, which take 2 functions in all (maxVNF); they are 3');
});

t.test('COMBINED: packing fails where every sum holds; minimised over constraint groups', async (t) => {
  // Three nodes of 3 cores, two middleboxes of 5: 9 <= 10, yet each middlebox takes one. A CLIENT host with room
  // makes every domain matter.
  const [c] = conflicts(
    t,
    input(
      [fn('a', []), fn('b', []), fn('c', [])],
      [
        host('m1', { supports: ['NAT'], cores: 5 }),
        host('m2', { supports: ['NAT'], cores: 5 }),
        host('hc', { type: 'CLIENT' }),
      ],
      [conn('m1', 'm2', 1)],
      { nodeMetrics: ['a', 'b', 'c'].map((n) => metrics(n, { cores: 3 })) },
    ),
  );
  t.same(c, {
    code: 'COMBINED',
    message: 'no placement meets these together: cores of m1; cores of m2; domain of a; domain of b; domain of c',
    nodes: ['a', 'b', 'c'],
    hosts: ['m1', 'm2'],
    constraints: ['cores of m1', 'cores of m2', 'domain of a', 'domain of b', 'domain of c'],
    minimal: true,
  });
  // Two nodes that a LinkMetrics entry wants on one host, which has room for one only.
  const [link] = conflicts(
    t,
    input(
      [fn('a', ['b']), fn('b', ['a'])],
      [host('m1', { supports: ['NAT'], cores: 4 }), host('m2', { supports: ['NAT'], cores: 4 })],
      [conn('m1', 'm2', 1)],
      {
        nodeMetrics: [metrics('a', { cores: 3 }), metrics('b', { cores: 3 })],
        linkMetrics: [{ src: 'a', dst: 'b', reqLatency: 0 }],
      },
    ),
  );
  t.same(link!.constraints, ['LinkMetrics a -> b <= 0', 'cores of m1', 'cores of m2']);
  t.equal(link!.minimal, true);
});
