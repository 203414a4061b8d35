/**
 * A live rule set as the importers read it (firewall-io.md B.2-B.6): chains of rules, each rule the packets it
 * matches as a region of boxes (exact box arithmetic, any prefix length), what nfv cannot model as named unknown
 * conditions, and its verdict. iptables-save text and nft JSON both become this; `unfold` reads it.
 */
import { badRequest } from '../../model/errors.js';
import { MAX_IMPORT_BOXES } from '../../model/limits.js';
import { UNIVERSE, intersect, type Box } from '../../model/space.js';
import type { NatReading } from './nat.js';

export type VerdictKind = 'accept' | 'drop' | 'jump' | 'goto' | 'return' | 'none' | 'queue';

export interface LiveVerdict {
  kind: VerdictKind;
  /** The chain of a jump or goto. */
  chain?: string;
}

/** How a line is read (B.7): its class in the report. */
export type LineClass = 'exact' | 'new-connection' | 'no-verdict' | 'approximated' | 'refused';

/** An `-i`/`-o` condition by name: `unknown` is its approximation when no `--iface` maps the interface. */
export interface InterfaceMatch {
  input: boolean;
  name: string;
  negate: boolean;
  unknown?: string;
}

export interface LiveRule {
  /** Where the line is, for people and messages: `rules.v4:41`, `filter/forward/handle 7`. */
  where: string;
  /** The line's number in its file (iptables), or its place among the dump's rules (nft). */
  line: number;
  text: string;
  /** The packets the rule matches, as far as nfv can say: every known condition, unknown ones left out. */
  region: Box[];
  /** Conditions nfv cannot model (B.5), each said: the rule matches some subset of `region`. */
  unknown: string[];
  /** The rule was read for the first packet of a connection (conntrack, --syn, -f: B.2). */
  newConnection: boolean;
  /** Notes for the report: comments, targets without verdict, why a line matches no new connection. */
  notes: string[];
  verdict: LiveVerdict;
  /** Why the line cannot be imported, when it cannot. */
  refused?: string;
  /**
   * The refusal is about meaning, not reading: nfv read the line and cannot model it (an IPv6 address, a host name,
   * a translation before filtering). Without it, a refusal is a reading one: iptables would refuse the line too, or
   * nfv's reader has a gap (firewall-io.md B.3: whatever iptables-restore reads, nfv reads).
   */
  modelling?: boolean;
  /** The line's `-i`/`-o` conditions by name (iptables). */
  interfaces?: InterfaceMatch[];
}

export interface LiveChain {
  /** `table/chain`, unique in the rule set. */
  key: string;
  name: string;
  /** A base chain's policy; undefined for a user chain. */
  policy?: 'accept' | 'drop';
  rules: LiveRule[];
}

export interface LiveRuleset {
  /** The file's name, for messages. */
  file: string;
  chains: Map<string, LiveChain>;
  /**
   * The base chains a forwarded packet passes, in order; every one must accept it (raw and mangle before filter in
   * iptables, base chains by priority in nft). The last one decides the default action.
   */
  path: LiveChain[];
  /** The user chains of each table, by name (a jump names a chain of its own table). */
  lookup: (from: LiveChain, name: string) => LiveChain | undefined;
  /** Lines off the path that the import still judges (nat PREROUTING changes what the filter sees). */
  checked: LiveRule[];
  /** With --nat-address: the NAT nodes the nat table's translations are, one per address given (nat.ts). */
  nat?: NatReading[];
  /** Things the report says about the rule set as a whole (NAT after filtering, chains ignored, ...). */
  notes: string[];
}

export const UNIVERSE_REGION: Box[] = [UNIVERSE];

/** A region's boxes that also lie in `region`: the intersection of two unions of boxes. */
export function intersectRegions(a: readonly Box[], b: readonly Box[]): Box[] {
  const out: Box[] = [];
  for (const x of a)
    for (const y of b) {
      const both = intersect(x, y);
      if (both) out.push(both);
    }
  guardSize(out.length);
  return out;
}

/** Refuses a rule set whose regions outgrow what an import may hold (every bound for what a user sends). */
export function guardSize(boxes: number): void {
  if (boxes > MAX_IMPORT_BOXES)
    throw badRequest(
      `the rule set needs more than ${MAX_IMPORT_BOXES} packet boxes as nfv rules (RETURNs and negations cut ` +
        'them); analyse the file itself (nfv firewall lint|allows|diff), which keeps RETURNs apart',
    );
}

/** Dimensions of a box, one interval per octet / port / protocol. */
export function withBounds(b: Box, dims: readonly number[], bounds: readonly number[]): Box {
  const out = [...b];
  dims.forEach((d, k) => {
    out[2 * d] = bounds[2 * k]!;
    out[2 * d + 1] = bounds[2 * k + 1]!;
  });
  return out;
}
