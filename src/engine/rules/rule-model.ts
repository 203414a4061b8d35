/**
 * The rule lists of the firewalls whose rules we synthesise, as part of the MaxSAT problem (issue 26, item 7): the
 * objective counts deployable rules, not classes that need an exception.
 *
 * For each such firewall, its candidate rules are the deployable generalisations of the classes entering it: source
 * and destination each an octet pattern (any octets -1) or a CIDR prefix, one protocol or ANY, port ranges whose ends
 * are the classes' own. A candidate must take each entering class wholly or not at all (a rule that cuts a class is
 * not offered), and candidates are kept one per set of entering classes they cover (the tightest: anything wider that
 * covers the same classes can only cut more), so the set is complete for the objective where no rule could cut a
 * class (`refineForRules`; otherwise the answer is not called minimal) and no larger than the number of distinct
 * covered sets. A class no candidate can take alone gets the pieces `coveringRules` splits it into, as
 * one candidate costing one per piece.
 *
 * A list is modelled as rules of one action under a free default: the other action's rules are the selected
 * candidates, and class c gets the other action iff a selected candidate covers it: drop(c) = whitelist XOR
 * covered(c). Lists that mix actions (a rule with the default's action above a wider one with the other) are not
 * modelled: test/engine/rules/rule-model.part.ts's brute force over every ordered list of up to 3 rules found none
 * shorter; docs/ARCHITECTURE.md says what "proven minimal" covers.
 */
import type { Elements } from '../../model/types.js';
import type { NetNode } from '../flows/network.js';
import { Clauses, type Lit, type Neighbourhood } from '../solving/maxsat.js';
import { coveringRules, exactRules, widenedRule } from './rules.js';
import { exactMaxSat } from '../solving/exact.js';
import { checkAbort, type Spend } from '../solving/work.js';
import {
  DPORT,
  DST,
  PROTO,
  PROTOCOLS,
  SPORT,
  SRC,
  TCP_AND_UDP,
  UNIVERSE,
  rewrite,
  volume,
  type Box,
  type PacketClass,
  type Partition,
} from '../../model/space.js';

export type Term = Lit | boolean;

/**
 * Whether, in answers optimal in everything before the rules with firewall `node` in use under the given default
 * (whitelist: DENY), class `cls` takes the other action: in none ('never'), in all ('always'), at no cost ('free':
 * no requirement can be broken by it), or maybe (as far as allocate.ts can tell: 'maybe' is always safe). A
 * candidate is in such an answer's list only if each class it covers may take the other action; and of two
 * candidates differing only in classes that always or freely do, the wider serves as well.
 */
export type Exceptions = (node: number, cls: number, whitelist: boolean) => 'never' | 'maybe' | 'free' | 'always';

/** Where the rule model writes its part of the problem. */
export interface ClauseSink {
  fresh(): Lit;
  /** A hard clause (true terms satisfy it, false terms vanish). */
  clause(terms: Term[]): void;
  /** A soft literal of the rules objective, costing `weight` when false. */
  ruleCost(lit: Lit, weight: number): void;
  /** How the requirements' clauses hold variable v: 1 as itself, 2 negated, 3 both ways, 0 not at all. */
  occurrence(v: Lit): number;
}

/**
 * Bounds on building the candidate formula: once the proof's work is spent, or past `candidates` candidate rules in
 * all, it is given up (a formula the solver at hand cannot prove is not worth the memory: a NAT fabric's refined
 * classes offered 277,743 candidates, 1.8 GB). Past the job's time limit it stops the job.
 */
export interface CandidateBound extends Spend {
  candidates: number;
  /**
   * Only a proof is of use (allocate.ts's proof-only solve of the refined classes): candidates are dropped
   * where one leaving out classes no requirement needs dominates them too (`offered`). Not for an answer that may
   * stand unproven: its improved model's search, over fewer candidates, took another path (VEREFOO's Geant 30 -> 31
   * rules).
   */
  proofOnly?: boolean;
}

/** What a synthesised firewall's list is: its default and its rules, in order. */
export interface ChosenRules {
  whitelist: boolean;
  elements: Elements[];
}

/**
 * Candidate combinations looked at per firewall before the rest are given up (their covered sets are offered as one
 * rule per class instead, and the answer is then not called minimal): bounds the encoding's time on a firewall that
 * thousands of distinct classes enter.
 */
export const MAX_COMBINATIONS = 200_000;

const not = (t: Term): Term => (typeof t === 'boolean' ? !t : -t);

export interface Candidate {
  /** Indices into the firewall's entering classes. */
  covers: number[];
  /** How many rules it stands for (one but for a split class). */
  cost: number;
  /** Those rules, without action: written only for the candidates chosen (thousands are weighed). */
  rules: () => Omit<Elements, 'action'>[];
}

interface Entering {
  /** Index into the model's classes. */
  index: number;
  cls: PacketClass;
  drop: Lit;
  used: Term;
  /** Least privilege: a reachability requirement's traffic arrives here in this class, so it may pass. */
  open: boolean;
}

/** One generalisation of an address: its octet bounds, and for a CIDR prefix its length. */
interface Generalisation {
  bounds: number[];
  prefix?: number;
}

/** How a rule writes a generalisation (only for the candidates chosen: thousands are weighed). */
function addressText(g: Generalisation): string {
  const lows = [0, 2, 4, 6].map((i) => g.bounds[i]!);
  if (g.prefix !== undefined) return `${lows.join('.')}/${g.prefix}`;
  return lows.map((lo, k) => (lo === 0 && g.bounds[2 * k + 1] === 255 ? -1 : lo)).join('.');
}

const FULL_OCTET = [0, 255];

/** Bounding box of a class (a box contains the class iff it contains this). */
function hull(cls: PacketClass): number[] {
  const out = [...cls.boxes[0]!];
  for (const b of cls.boxes) {
    for (let i = 0; i < out.length; i += 2) {
      if (b[i]! < out[i]!) out[i] = b[i]!;
      if (b[i + 1]! > out[i + 1]!) out[i + 1] = b[i + 1]!;
    }
  }
  return out;
}

const addressOf = (octets: number[]) => octets.reduce((a, o) => a * 256 + o, 0);

/** The octet patterns and CIDR prefixes that contain an address region (8 octet bounds). */
function addressGeneralisations(bounds: number[]): Generalisation[] {
  const out: Generalisation[] = [];
  for (let mask = 0; mask < 16; mask++) {
    const gen: number[] = [];
    for (let k = 0; k < 4; k++) {
      const [lo, hi] = [bounds[2 * k]!, bounds[2 * k + 1]!];
      if (mask & (1 << (3 - k))) gen.push(...FULL_OCTET);
      else if (lo === hi) gen.push(lo, lo);
      else break;
    }
    if (gen.length === 8) out.push({ bounds: gen });
  }
  const lo = addressOf([0, 2, 4, 6].map((i) => bounds[i]!));
  const hi = addressOf([1, 3, 5, 7].map((i) => bounds[i]!));
  for (let length = 1; length < 32; length++) {
    if (length % 8 === 0) continue; // the same as an octet pattern
    const size = 2 ** (32 - length);
    const start = Math.floor(lo / size) * size;
    if (hi > start + size - 1) continue;
    const end = start + size - 1;
    const gen = [3, 2, 1, 0].flatMap((k) => [Math.floor(start / 256 ** k) % 256, Math.floor(end / 256 ** k) % 256]);
    out.push({ bounds: gen, prefix: length });
  }
  return out;
}

/**
 * Refines the classes so that no field a candidate rule can have cuts one (issue 26, item 7): a rule may take part
 * of what was one class (drop TCP ports 0-80 of a reachability class whose other packets still pass), and that part
 * must then be a class of its own for the candidates taking whole classes to be every candidate.
 *
 * The fields: a single protocol (where some class has one; else no rule with one takes a whole class), a port range
 * between two of the classes' own ends, and in each address the network's named addresses (`named`: nodes'
 * addresses, networks behind NATs): an address field is taken as the named addresses it contains, a named network
 * (`165.165.165.-1`) being one endpoint that a rule takes wholly or not at all. Refined classes have no new ends,
 * so one pass suffices. The engine uses it to tell whether a rule could cut a class (flows.ts, `cutFree`).
 */
export function refineForRules(partition: Partition, named: number[][]): void {
  const hulls = partition.classes().map(hull);
  if (hulls.some((h) => h[2 * PROTO] === h[2 * PROTO + 1])) {
    partition.add(rewrite(UNIVERSE, PROTO, [0, 0]), false);
    partition.add(rewrite(UNIVERSE, PROTO, [1, 1]), false);
  }
  // Ports hold TCP and UDP packets only.
  const ported = rewrite(UNIVERSE, PROTO, TCP_AND_UDP);
  for (const d of [SPORT, DPORT]) {
    const ends = new Set(hulls.flatMap((h) => [h[2 * d]!, h[2 * d + 1]! + 1]).filter((e) => e > 0 && e <= 65535));
    for (const e of [...ends].sort((a, b) => a - b)) partition.add(rewrite(ported, d, [0, e - 1]), false);
  }
  for (const at of [SRC, DST]) {
    // Only a class spanning more than one address can be cut there.
    const dims = [0, 1, 2, 3].map((k) => at + k);
    const wide = hulls.filter((h) => dims.some((d) => h[2 * d] !== h[2 * d + 1]));
    for (const bounds of named) {
      if (wide.some((h) => meeting(h, dims, bounds) && !within(h, dims, bounds)))
        partition.add(rewrite(UNIVERSE, at, bounds), false);
    }
  }
}

/**
 * A lower bound on the rules of a list giving every `forced` class the other action and no `barred` one: forced
 * classes no one rule can take together (the box spanning both meets a barred class, which a rule containing that
 * box would cover or cut) need a rule each. A greedy clique of them, in index order.
 */
export function exceptionsLowerBound(classes: PacketClass[], forced: number[], barred: number[]): number {
  const hulls = classes.map(hull);
  const barredBoxes = barred.flatMap((k) => classes[k]!.boxes);
  const apart = (a: number, b: number) => {
    const [x, y] = [hulls[a]!, hulls[b]!];
    return barredBoxes.some((box) => {
      for (let i = 0; i < box.length; i += 2)
        if (box[i]! > Math.max(x[i + 1]!, y[i + 1]!) || box[i + 1]! < Math.min(x[i]!, y[i]!)) return false;
      return true;
    });
  };
  const clique: number[] = [];
  for (const c of forced) if (clique.every((d) => apart(c, d))) clique.push(c);
  return clique.length;
}

/** A set of entering classes (or of their boxes), as 32-bit words. */
type Bits = Uint32Array;

const bitsOf = (size: number, members: (k: number) => boolean): Bits => {
  const out = new Uint32Array((size + 31) >> 5);
  for (let k = 0; k < size; k++) if (members(k)) out[k >> 5]! |= 1 << (k & 31);
  return out;
};

/**
 * A set's key in maps: its words as UTF-16 code units, two each. Made for every box the candidate search tries
 * (Test5_4: 12,000), a joined text took ~1.4 us each in code not yet optimised, this ~0.3 us.
 */
const keyOf = (bits: Bits): string =>
  Reflect.apply(String.fromCharCode, null, new Uint16Array(bits.buffer, bits.byteOffset, 2 * bits.length));

/** out = a & b; whether any bit is left. */
function and(a: Bits, b: Bits, out: Bits): boolean {
  let any = 0;
  for (let w = 0; w < out.length; w++) any |= out[w] = a[w]! & b[w]!;
  return any !== 0;
}

/** Whether bit sets a and b share a member. */
function overlaps(a: Bits, b: Bits): boolean {
  for (let w = 0; w < a.length; w++) if (a[w]! & b[w]!) return true;
  return false;
}

const members = (bits: Bits): number[] => {
  const out: number[] = [];
  bits.forEach((word, w) => {
    for (let b = 0; word !== 0; b++, word >>>= 1) if (word & 1) out.push(32 * w + b);
  });
  return out;
};

/** What an option (bounds on a group of dimensions) covers: classes whose hull it contains, boxes it meets. */
interface Option<T> {
  option: T;
  set: Bits;
  meets: Bits;
}

function within(box: readonly number[], dims: number[], gen: readonly number[]): boolean {
  for (let j = 0; j < dims.length; j++)
    if (box[2 * dims[j]!]! < gen[2 * j]! || box[2 * dims[j]! + 1]! > gen[2 * j + 1]!) return false;
  return true;
}

function meeting(box: readonly number[], dims: number[], gen: readonly number[]): boolean {
  for (let j = 0; j < dims.length; j++)
    if (box[2 * dims[j]!]! > gen[2 * j + 1]! || box[2 * dims[j]! + 1]! < gen[2 * j]!) return false;
  return true;
}

/** The classes and boxes a firewall's candidates are weighed on, and the classes one of which each must cover. */
interface Entered {
  hulls: number[][];
  boxes: Box[];
  wants: Bits;
}

/**
 * The generalisations of one group of dimensions, one per covered set: the tightest (for a set, the meet of the
 * options is tightest where one exists; otherwise each option not containing another is kept).
 */
function tightest<T extends { bounds: number[] }>(options: T[], entered: Entered, dims: number[]): Option<T>[] {
  const { hulls, boxes } = entered;
  const bySet = new Map<string, { set: Bits; list: T[] }>();
  const seen = new Set<string>();
  for (const o of options) {
    const key = o.bounds.join(',');
    if (seen.has(key)) continue;
    seen.add(key);
    const set = bitsOf(hulls.length, (k) => within(hulls[k]!, dims, o.bounds));
    if (!overlaps(set, entered.wants)) continue;
    const setKey = keyOf(set);
    const entry = bySet.get(setKey) ?? bySet.set(setKey, { set, list: [] }).get(setKey)!;
    entry.list.push(o);
  }
  const inside = (a: number[], b: number[]) => a.every((v, i) => (i % 2 === 0 ? v >= b[i]! : v <= b[i]!));
  const out: Option<T>[] = [];
  for (const { set, list } of bySet.values()) {
    for (const o of list) {
      if (!list.some((p) => p !== o && inside(p.bounds, o.bounds) && !inside(o.bounds, p.bounds)))
        out.push({ option: o, set, meets: bitsOf(boxes.length, (k) => meeting(boxes[k]!, dims, o.bounds)) });
    }
  }
  return out;
}

/** Port ranges with ends among the classes' own ends (each the tightest for the classes it covers). */
function portRanges(entered: Entered, d: number): Option<{ bounds: number[] }>[] {
  const { hulls } = entered;
  const los = [...new Set(hulls.map((h) => h[2 * d]!))].sort((a, b) => a - b);
  const his = [...new Set(hulls.map((h) => h[2 * d + 1]!))].sort((a, b) => a - b);
  const options = los.flatMap((lo) => his.filter((hi) => hi >= lo).map((hi) => ({ bounds: [lo, hi] })));
  return tightest(options, entered, [d]);
}

/** Whether a box met (a bit of `met`, over the boxes) belongs to a class not covered (a bit of `covered`). */
function cutsSome(met: Bits, covered: Bits, owner: number[]): boolean {
  for (let w = 0; w < met.length; w++) {
    for (let word = met[w]!, b = 32 * w; word !== 0; b++, word >>>= 1) {
      if (word & 1 && !((covered[owner[b]! >> 5]! >>> (owner[b]! & 31)) & 1)) return true;
    }
  }
  return false;
}

const portText = (lo: number, hi: number) => (lo === 0 && hi === 65535 ? '*' : lo === hi ? `${lo}` : `${lo}-${hi}`);

const FULL_PORTS = (o: { bounds: number[] }) => o.bounds[0] === 0 && o.bounds[1] === 65535;

/** What a search for candidates looks for: covering some `wanted` class, and no `barred` one. */
export interface Aim {
  wanted: (k: number) => boolean;
  barred: (k: number) => boolean;
}

/**
 * The candidate rules of one firewall for each aim, and whether they are every candidate a smaller list could use.
 * Each combination of one option per dimension group is a box; it is a candidate when every class it meets it
 * contains (bit sets: the classes it contains, the boxes it meets). The sets narrow as dimensions are added, so a
 * partial combination covering no wanted class is left with all it would grow to. The aims are searched together
 * (a box's classes and cuts are the same for each); a candidate found for two aims is one object, the first aim's.
 * `ordered`: each aim's candidates in the order of their covered sets (compareSets); else in no set order, for a
 * caller that orders only those it keeps (`RuleModel.finish`: Test5_4 keeps 880 of 8,500). `exact` (least
 * privilege): only boxes holding no packet outside the classes they cover, and a class's pieces exactly its own.
 */
export function candidateRules(
  classes: PacketClass[],
  generalisations: Map<string, Generalisation[]>,
  aims: Aim[],
  ordered = true,
  exact = false,
): { candidates: Candidate[][]; complete: boolean } {
  const wanted = aims.map((aim) => bitsOf(classes.length, aim.wanted));
  const barred = aims.map((aim) => bitsOf(classes.length, aim.barred));
  /** The aims of `mask` (bit a: aim a) that a set still serves: it covers one of their wanted classes. */
  const serving = (bits: Bits, mask: number): number => {
    let out = 0;
    for (let a = 0; a < wanted.length; a++) if ((mask >> a) & 1 && overlaps(bits, wanted[a]!)) out |= 1 << a;
    return out;
  };
  const hulls = classes.map(hull);
  const boxes = classes.flatMap((c) => c.boxes);
  const owner = classes.flatMap((c, k) => c.boxes.map(() => k));
  const entered: Entered = { hulls, boxes, wants: bitsOf(classes.length, (k) => aims.some((a) => a.wanted(k))) };
  // Classes share addresses, firewalls share regions (`generalisations`, by region): each is generalised once.
  const generalised = (at: number) => {
    const regions = new Map(hulls.map((h) => h.slice(2 * at, 2 * at + 8)).map((b) => [b.join(','), b]));
    const of = (key: string, region: number[]) =>
      generalisations.get(key) ?? generalisations.set(key, addressGeneralisations(region)).get(key)!;
    return tightest(
      [...regions].flatMap(([key, region]) => of(key, region)),
      entered,
      [0, 1, 2, 3].map((k) => at + k),
    );
  };
  const sources = generalised(SRC);
  const destinations = generalised(DST);
  const protocols = tightest(
    [
      ...hulls
        .filter((h) => h[2 * PROTO] === h[2 * PROTO + 1])
        .map((h) => ({ bounds: [h[2 * PROTO]!, h[2 * PROTO]!] })),
      { bounds: [0, 2] },
    ],
    entered,
    [PROTO],
  );
  // Ports hold TCP and UDP packets only (docs/SEMANTICS.md): ANY with ports means both.
  const portedAny = {
    set: bitsOf(hulls.length, (k) => within(hulls[k]!, [PROTO], TCP_AND_UDP)),
    meets: bitsOf(boxes.length, (k) => meeting(boxes[k]!, [PROTO], TCP_AND_UDP)),
  };
  const sports = portRanges(entered, SPORT);
  const dports = portRanges(entered, DPORT);
  // A box contains the classes it covers and meets no other entering one: it holds nothing else iff its volume is
  // theirs (the partition's boxes are disjoint).
  const volumes = exact ? classes.map((c) => c.boxes.reduce((sum, b) => sum + volume(b), 0n)) : [];
  const span = (b: readonly number[]) => BigInt(b[b.length - 1]! - b[0]! + 1);
  const octetSpan = (b: readonly number[]) =>
    span(b.slice(0, 2)) * span(b.slice(2, 4)) * span(b.slice(4, 6)) * span(b.slice(6, 8));
  /** Each aim's candidates by covered set; the classes of a covered set, worked out once. */
  const lists = aims.map(() => new Map<string, Candidate>());
  const coverings = new Map<string, number[]>();
  const words = (hulls.length + 31) >> 5;
  const [st, stp, stps, set, final] = Array.from({ length: 5 }, () => new Uint32Array(words));
  const [mt, mtp, mtps, met] = Array.from({ length: 4 }, () => new Uint32Array((boxes.length + 31) >> 5));
  /**
   * Source and destination pairs already searched, by what they cover and meet: another pair reaching the same sets
   * grows into the same boxes, whose candidates the first pair's search found (and named).
   */
  const searched = new Set<string>();
  let combinations = 0;
  let complete = true;
  // Indexed loops, not for-of: run before V8 optimises them, each step of an array's iterator allocates its result.
  search: for (let si = 0; si < sources.length; si++) {
    const s = sources[si]!;
    const forSource = serving(s.set, (1 << aims.length) - 1);
    if (forSource === 0) continue;
    for (let ti = 0; ti < destinations.length; ti++) {
      const t = destinations[ti]!;
      if (!and(s.set, t.set, st)) continue;
      const forPair = serving(st, forSource);
      if (forPair === 0) continue;
      and(s.meets, t.meets, mt);
      const pair = keyOf(st) + keyOf(mt);
      // Pairs covering the same sets differ in the packets outside them, which exact candidates must weigh.
      if (!exact && searched.has(pair)) continue;
      searched.add(pair);
      for (let pi = 0; pi < protocols.length; pi++) {
        const p = protocols[pi]!;
        if (!and(st, p.set, stp)) continue;
        const forProtocol = serving(stp, forPair);
        if (forProtocol === 0) continue;
        and(mt, p.meets, mtp);
        const [plo, phi] = p.option.bounds as [number, number];
        for (let spi = 0; spi < sports.length; spi++) {
          const sp = sports[spi]!;
          if (!and(stp, sp.set, stps)) continue;
          const forSport = serving(stps, forProtocol);
          if (forSport === 0) continue;
          and(mtp, sp.meets, mtps);
          for (let dpi = 0; dpi < dports.length; dpi++) {
            const dp = dports[dpi]!;
            if (!and(stps, dp.set, set)) continue;
            const setKey = keyOf(set);
            let open = serving(set, forSport);
            for (let a = 0; a < aims.length; a++) if (lists[a]!.has(setKey)) open &= ~(1 << a);
            if (open === 0) continue;
            if (++combinations > MAX_COMBINATIONS) {
              complete = false;
              break search;
            }
            const ported = !FULL_PORTS(sp.option) || !FULL_PORTS(dp.option);
            // OTHER with ports is no rule.
            if (ported && plo === 2) continue;
            const widened = ported && plo === 0 && phi === 2;
            and(mtps, dp.meets, met);
            if (widened) {
              and(set, portedAny.set, final);
              and(met, portedAny.meets, met);
            } else final.set(set);
            open = serving(final, open);
            for (let a = 0; a < aims.length; a++) if (overlaps(final, barred[a]!)) open &= ~(1 << a);
            // A box met whose class is not contained: the rule would cut that class.
            if (open === 0 || cutsSome(met, final, owner)) continue;
            if (exact) {
              const protocolSpan = widened ? 2n : BigInt(phi - plo + 1);
              const size =
                octetSpan(s.option.bounds) *
                octetSpan(t.option.bounds) *
                protocolSpan *
                span(sp.option.bounds) *
                span(dp.option.bounds);
              if (size !== members(final).reduce((sum, k) => sum + volumes[k]!, 0n)) continue;
            }
            const key = widened ? keyOf(final) : setKey;
            const rules = (): Omit<Elements, 'action'>[] => [
              {
                source: addressText(s.option),
                destination: addressText(t.option),
                protocol: plo === 0 && phi === 2 ? 'ANY' : PROTOCOLS[plo]!,
                srcPort: portText(sp.option.bounds[0]!, sp.option.bounds[1]!),
                dstPort: portText(dp.option.bounds[0]!, dp.option.bounds[1]!),
              },
            ];
            for (let a = 0; a < aims.length; a++) {
              if (!((open >> a) & 1) || lists[a]!.has(key)) continue;
              const covers = coverings.get(key) ?? coverings.set(key, members(final)).get(key)!;
              lists[a]!.set(key, { covers, cost: 1, rules });
            }
          }
        }
      }
    }
  }
  // One object per covered set: the first aim's (a list's rule for it is named by the first box found for that aim).
  lists.forEach((found, a) => {
    for (const key of found.keys()) {
      const first = lists.find((earlier, b) => b < a && earlier.has(key));
      if (first) found.set(key, first.get(key)!);
    }
  });
  // A class no candidate takes alone: the pieces it splits into, as one candidate.
  classes.forEach((c, k) => {
    const key = keyOf(bitsOf(classes.length, (j) => j === k));
    const lacking = lists.filter((found, a) => aims[a]!.wanted(k) && !aims[a]!.barred(k) && !found.has(key));
    if (lacking.length === 0) return;
    let piece = lists.find((found) => found.has(key))?.get(key);
    if (!piece) {
      const others = classes.filter((_, j) => j !== k);
      const pieces = (exact ? exactRules(c.boxes, 'DENY') : coveringRules([c], others, 'DENY')).map(
        ({ action: _, ...rule }) => rule,
      );
      piece = { covers: [k], cost: pieces.length, rules: () => pieces };
    }
    for (const found of lacking) found.set(key, piece);
  });
  const candidates = lists.map((found) => {
    const list = [...found.values()];
    return ordered ? list.sort((a, b) => compareSets(a.covers, b.covers)) : list;
  });
  return { candidates, complete };
}

/**
 * The candidates worth offering under one default, given what each entering class does there (`Exceptions`): those
 * covering no class that never takes the other action, and of those covering the same classes that may or may not,
 * the ones no candidate as cheap dominates: covering every class the first covers that always or freely takes the
 * other action and, where `wanted` is given, no class the first leaves out that no requirement needs given it (its
 * drop occurs in their clauses only as the default has it, so leaving it to the default loses nothing). An optimum
 * using a dominated candidate costs no less with the dominating one instead: the classes gained take the other
 * action at no loss, those lost go back to the default at none.
 */
export function offered(
  candidates: Candidate[],
  known: ReturnType<Exceptions>[],
  size: number,
  wanted?: (i: number) => boolean,
): Candidate[] {
  // What each class is to a candidate covering it, worked out once per class instead of in four passes over every
  // candidate's classes (test/engine/solving/work's proof weighs 118,326 candidates in 76 calls): NEVER bars the
  // candidate, a GAIN (the other action at no loss) a dominator must cover, a LOSS (back to the default at none) it
  // may leave out, an OPEN class keys the candidate's group, and a class both gain and loss is none of these.
  const [NEVER, OPEN, GAIN, LOSS, NEITHER] = [0, 1, 2, 3, 4];
  const kind = new Uint8Array(size);
  for (let i = 0; i < size; i++) {
    const up = known[i] === 'free' || known[i] === 'always';
    const down = wanted !== undefined && !wanted(i);
    kind[i] = known[i] === 'never' ? NEVER : up === down ? (up ? NEITHER : OPEN) : up ? GAIN : LOSS;
  }
  // A dominator covers every class the candidate covers that takes the other action at no loss (its `gains`) and no
  // class it leaves out that stays with the default at none (its `losses` are among the candidate's).
  interface Weighed {
    c: Candidate;
    gains: number[];
    losses: number[];
    /** The gains as bits, made once the candidate is kept. */
    held?: Bits;
  }
  const byOpen = new Map<string, Weighed[]>();
  const open: number[] = [];
  // Indexed loops, not for-of, here and below: this runs mostly before V8 optimises it, where each step of an array's
  // iterator allocates its result (Zoo Cesnet1999 plain: 14 of the 64 MB its worker allocated, most of its GC).
  weigh: for (let n = 0; n < candidates.length; n++) {
    const c = candidates[n]!;
    const { covers } = c;
    open.length = 0;
    const gains: number[] = [];
    const losses: number[] = [];
    for (let j = 0; j < covers.length; j++) {
      const i = covers[j]!;
      const k = kind[i]!;
      if (k === NEVER) continue weigh;
      if (k === OPEN) open.push(i);
      else if (k === GAIN) gains.push(i);
      else if (k === LOSS) losses.push(i);
    }
    const key = open.join(',');
    (byOpen.get(key) ?? byOpen.set(key, []).get(key)!).push({ c, gains, losses });
  }
  const words = (size + 31) >> 5;
  const has = (bits: Bits, i: number) => ((bits[i >> 5]! >>> (i & 31)) & 1) === 1;
  const out: Candidate[] = [];
  const none: Weighed[] = [];
  // By class, made once and emptied after each group: most groups hold one or a few candidates (Zoo Cesnet1999
  // plain's refined classes: 7,689 candidates in 2,240 groups), and maps and arrays made for each cost more than the
  // search.
  const holding: (Weighed[] | undefined)[] = new Array(size);
  const losing: (Weighed[] | undefined)[] = new Array(size);
  const often = new Uint32Array(size);
  const mine = new Uint32Array(words);
  for (const group of byOpen.values()) {
    // Alone in its group, a candidate has no dominator.
    if (group.length === 1) {
      out.push(group[0]!.c);
      continue;
    }
    // Most gains less losses first, then cheapest: a dominated candidate's dominator comes before it (containment
    // and cost are transitive); equal ones in the order of their covered sets, so that the order given does not
    // matter.
    const score = (e: Weighed) => e.gains.length - e.losses.length;
    group.sort((a, b) => score(b) - score(a) || a.c.cost - b.c.cost || compareSets(a.c.covers, b.c.covers));
    const kept: Weighed[] = [];
    // A dominator holds each of the candidate's gains, and its losses are among the candidate's: the kept ones are
    // looked up by either, whichever list is shorter (Cudi NAT's refined classes, 34,657 and 36,366 candidates over
    // 933 classes: 2.2 and 1.9 -> 0.6 and 1.1 CPU s; looking by what a dominator holds, every class a candidate leaves
    // out that stays with the default at no loss was one almost every kept candidate held). `holding`: the kept ones
    // by gain; `losing`: a kept one under the one of its losses fewest candidates have, or apart if it has none.
    const lossless: Weighed[] = [];
    for (const e of group) for (const i of e.losses) often[i]!++;
    /** Whether d dominates e (e's losses marked in `mine`). */
    const dominates = (d: Weighed, e: Weighed): boolean => {
      if (d.c.cost > e.c.cost) return false;
      const { losses } = d;
      for (let j = 0; j < losses.length; j++) if (!has(mine, losses[j]!)) return false;
      const { gains } = e;
      for (let j = 0; j < gains.length; j++) if (!has(d.held!, gains[j]!)) return false;
      return true;
    };
    const someDominates = (list: Weighed[], e: Weighed): boolean => {
      for (let j = 0; j < list.length; j++) if (dominates(list[j]!, e)) return true;
      return false;
    };
    for (let n = 0; n < group.length; n++) {
      const e = group[n]!;
      const { gains, losses } = e;
      let byGain = kept;
      for (let j = 0; j < gains.length; j++) {
        const list = holding[gains[j]!] ?? none;
        if (list.length < byGain.length) byGain = list;
      }
      let byLoss = lossless.length;
      for (let j = 0; j < losses.length; j++) byLoss += losing[losses[j]!]?.length ?? 0;
      for (let j = 0; j < losses.length; j++) mine[losses[j]! >> 5]! |= 1 << (losses[j]! & 31);
      let dominated: boolean;
      if (byGain.length <= byLoss) dominated = someDominates(byGain, e);
      else {
        dominated = someDominates(lossless, e);
        for (let j = 0; !dominated && j < losses.length; j++) dominated = someDominates(losing[losses[j]!] ?? none, e);
      }
      for (let j = 0; j < losses.length; j++) mine[losses[j]! >> 5] = 0;
      if (dominated) continue;
      const held = (e.held = new Uint32Array(words));
      for (let j = 0; j < gains.length; j++) held[gains[j]! >> 5]! |= 1 << (gains[j]! & 31);
      kept.push(e);
      for (let j = 0; j < gains.length; j++) (holding[gains[j]!] ??= []).push(e);
      let rarest = -1;
      for (let j = 0; j < losses.length; j++)
        if (rarest < 0 || often[losses[j]!]! < often[rarest]!) rarest = losses[j]!;
      if (rarest < 0) lossless.push(e);
      else (losing[rarest] ??= []).push(e);
    }
    for (let j = 0; j < kept.length; j++) out.push(kept[j]!.c);
    for (let n = 0; n < group.length; n++) {
      const { gains, losses } = group[n]!;
      for (let j = 0; j < gains.length; j++) holding[gains[j]!] = undefined;
      for (let j = 0; j < losses.length; j++) {
        losing[losses[j]!] = undefined;
        often[losses[j]!] = 0;
      }
    }
  }
  return out;
}

/** The order of bit sets as numbers (the highest member decides), so that the candidates' order is fixed. */
function compareSets(a: number[], b: number[]): number {
  for (let i = a.length - 1, j = b.length - 1; i >= 0 || j >= 0; i--, j--) {
    const x = i >= 0 ? a[i]! : -1;
    const y = j >= 0 ? b[j]! : -1;
    if (x !== y) return x - y;
  }
  return 0;
}

interface FirewallModel {
  /** Whether the node is a firewall at all (true where the input configures one). */
  used: Term;
  whitelist: Term;
  entering: Entering[];
  candidates: Candidate[];
  /** Selection literal per candidate: the rule is in the list, with the action opposite to the default. */
  exception: Lit[];
}

/** The rule lists of the synthesised firewalls of one encoding. */
export class RuleModel {
  private readonly firewalls = new Map<number, FirewallModel>();
  /** Some firewall had more candidate combinations than MAX_COMBINATIONS: its list is not proven minimal. */
  complete = true;
  /** The candidates passed their bound (`finish`): no clause was written for them, and the formula is not solved. */
  abandoned = false;
  private readonly perClassRules: Lit[] = [];

  /**
   * `perClass`: count one rule per class against the default instead of weighing candidates (the objective before
   * issue 26's item 7). A far smaller formula, proven where the candidates' is not; the lists are then written by
   * `fewestRules` for the drops chosen, and are not proven the fewest (`complete` is false once a firewall's rules
   * are chosen here).
   */
  constructor(
    private readonly net: NetNode[],
    private readonly classes: PacketClass[],
    private readonly sink: ClauseSink,
    readonly perClass = false,
    private readonly known?: Exceptions,
    private readonly narrowed?: ReadonlyMap<number, boolean>,
    /** Least privilege: where reachability traffic arrives (flows.ts, `reachabilityClasses`). */
    private readonly reaching?: ReadonlySet<string>,
  ) {}

  /** The term "node n drops class cls" (n's rules are synthesised; `used` says whether n is a firewall at all). */
  term(n: number, cls: number, used: Term): Term {
    if (used === false) return false;
    const drop = this.sink.fresh();
    this.sink.clause([-drop, used]);
    let fw = this.firewalls.get(n);
    if (!fw) {
      const { defaultAction, leastPrivilege } = this.net[n]!;
      // A firewall `narrowed` to one default (allocate.ts) has that default as if configured. Least privilege has
      // DENY, since a default ALLOW lets through what no rule names, unless the input gives ALLOW.
      const fixed =
        defaultAction === 'DENY' || (leastPrivilege && defaultAction === undefined)
          ? true
          : defaultAction === 'ALLOW'
            ? false
            : this.narrowed?.get(n);
      const whitelist = fixed ?? this.sink.fresh();
      fw = { used, whitelist, entering: [], candidates: [], exception: [] };
      this.firewalls.set(n, fw);
    }
    const open = !this.net[n]!.leastPrivilege || this.reaching?.has(`${n}:${cls}`) === true;
    // Least privilege: a class no reachability requirement brings here is dropped wherever the firewall is used.
    if (!open) this.sink.clause([not(used), drop]);
    fw.entering.push({ index: cls, cls: this.classes[cls]!, drop, used, open });
    return drop;
  }

  /** The classes entering firewall n (indices into the model's classes). */
  entering(n: number): number[] {
    return this.firewalls.get(n)?.entering.map((e) => e.index) ?? [];
  }

  /** How many firewalls have their rules chosen here. */
  get size(): number {
    return this.firewalls.size;
  }

  /** Per-class mode: how many classes the values give a rule (what the objective counted). */
  counted(value: (t: Term) => boolean): number {
    return this.perClassRules.filter((r) => value(r)).length;
  }

  /** Default actions of the firewalls (true: DENY), as terms. */
  whitelists(): Map<number, Term> {
    return new Map([...this.firewalls].map(([n, fw]) => [n, fw.whitelist]));
  }

  /** Adds each firewall's candidates and the clauses tying its drops to them; once, after every term exists. */
  finish(bound?: CandidateBound): void {
    const { sink } = this;
    if (this.perClass) {
      // Counting classes is counting rules only where no firewall's rules are chosen.
      this.complete = this.firewalls.size === 0;
      for (const fw of this.firewalls.values()) {
        const w = fw.whitelist;
        // A class needs a rule when it is allowed under a default DENY, or dropped under a default ALLOW.
        for (const e of fw.entering) {
          const rule = sink.fresh();
          sink.clause([not(e.used), e.drop, not(w), rule]);
          sink.clause([-e.drop, w, rule]);
          sink.ruleCost(-rule, 1);
          this.perClassRules.push(rule);
        }
      }
      return;
    }
    const generalisations = new Map<string, Generalisation[]>();
    const { known } = this;
    const asked = [...this.firewalls].map(([n, fw]) => {
      const defaults = typeof fw.whitelist === 'boolean' ? [fw.whitelist] : [false, true];
      // Per default, the classes whose other action some requirement's clause may need: the drop occurs negated
      // there under a default DENY (a pass needed), as itself under ALLOW. A candidate covering none of them is in
      // no optimum: taking it out of a list sends its classes back to the default, which no clause minds, for
      // fewer rules. Nor is one covering a class that never takes the other action (knownOptima).
      const status = defaults.map((w) => known && fw.entering.map((e) => known(n, e.index, w)));
      // Least privilege: a class no reachability brings here takes no ALLOW rule, and under a default ALLOW needs a
      // DENY rule (its drop is forced by the rule model's own clause, which `occurrence` does not count).
      const aims = defaults.map((w, d) => ({
        wanted: (i: number) =>
          (sink.occurrence(fw.entering[i]!.drop) & (w ? 2 : 1)) !== 0 || (!w && !fw.entering[i]!.open),
        barred: (i: number) => status[d]?.[i] === 'never' || (w && !fw.entering[i]!.open),
      }));
      // ALLOW rules under least privilege hold nothing more than they must; DENY rules may hold more.
      const exact = this.net[n]!.leastPrivilege === true && fw.whitelist === true;
      // Everything the candidates are made from: firewalls alike get the same ones.
      const aimed = aims.map((aim, d) =>
        fw.entering.map((_, i) => `${+aim.wanted(i)}${+aim.barred(i)}${status[d]?.[i]?.[0] ?? ''}`).join(''),
      );
      const key = `${exact} ${fw.entering.map((e) => e.index).join(',')} ${defaults.join(',')} ${aimed.join(' ')}`;
      return { n, fw, status, aims, exact, key };
    });
    // Places on the links of one chain see the same classes: their candidates are made once (Cudi NAT's refined
    // classes: five firewalls of 933 classes, 14,410 candidates each), and counted for each at once, so that a
    // formula past its bound is given up before the others are made.
    const alike = new Map<string, number>();
    for (const { key } of asked) alike.set(key, (alike.get(key) ?? 0) + 1);
    const made = new Map<string, Candidate[]>();
    let offeredSoFar = 0;
    for (const { fw, status, aims, exact, key } of asked) {
      const again = made.get(key);
      if (again) {
        fw.candidates = again;
        continue;
      }
      if (bound?.work.spent) return void (this.abandoned = true);
      if (bound) checkAbort(bound.abortAt);
      // Unordered: which candidates `offered` keeps does not depend on their order, and those kept are ordered below.
      const { candidates, complete } = candidateRules(
        fw.entering.map((e) => e.cls),
        generalisations,
        aims,
        false,
        exact,
      );
      this.complete &&= complete;
      const kept = new Set<Candidate>();
      candidates.forEach((list, d) => {
        const known = status[d] ?? fw.entering.map(() => 'maybe' as const);
        const some = offered(list, known, fw.entering.length, bound?.proofOnly ? aims[d]!.wanted : undefined);
        for (let k = 0; k < some.length; k++) kept.add(some[k]!);
      });
      fw.candidates = [...kept].sort((a, b) => compareSets(a.covers, b.covers));
      made.set(key, fw.candidates);
      if (bound && (offeredSoFar += fw.candidates.length * alike.get(key)!) > bound.candidates)
        return void (this.abandoned = true);
    }
    for (const fw of this.firewalls.values()) {
      fw.exception = fw.candidates.map((c) => {
        const x = sink.fresh();
        sink.ruleCost(-x, c.cost);
        // An unused firewall selects nothing: with its place decided, its candidates are decided too and stay out of
        // the cores (Belnet2009 plain's firewall sets fixed in turn, exact.ts splitOptimum).
        if (fw.used !== true) sink.clause([-x, ...(fw.used === false ? [] : [fw.used])]);
        return x;
      });
      const exceptions = fw.entering.map(() => [] as Lit[]);
      fw.candidates.forEach(({ covers }, k) => {
        for (let j = 0; j < covers.length; j++) exceptions[covers[j]!]!.push(fw.exception[k]!);
      });
      fw.entering.forEach((e, i) => {
        // x <-> some exception rule covers the class.
        const x = sink.fresh();
        const list = exceptions[i]!;
        sink.clause([-x].concat(list));
        for (let j = 0; j < list.length; j++) sink.clause([-list[j]!, x]);
        // Where the firewall is used: drop = whitelist XOR x.
        const w = fw.whitelist;
        sink.clause([not(e.used), -e.drop, w, x]);
        sink.clause([not(e.used), e.drop, not(w), x]);
        sink.clause([not(e.used), -e.drop, not(w), -x]);
        sink.clause([not(e.used), e.drop, w, -x]);
      });
    }
  }

  /**
   * The soft literals of each firewall's candidates (a candidate left out), then of each two firewalls some class
   * enters both, then of each three firewalls of which every two share a class: what a search that cannot prove its
   * optimum frees together to improve its model (MaxSatProblem.neighbourhoods), each only where its firewalls are
   * used. Two firewalls on the same flows can trade the rules that decide those flows; Geant needs three (33 -> 30).
   */
  *neighbourhoods(): Generator<Neighbourhood> {
    const lists = [...this.firewalls.values()].filter((fw) => fw.exception.length > 0);
    const free = lists.map((fw) => fw.exception.map((x) => -x));
    // A firewall configured in the input is used whatever the model: nothing to require of it.
    const used = lists.map((fw) => (typeof fw.used === 'number' ? [fw.used] : []));
    const entering = lists.map((fw) => new Set(fw.entering.map((e) => e.index)));
    const share = lists.map((_, i) => lists.map((fw) => fw.entering.some((e) => entering[i]!.has(e.index))));
    const of = (...firewalls: number[]): Neighbourhood => ({
      free: firewalls.flatMap((i) => free[i]!),
      needs: firewalls.flatMap((i) => used[i]!),
    });
    // Made one at a time: the triples of a component with many firewalls would not fit in memory at once.
    for (let i = 0; i < lists.length; i++) yield of(i);
    for (let i = 0; i < lists.length; i++) for (let j = i + 1; j < lists.length; j++) if (share[i]![j]) yield of(i, j);
    for (let i = 0; i < lists.length; i++)
      for (let j = i + 1; j < lists.length; j++) {
        if (!share[i]![j]) continue;
        for (let k = j + 1; k < lists.length; k++) if (share[i]![k] && share[j]![k]) yield of(i, j, k);
      }
  }

  /** The chosen list of each firewall, from the solver's values. */
  chosen(value: (t: Term) => boolean): Map<number, ChosenRules> {
    const out = new Map<number, ChosenRules>();
    if (this.perClass) return out;
    for (const [n, fw] of this.firewalls) {
      const whitelist = value(fw.whitelist);
      const action: 'ALLOW' | 'DENY' = whitelist ? 'ALLOW' : 'DENY';
      const selected = fw.candidates.filter((_, k) => value(fw.exception[k]!));
      const taken = new Set(selected.flatMap((c) => c.covers));
      const avoid = fw.entering.flatMap((e, i) => (taken.has(i) ? [] : e.cls.boxes));
      // Least privilege keeps each rule as the candidate is: widened, it would let through traffic no one needs.
      const exact = this.net[n]!.leastPrivilege === true && whitelist;
      const elements = selected.flatMap((c) =>
        c.rules().map((r) => (exact ? { action, ...r } : widenedRule(r, action, avoid))),
      );
      out.set(n, { whitelist, elements });
    }
    return out;
  }
}

/**
 * The fewest candidate rules giving the `exception` classes the other action and no class that is false there (for a
 * fast answer, whose drops are already chosen); an undefined class may go either way. A set cover, solved exactly
 * within `spend`, or undefined when it runs out; with the classes the rules take. `exact`: rules holding no packet
 * outside the classes (least privilege).
 */
export function fewestRules(
  classes: PacketClass[],
  exception: (boolean | undefined)[],
  spend: Spend,
  exact = false,
): { elements: Omit<Elements, 'action'>[]; taken: Set<number> } | undefined {
  const aim = { wanted: (i: number) => exception[i] === true, barred: (i: number) => exception[i] === false };
  const usable = candidateRules(classes, new Map(), [aim], true, exact).candidates[0]!;
  const hard = classes.flatMap((_, i) =>
    exception[i] ? [usable.flatMap((c, k) => (c.covers.includes(i) ? [k + 1] : []))] : [],
  );
  const soft = [usable.flatMap((c, k) => Array.from({ length: c.cost }, () => -(k + 1)))];
  const answer = exactMaxSat({ variables: usable.length, hard: Clauses.of(hard), soft }, spend);
  if (answer?.status !== 'sat') return undefined;
  const chosen = usable.filter((_, k) => answer.value[k + 1]);
  return { elements: chosen.flatMap((c) => c.rules()), taken: new Set(chosen.flatMap((c) => c.covers)) };
}
