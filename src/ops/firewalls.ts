/**
 * `/fwd`: firewall nodes and their rules, kept in the workspace (`fwd.json`), and their deployable configuration.
 * Bodies and answers are XML or JSON, as VEREFOO's NodesController takes and gives them. Node ids and rule ids are
 * given by the service and not reused while any node is stored (a bulk delete starts them again at 1, as VEREFOO
 * does); a rule keeps its id and its place in the list (its first-match position) across updates and deletes of
 * other rules (VEREFOO moves an updated rule to the end; nfv does not).
 */
import type { DeployFormat, DeployOptions } from '../deploy/index.js';
import { EmptyCollection, badRequest, conflict, notFound, quote } from '../model/errors.js';
import { ConfigurationType, ElementsType, FirewallType, GraphType, NfvType, NodeType } from '../model/resources.js';
import type { Configuration, Elements, Graph, NFV, Node } from '../model/types.js';
import { FWD_AREA, type FwdData } from '../store/firewalls.js';
import { ADP_AREA } from '../store/network.js';
import { nextId, type IdSource } from '../store/area.js';
import { parseCount, parseId } from '../model/ids.js';
import { done, json, operation, type Input, type Operation, text, type TextReply } from './operation.js';

/** Firewall nodes as an answer: JSON, or XML (`<nodes>`) when asked for. */
const nodesReply = (nodes: Node[], more: { status?: number; location?: string } = {}) =>
  json(nodes, { schema: NodeType, many: true, ...more });

/** A stored node; missing, a 404 (`refuse`: VEREFOO answers 400 for the node a POST adds under). */
function findFwdNode(data: FwdData, nid: number, refuse = notFound): Node {
  const n = data.nodes.find((x) => x.id === nid);
  if (!n) throw refuse(`firewall node ${nid} does not exist`);
  return n;
}

function findRule(node: Node, eid: number): Elements {
  const r = node.configuration?.firewall?.elements?.find((x) => x.id === eid);
  if (!r) throw notFound(`rule ${eid} does not exist on firewall node ${node.id}`);
  return r;
}

/**
 * Rules keep the ids they bring when those belong to the node (or are new to the store); others get new ones. A
 * configuration without a firewall is kept as it is (a node whose policy comes later, as VEREFOO allows).
 */
async function withRuleIds(ids: IdSource, configuration: Configuration, previous?: Node): Promise<Configuration> {
  const other = Object.keys(configuration).find((k) => !['id', 'name', 'description', 'firewall'].includes(k));
  if (other) throw badRequest(`configuration.${other}: a firewall node's configuration holds a firewall, not ${other}`);
  const fw = configuration.firewall;
  if (!fw) return configuration;
  const own = new Set((previous?.configuration?.firewall?.elements ?? []).map((e) => e.id));
  const brought = new Set<number>();
  for (const e of fw.elements ?? []) {
    if (e.id === undefined) continue;
    if (brought.has(e.id)) throw badRequest(`configuration.firewall.elements: rule id ${e.id} appears twice`);
    brought.add(e.id);
  }
  const kept = (e: Elements) => e.id !== undefined && own.has(e.id);
  const fresh = await ids.take('rule', (fw.elements ?? []).filter((e) => !kept(e)).length);
  const elements = (fw.elements ?? []).map((e) => ({ ...e, id: kept(e) ? e.id! : fresh.shift()! }));
  return { ...configuration, firewall: { ...fw, elements } };
}

async function asFirewall(ids: IdSource, node: Node, previous?: Node): Promise<Node> {
  if (node.functionalType !== 'FIREWALL')
    throw badRequest(`node.functional_type: ${quote(node.functionalType ?? null)} is not FIREWALL`);
  if (!node.configuration) throw badRequest('node.configuration: a firewall node needs a configuration');
  const { neighbour: _links, ...rest } = node;
  return { ...rest, configuration: await withRuleIds(ids, node.configuration, previous) };
}

/** Stores a firewall node with new node and rule ids; answers it as stored. */
export async function addNode(data: FwdData, ids: IdSource, node: Node): Promise<Node> {
  const stored = { ...(await asFirewall(ids, node)), id: await nextId(ids, 'node') };
  data.nodes.push(stored);
  return stored;
}

function countQuery(query: URLSearchParams, name: string, fallback: number): number {
  const text = query.get(name);
  return text === null ? fallback : parseCount(name, text);
}

const nid = (i: Input) => i.params.nid as number;

/**
 * The options of a format: `?stateless=true` for every one (deployFile refuses it for FortiOS, stateful only);
 * iptables and nftables also `?host=ADDRESS` (a host firewall's INPUT and OUTPUT chains);
 * nftables also `?sets=true`, `?format=json`.
 */
function deployOptions(format: DeployFormat, query: URLSearchParams): DeployOptions {
  const flag = (name: string) => {
    const value = query.get(name) ?? 'false';
    if (value !== 'true' && value !== 'false') throw badRequest(`${name}: ${quote(value)} is not true or false`);
    return value === 'true';
  };
  const stateless = flag('stateless');
  // A host firewall's node, written as the host's INPUT and OUTPUT chains (iptables, nftables).
  const got = query.get('host');
  if (got !== null && format !== 'iptables' && format !== 'nftables')
    throw badRequest(`host: only iptables and nftables write INPUT/OUTPUT chains`);
  const host = got === null ? {} : { host: got };
  if (format !== 'nftables') return { stateless, ...host };
  const sets = flag('sets');
  const form = query.get('format') ?? 'text';
  if (form !== 'text' && form !== 'json') throw badRequest(`format: ${quote(form)} is not text or json`);
  return { stateless, sets, json: form === 'json', ...host };
}

function deployOperation(segment: string, format: DeployFormat, summary: string): Operation<unknown, TextReply> {
  return operation({
    name: `deploy.${segment}`,
    method: 'GET',
    path: `/fwd/deploy/${segment}/{nid}`,
    summary,
    reply: 'text',
    status: 200,
    errors: 'json',
    handler: async (i) => {
      const options = deployOptions(format, i.query);
      const node = findFwdNode(await i.ws.read(FWD_AREA), nid(i));
      // The translators load only when a configuration is asked for (not at every command's start).
      const { deployFile } = await import('../deploy/index.js');
      const file = deployFile(node, node.id!, format, options);
      const mediaType = options.json ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8';
      return text(file.content, file.filename, mediaType);
    },
  });
}

export const deployIptables = deployOperation('getIptables', 'iptables', 'iptables-restore rules for a firewall node');
export const deployNftables = deployOperation(
  'getNftables',
  'nftables',
  'nftables for a firewall node, one atomic nft -f file (table ip nfv); ?sets=true groups rules into sets, ' +
    '?format=json gives it for nft -j -f (our addition)',
);
export const deployOpenVswitch = deployOperation(
  'getOpenVswitch',
  'ovs',
  'Open vSwitch flows (ovs-ofctl add-flows) for a firewall node',
);
export const deployIpfw = deployOperation('getIpfw', 'ipfw', 'an ipfw script for a firewall node');
export const deployBpf = deployOperation(
  'getBpfFirewall',
  'bpf',
  'a script of polycubectl commands for Polycube pcn-iptables (bpf-iptables) for a firewall node (VEREFOO)',
);
export const deployVendorFirewall = deployOperation(
  'getVendorFirewall',
  'fortios',
  'FortiOS CLI configuration for a firewall node',
);
export const deployFortinet = deployOperation(
  'getFortinet',
  'fortios',
  'FortiOS CLI configuration for a firewall node (alias of getVendorFirewall)',
);

export const fwdNodesList = operation({
  name: 'fwd.nodes.list',
  method: 'GET',
  path: '/fwd/nodes',
  summary:
    'Firewall nodes with ids from beforeInclusive to afterInclusive (defaults 1 and 10); 404 when none is there, ' +
    'as in VEREFOO',
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    const from = countQuery(i.query, 'beforeInclusive', 1);
    const to = countQuery(i.query, 'afterInclusive', 10);
    if (from > to) throw badRequest(`beforeInclusive (${from}) is above afterInclusive (${to})`);
    const data = await i.ws.read(FWD_AREA);
    const nodes = data.nodes.filter((n) => n.id! >= from && n.id! <= to);
    if (nodes.length === 0)
      throw new EmptyCollection('firewall nodes', `no firewall node has an id from ${from} to ${to}`);
    return nodesReply(nodes);
  },
});

export const fwdNodesCreate = operation({
  name: 'fwd.nodes.create',
  method: 'POST',
  path: '/fwd/nodes',
  summary: 'Store a firewall node; answers it with its new node and rule ids, and its Location',
  body: NodeType,
  reply: 'json',
  status: 201,
  errors: 'json',
  handler: async (i) => {
    const node = await i.ws.mutate(FWD_AREA, async (data, ids) => addNode(data, ids, i.body));
    return json(node, { schema: NodeType, location: `/fwd/nodes/${node.id}` });
  },
});

/** Stores the FIREWALL nodes of graphs; answers where to read them, as VEREFOO does (a redirect to their range). */
async function addFirewallsOf(i: Input, graphs: readonly Graph[], what: string) {
  const firewalls = graphs.flatMap((g) => g.node.filter((n) => n.functionalType === 'FIREWALL'));
  if (firewalls.length === 0) throw badRequest(`${what}: no node is a FIREWALL`);
  const added = await i.ws.mutate(FWD_AREA, async (data, ids) => {
    const stored: Node[] = [];
    for (const n of firewalls) stored.push(await addNode(data, ids, n));
    return stored;
  });
  const range = `afterInclusive=${added.at(-1)!.id}&beforeInclusive=${added[0]!.id}`;
  return nodesReply(added, { status: 302, location: `/fwd/nodes?${range}` });
}

export const fwdNodesAddNfv = operation({
  name: 'fwd.nodes.addnfv',
  method: 'POST',
  path: '/fwd/nodes/addnfv',
  summary: 'Store every FIREWALL node of an NFV; answers 302 to the list of the new nodes (VEREFOO)',
  body: NfvType,
  reply: 'json',
  status: 302,
  errors: 'json',
  handler: async (i) => addFirewallsOf(i, i.body.graphs.graph ?? [], 'NFV'),
});

export const fwdNodesAddGraph = operation({
  name: 'fwd.nodes.addgraph',
  method: 'POST',
  path: '/fwd/nodes/addgraph',
  summary: 'Store every FIREWALL node of a graph; answers 302 to the list of the new nodes (VEREFOO)',
  body: GraphType,
  reply: 'json',
  status: 302,
  errors: 'json',
  handler: async (i) => addFirewallsOf(i, [i.body], 'graph'),
});

export const fwdNodesImport = operation({
  name: 'fwd.nodes.import',
  method: 'POST',
  path: '/fwd/nodes/import',
  summary: 'Store every FIREWALL node of a stored simulation result; answers the new ids with the node names',
  reply: 'json',
  status: 201,
  errors: 'json',
  handler: async (i) => {
    const text = i.query.get('simulation');
    if (text === null) throw badRequest('simulation: the id of a stored simulation is required');
    const smid = parseId('simulation', text);
    const sim = (await i.ws.read(ADP_AREA)).simulations.find((s) => s.id === smid);
    if (!sim) throw notFound(`simulation ${smid} does not exist`);
    const result = sim.result as NFV;
    const firewalls = (result.graphs.graph ?? []).flatMap((g) =>
      g.node.filter((n) => n.functionalType === 'FIREWALL').map((n) => ({ g, n })),
    );
    if (firewalls.length === 0) throw badRequest(`simulation ${smid} has no firewall`);
    const stored = await i.ws.mutate(FWD_AREA, async (data, ids) => {
      const added: { id: number; name: string; graph: number | undefined }[] = [];
      for (const { g, n } of firewalls) {
        added.push({ id: (await addNode(data, ids, n)).id!, name: n.name, graph: g.id });
      }
      return added;
    });
    return json(stored);
  },
});

export const fwdNodesDeleteAll = operation({
  name: 'fwd.nodes.deleteAll',
  method: 'DELETE',
  path: '/fwd/nodes',
  summary: 'Delete all firewall nodes; node and rule ids start again at 1, as in VEREFOO (404 when there are none)',
  reply: 'none',
  status: 204,
  errors: 'json',
  handler: async (i) =>
    i.ws.mutate(FWD_AREA, async (data, ids) => {
      if (data.nodes.length === 0) throw new EmptyCollection('firewall nodes');
      data.nodes = [];
      // VEREFOO's own clients count on it: after a bulk delete, the next node is 1 again.
      await ids.restart('node');
      await ids.restart('rule');
      return done();
    }),
});

export const fwdNodesGet = operation({
  name: 'fwd.nodes.get',
  method: 'GET',
  path: '/fwd/nodes/{nid}',
  summary: 'Get a firewall node',
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => json(findFwdNode(await i.ws.read(FWD_AREA), nid(i)), { schema: NodeType }),
});

export const fwdNodesUpdate = operation({
  name: 'fwd.nodes.update',
  method: 'PUT',
  path: '/fwd/nodes/{nid}',
  summary: 'Replace a firewall node; rules that bring their ids keep them',
  body: NodeType,
  reply: 'none',
  status: 204,
  errors: 'json',
  handler: async (i) =>
    i.ws.mutate(FWD_AREA, async (data, ids) => {
      const old = findFwdNode(data, nid(i));
      data.nodes[data.nodes.indexOf(old)] = { ...(await asFirewall(ids, i.body, old)), id: old.id };
      return done();
    }),
});

export const fwdNodesDelete = operation({
  name: 'fwd.nodes.delete',
  method: 'DELETE',
  path: '/fwd/nodes/{nid}',
  summary: 'Delete a firewall node',
  reply: 'none',
  status: 204,
  errors: 'json',
  handler: async (i) =>
    i.ws.mutate(FWD_AREA, (data) => {
      const node = findFwdNode(data, nid(i));
      data.nodes = data.nodes.filter((n) => n !== node);
      return done();
    }),
});

export const fwdConfigurationUpdate = operation({
  name: 'fwd.configuration.update',
  method: 'PUT',
  path: '/fwd/nodes/{nid}/configuration',
  summary: 'Replace the configuration (policy) of a firewall node',
  body: ConfigurationType,
  reply: 'none',
  status: 204,
  errors: 'json',
  handler: async (i) =>
    i.ws.mutate(FWD_AREA, async (data, ids) => {
      const node = findFwdNode(data, nid(i));
      node.configuration = await withRuleIds(ids, i.body, node);
      return done();
    }),
});

export const fwdFirewallCreate = operation({
  name: 'fwd.firewall.create',
  method: 'POST',
  path: '/fwd/nodes/{nid}/configuration',
  summary:
    "Replace a firewall node's rule list, its default action unchanged (409 when it differs); answers the " +
    'firewall with its rule ids (VEREFOO)',
  body: FirewallType,
  reply: 'json',
  status: 201,
  errors: 'json',
  handler: async (i) => {
    const firewall = await i.ws.mutate(FWD_AREA, async (data, ids) => {
      const node = findFwdNode(data, nid(i), badRequest);
      const now = node.configuration?.firewall?.defaultAction;
      if (now !== undefined && i.body.defaultAction !== now)
        throw conflict(
          `firewall.defaultAction: ${quote(i.body.defaultAction ?? null)} differs from node ${node.id}'s ${now}; ` +
            'PUT its configuration to change it',
        );
      const configuration = await withRuleIds(ids, { ...node.configuration, firewall: i.body }, node);
      node.configuration = configuration;
      return configuration.firewall!;
    });
    return json(firewall, { schema: FirewallType, location: `/fwd/nodes/${nid(i)}/configuration/firewall` });
  },
});

/** VEREFOO's rule endpoints want every field that decides a packet, not the XSD's defaults. */
function completeRule(rule: Elements): Elements {
  for (const key of ['action', 'protocol'] as const)
    if (rule[key] === undefined) throw badRequest(`elements.${key}: is required`);
  return rule;
}

export const fwdRulesCreate = operation({
  name: 'fwd.rules.create',
  method: 'POST',
  path: '/fwd/nodes/{nid}/configuration/firewall',
  summary: "Add a rule at the end of a firewall node's list; answers it with its id and Location (VEREFOO)",
  body: ElementsType,
  reply: 'json',
  status: 201,
  errors: 'json',
  handler: async (i) => {
    const rule = completeRule(i.body);
    const added = await i.ws.mutate(FWD_AREA, async (data, ids) => {
      const node = findFwdNode(data, nid(i), badRequest);
      const fw = node.configuration?.firewall;
      if (!fw) throw conflict(`firewall node ${node.id} has no firewall configuration: POST its configuration first`);
      const { id: _given, ...fields } = rule;
      const stored = { ...fields, id: await nextId(ids, 'rule') };
      (fw.elements ??= []).push(stored);
      return stored;
    });
    return json(added, {
      schema: ElementsType,
      location: `/fwd/nodes/${nid(i)}/configuration/firewall/${added.id}`,
    });
  },
});

export const fwdRulesGet = operation({
  name: 'fwd.rules.get',
  method: 'GET',
  path: '/fwd/nodes/{nid}/configuration/firewall/{eid}',
  summary: 'Get a rule',
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) =>
    json(findRule(findFwdNode(await i.ws.read(FWD_AREA), nid(i)), i.params.eid as number), {
      schema: ElementsType,
    }),
});

export const fwdRulesUpdate = operation({
  name: 'fwd.rules.update',
  method: 'PUT',
  path: '/fwd/nodes/{nid}/configuration/firewall/{eid}',
  summary: 'Replace a rule in place (its first-match position is kept); 409 when the body names another id',
  body: ElementsType,
  reply: 'none',
  status: 204,
  errors: 'json',
  handler: async (i) => {
    const rule = completeRule(i.body);
    return i.ws.mutate(FWD_AREA, (data) => {
      const node = findFwdNode(data, nid(i));
      const old = findRule(node, i.params.eid as number);
      if (rule.id !== undefined && rule.id !== old.id)
        throw conflict(`elements.id: ${rule.id} differs from the rule in the path (${old.id})`);
      const list = node.configuration!.firewall!.elements!;
      list[list.indexOf(old)] = { ...rule, id: old.id };
      return done();
    });
  },
});

export const fwdRulesDelete = operation({
  name: 'fwd.rules.delete',
  method: 'DELETE',
  path: '/fwd/nodes/{nid}/configuration/firewall/{eid}',
  summary: 'Delete a rule',
  reply: 'none',
  status: 204,
  errors: 'json',
  handler: async (i) =>
    i.ws.mutate(FWD_AREA, (data) => {
      const node = findFwdNode(data, nid(i));
      const old = findRule(node, i.params.eid as number);
      const fw = node.configuration!.firewall!;
      fw.elements = fw.elements!.filter((e) => e !== old);
      return done();
    }),
});

export const fwdOperations = [
  fwdNodesList,
  fwdNodesCreate,
  fwdNodesAddNfv,
  fwdNodesAddGraph,
  fwdNodesImport,
  fwdNodesDeleteAll,
  fwdNodesGet,
  fwdNodesUpdate,
  fwdNodesDelete,
  fwdConfigurationUpdate,
  fwdFirewallCreate,
  fwdRulesCreate,
  fwdRulesGet,
  fwdRulesUpdate,
  fwdRulesDelete,
  deployIptables,
  deployNftables,
  deployOpenVswitch,
  deployIpfw,
  deployBpf,
  deployVendorFirewall,
  deployFortinet,
];
