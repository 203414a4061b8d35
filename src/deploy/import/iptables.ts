/**
 * iptables-save text, line by line (firewall-io.md B.2, B.3): tables, chains and policies, `-A` rules with their
 * matches and targets, read into a `LiveRuleset` whose path is raw PREROUTING, mangle PREROUTING, mangle FORWARD,
 * filter FORWARD, mangle POSTROUTING (INPUT instead of FORWARD for a host firewall). CRLF, trailing blanks, `[p:b]`
 * counters and the old `-s ! A` form are read; nat PREROUTING rules that change the destination are refused
 * unless --ignore-nat.
 */
import { badRequest } from '../../model/errors.js';
import { MAX_IMPORT_LINES } from '../../model/limits.js';
import { UNIVERSE, type Box } from '../../model/space.js';
import {
  DPORT_DIM,
  DST_AT,
  Refusal,
  SPORT_DIM,
  SRC_AT,
  addressRegion,
  complement,
  interfaceRegion,
  macRegion,
  negated,
  negatedPorts,
  portRegion,
  protocolOf,
  rangeRegion,
  refuse,
  setRegion,
  type IpSet,
} from './matches.js';
import { readNats, type NatLine } from './nat.js';
import type { InterfaceMap, MacMap } from './routes.js';
import {
  UNIVERSE_REGION,
  intersectRegions,
  withBounds,
  type InterfaceMatch,
  type LiveChain,
  type LiveRule,
  type LiveRuleset,
} from './ruleset.js';

export interface ImportOptions {
  /** The filter chain a forwarded packet passes: FORWARD, or INPUT for a host firewall. */
  chain?: string;
  /** The table whose chain decides: filter unless told (iptables); the nft tables of that name only (nft). */
  table?: string;
  iface?: InterfaceMap;
  /** `--neighbours` with `--routes`: the sources behind each MAC address, for `-m mac --mac-source` (routes.ts). */
  macs?: MacMap;
  ipsets?: Map<string, IpSet>;
  ignoreNat?: boolean;
  /**
   * The router's outside address: DNAT, SNAT and MASQUERADE become a NAT node of that name on the outside of the
   * firewall (nat.ts), instead of being refused.
   */
  natAddress?: string;
  /**
   * The end host of the graph the rule set belongs to: its INPUT chain decides the packets to it, OUTPUT the
   * packets from it (index.ts, importHost).
   */
  host?: string;
}

/**
 * Quoted words, as iptables-save writes them (`--comment "a b"`, `\"` inside). A quoted word is a value whatever it
 * starts with (`--comment "-j DROP here"`): its index goes into `quoted`.
 */
function words(text: string, quoted = new Set<number>()): string[] {
  const out: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+))/gy;
  let m: RegExpExecArray | null;
  let at = 0;
  while (at < text.length && (m = re.exec(text))) {
    at = re.lastIndex;
    const word = m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3]!);
    if (m[3] !== undefined && /["']/.test(m[3])) refuse(`unbalanced quotes in ${m[3]}`);
    if (m[3] === undefined) quoted.add(out.length);
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
    'limit hashlimit connlimit time mark connmark string length ttl physdev policy pkttype u32',
    'dscp tos helper rpfilter owner statistic quota connbytes ecn ipvs realm devgroup cgroup socket osf nfacct cpu',
    'rateest bpf sctp dccp ah esp ipv4options icmp tcpmss condition geoip',
  ]
    .join(' ')
    .split(' '),
);
/** Matches nfv reads exactly or by its connection semantics. */
const KNOWN_MODULES = new Set([
  'tcp',
  'udp',
  'multiport',
  'iprange',
  'state',
  'conntrack',
  'comment',
  'set',
  'mac',
  'recent',
  'addrtype',
]);
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
  interfaces: InterfaceMatch[];
  unknown: string[];
  notes: string[];
  newConnection: boolean;
  target?: string;
  gotoChain?: string;
  empty?: string;
  /** `-6`: iptables-restore skips the rule (it is ip6tables'). */
  skip?: boolean;
}

/** The condition and target of one `-A` rule's words (after the chain name). */
function parseRule(
  w: string[],
  chain: string,
  options: ImportOptions,
  quoted: (k: number) => boolean,
  natChanges = true,
): Parsed {
  const parts: Box[][] = [];
  const p: Parsed = { region: UNIVERSE_REGION, interfaces: [], unknown: [], notes: [], newConnection: false };
  // 0 TCP, 1 UDP, when the rule names one of them: iptables reads -p wherever it stands (`-m tcp --dport 22 -p tcp`).
  let proto: number | undefined;
  let protoName = '';
  for (let j = 0; j < w.length - 1; j++)
    if ((w[j] === '-p' || w[j] === '--protocol') && w[j - 1] !== '!' && w[j + 1] !== '!') {
      protoName = w[j + 1]!.toLowerCase();
      proto = protoName === 'tcp' || protoName === '6' ? 0 : protoName === 'udp' || protoName === '17' ? 1 : undefined;
    }
  // `-6` anywhere: the rule is ip6tables', and iptables-restore skips it without reading the rest.
  if (w.some((x, j) => (x === '-6' || x === '--ipv6') && !quoted(j))) return { ...p, skip: true };
  let module = '';
  // After -j, `--` options are the target's until a -m loads a match again (`-j ACCEPT -m comment --comment x`).
  let targetOptions = false;
  let negate = false;
  let k = 0;
  const next = (opt: string) => {
    const v = w[k++];
    const option = v !== undefined && v.startsWith('-') && v.length > 1 && !/^-\d/.test(v) && !quoted(k - 1);
    if (v === undefined || option) refuse(`${opt} needs a value`);
    // The old form `-s ! A`: the negation after the option.
    if (v === '!') {
      negate = !negate;
      return next(opt);
    }
    return v!;
  };
  const values = () => {
    const out: string[] = [];
    while (k < w.length && ((!w[k]!.startsWith('-') && w[k] !== '!') || quoted(k))) out.push(w[k++]!);
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
    if (targetOptions && opt.startsWith('--')) {
      // Target options (--reject-with, --log-prefix ...) change no verdict.
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
        const why = `${opt} ${v}: interface not mapped (--iface ${v.replace(/\+$/, '')}=ADDRESSES or --routes FILE)`;
        if (r) add(negated(r, negate));
        else approx(why);
        // Kept by name too: `firewall explain` decides it for a packet that names its interfaces.
        p.interfaces.push({ input, name: v, negate, ...(r ? {} : { unknown: why }) });
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
        targetOptions = false;
        if (APPROXIMATED.has(module) && module !== 'icmp') approx(`-m ${module}: nfv cannot model it`);
        else if (!KNOWN_MODULES.has(module)) approx(`-m ${module}: a match nfv does not know`);
        break;
      case '-j':
      case '--jump':
        if (p.target !== undefined) refuse(`${opt}: a second target`);
        p.target = next(opt);
        targetOptions = true;
        break;
      case '-g':
      case '--goto':
        if (p.target !== undefined) refuse(`${opt}: a second target`);
        p.gotoChain = next(opt);
        p.target = p.gotoChain;
        targetOptions = true;
        break;
      case '-4':
      case '--ipv4':
        break;
      case '-6':
      case '--ipv6':
        p.skip = true;
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
    // -p tcp and -p udp load their match implicitly: --dport after -m iprange is still the TCP one; -p icmp its own.
    const implicit = proto === 0 ? 'tcp' : proto === 1 ? 'udp' : '';
    const own = ['tcp', 'udp', 'multiport'].includes(module);
    const icmp = name === 'icmp-type' && protoName === 'icmp' && module !== 'icmp';
    const mod = icmp ? 'icmp' : implicit && !own && PROTOCOL_OPTIONS.has(name) ? implicit : module;
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
        if (module === 'conntrack' && original(name, opt)) return;
        if (module === 'conntrack') {
          values();
          return approx(`${opt}: nfv cannot model conntrack ${name}`);
        }
        break;
      case 'recent':
        // --set records the source and matches every packet; whether a source was seen before depends on earlier
        // packets, which a first packet's decision in nfv's model does not know.
        if (name === 'name' || name === 'mask') return void next(opt);
        if (name === 'rsource' || name === 'rdest') return;
        if (name === 'set') {
          if (negate) nothing('! --set: -m recent --set matches every packet');
          return;
        }
        if (['rcheck', 'update', 'remove'].includes(name)) {
          values();
          return approx(`-m recent --${name}: whether the source was seen depends on earlier packets`);
        }
        if (['seconds', 'hitcount', 'reap', 'rttl'].includes(name)) return void values();
        break;
      case 'addrtype':
        if (name === 'src-type' || name === 'dst-type') return addrtype(name, next(opt), opt);
        if (name === 'limit-iface-in' || name === 'limit-iface-out')
          return approx(`${opt}: nfv does not know the interfaces' own addresses`);
        break;
      case 'mac':
        // `--mac`: getopt takes a unique prefix of an option, as older dumps write it.
        if (name === 'mac-source' || name === 'mac') {
          const mac = next(opt);
          const r = macRegion(mac, options.macs);
          if (typeof r === 'string') approx(`-m mac: ${r}`);
          else add(negated(r, negate));
          return;
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
        if (mod === 'icmp') {
          values();
          if (proto === undefined) approx(`${opt}: nfv cannot model ICMP types`);
          return;
        }
        // An option of a match nfv cannot model, or does not know: the match is said approximated already.
        if (APPROXIMATED.has(module) || (module && !KNOWN_MODULES.has(module))) {
          values();
          return;
        }
    }
    refuse(`${opt}: unknown option${module ? ` of -m ${module}` : ''}`);
  }

  /**
   * Conntrack's original tuple, read for the first packet of a connection (engine.md: a flow is its first packet):
   * it is that packet's own protocol, source and ports, and its destination unless a DNAT before filtering changed
   * it (possible only with --ignore-nat). `--ctdir ORIGINAL` is every first packet, `REPLY` none.
   */
  function original(name: string, opt: string): boolean {
    // Only a translation the file has and --ignore-nat ignored can have changed the destination.
    const dnat = options.ignoreNat === true && natChanges;
    const field = name.replace(/^ctorig/, '');
    if (name === 'ctproto') {
      const v = next(opt).toLowerCase();
      const r = protocolOf(v);
      // Its ports are then that protocol's, as after -p.
      if (!negate && proto === undefined && ['tcp', '6', 'udp', '17'].includes(v))
        proto = v === 'tcp' || v === '6' ? 0 : 1;
      if (r.approx) approx(r.approx);
      add(negate ? (r.approx ? UNIVERSE_REGION : complement(r.region)) : r.region);
    } else if (name === 'ctdir') {
      const dir = next(opt).toUpperCase();
      if (dir !== 'ORIGINAL' && dir !== 'REPLY') refuse(`${opt} ${dir}: ORIGINAL or REPLY`);
      if ((dir === 'ORIGINAL') === negate) nothing(`${opt} ${dir}: the first packet of a connection is ORIGINAL`);
    } else if ((field === 'src' || field === 'dst') && name.startsWith('ctorig')) {
      const v = next(opt);
      if (field === 'dst' && dnat) approx(`${opt}: with --ignore-nat a DNAT may have changed the destination`);
      else add(negated(addressRegion(v, field === 'src' ? SRC_AT : DST_AT), negate));
    } else if ((field === 'srcport' || field === 'dstport') && name.startsWith('ctorig')) {
      if (proto === undefined || (field === 'dstport' && dnat)) {
        next(opt);
        approx(`${opt}: ${proto === undefined ? 'ports without -p tcp or -p udp' : 'a DNAT may change it'}`);
      } else ports(opt, field === 'srcport' ? SPORT_DIM : DPORT_DIM);
    } else return false;
    p.newConnection = true;
    return true;
  }

  /**
   * `-m addrtype`: the kernel looks the address up in its local table. For a forwarded packet (the deciding chain
   * FORWARD) the destination is no address of the box's own (those are delivered, never forwarded), so it is
   * MULTICAST in 224.0.0.0/4, by the address alone, and UNICAST elsewhere; a source needs the box's broadcast
   * addresses, unknown, but for MULTICAST. A DNAT before filtering may have changed the destination: approximated.
   */
  function addrtype(name: string, list: string, opt: string) {
    const types = list.toUpperCase().split(',');
    const multicast = [withBounds(UNIVERSE, [DST_AT], [224, 239])];
    const forwarded = (options.chain ?? 'FORWARD') === 'FORWARD' && !natChanges;
    const at = name === 'src-type' ? SRC_AT : DST_AT;
    if (types.length === 1 && types[0] === 'MULTICAST')
      return add(negated([withBounds(UNIVERSE, [at], [224, 239])], negate));
    if (
      name === 'src-type' ||
      !forwarded ||
      !types.every((x) => ['UNICAST', 'LOCAL', 'BROADCAST', 'MULTICAST'].includes(x))
    )
      return approx(`${opt} ${list}: nfv does not know the box's own addresses`);
    let region: Box[] = [];
    if (types.includes('UNICAST')) region = complement(multicast);
    if (types.includes('MULTICAST')) region = types.includes('UNICAST') ? UNIVERSE_REGION : multicast;
    if (!region.length && !negate) nothing(`${opt} ${list}: a forwarded packet's destination is not the box's`);
    else add(negated(region, negate));
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

/** Whether table nat of the file has a line that changes destinations (DNAT, REDIRECT, NETMAP). */
function destinationChanged(lines: string[]): boolean {
  let table = '';
  for (const raw of lines) {
    const line = raw.trim();
    if (line.startsWith('*')) table = line.slice(1).trim();
    else if (table === 'nat' && /(?:^|\s)-j\s+(DNAT|REDIRECT|NETMAP)(?:\s|$)/.test(line)) return true;
  }
  return false;
}

/** The built-in chains of each table (B.3): present, policy ACCEPT, even when the file has no `:CHAIN` line. */
const BUILT_IN: Record<string, string[]> = {
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  raw: ['PREROUTING', 'OUTPUT'],
  security: ['INPUT', 'FORWARD', 'OUTPUT'],
};

/**
 * The rule set as iptables-restore would hold it: chains by `table/name`, each rule read (its condition, unknowns
 * and verdict) or refused, for reading or for modelling (`LiveRule.modelling`).
 */
export interface ParsedIptables {
  chains: Map<string, LiveChain>;
  /** Built-in chains whose policy the file does not give (ACCEPT assumed: a fresh kernel's). */
  undeclared: Set<string>;
}

/** A file-level refusal (no line of it can be read): a structure iptables-restore refuses too. */
const unreadable = (where: string, why: string) => badRequest(`${where}: ${why}`);

/**
 * Reads iptables-save text as iptables-restore does: `*table` ... `COMMIT` sections, each replacing its table;
 * `:CHAIN POLICY [p:b]` lines; and the commands iptables-restore takes inside a table (`-A`, `-I [N]`, `-N`, `-P`,
 * `-F`, `-X`, `-Z`, `-D`, `-R`, `-E`, long forms too), built-in chains present without their `:` line. Lines that
 * cannot be read carry their refusal; a file whose structure cannot be read is refused (exit 2).
 */
export function parseIptables(text: string, file: string, options: ImportOptions = {}): ParsedIptables {
  const lines = text.split('\n');
  if (lines.length > MAX_IMPORT_LINES)
    throw badRequest(`${file}: ${lines.length} lines; nfv imports at most ${MAX_IMPORT_LINES}`);
  const out: ParsedIptables = { chains: new Map(), undeclared: new Set() };
  const parsed = new Map<LiveRule, Parsed>();
  const { chains } = out;
  let table: string | undefined;
  // Each rule's words after its chain (and number), for `-D CHAIN RULE`.
  const specs = new Map<LiveRule, string>();
  const at = (k: number) => `${file}:${k + 1}`;
  const natChanges = destinationChanged(lines);
  lines.forEach((raw, k) => {
    // CRLF, trailing blanks and `[p:b]` counters (iptables-save -c) are read, as real dumps carry them.
    const line = raw.replace(/\r$/, '').trim();
    if (line === '' || line.startsWith('#')) return;
    const where = at(k);
    if (line.startsWith('*')) {
      table = line.slice(1).trim();
      if (!/^[a-z]+$/.test(table)) throw unreadable(where, `${clip(line)}: not a table (*filter, *nat, ...)`);
      // A table's section replaces it whole, as iptables-restore does without --noflush.
      for (const key of [...chains.keys()]) if (key.startsWith(`${table}/`)) chains.delete(key);
      for (const name of BUILT_IN[table] ?? []) {
        chains.set(`${table}/${name}`, { key: `${table}/${name}`, name, rules: [], policy: 'accept' });
        out.undeclared.add(`${table}/${name}`);
      }
      return;
    }
    if (line === 'COMMIT') {
      if (table === undefined) throw unreadable(where, 'COMMIT outside a table');
      table = undefined;
      return;
    }
    if (table === undefined) throw unreadable(where, `${clip(line)}: outside a table (*filter ... COMMIT)`);
    const chainAt = (name: string | undefined, command: string) => {
      const chain = name === undefined ? undefined : chains.get(`${table}/${name}`);
      if (!chain) throw unreadable(where, `${command}: chain ${name ?? '(none)'} is not declared in table ${table}`);
      return chain;
    };
    if (line.startsWith(':')) {
      const m = /^:(\S+)\s+(\S+)(?:\s+\[\d+:\d+\])?$/.exec(line);
      if (!m) throw unreadable(where, `${clip(line)}: not a chain line (:NAME POLICY [p:b])`);
      const key = `${table}/${m[1]}`;
      const builtIn = (BUILT_IN[table] ?? []).includes(m[1]!);
      if (m[2] !== '-' && m[2] !== 'ACCEPT' && m[2] !== 'DROP')
        throw unreadable(where, `${clip(line)}: the policy is ACCEPT, DROP, or - for a user chain`);
      if (builtIn !== (m[2] !== '-'))
        throw unreadable(
          where,
          `${clip(line)}: ${builtIn ? 'a built-in chain has ACCEPT or DROP' : 'a user chain has -'}`,
        );
      const old = chains.get(key);
      if (builtIn) {
        old!.policy = m[2] === 'DROP' ? 'drop' : 'accept';
        out.undeclared.delete(key);
      } else if (!old) chains.set(key, { key, name: m[1]!, rules: [] });
      return;
    }
    const body = line.replace(/^\[\d+:\d+\]\s+/, '');
    let w: string[];
    let unquoted: string | undefined;
    const quoted = new Set<number>();
    try {
      w = words(body, quoted);
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      unquoted = e.message;
      w = body.split(/\s+/);
    }
    const command = w[0]!;
    const rest = w.slice(1);
    const ruleAt = (chain: LiveChain, wordsFrom: number): LiveRule => {
      const rule: LiveRule = {
        where,
        line: k + 1,
        text: body,
        region: [],
        unknown: [],
        newConnection: false,
        notes: [],
        verdict: { kind: 'none' },
      };
      specs.set(rule, rest.slice(wordsFrom).join(' '));
      if (unquoted !== undefined) rule.refused = unquoted;
      else
        try {
          const q = (j: number) => quoted.has(j + 1 + wordsFrom);
          const p = parseRule(rest.slice(wordsFrom), chain.name, options, q, natChanges);
          if (p.skip) return rule;
          parsed.set(rule, p);
        } catch (e) {
          if (!(e instanceof Refusal)) throw e;
          rule.refused = e.message;
          if (e.modelling) rule.modelling = true;
        }
      return rule;
    };
    const number = (v: string | undefined, chain: LiveChain, extra = 0) => {
      const n = Number(v);
      if (!/^\d+$/.test(v ?? '') || n < 1 || n > chain.rules.length + extra)
        throw unreadable(where, `${command} ${chain.name} ${v ?? ''}: no rule ${v ?? '(none)'} in chain ${chain.name}`);
      return n - 1;
    };
    const userChain = (name: string | undefined) => {
      const c = chainAt(name, command);
      if (c.policy) throw unreadable(where, `${command} ${name}: a built-in chain`);
      return c;
    };
    const place = (chain: LiveChain, rule: LiveRule, index: number, replace = 0) => {
      if (parsed.has(rule) || rule.refused) chain.rules.splice(index, replace, rule);
      else chain.rules.splice(index, replace); // `-6`: iptables skips the rule
    };
    switch (command) {
      case '-A':
      case '--append': {
        const chain = chainAt(rest[0], command);
        place(chain, ruleAt(chain, 1), chain.rules.length);
        return;
      }
      case '-I':
      case '--insert': {
        const chain = chainAt(rest[0], command);
        const numbered = /^\d+$/.test(rest[1] ?? '');
        const index = numbered ? number(rest[1], chain, 1) : 0;
        place(chain, ruleAt(chain, numbered ? 2 : 1), index);
        return;
      }
      case '-R':
      case '--replace': {
        const chain = chainAt(rest[0], command);
        place(chain, ruleAt(chain, 2), number(rest[1], chain), 1);
        return;
      }
      case '-D':
      case '--delete': {
        const chain = chainAt(rest[0], command);
        if (/^\d+$/.test(rest[1] ?? '') && rest.length === 2) {
          chain.rules.splice(number(rest[1], chain), 1);
          return;
        }
        const spec = rest.slice(1).join(' ');
        const index = chain.rules.findIndex((r) => specs.get(r) === spec);
        if (index < 0) throw unreadable(where, `${command} ${chain.name}: no such rule in chain ${chain.name}`);
        chain.rules.splice(index, 1);
        return;
      }
      case '-N':
      case '--new-chain':
      case '--new': {
        const name = rest[0];
        if (name === undefined || rest.length > 1 || name.startsWith('-'))
          throw unreadable(where, `${command}: give one chain name`);
        if (chains.has(`${table}/${name}`)) throw unreadable(where, `${command} ${name}: the chain exists`);
        chains.set(`${table}/${name}`, { key: `${table}/${name}`, name, rules: [] });
        return;
      }
      case '-P':
      case '--policy': {
        const chain = chainAt(rest[0], command);
        if (!chain.policy || (rest[1] !== 'ACCEPT' && rest[1] !== 'DROP'))
          throw unreadable(where, `${command} ${rest[0]}: a built-in chain and ACCEPT or DROP`);
        chain.policy = rest[1] === 'DROP' ? 'drop' : 'accept';
        out.undeclared.delete(chain.key);
        return;
      }
      case '-F':
      case '--flush':
      case '-Z':
      case '--zero': {
        const targets =
          rest[0] === undefined
            ? [...chains.values()].filter((c) => c.key.startsWith(`${table}/`))
            : [chainAt(rest[0], command)];
        if (command === '-F' || command === '--flush') for (const c of targets) c.rules = [];
        return;
      }
      case '-X':
      case '--delete-chain': {
        const doomed =
          rest[0] === undefined
            ? [...chains.values()].filter((c) => c.key.startsWith(`${table}/`) && !c.policy)
            : [userChain(rest[0])];
        for (const c of doomed) chains.delete(c.key);
        return;
      }
      case '-E':
      case '--rename-chain': {
        const chain = userChain(rest[0]);
        if (rest[1] === undefined || chains.has(`${table}/${rest[1]}`))
          throw unreadable(where, `${command} ${rest[0]}: give a new name no chain has`);
        chains.delete(chain.key);
        Object.assign(chain, { key: `${table}/${rest[1]}`, name: rest[1] });
        chains.set(chain.key, chain);
        return;
      }
      default:
        throw unreadable(where, `${clip(line)}: not an iptables-save line (-A CHAIN ...)`);
    }
  });
  if (table !== undefined) throw badRequest(`${file}: table ${table} has no COMMIT at the end`);
  for (const chain of chains.values())
    for (const rule of chain.rules) {
      const p = parsed.get(rule);
      if (p) resolve(chains, chain, rule, p);
    }
  return out;
}

/** The iptables-save text as a rule set (B.3). Lines that cannot be read carry their refusal. */
export function readIptables(text: string, file: string, options: ImportOptions = {}): LiveRuleset {
  const { chains, undeclared } = parseIptables(text, file, options);
  const notes: string[] = [];
  const main = options.chain ?? 'FORWARD';
  const table = options.table ?? 'filter';
  const filter = chains.get(`${table}/${main}`);
  if (!filter)
    throw badRequest(
      `${file}: no chain ${main} in table ${table} (give --chain INPUT or OUTPUT for a host's own traffic, ` +
        'or --table)',
    );
  // The chains a packet passes beside the deciding one: raw and mangle, each must accept it. A host's own packets
  // (OUTPUT) start in raw and mangle OUTPUT, never in PREROUTING; forwarded and sent ones leave by mangle POSTROUTING.
  const before =
    main === 'OUTPUT'
      ? ['raw/OUTPUT', 'mangle/OUTPUT', 'mangle/POSTROUTING']
      : [
          'raw/PREROUTING',
          'mangle/PREROUTING',
          `mangle/${main}`,
          ...(main === 'FORWARD' ? ['mangle/POSTROUTING'] : []),
        ];
  const upTo = before.indexOf(filter.key);
  const path = (upTo < 0 ? before : before.slice(0, upTo)).flatMap((key) => {
    const c = chains.get(key);
    return c && c.rules.length ? [c] : [];
  });
  path.push(filter);
  for (const c of path)
    if (undeclared.has(c.key))
      notes.push(`${file}: ${c.key} has no :${c.name} line; its policy is ACCEPT, the kernel's`);
  const translated =
    options.natAddress === undefined ? undefined : natNode(chains, options.natAddress, notes, options.iface);
  return {
    file,
    chains,
    path,
    checked: translated?.checked ?? natChecked(chains, options, notes),
    ...(translated?.nat ? { nat: translated.nat } : {}),
    lookup: (from, name) => chains.get(`${from.key.split('/')[0]}/${name}`),
    notes,
  };
}

const clip = (s: string) => (s.length > 60 ? `${s.slice(0, 57)}...` : s);

function resolve(chains: Map<string, LiveChain>, chain: LiveChain, rule: LiveRule, p: Parsed) {
  const table = chain.key.split('/')[0]!;
  Object.assign(rule, { region: p.region, unknown: p.unknown, newConnection: p.newConnection });
  if (p.interfaces.length) rule.interfaces = p.interfaces;
  rule.notes.push(...p.notes);
  if (p.empty) rule.notes.push(p.empty);
  const t = p.target;
  if (t === undefined) {
    rule.notes.push('no target: a counting rule, no verdict');
    return;
  }
  const userChain = chains.get(`${table}/${t}`);
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
function natChecked(chains: Map<string, LiveChain>, o: ImportOptions, notes: string[]): LiveRule[] {
  const seen = new Set<LiveChain>();
  const checked: LiveRule[] = [];
  const walk = (c: LiveChain | undefined, where: 'PREROUTING' | 'POSTROUTING') => {
    if (!c || seen.has(c)) return;
    seen.add(c);
    for (const r of c.rules) {
      const target = /(?:^|\s)-j\s+(\S+)/.exec(r.text)?.[1];
      if (target === 'DNAT' || target === 'REDIRECT' || target === 'NETMAP') {
        checked.push(r);
        if (where === 'PREROUTING' && !o.ignoreNat) {
          r.modelling = true;
          r.refused =
            `-j ${target} in table nat PREROUTING changes the destination the ${o.chain ?? 'FORWARD'} chain sees; ` +
            'model it as a NAT node (--nat-address) or give --ignore-nat';
        } else if (where === 'PREROUTING') {
          notes.push(`${r.where}: -j ${target} ignored (--ignore-nat)`);
          r.notes.push(`-j ${target} before filtering, ignored (--ignore-nat)`);
        }
      } else if ((target === 'SNAT' || target === 'MASQUERADE') && where === 'POSTROUTING')
        notes.push(`${r.where}: -j ${target} after filtering: the filter sees the addresses before it`);
      const jump = /(?:^|\s)-[jg]\s+(\S+)/.exec(r.text)?.[1];
      if (jump) walk(chains.get(`nat/${jump}`), where);
    }
  };
  walk(chains.get('nat/PREROUTING'), 'PREROUTING');
  walk(chains.get('nat/POSTROUTING'), 'POSTROUTING');
  return checked;
}

/** An option's value in a line of iptables-save, and whether `!` precedes the option. */
function optionOf(text: string, names: string[]): { value: string; negated: boolean } | undefined {
  const w = text.split(/\s+/);
  const k = w.findIndex((x) => names.includes(x));
  if (k < 0 || w[k + 1] === undefined) return undefined;
  return { value: w[k + 1]!, negated: w[k - 1] === '!' };
}

const PORT_OPTIONS = ['--dport', '--destination-port', '--dports', '--destination-ports'];

/**
 * The words of a nat line that are neither its chain, -s, -d, -i, -o, `-m addrtype --dst-type LOCAL`, `--ctstate
 * NEW` (nat chains see only a connection's first packet) nor its target with the target's options.
 */
function conditionsOf(text: string): string {
  const w = text.split(/\s+/).filter(Boolean);
  const out: string[] = [];
  for (let k = 0; k < w.length; k++) {
    const x = w[k]!;
    // -p and the destination ports are the forward table's own (nat.ts); so are the modules that read ports.
    if (x === '-m' && /^(tcp|udp|multiport)$/.test(w[k + 1] ?? '')) k++;
    else if (x === '-m' && /^(conntrack|state)$/.test(w[k + 1] ?? '') && /^--(ct)?state$/.test(w[k + 2] ?? '')) {
      if (w[k + 3] === 'NEW' && !/^--ct/.test(w[k + 4] ?? '')) k += 3;
      else out.push(x);
    } else if (x === '-m' && w[k + 1] === 'addrtype' && w[k + 2] === '--dst-type' && w[k + 3] === 'LOCAL') {
      if (/^--(src-type|limit-iface)/.test(w[k + 4] ?? '')) out.push(x);
      else k += 3;
    } else if (
      ['-A', '-I', '-s', '--source', '-d', '--destination', '-j', '-g', '-p', '--protocol'].includes(x) ||
      ['-i', '--in-interface', '-o', '--out-interface'].includes(x) ||
      /^--(dport|destination-port|dports|destination-ports)$/.test(x)
    ) {
      if (w[k - 1] === '!') out.pop();
      k++;
      if (x === '-I' && /^\d+$/.test(w[k + 1] ?? '')) k++;
    } else if (/^--(to-destination|to-source|to-ports|to|random|random-fully|persistent)$/.test(x)) {
      if (!/^--(random|random-fully|persistent)$/.test(x)) k++;
    } else out.push(x);
  }
  return out.join(' ');
}

/**
 * With --nat-address: the translating lines reached from nat PREROUTING and POSTROUTING become the NAT node
 * (nat.ts), each said in the report, or refused naming the line. Lines that take a packet out of translation
 * (RETURN, ACCEPT) are said: the model's NAT translates those packets too.
 */
function natNode(chains: Map<string, LiveChain>, address: string, notes: string[], iface?: InterfaceMap) {
  const seen = new Set<LiveChain>();
  const checked: LiveRule[] = [];
  const lines: NatLine[] = [];
  const byWhere = new Map<string, LiveRule>();
  /** A line's -s, -d, -i, -o and `--dst-type LOCAL`, and its other conditions (conditionsOf). */
  const fieldsOf = (text: string, jumps = false) => {
    const f = {
      source: optionOf(text, ['-s', '--source']),
      destination: optionOf(text, ['-d', '--destination']),
      inInterface: optionOf(text, ['-i', '--in-interface']),
      outInterface: optionOf(text, ['-o', '--out-interface']),
      local: /(?:^|\s)-m addrtype --dst-type LOCAL(?:\s|$)/.test(text) && !/--limit-iface/.test(text),
    };
    const rest = conditionsOf(text);
    // A jump's protocol and ports are no table entry's own: they stay conditions of the lines it reaches.
    const ported = jumps ? [optionOf(text, ['-p', '--protocol']), ...PORT_OPTIONS.map((o) => optionOf(text, [o]))] : [];
    const own = ported.flatMap((o, k) =>
      o ? [`${o.negated ? '! ' : ''}${k === 0 ? '-p' : PORT_OPTIONS[k - 1]} ${o.value}`] : [],
    );
    return { ...f, conditions: [...own, ...(rest ? [rest] : [])] };
  };
  type Fields = ReturnType<typeof fieldsOf>;
  /** A line's fields with those of the jumps that reached it: its own first; a field both give is said. */
  const merge = (own: Fields, outer: Fields): Fields => {
    const out = { ...own, conditions: [...outer.conditions, ...own.conditions] };
    for (const key of ['source', 'destination', 'inInterface', 'outInterface'] as const) {
      const o = outer[key];
      if (!o) continue;
      if (!own[key]) out[key] = o;
      else if (own[key].value !== o.value || own[key].negated !== o.negated)
        out.conditions.push(`${key} ${o.negated ? '! ' : ''}${o.value} of the jump`);
    }
    out.local = own.local || outer.local;
    return out;
  };
  const none: Fields = {
    source: undefined,
    destination: undefined,
    inInterface: undefined,
    outInterface: undefined,
    local: false,
    conditions: [],
  };
  const walk = (c: LiveChain | undefined, hook: 'PREROUTING' | 'POSTROUTING', outer: Fields) => {
    if (!c || seen.has(c)) return;
    seen.add(c);
    for (const r of c.rules) {
      const target = /(?:^|\s)-j\s+(\S+)/.exec(r.text)?.[1];
      const jump = /(?:^|\s)-[jg]\s+(\S+)/.exec(r.text)?.[1];
      const fields = merge(fieldsOf(r.text, !(target && NAT_TARGETS.has(target))), outer);
      if (target && NAT_TARGETS.has(target)) {
        checked.push(r);
        byWhere.set(r.where, r);
        const dport = optionOf(r.text, ['--dport', '--destination-port', '--dports', '--destination-ports']);
        const protocol = optionOf(r.text, ['-p', '--protocol']);
        // `A`, `A:B`, `:B`, `A:` and (multiport) lists of them; a port that is no number is NaN, refused by nat.ts.
        const ranges = dport?.value.split(',').map((x): [number, number] => {
          const [a = '', b = a] = x.split(':');
          return [a === '' ? 0 : Number(a), b === '' ? 65535 : Number(b)];
        });
        const to = optionOf(r.text, ['--to-destination', '--to-source', '--to'])?.value;
        const toPorts = optionOf(r.text, ['--to-ports'])?.value;
        const { source, destination, inInterface, outInterface, local } = fields;
        lines.push({
          where: r.where,
          text: r.text,
          target,
          hook,
          ...(destination ? { destination } : {}),
          ...(source ? { source } : {}),
          ...(inInterface ? { inInterface } : {}),
          ...(outInterface ? { outInterface } : {}),
          ...(local ? { local } : {}),
          ...(to === undefined ? {} : { to }),
          ...(toPorts === undefined ? {} : { toPorts }),
          ...(protocol ? { protocol } : {}),
          ...(dport && ranges ? { dports: { ranges, negated: dport.negated } } : {}),
          conditions: fields.conditions,
        });
      } else if (r.verdict.kind === 'return' || r.verdict.kind === 'accept') {
        const note = `takes packets out of translation; the model's NAT translates them too`;
        r.notes.push(note);
        notes.push(`${r.where}: ${note}`);
      }
      // The jump's own conditions hold for every line of the chain it reaches.
      if (jump && !NAT_TARGETS.has(jump)) walk(chains.get(`nat/${jump}`), hook, fields);
    }
  };
  walk(chains.get('nat/PREROUTING'), 'PREROUTING', none);
  walk(chains.get('nat/POSTROUTING'), 'POSTROUTING', none);
  const { nats: nat, refusals } = readNats(
    address,
    lines,
    (where, note) => {
      // Its conditions are in the note: the NAT node does not read them, so they are not the line's approximation.
      const r = byWhere.get(where);
      if (r) Object.assign(r, { unknown: [], notes: [note, ...r.notes] });
      notes.push(`${where}: ${note}`);
    },
    iface,
  );
  for (const f of refusals) {
    const r = byWhere.get(f.where);
    if (r) Object.assign(r, { refused: f.reason, modelling: true });
  }
  return { checked, nat };
}
