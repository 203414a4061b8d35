/**
 * Packet classes for people and programs: a box as source and destination address sets, protocols and port ranges.
 *
 * An address set is four octet intervals, read as `addressSetText` says (`*`, CIDR, or octet by octet). Ports are
 * `*`, `N` or `A-B`; protocols `ANY` or their names joined by commas (`TCP,UDP`).
 */
import { addressSetText } from '../../model/address.js';
import { DPORT, DST, PROTO, PROTOCOLS, SPORT, SRC, type Box } from '../../model/space.js';

export interface PacketClass {
  source: string;
  destination: string;
  protocol: string;
  srcPort: string;
  dstPort: string;
}

export const addressText = (b: Box, at: number) => addressSetText(b.slice(2 * at, 2 * at + 8));

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

/**
 * One packet of a box, in the PACKET syntax `nfv firewall explain` reads (`src=A dst=B proto=tcp sport=N dport=N`):
 * its lowest corner, TCP when the box holds TCP. A packet of another protocol is named icmp, one of nfv's OTHER.
 */
export function examplePacket(b: Box): string {
  const octets = (at: number) => [0, 1, 2, 3].map((k) => b[2 * (at + k)]!).join('.');
  const proto = b[2 * PROTO]!;
  const ports = proto < 2 ? ` sport=${b[2 * SPORT]!} dport=${b[2 * DPORT]!}` : '';
  return `src=${octets(SRC)} dst=${octets(DST)} proto=${['tcp', 'udp', 'icmp'][proto]}${ports}`;
}
