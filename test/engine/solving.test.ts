/**
 * The light tests of the solving stage (src/engine/solving: exact MaxSAT, our CDCL solver, HiGHS, the hitting-set
 * search), one test process for them: each module of test/engine/solving/ below is one topic's tests (run one alone
 * with `node --import ./test/loader/register.mjs test/engine/solving/cdcl.part.ts`). A process each cost about a CPU
 * second of start (docs/performance-log.md, "Cutting the CPU: test/engine and test/bench (30 November, wt-eng12)"). The
 * heavier topics (allocate, bounds, work) keep a process each so that four run at once. exact's tests come first:
 * one asserts that its simulation never loaded Z3, so nothing before it may load Z3 in this process.
 */
import './solving/exact.part.js';
import './solving/cdcl.part.js';
import './solving/highs.part.js';
import './solving/hitting.part.js';
