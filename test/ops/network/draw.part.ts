/**
 * Pictures as Graphviz DOT in-process: `graphs.draw` of a stored graph, and what `dotOf` shows of a result (placed
 * firewalls with their rules, unused places faded, failed requirements red and dashed).
 */
import t from 'tap';
import type { Report } from '../../../src/engine/simulate.js';
import type { Graph } from '../../../src/model/types.js';
import { dotOf, graphsDraw } from '../../../src/ops/network/draw.js';
import { invoke } from '../../../src/ops/operation.js';
import { ok, refused, workspace } from '../call.js';

const graph = {
  graph: [
    {
      node: [
        { name: '10.0.0.1', functionalType: 'WEBCLIENT', neighbour: [{ name: '30.0.0.1' }] },
        { name: '30.0.0.1', neighbour: [{ name: '10.0.0.1' }, { name: '20.0.0.1' }] },
        { name: '20.0.0.1', functionalType: 'NAT', neighbour: [{ name: '30.0.0.1' }] },
      ],
    },
  ],
};

t.test('graphs.draw: one box per node, one edge per linked pair, a file name', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/adp/graphs', graph, 201);
  const drawn = await invoke(graphsDraw, ws, { params: { gid: 1 } });
  if (!drawn.ok) return t.fail(drawn.error);
  t.match(drawn.reply, { kind: 'text', filename: 'graph-1.dot', mediaType: 'text/vnd.graphviz; charset=utf-8' });
  const dot = drawn.reply.body;
  t.match(dot, /^digraph "graph 1" \{\n/);
  t.match(dot, /"10\.0\.0\.1" \[label="10\.0\.0\.1\\nWEBCLIENT", fillcolor="#e3f2fd"\];/);
  t.match(dot, /"20\.0\.0\.1" \[label="20\.0\.0\.1\\nNAT", fillcolor="#f3e5f5"\];/);
  t.match(dot, /"30\.0\.0\.1" \[label="30\.0\.0\.1\\nallocation place", style="rounded,dashed"/);
  t.equal(dot.match(/ -> /g)?.length, 2, 'links both ways are one edge each');
  t.match(dot, /\n\}\n$/);
  await refused(t, ws, 'GET', '/adp/graphs/2/draw', undefined, 404, /^graph 2 does not exist$/);
});

t.test('dotOf a result: placed firewalls with their rules, unused places faded, failed requirements', async (t) => {
  const input: Graph = {
    id: 1,
    node: [
      { name: 'a', functionalType: 'WEBCLIENT', neighbour: [{ name: 'p1' }] },
      { name: 'p1', neighbour: [{ name: 'a' }, { name: 'p2' }] },
      { name: 'p2', neighbour: [{ name: 'p1' }, { name: 'b' }] },
      { name: 'b', functionalType: 'WEBSERVER', neighbour: [{ name: 'p2' }] },
    ],
  };
  const result: Graph = structuredClone(input);
  result.node[1] = {
    ...result.node[1]!,
    functionalType: 'FIREWALL',
    configuration: {
      name: 'fw',
      firewall: { defaultAction: 'ALLOW', elements: [{ action: 'DENY', source: 'a', destination: 'b' }] },
    },
  };
  result.node[2] = { ...result.node[2]!, functionalType: 'FORWARDER' };
  const report = {
    verdict: 'UNSAT',
    requirements: [
      { index: 0, name: 'ISOLATION_PROPERTY', graph: 1, src: 'a', dst: 'b', isSat: true },
      { index: 1, name: 'REACHABILITY_PROPERTY', graph: 1, src: 'b', dst: 'a', isSat: false },
    ],
  } as unknown as Report;
  const dot = dotOf({ title: 'simulation 4: UNSAT', graph: result, input, report });
  t.match(dot, /"p1" \[label="p1\\nFIREWALL \(placed\)\\n1 rule, default ALLOW", fillcolor="#ffd54f"/);
  t.match(dot, /"p2" \[label="p2\\nallocation place \(unused\)", style="rounded,dashed", color="gray70"/);
  t.match(dot, /"b" -> "a" \[dir=forward, color="#d32f2f", .*label="#1 reachability cannot hold"\];/);
  t.notMatch(dot, /#0 isolation/, 'a requirement that holds is not drawn');
  const elsewhere = dotOf({ title: 't', graph: { ...result, id: 2 }, input, report });
  t.notMatch(elsewhere, /cannot hold/, "only the drawn graph's requirements");
  t.match(dotOf({ title: 'a "quoted" title', graph: input }), /^digraph "a \\"quoted\\" title" \{/);
});
