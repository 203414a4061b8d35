/**
 * Import of a live firewall (firewall-io.md B.7): `POST /fwd/import` takes an iptables-save file or nft's ruleset
 * (JSON, or text that nft itself converts) in a JSON body and answers the FIREWALL node it becomes with the report
 * of every line reached; with `into`, the NFV document whose firewall node has that configuration instead; with
 * `store`, the node is also kept in `/fwd`. Body: `{"format": "iptables" | "nftables", "text": "...", "file":
 * "rules.v4", "node": "10.255.0.1", "into": "<NFV document>", "store": false, "plain": false}` and the reading
 * fields every operation reading a rule set takes (`reading.ts`: chain, table, ignoreNat, natAddress, iface, host,
 * ipset, routes, neighbours, approximation); `plain`: VEREFOO's plain rules, no except entries;
 * with `host` and `into`, the node is placed between that end host and its neighbours when the graph lacks it.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Approximation, ImportFormat, ImportOptions, ImportReport, LineElements } from '../deploy/import/index.js';
import { decodeDocument, detectFormat, encodeDocument } from '../model/codec.js';
import { badRequest, failedDependency, quote } from '../model/errors.js';
import { MAX_DOCUMENT_BYTES } from '../model/limits.js';
import { END_HOSTS, NfvType } from '../model/resources.js';
import type { NFV, Node } from '../model/types.js';
import { FWD_AREA } from '../store/firewalls.js';
import { addNode } from './firewalls.js';
import { json, operation } from './operation.js';
import { READING_FIELD_NAMES, parseReading } from './reading.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface ImportRequest {
  format: ImportFormat;
  text: string;
  file: string;
  node: string;
  options: ImportOptions;
  approximation?: Approximation;
  into?: string;
  store: boolean;
  /** Plain rules only (VEREFOO's): RETURNs unfolded, no `except` entries (docs/SEMANTICS.md "Rules with except"). */
  plain: boolean;
}

const FIELDS = ['format', 'text', 'file', 'node', ...READING_FIELD_NAMES, 'into', 'store', 'plain'];

/** The import request a JSON body gives, each field checked and named. */
export async function parseImportRequest(body: unknown): Promise<ImportRequest> {
  if (!isRecord(body)) throw badRequest('body: a JSON object with format, text and node is required');
  const extra = Object.keys(body).find((k) => !FIELDS.includes(k));
  if (extra !== undefined) throw badRequest(`${quote(extra).slice(1, -1)}: not a field here (${FIELDS.join(', ')})`);
  const str = (name: string, required: boolean) => {
    const v = body[name];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'string' || (required && v === '')) throw badRequest(`${name}: a non-empty string is required`);
    return v;
  };
  const format = str('format', true);
  if (format !== 'iptables' && format !== 'nftables')
    throw badRequest(`format: ${quote(format)} is not iptables or nftables`);
  if (body.store !== undefined && typeof body.store !== 'boolean') throw badRequest('store: true or false');
  if (body.plain !== undefined && typeof body.plain !== 'boolean') throw badRequest('plain: true or false');
  const file = str('file', false) ?? 'the rule set';
  const { options, approximation } = await parseReading(body);
  const into = str('into', false);
  return {
    format,
    text: str('text', true)!,
    file,
    node: str('node', true)!,
    options,
    ...(approximation ? { approximation } : {}),
    ...(into === undefined ? {} : { into }),
    store: body.store === true,
    plain: body.plain === true,
  };
}

/**
 * `nft list ruleset` text as JSON, by nft itself in a user and network namespace of its own (B.6): the text is
 * loaded there and listed back with -j; nothing on this machine changes.
 */
async function nftJsonOf(text: string, file: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'nfv-nft-'));
  try {
    const input = path.join(dir, 'ruleset.nft');
    await writeFile(input, text);
    return await new Promise<string>((resolve, reject) => {
      execFile(
        'unshare',
        ['-rn', 'sh', '-c', 'nft -f "$1" && nft -j list ruleset', 'sh', input],
        { timeout: 60_000, maxBuffer: MAX_DOCUMENT_BYTES },
        (error, stdout, stderr) => {
          if (!error) return resolve(stdout);
          const said = stderr.split('\n').find((l) => l.includes('Error')) ?? String(error.message).split('\n')[0];
          const missing = (error as NodeJS.ErrnoException).code === 'ENOENT' || /not found/.test(stderr);
          reject(
            missing
              ? failedDependency(`${file}: nft text needs nft and unshare to convert it (or give nft -j output)`)
              : badRequest(`${file}: nft refused the ruleset: ${said!.replace(input, file).trim()}`),
          );
        },
      );
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface ImportAnswer {
  report: ImportReport;
  /** Each live line and the ids of the rules it became. */
  origins: LineElements[];
  node: Node;
  /**
   * With `natAddress`: the NAT node the nat table's translations became, for the outside of the firewall; a list,
   * one per interface, with `natAddress` `IFACE=ADDR,IFACE2=ADDR2`.
   */
  nat?: Node | Node[];
  /** With `into`: the NFV document, in its own format, the firewall node's configuration replaced. */
  document?: string;
  /** With `store`: the id of the stored `/fwd` node. */
  id?: number;
}

/** Reads and imports; the node's configuration as `nfv simulate` reads a FIREWALL node. */
export async function runImport(r: ImportRequest): Promise<Omit<ImportAnswer, 'id'>> {
  const { importRules, importedNats, importedNode, looksLikeNftJson } = await import('../deploy/import/index.js');
  const text = r.format === 'nftables' && !looksLikeNftJson(r.text) ? await nftJsonOf(r.text, r.file) : r.text;
  const imported = importRules(r.format, text, r.file, r.options);
  const { node, origins } = importedNode(imported, r.node, r.approximation, r.plain);
  const nats = importedNats(imported);
  // One node keeps the single-object shape clients read; several are a list.
  const nat = nats.length === 0 ? undefined : nats.length === 1 ? nats[0]! : nats;
  const answer = { report: imported.report, origins, node, ...(nat ? { nat } : {}) };
  if (r.into === undefined) return answer;
  const format = detectFormat(r.into);
  if (!format) throw badRequest('into: not an XML or JSON NFV document');
  const nfv: NFV = decodeDocument(NfvType, r.into, format);
  if (r.options.host !== undefined) placeAtHost(nfv, r.options.host, r.node);
  const named = (nfv.graphs.graph ?? []).flatMap((g) => g.node).filter((n) => n.name === r.node);
  if (!named.length) throw badRequest(`node: the document has no node ${quote(r.node)}`);
  for (const n of named) {
    if (n.functionalType !== undefined && n.functionalType !== 'FIREWALL')
      throw badRequest(`node: ${quote(r.node)} is a ${n.functionalType}, not a FIREWALL`);
    n.functionalType = 'FIREWALL';
    n.configuration = { ...node.configuration!, name: n.configuration?.name ?? node.configuration!.name };
  }
  for (const n of nats) placeNat(nfv, n, r.node);
  return { ...answer, document: encodeDocument(NfvType, nfv, format) };
}

/**
 * The NAT node of a router's translations (docs/SEMANTICS.md, "Port forwards and masquerading") into the graphs
 * that hold the firewall node: a node of that name, a neighbour of the firewall (on its outside), gets the NAT's
 * configuration; one of another type, or none, is refused: which neighbour is the outside only the document says.
 */
function placeNat(nfv: NFV, nat: Node, firewall: string): void {
  for (const g of nfv.graphs.graph ?? []) {
    const fw = g.node.find((n) => n.name === firewall);
    if (!fw) continue;
    const at = g.node.find((n) => n.name === nat.name);
    const field = `natAddress: ${quote(nat.name)}`;
    if (!at)
      throw badRequest(`${field} is not a node of graph ${g.id}; add it between ${quote(firewall)} and the outside`);
    if (at.functionalType !== undefined && at.functionalType !== 'NAT')
      throw badRequest(`${field} is a ${at.functionalType}, not a NAT`);
    const linked = (a: Node, b: string) => (a.neighbour ?? []).some((nb) => nb.name === b);
    if (!linked(fw, nat.name) && !linked(at, firewall))
      throw badRequest(`${field} is not a neighbour of ${quote(firewall)} in graph ${g.id} (the router's outside)`);
    at.functionalType = 'NAT';
    at.configuration = { ...nat.configuration!, name: at.configuration?.name ?? nat.configuration!.name };
  }
}

/**
 * A host firewall's node between the host and its neighbours (docs/SEMANTICS.md, "Host firewalls"), in each graph
 * the host is an end host of: the host's links go to the node, the node's to the host and its former neighbours.
 * A graph where the node already is (a second import) keeps its links; its configuration is replaced after.
 */
function placeAtHost(nfv: NFV, host: string, name: string): void {
  const graphs = (nfv.graphs.graph ?? []).filter((g) => g.node.some((n) => n.name === host));
  if (!graphs.length) throw badRequest(`host: ${quote(host)} is not a node of the document's graphs (--host)`);
  for (const g of graphs) {
    const at = g.node.find((n) => n.name === host)!;
    if (!END_HOSTS.has(at.functionalType ?? ''))
      throw badRequest(
        `host: ${quote(host)} is a ${at.functionalType ?? 'node without type'}, not an end host (--host)`,
      );
    if (g.node.some((n) => n.name === name)) continue;
    const around = (at.neighbour ?? []).map((nb) => nb.name);
    for (const n of g.node)
      if (around.includes(n.name)) n.neighbour = (n.neighbour ?? []).map((nb) => (nb.name === host ? { name } : nb));
    at.neighbour = [{ name }];
    g.node.push({ name, functionalType: 'FIREWALL', neighbour: [host, ...around].map((n) => ({ name: n })) });
  }
}

export const fwdImport = operation({
  name: 'fwd.import',
  method: 'POST',
  path: '/fwd/import',
  summary:
    'A live firewall (iptables-save, nft -j list ruleset, or nft text converted by nft) as a FIREWALL node, with ' +
    'the report of every line: exact, new-connection, no-verdict, approximated or refused; into an NFV document ' +
    'with "into", kept in /fwd with "store" (our addition)',
  body: 'json',
  bodyFormats: ['json'],
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    const request = await parseImportRequest(i.body);
    const answer: ImportAnswer = await runImport(request);
    if (request.store) {
      const stored = await i.ws.mutate(FWD_AREA, (data, ids) => addNode(data, ids, answer.node));
      // The store gives rules ids of its own, in order: the report names those.
      const byPosition = stored.configuration!.firewall!.elements!.map((e) => e.id!);
      for (const o of answer.origins) o.elements = o.elements.map((k) => byPosition[k - 1]!);
      answer.node = stored;
      answer.id = stored.id!;
    }
    return json(answer, { headers: { 'X-Nfv-Approximated': String(answer.report.approximated) } });
  },
});

export const importOperations = [fwdImport];
