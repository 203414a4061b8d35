/**
 * Unfolded entries as nfv rules (elements). nfv's rule addresses are octet patterns (four octets, each fixed or -1),
 * so a box whose address octets are partial intervals (a /12, a /25, the rest of a RETURN's subtraction) becomes
 * several rules. `addressPatterns` is the one place that does it (B.4): once rule addresses take CIDR prefixes, it
 * returns the prefixes that cover the box instead, and nothing else changes.
 */
import { MAX_RULES_PER_LINE } from '../../model/limits.js';
import { DPORT, DST, PROTO, SPORT, SRC, type Box } from '../../model/space.js';
import type { Elements } from '../../model/types.js';
import type { Entry } from './unfold.js';

/** The octet patterns whose union is the address part of `b` at `at` (SRC or DST). */
export function addressPatterns(b: Box, at: number): string[] {
  let out = [''];
  for (let k = 0; k < 4; k++) {
    const [lo, hi] = [b[2 * (at + k)]!, b[2 * (at + k) + 1]!];
    const values = lo === 0 && hi === 255 ? ['-1'] : Array.from({ length: hi - lo + 1 }, (_, v) => String(lo + v));
    out = out.flatMap((head) => values.map((v) => (head ? `${head}.${v}` : v)));
  }
  return out.map((p) => (p === '-1.-1.-1.-1' ? '*' : p));
}

/** How many octet patterns `addressPatterns` gives, without making them. */
export function patternCount(b: Box, at: number): number {
  let n = 1;
  for (let k = 0; k < 4; k++) {
    const [lo, hi] = [b[2 * (at + k)]!, b[2 * (at + k) + 1]!];
    if (!(lo === 0 && hi === 255)) n *= hi - lo + 1;
  }
  return n;
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
  e.region.reduce((n, b) => n + patternCount(b, SRC) * patternCount(b, DST) * services(b).length, 0);

/** An entry's rules, in order (duplicates, such as OTHER from two port pieces, said once). */
export function elementsOf(e: Entry): Elements[] {
  const seen = new Set<string>();
  const out: Elements[] = [];
  for (const b of e.region)
    for (const source of addressPatterns(b, SRC))
      for (const destination of addressPatterns(b, DST))
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

/** Why a line is refused when its rules would be too many (B.4), in the user's words. */
export function tooMany(count: number): string {
  return (
    `becomes ${count} nfv rules (more than ${MAX_RULES_PER_LINE}): nfv's rule addresses take whole octets only ` +
    '(/0, /8, /16, /24, /32), so other prefixes, ranges and negations are spelt octet by octet'
  );
}
