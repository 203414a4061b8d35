/** Pictures: Graphviz DOT of a graph and of a stored result, rendered to SVG with Graphviz's dot. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ROOT, SHARED, scratch } from '../helpers.js';
import { nfv } from './in-process.js';

const HAVE_DOT = spawnSync('sh', ['-c', 'command -v dot']).status === 0;
const UNSAT = path.join(SHARED, 'verefoo-testfile', 'RegressioneTestCases', 'Test3_6.xml');

t.test('DOT of a graph and of a result: placed firewalls, unused places, failed requirements', async (t) => {
  const ws = await scratch(t);
  t.equal(
    (await nfv(['simulate', '--store', path.join(ROOT, 'samples', 'office-nat.xml')], { workspace: ws })).code,
    0,
  );
  const graph = await nfv(['graphs', 'draw', '1'], { workspace: ws });
  t.equal(graph.code, 0, graph.stderr);
  t.match(graph.stdout, /^digraph "graph 1" \{\n/);
  t.match(
    graph.stdout,
    /"10\.255\.0\.1" \[label="10\.255\.0\.1\\nallocation place", style="rounded,dashed"/,
    'a place, dashed',
  );
  t.equal(graph.stdout.match(/ -> /g)?.length, 8, 'each link once');
  const result = (await nfv(['simulations', 'draw', '1'], { workspace: ws })).stdout;
  t.match(
    result,
    /"10\.255\.0\.1" \[label="10\.255\.0\.1\\nFIREWALL \(placed\)\\n1 rule, default DENY", fillcolor="#ffd54f"/,
  );
  t.match(
    result,
    /"10\.255\.0\.2" \[label="10\.255\.0\.2\\nallocation place \(unused\)", style="rounded,dashed", color="gray70"/,
  );
  const file = path.join(ws, 'picture.dot');
  t.equal((await nfv(['simulations', 'draw', '1', '-o', file], { workspace: ws })).code, 0);
  t.equal(await readFile(file, 'utf8'), result, '-o FILE.dot writes the same DOT');
  t.equal((await nfv(['simulations', 'draw', '9'], { workspace: ws })).code, 3);
});

t.test(
  'rendered with Graphviz: the SVG shows the placed firewall and the failed requirements',
  {
    skip:
      (!HAVE_DOT && 'Graphviz is not installed here (apt-get install graphviz)') ||
      (!existsSync(UNSAT) && 'no ../shared here'),
  },
  async (t) => {
    const ws = await scratch(t);
    t.equal((await nfv(['simulate', '--store', UNSAT], { workspace: ws })).code, 1);
    const svg = path.join(ws, 'result.svg');
    const r = await nfv(['simulations', 'draw', '1', '-o', svg], { workspace: ws });
    t.equal(r.code, 0, r.stderr);
    const text = await readFile(svg, 'utf8');
    t.match(text, /<svg[\s\S]*<\/svg>/);
    t.match(text, /FIREWALL \(placed\)/);
    t.equal(
      text.match(/#4 isolation cannot hold|#5 isolation cannot hold|#6 isolation cannot hold|#7 isolation cannot hold/g)
        ?.length,
      4,
      'the four failed requirements',
    );
    t.match(text, /stroke="#d32f2f" stroke-dasharray/, 'drawn red and dashed');
    const png = path.join(ws, 'result.png');
    t.equal((await nfv(['graphs', 'draw', '1', '-o', png], { workspace: ws })).code, 0);
    t.same([...(await readFile(png)).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'a PNG');
  },
);

t.test(
  'a placed result: each active host is a cluster around its nodes, and dot renders it',
  { skip: !HAVE_DOT && 'Graphviz is not installed here (apt-get install graphviz)' },
  async (t) => {
    const ws = await scratch(t);
    const placed = await nfv(['simulate', '--store', path.join(ROOT, 'samples', 'data-centre.xml')], { workspace: ws });
    t.equal(placed.code, 0, placed.stderr);
    const dot = (await nfv(['simulations', 'draw', '1'], { workspace: ws })).stdout;
    t.match(dot, /subgraph "cluster_6" \{\n {4}label="host core1 \(MIDDLEBOX\)";[^\n]*\n {4}"172\.16\.0\.1" \[/);
    t.equal(dot.match(/subgraph "cluster_/g)?.length, 6, 'one cluster per active host');
    t.notMatch(dot, /host edge|host core2/, 'inactive hosts are not drawn');
    const svg = path.join(ws, 'hosts.svg');
    t.equal((await nfv(['simulations', 'draw', '1', '-o', svg], { workspace: ws })).code, 0);
    t.match(await readFile(svg, 'utf8'), /<title>cluster_6<\/title>[\s\S]*host core1 \(MIDDLEBOX\)/);
  },
);
