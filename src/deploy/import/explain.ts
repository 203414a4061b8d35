/**
 * Which line decides one packet (issue 47 item 7, as Batfish's testFilters): the packet walked through the live
 * rule set's base chains as the kernel walks them, through user chains, gotos and RETURNs, each line that matches
 * it said in order (jumps, returns, lines without a verdict), then the deciding line with its file:line, or the
 * policy. The packet is the first of a connection, as every analysis reads a rule set (conntrack: NEW, TCP: SYN).
 *
 * A line whose match nfv cannot decide for this packet (an approximated condition, an interface the packet does
 * not name, a port the packet leaves open) ends the walk: the verdict is UNKNOWN and the line says on what.
 */
import { badRequest } from '../../model/errors.js';
import { MAX_IMPORT_DEPTH } from '../../model/limits.js';
import { DPORT, DST, PROTO, SPORT, SRC, UNIVERSE, regionSubtract, type Box } from '../../model/space.js';
import type { LiveChain, LiveRule, LiveRuleset } from './ruleset.js';

/** One packet: addresses, protocol (TCP, UDP or another, by name or number), ports, interfaces. */
export interface ExplainPacket {
  src: string;
  dst: string;
  /** `tcp`, `udp`, or another protocol's name or number. */
  proto: string;
  /** Absent: any port (then a line that matches some ports only cannot decide). */
  sport?: number;
  dport?: number;
  iif?: string;
  oif?: string;
}

export type StepKind = 'jump' | 'goto' | 'return' | 'end of chain' | 'no verdict' | 'decides' | 'policy' | 'unknown';

export interface Step {
  kind: StepKind;
  /** The chain the step is in (`filter/FORWARD`). */
  chain: string;
  /** `rules.v4:41` (nft: `table/chain/handle N`); the chain's name for a policy or the end of a chain. */
  where: string;
  file: string;
  /** The line in its file; 0 for a policy or the end of a chain. */
  line: number;
  text: string;
  /** Why the step could not be decided (`unknown`). */
  why?: string;
}

export interface Explanation {
  packet: ExplainPacket;
  verdict: 'ALLOW' | 'DENY' | 'UNKNOWN';
  /** The deciding step: a line, a policy, or the line nfv cannot decide. */
  decidedBy: Step;
  /** Every line the packet matched, in the order the kernel meets them, the deciding one last. */
  trace: Step[];
}

const FIELDS = ['src', 'dst', 'proto', 'sport', 'dport', 'iif', 'oif'];
const OCTETS = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/**
 * `src=A dst=B proto=tcp dport=22 [sport=N] [iif=eth0] [oif=eth1]` (separated by blanks or commas) as a packet;
 * a bad field is refused naming it.
 */
export function parsePacket(text: string): ExplainPacket {
  const fields = new Map<string, string>();
  for (const part of text.split(/[\s,]+/).filter(Boolean)) {
    const m = /^([a-z]+)=(.+)$/.exec(part);
    if (!m) throw badRequest(`packet: ${part.slice(0, 40)} is not FIELD=VALUE (${FIELDS.join(', ')})`);
    if (!FIELDS.includes(m[1]!)) throw badRequest(`packet: ${m[1]} is not a field (${FIELDS.join(', ')})`);
    if (fields.has(m[1]!)) throw badRequest(`packet: ${m[1]} given twice`);
    fields.set(m[1]!, m[2]!);
  }
  const address = (name: string) => {
    const v = fields.get(name);
    if (v === undefined) throw badRequest(`packet: ${name} is required (an IPv4 address)`);
    const m = OCTETS.exec(v);
    if (!m || m.slice(1).some((o) => Number(o) > 255)) throw badRequest(`packet: ${name}=${v} is not an IPv4 address`);
    return v;
  };
  const [src, dst] = [address('src'), address('dst')];
  const proto = (fields.get('proto') ?? '').toLowerCase();
  if (!proto) throw badRequest('packet: proto is required (tcp, udp, or another protocol by name or number)');
  if (!/^[a-z0-9-]{1,20}$/.test(proto) || proto === 'all' || proto === '0')
    throw badRequest(`packet: proto=${proto} is not one protocol`);
  const ported = ['tcp', 'udp', '6', '17'].includes(proto);
  const port = (name: string) => {
    const v = fields.get(name);
    if (v === undefined) return undefined;
    if (!ported) throw badRequest(`packet: ${name} needs proto tcp or udp`);
    if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) throw badRequest(`packet: ${name}=${v} is not a port (0-65535)`);
    return Number(v);
  };
  const iface = (name: string) => {
    const v = fields.get(name);
    if (v !== undefined && !/^[^\s=/]{1,15}$/.test(v)) throw badRequest(`packet: ${name}=${v} is not an interface`);
    return v;
  };
  const [sport, dport, iif, oif] = [port('sport'), port('dport'), iface('iif'), iface('oif')];
  return {
    src,
    dst,
    proto: proto === '6' ? 'tcp' : proto === '17' ? 'udp' : proto,
    ...(sport === undefined ? {} : { sport }),
    ...(dport === undefined ? {} : { dport }),
    ...(iif === undefined ? {} : { iif }),
    ...(oif === undefined ? {} : { oif }),
  };
}

/** The packet as a box of nfv's packet space: a point, but for a port the packet leaves open. */
export function packetBox(p: ExplainPacket): Box {
  const out = [...UNIVERSE];
  const set = (d: number, lo: number, hi = lo) => {
    out[2 * d] = lo;
    out[2 * d + 1] = hi;
  };
  p.src.split('.').forEach((o, k) => set(SRC + k, Number(o)));
  p.dst.split('.').forEach((o, k) => set(DST + k, Number(o)));
  set(PROTO, p.proto === 'tcp' ? 0 : p.proto === 'udp' ? 1 : 2);
  if (p.sport !== undefined) set(SPORT, p.sport);
  if (p.dport !== undefined) set(DPORT, p.dport);
  return out;
}

/** An interface name against a rule's (`eth+` is every name starting `eth`). */
const ifaceMatches = (rule: string, name: string) =>
  rule.endsWith('+') ? name.startsWith(rule.slice(0, -1)) : rule === name;

type Match = true | false | { why: string };

/** Whether a line matches the packet: yes, no, or nfv cannot say (and why). */
function matches(rule: LiveRule, p: ExplainPacket, box: Box): Match {
  let rest: Box[] = [box];
  for (const b of rule.region) rest = regionSubtract(rest, b);
  if (rest.length && rest.length === 1 && rest[0]!.every((v, k) => v === box[k])) return false;
  // The interfaces the packet names decide `-i`/`-o` by name, mapped or not.
  const unknown = new Set(rule.unknown);
  for (const i of rule.interfaces ?? []) {
    const name = i.input ? p.iif : p.oif;
    if (name === undefined) continue;
    if (i.unknown) unknown.delete(i.unknown);
    if (ifaceMatches(i.name, name) === i.negate) return false;
  }
  if (rest.length) {
    const open = [p.sport === undefined ? 'sport' : '', p.dport === undefined ? 'dport' : ''].filter(Boolean);
    return { why: `it matches some ${open.join(' and ') || 'ports'} of the packet only (give ${open.join(', ')})` };
  }
  for (const i of rule.interfaces ?? [])
    if (i.unknown && unknown.has(i.unknown)) {
      unknown.delete(i.unknown);
      unknown.add(`${i.unknown}, or name it in the packet: ${i.input ? 'iif' : 'oif'}=NAME`);
    }
  if (unknown.size) return { why: [...unknown].join('; ') };
  return true;
}

/** Walks the packet through the rule set's base chains; every one must accept it, the last one decides. */
export function explain(set: LiveRuleset, packet: ExplainPacket): Explanation {
  const box = packetBox(packet);
  const trace: Step[] = [];
  const step = (kind: StepKind, chain: LiveChain, rule?: LiveRule, why?: string): Step => ({
    kind,
    chain: chain.key,
    where: rule ? rule.where : `${set.file}: ${chain.key}`,
    file: set.file,
    line: rule ? rule.line : 0,
    text: rule
      ? rule.text
      : kind === 'policy'
        ? `policy of ${chain.key}: ${chain.policy === 'drop' ? 'DROP' : 'ACCEPT'}`
        : `end of ${chain.key}: back to its caller`,
    ...(why ? { why } : {}),
  });
  const done = (verdict: Explanation['verdict'], decidedBy: Step): Explanation => {
    trace.push(decidedBy);
    return { packet, verdict, decidedBy, trace };
  };
  for (const base of set.path) {
    const stack: { chain: LiveChain; next: number }[] = [];
    let chain = base;
    let k = 0;
    let accepted = false;
    for (;;) {
      if (k >= chain.rules.length) {
        const back = stack.pop();
        if (!back) break;
        trace.push(step('end of chain', chain));
        ({ chain, next: k } = back);
        continue;
      }
      const rule = chain.rules[k++]!;
      if (rule.refused) continue;
      const m = matches(rule, packet, box);
      if (m === false) continue;
      if (m !== true) return done('UNKNOWN', step('unknown', chain, rule, m.why));
      const { kind } = rule.verdict;
      if (kind === 'accept' || kind === 'drop') {
        if (kind === 'drop') return done('DENY', step('decides', chain, rule));
        if (base === set.path[set.path.length - 1]) return done('ALLOW', step('decides', chain, rule));
        // An earlier base chain's accept passes the packet on to the next one.
        trace.push(step('decides', chain, rule));
        accepted = true;
        break;
      }
      if (kind === 'queue') return done('UNKNOWN', step('unknown', chain, rule, 'user space takes the verdict'));
      if (kind === 'none') {
        trace.push(step('no verdict', chain, rule));
        continue;
      }
      if (kind === 'return') {
        trace.push(step('return', chain, rule));
        const back = stack.pop();
        if (!back) break;
        ({ chain, next: k } = back);
        continue;
      }
      const target = set.lookup(chain, rule.verdict.chain!);
      if (!target) continue;
      trace.push(step(kind, chain, rule));
      if (kind === 'jump') {
        if (stack.length >= MAX_IMPORT_DEPTH)
          throw badRequest(`${set.file}: jumps nest deeper than ${MAX_IMPORT_DEPTH} chains (at ${target.name})`);
        stack.push({ chain, next: k });
      }
      chain = target;
      k = 0;
    }
    if (accepted) continue;
    if (base.policy === 'drop' || base === set.path[set.path.length - 1])
      return done(base.policy === 'drop' ? 'DENY' : 'ALLOW', step('policy', base));
  }
  throw new Error('unreachable: the last base chain decides');
}
