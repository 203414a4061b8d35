/**
 * The placement stage's tests (src/engine/placement, placement.md), one test process for all of them: each module of
 * test/engine/placement/ below is one topic's tests (run one alone with `node --import ./test/loader/register.mjs
 * test/engine/placement/cut.ts`). A process each cost about a CPU second of start for a second or two of tests
 * (docs/performance.md, "Cutting the CPU: test/engine and test/bench (30 November, wt-eng12)").
 */
import './placement/bounds.js';
import './placement/bruteforce.js';
import './placement/cut.js';
import './placement/examples.js';
import './placement/hosting.js';
import './placement/input.js';
import './placement/paths.js';
import './placement/search.js';
