/**
 * Identifiers as users give them, in a path segment, a CLI argument or a query parameter: parsed here and nowhere
 * else, so that an empty or malformed id is always refused (never read as "the whole collection").
 */
import { badRequest, quote } from './errors.js';

const INT64_MAX = 2n ** 63n - 1n;

/** A numeric id: a non-empty decimal int64 that nfv can hand out (at most 2^53 - 1). */
export function parseId(name: string, text: string): number {
  if (!/^\d+$/.test(text)) throw badRequest(`${name}: ${quote(text)} is not an id (a decimal number)`);
  if (text.length > 19 || BigInt(text) > INT64_MAX)
    throw badRequest(`${name}: ${quote(text)} is out of the int64 range`);
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw badRequest(`${name}: ${text} is beyond the largest id nfv hands out (2^53 - 1)`);
  return n;
}

/** Why a string cannot name something addressed by a path (a host, a resource type or title), or undefined. */
export function nameProblem(text: string): string | undefined {
  if (text === '') return 'is empty';
  if (text === '.' || text === '..') return `${quote(text)} is a dot segment, not a name`;
  if (text.includes('/')) return `${quote(text)} contains "/"`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(text)) return `${quote(text)} contains a control character`;
  return undefined;
}

/** A string id: non-empty, never `.` or `..`, never containing `/`. */
export function parseName(name: string, text: string): string {
  const problem = nameProblem(text);
  if (problem) throw badRequest(`${name}: ${problem}`);
  return text;
}

/**
 * A Puppet resource title or a fact value in a path: any non-empty string. File paths (`/etc/passwd`) are the most
 * common titles, so `/`, dots and everything else are allowed; the request target's own rules (no empty or dot
 * segment) still apply to the segment that carries it, percent-encoded.
 */
export function parseTitle(name: string, text: string): string {
  if (text === '') throw badRequest(`${name}: is empty`);
  return text;
}

/** Path parameters that are names; every other path parameter is a numeric id. */
const NAME_PARAMS = new Set(['hid', 'type', 'hash', 'certname', 'fact', 'environment', 'mbean']);

export function parseParam(name: string, text: string): string | number {
  if (name === 'title' || name === 'value') return parseTitle(name, text);
  return NAME_PARAMS.has(name) ? parseName(name, text) : parseId(name, text);
}

/** A non-negative decimal count (limit, offset, from, to): no sign, no hex, no exponent, at most 2^53 - 1. */
export function parseCount(name: string, text: string): number {
  if (!/^\d{1,16}$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw badRequest(`${name}: ${quote(text)} is not a whole number from 0 to 2^53 - 1`);
  }
  return Number(text);
}
