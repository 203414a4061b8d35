/**
 * The worked examples of placement.md section 4, built by hand, each answer re-checked by the independent checker
 * and compared with brute force.
 */
import t, { type Test } from 'tap';
import { definePlacement, minimalConflict, placeNodes, withAllocation } from '../../../src/engine/placement/index.js';
import type { PlacementInput } from '../../../src/engine/placement/index.js';
import { bruteForce, violations } from './checker.js';
import { exampleA, fn, host, input, place } from './build.js';

const ALL = ['fw1', 'fw2', 'fw3'];

function placed(t: Test, given: PlacementInput) {
  const outcome = placeNodes(definePlacement(given));
  t.same(violations(given, outcome), [], 'the checker finds nothing wrong');
  if (outcome.status !== 'placed') throw new Error(`not placed: ${JSON.stringify(outcome)}`);
  t.same(outcome.objective, bruteForce(given), 'the objective is brute force optimum');
  return outcome;
}

t.test('A: the least allocation puts a and b on their hosts, linked through host1 both ways', async (t) => {
  const outcome = placed(t, exampleA());
  t.same(outcome.objective, { activeHosts: 2, totalLatency: 4 });
  t.equal(outcome.optimal, true);
  t.same(outcome.lowerBound, outcome.objective);
  t.same(
    outcome.nodes.map((n) => [n.node, n.host, n.pin]),
    [
      ['a', 'hostA', 'fixedEndpoint'],
      ['b', 'hostD', 'fixedEndpoint'],
    ],
  );
  t.same(outcome.transparent, ALL, 'removed optional firewalls pass traffic');
  t.same(
    outcome.links.map((l) => [l.src, l.dst, l.latency, l.hostPath.join(' ')]),
    [
      ['a', 'b', 2, 'hostA host1 hostD'],
      ['b', 'a', 2, 'hostD host1 hostA'],
    ],
    'b -> a rides the mirrored connections',
  );
  t.same(
    outcome.hosts.map((h) => h.host),
    ['hostA', 'hostD'],
    'host1 stays inactive',
  );
});

t.test('A: the greatest allocation puts the three firewalls on host1: 3 hosts, latency 4', async (t) => {
  const outcome = placed(t, exampleA({ used: ALL }));
  t.same(outcome.objective, { activeHosts: 3, totalLatency: 4 });
  t.same(outcome.hosts.find((h) => h.host === 'host1')?.nodes, ['fw1', 'fw2', 'fw3']);
  t.same(outcome.hosts.find((h) => h.host === 'host1')?.vnfs, [3, 40]);
});

t.test('A with LinkMetrics a -> b <= 1: LINK_BOUND, at least 2, for every allocation', async (t) => {
  const given = exampleA({ linkMetrics: [{ src: 'a', dst: 'b', reqLatency: 1 }] });
  const problem = definePlacement(given);
  for (const used of [[], ALL]) {
    const outcome = placeNodes(withAllocation(problem, used));
    t.equal(outcome.status, 'infeasible');
    if (outcome.status !== 'infeasible') continue;
    t.equal(outcome.conflicts[0]!.code, 'LINK_BOUND');
    t.match(outcome.conflicts[0]!.message, /least achievable latency is 2/);
    t.same(outcome.conflicts[0]!.constraints, ['LinkMetrics a -> b <= 1']);
    t.equal(bruteForce({ ...given, used }), undefined, 'brute force finds no placement either');
  }
  t.same(minimalConflict(problem, ALL), { status: 'conflict', cut: [], minimal: true }, 'no allocation can be placed');
});

t.test('A with LinkMetrics a -> fw1 <= 0: n/a when fw1 is removed, LINK_BOUND when it is kept', async (t) => {
  const given = exampleA({ linkMetrics: [{ src: 'a', dst: 'fw1', reqLatency: 0 }] });
  const least = placed(t, given);
  t.same(least.linkMetrics, [
    { src: 'a', dst: 'fw1', reqLatency: 0, latency: null, route: [], hostPath: [], status: 'n/a: fw1 not placed' },
  ]);
  const problem = definePlacement({ ...given, used: ALL });
  const outcome = placeNodes(problem);
  t.equal(outcome.status, 'infeasible');
  if (outcome.status === 'infeasible') t.equal(outcome.conflicts[0]!.code, 'LINK_BOUND');
  t.same(minimalConflict(problem, ALL), { status: 'conflict', cut: ['fw1'], minimal: true }, 'the cut is fw1 alone');
});

t.test('A with LinkMetrics a -> b <= 2 holds: the route through the kept firewalls is reported', async (t) => {
  const outcome = placed(t, exampleA({ used: ALL, linkMetrics: [{ src: 'a', dst: 'b', reqLatency: 2 }] }));
  t.same(outcome.linkMetrics, [
    {
      src: 'a',
      dst: 'b',
      reqLatency: 2,
      latency: 2,
      route: ['a', 'fw1', 'fw3', 'fw2', 'b'],
      hostPath: ['hostA', 'host1', 'hostD'],
      status: 'ok',
    },
  ]);
});

t.test('B: a TRAFFIC_MONITOR no host lists: EMPTY_DOMAIN with the reasons grouped by host', async (t) => {
  const given = input(
    [place('20.0.0.1', ['33.33.33.1']), fn('33.33.33.1', ['20.0.0.1'], 'TRAFFIC_MONITOR')],
    [
      host('hostC1', { type: 'CLIENT' }),
      host('hostC2', { type: 'CLIENT' }),
      host('hostS1', { type: 'SERVER' }),
      host('mb1', { supports: ['FIREWALL', 'NAT'] }),
      host('mb2', { supports: ['FIREWALL'] }),
    ],
  );
  const problem = definePlacement(given);
  const outcome = placeNodes(problem);
  t.equal(outcome.status, 'infeasible');
  if (outcome.status !== 'infeasible') return;
  t.same(outcome.conflicts, [
    {
      code: 'EMPTY_DOMAIN',
      message:
        '33.33.33.1 (TRAFFIC_MONITOR) fits no host. CLIENT host (functions go on MIDDLEBOX hosts): hostC1, hostC2; ' +
        'SERVER host (functions go on MIDDLEBOX hosts): hostS1; SupportedVNF lacks TRAFFIC_MONITOR: mb1, mb2',
      nodes: ['33.33.33.1'],
      hosts: ['hostC1', 'hostC2', 'hostS1', 'mb1', 'mb2'],
      constraints: ['domain of 33.33.33.1'],
      minimal: true,
    },
  ]);
  t.equal(bruteForce(given), undefined);
  t.same(
    minimalConflict(problem, ['20.0.0.1']),
    { status: 'conflict', cut: [], minimal: true },
    'every allocation is infeasible: the least one already fails',
  );
});
