/**
 * Open vSwitch flows (ovs-ofctl add-flows): priorities in first-match order.
 *
 * Stateful by default, with Open vSwitch's connection tracking: table 0 sends every IPv4 packet through conntrack
 * (`ct(table=1)`) and decides other packets by the default, as before; in table 1 packets of a tracked connection
 * (`+est`) and related to one (`+rel`, ICMP errors) go through first, then the rules decide, and a packet they or
 * the default let through is committed (`ct(commit)`), so that its connection's replies are `+est`. A packet they
 * drop is never committed: its replies find no connection. With `stateless`, one table of the rules alone.
 */
import type { Node } from '../model/types.js';
import { badRequest } from '../model/errors.js';
import { DPORT, DST, SPORT, SRC } from '../model/space.js';
import {
  address,
  cidr,
  commonSubsequence,
  header,
  normalisedRules,
  perProtocol,
  protocolOf,
  range,
  stateLine,
  type TranslatorOptions,
} from './rules.js';
import { plural } from '../model/words.js';

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

/** Above every rule's priority (60000 down). */
const TRACKED = 60001;

export function openVswitch(node: Node, id: number, options: TranslatorOptions = {}): string {
  const { rules, defaultAllow } = normalisedRules(node);
  const expanded = perProtocol(rules);
  if (expanded.length > 60000)
    throw badRequest(`node ${node.name}: ${expanded.length} rules are more than Open vSwitch priorities can order`);
  const stateful = !options.stateless;
  // Stateful: the rules in table 1, behind conntrack; what they let through is committed (its replies are +est).
  const [table, pass] = stateful ? ['table=1,', 'ct(commit),NORMAL'] : ['', 'NORMAL'];
  const lines = [
    header(node, id, `load with: ovs-ofctl add-flows ${bridgeOf(node)} FILE`),
    stateLine(options.stateless, 'ct_state +est, +rel first; allowed packets committed'),
    ...(stateful
      ? [
          'table=0,priority=1,ip,ct_state=-trk,actions=ct(table=1)',
          `table=0,priority=0,actions=${defaultAllow ? 'NORMAL' : 'drop'}`,
          `table=1,priority=${TRACKED},ip,ct_state=+trk+est,actions=NORMAL`,
          `table=1,priority=${TRACKED},ip,ct_state=+trk+rel,actions=NORMAL`,
        ]
      : []),
  ];
  expanded.forEach((r, k) => {
    const match = [`${table}priority=${60000 - k}`, protocolOf(r.box)];
    const src = address(r.box, SRC);
    const dst = address(r.box, DST);
    if (!src.any) match.push(`nw_src=${cidr(src)}`);
    if (!dst.any) match.push(`nw_dst=${cidr(dst)}`);
    const sports = protocolOf(r.box) === 'ip' ? [] : portMasks(...range(r.box, SPORT));
    const dports = protocolOf(r.box) === 'ip' ? [] : portMasks(...range(r.box, DPORT));
    for (const sp of sports.length ? sports : [undefined]) {
      for (const dp of dports.length ? dports : [undefined]) {
        const m = [...match, ...(sp ? [`tp_src=${sp}`] : []), ...(dp ? [`tp_dst=${dp}`] : [])];
        lines.push(`${m.join(',')},actions=${r.allow ? pass : 'drop'}`);
      }
    }
  });
  // Only IPv4 comes to table 1, and ct() needs the match to say so.
  lines.push(`${table}priority=0,${stateful ? 'ip,' : ''}actions=${defaultAllow ? pass : 'drop'}`);
  return `${lines.join('\n')}\n`;
}

/**
 * From `from` to `to` on an Open vSwitch bridge: the new flow table, for `ovs-ofctl --bundle replace-flows`, which
 * changes only the flows that differ (in every table), in one atomic transaction. Priorities follow list positions,
 * so a flow that moves is replaced as well; the header counts the flows that really change (the conntrack flows of
 * two stateful tables are the same: they stay).
 */
export function openVswitchChange(from: Node, to: Node, what: string, options: TranslatorOptions = {}): string {
  const flows = (node: Node) =>
    openVswitch(node, 0, options)
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.replace(/(^|,)priority=\d+,/, '$1'));
  const [a, b] = [flows(from), flows(to)];
  const same = commonSubsequence(a, b).length;
  // Without the first line (the deploy header); the second says stateful or stateless.
  const table = openVswitch(to, 0, options).split('\n').slice(1).join('\n');
  return (
    `# nfv: firewall ${to.name}, ${what}: ${plural(a.length - same, 'flow')} removed, ${b.length - same} added; ` +
    `apply with: ovs-ofctl --bundle replace-flows ${bridgeOf(to)} FILE\n${table}`
  );
}
