/**
 * Unfolding (firewall-io.md B.3, B.5): the base chains a packet passes, with their user chains, as one first-match
 * list of entries, each an action, a region of packets less the packets of its `except` boxes, exact or "maybe".
 *
 * A jump continues in the called chain with the packets that matched it; those that fall off it come back, and the
 * caller's later rules, emitted after the called chain's, decide them. A RETURN hands its packets back to the
 * caller: the later rules of its chain (in that call) leave them out, as their `except`, so that the caller's later
 * rules, emitted after them, decide those packets. A goto is its chain, then the same. Nothing is emitted twice and
 * no region is ever cut (box subtraction would split a rule behind `-s A -j RETURN` into the ~24 prefixes of the
 * rest of the address space): a rule set unfolds into as many entries as the lines its calls reach, whatever its
 * RETURNs, and the analyses split packet classes by the `except` boxes lazily, only where they look (decide.ts).
 *
 * What nfv cannot model stays said, three-valued: a rule with an unknown condition gives a *maybe* entry (it may or
 * may not match a packet of its region), and a packet whose path through the chains depends on one (an approximated
 * RETURN or goto) reaches the later rules of that chain only maybe. Every real behaviour is one choice per maybe
 * entry, so the verdicts the entries allow contain the real one: the *may* list (maybe accepts taken, maybe drops
 * skipped) allows at least what the firewall allows, the *must* list (the opposite) at most (B.5).
 */
import { badRequest } from '../../model/errors.js';
import { MAX_IMPORT_BOXES, MAX_IMPORT_DEPTH } from '../../model/limits.js';
import { coalesce, contains, regionIntersects, regionSubtract, type Box } from '../../model/space.js';
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
  /** Packets of `region` the entry does not match: those earlier RETURNs (and gotos) took out of its chain. */
  except: Box[];
  /** The rule may or may not match these packets (an approximated condition or path). */
  maybe: boolean;
  /**
   * An earlier base chain's exact drop (dropsOf): its packets not cut by that chain's earlier drops, which come
   * before it in the list and drop them anyway; the same first-match meaning, spelled where `region` would be refused.
   */
  wide?: Box[];
}

export interface Unfolded {
  entries: Entry[];
  defaultAllow: boolean;
  /** Every rule of the chains a packet can pass, in the order first reached (each once). */
  reached: LiveRule[];
}

function minus(region: Box[], cut: readonly Box[]): Box[] {
  let out = region;
  for (const b of cut) {
    out = regionSubtract(out, b);
    guardSize(out.length);
  }
  return out.length > 8 ? coalesce(out) : out;
}

/**
 * The packets an entry matches as disjoint boxes, `except` subtracted: for what needs plain boxes (nfv rules,
 * earlier base chains). Bounded by MAX_IMPORT_BOXES; the analyses never need it.
 */
export const entryRegion = (e: Entry): Box[] => (e.except.length ? minus(e.region, e.except) : e.region);

/** Whether every packet of `reach` lies in one box of `region`. */
const covers = (region: readonly Box[], reach: readonly Box[]) =>
  reach.every((b) => region.some((r) => contains(r, b)));

/** A base chain's policy as a rule of its own, for the packets that fall off it (or RETURN from it). */
function policyRule(set: LiveRuleset, base: LiveChain): LiveRule {
  return {
    where: `${set.file}: ${base.key}`,
    line: 0,
    text: `policy of ${base.key}: ${base.policy === 'drop' ? 'DROP' : 'ACCEPT'}`,
    region: UNIVERSE_REGION,
    unknown: [],
    newConnection: false,
    notes: [],
    verdict: { kind: base.policy === 'drop' ? 'drop' : 'accept' },
  };
}

/**
 * How RETURNs and gotos hand packets back: `except` (the analyses' lists: the later rules of the chain leave them
 * out, one entry per line reached) or `repeat` (nfv rules, which are plain boxes: the callers' rest is emitted
 * again, restricted to the RETURN's packets, bounded by MAX_IMPORT_BOXES; fewer rules than subtracting the RETURN
 * from every later rule would give).
 */
export type UnfoldMode = 'except' | 'repeat';

/** `repeat` outgrew MAX_IMPORT_BOXES (RETURNs repeat the callers' rest once each). */
class Repeated extends Error {}

/**
 * The entries for nfv rules (plain boxes): `repeat`, or when that outgrows its bound, the `except` entries with
 * their except boxes subtracted (bounded by MAX_IMPORT_BOXES per line).
 */
export function ruleEntries(set: LiveRuleset, entries: readonly Entry[]): Entry[] {
  try {
    return unfold(set, 'repeat').entries;
  } catch (e) {
    if (!(e instanceof Repeated)) throw e;
    return entries.map((x) => (x.except.length ? { ...x, region: entryRegion(x), except: [] } : x));
  }
}

/** A chain that called another, and the rule after the call, where its packets go on when they come back. */
interface Frame {
  chain: LiveChain;
  next: number;
}

/** Whether some rule after rule k of `chain` meets `region`. */
function laterMeet(chain: LiveChain, k: number, region: readonly Box[]): boolean {
  for (let j = k + 1; j < chain.rules.length; j++) {
    const rule = chain.rules[j]!;
    if (!rule.refused && rule.verdict.kind !== 'none' && region.some((b) => regionIntersects(rule.region, b)))
      return true;
  }
  return false;
}

class Unfolder {
  readonly entries: Entry[] = [];
  readonly reached = new Set<LiveRule>();
  private boxes = 0;
  private policy: LiveRule | undefined;

  constructor(
    private readonly set: LiveRuleset,
    private readonly mode: UnfoldMode,
  ) {}

  /** Walks one base chain (and what it calls); its entries are appended to `entries`. */
  base(base: LiveChain): void {
    this.policy = policyRule(this.set, base);
    this.chain(base, 0, UNIVERSE_REGION, [], [], []);
  }

  private emit(rule: LiveRule, allow: boolean, region: Box[], except: Box[], maybe: boolean) {
    if (!region.length) return;
    const boxes = coalesce(region);
    if (this.mode === 'repeat') {
      this.boxes += boxes.length;
      if (this.boxes > MAX_IMPORT_BOXES) throw new Repeated();
    }
    this.entries.push({ rule, allow, region: boxes, except, maybe });
  }

  /**
   * Runs `chain` from rule `from` on the packets `reach` less those of `except` (those of `uncertain` may not be
   * there), called from `frames`. Answers whether some exact verdict decided every packet of `reach` (nothing
   * falls off the chain, nothing left it early).
   */
  chain(chain: LiveChain, from: number, reach: Box[], except: Box[], uncertain: Box[], frames: Frame[]): boolean {
    const stack = frames.map((f) => f.chain);
    if (stack.includes(chain))
      throw badRequest(`${this.set.file}: chain ${chain.name} jumps back into itself (${loopOf(stack, chain)})`);
    if (stack.length >= MAX_IMPORT_DEPTH)
      throw badRequest(`${this.set.file}: jumps nest deeper than ${MAX_IMPORT_DEPTH} chains (at ${chain.name})`);
    // What earlier RETURNs and gotos of this call took out (for sure, or maybe), added as they come (`except`).
    let out = except;
    let unsure = uncertain;
    for (let k = from; k < chain.rules.length; k++) {
      const rule = chain.rules[k]!;
      this.reached.add(rule);
      if (rule.refused) continue;
      const e = intersectRegions(reach, rule.region);
      if (!e.length) continue;
      const approx = rule.unknown.length > 0;
      const maybe = approx ? e : uncertainPart(e, unsure);
      const { kind } = rule.verdict;
      // Every packet here meets the rule for sure: nothing goes past it that it does not hand on.
      const whole = !approx && !unsure.length && !out.length && covers(rule.region, reach);
      if (kind === 'accept' || kind === 'drop') {
        if (!approx) this.emit(rule, kind === 'accept', this.exact(e, unsure), this.except(out, unsure), false);
        this.emit(rule, kind === 'accept', maybe, out, true);
        if (whole) return true;
      } else if (kind === 'queue') {
        // User space decides: either verdict, maybe.
        this.emit(rule, true, e, out, true);
        this.emit(rule, false, e, out, true);
      } else if (kind === 'jump') {
        const target = this.set.lookup(chain, rule.verdict.chain!);
        if (!target) continue; // refused when read
        const decided = this.chain(target, 0, e, out, maybe, [...frames, { chain, next: k + 1 }]);
        if (decided && whole) return true;
      } else if (kind === 'goto' || kind === 'return') {
        const target = kind === 'goto' ? this.set.lookup(chain, rule.verdict.chain!) : undefined;
        if (kind === 'goto' && !target) continue; // refused when read
        // A goto's chain returns to this chain's caller.
        const decided = target ? this.chain(target, 0, e, out, maybe, frames) : false;
        if (decided && whole) return true;
        if (whole) return false;
        // The rest of this chain sees these packets only maybe (the rule is approximated), or no longer.
        if (approx) {
          unsure = [...unsure, ...e];
          continue;
        }
        if (this.mode === 'except') {
          out = [...out, ...e];
          continue;
        }
        // Packets no later rule here meets go on where they would after the chain's end anyway.
        if (decided || !laterMeet(chain, k, e)) continue;
        // Returned for sure or maybe, a packet meets the callers' rest next: exact there.
        this.resume(e, frames);
      }
    }
    return false;
  }

  /** An exact entry's packets: `repeat` cuts the uncertain ones out, `except` leaves them to its except boxes. */
  private exact(e: Box[], unsure: Box[]): Box[] {
    return this.mode === 'repeat' && unsure.length ? minus(e, unsure) : e;
  }

  private except(out: Box[], unsure: Box[]): Box[] {
    return this.mode === 'repeat' || !unsure.length ? out : [...out, ...unsure];
  }

  /**
   * `repeat`: packets that leave their chain early (RETURN, or falling off a goto's chain) go on where their
   * callers left off, innermost first, and at last meet the base chain's policy.
   */
  private resume(region: Box[], frames: Frame[]): void {
    for (let k = frames.length - 1; k >= 0; k--)
      if (this.chain(frames[k]!.chain, frames[k]!.next, region, [], [], frames.slice(0, k))) return;
    const policy = this.policy!;
    this.emit(policy, policy.verdict.kind === 'accept', region, [], false);
  }
}

/** The part of `e` whose presence here is uncertain. */
function uncertainPart(e: Box[], u: Box[]): Box[] {
  if (!u.length) return [];
  const part = intersectRegions(e, u);
  return part.length > 1 ? disjoint(part) : part;
}

/** Overlapping boxes as disjoint ones with the same union (a line's boxes are disjoint). */
function disjoint(boxes: readonly Box[]): Box[] {
  const out: Box[] = [];
  for (const b of boxes) {
    let parts = [b];
    for (const earlier of out) if (parts.length) parts = regionSubtract(parts, earlier);
    out.push(...parts);
  }
  return out;
}

function loopOf(stack: LiveChain[], chain: LiveChain): string {
  return [...stack.slice(stack.indexOf(chain)), chain].map((c) => c.name).join(' -> ');
}

/**
 * The first-match entries of the rule set's path. Base chains before the last one are composed in front of it: a
 * packet goes on only if each accepts it, so what an earlier one drops (its drop entries, and its policy for what
 * no rule decides) comes first as drops, and what it accepts goes on to the next (B.2, B.6).
 */
export function unfold(set: LiveRuleset, mode: UnfoldMode = 'except'): Unfolded {
  const u = new Unfolder(set, mode);
  const last = set.path[set.path.length - 1];
  if (!last) throw badRequest(`${set.file}: no chain to import`);
  for (const base of set.path) {
    const start = u.entries.length;
    u.base(base);
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
  // What no exact accept took: a drop's packets outside `open` but inside this are dropped by an earlier exact drop.
  let unaccepted: Box[] = UNIVERSE_REGION;
  let tainted: Box[] = [];
  const drop = (rule: LiveRule, part: Box[], maybe: boolean, region: Box[]) => {
    const unsure = maybe ? part : intersectRegions(part, tainted);
    const sure = maybe ? [] : minus(part, tainted);
    if (sure.length) {
      const cut = coalesce(sure);
      // Only the earlier drops cut it (a raw chain's `-d X -j DROP` lines cut each later line by every X): the
      // uncut packets, for nfv rules where the cut ones are too many (elements.ts).
      const wide = unaccepted === open ? cut : coalesce(minus(intersectRegions(unaccepted, region), tainted));
      out.push({ rule, allow: false, region: cut, except: [], maybe: false, ...(wide !== cut ? { wide } : {}) });
    }
    if (unsure.length) out.push({ rule, allow: false, region: coalesce(unsure), except: [], maybe: true });
  };
  // The chains before the filter are short (raw, mangle): their entries as plain boxes.
  for (const entry of own) {
    const region = entryRegion(entry);
    const part = intersectRegions(open, region);
    if (!part.length) continue;
    if (!entry.allow) drop(entry.rule, part, entry.maybe, region);
    if (entry.maybe) tainted = coalesce([...tainted, ...part]);
    else {
      open = minus(open, region);
      if (entry.allow) unaccepted = minus(unaccepted, region);
    }
  }
  if (base.policy === 'drop' && open.length) drop(policyRule(set, base), open, false, UNIVERSE_REGION);
  return out;
}
