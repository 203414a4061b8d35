/**
 * The placement stage's tests (src/engine/placement, placement.md), one test process for all of them: each module of
 * test/engine/placement/ below is one topic's tests (run one alone with `node --import ./test/loader/register.mjs
 * test/engine/placement/cut.part.ts`). A process each cost about a CPU second of start for a second or two of tests
 * (docs/performance-log.md, "Cutting the CPU: test/engine and test/bench (30 November, wt-eng12)").
 */
import './placement/bounds.part.js';
import './placement/bruteforce.part.js';
import './placement/cut.part.js';
import './placement/examples.part.js';
import './placement/hosting.part.js';
import './placement/input.part.js';
import './placement/paths.part.js';
import './placement/search.part.js';
