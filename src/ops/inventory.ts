/**
 * `/v4`: the inventory query service (resources, reports, events, event counts) and the ingest commands that feed
 * it, over the workspace's inventory store (its folder's journal, or its database); PuppetDB's root query endpoint
 * `/pdb/query/v4` (PQL); and PuppetDB's meta and status endpoints, which its clients ask first. Answers are JSON;
 * errors are PuppetDB's one-line texts.
 */
import { randomUUID } from 'node:crypto';
import { MAX_BATCH } from '../model/limits.js';
import type { Answer } from '../inventory/service.js';
import type { InventoryStore } from '../inventory/store.js';
import { badRequest, clip, notFound } from '../model/errors.js';
import { json, operation, type Input, type JsonReply, type Operation } from './operation.js';

type Inventory = typeof import('../inventory/index.js');
/** The inventory loads on the first inventory operation, not at every command's start. */
const inventory = (): Promise<Inventory> => import('../inventory/index.js');

/** The workspace's inventory store. */
const storeOf = async (i: Input<unknown>): Promise<InventoryStore> => (await inventory()).inventoryStore(i.ws);

function answer(a: Answer, query: URLSearchParams): JsonReply<unknown[]> {
  const more = {
    compact: (query.get('pretty') ?? '').toLowerCase() !== 'true',
    headers: a.total === undefined ? undefined : { 'X-Records': String(a.total) },
  };
  if (a.json === undefined) return json(a.rows, more);
  // Rows the database wrote as JSON are parsed only if a renderer needs the values (pretty, tables).
  return {
    kind: 'json',
    ...more,
    text: a.json,
    get value() {
      return a.rows;
    },
  };
}

/** What a query endpoint answers, from the store and the request (its URL parameters, or the POST body's). */
type QueryRun = (store: InventoryStore, inv: Inventory, i: Input<unknown>) => Promise<Answer>;

/** A query endpoint's two operations, and the query both run. */
export interface QueryOperations {
  get: Operation<unknown, JsonReply<unknown[]>>;
  post: Operation<unknown, JsonReply<unknown[]>>;
  run: QueryRun;
}

/** A POST body `{"query": [...], "limit": 10, ...}` as the URL parameters of the GET form. */
function bodyParameters(body: unknown, query: URLSearchParams): URLSearchParams {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw badRequest('the body must be a JSON object of query parameters');
  const params = new URLSearchParams(query);
  for (const [k, v] of Object.entries(body)) params.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  return params;
}

/** A query endpoint: GET with URL parameters, and POST with the same parameters in a JSON body (PuppetDB 3.0+). */
function query(name: string, path: string, summary: string, run: QueryRun): QueryOperations {
  const get = operation({
    name,
    method: 'GET',
    path,
    summary,
    reply: 'json',
    status: 200,
    errors: 'puppetdb',
    handler: async (i) => {
      return answer(await run(await storeOf(i), await inventory(), i), i.query);
    },
  });
  const post = operation<unknown, JsonReply<unknown[]>>({
    ...get,
    name: `${name}.post`,
    method: 'POST',
    body: 'json',
    handler: async (i) => {
      const params = bodyParameters(i.body, i.query);
      return answer(await run(await storeOf(i), await inventory(), { ...i, query: params }), params);
    },
  });
  return { get, post, run };
}

const reportNotFound = (hash: string | number | undefined) =>
  notFound(`No information is known about report ${clip(String(hash))}`);

function reportPart(part: 'metrics' | 'logs'): QueryOperations {
  return query(`v4.reports.${part}`, `/v4/reports/{hash}/${part}`, `The ${part} of a report`, async (store, inv, i) => {
    inv.rejectUnknown(i.query, []);
    const report = await store.report(i.params.hash as string);
    if (!report) throw reportNotFound(i.params.hash);
    return { rows: report[part] ?? [] };
  });
}

export const ingestCommand = operation({
  name: 'v4.commands',
  method: 'POST',
  path: '/v4/commands',
  summary: 'Ingest: replace catalog (v9), store report (v8) or deactivate node (v3)',
  body: 'json',
  reply: 'json',
  status: 200,
  errors: 'puppetdb',
  handler: async (i) => {
    const [result] = await (await storeOf(i)).apply([i.body], Date.now());
    if ('error' in result!) throw result.error;
    return json(result!.ok);
  },
});

export const ingestBatch = operation({
  name: 'v4.commands.batch',
  method: 'POST',
  path: '/v4/commands/batch',
  summary: 'Ingest many commands at once (a JSON array); each is applied or refused on its own, durable when answered',
  body: 'json',
  reply: 'json',
  status: 200,
  errors: 'puppetdb',
  handler: async (i) => {
    if (!Array.isArray(i.body)) throw badRequest('the body must be a JSON array of commands');
    if (i.body.length > MAX_BATCH)
      throw badRequest(`a batch holds at most ${MAX_BATCH} commands, not ${i.body.length}`);
    const results = await (await storeOf(i)).apply(i.body, Date.now());
    return json(
      results.map((r) => ('ok' in r ? r.ok : { error: { status: r.error.status, message: r.error.message } })),
      { compact: true },
    );
  },
});

/**
 * PuppetDB's command endpoint, as the Puppet terminus and pypuppetdb send commands: the query-parameter form (the bare
 * payload as the body) or the older body form. The command is applied (or judged stale) before the answer, so the
 * `{"uuid"}` PuppetDB gives on queueing means here that the command is durable; a refused one is a 400 (PuppetDB
 * queues it and fails it later, which `puppet apply` would not report). `replace catalog inputs` is checked and not
 * kept; `replace facts` is refused until nfv stores facts.
 */
export const pdbCommand = operation({
  name: 'pdb.cmd',
  method: 'POST',
  path: '/pdb/cmd/v1',
  summary: 'PuppetDB command submission: replace catalog (v9), store report (v8), deactivate node (v3)',
  reply: 'json',
  status: 200,
  errors: 'puppetdb-command',
  handler: async (i) => {
    const { checkCommand } = await import('../inventory/pdb-command.js');
    const checked = checkCommand({ query: i.query, text: i.text, contentType: i.contentType });
    if (checked.apply) {
      const [result] = await (await storeOf(i)).apply([checked.apply], Date.now());
      if ('error' in result!) throw result.error;
    }
    const uuid = randomUUID();
    return json(checked.waited ? { uuid, processed: true, timed_out: false } : { uuid });
  },
});

/** The query endpoints, by the name the CLI's `inventory query ENDPOINT` takes. */
export const queryEndpoints = {
  resources: query('v4.resources', '/v4/resources', 'Resources of active nodes', (store, inv, i) =>
    store.query(inv.resources, i.query),
  ),
  'resources.type': query('v4.resources.type', '/v4/resources/{type}', 'Resources of one type', (store, inv, i) =>
    store.query(inv.resources, i.query, [['=', 'type', i.params.type]]),
  ),
  'resources.title': query(
    'v4.resources.title',
    '/v4/resources/{type}/{title}',
    'Resources of one type and title',
    (store, inv, i) =>
      store.query(inv.resources, i.query, [
        ['=', 'type', i.params.type],
        ['=', 'title', i.params.title],
      ]),
  ),
  reports: query('v4.reports', '/v4/reports', 'Run reports', (store, inv, i) => store.query(inv.reports, i.query)),
  'reports.events': query(
    'v4.reports.events',
    '/v4/reports/{hash}/events',
    'The events of a report',
    async (store, inv, i) => {
      if (!(await store.report(i.params.hash as string))) throw reportNotFound(i.params.hash);
      return store.query(inv.events, i.query, [['=', 'report', i.params.hash]]);
    },
  ),
  'reports.metrics': reportPart('metrics'),
  'reports.logs': reportPart('logs'),
  events: query('v4.events', '/v4/events', 'Resource events of reports', (store, inv, i) =>
    store.query(inv.events, i.query),
  ),
  'event-counts': query(
    'v4.eventCounts',
    '/v4/event-counts',
    'Event counts per resource, class or node',
    (store, inv, i) => store.eventCounts(i.query),
  ),
  'aggregate-event-counts': query(
    'v4.aggregateEventCounts',
    '/v4/aggregate-event-counts',
    'Event counts summed over subjects',
    (store, inv, i) => store.aggregateEventCounts(i.query),
  ),
};

/**
 * The query endpoints at PuppetDB's URLs (`/pdb/query/v4/resources`, `/pdb/query/v4/reports/{hash}/events`, ...), as
 * pypuppetdb and Puppetboard ask them: each runs its `/v4` twin's query, so criteria, paging, errors and the
 * active-node rule are the same (PuppetDB's entity endpoints restrict resources to active nodes unless the query
 * says node_state, and answer reports and events of every node); report records take PuppetDB's field names, as at
 * the root endpoint. PuppetDB's other entities (nodes, facts, catalogs, ...) have no route.
 */
export const pdbQueryEndpoints = Object.fromEntries(
  Object.entries(queryEndpoints).map(([key, q]) => {
    const run: QueryRun =
      key === 'reports' ? async (store, inv, i) => inv.withPuppetdbNames(await q.run(store, inv, i), i.query) : q.run;
    return [
      key,
      query(
        q.get.name.replace(/^v4\./, 'pdb.query.'),
        `/pdb/query${q.get.path}`,
        `${q.get.summary} (PuppetDB URL)`,
        run,
      ),
    ];
  }),
) as Record<keyof typeof queryEndpoints, QueryOperations>;

/**
 * PuppetDB's root query endpoint: PQL (`resources[certname] { type = "File" }`) or an AST `["from", entity, ...]`,
 * restricted to active nodes as PuppetDB does; `ast_only=true` answers the AST. Entities nfv has: resources, reports
 * and events (reports with PuppetDB's field names, as under `/pdb`).
 */
export const rootQuery = query(
  'pdb.query',
  '/pdb/query/v4',
  'PQL or AST queries of an entity (PuppetDB root query endpoint)',
  async (store, inv, i) => {
    const root = inv.rootQuery(i.query);
    if ('ast' in root) return { rows: root.ast as unknown[] };
    const found = await store.query(root.entity, root.params);
    return root.entity === inv.reports ? inv.withPuppetdbNames(found, root.params) : found;
  },
);

/**
 * The PuppetDB version the meta and status endpoints answer: the release whose API nfv's answers follow and were
 * compared with (the recorded cases, puppet.md). Clients read it as an API level, not as nfv's own version:
 * Puppetboard exits at start below 5.2.0, and pypuppetdb and Puppetboard choose features by it.
 */
export const PUPPETDB_VERSION = '7.12.1';

/** PuppetDB's meta endpoints take no parameters (its validate-no-query-params): any is a 400. */
function noParameters(query: URLSearchParams): void {
  for (const key of query.keys()) throw badRequest(`Unsupported query parameter '${clip(key)}'`);
}

export const metaVersion = operation({
  name: 'pdb.meta.version',
  method: 'GET',
  path: '/pdb/meta/v1/version',
  summary: `The PuppetDB API version answered (${PUPPETDB_VERSION}), as PuppetDB's clients check it`,
  reply: 'json',
  status: 200,
  errors: 'puppetdb',
  handler: async (i) => {
    noParameters(i.query);
    return json({ version: PUPPETDB_VERSION });
  },
});

export const metaServerTime = operation({
  name: 'pdb.meta.serverTime',
  method: 'GET',
  path: '/pdb/meta/v1/server-time',
  summary: "The server's clock, ISO 8601 UTC with milliseconds",
  reply: 'json',
  status: 200,
  errors: 'puppetdb',
  handler: async (i) => {
    noParameters(i.query);
    return json({ server_time: new Date().toISOString() });
  },
});

/** Trapperkeeper's detail levels; the status is the same at each. */
const STATUS_LEVELS = ['critical', 'info', 'debug'];

/**
 * PuppetDB's service status as trapperkeeper's status service answers it: `running` (200) when the inventory store
 * answers a read, else `error` (503) with the reason as an alert. Commands are applied when they are received, so
 * nothing ever queues. The read is bounded as every inventory read is (on PostgreSQL, its statement timeout).
 */
export const statusService = operation({
  name: 'status.puppetdb',
  method: 'GET',
  path: '/status/v1/services/puppetdb-status',
  summary: 'PuppetDB status: running when the inventory store answers a read (else 503)',
  reply: 'json',
  status: 200,
  errors: 'puppetdb',
  handler: async (i) => {
    for (const key of i.query.keys())
      if (key !== 'level' && key !== 'service_status_version')
        throw badRequest(`Unsupported query parameter '${clip(key)}'`);
    const level = i.query.get('level') ?? 'info';
    if (!STATUS_LEVELS.includes(level)) throw badRequest(`Invalid level: ${clip(level)}`);
    const version = i.query.get('service_status_version');
    if (version !== null && version !== '1')
      throw badRequest(`No status function with version ${clip(version)} found for service puppetdb-status`);
    let problem: string | undefined;
    try {
      await (await storeOf(i)).query((await inventory()).resources, new URLSearchParams({ limit: '1' }));
    } catch (e) {
      problem = e instanceof Error ? e.message : String(e);
    }
    const up = problem === undefined;
    return json(
      {
        service_version: PUPPETDB_VERSION,
        service_status_version: 1,
        detail_level: level,
        state: up ? 'running' : 'error',
        status: { 'maintenance_mode?': false, queue_depth: 0, 'read_db_up?': up, 'write_db_up?': up },
        active_alerts: up ? [] : [{ severity: 'error', message: problem }],
        service_name: 'puppetdb-status',
      },
      { status: up ? 200 : 503 },
    );
  },
});

export const inventoryOperations: Operation[] = [
  metaVersion,
  metaServerTime,
  statusService,
  ingestCommand,
  ingestBatch,
  pdbCommand,
  ...Object.values(queryEndpoints).flatMap((q) => [q.get, q.post]),
  ...Object.values(pdbQueryEndpoints).flatMap((q) => [q.get, q.post]),
  rootQuery.get,
  rootQuery.post,
];
