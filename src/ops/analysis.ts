/**
 * Analyses of a firewall's rules on any rule source (firewall-io.md B.9): lint (unreachable and redundant rules),
 * allows (what the list lets through, as packet classes) and diff (the packets two lists treat differently).
 *
 * A rule source is a stored `/fwd` node, a firewall of a stored simulation result, or a document sent with the
 * request (an NFV document with the firewall named by `node`, a firewall node as `/fwd` takes it, an iptables-save
 * file or `nft -j list ruleset` output). Sources are
 * resolved in one place, `SOURCES` (and, for documents, `DOCUMENTS`): a new kind, such as an imported iptables
 * file, is one entry there. The GET paths analyse stored sources; the POST paths under `/fwd/analysis` take any
 * source in a JSON body: `{"source": SOURCE}` or `{"from": SOURCE, "to": SOURCE}`, where SOURCE is
 * `{"kind": "fwd", "id": 3}`, `{"kind": "simulation", "id": 1, "node": "10.255.0.1"}` or
 * `{"kind": "document", "document": "<NFV>...</NFV>", "node": "10.255.0.1", "name": "net.xml"}`.
 */
import type { AllowsReport, DiffReport, LintReport, RuleList } from '../deploy/analysis/index.js';
import { looksLikeIptables, looksLikeNftJson } from '../deploy/import/detect.js';
import { PORT_HINT, parsePorts, portsProblem, ruleAddressProblem } from '../model/address.js';
import { decodeDocument, detectFormat, parseJson, parseXml } from '../model/codec.js';
import { badRequest, listWithin, notFound, quote } from '../model/errors.js';
import { parseId } from '../model/ids.js';
import { NfvType, NodeType } from '../model/resources.js';
import { ruleBox, type Box } from '../model/space.js';
import type { NFV, Node } from '../model/types.js';
import { FWD_AREA } from '../store/firewalls.js';
import { ADP_AREA } from '../store/network.js';
import type { Workspace } from '../store/workspace.js';
import { json, operation, type Input, type JsonReply } from './operation.js';

/** Where a rule list comes from. */
export type SourceSpec =
  | { kind: 'fwd'; id: number }
  | { kind: 'simulation'; id: number; node?: string }
  | { kind: 'document'; document: string; node?: string; name?: string };

/** A firewall node found in a source, and what to call it; or the rule list of an imported live firewall. */
type Found = { node: Node; name: string } | { list: RuleList };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The FIREWALL node named `wanted` among a document's or result's nodes; the only one when no name is given. */
function pickFirewall(nodes: Node[], wanted: string | undefined, where: string, missing: (m: string) => Error): Node {
  if (wanted !== undefined) {
    const named = nodes.filter((n) => n.name === wanted);
    if (!named.length) throw missing(`node: ${where} has no node ${quote(wanted)}`);
    const fw = named.find((n) => n.functionalType === 'FIREWALL');
    if (!fw)
      throw badRequest(
        `node: ${quote(wanted)} in ${where} is ${named[0]!.functionalType ?? 'an allocation place'}, not a FIREWALL`,
      );
    return fw;
  }
  const firewalls = nodes.filter((n) => n.functionalType === 'FIREWALL');
  if (firewalls.length === 1) return firewalls[0]!;
  if (!firewalls.length) throw badRequest(`node: ${where} has no FIREWALL node`);
  const names = listWithin(
    firewalls.map((n) => n.name),
    160,
  );
  throw badRequest(`node: name the firewall; ${where} has ${firewalls.length}: ${names}`);
}

const nodesOf = (nfv: NFV) => (nfv.graphs.graph ?? []).flatMap((g) => g.node);

/** The root element of an XML document, past an `/adp` envelope. */
function xmlRootName(text: string): string | undefined {
  let tree: unknown = parseXml(text);
  for (;;) {
    if (!isRecord(tree)) return undefined;
    const root = Object.keys(tree).find((k) => !k.startsWith('?') && !k.startsWith('#'));
    if (root !== 'entities') return root;
    const body = tree[root];
    tree = isRecord(body) ? (Array.isArray(body.content) ? body.content[0] : body.content) : undefined;
  }
}

/** The top-level fields of a JSON document, past an `/adp` envelope or a `{"node": ...}` or `{"nfv": ...}` wrapper. */
function jsonFields(text: string): Record<string, unknown> | undefined {
  let value = parseJson(text);
  if (isRecord(value) && Array.isArray(value.content) && 'links' in value) value = value.content[0];
  if (!isRecord(value)) return undefined;
  const keys = Object.keys(value);
  const wrapper = keys.length === 1 && ['node', 'nfv', 'NFV'].includes(keys[0]!) ? value[keys[0]!] : undefined;
  return isRecord(wrapper) ? wrapper : value;
}

interface DocumentKind {
  /** Whether a document is of this kind, from its text (XML root name or JSON fields given when they parse). */
  is: (text: string, root: string | undefined, fields: Record<string, unknown> | undefined) => boolean;
  read: (text: string, node: string | undefined, name: string) => Found | Promise<Found>;
}

/** A live firewall file as a rule list: exact boxes, any prefix (the may list when some line is approximated). */
async function importedSource(format: 'iptables' | 'nftables', text: string, name: string): Promise<Found> {
  const { importRules, importedList } = await import('../deploy/import/index.js');
  return { list: importedList(importRules(format, text, name)) };
}

/** The kinds of document a rule list can come in, each recognised by its content. */
const DOCUMENTS: DocumentKind[] = [
  {
    is: (_text, root, fields) => root === 'NFV' || (fields !== undefined && 'graphs' in fields),
    read: (text, wanted, name) => {
      const node = pickFirewall(nodesOf(decodeDocument(NfvType, text)), wanted, name, badRequest);
      return { node, name: `${name}, node ${node.name}` };
    },
  },
  {
    is: (_text, root, fields) =>
      root === 'node' || (fields !== undefined && ('functionalType' in fields || 'configuration' in fields)),
    read: (text, wanted, name) => {
      const node = decodeDocument(NodeType, text);
      if (wanted !== undefined && wanted !== node.name)
        throw badRequest(`node: ${name} is the node ${quote(node.name)}, not ${quote(wanted)}`);
      return { node, name: `${name}, node ${node.name}` };
    },
  },
  {
    is: (text) => looksLikeIptables(text),
    read: (text, _node, name) => importedSource('iptables', text, name),
  },
  {
    is: (text) => looksLikeNftJson(text),
    read: (text, _node, name) => importedSource('nftables', text, name),
  },
];

async function readDocument(text: string, wanted: string | undefined, name: string): Promise<Found> {
  const format = detectFormat(text);
  const root = format === 'xml' ? xmlRootName(text) : undefined;
  const fields = format === 'json' && !looksLikeNftJson(text) ? jsonFields(text) : undefined;
  const kind = DOCUMENTS.find((d) => d.is(text, root, fields));
  if (!kind)
    throw badRequest(
      `${name}: not a rule source (an NFV document or a firewall node in XML or JSON, an iptables-save file, ` +
        'or nft -j list ruleset output)',
    );
  return kind.read(text, wanted, name);
}

/** How each kind of source is read: the one place to add a kind. */
const SOURCES: {
  [K in SourceSpec['kind']]: (ws: Workspace, spec: Extract<SourceSpec, { kind: K }>) => Promise<Found>;
} = {
  fwd: async (ws, spec) => {
    const node = (await ws.read(FWD_AREA)).nodes.find((n) => n.id === spec.id);
    if (!node) throw notFound(`firewall node ${spec.id} does not exist`);
    return { node, name: `fwd node ${spec.id} (${node.name})` };
  },
  simulation: async (ws, spec) => {
    const s = (await ws.read(ADP_AREA)).simulations.find((x) => x.id === spec.id);
    if (!s) throw notFound(`simulation ${spec.id} does not exist`);
    const node = pickFirewall(nodesOf(s.result as NFV), spec.node, `simulation ${spec.id}`, notFound);
    return { node, name: `simulation ${spec.id}, node ${node.name}` };
  },
  document: async (_ws, spec) => readDocument(spec.document, spec.node, spec.name ?? 'the document'),
};

/** A source's rule list. The analyses load on first use, not at every command's start. */
async function ruleList(ws: Workspace, spec: SourceSpec): Promise<RuleList> {
  const read = SOURCES[spec.kind] as (ws: Workspace, spec: SourceSpec) => Promise<Found>;
  const found = await read(ws, spec);
  if ('list' in found) return found.list;
  const { listOfNode } = await import('../deploy/analysis/index.js');
  return listOfNode(found.node, found.name);
}

const KINDS = Object.keys(SOURCES);
const MAX_NAME = 200;

/** A source as a request body gives it; `at` names it in messages (`from`, `source`). */
export function parseSource(raw: unknown, at: string): SourceSpec {
  if (!isRecord(raw)) throw badRequest(`${at}: a rule source object is required ({"kind": ${KINDS.join(' | ')}, ...})`);
  const text = (field: string, required: boolean): string | undefined => {
    const v = raw[field];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'string' || v === '') throw badRequest(`${at}.${field}: a non-empty string is required`);
    return v;
  };
  const id = (): number => {
    const v = raw.id;
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
    if (typeof v === 'string') return parseId(`${at}.id`, v);
    throw badRequest(`${at}.id: an id (a whole number) is required`);
  };
  const known = (fields: string[]) => {
    const extra = Object.keys(raw).find((k) => !fields.includes(k));
    if (extra !== undefined) throw badRequest(`${at}.${clipKey(extra)}: not a field of a ${String(raw.kind)} source`);
  };
  switch (raw.kind) {
    case 'fwd':
      known(['kind', 'id']);
      return { kind: 'fwd', id: id() };
    case 'simulation': {
      known(['kind', 'id', 'node']);
      const node = text('node', false);
      return { kind: 'simulation', id: id(), ...(node === undefined ? {} : { node }) };
    }
    case 'document': {
      known(['kind', 'document', 'node', 'name']);
      const doc = raw.document;
      const document = isRecord(doc) || Array.isArray(doc) ? JSON.stringify(doc) : text('document', true)!;
      const node = text('node', false);
      const name = text('name', false);
      if (name !== undefined && name.length > MAX_NAME)
        throw badRequest(`${at}.name: give at most ${MAX_NAME} characters`);
      return {
        kind: 'document',
        document,
        ...(node === undefined ? {} : { node }),
        ...(name === undefined ? {} : { name }),
      };
    }
    default:
      throw badRequest(`${at}.kind: ${quote(raw.kind ?? null)} is not a kind of rule source (${KINDS.join(', ')})`);
  }
}

const clipKey = (k: string) => quote(k).slice(1, -1);

/** Refuses query parameters an operation does not take (a misspelt filter must not widen the answer). */
function onlyParams(query: URLSearchParams, allowed: readonly string[]): void {
  for (const key of query.keys())
    if (!allowed.includes(key))
      throw badRequest(`${clipKey(key)}: not a parameter here (${allowed.join(', ') || 'none'})`);
}

const FILTERS = ['src', 'dst', 'proto', 'sport', 'dport'] as const;
const PROTOCOLS = ['ANY', 'TCP', 'UDP', 'OTHER'] as const;

/** The traffic an `allows` looks at: `src`, `dst`, `proto`, `sport`, `dport`, read as a rule's match would be. */
export function trafficFilter(query: URLSearchParams): Box {
  const address = (name: string) => {
    const v = query.get(name) ?? '*';
    const problem = ruleAddressProblem(v);
    if (problem) throw badRequest(`${name}: ${quote(v)} ${problem}`);
    return v;
  };
  const ports = (name: string) => {
    const v = query.get(name) ?? '*';
    if (!parsePorts(v)) throw badRequest(`${name}: ${quote(v)} ${PORT_HINT}`);
    return v;
  };
  const proto = (query.get('proto') ?? 'ANY').toUpperCase();
  if (!(PROTOCOLS as readonly string[]).includes(proto))
    throw badRequest(`proto: ${quote(query.get('proto'))} is not a protocol (${PROTOCOLS.join(', ')})`);
  for (const name of ['sport', 'dport']) {
    const problem = portsProblem(proto, ports(name));
    if (problem) throw badRequest(`${name}: ${quote(query.get(name))} with proto OTHER: ${problem}`);
  }
  return ruleBox({
    source: address('src'),
    destination: address('dst'),
    srcPort: ports('sport'),
    dstPort: ports('dport'),
    protocol: proto,
  });
}

async function lintReply(ws: Workspace, spec: SourceSpec): Promise<JsonReply<LintReport>> {
  const list = await ruleList(ws, spec);
  const { lint } = await import('../deploy/analysis/index.js');
  const report = lint(list);
  return json(report, { headers: { 'X-Nfv-Findings': String(report.findings.length) } });
}

async function allowsReply(ws: Workspace, spec: SourceSpec, query: URLSearchParams): Promise<JsonReply<AllowsReport>> {
  const within = trafficFilter(query);
  const list = await ruleList(ws, spec);
  const { allowsOf } = await import('../deploy/analysis/index.js');
  return json(allowsOf(list, within));
}

async function diffReply(ws: Workspace, from: SourceSpec, to: SourceSpec): Promise<JsonReply<DiffReport>> {
  const [a, b] = [await ruleList(ws, from), await ruleList(ws, to)];
  const { diff } = await import('../deploy/analysis/index.js');
  const report = diff(a, b);
  return json(report, { headers: { 'X-Nfv-Equivalent': String(report.equivalent) } });
}

const fwdSource = (i: Input): SourceSpec => ({ kind: 'fwd', id: i.params.nid as number });
const simulationSource = (i: Input): SourceSpec => {
  const node = i.query.get('node');
  if (node === '') throw badRequest('node: the name of a firewall node is required');
  return { kind: 'simulation', id: i.params.smid as number, ...(node === null ? {} : { node }) };
};

/** The JSON body of a POST analysis: its fields, each named. */
function bodyFields(body: unknown, fields: string[]): Record<string, unknown> {
  if (!isRecord(body)) throw badRequest(`body: a JSON object with ${fields.join(' and ')} is required`);
  const extra = Object.keys(body).find((k) => !fields.includes(k));
  if (extra !== undefined) throw badRequest(`${clipKey(extra)}: not a field here (${fields.join(', ')})`);
  return body;
}

const LINT_SUMMARY =
  'Rules no packet reaches (shadowed, redundant-unreachable, unmatchable) and rules whose removal changes no ' +
  "verdict (redundant), each with the rules that block it, as Batfish's filterLineReachability (our addition)";
const ALLOWS_SUMMARY =
  'What the rules let through, as disjoint packet classes with the rules that allow them; ?src=&dst=&proto=&sport=' +
  '&dport= look at that traffic only (our addition)';
const DIFF_SUMMARY =
  'The packets two rule lists treat differently, as packet classes with the verdict and deciding rule in each ' +
  '(our addition)';

export const fwdLint = operation({
  name: 'fwd.nodes.lint',
  method: 'GET',
  path: '/fwd/nodes/{nid}/lint',
  summary: LINT_SUMMARY,
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    onlyParams(i.query, []);
    return lintReply(i.ws, fwdSource(i));
  },
});

export const fwdAllows = operation({
  name: 'fwd.nodes.allows',
  method: 'GET',
  path: '/fwd/nodes/{nid}/allows',
  summary: ALLOWS_SUMMARY,
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    onlyParams(i.query, FILTERS);
    return allowsReply(i.ws, fwdSource(i), i.query);
  },
});

export const fwdDiff = operation({
  name: 'fwd.diff',
  method: 'GET',
  path: '/fwd/diff',
  summary: `${DIFF_SUMMARY}: ?from=NID&to=NID, two firewall nodes`,
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    onlyParams(i.query, ['from', 'to']);
    const id = (name: string) => {
      const v = i.query.get(name);
      if (v === null) throw badRequest(`${name}: the id of a firewall node is required`);
      return parseId(name, v);
    };
    return diffReply(i.ws, { kind: 'fwd', id: id('from') }, { kind: 'fwd', id: id('to') });
  },
});

export const simulationsLint = operation({
  name: 'simulations.lint',
  method: 'GET',
  path: '/adp/simulations/{smid}/lint',
  summary: `${LINT_SUMMARY}; ?node=NAME, the firewall of the stored result (the only one when not given)`,
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    onlyParams(i.query, ['node']);
    return lintReply(i.ws, simulationSource(i));
  },
});

export const simulationsAllows = operation({
  name: 'simulations.allows',
  method: 'GET',
  path: '/adp/simulations/{smid}/allows',
  summary: `${ALLOWS_SUMMARY}; ?node=NAME, the firewall of the stored result (the only one when not given)`,
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    onlyParams(i.query, ['node', ...FILTERS]);
    return allowsReply(i.ws, simulationSource(i), i.query);
  },
});

export const analysisLint = operation({
  name: 'fwd.analysis.lint',
  method: 'POST',
  path: '/fwd/analysis/lint',
  summary: `${LINT_SUMMARY}; any rule source, in a JSON body {"source": SOURCE}`,
  body: 'json',
  bodyFormats: ['json'],
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    onlyParams(i.query, []);
    return lintReply(i.ws, parseSource(bodyFields(i.body, ['source']).source, 'source'));
  },
});

export const analysisAllows = operation({
  name: 'fwd.analysis.allows',
  method: 'POST',
  path: '/fwd/analysis/allows',
  summary: `${ALLOWS_SUMMARY}; any rule source, in a JSON body {"source": SOURCE}`,
  body: 'json',
  bodyFormats: ['json'],
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    onlyParams(i.query, FILTERS);
    return allowsReply(i.ws, parseSource(bodyFields(i.body, ['source']).source, 'source'), i.query);
  },
});

export const analysisDiff = operation({
  name: 'fwd.analysis.diff',
  method: 'POST',
  path: '/fwd/analysis/diff',
  summary: `${DIFF_SUMMARY}; any two rule sources, in a JSON body {"from": SOURCE, "to": SOURCE}`,
  body: 'json',
  bodyFormats: ['json'],
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    onlyParams(i.query, []);
    const body = bodyFields(i.body, ['from', 'to']);
    return diffReply(i.ws, parseSource(body.from, 'from'), parseSource(body.to, 'to'));
  },
});

export const analysisOperations = [
  fwdLint,
  fwdAllows,
  fwdDiff,
  simulationsLint,
  simulationsAllows,
  analysisLint,
  analysisAllows,
  analysisDiff,
];
