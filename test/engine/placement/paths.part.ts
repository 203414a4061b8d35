/**
 * Exact node latency (P4) and host paths (P5): decimals read as printed, BigInt comparison at the edges where
 * floating point is wrong; mirrored connections, distances, connected parts, and the tie rule of a shown host path.
 */
import t from 'tap';
import { exactDecimal, latencyFits } from '../../../src/engine/placement/decimal.js';
import { definePlacement } from '../../../src/engine/placement/index.js';
import { hostGraph, HostPaths } from '../../../src/engine/placement/paths.js';
import { conn, fn, host, input } from './build.js';

t.test('a number is read as the decimal it prints as', async (t) => {
  t.same(exactDecimal(2.4), { digits: 24n, scale: 1 });
  t.same(exactDecimal(0), { digits: 0n, scale: 0 });
  t.same(exactDecimal(1e-7), { digits: 1n, scale: 7 });
  t.same(exactDecimal(1.5e21), { digits: 1500000000000000000000n, scale: 0 });
  t.same(exactDecimal(3), { digits: 3n, scale: 0 });
  t.throws(() => exactDecimal(-1));
  t.throws(() => exactDecimal(Infinity));
});

t.test('node latency: operations <= maxNodeLatency * cpu * 10^9, exactly', async (t) => {
  t.ok(
    latencyFits(900_000_000, 3, exactDecimal(0.3)),
    '0.9e9 in 3 s at 0.3 GHz: floating point says 899999999.9999999',
  );
  t.notOk(latencyFits(900_000_001, 3, exactDecimal(0.3)));
  t.ok(latencyFits(2_400_000_000, 1, exactDecimal(2.4)), 'exactly at the bound');
  t.notOk(latencyFits(2_400_000_001, 1, exactDecimal(2.4)));
  const most = Number.MAX_SAFE_INTEGER;
  t.ok(latencyFits(most, 1_000_000, exactDecimal(9.007199254740991)), 'the largest long, to the last operation');
  t.notOk(latencyFits(most, 1_000_000, exactDecimal(9.00719925474099)));
  t.ok(latencyFits(1, 2_147_483_647, exactDecimal(1e-7)), 'products near 2e27 compare exactly');
  t.notOk(latencyFits(1, 0, exactDecimal(10)), 'no time at all');
  t.ok(latencyFits(0, 0, exactDecimal(0)), 'nothing to do takes no time, even at cpu 0');
  t.notOk(latencyFits(1, 5, exactDecimal(0)), 'cpu 0: infinite latency');
  t.ok(latencyFits(10 ** 15, undefined, exactDecimal(0)), 'no maxNodeLatency: no bound');
});

/** A substrate of the given hosts (MIDDLEBOX) and connections, with one node so the input is complete. */
const substrate = (hosts: string[], connections: ReturnType<typeof conn>[]) => {
  const problem = definePlacement(
    input(
      [fn('n', [])],
      hosts.map((h) => host(h)),
      connections,
    ),
  );
  const graph = hostGraph(problem);
  const paths = new HostPaths(graph, problem.edges);
  const at = (h: string) => problem.hostIndex.get(h)!;
  return {
    graph,
    dist: (a: string, b: string) => graph.dist[at(a) * graph.count + at(b)],
    path: (a: string, b: string) => paths.path(at(a), at(b))?.map((h) => problem.hosts[h]!.name),
  };
};

t.test('connections listed one way carry both; listed both ways, each has its own latency', async (t) => {
  const s = substrate(['a', 'b', 'c'], [conn('a', 'b', 3), conn('b', 'c', 1), conn('c', 'b', 7)]);
  t.equal(s.dist('a', 'b'), 3);
  t.equal(s.dist('b', 'a'), 3, 'mirrored');
  t.equal(s.dist('b', 'c'), 1);
  t.equal(s.dist('c', 'b'), 7, 'its own latency, not mirrored');
  t.equal(s.dist('c', 'a'), 10);
  t.equal(s.dist('a', 'a'), 0);
  t.same(s.path('c', 'a'), ['c', 'b', 'a']);
  t.same(s.path('a', 'a'), ['a']);
});

t.test('parts of a disconnected substrate; unreachable hosts have no path', async (t) => {
  const s = substrate(['a', 'b', 'c', 'd', 'e'], [conn('a', 'b', 1), conn('d', 'c', 2)]);
  t.same(Array.from(s.graph.part), [0, 0, 1, 1, 2]);
  t.equal(s.graph.parts, 3);
  t.equal(s.dist('a', 'c'), Infinity);
  t.equal(s.path('a', 'c'), undefined);
});

t.test('the shown path: least latency, then fewest hops, then the smallest host sequence', async (t) => {
  // s -> t at latency 4 three ways: s-x-t (2 hops), s-y-z-t (3 hops, zero-latency steps), s-w-t (2 hops).
  const hops = substrate(
    ['s', 'w', 'y', 'z', 'x', 't'],
    [
      conn('s', 'x', 2),
      conn('x', 't', 2),
      conn('s', 'y', 4),
      conn('y', 'z', 0),
      conn('z', 't', 0),
      conn('s', 'w', 1),
      conn('w', 't', 3),
    ],
  );
  t.equal(hops.dist('s', 't'), 4);
  t.same(hops.path('s', 't'), ['s', 'w', 't'], 'w comes before x in document order; y-z has more hops');
  const cheaper = substrate(['s', 'm', 't'], [conn('s', 't', 5), conn('s', 'm', 2), conn('m', 't', 2)]);
  t.same(cheaper.path('s', 't'), ['s', 'm', 't'], 'latency first, even with more hops');
  const early = substrate(
    ['s', 'b', 'a', 't'],
    [conn('s', 'a', 1), conn('s', 'b', 1), conn('a', 't', 1), conn('b', 't', 1)],
  );
  t.same(early.path('s', 't'), ['s', 'b', 't'], 'b is listed before a');
});
