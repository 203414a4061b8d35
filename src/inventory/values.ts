/**
 * Values as PuppetDB treats them: canonical JSON (sorted keys, compact, non-ASCII left as is) for hashes and
 * deep-equality matching, SHA-1 hashes, and timestamps (parsed leniently, compared as instants, written in UTC).
 */
import { createHash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  return `{${Object.keys(obj)
    .sort()
    .filter((k) => obj[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`)
    .join(',')}}`;
}

export const sha1 = (text: string) => createHash('sha1').update(text, 'utf8').digest('hex');

/**
 * Milliseconds since the epoch for what clj-time accepts: ISO-8601 with a zone or Z, with or without fractions,
 * a date alone (midnight UTC), a bare year; a number is already milliseconds. Undefined when unparseable.
 */
export function parseInstant(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value !== 'string') return undefined;
  const t = value.trim();
  if (/^\d{4}$/.test(t)) return Date.UTC(Number(t), 0, 1);
  if (/^\d{4}-\d{2}(-\d{2})?$/.test(t)) return Date.parse(`${t.length === 7 ? `${t}-01` : t}T00:00:00Z`);
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(t);
  if (!m) return undefined;
  const fraction = m[3] ? `.${m[3].slice(1, 4).padEnd(3, '0')}` : '';
  const zone = !m[4] || m[4].toUpperCase() === 'Z' ? 'Z' : m[4].includes(':') ? m[4] : `${m[4].slice(0, 3)}:${m[4].slice(3)}`;
  const ms = Date.parse(`${m[1]}T${m[2]!.length === 5 ? `${m[2]}:00` : m[2]}${fraction}${zone}`);
  return Number.isNaN(ms) ? undefined : ms;
}

/** `2011-01-01T15:00:00.000Z` */
export const utc = (ms: number) => new Date(ms).toISOString();

/** PostgreSQL's rendering of a timestamp inside JSON: `2011-01-01T15:00:01+00:00`, fractions only when non-zero. */
export function pgJsonTime(ms: number): string {
  const iso = new Date(ms).toISOString();
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 19)}${fraction ? `.${fraction}` : ''}+00:00`;
}
