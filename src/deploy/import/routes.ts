/**
 * `--routes FILE`: the interfaces of a firewall resolved from its routing table, as fffuu (Iptables_Semantics) does
 * with its ipassmt: `ip route` (main table) and `ip addr` output, each interface mapped to the destinations routed
 * out of it by longest prefix match. `-o X` then keeps the destinations routed out of X and `-i X` the sources
 * behind X (its reverse path: nfv's model has no spoofed sources), exactly, as `--iface` does for a name it maps.
 */
import { rangeBlocks } from '../../model/address.js';
import { badRequest } from '../../model/errors.js';
import { MAX_IMPORT_LINES } from '../../model/limits.js';

/** `--iface NAME=CIDR[,CIDR...]` or a routes dump: the addresses behind each interface. */
export type InterfaceMap = Map<string, string[]>;

interface Route {
  lo: number;
  hi: number;
  length: number;
  metric: number;
  /** Empty for a route that sends its prefix out of no interface (unreachable, blackhole, ...). */
  dev: string;
  /** Line in the file, for the order of equal routes. */
  line: number;
  /** The gateway (`via A`): the neighbour a packet of the prefix goes through; none for a prefix on the link. */
  via?: number;
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
    const add = (p: string, name: string, metric = 0, via?: string) => {
      const { lo, length } = prefix(p, where);
      // Loopback is the box's own traffic: never a forwarded packet's interface, and INPUT's -i lo is said apart.
      const dev = name === 'lo' ? '' : name;
      const gateway = via === undefined ? {} : { via: prefix(`${via}/32`, where).lo };
      routes.push({ lo, hi: lo + 2 ** (32 - length) - 1, length, dev, metric, line: k, ...gateway });
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
    add(dest === 'default' ? '0.0.0.0/0' : dest, name, Number(opt('metric') ?? 0), opt('via'));
  });
  return routes;
}

/**
 * Each route with the address intervals it decides: the longest matching prefix wins, then the lowest metric, then
 * the route listed first, as the kernel chooses.
 */
function decided(listed: Route[]): { route: Route; free: [number, number][] }[] {
  const routes = [...listed].sort(
    (a, b) => b.length - a.length || a.metric - b.metric || a.line - b.line || a.lo - b.lo,
  );
  // Address intervals taken by a more specific (or better) route, sorted by start.
  const taken: [number, number][] = [];
  const out: { route: Route; free: [number, number][] }[] = [];
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
    if (free.length && r.dev) out.push({ route: r, free });
  }
  return out;
}

/** An address interval as the fewest CIDR prefixes, in order. */
const cidrs = (lo: number, hi: number) => rangeBlocks(lo, hi).map((b) => `${ipText(b.start)}/${b.length}`);

/** The interfaces of a routing table, each with the prefixes routed out of it. */
export function routeMap(text: string, file: string): InterfaceMap {
  const map: InterfaceMap = new Map();
  for (const { route, free } of decided(routesOf(text, file))) {
    const list = map.get(route.dev) ?? [];
    for (const [lo, hi] of free) list.push(...cidrs(lo, hi));
    map.set(route.dev, list);
  }
  return map;
}

/**
 * `--iface` lists read as a routing table (docs/firewalls.md): where one interface's prefix holds another's, each
 * address is behind the interface of its longest matching prefix, as the kernel routes it and `--routes` reads it;
 * a packet arrives by one interface only. The same prefix under two names is refused (which one the router uses is
 * not said). With `table` (the `--routes` text), the lists are routes added to it: a name they give replaces that
 * name's routes, and a prefix they give replaces the table's routes of that prefix (the user's word wins). A name
 * whose addresses no other name takes keeps its list as given, so lists that do not overlap read as before; the
 * others become the prefixes left to them.
 */
export function longestPrefix(lists: InterfaceMap, table?: { text: string; file: string }): InterfaceMap {
  if (table !== undefined && lists.size === 0) return routeMap(table.text, table.file);
  const given: Route[] = [];
  let k = 0;
  const owner = new Map<string, string>();
  for (const [name, list] of lists)
    for (const text of list) {
      const { lo, length } = prefix(text, `--iface ${name}=${list.join(',')}`);
      const key = `${lo}/${length}`;
      const other = owner.get(key);
      if (other !== undefined && other !== name)
        throw badRequest(
          `--iface ${other} and --iface ${name} both name ${ipText(lo)}/${length}: ` +
            'a router routes a prefix out of one interface; give it to one of them',
        );
      owner.set(key, name);
      // After every line of a table: the order of routes alike (none are: their prefixes are taken out of it).
      given.push({ lo, hi: lo + 2 ** (32 - length) - 1, length, dev: name, metric: 0, line: MAX_IMPORT_LINES + k++ });
    }
  const routes =
    table === undefined
      ? given
      : [
          ...routesOf(table.text, table.file).filter((r) => !lists.has(r.dev) && !owner.has(`${r.lo}/${r.length}`)),
          ...given,
        ];
  const out: InterfaceMap = new Map();
  const free = new Map<string, [number, number][]>();
  for (const { route, free: f } of decided(routes)) {
    free.set(route.dev, [...(free.get(route.dev) ?? []), ...f]);
    // A name of the table only: its prefixes as routeMap lists them.
    if (!lists.has(route.dev))
      out.set(route.dev, [...(out.get(route.dev) ?? []), ...f.flatMap(([lo, hi]) => cidrs(lo, hi))]);
  }
  const own = new Map<string, [number, number][]>();
  for (const r of given) own.set(r.dev, [...(own.get(r.dev) ?? []), [r.lo, r.hi]]);
  for (const [name, list] of lists) {
    const whole = merged(own.get(name) ?? []);
    const left = merged(free.get(name) ?? []);
    const kept = whole.length === left.length && whole.every(([lo, hi], k) => lo === left[k]![0] && hi === left[k]![1]);
    out.set(name, kept ? list : left.flatMap(([lo, hi]) => cidrs(lo, hi)));
  }
  return out;
}

/** Intervals sorted and joined where they touch or overlap. */
function merged(intervals: [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [lo, hi] of [...intervals].sort((a, b) => a[0] - b[0] || a[1] - b[1])) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

/** MAC address (lower case) -> the source prefixes whose packets arrive with it as their Ethernet source. */
export type MacMap = Map<string, string[]>;

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

/** `ip neigh show` text: each IPv4 neighbour with a link-layer address, as address -> MAC. */
function neighboursOf(text: string, file: string): Map<number, string> {
  const lines = text.split('\n');
  if (lines.length > MAX_IMPORT_LINES)
    throw badRequest(`${file}: ${lines.length} lines; nfv reads at most ${MAX_IMPORT_LINES}`);
  const out = new Map<number, string>();
  lines.forEach((raw, k) => {
    const line = raw.replace(/\r$/, '').trim();
    const where = `${file}:${k + 1}`;
    if (line === '' || line.startsWith('#')) return;
    const w = line.split(/\s+/);
    if (w[0]!.includes(':')) return; // IPv6: nfv models IPv4
    const at = w.indexOf('lladdr');
    // FAILED, INCOMPLETE: no address known, so no packet of the table's to say anything of.
    if (at < 0) {
      if (!w.includes('dev')) throw badRequest(`${where}: not an ip neigh line (ADDRESS dev NAME lladdr MAC ...)`);
      return;
    }
    const mac = w[at + 1]?.toLowerCase() ?? '';
    if (!MAC.test(mac)) throw badRequest(`${where}: ${w[at + 1] ?? '(none)'} is not a MAC address (aa:bb:cc:dd:ee:ff)`);
    const addr = prefix(`${w[0]!}/32`, where).lo;
    const known = out.get(addr);
    if (known !== undefined && known !== mac)
      throw badRequest(`${where}: ${w[0]} has two MAC addresses (${known} and ${mac}); give one table`);
    out.set(addr, mac);
  });
  return out;
}

/**
 * `--neighbours FILE` with `--routes FILE`: the Ethernet source each source address arrives with. A packet from S
 * comes in by the route to S (no spoofing, as for `-i`), from its gateway when the route has one, else from S
 * itself on the link; its source MAC is that neighbour's in the `ip neigh` table. A source whose last hop the table
 * does not list is under no MAC: the premise (docs/SEMANTICS.md) is that the table lists every neighbour that sends
 * with a MAC the rules name.
 */
export function macMap(routes: string, neighbours: string, routesFile: string, neighFile: string): MacMap {
  const neigh = neighboursOf(neighbours, neighFile);
  const map: MacMap = new Map();
  const put = (mac: string, lo: number, hi: number) => {
    const list = map.get(mac) ?? [];
    list.push(...cidrs(lo, hi));
    map.set(mac, list);
  };
  const table = decided(routesOf(routes, routesFile));
  for (const { route, free } of table) {
    if (route.via !== undefined) {
      const mac = neigh.get(route.via);
      if (mac !== undefined) for (const [lo, hi] of free) put(mac, lo, hi);
      continue;
    }
    // On the link: each neighbour within the route's own intervals is its own last hop.
    for (const [addr, mac] of neigh) if (free.some(([lo, hi]) => addr >= lo && addr <= hi)) put(mac, addr, addr);
  }
  return map;
}

const ipText = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 0xff).join('.');
