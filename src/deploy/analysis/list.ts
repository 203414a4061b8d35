/**
 * A rule list as the analyses see it: lines in first-match order, each an action and the packets it matches (a
 * union of boxes, possibly empty), and a default action. Every rule source becomes one: a firewall node's elements
 * here; an imported iptables or nftables file later, where one live line may become several boxes (multiport,
 * negations) or none (a line that matches no new connection).
 *
 * A firewall node's rules mean what the engine verifies (engine.md A.2, `firstMatchDrops` in engine/flows/network.ts):
 * an element matches the packets of `ruleBoxes` but those of its `except` boxes (so ports and `directional` follow
 * the engine's meaning), an element allows only with action ALLOW (absent is DENY, ALLOW_COND drops as in the
 * engine), the default allows only when it is ALLOW, and `priority` changes nothing.
 */
import { approximatedRules, listRules, type Approximation } from '../../model/approximation.js';
import { badRequest } from '../../model/errors.js';
import type { Elements, Node } from '../../model/types.js';
import { exceptBoxes, regionSubtract, ruleBoxes, type Box } from '../../model/space.js';

export interface Line {
  /** 1-based place in the list (first-match order). */
  position: number;
  /** The rule's id, when it has one (`/fwd` rules always do). */
  id?: number;
  allow: boolean;
  /** The packets the line matches, as disjoint boxes; empty for a line that can match nothing. */
  boxes: Box[];
  /**
   * Packets of `boxes` the line does not match after all (an imported line behind RETURNs: unfold.ts): kept apart,
   * not subtracted, so that a list's size does not multiply with them; `eachDecided` splits pieces by them lazily.
   */
  except?: Box[];
  /** The line as its source wrote it, for people. */
  text: string;
  /** Where an imported line is in its live file: kept in every answer that names the line. */
  origin?: LineOrigin;
  /** An imported line: its entry among the import's (the same in its may and must lists). */
  entry?: number;
  /** An imported line read with an approximated condition or path (a maybe entry, B.5). */
  maybe?: boolean;
}

/** A live file's line: `rules.v4`, line 41, `rules.v4:41` (nft: its place among the rules, `table/chain/handle N`). */
export interface LineOrigin {
  file: string;
  line: number;
  where: string;
}

export interface RuleList {
  /** What the list is, for people: `fwd node 3 (10.255.0.1)`. */
  name: string;
  lines: Line[];
  defaultAllow: boolean;
}

/** Which line decides: a line (by position and id, and where it is in its live file) or the default action. */
export type RuleRef = ({ position: number; id?: number } & Partial<LineOrigin>) | 'default';

export const refOf = (line: Line): RuleRef => ({
  position: line.position,
  ...(line.id === undefined ? {} : { id: line.id }),
  ...(line.origin ?? {}),
});

/** A line's label for people: where it is in its live file, its id, or `#position` when it has neither. */
export const labelOf = (ref: RuleRef) =>
  ref === 'default'
    ? 'default'
    : ref.where !== undefined
      ? ref.where
      : ref.id !== undefined
        ? String(ref.id)
        : `#${ref.position}`;

export const verdict = (allow: boolean): 'ALLOW' | 'DENY' => (allow ? 'ALLOW' : 'DENY');

/** The packets an element matches, as the engine reads it: the one place that turns a rule into boxes. */
export function matchOf(element: Elements): Box[] {
  return ruleBoxes(element);
}

/** Overlapping boxes as disjoint ones with the same union. */
export function disjoint(boxes: readonly Box[]): Box[] {
  const out: Box[] = [];
  for (const b of boxes) {
    let parts = [b];
    for (const earlier of out) parts = regionSubtract(parts, earlier);
    out.push(...parts);
  }
  return out;
}

/** An element as a line of text: `ALLOW TCP 10.0.0.-1 -> 20.0.0.1 dport 80`. */
export function elementText(e: Elements): string {
  const ports = [
    e.srcPort !== undefined && e.srcPort !== '*' && e.srcPort !== 'null' ? `sport ${e.srcPort}` : '',
    e.dstPort !== undefined && e.dstPort !== '*' && e.dstPort !== 'null' ? `dport ${e.dstPort}` : '',
  ].filter(Boolean);
  const except = e.except?.length ? [`except ${e.except.length} boxes`] : [];
  return [e.action ?? 'DENY', e.protocol ?? 'ANY', e.source, '->', e.destination, ...ports, ...except].join(' ');
}

/**
 * A firewall node's rule list. An approximated import carries two (model/approximation.ts): `which` says which
 * one, the may list unless told, and the list's name says so.
 */
export function listOfNode(node: Node, name: string, which: Approximation = 'may'): RuleList {
  const fw = node.configuration?.firewall;
  if (node.functionalType !== 'FIREWALL')
    throw badRequest(`node: ${name} is not a firewall (its function is ${node.functionalType ?? 'none'})`);
  if (!fw) throw badRequest(`node: ${name} has no firewall configuration`);
  const approximated = approximatedRules(node).length;
  if (approximated) name = `${name} (${which} list: ${approximated} rules approximated)`;
  const lines = listRules(fw.elements ?? [], which).map((e, k): Line => ({
    position: k + 1,
    ...(e.id === undefined ? {} : { id: e.id }),
    allow: e.action === 'ALLOW',
    boxes: disjoint(matchOf(e)),
    // An imported rule's except boxes (docs/SEMANTICS.md "Rules with except") stay apart, as an import's own do.
    ...(e.except?.length ? { except: [...exceptBoxes(e)] } : {}),
    text: elementText(e),
  }));
  return { name, lines, defaultAllow: fw.defaultAction === 'ALLOW' };
}
