/**
 * A simulation's answer for a person at a terminal: the verdict; per firewall its node, default action and rules;
 * per requirement that cannot hold its traffic, why, and what it conflicts with. Built from the result document
 * and the report, which carry the same facts as the JSON and XML answers.
 */
import Table from 'cli-table3';
import type { FirewallChange, Report } from '../engine/simulate.js';
import { ruleAddressText } from '../model/address.js';
import type { NFV, Property } from '../model/types.js';
import { plural } from '../model/words.js';
import { hostingSummary, reportSummary } from '../ops/network/simulations.js';
import type { HostingReport } from '../engine/hosting.js';
import { plainStyle } from './output.js';

const KIND: Record<Property['name'], string> = {
  ISOLATION_PROPERTY: 'isolation',
  REACHABILITY_PROPERTY: 'reachability',
  COMPLETE_REACHABILITY_PROPERTY: 'complete reachability',
};

/** The traffic a requirement is about: protocol and ports, `*` for any. */
export function traffic(p: Pick<Property, 'lv4Proto' | 'srcPort' | 'dstPort'>): string {
  const proto = p.lv4Proto && p.lv4Proto !== 'ANY' ? p.lv4Proto : 'any protocol';
  const ports = [
    p.srcPort && p.srcPort !== '*' ? `from port ${p.srcPort}` : '',
    p.dstPort && p.dstPort !== '*' ? `to port ${p.dstPort}` : '',
  ];
  return [proto, ...ports.filter(Boolean)].join(' ');
}

/** What a reconfiguration did to one deployed firewall, in one line; rule numbers are positions in each list. */
export function changeLine(c: FirewallChange): string {
  const positions = (xs: number[]) => xs.map((x) => `#${x}`).join(' ');
  const parts = [
    c.added.length ? `added ${positions(c.added.map((a) => a.position))}` : '',
    c.removed.length ? `removed old ${positions(c.removed)}` : '',
    c.kept.length ? `kept old ${positions(c.kept)}` : '',
    c.defaultAction.from !== c.defaultAction.to ? `default ${c.defaultAction.from} -> ${c.defaultAction.to}` : '',
  ].filter(Boolean);
  return `  ${plural(c.changes, 'change')}${parts.length ? `: ${parts.join('; ')}` : ''}`;
}

export function simulationSummary(nfv: NFV, report: Report): string {
  const out: string[] = [`${report.verdict}: ${reportSummary(report)}`];
  const nodes = new Map(
    (nfv.graphs.graph ?? []).flatMap((g) => g.node.map((n) => [`${g.id ?? 0}/${n.name}`, n] as const)),
  );
  for (const fw of report.placements) {
    const node = nodes.get(`${fw.graph}/${fw.node}`);
    const rules = node?.configuration?.firewall?.elements ?? [];
    const how = fw.change
      ? 'reconfigured'
      : fw.allocated
        ? 'placed here'
        : fw.synthesised
          ? 'configured here'
          : 'verified as given';
    out.push(
      '',
      `firewall ${fw.node} (graph ${fw.graph}, ${how}): default ${fw.defaultAction}, ${plural(rules.length, 'rule')}`,
    );
    if (fw.change) out.push(changeLine(fw.change));
    if (rules.length === 0) continue;
    const table = new Table({
      head: ['#', 'action', 'source', 'destination', 'protocol', 'src port', 'dst port'],
      style: plainStyle(),
    });
    rules.forEach((r, k) =>
      table.push([
        k + 1,
        r.action ?? 'DENY',
        ruleAddressText(r.source),
        ruleAddressText(r.destination),
        r.protocol ?? 'ANY',
        r.srcPort ?? '*',
        r.dstPort ?? '*',
      ]),
    );
    out.push(table.toString());
  }
  if (report.hosting && report.hosting.status !== 'none') out.push('', ...hostingLines(report.hosting));
  const notBefore = report.requirements.filter((q) => q.heldBefore === false);
  if (notBefore.length)
    out.push(
      '',
      `on InitialProperty but not held as deployed: ${notBefore.map((q) => `#${q.index}`).join(' ')} ` +
        '(enforced now where they hold)',
    );
  const failed = report.requirements.filter((q) => !q.isSat);
  if (failed.length) {
    const properties = nfv.propertyDefinition.property;
    const table = new Table({
      head: ['#', 'requirement', 'from', 'to', 'traffic', 'why it cannot hold', 'conflicts with'],
      style: plainStyle(),
      wordWrap: true,
      colWidths: [null, null, null, null, null, 48, null] as unknown as number[],
    });
    for (const q of failed) {
      const p = properties[q.index];
      table.push([
        q.index,
        KIND[q.name] ?? q.name,
        q.src,
        q.dst,
        p ? traffic(p) : '',
        q.reason ?? '',
        q.conflictsWith.map((c) => `#${c}`).join(' ') || '-',
      ]);
    }
    const unknown = failed.filter((q) => q.unknown).length;
    const said = unknown ? ` (${unknown} unknown: approximated firewall rules decide them)` : '';
    out.push('', `${plural(failed.length, 'requirement')} cannot hold${said}:`, table.toString());
  }
  return out.join('\n');
}

/** The hosting section for a person: the summary line, each active host's load, each LinkMetrics, the conflicts. */
function hostingLines(h: HostingReport): string[] {
  const out = [hostingSummary(h)];
  const usage = ([used, capacity]: readonly [number, number | null]) => `${used}/${capacity ?? '-'}`;
  const active = (h.hosts ?? []).filter((u) => u.nodes.length > 0);
  if (active.length) {
    const table = new Table({
      head: ['host', 'nodes', 'cores', 'memory', 'disk', 'functions'],
      style: plainStyle(),
    });
    for (const u of active)
      table.push([u.host, u.nodes.join(' '), usage(u.cores), usage(u.memory), usage(u.diskStorage), usage(u.vnfs)]);
    out.push(table.toString());
  }
  if (h.links?.length) {
    const table = new Table({ head: ['link', 'latency', 'bound', 'host path', 'status'], style: plainStyle() });
    for (const l of h.links)
      table.push([
        `${l.src} -> ${l.dst}`,
        l.latency ?? '-',
        l.reqLatency ?? '-',
        l.hostPath.join(' ') || '-',
        l.status,
      ]);
    out.push(table.toString());
  }
  for (const c of h.conflicts ?? []) out.push(`  ${c.code}: ${c.message}`);
  for (const cut of h.allocationCuts ?? []) out.push(`  cannot be placed together: ${cut.join(' ')}`);
  return out;
}
