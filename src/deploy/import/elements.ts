/**
 * Unfolded entries as nfv rules (elements). A rule address is an octet pattern (each octet fixed or -1) or a CIDR
 * prefix of any length (docs/SEMANTICS.md), so the address part of a box (four octet intervals: a /12, a /25, the
 * rest of a RETURN's subtraction) becomes the fewer of: octet patterns, one per value of each octet that is neither
 * one value nor whole; or prefixes, one per value of the octets before the last one that is not whole, times the
 * aligned blocks of that octet's interval. `ruleAddresses` is the one place that does it (B.4).
 */
import { rangeBlocks } from '../../model/address.js';
import { MAX_RULES_PER_LINE } from '../../model/limits.js';
import { DPORT, DST, PROTO, SPORT, SRC, type Box } from '../../model/space.js';
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

/** How many rules an entry becomes; above MAX_RULES_PER_LINE its line is refused. */
export const ruleCount = (e: Entry) =>
  e.region.reduce((n, b) => n + ruleAddressCount(b, SRC) * ruleAddressCount(b, DST) * services(b).length, 0);

/** An entry's rules, in order (duplicates, such as OTHER from two port pieces, said once). */
export function elementsOf(e: Entry): Elements[] {
  const seen = new Set<string>();
  const out: Elements[] = [];
  for (const b of e.region)
    for (const source of ruleAddresses(b, SRC))
      for (const destination of ruleAddresses(b, DST))
        for (const s of services(b)) {
          const el: Elements = { action: e.allow ? 'ALLOW' : 'DENY', source, destination, ...s };
          const key = JSON.stringify(el);
          if (!seen.has(key)) {
            seen.add(key);
            out.push(el);
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
