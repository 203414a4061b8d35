/**
 * The commands that feed the inventory (PuppetDB's command API): replace catalog (wire format v9), replace facts (v4
 * and v5), store report (v8) and deactivate node (v3), with PuppetDB's staleness rules. Payloads are checked field
 * by field; a malformed one is a 400 naming the field and stores nothing.
 */
import { NfvError, badRequest, quote } from '../model/errors.js';
import { array, dictionary, object } from '../store/shape.js';
import { canonicalJson, parseInstant, sha1, utc } from './values.js';

export interface ResourceRow {
  certname: string;
  resource: string;
  type: string;
  title: string;
  exported: boolean;
  tags: string[];
  file: string | null;
  line: number | null;
  environment: string | null;
  parameters: Record<string, unknown>;
}

export interface EventRow {
  status: string | null;
  timestamp: number;
  resource_type: string;
  resource_title: string;
  property: string | null;
  name: string | null;
  new_value: unknown;
  old_value: unknown;
  message: string | null;
  file: string | null;
  line: number | null;
  containment_path: string[] | null;
  containing_class: string | null;
}

export interface StoredReport {
  hash: string;
  certname: string;
  puppet_version: string;
  report_format: number;
  configuration_version: string;
  start_time: number;
  end_time: number;
  producer_timestamp: number;
  receive_time: number;
  producer: string | null;
  transaction_uuid: string | null;
  catalog_uuid: string | null;
  code_id: string | null;
  job_id: string | null;
  cached_catalog_status: string | null;
  status: string | null;
  noop: boolean | null;
  noop_pending: boolean | null;
  environment: string | null;
  type: string;
  events: EventRow[];
  metrics: unknown[] | null;
  logs: unknown[] | null;
}

export interface NodeRecord {
  deactivated: number | null;
  /** Newest producer_timestamp of anything received from the node. */
  lastSeen: number;
}

/** A catalog edge as stored (PuppetDB's /edges record without the certname). */
export interface EdgeRow {
  source_type: string;
  source_title: string;
  target_type: string;
  target_title: string;
  relationship: string;
}

export interface CatalogRecord {
  producer_timestamp: number;
  environment: string | null;
  version: string | null;
  resources: ResourceRow[];
  // The fields below were added with the catalogs endpoints: journals written before them lack them (read as null).
  /** When the catalog was received (the node's catalog_timestamp). */
  timestamp?: number;
  hash?: string;
  transaction_uuid?: string | null;
  catalog_uuid?: string | null;
  code_id?: string | null;
  job_id?: string | null;
  producer?: string | null;
  edges?: EdgeRow[];
}

/** A node's facts (replace facts v4/v5): the values as sent, with their key order. */
export interface FactsetRecord {
  environment: string | null;
  producer_timestamp: number;
  producer: string | null;
  /** When the facts were received (the node's facts_timestamp). */
  timestamp: number;
  hash: string;
  values: Record<string, unknown>;
}

/**
 * What the staleness rules need to decide a command, small enough to keep for any store size: node activity, the
 * time of each node's catalog, the hashes of stored reports. Keyed by certname in null-prototype records, so that
 * no certname reaches Object.prototype.
 */
export interface IngestState {
  nodes: Record<string, NodeRecord>;
  catalogTimes: Record<string, number>;
  /** producer_timestamp of each node's stored facts. */
  factTimes: Record<string, number>;
  hashes: Set<string>;
  /** Counts changes of node activity (deactivations, reactivations): they change which resources answer. */
  activity: number;
}

/** The stored inventory as the queries see it. `revision` changes with every applied change (for cached indexes). */
export interface InventoryData extends IngestState {
  catalogs: Record<string, CatalogRecord>;
  factsets: Record<string, FactsetRecord>;
  reports: StoredReport[];
  revision: { catalogs: number; reports: number; facts: number };
}

export const emptyIngestState = (): IngestState => ({
  nodes: Object.create(null),
  catalogTimes: Object.create(null),
  factTimes: Object.create(null),
  hashes: new Set(),
  activity: 0,
});

export const emptyInventory = (): InventoryData => ({
  ...emptyIngestState(),
  catalogs: Object.create(null),
  factsets: Object.create(null),
  reports: [],
  revision: { catalogs: 0, reports: 0, facts: 0 },
});

const stamp = (v: unknown, where: string): number => {
  if (typeof v !== 'number' || Number.isNaN(v)) throw new Error(`${where} is not a time`);
  return v;
};

/** Checks the structure of `inventory.json` and gives its certname-keyed parts null prototypes. */
export function decodeInventory(raw: unknown): InventoryData {
  const d = object(raw, 'the file');
  const nodes = dictionary(d.nodes, 'nodes', (v, w) => {
    const n = object(v, w);
    // -Infinity (a node known only by a deactivation) is written to JSON as null.
    const lastSeen = n.lastSeen === null ? Number.NEGATIVE_INFINITY : stamp(n.lastSeen, `${w}.lastSeen`);
    return { deactivated: n.deactivated === null ? null : stamp(n.deactivated, `${w}.deactivated`), lastSeen };
  });
  const catalogs = dictionary(d.catalogs, 'catalogs', (v, w) => {
    const c = object(v, w);
    stamp(c.producer_timestamp, `${w}.producer_timestamp`);
    array(c.resources, `${w}.resources`);
    return c as unknown as InventoryData['catalogs'][string];
  });
  const reports = array(d.reports, 'reports').map((r, i) => {
    const report = object(r, `reports[${i}]`);
    if (typeof report.hash !== 'string' || typeof report.certname !== 'string')
      throw new Error(`reports[${i}] has no hash or certname`);
    array(report.events, `reports[${i}].events`);
    return report as unknown as StoredReport;
  });
  const data = emptyInventory();
  data.nodes = nodes;
  for (const [certname, c] of Object.entries(catalogs))
    materialise(data, { kind: 'catalog', certname, at: c.producer_timestamp, catalog: c });
  for (const report of reports)
    materialise(data, { kind: 'report', certname: report.certname, at: report.producer_timestamp, report });
  return data;
}

// ---- field checks -------------------------------------------------------------------------------------------------

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function need(o: Obj, path: string, key: string): unknown {
  if (!(key in o) || o[key] === undefined) throw badRequest(`${path}.${key}: is required`);
  return o[key];
}
function str(o: Obj, path: string, key: string, nullable = false): string | null {
  const v = nullable ? (o[key] ?? null) : need(o, path, key);
  if (v === null && nullable) return null;
  if (typeof v !== 'string') throw badRequest(`${path}.${key}: expected a string${nullable ? ' or null' : ''}`);
  return v;
}
function time(o: Obj, path: string, key: string): number {
  const v = need(o, path, key);
  const ms = parseInstant(v);
  if (ms === undefined || typeof v !== 'string')
    throw badRequest(`${path}.${key}: ${quote(v)} is not an ISO-8601 timestamp`);
  return ms;
}
function bool(o: Obj, path: string, key: string, nullable = true): boolean | null {
  const v = o[key] ?? null;
  if (v === null && nullable) return null;
  if (typeof v !== 'boolean') throw badRequest(`${path}.${key}: expected a boolean`);
  return v;
}
function int(o: Obj, path: string, key: string, nullable: boolean): number | null {
  const v = nullable ? (o[key] ?? null) : need(o, path, key);
  if (v === null && nullable) return null;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw badRequest(`${path}.${key}: expected an integer`);
  return v;
}
function list(o: Obj, path: string, key: string, nullable = false): unknown[] | null {
  const v = o[key] ?? null;
  if (v === null && nullable) return null;
  if (!Array.isArray(v)) throw badRequest(`${path}.${key}: expected an array`);
  return v;
}
/**
 * Refuses fields a payload object does not have. PuppetDB drops unknown resource keys silently; nfv refuses them so
 * that a misspelt field is seen. Fields PuppetDB accepts and does not store are accepted and checked by type only
 * (see IGNORED_FIELDS).
 */
function onlyKnown(o: Obj, path: string, known: readonly string[]): void {
  for (const key of Object.keys(o)) {
    if (!known.includes(key))
      throw badRequest(
        `${path}.${quote(key).slice(1, -1)}: is not a field of this payload (known: ${known.join(', ')})`,
      );
  }
}

/**
 * Fields accepted and not stored, as in PuppetDB (corrective_change is Enterprise-only; `kind`, which Puppet 7 puts
 * on every catalog resource, PuppetDB 7 strips explicitly; a package inventory is kept by PuppetDB only for its
 * packages endpoints, which nfv does not have).
 */
export const IGNORED_FIELDS = {
  catalog: [],
  catalogResource: ['aliases', 'kind'],
  facts: ['package_inventory'],
  report: ['corrective_change'],
  reportResource: ['corrective_change'],
  event: ['corrective_change'],
} as const;

const CATALOG_FIELDS = [
  'certname',
  'version',
  'environment',
  'producer_timestamp',
  'resources',
  'edges',
  'transaction_uuid',
  'catalog_uuid',
  'code_id',
  'job_id',
  'producer',
  ...IGNORED_FIELDS.catalog,
];
const CATALOG_RESOURCE_FIELDS = [
  'type',
  'title',
  'exported',
  'file',
  'line',
  'tags',
  'parameters',
  ...IGNORED_FIELDS.catalogResource,
];
const REPORT_FIELDS = [
  'certname',
  'puppet_version',
  'agent_version',
  'report_format',
  'configuration_version',
  'start_time',
  'end_time',
  'producer_timestamp',
  'producer',
  'transaction_uuid',
  'catalog_uuid',
  'code_id',
  'job_id',
  'cached_catalog_status',
  'status',
  'noop',
  'noop_pending',
  'environment',
  'type',
  'metrics',
  'logs',
  'resources',
  ...IGNORED_FIELDS.report,
];
const REPORT_RESOURCE_FIELDS = [
  'resource_type',
  'resource_title',
  'timestamp',
  'skipped',
  'file',
  'line',
  'containment_path',
  'events',
  ...IGNORED_FIELDS.reportResource,
];
const EVENT_FIELDS = [
  'status',
  'timestamp',
  'property',
  'name',
  'new_value',
  'old_value',
  'message',
  ...IGNORED_FIELDS.event,
];

/** A list of strings, or null when `nullable`. */
function strings(o: Obj, path: string, key: string, nullable: boolean): string[] | null {
  const v = list(o, path, key, nullable);
  v?.forEach((x, k) => {
    if (typeof x !== 'string') throw badRequest(`${path}.${key}[${k}]: expected a string`);
  });
  return v as string[] | null;
}

/** The edges of a catalog, checked by shape. */
function edgesOf(o: Obj, path: string): EdgeRow[] {
  return (list(o, path, 'edges', true) ?? []).map((e, k) => {
    const ep = `${path}.edges[${k}]`;
    if (!isObj(e)) throw badRequest(`${ep}: expected an edge object`);
    onlyKnown(e, ep, ['source', 'target', 'relationship']);
    for (const end of ['source', 'target']) {
      const r = e[end];
      if (!isObj(r)) throw badRequest(`${ep}.${end}: expected {type, title}`);
      onlyKnown(r, `${ep}.${end}`, ['type', 'title']);
      str(r, `${ep}.${end}`, 'type');
      str(r, `${ep}.${end}`, 'title');
    }
    const relationship = str(e, ep, 'relationship')!;
    if (!RELATIONSHIPS.includes(relationship))
      throw badRequest(`${ep}.relationship: ${quote(relationship)} is not one of ${RELATIONSHIPS.join(', ')}`);
    const [source, target] = [e.source as Obj, e.target as Obj];
    return {
      source_type: source.type as string,
      source_title: source.title as string,
      target_type: target.type as string,
      target_title: target.title as string,
      relationship,
    };
  });
}

/** The relationships of catalog edges (PuppetDB's catalog schema). */
const RELATIONSHIPS = ['contains', 'before', 'required-by', 'notifies', 'subscription-of'];

/** A boolean or null that is checked and not stored. */
function ignoredBool(o: Obj, path: string, key: string): void {
  bool(o, path, key);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
function uuid(o: Obj, path: string, key: string): string | null {
  const v = str(o, path, key, true);
  if (v !== null && !UUID.test(v)) throw badRequest(`${path}.${key}: ${quote(v)} is not a UUID`);
  return v?.toLowerCase() ?? null;
}
/** Tags: no upper-case letter; a letter, digit or _ first; then also : . - (PuppetDB's tag pattern, Unicode-aware). */
const TAG = /^(?!.*\p{Lu})[\p{L}\p{N}_][\p{L}\p{M}\p{N}_:.-]*$/u;

function touch(data: IngestState, certname: string, at: number): void {
  const node = (data.nodes[certname] ??= { deactivated: null, lastSeen: at });
  node.lastSeen = Math.max(node.lastSeen, at);
  // Anything newer than the deactivation reactivates the node.
  if (node.deactivated !== null && at > node.deactivated) {
    node.deactivated = null;
    data.activity++;
  }
}

/** A checked command in its stored form, before the staleness rules decide whether it applies. */
export type Prepared =
  | { kind: 'catalog'; certname: string; at: number; catalog: CatalogRecord }
  | { kind: 'facts'; certname: string; at: number; factset: FactsetRecord }
  | { kind: 'report'; certname: string; at: number; report: StoredReport }
  | { kind: 'deactivate'; certname: string; at: number };

/** Checks a replace catalog v9 payload and gives its stored form. */
function prepareCatalog(payload: unknown, receivedAt: number): Prepared {
  if (!isObj(payload)) throw badRequest('payload: expected a catalog object');
  const p = 'payload';
  onlyKnown(payload, p, CATALOG_FIELDS);
  const certname = str(payload, p, 'certname')!;
  const at = time(payload, p, 'producer_timestamp');
  const environment = str(payload, p, 'environment', true);
  const version = str(payload, p, 'version', true);
  const resources = list(payload, p, 'resources')!;
  const transactionUuid = uuid(payload, p, 'transaction_uuid');
  const catalogUuid = uuid(payload, p, 'catalog_uuid');
  const [codeId, jobId, producer] = ['code_id', 'job_id', 'producer'].map((k) => str(payload, p, k, true));
  const edges = edgesOf(payload, p);
  const rows = new Map<string, ResourceRow>();
  resources.forEach((r, k) => {
    const rp = `${p}.resources[${k}]`;
    if (!isObj(r)) throw badRequest(`${rp}: expected a resource object`);
    onlyKnown(r, rp, CATALOG_RESOURCE_FIELDS);
    const type = str(r, rp, 'type')!;
    const title = str(r, rp, 'title')!;
    const tags = list(r, rp, 'tags')!;
    strings(r, rp, 'aliases', true);
    str(r, rp, 'kind', true);
    tags.forEach((t, j) => {
      if (typeof t !== 'string' || !TAG.test(t)) throw badRequest(`${rp}.tags[${j}]: ${quote(t)} is not a valid tag`);
    });
    const parameters = r.parameters ?? {};
    if (!isObj(parameters)) throw badRequest(`${rp}.parameters: expected an object`);
    const exported = r.exported ?? false;
    if (typeof exported !== 'boolean') throw badRequest(`${rp}.exported: expected a boolean`);
    rows.set(canonicalJson([type, title]), {
      certname,
      resource: sha1(canonicalJson([type, title, parameters])),
      type,
      title,
      exported,
      tags: [...new Set(tags as string[])].sort(),
      file: str(r, rp, 'file', true),
      line: int(r, rp, 'line', true),
      environment,
      parameters,
    });
  });
  // As PuppetDB's validate-edges: an edge names resources of the catalog (clients look its ends up there).
  edges.forEach((e, k) => {
    for (const [end, type, title] of [
      ['source', e.source_type, e.source_title],
      ['target', e.target_type, e.target_title],
    ] as const)
      if (!rows.has(canonicalJson([type, title])))
        throw badRequest(`${p}.edges[${k}].${end}: ${quote(`${type}[${title}]`)} is not a resource of this catalog`);
  });
  const stored = [...rows.values()];
  const edgeKeys = (e: EdgeRow) => [e.source_type, e.source_title, e.target_type, e.target_title, e.relationship];
  return {
    kind: 'catalog',
    certname,
    at,
    catalog: {
      producer_timestamp: at,
      environment,
      version,
      resources: stored,
      timestamp: receivedAt,
      // nfv's own content hash (PuppetDB's catalog hash is not reproduced): what the catalog says, in a fixed order.
      hash: sha1(
        canonicalJson([
          certname,
          version,
          environment,
          transactionUuid,
          stored.map((r) => [r.type, r.title, r.exported, r.file, r.line, r.tags, r.parameters]),
          edges.map(edgeKeys),
        ]),
      ),
      transaction_uuid: transactionUuid,
      catalog_uuid: catalogUuid,
      code_id: codeId!,
      job_id: jobId!,
      producer: producer!,
      edges,
    },
  };
}

const FACTS_FIELDS = ['certname', 'environment', 'producer_timestamp', 'producer', 'values', ...IGNORED_FIELDS.facts];

/** Checks a replace facts v4 or v5 payload (v4 has no producer) and gives its stored form. */
function prepareFacts(payload: unknown, version: number, receivedAt: number): Prepared {
  if (!isObj(payload)) throw badRequest('payload: expected a facts object {certname, environment, values, ...}');
  const p = 'payload';
  onlyKnown(payload, p, version === 4 ? FACTS_FIELDS.filter((k) => k !== 'producer') : FACTS_FIELDS);
  const certname = str(payload, p, 'certname')!;
  const environment = str(payload, p, 'environment', true);
  const at = time(payload, p, 'producer_timestamp');
  const producer = version === 4 ? null : str(payload, p, 'producer', true);
  const values = need(payload, p, 'values');
  if (!isObj(values)) throw badRequest(`${p}.values: expected an object of facts`);
  // PostgreSQL's jsonb cannot hold U+0000: refused on both backends alike rather than failing on one.
  if (JSON.stringify(values).includes('\\u0000'))
    throw badRequest(`${p}.values: a fact holds the character U+0000, which nfv cannot store`);
  list(payload, p, 'package_inventory', true);
  return {
    kind: 'facts',
    certname,
    at,
    factset: {
      environment,
      producer_timestamp: at,
      producer,
      timestamp: receivedAt,
      // nfv's own content hash (PuppetDB's factset hash is not reproduced).
      hash: sha1(canonicalJson({ certname, environment, facts: values })),
      values,
    },
  };
}

/** The report hash of PuppetDB 7+: SHA-1 of eight header fields, timestamps in UTC with milliseconds. */
export function reportHash(r: {
  certname: string;
  configuration_version: string;
  end_time: number;
  producer_timestamp: number;
  puppet_version: string;
  report_format: number;
  start_time: number;
  transaction_uuid: string | null;
}): string {
  return sha1(
    canonicalJson({
      certname: r.certname,
      configuration_version: r.configuration_version,
      end_time: utc(r.end_time),
      producer_timestamp: utc(r.producer_timestamp),
      puppet_version: r.puppet_version,
      report_format: r.report_format,
      start_time: utc(r.start_time),
      transaction_uuid: r.transaction_uuid,
    }),
  );
}

const containingClass = (path: string[] | null) =>
  [...(path ?? [])].reverse().find((s) => s !== '' && !s.includes('[')) ?? null;

function eventsOf(resources: unknown[], p: string): EventRow[] {
  const out = new Map<string, EventRow>();
  resources.forEach((r, k) => {
    const rp = `${p}.resources[${k}]`;
    if (!isObj(r)) throw badRequest(`${rp}: expected a resource object`);
    onlyKnown(r, rp, REPORT_RESOURCE_FIELDS);
    const base = {
      resource_type: str(r, rp, 'resource_type')!,
      resource_title: str(r, rp, 'resource_title')!,
      file: str(r, rp, 'file', true),
      line: int(r, rp, 'line', true),
      containment_path: strings(r, rp, 'containment_path', true),
    };
    const stamp = time(r, rp, 'timestamp');
    ignoredBool(r, rp, 'corrective_change');
    const events: EventRow[] = [];
    const skipped = bool(r, rp, 'skipped') === true;
    const listed = list(r, rp, 'events', true) ?? [];
    if (skipped) {
      events.push({
        ...base,
        status: 'skipped',
        timestamp: stamp,
        property: null,
        name: null,
        new_value: null,
        old_value: null,
        message: null,
        containing_class: containingClass(base.containment_path),
      });
    } else {
      listed.forEach((e, j) => {
        const ep = `${rp}.events[${j}]`;
        if (!isObj(e)) throw badRequest(`${ep}: expected an event object`);
        onlyKnown(e, ep, EVENT_FIELDS);
        ignoredBool(e, ep, 'corrective_change');
        const status = str(e, ep, 'status', true);
        if (status !== null && !['success', 'failure', 'noop', 'skipped'].includes(status))
          throw badRequest(`${ep}.status: ${quote(status)} is not success, failure, noop or skipped`);
        events.push({
          ...base,
          status,
          timestamp: time(e, ep, 'timestamp'),
          property: str(e, ep, 'property', true),
          name: str(e, ep, 'name', true),
          new_value: e.new_value ?? null,
          old_value: e.old_value ?? null,
          message: str(e, ep, 'message', true),
          containing_class: containingClass(base.containment_path),
        });
      });
    }
    for (const ev of events) out.set(canonicalJson({ ...ev }), ev);
  });
  return [...out.values()];
}

/** Checks a store report v8 payload and gives its stored form (with PuppetDB's hash). */
function prepareReport(payload: unknown, receivedAt: number): Prepared {
  if (!isObj(payload)) throw badRequest('payload: expected a report object');
  const p = 'payload';
  onlyKnown(payload, p, REPORT_FIELDS);
  ignoredBool(payload, p, 'corrective_change');
  const header = {
    certname: str(payload, p, 'certname')!,
    puppet_version: str({ puppet_version: payload.puppet_version ?? payload.agent_version }, p, 'puppet_version')!,
    report_format: int(payload, p, 'report_format', false)!,
    configuration_version: str(payload, p, 'configuration_version')!,
    start_time: time(payload, p, 'start_time'),
    end_time: time(payload, p, 'end_time'),
    producer_timestamp: time(payload, p, 'producer_timestamp'),
    transaction_uuid: uuid(payload, p, 'transaction_uuid'),
  };
  const type = payload.type ?? 'agent';
  if (type !== 'agent' && type !== 'plan') throw badRequest(`${p}.type: ${quote(type)} is not agent or plan`);
  const report: StoredReport = {
    hash: reportHash(header),
    ...header,
    receive_time: receivedAt,
    producer: str(payload, p, 'producer', true),
    catalog_uuid: uuid(payload, p, 'catalog_uuid'),
    code_id: str(payload, p, 'code_id', true),
    job_id: str(payload, p, 'job_id', true),
    cached_catalog_status: str(payload, p, 'cached_catalog_status', true),
    status: str(payload, p, 'status', true),
    noop: bool(payload, p, 'noop'),
    noop_pending: bool(payload, p, 'noop_pending'),
    environment: str(payload, p, 'environment', true),
    type,
    events: eventsOf(list(payload, p, 'resources') ?? [], p),
    metrics: list(payload, p, 'metrics', true),
    logs: list(payload, p, 'logs', true),
  };
  return { kind: 'report', certname: report.certname, at: report.producer_timestamp, report };
}

/** Checks a deactivate node v3 payload. */
function prepareDeactivation(payload: unknown): Prepared {
  if (!isObj(payload)) throw badRequest('payload: expected {certname, producer_timestamp}');
  onlyKnown(payload, 'payload', ['certname', 'producer_timestamp']);
  return {
    kind: 'deactivate',
    certname: str(payload, 'payload', 'certname')!,
    at: time(payload, 'payload', 'producer_timestamp'),
  };
}

/** What the staleness rules look at in a command: its kind, node, time and, for a report, its hash. */
export interface Fact {
  kind: Prepared['kind'];
  certname: string;
  at: number;
  hash?: string;
}

export const factOf = (p: Prepared): Fact => ({
  kind: p.kind,
  certname: p.certname,
  at: p.at,
  hash: p.kind === 'report' ? p.report.hash : undefined,
});

/**
 * The staleness rules: whether a prepared command applies, given what is stored; when it does, `state` is updated.
 * An older catalog (or older facts) is ignored, a report whose hash is stored is ignored, a deactivation older than
 * the node's latest data is ignored; anything newer than a deactivation reactivates the node.
 */
export function decide(state: IngestState, p: Fact): boolean {
  switch (p.kind) {
    case 'catalog':
    case 'facts': {
      const times = p.kind === 'catalog' ? state.catalogTimes : state.factTimes;
      const current = times[p.certname];
      if (current !== undefined && p.at < current) return false;
      times[p.certname] = p.at;
      touch(state, p.certname, p.at);
      return true;
    }
    case 'report':
      if (state.hashes.has(p.hash!)) return false;
      state.hashes.add(p.hash!);
      touch(state, p.certname, p.at);
      return true;
    case 'deactivate': {
      const node = (state.nodes[p.certname] ??= { deactivated: null, lastSeen: Number.NEGATIVE_INFINITY });
      if (node.lastSeen > p.at) return false;
      node.deactivated = p.at;
      state.activity++;
      return true;
    }
  }
}

/** Adds an applied command's data to the stored inventory (its state was updated by `decide`). */
export function materialise(data: InventoryData, p: Prepared): void {
  if (p.kind === 'catalog') {
    data.catalogs[p.certname] = p.catalog;
    data.catalogTimes[p.certname] = p.at;
    data.revision.catalogs++;
  } else if (p.kind === 'facts') {
    data.factsets[p.certname] = p.factset;
    data.factTimes[p.certname] = p.at;
    data.revision.facts++;
  } else if (p.kind === 'report') {
    data.reports.push(p.report);
    data.hashes.add(p.report.hash);
    data.revision.reports++;
  }
}

export interface Command {
  command: string;
  version: number;
  payload: unknown;
  /** When the command was received; defaults to now (PuppetDB's `received`). */
  received?: string;
}

/** What a command answers: its name, whether it applied, and a report's hash. */
/** What a command did: which command, whether it changed the inventory, and a report's hash. */
export interface CommandOutcome {
  command: string;
  applied: boolean;
  hash?: string;
}

export function outcomeOf(p: Prepared, applied: boolean): CommandOutcome {
  const command = {
    catalog: 'replace catalog',
    facts: 'replace facts',
    report: 'store report',
    deactivate: 'deactivate node',
  }[p.kind];
  return p.kind === 'report' ? { command, applied, hash: p.report.hash } : { command, applied };
}

/** Applies one command to a whole in-memory inventory; answers what happened. */
export function applyCommand(data: InventoryData, body: unknown, now: number): CommandOutcome {
  const p = prepareCommand(body, now);
  const applied = decide(data, factOf(p));
  if (applied) materialise(data, p);
  return outcomeOf(p, applied);
}

/** Checks a command `{command, version, payload, received?}` and gives its stored form. */
export function prepareCommand(body: unknown, now: number): Prepared {
  if (!isObj(body)) throw badRequest('expected a command object {command, version, payload}');
  onlyKnown(body, 'command', ['command', 'version', 'payload', 'received']);
  if (typeof need(body, 'command', 'command') !== 'string') throw badRequest('command.command: expected a string');
  const name = String(body.command).replace(/[_-]/g, ' ').toLowerCase();
  const version = need(body, 'command', 'version');
  const received = body.received === undefined ? now : parseInstant(body.received);
  if (received === undefined) throw badRequest(`command.received: ${quote(body.received)} is not a timestamp`);
  const expect = (v: number) => {
    if (version !== v) throw badRequest(`command.version: ${quote(version)} is not supported for ${name} (use ${v})`);
  };
  switch (name) {
    case 'replace catalog':
      expect(9);
      return prepareCatalog(body.payload, received);
    case 'replace facts':
      if (version !== 4 && version !== 5)
        throw badRequest(`command.version: ${quote(version)} is not supported for ${name} (use 5 or 4)`);
      return prepareFacts(body.payload, version, received);
    case 'store report':
      expect(8);
      return prepareReport(body.payload, received);
    case 'deactivate node':
      expect(3);
      return prepareDeactivation(body.payload);
    default:
      throw badRequest(
        `command.command: ${quote(body.command)} is not replace catalog, replace facts, store report or ` +
          'deactivate node',
      );
  }
}

/** Checks each command of a batch on its own: its stored form, or the error that refuses it. */
export function prepareEach(commands: unknown[], now: number): (Prepared | NfvError)[] {
  return commands.map((c) => {
    try {
      return prepareCommand(c, now);
    } catch (e) {
      if (e instanceof NfvError) return e;
      throw e;
    }
  });
}

// The single-command forms, as the tests and the conformance dataset use them on a whole in-memory inventory.

/** Replace catalog v9. Returns false when the catalog is older than the stored one (ignored as stale). */
export function replaceCatalog(data: InventoryData, payload: unknown, receivedAt = Date.now()): boolean {
  return applyPrepared(data, prepareCatalog(payload, receivedAt));
}

/** Replace facts v5 (or v4). Returns false when the facts are older than the stored ones (ignored as stale). */
export function replaceFacts(data: InventoryData, payload: unknown, receivedAt = Date.now(), version = 5): boolean {
  return applyPrepared(data, prepareFacts(payload, version, receivedAt));
}

/** Store report v8. Returns false when a report with the same hash is already stored. */
export function storeReport(
  data: InventoryData,
  payload: unknown,
  receivedAt: number,
): { stored: boolean; hash: string } {
  const p = prepareReport(payload, receivedAt) as Extract<Prepared, { kind: 'report' }>;
  return { stored: applyPrepared(data, p), hash: p.report.hash };
}

/** Deactivate node v3; ignored as stale when the node sent something newer. */
export function deactivateNode(data: InventoryData, payload: unknown): boolean {
  return applyPrepared(data, prepareDeactivation(payload));
}

function applyPrepared(data: InventoryData, p: Prepared): boolean {
  const applied = decide(data, factOf(p));
  if (applied) materialise(data, p);
  return applied;
}
