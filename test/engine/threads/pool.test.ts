/**
 * The solver pool (src/engine/threads/pool.ts) in serve's mode: a thread whose job loaded CaDiCaL (an effort's wide
 * path) is retired after its answer, since the WebAssembly memory it grew is never given back while it lives; one that
 * loaded neither CaDiCaL nor Z3 waits for the next job. Threads counted as Linux lists them (/proc/self/task).
 */
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { generateWan } from '../../../src/bench/wan.js';
import { runSimulation, stopSolverWorkers, useSolverWorkers } from '../../../src/engine/threads/pool.js';
import type { SimulationResult } from '../../../src/engine/simulate.js';
import { until } from '../../helpers.js';

const threads = () => readdirSync('/proc/self/task').length;

t.test('a solver thread that loaded CaDiCaL is not kept for the next job; one that did not is', async (t) => {
  useSolverWorkers(1);
  t.teardown(stopSolverWorkers);
  // libuv's pool starts its threads at its first task: started here, so that they are not counted as the solver's.
  await readFile(new URL(import.meta.url));
  const before = threads();
  // bounds.test.ts's WAN: its one component past a lowered encoding limit, so that effort 10 takes the wide path.
  const nfv = generateWan({ shape: { kind: 'wan', pops: 14 }, nat: false, seed: 1 });
  const tuning = { decompose: true, collapse: true, prune: true, encodingLimit: 100 };
  const methods = (r: SimulationResult) => r.report.timings.components.map((c) => c.method).join(' ');
  t.equal(methods(await runSimulation(nfv, { tuning })), 'fast', 'effort 1: the fast answer, no CaDiCaL');
  const idle = threads();
  t.ok(idle > before, `the solver thread waits for the next job (${before} -> ${idle} threads)`);
  const wide = await runSimulation(nfv, { tuning, effort: 10 });
  t.equal(methods(wide), 'exact', 'effort 10: the wide path');
  t.ok(await until(() => threads() < idle, 30), `the thread that loaded CaDiCaL is gone (${threads()} threads)`);
  const again = await runSimulation(nfv, { tuning, effort: 10 });
  t.equal(JSON.stringify(again.nfv), JSON.stringify(wide.nfv), 'a fresh thread gives the same answer');
});
