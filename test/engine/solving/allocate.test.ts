/**
 * Pruning the candidate rules (allocate.ts, knownOptima) loses no optimum: on small random networks with cycles,
 * places and rule-less firewalls, the answer with pruning and the one offering every candidate both hold for the
 * independent evaluator, meet the same requirements, and where both are proven minimal cost the same firewalls and
 * rules. So do witnesses checked as found (allocate.ts, foundedClauses) against ranked ones. And the bounds put off
 * (`settleBounds`) run in the order they were put off.
 */
import t from 'tap';
import type { NFV } from '../../../src/model/types.js';
import type { SimulationResult } from '../../../src/engine/simulate.js';
import { NfvError } from '../../../src/model/errors.js';
import { settleBounds, type Decisions, type Pending } from '../../../src/engine/solving/allocate.js';
import { checkedSimulate } from '../evaluator.js';
import { withDecisions } from '../random-network.js';

const NETWORKS = 200;

/** `witnesses`: every requirement over its state graph (no paths), its witnesses ranked or checked as found. */
async function answer(nfv: NFV, prune: boolean, witnesses?: 'ranked' | 'founded'): Promise<SimulationResult | string> {
  // Founded: every component past the encoding limit, encoded without ranks all the same.
  const limits = witnesses === 'founded' ? { encodingLimit: 0, foundedLimit: Infinity } : {};
  try {
    return await checkedSimulate(structuredClone(nfv), {
      timeoutSeconds: 600,
      tuning: { decompose: true, collapse: true, prune, ...limits },
      ...(witnesses && { paths: 'needed' as const }),
    });
  } catch (e) {
    if (e instanceof NfvError) return `${e.status} ${e.message}`;
    throw e;
  }
}

/**
 * The same refusal, the same requirements held and, where both are proven minimal, the same cost: the first answer
 * where both are proven, for counting.
 */
function sameOptimum(
  t: Tap.Test,
  seed: number,
  [a, b]: (SimulationResult | string)[],
  [aName, bName]: string[],
): SimulationResult | undefined {
  if (typeof a === 'string' || typeof b === 'string') return void t.equal(a, b, `seed ${seed}: the same refusal`);
  const held = (r: SimulationResult) => r.report.requirements.map((q) => (q.isSat ? 1 : 0)).join('');
  if (held(a) !== held(b)) t.fail(`seed ${seed}: held ${held(a)} / ${held(b)}`);
  if (!a.report.optimal || !b.report.optimal) return undefined;
  const cost = (r: SimulationResult) => `${r.report.firewalls} firewalls, ${r.report.rules} rules`;
  if (cost(a) !== cost(b)) t.fail(`seed ${seed}: ${cost(a)} ${aName}, ${cost(b)} ${bName}`);
  return a;
}

t.test(`pruned candidates give the same optimum on ${NETWORKS} random networks`, async (t) => {
  let compared = 0;
  let withRules = 0;
  for (let seed = 1; seed <= NETWORKS; seed++) {
    const nfv = withDecisions(seed);
    const answers = [await answer(nfv, true), await answer(nfv, false)];
    const proven = sameOptimum(t, seed, answers, ['pruned', 'with every candidate']);
    if (!proven) continue;
    compared++;
    if (proven.report.rules > 0) withRules++;
  }
  t.ok(compared >= NETWORKS / 2, `${compared} answers proven both ways`);
  t.ok(withRules >= NETWORKS / 10, `${withRules} of them with rules`);
});

t.test(`witnesses checked as found give the ranked formula's optimum on ${NETWORKS} random networks`, async (t) => {
  let compared = 0;
  let reaching = 0;
  for (let seed = 1; seed <= NETWORKS; seed++) {
    const nfv = withDecisions(seed);
    const answers = [await answer(nfv, true, 'founded'), await answer(nfv, true, 'ranked')];
    const proven = sameOptimum(t, seed, answers, ['founded', 'ranked']);
    if (!proven) continue;
    compared++;
    if (proven.report.requirements.some((q) => q.name === 'REACHABILITY_PROPERTY' && q.isSat)) reaching++;
  }
  t.ok(compared >= NETWORKS / 2, `${compared} answers proven both ways`);
  t.ok(reaching >= NETWORKS / 4, `${reaching} of them with a reachability met`);
});

t.test('bounds put off run in order up to the last one needed; the rest wait, unseen by those running', async (t) => {
  const ran: string[] = [];
  const [a, b, c] = [{}, {}, {}] as Decisions[];
  const pending: Pending[] = [];
  // A bound's own spend settles every bound put off first (allocate.ts, `settle`): it must find none of the rest.
  const bound = (name: string, decisions: Decisions) => ({
    decisions,
    run: () => {
      settleBounds(pending, new Set(pending.map((p) => p.decisions)));
      ran.push(name);
    },
  });
  pending.push(bound('a1', a), bound('b', b), bound('a2', a), bound('c', c));
  settleBounds(pending, new Set([b]));
  t.same(ran, ['a1', 'b'], "b's and those before it, in order");
  t.same(
    pending.map((p) => p.decisions),
    [a, c],
    'the rest still put off',
  );
  settleBounds(pending, new Set([c]));
  t.same(ran, ['a1', 'b', 'a2', 'c'], 'then the rest, in order');
  t.equal(pending.length, 0, 'and nothing is left');
});
