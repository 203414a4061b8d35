/** ipfw: a shell script of numbered rules in first-match order. */
import type { Node } from '../model/types.js';
import { badRequest } from '../model/errors.js';
import { DPORT, DST, SPORT, SRC } from '../model/space.js';
import {
  address,
  cidr,
  commonSubsequence,
  header,
  isFull,
  normalisedRules,
  perProtocol,
  protocolOf,
  range,
} from './rules.js';

const FIRST = 100;
const STEP = 10;
const DEFAULT_RULE = 65534;

export function ipfw(node: Node, id: number): string {
  const { bodies, defaultAllow } = ipfwRules(node);
  const lines = [
    '#!/bin/sh',
    header(node, id, 'run as root on the firewall'),
    'cmd="/sbin/ipfw -q"',
    '${cmd} -f flush',
    ...bodies.map((body, k) => `\${cmd} add ${FIRST + STEP * k} ${body}`),
    `\${cmd} add ${DEFAULT_RULE} ${defaultAllow ? 'allow' : 'deny'} ip from any to any`,
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The commands that take a firewall running `from` (as `nfv deploy ipfw` numbered it) to `to`: rules of neither
 * changed nor moved keep their numbers, the others are deleted, new ones are added with numbers in the gaps
 * between the kept ones. Where a gap is too small, the whole list is loaded again (flush), and the script says so.
 */
export function ipfwChange(from: Node, to: Node, what: string): string {
  const [a, b] = [ipfwRules(from), ipfwRules(to)];
  const kept = new Map(commonSubsequence(a.bodies, b.bodies).map(([i, j]) => [j, FIRST + STEP * i]));
  const adds: string[] = [];
  let lower = 0;
  for (let j = 0; j < b.bodies.length;) {
    if (kept.has(j)) {
      lower = kept.get(j)!;
      j++;
      continue;
    }
    let end = j;
    while (end < b.bodies.length && !kept.has(end)) end++;
    const upper = end < b.bodies.length ? kept.get(end)! : DEFAULT_RULE;
    const step = Math.floor((upper - lower) / (end - j + 1));
    if (step < 1)
      return `# nfv: ${what}: no free rule numbers between kept rules; the whole list is loaded again\n${ipfw(to, 0)}`;
    for (let k = j; k < end; k++) adds.push(`\${cmd} add ${lower + step * (k - j + 1)} ${b.bodies[k]}`);
    j = end;
  }
  const stays = new Set(kept.values());
  const deletes = a.bodies.flatMap((_, i) =>
    stays.has(FIRST + STEP * i) ? [] : [`\${cmd} delete ${FIRST + STEP * i}`],
  );
  const policy =
    a.defaultAllow === b.defaultAllow
      ? []
      : [
          `\${cmd} delete ${DEFAULT_RULE}`,
          `\${cmd} add ${DEFAULT_RULE} ${b.defaultAllow ? 'allow' : 'deny'} ip from any to any`,
        ];
  const lines = [
    '#!/bin/sh',
    `# nfv: firewall ${to.name}, ${what}: ${deletes.length} deleted, ${adds.length} added` +
      (policy.length ? `, default ${b.defaultAllow ? 'allow' : 'deny'}` : '') +
      `; run as root on a firewall that runs the earlier list as nfv deploy ipfw numbered it`,
    'cmd="/sbin/ipfw -q"',
    ...deletes,
    ...adds,
    ...policy,
  ];
  return `${lines.join('\n')}\n`;
}

/** Each rule's action and match, in first-match order, and the default. */
function ipfwRules(node: Node): { bodies: string[]; defaultAllow: boolean } {
  const { rules, defaultAllow } = normalisedRules(node);
  const expanded = perProtocol(rules);
  if (expanded.length > 6500)
    throw badRequest(`node ${node.name}: ${expanded.length} rules are more than ipfw rule numbers can order`);
  const bodies = expanded.map((r) => {
    const proto = protocolOf(r.box);
    const end = (at: number, d: number) => {
      const a = address(r.box, at);
      const [lo, hi] = range(r.box, d);
      const ports = proto === 'ip' || isFull(r.box, d) ? '' : ` ${lo === hi ? lo : `${lo}-${hi}`}`;
      return `${a.any ? 'any' : cidr(a, ':')}${ports}`;
    };
    return `${r.allow ? 'allow' : 'deny'} ${proto} from ${end(SRC, SPORT)} to ${end(DST, DPORT)}`;
  });
  return { bodies, defaultAllow };
}
