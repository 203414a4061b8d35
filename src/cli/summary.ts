/**
 * A simulation's answer for a person at a terminal: the verdict; per firewall its node, default action and rules;
 * per requirement that cannot hold its traffic, why, and what it conflicts with. Built from the result document
 * and the report, which carry the same facts as the JSON and XML answers. Also the table forms of a stored
 * result's report and of the diff of two stored results, from their JSON answers.
 */
import Table from 'cli-table3';
import type { FirewallChange, FirewallReport, Report } from '../engine/simulate.js';
import { ruleAddressText } from '../model/address.js';
import type { Elements, NFV, Property } from '../model/types.js';
import { plural } from '../model/words.js';
import { hostingSummary, reportSummary, type FullReport, type SimulationDiff } from '../ops/network/simulations.js';
import type { HostingReport } from '../engine/placement/hosting.js';
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

/** One firewall of an answer: how it came to be, its default action, then its rules in first-match order. */
function firewallLines(fw: FirewallReport, rules: Elements[]): string[] {
  const how = fw.change
    ? 'reconfigured'
    : fw.allocated
      ? 'placed here'
      : fw.synthesised
        ? 'configured here'
        : 'verified as given';
  const out = [
    `firewall ${fw.node} (graph ${fw.graph}, ${how}): default ${fw.defaultAction}, ${plural(rules.length, 'rule')}`,
  ];
  if (fw.change) out.push(changeLine(fw.change));
  if (rules.length === 0) return out;
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
  return out;
}

/** Requirements that were on InitialProperty and did not hold on the network as deployed, if any. */
function notHeldBefore(requirements: Report['requirements']): string[] {
  const notBefore = requirements.filter((q) => q.heldBefore === false);
  if (!notBefore.length) return [];
  return [
    '',
    `on InitialProperty but not held as deployed: ${notBefore.map((q) => `#${q.index}`).join(' ')} ` +
      '(enforced now where they hold)',
  ];
}

/** How the lower bounds of an answer not proven minimal were proven, as one line (none when it is proven). */
function boundLines(r: Report): string[] {
  if (!r.lowerBound) return [];
  const { firewalls, rules, method } = r.lowerBound;
  return [`lower bounds: ${plural(firewalls, 'firewall')}, ${plural(rules, 'rule')}, from ${method}`];
}

export function simulationSummary(nfv: NFV, report: Report): string {
  const out: string[] = [`${report.verdict}: ${reportSummary(report)}`, ...boundLines(report)];
  const nodes = new Map(
    (nfv.graphs.graph ?? []).flatMap((g) => g.node.map((n) => [`${g.id ?? 0}/${n.name}`, n] as const)),
  );
  for (const fw of report.placements) {
    const node = nodes.get(`${fw.graph}/${fw.node}`);
    out.push('', ...firewallLines(fw, node?.configuration?.firewall?.elements ?? []));
  }
  if (report.hosting && report.hosting.status !== 'none') out.push('', ...hostingLines(report.hosting));
  out.push(...notHeldBefore(report.requirements));
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

/** Where a stored result's inputs are in the workspace: "graph 1, requirement set 1, substrate 1". */
function inputsOf(source: FullReport['source']): string {
  return [
    source.gids.length ? `${source.gids.length > 1 ? 'graphs' : 'graph'} ${source.gids.join(', ')}` : '',
    source.rid === undefined ? '' : `requirement set ${source.rid}`,
    source.sid === undefined ? '' : `substrate ${source.sid}`,
    source.reconfigured === undefined ? '' : `reconfigures simulation ${source.reconfigured}`,
  ]
    .filter(Boolean)
    .join(', ');
}

/**
 * `simulations report` for a person: the verdict, how it was run, every requirement with its traffic (the position
 * in the set is its number, as conflicts name it), then each firewall with its rules, then the hosting.
 */
export function reportTable(r: FullReport): string {
  const out = [`simulation ${r.simulation}: ${r.verdict}: ${reportSummary(r)}`, ...boundLines(r)];
  if (r.run) {
    const origin = r.run.origin ? `, from ${r.run.origin}` : '';
    out.push(`run: ${r.run.algorithm} in ${r.run.seconds} s, ${r.run.created}${origin}`);
  }
  const inputs = inputsOf(r.source);
  if (inputs) out.push(`inputs: ${inputs}`);
  const failed = r.requirements.some((q) => !q.isSat);
  const table = new Table({
    head: [
      '#',
      'requirement',
      'from',
      'to',
      'protocol',
      'src port',
      'dst port',
      'holds',
      ...(failed ? ['why it cannot hold', 'conflicts with'] : []),
    ],
    style: plainStyle(),
    wordWrap: true,
    ...(failed ? { colWidths: [...Array<null>(8).fill(null), 48, null] as unknown as number[] } : {}),
  });
  for (const q of r.requirements) {
    const holds = q.isSat ? 'yes' : q.unknown ? 'unknown' : 'no';
    const why = failed ? [q.reason ?? '', q.conflictsWith.map((c) => `#${c}`).join(' ') || '-'] : [];
    table.push([q.index, KIND[q.name] ?? q.name, q.src, q.dst, q.protocol, q.srcPort, q.dstPort, holds, ...why]);
  }
  out.push('', r.requirements.length ? table.toString() : 'no requirements');
  for (const fw of r.placements) out.push('', ...firewallLines(fw, fw.elements));
  if (r.hosting && r.hosting.status !== 'none') out.push('', ...hostingLines(r.hosting));
  out.push(...notHeldBefore(r.requirements));
  return out.join('\n');
}

const held = (v: boolean | null) => (v === null ? '(absent)' : v ? 'holds' : 'cannot hold');

/**
 * `simulations diff` for a person: verdicts that changed; each firewall added or removed with all its rules (a
 * firewall that moved is one removed and one added), each other firewall with the rules added and removed; the
 * change of each reconfigured firewall.
 */
export function diffTable(d: SimulationDiff): string {
  const out = [`simulation ${d.from} -> ${d.to}`];
  if (!d.requirements.length && !d.firewalls.added.length && !d.firewalls.removed.length && !d.rules.length)
    out.push('no change');
  if (d.requirements.length) {
    const table = new Table({ head: ['requirement', `in ${d.from}`, `in ${d.to}`], style: plainStyle() });
    for (const r of d.requirements) table.push([r.requirement, held(r.from), held(r.to)]);
    out.push('requirements whose verdict changed:', table.toString());
  }
  const rulesOf = new Map(d.rules.map((r) => [r.firewall, r]));
  for (const [names, what] of [
    [d.firewalls.added, 'added'],
    [d.firewalls.removed, 'removed'],
  ] as const) {
    for (const name of names) {
      const r = rulesOf.get(name);
      const lines = [...(r?.added ?? []).map((x) => `  + ${x}`), ...(r?.removed ?? []).map((x) => `  - ${x}`)];
      out.push(`firewall ${name} ${what}, ${plural(lines.length, 'rule')}${lines.length ? ':' : ''}`, ...lines);
    }
  }
  const listed = new Set([...d.firewalls.added, ...d.firewalls.removed]);
  for (const r of d.rules.filter((x) => !listed.has(x.firewall))) {
    out.push(
      `rules of firewall ${r.firewall}:`,
      ...r.added.map((x) => `  + ${x}`),
      ...r.removed.map((x) => `  - ${x}`),
    );
  }
  for (const c of d.reconfigured) out.push(`firewall ${c.firewall} reconfigured:`, changeLine(c));
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
