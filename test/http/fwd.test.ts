/** /fwd over a real listener: nodes, rules with stable ids, deploy output, generateFiles. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ROOT, request, startServer } from '../helpers.js';

const s = await startServer();
t.teardown(s.close);
const call = (method: string, target: string, body?: string, headers?: Record<string, string>) =>
  request(s.url, method, target, body, headers);

const node = (rules: object[], name = '30.0.0.1') =>
  JSON.stringify({
    name,
    functionalType: 'FIREWALL',
    configuration: { name: 'c', description: 'edge', firewall: { defaultAction: 'DENY', elements: rules } },
  });
const r1 = { action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.1', protocol: 'TCP', dstPort: '80' };
const r2 = { action: 'DENY', source: '10.0.1.5', destination: '*', protocol: 'UDP', srcPort: '1000-2000' };
const r3 = { action: 'ALLOW', source: '*', destination: '20.0.0.2' };

t.test('nodes: create, list by id range, read', async (t) => {
  t.same((await call('GET', '/fwd/nodes')).json, [], 'an empty range is an empty list');
  const a = await call('POST', '/fwd/nodes', node([r1, r2, r3]));
  t.equal(a.status, 201);
  t.same(a.json, { id: 1 });
  await call('POST', '/fwd/nodes', node([r1], '30.0.0.2'));
  t.equal((await call('GET', '/fwd/nodes')).json.length, 2);
  t.equal((await call('GET', '/fwd/nodes?beforeInclusive=2&afterInclusive=2')).json[0].name, '30.0.0.2');
  t.equal((await call('GET', '/fwd/nodes?beforeInclusive=3&afterInclusive=1')).status, 400, 'reversed range');
  t.equal((await call('GET', '/fwd/nodes?beforeInclusive=x')).status, 400);
  const got = (await call('GET', '/fwd/nodes/1')).json;
  t.same(
    got.configuration.firewall.elements.map((e: { id: number }) => e.id),
    [1, 2, 3],
  );
  t.equal((await call('GET', '/fwd/nodes/9')).status, 404);
});

t.test('invalid bodies are 400 and change nothing', async (t) => {
  const before = (await call('GET', '/fwd/nodes')).text;
  const cases: [string, RegExp][] = [
    [
      JSON.stringify({ name: 'x', functionalType: 'NAT', configuration: { name: 'n', nat: { source: ['1.1.1.1'] } } }),
      /is not FIREWALL/,
    ],
    [node([{ ...r1, action: 'MAYBE' }]), /action.*"MAYBE" is not an action/],
    [node([{ ...r1, protocol: 'SCTP' }]), /"SCTP" is not a protocol/],
    [node([{ ...r1, source: '10.0.0.300' }]), /"10\.0\.0\.300" is not an IPv4 address pattern/],
    [node([{ ...r1, dstPort: '70000' }]), /"70000" is not a port range/],
    ['<node name="x"/>', /the body must be JSON/],
  ];
  for (const [body, message] of cases) {
    const r = await call('POST', '/fwd/nodes', body);
    t.equal(r.status, 400, String(message));
    t.match(r.json.error.message, message);
  }
  t.equal((await call('GET', '/fwd/nodes')).text, before);
});

t.test('rules: ids stay stable across updates and deletes of other rules; an update keeps its place', async (t) => {
  t.same((await call('GET', '/fwd/nodes/1/configuration/firewall/2')).json.source, '10.0.1.5');
  t.equal((await call('DELETE', '/fwd/nodes/1/configuration/firewall/1')).status, 204);
  t.equal(
    (await call('GET', '/fwd/nodes/1/configuration/firewall/3')).json.destination,
    '20.0.0.2',
    'later ids still address their rules',
  );
  const put = await call('PUT', '/fwd/nodes/1/configuration/firewall/2', JSON.stringify({ ...r2, source: '10.0.1.6' }));
  t.equal(put.status, 204);
  const rules = (await call('GET', '/fwd/nodes/1')).json.configuration.firewall.elements;
  t.same(
    rules.map((e: { id: number; source: string }) => [e.id, e.source]),
    [
      [2, '10.0.1.6'],
      [3, '*'],
    ],
    'updated in place',
  );
  t.equal(
    (await call('PUT', '/fwd/nodes/1/configuration/firewall/2', JSON.stringify({ ...r2, id: 3 }))).status,
    400,
    'a different id in the body',
  );
  t.equal((await call('GET', '/fwd/nodes/1/configuration/firewall/1')).status, 404);
  t.equal((await call('DELETE', '/fwd/nodes/1/configuration/firewall/1')).status, 404);
  t.equal((await call('PUT', '/fwd/nodes/9/configuration/firewall/2', JSON.stringify(r2))).status, 404);

  // PUT of the whole node or configuration keeps the ids the rules bring, gives new ones to new rules.
  const current = (await call('GET', '/fwd/nodes/1')).json;
  current.configuration.firewall.elements.push(r1);
  t.equal((await call('PUT', '/fwd/nodes/1', JSON.stringify(current))).status, 204);
  t.same(
    (await call('GET', '/fwd/nodes/1')).json.configuration.firewall.elements.map((e: { id: number }) => e.id),
    [2, 3, 5],
  );
  const conf = { name: 'c2', firewall: { defaultAction: 'ALLOW', elements: [{ ...r3, id: 3 }, r2] } };
  t.equal((await call('PUT', '/fwd/nodes/1/configuration', JSON.stringify(conf))).status, 204);
  t.same(
    (await call('GET', '/fwd/nodes/1')).json.configuration.firewall.elements.map((e: { id: number }) => e.id),
    [3, 6],
  );
  t.equal(
    (await call('PUT', '/fwd/nodes/1/configuration', JSON.stringify({ name: 'x', nat: { source: ['1.1.1.1'] } })))
      .status,
    400,
  );
  t.equal((await call('PUT', '/fwd/nodes/9', node([r1]))).status, 404);
});

t.test('deploy output: text/plain with a file name', async (t) => {
  const ipt = await call('GET', '/fwd/deploy/getIptables/2');
  t.equal(ipt.status, 200);
  t.match(ipt.headers.get('content-type'), /^text\/plain/);
  t.equal(ipt.headers.get('content-disposition'), 'attachment; filename="iptables_edge_2.rules"');
  t.match(ipt.text, /-A FORWARD -s 10\.0\.0\.0\/24 -d 20\.0\.0\.1\/32 -p tcp --dport 80 -j ACCEPT/);
  for (const [segment, pattern] of [
    ['getNftables', /\ntable ip nfv\ndelete table ip nfv\ntable ip nfv \{\n/],
    ['getOpenVswitch', /priority=0,actions=drop/],
    ['getIpfw', /add 65534 deny ip from any to any/],
    ['getVendorFirewall', /config firewall policy/],
    ['getFortinet', /config firewall policy/],
  ] as const) {
    const r = await call('GET', `/fwd/deploy/${segment}/2`);
    t.equal(r.status, 200, segment);
    t.match(r.text, pattern);
  }
  const nft = await call('GET', '/fwd/deploy/getNftables/2?sets=true&format=json');
  t.equal(nft.status, 200);
  t.match(nft.headers.get('content-type'), /^application\/json/);
  t.equal(nft.headers.get('content-disposition'), 'attachment; filename="nftables_edge_2.json"');
  t.match(nft.json, { nftables: [{ metainfo: { json_schema_version: 1 } }] });
  t.equal((await call('GET', '/fwd/deploy/getNftables/2?format=yaml')).status, 400);
  t.equal((await call('GET', '/fwd/deploy/getIptables/99')).status, 404);
  t.equal((await call('GET', '/fwd/deploy/getSomething/2')).status, 404);
});

t.test('deleting nodes', async (t) => {
  t.equal((await call('DELETE', '/fwd/nodes/2')).status, 204);
  t.equal((await call('DELETE', '/fwd/nodes/2')).status, 404);
  t.equal((await call('DELETE', '/fwd/nodes')).status, 204);
  t.same((await call('GET', '/fwd/nodes')).json, []);
  t.same((await call('POST', '/fwd/nodes', node([r1]))).json, { id: 3 }, 'ids are not reused');
});

t.test('generateFiles: iptables only or every format, per firewall of the NFV', async (t) => {
  const nfv = await readFile(path.join(ROOT, 'samples', 'web-farm.xml'), 'utf8');
  const one = await call('POST', '/adp/venvironment/generateFiles?firewallType=IPTABLES', nfv);
  t.equal(one.status, 200);
  t.same(
    one.json.content[0].file.map((f: { name: string }) => f.name),
    ['iptables_dbfw_1.rules'],
  );
  const all = await call('POST', '/adp/venvironment/generateFiles?firewallType=ALL', nfv, {
    Accept: 'application/xml',
  });
  t.match(all.text, /<file node="10\.0\.3\.1" id="1" format="ovs" name="ovs_dbfw_1\.flows">/);
  t.equal((await call('POST', '/adp/venvironment/generateFiles', nfv)).status, 400, 'missing firewallType');
  t.equal(
    (await call('POST', '/adp/venvironment/generateFiles?firewallType=PF', nfv)).status,
    400,
    'unknown firewallType',
  );
  t.equal(
    (await call('POST', '/adp/venvironment/generateFiles?firewallType=ALL', '{"graphs":{}}')).status,
    400,
    'XML only',
  );
});
