/**
 * A simulation's placement claims, checked by the independent checker (checker.ts): the placement input is derived
 * here from the submitted document and the result graph (no engine code), and the report's `hosting` section and
 * the result's Hosts are held against it.
 */
import type { HostingReport } from '../../../src/engine/placement/hosting.js';
import type { PlacementGraphNode, PlacementInput } from '../../../src/engine/placement/index.js';
import type { NFV } from '../../../src/model/types.js';
import { violations } from './checker.js';

const END_HOSTS = ['WEBCLIENT', 'WEBSERVER', 'ENDHOST', 'ENDPOINT', 'MAILCLIENT', 'MAILSERVER'];

/** The placement input of a result: what placement.md P2 says each result node is. */
export function resultInput(input: NFV, result: NFV): PlacementInput {
  const typedInInput = new Set(
    (input.graphs.graph ?? []).flatMap((g) => g.node.filter((n) => n.functionalType).map((n) => n.name)),
  );
  const metrics = input.constraints?.nodeConstraints?.nodeMetrics ?? [];
  const optional = new Set(metrics.filter((m) => m.optional === true).map((m) => m.node));
  // nfv marks each place its answer left unused (now a FORWARDER) optional in the result's NodeMetrics.
  const transparent = new Set(
    (result.constraints?.nodeConstraints?.nodeMetrics ?? []).filter((m) => m.optional === true).map((m) => m.node),
  );
  const used: string[] = [];
  const graphs = (result.graphs.graph ?? []).map((g, k) => ({
    id: g.id ?? k,
    nodes: g.node.map((n): PlacementGraphNode => {
      const type = n.functionalType;
      const neighbours = (n.neighbour ?? []).map((nb) => nb.name);
      // A node untyped in the input (or added by the expansion) is an allocation place, used iff now a FIREWALL.
      const unused = type === 'FORWARDER' && transparent.has(n.name);
      if (!typedInInput.has(n.name) || unused) {
        if (type === 'FIREWALL' && !used.includes(n.name)) used.push(n.name);
        return { name: n.name, kind: 'place', neighbours };
      }
      if (END_HOSTS.includes(type!)) return { name: n.name, kind: 'endhost', functionalType: type, neighbours };
      if (type === 'FIREWALL' && optional.has(n.name)) {
        if (!used.includes(n.name)) used.push(n.name);
        return { name: n.name, kind: 'optional', functionalType: type, neighbours };
      }
      return { name: n.name, kind: 'function', functionalType: type, neighbours };
    }),
  }));
  return {
    graphs,
    hosts: input.hosts?.host ?? [],
    connections: input.connections?.connection ?? [],
    nodeMetrics: metrics,
    linkMetrics: input.constraints?.linkConstraints?.linkMetrics ?? [],
    used,
  };
}

/** Every way a simulation's placement answer breaks P3-P7 or P9 (empty when it holds). */
export function hostingViolations(input: NFV, result: NFV, hosting: HostingReport): string[] {
  const out: string[] = [];
  const inputHosts = input.hosts?.host ?? [];
  const resultHosts = result.hosts?.host ?? [];
  if (hosting.status !== 'placed') {
    if (JSON.stringify(resultHosts) !== JSON.stringify(inputHosts)) out.push('hosts changed without a placement');
    if (hosting.status === 'infeasible' && !hosting.conflicts?.length) out.push('infeasible without a conflict');
    return out;
  }
  const problem = resultInput(input, result);
  // Removed optional firewalls are no longer in the result graph: transparent, but nothing to check them against.
  const present = new Set(problem.graphs.flatMap((g) => g.nodes.map((n) => n.name)));
  out.push(
    ...violations(problem, {
      status: 'placed',
      nodes: hosting.nodes!,
      hosts: hosting.hosts!,
      links: hosting.routes!,
      linkMetrics: hosting.links!,
      external: hosting.external!,
      transparent: hosting.transparent!.filter((n) => present.has(n)),
      objective: hosting.objective!,
      optimal: hosting.optimal!,
      lowerBound: hosting.lowerBound ?? hosting.objective!,
    }),
  );
  // P9: every attribute as given, NodeRef = what is placed there (document order), active iff it carries one.
  if (resultHosts.length !== inputHosts.length) out.push('hosts added or dropped');
  inputHosts.forEach((given, k) => {
    const got = resultHosts[k];
    if (!got) return;
    const { nodeRef: _a, active: _b, ...givenRest } = given;
    const { nodeRef, active, ...gotRest } = got;
    if (JSON.stringify(gotRest) !== JSON.stringify(givenRest)) out.push(`host ${given.name}: attributes changed`);
    const placed = hosting.nodes!.filter((p) => p.host === given.name).map((p) => p.node);
    const refs = (nodeRef ?? []).map((r) => r.node);
    if (JSON.stringify(refs) !== JSON.stringify(placed))
      out.push(`host ${given.name}: NodeRef ${refs.join(',')}, placed ${placed.join(',')}`);
    if (active !== placed.length > 0) out.push(`host ${given.name}: active=${active} with ${placed.length} nodes`);
  });
  return out;
}
