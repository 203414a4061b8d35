/**
 * iptables-save text, line by line (firewall-io.md B.2, B.3): tables, chains and policies, `-A` rules with their
 * matches and targets, read into a `LiveRuleset` whose path is raw PREROUTING, mangle PREROUTING, mangle FORWARD,
 * filter FORWARD, mangle POSTROUTING (INPUT instead of FORWARD for a host firewall). CRLF, trailing blanks, `[p:b]`
 * counters and the old `-s ! A` form are read; nat PREROUTING rules that change the destination are refused
 * unless --ignore-nat.
 */
import { badRequest } from '../../model/errors.js';
import { MAX_IMPORT_LINES } from '../../model/limits.js';
import { PROTO, type Box } from '../../model/space.js';
import {
  DPORT_DIM,
  DST_AT,
  Refusal,
  SPORT_DIM,
  SRC_AT,
  addressRegion,
  complement,
  interfaceRegion,
  negated,
  negatedPorts,
  portRegion,
  protocolOf,
  rangeRegion,
  refuse,
  setRegion,
  type InterfaceMap,
  type IpSet,
} from './matches.js';
import { UNIVERSE_REGION, intersectRegions, type LiveChain, type LiveRule, type LiveRuleset } from './ruleset.js';

export interface ImportOptions {
  /** The filter chain a forwarded packet passes: FORWARD, or INPUT for a host firewall. */
  chain?: string;
  iface?: InterfaceMap;
  ipsets?: Map<string, IpSet>;
  ignoreNat?: boolean;
}

/** Quoted words, as iptables-save writes them (`--comment "a b"`, `\"` inside). */
function words(text: string): string[] {
  const out: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+))/gy;
  let m: RegExpExecArray | null;
  let at = 0;
  while (at < text.length && (m = re.exec(text))) {
    at = re.lastIndex;
    const word = m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3]!);
    if (m[3] !== undefined && /["']/.test(m[3])) refuse(`unbalanced quotes in ${m[3]}`);
    out.push(word);
  }
  if (text.slice(at).trim()) refuse('unbalanced quotes');
  return out;
}

/** Targets that change nothing about the verdict: the rule goes on to the next (B.3). */
const NO_VERDICT = new Set(
  [
    'LOG NFLOG ULOG AUDIT MARK CONNMARK TCPMSS CT NOTRACK TOS DSCP CLASSIFY TRACE SET CHECKSUM TTL HL SECMARK',
    'CONNSECMARK IDLETIMER LED RATEEST TEE',
  ]
    .join(' ')
    .split(' '),
);
const NAT_TARGETS = new Set(['SNAT', 'DNAT', 'MASQUERADE', 'REDIRECT', 'NETMAP']);
/** Match modules nfv cannot model: the rule is approximated (B.5). */
const APPROXIMATED = new Set(
  [
    'mac limit hashlimit recent connlimit time mark connmark string length ttl addrtype physdev policy pkttype u32',
    'dscp tos helper rpfilter owner statistic quota connbytes ecn ipvs realm devgroup cgroup socket osf nfacct cpu',
    'rateest bpf sctp dccp ah esp ipv4options icmp tcpmss condition geoip',
  ]
    .join(' ')
    .split(' '),
);
const PROTOCOL_OPTIONS = new Set([
  'sport',
  'source-port',
  'dport',
  'destination-port',
  'syn',
  'tcp-flags',
  'tcp-option',
]);
const STATES = new Set(['NEW', 'ESTABLISHED', 'RELATED', 'INVALID', 'UNTRACKED', 'SNAT', 'DNAT']);
const TCP_FLAGS = new Set(['FIN', 'SYN', 'RST', 'PSH', 'ACK', 'URG', 'ECE', 'CWR']);

function flagSet(text: string): Set<string> {
  const t = text.toUpperCase();
  if (t === 'ALL') return new Set(TCP_FLAGS);
  if (t === 'NONE') return new Set();
  const out = new Set(t.split(','));
  for (const f of out) if (!TCP_FLAGS.has(f)) refuse(`--tcp-flags: ${f} is not a TCP flag`);
  return out;
}

interface Parsed {
  region: Box[];
  unknown: string[];
  notes: string[];
  newConnection: boolean;
  target?: string;
  gotoChain?: string;
  empty?: string;
}

/** The condition and target of one `-A` rule's words (after the chain name). */
function parseRule(w: string[], chain: string, options: ImportOptions): Parsed {
  const parts: Box[][] = [];
  const p: Parsed = { region: UNIVERSE_REGION, unknown: [], notes: [], newConnection: false };
  let proto: number | undefined; // 0 TCP, 1 UDP, when the rule names one of them
  let module = '';
  let negate = false;
  let k = 0;
  const next = (opt: string) => {
    const v = w[k++];
    if (v === undefined || (v.startsWith('-') && v.length > 1 && !/^-\d/.test(v))) refuse(`${opt} needs a value`);
    // The old form `-s ! A`: the negation after the option.
    if (v === '!') {
      negate = !negate;
      return next(opt);
    }
    return v!;
  };
  const values = () => {
    const out: string[] = [];
    while (k < w.length && !w[k]!.startsWith('-') && w[k] !== '!') out.push(w[k++]!);
    return out;
  };
  const add = (region: Box[]) => parts.push(region);
  const nothing = (why: string) => {
    add([]);
    p.empty ??= why;
  };
  const approx = (why: string) => p.unknown.push(why);
  const ports = (opt: string, dim: number | 'both') => {
    if (proto === undefined) refuse(`${opt} needs -p tcp or -p udp`);
    const spec = next(opt);
    const one = (d: number) => {
      const r = portRegion(spec, proto!, d);
      return negate ? negatedPorts(r, proto!) : r;
    };
    // --ports: the source or the destination port is one of them (two rule groups, B.3).
    if (dim === 'both') {
      if (negate) add(intersectRegions(one(SPORT_DIM), one(DPORT_DIM)));
      else add([...one(SPORT_DIM), ...one(DPORT_DIM)]);
    } else add(one(dim));
  };
  while (k < w.length) {
    const opt = w[k++]!;
    if (opt === '!') {
      negate = true;
      continue;
    }
    if (p.target !== undefined) {
      // Target options (--reject-with, --log-prefix ...) come after the target and change no verdict.
      if (!opt.startsWith('--')) refuse(`${opt}: unexpected after the target`);
      values();
      continue;
    }
    switch (opt) {
      case '-s':
      case '--source':
      case '--src':
      case '-d':
      case '--destination':
      case '--dst': {
        const v = next(opt);
        add(negated(addressRegion(v, opt.startsWith('-s') || opt.startsWith('--s') ? SRC_AT : DST_AT), negate));
        break;
      }
      case '-p':
      case '--protocol': {
        const v = next(opt);
        const r = protocolOf(v);
        if (r.approx) approx(r.approx);
        else if (!negate && v !== 'all' && v !== '0') proto = r.region[0]![2 * PROTO];
        // `! -p icmp` is TCP, UDP and the other OTHER protocols: the whole space, approximated.
        add(negate ? (r.approx ? UNIVERSE_REGION : complement(r.region)) : r.region);
        break;
      }
      case '-i':
      case '--in-interface':
      case '-o':
      case '--out-interface': {
        const v = next(opt);
        const input = opt === '-i' || opt === '--in-interface';
        if (v === 'lo' && chain !== 'INPUT' && chain !== 'OUTPUT') {
          if (negate) break;
          nothing(`${opt} lo: forwarded packets never use the loopback interface`);
          break;
        }
        const r = interfaceRegion(v, input ? SRC_AT : DST_AT, options.iface ?? new Map());
        if (r) add(negated(r, negate));
        else approx(`${opt} ${v}: interface not mapped (--iface ${v.replace(/\+$/, '')}=ADDRESSES)`);
        break;
      }
      case '-f':
      case '--fragment':
        p.newConnection = true;
        if (!negate) nothing('-f: the first packet of a connection is no later fragment');
        break;
      case '-m':
      case '--match':
        module = next(opt).toLowerCase();
        if (APPROXIMATED.has(module) && module !== 'icmp') approx(`-m ${module}: nfv cannot model it`);
        break;
      case '-j':
      case '--jump':
        p.target = next(opt);
        break;
      case '-g':
      case '--goto':
        p.gotoChain = next(opt);
        p.target = p.gotoChain;
        break;
      case '-c':
      case '--set-counters':
        next(opt);
        next(opt);
        break;
      default:
        moduleOption(opt);
    }
    negate = false;
  }

  function moduleOption(opt: string) {
    if (!opt.startsWith('--')) refuse(`${opt}: unknown option`);
    const name = opt.slice(2);
    // -p tcp and -p udp load their match implicitly: --dport after -m iprange is still the TCP one.
    const implicit = proto === 0 ? 'tcp' : proto === 1 ? 'udp' : '';
    const own = ['tcp', 'udp', 'multiport'].includes(module);
    const mod = implicit && !own && PROTOCOL_OPTIONS.has(name) ? implicit : module;
    switch (mod) {
      case 'tcp':
      case 'udp':
        if (name === 'sport' || name === 'source-port') return ports(opt, SPORT_DIM);
        if (name === 'dport' || name === 'destination-port') return ports(opt, DPORT_DIM);
        if (mod === 'tcp' && name === 'syn') return syn(!negate, opt);
        if (mod === 'tcp' && name === 'tcp-flags') {
          const [mask, comp] = [flagSet(next(opt)), flagSet(next(opt))];
          // A connection's first packet carries SYN alone (with ECN it also carries ECE and CWR: then unknown).
          if (mask.has('ECE') || mask.has('CWR')) {
            values();
            return approx(`${opt}: ECE/CWR in the mask (a first SYN may carry them)`);
          }
          const synOnly = mask.has('SYN') ? comp.size === 1 && comp.has('SYN') : comp.size === 0;
          return syn(synOnly !== negate, opt);
        }
        if (mod === 'tcp' && name === 'tcp-option') {
          values();
          return approx(`${opt}: nfv cannot model TCP options`);
        }
        break;
      case 'multiport':
        if (name === 'sports' || name === 'source-ports') return ports(opt, SPORT_DIM);
        if (name === 'dports' || name === 'destination-ports') return ports(opt, DPORT_DIM);
        if (name === 'ports') return ports(opt, 'both');
        break;
      case 'iprange':
        if (name === 'src-range' || name === 'dst-range') {
          const r = rangeRegion(next(opt), name === 'src-range' ? SRC_AT : DST_AT);
          return add(negated(r, negate));
        }
        break;
      case 'state':
      case 'conntrack':
        if (name === 'state' || name === 'ctstate') return state(next(opt).split(','), opt);
        if (module === 'conntrack') {
          values();
          return approx(`${opt}: nfv cannot model conntrack ${name}`);
        }
        break;
      case 'comment':
        if (name === 'comment') {
          p.notes.push(`comment: ${next(opt)}`);
          return;
        }
        break;
      case 'set':
        if (name === 'match-set') {
          const [set, flags] = [next(opt), next(opt)];
          const known = options.ipsets?.get(set);
          if (known) add(negated(setRegion(known, set, flags), negate));
          else approx(`-m set --match-set ${set}: set not given (--ipset FILE from ipset save)`);
          return;
        }
        values();
        return approx(`${opt}: nfv cannot model set option ${name}`);
      default:
        if (APPROXIMATED.has(module)) {
          values();
          if (module === 'icmp' && proto === undefined) approx(`${opt}: nfv cannot model ICMP types`);
          return;
        }
    }
    refuse(`${opt}: unknown option${module ? ` of -m ${module}` : ''}`);
  }

  function syn(matches: boolean, opt: string) {
    p.newConnection = true;
    if (!matches) nothing(`${negate ? '! ' : ''}${opt}: the first packet of a TCP connection is a SYN`);
  }

  function state(list: string[], opt: string) {
    p.newConnection = true;
    for (const s of list) if (!STATES.has(s.toUpperCase())) refuse(`${opt} ${s}: not a connection state`);
    const upper = list.map((s) => s.toUpperCase());
    if (!upper.includes('NEW') && upper.some((s) => s === 'SNAT' || s === 'DNAT'))
      return approx(`${opt} ${list.join(',')}: nfv cannot model NAT states`);
    const matches = upper.includes('NEW') !== negate;
    if (!matches) nothing(`${negate ? '! ' : ''}${opt} ${list.join(',')} matches no new connection`);
  }

  p.region = parts.reduce((acc, r) => intersectRegions(acc, r), UNIVERSE_REGION);
  return p;
}

interface Draft {
  chains: Map<string, LiveChain>;
  /** Rules of each chain as read, before targets are resolved. */
  drafts: { chain: LiveChain; rule: LiveRule; parsed?: Parsed }[];
}

/** The iptables-save text as a rule set (B.3). Lines that cannot be read carry their refusal. */
export function readIptables(text: string, file: string, options: ImportOptions = {}): LiveRuleset {
  const lines = text.split('\n');
  if (lines.length > MAX_IMPORT_LINES)
    throw badRequest(`${file}: ${lines.length} lines; nfv imports at most ${MAX_IMPORT_LINES}`);
  const d: Draft = { chains: new Map(), drafts: [] };
  let table: string | undefined;
  const notes: string[] = [];
  const at = (k: number) => `${file}:${k + 1}`;
  lines.forEach((raw, k) => {
    // CRLF, trailing blanks and `[p:b]` counters (iptables-save -c) are read, as real dumps carry them.
    const line = raw.replace(/\r$/, '').trim();
    if (line === '' || line.startsWith('#')) return;
    if (line.startsWith('*')) {
      table = line.slice(1).trim();
      return;
    }
    if (line === 'COMMIT') {
      table = undefined;
      return;
    }
    if (table === undefined) throw badRequest(`${at(k)}: ${clip(line)}: outside a table (*filter ... COMMIT)`);
    if (line.startsWith(':')) {
      const m = /^:(\S+)\s+(\S+)/.exec(line);
      if (!m) throw badRequest(`${at(k)}: ${clip(line)}: not a chain line (:NAME POLICY [p:b])`);
      const policy = m[2] === 'ACCEPT' ? 'accept' : m[2] === 'DROP' ? 'drop' : undefined;
      d.chains.set(`${table}/${m[1]}`, {
        key: `${table}/${m[1]}`,
        name: m[1]!,
        rules: [],
        ...(policy ? { policy } : {}),
      });
      return;
    }
    const body = line.replace(/^\[\d+:\d+\]\s+/, '');
    const rule: LiveRule = {
      where: at(k),
      line: k + 1,
      text: body,
      region: [],
      unknown: [],
      newConnection: false,
      notes: [],
      verdict: { kind: 'none' },
    };
    let w: string[];
    try {
      w = words(body);
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      rule.refused = e.message;
      w = body.split(/\s+/);
    }
    if (w[0] !== '-A' && w[0] !== '--append')
      throw badRequest(`${at(k)}: ${clip(line)}: not an iptables-save line (-A CHAIN ...)`);
    const chain = d.chains.get(`${table}/${w[1]}`);
    if (!chain) throw badRequest(`${at(k)}: chain ${w[1] ?? '(none)'} is not declared in table ${table}`);
    chain.rules.push(rule);
    if (rule.refused) return;
    try {
      d.drafts.push({ chain, rule, parsed: parseRule(w.slice(2), chain.name, options) });
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      rule.refused = e.message;
    }
  });
  for (const { chain, rule, parsed } of d.drafts) resolve(d, chain, rule, parsed!);
  const main = options.chain ?? 'FORWARD';
  const filter = d.chains.get(`filter/${main}`);
  if (!filter) throw badRequest(`${file}: no chain ${main} in table filter (give --chain, or an iptables-save file)`);
  const path = [
    'raw/PREROUTING',
    'mangle/PREROUTING',
    `mangle/${main}`,
    ...(main === 'FORWARD' ? ['mangle/POSTROUTING'] : []),
  ].flatMap((key) => {
    const c = d.chains.get(key);
    return c && c.rules.length ? [c] : [];
  });
  path.push(filter);
  return {
    file,
    chains: d.chains,
    path,
    checked: natChecked(d, options, notes),
    lookup: (from, name) => d.chains.get(`${from.key.split('/')[0]}/${name}`),
    notes,
  };
}

const clip = (s: string) => (s.length > 60 ? `${s.slice(0, 57)}...` : s);

function resolve(d: Draft, chain: LiveChain, rule: LiveRule, p: Parsed) {
  const table = chain.key.split('/')[0]!;
  Object.assign(rule, { region: p.region, unknown: p.unknown, newConnection: p.newConnection });
  rule.notes.push(...p.notes);
  if (p.empty) rule.notes.push(p.empty);
  const t = p.target;
  if (t === undefined) {
    rule.notes.push('no target: a counting rule, no verdict');
    return;
  }
  const userChain = d.chains.get(`${table}/${t}`);
  if (p.gotoChain !== undefined) {
    if (!userChain || userChain.policy) rule.refused = `-g ${t}: no user chain ${t} in table ${table}`;
    else rule.verdict = { kind: 'goto', chain: t };
  } else if (t === 'ACCEPT') rule.verdict = { kind: 'accept' };
  else if (t === 'DROP' || t === 'REJECT' || t === 'TARPIT') rule.verdict = { kind: 'drop' };
  else if (t === 'RETURN') rule.verdict = { kind: 'return' };
  else if (t === 'QUEUE' || t === 'NFQUEUE') {
    rule.verdict = { kind: 'queue' };
    rule.unknown.push(`-j ${t}: the verdict is taken in user space`);
  } else if (NO_VERDICT.has(t)) rule.notes.push(`-j ${t}: no verdict`);
  else if (NAT_TARGETS.has(t)) {
    if (table !== 'nat') rule.refused = `-j ${t} in table ${table}: address translation belongs to table nat`;
  } else if (userChain && !userChain.policy) rule.verdict = { kind: 'jump', chain: t };
  else if (/^[A-Z][A-Z0-9_]*$/.test(t) && !userChain) rule.refused = `-j ${t}: unknown target`;
  else rule.refused = `-j ${t}: no user chain ${t} in table ${table}`;
}

/** nat: a destination changed before filtering is refused (or said, with --ignore-nat); after it, only said. */
function natChecked(d: Draft, o: ImportOptions, notes: string[]): LiveRule[] {
  const seen = new Set<LiveChain>();
  const checked: LiveRule[] = [];
  const walk = (c: LiveChain | undefined, where: 'PREROUTING' | 'POSTROUTING') => {
    if (!c || seen.has(c)) return;
    seen.add(c);
    for (const r of c.rules) {
      const target = /(?:^|\s)-j\s+(\S+)/.exec(r.text)?.[1];
      if (target === 'DNAT' || target === 'REDIRECT' || target === 'NETMAP') {
        checked.push(r);
        if (where === 'PREROUTING' && !o.ignoreNat)
          r.refused =
            `-j ${target} in table nat PREROUTING changes the destination the ${o.chain ?? 'FORWARD'} chain sees; ` +
            'model it as a NAT node or give --ignore-nat';
        else if (where === 'PREROUTING') {
          notes.push(`${r.where}: -j ${target} ignored (--ignore-nat)`);
          r.notes.push(`-j ${target} before filtering, ignored (--ignore-nat)`);
        }
      } else if ((target === 'SNAT' || target === 'MASQUERADE') && where === 'POSTROUTING')
        notes.push(`${r.where}: -j ${target} after filtering: the filter sees the addresses before it`);
      const jump = /(?:^|\s)-[jg]\s+(\S+)/.exec(r.text)?.[1];
      if (jump) walk(d.chains.get(`nat/${jump}`), where);
    }
  };
  walk(d.chains.get('nat/PREROUTING'), 'PREROUTING');
  walk(d.chains.get('nat/POSTROUTING'), 'POSTROUTING');
  return checked;
}
