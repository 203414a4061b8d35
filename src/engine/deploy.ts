/**
 * Deployable configuration from a firewall node: iptables-restore, Open vSwitch flows, ipfw and FortiOS.
 *
 * Every format gets the same first-match rule list, normalised once: documented defaults filled in (action DENY,
 * protocol ANY, ports *, directional false), `directional` rules followed by their reverse, and protocol OTHER
 * compiled away, because no format but iptables can say "neither TCP nor UDP": an OTHER rule becomes, before it,
 * the TCP and UDP part of what the later rules (and the default) decide for its addresses, then an all-protocols
 * rule. Rules keep their list order; formats with priorities or rule numbers number them in that order.
 * Addresses with trailing -1 octets become CIDR prefixes; a -1 before a fixed octet becomes an address with a
 * non-contiguous mask (iptables, Open vSwitch, ipfw, FortiOS wildcard addresses all take one).
 */
import { badRequest } from '../model/errors.js';
import type { Elements, Node } from '../model/types.js';
import { DPORT, DST, PROTO, SPORT, SRC, UNIVERSE, intersect, type Box } from './space.js';
import { ruleBox } from './flows.js';

export type DeployFormat = 'iptables' | 'ovs' | 'ipfw' | 'fortios';
export const DEPLOY_FORMATS: readonly DeployFormat[] = ['iptables', 'ovs', 'ipfw', 'fortios'];

interface Rule {
  allow: boolean;
  box: Box;
}

export interface DeployFile {
  format: DeployFormat;
  filename: string;
  content: string;
}

const TCP = 0;
const UDP = 1;
const OTHER = 2;

const isFull = (b: Box, d: number) => b[2 * d] === UNIVERSE[2 * d] && b[2 * d + 1] === UNIVERSE[2 * d + 1];
const withDim = (b: Box, d: number, lo: number, hi: number): Box => {
  const out = [...b];
  out[2 * d] = lo;
  out[2 * d + 1] = hi;
  return out;
};
const anyPorts = (b: Box) => withDim(withDim(b, SPORT, 0, 65535), DPORT, 0, 65535);

function reversed(b: Box): Box {
  const out = [...b];
  for (let k = 0; k < 8; k++) {
    out[2 * SRC + k] = b[2 * DST + k]!;
    out[2 * DST + k] = b[2 * SRC + k]!;
  }
  for (const [x, y] of [
    [SPORT, DPORT],
    [DPORT, SPORT],
  ] as const) {
    out[2 * x] = b[2 * y]!;
    out[2 * x + 1] = b[2 * y + 1]!;
  }
  return out;
}

/** The node's rules as boxes in first-match order, with defaults, reverse rules and no OTHER protocol. */
export function normalisedRules(node: Node): { rules: Rule[]; defaultAllow: boolean } {
  const fw = node.configuration?.firewall;
  if (node.functionalType !== 'FIREWALL' || !fw)
    throw badRequest(`node ${node.name} is not a firewall with a configuration`);
  const defaultAllow = fw.defaultAction === 'ALLOW';
  const listed: Rule[] = [];
  (fw.elements ?? []).forEach((e: Elements, k) => {
    if (e.action === 'ALLOW_COND') throw badRequest(`rule ${e.id ?? k + 1}: action ALLOW_COND cannot be deployed`);
    let box = ruleBox(e);
    // Ports mean nothing to protocols other than TCP and UDP.
    if (box[2 * PROTO] === OTHER) box = anyPorts(box);
    const allow = e.action === 'ALLOW';
    listed.push({ allow, box });
    if (e.directional === true) listed.push({ allow, box: reversed(box) });
  });
  const rules: Rule[] = [];
  listed.forEach((r, k) => {
    if (r.box[2 * PROTO] !== OTHER) return rules.push(r);
    for (const proto of [TCP, UDP]) {
      const scope = withDim(r.box, PROTO, proto, proto);
      for (const later of listed.slice(k + 1)) {
        const part = intersect(later.box, scope);
        if (part) rules.push({ allow: later.allow, box: part });
      }
      rules.push({ allow: defaultAllow, box: scope });
    }
    rules.push({ allow: r.allow, box: withDim(r.box, PROTO, 0, 2) });
  });
  return { rules, defaultAllow };
}

/** Splits rules with ports over all protocols into a TCP and a UDP rule (ports need one of them). */
function perProtocol(rules: Rule[]): Rule[] {
  return rules.flatMap((r) => {
    const ported = !isFull(r.box, SPORT) || !isFull(r.box, DPORT);
    if (r.box[2 * PROTO] === 0 && r.box[2 * PROTO + 1] === 2 && ported) {
      return [TCP, UDP].map((p) => ({ allow: r.allow, box: withDim(r.box, PROTO, p, p) }));
    }
    return [r];
  });
}

interface Address {
  any: boolean;
  ip: string;
  /** Prefix length, or undefined when the mask is not contiguous. */
  prefix?: number;
  mask: string;
}

function address(b: Box, at: number): Address {
  const fixed = [0, 1, 2, 3].map((k) => !isFull(b, at + k));
  const ip = [0, 1, 2, 3].map((k) => (fixed[k] ? b[2 * (at + k)] : 0)).join('.');
  const mask = fixed.map((f) => (f ? 255 : 0)).join('.');
  const count = fixed.filter(Boolean).length;
  const contiguous = fixed.every((f, k) => f === k < count);
  return { any: count === 0, ip, mask, prefix: contiguous ? 8 * count : undefined };
}

const cidr = (a: Address, sep = '/') => (a.prefix !== undefined ? `${a.ip}/${a.prefix}` : `${a.ip}${sep}${a.mask}`);
const protocolOf = (b: Box): 'tcp' | 'udp' | 'ip' =>
  b[2 * PROTO] === b[2 * PROTO + 1] ? (b[2 * PROTO] === TCP ? 'tcp' : 'udp') : 'ip';
const range = (b: Box, d: number) => [b[2 * d]!, b[2 * d + 1]!] as const;

function header(node: Node, id: number, how: string): string {
  return `# nfv: firewall ${node.name} (node ${id}), ${how}`;
}

export function iptables(node: Node, id: number): string {
  const { rules, defaultAllow } = normalisedRules(node);
  const lines = [
    header(node, id, 'load with: iptables-restore < FILE'),
    '*filter',
    ':INPUT ACCEPT [0:0]',
    `:FORWARD ${defaultAllow ? 'ACCEPT' : 'DROP'} [0:0]`,
    ':OUTPUT ACCEPT [0:0]',
  ];
  for (const r of perProtocol(rules)) {
    const parts = ['-A FORWARD'];
    const src = address(r.box, SRC);
    const dst = address(r.box, DST);
    if (!src.any) parts.push(`-s ${cidr(src)}`);
    if (!dst.any) parts.push(`-d ${cidr(dst)}`);
    const proto = protocolOf(r.box);
    if (proto !== 'ip') {
      parts.push(`-p ${proto}`);
      for (const [d, flag] of [
        [SPORT, '--sport'],
        [DPORT, '--dport'],
      ] as const) {
        const [lo, hi] = range(r.box, d);
        if (!isFull(r.box, d)) parts.push(`${flag} ${lo === hi ? lo : `${lo}:${hi}`}`);
      }
    }
    parts.push(`-j ${r.allow ? 'ACCEPT' : 'DROP'}`);
    lines.push(parts.join(' '));
  }
  lines.push('COMMIT');
  return `${lines.join('\n')}\n`;
}

/** A port range as value/mask pairs, exactly (ranges starting at 0 included). */
export function portMasks(lo: number, hi: number): string[] {
  if (lo === 0 && hi === 65535) return [];
  const out: string[] = [];
  let at = lo;
  while (at <= hi) {
    let size = 1;
    while (size < 65536 && at % (size * 2) === 0 && at + size * 2 - 1 <= hi) size *= 2;
    const mask = 0xffff & ~(size - 1);
    out.push(mask === 0xffff ? `0x${at.toString(16)}` : `0x${at.toString(16)}/0x${mask.toString(16)}`);
    at += size;
  }
  return out;
}

export function bridgeOf(node: Node): string {
  return (node.configuration?.description ?? '').split(':')[0]!.replace(/[^A-Za-z0-9_.-]/g, '') || 'br0';
}

export function openVswitch(node: Node, id: number): string {
  const { rules, defaultAllow } = normalisedRules(node);
  const expanded = perProtocol(rules);
  if (expanded.length > 60000)
    throw badRequest(`node ${node.name}: ${expanded.length} rules are more than Open vSwitch priorities can order`);
  const lines = [header(node, id, `load with: ovs-ofctl add-flows ${bridgeOf(node)} FILE`)];
  expanded.forEach((r, k) => {
    const match = [`priority=${60000 - k}`, protocolOf(r.box)];
    const src = address(r.box, SRC);
    const dst = address(r.box, DST);
    if (!src.any) match.push(`nw_src=${cidr(src)}`);
    if (!dst.any) match.push(`nw_dst=${cidr(dst)}`);
    const sports = protocolOf(r.box) === 'ip' ? [] : portMasks(...range(r.box, SPORT));
    const dports = protocolOf(r.box) === 'ip' ? [] : portMasks(...range(r.box, DPORT));
    for (const sp of sports.length ? sports : [undefined]) {
      for (const dp of dports.length ? dports : [undefined]) {
        const m = [...match, ...(sp ? [`tp_src=${sp}`] : []), ...(dp ? [`tp_dst=${dp}`] : [])];
        lines.push(`${m.join(',')},actions=${r.allow ? 'NORMAL' : 'drop'}`);
      }
    }
  });
  lines.push(`priority=0,actions=${defaultAllow ? 'NORMAL' : 'drop'}`);
  return `${lines.join('\n')}\n`;
}

export function ipfw(node: Node, id: number): string {
  const { rules, defaultAllow } = normalisedRules(node);
  const expanded = perProtocol(rules);
  if (expanded.length > 6500)
    throw badRequest(`node ${node.name}: ${expanded.length} rules are more than ipfw rule numbers can order`);
  const lines = [
    '#!/bin/sh',
    header(node, id, 'run as root on the firewall'),
    'cmd="/sbin/ipfw -q"',
    '${cmd} -f flush',
  ];
  expanded.forEach((r, k) => {
    const proto = protocolOf(r.box);
    const end = (at: number, d: number) => {
      const a = address(r.box, at);
      const [lo, hi] = range(r.box, d);
      const ports = proto === 'ip' || isFull(r.box, d) ? '' : ` ${lo === hi ? lo : `${lo}-${hi}`}`;
      return `${a.any ? 'any' : cidr(a, ':')}${ports}`;
    };
    lines.push(
      `\${cmd} add ${100 + 10 * k} ${r.allow ? 'allow' : 'deny'} ${proto} from ${end(SRC, SPORT)} to ${end(DST, DPORT)}`,
    );
  });
  lines.push(`\${cmd} add 65534 ${defaultAllow ? 'allow' : 'deny'} ip from any to any`);
  return `${lines.join('\n')}\n`;
}

/** FortiOS CLI: address objects, custom services and policies in first-match order. */
export function fortios(node: Node, id: number): string {
  const { rules, defaultAllow } = normalisedRules(node);
  const addresses: string[] = [];
  const services: string[] = [];
  const policies: string[] = [];
  const known = new Map<string, string>();
  const addressName = (a: Address) => {
    if (a.any) return 'all';
    const key = cidr(a);
    let name = known.get(key);
    if (!name) {
      name = `nfv-${id}-a${known.size + 1}`;
      known.set(key, name);
      const body =
        a.prefix !== undefined
          ? [`        set subnet ${a.ip} ${a.mask}`]
          : ['        set type wildcard', `        set wildcard ${a.ip} ${a.mask}`];
      addresses.push(`    edit "${name}"`, `        set comment "${key}"`, ...body, '    next');
    }
    return name;
  };
  const portRange = (b: Box) => {
    const [dl, dh] = range(b, DPORT);
    const [sl, sh] = range(b, SPORT);
    const text = (lo: number, hi: number) => `${Math.max(lo, 1)}-${hi}`;
    return `${text(dl, dh)}:${text(sl, sh)}`;
  };
  rules.forEach((r, k) => {
    const proto = protocolOf(r.box);
    const ported = !isFull(r.box, SPORT) || !isFull(r.box, DPORT);
    let service = 'ALL';
    if (proto !== 'ip' || ported) {
      service = `nfv-${id}-s${k + 1}`;
      const lines = [`    edit "${service}"`];
      if (proto !== 'udp') lines.push(`        set tcp-portrange ${portRange(r.box)}`);
      if (proto !== 'tcp') lines.push(`        set udp-portrange ${portRange(r.box)}`);
      services.push(...lines, '    next');
    }
    policies.push(
      `    edit ${k + 1}`,
      `        set name "nfv-${id}-${k + 1}"`,
      '        set srcintf "any"',
      '        set dstintf "any"',
      `        set srcaddr "${addressName(address(r.box, SRC))}"`,
      `        set dstaddr "${addressName(address(r.box, DST))}"`,
      `        set action ${r.allow ? 'accept' : 'deny'}`,
      '        set schedule "always"',
      `        set service "${service}"`,
      '    next',
    );
  });
  policies.push(
    `    edit ${rules.length + 1}`,
    `        set name "nfv-${id}-default"`,
    '        set srcintf "any"',
    '        set dstintf "any"',
    '        set srcaddr "all"',
    '        set dstaddr "all"',
    `        set action ${defaultAllow ? 'accept' : 'deny'}`,
    '        set schedule "always"',
    '        set service "ALL"',
    '    next',
  );
  const block = (title: string, body: string[]) => (body.length ? [`config ${title}`, ...body, 'end'] : []);
  return `${[header(node, id, 'paste into the FortiOS CLI'), ...block('firewall address', addresses), ...block('firewall service custom', services), ...block('firewall policy', policies)].join('\n')}\n`;
}

const TRANSLATORS: Record<DeployFormat, { render: (node: Node, id: number) => string; prefix: string; ext: string }> = {
  iptables: { render: iptables, prefix: 'iptables', ext: 'rules' },
  ovs: { render: openVswitch, prefix: 'ovs', ext: 'flows' },
  ipfw: { render: ipfw, prefix: 'ipfw', ext: 'sh' },
  fortios: { render: fortios, prefix: 'fortios', ext: 'conf' },
};

export function deployFile(node: Node, id: number, format: DeployFormat): DeployFile {
  const t = TRANSLATORS[format];
  const label = (node.configuration?.description || node.name).replace(/[^A-Za-z0-9_.-]/g, '_');
  return { format, filename: `${t.prefix}_${label}_${id}.${t.ext}`, content: t.render(node, id) };
}
