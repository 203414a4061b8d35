/**
 * `allows`: what a rule list lets through (firewall-io.md B.9.2), as disjoint packet classes, each with the lines
 * (and the default) that allow its packets; optionally only within some traffic (`--proto tcp --dport 22`).
 *
 * A long list (more than DIAGRAM_LINES lines) is answered by allowing line instead (`allowsByLine`), exactly but
 * without listing boxes, as Batfish states a line's reachability: each allowing line's packets less those of the
 * earlier lines that decide some of them first, with how many packets that is and the first of them. Its classes
 * can be many (the generated 20,000-rule set's are 894,013); they are listed on request, up to MAX_ALLOWS_BOXES.
 */
import { badRequest } from '../../model/errors.js';
import { UNIVERSE, type Box } from '../../model/space.js';
import { classOf, examplePacket, type PacketClass } from './classes.js';
import { Bdd, FALSE } from './bdd.js';
import { byDiagrams, decidedBy, fold, split } from './folded.js';
import { Budget, byLine, coalesced, coalescedWith, decide, allows as allowed } from './decide.js';
import { refOf, verdict, type RuleList, type RuleRef } from './list.js';
import { deniedText } from './readings.js';

/**
 * The most boxes the classes of a long list's `allows` may come from (before they are joined into classes): the
 * chair's router's May snapshot needs 44,274. Past it the answer by line is the one to ask for.
 */
export const MAX_ALLOWS_BOXES = 200_000;

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

/** One line that allows packets, in the answer by line: what it allows, exactly, without listing boxes. */
export interface AllowingLine {
  /** The allowing line, or `default`. */
  rule: RuleRef;
  text?: string;
  /** How many packets it decides within the query (a decimal number: there are 3 * 2^96 packets). */
  packets: string;
  /**
   * The earlier lines that decide some of its packets first, in list order: what it allows is its own packets
   * within the query less theirs. None for the default, which decides the packets no line matches.
   */
  except?: RuleRef[];
  /** Its first packet in the boxes' order (lowest destination, source, protocol, ports), as `explain` reads it. */
  example: string;
  /** Some of its packets may be denied, by approximated lines: why, and which (analysis/readings.ts). */
  approximated?: string;
}

export interface AllowsByLineReport {
  firewall: string;
  rules: number;
  defaultAction: 'ALLOW' | 'DENY';
  within: PacketClass;
  /** How many packets the list allows within the query, in all. */
  packets: string;
  lines: AllowingLine[];
}

/** With decision diagrams (long lists): the packets of `within` each allowing line, and the default, decides. */
function allowedByDiagrams(list: RuleList, within: Box, budget: Budget): Map<number, Box[]> {
  const f = fold(new Bdd(budget.diagrams), list);
  const region = f.bdd.box(within);
  const out = new Map<number, Box[]>();
  let made = 0;
  const refuse = (): never => {
    throw badRequest(
      `classes: the packets allowed make more than ${MAX_ALLOWS_BOXES} boxes; leave out --classes ` +
        '(classes=true over HTTP) for the answer by allowing line',
    );
  };
  const boxesOf = (set: number) => {
    const boxes = f.bdd.toBoxes(set, MAX_ALLOWS_BOXES - made, refuse);
    made += boxes.length;
    budget.spend(boxes.length);
    return boxes;
  };
  for (let at = 0; at < list.lines.length; at++) {
    if (!list.lines[at]!.allow) continue;
    f.bdd.collect(region);
    const part = f.bdd.and(decidedBy(f, at), region);
    if (part !== FALSE) out.set(at, boxesOf(part));
  }
  const rest = list.defaultAllow ? f.bdd.and(f.rest, region) : FALSE;
  if (rest !== FALSE) out.set(-1, boxesOf(rest));
  return out;
}

/**
 * `allows` of a long list by allowing line (and the default, when it allows), in list order: the packets of
 * `within` each decides, as its own packets less those of the earlier lines named in `except`, with their number
 * and first packet. With `must` (an approximated import's must list), a line some of whose packets the must list
 * denies says so, naming the approximated lines.
 */
export function allowsByLine(
  list: RuleList,
  within: Box = UNIVERSE,
  budget = new Budget(),
  must?: RuleList,
): AllowsByLineReport {
  const bdd = new Bdd(budget.diagrams);
  const f = fold(bdd, list);
  const fm = must && fold(bdd, must, { allowed: true });
  const region = bdd.box(within);
  // Every set is within the valid packets: the whole space needs no intersection.
  const inQuery = (set: number) => (region === bdd.valid ? set : bdd.and(set, region));
  const lines: AllowingLine[] = [];
  let total = 0n;
  const entry = (at: number) => {
    bdd.collect(region);
    const part = inQuery(decidedBy(f, at));
    if (part === FALSE) return;
    const packets = bdd.size(part);
    total += packets;
    const line = at < 0 ? undefined : list.lines[at]!;
    // The earlier lines that take some of this line's packets: found among those near its boxes (decide.ts).
    const except = line
      ? split(f, inQuery(f.matches[at]!), budget, { to: at, within: line.boxes })
          .filter((p) => p.line >= 0)
          .map((p) => refOf(list.lines[p.line]!))
      : undefined;
    let approximated: string | undefined;
    const denied = fm ? bdd.diff(part, fm.allowed) : FALSE;
    if (fm && denied !== FALSE) {
      const denying = split(fm, denied, budget, line ? { within: line.boxes } : {}).map((p) => p.line);
      approximated = deniedText(list, fm.list, at, denying);
    }
    lines.push({
      rule: line ? refOf(line) : 'default',
      ...(line ? { text: line.text } : {}),
      packets: String(packets),
      ...(except ? { except } : {}),
      example: examplePacket(bdd.first(part)),
      ...(approximated ? { approximated } : {}),
    });
  };
  list.lines.forEach((line, at) => {
    if (line.allow) entry(at);
  });
  if (list.defaultAllow) entry(-1);
  return {
    firewall: list.name,
    rules: list.lines.length,
    defaultAction: verdict(list.defaultAllow),
    within: classOf(within),
    packets: String(total),
    lines,
  };
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
