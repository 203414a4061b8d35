/** iptables-restore input: a FORWARD chain in first-match order. */
import type { Node } from '../model/types.js';
import { DPORT, DST, SPORT, SRC } from '../model/space.js';
import { address, cidr, header, isFull, normalisedRules, perProtocol, protocolOf, range } from './rules.js';

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
