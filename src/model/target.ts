/**
 * A request target (`/adp/graphs/3?x=1`) as the CLI and serve mode receive it, parsed strictly and before any
 * normalisation: WHATWG URL parsing would resolve `%2e%2e` and drop empty segments, turning
 * `DELETE /adp/simulations/1/%2e%2e` into a delete of the whole collection. Here a dot segment, an empty segment,
 * bad percent-encoding and invalid UTF-8 are refused instead.
 */
import { badRequest, quote } from './errors.js';

export interface Target {
  /** The path as sent (still percent-encoded), for links. */
  path: string;
  /** Decoded path segments, none empty and none `.` or `..`. */
  segments: string[];
  query: URLSearchParams;
}

function decode(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw badRequest(`${what} ${quote(text)} is not valid percent-encoded UTF-8`);
  }
}

/** Parses a query string strictly: `+` is a space, every escape must decode to valid UTF-8. */
export function parseQueryString(text: string): URLSearchParams {
  const query = new URLSearchParams();
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = decode((eq < 0 ? pair : pair.slice(0, eq)).replace(/\+/g, ' '), 'query parameter');
    const value = eq < 0 ? '' : decode(pair.slice(eq + 1).replace(/\+/g, ' '), `query parameter ${key}:`);
    query.append(key, value);
  }
  return query;
}

export function parseTarget(target: string): Target {
  if (!target.startsWith('/') || target.startsWith('//')) {
    throw badRequest(`request target ${quote(target)} is not a path starting with a single /`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f#]/.test(target))
    throw badRequest(`request target ${quote(target)} contains a space, a control character or #`);
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  const segments = path === '/' ? [] : path.slice(1).split('/');
  const decoded = segments.map((raw) => {
    if (raw === '') throw badRequest(`request path ${quote(path)} has an empty segment (is an id missing?)`);
    const s = decode(raw, 'path segment');
    if (s === '.' || s === '..') throw badRequest(`request path ${quote(path)} has a dot segment ${quote(raw)}`);
    return s;
  });
  return { path, segments: decoded, query: parseQueryString(q < 0 ? '' : target.slice(q + 1)) };
}
