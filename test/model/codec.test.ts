import t from 'tap';
import { decodeDocument, encodeDocument, encodeEnvelope } from '../../src/model/codec.js';
import { NfvError } from '../../src/model/errors.js';
import {
  ConfigurationType,
  ConnectionsType,
  ConstraintsType,
  ElementsType,
  GraphsType,
  HostType,
  HostsType,
  NeighbourType,
  NfvType,
  NodeType,
  PropertyDefinitionType,
  PropertyType,
} from '../../src/model/resources.js';
import type { ObjectType } from '../../src/model/schema.js';
import type { Graphs, NFV } from '../../src/model/types.js';
import { fixture } from '../helpers.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './address.part.js';
import './space.part.js';
import './target.part.js';

/** XML -> model -> XML is stable, and the model survives the JSON form too. */
function roundTrips(t: Tap.Test, type: ObjectType, text: string) {
  const model = decodeDocument(type, text);
  for (const format of ['xml', 'json'] as const) {
    const encoded = encodeDocument(type, model, format);
    const again = decodeDocument(type, encoded);
    t.same(again, model, `${type.name} survives ${format}`);
    t.equal(encodeDocument(type, again, format), encoded, `${type.name} ${format} encoding is stable`);
  }
  return model;
}

const samples: [ObjectType, string][] = [
  [NeighbourType, '<neighbour id="3" name="10.0.0.1"/>'],
  [
    NodeType,
    '<node name="1.2.3.4" functional_type="NAT"><neighbour name="5.6.7.8"/><configuration name="n"><nat><source>' +
      '10.0.0.-1</source></nat></configuration></node>',
  ],
  [
    ConfigurationType,
    '<configuration id="2" name="fw" description="d"><firewall defaultAction="ALLOW"><elements><id>7</id><action>' +
      'DENY</action><source>1.1.1.1</source><destination>*</destination><protocol>OTHER</protocol></elements>' +
      '</firewall></configuration>',
  ],
  [
    ConfigurationType,
    '<configuration name="lb"><loadbalancer><pool>10.0.0.1</pool><pool>10.0.0.2</pool></loadbalancer></configuration>',
  ],
  [
    ConfigurationType,
    '<configuration name="e"><endhost body="b" sequence="3" protocol="POP3_REQUEST" email_from="a@b" url="u" ' +
      'options="o" destination="d"/></configuration>',
  ],
  [
    ConfigurationType,
    '<configuration name="dpi"><dpi defaultAction="ALLOW"><dpi_elements><action>DENY</action><condition>' +
      'x</condition></dpi_elements></dpi></configuration>',
  ],
  [
    ElementsType,
    '<elements><source>10.0.0.1</source><destination>20.0.-1.-1</destination><src_port>1-2</src_port><directional>' +
      'true</directional></elements>',
  ],
  [
    ConstraintsType,
    '<Constraints><NodeConstraints><NodeMetrics node="a" nrOfOperations="9000000000" optional="false"/>' +
      '</NodeConstraints><LinkConstraints/><AllocationConstraints><AllocationConstraint type="forced" nodeA="a" ' +
      'nodeB="b"/></AllocationConstraints></Constraints>',
  ],
  [
    PropertyType,
    '<Property name="CompleteReachabilityProperty" graph="3" src="1.1.1.1" dst="2.2.2.2" src_port="10" ' +
      'isSat="false" body="x"><POP3Definition from="f" content-type="text"/></Property>',
  ],
  [
    PropertyDefinitionType,
    '<PropertyDefinition><Property name="ReachabilityProperty" graph="1" src="a" dst="b"/></PropertyDefinition>',
  ],
  [
    HostType,
    '<Host name="h" cpu="1" cores="1" diskStorage="1" memory="1" maxVNF="2" type="SERVER"><SupportedVNF ' +
      'functional_type="FIREWALL"/><NodeRef node="n"/></Host>',
  ],
  [HostsType, '<Hosts><Host name="a"/><Host name="b" active="true"/></Hosts>'],
  [ConnectionsType, '<Connections><Connection sourceHost="a" destHost="b" avgLatency="2"/></Connections>'],
];

t.test('every resource round-trips through XML and JSON', async (t) => {
  for (const [type, xml] of samples) roundTrips(t, type, xml);
  roundTrips(t, GraphsType, await fixture('graphs.xml'));
  roundTrips(t, NfvType, await fixture('nfv.xml'));
});

t.test('JSON documents round-trip and accept both spellings', async (t) => {
  const text = await fixture('graphs.json');
  const graphs = decodeDocument<Graphs>(GraphsType, text);
  t.equal(graphs.graph![0]!.node[1]!.functionalType, 'NAT', 'functional_type is read as functionalType');
  const json = encodeDocument(GraphsType, graphs, 'json');
  t.match(json, /"functionalType": "NAT"/);
  t.notMatch(json, /functional_type/);
  t.same(decodeDocument(GraphsType, json), graphs);
});

t.test("XML and JSON enum spellings are both accepted and written in each format's own form", async (t) => {
  const fromJson = decodeDocument<{ name: string; lv4Proto: string }>(
    PropertyType,
    '{"name":"ISOLATION_PROPERTY","graph":1,"src":"a","dst":"b","lv4Proto":"TCP"}',
  );
  const fromXml = decodeDocument<{ name: string }>(
    PropertyType,
    '<Property name="IsolationProperty" graph="1" src="a" dst="b"/>',
  );
  t.equal(fromJson.name, 'ISOLATION_PROPERTY');
  t.equal(fromXml.name, 'ISOLATION_PROPERTY');
  t.match(encodeDocument(PropertyType, fromJson, 'xml'), /name="IsolationProperty"/);
  t.match(encodeDocument(PropertyType, fromJson, 'xml'), /lv4proto="TCP"/);
  const alloc = decodeDocument<any>(
    ConstraintsType,
    '{"allocationConstraints":{"allocationConstraint":[{"type":"forbidden","nodeA":"a","nodeB":"b"}]}}',
  );
  t.equal(alloc.allocationConstraints.allocationConstraint[0].type, 'FORBIDDEN');
  const cap = decodeDocument<any>(
    PropertyDefinitionType,
    '{"Property":[{"name":"ReachabilityProperty","graph":1,"src":"a","dst":"b"}]}',
  );
  t.equal(cap.property[0].name, 'REACHABILITY_PROPERTY', 'capitalised container names are accepted in JSON');
});

t.test('the NFV fixture keeps every section', async (t) => {
  const nfv = decodeDocument<NFV>(NfvType, await fixture('nfv.xml'));
  t.equal(nfv.constraints?.allocationConstraints?.allocationConstraint?.[0]?.type, 'FORBIDDEN');
  t.equal(nfv.hosts?.host?.[0]?.nodeRef?.[0]?.node, '10.0.0.1');
  t.equal(nfv.networkForwardingPaths?.path?.[0]?.pathNode.length, 3);
  t.equal(nfv.parsingString, 'free text');
  t.equal(nfv.propertyDefinition.property[1]!.httpdefinition?.url, 'http://x');
});

function rejects(t: Tap.Test, type: ObjectType, text: string, message: RegExp, what: string) {
  try {
    decodeDocument(type, text);
    t.fail(`${what}: accepted`);
  } catch (e) {
    t.ok(e instanceof NfvError && e.status === 400, `${what}: 400`);
    t.match((e as Error).message, message, what);
    t.notMatch((e as Error).message, /\n/, `${what}: one line`);
  }
}

t.test('validation names the field and the reason', async (t) => {
  rejects(
    t,
    GraphsType,
    '<graphs><graph><node name="a"/><node name="b" functional_type="FIREWAL"/></graph></graphs>',
    /^graphs\.graph\[0\]\.node\[1\]\.functional_type: "FIREWAL" is not a functional type/,
    'bad enum',
  );
  rejects(
    t,
    GraphsType,
    '{"graph":[{"node":[{"name":"a"},{"name":"b","functionalType":"FIREWAL"}]}]}',
    /^graphs\.graph\[0\]\.node\[1\]\.functionalType: "FIREWAL" is not a functional type/,
    'bad enum (JSON)',
  );
  rejects(
    t,
    GraphsType,
    '<graphs><graph><node name="a"><neighbour name="z"/></node></graph></graphs>',
    /node\[0\]\.neighbour\[0\]\.name: "z" is not a node of the graph/,
    'dangling neighbour',
  );
  rejects(
    t,
    GraphsType,
    '<graphs><graph><node name="a"/><node name="a"/></graph></graphs>',
    /node\[1\]\.name: "a" is used by another node/,
    'duplicate node name',
  );
  rejects(
    t,
    GraphsType,
    '<graphs><graph id="x"><node name="a"/></graph></graphs>',
    /graph\[0\]\.id: "x" is not an int64/,
    'bad id',
  );
  rejects(t, NodeType, '<node functional_type="NAT"/>', /^node\.name: is required/, 'missing name');
  rejects(t, PropertyDefinitionType, '<PropertyDefinition/>', /Property: at least one item is required/, 'empty set');
  rejects(
    t,
    PropertyType,
    '<Property name="IsolationProperty" graph="1" src="a" dst="b" dst_port="70000"/>',
    /dst_port: "70000" is not a port range/,
    'port range',
  );
  rejects(
    t,
    ElementsType,
    '<elements><source>10.0.0.256</source><destination>*</destination></elements>',
    /source: "10.0.0.256" is not an IPv4 address pattern/,
    'address',
  );
  rejects(t, HostsType, '<Hosts><Host name="a"/><Host name="a"/></Hosts>', /host\[1\]\.name/, 'duplicate host');
  rejects(
    t,
    ConfigurationType,
    '<configuration name="x"><nat><source>a</source></nat><forwarder/></configuration>',
    /at most one kind/,
    'two kinds',
  );
  rejects(
    t,
    NfvType,
    '<NFV><graphs><graph id="1"><node name="a"/></graph></graphs><PropertyDefinition><Property ' +
      'name="IsolationProperty" graph="2" src="a" dst="a"/></PropertyDefinition></NFV>',
    /property\[0\]\.graph: no graph has id 2/,
    'property graph',
  );
  rejects(t, GraphsType, '<graph><node name="a"/></graph>', /expected a <graphs> document, got <graph>/, 'wrong root');
});

t.test('XML input is parsed safely', async (t) => {
  rejects(
    t,
    GraphsType,
    '<?xml version="1.0"?><!DOCTYPE g [<!ENTITY x SYSTEM "file:///etc/passwd">]><graphs>&x;</graphs>',
    /DOCTYPE is not accepted/,
    'external entity',
  );
  rejects(
    t,
    GraphsType,
    '<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><graphs>&lol2;</graphs>',
    /DOCTYPE/,
    'entity expansion',
  );
  rejects(t, GraphsType, '<graphs><graph></graphs>', /^XML: .*line 1/, 'malformed');
  rejects(t, GraphsType, 'not a document', /expected an XML or JSON/, 'neither format');
  rejects(t, GraphsType, '{"graph": [', /^JSON: /, 'bad JSON');
  rejects(t, GraphsType, `<graphs>${' '.repeat(33 * 1024 * 1024)}</graphs>`, /larger than/, 'size limit');
});

t.test('an /adp envelope is unwrapped on input and written in both formats', async (t) => {
  const env = {
    links: [{ rel: 'self', href: '/adp/graphs/1', title: 'get the resource' }],
    content: [{ id: 1, node: [{ name: 'a' }] }],
  };
  const type = { item: GraphsType.fields[0]!.type as ObjectType };
  for (const format of ['xml', 'json'] as const) {
    const text = encodeEnvelope(env, type, format);
    const graph = decodeDocument<any>(type.item, text);
    t.equal(graph.node[0].name, 'a', `${format} envelope unwrapped`);
  }
  t.match(
    encodeEnvelope({ links: [], content: [[1, 2]] }, { item: 'ids' }, 'xml'),
    /<content>\s*<id>1<\/id>\s*<id>2<\/id>/,
  );
  t.match(
    encodeEnvelope({ links: [], content: [], error: { status: 404, message: 'gone' } }, { item: 'id' }, 'xml'),
    /<error status="404">gone<\/error>/,
  );
});

t.test("a NAT's forward table: XML attributes, JSON fields, each checked naming the field", async (t) => {
  const forward = '<forward protocol="TCP" dst_port="80" to="10.0.0.2" to_port="8080"/>';
  const xml = (nat: string) =>
    `<NFV><graphs><graph id="0"><node name="198.51.100.1" functional_type="NAT"><neighbour name="1.0.0.1"/>` +
    `<configuration name="n"><nat>${nat}</nat></configuration></node>` +
    `<node name="1.0.0.1" functional_type="WEBCLIENT"><neighbour name="198.51.100.1"/>` +
    `<configuration name="c"><webclient nameWebServer="x"/></configuration></node></graph></graphs>` +
    `<PropertyDefinition><Property name="IsolationProperty" graph="0" src="1.0.0.1" dst="198.51.100.1"/>` +
    `</PropertyDefinition></NFV>`;
  const nfv = decodeDocument(NfvType, xml(forward)) as NFV;
  const nat = nfv.graphs.graph![0]!.node[0]!.configuration!.nat;
  t.same(nat, { forward: [{ protocol: 'TCP', dstPort: '80', to: '10.0.0.2', toPort: '8080' }] }, 'no source needed');
  t.match(encodeDocument(NfvType, nfv, 'xml'), forward, 'written back as read');
  t.same((decodeDocument(NfvType, encodeDocument(NfvType, nfv, 'json')) as NFV).graphs, nfv.graphs, 'JSON too');
  const refused = (text: string) => t.throws(() => decodeDocument(NfvType, text));
  const message = (text: string) => {
    try {
      decodeDocument(NfvType, text);
    } catch (e) {
      return (e as NfvError).message;
    }
    return '';
  };
  refused(xml(forward.replace('8080', '80-90')));
  t.equal(
    message(xml(forward.replace('8080', '80-90'))),
    'nfv.graphs.graph[0].node[0].configuration.nat.forward[0].to_port: "80-90" is not one port (0-65535)',
  );
  t.match(message(xml(forward.replace('TCP', 'ANY'))), /to_port: "8080": a port changes for TCP or UDP only/);
  t.match(message(xml(forward.replace('10.0.0.2', '10.0.0'))), /forward\[0\]\.to: "10\.0\.0" is not an IPv4/);
  t.equal(message(xml('')), 'nfv.graphs.graph[0].node[0].configuration.nat.source: at least one item is required');
});

t.test('a rule with except entries: the same in XML and JSON, and refused where it means nothing', async (t) => {
  const xml = `<NFV><graphs><graph id="0"><node name="10.0.0.1" functional_type="FIREWALL"><configuration name="fw">
<firewall defaultAction="DENY"><elements><action>ALLOW</action><source>*</source><destination>10.1.0.0/16</destination>
<protocol>TCP</protocol><dst_port>80</dst_port><except source="10.9.0.0/16" destination="*"/>
<except source="10.1.2.3" destination="10.1.0.0/16" protocol="TCP" dst_port="80-81"/></elements></firewall>
</configuration></node></graph></graphs><PropertyDefinition><Property graph="0" name="IsolationProperty" src="10.0.0.1" dst="10.1.0.1"/></PropertyDefinition></NFV>`;
  const nfv = decodeDocument(NfvType, xml);
  const rule = nfv.graphs.graph![0]!.node[0]!.configuration!.firewall!.elements![0]!;
  t.same(rule.except, [
    { source: '10.9.0.0/16', destination: '*' },
    { source: '10.1.2.3', destination: '10.1.0.0/16', protocol: 'TCP', dstPort: '80-81' },
  ]);
  const json = encodeDocument(NfvType, nfv, 'json');
  t.same(decodeDocument(NfvType, json), nfv, 'JSON round trip');
  const back = encodeDocument(NfvType, nfv, 'xml');
  t.match(back, /<except source="10\.1\.2\.3" destination="10\.1\.0\.0\/16" protocol="TCP" dst_port="80-81"\/>/);
  t.same(decodeDocument(NfvType, back), nfv, 'XML round trip');
  const directional = xml.replace('<dst_port>80</dst_port>', '<dst_port>80</dst_port><directional>true</directional>');
  t.throws(() => decodeDocument(NfvType, directional), /except: a directional rule cannot have except boxes/);
  t.throws(() => decodeDocument(NfvType, xml.replace('10.9.0.0/16', '10.9.0.0/33')), /except\[0\]\.source/);
});
