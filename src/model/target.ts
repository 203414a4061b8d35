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

/** The checks of a whole target: a path starting with one `/`, no space, control character or `#`. */
function checkTarget(target: string): void {
  if (!target.startsWith('/') || target.startsWith('//')) {
    throw badRequest(`request target ${quote(target)} is not a path starting with a single /`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f#]/.test(target))
    throw badRequest(`request target ${quote(target)} contains a space, a control character or #`);
}

/** A decoded path segment, refused when empty or a dot segment. */
function segmentOf(raw: string, path: string): string {
  if (raw === '') throw badRequest(`request path ${quote(path)} has an empty segment (is an id missing?)`);
  const s = decode(raw, 'path segment');
  if (s === '.' || s === '..') throw badRequest(`request path ${quote(path)} has a dot segment ${quote(raw)}`);
  return s;
}

export function parseTarget(target: string): Target {
  checkTarget(target);
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  const segments = path === '/' ? [] : path.slice(1).split('/');
  const decoded = segments.map((raw) => segmentOf(raw, path));
  return { path, segments: decoded, query: parseQueryString(q < 0 ? '' : target.slice(q + 1)) };
}

/**
 * A target whose first `n` path segments are the router's (parsed as parseTarget does) and whose rest, slashes and
 * empty segments included, is one value decoded once: PuppetDB routes a resource title so (`[#".*" :title]`), and
 * pypuppetdb sends `/resources/File//etc/passwd` unescaped. The rest's dot segments stay refused. Undefined when
 * there is no rest beyond one segment (parseTarget's case).
 */
export function parseTargetWithRest(target: string, n: number): Target | undefined {
  checkTarget(target);
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  const raw = path.slice(1).split('/');
  if (raw.length <= n + 1) return undefined;
  const rest = raw.slice(n);
  if (rest.every((r) => r === '')) return undefined;
  for (const r of rest) if (r !== '') segmentOf(r, path);
  const segments = [...raw.slice(0, n).map((r) => segmentOf(r, path)), decode(rest.join('/'), 'path segment')];
  return { path, segments, query: parseQueryString(q < 0 ? '' : target.slice(q + 1)) };
}
