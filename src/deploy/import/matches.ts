/**
 * Regions of the match conditions both importers read: addresses (any prefix, octet-wise masks, ranges), ports,
 * protocols, interfaces through an `--iface` map, ipset contents, all as unions of boxes (exact, B.3, B.4).
 * A function here returns a region or throws `Refusal` with the reason in the user's words.
 */
import { rangeBlocks } from '../../model/address.js';
import { DPORT, DST, PROTO, SPORT, SRC, UNIVERSE, type Box } from '../../model/space.js';
import type { InterfaceMap } from './routes.js';
import { UNIVERSE_REGION, intersectRegions, withBounds } from './ruleset.js';
import { coalesce, regionSubtract } from '../../model/space.js';

/**
 * A line nfv cannot import, and why: either nfv cannot read it (iptables would refuse it too, or nfv's reader has a
 * gap) or it reads it and cannot model it (an IPv6 address, a host name, a translation before filtering).
 */
export class Refusal extends Error {
  constructor(
    message: string,
    readonly modelling = false,
  ) {
    super(message);
  }
}
export const refuse = (why: string): never => {
  throw new Refusal(why);
};
/** A line read whose meaning nfv cannot model: a refusal of its own kind, never a reading gap. */
export const cannotModel = (why: string): never => {
  throw new Refusal(why, true);
};

const OCTET_DIMS = (at: number) => [at, at + 1, at + 2, at + 3];

/** Dotted octets; an address (not a mask) may give fewer, the rest zero, as iptables reads `10/8` or `0/0`. */
function octetsOf(text: string, mask = false): number[] {
  if (text.includes(':')) cannotModel(`${text}: an IPv6 address (nfv models IPv4)`);
  const parts = text.split('.');
  const count = mask ? parts.length === 4 : parts.length >= 1 && parts.length <= 4;
  if (!count || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) {
    if (!mask && /^[a-z0-9][a-z0-9.-]*$/i.test(text) && /[a-z]/i.test(text))
      cannotModel(`${text}: a host name (nfv does not resolve names)`);
    refuse(`${text}: not an IPv4 address`);
  }
  return [...parts.map(Number), 0, 0, 0].slice(0, 4);
}

/** Per octet mask of a prefix length. */
const prefixMask = (p: number) => [0, 1, 2, 3].map((k) => (0xff << (8 - Math.max(0, Math.min(8, p - 8 * k)))) & 0xff);
const LEADING = new Set([0, 128, 192, 224, 240, 248, 252, 254, 255]);

/** An address with a prefix length or a dotted mask as one box at `at` (SRC or DST): B.4. */
export function addressBox(text: string, at: number): Box {
  const [addr, suffix] = text.split('/', 2) as [string, string | undefined];
  const octets = octetsOf(addr);
  let mask: number[];
  if (suffix === undefined) mask = [255, 255, 255, 255];
  else if (/^\d{1,2}$/.test(suffix) && Number(suffix) <= 32) mask = prefixMask(Number(suffix));
  else if (suffix.includes('.')) {
    mask = octetsOf(suffix, true);
    // Each octet's mask leading ones: a box (octet-wise masks such as 255.0.255.255 are what nfv deploys).
    if (!mask.every((m) => LEADING.has(m)))
      cannotModel(`${text}: a mask that is not contiguous within an octet (nfv's rule addresses cannot express it)`);
  } else return refuse(`${text}: ${suffix} is not a prefix length (0-32) or a mask`);
  const bounds = octets.flatMap((o, k) => [o & mask[k]!, (o & mask[k]!) | (~mask[k]! & 0xff)]);
  return withBounds(UNIVERSE, OCTET_DIMS(at), bounds);
}

/** A comma-separated list of addresses (iptables splits it into one rule each; the union is the same). */
export const addressRegion = (text: string, at: number): Box[] => text.split(',').map((a) => addressBox(a.trim(), at));

const ipNumber = (o: number[]) => ((o[0]! << 24) | (o[1]! << 16) | (o[2]! << 8) | o[3]!) >>> 0;
const ipText = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 0xff).join('.');

/** An address range `A-B` (`-m iprange`) as the prefixes that cover it exactly. */
export function rangeRegion(text: string, at: number): Box[] {
  const [a, b] = text.split('-') as [string, string | undefined];
  if (b === undefined) refuse(`${text}: not an address range A-B`);
  const lo = ipNumber(octetsOf(a));
  const hi = ipNumber(octetsOf(b!));
  if (lo > hi) refuse(`${text}: the range is empty (${a} is above ${b})`);
  return rangeBlocks(lo, hi).map((p) => addressBox(`${ipText(p.start)}/${p.length}`, at));
}

export function complement(region: readonly Box[]): Box[] {
  let out: Box[] = UNIVERSE_REGION;
  for (const b of region) out = regionSubtract(out, b);
  return coalesce(out);
}

export const negated = (region: Box[], negate: boolean) => (negate ? complement(region) : region);

/** Protocol numbers and names: TCP, UDP, everything; anything else is one of nfv's OTHER (approximated). */
export function protocolOf(text: string): { region: Box[]; approx?: string } {
  const p = text.toLowerCase();
  const at = (lo: number, hi: number) => [withBounds(UNIVERSE, [PROTO], [lo, hi])];
  if (p === 'tcp' || p === '6') return { region: at(0, 0) };
  if (p === 'udp' || p === '17') return { region: at(1, 1) };
  if (p === 'all' || p === '0' || p === 'ip') return { region: UNIVERSE_REGION };
  if (!/^[a-z0-9-]{1,20}$/.test(p)) return refuse(`${text}: not a protocol`);
  return { region: at(2, 2), approx: `protocol ${p}: nfv has OTHER (neither TCP nor UDP), a superset` };
}

/**
 * Service names iptables looks up in /etc/services, as IANA assigns them (the same port for TCP and UDP): a table
 * of our own, so that an answer never depends on the machine's file. A name not here is refused as unknown.
 */
const SERVICES = new Map(
  [
    'ftp:21 ftp-data:20 ssh:22 telnet:23 smtp:25 domain:53 bootps:67 bootpc:68 tftp:69 http:80 www:80',
    'kerberos:88 pop3:110 sunrpc:111 auth:113 nntp:119 ntp:123 netbios-ns:137 netbios-dgm:138',
    'netbios-ssn:139 imap:143 imap2:143 snmp:161 snmp-trap:162 bgp:179 ldap:389 https:443',
    'microsoft-ds:445 isakmp:500 syslog:514 submission:587 ldaps:636 imaps:993 pop3s:995 openvpn:1194',
    'ms-sql-s:1433 l2tp:1701 pptp:1723 radius:1812 nfs:2049 mysql:3306 ms-wbt-server:3389',
    'ipsec-nat-t:4500 sip:5060 postgresql:5432 http-alt:8080',
  ]
    .join(' ')
    .split(' ')
    .map((s) => s.split(':') as [string, string])
    .map(([name, port]): [string, number] => [name, Number(port)]),
);

/** A port number or a service name of `SERVICES`. */
function portOf(text: string, item: string): number {
  if (/^\d{1,5}$/.test(text)) return Number(text);
  const known = SERVICES.get(text.toLowerCase());
  if (known === undefined)
    refuse(`${item}: not a port or range (names nfv knows: ${[...SERVICES.keys()].slice(0, 6).join(', ')}, ...)`);
  return known!;
}

/** The protocol of a rule as TCP or UDP, for its ports; ports mean nothing to other protocols. */
export function portRegion(spec: string, proto: number, dim: number, sep = ':'): Box[] {
  return spec.split(',').flatMap((item) => {
    const parts = item.split(sep);
    if (parts.length > 2) refuse(`${item}: not a port or range`);
    const lo = parts[0] === '' ? 0 : portOf(parts[0]!, item);
    const hi = parts.length === 1 ? lo : parts[1] === '' ? 65535 : portOf(parts[1]!, item);
    if (hi > 65535 || lo > 65535) refuse(`${item}: not a port range within 0-65535`);
    // `60000:29`: iptables 1.8 refuses it, older ones stored it, and the kernel's test lo <= port <= hi matches no
    // port (real dumps carry such lines): no packet.
    return lo > hi ? [] : [withBounds(UNIVERSE, [dim, PROTO], [lo, hi, proto, proto])];
  });
}

/** Ports negated: the rule's protocol with the other ports (so the region keeps other protocols out). */
export function negatedPorts(region: Box[], proto: number): Box[] {
  return intersectRegions(complement(region), [withBounds(UNIVERSE, [PROTO], [proto, proto])]);
}

export const SPORT_DIM = SPORT;
export const DPORT_DIM = DPORT;
export const SRC_AT = SRC;
export const DST_AT = DST;

/**
 * The packets an interface condition keeps: sources behind an input interface, destinations behind an output one
 * (exact in nfv's model, which has no spoofing). `NAME+` is every mapped interface with that prefix. Undefined
 * when the map does not say.
 */
export function interfaceRegion(name: string, at: number, map: InterfaceMap): Box[] | undefined {
  const wild = name.endsWith('+');
  const stem = wild ? name.slice(0, -1) : name;
  const names = [...map.keys()].filter((k) => (wild ? k.startsWith(stem) : k === name));
  if (!names.length) return undefined;
  return names.flatMap((k) => map.get(k)!.flatMap((a) => addressRegion(a, at)));
}

/**
 * The packets `-m mac --mac-source MAC` keeps: the sources whose last hop has that MAC (routes.ts, macMap), exact
 * under the model's premise that a source arrives by its route and the neighbour table lists every sender of a MAC
 * the rules name. The reason it stays approximated otherwise.
 */
export function macRegion(mac: string, macs: Map<string, string[]> | undefined): Box[] | string {
  const m = mac.toLowerCase();
  if (!/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(m)) return `${mac} is not a MAC address nfv can look up`;
  if (!macs) return `${mac}: no neighbour table (--neighbours FILE from ip neigh, with --routes FILE)`;
  const sources = macs.get(m);
  if (!sources) return `${mac}: no neighbour in the --neighbours table has it`;
  return sources.flatMap((a) => addressRegion(a, SRC));
}

/** An `ipset save` dump: each set's type and members. */
export interface IpSet {
  type: string;
  members: string[];
}

/** `ipset save` text as sets by name. */
export function parseIpsets(text: string, file: string): Map<string, IpSet> {
  const sets = new Map<string, IpSet>();
  text.split(/\r?\n/).forEach((raw, k) => {
    const words = raw.trim().split(/\s+/);
    if (words[0] === 'create' && words.length >= 3) sets.set(words[1]!, { type: words[2]!, members: [] });
    else if (words[0] === 'add' && words.length >= 3) {
      const set = sets.get(words[1]!);
      if (!set) throw new Refusal(`${file}:${k + 1}: add to set ${words[1]} before its create line`);
      set.members.push(words[2]!);
    } else if (words[0] !== '' && !raw.trim().startsWith('#'))
      throw new Refusal(`${file}:${k + 1}: not an ipset save line (create or add)`);
  });
  return sets;
}

const SET_TYPES = new Set(['hash:ip', 'hash:net', 'hash:ip,port', 'hash:net,port', 'bitmap:ip']);

/** The packets `-m set --match-set NAME FLAGS` matches, from the set's members (B.3). */
export function setRegion(set: IpSet, name: string, flags: string): Box[] {
  if (!SET_TYPES.has(set.type)) cannotModel(`set ${name}: type ${set.type} (nfv reads ${[...SET_TYPES].join(', ')})`);
  const dirs = flags.split(',');
  if (!dirs.every((d) => d === 'src' || d === 'dst')) refuse(`--match-set ${name} ${flags}: flags are src or dst`);
  const ported = set.type.endsWith(',port');
  const region = set.members.flatMap((m) => {
    const [addr, port] = m.split(',') as [string, string | undefined];
    const a = addr.includes('-')
      ? rangeRegion(addr, dirs[0] === 'src' ? SRC : DST)
      : [addressBox(addr, dirs[0] === 'src' ? SRC : DST)];
    if (!ported) return a;
    const pm = /^(tcp|udp):(\d{1,5}(?:-\d{1,5})?)$/.exec(port ?? '');
    if (!pm) return cannotModel(`set ${name}: member ${m} has a port nfv cannot read (tcp:N or udp:N)`);
    const dim = (dirs[1] ?? dirs[0]) === 'src' ? SPORT : DPORT;
    return intersectRegions(a, portRegion(pm[2]!, pm[1] === 'tcp' ? 0 : 1, dim, '-'));
  });
  return region;
}
