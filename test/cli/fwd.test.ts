/** From a simulation to device configuration through the CLI: simulate --store, fwd import, deploy. */
import { spawnSync } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { scratch } from '../helpers.js';
import { nfv } from './in-process.js';

const ws = await scratch(t);
const run = (args: string[], input?: string) => nfv(args, { workspace: ws, input });
const have = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

t.test('simulation -> import -> deploy', async (t) => {
  t.equal((await run(['simulate', '--store', path.join('samples', 'office-nat.xml')])).code, 0);
  const imported = await run(['fwd', 'import', '--simulation', '1']);
  t.equal(imported.code, 0, imported.stderr);
  const [first] = JSON.parse(imported.stdout);
  t.same(first, { id: 1, name: '10.255.0.1', graph: 0 }, 'the new id with the node name it came from');
  const rules = await run(['deploy', 'iptables', '1']);
  t.equal(rules.code, 0);
  t.match(rules.stdout, /-A FORWARD -s 192\.168\.1\.10\/32 -j ACCEPT/);
  if (have('iptables-restore'))
    t.equal(spawnSync('iptables-restore', ['--test'], { input: rules.stdout }).status, 0, 'iptables-restore --test');
  const out = path.join(await scratch(t), 'fw.flows');
  const ovs = await run(['deploy', 'ovs', '1', '-o', out]);
  t.equal(ovs.code, 0);
  // Stateful by default: allowed connections are committed to conntrack, their replies pass (docs/SEMANTICS.md).
  t.match(
    await readFile(out, 'utf8'),
    /table=1,priority=60000,ip,nw_src=192\.168\.1\.10\/32,actions=ct\(commit\),NORMAL/,
  );
  const oneWay = await run(['deploy', 'ovs', '1', '--stateless']);
  t.equal(oneWay.code, 0, oneWay.stderr);
  t.match(oneWay.stdout, /priority=60000,ip,nw_src=192\.168\.1\.10\/32,actions=NORMAL/);
  const nft = await run(['deploy', 'nftables', '1']);
  t.equal(nft.code, 0, nft.stderr);
  t.match(nft.stdout, /\ntable ip nfv\ndelete table ip nfv\ntable ip nfv \{\n\tchain forward \{\n/, 'text when piped');
  const nftJson = await run(['deploy', 'nftables', '1', '--sets', '--format', 'json']);
  t.equal(nftJson.code, 0, nftJson.stderr);
  t.match(JSON.parse(nftJson.stdout), { nftables: [{ metainfo: { json_schema_version: 1 } }] });
  const sets = await run(['deploy', 'iptables', '1', '--sets']);
  t.equal(sets.code, 2);
  t.match(sets.stderr, /^nfv: --sets: only nftables groups rules into sets, not iptables\n/);
  const bpf = await run(['deploy', 'bpf', '1']);
  t.equal(bpf.code, 0, bpf.stderr);
  t.match(bpf.stdout, /\n\$\{cmd\} FORWARD append src=192\.168\.1\.10\/32 action=ACCEPT\n/);
  t.equal((await run(['deploy', 'vendor', '9'])).code, 3);
  t.equal((await run(['deploy', 'pf', '1'])).code, 2);
});

t.test('fwd nodes and rules', async (t) => {
  const list = JSON.parse((await run(['fwd', 'nodes', 'list', '--from', '1', '--to', '5'])).stdout);
  t.equal(list.length, 1);
  const eid = list[0].configuration.firewall.elements[0].id;
  t.equal(JSON.parse((await run(['fwd', 'rules', 'get', '1', String(eid)])).stdout).action, 'ALLOW');
  const upd = await run(
    ['fwd', 'rules', 'update', '1', String(eid)],
    '{"action":"DENY","source":"192.168.1.10","destination":"*","protocol":"ANY"}',
  );
  t.equal(upd.code, 0, upd.stderr);
  const added = await run(
    ['fwd', 'rules', 'add', '1'],
    '<elements><action>ALLOW</action><source>10.0.0.1</source><destination>*</destination><protocol>TCP</protocol>' +
      '</elements>',
  );
  t.equal(added.code, 0, added.stderr);
  t.match(JSON.parse(added.stdout), { source: '10.0.0.1', protocol: 'TCP', id: Number });
  const firewall = await run(['fwd', 'configuration', 'create', '1'], '{"defaultAction":"ALLOW","elements":[]}');
  t.equal(firewall.code, 4, 'another default action is a conflict');
  t.match(firewall.stderr, /differs from node 1's DENY/);
  const graph =
    '<graph><node name="50.0.0.1" functional_type="FIREWALL"><configuration name="f">' +
    '<firewall defaultAction="ALLOW"/></configuration></node></graph>';
  const fromGraph = await run(['fwd', 'nodes', 'addgraph'], graph);
  t.equal(fromGraph.code, 0, fromGraph.stderr);
  t.same(
    JSON.parse(fromGraph.stdout).map((n: { id: number; name: string }) => [n.id, n.name]),
    [[2, '50.0.0.1']],
  );
  t.equal((await run(['fwd', 'rules', 'delete', '1', '99'])).code, 3);
  const bad = await run(['fwd', 'nodes', 'add'], '{"name":"x","functionalType":"NAT"}');
  t.equal(bad.code, 2);
  t.match(bad.stderr, /is not FIREWALL/);
});

t.test('fwd nodes delete-all: ids start again at 1; nothing left to delete is said, exit 0', async (t) => {
  const all = await run(['fwd', 'nodes', 'delete-all', '--yes']);
  t.equal(all.code, 0, all.stderr);
  const again = await run(['fwd', 'nodes', 'delete-all', '--yes']);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stderr, /holds no firewall nodes/);
  const list = await run(['fwd', 'nodes', 'list']);
  t.same([list.code, list.stdout.trim()], [0, '[]'], 'an empty list, exit 0');
  const node = '{"name":"9.9.9.9","functionalType":"FIREWALL","configuration":{"name":"c"}}';
  const added = await run(['fwd', 'nodes', 'add'], node);
  t.equal(added.code, 0, added.stderr);
  t.match(JSON.parse(added.stdout), { id: 1, name: '9.9.9.9', configuration: { name: 'c' } });
});

t.test('generate-files writes one file per firewall and format', async (t) => {
  const dir = await scratch(t);
  const r = await run(['generate-files', path.join('samples', 'web-farm.xml'), '--type', 'all', '-o', dir]);
  t.equal(r.code, 0, r.stderr);
  t.same((await readdir(dir)).sort(), [
    'fortios_dbfw_1.conf',
    'ipfw_dbfw_1.sh',
    'iptables_dbfw_1.rules',
    'nftables_dbfw_1.nft',
    'ovs_dbfw_1.flows',
  ]);
});
