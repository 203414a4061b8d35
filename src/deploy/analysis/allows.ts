/**
 * `allows`: what a rule list lets through (firewall-io.md B.9.2), as disjoint packet classes, each with the lines
 * (and the default) that allow its packets; optionally only within some traffic (`--proto tcp --dport 22`).
 */
import { UNIVERSE, type Box } from '../../model/space.js';
import { classOf, examplePacket, type PacketClass } from './classes.js';
import { Bdd, FALSE } from './bdd.js';
import { boxesOf, byDiagrams, decidedBy, fold } from './folded.js';
import { Budget, byLine, coalesced, coalescedWith, decide, allows as allowed } from './decide.js';
import { refOf, verdict, type RuleList, type RuleRef } from './list.js';

export interface AllowedClass extends PacketClass {
  /** With `examples`: one packet of the class, as `firewall explain` reads it. */
  example?: string;
  /** The lines that allow packets of the class (first match), and `default` when the default does. */
  rules: RuleRef[];
  /** Some of its packets may be denied, by approximated lines: why, and which (analysis/readings.ts). */
  approximated?: string;
}

export interface AllowsReport {
  firewall: string;
  rules: number;
  defaultAction: 'ALLOW' | 'DENY';
  /** The traffic looked at: everything, or what the query asked for. */
  within: PacketClass;
  classes: AllowedClass[];
}

/** With decision diagrams (long lists): the packets of `within` each allowing line, and the default, decides. */
function allowedByDiagrams(list: RuleList, within: Box, budget: Budget): Map<number, Box[]> {
  const f = fold(new Bdd(budget.diagrams), list);
  const region = f.bdd.box(within);
  const out = new Map<number, Box[]>();
  for (let at = 0; at < list.lines.length; at++) {
    if (!list.lines[at]!.allow) continue;
    f.bdd.collect(region);
    const part = f.bdd.and(decidedBy(f, at), region);
    if (part !== FALSE) out.set(at, boxesOf(f, part, budget));
  }
  const rest = list.defaultAllow ? f.bdd.and(f.rest, region) : FALSE;
  if (rest !== FALSE) out.set(-1, boxesOf(f, rest, budget));
  return out;
}

export function allowsOf(
  list: RuleList,
  within: Box = UNIVERSE,
  budget = new Budget(),
  examples = false,
  /** Why a class rests on approximated lines, given its box and the lines that allow it (readings.ts). */
  check?: (box: Box, lines: readonly number[]) => string | undefined,
): AllowsReport {
  const lines = byDiagrams(list)
    ? allowedByDiagrams(list, within, budget)
    : byLine(decide(list, budget, [within]).filter((p) => allowed(list, p.line)));
  // Pieces of one line first (fewer boxes to join), then all of them, each class keeping the lines of its pieces.
  const joined = [...lines].flatMap(([line, boxes]) => coalesced(boxes, budget).map((box) => ({ box, tag: [line] })));
  const classes = coalescedWith(joined, (a, b) => [...a, ...b], budget).map(({ box, tag }) => {
    const lines = [...new Set(tag)].sort((x, y) => (x < 0 ? 1 : y < 0 ? -1 : x - y));
    const approximated = check?.(box, lines);
    return {
      ...classOf(box),
      ...(examples ? { example: examplePacket(box) } : {}),
      rules: lines.map((at): RuleRef => (at < 0 ? 'default' : refOf(list.lines[at]!))),
      ...(approximated ? { approximated } : {}),
    };
  });
  return {
    firewall: list.name,
    rules: list.lines.length,
    defaultAction: verdict(list.defaultAllow),
    within: classOf(within),
    classes,
  };
}
