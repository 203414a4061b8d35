/**
 * `diff`: the packets two rule lists treat differently (firewall-io.md B.9.3, Batfish's compareFilters), as
 * disjoint packet classes, each with the verdict and the deciding line (or the default) in either list. No class
 * means the lists are equivalent: every packet gets the same verdict from both.
 */
import { compareBoxes, type Box } from '../../model/space.js';
import { classOf, examplePacket, type PacketClass } from './classes.js';
import { FALSE, Bdd } from './bdd.js';
import { Budget, allows, byLine, coalesced, decide } from './decide.js';
import { allowedBy, boxesOf, byDiagrams, lineSets, split } from './folded.js';
import { refOf, verdict, type RuleList, type RuleRef } from './list.js';

export interface Side {
  verdict: 'ALLOW' | 'DENY';
  rule: RuleRef;
  text?: string;
}

export interface DiffClass extends PacketClass {
  /** With `examples`: one packet of the class, as `firewall explain` reads it. */
  example?: string;
  from: Side;
  to: Side;
  /** Either side's verdict rests on approximated lines: why, and which (analysis/readings.ts). */
  approximated?: string;
}

export interface DiffReport {
  from: string;
  to: string;
  equivalent: boolean;
  classes: DiffClass[];
}

function side(list: RuleList, at: number): Side {
  if (at < 0) return { verdict: verdict(list.defaultAllow), rule: 'default' };
  const line = list.lines[at]!;
  return { verdict: verdict(line.allow), rule: refOf(line), text: line.text };
}

/** The packets whose verdicts differ, by the lines (or defaults) that decide them in either list, with boxes. */
type Pairs = Map<string, { from: number; to: number; boxes: Box[] }>;

function boxPairs(a: RuleList, b: RuleList, budget: Budget): Pairs {
  // The first list's pieces joined line by line, then each split by the second list.
  const pairs: Pairs = new Map();
  for (const [from, boxes] of byLine(decide(a, budget))) {
    for (const q of decide(b, budget, coalesced(boxes, budget))) {
      if (allows(a, from) === allows(b, q.line)) continue;
      const key = `${from} ${q.line}`;
      const pair = pairs.get(key);
      if (pair) pair.boxes.push(q.box);
      else pairs.set(key, { from, to: q.line, boxes: [q.box] });
    }
  }
  return pairs;
}

/**
 * The same with decision diagrams (long lists): the packets the lists' allowed sets do not share, split by the
 * line of the first list that decides them, then by the second list's. No reached set is made: the allowed sets
 * are folded from the bottom (`allowedBy`), the lines the two lists end with alike once, and the differing
 * packets are split by the first list's lines in order, which gives the packets each of them decides.
 */
function diagramPairs(a: RuleList, b: RuleList, budget: Budget): Pairs {
  const bdd = new Bdd(budget.diagrams);
  // Two snapshots share most lines: a line of b the same as one of a is made once.
  const known = new Map<string, number>();
  const [la, lb] = [lineSets(bdd, a, known), lineSets(bdd, b, known)];
  // The lines both lists end with (the same packets and action; sets are canonical) and their defaults allow the
  // same packets: b's fold starts above them with a's set.
  const [na, nb] = [a.lines.length, b.lines.length];
  let same = 0;
  if (a.defaultAllow === b.defaultAllow)
    while (
      same < Math.min(na, nb) &&
      la.matches[na - 1 - same] === lb.matches[nb - 1 - same] &&
      a.lines[na - 1 - same]!.allow === b.lines[nb - 1 - same]!.allow
    )
      same++;
  const held: number[] = [];
  bdd.hold((mark) => held.forEach(mark));
  const fa = allowedBy(la, { keep: na - same });
  held.push(fa.allowed, fa.kept);
  const fb = allowedBy(lb, { from: nb - same, below: fa.kept });
  const differing = bdd.xor(fa.allowed, fb.allowed);
  held.length = 0;
  const pairs: Pairs = new Map();
  if (differing === FALSE) return pairs;
  const parts = split(la, differing, budget);
  // The default's packets first, then by line, as the classes were always gathered.
  if (parts.at(-1)?.line === -1) parts.unshift(parts.pop()!);
  parts.forEach(({ line: from, set }, i) => {
    bdd.collect(...parts.slice(i).map((p) => p.set));
    const within = from < 0 ? undefined : a.lines[from]!.boxes;
    for (const q of split(lb, set, budget, { within }))
      pairs.set(`${from} ${q.line}`, { from, to: q.line, boxes: boxesOf(lb, q.set, budget) });
  });
  return pairs;
}

export function diff(
  a: RuleList,
  b: RuleList,
  budget = new Budget(),
  examples = false,
  /** Why a class rests on approximated lines, given its box and the deciding lines (readings.ts). */
  check?: (box: Box, from: number, to: number) => string | undefined,
): DiffReport {
  const pairs = byDiagrams(a, b) ? diagramPairs(a, b, budget) : boxPairs(a, b, budget);
  const classes = [...pairs.values()]
    .flatMap((pair) => coalesced(pair.boxes, budget).map((box) => ({ box, pair })))
    .sort((x, y) => compareBoxes(x.box, y.box))
    .map(({ box, pair }) => {
      const approximated = check?.(box, pair.from, pair.to);
      return {
        ...classOf(box),
        ...(examples ? { example: examplePacket(box) } : {}),
        from: side(a, pair.from),
        to: side(b, pair.to),
        ...(approximated ? { approximated } : {}),
      };
    });
  return { from: a.name, to: b.name, equivalent: classes.length === 0, classes };
}
