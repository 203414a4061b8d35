/**
 * ipfw: a shell script of numbered rules in first-match order.
 *
 * Stateful by default: every allow rule (the default too, when it allows) has `keep-state`, so a packet it lets
 * through makes a dynamic rule for its flow, both directions, and rule CHECK_STATE, `check-state`, before every
 * other, lets the packets that match a dynamic rule through. That is conntrack's ESTABLISHED: the connection's
 * later packets and its replies, never a new flow. ipfw has no RELATED (ICMP errors about a flow are not part of its
 * dynamic rule): they pass where a rule allows them, as without state. Not `allow tcp from any to any established`:
 * that passes every TCP packet with ACK or RST set, of a connection the firewall saw or not, and no UDP reply.
 * With `stateless` neither: the rules alone.
 */
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
  stateLine,
  type TranslatorOptions,
} from './rules.js';

/** The number of the check-state rule of a stateful script: before every other (FIRST and on). */
const CHECK_STATE = 1;
const FIRST = 100;
const STEP = 10;
const DEFAULT_RULE = 65534;

export function ipfw(node: Node, id: number, options: TranslatorOptions = {}): string {
  const { bodies, defaultAllow } = ipfwRules(node, options);
  const lines = [
    '#!/bin/sh',
    header(node, id, 'run as root on the firewall'),
    stateLine(options.stateless, 'check-state first, keep-state on allow rules'),
    'cmd="/sbin/ipfw -q"',
    '${cmd} -f flush',
    ...(options.stateless ? [] : [`\${cmd} add ${CHECK_STATE} check-state`]),
    ...bodies.map((body, k) => `\${cmd} add ${FIRST + STEP * k} ${body}`),
    `\${cmd} add ${DEFAULT_RULE} ${defaultBody(defaultAllow, options)}`,
  ];
  return `${lines.join('\n')}\n`;
}

const defaultBody = (allow: boolean, options: TranslatorOptions) =>
  allow ? `allow ip from any to any${options.stateless ? '' : ' keep-state'}` : 'deny ip from any to any';

/**
 * The commands that take a firewall running `from` (as `nfv deploy ipfw` numbered it) to `to`: rules of neither
 * changed nor moved keep their numbers, the others are deleted, new ones are added with numbers in the gaps
 * between the kept ones. Where a gap is too small, the whole list is loaded again (flush), and the script says so.
 * Both lists are of one kind; stateful, rule CHECK_STATE stays and new rules get numbers after it.
 */
export function ipfwChange(from: Node, to: Node, what: string, options: TranslatorOptions = {}): string {
  const [a, b] = [ipfwRules(from, options), ipfwRules(to, options)];
  const kept = new Map(commonSubsequence(a.bodies, b.bodies).map(([i, j]) => [j, FIRST + STEP * i]));
  const adds: string[] = [];
  let lower = options.stateless ? 0 : CHECK_STATE;
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
    if (step < 1) {
      const again = ipfw(to, 0, options);
      return `# nfv: ${what}: no free rule numbers between kept rules; the whole list is loaded again\n${again}`;
    }
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
      : [`\${cmd} delete ${DEFAULT_RULE}`, `\${cmd} add ${DEFAULT_RULE} ${defaultBody(b.defaultAllow, options)}`];
  const lines = [
    '#!/bin/sh',
    `# nfv: firewall ${to.name}, ${what}: ${deletes.length} deleted, ${adds.length} added` +
      (policy.length ? `, default ${b.defaultAllow ? 'allow' : 'deny'}` : '') +
      '; run as root on a firewall that runs the earlier list as nfv deploy ipfw' +
      (options.stateless ? ' --stateless numbered it' : ` numbered it (rule ${CHECK_STATE}, check-state, stays)`),
    'cmd="/sbin/ipfw -q"',
    ...deletes,
    ...adds,
    ...policy,
  ];
  return `${lines.join('\n')}\n`;
}

/** Each rule's action and match, in first-match order (allow rules with keep-state when stateful), and the default. */
function ipfwRules(node: Node, options: TranslatorOptions): { bodies: string[]; defaultAllow: boolean } {
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
    const body = `${r.allow ? 'allow' : 'deny'} ${proto} from ${end(SRC, SPORT)} to ${end(DST, DPORT)}`;
    return r.allow && !options.stateless ? `${body} keep-state` : body;
  });
  return { bodies, defaultAllow };
}
