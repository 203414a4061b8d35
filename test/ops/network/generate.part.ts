/**
 * `venvironment.generateFiles` in-process: deployable files for every FIREWALL node of an XML NFV, iptables only or
 * every format, numbered by the node's id or its position among the firewalls.
 */
import t from 'tap';
import { venvironmentGenerateFiles } from '../../../src/ops/network/generate.js';
import { invoke } from '../../../src/ops/operation.js';
import { snapshot } from '../../helpers.js';
import { refused, workspace } from '../call.js';

const firewall = (name: string, id = '', description = '') =>
  `<node ${id} name="${name}" functional_type="FIREWALL"><neighbour name="10.0.0.1"/>` +
  `<configuration name="c"${description}><firewall defaultAction="DENY">` +
  '<elements><action>ALLOW</action><source>10.0.0.-1</source><destination>20.0.0.1</destination>' +
  '<protocol>TCP</protocol><dst_port>80</dst_port></elements></firewall></configuration></node>';
const nfv = (...nodes: string[]) =>
  `<NFV><graphs><graph id="0"><node name="10.0.0.1" functional_type="WEBCLIENT"><neighbour name="30.0.0.1"/>` +
  `<configuration name="w"><webclient nameWebServer="20.0.0.1"/></configuration></node>${nodes.join('')}` +
  '</graph></graphs><PropertyDefinition>' +
  '<Property name="IsolationProperty" graph="0" src="10.0.0.1" dst="20.0.0.1"/></PropertyDefinition></NFV>';

t.test('IPTABLES: one file per firewall; ALL: one per firewall and format', async (t) => {
  const ws = await workspace(t);
  const body = nfv(firewall('30.0.0.1', '', ' description="edge"'), firewall('30.0.0.2', 'id="7"'));
  const generate = (firewallType: string) =>
    invoke(venvironmentGenerateFiles, ws, { body, query: new URLSearchParams({ firewallType }) });
  const one = await generate('IPTABLES');
  if (!one.ok) return t.fail(one.error);
  const files = one.reply.content[0]!.file!;
  t.same(
    files.map((f) => [f.node, f.id, f.format, f.name]),
    [
      ['30.0.0.1', 1, 'iptables', 'iptables_edge_1.rules'],
      ['30.0.0.2', 7, 'iptables', 'iptables_30.0.0.2_7.rules'],
    ],
    'named by description or node name; numbered by id, else by position',
  );
  t.match(files[0]!.content, /-A FORWARD -s 10\.0\.0\.0\/24 -d 20\.0\.0\.1\/32 -p tcp --dport 80 -j ACCEPT/);
  const all = await generate('ALL');
  t.same(all.ok && all.reply.content[0]!.file!.map((f) => f.name), [
    'iptables_edge_1.rules',
    'nftables_edge_1.nft',
    'ovs_edge_1.flows',
    'ipfw_edge_1.sh',
    'fortios_edge_1.conf',
    'iptables_30.0.0.2_7.rules',
    'nftables_30.0.0.2_7.nft',
    'ovs_30.0.0.2_7.flows',
    'ipfw_30.0.0.2_7.sh',
    'fortios_30.0.0.2_7.conf',
  ]);
  t.equal((await snapshot(ws.dir)).size, 0, 'nothing is stored');
});

t.test('refusals: the firewall type, a body that is not XML, an NFV without firewalls', async (t) => {
  const ws = await workspace(t);
  const target = '/adp/venvironment/generateFiles';
  const body = nfv(firewall('30.0.0.1'));
  await refused(t, ws, 'POST', target, body, 400, /^firewallType: required, IPTABLES or ALL$/);
  await refused(t, ws, 'POST', `${target}?firewallType=PF`, body, 400, /^firewallType: "PF" is not IPTABLES or ALL$/);
  await refused(t, ws, 'POST', `${target}?firewallType=ALL`, { graphs: {} }, 400, /^the body must be XML$/);
  const place = '<node name="30.0.0.1"><neighbour name="10.0.0.1"/></node>';
  await refused(t, ws, 'POST', `${target}?firewallType=ALL`, nfv(place), 400, /^the NFV has no FIREWALL node$/);
});
