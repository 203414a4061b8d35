/**
 * Pictures of graphs and simulation results as Graphviz DOT (`GET /adp/graphs/{gid}/draw`,
 * `GET /adp/simulations/{smid}/draw`, our additions). A result shows placed firewalls highlighted with their rule
 * counts, allocation places left unused faded, requirements that cannot hold as red dashed edges, and, with a
 * substrate, each active host as a box around the nodes it carries.
 */
import type { Report } from '../../engine/simulate.js';
import type { Graph, Host, Node } from '../../model/types.js';
import { findGraph } from './lookups.js';
import { plural } from '../../model/words.js';
import { ADP_AREA } from '../../store/network.js';
import { operation, text } from '../operation.js';

/** A DOT string literal. */
const q = (text: string) => `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

const FILL: Record<string, string> = {
  WEBCLIENT: '#e3f2fd',
  WEBSERVER: '#e8f5e9',
  NAT: '#f3e5f5',
  LOADBALANCER: '#fff3e0',
};

interface Picture {
  title: string;
  graph: Graph;
  /** The graph as it was given, to tell allocation places (no function there) from the rest. */
  input?: Graph;
  report?: Report;
  /** A result's hosts: the nodes each carries are drawn inside it, as a cluster. */
  hosts?: readonly Host[];
}

function nodeLine(n: Node, p: Picture): string {
  const given = p.input?.node.find((x) => x.name === n.name);
  const wasPlace = p.input !== undefined && given !== undefined && given.functionalType === undefined;
  const fn = n.functionalType;
  const attrs: Record<string, string> = { label: `${n.name}\\n${fn ?? 'allocation place'}` };
  if (fn === 'FIREWALL') {
    const rules = n.configuration?.firewall?.elements?.length ?? 0;
    const defaultAction = n.configuration?.firewall?.defaultAction ?? 'DENY';
    const placed = wasPlace ? ' (placed)' : '';
    attrs.label = `${n.name}\\nFIREWALL${placed}\\n${plural(rules, 'rule')}, default ${defaultAction}`;
    Object.assign(attrs, { fillcolor: '#ffd54f', penwidth: '2.5', color: '#e65100' });
  } else if (fn === undefined || (wasPlace && fn === 'FORWARDER')) {
    // An allocation place: dashed; faded when a result left it without a firewall.
    Object.assign(attrs, {
      style: 'rounded,dashed',
      color: p.report ? 'gray70' : 'gray40',
      fontcolor: p.report ? 'gray60' : 'black',
    });
    if (wasPlace) attrs.label = `${n.name}\\nallocation place (unused)`;
  } else if (FILL[fn]) attrs.fillcolor = FILL[fn];
  return `  ${q(n.name)} [${Object.entries(attrs)
    .map(([k, v]) => `${k}=${k === 'label' ? `"${v.replace(/"/g, '\\"')}"` : q(v)}`)
    .join(', ')}];`;
}

export function dotOf(p: Picture): string {
  const lines = [
    `digraph ${q(p.title)} {`,
    `  label=${q(p.title)}; labelloc=t; fontname="Helvetica"; rankdir=LR;`,
    '  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica", fontsize=11];',
    '  edge [dir=none, color=gray30, fontname="Helvetica", fontsize=10];',
  ];
  const byName = new Map(p.graph.node.map((n) => [n.name, n]));
  const hosted = new Set<string>();
  (p.hosts ?? []).forEach((h, k) => {
    const nodes = (h.nodeRef ?? []).map((r) => byName.get(r.node)).filter((n): n is Node => n !== undefined);
    if (nodes.length === 0) return;
    const label = `host ${h.name} (${h.type ?? 'MIDDLEBOX'})`;
    lines.push(`  subgraph ${q(`cluster_${k}`)} {`, `    label=${q(label)}; style="rounded"; color=gray50;`);
    for (const n of nodes) {
      hosted.add(n.name);
      lines.push(`  ${nodeLine(n, p)}`);
    }
    lines.push('  }');
  });
  lines.push(...p.graph.node.filter((n) => !hosted.has(n.name)).map((n) => nodeLine(n, p)));
  const seen = new Set<string>();
  for (const n of p.graph.node) {
    for (const nb of n.neighbour ?? []) {
      const key = [n.name, nb.name].sort().join('\u0000');
      if (seen.has(key)) continue;
      seen.add(key);
      lines.push(`  ${q(n.name)} -> ${q(nb.name)};`);
    }
  }
  for (const r of p.report?.requirements.filter((x) => !x.isSat && x.graph === (p.graph.id ?? 0)) ?? []) {
    const kind = r.name === 'ISOLATION_PROPERTY' ? 'isolation' : 'reachability';
    const style = 'dir=forward, color="#d32f2f", fontcolor="#d32f2f", style=dashed, constraint=false';
    lines.push(`  ${q(r.src)} -> ${q(r.dst)} [${style}, label=${q(`#${r.index} ${kind} cannot hold`)}];`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/** The answer of a draw operation: DOT text with a file name. */
export const dotReply = (body: string, name: string) => text(body, `${name}.dot`, 'text/vnd.graphviz; charset=utf-8');

export const graphsDraw = operation({
  name: 'graphs.draw',
  method: 'GET',
  path: '/adp/graphs/{gid}/draw',
  summary: 'A picture of a graph, as Graphviz DOT (our addition)',
  reply: 'text',
  status: 200,
  errors: 'document',
  handler: async (i) => {
    const graph = findGraph(await i.ws.read(ADP_AREA), i.params.gid as number);
    return dotReply(dotOf({ title: `graph ${graph.id}`, graph }), `graph-${graph.id}`);
  },
});

export const drawOperations = [graphsDraw];
