/**
 * Issue 45 item 5 within the CI budget: every fifth of the 50 answers of `npm run conformance:emulate`
 * (src/bench/emulate-answers.ts: VEREFOO conformance inputs and redundant networks of at most 30 nodes, a fixed
 * list), each simulated and emulated; the kernel must agree with every claim of each. The claims are the engine's;
 * the kernel's verdicts come from packets through `nfv deploy nftables` of each firewall, which shares no code with
 * the engine's reasoning.
 */
import t from 'tap';
import { emulateAnswerCases } from '../../../src/bench/emulate-answers.js';
import { emulate } from '../../../src/deploy/emulate/index.js';
import { simulate } from '../../../src/engine/simulate.js';
import { packetsWhy } from '../nft-harness.js';

const skip = packetsWhy || false;

t.test('every fifth of the 50 answers: the kernel agrees with every claim', { skip }, async (t) => {
  const cases = emulateAnswerCases();
  t.equal(cases.length, 50, 'the list holds 50 answers');
  for (const c of cases.filter((_, k) => k % 5 === 0)) {
    const { nfv: answer } = await simulate(c.input, { timeoutSeconds: 600 });
    const r = await emulate(answer);
    t.ok(r.requirements.length > 0, `${c.name}: ${r.requirements.length} requirements probed`);
    t.same(
      r.requirements.filter((q) => !q.agree).map((q) => `${q.index} ${q.requirement}: kernel ${q.kernel}`),
      [],
      `${c.name}: the kernel agrees with every claim (${r.probes} probes)`,
    );
  }
});
