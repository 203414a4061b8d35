/**
 * The benchmarks' generators and checks (src/bench: the generated topologies, WANs and Zoo networks,
 * bench:rule-gap's MIP, a command run as a user runs it and its summary read back), one test process for them: each
 * module of test/bench/ below is one benchmark's tests (run one alone with
 * `node --import ./test/loader/register.mjs test/bench/wan.part.ts`). A process each cost about a CPU
 * second of start (docs/performance-log.md, "Cutting the CPU: test/engine and test/bench (30 November, wt-eng12)").
 * test/bench/fabric.test.ts keeps its own: `npm run bench:fabric` runs it on the answers the bench stored.
 */
import './bench/child.part.js';
import './bench/rule-gap.part.js';
import './bench/topology.part.js';
import './bench/wan.part.js';
import './bench/zoo.part.js';
