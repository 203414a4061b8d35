/**
 * Unfolding (firewall-io.md B.3, B.5): the base chains a packet passes, with their user chains, as one first-match
 * list of entries, each an action and a region of packets, exact or "maybe".
 *
 * A jump continues in the called chain with the packets that matched it; those that fall off it come back. A RETURN
 * (and a goto, for the packets that come back from its chain) takes its packets out of the rest of its chain: the
 * later rules X become X minus the RETURN's region, with exact box subtraction, as fffuu does with negation.
 *
 * What nfv cannot model stays said, three-valued: a rule with an unknown condition gives a *maybe* entry (it may or
 * may not match a packet of its region), and a packet whose path through the chains depends on one (an approximated
 * RETURN or jump) reaches the later rules only maybe. Every real behaviour is one choice per maybe entry, so the
 * verdicts the entries allow contain the real one: the *may* list (maybe accepts taken, maybe drops skipped)
 * allows at least what the firewall allows, the *must* list (the opposite) at most (B.5).
 */
import { badRequest } from '../../model/errors.js';
import { MAX_IMPORT_DEPTH } from '../../model/limits.js';
import { coalesce, regionSubtract, type Box } from '../../model/space.js';
import {
  UNIVERSE_REGION,
  guardSize,
  intersectRegions,
  type LiveChain,
  type LiveRule,
  type LiveRuleset,
} from './ruleset.js';

export interface Entry {
  rule: LiveRule;
  allow: boolean;
  region: Box[];
  /** The rule may or may not match these packets (an approximated condition or path). */
  maybe: boolean;
}

export interface Unfolded {
  entries: Entry[];
  defaultAllow: boolean;
  /** Every rule of the chains a packet can pass, in the order first reached (each once). */
  reached: LiveRule[];
}

function minus(region: Box[], cut: readonly Box[]): Box[] {
  let out = region;
  for (const b of cut) out = regionSubtract(out, b);
  guardSize(out.length);
  return out.length > 8 ? coalesce(out) : out;
}

class Unfolder {
  readonly entries: Entry[] = [];
  readonly reached = new Set<LiveRule>();

  constructor(private readonly set: LiveRuleset) {}

  private emit(rule: LiveRule, allow: boolean, region: Box[], maybe: boolean) {
    if (region.length) this.entries.push({ rule, allow, region: coalesce(region), maybe });
  }

  /**
   * Runs `chain` on the packets `reach` (those of `uncertain` may not be there). Falls off the end with whatever
   * no rule decided or took away.
   */
  chain(chain: LiveChain, reach: Box[], uncertain: Box[], stack: LiveChain[]): void {
    if (stack.includes(chain))
      throw badRequest(`${this.set.file}: chain ${chain.name} jumps back into itself (${loopOf(stack, chain)})`);
    if (stack.length >= MAX_IMPORT_DEPTH)
      throw badRequest(`${this.set.file}: jumps nest deeper than ${MAX_IMPORT_DEPTH} chains (at ${chain.name})`);
    const inner = [...stack, chain];
    let c = reach;
    let u = uncertain;
    for (const rule of chain.rules) {
      if (!c.length) break;
      this.reached.add(rule);
      if (rule.refused) continue;
      const e = intersectRegions(c, rule.region);
      if (!e.length) continue;
      const approx = rule.unknown.length > 0;
      const maybe = approx ? e : uncertainPart(e, u);
      const sure = approx ? [] : minus(e, u);
      const { kind } = rule.verdict;
      if (kind === 'accept' || kind === 'drop') {
        this.emit(rule, kind === 'accept', sure, false);
        this.emit(rule, kind === 'accept', maybe, true);
      } else if (kind === 'queue') {
        // User space decides: either verdict, maybe.
        this.emit(rule, true, e, true);
        this.emit(rule, false, e, true);
      } else if (kind === 'jump' || kind === 'goto') {
        const target = this.set.lookup(chain, rule.verdict.chain!);
        if (!target) continue; // refused when read
        this.chain(target, e, approx ? e : uncertainPart(e, u), inner);
        if (kind === 'goto') [c, u] = approx ? [c, [...u, ...e]] : [minus(c, e), minus(u, e)];
      } else if (kind === 'return') {
        [c, u] = approx ? [c, [...u, ...e]] : [minus(c, e), minus(u, e)];
      }
      if (u.length > 8) u = coalesce(u);
    }
  }
}

/** The part of `e` whose presence here is uncertain. */
function uncertainPart(e: Box[], u: Box[]): Box[] {
  return u.length ? intersectRegions(e, u) : [];
}

function loopOf(stack: LiveChain[], chain: LiveChain): string {
  return [...stack.slice(stack.indexOf(chain)), chain].map((c) => c.name).join(' -> ');
}

/**
 * The first-match entries of the rule set's path. Base chains before the last one are composed in front of it: a
 * packet goes on only if each accepts it, so what an earlier one drops (its drop entries, and its policy for what
 * no rule decides) comes first as drops, and what it accepts goes on to the next (B.2, B.6).
 */
export function unfold(set: LiveRuleset): Unfolded {
  const u = new Unfolder(set);
  const last = set.path[set.path.length - 1];
  if (!last) throw badRequest(`${set.file}: no chain to import`);
  for (const base of set.path) {
    const start = u.entries.length;
    u.chain(base, UNIVERSE_REGION, [], []);
    if (base === last) break;
    u.entries.push(...dropsOf(set, base, u.entries.splice(start)));
  }
  const entries = u.entries.filter((e) => e.region.length);
  return { entries, defaultAllow: last.policy !== 'drop', reached: [...u.reached] };
}

/**
 * What an earlier base chain drops, as drop entries: its own entries walked in first-match order (a packet it
 * accepts goes on to the next chain), then its policy for what no rule decided. A packet a maybe entry may have
 * decided is dropped later only maybe.
 */
function dropsOf(set: LiveRuleset, base: LiveChain, own: Entry[]): Entry[] {
  const out: Entry[] = [];
  let open: Box[] = UNIVERSE_REGION;
  let tainted: Box[] = [];
  const drop = (rule: LiveRule, part: Box[], maybe: boolean) => {
    const unsure = maybe ? part : intersectRegions(part, tainted);
    const sure = maybe ? [] : minus(part, tainted);
    if (sure.length) out.push({ rule, allow: false, region: coalesce(sure), maybe: false });
    if (unsure.length) out.push({ rule, allow: false, region: coalesce(unsure), maybe: true });
  };
  for (const entry of own) {
    const part = intersectRegions(open, entry.region);
    if (!part.length) continue;
    if (!entry.allow) drop(entry.rule, part, entry.maybe);
    if (entry.maybe) tainted = coalesce([...tainted, ...part]);
    else open = minus(open, entry.region);
  }
  if (base.policy === 'drop' && open.length) {
    const policy: LiveRule = {
      where: `${set.file}: ${base.key}`,
      line: 0,
      text: `policy of ${base.key}: DROP`,
      region: UNIVERSE_REGION,
      unknown: [],
      newConnection: false,
      notes: [],
      verdict: { kind: 'drop' },
    };
    drop(policy, open, false);
  }
  return out;
}
