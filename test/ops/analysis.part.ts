/**
 * The analysis operations in-process, as serve mode runs them: lint, allows and diff of stored `/fwd` nodes, of a
 * stored simulation's firewalls, and of documents sent in a JSON body; each refusal (400, 404, 405) names what is
 * wrong and changes nothing. One request goes through a real listener as well.
 */
import t from 'tap';
import { request, startServer } from '../helpers.js';
import { call, ok, refused, workspace } from './call.js';

const fw = (name: string, elements: object[], defaultAction = 'DENY') => ({
  name,
  functionalType: 'FIREWALL',
  configuration: { name: 'c', firewall: { defaultAction, elements } },
});
const web = { action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.1', protocol: 'TCP', dstPort: '80' };
const all = { action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.-1', protocol: 'TCP' };
const guest = { action: 'DENY', source: '10.0.0.66', destination: '*' };

/** An NFV document: a client, two configured firewalls in a row, a server; reachability on TCP 80. */
const network = (first: object[], second: object[]) => ({
  graphs: {
    graph: [
      {
        id: 0,
        node: [
          {
            name: '10.0.0.1',
            functionalType: 'WEBCLIENT',
            neighbour: [{ name: '30.0.0.1' }],
            configuration: { name: 'c', webclient: { nameWebServer: '20.0.0.1' } },
          },
          { ...fw('30.0.0.1', first), neighbour: [{ name: '10.0.0.1' }, { name: '30.0.0.2' }] },
          { ...fw('30.0.0.2', second), neighbour: [{ name: '30.0.0.1' }, { name: '20.0.0.1' }] },
          {
            name: '20.0.0.1',
            functionalType: 'WEBSERVER',
            neighbour: [{ name: '30.0.0.2' }],
            configuration: { name: 's', webserver: { name: '20.0.0.1' } },
          },
        ],
      },
    ],
  },
  propertyDefinition: {
    property: [
      { name: 'REACHABILITY_PROPERTY', graph: 0, src: '10.0.0.1', dst: '20.0.0.1', lv4Proto: 'TCP', dstPort: '80' },
    ],
  },
});

t.test('lint, allows and diff of stored /fwd nodes', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/fwd/nodes', fw('30.0.0.1', [all, web, guest]), 201);
  await ok(t, ws, 'POST', '/fwd/nodes', fw('30.0.0.1', [guest, all]), 201);
  const lint = await ok(t, ws, 'GET', '/fwd/nodes/1/lint', undefined, 200);
  t.same(lint, {
    firewall: 'fwd node 1 (30.0.0.1)',
    rules: 3,
    defaultAction: 'DENY',
    findings: [
      {
        rule: { position: 2, id: 2 },
        action: 'ALLOW',
        text: 'ALLOW TCP 10.0.0.-1 -> 20.0.0.1 dport 80',
        finding: 'redundant-unreachable',
        by: [{ position: 1, id: 1 }],
        differentAction: false,
      },
      {
        rule: { position: 3, id: 3 },
        action: 'DENY',
        text: 'DENY ANY 10.0.0.66 -> *',
        finding: 'redundant',
        by: ['default'],
        differentAction: false,
      },
    ],
  });
  const o = await call(ws, 'GET', '/fwd/nodes/1/lint');
  t.match(o, { ok: true, reply: { headers: { 'X-Nfv-Findings': '2' } } });
  const allows = await ok(t, ws, 'GET', '/fwd/nodes/2/allows?proto=tcp&dport=22', undefined, 200);
  t.same(allows.within, { source: '*', destination: '*', protocol: 'TCP', srcPort: '*', dstPort: '22' });
  t.same(
    allows.classes.map((c: { source: string; rules: object[] }) => [c.source, c.rules]),
    [
      ['10.0.0.0-65', [{ position: 2, id: 5 }]],
      ['10.0.0.67-255', [{ position: 2, id: 5 }]],
    ],
  );
  const diff = await ok(t, ws, 'GET', '/fwd/diff?from=1&to=2', undefined, 200);
  t.equal(diff.equivalent, false);
  t.same(
    diff.classes.map((c: { source: string; from: object; to: object }) => [c.source, c.from, c.to]),
    [
      [
        '10.0.0.66',
        { verdict: 'ALLOW', rule: { position: 1, id: 1 }, text: 'ALLOW TCP 10.0.0.-1 -> 20.0.0.-1' },
        { verdict: 'DENY', rule: { position: 1, id: 4 }, text: 'DENY ANY 10.0.0.66 -> *' },
      ],
    ],
  );
  const same = await call(ws, 'GET', '/fwd/diff?from=2&to=2');
  t.match(same, {
    ok: true,
    reply: { value: { equivalent: true, classes: [] }, headers: { 'X-Nfv-Equivalent': 'true' } },
  });

  await refused(t, ws, 'GET', '/fwd/nodes/9/lint', undefined, 404, /^firewall node 9 does not exist$/);
  await refused(t, ws, 'GET', '/fwd/nodes/x/lint', undefined, 400, /^nid: "x" is not an id/);
  await refused(t, ws, 'GET', '/fwd/nodes/1/lint?verbose=1', undefined, 400, /^verbose: not a parameter here/);
  await refused(t, ws, 'POST', '/fwd/nodes/1/lint', undefined, 405, /POST is not allowed/);
  await refused(t, ws, 'GET', '/fwd/nodes/1/allows?proto=icmp', undefined, 400, /^proto: "icmp" is not a protocol/);
  await refused(t, ws, 'GET', '/fwd/nodes/1/allows?dport=70000', undefined, 400, /^dport: "70000" is not a port/);
  await refused(t, ws, 'GET', '/fwd/nodes/1/allows?src=10.0.0', undefined, 400, /^src: "10.0.0" is not an IPv4/);
  await refused(t, ws, 'GET', '/fwd/nodes/1/allows?dports=22', undefined, 400, /^dports: not a parameter here/);
  await refused(t, ws, 'GET', '/fwd/diff?from=1', undefined, 400, /^to: the id of a firewall node is required$/);
  await refused(t, ws, 'GET', '/fwd/diff?from=1&to=-2', undefined, 400, /^to: "-2" is not an id/);
  await refused(t, ws, 'GET', '/fwd/diff?from=1&to=7', undefined, 404, /^firewall node 7 does not exist$/);
});

t.test('the firewalls of a stored simulation', async (t) => {
  const ws = await workspace(t);
  const nfv = network([guest, all], [web, web]);
  await ok(t, ws, 'POST', '/adp/simulations', nfv, 200);
  const lint = await ok(t, ws, 'GET', '/adp/simulations/1/lint?node=30.0.0.2', undefined, 200);
  t.equal(lint.firewall, 'simulation 1, node 30.0.0.2');
  t.same(
    lint.findings.map((f: { rule: object; finding: string }) => [f.rule, f.finding]),
    [
      [{ position: 1 }, 'redundant'],
      [{ position: 2 }, 'redundant-unreachable'],
    ],
    'two equal rules: the first is redundant, the second unreachable; rules without ids are named by position',
  );
  const allows = await ok(t, ws, 'GET', '/adp/simulations/1/allows?node=30.0.0.1&dst=20.0.0.1&proto=TCP');
  t.same(
    allows.classes.map((c: { source: string; rules: string[] }) => [c.source, c.rules]),
    [
      ['10.0.0.0-65', [{ position: 2 }]],
      ['10.0.0.67-255', [{ position: 2 }]],
    ],
  );
  await refused(
    t,
    ws,
    'GET',
    '/adp/simulations/1/lint',
    undefined,
    400,
    /^node: name the firewall; simulation 1 has 2: '30.0.0.1' and '30.0.0.2'$/,
  );
  await refused(
    t,
    ws,
    'GET',
    '/adp/simulations/1/lint?node=9.9.9.9',
    undefined,
    404,
    /^node: simulation 1 has no node "9.9.9.9"$/,
  );
  await refused(
    t,
    ws,
    'GET',
    '/adp/simulations/1/lint?node=10.0.0.1',
    undefined,
    400,
    /^node: "10.0.0.1" in simulation 1 is WEBCLIENT, not a FIREWALL$/,
  );
  await refused(
    t,
    ws,
    'GET',
    '/adp/simulations/1/lint?node=',
    undefined,
    400,
    /^node: the name of a firewall node is required$/,
  );
  await refused(
    t,
    ws,
    'GET',
    '/adp/simulations/4/allows?node=30.0.0.1',
    undefined,
    404,
    /^simulation 4 does not exist$/,
  );
  await refused(
    t,
    ws,
    'GET',
    '/adp/simulations/1/allows?node=30.0.0.1&port=1',
    undefined,
    400,
    /^port: not a parameter/,
  );
});

t.test('any source in a JSON body: documents, stored nodes, results', async (t) => {
  const ws = await workspace(t);
  await ok(t, ws, 'POST', '/fwd/nodes', fw('30.0.0.1', [guest, all]), 201);
  const nfv = network([guest, all], [web]);
  const document = { kind: 'document', document: JSON.stringify(nfv), node: '30.0.0.1', name: 'net.json' };
  const lint = await ok(t, ws, 'POST', '/fwd/analysis/lint', { source: document }, 200);
  t.equal(lint.firewall, 'net.json, node 30.0.0.1');
  t.same(lint.findings, [], 'each rule decides packets the other rules would decide otherwise');
  // A document as a JSON value, a firewall node document, and its XML form.
  const asValue = await ok(t, ws, 'POST', '/fwd/analysis/lint', { source: { ...document, document: nfv } });
  t.same(asValue.findings, lint.findings);
  const nodeDoc = { kind: 'document', document: JSON.stringify(fw('30.0.0.9', [web, web])) };
  const nodeLint = await ok(t, ws, 'POST', '/fwd/analysis/lint', { source: nodeDoc });
  t.equal(nodeLint.firewall, 'the document, node 30.0.0.9');
  t.same(
    nodeLint.findings.map((f: { finding: string }) => f.finding),
    ['redundant', 'redundant-unreachable'],
  );
  const xml =
    '<node name="30.0.0.9" functional_type="FIREWALL"><configuration name="c"><firewall defaultAction="DENY">' +
    '<elements><action>ALLOW</action><source>*</source><destination>*</destination></elements>' +
    '</firewall></configuration></node>';
  const xmlAllows = await ok(t, ws, 'POST', '/fwd/analysis/allows?proto=OTHER', {
    source: { kind: 'document', document: xml },
  });
  t.same(
    xmlAllows.classes.map((c: { protocol: string }) => c.protocol),
    ['OTHER'],
  );
  // diff across kinds: the stored node against the document's firewall (the same rules) and its other firewall.
  const same = await ok(t, ws, 'POST', '/fwd/analysis/diff', { from: { kind: 'fwd', id: 1 }, to: document });
  t.same(same.equivalent, true, 'the same rules and default');
  const other = await ok(t, ws, 'POST', '/fwd/analysis/diff', {
    from: { kind: 'document', document: nfv, node: '30.0.0.1' },
    to: { kind: 'document', document: nfv, node: '30.0.0.2' },
  });
  t.equal(other.equivalent, false);
  await ok(t, ws, 'POST', '/adp/simulations', nfv, 200);
  const fromResult = await ok(t, ws, 'POST', '/fwd/analysis/diff', {
    from: { kind: 'simulation', id: 1, node: '30.0.0.1' },
    to: document,
  });
  t.equal(fromResult.equivalent, true, 'the stored result keeps the firewall as the document gave it');

  const lintAt = (body: unknown, status: number, message: RegExp) =>
    refused(t, ws, 'POST', '/fwd/analysis/lint', body as object, status, message);
  await lintAt('[]', 400, /^body: a JSON object with source is required$/);
  await lintAt(
    { source: document, extra: 1 },
    400,
    /^extra: not a field here \(source, chain, table, ignoreNat, natAddress, iface, host, ipset, routes, neighbours, approx/,
  );
  await lintAt({ source: 3 }, 400, /^source: a rule source object is required/);
  await lintAt(
    { source: { kind: 'ftp' } },
    400,
    /^source.kind: "ftp" is not a kind of rule source \(fwd, simulation, document\)$/,
  );
  await lintAt({ source: { kind: 'fwd' } }, 400, /^source.id: an id \(a whole number\) is required$/);
  await lintAt({ source: { kind: 'fwd', id: 1, node: 'x' } }, 400, /^source.node: not a field of a fwd source$/);
  await lintAt({ source: { kind: 'fwd', id: 5 } }, 404, /^firewall node 5 does not exist$/);
  await lintAt({ source: { kind: 'simulation', id: 9 } }, 404, /^simulation 9 does not exist$/);
  await lintAt(
    { source: { kind: 'document', document: '' } },
    400,
    /^source.document: a non-empty string is required$/,
  );
  await lintAt(
    { source: { kind: 'document', document: 'hello' } },
    400,
    /^the document: not a rule source \(an NFV document or a firewall node in XML or JSON, an iptables-save file, or nft -j list ruleset output\)$/,
  );
  await lintAt({ source: { ...document, node: '30.0.0.7' } }, 400, /^node: net.json has no node "30.0.0.7"$/);
  await lintAt(
    { source: { ...document, node: undefined } },
    400,
    /^node: name the firewall; net.json has 2: '30.0.0.1' and '30.0.0.2'$/,
  );
  await lintAt(
    { source: { ...nodeDoc, node: '30.0.0.1' } },
    400,
    /^node: the document is the node "30.0.0.9", not "30.0.0.1"$/,
  );
  const bad = JSON.stringify(fw('30.0.0.9', [{ ...web, source: '10.0.0' }]));
  await lintAt({ source: { kind: 'document', document: bad } }, 400, /source/);
  await lintAt(
    { source: { kind: 'document', document: JSON.stringify(fw('30.0.0.9', []).configuration) } },
    400,
    /not a rule source/,
  );
  await refused(t, ws, 'POST', '/fwd/analysis/lint', '<source/>', 400, /^the body must be JSON$/);
  await refused(
    t,
    ws,
    'POST',
    '/fwd/analysis/diff',
    { from: { kind: 'fwd', id: 1 } },
    400,
    /^to: a rule source object is required/,
  );
  await refused(t, ws, 'GET', '/fwd/analysis/diff', undefined, 405, /GET is not allowed/);
});

t.test('through a real listener', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const created = await request(server.url, 'POST', '/fwd/nodes', JSON.stringify(fw('30.0.0.1', [all, web])));
  t.equal(created.status, 201);
  const lint = await request(server.url, 'GET', '/fwd/nodes/1/lint');
  t.equal(lint.status, 200);
  t.equal(lint.headers.get('x-nfv-findings'), '1');
  t.equal(lint.json.findings[0].finding, 'redundant-unreachable');
  const missing = await request(server.url, 'GET', '/fwd/nodes/2/allows');
  t.equal(missing.status, 404);
  t.match(missing.json, { error: { status: 404, message: 'firewall node 2 does not exist' } });
  const bad = await request(server.url, 'POST', '/fwd/analysis/diff', '{"from": {"kind": "fwd", "id": 1}, "to": {}}');
  t.equal(bad.status, 400);
});

t.test('explain and the reading fields over HTTP: the same fields as POST /fwd/import', async (t) => {
  const ws = await workspace(t);
  const text = [
    '*nat',
    '-A PREROUTING -p tcp --dport 8080 -j DNAT --to-destination 10.0.0.5:80',
    'COMMIT',
    '*filter',
    ':INPUT DROP [0:0]',
    ':FORWARD DROP [0:0]',
    ':WEB - [0:0]',
    '-A INPUT -p tcp --dport 22 -j ACCEPT',
    '-A FORWARD -i eth0 -j WEB',
    '-A WEB -p tcp --dport 80 -j ACCEPT',
    'COMMIT',
    '',
  ].join('\n');
  const source = { kind: 'document', document: text, name: 'r.rules' };
  const packet = 'src=192.0.2.1 dst=10.0.0.5 proto=tcp sport=40000 dport=80';
  await refused(t, ws, 'POST', '/fwd/analysis/explain', { source, packet }, 400, /give --ignore-nat$/);
  const o = await call(ws, 'POST', '/fwd/analysis/explain', { source, packet, ignoreNat: true });
  t.match(o, { ok: true, status: 200 });
  if (o.ok && o.reply.kind === 'json') {
    t.equal(o.reply.headers?.['X-Nfv-Verdict'], 'UNKNOWN', 'the -i eth0 is unmapped and the packet names none');
    t.match(o.reply.value, { verdict: 'UNKNOWN', decidedBy: { where: 'r.rules:9', line: 9, file: 'r.rules' } });
  }
  const mapped = await ok(t, ws, 'POST', '/fwd/analysis/explain', {
    source,
    packet,
    ignoreNat: true,
    iface: ['eth0=192.0.2.0/24'],
  });
  t.same(
    mapped.trace.map((s: { kind: string; where: string }) => `${s.kind} ${s.where}`),
    ['jump r.rules:9', 'decides r.rules:10'],
    'through the user chain to the deciding line',
  );
  t.equal(mapped.verdict, 'ALLOW');
  // Lists that overlap read as a router routes them: 192.0.2.1 arrives by eth1 (its /24), so -i eth0 is not it.
  const routed = await ok(t, ws, 'POST', '/fwd/analysis/explain', {
    source,
    packet,
    ignoreNat: true,
    iface: ['eth0=0.0.0.0/0', 'eth1=192.0.2.0/24'],
  });
  t.equal(routed.verdict, 'DENY', 'the longest prefix names the interface: FORWARD DROP decides');
  await refused(
    t,
    ws,
    'POST',
    '/fwd/analysis/explain',
    { source, packet, ignoreNat: true, iface: ['eth0=192.0.2.0/24', 'eth1=192.0.2.0/24'] },
    400,
    /^--iface eth0 and --iface eth1 both name 192\.0\.2\.0\/24: /,
  );
  const host = await ok(t, ws, 'POST', '/fwd/analysis/lint', { source, chain: 'INPUT', ignoreNat: true });
  t.match(host.firewall, /filter\/INPUT/, 'chain: INPUT reads the host firewall');
  const named = await ok(t, ws, 'POST', '/fwd/analysis/allows', {
    source,
    ignoreNat: true,
    iface: ['eth0=192.0.2.0/24'],
  });
  t.match(named.classes[0].rules[0], { file: 'r.rules', line: 10, where: 'r.rules:10' }, 'file and line kept');
  const node = await ok(t, ws, 'POST', '/fwd/analysis/explain', {
    source: { kind: 'document', document: JSON.stringify(fw('30.0.0.1', [all, web])) },
    packet: 'src=10.0.0.7 dst=20.0.0.1 proto=tcp sport=1 dport=80',
  });
  t.match(node, { verdict: 'ALLOW', decidedBy: { kind: 'decides', line: 1 } }, 'a firewall node: its first line');
  await refused(
    t,
    ws,
    'POST',
    '/fwd/analysis/lint',
    { source: { kind: 'document', document: JSON.stringify(fw('30.0.0.1', [web])) }, chain: 'INPUT' },
    400,
    /^chain: the document is not an iptables-save or nft file/,
  );
  await refused(t, ws, 'POST', '/fwd/analysis/explain', { source, packet: 'src=1.2.3.4' }, 400, /^packet: dst is/);
  await refused(t, ws, 'POST', '/fwd/analysis/explain', { source }, 400, /^packet: a string/);
  await refused(t, ws, 'POST', '/fwd/analysis/lint', { source, chains: 'INPUT' }, 400, /^chains: not a field here/);
});

t.test('allows of a long list: by allowing line, or as classes with ?classes=true', async (t) => {
  const ws = await workspace(t);
  const { generatedDump } = await import('../../src/bench/import.js');
  const source = { kind: 'document', document: generatedDump(5, 1_200, 12, 120), name: 'g.rules' };
  const within = '?proto=TCP&dport=443';
  const byLine = await ok(t, ws, 'POST', `/fwd/analysis/allows${within}`, { source, ignoreNat: true });
  t.ok(byLine.rules > 1000 && byLine.lines.length > 0 && byLine.classes === undefined, 'by allowing line');
  t.match(byLine.lines[0], { rule: { file: 'g.rules' }, packets: /^\d+$/, except: Array, example: /proto=tcp/ });
  const sum = byLine.lines.reduce((n: bigint, l: { packets: string }) => n + BigInt(l.packets), 0n);
  t.equal(byLine.packets, String(sum), 'the packets in all are the sum of the lines');
  const classes = await ok(t, ws, 'POST', `/fwd/analysis/allows${within}&classes=true`, { source, ignoreNat: true });
  t.ok(classes.classes.length > 0 && classes.lines === undefined, `${classes.classes.length} classes`);
  // Every allowing line listed decides packets of some class, and no class names a line the answer by line lacks.
  const key = (r: { position: number } | string) => (typeof r === 'string' ? r : r.position);
  const listed = new Set(byLine.lines.map((l: { rule: { position: number } }) => key(l.rule)));
  const named = new Set(classes.classes.flatMap((c: { rules: { position: number }[] }) => c.rules.map(key)));
  t.same([...named].sort(), [...listed].sort(), 'the same allowing lines either way');
  await refused(t, ws, 'POST', '/fwd/analysis/allows?classes=yes', { source, ignoreNat: true }, 400, /^classes: "yes"/);
});
