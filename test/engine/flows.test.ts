/**
 * The flows stage's tests (src/engine/flows: corridors, NATs' forwards and translations, rules with except), one
 * test process for all of them: each module of test/engine/flows/ below is one topic's tests (run one alone with
 * `node --import ./test/loader/register.mjs test/engine/flows/except.part.ts`). A process each cost about a CPU second of
 * start (docs/performance-log.md, "Cutting the CPU: test/engine and test/bench (30 November, wt-eng12)").
 */
import './flows/except.part.js';
import './flows/nat-forward.part.js';
import './flows/nat-translate.part.js';
import './flows/network.part.js';
