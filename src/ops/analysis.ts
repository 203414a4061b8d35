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
import type {
  AllowsByLineReport,
  AllowsReport,
  DiffReport,
  Line,
  LintReport,
  RuleList,
} from '../deploy/analysis/index.js';
import type { Explanation, LiveRuleset, Step } from '../deploy/import/index.js';
import { looksLikeIptables, looksLikeNftJson } from '../deploy/import/detect.js';
import { PORT_HINT, parsePorts, portsProblem, ruleAddressProblem } from '../model/address.js';
import { decodeDocument, detectFormat, parseJson, parseXml } from '../model/codec.js';
import { badRequest, listWithin, notFound, quote } from '../model/errors.js';
import { parseId } from '../model/ids.js';
import { NfvType, NodeType } from '../model/resources.js';
import { regionSubtract, ruleBox, type Box } from '../model/space.js';
import type { NFV, Node } from '../model/types.js';
import { FWD_AREA } from '../store/firewalls.js';
import { ADP_AREA } from '../store/network.js';
import type { Workspace } from '../store/workspace.js';
import { json, operation, type Input, type JsonReply } from './operation.js';
import { READING_FIELD_NAMES, parseReading, type Reading } from './reading.js';

/** Where a rule list comes from. */
export type SourceSpec =
  | { kind: 'fwd'; id: number }
  | { kind: 'simulation'; id: number; node?: string }
  | { kind: 'document'; document: string; node?: string; name?: string };

/** A firewall node found in a source, and what to call it; or an imported live firewall: its rule list and chains. */
type Found =
  | { node: Node; name: string }
  | {
      list: RuleList;
      /** The must list of an approximated import read without `approximation`: findings are checked on it. */
      must?: RuleList;
      set: LiveRuleset;
      host?: { address: string; input: LiveRuleset; output: LiveRuleset };
    };

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
  read: (text: string, node: string | undefined, name: string, reading: Reading) => Found | Promise<Found>;
  /** A live file, read with the reading fields; the other kinds refuse them. */
  live?: boolean;
}

/**
 * A live firewall file as a rule list, read with the reading fields (`reading.ts`): exact boxes, any prefix. When
 * some line is approximated, the may list, and the must list beside it to mark what rests on approximated lines
 * (analysis/readings.ts); `approximation` asks for one of them alone, unmarked.
 */
async function importedSource(format: 'iptables' | 'nftables', text: string, name: string, r: Reading): Promise<Found> {
  const { importRules, importedList } = await import('../deploy/import/index.js');
  const imported = importRules(format, text, name, r.options);
  const host = imported.host ? { host: imported.host } : {};
  const both = imported.report.approximated && r.approximation === undefined;
  const must = both ? { must: importedList(imported, 'must') } : {};
  return { list: importedList(imported, r.approximation ?? 'may'), ...must, set: imported.set, ...host };
}

const NO_READING: Reading = { options: {}, given: [] };

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
    read: (text, _node, name, reading) => importedSource('iptables', text, name, reading),
    live: true,
  },
  {
    is: (text) => looksLikeNftJson(text),
    read: (text, _node, name, reading) => importedSource('nftables', text, name, reading),
    live: true,
  },
];

async function readDocument(text: string, wanted: string | undefined, name: string, reading: Reading): Promise<Found> {
  const format = detectFormat(text);
  const root = format === 'xml' ? xmlRootName(text) : undefined;
  const fields = format === 'json' && !looksLikeNftJson(text) ? jsonFields(text) : undefined;
  const kind = DOCUMENTS.find((d) => d.is(text, root, fields));
  if (!kind)
    throw badRequest(
      `${name}: not a rule source (an NFV document or a firewall node in XML or JSON, an iptables-save file, ` +
        'or nft -j list ruleset output)',
    );
  if (!kind.live) refuseReading(reading, name);
  return kind.read(text, wanted, name, reading);
}

/** Reading fields given for a source that is no live file: refused, naming the field, not silently ignored. */
function refuseReading(reading: Reading, name: string): void {
  if (reading.given.length)
    throw badRequest(`${reading.given[0]}: ${name} is not an iptables-save or nft file; only those are read with it`);
}

/** How each kind of source is read: the one place to add a kind. */
const SOURCES: {
  [K in SourceSpec['kind']]: (ws: Workspace, spec: Extract<SourceSpec, { kind: K }>, r: Reading) => Promise<Found>;
} = {
  fwd: async (ws, spec, r) => {
    refuseReading(r, `fwd node ${spec.id}`);
    const node = (await ws.read(FWD_AREA)).nodes.find((n) => n.id === spec.id);
    if (!node) throw notFound(`firewall node ${spec.id} does not exist`);
    return { node, name: `fwd node ${spec.id} (${node.name})` };
  },
  simulation: async (ws, spec, r) => {
    refuseReading(r, `simulation ${spec.id}`);
    const s = (await ws.read(ADP_AREA)).simulations.find((x) => x.id === spec.id);
    if (!s) throw notFound(`simulation ${spec.id} does not exist`);
    const node = pickFirewall(nodesOf(s.result as NFV), spec.node, `simulation ${spec.id}`, notFound);
    return { node, name: `simulation ${spec.id}, node ${node.name}` };
  },
  document: async (_ws, spec, r) => readDocument(spec.document, spec.node, spec.name ?? 'the document', r),
};

/** A source's rule list. The analyses load on first use, not at every command's start. */
async function found(ws: Workspace, spec: SourceSpec, reading: Reading): Promise<Found> {
  const read = SOURCES[spec.kind] as (ws: Workspace, spec: SourceSpec, r: Reading) => Promise<Found>;
  return read(ws, spec, reading);
}

/** A source's rule list, and its must list when it is an approximated import read with both (`importedSource`). */
export async function ruleLists(
  ws: Workspace,
  spec: SourceSpec,
  reading = NO_READING,
): Promise<{ list: RuleList; must?: RuleList }> {
  const source = await found(ws, spec, reading);
  if ('list' in source) return { list: source.list, ...(source.must ? { must: source.must } : {}) };
  const { listOfNode } = await import('../deploy/analysis/index.js');
  return { list: listOfNode(source.node, source.name) };
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

/** `?examples=true`: one example packet per finding or class (a packet `firewall explain` reads). */
const EXAMPLES = 'examples';
/** `?classes=true`: a long list's `allows` as packet classes, not by allowing line (analysis/allows.ts). */
const CLASSES = 'classes';
function flagOf(query: URLSearchParams, name: string): boolean {
  const v = query.get(name);
  if (v === null || v === 'false') return false;
  if (v === 'true') return true;
  throw badRequest(`${name}: ${quote(v)} is not true or false`);
}
const examplesOf = (query: URLSearchParams) => flagOf(query, EXAMPLES);

async function lintReply(
  ws: Workspace,
  spec: SourceSpec,
  query: URLSearchParams,
  reading?: Reading,
): Promise<JsonReply<LintReport>> {
  const examples = examplesOf(query);
  const { list, must } = await ruleLists(ws, spec, reading);
  const { lint, markLint, Budget } = await import('../deploy/analysis/index.js');
  const budget = new Budget();
  const may = lint(list, budget, examples);
  const report = must ? markLint(may, list, lint(must, budget), must) : may;
  return json(report, { headers: { 'X-Nfv-Findings': String(report.findings.length) } });
}

async function allowsReply(
  ws: Workspace,
  spec: SourceSpec,
  query: URLSearchParams,
  reading?: Reading,
): Promise<JsonReply<AllowsReport | AllowsByLineReport>> {
  const within = trafficFilter(query);
  const examples = examplesOf(query);
  const classes = flagOf(query, CLASSES);
  const { list, must } = await ruleLists(ws, spec, reading);
  const { allowsByLine, allowsOf, allowsCheck, byDiagrams, Budget } = await import('../deploy/analysis/index.js');
  const budget = new Budget();
  // A long list by allowing line unless its classes are asked for: they can be too many to list.
  if (byDiagrams(list) && !classes) return json(allowsByLine(list, within, budget, must));
  return json(allowsOf(list, within, budget, examples, must ? allowsCheck(list, must, budget) : undefined));
}

async function diffReply(
  ws: Workspace,
  from: SourceSpec,
  to: SourceSpec,
  query: URLSearchParams,
  reading?: Reading,
): Promise<JsonReply<DiffReport>> {
  const examples = examplesOf(query);
  const [a, b] = [await ruleLists(ws, from, reading), await ruleLists(ws, to, reading)];
  const { diff, diffCheck, Budget } = await import('../deploy/analysis/index.js');
  const budget = new Budget();
  const sides = {
    a: { may: a.list, ...(a.must ? { must: a.must } : {}) },
    b: { may: b.list, ...(b.must ? { must: b.must } : {}) },
  };
  const check = a.must || b.must ? diffCheck(sides.a, sides.b, budget) : undefined;
  const report = diff(a.list, b.list, budget, examples, check);
  return json(report, { headers: { 'X-Nfv-Equivalent': String(report.equivalent) } });
}

/**
 * Which line decides one packet: through the chains of a live file (jumps, gotos, RETURNs, each matching line said),
 * or the first line of a firewall node's list whose packets hold it.
 */
export async function explainPacket(
  ws: Workspace,
  spec: SourceSpec,
  packetText: string,
  reading: Reading,
): Promise<Explanation> {
  const { explain, packetBox, parsePacket } = await import('../deploy/import/index.js');
  const packet = parsePacket(packetText);
  const source = await found(ws, spec, reading);
  if ('set' in source && source.host) {
    // A host firewall: INPUT decides the packets to the host, OUTPUT those from it (docs/SEMANTICS.md).
    const { address, input, output } = source.host;
    if (packet.dst === address) return explain(input, packet);
    if (packet.src === address) return explain(output, packet);
    throw badRequest(`packet: neither to nor from the host ${address} (--host): no chain of it decides`);
  }
  if ('set' in source) return explain(source.set, packet);
  const { listOfNode, labelOf } = await import('../deploy/analysis/index.js');
  const list = listOfNode(source.node, source.name);
  const box = packetBox(packet);
  const step = (kind: Step['kind'], line?: Line, why?: string): Step => ({
    kind,
    chain: list.name,
    where: line ? labelOf({ position: line.position, ...(line.id === undefined ? {} : { id: line.id }) }) : 'default',
    file: list.name,
    line: line?.position ?? 0,
    text: line ? line.text : `default ${list.defaultAllow ? 'ALLOW' : 'DENY'}`,
    ...(why ? { why } : {}),
  });
  for (const line of list.lines) {
    let rest: Box[] = [box];
    for (const b of line.boxes) rest = regionSubtract(rest, b);
    if (rest.length === 1 && rest[0] === box) continue;
    const decidedBy = rest.length
      ? step('unknown', line, 'it matches some ports of the packet only (give sport and dport)')
      : step('decides', line);
    const verdict = rest.length ? 'UNKNOWN' : line.allow ? 'ALLOW' : 'DENY';
    return { packet, verdict, decidedBy, trace: [decidedBy] };
  }
  const decidedBy = step('policy');
  return { packet, verdict: list.defaultAllow ? 'ALLOW' : 'DENY', decidedBy, trace: [decidedBy] };
}

const fwdSource = (i: Input): SourceSpec => ({ kind: 'fwd', id: i.params.nid as number });
const simulationSource = (i: Input): SourceSpec => {
  const node = i.query.get('node');
  if (node === '') throw badRequest('node: the name of a firewall node is required');
  return { kind: 'simulation', id: i.params.smid as number, ...(node === null ? {} : { node }) };
};

/** The JSON body of a POST analysis: its fields and the reading fields of a live file, each named. */
export function bodyFields(body: unknown, fields: string[]): Record<string, unknown> {
  if (!isRecord(body)) throw badRequest(`body: a JSON object with ${fields.join(' and ')} is required`);
  const all = [...fields, ...READING_FIELD_NAMES];
  const extra = Object.keys(body).find((k) => !all.includes(k));
  if (extra !== undefined) throw badRequest(`${clipKey(extra)}: not a field here (${all.join(', ')})`);
  return body;
}

const LINT_SUMMARY =
  'Rules no packet reaches (shadowed, redundant-unreachable, unmatchable) and rules whose removal changes no ' +
  "verdict (redundant), each with the rules that block it, as Batfish's filterLineReachability (our addition)";
const ALLOWS_SUMMARY =
  'What the rules let through, as disjoint packet classes with the rules that allow them; ?src=&dst=&proto=&sport=' +
  '&dport= look at that traffic only; a list of more than 1,000 lines by allowing line (its packets less those ' +
  'earlier lines take, their number and first packet) unless ?classes=true (our addition)';
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
    onlyParams(i.query, [EXAMPLES]);
    return lintReply(i.ws, fwdSource(i), i.query);
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
    onlyParams(i.query, [...FILTERS, EXAMPLES, CLASSES]);
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
    onlyParams(i.query, ['from', 'to', EXAMPLES]);
    const id = (name: string) => {
      const v = i.query.get(name);
      if (v === null) throw badRequest(`${name}: the id of a firewall node is required`);
      return parseId(name, v);
    };
    return diffReply(i.ws, { kind: 'fwd', id: id('from') }, { kind: 'fwd', id: id('to') }, i.query);
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
    onlyParams(i.query, ['node', EXAMPLES]);
    return lintReply(i.ws, simulationSource(i), i.query);
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
    onlyParams(i.query, ['node', ...FILTERS, EXAMPLES, CLASSES]);
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
    onlyParams(i.query, [EXAMPLES]);
    const body = bodyFields(i.body, ['source']);
    return lintReply(i.ws, parseSource(body.source, 'source'), i.query, await parseReading(body));
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
    onlyParams(i.query, [...FILTERS, EXAMPLES, CLASSES]);
    const body = bodyFields(i.body, ['source']);
    return allowsReply(i.ws, parseSource(body.source, 'source'), i.query, await parseReading(body));
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
    onlyParams(i.query, [EXAMPLES]);
    const body = bodyFields(i.body, ['from', 'to']);
    const [from, to] = [parseSource(body.from, 'from'), parseSource(body.to, 'to')];
    return diffReply(i.ws, from, to, i.query, await parseReading(body));
  },
});

export const analysisExplain = operation({
  name: 'fwd.analysis.explain',
  method: 'POST',
  path: '/fwd/analysis/explain',
  summary:
    'Which line decides one packet, through user chains, gotos and RETURNs: every line it matches in order and ' +
    'the deciding one with its file and line, as Batfish\'s testFilters; a JSON body {"source": SOURCE, "packet": ' +
    '"src=A dst=B proto=tcp dport=22 [sport=N iif=NAME oif=NAME]"} (our addition)',
  body: 'json',
  bodyFormats: ['json'],
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    onlyParams(i.query, []);
    const body = bodyFields(i.body, ['source', 'packet']);
    if (typeof body.packet !== 'string' || body.packet === '')
      throw badRequest('packet: a string "src=A dst=B proto=tcp dport=22" is required');
    const answer = await explainPacket(i.ws, parseSource(body.source, 'source'), body.packet, await parseReading(body));
    return json(answer, { headers: { 'X-Nfv-Verdict': answer.verdict } });
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
  analysisExplain,
];
