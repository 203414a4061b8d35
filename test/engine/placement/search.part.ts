/**
 * The search: the branch and bound beats first fit where first fit is not optimal, interchangeable hosts are
 * recognised, latency decides between equal host counts, a zero-demand node still makes its host active, limits
 * that stop the search say so (optimal false with a lower bound, or timeout), and one input gives one answer.
 */
import t from 'tap';
import { definePlacement, placeNodes } from '../../../src/engine/placement/index.js';
import type { PlacementInput } from '../../../src/engine/placement/index.js';
import { instanceOf } from '../../../src/engine/placement/instance.js';
import { buildModel } from '../../../src/engine/placement/model.js';
import { hostGraph } from '../../../src/engine/placement/paths.js';
import { generateSubstrate } from '../../../src/bench/substrate.js';
import { bruteForce, violations } from './checker.js';
import { conn, endhost, fn, host, input, metrics } from './build.js';

const later = () => Date.now() + 60_000;

function solved(t: Tap.Test, given: PlacementInput, effort?: number) {
  const outcome = placeNodes(definePlacement(given), { deadline: later(), effort });
  t.same(violations(given, outcome), [], 'the checker finds nothing wrong');
  if (outcome.status !== 'placed') throw new Error(`not placed: ${outcome.status}`);
  return outcome;
}

/** Sizes 5, 5, 4, 4, 3, 3 on three hosts of 12 cores, all one latency apart: first fit needs 3, two suffice. */
const packing = () =>
  input(
    ['a', 'b', 'c', 'd', 'e', 'f'].map((n) => fn(n, [])),
    ['m1', 'm2', 'm3'].map((h) => host(h, { supports: ['NAT'], cores: 12 })),
    [conn('m1', 'm2', 1), conn('m2', 'm3', 1), conn('m1', 'm3', 1)],
    { nodeMetrics: [5, 5, 4, 4, 3, 3].map((cores, k) => metrics('abcdef'[k]!, { cores })) },
  );

t.test('the branch and bound packs what first fit cannot', async (t) => {
  const given = packing();
  const outcome = solved(t, given);
  t.same(outcome.objective, { activeHosts: 2, totalLatency: 0 });
  t.same(outcome.objective, bruteForce(given));
  t.equal(outcome.optimal, true);
  t.same(
    outcome.hosts.map((h) => h.cores),
    [
      [12, 12],
      [12, 12],
    ],
  );
});

t.test('interchangeable hosts share a class; pinned or different ones do not', async (t) => {
  const given = packing();
  given.hosts.push(
    host('m4', { supports: ['NAT'], cores: 12 }),
    host('m5', { supports: ['NAT'], cores: 12, refs: ['a'] }),
  );
  given.hosts.push(host('m6', { supports: ['NAT'], cores: 11 }));
  given.connections.push(conn('m1', 'm4', 1), conn('m2', 'm4', 1), conn('m3', 'm4', 1), conn('m1', 'm5', 1));
  given.connections.push(conn('m2', 'm5', 1), conn('m3', 'm5', 1), conn('m4', 'm5', 1));
  const problem = definePlacement(given);
  const instance = instanceOf(problem);
  const graph = hostGraph(problem);
  const domains = instance.placed.map(() => Int32Array.from(problem.hosts, (h) => h.index));
  const classes = Array.from(buildModel(instance, graph, domains).hostClass);
  t.same(classes.slice(0, 4), [0, 0, 0, 0], 'm1-m4: same attributes, same latency to every other host');
  t.not(classes[4], classes[0], 'm5 is a pin target');
  t.not(classes[5], classes[0], 'm6 has fewer cores (and no connection)');
  const outcome = solved(t, given);
  t.same(outcome.objective, { activeHosts: 2, totalLatency: 0 });
  t.equal(outcome.optimal, true);
});

t.test('with the host count equal, the least latency wins; a zero-demand node still activates its host', async (t) => {
  const given = input(
    [endhost('c', ['f']), fn('f', ['c', 's']), endhost('s', ['f'], 'WEBSERVER')],
    [
      host('hc', { type: 'CLIENT', fixedEndpoint: 'c' }),
      host('far', { supports: ['NAT'] }),
      host('near', { supports: ['NAT'] }),
      host('hs', { type: 'SERVER', fixedEndpoint: 's' }),
    ],
    [conn('hc', 'far', 5), conn('far', 'hs', 5), conn('hc', 'near', 1), conn('near', 'hs', 2)],
  );
  const outcome = solved(t, given);
  t.same(
    outcome.nodes.map((n) => n.host),
    ['hc', 'near', 'hs'],
  );
  t.same(outcome.objective, { activeHosts: 3, totalLatency: 6 }, 'c-f and f-s both ways: 1+1+2+2; f has no demand');
  t.same(outcome.objective, bruteForce(given));
});

t.test('a search stopped by its budget says so, with a lower bound, and gives the same answer each time', async (t) => {
  const { input: given } = generateSubstrate({ hosts: 200, chains: 16, seed: 1 });
  const first = solved(t, given, 2_000_000);
  t.equal(first.optimal, false);
  t.ok(first.lowerBound.activeHosts <= first.objective.activeHosts);
  t.ok(first.lowerBound.totalLatency <= first.objective.totalLatency);
  const second = placeNodes(definePlacement(given), { deadline: later(), effort: 2_000_000 });
  t.same(second, first, 'a budget in work, not time, gives one answer');
  // The time limit only stops the job: past it, no answer at all rather than whatever the search had reached.
  const late = () => placeNodes(definePlacement(given), { deadline: Date.now() - 1, effort: 2_000_000 });
  t.throws(late, { status: 504 }, 'past the time limit: SolverTimeout');
});

t.test('no placement found before the budget ran out and none proven impossible: timeout', async (t) => {
  // Sizes 3, 3, 2, 2, 2 on hosts of 7 and 5 cores, thirty times over: first fit fills the 7s with 3+3 and is stuck.
  const names: string[] = [];
  const hosts = [];
  for (let k = 0; k < 30; k++) {
    names.push(...[0, 1, 2, 3, 4].map((i) => `n${k}-${i}`));
    hosts.push(host(`big${k}`, { supports: ['NAT'], cores: 7 }), host(`small${k}`, { supports: ['NAT'], cores: 5 }));
  }
  const given = input(
    names.map((n) => fn(n, [])),
    hosts,
    hosts.slice(1).map((h) => conn(hosts[0]!.name, h.name, 1)),
    { nodeMetrics: names.map((n) => metrics(n, { cores: n.endsWith('-0') || n.endsWith('-1') ? 3 : 2 })) },
  );
  const outcome = placeNodes(definePlacement(given), { deadline: later(), effort: 1 });
  t.equal(outcome.status, 'timeout');
  t.same(violations(given, outcome), [], 'nothing half placed is claimed');
});

t.test('generated substrates of 50 hosts: valid answers, proven optimal', async (t) => {
  for (const seed of [1, 2, 3]) {
    const { input: given } = generateSubstrate({ hosts: 50, chains: 6, seed });
    const outcome = solved(t, given);
    t.equal(outcome.optimal, true, `seed ${seed} proven optimal`);
  }
});
