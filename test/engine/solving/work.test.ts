/**
 * Budgets count work, not seconds (issue 48): a simulation whose proof runs out of its work gives the same bytes on a
 * quiet machine and beside two busy loops, and a time limit only stops a job.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import t from 'tap';
import { generateTopology } from '../../../src/bench/topology.js';
import { generateWan } from '../../../src/bench/wan.js';
import { simulate } from '../../../src/engine/simulate.js';
import { encodeDocument } from '../../../src/model/codec.js';
import { NfvType } from '../../../src/model/resources.js';
import type { NFV } from '../../../src/model/types.js';

/** The answer as bytes: the result document and the report without its seconds. */
async function answer(nfv: NFV, proofWork: number): Promise<{ bytes: string; optimal: boolean; methods: string[] }> {
  const { nfv: out, report } = await simulate(structuredClone(nfv), { proofWork });
  const { timings, ...rest } = report;
  const methods = timings.components.map((c) => c.method);
  return { bytes: encodeDocument(NfvType, out, 'xml') + JSON.stringify(rest), optimal: report.optimal, methods };
}

/** Two processes that keep both cores busy until stopped (at the latest when the test ends); returns the stop. */
function busyLoops(t: Tap.Test): () => void {
  const loops: ChildProcess[] = [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  const stop = () => loops.forEach((l) => l.kill('SIGKILL'));
  t.teardown(stop);
  return stop;
}

t.test('a proof that runs out of work: the same answer quiet and under load', async (t) => {
  const nfv = generateTopology({ nodes: 60, requirements: 40, nat: true, seed: 2 });
  // A budget the proof spends part of: some component is proven, the rest is not.
  const work = 300_000;
  const quiet = await answer(nfv, work);
  t.equal(quiet.optimal, false, 'budget-bound: not proven minimal');
  t.ok(
    quiet.methods.some((m) => m !== 'direct'),
    `components searched (${quiet.methods.join(', ')})`,
  );
  const stop = busyLoops(t);
  const loaded = await answer(nfv, work);
  // The loops' CPU is the suite's too (about 3 s of it spent by them before): only the loaded run needs them.
  stop();
  t.equal(loaded.bytes, quiet.bytes, 'the same bytes beside two busy loops');
  t.same(loaded.methods, quiet.methods, 'each component decided the same way');
  const again = await answer(nfv, work);
  t.equal(again.bytes, quiet.bytes, 'and again');
});

t.test('a search that runs out of work is labelled a model, not a proof', async (t) => {
  // A generated WAN whose one component's search is cut by this budget (with the default budget it is proven).
  const nfv = generateWan({ shape: { kind: 'wan', pops: 16 }, nat: false, seed: 1 });
  const { report } = await simulate(nfv, { proofWork: 3_000_000 });
  const [component] = report.timings.components;
  t.equal(report.timings.components.length, 1);
  t.equal(component?.method, 'model', "its solver's best model when the work ran out");
  t.equal(report.optimal, false, 'and the report does not say optimal');
  t.ok(component?.bound, `with the bounds proven for it (${JSON.stringify(component?.bound)})`);
});
