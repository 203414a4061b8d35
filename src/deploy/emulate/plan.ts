/**
 * The emulation of an answer, as data: namespaces, veth pairs, addresses, pinned paths, each firewall's nft file and
 * the probes. Nothing here runs anything (`run.ts` does), so the plan is the same bytes for the same answer.
 *
 * Network: one namespace per node (`n<k>`, k its position in the graph), one veth pair per link (`l<i>` at both
 * ends), each end carrying its node's name as a /32 with the neighbour's as peer. End hosts never forward; packets go
 * to the neighbours a node lists (the engine's direction); links have ARP off (`create`). Paths are pinned by
 * policy routing: per source and destination, the first (a shortest path, the default route) in slot 0, the next
 * in slots 1-7 by their TOS value: the kernel's routing rules read the TOS bits 0x1C only, so 8 paths per pair is
 * the bound, 4 per direction when requirements go both ways. A node has a table per slot (`pin`). Replies carry
 * the probe's TOS back (the kernel's ICMP echo and TCP reset do; `tcp_reflect_tos` makes a SYN-ACK do it; the UDP
 * echo responder does it itself), so every reply crosses the firewalls the probe crossed, as a stateful firewall
 * needs.
 *
 * Firewalls: `nftables(node, id)` exactly as `nfv deploy nftables` writes it, loaded with three additions that
 * decide no requirement packet: `counter` on every rule and a last rule `counter` (the policy's packets), so a drop
 * is tied to the rule whose counter rose; and a first rule accepting DSCP 32-63 (the positive controls: a probe
 * that must arrive on its path whatever the rules say, so that broken routing never passes as isolation). A second
 * table puts each DSCP value in its own conntrack zone, so the same ports probed on two paths are two connections.
 *
 * NAT nodes: an nft table of snat and static dnat (`natFile`) in their namespace, with the same zones; a probe's
 * routes are pinned for the addresses it carries on each hop (`walk`), and a requirement is probed also addressed
 * to each NAT on its path that leads to its destination (the model's traffic of a requirement). Load balancers
 * forward unchanged, as in the model.
 */
import { approximatedNodes } from '../../model/approximation.js';
import { parseAddress } from '../../model/address.js';
import { beyondBound, quote } from '../../model/errors.js';
import { END_HOSTS } from '../../model/resources.js';
import { DPORT, PROTO, SPORT, boxOf, exceptBoxes, ruleBoxes, type Box } from '../../model/space.js';
import type { NFV, Node, Property } from '../../model/types.js';
import { forwardChain, iptables } from '../iptables.js';
import { nftChain, nftables } from '../nftables.js';
import {
  addressesSeen,
  candidatePackets,
  firewallOf,
  forwardTable,
  translateList,
  hides,
  passNode,
  passesOn,
  searchWitness,
  type Net,
  type NatNode,
  type Packet,
} from './witness.js';

/** Pinned paths per pair besides the default route: the TOS bits routing rules read (0x1C). */
export const PINNED_PATHS = 7;
/** Simple paths enumerated per pair at most (the shortest are pinned), and the search's steps. */
const PATH_SEARCH_STEPS = 200_000;
/** Sampled ports per requirement, path and protocol: destination and source ports. */
export const DPORT_SAMPLES = 6;
export const SPORT_SAMPLES = 3;
/**
 * The DSCP bits of a probe: the path (bits 0-2, the TOS bits routing rules read), a probe sent again to read
 * counters (bit 3), the direction (bit 4: the probes from the lower-numbered node of a pair), a positive control
 * (bit 5). Each value is a conntrack zone of its own (`ZONES`): a probe from B to A is never taken for the reply of
 * an earlier one from A to B with the same ports, nor a control for a probe.
 */
const RESEND_DSCP = 8;
const DIRECTION_DSCP = 16;
const CONTROL_DSCP = 32;
const TABLE_BASE = 1000;
/** The table of each path slot (TOS value): 100-107. */
const SLOT_TABLE = 100;

export type ProbeProto = 'tcp' | 'udp' | 'icmp';

export interface Probe {
  ns: string;
  src: string;
  dst: string;
  proto: ProbeProto;
  sport: number;
  dport: number;
  tos: number;
  /**
   * Arrived only if the connection is made (a reset does not count): a probe the model delivers to a NAT (a port
   * its table does not forward), which the NAT's own reset answers, and which counts only if it reaches the
   * destination's listener instead.
   */
  connect?: boolean;
}

/** How a requirement's witness path was found (docs/emulate.md, witness paths). */
export type WitnessSearch = 'found' | 'none' | 'stopped' | 'unpinned' | 'not searched';

/** One requirement's probes: per path, its regular probes and its control. */
export interface RequirementPlan {
  index: number;
  name: Property['name'];
  src: string;
  dst: string;
  traffic: string;
  claim: boolean | undefined;
  /**
   * Per path: its nodes, its probes (to the destination, and to each NAT on the path that leads there), a control
   * per address probed, the namespaces of the firewalls it crosses.
   */
  paths: { nodes: string[]; probes: number[]; controls: number[]; firewalls: string[] }[];
  /** Simple paths that exist beyond those probed (the bound), or that the search did not reach. */
  unprobedPaths: number | 'more';
  /**
   * The path (index into `paths`) on which the model lets some packet of the requirement's traffic through (every
   * packet, for a complete reachability): searched for reachabilities and for isolations claimed broken.
   */
  witness?: number;
  witnessSearch: WitnessSearch;
}

export interface FirewallPlan {
  node: string;
  ns: string;
  /**
   * The chain as deployed: its rules (the stateful rule first; nft statements, or iptables rule specifications with
   * `--iptables`) and its policy.
   */
  rules: string[];
  policy: 'accept' | 'drop';
  /**
   * The counters (`deciding`) of the rules that drop, and of a dropping policy: a probe not answered is read as
   * dropped only once these account for it (prober.ts), never because its time ran out.
   */
  drops: number[];
}

/**
 * The positions, in the loaded chain's counters (the control rule 0, the deployed rules from 1, then the policy's),
 * of the rules that accept or drop a packet (nft `accept`/`drop`, iptables `-j ACCEPT`/`-j DROP`; not the
 * conntrack rule), and of the policy where it does the same.
 */
export function deciding(f: { rules: string[]; policy: 'accept' | 'drop' }, allow: boolean): number[] {
  const decides = allow ? /(^|\s)(-j )?accept$/i : /(^|\s)(-j )?drop$/i;
  const rules = f.rules.flatMap((text, i) => (decides.test(text) && !/ct ?state/.test(text) ? [i + 1] : []));
  if (f.policy === (allow ? 'accept' : 'drop')) rules.push(f.rules.length + 1);
  return rules;
}

export interface Plan {
  namespaces: string[];
  create: string;
  remove: string;
  config: Record<string, string>;
  sysctl: [string, string][];
  nft: Record<string, string>;
  /** What each firewall is loaded with: `nfv deploy nftables`, or with `--iptables` `nfv deploy iptables`. */
  firewallFormat: 'nftables' | 'iptables';
  /** With `--iptables`: per firewall namespace, `nfv deploy iptables` of its node, loaded unchanged. */
  iptables: Record<string, string>;
  /** The rule put first in each firewall's chain: it accepts the positive controls (iptables arguments). */
  controlRule: string[];
  listeners: { ns: string; addr: string; tcp: number[]; udp: number[] }[];
  probes: Probe[];
  /** Rounds of probes that share no ports (a socket's ports are one connection at a time). */
  rounds: number[][];
  requirements: RequirementPlan[];
  firewalls: FirewallPlan[];
  /** Seconds to wait for an answer before the drop counters are read (a probe's fate is never read from it). */
  timeout: number;
  /** Seconds after which probes neither answered nor counted by a firewall's drop make the emulation fail. */
  undecidedSeconds: number;
  parallel: number;
  /** The TOS bits of a probe sent again to read counters. */
  resendTos: number;
}

/** A net against a hang, not a verdict: probes still undecided then end the emulation with an error. */
const UNDECIDED_SECONDS = 120;

const refuse = (message: string) => beyondBound(`emulate: ${message}`);
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

/** The nft file loaded in a firewall's namespace: the deployed file with counters and the control rule. */
export function loadedFile(node: Node, id: number): string {
  const lines = nftables(node, id).split('\n');
  const out: string[] = [];
  for (const line of lines) {
    if (line.startsWith('\t\ttype ')) {
      out.push(line, `\t\tip dscp ${CONTROL_DSCP}-63 accept`);
      continue;
    }
    if (line === '\t}') out.push('\t\tcounter');
    out.push(line.startsWith('\t\t') ? line.replace(/(\s)(accept|drop)$/, '$1counter $2') : line);
  }
  return `${out.join('\n')}\n`;
}

const ZONES = [
  'table ip nfvemulate {',
  '\tchain pre {',
  '\t\ttype filter hook prerouting priority raw; policy accept;',
  // `ct zone set` takes an integer, not a DSCP: a map from each DSCP to zone DSCP + 1.
  `\t\tct zone set ip dscp map { ${[...Array(64).keys()].map((d) => `${d} : ${d + 1}`).join(', ')} }`,
  '\t}',
  '}',
  '',
].join('\n');

/**
 * In each namespace that answers probes: a SYN-ACK is routed by the listening socket's TOS (none), not by the TOS
 * `tcp_reflect_tos` gives the packet, so it took the default route back, where a stateful firewall that never saw
 * the SYN dropped it. A route chain that changes the mark makes the kernel route the packet again, by its own TOS.
 */
const REPLY_ROUTE = [
  'table ip nfvreply {',
  '\tchain out {',
  '\t\ttype route hook output priority mangle; policy accept;',
  '\t\tip dscp != 0 meta mark set 1',
  '\t}',
  '}',
  '',
].join('\n');

/** An nft match of an address field on an octet pattern (-1: any octet), with its trailing space; '' for any. */
function patternMatch(field: 'saddr' | 'daddr', pattern: number[]): string {
  if (pattern.every((x) => x === -1)) return '';
  if (pattern.every((x) => x !== -1)) return `ip ${field} ${pattern.join('.')} `;
  const mask = pattern.map((x) => (x === -1 ? 0 : 255)).join('.');
  return `ip ${field} & ${mask} == ${pattern.map((x) => Math.max(x, 0)).join('.')} `;
}

/**
 * A NAT node's nft table (docs/emulate.md, NAT): from a hidden host to outside the hidden patterns and not to the
 * NAT, the source becomes the NAT's address; from outside to the NAT's address, the destination becomes the one
 * host the requirements of that source ask for (a static dnat: the model's "each hidden pattern" is a choice the
 * kernel cannot make); replies are translated back by conntrack. Everything else passes unchanged.
 */
function natFile(
  addr: string,
  hidden: number[][],
  dnat: Map<string, string>,
  forward: NatNode['forward'],
  translate?: NatNode['translate'],
): string {
  const side = (field: 'saddr' | 'daddr', text: string) =>
    text === '*' ? '' : text.includes('/') ? `ip ${field} ${text} ` : patternMatch(field, parseAddress(text)!);
  // A translate list (SNAT by destination): a hidden source's packets an entry takes, whatever their destination.
  const snat = translate
    ? hidden.flatMap((h) =>
        translate.map(
          (f) =>
            `\t\t${patternMatch('saddr', h)}${f.src === undefined ? '' : side('saddr', f.src)}` +
            `${side('daddr', f.dst)}${forwardMatch(f.match)}snat to ${addr}`,
        ),
      )
    : [
        ...hidden.map((h) => `\t\t${patternMatch('daddr', h)}return`),
        `\t\tip daddr ${addr} return`,
        ...hidden.map((h) => `\t\t${patternMatch('saddr', h)}snat to ${addr}`),
      ];
  return [
    'table ip nfvnat {',
    '\tchain pre {',
    '\t\ttype nat hook prerouting priority dstnat; policy accept;',
    ...hidden.map((h) => `\t\t${patternMatch('saddr', h)}return`),
    ...[...dnat].sort().map(([from, to]) => `\t\tip saddr ${from} ip daddr ${addr} dnat to ${to}`),
    // The forward table in its order: nft's dnat ends the chain, so the first entry that matches decides, and a
    // packet none takes stays addressed to the NAT (delivered to it).
    ...(forward ?? []).map(
      (f) =>
        `\t\t${scope(f, addr)}${forwardMatch(f.match)}dnat to ${f.to}${f.toPort === undefined ? '' : `:${f.toPort}`}`,
    ),
    '\t}',
    '\tchain post {',
    '\t\ttype nat hook postrouting priority srcnat; policy accept;',
    ...(translate ? [`\t\tip daddr ${addr} return`] : []),
    ...snat,
    '\t}',
    '}',
    '',
  ].join('\n');
}

/**
 * An nft match of a forward entry's source and destination, with its trailing space: the NAT's own address unless
 * the entry names another (`*`: any); a packet from the NAT's own address is never forwarded, as in the model.
 */
function scope(f: NonNullable<NatNode['forward']>[number], addr: string): string {
  const side = (field: 'saddr' | 'daddr', text: string) =>
    text.includes('/') ? `ip ${field} ${text} ` : patternMatch(field, parseAddress(text)!);
  const dst = f.dst === undefined ? `ip daddr ${addr} ` : `ip saddr != ${addr} ${side('daddr', f.dst)}`;
  return `${f.src === undefined ? '' : side('saddr', f.src)}${dst}`;
}

/** An nft match of a forward entry's protocol and destination ports, with its trailing space; '' for every packet. */
function forwardMatch(match: Box): string {
  const [plo, phi] = [match[2 * PROTO]!, match[2 * PROTO + 1]!];
  const [lo, hi] = [match[2 * DPORT]!, match[2 * DPORT + 1]!];
  const proto =
    plo === phi ? (['meta l4proto tcp ', 'meta l4proto udp ', 'meta l4proto != { tcp, udp } '] as const)[plo]! : '';
  const both = plo === 0 && phi === 1 ? 'meta l4proto { tcp, udp } ' : '';
  const ports = lo === 0 && hi === 65535 ? '' : `th dport ${lo === hi ? lo : `${lo}-${hi}`} `;
  return `${proto}${both}${ports}`;
}

/**
 * The address each node has in the emulation: its name, or for a node named by a pattern (a whole network, `-1`
 * octets) one address of it, the wildcards filled with the first value 1-254 that makes an address no node is named
 * and that no rule or NAT names (in node order, so the same graph gives the same addresses). Names that are neither
 * are refused by the caller.
 */
function addresses(names: string[], named: string[]): string[] {
  const taken = new Set([...names, ...named].filter((n) => IPV4.test(n)));
  return names.map((name) => {
    if (IPV4.test(name)) return name;
    const octets = parseAddress(name);
    if (!octets) return name;
    for (let v = 1; v <= 254; v++) {
      const a = octets.map((o) => (o === -1 ? v : o)).join('.');
      if (!taken.has(a)) {
        taken.add(a);
        return a;
      }
    }
    throw refuse(`node ${quote(name)}: every address of the pattern is another node's name`);
  });
}

/** Sample points of [lo, hi]: its ends and the rules' ends (and one past them) inside it, at most `count`. */
function samples(lo: number, hi: number, ends: number[], count: number): number[] {
  // Port 0 cannot be bound or connected to: its class is probed at 1 when the range holds 1.
  const moved = [lo, hi, ...ends].map((v) => (v === 0 ? 1 : v));
  const inside = [...new Set(moved)].filter((v) => v >= lo && v <= hi).sort((a, b) => a - b);
  if (inside.length === 0) return [];
  if (inside.length <= count) return inside;
  // Spread evenly, the ends kept.
  return [
    ...new Set(Array.from({ length: count }, (_, k) => inside[Math.round((k * (inside.length - 1)) / (count - 1))]!)),
  ];
}

function pathsBetween(a: number, b: number, next: number[][], transit: (k: number) => boolean) {
  const found: number[][] = [];
  let steps = 0;
  let complete = true;
  const seen = new Uint8Array(next.length);
  seen[a] = 1;
  // One stack, copied only for a path found: a copy per step was most of the plan's time at 1,200 nodes.
  const path = [a];
  const walk = (at: number) => {
    if (++steps > PATH_SEARCH_STEPS) return void (complete = false);
    for (const n of next[at]!) {
      if (seen[n]) continue;
      if (n === b) {
        found.push([...path, n]);
        continue;
      }
      if (!transit(n)) continue;
      seen[n] = 1;
      path.push(n);
      walk(n);
      path.pop();
      seen[n] = 0;
    }
  };
  walk(a);
  // Shortest first, then by node positions: the same order for the same graph.
  found.sort((x, y) => x.length - y.length || x.join(',').localeCompare(y.join(',')));
  return { found, complete };
}

export function planEmulation(
  nfv: NFV,
  options: { timeoutSeconds?: number; parallel?: number; iptables?: boolean } = {},
): Plan {
  const graphs = nfv.graphs.graph ?? [];
  if (graphs.length !== 1) throw refuse(`the answer has ${graphs.length} graphs; one graph is emulated at a time`);
  const graph = graphs[0]!;
  const approximated = approximatedNodes(nfv).map((n) => n.name);
  if (approximated.length)
    throw refuse(
      `firewall ${approximated.join(', ')} has approximated rules (may and must lists); its live rule set, not ` +
        'nfv deploy nftables of them, is what would run',
    );
  const nodes = graph.node;
  const index = new Map(nodes.map((n, k) => [n.name, k]));
  // Addresses a rule or a NAT names one by one are avoided too: a pattern's address is one its rules treat as they
  // treat the whole pattern.
  const named = nodes.flatMap((n) => [
    ...(n.configuration?.firewall?.elements ?? []).flatMap((e) => [e.source, e.destination]),
    ...(n.configuration?.nat?.source ?? []),
    ...(n.configuration?.nat?.translate ?? []).flatMap((f) => [f.dst, ...(f.src ? [f.src] : [])]),
  ]);
  const addr = addresses(
    nodes.map((n) => n.name),
    named,
  );
  for (const n of nodes) {
    if (!IPV4.test(n.name) && (n.functionalType === 'NAT' || !parseAddress(n.name)))
      throw refuse(
        `node ${quote(n.name)}: its name is not one IPv4 address${n.functionalType === 'NAT' ? '' : ' or pattern'}`,
      );
    if (n.functionalType === 'NAT')
      for (const source of n.configuration?.nat?.source ?? [])
        if (!parseAddress(source)) throw refuse(`NAT ${n.name}: source ${quote(source)} is not an address pattern`);
    if (n.functionalType === 'FIREWALL' && !n.configuration?.firewall)
      throw refuse(`firewall ${n.name} has no rules to deploy (emulate the result of nfv simulate)`);
  }
  const ns = (k: number) => `n${k}`;
  const endhost = (k: number) => END_HOSTS.has(nodes[k]!.functionalType ?? '');
  // Links: each neighbour pair once, in node order.
  const links: [number, number][] = [];
  const linkOf = new Map<string, number>();
  const next: number[][] = nodes.map(() => []);
  nodes.forEach((n, a) => {
    for (const nb of n.neighbour ?? []) {
      const b = index.get(nb.name);
      if (b === undefined || b === a) continue;
      const key = a < b ? `${a} ${b}` : `${b} ${a}`;
      if (linkOf.has(key)) continue;
      linkOf.set(key, links.length);
      links.push([Math.min(a, b), Math.max(a, b)]);
    }
  });
  // Forwarding follows each node's own neighbour list, as in the engine: a link listed by one end only carries
  // packets from that end (and the replies back); its veth exists either way.
  nodes.forEach((n, a) => {
    for (const nb of n.neighbour ?? []) {
      const b = index.get(nb.name);
      if (b !== undefined && b !== a && !next[a]!.includes(b)) next[a]!.push(b);
    }
  });
  for (const list of next) list.sort((x, y) => x - y);
  const link = (a: number, b: number) => `l${linkOf.get(a < b ? `${a} ${b}` : `${b} ${a}`)}`;

  // NAT nodes: their address, the patterns they hide, their forward table, and the static dnat of each outside
  // source of a NAT without a table (filled below).
  const addressOf = (n: Node) => (to: string) => {
    const k = index.get(to);
    if (k !== undefined) return addr[k]!;
    if (IPV4.test(to)) return to;
    throw refuse(`NAT ${n.name}: forward to ${quote(to)}, which is neither a node nor one IPv4 address`);
  };
  const nats = new Map<number, NatNode & { dnat: Map<string, string> }>();
  nodes.forEach((n, k) => {
    const hidden = (n.configuration?.nat?.source ?? []).map((x) => parseAddress(x)!);
    if (n.functionalType !== 'NAT') return;
    const translate = translateList(n);
    // A NAT translating by destination delivers what comes to it as one with an empty table does.
    const forward = forwardTable(n, addressOf(n)) ?? (translate ? [] : undefined);
    nats.set(k, { addr: addr[k]!, hidden, forward, ...(translate ? { translate } : {}), dnat: new Map() });
  });
  const firewallRules = new Map<number, ReturnType<typeof firewallOf>>();
  nodes.forEach((n, k) => {
    if (n.functionalType === 'FIREWALL') firewallRules.set(k, firewallOf(n));
  });
  const net: Net = {
    nodes,
    addr,
    next,
    transit: (k) => !endhost(k),
    nats,
    firewalls: firewallRules,
  };
  /**
   * Where a probe goes along `path` (rules aside: each NAT translating as its nft table does): per node, the
   * source it arrives with and the destination it leaves with (what its routing reads, after its dnat and before
   * its snat), the static dnat entries it needs, and the packet as it arrives. Undefined when it is delivered
   * before `dst` (to a node on the way, or to a NAT from a host it hides) or leaves a NAT towards another host;
   * with `toNat`, a probe that a NAT's forward table does not take is followed to the NAT (`delivered`: its index).
   */
  const walk = (path: number[], start: Packet, dst: string, toNat: boolean) => {
    let p = start;
    const hops: { from: string; to: string }[] = [];
    const dnats: [number, string][] = [];
    let tabled = false;
    for (let i = 0; i < path.length; i++) {
      const k = path[i]!;
      const from = p.src;
      if (i > 0 && i < path.length - 1) {
        const step = passNode(net, k, p, dst, false);
        const nat = nats.get(k);
        if (step.kind === 'delivered' && toNat && nat?.forward && p.dst === nat.addr && !hides(nat.hidden, p.src)) {
          hops.push({ from, to: p.dst });
          return { hops, dnats, seen: p.src, packet: p, delivered: i, tabled: true };
        }
        if (step.kind !== 'on') return undefined;
        if (step.dnat && nat?.forward) tabled = true;
        else if (step.dnat) dnats.push([k, p.src]);
        p = step.packet;
      }
      hops.push({ from, to: p.dst });
    }
    return p.dst === dst ? { hops, dnats, seen: p.src, packet: p, delivered: undefined, tabled } : undefined;
  };

  const create = [
    ...nodes.map((_, k) => `netns add ${ns(k)}`),
    // Both ends of a link have one MAC address, and ARP is off (below): a frame sent to its own address is the
    // peer's. The kernel's ARP table is one for every namespace, and past net.ipv4.neigh.default.gc_thresh3 (1,024
    // by default; only the host's root can raise it) new entries fail and packets are dropped ("neighbor table
    // overflow"): at 600 nodes and more, that dropped whole requirements' probes. Entries of NOARP devices count
    // for nothing.
    ...links.map(([a, b], i) => {
      const mac = `02:${[24, 16, 8, 0].map((s) => ((i >>> s) & 255).toString(16).padStart(2, '0')).join(':')}:01`;
      const end = (k: number) => `name l${i} netns ${ns(k)} address ${mac}`;
      return `link add ${end(a)} type veth peer ${end(b)}`;
    }),
  ];
  const config: string[][] = nodes.map(() => ['link set lo up']);
  links.forEach(([a, b], i) => {
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const) {
      config[x]!.push(`addr add ${addr[x]}/32 peer ${addr[y]}/32 dev l${i}`, `link set l${i} up arp off`);
    }
  });

  // Firewalls: the deployed file, loaded with counters, the control rule and conntrack zones by DSCP.
  const firewalls: FirewallPlan[] = [];
  const nft: Record<string, string> = {};
  const iptablesFiles: Record<string, string> = {};
  const firewallAt = new Map<number, FirewallPlan>();
  nodes.forEach((n, k) => {
    if (n.functionalType !== 'FIREWALL') return;
    let f: Omit<FirewallPlan, 'drops'>;
    if (options.iptables) {
      // `nfv deploy iptables` unchanged (iptables counts every rule and the policy); the control rule is inserted
      // first by the prober, and the conntrack zones are the same nft table.
      const chain = forwardChain(n);
      const file = iptables(n, n.id ?? k);
      const rules = file
        .split('\n')
        .flatMap((l) => (l.startsWith('-A FORWARD ') ? [l.slice('-A FORWARD '.length)] : []));
      f = { node: n.name, ns: ns(k), rules, policy: chain.policy === 'ACCEPT' ? 'accept' : 'drop' };
      iptablesFiles[ns(k)] = file;
      nft[ns(k)] = ZONES;
    } else {
      const chain = nftChain(n);
      f = { node: n.name, ns: ns(k), rules: chain.rules.map((r) => r.text), policy: chain.policy };
      nft[ns(k)] = `${loadedFile(n, n.id ?? k)}${ZONES}`;
    }
    const planned = { ...f, drops: deciding(f, false) };
    firewalls.push(planned);
    firewallAt.set(k, planned);
  });

  // Paths per source and destination, each pinned in a table of its own on every node it crosses. The TOS values
  // are shared by the two directions of a pair (a probe's replies match the other direction's rules): with
  // requirements both ways, each direction has 4 of the 8 (the default route is one of the first direction's).
  const both = new Set<string>();
  const asked = new Set<string>();
  for (const p of nfv.propertyDefinition?.property ?? []) {
    const [s, d] = [index.get(p.src), index.get(p.dst)];
    if (s === undefined || d === undefined || s === d) continue;
    asked.add(`${s} ${d}`);
    if (asked.has(`${d} ${s}`)) both.add(s < d ? `${s} ${d}` : `${d} ${s}`);
  }
  const pairIndex = new Map<string, number>();
  const pairs = new Map<
    string,
    {
      paths: number[][];
      /** Paths pinned as some requirement's witness: kept when a later witness takes a slot. */
      witnesses: number;
      slots: number;
      found: number;
      complete: boolean;
      fixed: boolean;
      first: number;
      table: number;
    }
  >();
  // A NetworkForwardingPath is the one path of its source and destination (the last one listed, as the engine
  // reads them).
  const fixedPath = (s: number, d: number) => {
    const listed = (nfv.networkForwardingPaths?.path ?? [])
      .filter((p) => p.pathNode[0]?.name === nodes[s]!.name && p.pathNode.at(-1)?.name === nodes[d]!.name)
      .at(-1);
    if (!listed) return undefined;
    const path = listed.pathNode.map((pn) => index.get(pn.name));
    path.forEach((k, i) => {
      if (k === undefined || (i > 0 && !next[path[i - 1]!]!.includes(k)))
        throw refuse(
          `forwarding path ${listed.id ?? ''}: ${quote(listed.pathNode[i]!.name)} is not linked to the node before`,
        );
    });
    return path as number[];
  };
  const pairOf = (s: number, d: number) => {
    const key = `${s} ${d}`;
    let pair = pairs.get(key);
    if (pair) return pair;
    const unordered = s < d ? key : `${d} ${s}`;
    if (!pairIndex.has(unordered)) pairIndex.set(unordered, pairIndex.size);
    const shared = both.has(unordered);
    const [first, slots] = shared
      ? [s < d ? 0 : (PINNED_PATHS + 1) / 2, (PINNED_PATHS + 1) / 2]
      : [0, PINNED_PATHS + 1];
    const fixed = fixedPath(s, d);
    const { found, complete } = fixed
      ? { found: [fixed], complete: true }
      : pathsBetween(s, d, next, (k) => !endhost(k));
    // The first path is the default route, a shortest path; the next ones are pinned by their TOS.
    pair = {
      paths: found.slice(0, slots),
      witnesses: 0,
      slots,
      found: found.length,
      complete,
      fixed: fixed !== undefined,
      first,
      table: TABLE_BASE + pairIndex.get(unordered)! * (PINNED_PATHS + 1),
    };
    pairs.set(key, pair);
    return pair;
  };

  // Witness paths, before any path is pinned: per requirement, a path on which the model lets its traffic through
  // (witness.ts). The shortest paths pinned for a pair may all cross a firewall that drops the class while a longer
  // path passes it (at 1,200 nodes, 2 reachabilities of 800 whose 8 pinned paths all crossed one firewall's
  // drop): such a witness takes the slot of the last shortest path, after the default route and the pair's other
  // witnesses.
  const properties = nfv.propertyDefinition?.property ?? [];
  const witnessOf: { path?: number[]; packet?: Packet; search: WitnessSearch }[] = properties.map((p) => {
    const [s, d] = [index.get(p.src), index.get(p.dst)];
    const searched =
      p.name === 'REACHABILITY_PROPERTY' ||
      p.name === 'COMPLETE_REACHABILITY_PROPERTY' ||
      (p.name === 'ISOLATION_PROPERTY' && p.isSat === false);
    if (s === undefined || d === undefined || s === d || !searched) return { search: 'not searched' };
    const all = p.name === 'COMPLETE_REACHABILITY_PROPERTY';
    const box = boxOf({ src: p.src, dst: p.dst, srcPort: p.srcPort, dstPort: p.dstPort, proto: p.lv4Proto });
    const seen = addressesSeen(net, addr[s]!, addr[d]!);
    // A complete reachability: every packet of its traffic on one path, addressed to its destination.
    const packets = candidatePackets(net, box, addr[s]!, all ? { ...seen, targets: [addr[d]!] } : seen);
    const pair = pairOf(s, d);
    // A pinned path that is a witness moves before the shortest paths a later witness may displace.
    const promote = (path: number[]) => {
      const at = pair.paths.indexOf(path);
      if (at <= pair.witnesses) return;
      pair.paths.splice(at, 1);
      pair.paths.splice(pair.witnesses + 1, 0, path);
      pair.witnesses++;
    };
    for (const path of pair.paths) {
      const packet = passesOn(net, path, packets, addr[d]!, all);
      if (packet) {
        promote(path);
        return { path, packet, search: 'found' };
      }
    }
    if (pair.fixed) return { search: 'none' };
    const found = searchWitness(net, s, d, packets, addr[d]!, all);
    if (!found.path) return { search: found.stopped ? 'stopped' : 'none' };
    if (pair.witnesses >= pair.slots - 1) return { path: found.path, packet: found.packet, search: 'unpinned' };
    pair.paths.splice(pair.witnesses + 1, 0, found.path);
    pair.witnesses++;
    if (pair.paths.length > pair.slots) pair.paths.pop();
    return { path: found.path, packet: found.packet, search: 'found' };
  });

  // A path pinned for the addresses a probe carries on it (`walk`): on every node, a route forward to the
  // destination it leaves with and back to the source it came with, in the table of the path's slot (one table
  // per TOS value, chosen by one rule each). Two paths of one slot that leave a node for one address by different
  // neighbours collide: the later one gets its pair's table, under a rule on both addresses and the TOS. A rule
  // per source, destination and path (212,536 rules at 1,200 nodes, up to 6,454 in one namespace) made every
  // forwarded packet walk thousands of rules: the kernel's rule lookup is linear.
  const slotRoutes = nodes.map(() => new Map<string, number>());
  const pin = (p: number[], slot: number, table: number, hops: { from: string; to: string }[]) => {
    const tos = slot === 0 ? '' : ` tos 0x${(slot << 2).toString(16).padStart(2, '0')}`;
    p.forEach((at, i) => {
      const lines = config[at]!;
      const route = (target: string, via: number, other: string) => {
        const key = `${target} ${slot}`;
        const taken = slotRoutes[at]!.get(key);
        const line = `route add ${target}/32 via ${addr[via]} dev ${link(at, via)} table`;
        if (taken === undefined) {
          slotRoutes[at]!.set(key, via);
          lines.push(`${line} ${SLOT_TABLE + slot}`);
        } else if (taken !== via) {
          // After the slot rules of TOS values (a pair's slot 0 rule reads no TOS) and before its own slot's.
          const pref = slot === 0 ? 180 : 100;
          lines.push(`${line} ${table}`, `rule add from ${other}/32 to ${target}/32${tos} table ${table} pref ${pref}`);
        }
      };
      const { from, to } = hops[i]!;
      if (i < p.length - 1) route(to, p[i + 1]!, from);
      if (i > 0) route(from, p[i - 1]!, to);
    });
  };

  const probes: Probe[] = [];
  /** Per probe: its source and destination ports as the destination sees them (after every NAT). */
  const arrivesAs: string[] = [];
  const listeners = new Map<number, { tcp: Set<number>; udp: Set<number> }>();
  const requirements: RequirementPlan[] = [];
  const boxesOf = new Map<number, Box[]>();
  const boxesAt = (k: number): Box[] => {
    let boxes = boxesOf.get(k);
    if (!boxes) {
      const rules = firewallAt.has(k) ? (nodes[k]!.configuration?.firewall?.elements ?? []) : [];
      // Except boxes cut the probes' range too: a packet in one goes on past its rule.
      boxes = rules.flatMap((e) => [...ruleBoxes(e), ...exceptBoxes(e)]);
      boxesOf.set(k, boxes);
    }
    return boxes;
  };
  properties.forEach((p, r) => {
    const [s, d] = [index.get(p.src), index.get(p.dst)];
    if (s === undefined || d === undefined)
      throw refuse(`requirement ${r} (${p.src} -> ${p.dst}): both ends must be nodes of the graph, one address each`);
    const box = boxOf({ src: p.src, dst: p.dst, srcPort: p.srcPort, dstPort: p.dstPort, proto: p.lv4Proto });
    const pair = pairOf(s, d);
    const crossed = new Set(pair.paths.flat());
    const ruleBoxesOnPaths: Box[] = [...crossed].flatMap((k) => boxesAt(k));
    const ends = (dim: number) =>
      ruleBoxesOnPaths.flatMap((b) => [b[2 * dim]!, b[2 * dim + 1]!, b[2 * dim]! - 1, b[2 * dim + 1]! + 1]);
    // Where no rule on the paths reads a port range (each holds all of it or none), every port of it meets the
    // same rules: one sample, not the range's ends as well (at 1,200 nodes, 60% of the probes were such repeats).
    const oneClass = (dim: number) =>
      ruleBoxesOnPaths.every((b) => {
        const [lo, hi] = [box[2 * dim]!, box[2 * dim + 1]!];
        return !(b[2 * dim]! > lo && b[2 * dim]! <= hi) && !(b[2 * dim + 1]! >= lo && b[2 * dim + 1]! < hi);
      });
    const dportSamples = samples(box[2 * DPORT]!, box[2 * DPORT + 1]!, ends(DPORT), DPORT_SAMPLES);
    const dports = oneClass(DPORT) ? dportSamples.slice(0, 1) : dportSamples;
    // A source port from the ephemeral range where the requirement allows any: what a client would use.
    const [slo, shi] = [box[2 * SPORT]!, box[2 * SPORT + 1]!];
    const sportSamples = samples(slo, shi, [40000, ...ends(SPORT)], SPORT_SAMPLES);
    const sports = oneClass(SPORT) ? [slo <= 40000 && 40000 <= shi ? 40000 : sportSamples[0]!] : sportSamples;
    // Each path gets other source ports of the same classes: between two ends of the rules' and the requirement's
    // ranges every port meets the same rules, and different ports let the paths' probes go at once.
    const cuts = [
      ...new Set([slo, shi + 1, ...ruleBoxesOnPaths.flatMap((b) => [b[2 * SPORT]!, b[2 * SPORT + 1]! + 1])]),
    ]
      .filter((v) => v >= slo && v <= shi + 1)
      .sort((x, y) => x - y);
    const onPath = (v: number, j: number) => {
      const at = cuts.findIndex((c) => c > v);
      const [lo, size] = [cuts[at - 1]!, cuts[at]! - cuts[at - 1]!];
      const moved = lo + ((v - lo + j) % size);
      return moved === 0 ? v : moved;
    };
    const protos: ProbeProto[] = [];
    if (box[2 * PROTO]! <= 0 && box[2 * PROTO + 1]! >= 0) protos.push('tcp');
    if (box[2 * PROTO]! <= 1 && box[2 * PROTO + 1]! >= 1) protos.push('udp');
    if (box[2 * PROTO + 1]! >= 2) protos.push('icmp');
    const listen = listeners.get(d) ?? { tcp: new Set<number>(), udp: new Set<number>() };
    listeners.set(d, listen);
    const [src, dst] = [addr[s]!, addr[d]!];
    const witness = witnessOf[r]!;
    const witnessAt = witness.path && witness.search === 'found' ? pair.paths.indexOf(witness.path) : -1;
    const plan: RequirementPlan = {
      index: r,
      name: p.name,
      src: nodes[s]!.name,
      dst: nodes[d]!.name,
      traffic: `${p.lv4Proto ?? 'ANY'} ${p.srcPort ?? '*'} -> ${p.dstPort ?? '*'}`,
      claim: p.isSat,
      paths: [],
      unprobedPaths: pair.complete ? Math.max(0, pair.found - pair.paths.length) : 'more',
      ...(witnessAt >= 0 ? { witness: witnessAt } : {}),
      witnessSearch: witness.search,
    };
    const isolation = p.name === 'ISOLATION_PROPERTY';
    const PROTO_OF: Record<ProbeProto, number> = { tcp: 0, udp: 1, icmp: 2 };
    pair.paths.forEach((path, j) => {
      const tos = ((pair.first + j) | (s < d ? DIRECTION_DSCP : 0)) << 2;
      const ids: number[] = [];
      const controls: number[] = [];
      // Addressed to the destination, and to each NAT on the path that leads there (the model's traffic of a
      // requirement: the way to reach what a NAT hides).
      const targets = [dst, ...path.slice(1, -1).flatMap((k) => (nats.has(k) ? [addr[k]!] : []))];
      for (const target of targets) {
        // The probes of this target, grouped by where they go: a NAT's forward table sends each protocol and port
        // its own way. An isolation's probe that the table does not forward is followed to the NAT, where the
        // model delivers it: it must not reach the destination.
        const groups = new Map<
          string,
          { walked: NonNullable<ReturnType<typeof walk>>; items: [ProbeProto, number, number][] }
        >();
        const consider = (proto: ProbeProto, dport: number, sport: number) => {
          const packet = { src, dst: target, proto: PROTO_OF[proto], sport, dport };
          const walked = walk(path, packet, dst, isolation && target !== dst && proto !== 'icmp');
          if (!walked) return;
          const key = `${JSON.stringify(walked.hops)} ${walked.delivered ?? ''}`;
          const group = groups.get(key) ?? { walked, items: [] };
          groups.set(key, group);
          if (!group.items.some(([q, dp, sp]) => q === proto && dp === dport && sp === sport))
            group.items.push([proto, dport, sport]);
        };
        for (const proto of protos) {
          if (proto === 'icmp') consider(proto, 0, 0);
          else for (const dport of dports) for (const sport of sports) consider(proto, dport, onPath(sport, j));
        }
        // The witness's own packet, on the witness path: a class of the model's passing traffic, whichever ports the
        // samples chose.
        const w = witness.packet;
        if (j === witnessAt && w && w.dst === target)
          consider((['tcp', 'udp', 'icmp'] as const)[w.proto]!, w.dport, w.sport);
        for (const [key, { walked, items }] of groups) {
          // One static dnat per NAT and outside source: a second hidden host asked of the same source through the
          // same NAT is not probed through its address (NOT_COVERED).
          if (walked.dnats.some(([k, from]) => (nats.get(k)!.dnat.get(from) ?? dst) !== dst)) continue;
          for (const [k, from] of walked.dnats) nats.get(k)!.dnat.set(from, dst);
          const delivered = walked.delivered !== undefined;
          const pinned = delivered ? path.slice(0, walked.delivered! + 1) : path;
          pin(pinned, pair.first + j, pair.table + pair.first + j, walked.hops);
          // The destination's port as it arrives (a forward may move it); for a probe delivered to a NAT, the port it
          // would arrive with if the NAT forwarded it after all.
          const arriving = (proto: ProbeProto, dport: number) =>
            delivered || !walked.tabled
              ? dport
              : (walk(path, { src, dst: target, proto: PROTO_OF[proto], sport: 0, dport }, dst, false)?.packet.dport ??
                dport);
          const add = (probe: Omit<Probe, 'ns' | 'src' | 'dst'>) => {
            probes.push({ ns: ns(s), src, dst: target, ...probe });
            arrivesAs.push(`${walked.seen}:${probe.sport} ${dst}:${arriving(probe.proto, probe.dport)}`);
            return probes.length - 1;
          };
          for (const [proto, dport, sport] of items) {
            if (proto === 'icmp') {
              ids.push(add({ proto, sport: 0, dport: 0, tos }));
              continue;
            }
            listen[proto].add(arriving(proto, dport));
            ids.push(add({ proto, sport, dport, tos, ...(delivered && proto === 'tcp' ? { connect: true } : {}) }));
          }
          // The control: TCP to a listened port (or ICMP where no port is probed), DSCP 32 + the path's bits; where
          // a forward table or a delivery decided the way, a probe of the group itself (the control goes its way).
          // A delivered probe's control must be answered by the NAT itself: TCP (its reset) or ICMP (its echo), of
          // a port the table does not forward either.
          const [proto0, dport0] = items[0]!;
          const goesSo = ([proto, dport]: [ProbeProto, number]) => {
            const other = walk(path, { src, dst: target, proto: PROTO_OF[proto], sport: 0, dport }, dst, delivered);
            return other !== undefined && `${JSON.stringify(other.hops)} ${other.delivered ?? ''}` === key;
          };
          const own: [ProbeProto, number][] = delivered
            ? [
                ['tcp', dport0],
                ['icmp', 0],
              ]
            : [[proto0, dport0]];
          const control: [ProbeProto, number] =
            walked.tabled || delivered
              ? (own.find(goesSo) ?? own[0]!)
              : dports[0] === undefined
                ? ['icmp', 0]
                : ['tcp', dports[0]];
          if (control[0] !== 'icmp' && !delivered) listen[control[0]].add(arriving(control[0], control[1]));
          controls.push(
            add({
              proto: control[0],
              sport: control[0] === 'icmp' ? 0 : 40000 + j,
              dport: control[1],
              tos: (CONTROL_DSCP << 2) | tos,
            }),
          );
        }
      }
      plan.paths.push({
        nodes: path.map((k) => nodes[k]!.name),
        probes: ids,
        controls,
        firewalls: path.filter((k) => firewallAt.has(k)).map(ns),
      });
    });
    requirements.push(plan);
  });

  // Rounds: a probe waits for the next round when one with its ports and addresses is in this one, either way
  // round (two nodes probing each other from and to the same port would open one connection together).
  // Behind a NAT, the ports as the destination sees them count too: two hidden hosts probing one destination from
  // the same port at once would make the NAT move one of the ports, and the firewalls after it see another port.
  const rounds: number[][] = [];
  const free = new Map<string, number>();
  probes.forEach((p, k) => {
    const ends = [`${p.src}:${p.sport}`, `${p.dst}:${p.dport}`].sort();
    const keys = p.proto === 'icmp' ? [`icmp ${k}`] : [`${p.proto} ${ends.join(' ')}`, `${p.proto} ${arrivesAs[k]}`];
    const round = Math.max(...keys.map((key) => free.get(key) ?? 0));
    for (const key of keys) free.set(key, round + 1);
    (rounds[round] ??= []).push(k);
  });
  nats.forEach((nat, k) => {
    nft[ns(k)] = `${natFile(nat.addr, nat.hidden, nat.dnat, nat.forward, nat.translate)}${ZONES}`;
  });
  for (const k of listeners.keys()) nft[ns(k)] = `${nft[ns(k)] ?? ''}${REPLY_ROUTE}`;

  // The slot tables' rules: TOS values first (pref 150), slot 0, which reads no TOS, last (pref 200).
  slotRoutes.forEach((routes, k) => {
    const slots = new Set([...routes.keys()].map((key) => Number(key.split(' ')[1])));
    for (const slot of [...slots].sort((a, b) => a - b)) {
      const tos = slot === 0 ? '' : ` tos 0x${(slot << 2).toString(16).padStart(2, '0')}`;
      config[k]!.push(`rule add${tos} table ${SLOT_TABLE + slot} pref ${slot === 0 ? 200 : 150}`);
    }
  });
  const namespaces = nodes.map((_, k) => ns(k));
  return {
    namespaces,
    create: `${create.join('\n')}\n`,
    remove: `${namespaces.map((n) => `netns delete ${n}`).join('\n')}\n`,
    config: Object.fromEntries(config.map((lines, k) => [ns(k), `${[...new Set(lines)].join('\n')}\n`])),
    sysctl: [
      ['net/ipv4/ip_forward', '1'],
      ['net/ipv4/conf/all/rp_filter', '0'],
      ['net/ipv4/conf/default/rp_filter', '0'],
      ['net/ipv4/tcp_reflect_tos', '1'],
    ],
    nft,
    firewallFormat: options.iptables ? 'iptables' : 'nftables',
    iptables: iptablesFiles,
    // TOS bit 0x80: DSCP 32-63, the controls (as `ip dscp 32-63 accept` in the nft files).
    controlRule: [
      '-m',
      'tos',
      '--tos',
      `0x${(CONTROL_DSCP << 2).toString(16)}/0x${(CONTROL_DSCP << 2).toString(16)}`,
      '-j',
      'ACCEPT',
    ],
    listeners: [...listeners].map(([k, l]) => ({
      ns: ns(k),
      addr: addr[k]!,
      tcp: [...l.tcp].sort((a, b) => a - b),
      udp: [...l.udp].sort((a, b) => a - b),
    })),
    probes,
    rounds,
    requirements,
    firewalls,
    timeout: options.timeoutSeconds ?? 0.3,
    undecidedSeconds: UNDECIDED_SECONDS,
    parallel: options.parallel ?? 1000,
    resendTos: RESEND_DSCP << 2,
  };
}
