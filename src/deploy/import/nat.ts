/**
 * A router's translations as the model's NAT node (docs/SEMANTICS.md, "Port forwards and masquerading"): with
 * `--nat-address N`, the nat table's DNAT lines (PREROUTING, before the filter) and SNAT / MASQUERADE lines
 * (POSTROUTING, after it) become one NAT node N on the outside of the imported firewall, hiding the DNAT targets and
 * the translated source networks. What the model's NAT cannot say (ranges, port changes, REDIRECT, an address other
 * than N) is refused, naming the line; what it says more broadly than the kernel does is said on the line.
 */
import { parseAddress } from '../../model/address.js';
import { badRequest } from '../../model/errors.js';

/** What the NAT node is: its address and the patterns it hides, with the lines they came from. */
export interface NatReading {
  address: string;
  /** Octet patterns, each once, in the order the lines give them (DNAT targets, then source networks). */
  sources: string[];
  /** Each translating line read, and what it became. */
  forwards: { where: string; to: string }[];
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
  /** The destination ports the line matches, when a single port (for `--to-destination A:P`). */
  dport?: number;
  /** Conditions of the line other than -s / -d, said in the report: the model's NAT does not read them. */
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

/** More patterns than this for one line would make the NAT node unreadable; such a line is refused. */
const MAX_PATTERNS = 256;

/**
 * The NAT node the nat lines describe, or the refusals of lines it cannot model. `address` is `--nat-address`.
 * `said` collects what the report says about lines read more broadly than the kernel translates.
 */
export function readNat(
  address: string,
  lines: readonly NatLine[],
  said: (where: string, note: string) => void,
): { nat?: NatReading; refusals: NatRefusal[] } {
  const n = octetsOf(address);
  if (!n) throw badRequest(`natAddress: ${JSON.stringify(address)} is not an IPv4 address (--nat-address)`);
  const refusals: NatRefusal[] = [];
  const refuse = (l: NatLine, reason: string) => refusals.push({ where: l.where, reason });
  const sources: string[] = [];
  const add = (p: string) => {
    if (!sources.includes(p)) sources.push(p);
  };
  const nat: NatReading = { address, sources, forwards: [], masquerades: [] };
  const inPrefix = (a: number[], prefix: string) => {
    const [base, len = '32'] = prefix.split('/');
    const b = octetsOf(base!);
    if (!b) return false;
    const size = 2 ** (32 - Number(len));
    const v = (x: number[]) => x.reduce((s, y) => s * 256 + y, 0);
    return Math.floor(v(a) / size) === Math.floor(v(b) / size);
  };
  let target: { where: string; to: string } | undefined;
  for (const l of lines) {
    const conditions = l.conditions.length ? ` (${l.conditions.join(', ')})` : '';
    if (l.hook === 'PREROUTING') {
      if (l.target === 'REDIRECT') {
        refuse(l, `-j REDIRECT delivers to the router itself: the model's NAT forwards to the hosts it hides`);
        continue;
      }
      if (l.target !== 'DNAT') {
        refuse(l, `-j ${l.target} maps networks: the model's NAT forwards ${address} to single hosts`);
        continue;
      }
      if (l.destination && (l.destination.negated || !inPrefix(n, l.destination.value))) {
        refuse(
          l,
          `-j DNAT for ${l.destination.negated ? '! ' : ''}${l.destination.value}: not --nat-address ${address}`,
        );
        continue;
      }
      const m = /^(\d{1,3}(?:\.\d{1,3}){3})(?::(\d+))?$/.exec(l.to ?? '');
      if (!m || !octetsOf(m[1]!)) {
        refuse(l, `--to-destination ${l.to ?? '(none)'}: the model's NAT forwards to one address (no range)`);
        continue;
      }
      if (m[2] !== undefined && Number(m[2]) !== l.dport) {
        refuse(
          l,
          `--to-destination ${l.to}: the port changes (${l.dport ?? 'several ports'} to ${m[2]}); ` +
            "the model's NAT keeps ports",
        );
        continue;
      }
      // The model's NAT sends every packet to N on to each host it hides: one target keeps that a port forward.
      if (target && target.to !== m[1]) {
        refuse(
          l,
          `-j DNAT to ${m[1]}, where ${target.where} forwards to ${target.to}: the model's NAT sends what comes to ` +
            `${address} to each host it hides, so one router forwards to one host`,
        );
        continue;
      }
      target = { where: l.where, to: m[1]! };
      add(m[1]!);
      nat.forwards.push({ where: l.where, to: m[1]! });
      said(
        l.where,
        `port forward to ${m[1]}: the NAT node ${address} hides ${m[1]}; it sends every packet to ${address} from ` +
          `outside there${conditions ? `, not only those of this line${conditions}` : ''}` +
          (l.destination ? '' : `; no -d: read as to ${address}`),
      );
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
      if (l.toPorts !== undefined) {
        refuse(l, `--to-ports ${l.toPorts}: the kernel moves source ports there; the model's NAT keeps ports`);
        continue;
      }
      if (!l.source || l.source.negated) {
        refuse(
          l,
          `-j ${l.target} ${l.source ? `for ! -s ${l.source.value}` : 'without -s'}: the model's NAT hides ` +
            'given networks (give -s)',
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
      const as =
        l.target === 'MASQUERADE'
          ? `masquerade as ${address} (--nat-address: the outgoing interface's address)`
          : `source to ${address}`;
      said(
        l.where,
        `${as}: ` +
          `the NAT node hides ${l.source.value}; it translates every packet from there to outside what it hides` +
          (conditions ? `, not only those of this line${conditions}` : ''),
      );
    }
  }
  if (!refusals.length && !sources.length)
    throw badRequest(
      `natAddress: no DNAT, SNAT or MASQUERADE line is reached; nothing for a NAT node ${address} to hide`,
    );
  for (const s of sources) if (!parseAddress(s)) refusals.push({ where: address, reason: `${s}: not a pattern` });
  return refusals.length ? { refusals } : { nat, refusals };
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
  let dport: number | undefined;
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
      else {
        if (payload && payload.field === 'dport' && v.op === '==' && typeof v.right === 'number') dport = v.right;
        conditions.push(JSON.stringify(v).slice(0, 80));
      }
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
    ...(dport === undefined ? {} : { dport }),
  };
}
