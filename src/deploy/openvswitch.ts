/** Open vSwitch flows (ovs-ofctl add-flows): priorities in first-match order. */
import type { Node } from '../model/types.js';
import { badRequest } from '../model/errors.js';
import { DPORT, DST, SPORT, SRC } from '../model/space.js';
import { address, cidr, commonSubsequence, header, normalisedRules, perProtocol, protocolOf, range } from './rules.js';
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

/**
 * From `from` to `to` on an Open vSwitch bridge: the new flow table, for `ovs-ofctl --bundle replace-flows`, which
 * changes only the flows that differ, in one atomic transaction. Priorities follow list positions, so a flow that
 * moves is replaced as well; the header counts the rules that really change.
 */
export function openVswitchChange(from: Node, to: Node, what: string): string {
  const flows = (node: Node) =>
    openVswitch(node, 0)
      .split('\n')
      .filter((l) => l.startsWith('priority='))
      .map((l) => l.replace(/^priority=\d+,/, ''));
  const [a, b] = [flows(from), flows(to)];
  const same = commonSubsequence(a, b).length;
  const table = openVswitch(to, 0).split('\n').slice(1).join('\n');
  return (
    `# nfv: firewall ${to.name}, ${what}: ${plural(a.length - same, 'flow')} removed, ${b.length - same} added; ` +
    `apply with: ovs-ofctl --bundle replace-flows ${bridgeOf(to)} FILE\n${table}`
  );
}
