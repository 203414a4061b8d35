/**
 * Unfolded entries as nfv rules (elements). A rule address is an octet pattern (each octet fixed or -1) or a CIDR
 * prefix of any length (docs/SEMANTICS.md), so the address part of a box (four octet intervals: a /12, a /25, the
 * rest of a RETURN's subtraction) becomes the fewer of: octet patterns, one per value of each octet that is neither
 * one value nor whole; or prefixes, one per value of the octets before the last one that is not whole, times the
 * aligned blocks of that octet's interval. `ruleAddresses` is the one place that does it (B.4).
 */
import { rangeBlocks } from '../../model/address.js';
import { MAX_RULES_PER_LINE } from '../../model/limits.js';
import {
  DPORT,
  DST,
  PROTO,
  SPORT,
  SRC,
  coalesce,
  contains,
  meet,
  regionSubtract,
  type Box,
} from '../../model/space.js';
import type { Elements } from '../../model/types.js';
import type { Entry } from './unfold.js';

type Octet = readonly [lo: number, hi: number];

const octetsAt = (b: Box, at: number): Octet[] => [0, 1, 2, 3].map((k) => [b[2 * (at + k)]!, b[2 * (at + k) + 1]!]);
const whole = ([lo, hi]: Octet) => lo === 0 && hi === 255;
const size = ([lo, hi]: Octet) => hi - lo + 1;
const values = ([lo, hi]: Octet) => Array.from({ length: hi - lo + 1 }, (_, v) => lo + v);

/** Every combination of one value from each interval, as lists of values (one empty list for no intervals). */
function combinations(octets: readonly Octet[]): number[][] {
  let out: number[][] = [[]];
  for (const o of octets) out = out.flatMap((head) => values(o).map((v) => [...head, v]));
  return out;
}

/** The last octet that is not whole (-1 when all are), and how many prefixes and octet patterns spell the address. */
function spelling(octets: readonly Octet[]): { cut: number; prefixes: number; patterns: number } {
  let cut = 3;
  while (cut >= 0 && whole(octets[cut]!)) cut--;
  const patterns = octets.reduce((n, o) => n * (whole(o) ? 1 : size(o)), 1);
  if (cut < 0) return { cut, prefixes: 1, patterns };
  const blocks = rangeBlocks(octets[cut]![0], octets[cut]![1], 8).length;
  const prefixes = octets.slice(0, cut).reduce((n, o) => n * size(o), blocks);
  return { cut, prefixes, patterns };
}

/**
 * Rule addresses whose union is the address part of `b` at `at` (SRC or DST), disjoint, in address order: `*`, a
 * single address, prefixes (`172.16.0.0/12`) when they are no more than octet patterns, else octet patterns
 * (`10.-1.5.-1`).
 */
export function ruleAddresses(b: Box, at: number): string[] {
  const octets = octetsAt(b, at);
  const { cut, prefixes, patterns } = spelling(octets);
  if (cut < 0) return ['*'];
  if (prefixes <= patterns) {
    const [lo, hi] = octets[cut]!;
    const blocks = rangeBlocks(lo, hi, 8);
    return combinations(octets.slice(0, cut)).flatMap((head) =>
      blocks.map(({ start, length }) => {
        const address = [...head, start, 0, 0, 0].slice(0, 4).join('.');
        const bits = 8 * cut + length;
        return bits === 32 ? address : `${address}/${bits}`;
      }),
    );
  }
  return combinations(octets.filter((o) => !whole(o))).map((picked) => {
    let k = 0;
    return octets.map((o) => (whole(o) ? '-1' : String(picked[k++]))).join('.');
  });
}

/** How many rule addresses `ruleAddresses` gives, without making them. */
export function ruleAddressCount(b: Box, at: number): number {
  const { prefixes, patterns } = spelling(octetsAt(b, at));
  return Math.min(prefixes, patterns);
}

const portText = (b: Box, d: number) => {
  const [lo, hi] = [b[2 * d]!, b[2 * d + 1]!];
  return lo === 0 && hi === 65535 ? '*' : lo === hi ? String(lo) : `${lo}-${hi}`;
};

/** The protocols and ports of a box as rule fields: OTHER never carries ports (they mean nothing to it). */
function services(b: Box): Pick<Elements, 'protocol' | 'srcPort' | 'dstPort'>[] {
  const [lo, hi] = [b[2 * PROTO]!, b[2 * PROTO + 1]!];
  const ports = { srcPort: portText(b, SPORT), dstPort: portText(b, DPORT) };
  const ported = ports.srcPort !== '*' || ports.dstPort !== '*';
  if (lo === 0 && hi === 2 && !ported) return [{ protocol: 'ANY', ...ports }];
  const out: Pick<Elements, 'protocol' | 'srcPort' | 'dstPort'>[] = [];
  for (let p = lo; p <= hi; p++)
    out.push(p === 2 ? { protocol: 'OTHER', srcPort: '*', dstPort: '*' } : { protocol: p ? 'UDP' : 'TCP', ...ports });
  return out;
}

/** How many rules (or except entries) the boxes become. */
const rulesOf = (boxes: readonly Box[]) =>
  boxes.reduce((n, b) => n + ruleAddressCount(b, SRC) * ruleAddressCount(b, DST) * services(b).length, 0);

/** The smallest box holding every box of a region. */
function hullOf(region: readonly Box[]): Box {
  const out = [...region[0]!];
  for (const b of region)
    for (let i = 0; i < out.length; i += 2) {
      if (b[i]! < out[i]!) out[i] = b[i]!;
      if (b[i + 1]! > out[i + 1]!) out[i + 1] = b[i + 1]!;
    }
  return out;
}

/** Regions of more boxes than this, and hulls of more gaps, are spelled box by box (the gaps cost work to find). */
const HULL_BOXES = 64;
const HULL_GAPS = 16;

/**
 * How an entry is spelled: its boxes one by one, or (`gaps`) one hull less the gaps between them, whichever gives
 * fewer rules and except entries. A negated match (`! -s 10.0.0.0/16`) is 16 prefixes as boxes, one rule with one
 * except box as a hull: the hull keeps the line one rule where the RETURNs and negations would multiply it.
 */
function shapeOf(e: Entry): { boxes: readonly Box[]; gaps: readonly Box[] } {
  const plain = { boxes: e.region, gaps: [] };
  if (e.region.length < 2 || e.region.length > HULL_BOXES) return plain;
  const hull = hullOf(e.region);
  let gaps: Box[] = [hull];
  for (const b of e.region) {
    gaps = regionSubtract(gaps, b);
    if (gaps.length > 4 * HULL_GAPS) return plain;
  }
  gaps = grown(gaps, e.region, hull);
  if (gaps.length > HULL_GAPS) return plain;
  const hullRules = rulesOf([hull]);
  return hullRules * (1 + rulesOf(gaps)) < rulesOf(e.region) ? { boxes: [hull], gaps } : plain;
}

/**
 * The gaps of a hull as fewer boxes, which may overlap (an except entry may): each gap widened, dimension by
 * dimension, as far as it meets no box of the region, and those another holds dropped. `! -s A ! --dport 443` leaves
 * a hull less two slabs (source A; port 443), where disjoint pieces spell the second once per prefix outside A.
 */
function grown(gaps: readonly Box[], region: readonly Box[], hull: Box): Box[] {
  const out: Box[] = [];
  for (const g of gaps) {
    const box = [...g];
    for (let i = 0; i < box.length; i += 2) {
      // The region's boxes that meet the gap in every other dimension bound it in this one.
      let lo = hull[i]!;
      let hi = hull[i + 1]!;
      for (const r of region) {
        let other = true;
        for (let j = 0; j < box.length && other; j += 2)
          if (j !== i && (r[j]! > box[j + 1]! || box[j]! > r[j + 1]!)) other = false;
        if (!other) continue;
        if (r[i + 1]! < box[i]! && r[i + 1]! + 1 > lo) lo = r[i + 1]! + 1;
        if (r[i]! > box[i + 1]! && r[i]! - 1 < hi) hi = r[i]! - 1;
      }
      box[i] = lo;
      box[i + 1] = hi;
    }
    out.push(box);
  }
  const kept = out.filter((b, k) => !out.some((o, j) => j !== k && contains(o, b) && (!contains(b, o) || j < k)));
  return coalesce(kept);
}

/**
 * An entry's spelling, from its own region unless that is more than a line may become and its `wide` region (the
 * same first-match meaning: unfold.ts) is fewer: existing imports keep their rules, and a home router's raw chain,
 * whose `-d X -j DROP` lines cut each later line into thousands, comes in.
 */
function spelled(e: Entry, plain: boolean): { boxes: readonly Box[]; gaps: readonly Box[] } {
  const own = plain ? { boxes: e.region, gaps: [] } : shapeOf(e);
  if (!e.wide || rulesOf(own.boxes) <= MAX_RULES_PER_LINE) return own;
  const wide = { ...e, region: e.wide };
  const other = plain ? { boxes: e.wide, gaps: [] } : shapeOf(wide);
  return rulesOf(other.boxes) * (1 + rulesOf(other.gaps)) < rulesOf(own.boxes) * (1 + rulesOf(own.gaps)) ? other : own;
}

const shapes = new WeakMap<Entry, ReturnType<typeof shapeOf>>();
const plainShapes = new WeakMap<Entry, ReturnType<typeof shapeOf>>();
/** An entry's spelling; `plain` (VEREFOO's rules, no except entries): its boxes one by one. */
const shape = (e: Entry, plain: boolean) => {
  const cache = plain ? plainShapes : shapes;
  return cache.get(e) ?? cache.set(e, spelled(e, plain)).get(e)!;
};

/** How many rules an entry becomes; above MAX_RULES_PER_LINE its line is refused. */
export const ruleCount = (e: Entry, plain = false) => rulesOf(shape(e, plain).boxes);

type Except = NonNullable<Elements['except']>[number];

/** A box as except entries (the rule's match fields, defaults left out), the same union. */
function exceptsOf(b: Box): Except[] {
  const out: Except[] = [];
  for (const source of ruleAddresses(b, SRC))
    for (const destination of ruleAddresses(b, DST))
      for (const s of services(b))
        out.push({
          source,
          destination,
          ...(s.protocol !== 'ANY' ? { protocol: s.protocol } : {}),
          ...(s.srcPort !== '*' ? { srcPort: s.srcPort } : {}),
          ...(s.dstPort !== '*' ? { dstPort: s.dstPort } : {}),
        });
  return out;
}

/**
 * Spells except boxes, each once: the lines after a RETURN share the same boxes (unfold.ts), and the rules they
 * become share the spelled entries (one array per set of boxes met).
 */
export class ExceptSpeller {
  private readonly spelled = new Map<Box, Except[]>();
  private readonly lists = new Map<string, Except[]>();
  private readonly ids = new Map<Box, number>();
  private readonly listIds = new Map<Except[], number>();

  /** A number per spelled list, to tell rules with different except boxes apart. */
  idOf(list: Except[]): number {
    return this.listIds.get(list) ?? this.listIds.set(list, this.listIds.size).get(list)!;
  }

  /** The except entries of the boxes of `except` that meet `b` (the others leave none of its packets out). */
  of(b: Box, except: readonly Box[]): Except[] | undefined {
    const met = except.filter((x) => meet(x, b));
    if (!met.length) return undefined;
    const key = met.map((x) => this.ids.get(x) ?? this.ids.set(x, this.ids.size).get(x)!).join(',');
    let list = this.lists.get(key);
    if (!list) {
      list = met.flatMap((x) => this.spelled.get(x) ?? this.spelled.set(x, exceptsOf(x)).get(x)!);
      this.lists.set(key, list);
    }
    return list;
  }
}

/**
 * An entry's rules, in order (duplicates, such as OTHER from two port pieces, said once); each carries the entry's
 * except boxes that meet it (docs/SEMANTICS.md "Rules with except").
 */
export function elementsOf(e: Entry, speller = new ExceptSpeller(), plain = false): Elements[] {
  const seen = new Set<string>();
  const out: Elements[] = [];
  const { boxes, gaps } = shape(e, plain);
  const left = gaps.length ? [...gaps, ...e.except] : e.except;
  for (const b of boxes) {
    const except = left.length ? speller.of(b, left) : undefined;
    for (const source of ruleAddresses(b, SRC))
      for (const destination of ruleAddresses(b, DST))
        for (const s of services(b)) {
          const el: Elements = {
            action: e.allow ? 'ALLOW' : 'DENY',
            source,
            destination,
            ...s,
            ...(except ? { except } : {}),
          };
          // Rules alike but for their except boxes (OTHER from two port pieces) stay apart.
          const key = `${source} ${destination} ${JSON.stringify(s)} ${except ? speller.idOf(except) : ''}`;
          if (!seen.has(key)) {
            seen.add(key);
            out.push(el);
          }
        }
  }
  return out;
}

/** Why a line is refused when its rules would be too many, in the user's words. */
export function tooMany(count: number): string {
  return (
    `becomes ${count} nfv rules (more than ${MAX_RULES_PER_LINE}): its addresses, once the chains are unfolded, ` +
    'are products of octet ranges that neither prefixes nor octet patterns spell in fewer rules'
  );
}
