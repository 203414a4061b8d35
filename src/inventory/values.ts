/**
 * Values as PuppetDB treats them: canonical JSON (sorted keys, compact, non-ASCII left as is) for hashes and
 * deep-equality matching, SHA-1 hashes, and timestamps (parsed leniently, compared as instants, written in UTC).
 */
import { createHash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  // Loops and concatenation rather than map/filter/join: a factset's hash is canonical JSON of ~150 leaves.
  if (Array.isArray(value)) {
    let out = '[';
    for (let k = 0; k < value.length; k++) out += (k ? ',' : '') + canonicalJson(value[k]);
    return `${out}]`;
  }
  const obj = value as Record<string, unknown>;
  let out = '{';
  for (const k of Object.keys(obj).sort()) {
    const v = obj[k];
    if (v === undefined) continue;
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/** A user's value as text: strings as they are, anything else as JSON (String() throws on {"toString": 1}). */
export const text = (value: unknown): string =>
  typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));

/**
 * A parsed JSON value as Clojure prints it in PuppetDB's messages: `["=" "failures" 1]`, `{"a" nil}`, or with
 * `keywords` the keys as keywords: `{:field "title", :order "asc"}`.
 */
export function clojure(value: unknown, keywords = false): string {
  if (value === null || value === undefined) return 'nil';
  if (Array.isArray(value)) return `[${value.map((v) => clojure(v, keywords)).join(' ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value).map(
      ([k, v]) => `${keywords ? `:${k}` : JSON.stringify(k)} ${clojure(v, keywords)}`,
    );
    return `{${entries.join(', ')}}`;
  }
  return JSON.stringify(value);
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
  const m = /^(\d{4})-(\d{2})(?:-(\d{2}))?(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(\.\d+)?(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(t);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((k) =>
    m[k] === undefined ? undefined : Number(m[k]),
  );
  const d = day ?? 1;
  // A real calendar date and time of day: Date.parse would take 2021-02-30 as 2 March.
  const date = new Date(Date.UTC(year!, month! - 1, d));
  if (month! < 1 || month! > 12 || d < 1 || date.getUTCMonth() !== month! - 1 || date.getUTCDate() !== d)
    return undefined;
  if (hour === undefined) return date.getTime();
  if (day === undefined) return undefined;
  if (hour > 23 || minute! > 59 || (second ?? 0) > 59) return undefined;
  const zoneText = m[8];
  let offset = 0;
  if (zoneText && zoneText.toUpperCase() !== 'Z') {
    const hh = Number(zoneText.slice(1, 3));
    const mm = Number(zoneText.slice(-2));
    if (hh > 23 || mm > 59) return undefined;
    offset = (zoneText[0] === '-' ? -1 : 1) * (hh * 60 + mm) * 60_000;
  }
  const ms = m[7] ? Number(m[7].slice(1, 4).padEnd(3, '0')) : 0;
  return Date.UTC(year!, month! - 1, d, hour, minute, second ?? 0, ms) - offset;
}

/** `2011-01-01T15:00:00.000Z` */
export const utc = (ms: number) => new Date(ms).toISOString();

/** PostgreSQL's rendering of a timestamp inside JSON: `2011-01-01T15:00:01+00:00`, fractions only when non-zero. */
export function pgJsonTime(ms: number): string {
  const iso = new Date(ms).toISOString();
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 19)}${fraction ? `.${fraction}` : ''}+00:00`;
}
