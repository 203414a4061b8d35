/**
 * Packet classes for people and programs: a box as source and destination address sets, protocols and port ranges.
 *
 * An address set is four octet intervals. It reads as `*` (any address), as CIDR when it is a prefix
 * (`10.0.0.0/8`, `10.1.2.128/25`, a single address without `/32`), and otherwise octet by octet, each octet a
 * value, a range or `*` (`10.*.0.1`, `10.0.0.5-9`), the notation of nmap's target lists. Ports are `*`, `N` or
 * `A-B`; protocols `ANY` or their names joined by commas (`TCP,UDP`).
 */
import { DPORT, DST, PROTO, PROTOCOLS, SPORT, SRC, type Box } from '../../model/space.js';

export interface PacketClass {
  source: string;
  destination: string;
  protocol: string;
  srcPort: string;
  dstPort: string;
}

const octet = (b: Box, at: number, k: number) => [b[2 * (at + k)]!, b[2 * (at + k) + 1]!] as const;
const full = ([lo, hi]: readonly [number, number]) => lo === 0 && hi === 255;

/** The prefix length of an address set, or undefined when it is not a prefix. */
function prefixLength(b: Box, at: number): number | undefined {
  let k = 0;
  while (k < 4 && octet(b, at, k)[0] === octet(b, at, k)[1]) k++;
  if (k === 4) return 32;
  const [lo, hi] = octet(b, at, k);
  const size = hi - lo + 1;
  // An aligned power-of-two block in the first octet that is not one value, then only whole octets.
  if ((size & (size - 1)) !== 0 || lo % size !== 0) return undefined;
  for (let j = k + 1; j < 4; j++) if (!full(octet(b, at, j))) return undefined;
  return 8 * k + (8 - Math.log2(size));
}

export function addressText(b: Box, at: number): string {
  const octets = [0, 1, 2, 3].map((k) => octet(b, at, k));
  if (octets.every(full)) return '*';
  const prefix = prefixLength(b, at);
  const base = octets.map(([lo]) => lo).join('.');
  if (prefix === 32) return base;
  if (prefix !== undefined) return `${base}/${prefix}`;
  return octets.map(([lo, hi]) => (full([lo, hi]) ? '*' : lo === hi ? String(lo) : `${lo}-${hi}`)).join('.');
}

export function portText(b: Box, d: number): string {
  const [lo, hi] = [b[2 * d]!, b[2 * d + 1]!];
  if (lo === 0 && hi === 65535) return '*';
  return lo === hi ? String(lo) : `${lo}-${hi}`;
}

export function protocolText(b: Box): string {
  const [lo, hi] = [b[2 * PROTO]!, b[2 * PROTO + 1]!];
  if (lo === 0 && hi === PROTOCOLS.length - 1) return 'ANY';
  return PROTOCOLS.slice(lo, hi + 1).join(',');
}

export function classOf(b: Box): PacketClass {
  return {
    source: addressText(b, SRC),
    destination: addressText(b, DST),
    protocol: protocolText(b),
    srcPort: portText(b, SPORT),
    dstPort: portText(b, DPORT),
  };
}
