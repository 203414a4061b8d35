/**
 * /fwd over a real listener: nodes, rules with stable ids, deploy output, generateFiles; and what VEREFOO's own
 * JAX-RS clients do (XML bodies, absolute Locations followed, redirects of addnfv and addgraph followed).
 */
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
  const none = await call('GET', '/fwd/nodes');
  t.equal(none.status, 404, 'an empty range is 404, as in VEREFOO');
  t.match(none.json.error.message, /no firewall node has an id from 1 to 10/);
  const a = await call('POST', '/fwd/nodes', node([r1, r2, r3]));
  t.equal(a.status, 201);
  t.equal(a.headers.get('location'), `${s.url}/fwd/nodes/1`, 'an absolute Location');
  t.match(a.json, {
    id: 1,
    name: '30.0.0.1',
    configuration: { firewall: { elements: [{ id: 1 }, { id: 2 }, { id: 3 }] } },
  });
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
    ['<node name="x"/>', /node\.functional_type: null is not FIREWALL/],
    ['text', /^JSON: /],
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
    409,
    'a different id in the body: 409, as in VEREFOO',
  );
  const { protocol: _p, ...noProtocol } = r2;
  const partial = await call('PUT', '/fwd/nodes/1/configuration/firewall/2', JSON.stringify(noProtocol));
  t.equal(partial.status, 400, 'VEREFOO wants every field that decides a packet');
  t.match(partial.json.error.message, /^elements\.protocol: is required$/);
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
  // A configuration whose firewall comes later (VEREFOO's testUpdateConfiguration4), then the firewall again.
  t.equal((await call('PUT', '/fwd/nodes/1/configuration', JSON.stringify({ name: 'later' }))).status, 204);
  t.same((await call('GET', '/fwd/nodes/1')).json.configuration, { name: 'later' });
  t.equal((await call('PUT', '/fwd/nodes/1/configuration', JSON.stringify(conf))).status, 204);
  t.equal((await call('PUT', '/fwd/nodes/9', node([r1]))).status, 404);
});

t.test('deploy output: text/plain with a file name', async (t) => {
  const ipt = await call('GET', '/fwd/deploy/getIptables/2');
  t.equal(ipt.status, 200);
  t.equal(ipt.headers.get('content-type'), 'text/plain; charset=utf-8', 'the charset named once');
  t.equal(ipt.headers.get('content-disposition'), 'attachment; filename="iptables_edge_2.rules"');
  t.match(ipt.text, /-A FORWARD -s 10\.0\.0\.0\/24 -d 20\.0\.0\.1\/32 -p tcp --dport 80 -j ACCEPT/);
  for (const [segment, pattern] of [
    ['getNftables', /\ntable ip nfv\ndelete table ip nfv\ntable ip nfv \{\n/],
    ['getOpenVswitch', /priority=0,actions=drop/],
    ['getIpfw', /add 65534 deny ip from any to any/],
    ['getVendorFirewall', /config firewall policy/],
    ['getFortinet', /config firewall policy/],
    [
      'getBpfFirewall',
      /\n\$\{cmd\} FORWARD append src=10\.0\.0\.0\/24 dst=20\.0\.0\.1\/32 l4proto=tcp dport=80 action=ACCEPT\n/,
    ],
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

t.test('POST of a firewall and of a rule under a node: 201 with absolute Locations (VEREFOO)', async (t) => {
  const fw = { defaultAction: 'ALLOW', elements: [r1, { ...r3, id: 7 }] };
  const created = await call('POST', '/fwd/nodes/1/configuration', JSON.stringify(fw));
  t.equal(created.status, 201);
  t.equal(created.headers.get('location'), `${s.url}/fwd/nodes/1/configuration/firewall`);
  t.same(
    created.json.elements.map((e: { id: number }) => e.id),
    [9, 7],
    'a rule the node holds keeps its id, a new one gets one',
  );
  const other = await call('POST', '/fwd/nodes/1/configuration', JSON.stringify({ ...fw, defaultAction: 'DENY' }));
  t.equal(other.status, 409, 'another default action is a conflict');
  t.match(other.json.error.message, /differs from node 1's ALLOW/);
  t.equal((await call('POST', '/fwd/nodes/9/configuration', JSON.stringify(fw))).status, 400, 'unknown node: 400');

  const rule = await call('POST', '/fwd/nodes/1/configuration/firewall', JSON.stringify({ ...r2, id: 99 }));
  t.equal(rule.status, 201);
  t.equal(rule.headers.get('location'), `${s.url}/fwd/nodes/1/configuration/firewall/10`, 'the new id, not the given');
  t.match(rule.json, { id: 10, source: '10.0.1.5' });
  const rules = (await call('GET', '/fwd/nodes/1')).json.configuration.firewall.elements;
  t.same(
    rules.map((e: { id: number }) => e.id),
    [9, 7, 10],
    'appended last',
  );
  const { action: _a, ...noAction } = r2;
  t.equal((await call('POST', '/fwd/nodes/1/configuration/firewall', JSON.stringify(noAction))).status, 400);
  t.equal((await call('POST', '/fwd/nodes/9/configuration/firewall', JSON.stringify(r2))).status, 400);
});

/** A request whose redirect is not followed: to see the 302 itself. */
const unfollowed = (method: string, target: string, body: string) =>
  fetch(s.url + target, {
    method,
    body,
    redirect: 'manual',
    headers: { 'Content-Type': 'application/xml', Accept: 'application/json' },
  });

t.test("VEREFOO's client: XML in and out, Locations followed, addnfv and addgraph redirects", async (t) => {
  const xmlNode =
    '<node name="40.0.0.1" functional_type="FIREWALL"><configuration name="conf" description="x">' +
    '<firewall defaultAction="DENY"><elements><action>ALLOW</action><source>10.0.0.1</source>' +
    '<destination>20.0.0.-1</destination><protocol>TCP</protocol><src_port>*</src_port><dst_port>443</dst_port>' +
    '</elements></firewall></configuration></node>';
  const xml = { Accept: 'application/xml' };
  const created = await call('POST', '/fwd/nodes', xmlNode, xml);
  t.equal(created.status, 201);
  t.match(created.headers.get('content-type'), /^application\/xml/);
  t.match(created.text, /<node [^>]*name="40\.0\.0\.1"[^>]*functional_type="FIREWALL"/);
  const location = created.headers.get('location')!;
  t.match(location, new RegExp(`^${s.url}/fwd/nodes/\\d+$`));
  // The client follows the absolute Location as it is.
  const read = await fetch(location, { headers: xml });
  t.equal(read.status, 200);
  t.match(await read.text(), /<dst_port>443<\/dst_port>/);
  const rule = await fetch(`${location}/configuration/firewall`, {
    method: 'POST',
    headers: { ...xml, 'Content-Type': 'application/xml' },
    body:
      '<elements><action>DENY</action><source>10.0.0.2</source><destination>*</destination>' +
      '<protocol>ANY</protocol></elements>',
  });
  t.equal(rule.status, 201);
  const put = await fetch(rule.headers.get('location')!, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/xml' },
    body:
      '<elements><action>ALLOW</action><source>10.0.0.3</source><destination>*</destination>' +
      '<protocol>UDP</protocol></elements>',
  });
  t.equal(put.status, 204);
  const list = await call('GET', '/fwd/nodes?beforeInclusive=1&afterInclusive=20', undefined, xml);
  t.match(list.text, /^<\?xml[^>]*>\s*<nodes>\s*<node /);

  const graph =
    '<graph id="7"><node name="10.0.0.1" functional_type="WEBCLIENT"><neighbour name="50.0.0.1"/>' +
    '<configuration name="c"><webclient nameWebServer="10.0.0.2"/></configuration></node>' +
    '<node name="50.0.0.1" functional_type="FIREWALL"><neighbour name="10.0.0.1"/>' +
    '<configuration name="f"><firewall defaultAction="ALLOW"/></configuration></node>' +
    '<node name="50.0.0.2" functional_type="FIREWALL"><configuration name="g"><firewall defaultAction="DENY">' +
    '<elements><action>ALLOW</action><source>*</source><destination>10.0.0.1</destination><protocol>TCP</protocol>' +
    '</elements></firewall></configuration></node></graph>';
  const redirect = await unfollowed('POST', '/fwd/nodes/addgraph', graph);
  t.equal(redirect.status, 302);
  const range = redirect.headers.get('location')!;
  t.match(range, new RegExp(`^${s.url}/fwd/nodes\\?afterInclusive=(\\d+)&beforeInclusive=(\\d+)$`));
  // fetch follows it as JAX-RS does (POST then 302: a GET of the list of the new nodes).
  const followed = await call('POST', '/fwd/nodes/addgraph', graph);
  t.equal(followed.status, 200);
  t.same(
    followed.json.map((n: { name: string }) => n.name),
    ['50.0.0.1', '50.0.0.2'],
    'the FIREWALL nodes only',
  );
  const nfv = await readFile(path.join(ROOT, 'samples', 'web-farm.xml'), 'utf8');
  const fromNfv = await call('POST', '/fwd/nodes/addnfv', nfv);
  t.equal(fromNfv.status, 200);
  t.same(
    fromNfv.json.map((n: { name: string }) => n.name),
    ['10.0.3.1'],
  );
  const noFirewall = graph.replace(/functional_type="FIREWALL"/g, 'functional_type="FORWARDER"');
  const refused = await unfollowed('POST', '/fwd/nodes/addgraph', noFirewall);
  t.equal(refused.status, 400);
  t.match(((await refused.json()) as { error: { message: string } }).error.message, /graph: no node is a FIREWALL/);
});

t.test('deleting nodes: a bulk delete of nothing is 404, and ids start again at 1 after one (VEREFOO)', async (t) => {
  t.equal((await call('DELETE', '/fwd/nodes/2')).status, 204);
  t.equal((await call('DELETE', '/fwd/nodes/2')).status, 404);
  t.equal((await call('DELETE', '/fwd/nodes')).status, 204);
  t.equal((await call('GET', '/fwd/nodes')).status, 404);
  t.equal((await call('DELETE', '/fwd/nodes')).status, 404, 'nothing to delete');
  const again = await call('POST', '/fwd/nodes', node([r1, r2]));
  t.match(again.json, { id: 1, configuration: { firewall: { elements: [{ id: 1 }, { id: 2 }] } } });
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
