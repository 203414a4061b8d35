/**
 * The queryable entities, one declaration each, which both backends and both URL spaces (`/v4`, `/pdb/query/v4`)
 * use: its rows on the folder backend (built once per stored inventory and reused while it is unchanged), its rows
 * on PostgreSQL (a source with one column per field, and the columns an answer reads), its fields with their kinds,
 * which of them order, whether it answers only active nodes by default, and the record a row is answered as.
 */
import { factLeaves, factRows } from './facts.js';
import type { CatalogRecord, EdgeRow, EventRow, InventoryData, ResourceRow, StoredReport } from './ingest.js';
import { pgJsonTime, utc } from './values.js';

/**
 * How a field compares. `value` is any JSON value (a fact's), compared as PuppetDB compares JSON (equality, numbers
 * ordered, strings matched); `path` is a fact path (equality of the whole path, `~>` per component).
 */
export type Kind =
  | 'string'
  | 'number'
  | 'timestamp'
  | 'boolean'
  | 'array'
  | 'json'
  | 'tag'
  | 'parameters'
  | 'node_state'
  | 'latest'
  | 'value'
  | 'path';

export interface Field {
  kind: Kind;
  get: (row: any) => unknown;
  /** Fields that only filter (tag, latest_report?) are neither extracted nor answered. */
  filterOnly?: boolean;
  /** Not usable in queries (report events, metrics, logs). */
  answerOnly?: boolean;
}

export interface Entity {
  /** PuppetDB's name in queries (`fact_contents`). */
  name: string;
  /** Its URL (`/v4/fact-contents`, `/pdb/query/v4/fact-contents`) and what that answers. */
  route: { path: string; summary: string };
  fields: Record<string, Field>;
  /** Fields accepted in order_by. */
  orderable: string[];
  /** Only rows of active nodes unless the query mentions node_state (PuppetDB's entity endpoints). */
  activeOnly: boolean;
  /** Dotted fields (`facts.os.family`): prefix -> the JSON field they descend into. */
  dotted?: Record<string, string>;
  rows: (index: Index) => any[];
  record: (row: any) => Record<string, unknown>;
  /** The record answers each of its fields as the field's getter reads it (extracts need not build records). */
  answersAsRead?: boolean;
  sql: {
    /** A table or subquery with a column per field (as named, or as `columns` below says) and `ord`: row order. */
    source: string;
    /** The columns an answer reads (alias x), giving the item `record` takes (timestamps as float8). */
    select: string;
    /** Fields whose column is named otherwise. */
    columns?: Record<string, string>;
  };
}

export interface ResourceItem extends ResourceRow {
  active: boolean;
}
export interface ReportItem extends StoredReport {
  latest: boolean;
}
export interface EventItem extends EventRow {
  report: ReportItem;
}

export interface NodeItem {
  certname: string;
  deactivated: number | null;
  expired: number | null;
  catalog_timestamp: number | null;
  facts_timestamp: number | null;
  report_timestamp: number | null;
  catalog_environment: string | null;
  facts_environment: string | null;
  report_environment: string | null;
  latest_report_status: string | null;
  latest_report_hash: string | null;
  latest_report_noop: boolean | null;
  latest_report_noop_pending: boolean | null;
  latest_report_job_id: string | null;
  cached_catalog_status: string | null;
}
export interface FactItem {
  certname: string;
  environment: string | null;
  name: string;
  value: unknown;
}
export interface FactsetItem {
  certname: string;
  environment: string | null;
  timestamp: number;
  producer_timestamp: number;
  producer: string | null;
  hash: string;
  values: Record<string, unknown>;
}
export interface FactPathItem {
  path: (string | number)[];
  pathKey: string;
  name: string;
  type: string;
}
export interface FactContentItem extends FactPathItem {
  certname: string;
  environment: string | null;
  value: unknown;
}
export interface InventoryItem {
  certname: string;
  timestamp: number;
  environment: string | null;
  facts: Record<string, unknown>;
  trusted: unknown;
}
export interface CatalogItem {
  certname: string;
  version: string | null;
  environment: string | null;
  hash: string | null;
  transaction_uuid: string | null;
  catalog_uuid: string | null;
  code_id: string | null;
  job_id: string | null;
  producer: string | null;
  producer_timestamp: number;
  resources: ResourceRow[];
  edges: EdgeRow[];
}
export interface EdgeItem extends EdgeRow {
  certname: string;
}

export interface Index {
  resources: ResourceItem[];
  /** Resources of active nodes: what resource queries see unless they ask for node_state. */
  activeResources: ResourceItem[];
  /** Certnames of deactivated nodes: node_state of the other entities. */
  inactiveNodes: Set<string>;
  reports: ReportItem[];
  events: EventItem[];
  byHash: Map<string, ReportItem>;
  catalogs: CatalogItem[];
  edges: EdgeItem[];
  nodes: NodeItem[];
  facts: FactItem[];
  factNames: { name: string }[];
  factsets: FactsetItem[];
  factPaths: FactPathItem[];
  factContents: FactContentItem[];
  inventory: InventoryItem[];
  environments: { name: string }[];
  producers: { name: string }[];
}

/** What each part of the index is built from: it is rebuilt only when one of these changed. */
const PART_KEYS: Record<string, (d: InventoryData) => string> = {
  // Node activity changes which resources answer.
  resources: (d) => `${d.revision.catalogs}:${d.activity}`,
  edges: (d) => `${d.revision.catalogs}`,
  reports: (d) => `${d.revision.reports}`,
  facts: (d) => `${d.revision.facts}`,
  nodes: (d) => `${d.revision.catalogs}:${d.revision.facts}:${d.revision.reports}:${d.activity}`,
};

/** Index parts per stored inventory, each with the key it was built for. */
const parts = new WeakMap<InventoryData, Map<string, { key: string; value: unknown }>>();

function part<T>(data: InventoryData, name: keyof typeof PART_KEYS, build: (d: InventoryData) => T): T {
  let mine = parts.get(data);
  if (!mine) parts.set(data, (mine = new Map()));
  const key = PART_KEYS[name]!(data);
  const hit = mine.get(name);
  if (hit?.key === key) return hit.value as T;
  const value = build(data);
  mine.set(name, { key, value });
  return value;
}

/** The rows of one catalog, kept per catalog object and activity: a new catalog rebuilds only its own node's rows. */
const catalogRows = new WeakMap<CatalogRecord, { active: boolean; rows: ResourceItem[] }>();

function rowsOf(catalog: CatalogRecord, active: boolean): ResourceItem[] {
  const hit = catalogRows.get(catalog);
  if (hit?.active === active) return hit.rows;
  // Rows are built as object literals with a fixed shape: spreading parsed JSON objects gives V8 dictionary-mode
  // objects, which made a scan of 100,000 rows 30 times slower.
  const rows = catalog.resources.map((r) => ({
    certname: r.certname,
    resource: r.resource,
    type: r.type,
    title: r.title,
    exported: r.exported,
    tags: r.tags,
    file: r.file,
    line: r.line,
    environment: r.environment,
    parameters: r.parameters,
    active,
  }));
  catalogRows.set(catalog, { active, rows });
  return rows;
}

/**
 * The edge rows of one catalog, kept per catalog object: a new catalog rebuilds only its own node's edges. Building
 * every catalog's edges again at each catalog stored (spreading parsed JSON) made the first query after a write about
 * 20 ms slower at 100,000 resources.
 */
const catalogEdges = new WeakMap<CatalogRecord, EdgeItem[]>();

function edgesOf(certname: string, catalog: CatalogRecord): EdgeItem[] {
  let rows = catalogEdges.get(catalog);
  if (!rows) {
    rows = (catalog.edges ?? []).map((e) => ({
      certname,
      source_type: e.source_type,
      source_title: e.source_title,
      target_type: e.target_type,
      target_title: e.target_title,
      relationship: e.relationship,
    }));
    catalogEdges.set(catalog, rows);
  }
  return rows;
}

/** Every catalog's edge rows, built when edges are asked for. */
function edgePart(data: InventoryData): EdgeItem[] {
  const edges: EdgeItem[] = [];
  for (const [certname, catalog] of Object.entries(data.catalogs))
    for (const e of edgesOf(certname, catalog)) edges.push(e);
  return edges;
}

/** Resource rows with their node's activity, the deactivated nodes and the catalogs. */
function resourcePart(data: InventoryData) {
  const resources: ResourceItem[] = [];
  const activeResources: ResourceItem[] = [];
  for (const [certname, catalog] of Object.entries(data.catalogs)) {
    const active = (data.nodes[certname]?.deactivated ?? null) === null;
    const rows = rowsOf(catalog, active);
    for (const r of rows) resources.push(r);
    if (active) for (const r of rows) activeResources.push(r);
  }
  const inactiveNodes = new Set<string>();
  for (const [certname, node] of Object.entries(data.nodes)) if (node.deactivated !== null) inactiveNodes.add(certname);
  const catalogs = Object.entries(data.catalogs).map(([certname, c]): CatalogItem => ({
    certname,
    version: c.version,
    environment: c.environment,
    hash: c.hash ?? null,
    transaction_uuid: c.transaction_uuid ?? null,
    catalog_uuid: c.catalog_uuid ?? null,
    code_id: c.code_id ?? null,
    job_id: c.job_id ?? null,
    producer: c.producer ?? null,
    producer_timestamp: c.producer_timestamp,
    resources: c.resources,
    edges: c.edges ?? [],
  }));
  return { resources, activeResources, inactiveNodes, catalogs };
}

/** Report rows with their latest flag, event rows with their report. */
function reportPart(data: InventoryData) {
  const latest = new Map<string, StoredReport>();
  for (const r of data.reports) {
    if (r.type === 'plan') continue;
    const cur = latest.get(r.certname);
    if (!cur || r.producer_timestamp > cur.producer_timestamp) latest.set(r.certname, r);
  }
  const reports: ReportItem[] = data.reports.map((r) => ({
    hash: r.hash,
    certname: r.certname,
    puppet_version: r.puppet_version,
    report_format: r.report_format,
    configuration_version: r.configuration_version,
    start_time: r.start_time,
    end_time: r.end_time,
    producer_timestamp: r.producer_timestamp,
    receive_time: r.receive_time,
    producer: r.producer,
    transaction_uuid: r.transaction_uuid,
    catalog_uuid: r.catalog_uuid,
    code_id: r.code_id,
    job_id: r.job_id,
    cached_catalog_status: r.cached_catalog_status,
    status: r.status,
    noop: r.noop,
    noop_pending: r.noop_pending,
    environment: r.environment,
    type: r.type,
    events: r.events,
    metrics: r.metrics,
    logs: r.logs,
    latest: latest.get(r.certname) === r,
  }));
  const events: EventItem[] = reports.flatMap((report) =>
    report.events.map((e) => ({
      status: e.status,
      timestamp: e.timestamp,
      resource_type: e.resource_type,
      resource_title: e.resource_title,
      property: e.property,
      name: e.name,
      new_value: e.new_value,
      old_value: e.old_value,
      message: e.message,
      file: e.file,
      line: e.line,
      containment_path: e.containment_path,
      containing_class: e.containing_class,
      report,
    })),
  );
  return { reports, events, byHash: new Map(reports.map((r) => [r.hash, r])) };
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
/** Distinct non-null names, sorted, as rows {name}. */
const names = (values: (string | null)[]) =>
  [...new Set(values.filter((v): v is string => v !== null))].sort(byText).map((name) => ({ name }));

/** The fact entities' rows: per node (by certname) its factset, facts and leaves; fact names and paths. */
function factPart(data: InventoryData) {
  const certnames = Object.keys(data.factsets).sort(byText);
  const factsets: FactsetItem[] = certnames.map((certname) => {
    const f = data.factsets[certname]!;
    return {
      certname,
      environment: f.environment,
      timestamp: f.timestamp,
      producer_timestamp: f.producer_timestamp,
      producer: f.producer,
      hash: f.hash,
      values: f.values,
    };
  });
  const facts = factsets.flatMap((s) =>
    factRows(s.values).map((f): FactItem => ({ certname: s.certname, environment: s.environment, ...f })),
  );
  const factContents = factsets.flatMap((s) =>
    factLeaves(s.values).map((l): FactContentItem => ({
      certname: s.certname,
      environment: s.environment,
      path: l.path,
      pathKey: l.pathKey,
      name: l.name,
      value: l.value,
      type: l.type,
    })),
  );
  const paths = new Map<string, FactPathItem>();
  for (const c of factContents) {
    const key = `${c.pathKey}\u0000${c.type}`;
    if (!paths.has(key)) paths.set(key, { path: c.path, pathKey: c.pathKey, name: c.name, type: c.type });
  }
  const factPaths = [...paths.values()].sort((a, b) => byText(a.pathKey, b.pathKey) || byText(a.type, b.type));
  const inventory = factsets.map((s): InventoryItem => ({
    certname: s.certname,
    timestamp: s.timestamp,
    environment: s.environment,
    facts: s.values,
    trusted: Object.hasOwn(s.values, 'trusted') ? s.values.trusted : null,
  }));
  return { factsets, facts, factNames: names(facts.map((f) => f.name)), factContents, factPaths, inventory };
}

/** Every node named by a command, by certname, with what its catalog, facts and latest report say. */
function nodePart(data: InventoryData, index: Index) {
  const latest = new Map<string, ReportItem>();
  for (const r of index.reports) if (r.latest) latest.set(r.certname, r);
  const catalogs = new Map(index.catalogs.map((c) => [c.certname, c]));
  const nodes = Object.keys(data.nodes)
    .sort(byText)
    .map((certname): NodeItem => {
      const c = catalogs.has(certname) ? data.catalogs[certname]! : undefined;
      const f = data.factsets[certname];
      const r = latest.get(certname);
      return {
        certname,
        deactivated: data.nodes[certname]!.deactivated,
        expired: null,
        catalog_timestamp: c ? (c.timestamp ?? c.producer_timestamp) : null,
        facts_timestamp: f?.timestamp ?? null,
        report_timestamp: r?.end_time ?? null,
        catalog_environment: c ? c.environment : null,
        facts_environment: f ? f.environment : null,
        report_environment: r ? r.environment : null,
        latest_report_status: r ? r.status : null,
        latest_report_hash: r?.hash ?? null,
        latest_report_noop: r ? r.noop : null,
        latest_report_noop_pending: r ? r.noop_pending : null,
        latest_report_job_id: r ? r.job_id : null,
        cached_catalog_status: r ? r.cached_catalog_status : null,
      };
    });
  const everything = [...index.catalogs, ...index.factsets, ...index.reports];
  return {
    nodes,
    environments: names(everything.map((x) => x.environment)),
    producers: names(everything.map((x) => x.producer)),
  };
}

/**
 * Rows of every entity for the stored inventory, each part built on first use and kept while what it is built from
 * is unchanged (so a resource query never builds event or fact rows).
 */
export function indexOf(data: InventoryData): Index {
  const resources = () => part(data, 'resources', resourcePart);
  const edges = () => part(data, 'edges', edgePart);
  const reports = () => part(data, 'reports', reportPart);
  const facts = () => part(data, 'facts', factPart);
  const nodes = () => part(data, 'nodes', (d) => nodePart(d, index));
  const index: Index = {
    get resources() {
      return resources().resources;
    },
    get activeResources() {
      return resources().activeResources;
    },
    get inactiveNodes() {
      return resources().inactiveNodes;
    },
    get catalogs() {
      return resources().catalogs;
    },
    get edges() {
      return edges();
    },
    get reports() {
      return reports().reports;
    },
    get events() {
      return reports().events;
    },
    get byHash() {
      return reports().byHash;
    },
    get facts() {
      return facts().facts;
    },
    get factNames() {
      return facts().factNames;
    },
    get factsets() {
      return facts().factsets;
    },
    get factPaths() {
      return facts().factPaths;
    },
    get factContents() {
      return facts().factContents;
    },
    get inventory() {
      return facts().inventory;
    },
    get nodes() {
      return nodes().nodes;
    },
    get environments() {
      return nodes().environments;
    },
    get producers() {
      return nodes().producers;
    },
  };
  return index;
}

/** A lookup table that query text indexes: no prototype, so `constructor` or `__proto__` find nothing. */
export const lookup = <T>(entries: Record<string, T>): Record<string, T> =>
  Object.assign(Object.create(null) as Record<string, T>, entries);

const f = (kind: Kind, get: (row: any) => unknown, more: Partial<Field> = {}): Field => ({ kind, get, ...more });
/**
 * A getter for one property. Generated so that V8 sees a fixed property name (a monomorphic load) instead of a
 * keyed load through a shared closure, which halves the cost of scanning rows.
 */
const getter = (key: string) => new Function('row', `return row[${JSON.stringify(key)}];`) as (row: any) => unknown;
const prop = (kind: Kind, key: string, more: Partial<Field> = {}) => f(kind, getter(key), more);

export const resources: Entity = {
  name: 'resources',
  route: { path: 'resources', summary: 'Resources of active nodes' },
  fields: lookup({
    certname: prop('string', 'certname'),
    environment: prop('string', 'environment'),
    resource: prop('string', 'resource'),
    type: prop('string', 'type'),
    title: prop('string', 'title'),
    exported: prop('boolean', 'exported'),
    file: prop('string', 'file'),
    line: prop('number', 'line'),
    tag: f('tag', (row) => row.tags, { filterOnly: true }),
    tags: prop('array', 'tags'),
    parameters: prop('parameters', 'parameters'),
  }),
  orderable: [
    'certname',
    'environment',
    'resource',
    'type',
    'title',
    'tag',
    'tags',
    'exported',
    'file',
    'line',
    'parameters',
  ],
  activeOnly: true,
  dotted: { parameters: 'parameters' },
  rows: (index) => index.resources,
  sql: {
    source: 'nfv_inv_resources',
    select: `x.certname, x.resource, x.type, x.title, x.exported, x.tags, x.file, x.line, x.environment, x.parameters,
      x.active`,
    columns: { tag: 'tags', parameters: 'params' },
  },
  record: (r: ResourceItem) => ({
    certname: r.certname,
    resource: r.resource,
    type: r.type,
    title: r.title,
    exported: r.exported,
    tags: r.tags,
    file: r.file,
    line: r.line,
    environment: r.environment,
    parameters: r.parameters,
  }),
  answersAsRead: true,
};

const href = (hash: string, what: string) => `/pdb/query/v4/reports/${hash}/${what}`;

/** The fields of an event itself; `time` renders its timestamp (PostgreSQL's JSON style inside reports). */
function eventFields(e: EventRow, time: (ms: number) => string): Record<string, unknown> {
  return {
    status: e.status,
    timestamp: time(e.timestamp),
    resource_type: e.resource_type,
    resource_title: e.resource_title,
    property: e.property,
    name: e.name,
    new_value: e.new_value,
    old_value: e.old_value,
    message: e.message,
    file: e.file,
    line: e.line,
    containment_path: e.containment_path,
    containing_class: e.containing_class,
    corrective_change: null,
  };
}

export const reportEventData = (e: EventRow) => eventFields(e, pgJsonTime);

const REPORT_STRINGS = [
  'hash',
  'certname',
  'puppet_version',
  'configuration_version',
  'transaction_uuid',
  'catalog_uuid',
  'code_id',
  'job_id',
  'cached_catalog_status',
  'status',
  'environment',
  'producer',
  'type',
];
const REPORT_TIMES = ['start_time', 'end_time', 'producer_timestamp', 'receive_time'];

export const reports: Entity = {
  name: 'reports',
  route: { path: 'reports', summary: 'Run reports' },
  fields: lookup({
    ...Object.fromEntries(REPORT_STRINGS.map((k) => [k, prop('string', k)])),
    report_format: prop('number', 'report_format'),
    ...Object.fromEntries(REPORT_TIMES.map((k) => [k, f('timestamp', (row) => row[k])])),
    noop: prop('boolean', 'noop'),
    noop_pending: prop('boolean', 'noop_pending'),
    corrective_change: f('boolean', () => null),
    'latest_report?': f('latest', (row) => row.latest, { filterOnly: true }),
    resource_events: f(
      'json',
      (row) => ({ href: href(row.hash, 'events'), data: row.events.length ? row.events.map(reportEventData) : null }),
      { answerOnly: true },
    ),
    metrics: f('json', (row) => ({ href: href(row.hash, 'metrics'), data: row.metrics }), { answerOnly: true }),
    logs: f('json', (row) => ({ href: href(row.hash, 'logs'), data: row.logs }), { answerOnly: true }),
  }),
  orderable: [
    ...REPORT_STRINGS,
    'report_format',
    ...REPORT_TIMES,
    'noop',
    'noop_pending',
    'corrective_change',
    'latest_report?',
  ],
  activeOnly: false,
  rows: (index) => index.reports,
  sql: {
    source: '(SELECT r.*, r.id AS ord FROM nfv_inv_reports r)',
    select: `x.id::float8 AS id, x.hash, x.certname, x.puppet_version, x.report_format,
      x.configuration_version, x.start_time::float8 AS start_time, x.end_time::float8 AS end_time,
      x.producer_timestamp::float8 AS producer_timestamp, x.receive_time::float8 AS receive_time, x.producer,
      x.transaction_uuid, x.catalog_uuid, x.code_id, x.job_id, x.cached_catalog_status, x.status, x.noop,
      x.noop_pending, x.environment, x.type, x.latest, x.metrics, x.logs`,
    columns: { agent_version: 'puppet_version', 'latest_report?': 'latest' },
  },
  record: (r: ReportItem) => ({
    hash: r.hash,
    certname: r.certname,
    agent_version: r.puppet_version,
    report_format: r.report_format,
    configuration_version: r.configuration_version,
    start_time: utc(r.start_time),
    end_time: utc(r.end_time),
    producer_timestamp: utc(r.producer_timestamp),
    receive_time: utc(r.receive_time),
    producer: r.producer,
    transaction_uuid: r.transaction_uuid,
    catalog_uuid: r.catalog_uuid,
    code_id: r.code_id,
    job_id: r.job_id,
    cached_catalog_status: r.cached_catalog_status,
    status: r.status,
    noop: r.noop,
    noop_pending: r.noop_pending,
    corrective_change: null,
    environment: r.environment,
    type: r.type,
    resource_events: reports.fields.resource_events!.get(r),
    metrics: reports.fields.metrics!.get(r),
    logs: reports.fields.logs!.get(r),
  }),
};
// The interface document's name for puppet_version.
reports.fields.agent_version = reports.fields.puppet_version!;

const EVENT_STRINGS = [
  'status',
  'resource_type',
  'resource_title',
  'property',
  'name',
  'message',
  'file',
  'containing_class',
];

/** An event's own columns (alias x), for events and for the events of reports. */
export const EVENT_OWN_COLUMNS = `x.status, x."timestamp"::float8 AS "timestamp", x.resource_type, x.resource_title,
  x.property, x.name, x.new_value, x.old_value, x.message, x.file, x.line, x.containment_path, x.containing_class`;

export const events: Entity = {
  name: 'events',
  route: { path: 'events', summary: 'Resource events of reports' },
  fields: lookup({
    certname: f('string', (e: EventItem) => e.report.certname),
    report: f('string', (e: EventItem) => e.report.hash),
    configuration_version: f('string', (e: EventItem) => e.report.configuration_version),
    environment: f('string', (e: EventItem) => e.report.environment),
    ...Object.fromEntries(EVENT_STRINGS.map((k) => [k, prop('string', k)])),
    new_value: prop('json', 'new_value'),
    old_value: prop('json', 'old_value'),
    line: prop('number', 'line'),
    timestamp: prop('timestamp', 'timestamp'),
    run_start_time: f('timestamp', (e: EventItem) => e.report.start_time),
    run_end_time: f('timestamp', (e: EventItem) => e.report.end_time),
    report_receive_time: f('timestamp', (e: EventItem) => e.report.receive_time),
    containment_path: prop('array', 'containment_path'),
    corrective_change: f('boolean', () => null),
    'latest_report?': f('latest', (e: EventItem) => e.report.latest, { filterOnly: true }),
  }),
  orderable: [
    'certname',
    'report',
    'status',
    'timestamp',
    'run_start_time',
    'run_end_time',
    'report_receive_time',
    'resource_type',
    'resource_title',
    'property',
    'name',
    'new_value',
    'old_value',
    'message',
    'file',
    'line',
    'containment_path',
    'containing_class',
    'corrective_change',
    'environment',
    'configuration_version',
    'latest_report?',
  ],
  activeOnly: false,
  rows: (index) => index.events,
  sql: {
    // LEFT JOIN: every event's report_id names a report (NOT NULL, a foreign key), so the rows are the inner join's,
    // and PostgreSQL leaves out a LEFT JOIN on the report's key when no report column is read (event counts).
    source: `(SELECT e.*, p.certname, p.hash AS report, p.configuration_version, p.environment,
      p.start_time AS run_start_time, p.end_time AS run_end_time, p.receive_time AS report_receive_time, p.latest
      FROM nfv_inv_events e LEFT JOIN nfv_inv_reports p ON p.id = e.report_id)`,
    select: `${EVENT_OWN_COLUMNS}, x.certname, x.report, x.configuration_version, x.environment,
      x.run_start_time::float8 AS run_start_time, x.run_end_time::float8 AS run_end_time,
      x.report_receive_time::float8 AS report_receive_time, x.latest`,
    columns: { 'latest_report?': 'latest' },
  },
  record: (e: EventItem) => ({
    certname: e.report.certname,
    report: e.report.hash,
    configuration_version: e.report.configuration_version,
    run_start_time: utc(e.report.start_time),
    run_end_time: utc(e.report.end_time),
    report_receive_time: utc(e.report.receive_time),
    environment: e.report.environment,
    ...eventFields(e, utc),
  }),
};

/**
 * The row order of sources without a stored one: their key columns as one text in byte order (the folder backend
 * sorts by the same keys; certnames, names and paths hold no control character, so chr(1) keeps them apart). A
 * plain expression, not row_number(): PostgreSQL then still pushes a query's criteria down to the tables' indexes.
 */
const ordered = (...keys: string[]) => `(${keys.join(' || chr(1) || ')}) COLLATE "C" AS ord`;
const time = (ms: number | null) => (ms === null ? null : utc(ms));
const strings = (...names: string[]) => Object.fromEntries(names.map((k) => [k, prop('string', k)]));
const times = (...names: string[]) =>
  Object.fromEntries(names.map((k) => [k, f('timestamp', getter(k) as (row: any) => number | null)]));

const NODE_TIMES = ['deactivated', 'expired', 'catalog_timestamp', 'facts_timestamp', 'report_timestamp'];
const NODE_STRINGS = [
  'catalog_environment',
  'facts_environment',
  'report_environment',
  'latest_report_status',
  'latest_report_hash',
  'latest_report_job_id',
  'cached_catalog_status',
];

export const nodes: Entity = {
  name: 'nodes',
  route: { path: 'nodes', summary: 'Nodes with their latest report, catalog and facts' },
  fields: lookup({
    certname: prop('string', 'certname'),
    ...times(...NODE_TIMES),
    ...strings(...NODE_STRINGS),
    latest_report_noop: prop('boolean', 'latest_report_noop'),
    latest_report_noop_pending: prop('boolean', 'latest_report_noop_pending'),
    latest_report_corrective_change: f('boolean', () => null),
  }),
  orderable: [
    'certname',
    ...NODE_TIMES,
    ...NODE_STRINGS,
    'latest_report_noop',
    'latest_report_noop_pending',
    'latest_report_corrective_change',
  ],
  activeOnly: true,
  rows: (index) => index.nodes,
  sql: {
    // A migrated catalog has no receive time: its producer_timestamp stands in (as on the folder backend).
    source: `(SELECT n.certname, n.deactivated, NULL::bigint AS expired,
      coalesce(c.receive_time, c.producer_timestamp) AS catalog_timestamp, f.receive_time AS facts_timestamp,
      r.end_time AS report_timestamp, c.environment AS catalog_environment, f.environment AS facts_environment,
      r.environment AS report_environment, r.status AS latest_report_status, r.hash AS latest_report_hash,
      r.noop AS latest_report_noop, r.noop_pending AS latest_report_noop_pending, r.job_id AS latest_report_job_id,
      r.cached_catalog_status, ${ordered('n.certname')}
      FROM nfv_inv_nodes n LEFT JOIN nfv_inv_catalogs c ON c.certname = n.certname
      LEFT JOIN nfv_inv_factsets f ON f.certname = n.certname
      LEFT JOIN nfv_inv_reports r ON r.certname = n.certname AND r.latest)`,
    select: `x.certname, ${NODE_TIMES.map((t) => `x.${t}::float8 AS ${t}`).join(', ')},
      ${NODE_STRINGS.map((k) => `x.${k}`).join(', ')}, x.latest_report_noop, x.latest_report_noop_pending`,
  },
  record: (n: NodeItem) => ({
    certname: n.certname,
    deactivated: time(n.deactivated),
    expired: time(n.expired),
    catalog_timestamp: time(n.catalog_timestamp),
    facts_timestamp: time(n.facts_timestamp),
    report_timestamp: time(n.report_timestamp),
    catalog_environment: n.catalog_environment,
    facts_environment: n.facts_environment,
    report_environment: n.report_environment,
    latest_report_status: n.latest_report_status,
    latest_report_hash: n.latest_report_hash,
    latest_report_noop: n.latest_report_noop,
    latest_report_noop_pending: n.latest_report_noop_pending,
    latest_report_corrective_change: null,
    latest_report_job_id: n.latest_report_job_id,
    cached_catalog_status: n.cached_catalog_status,
  }),
};

export const facts: Entity = {
  name: 'facts',
  route: { path: 'facts', summary: 'Facts of active nodes' },
  fields: lookup({ ...strings('certname', 'environment', 'name'), value: prop('value', 'value') }),
  orderable: ['certname', 'environment', 'name'],
  activeOnly: true,
  rows: (index) => index.facts,
  sql: {
    source: `(SELECT v.certname, s.environment, v.name, v.value, v.value_json,
      ${ordered('v.certname', 'v.name')}
      FROM nfv_inv_facts v JOIN nfv_inv_factsets s ON s.certname = v.certname)`,
    select: 'x.certname, x.environment, x.name, x.value_json AS value',
  },
  record: (r: FactItem) => ({ certname: r.certname, environment: r.environment, name: r.name, value: r.value }),
};

export const factNames: Entity = {
  name: 'fact_names',
  route: { path: 'fact-names', summary: 'Fact names, sorted' },
  fields: lookup({ name: prop('string', 'name') }),
  orderable: ['name'],
  activeOnly: false,
  rows: (index) => index.factNames,
  sql: {
    source: `(SELECT d.name, ${ordered('d.name')} FROM (SELECT DISTINCT name FROM nfv_inv_facts) d)`,
    select: 'x.name',
  },
  record: (r: { name: string }) => ({ name: r.name }),
};

const FACTSET_TIMES = ['timestamp', 'producer_timestamp'];

export const factsets: Entity = {
  name: 'factsets',
  route: { path: 'factsets', summary: "Each node's facts as one record" },
  fields: lookup({
    ...strings('certname', 'environment', 'producer', 'hash'),
    ...times(...FACTSET_TIMES),
    facts: f('json', (row: FactsetItem) => factsetFacts(row), { answerOnly: true }),
  }),
  orderable: ['certname', 'environment', 'producer', 'hash', ...FACTSET_TIMES],
  activeOnly: true,
  rows: (index) => index.factsets,
  sql: {
    source: `(SELECT s.*, s.receive_time AS "timestamp", ${ordered('s.certname')} FROM nfv_inv_factsets s)`,
    select: `x.certname, x.environment, x."timestamp"::float8 AS "timestamp",
      x.producer_timestamp::float8 AS producer_timestamp, x.producer, x.hash, x.facts AS "values"`,
  },
  record: (r: FactsetItem) => ({
    certname: r.certname,
    environment: r.environment,
    timestamp: utc(r.timestamp),
    producer_timestamp: utc(r.producer_timestamp),
    producer: r.producer,
    hash: r.hash,
    facts: factsetFacts(r),
  }),
};

function factsetFacts(r: FactsetItem) {
  return { href: `/pdb/query/v4/factsets/${encodeURIComponent(r.certname)}/facts`, data: factRows(r.values) };
}

export const factPaths: Entity = {
  name: 'fact_paths',
  route: { path: 'fact-paths', summary: 'Paths of fact leaves with their types' },
  fields: lookup({ path: prop('path', 'path'), ...strings('name', 'type') }),
  orderable: ['path', 'name', 'type'],
  activeOnly: false,
  rows: (index) => index.factPaths,
  sql: {
    // The dictionary's paths that some factset holds.
    source: `(SELECT p.path_key, p.path, p.name, p.type, p.path_key::json AS path_json,
      ${ordered('p.path_key', 'p.type')} FROM nfv_inv_fact_paths p
      WHERE EXISTS (SELECT 1 FROM nfv_inv_fact_leaves l WHERE l.path_id = p.id))`,
    select: 'x.path_json AS path, x.path_key AS "pathKey", x.name, x.type',
  },
  record: (r: FactPathItem) => ({ path: r.path, name: r.name, type: r.type }),
};

export const factContents: Entity = {
  name: 'fact_contents',
  route: { path: 'fact-contents', summary: 'Leaves of nested facts with their paths' },
  fields: lookup({
    ...strings('certname', 'environment', 'name'),
    path: prop('path', 'path'),
    value: prop('value', 'value'),
  }),
  orderable: ['certname', 'environment', 'path', 'name'],
  activeOnly: true,
  rows: (index) => index.factContents,
  sql: {
    // A path criterion is decided on the dictionary's rows (x.path_key, x.path), then leaves found by path id.
    source: `(SELECT s.certname, s.environment, p.path_key, p.path, p.name, p.type, l.value,
      ${ordered('s.certname', 'p.path_key')} FROM nfv_inv_fact_leaves l
      JOIN nfv_inv_factsets s ON s.id = l.factset_id JOIN nfv_inv_fact_paths p ON p.id = l.path_id)`,
    // A leaf is a scalar: its jsonb text is its JSON text.
    select: 'x.certname, x.environment, x.path_key::json AS path, x.path_key AS "pathKey", x.name, x.value',
  },
  record: (r: FactContentItem) => ({
    certname: r.certname,
    environment: r.environment,
    path: r.path,
    name: r.name,
    value: r.value,
  }),
};

export const inventory: Entity = {
  name: 'inventory',
  route: { path: 'inventory', summary: "Each node's facts, with dotted criteria" },
  fields: lookup({
    ...strings('certname', 'environment'),
    timestamp: prop('timestamp', 'timestamp'),
    facts: prop('value', 'facts'),
    trusted: prop('value', 'trusted'),
  }),
  orderable: ['certname', 'environment', 'timestamp'],
  activeOnly: true,
  dotted: { facts: 'facts', trusted: 'trusted' },
  rows: (index) => index.inventory,
  sql: {
    source: `(SELECT s.certname, s.environment, s.receive_time AS "timestamp", s.facts AS facts_json,
      s.facts_jsonb AS facts, s.facts_jsonb -> 'trusted' AS trusted, s.facts -> 'trusted' AS trusted_json,
      ${ordered('s.certname')} FROM nfv_inv_factsets s)`,
    select: `x.certname, x."timestamp"::float8 AS "timestamp", x.environment, x.facts_json AS facts,
      x.trusted_json AS trusted`,
  },
  record: (r: InventoryItem) => ({
    certname: r.certname,
    timestamp: utc(r.timestamp),
    environment: r.environment,
    facts: r.facts,
    trusted: r.trusted,
  }),
};

/** Distinct non-null values of a column over catalogs, facts and reports, as rows {name}. */
const namesOf = (column: string) => `(SELECT d.name, ${ordered('d.name')} FROM (
  SELECT ${column} AS name FROM nfv_inv_catalogs UNION SELECT ${column} FROM nfv_inv_factsets
  UNION SELECT ${column} FROM nfv_inv_reports) d WHERE d.name IS NOT NULL)`;

export const environments: Entity = {
  name: 'environments',
  route: { path: 'environments', summary: 'Environments named by catalogs, facts and reports' },
  fields: lookup({ name: prop('string', 'name') }),
  orderable: ['name'],
  activeOnly: false,
  rows: (index) => index.environments,
  sql: { source: namesOf('environment'), select: 'x.name' },
  record: (r: { name: string }) => ({ name: r.name }),
};

export const producers: Entity = {
  name: 'producers',
  route: { path: 'producers', summary: 'Producers of catalogs, facts and reports' },
  fields: lookup({ name: prop('string', 'name') }),
  orderable: ['name'],
  activeOnly: false,
  rows: (index) => index.producers,
  sql: { source: namesOf('producer'), select: 'x.name' },
  record: (r: { name: string }) => ({ name: r.name }),
};

const CATALOG_STRINGS = [
  'certname',
  'version',
  'environment',
  'hash',
  'transaction_uuid',
  'catalog_uuid',
  'code_id',
  'job_id',
  'producer',
];

/** A catalog resource as /catalogs answers it (a resource record without certname and environment). */
const catalogResource = (r: ResourceRow) => ({
  resource: r.resource,
  type: r.type,
  title: r.title,
  tags: r.tags,
  exported: r.exported,
  file: r.file,
  line: r.line,
  parameters: r.parameters,
});
const edgeData = (e: EdgeRow) => ({
  source_type: e.source_type,
  source_title: e.source_title,
  target_type: e.target_type,
  target_title: e.target_title,
  relationship: e.relationship,
});
const catalogHref = (certname: string, what: string) =>
  `/pdb/query/v4/catalogs/${encodeURIComponent(certname)}/${what}`;

export const catalogs: Entity = {
  name: 'catalogs',
  route: { path: 'catalogs', summary: 'Catalogs with their resources and edges' },
  fields: lookup({
    ...strings(...CATALOG_STRINGS),
    producer_timestamp: prop('timestamp', 'producer_timestamp'),
    resources: f('json', (c: CatalogItem) => catalogs.record(c).resources, { answerOnly: true }),
    edges: f('json', (c: CatalogItem) => catalogs.record(c).edges, { answerOnly: true }),
  }),
  orderable: [...CATALOG_STRINGS, 'producer_timestamp'],
  activeOnly: false,
  rows: (index) => index.catalogs,
  sql: {
    source: 'nfv_inv_catalogs',
    select: `${CATALOG_STRINGS.map((k) => `x.${k}`).join(', ')},
      x.producer_timestamp::float8 AS producer_timestamp`,
  },
  record: (c: CatalogItem) => ({
    certname: c.certname,
    version: c.version,
    environment: c.environment,
    hash: c.hash,
    transaction_uuid: c.transaction_uuid,
    catalog_uuid: c.catalog_uuid,
    code_id: c.code_id,
    job_id: c.job_id,
    producer: c.producer,
    producer_timestamp: utc(c.producer_timestamp),
    resources: { href: catalogHref(c.certname, 'resources'), data: c.resources.map(catalogResource) },
    edges: { href: catalogHref(c.certname, 'edges'), data: c.edges.map(edgeData) },
  }),
};

const EDGE_STRINGS = ['certname', 'relationship', 'source_type', 'source_title', 'target_type', 'target_title'];

export const edges: Entity = {
  name: 'edges',
  route: { path: 'edges', summary: 'Edges of catalogs of active nodes' },
  fields: lookup(strings(...EDGE_STRINGS)),
  orderable: EDGE_STRINGS,
  activeOnly: true,
  rows: (index) => index.edges,
  sql: { source: 'nfv_inv_edges', select: EDGE_STRINGS.map((k) => `x.${k}`).join(', ') },
  record: (e: EdgeItem) => ({
    certname: e.certname,
    relationship: e.relationship,
    source_type: e.source_type,
    source_title: e.source_title,
    target_type: e.target_type,
    target_title: e.target_title,
  }),
};

/** Every entity, by its name in queries. */
export const ENTITIES: Record<string, Entity> = lookup(
  Object.fromEntries(
    [
      resources,
      reports,
      events,
      nodes,
      facts,
      factNames,
      factsets,
      factPaths,
      factContents,
      inventory,
      environments,
      producers,
      catalogs,
      edges,
    ].map((e) => [e.name, e]),
  ),
);
