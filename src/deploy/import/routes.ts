/**
 * `--routes FILE`: the interfaces of a firewall resolved from its routing table, as fffuu (Iptables_Semantics) does
 * with its ipassmt: `ip route` (main table) and `ip addr` output, each interface mapped to the destinations routed
 * out of it by longest prefix match. `-o X` then keeps the destinations routed out of X and `-i X` the sources
 * behind X (its reverse path: nfv's model has no spoofed sources), exactly, as `--iface` does for a name it maps.
 */
import { rangeBlocks } from '../../model/address.js';
import { badRequest } from '../../model/errors.js';
import { MAX_IMPORT_LINES } from '../../model/limits.js';
import type { InterfaceMap } from './matches.js';

interface Route {
  lo: number;
  hi: number;
  length: number;
  metric: number;
  /** Empty for a route that sends its prefix out of no interface (unreachable, blackhole, ...). */
  dev: string;
  /** Line in the file, for the order of equal routes. */
  line: number;
}

/** Route types; all but unicast forward nothing out of an interface (they drop, or deliver to the box itself). */
const TYPES = new Set('unicast local broadcast unreachable blackhole prohibit throw nat anycast multicast'.split(' '));

function prefix(text: string, where: string): { lo: number; length: number } {
  const m = /^(\d{1,3}(?:\.\d{1,3}){0,3})(?:\/(\d{1,2}))?$/.exec(text);
  const octets = m ? m[1]!.split('.').map(Number) : [];
  const length = m?.[2] === undefined ? 32 : Number(m[2]);
  if (!m || octets.some((o) => o > 255) || length > 32)
    throw badRequest(`${where}: ${text} is not an IPv4 prefix (A.B.C.D/P or default)`);
  while (octets.length < 4) octets.push(0);
  const n = ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
  const size = 2 ** (32 - length);
  return { lo: n - (n % size), length };
}

/** The routes of `ip route` / `ip addr` text, other tables and IPv6 skipped. */
function routesOf(text: string, file: string): Route[] {
  const lines = text.split('\n');
  if (lines.length > MAX_IMPORT_LINES)
    throw badRequest(`${file}: ${lines.length} lines; nfv reads at most ${MAX_IMPORT_LINES}`);
  const routes: Route[] = [];
  // `ip addr`: the interface of the `N: NAME: <FLAGS>` line above, for its `inet A/P` lines.
  let dev: string | undefined;
  lines.forEach((raw, k) => {
    const line = raw.replace(/\r$/, '').trim();
    const where = `${file}:${k + 1}`;
    if (line === '' || line.startsWith('#')) return;
    const add = (p: string, name: string, metric = 0) => {
      const { lo, length } = prefix(p, where);
      // Loopback is the box's own traffic: never a forwarded packet's interface, and INPUT's -i lo is said apart.
      const dev = name === 'lo' ? '' : name;
      routes.push({ lo, hi: lo + 2 ** (32 - length) - 1, length, dev, metric, line: k });
    };
    const header = /^\d+:\s+([^\s:@]+)(?:@\S+)?:?\s+(.*)$/.exec(line);
    if (header) {
      dev = header[1]!;
      // `ip -o addr`: the address on the same line as the interface.
      const inet = /\binet\s+(\S+)(?:\s+peer\s+(\S+))?/.exec(header[2]!);
      if (inet) add(inet[2] ?? inet[1]!, dev);
      return;
    }
    if (/^(inet6|link\/|valid_lft|altname)\b/.test(line)) return;
    const inet = /^inet\s+(\S+)(?:\s+peer\s+(\S+))?/.exec(line);
    if (inet) {
      if (dev === undefined) throw badRequest(`${where}: an inet line before its interface (N: NAME: ...)`);
      add(inet[2] ?? inet[1]!, dev);
      return;
    }
    const w = line.split(/\s+/);
    const type = TYPES.has(w[0]!) ? w.shift()! : 'unicast';
    const dest = w.shift();
    if (dest === undefined) throw badRequest(`${where}: not an ip route or ip addr line`);
    if (dest.includes(':')) return; // IPv6: nfv models IPv4
    const opt = (name: string) => {
      const at = w.indexOf(name);
      return at < 0 ? undefined : w[at + 1];
    };
    const table = opt('table');
    if (table !== undefined && table !== 'main') return;
    // Unreachable, blackhole, local ...: the prefix leaves by no interface, and no shorter route takes it.
    if (type !== 'unicast') return add(dest === 'default' ? '0.0.0.0/0' : dest, '', Number(opt('metric') ?? 0));
    if (w.includes('nexthop') || /^nexthop\b/.test(lines[k + 1]?.trim() ?? ''))
      throw badRequest(`${where}: a multipath route (nfv cannot say by which of its interfaces a packet leaves)`);
    const name = opt('dev');
    if (name === undefined) throw badRequest(`${where}: a route without dev NAME`);
    add(dest === 'default' ? '0.0.0.0/0' : dest, name, Number(opt('metric') ?? 0));
  });
  return routes;
}

/**
 * The interfaces of a routing table, each with the prefixes routed out of it: the longest matching prefix wins,
 * then the lowest metric, then the route listed first, as the kernel chooses.
 */
export function routeMap(text: string, file: string): InterfaceMap {
  const routes = routesOf(text, file).sort(
    (a, b) => b.length - a.length || a.metric - b.metric || a.line - b.line || a.lo - b.lo,
  );
  // Address intervals taken by a more specific (or better) route, sorted by start.
  const taken: [number, number][] = [];
  const map: InterfaceMap = new Map();
  for (const r of routes) {
    const free: [number, number][] = [];
    let at = r.lo;
    for (const [lo, hi] of taken) {
      if (hi < at || lo > r.hi) continue;
      if (lo > at) free.push([at, lo - 1]);
      at = Math.max(at, hi + 1);
    }
    if (at <= r.hi) free.push([at, r.hi]);
    taken.push([r.lo, r.hi]);
    taken.sort((a, b) => a[0] - b[0]);
    if (!free.length || !r.dev) continue;
    const list = map.get(r.dev) ?? [];
    for (const [lo, hi] of free) for (const b of rangeBlocks(lo, hi)) list.push(`${ipText(b.start)}/${b.length}`);
    map.set(r.dev, list);
  }
  return map;
}

const ipText = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 0xff).join('.');
