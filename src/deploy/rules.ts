/**
 * What every deployment format shares: a firewall node's rules normalised once, and how boxes read as addresses,
 * protocols and port ranges.
 *
 * Every format gets the same first-match rule list, normalised once: documented defaults filled in (action DENY,
 * protocol ANY, ports *, directional false), `directional` rules followed by their reverse, and protocol OTHER
 * compiled away for the formats that cannot say "neither TCP nor UDP" in one rule (all but nftables): an OTHER
 * rule becomes, before it, the TCP and UDP part of what the later rules (and the default) decide for its
 * addresses, then an all-protocols rule. Except boxes are compiled away the same way, for every format
 * (`withoutExcepts`). Rules keep their list order; formats with priorities or rule numbers
 * number them in that order.
 * A rule's box means what the engine verifies (`ruleBox`): ports constrain TCP and UDP only, so a rule of protocol
 * ANY with ports is a box of TCP and UDP. An address is a mask and a value: a prefix (`A/P`, any length) where
 * the fixed bits lead, otherwise a non-contiguous mask (`10.-1.0.1` is 10.0.0.1/255.0.255.255; iptables, Open
 * vSwitch, ipfw, FortiOS wildcard addresses and nft's `& mask ==` all take one).
 */
import { parseAddress } from '../model/address.js';
import { badRequest, quote } from '../model/errors.js';
import type { Elements, Node } from '../model/types.js';
import { PROTO, UNIVERSE, exceptBoxes, intersect, ruleBoxes, type Box } from '../model/space.js';

export interface Rule {
  allow: boolean;
  box: Box;
  /** The element (its place in the node's list, from 0) the rule comes from. */
  element: number;
}

export const TCP = 0;
export const UDP = 1;
export const OTHER = 2;

export const isFull = (b: Box, d: number) => b[2 * d] === UNIVERSE[2 * d] && b[2 * d + 1] === UNIVERSE[2 * d + 1];
export const withDim = (b: Box, d: number, lo: number, hi: number): Box => {
  const out = [...b];
  out[2 * d] = lo;
  out[2 * d + 1] = hi;
  return out;
};

/**
 * The node's rules as boxes in first-match order, with defaults and reverse rules; OTHER compiled away unless the
 * format can say "neither TCP nor UDP" itself (`otherNative`: nftables' `meta l4proto != { tcp, udp }`).
 */
export function normalisedRules(
  node: Node,
  { otherNative = false }: { otherNative?: boolean } = {},
): { rules: Rule[]; defaultAllow: boolean } {
  const fw = node.configuration?.firewall;
  if (node.functionalType !== 'FIREWALL' || !fw)
    throw badRequest(`node ${node.name} is not a firewall with a configuration`);
  const defaultAllow = fw.defaultAction === 'ALLOW';
  let listed: Rule[] = [];
  const excepts: (readonly Box[] | undefined)[] = [];
  (fw.elements ?? []).forEach((e: Elements, k) => {
    if (e.action === 'ALLOW_COND') throw badRequest(`rule ${e.id ?? k + 1}: action ALLOW_COND cannot be deployed`);
    if (e.approximation !== undefined)
      throw badRequest(
        `rule ${e.id ?? k + 1}: approximation="${e.approximation}" (${e.origin ?? 'an imported line'}): an ` +
          'approximated import has two rule lists and cannot be deployed; import it exactly (--iface, --ipset)',
      );
    const allow = e.action === 'ALLOW';
    // A directional rule matches its reverse too, right after it (`ruleBoxes`, as the engine verifies it).
    for (const box of ruleBoxes(e)) {
      listed.push({ allow, box, element: k });
      excepts.push(e.except?.length ? exceptBoxes(e) : undefined);
    }
  });
  if (excepts.some((x) => x)) listed = withoutExcepts(listed, excepts, defaultAllow, fw.elements ?? []);
  const rules: Rule[] = [];
  listed.forEach((r, k) => {
    if (r.box[2 * PROTO] !== OTHER || otherNative) return rules.push(r);
    for (const proto of [TCP, UDP]) {
      const scope = withDim(r.box, PROTO, proto, proto);
      for (const later of listed.slice(k + 1)) {
        const part = intersect(later.box, scope);
        if (part) rules.push({ allow: later.allow, box: part, element: r.element });
      }
      rules.push({ allow: defaultAllow, box: scope, element: r.element });
    }
    rules.push({ allow: r.allow, box: withDim(r.box, PROTO, 0, 2), element: r.element });
  });
  return { rules, defaultAllow };
}

/** Box intersections the compilation of except boxes may take, and plain rules it may give. */
const EXCEPT_WORK = 5_000_000;
const EXCEPT_RULES = 200_000;

/**
 * Rules with except boxes (docs/SEMANTICS.md "Rules with except") as plain first-match rules, as OTHER is compiled:
 * the packets a rule leaves out go on to the later rules, so before the rule come, for each except box within it,
 * the later rules (already plain) and the default restricted to that box. Exact; refused, naming the rule, past
 * EXCEPT_WORK or EXCEPT_RULES (an import of many lines behind many RETURNs: deploy the live file itself).
 */
function withoutExcepts(
  listed: readonly Rule[],
  excepts: readonly (readonly Box[] | undefined)[],
  defaultAllow: boolean,
  elements: readonly Elements[],
): Rule[] {
  // The plain rules after the one at hand, last first.
  const reversed: Rule[] = [];
  let work = 0;
  for (let k = listed.length - 1; k >= 0; k--) {
    const r = listed[k]!;
    const head: Rule[] = [];
    for (const x of excepts[k] ?? []) {
      const scope = intersect(x, r.box);
      if (!scope) continue;
      for (let j = reversed.length - 1; j >= 0; j--) {
        const part = intersect(reversed[j]!.box, scope);
        if (part) head.push({ allow: reversed[j]!.allow, box: part, element: r.element });
      }
      head.push({ allow: defaultAllow, box: scope, element: r.element });
      work += reversed.length + 1;
      if (work > EXCEPT_WORK || reversed.length + head.length > EXCEPT_RULES) {
        const e = elements[r.element]!;
        throw badRequest(
          `rule ${e.id ?? r.element + 1}: its except boxes (${e.origin ?? 'an imported line'}) compile into more ` +
            `than ${EXCEPT_RULES} plain rules or ${EXCEPT_WORK} steps; deploy the live rule set itself`,
        );
      }
    }
    reversed.push(r);
    for (let j = head.length - 1; j >= 0; j--) reversed.push(head[j]!);
  }
  return reversed.reverse();
}

/** Splits rules of TCP and UDP (ANY with ports) into a TCP and a UDP rule, for formats that need one protocol. */
export function perProtocol(rules: Rule[]): Rule[] {
  return rules.flatMap((r) =>
    protocolOf(r.box) === 'tcp+udp' ? [TCP, UDP].map((p) => ({ ...r, box: withDim(r.box, PROTO, p, p) })) : [r],
  );
}

export interface Address {
  any: boolean;
  ip: string;
  /** Prefix length, or undefined when the mask is not contiguous. */
  prefix?: number;
  mask: string;
}

/**
 * An address of a rule box as value and mask. Each octet of a rule box is an aligned block (one value, all values,
 * or the block a prefix cuts), and intersections of such blocks are such blocks again.
 */
export function address(b: Box, at: number): Address {
  const octets = [0, 1, 2, 3].map((k) => [b[2 * (at + k)]!, b[2 * (at + k) + 1]!] as const);
  const masks = octets.map(([lo, hi]) => {
    const size = hi - lo + 1;
    if ((size & (size - 1)) !== 0 || lo % size !== 0) throw new Error(`octet ${lo}-${hi} is not a block of a mask`);
    return 256 - size;
  });
  const maskValue = masks.reduce((v, m) => v * 256 + m, 0);
  const hostBits = 2 ** 32 - 1 - maskValue;
  // Host bits all at the end (bitwise operators read 2^32 - 1 as -1 and 2^32 as 0: still right).
  const contiguous = (hostBits & (hostBits + 1)) === 0;
  const ones = 32 - Math.log2(hostBits + 1);
  return {
    any: maskValue === 0,
    ip: octets.map(([lo]) => lo).join('.'),
    mask: masks.join('.'),
    prefix: contiguous ? ones : undefined,
  };
}

export const cidr = (a: Address, sep = '/') =>
  a.prefix !== undefined ? `${a.ip}/${a.prefix}` : `${a.ip}${sep}${a.mask}`;
/** The protocols of a normalised rule: TCP, UDP, both (ANY with ports), all (`ip`), or OTHER where it is kept. */
export function protocolOf(b: Box): 'tcp' | 'udp' | 'tcp+udp' | 'ip' | 'other' {
  const [lo, hi] = range(b, PROTO);
  if (lo === TCP && hi === OTHER) return 'ip';
  if (lo === TCP && hi === UDP) return 'tcp+udp';
  if (lo === hi) return lo === TCP ? 'tcp' : lo === UDP ? 'udp' : 'other';
  throw new Error(`protocols ${lo}-${hi}: not a normalised rule`);
}
export const range = (b: Box, d: number) => [b[2 * d]!, b[2 * d + 1]!] as const;

export function header(node: Node, id: number, how: string): string {
  return `# nfv: firewall ${node.name} (node ${id}), ${how}`;
}

/** What every translator takes (nftables takes `sets` as well). */
export interface TranslatorOptions {
  /**
   * The rules alone, one way. By default a format that tracks connections lets the packets of a connection its
   * rules allowed come back first (replies, related ICMP errors); docs/SEMANTICS.md "Deployed state".
   */
  stateless?: boolean;
  /**
   * iptables: a host firewall's node (docs/SEMANTICS.md "Host firewalls") written as the host's INPUT chain (its
   * rules for packets to this address) and OUTPUT chain (for packets from it).
   */
  host?: string;
}

/** The comment line that says which of the two a file is; `how` names the stateful rule(s) of its format. */
export function stateLine(stateless: boolean | undefined, how: string): string {
  return stateless
    ? '# stateless: the rules alone, one way: a reply passes only where a rule allows it'
    : `# stateful: replies of allowed connections come back (${how}); --stateless: the rules alone`;
}

/** Index pairs of a longest common subsequence of two rule lists, in order: the rules a change leaves alone. */
export function commonSubsequence(a: string[], b: string[]): [number, number][] {
  const n = b.length;
  const length = Array.from({ length: a.length + 1 }, () => new Array<number>(n + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = n - 1; j >= 0; j--)
      length[i]![j] = a[i] === b[j] ? length[i + 1]![j + 1]! + 1 : Math.max(length[i + 1]![j]!, length[i]![j + 1]!);
  const pairs: [number, number][] = [];
  for (let i = 0, j = 0; i < a.length && j < n;) {
    if (a[i] === b[j]) pairs.push([i++, j++]);
    else if (length[i + 1]![j]! >= length[i]![j + 1]!) i++;
    else j++;
  }
  return pairs;
}

/** The packets to (`at` DST) or from (`at` SRC) one address. */
export function hostBox(host: string, at: number): Box {
  const octets = parseAddress(host);
  if (!octets || octets.includes(-1)) throw badRequest(`host: ${quote(host)} is not an IPv4 address (--host)`);
  const box = [...UNIVERSE];
  octets.forEach((o, k) => (box[2 * (at + k)] = box[2 * (at + k) + 1] = o));
  return box;
}
