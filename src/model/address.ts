/**
 * Address and port conventions shared by validation, the engine and the translators (engine.md B 1.10):
 * an address pattern is four octets, each 0..255 or -1 (any value), or `*` for all four; a port range is `*`, `N` or
 * `A-B` within 0..65535. A rule address (a firewall element's source or destination) may also be a CIDR prefix
 * `A.B.C.D/P`, P in 0..32 (an nfv extension, firewall-io.md B.4); node names and requirements stay patterns.
 */

/** Octets of an address pattern, -1 meaning any value; undefined when the text is not a pattern. */
export function parseAddress(text: string): number[] | undefined {
  const t = text.trim();
  if (t === '*') return [-1, -1, -1, -1];
  const parts = t.split('.');
  if (parts.length !== 4) return undefined;
  const octets = parts.map((p) => (/^(-1|\d{1,3})$/.test(p) ? Number(p) : NaN));
  return octets.every((o) => o === -1 || (o >= 0 && o <= 255)) ? octets : undefined;
}

export const isAddressPattern = (text: string) => parseAddress(text) !== undefined;

const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

/** A CIDR prefix's address (as a 32-bit number) and length, or undefined when the text is not `A.B.C.D/P`. */
function parseCidr(text: string): { value: number; length: number } | undefined {
  const m = CIDR.exec(text.trim());
  if (!m) return undefined;
  const octets = m.slice(1, 5).map(Number);
  const length = Number(m[5]);
  if (octets.some((o) => o > 255) || length > 32) return undefined;
  return { value: octets.reduce((v, o) => v * 256 + o, 0), length };
}

/** The bits of an address that a prefix of this length leaves to the host part. */
const hostBits = (value: number, length: number) => value % 2 ** (32 - length);

/**
 * The octet intervals of a rule address, `[lo0, hi0, ..., lo3, hi3]`: a pattern's octets (-1 is 0..255), or a
 * prefix's leading octets fixed, the octet the prefix cuts an aligned interval, the rest whole. Undefined when the
 * text is neither (see `ruleAddressProblem`).
 */
export function ruleAddressBounds(text: string): number[] | undefined {
  const octets = parseAddress(text);
  if (octets) return octets.flatMap((o) => (o === -1 ? [0, 255] : [o, o]));
  const cidr = parseCidr(text);
  if (!cidr || hostBits(cidr.value, cidr.length) !== 0) return undefined;
  const lo = cidr.value;
  const hi = lo + 2 ** (32 - cidr.length) - 1;
  return [3, 2, 1, 0].flatMap((k) => [Math.floor(lo / 256 ** k) % 256, Math.floor(hi / 256 ** k) % 256]);
}

/**
 * The fewest aligned blocks that cover the numbers `lo..hi` exactly, in order, each as its first number and its
 * prefix length within `bits` bits (an address range in 32 bits, an octet's interval in 8).
 */
export function rangeBlocks(lo: number, hi: number, bits = 32): { start: number; length: number }[] {
  const out: { start: number; length: number }[] = [];
  for (let at = lo; at <= hi;) {
    let size = 1;
    while (size < 2 ** bits && at % (2 * size) === 0 && at + 2 * size - 1 <= hi) size *= 2;
    out.push({ start: at, length: bits - Math.log2(size) });
    at += size;
  }
  return out;
}

const wholeOctet = (lo: number, hi: number) => lo === 0 && hi === 255;

/** The prefix length of octet intervals, or undefined when they are not a prefix. */
function prefixLength(bounds: readonly number[]): number | undefined {
  let k = 0;
  while (k < 4 && bounds[2 * k] === bounds[2 * k + 1]) k++;
  if (k === 4) return 32;
  const [lo, hi] = [bounds[2 * k]!, bounds[2 * k + 1]!];
  const size = hi - lo + 1;
  // An aligned power-of-two block in the first octet that is not one value, then only whole octets.
  if ((size & (size - 1)) !== 0 || lo % size !== 0) return undefined;
  for (let j = k + 1; j < 4; j++) if (!wholeOctet(bounds[2 * j]!, bounds[2 * j + 1]!)) return undefined;
  return 8 * k + (8 - Math.log2(size));
}

/**
 * Octet intervals `[lo0, hi0, ..., lo3, hi3]` for people: `*` (any address), CIDR when they are a prefix
 * (`10.0.0.0/8`, `10.1.2.128/25`, a single address without `/32`), and otherwise octet by octet, each a value, a
 * range or `*` (`10.*.0.1`, `10.0.0.5-9`), the notation of nmap's target lists.
 */
export function addressSetText(bounds: readonly number[]): string {
  const octets = [0, 1, 2, 3].map((k) => [bounds[2 * k]!, bounds[2 * k + 1]!] as const);
  if (octets.every(([lo, hi]) => wholeOctet(lo, hi))) return '*';
  const prefix = prefixLength(bounds);
  const base = octets.map(([lo]) => lo).join('.');
  if (prefix === 32) return base;
  if (prefix !== undefined) return `${base}/${prefix}`;
  return octets.map(([lo, hi]) => (wholeOctet(lo, hi) ? '*' : lo === hi ? String(lo) : `${lo}-${hi}`)).join('.');
}

/** A rule address as tables show it (`198.-1.-1.-1` is `198.0.0.0/8`); the text itself if it is not one. */
export function ruleAddressText(text: string): string {
  const bounds = ruleAddressBounds(text);
  return bounds ? addressSetText(bounds) : text;
}

export const RULE_ADDRESS_HINT =
  'is not an IPv4 address pattern (four octets 0-255 or -1, or *) or prefix (A.B.C.D/P, P 0-32)';

/**
 * Why a rule address is refused, or undefined when it is one. A prefix with bits set after its length
 * (`10.0.0.1/8`) is refused rather than read as its network: iptables would silently read it so, but the text
 * then says two things, and the rule would not mean what it shows.
 */
export function ruleAddressProblem(text: string): string | undefined {
  if (ruleAddressBounds(text) !== undefined) return undefined;
  const cidr = parseCidr(text);
  if (!cidr) return RULE_ADDRESS_HINT;
  const network = cidr.value - hostBits(cidr.value, cidr.length);
  const dotted = [3, 2, 1, 0].map((k) => Math.floor(network / 256 ** k) % 256).join('.');
  return `has bits set after its /${cidr.length} prefix (the network is ${dotted}/${cidr.length})`;
}

export interface PortRange {
  lo: number;
  hi: number;
}

export const ANY_PORT: PortRange = { lo: 0, hi: 65535 };

/** A port range; absent, `*` and VEREFOO's literal `null` mean any port. Undefined when the text is invalid. */
export function parsePorts(text: string | undefined): PortRange | undefined {
  const t = text?.trim();
  if (t === undefined || t === '' || t === '*' || t === 'null') return ANY_PORT;
  const m = /^(\d{1,5})(?:\s*-\s*(\d{1,5}))?$/.exec(t);
  if (!m) return undefined;
  const lo = Number(m[1]);
  const hi = m[2] === undefined ? lo : Number(m[2]);
  return lo <= hi && hi <= 65535 ? { lo, hi } : undefined;
}

/**
 * Ports constrain TCP and UDP only: traffic of another protocol has no ports, so a port condition never matches
 * it (ANY with ports is TCP and UDP with those ports). OTHER with a port condition would match nothing and is
 * refused: this says why, or undefined when the protocol and ports go together. A full range (`0-65535`) is no
 * condition, like `*`.
 */
export function portsProblem(protocol: string | undefined, ...ports: (string | undefined)[]): string | undefined {
  if ((protocol ?? 'ANY') !== 'OTHER') return undefined;
  const ported = ports.some((p) => {
    const range = parsePorts(p);
    return range !== undefined && (range.lo !== ANY_PORT.lo || range.hi !== ANY_PORT.hi);
  });
  return ported ? 'OTHER traffic has no ports: ports apply to TCP and UDP only (give *, or protocol ANY)' : undefined;
}

export const PORT_HINT = 'is not a port range (*, N or A-B within 0-65535)';
export const ADDRESS_HINT = 'is not an IPv4 address pattern (four octets 0-255 or -1, or *)';
