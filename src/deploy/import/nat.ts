/**
 * A router's translations as the model's NAT node (docs/SEMANTICS.md, "Port forwards and masquerading"): with
 * `--nat-address N`, the nat table's DNAT and REDIRECT lines (PREROUTING, before the filter) become the node's
 * forward table, first match as the kernel reads them, and its SNAT / MASQUERADE lines (POSTROUTING, after it) the
 * source networks it hides. What the node cannot say (address ranges, a port range moved, an address other than
 * N) is refused, naming the line; what it says more broadly than the kernel does is said on the line.
 */
import { parseAddress, ruleAddressProblem } from '../../model/address.js';
import { badRequest } from '../../model/errors.js';
import type { InterfaceMap } from './routes.js';

/** One entry of the NAT node's forward table (model: resources.ts ForwardType), with the line it came from. */
export interface NatForward {
  where: string;
  protocol: 'TCP' | 'UDP' | 'OTHER' | 'ANY';
  /** The sources it takes (`-s`); absent: every source outside what the NAT hides. */
  src?: string;
  /** The destinations it takes: `*` for a line without `-d`, a prefix for `-d` other than N; absent: N. */
  dst?: string;
  /** `A` or `A-B`; absent: every port. */
  dstPort?: string;
  to: string;
  /** The port the packet gets; absent: kept. */
  toPort?: string;
}

/** One entry of the NAT node's translate list (resources.ts TranslateType): an SNAT line's `-d` and ports. */
export interface NatTranslate {
  where: string;
  protocol: 'TCP' | 'UDP' | 'OTHER' | 'ANY';
  /** `-s`; absent: every source. */
  src?: string;
  dst: string;
  /** `A` or `A-B`; absent: every port. */
  dstPort?: string;
}

/** What the NAT node is: its address, its forward table and the patterns it hides, with the lines they came from. */
export interface NatReading {
  address: string;
  /** With `--nat-address IFACE=ADDR,...`: the interface whose translations these are (its neighbour's side). */
  interface?: string;
  /** Octet patterns of the translated source networks, each once, in the order the lines give them. */
  sources: string[];
  /** The forward table, first match: DNAT lines in the order the kernel meets them, less what a REDIRECT took. */
  forwards: NatForward[];
  /** SNAT / MASQUERADE by destination (`-d`): the only packets whose source becomes N; empty: every one. */
  translates: NatTranslate[];
  masquerades: { where: string; hides: string[] }[];
}

/** One line of the nat table, as nat.ts needs it: its place, text and target, whichever reader read it. */
export interface NatLine {
  where: string;
  text: string;
  /** DNAT, REDIRECT, NETMAP, SNAT, MASQUERADE (nft: dnat, redirect, snat, masquerade, upper-cased). */
  target: string;
  /** The hook: PREROUTING (before the filter) or POSTROUTING (after it). */
  hook: 'PREROUTING' | 'POSTROUTING';
  /** `-d` / `ip daddr` as written, when one. */
  destination?: { value: string; negated: boolean };
  /** `-s` / `ip saddr` as written, when one. */
  source?: { value: string; negated: boolean };
  /** `--to-destination` / `--to-source` / dnat `to` as written. */
  to?: string;
  /** `--to-ports` (MASQUERADE, REDIRECT) as written. */
  toPorts?: string;
  /** `-i` / `iifname` and `-o` / `oifname` as written, when one. */
  inInterface?: { value: string; negated: boolean };
  outInterface?: { value: string; negated: boolean };
  /** `-m addrtype --dst-type LOCAL`: to the router's own addresses (read as N). */
  local?: boolean;
  /** `-p` / the protocol of an nft port match, as written (tcp, udp, 6, ...). */
  protocol?: { value: string; negated: boolean };
  /** The destination port ranges the line matches (`--dport`, `--dports`, nft `th dport`), when it names some. */
  dports?: { ranges: [number, number][]; negated: boolean };
  /**
   * Conditions of the line other than -s, -d, -i, -o, ports and `--ctstate NEW` (the nat chains see only a
   * connection's first packet), said in the report: the model's NAT does not read them.
   */
  conditions: string[];
}

/** A line nat.ts cannot model: its refusal. */
export interface NatRefusal {
  where: string;
  reason: string;
}

/** The octets of an address, or undefined. */
const octetsOf = (a: string): number[] | undefined => {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a);
  if (!m) return undefined;
  const o = m.slice(1).map(Number);
  return o.every((x) => x <= 255) ? o : undefined;
};

/** An IPv4 prefix as octet patterns (a /28 is 16 addresses; a /20 is 16 patterns with a wildcard octet). */
export function prefixPatterns(prefix: string): string[] | undefined {
  const [address, len = '32'] = prefix.split('/');
  const o = octetsOf(address!);
  const p = Number(len);
  if (!o || !/^\d{1,2}$/.test(len) || p > 32) return undefined;
  const value = o.reduce((v, x) => v * 256 + x, 0);
  if (value % 2 ** (32 - p) !== 0) return undefined;
  // The octet the prefix cuts is enumerated; the octets after it are any (-1).
  const full = Math.floor(p / 8);
  const rest = p % 8;
  const head = o.slice(0, full);
  if (full === 4) return [o.join('.')];
  const tail = Array.from({ length: 3 - full }, () => '-1');
  const count = rest === 0 ? 1 : 2 ** (8 - rest);
  if (rest === 0) return [[...head, '-1', ...tail].join('.')];
  return Array.from({ length: count }, (_, k) => [...head, o[full]! + k, ...tail].join('.'));
}

type Proto = 'TCP' | 'UDP' | 'OTHER';
/** The packets a forwarding line matches: its protocols and destination port ranges (0-65535: any). */
interface Match {
  protocols: Proto[];
  ranges: [number, number][];
}
const ALL_PORTS: [number, number][] = [[0, 65535]];

/** The protocols and ports of a DNAT or REDIRECT line, or why the forward table cannot hold them. */
function forwardMatch(l: NatLine): Match | string {
  if (l.protocol?.negated) return `! -p ${l.protocol.value}: the forward table names the protocols it takes`;
  if (l.dports?.negated) return `! --dport: the forward table names the ports it takes`;
  if (l.dports?.ranges.some(([a, b]) => !(a >= 0 && a <= b && b <= 65535)))
    return `destination ports: not port ranges within 0-65535`;
  const p = (l.protocol?.value ?? 'all').toLowerCase();
  const protocols: Proto[] =
    p === 'tcp' || p === '6'
      ? ['TCP']
      : p === 'udp' || p === '17'
        ? ['UDP']
        : p === 'all' || p === '0'
          ? []
          : ['OTHER'];
  if (protocols[0] === 'OTHER' && l.dports) return `-p ${p} with ports: the model's ports are TCP's and UDP's`;
  if (!protocols.length) protocols.push(...(l.dports ? (['TCP', 'UDP'] as const) : (['TCP', 'UDP', 'OTHER'] as const)));
  return { protocols, ranges: l.dports ? l.dports.ranges : ALL_PORTS };
}

const rangeText = ([a, b]: [number, number]) => (a === b ? `${a}` : `${a}-${b}`);
const describe = (m: Match) =>
  `${m.protocols.join('/').toLowerCase()}${m.ranges === ALL_PORTS ? '' : ` port ${m.ranges.map(rangeText).join(',')}`}`;

/** Ranges less one range. */
function less(ranges: [number, number][], [a, b]: [number, number]): [number, number][] {
  return ranges.flatMap(([lo, hi]): [number, number][] => {
    if (b < lo || a > hi) return [[lo, hi]];
    const out: [number, number][] = [];
    if (lo < a) out.push([lo, a - 1]);
    if (hi > b) out.push([b + 1, hi]);
    return out;
  });
}

/**
 * The forward table entries of a line: its packets less those earlier lines took (first match), which it takes in
 * turn. One entry for the whole line where nothing earlier overlaps it, else one per protocol and range left.
 */
function claim(taken: Record<Proto, [number, number][]>, m: Match): Omit<NatForward, 'where' | 'to' | 'toPort'>[] {
  const left = m.protocols.map((p) => ({
    p,
    ranges: taken[p].reduce((rs, r) => less(rs, r), p === 'OTHER' ? ALL_PORTS : m.ranges),
  }));
  const whole = left.every((x) => JSON.stringify(x.ranges) === JSON.stringify(x.p === 'OTHER' ? ALL_PORTS : m.ranges));
  for (const p of m.protocols) taken[p].push(...(p === 'OTHER' ? ALL_PORTS : m.ranges));
  const port = (r: [number, number]) => (r[0] === 0 && r[1] === 65535 ? {} : { dstPort: rangeText(r) });
  if (whole) {
    const protocol = m.protocols.length === 1 ? m.protocols[0]! : 'ANY';
    // ANY with a port is TCP and UDP (docs/SEMANTICS.md); without one, every protocol.
    return m.ranges.map((r) => ({ protocol, ...port(r) }));
  }
  return left.flatMap(({ p, ranges }) => ranges.map((r) => ({ protocol: p, ...port(r) })));
}

/** More patterns than this for one line would make the NAT node unreadable; such a line is refused. */
const MAX_PATTERNS = 256;

/**
 * What the other interfaces hide may be more: every address but the outside's is three octets of 255 patterns each
 * (every address but a /24), which a masquerade out of an interface beside the default route's needs.
 */
const MAX_HIDDEN = 4 * MAX_PATTERNS;

/**
 * Octet pattern `p` less pattern `q` (-1: any octet), as patterns: `p` where they are disjoint, none where `q`
 * covers it, else `p` split on its first octet `q` fixes, keeping the 255 other values and narrowing the one left.
 */
export function patternLess(p: string, q: string): string[] {
  const [a, b] = [p.split('.'), q.split('.')];
  if (a.some((o, k) => o !== '-1' && b[k] !== '-1' && o !== b[k])) return [p];
  if (patternIn(p, q)) return [];
  const k = a.findIndex((o, j) => o === '-1' && b[j] !== '-1');
  const at = (v: string) => a.map((o, j) => (j === k ? v : o)).join('.');
  return [
    ...Array.from({ length: 256 }, (_, v) => v)
      .filter((v) => String(v) !== b[k])
      .map((v) => at(String(v))),
    ...patternLess(at(b[k]!), q),
  ];
}

/** The patterns that contain `q` (`q` with some of its octets made -1), `q` itself left out. */
function wider(q: string): string[] {
  const o = q.split('.');
  const out: string[] = [];
  for (let mask = 1; mask < 16; mask++)
    if (o.every((x, k) => !(mask & (1 << k)) || x !== '-1'))
      out.push(o.map((x, k) => (mask & (1 << k) ? '-1' : x)).join('.'));
  return out;
}

/**
 * Patterns `ps` less `q` where `q` is narrower than one of them: looked up among `q`'s at most 15 wider patterns, since
 * the chair's router routes hundreds of prefixes out of each side and a pairwise test was most of its import.
 */
function withoutNarrower(ps: string[], q: string): string[] {
  const present = new Set(ps);
  const over = new Set(wider(q).filter((w) => present.has(w)));
  return over.size ? ps.flatMap((p) => (over.has(p) ? patternLess(p, q) : [p])) : ps;
}

/**
 * Patterns past MAX_HIDDEN as fewer with the same union: the 256 patterns that differ in one octet only become one
 * with that octet -1, and patterns another holds are left out, until none merge. A default route's prefixes (0/1,
 * 128/2, ... around the other interfaces') are each its patterns: a home router's 1,263 and its LANs' 12, which
 * merged are every address but its VPN's /24, 765 patterns. Fewer than that are kept as the lines and routes give them.
 */
export function fewest(ps: string[]): string[] {
  if (ps.length <= MAX_HIDDEN) return ps;
  let out = [...new Set(ps)];
  for (let merged = true; merged;) {
    merged = false;
    for (let k = 3; k >= 0; k--) {
      // Patterns alike but for octet k, by the rest; a full group of 256 values becomes one pattern.
      const groups = new Map<string, Set<string>>();
      for (const p of out) {
        const o = p.split('.');
        if (o[k] === '-1') continue;
        const key = o.map((x, j) => (j === k ? '*' : x)).join('.');
        (groups.get(key) ?? groups.set(key, new Set()).get(key)!).add(o[k]!);
      }
      const full = new Set([...groups].filter(([, values]) => values.size === 256).map(([key]) => key));
      if (!full.size) continue;
      merged = true;
      const at = new Map<string, string>();
      out = out.flatMap((p) => {
        const o = p.split('.');
        const key = o.map((x, j) => (j === k ? '*' : x)).join('.');
        if (o[k] === '-1' || !full.has(key)) return [p];
        // The group's first pattern stands for it, at its place.
        if (at.has(key)) return [];
        const wide = key.replace('*', '-1');
        at.set(key, wide);
        return [wide];
      });
    }
  }
  // A pattern within another adds nothing (a /24 of a LAN under an octet the default route left whole).
  const wides = new Set(out.filter((p) => p.includes('-1')));
  return out.filter((p) => !wider(p).some((w) => wides.has(w)));
}

/** An earlier line's packets, which later lines do not get (first match) where its scope covers theirs. */
interface Taken {
  where: string;
  redirect: boolean;
  src?: string;
  dst?: string;
  match: Match;
}

/** Whether two ranges lists share a port. */
const overlap = (a: [number, number][], b: [number, number][]) =>
  a.some(([lo, hi]) => b.some(([x, y]) => lo <= y && x <= hi));

/** Octets `a` of a pattern within the octets `b` of another (-1: any octet). */
const octetsIn = (a: readonly string[], b: readonly string[]) => b.every((o, k) => o === '-1' || o === a[k]);

/** Octet pattern `p` within pattern `q`. */
const patternIn = (p: string, q: string) => octetsIn(p.split('.'), q.split('.'));

/**
 * Whether every pattern of `ps` is within some pattern of `qs`, as patternIn says, each pattern split once: a home
 * router's 765 inside patterns against as many sources split two strings per pair, seconds per import.
 */
function everyWithin(ps: readonly string[], qs: readonly string[]): boolean {
  const wide = qs.map((q) => q.split('.'));
  return ps.every((p) => {
    const a = p.split('.');
    return wide.some((b) => octetsIn(a, b));
  });
}

/** The interface of the map whose addresses hold `address` (the longest prefix), if one. */
function interfaceOf(iface: InterfaceMap, address: number[]): string | undefined {
  let best: [string, number] | undefined;
  for (const [name, list] of iface)
    for (const prefix of list) {
      const [base, len = '32'] = prefix.split('/');
      const b = octetsOf(base!);
      if (!b) continue;
      const size = 2 ** (32 - Number(len));
      const v = (x: number[]) => x.reduce((t, y) => t * 256 + y, 0);
      if (Math.floor(v(address) / size) === Math.floor(v(b) / size) && (!best || Number(len) > best[1]))
        best = [name, Number(len)];
    }
  return best?.[0];
}

/**
 * The NAT node the nat lines describe, or the refusals of lines it cannot model. `address` is `--nat-address`;
 * `iface` the interface map (--iface, --routes), which says the router's sides: the outside is the interface N is
 * routed out of, the hidden side every other (but lo). `said` collects what the report says about each line.
 */
export function readNat(
  address: string,
  lines: readonly NatLine[],
  said: (where: string, note: string) => void,
  iface: InterfaceMap = new Map(),
  outsideName?: string,
): { nat?: NatReading; refusals: NatRefusal[] } {
  const n = octetsOf(address);
  if (!n) throw badRequest(`natAddress: ${JSON.stringify(address)} is not an IPv4 address (--nat-address)`);
  const refusals: NatRefusal[] = [];
  const refuse = (l: NatLine, reason: string) => refusals.push({ where: l.where, reason });
  const sources: string[] = [];
  const add = (p: string) => {
    if (!sources.includes(p)) sources.push(p);
  };
  const nat: NatReading = {
    address,
    ...(outsideName === undefined ? {} : { interface: outsideName }),
    sources,
    forwards: [],
    translates: [],
    masquerades: [],
  };
  // Given with the address (IFACE=ADDR), the outside is that interface; else the one N is routed out of.
  const outside = outsideName ?? interfaceOf(iface, n);
  // The hidden side: the addresses routed out of every interface but the outside one and lo, as octet patterns.
  const inside = [...iface].filter(([name]) => name !== outside && name !== 'lo');
  const patternsOf = (list: readonly string[]) =>
    list.flatMap((a) => prefixPatterns(a.includes('/') ? a : `${a}/32`) ?? [a]);
  // Routing takes the longest prefix: what routes out of the outside (its own addresses under another interface's
  // default route, say) is not hidden, so each inside pattern loses the outside's narrower ones.
  const outsidePatterns = outside === undefined ? [] : patternsOf(iface.get(outside) ?? []);
  const insidePatterns = fewest(
    outsidePatterns.reduce(
      withoutNarrower,
      inside.flatMap(([, list]) => patternsOf(list)),
    ),
  );
  const insideText = inside.map(([name, list]) => `${name} ${list.join(',')}`).join('; ');
  /**
   * Every address behind an interface other than the outside is hidden. Asked by the notes said once every line is
   * read, so worked out once then: a home router's 765 inside patterns against its sources took seconds per note.
   */
  let hidden: boolean | undefined;
  const hiddenInside = () => (hidden ??= everyWithin(insidePatterns, sources));
  // Notes that depend on what the NAT hides in the end (is -i the outside exactly?), said after every line.
  const later: (() => void)[] = [];
  const taken: Taken[] = [];
  /** The SNAT / MASQUERADE lines by destination, and the others: a NAT node translates one way or the other. */
  const byDestination: NatLine[] = [];
  const everyDestination: NatLine[] = [];
  for (const l of lines) {
    const conditions = l.conditions.length ? ` (${l.conditions.join(', ')})` : '';
    if (l.hook === 'PREROUTING') {
      if (l.target !== 'DNAT' && l.target !== 'REDIRECT') {
        refuse(l, `-j ${l.target} maps networks: the model's NAT forwards ${address} to single hosts`);
        continue;
      }
      if (l.destination?.negated) {
        refuse(l, `-j ${l.target} for ! -d ${l.destination.value}: the forward table names the destinations it takes`);
        continue;
      }
      if (l.source?.negated) {
        refuse(l, `-j ${l.target} for ! -s ${l.source.value}: the forward table names the sources it takes`);
        continue;
      }
      const bad = [l.source, l.destination].find((a) => a && ruleAddressProblem(a.value));
      if (bad) {
        refuse(l, `${bad.value}: not an address or prefix nfv reads`);
        continue;
      }
      if (l.source && l.target === 'REDIRECT') {
        refuse(l, `-j REDIRECT for -s ${l.source.value}: the forward table cannot deliver some sources' packets`);
        continue;
      }
      const matched = forwardMatch(l);
      if (typeof matched === 'string') {
        refuse(l, matched);
        continue;
      }
      // Its destinations: N itself (-d N, or -m addrtype --dst-type LOCAL: the router's own addresses), another
      // prefix, or (no -d) any.
      const d = l.destination?.value.replace(/\/32$/, '');
      const dst = d === undefined ? (l.local ? undefined : '*') : d === address ? undefined : l.destination!.value;
      const src = l.source?.value.replace(/\/32$/, '');
      if (l.target === 'REDIRECT' && dst !== undefined) {
        // The table sends on or lets through; delivering packets addressed elsewhere to the router it cannot say.
        refuse(
          l,
          `-j REDIRECT ${l.destination ? `for -d ${l.destination.value}` : 'without -d'}: only packets to ` +
            `${address} are delivered to the NAT node; the table cannot deliver others`,
        );
        continue;
      }
      const inIf = l.inInterface;
      if (inIf && !inIf.negated && outside !== undefined && iface.has(inIf.value) && inIf.value !== outside) {
        refuse(
          l,
          `-i ${inIf.value}: packets from the hidden side (${address} is routed out of ${outside}); ` +
            'the NAT node forwards what comes from outside',
        );
        continue;
      }
      let to: string | undefined;
      let toPort: string | undefined;
      if (l.target === 'DNAT') {
        const m = /^(\d{1,3}(?:\.\d{1,3}){3})(?::(\d{1,5})(?:-(\d{1,5}))?)?$/.exec(l.to ?? '');
        if (!m || !octetsOf(m[1]!)) {
          refuse(l, `--to-destination ${l.to ?? '(none)'}: the model's NAT forwards to one address (no range)`);
          continue;
        }
        to = m[1]!;
        const [lo, hi] = [m[2], m[3] ?? m[2]].map((x) => (x === undefined ? undefined : Number(x)));
        if (lo !== undefined && lo === hi) toPort = String(lo);
        else if (lo !== undefined && !matched.ranges.every(([a, b]) => a >= lo && b <= hi!)) {
          // The kernel keeps a port already in the range and moves the others to one it picks.
          refuse(l, `--to-destination ${l.to}: a port range the line's ports are not all in; the kernel picks one`);
          continue;
        }
        if (toPort !== undefined && matched.protocols.includes('OTHER')) {
          refuse(l, `--to-destination ${l.to}: a port for packets without one (give -p tcp or -p udp)`);
          continue;
        }
      }
      // First match: earlier lines whose sources and destinations cover this one's take their packets from it;
      // a DNAT for fewer stays before it in the table; a REDIRECT for other destinations the table cannot say.
      const covers = (e: Taken) => (e.src === undefined || e.src === src) && (e.dst === '*' || e.dst === dst);
      const clash = taken.find(
        (e) =>
          e.redirect &&
          !covers(e) &&
          e.match.protocols.some((p) => matched.protocols.includes(p)) &&
          overlap(e.match.ranges, matched.ranges),
      );
      if (clash) {
        refuse(l, `an earlier REDIRECT (${clash.where}) takes some of its packets: the forward table cannot say which`);
        continue;
      }
      const record: Record<Proto, [number, number][]> = { TCP: [], UDP: [], OTHER: [] };
      for (const e of taken.filter(covers))
        for (const p of e.match.protocols) record[p].push(...(p === 'OTHER' ? ALL_PORTS : e.match.ranges));
      const entries = claim(record, matched);
      taken.push({
        where: l.where,
        redirect: l.target === 'REDIRECT',
        ...(src ? { src } : {}),
        ...(dst ? { dst } : {}),
        match: matched,
      });
      const scope = { ...(src === undefined ? {} : { src }), ...(dst === undefined ? {} : { dst }) };
      if (to !== undefined)
        for (const e of entries)
          nat.forwards.push({ where: l.where, ...e, ...scope, to, ...(toPort === undefined ? {} : { toPort }) });
      const what = describe(matched);
      const shadowed = entries.length ? '' : ' (every packet of it taken by earlier lines)';
      const scopeWords = [
        ...(src === undefined ? [] : [`from ${src}`]),
        ...(dst === undefined ? [] : [`to ${dst === '*' ? 'any address' : dst}`]),
      ];
      const scopeText = scopeWords.length ? ` (${scopeWords.join(', ')})` : '';
      later.push(() => {
        // -i the outside: exact when every address behind another interface is hidden (from outside = from there).
        const exactIn = inIf !== undefined && !inIf.negated && inIf.value === outside && hiddenInside();
        const open = [...(inIf && !exactIn ? [`${inIf.negated ? '! ' : ''}-i ${inIf.value}`] : []), ...l.conditions];
        const rest = open.length ? `, not only those of this line (${open.join(', ')})` : '';
        said(
          l.where,
          (to === undefined
            ? `redirect of ${what}${scopeText}${shadowed}: delivered to the router itself, the NAT node ` +
              `${address}, and forwarded nowhere`
            : `port forward of ${what}${scopeText} to ${to}${toPort === undefined ? '' : `:${toPort}`}` +
              `${shadowed}: the NAT node ${address} sends those packets from outside there`) +
            rest +
            (l.local ? `; --dst-type LOCAL: read as to ${address}` : '') +
            (inIf === undefined ? '; no -i: packets from the hidden side are not forwarded in the model' : ''),
        );
      });
    } else {
      if (l.target === 'SNAT') {
        const to = /^(\d{1,3}(?:\.\d{1,3}){3})$/.exec(l.to ?? '')?.[1];
        if (to !== address) {
          refuse(l, `-j SNAT --to-source ${l.to ?? '(none)'}: not --nat-address ${address} (one address, no ports)`);
          continue;
        }
      } else if (l.target !== 'MASQUERADE') {
        refuse(l, `-j ${l.target} after filtering: the model's NAT translates sources to ${address} only`);
        continue;
      }
      // A source port already in the range is kept (no clash: conntrack's); the others the kernel moves into it.
      const moved = /^(\d{1,5})[-:](\d{1,5})$/.exec(l.toPorts ?? '');
      if (l.toPorts !== undefined && (!moved || Number(moved[1]) >= Number(moved[2]) || Number(moved[2]) > 65535)) {
        refuse(l, `--to-ports ${l.toPorts}: the kernel moves source ports there; the model's NAT keeps ports`);
        continue;
      }
      const ports = moved
        ? `; source ports outside ${moved[1]}-${moved[2]} the kernel moves into it, the model keeps`
        : '';
      const as =
        l.target === 'MASQUERADE'
          ? `masquerade as ${address} (--nat-address: the outgoing interface's address)`
          : `source to ${address}`;
      const out = l.outInterface;
      if (l.destination && !l.destination.negated && !l.source) {
        // By destination (`-d X -j SNAT` without -s): the translate list, every source to X only. A line with -s
        // hides its -s as before (its -d said, not read).
        const matched = forwardMatch(l);
        const bad = [l.source, l.destination].find((a) => a && ruleAddressProblem(a.value));
        if (typeof matched === 'string' || bad) {
          refuse(l, typeof matched === 'string' ? matched : `${bad!.value}: not an address or prefix nfv reads`);
          continue;
        }
        const dst = l.destination.value.replace(/\/32$/, '');
        // The NAT node is outside the filter: it would translate a packet going in before the filter sees it, where
        // the kernel's POSTROUTING translates after.
        const via = octetsOf(l.destination.value.split('/')[0]!);
        const goesIn = via && outside !== undefined ? interfaceOf(iface, via) : undefined;
        if (goesIn !== undefined && goesIn !== outside) {
          refuse(
            l,
            `-j ${l.target} for -d ${l.destination.value}, routed out of ${goesIn}, not the outside ${outside}: ` +
              'the NAT node, outside the filter, would translate it before the filter, the kernel after',
          );
          continue;
        }
        for (const e of claim({ TCP: [], UDP: [], OTHER: [] }, matched))
          nat.translates.push({ where: l.where, ...e, dst });
        byDestination.push(l);
        const rest = [...(out ? [`${out.negated ? '! ' : ''}-o ${out.value}`] : []), ...l.conditions];
        said(
          l.where,
          `${as} by destination: the NAT node's translate list takes ${describe(matched)} from ` +
            `any source to ${dst}; other packets keep their source` +
            (rest.length ? `; every such packet, not only those of this line (${rest.join(', ')})` : '') +
            ports,
        );
        continue;
      }
      if (l.source?.negated) {
        refuse(l, `-j ${l.target} for ! -s ${l.source.value}: the model's NAT hides given networks`);
        continue;
      }
      if (!l.source) {
        // Everything leaving by the outside: the hidden side is what routes out of the other interfaces.
        if (!out || out.negated) {
          refuse(
            l,
            `-j ${l.target} without -s ${out ? `for ! -o ${out.value}` : 'or -o'}` +
              (l.destination ? ` (for -d ${l.destination.negated ? '! ' : ''}${l.destination.value} only)` : '') +
              ': the NAT node translates what leaves by one interface (give -o) or given networks (give -s)',
          );
          continue;
        }
        if (outside === undefined || !iface.has(out.value)) {
          refuse(
            l,
            `-j ${l.target} -o ${out.value} without -s: which sources it hides is what routes out of the other ` +
              `interfaces (give --routes FILE or --iface for each; ${address} must be routed out of ${out.value})`,
          );
          continue;
        }
        if (out.value !== outside) {
          refuse(
            l,
            `-j ${l.target} -o ${out.value}: translates what leaves by ${out.value}, but the NAT node ${address} ` +
              `is routed out of ${outside}: one outside interface per NAT node`,
          );
          continue;
        }
        if (!inside.length) {
          refuse(l, `-j ${l.target} -o ${out.value}: no other interface is mapped, so nothing is hidden behind it`);
          continue;
        }
        if (insidePatterns.length > MAX_HIDDEN || insidePatterns.some((p) => !parseAddress(p))) {
          refuse(l, `-o ${out.value}: the other interfaces' addresses are not ${MAX_HIDDEN} octet patterns or fewer`);
          continue;
        }
        insidePatterns.forEach(add);
        nat.masquerades.push({ where: l.where, hides: insidePatterns });
        everyDestination.push(l);
        said(
          l.where,
          `${as}: every packet leaving by ${out.value}; the NAT node hides what routes out of the other ` +
            `interfaces (${insideText})` +
            (conditions ? `, not only those of this line${conditions}` : '') +
            ports,
        );
        continue;
      }
      const patterns = prefixPatterns(l.source.value.includes('/') ? l.source.value : `${l.source.value}/32`);
      if (!patterns || patterns.length > MAX_PATTERNS) {
        refuse(l, `-s ${l.source.value}: not a prefix the NAT node can hide (at most ${MAX_PATTERNS} patterns)`);
        continue;
      }
      patterns.forEach(add);
      nat.masquerades.push({ where: l.where, hides: patterns });
      everyDestination.push(l);
      const hides = l.source.value;
      later.push(() => {
        // -o the outside: exact when every other side is hidden (to outside P is then to what leaves by it).
        const exactOut = out !== undefined && !out.negated && out.value === outside && hiddenInside();
        const dst = l.destination ? [`${l.destination.negated ? '! ' : ''}-d ${l.destination.value}`] : [];
        const rest = [
          ...(out && !exactOut ? [`${out.negated ? '! ' : ''}-o ${out.value}`] : []),
          ...dst,
          ...l.conditions,
        ];
        said(
          l.where,
          `${as}: ` +
            `the NAT node hides ${hides}; it translates every packet from there to outside what it hides` +
            (rest.length ? `, not only those of this line (${rest.join(', ')})` : '') +
            ports,
        );
      });
    }
  }
  if (byDestination.length && everyDestination.length)
    for (const l of byDestination)
      refuse(
        l,
        `-j ${l.target} for -d ${l.destination!.value} only, beside ${everyDestination[0]!.where}'s translation of ` +
          'every destination: one NAT node translates either by destination or everything it hides',
      );
  const forwarding = lines.find((l) => l.hook === 'PREROUTING');
  if (byDestination.length && forwarding)
    for (const l of byDestination)
      refuse(
        l,
        `-j ${l.target} for -d ${l.destination!.value} only, beside the port forward ${forwarding.where}: by ` +
          'destination the NAT node hides every source, and its table forwards only from outside what it hides',
      );
  // By destination, every source is the NAT's to translate (the entries say which packets): it hides any address.
  if (byDestination.length) add('-1.-1.-1.-1');
  for (const note of later) note();
  if (!refusals.length && !sources.length && !lines.some((l) => l.hook === 'PREROUTING'))
    throw badRequest(
      `natAddress: no DNAT, SNAT or MASQUERADE line is reached; nothing for a NAT node ${address} to hide`,
    );
  for (const s of sources) if (!parseAddress(s)) refusals.push({ where: address, reason: `${s}: not a pattern` });
  return refusals.length ? { refusals } : { nat, refusals };
}

/**
 * `--nat-address` as NAT node addresses: `ADDR` (one node, its outside the interface ADDR is routed out of) or
 * `IFACE=ADDR,IFACE2=ADDR2` (one node per interface, its outside that interface).
 */
export function natAddresses(spec: string): { address: string; interface?: string }[] {
  if (octetsOf(spec)) return [{ address: spec }];
  const out: { address: string; interface: string }[] = [];
  for (const part of spec.split(',')) {
    const m = /^([^=\s,]{1,15})=(\S+)$/.exec(part);
    if (!m || !octetsOf(m[2]!))
      throw badRequest(`natAddress: ${JSON.stringify(part)} is not ADDR or IFACE=ADDR (--nat-address)`);
    if (out.some((o) => o.interface === m[1] || o.address === m[2]))
      throw badRequest(`natAddress: ${JSON.stringify(part)} repeats an interface or address (--nat-address)`);
    out.push({ interface: m[1]!, address: m[2]! });
  }
  return out;
}

/**
 * The NAT nodes `--nat-address` names (natAddresses): one as readNat reads it, or one per interface, each reading
 * the lines that name its interface (PREROUTING `-i`, POSTROUTING `-o`). A line naming no interface given an
 * address is refused: which node translates it, the kernel decides by the route, the model by the node it crosses.
 */
export function readNats(
  spec: string,
  lines: readonly NatLine[],
  said: (where: string, note: string) => void,
  iface: InterfaceMap = new Map(),
): { nats?: NatReading[]; refusals: NatRefusal[] } {
  const given = natAddresses(spec);
  if (given.length === 1 && given[0]!.interface === undefined) {
    const { nat, refusals } = readNat(given[0]!.address, lines, said, iface);
    return nat ? { nats: [nat], refusals } : { refusals };
  }
  const refusals: NatRefusal[] = [];
  const groups = new Map(given.map((g) => [g.interface!, [] as NatLine[]]));
  const names = given.map((g) => g.interface!).join(', ');
  for (const l of lines) {
    const flag = l.hook === 'PREROUTING' ? '-i' : '-o';
    const named = l.hook === 'PREROUTING' ? l.inInterface : l.outInterface;
    const group = named && !named.negated ? groups.get(named.value) : undefined;
    if (group) group.push(l);
    else
      refusals.push({
        where: l.where,
        reason:
          named && !named.negated
            ? `${flag} ${named.value}: no address for it in --nat-address (give ${named.value}=ADDR beside ${names})`
            : `-j ${l.target} ${named ? `for ${flag} ! ${named.value}` : `without ${flag}`}: with a NAT node per ` +
              `interface (--nat-address ${spec}), each line names the interface (${flag}) whose node translates it`,
      });
  }
  const nats: NatReading[] = [];
  for (const g of given) {
    const mine = groups.get(g.interface!)!;
    // A line refused above says more than a node without lines: that is said when no line is.
    if (!mine.length && refusals.length) continue;
    if (!mine.length)
      throw badRequest(
        `natAddress: no nat line reached names ${g.interface} (-i or -o); nothing for its NAT node ${g.address}`,
      );
    const read = readNat(g.address, mine, said, iface, g.interface);
    refusals.push(...read.refusals);
    if (read.nat) nats.push(read.nat);
  }
  return refusals.length ? { refusals } : { nats, refusals };
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
const isObject = (v: Json | undefined): v is { [key: string]: Json } =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** An address as nft's JSON writes it: "10.0.0.1" or {"prefix": {"addr": "10.0.0.0", "len": 8}}. */
function nftAddress(v: Json | undefined): string | undefined {
  if (typeof v === 'string') return v;
  if (isObject(v) && isObject(v.prefix)) return `${String(v.prefix.addr)}/${String(v.prefix.len)}`;
  return undefined;
}

/** Port ranges as nft's JSON writes them: 80, {"range": [a, b]}, {"set": [...]} of those. */
function nftPorts(v: Json | undefined): [number, number][] | undefined {
  if (typeof v === 'number') return [[v, v]];
  if (isObject(v) && Array.isArray(v.range) && v.range.every((x) => typeof x === 'number'))
    return [[v.range[0] as number, v.range[1] as number]];
  if (isObject(v) && Array.isArray(v.set)) {
    const each = v.set.map(nftPorts);
    return each.every((x) => x !== undefined) ? each.flat() : undefined;
  }
  return undefined;
}

/**
 * One rule of an nft nat base chain as nat.ts reads it: its statement (dnat, redirect, snat, masquerade), its
 * `ip saddr` / `ip daddr` and single destination port, the rest of its matches as conditions (said, not read).
 */
export function nftNatLine(
  where: string,
  text: string,
  expr: readonly unknown[],
  hook: 'PREROUTING' | 'POSTROUTING',
): NatLine | undefined {
  let line: NatLine | undefined;
  const conditions: string[] = [];
  let source: NatLine['source'];
  let destination: NatLine['destination'];
  let protocol: NatLine['protocol'];
  let dports: NatLine['dports'];
  let inInterface: NatLine['inInterface'];
  let outInterface: NatLine['outInterface'];
  for (const e of expr as readonly Json[]) {
    if (!isObject(e)) continue;
    const kind = Object.keys(e)[0]!;
    const v = e[kind];
    if (kind === 'match' && isObject(v)) {
      const left = v.left;
      const payload = isObject(left) && isObject(left.payload) ? left.payload : undefined;
      const address = nftAddress(v.right);
      const negated = v.op === '!=';
      if (payload?.protocol === 'ip' && payload.field === 'saddr' && address && (v.op === '==' || negated))
        source = { value: address, negated };
      else if (payload?.protocol === 'ip' && payload.field === 'daddr' && address && (v.op === '==' || negated))
        destination = { value: address, negated };
      else if (payload && payload.field === 'dport' && (v.op === '==' || negated) && nftPorts(v.right)) {
        dports = { ranges: nftPorts(v.right)!, negated };
        if (payload.protocol === 'tcp' || payload.protocol === 'udp')
          protocol = { value: payload.protocol, negated: false };
      } else if (isObject(left) && isObject(left.meta) && left.meta.key === 'l4proto' && typeof v.right === 'string')
        protocol = { value: v.right, negated };
      else if (
        isObject(left) &&
        isObject(left.meta) &&
        (left.meta.key === 'iifname' || left.meta.key === 'oifname') &&
        typeof v.right === 'string' &&
        (v.op === '==' || negated)
      ) {
        if (left.meta.key === 'iifname') inInterface = { value: v.right, negated };
        else outInterface = { value: v.right, negated };
      } else if (
        isObject(left) &&
        isObject(left.ct) &&
        left.ct.key === 'state' &&
        (v.right === 'new' || JSON.stringify(v.right) === '["new"]') &&
        (v.op === '==' || v.op === 'in')
      ) {
        // nat chains see a connection's first packet only: `ct state new` holds for each.
      } else conditions.push(JSON.stringify(v).slice(0, 80));
    } else if (kind === 'dnat' || kind === 'snat' || kind === 'redirect' || kind === 'masquerade') {
      const s = isObject(v) ? v : {};
      const addr = typeof s.addr === 'string' ? s.addr : s.addr === undefined ? undefined : JSON.stringify(s.addr);
      const port = s.port === undefined ? '' : `:${typeof s.port === 'number' ? s.port : JSON.stringify(s.port)}`;
      line = {
        where,
        text,
        target: kind.toUpperCase(),
        hook,
        ...(addr === undefined ? {} : { to: `${addr}${kind === 'dnat' ? port : ''}` }),
        ...(kind !== 'dnat' && s.port !== undefined ? { toPorts: port.slice(1) } : {}),
        conditions,
      };
    }
  }
  if (!line) return undefined;
  return {
    ...line,
    ...(source ? { source } : {}),
    ...(destination ? { destination } : {}),
    ...(inInterface ? { inInterface } : {}),
    ...(outInterface ? { outInterface } : {}),
    ...(protocol ? { protocol } : {}),
    ...(dports ? { dports } : {}),
  };
}
