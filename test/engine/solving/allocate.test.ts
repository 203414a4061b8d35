/**
 * Pruning the candidate rules (allocate.ts, knownOptima) loses no optimum: on small random networks with cycles,
 * places and rule-less firewalls, the answer with pruning and the one offering every candidate both hold for the
 * independent evaluator, meet the same requirements, and where both are proven minimal cost the same firewalls and
 * rules. And the bounds put off (`settleBounds`) run in the order they were put off.
 */
import t from 'tap';
import type { NFV } from '../../../src/model/types.js';
import type { SimulationResult } from '../../../src/engine/simulate.js';
import { NfvError } from '../../../src/model/errors.js';
import { settleBounds, type Decisions, type Pending } from '../../../src/engine/solving/allocate.js';
import { checkedSimulate } from '../evaluator.js';
import { withDecisions } from '../random-network.js';

const NETWORKS = 200;

async function answer(nfv: NFV, prune: boolean): Promise<SimulationResult | string> {
  try {
    return await checkedSimulate(structuredClone(nfv), {
      timeoutSeconds: 600,
      tuning: { decompose: true, collapse: true, prune },
    });
  } catch (e) {
    if (e instanceof NfvError) return `${e.status} ${e.message}`;
    throw e;
  }
}

t.test(`pruned candidates give the same optimum on ${NETWORKS} random networks`, async (t) => {
  let compared = 0;
  let withRules = 0;
  for (let seed = 1; seed <= NETWORKS; seed++) {
    const nfv = withDecisions(seed);
    const [pruned, full] = [await answer(nfv, true), await answer(nfv, false)];
    if (typeof pruned === 'string' || typeof full === 'string') {
      t.equal(pruned, full, `seed ${seed}: the same refusal`);
      continue;
    }
    const held = (r: SimulationResult) => r.report.requirements.map((q) => (q.isSat ? 1 : 0)).join('');
    if (held(pruned) !== held(full)) t.fail(`seed ${seed}: held ${held(pruned)} / ${held(full)}`);
    if (!pruned.report.optimal || !full.report.optimal) continue;
    compared++;
    if (full.report.rules > 0) withRules++;
    const cost = (r: SimulationResult) => `${r.report.firewalls} firewalls, ${r.report.rules} rules`;
    if (cost(pruned) !== cost(full)) t.fail(`seed ${seed}: ${cost(pruned)} pruned, ${cost(full)} with every candidate`);
  }
  t.ok(compared >= NETWORKS / 2, `${compared} answers proven both ways`);
  t.ok(withRules >= NETWORKS / 10, `${withRules} of them with rules`);
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
