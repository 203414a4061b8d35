/**
 * The rules stage's tests (src/engine/rules: the rules written for a set of boxes, the candidate rules' model
 * against brute force), one test process for both: each module of test/engine/rules/ below is one topic's tests (run
 * one alone with `node --import ./test/loader/register.mjs test/engine/rules/rules.part.ts`). A process each cost about a
 * CPU second of start (docs/performance-log.md, "Cutting the CPU: test/engine and test/bench (30 November, wt-eng12)").
 */
import './rules/rule-model.part.js';
import './rules/rules.part.js';
