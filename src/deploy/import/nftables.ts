/**
 * `nft -j list ruleset` (libnftables JSON, schema 1) read into a `LiveRuleset` (firewall-io.md B.6): tables of
 * families ip and inet (ip6, arp, bridge ignored, netdev ingress chains composed in front), base filter chains at
 * the forward hook (input with --chain INPUT) composed in priority order, named sets resolved, rules' expressions
 * read as regions like iptables lines. JSON has no line numbers: a rule is named `family table/chain/handle N`.
 */
import { badRequest, quote } from '../../model/errors.js';
import { MAX_IMPORT_LINES } from '../../model/limits.js';
import { DPORT, DST, PROTO, SPORT, SRC, UNIVERSE, type Box } from '../../model/space.js';
import { parseJson } from '../../model/codec.js';
import {
  Refusal,
  addressBox,
  cannotModel,
  complement,
  interfaceRegion,
  portRegion,
  protocolOf,
  rangeRegion,
  refuse,
} from './matches.js';
import type { InterfaceMap } from './routes.js';
import type { ImportOptions } from './iptables.js';
import { nftNatLine, readNats, type NatLine, type NatReading } from './nat.js';
import {
  UNIVERSE_REGION,
  intersectRegions,
  withBounds,
  type LiveChain,
  type LiveRule,
  type LiveRuleset,
} from './ruleset.js';

type Json = unknown;
const isRecord = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);
const keyOf = (o: Record<string, Json>) => Object.keys(o)[0]!;

/** One condition's region, or an unknown one said, or nothing for an IPv6-only condition. */
interface Reading {
  region?: Box[];
  unknown?: string;
  empty?: string;
  newConnection?: boolean;
  /** The condition keeps the rule to TCP and UDP (then `th` ports are exact). */
  tcpUdp?: boolean;
}

const PROTOS = new Map([
  ['tcp', 0],
  ['udp', 1],
]);

/** A right-hand value as a list of items: a set, a named set's elements, or one value. */
function items(right: Json, sets: Map<string, Json[]>): Json[] {
  if (typeof right === 'string' && right.startsWith('@')) {
    const set = sets.get(right.slice(1));
    if (!set) refuse(`set ${right} is not in the dump`);
    return set!;
  }
  if (isRecord(right) && 'set' in right) return Array.isArray(right.set) ? right.set : [right.set];
  if (Array.isArray(right)) return right;
  return [right];
}

/** One address item: `A`, `{prefix: {addr, len}}`, `{range: [A, B]}`. */
function addressItem(v: Json, at: number): Box[] {
  if (typeof v === 'string') return [addressBox(v, at)];
  if (isRecord(v) && isRecord(v.prefix)) return [addressBox(`${String(v.prefix.addr)}/${String(v.prefix.len)}`, at)];
  if (isRecord(v) && Array.isArray(v.range)) {
    return rangeRegion(`${String(v.range[0])}-${String(v.range[1])}`, at);
  }
  if (isRecord(v) && 'elem' in v && isRecord(v.elem)) return addressItem(v.elem.val, at);
  return refuse(`${JSON.stringify(v).slice(0, 60)}: not an IPv4 address, prefix or range`);
}

function portItem(v: Json, proto: number, dim: number): Box[] {
  if (typeof v === 'number') return portRegion(String(v), proto, dim);
  if (isRecord(v) && Array.isArray(v.range))
    return portRegion(`${String(v.range[0])}-${String(v.range[1])}`, proto, dim, '-');
  if (isRecord(v) && 'elem' in v && isRecord(v.elem)) return portItem(v.elem.val, proto, dim);
  return refuse(`${JSON.stringify(v).slice(0, 60)}: not a port or port range`);
}

/** What a payload or meta left side is: a dimension of the packet space, or something nfv does not model. */
type Field =
  | { kind: 'address'; at: number; mask?: string }
  | { kind: 'port'; dim: number; protos: number[] }
  | { kind: 'protocol' }
  | { kind: 'nfproto' }
  | { kind: 'ip6' }
  | { kind: 'iface'; input: boolean; name: string }
  | { kind: 'ctstate' }
  | { kind: 'tcpflags'; mask: string[] }
  | { kind: 'other'; what: string };

function fieldOf(left: Json): Field {
  if (!isRecord(left)) return { kind: 'other', what: JSON.stringify(left).slice(0, 40) };
  if (isRecord(left['&']) || Array.isArray(left['&'])) {
    const [inner, mask] = left['&'] as [Json, Json];
    const f = fieldOf(inner);
    if (f.kind === 'address' && typeof mask === 'string') return { ...f, mask };
    if (f.kind === 'tcpflags') return { kind: 'tcpflags', mask: (Array.isArray(mask) ? mask : [mask]).map(String) };
    return { kind: 'other', what: 'a masked field' };
  }
  if (isRecord(left.payload)) {
    const { protocol, field } = left.payload as { protocol?: string; field?: string };
    if (protocol === 'ip' && (field === 'saddr' || field === 'daddr'))
      return { kind: 'address', at: field === 'saddr' ? SRC : DST };
    if (protocol === 'ip' && field === 'protocol') return { kind: 'protocol' };
    if (protocol === 'ip6') return { kind: 'ip6' };
    if ((protocol === 'tcp' || protocol === 'udp' || protocol === 'th') && (field === 'sport' || field === 'dport'))
      return {
        kind: 'port',
        dim: field === 'sport' ? SPORT : DPORT,
        protos: protocol === 'udp' ? [1] : protocol === 'tcp' ? [0] : [0, 1],
      };
    if (protocol === 'tcp' && field === 'flags') return { kind: 'tcpflags', mask: [] };
    return { kind: 'other', what: `${protocol ?? '?'} ${field ?? '?'}` };
  }
  if (isRecord(left.meta)) {
    const key = String(left.meta.key);
    if (key === 'l4proto') return { kind: 'protocol' };
    if (key === 'nfproto' || key === 'protocol') return { kind: 'nfproto' };
    if (key === 'iifname' || key === 'oifname' || key === 'iif' || key === 'oif')
      return { kind: 'iface', input: key.startsWith('i'), name: key };
    return { kind: 'other', what: `meta ${key}` };
  }
  if (isRecord(left.ct) && left.ct.key === 'state') return { kind: 'ctstate' };
  if (isRecord(left.ct)) return { kind: 'other', what: `ct ${String(left.ct.key)}` };
  if (Array.isArray(left.concat)) return { kind: 'other', what: 'concat' };
  return { kind: 'other', what: keyOf(left) };
}

const at = (dims: number[], bounds: number[]) => [withBounds(UNIVERSE, dims, bounds)];

/** The region of one field equal to (one of) the given items. */
function regionOf(f: Field, right: Json, sets: Map<string, Json[]>, iface: InterfaceMap): Reading {
  const list = items(right, sets);
  switch (f.kind) {
    case 'address':
      if (f.mask) {
        return {
          region: list.flatMap((v) => {
            if (typeof v !== 'string') return refuse('a masked address compared to something else than an address');
            return [addressBox(`${v}/${f.mask}`, f.at)];
          }),
        };
      }
      return { region: list.flatMap((v) => addressItem(v, f.at)) };
    case 'port':
      return { region: list.flatMap((v) => f.protos.flatMap((p) => portItem(v, p, f.dim))) };
    case 'protocol': {
      let unknown: string | undefined;
      const region = list.flatMap((v) => {
        const r = protocolOf(String(v));
        if (r.approx) unknown = r.approx;
        return r.region;
      });
      const tcpUdp = list.every((v) => PROTOS.has(String(v)) || v === 6 || v === 17);
      return { region, ...(unknown ? { unknown } : {}), tcpUdp };
    }
    case 'nfproto':
      return list.some((v) => v === 'ipv4' || v === 'ip' || v === 2 || v === 0x0800)
        ? { region: UNIVERSE_REGION }
        : { empty: 'an IPv6 (or other family) rule: nfv models IPv4' };
    case 'ip6':
      return { empty: 'an IPv6 rule: nfv models IPv4' };
    case 'iface': {
      const regions = list.map((v) => interfaceRegion(String(v), f.input ? SRC : DST, iface));
      if (regions.some((r) => r === undefined))
        return { unknown: `${f.name} ${list.map(String).join(',')}: interface not mapped (--iface NAME=ADDRESSES)` };
      return { region: regions.flat() as Box[] };
    }
    case 'ctstate': {
      const states = list.map((v) => String(v).toLowerCase());
      if (states.some((s) => s === 'snat' || s === 'dnat') && !states.includes('new'))
        return { unknown: `ct state ${states.join(',')}: nfv cannot model NAT states` };
      return states.includes('new')
        ? { region: UNIVERSE_REGION, newConnection: true }
        : { empty: `ct state ${states.join(',')} matches no new connection`, newConnection: true };
    }
    case 'tcpflags': {
      const mask = new Set(f.mask.map((m) => m.toLowerCase()));
      if (mask.has('ecn') || mask.has('cwr') || !mask.size)
        return { unknown: 'tcp flags: nfv reads only masks without ECE/CWR' };
      const value = new Set(list.flatMap((v) => (Array.isArray(v) ? v : [v])).map((v) => String(v).toLowerCase()));
      const syn = mask.has('syn') ? value.size === 1 && value.has('syn') : value.size === 0;
      return syn
        ? { region: at([PROTO], [0, 0]), newConnection: true }
        : { empty: 'tcp flags: the first packet of a TCP connection is a SYN', newConnection: true };
    }
    default:
      return { unknown: `${f.what}: nfv cannot model it` };
  }
}

/** `concat` keys against concatenated elements: the union of each element's box. */
function concatRegion(fields: Field[], right: Json, sets: Map<string, Json[]>, iface: InterfaceMap): Reading {
  const region: Box[] = [];
  for (const item of items(right, sets)) {
    const parts = isRecord(item) && Array.isArray(item.concat) ? item.concat : refuse('a concatenation without parts');
    if (parts.length !== fields.length) refuse('a concatenated element of another length than its key');
    let r: Box[] = UNIVERSE_REGION;
    fields.forEach((f, k) => {
      const one = regionOf(f, parts[k], sets, iface);
      if (one.unknown || !one.region) refuse(`concatenated key part: ${one.unknown ?? one.empty}`);
      r = intersectRegions(r, one.region!);
    });
    region.push(...r);
  }
  return { region };
}

function matchReading(m: Record<string, Json>, sets: Map<string, Json[]>, iface: InterfaceMap): Reading {
  const op = String(m.op ?? '==');
  const left = m.left;
  let r: Reading;
  if (isRecord(left) && Array.isArray(left.concat)) {
    const fields = left.concat.map(fieldOf);
    const other = fields.find((f) => f.kind !== 'address' && f.kind !== 'port' && f.kind !== 'protocol');
    r = other ? { unknown: `concatenated key with ${other.kind}` } : concatRegion(fields, m.right, sets, iface);
  } else {
    const f = fieldOf(left);
    // `ct state established,related` is a bit test: any of the states.
    r = regionOf(f, m.right, sets, iface);
  }
  if (op === '==' || op === 'in') return r;
  if (op === '!=') {
    if (r.unknown) return r;
    if (r.empty) return { region: UNIVERSE_REGION, newConnection: r.newConnection };
    return { region: complement(r.region!), newConnection: r.newConnection };
  }
  return { unknown: `comparison ${op}: nfv reads ==, != and sets` };
}

const VERDICT_FREE = new Set(['counter', 'log', 'comment', 'mangle', 'notrack', 'continue', 'ct', 'meta', 'nftrace']);
const APPROX_STATEMENTS = new Set(['limit', 'quota', 'xt', 'fib', 'socket', 'osf', 'synproxy', 'numgen', 'hash']);

function ruleText(expr: Json[]): string {
  return JSON.stringify(expr).slice(0, 300);
}

/** The rule set of an `nft -j list ruleset` document. */
export function readNftables(text: string, file: string, options: ImportOptions = {}): LiveRuleset {
  const doc = parseJson(text);
  if (!isRecord(doc) || !Array.isArray(doc.nftables))
    throw badRequest(`${file}: not nft JSON ({"nftables": [...]}, from nft -j list ruleset)`);
  const objects = doc.nftables.filter(isRecord);
  if (objects.length > MAX_IMPORT_LINES)
    throw badRequest(`${file}: ${objects.length} objects; nfv imports at most ${MAX_IMPORT_LINES}`);
  const iface = options.iface ?? new Map();
  const hook = (options.chain ?? 'forward').toLowerCase();
  const sets = new Map<string, Json[]>();
  const chains = new Map<string, LiveChain>();
  const bases: { chain: LiveChain; prio: number; netdev: boolean }[] = [];
  const notes: string[] = [];
  const natHooks = new Map<string, 'PREROUTING' | 'POSTROUTING'>();
  const natLines: { rule: LiveRule; line: NatLine }[] = [];
  const tableKey = (o: Record<string, Json>) => `${String(o.family)} ${String(o.table)}`;
  for (const o of objects) {
    const kind = keyOf(o);
    const v = o[kind];
    if (!isRecord(v)) continue;
    if ((kind === 'set' || kind === 'map') && typeof v.name === 'string')
      sets.set(String(v.name), Array.isArray(v.elem) ? v.elem : v.elem === undefined ? [] : [v.elem]);
    if (kind !== 'chain') continue;
    const family = String(v.family);
    const key = `${family} ${String(v.table)}/${String(v.name)}`;
    const policy = v.policy === 'drop' ? 'drop' : v.policy === 'accept' ? 'accept' : undefined;
    const chain: LiveChain = {
      key,
      name: String(v.name),
      rules: [],
      ...(v.hook ? { policy: policy ?? 'accept' } : {}),
    };
    chains.set(key, chain);
    const ours = family === 'ip' || family === 'inet';
    // --table: only the base chains of tables of that name decide (netdev ingress still sees every packet first).
    const named = options.table === undefined || String(v.table) === options.table;
    if (v.type === 'filter' && ours && v.hook === hook && named)
      bases.push({ chain, prio: Number(v.prio ?? 0), netdev: false });
    else if (v.type === 'filter' && family === 'netdev' && v.hook === 'ingress') {
      bases.push({ chain, prio: Number(v.prio ?? 0), netdev: true });
      notes.push(`netdev chain ${key} (ingress) composed in front: it sees every packet before forwarding`);
    } else if (v.hook && !ours && family !== 'netdev') notes.push(`${family} chain ${key} ignored (nfv models IPv4)`);
    else if (v.type === 'nat' && v.hook === 'prerouting' && ours) notes.push(`nat chain ${key}: checked for dnat`);
    if (v.type === 'nat' && ours && (v.hook === 'prerouting' || v.hook === 'postrouting'))
      natHooks.set(key, v.hook === 'prerouting' ? 'PREROUTING' : 'POSTROUTING');
  }
  const checked: LiveRule[] = [];
  let count = 0;
  for (const o of objects) {
    if (!isRecord(o.rule)) continue;
    const v = o.rule;
    const key = `${tableKey(v)}/${String(v.chain)}`;
    const chain = chains.get(key);
    count++;
    if (!chain) throw badRequest(`${file}: rule ${count} is in chain ${quote(key)}, which the dump does not declare`);
    const rule: LiveRule = {
      where: `${key}/handle ${String(v.handle ?? '?')}`,
      line: count,
      text: ruleText(Array.isArray(v.expr) ? v.expr : []),
      region: UNIVERSE_REGION,
      unknown: [],
      newConnection: false,
      notes: typeof v.comment === 'string' ? [`comment: ${v.comment}`] : [],
      verdict: { kind: 'none' },
    };
    const has = (name: string) => chains.has(`${tableKey(v)}/${name}`);
    const natHook = natHooks.get(key);
    const c: Context = { sets, iface, options, has, checked, ...(natHook ? { natHook } : {}), natLines };
    chain.rules.push(...readRule(rule, Array.isArray(v.expr) ? v.expr : [], c));
  }
  const nat = options.natAddress === undefined ? undefined : nftNat(options.natAddress, natLines, notes, iface);
  if (!bases.some((b) => !b.netdev))
    throw badRequest(
      `${file}: no base chain of type filter at hook ${hook} in an ip or inet ` +
        `${options.table === undefined ? 'table' : `table named ${options.table}`} (give --chain input for a host's ` +
        'own traffic, or --table)',
    );
  bases.sort((a, b) => Number(b.netdev) - Number(a.netdev) || a.prio - b.prio);
  return {
    file,
    chains,
    path: bases.map((b) => b.chain),
    lookup: (from, name) => chains.get(`${from.key.split('/')[0]}/${name}`),
    checked,
    ...(nat ? { nat } : {}),
    notes,
  };
}

/** The rules one JSON rule is: one, or one per element of a verdict map. */
interface Context {
  sets: Map<string, Json[]>;
  iface: InterfaceMap;
  options: ImportOptions;
  /** Whether the rule's table has a chain of that name. */
  has: (chain: string) => boolean;
  /** Lines off the path that the import judges (dnat). */
  checked: LiveRule[];
  /** With --nat-address: the hook of the rule's nat base chain, and where its translation goes (nat.ts). */
  natHook?: 'PREROUTING' | 'POSTROUTING';
  natLines?: { rule: LiveRule; line: NatLine }[];
}

function readRule(rule: LiveRule, expr: Json[], c: Context): LiveRule[] {
  const { sets, iface, options, checked } = c;
  let region: Box[] = UNIVERSE_REGION;
  let tcpUdp = false;
  let thPorts = false;
  try {
    for (const e of expr) {
      if (!isRecord(e)) refuse('an expression that is not an object');
      const kind = keyOf(e as Record<string, Json>);
      const v = (e as Record<string, Json>)[kind];
      if (kind === 'match' && isRecord(v)) {
        const r = matchReading(v, sets, iface);
        if (r.newConnection) rule.newConnection = true;
        if (r.tcpUdp) tcpUdp = true;
        const left = v.left;
        if (isRecord(left) && isRecord(left.payload) && left.payload.protocol === 'th') thPorts = true;
        if (r.unknown) rule.unknown.push(r.unknown);
        if (r.empty) {
          rule.notes.push(r.empty);
          region = [];
        } else if (r.region) region = intersectRegions(region, r.region);
      } else if (kind === 'accept') rule.verdict = { kind: 'accept' };
      else if (kind === 'drop' || kind === 'reject') rule.verdict = { kind: 'drop' };
      else if (kind === 'return') rule.verdict = { kind: 'return' };
      else if ((kind === 'jump' || kind === 'goto') && isRecord(v)) {
        const target = String(v.target);
        if (!c.has(target)) refuse(`${kind} ${target}: no chain ${target} in the table`);
        rule.verdict = { kind, chain: target };
      } else if (kind === 'queue') {
        rule.verdict = { kind: 'queue' };
        rule.unknown.push('queue: the verdict is taken in user space');
      } else if (kind === 'dnat' || kind === 'redirect' || kind === 'snat' || kind === 'masquerade') {
        const before = kind === 'dnat' || kind === 'redirect';
        checked.push(rule);
        if (options.natAddress !== undefined) {
          const line = c.natHook ? nftNatLine(rule.where, rule.text, expr, c.natHook) : undefined;
          if (!line) cannotModel(`${kind} outside a nat base chain at prerouting or postrouting (--nat-address)`);
          c.natLines!.push({ rule, line: line! });
          continue;
        }
        if (before && !options.ignoreNat)
          cannotModel(
            `${kind} changes the destination the filter sees; ` +
              'model it as a NAT node (--nat-address) or give --ignore-nat',
          );
        rule.notes.push(`${kind}: ${before ? 'ignored (--ignore-nat)' : 'after filtering'}`);
      } else if (kind === 'vmap' && isRecord(v)) return vmapRules(rule, region, v, sets, iface);
      else if (VERDICT_FREE.has(kind)) rule.notes.push(`${kind}: no verdict effect`);
      else if (APPROX_STATEMENTS.has(kind)) rule.unknown.push(`${kind}: nfv cannot model it`);
      else rule.unknown.push(`${kind}: nfv cannot model it`);
    }
    if (thPorts && !tcpUdp) rule.unknown.push('th ports also match other transport protocols (SCTP, DCCP)');
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    rule.refused = e.message;
    if (e.modelling) rule.modelling = true;
  }
  rule.region = region;
  return [rule];
}

/** A verdict map: one rule per element, in order; overlapping elements with different verdicts are refused. */
function vmapRules(
  rule: LiveRule,
  region: Box[],
  v: Record<string, Json>,
  sets: Map<string, Json[]>,
  iface: InterfaceMap,
): LiveRule[] {
  // A concatenated key (`ip saddr . tcp dport vmap { ... }`) reads each element as a concatenation.
  const key = v.key;
  const fields = isRecord(key) && Array.isArray(key.concat) ? key.concat.map(fieldOf) : undefined;
  const f = fields ? undefined : fieldOf(key);
  const data = v.data;
  const elems = isRecord(data) && Array.isArray(data.set) ? data.set : items(data, sets);
  const out: LiveRule[] = [];
  for (const el of elems) {
    if (!Array.isArray(el) || el.length !== 2 || !isRecord(el[1])) refuse('a verdict map element nfv cannot read');
    const [value, verdict] = el as [Json, Record<string, Json>];
    const r = fields ? concatRegion(fields, value, sets, iface) : regionOf(f!, value, sets, iface);
    if (r.unknown) refuse(`verdict map on ${r.unknown}`);
    const kind = keyOf(verdict);
    const known = ['accept', 'drop', 'reject', 'jump', 'goto', 'return'];
    if (!known.includes(kind)) refuse(`verdict map verdict ${kind}`);
    const target = isRecord(verdict[kind]) ? String((verdict[kind] as Record<string, Json>).target) : undefined;
    const mine = intersectRegions(region, r.region ?? []);
    for (const earlier of out)
      if (
        (earlier.verdict.kind !== kind || earlier.verdict.chain !== target) &&
        intersectRegions(earlier.region, mine).length
      )
        refuse('verdict map elements overlap with different verdicts (the kernel picks one)');
    out.push({
      ...rule,
      region: mine,
      unknown: [...rule.unknown],
      notes: [...rule.notes],
      verdict: kind === 'reject' ? { kind: 'drop' } : { kind: kind as 'accept', ...(target ? { chain: target } : {}) },
    });
  }
  return out;
}

/** With --nat-address: the nat base chains' translations as the NAT node (nat.ts), prerouting's first. */
function nftNat(
  address: string,
  lines: { rule: LiveRule; line: NatLine }[],
  notes: string[],
  iface: InterfaceMap,
): NatReading[] | undefined {
  const ordered = [...lines].sort(
    (a, b) => Number(a.line.hook === 'POSTROUTING') - Number(b.line.hook === 'POSTROUTING'),
  );
  const byWhere = new Map(ordered.map((l) => [l.rule.where, l.rule]));
  const { nats: nat, refusals } = readNats(
    address,
    ordered.map((l) => l.line),
    (where, note) => {
      byWhere.get(where)?.notes.unshift(note);
      notes.push(`${where}: ${note}`);
    },
    iface,
  );
  for (const f of refusals) Object.assign(byWhere.get(f.where) ?? {}, { refused: f.reason, modelling: true });
  return nat;
}
