/**
 * Address and port conventions shared by validation, the engine and the translators (engine.md B 1.10):
 * an address pattern is four octets, each 0..255 or -1 (any value), or `*` for all four; a port range is `*`, `N` or
 * `A-B` within 0..65535.
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

export const PORT_HINT = 'is not a port range (*, N or A-B within 0-65535)';
export const ADDRESS_HINT = 'is not an IPv4 address pattern (four octets 0-255 or -1, or *)';
