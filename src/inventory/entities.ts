/**
 * The queryable entities: resources, reports and events (plus catalogs, for implicit subqueries). For each, its
 * rows (built once per stored inventory and reused while the file is unchanged), its fields with their kinds, and
 * the record a row is answered as.
 */
import type { CatalogRecord, EventRow, InventoryData, ResourceRow, StoredReport } from './ingest.js';
import { pgJsonTime, utc } from './values.js';

export type Kind =
  'string' | 'number' | 'timestamp' | 'boolean' | 'array' | 'json' | 'tag' | 'parameters' | 'node_state' | 'latest';

export interface Field {
  kind: Kind;
  get: (row: any) => unknown;
  /** Fields that only filter (tag, latest_report?) are neither extracted nor answered. */
  filterOnly?: boolean;
  /** Not usable in queries (report events, metrics, logs). */
  answerOnly?: boolean;
}

export interface Entity {
  name: string;
  fields: Record<string, Field>;
  /** Fields accepted in order_by. */
  orderable: string[];
  rows: (index: Index) => any[];
  record: (row: any) => Record<string, unknown>;
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

export interface Index {
  resources: ResourceItem[];
  /** Resources of active nodes: what resource queries see unless they ask for node_state. */
  activeResources: ResourceItem[];
  /** Certnames of deactivated nodes: node_state of the other entities. */
  inactiveNodes: Set<string>;
  reports: ReportItem[];
  events: EventItem[];
  byHash: Map<string, ReportItem>;
  catalogs: { certname: string; environment: string | null; version: string | null; producer_timestamp: number }[];
}

interface CachedParts {
  /** Catalog revision and node activity together: both change which resources answer. */
  catalogsRevision: string;
  reportsRevision: number;
  resourcePart?: Pick<Index, 'resources' | 'activeResources' | 'inactiveNodes' | 'catalogs'>;
  reportPart?: Pick<Index, 'reports' | 'events' | 'byHash'>;
  index?: Index;
}
const indexes = new WeakMap<InventoryData, CachedParts>();

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
 * Resource rows of every node with its activity, the deactivated nodes, and catalog rows; rebuilt when catalogs or
 * nodes change.
 */
function resourcePart(data: InventoryData): NonNullable<CachedParts['resourcePart']> {
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
  return {
    resources,
    activeResources,
    inactiveNodes,
    catalogs: Object.entries(data.catalogs).map(([certname, c]) => ({
      certname,
      environment: c.environment,
      version: c.version,
      producer_timestamp: c.producer_timestamp,
    })),
  };
}

/** Report rows with their latest flag, event rows with their report; rebuilt only when reports change. */
function reportPart(data: InventoryData): NonNullable<CachedParts['reportPart']> {
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

/**
 * Rows of every entity for the stored inventory (latest reports, node activity, event context), kept while the
 * data's revision is unchanged. Each half is built on first use, so a resource query never builds event rows.
 */
export function indexOf(data: InventoryData): Index {
  let cached = indexes.get(data);
  const catalogsRevision = `${data.revision.catalogs}:${data.activity}`;
  if (!cached || cached.catalogsRevision !== catalogsRevision || cached.reportsRevision !== data.revision.reports) {
    const keep = cached;
    cached = { catalogsRevision, reportsRevision: data.revision.reports };
    if (keep?.catalogsRevision === catalogsRevision) cached.resourcePart = keep.resourcePart;
    if (keep?.reportsRevision === data.revision.reports) cached.reportPart = keep.reportPart;
    indexes.set(data, cached);
  }
  if (cached.index) return cached.index;
  const parts = cached;
  const resources = () => (parts.resourcePart ??= resourcePart(data));
  const reports = () => (parts.reportPart ??= reportPart(data));
  cached.index = {
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
    get reports() {
      return reports().reports;
    },
    get events() {
      return reports().events;
    },
    get byHash() {
      return reports().byHash;
    },
  };
  return cached.index;
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
  rows: (index) => index.resources,
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
  rows: (index) => index.reports,
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

export const events: Entity = {
  name: 'events',
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
  rows: (index) => index.events,
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

export const catalogs: Entity = {
  name: 'catalogs',
  fields: lookup({
    certname: prop('string', 'certname'),
    environment: prop('string', 'environment'),
    version: prop('string', 'version'),
    producer_timestamp: prop('timestamp', 'producer_timestamp'),
  }),
  orderable: ['certname', 'environment', 'version', 'producer_timestamp'],
  rows: (index) => index.catalogs,
  record: (c) => ({
    certname: c.certname,
    environment: c.environment,
    version: c.version,
    producer_timestamp: utc(c.producer_timestamp),
  }),
};

export const ENTITIES: Record<string, Entity> = lookup({ resources, reports, events, catalogs });
