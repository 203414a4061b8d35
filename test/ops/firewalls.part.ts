/**
 * The `/fwd` operations in-process: firewall nodes and their rules (ids given by the service, not reused while a node
 * is stored, kept by a rule across updates; list order is first-match order), import from a stored simulation, and
 * the deployable configuration of a node in each format. Bodies are XML or JSON; refusals change nothing.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { fwdNodesCreate, fwdNodesGet, fwdNodesImport, fwdNodesList } from '../../src/ops/firewalls.js';
import { invoke } from '../../src/ops/operation.js';
import { ROOT } from '../helpers.js';
import { call, content, ok, refused, workspace } from './call.js';

const node = (elements: object[], name = '30.0.0.1', more: object = {}) => ({
  name,
  functionalType: 'FIREWALL',
  configuration: { name: 'c', description: 'edge', firewall: { defaultAction: 'DENY', elements } },
  ...more,
});
const r1 = { action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.1', protocol: 'TCP', dstPort: '80' };
const r2 = { action: 'DENY', source: '10.0.1.5', destination: '*', protocol: 'UDP', srcPort: '1000-2000' };
const r3 = { action: 'ALLOW', source: '*', destination: '20.0.0.2' };

/** The ids and destinations of a node's rules, in first-match order. */
const rules = async (t: Tap.Test, ws: Awaited<ReturnType<typeof workspace>>, nid: number) =>
  (
    (await ok(t, ws, 'GET', `/fwd/nodes/${nid}`)).configuration.firewall.elements as {
      id: number;
      destination: string;
    }[]
  ).map((e) => `${e.id} ${e.destination}`);

t.test('nodes: stored from JSON with fresh ids, listed by id range, read', async (t) => {
  const ws = await workspace(t);
  const empty = await invoke(fwdNodesList, ws);
  t.match(empty, { ok: false, status: 404, empty: 'firewall nodes' }, "an empty range is VEREFOO's 404");
  const created = await invoke(fwdNodesCreate, ws, { body: JSON.stringify(node([r1, r2], '30.0.0.1', { id: 40 })) });
  t.match(created, { ok: true, status: 201, reply: { value: { id: 1 } } }, 'the id the body gives is not kept');
  t.match(created, { reply: { location: '/fwd/nodes/1' } }, "the created node's path, for its Location");
  const b = await invoke(fwdNodesCreate, ws, {
    body: JSON.stringify(node([r3], '30.0.0.2', { neighbour: [{ name: 'x' }] })),
  });
  t.match(b, { ok: true, reply: { value: { id: 2 } } });
  const got = await invoke(fwdNodesGet, ws, { params: { nid: 2 } });
  if (!got.ok) return t.fail(got.error);
  t.match(got.reply.value, { id: 2, name: '30.0.0.2', functionalType: 'FIREWALL' });
  t.notOk((got.reply.value as { neighbour?: unknown }).neighbour, 'links are not kept');
  t.same(await rules(t, ws, 1), ['1 20.0.0.1', '2 *'], 'rule ids given by the service');
  t.same(
    (await ok(t, ws, 'GET', '/fwd/nodes?beforeInclusive=2&afterInclusive=5', undefined, 200)).map(
      (n: { id: number }) => n.id,
    ),
    [2],
  );
  t.same(
    (await ok(t, ws, 'GET', '/fwd/nodes')).map((n: { id: number }) => n.id),
    [1, 2],
    'defaults 1 to 10',
  );
  await refused(
    t,
    ws,
    'GET',
    '/fwd/nodes?beforeInclusive=5&afterInclusive=2',
    undefined,
    400,
    /^beforeInclusive \(5\) is above afterInclusive \(2\)$/,
  );
  await refused(t, ws, 'GET', '/fwd/nodes?beforeInclusive=-1', undefined, 400, /^beforeInclusive: "-1" is not/);
  await refused(t, ws, 'GET', '/fwd/nodes/9', undefined, 404, /^firewall node 9 does not exist$/);
});

t.test('invalid nodes are refused with their reason and store nothing', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/fwd/nodes', node([r1]), 201);
  const cases: [object | string, RegExp][] = [
    [{ ...node([]), functionalType: 'NAT' }, /^node\.functional_type: "NAT" is not FIREWALL$/],
    [{ name: '30.0.0.1', functionalType: 'FIREWALL' }, /^node\.configuration: a firewall node needs a configuration$/],
    [
      { name: '30.0.0.1', functionalType: 'FIREWALL', configuration: { name: 'c', nat: { source: ['1.1.1.1'] } } },
      /^configuration\.nat: a firewall node's configuration holds a firewall, not nat$/,
    ],
    [
      node([
        { ...r1, id: 5 },
        { ...r2, id: 5 },
      ]),
      /^configuration\.firewall\.elements: rule id 5 appears twice$/,
    ],
    [node([{ ...r1, action: 'MAYBE' }]), /action/],
    [node([{ ...r1, source: '10.0.0.300' }]), /"10\.0\.0\.300"/],
    [node([{ ...r1, dstPort: '70000' }]), /"70000"/],
    ['<node name="30.0.0.1" functional_type="FIREWALL"/>', /^node\.configuration: a firewall node needs a config/],
  ];
  for (const [body, message] of cases) await refused(t, ws, 'POST', '/fwd/nodes', body, 400, message);
});

t.test('rules keep their ids and places across updates; ids are not reused while nodes are stored', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/fwd/nodes', node([r1, r2, r3]), 201);
  t.same(await rules(t, ws, 1), ['1 20.0.0.1', '2 *', '3 20.0.0.2']);
  t.match(await ok(t, ws, 'GET', '/fwd/nodes/1/configuration/firewall/2', undefined, 200), r2);

  // An update in place keeps the rule's position.
  await ok(t, ws, 'PUT', '/fwd/nodes/1/configuration/firewall/2', { ...r2, destination: '20.0.0.9' }, 204);
  t.same(await rules(t, ws, 1), ['1 20.0.0.1', '2 20.0.0.9', '3 20.0.0.2']);
  await refused(
    t,
    ws,
    'PUT',
    '/fwd/nodes/1/configuration/firewall/2',
    { ...r2, id: 3 },
    409,
    /^elements\.id: 3 differs from the rule in the path \(2\)$/,
  );
  await refused(t, ws, 'GET', '/fwd/nodes/1/configuration/firewall/9', undefined, 404, /^rule 9 does not exist/);

  await ok(t, ws, 'DELETE', '/fwd/nodes/1/configuration/firewall/1', undefined, 204);
  t.same(await rules(t, ws, 1), ['2 20.0.0.9', '3 20.0.0.2'], 'the others keep their ids');
  await refused(
    t,
    ws,
    'DELETE',
    '/fwd/nodes/1/configuration/firewall/1',
    undefined,
    404,
    /^rule 1 does not exist on firewall node 1$/,
  );

  // A node update: rules that bring their own ids keep them, others (and foreign ids) get new ones.
  await ok(t, ws, 'POST', '/fwd/nodes', node([r1]), 201);
  t.same(await rules(t, ws, 2), ['4 20.0.0.1']);
  await ok(t, ws, 'PUT', '/fwd/nodes/1', node([{ ...r3, id: 3 }, r1, { ...r2, id: 4 }]), 204);
  t.same(await rules(t, ws, 1), ['3 20.0.0.2', '5 20.0.0.1', '6 *'], 'rule 4 belongs to node 2');
  await refused(t, ws, 'PUT', '/fwd/nodes/9', node([r1]), 404, /^firewall node 9 does not exist$/);

  await ok(
    t,
    ws,
    'PUT',
    '/fwd/nodes/1/configuration',
    { name: 'p', firewall: { defaultAction: 'ALLOW', elements: [r2] } },
    204,
  );
  t.match((await ok(t, ws, 'GET', '/fwd/nodes/1')).configuration, {
    name: 'p',
    firewall: { defaultAction: 'ALLOW', elements: [{ id: 7, ...r2 }] },
  });
  // A configuration whose firewall comes later (VEREFOO takes it); its rules are gone with it.
  await ok(t, ws, 'PUT', '/fwd/nodes/1/configuration', { name: 'p' }, 204);
  t.same((await ok(t, ws, 'GET', '/fwd/nodes/1')).configuration, { name: 'p' });
});

t.test('deploy: each format as a text file named after the node', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/fwd/nodes', node([r1, r2]), 201);
  const formats: [string, string, RegExp][] = [
    [
      'getIptables',
      'iptables_edge_1.rules',
      /-A FORWARD -s 10\.0\.0\.0\/24 -d 20\.0\.0\.1\/32 -p tcp --dport 80 -j ACCEPT/,
    ],
    ['getNftables', 'nftables_edge_1.nft', /\n\t\tip saddr 10\.0\.0\.0\/24 ip daddr 20\.0\.0\.1 tcp dport 80 accept\n/],
    ['getOpenVswitch', 'ovs_edge_1.flows', /priority=0,actions=drop/],
    ['getIpfw', 'ipfw_edge_1.sh', /add 65534 deny ip from any to any/],
    ['getVendorFirewall', 'fortios_edge_1.conf', /config firewall policy/],
    ['getFortinet', 'fortios_edge_1.conf', /config firewall policy/],
  ];
  for (const [segment, filename, pattern] of formats) {
    const o = await call(ws, 'GET', `/fwd/deploy/${segment}/1`);
    if (!o.ok) return t.fail(o.error);
    t.match(o.reply, { kind: 'text', filename, mediaType: 'text/plain; charset=utf-8' }, segment);
    t.match(content(o), pattern);
  }
  const json = await call(ws, 'GET', '/fwd/deploy/getNftables/1?sets=true&format=json');
  if (!json.ok) return t.fail(json.error);
  t.match(json.reply, { kind: 'text', filename: 'nftables_edge_1.json', mediaType: 'application/json; charset=utf-8' });
  t.match(JSON.parse(content(json)), { nftables: [{ metainfo: { json_schema_version: 1 } }] }, 'JSON for nft -j -f');
  await refused(
    t,
    ws,
    'GET',
    '/fwd/deploy/getNftables/1?sets=yes',
    undefined,
    400,
    /^sets: "yes" is not true or false$/,
  );
  await refused(
    t,
    ws,
    'GET',
    '/fwd/deploy/getNftables/1?format=xml',
    undefined,
    400,
    /^format: "xml" is not text or json$/,
  );
  await refused(t, ws, 'GET', '/fwd/deploy/getIptables/7', undefined, 404, /^firewall node 7 does not exist$/);
  await refused(t, ws, 'GET', '/fwd/deploy/getPf/1', undefined, 404, /^no operation at "\/fwd\/deploy\/getPf\/1"$/);
});

t.test('import: every FIREWALL node of a stored simulation, under new ids', async (t) => {
  const ws = await workspace(t);
  const importing = (query: Record<string, string>) =>
    invoke(fwdNodesImport, ws, { query: new URLSearchParams(query) });
  await refused(t, ws, 'POST', '/fwd/nodes/import', undefined, 400, /^simulation: the id of a stored simulation/);
  await refused(t, ws, 'POST', '/fwd/nodes/import?simulation=3', undefined, 404, /^simulation 3 does not exist$/);
  await refused(t, ws, 'POST', '/fwd/nodes/import?simulation=x', undefined, 400, /^simulation: "x" is not an id/);
  await ok(t, ws, 'POST', '/adp/simulations', await readFile(path.join(ROOT, 'samples', 'office-nat.xml'), 'utf8'));
  await ok(t, ws, 'POST', '/fwd/nodes', node([r1]), 201);
  const imported = await importing({ simulation: '1' });
  if (!imported.ok) return t.fail(imported.error);
  t.equal(imported.status, 201);
  const added = imported.reply.value as { id: number; name: string; graph: number }[];
  t.ok(added.length >= 1, 'the placed firewalls');
  t.same(
    added.map((a) => a.id),
    added.map((_, k) => k + 2),
    'ids after the node already stored',
  );
  t.ok(
    added.every((a) => a.graph === 0 && /^10\.255\.0\.\d$/.test(a.name)),
    'named as in the result, on its graph',
  );
  const stored = await ok(t, ws, 'GET', `/fwd/nodes/${added[0]!.id}`);
  t.match(stored, { name: added[0]!.name, functionalType: 'FIREWALL' });
});

t.test('deleting nodes: one, then all; after all, ids start again at 1 (VEREFOO)', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/fwd/nodes', node([r1]), 201);
  await ok(t, ws, 'POST', '/fwd/nodes', node([r2]), 201);
  await ok(t, ws, 'DELETE', '/fwd/nodes/1', undefined, 204);
  await refused(t, ws, 'DELETE', '/fwd/nodes/1', undefined, 404, /^firewall node 1 does not exist$/);
  await ok(t, ws, 'POST', '/fwd/nodes', node([r1]), 201);
  t.match(await ok(t, ws, 'GET', '/fwd/nodes'), [{ id: 2 }, { id: 3 }], 'ids are not reused while nodes are stored');
  await ok(t, ws, 'DELETE', '/fwd/nodes', undefined, 204);
  await refused(t, ws, 'GET', '/fwd/nodes', undefined, 404, /^no firewall node has an id from 1 to 10$/);
  await refused(t, ws, 'DELETE', '/fwd/nodes', undefined, 404, /^the workspace holds no firewall nodes$/);
  t.match(await ok(t, ws, 'POST', '/fwd/nodes', node([r1])), { id: 1 });
  t.same(await rules(t, ws, 1), ['1 20.0.0.1'], 'nor do rule ids');
});
