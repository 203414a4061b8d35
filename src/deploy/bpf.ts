/**
 * Polycube pcn-iptables (bpf-iptables): a shell script of `polycubectl pcn-iptables chain` commands, the form of
 * VEREFOO's getBpfFirewall, with the first-match decisions of the other formats (VEREFOO's translator widens a -1
 * before a fixed octet and leaves packets of neither TCP nor UDP to the default).
 *
 * A pcn-iptables rule takes an address prefix and single ports only (its YANG model: src, dst `a.b.c.d/len`;
 * sport, dport uint16). So an address with a -1 before a fixed octet becomes one prefix per value of the octets
 * before its last fixed one, and a port range one rule per port, at most BPF_MAX_LINES_PER_RULE rules in all for
 * one normalised rule (one protocol, one direction); beyond that the node is refused, never approximated. Port 0 is
 * refused too: pcn-iptables files a port-0 rule under the key its port table keeps for "any port" (L4PortLookup),
 * so the rule would match every port no other rule names. A chain takes at most BPF_MAX_RULES rules
 * (Iptables::max_rules_, the eBPF verifier's limit).
 *
 * Stateful by default: pcn-iptables tracks connections itself (its cube's `conntrack`, ON unless turned off) and a
 * rule matches a state with `conntrack=` (one of NEW, ESTABLISHED, RELATED, INVALID). The chain starts with
 * `conntrack=ESTABLISHED action=ACCEPT` (as rule 0 it also turns on pcn-iptables' accept-established fast path) and
 * `conntrack=RELATED action=ACCEPT` (ICMP errors about a tracked connection); its session table records the packets
 * the chain accepts, so replies of allowed connections come back. With the cube's conntrack OFF, polycubed refuses
 * a conntrack rule ("Please enable the connection tracking module"), and the script stops there, under default
 * DROP. With `stateless`, the rules alone.
 */
import type { Node } from '../model/types.js';
import { badRequest } from '../model/errors.js';
import { type Box, DPORT, DST, SPORT, SRC } from '../model/space.js';
import {
  address,
  cidr,
  header,
  isFull,
  normalisedRules,
  perProtocol,
  protocolOf,
  range,
  type Rule,
  stateLine,
  type TranslatorOptions,
} from './rules.js';

export const BPF_MAX_LINES_PER_RULE = 256;
export const BPF_MAX_RULES = 8192;

/** The rules a stateful chain starts with (ESTABLISHED first: pcn-iptables' fast path looks for it at rule 0). */
export const BPF_STATEFUL = ['conntrack=ESTABLISHED action=ACCEPT', 'conntrack=RELATED action=ACCEPT'];

export function bpf(node: Node, id: number, options: TranslatorOptions = {}): string {
  const { rules, defaultAllow } = normalisedRules(node);
  const planned = perProtocol(rules).map((r) => plan(node, r));
  const head = options.stateless ? [] : BPF_STATEFUL;
  const total = planned.reduce((n, p) => n + p.count, head.length);
  if (total > BPF_MAX_RULES)
    throw badRequest(
      `node ${node.name}: ${total} rules are more than pcn-iptables takes in a chain (${BPF_MAX_RULES})`,
    );
  const lines = [
    '#!/bin/sh',
    header(node, id, 'run as root where polycubed runs the pcn-iptables cube'),
    stateLine(options.stateless, 'conntrack=ESTABLISHED, conntrack=RELATED first'),
    "# FORWARD only: INPUT and OUTPUT, the router's own traffic (SSH, routing, polycubed's API), stay as they are.",
    '# Loaded under default DROP, stopping at the first failure: no moment forwards what neither list allows.',
    // polycubectl exits 1 when polycubed is unreachable, 2 when it refuses (a syntax error of its own exits 0:
    // bpf.test.ts checks the grammar).
    'set -e',
    'cmd="polycubectl pcn-iptables chain"',
    '${cmd} FORWARD set default=DROP',
    // After `rule del` the chain is empty, so appending in list order is first-match order (no ids to compute).
    '${cmd} FORWARD rule del',
    ...[...head, ...planned.flatMap((p) => p.lines())].map((fields) => `\${cmd} FORWARD append ${fields}`),
    ...(defaultAllow ? ['${cmd} FORWARD set default=ACCEPT'] : []),
  ];
  return `${lines.join('\n')}\n`;
}

/** A normalised rule as pcn-iptables rules: how many, and (once the count is checked) their fields. */
function plan(node: Node, r: Rule): { count: number; lines: () => string[] } {
  const proto = protocolOf(r.box);
  const src = prefixes(r.box, SRC);
  const dst = prefixes(r.box, DST);
  const ported = proto === 'tcp' || proto === 'udp';
  const sports = ported ? ports(r.box, SPORT) : { count: 1, text: '' };
  const dports = ported ? ports(r.box, DPORT) : { count: 1, text: '' };
  const rule = () =>
    `node ${node.name}: rule ${node.configuration!.firewall!.elements![r.element]!.id ?? r.element + 1}`;
  const count = src.count * dst.count * sports.count * dports.count;
  if (count > BPF_MAX_LINES_PER_RULE) {
    const factors = [
      [src, 'source', 'prefixes'],
      [dst, 'destination', 'prefixes'],
      [sports, 'source ports', 'ports'],
      [dports, 'destination ports', 'ports'],
    ] as const;
    const why = factors.flatMap(([f, what, unit]) => (f.count > 1 ? [`${what} ${f.text} (${f.count} ${unit})`] : []));
    throw badRequest(
      `${rule()}: ${why.join(' x ')} would be ${count} pcn-iptables rules, more than ${BPF_MAX_LINES_PER_RULE} ` +
        'for one rule (pcn-iptables takes prefixes and single ports only)',
    );
  }
  for (const [p, what] of [
    [sports, 'source'],
    [dports, 'destination'],
  ] as const)
    if (p.zero)
      throw badRequest(
        `${rule()}: ${what} ports ${p.text} include port 0, which pcn-iptables cannot match (sport=0, dport=0 ` +
          'stand for any port there)',
      );
  const lines = () => {
    const out: string[] = [];
    for (const s of src.list())
      for (const d of dst.list())
        for (const sp of portList(r.box, SPORT, ported))
          for (const dp of portList(r.box, DPORT, ported)) {
            const fields = [
              ...(s ? [`src=${s}`] : []),
              ...(d ? [`dst=${d}`] : []),
              // Ports always go with l4proto: pcn-iptables' port stage lets packets of other protocols through.
              ...(ported ? [`l4proto=${proto}`] : []),
              ...(sp === undefined ? [] : [`sport=${sp}`]),
              ...(dp === undefined ? [] : [`dport=${dp}`]),
              `action=${r.allow ? 'ACCEPT' : 'DROP'}`,
            ];
            out.push(fields.join(' '));
          }
    return out;
  };
  return { count, lines };
}

/**
 * The prefixes that together are an address of a rule box (undefined: any address, no field): the octets after the
 * last one that is not full are full, that one is an aligned block, and the octets before it are listed value by
 * value. Octets of a rule box are aligned blocks (see `address`), so this is exact.
 */
function prefixes(b: Box, at: number): { count: number; text: string; list: () => (string | undefined)[] } {
  const a = address(b, at);
  const octets = [0, 1, 2, 3].map((k) => range(b, at + k));
  let last = 3;
  while (last >= 0 && octets[last]![1] - octets[last]![0] === 255) last--;
  const before = octets.slice(0, Math.max(last, 0));
  const count = before.reduce((n, [lo, hi]) => n * (hi - lo + 1), 1);
  const list = () => {
    if (a.any) return [undefined];
    const [lo, hi] = octets[last]!;
    const length = 8 * last + 8 - Math.log2(hi - lo + 1);
    let heads: number[][] = [[]];
    for (const [l, h] of before) heads = heads.flatMap((head) => values(l, h).map((v) => [...head, v]));
    return heads.map((head) => `${[...head, lo, 0, 0, 0].slice(0, 4).join('.')}/${length}`);
  };
  return { count, text: cidr(a), list };
}

/** A port dimension: how many values a field lists (1 when the dimension is full: no field), and whether 0 is one. */
function ports(b: Box, d: number): { count: number; text: string; zero?: boolean } {
  const [lo, hi] = range(b, d);
  if (isFull(b, d)) return { count: 1, text: '*' };
  return { count: hi - lo + 1, text: lo === hi ? `${lo}` : `${lo}-${hi}`, zero: lo === 0 };
}

const portList = (b: Box, d: number, ported: boolean): (number | undefined)[] =>
  ported && !isFull(b, d) ? values(...range(b, d)) : [undefined];

const values = (lo: number, hi: number) => Array.from({ length: hi - lo + 1 }, (_, k) => lo + k);
