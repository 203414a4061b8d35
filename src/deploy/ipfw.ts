/** ipfw: a shell script of numbered rules in first-match order. */
import type { Node } from '../model/types.js';
import { badRequest } from '../model/errors.js';
import { DPORT, DST, SPORT, SRC } from '../model/space.js';
import { address, cidr, header, isFull, normalisedRules, perProtocol, protocolOf, range } from './rules.js';

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
    const action = r.allow ? 'allow' : 'deny';
    lines.push(`\${cmd} add ${100 + 10 * k} ${action} ${proto} from ${end(SRC, SPORT)} to ${end(DST, DPORT)}`);
  });
  lines.push(`\${cmd} add 65534 ${defaultAllow ? 'allow' : 'deny'} ip from any to any`);
  return `${lines.join('\n')}\n`;
}
