/**
 * Analyses of a firewall's rule list, on any rule source (firewall-io.md B.9): `lint` (unreachable and redundant
 * lines, as Batfish's filterLineReachability), `allowsOf` (what it lets through, as packet classes) and `diff`
 * (the packets two lists treat differently). All exact, with the box arithmetic of model/space.ts, and for lists of
 * more than DIAGRAM_LINES lines with decision diagrams over header bits (bdd.ts, folded.ts), answered in boxes.
 */
export {
  MAX_ALLOWS_BOXES,
  allowsByLine,
  allowsOf,
  type AllowedClass,
  type AllowingLine,
  type AllowsByLineReport,
  type AllowsReport,
} from './allows.js';
export { classOf, type PacketClass } from './classes.js';
export { Budget, MAX_ANALYSIS_BOXES, MAX_ANALYSIS_TESTS } from './decide.js';
export { diff, type DiffClass, type DiffReport, type Side } from './diff.js';
export { MAX_ANALYSIS_NODES } from './bdd.js';
export { DIAGRAM_LINES, byDiagrams } from './folded.js';
export { labelOf, listOfNode, type Line, type RuleList, type RuleRef } from './list.js';
export { lint, type Finding, type FindingKind, type LintReport } from './lint.js';
export { allowsCheck, diffCheck, markLint } from './readings.js';
