/** Tables show values, with columns per kind of resource and nested lists as counts; JSON still gives everything. */
import path from 'node:path';
import t from 'tap';
import { ROOT, scratch } from '../helpers.js';
import { nfv } from './in-process.js';

t.test('per-kind columns, counts for long lists, a firewall node with its rules', async (t) => {
  const ws = await scratch(t);
  const nodes = Array.from({ length: 241 }, (_, k) => ({
    name: `10.0.${k >> 8}.${k & 255}`,
    functionalType: 'WEBCLIENT',
    neighbour: k ? [{ name: '10.0.0.0' }] : [],
  }));
  t.equal(
    (await nfv(['graphs', 'create'], { workspace: ws, input: JSON.stringify({ graph: [{ node: nodes }] }) })).code,
    0,
  );
  const graphs = (await nfv(['graphs', 'list', '--format', 'table'], { workspace: ws })).stdout;
  t.match(graphs, /│ id │ service graph │ nodes │/);
  t.match(graphs, /│ 1\s+│ false\s+│ 241\s+│/);
  t.ok(Math.max(...graphs.split('\n').map((l) => l.length)) < 120, 'no line thousands of columns wide');
  const graph = (await nfv(['graphs', 'get', '1', '--format', 'table'], { workspace: ws })).stdout;
  t.match(graph, /│ id\s+│ name\s+│ function\s+│ neighbours │ configuration │/);
  t.match(graph, /│ 1\s+│ 10\.0\.0\.0\s+│ WEBCLIENT │\s+│\s+│/);
  t.equal(
    JSON.parse((await nfv(['graphs', 'get', '1', '--format', 'json'], { workspace: ws })).stdout).content[0].node
      .length,
    241,
    'JSON gives everything',
  );

  t.equal(
    (await nfv(['simulate', '--store', path.join(ROOT, 'samples', 'office-nat.xml')], { workspace: ws })).code,
    0,
  );
  t.equal((await nfv(['fwd', 'import', '--simulation', '1'], { workspace: ws })).code, 0);
  const list = (await nfv(['fwd', 'nodes', 'list', '--format', 'table'], { workspace: ws })).stdout;
  t.match(list, /│ id │ name\s+│ default │ rules │\n[\s\S]*│ 1\s+│ 10\.255\.0\.1 │ DENY\s+│ 1\s+│/);
  t.notMatch(list, /functionalType, configuration/, 'values, not field names');
  const node = (await nfv(['fwd', 'nodes', 'get', '1', '--format', 'table'], { workspace: ws })).stdout;
  t.match(node, /│ rule │ action │ source\s+│ destination │ protocol │ src port │ dst port │\n/);
  t.match(node, /│ dst port │\n[^]*│ 1\s+│ ALLOW\s+│ 192\.168\.1\.10 │ \*\s+│/, 'the rules under their header');
  t.notMatch(node, /-1\.-1/, 'rule addresses as CIDR (-1.-1.-1.-1 is *)');
  const stored = JSON.parse((await nfv(['fwd', 'nodes', 'get', '1', '--format', 'json'], { workspace: ws })).stdout);
  t.equal(stored.configuration.firewall.elements[0].destination, '-1.-1.-1.-1', 'the document keeps its form');
  const requirements = (await nfv(['requirements', 'get', '1', '--format', 'table'], { workspace: ws })).stdout;
  t.match(
    requirements,
    /│ REACHABILITY_PROPERTY │ 192\.168\.1\.10\s+│ 198\.51\.100\.80 │ TCP\s+│ \* -> 443 │/,
    'ports shown',
  );
});
