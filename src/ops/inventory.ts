/**
 * `/v4`: the inventory query service (resources, reports, events, event counts) and the ingest commands that feed
 * it, over the workspace's inventory store (its folder's journal, or its database); PuppetDB's root query endpoint
 * `/pdb/query/v4` (PQL); and PuppetDB's meta and status endpoints, which its clients ask first. Answers are JSON;
 * errors are PuppetDB's one-line texts.
 */
import { randomUUID } from 'node:crypto';
// The declarations only (light): routes are derived from them; the engine and the stores load on first use.
import { ENTITIES, factNames } from '../inventory/entities.js';
import { MAX_BATCH } from '../model/limits.js';
import type { Answer } from '../inventory/service.js';
import type { InventoryStore } from '../inventory/backend.js';
import { badRequest, clip, notFound } from '../model/errors.js';
import { json, operation, type Input, type JsonReply, type Operation } from './operation.js';

type Inventory = typeof import('../inventory/index.js');
/**
 * The inventory loads on the first inventory operation, not at every command's start; the module is kept, so later
 * operations do not ask the loader to resolve it again (a round trip to the module hooks' thread where hooks run).
 */
let loaded: Promise<Inventory> | undefined;
const inventory = (): Promise<Inventory> => (loaded ??= import('../inventory/index.js'));

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
  summary: 'Ingest: replace catalog (v9), replace facts (v5, v4), store report (v8) or deactivate node (v3)',
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
 * kept.
 */
export const pdbCommand = operation({
  name: 'pdb.cmd',
  method: 'POST',
  path: '/pdb/cmd/v1',
  summary:
    'PuppetDB command submission: replace catalog (v9), replace facts (v5, v4), store report (v8), ' +
    'deactivate node (v3)',
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

/** Criteria of a path parameter: `field = value` of the request's parameter. */
const where = (field: string, param: string) => (i: Input<unknown>) => ['=', field, i.params[param]];

/** A query of an entity (by its name in queries) with the route's criteria. */
const entityQuery =
  (name: string, ...criteria: ((i: Input<unknown>) => unknown[])[]): QueryRun =>
  (store, inv, i) =>
    store.query(
      inv.ENTITIES[name]!,
      i.query,
      criteria.map((c) => c(i)),
    );

/** What a path names (`/nodes/<certname>`): the entity, its word in PuppetDB's 404, the field the parameter gives. */
interface Parent {
  entity: string;
  what: string;
  field: string;
  param: string;
  /** More criteria: `node_state any` where PuppetDB answers deactivated nodes too. */
  criteria?: unknown[][];
}
const ANY_NODE = [['=', 'node_state', 'any']];
const NODE: Parent = { entity: 'nodes', what: 'node', field: 'certname', param: 'certname', criteria: ANY_NODE };
const CATALOG: Parent = { entity: 'catalogs', what: 'catalog', field: 'certname', param: 'certname' };
const FACTSET: Parent = {
  entity: 'factsets',
  what: 'factset',
  field: 'certname',
  param: 'certname',
  criteria: ANY_NODE,
};
const ENVIRONMENT: Parent = { entity: 'environments', what: 'environment', field: 'name', param: 'environment' };

/** The record a path names, or PuppetDB's JSON 404 (`No information is known about node X`). */
async function recordOf(parent: Parent, store: InventoryStore, inv: Inventory, i: Input<unknown>): Promise<unknown> {
  const id = i.params[parent.param];
  const found = await store.query(inv.ENTITIES[parent.entity]!, new URLSearchParams(), [
    ['=', parent.field, id],
    ...(parent.criteria ?? []),
  ]);
  if (found.rows.length === 0) throw notFound(`No information is known about ${parent.what} ${clip(String(id))}`);
  return found.rows[0];
}

/** A sub-route's query, answered only when what its path names exists (PuppetDB's parent check), else a 404. */
const under =
  (parent: Parent, run: QueryRun): QueryRun =>
  async (store, inv, i) => {
    await recordOf(parent, store, inv, i);
    return run(store, inv, i);
  };

/** fact-names answers the names as strings, as PuppetDB does (an extract keeps its rows). */
const factNamesRun: QueryRun = async (store, inv, i) => {
  const found = await entityQuery('fact_names')(store, inv, i);
  if (inv.isExtract(i.query)) return found;
  return { rows: found.rows.map((r) => (r as { name: string }).name), total: found.total };
};

/** The rows of a factset's `facts.href`: its facts as {name, value}. */
const factsetFactsRun: QueryRun = async (store, inv, i) => {
  const found = await entityQuery('facts', where('certname', 'certname'))(store, inv, i);
  if (inv.isExtract(i.query)) return found;
  const rows = found.rows.map((r) => {
    const { name, value } = r as { name: string; value: unknown };
    return { name, value };
  });
  return { rows, total: found.total };
};

/** `fact-names` -> `factNames`, for operation names. */
const camel = (path: string) => path.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());

/**
 * Each entity's own endpoint (`/v4/<entity>`), from its declaration: its path, what it answers, its query. Only
 * fact-names answers otherwise (strings).
 */
const entityEndpoints = Object.fromEntries(
  Object.values(ENTITIES).map((e) => [
    e.route.path,
    query(
      `v4.${camel(e.route.path)}`,
      `/v4/${e.route.path}`,
      e.route.summary,
      e === factNames ? factNamesRun : entityQuery(e.name),
    ),
  ]),
);

/** The query endpoints, by the name the CLI's `inventory query ENDPOINT` takes. */
export const queryEndpoints: Record<string, QueryOperations> = {
  ...entityEndpoints,
  'resources.type': query(
    'v4.resources.type',
    '/v4/resources/{type}',
    'Resources of one type',
    entityQuery('resources', where('type', 'type')),
  ),
  'resources.title': query(
    'v4.resources.title',
    '/v4/resources/{type}/{title}',
    'Resources of one type and title',
    entityQuery('resources', where('type', 'type'), where('title', 'title')),
  ),
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
  'nodes.facts': query(
    'v4.nodes.facts',
    '/v4/nodes/{certname}/facts',
    'The facts of a node',
    under(NODE, entityQuery('facts', where('certname', 'certname'))),
  ),
  'nodes.facts.name': query(
    'v4.nodes.facts.name',
    '/v4/nodes/{certname}/facts/{fact}',
    'One fact of a node',
    under(NODE, entityQuery('facts', where('certname', 'certname'), where('name', 'fact'))),
  ),
  'nodes.facts.value': query(
    'v4.nodes.facts.value',
    '/v4/nodes/{certname}/facts/{fact}/{value}',
    'One fact of a node, if it has this value',
    under(NODE, entityQuery('facts', where('certname', 'certname'), where('name', 'fact'), where('value', 'value'))),
  ),
  'nodes.resources': query(
    'v4.nodes.resources',
    '/v4/nodes/{certname}/resources',
    'The resources of a node',
    under(NODE, entityQuery('resources', where('certname', 'certname'))),
  ),
  'nodes.resources.type': query(
    'v4.nodes.resources.type',
    '/v4/nodes/{certname}/resources/{type}',
    'The resources of a node of one type',
    under(NODE, entityQuery('resources', where('certname', 'certname'), where('type', 'type'))),
  ),
  'nodes.resources.title': query(
    'v4.nodes.resources.title',
    '/v4/nodes/{certname}/resources/{type}/{title}',
    'One resource of a node',
    under(
      NODE,
      entityQuery('resources', where('certname', 'certname'), where('type', 'type'), where('title', 'title')),
    ),
  ),
  'facts.name': query(
    'v4.facts.name',
    '/v4/facts/{fact}',
    'One fact of every node',
    entityQuery('facts', where('name', 'fact')),
  ),
  'facts.value': query(
    'v4.facts.value',
    '/v4/facts/{fact}/{value}',
    'The nodes whose fact has this value',
    entityQuery('facts', where('name', 'fact'), where('value', 'value')),
  ),
  'factsets.facts': query(
    'v4.factsets.facts',
    '/v4/factsets/{certname}/facts',
    'The facts of a factset as {name, value}',
    under(FACTSET, factsetFactsRun),
  ),
  ...Object.fromEntries(
    (['facts', 'resources', 'reports', 'events'] as const).map((name) => [
      `environments.${name}`,
      query(
        `v4.environments.${name}`,
        `/v4/environments/{environment}/${name}`,
        `The ${name} of one environment`,
        under(ENVIRONMENT, entityQuery(name, where('environment', 'environment'))),
      ),
    ]),
  ),
  'catalogs.edges': query(
    'v4.catalogs.edges',
    '/v4/catalogs/{certname}/edges',
    'The edges of a catalog',
    under(CATALOG, entityQuery('edges', where('certname', 'certname'))),
  ),
  'catalogs.resources': query(
    'v4.catalogs.resources',
    '/v4/catalogs/{certname}/resources',
    'The resources of a catalog',
    under(CATALOG, entityQuery('resources', where('certname', 'certname'))),
  ),
};

/** A one-record endpoint's operation (`/nodes/<certname>`): the record, or PuppetDB's JSON 404. */
type SingleRun = (store: InventoryStore, inv: Inventory, i: Input<unknown>) => Promise<unknown>;

function single(name: string, path: string, summary: string, run: SingleRun) {
  return operation({
    name,
    method: 'GET',
    path,
    summary,
    reply: 'json',
    status: 200,
    errors: 'puppetdb',
    handler: async (i) => {
      (await inventory()).rejectUnknown(i.query, []);
      const found = await run(await storeOf(i), await inventory(), i);
      return json(found, { compact: (i.query.get('pretty') ?? '').toLowerCase() !== 'true' });
    },
  });
}

/** The one-record endpoints: a node (deactivated ones too), a catalog, a factset, an environment. */
export const singleEndpoints = {
  node: single('v4.nodes.one', '/v4/nodes/{certname}', 'One node, deactivated or not', (store, inv, i) =>
    recordOf(NODE, store, inv, i),
  ),
  catalog: single('v4.catalogs.one', '/v4/catalogs/{certname}', 'The catalog of one node', (store, inv, i) =>
    recordOf(CATALOG, store, inv, i),
  ),
  factset: single(
    'v4.factsets.one',
    '/v4/factsets/{certname}',
    'The facts of one node as one record',
    (store, inv, i) => recordOf(FACTSET, store, inv, i),
  ),
  environment: single('v4.environments.one', '/v4/environments/{environment}', 'One environment', (store, inv, i) =>
    recordOf(ENVIRONMENT, store, inv, i),
  ),
};

/** A `/v4` operation at PuppetDB's URL (`/pdb/query/v4/...`). */
const atPuppetdbUrl = <T extends Operation>(op: T): T => ({
  ...op,
  name: op.name.replace(/^v4\./, 'pdb.query.'),
  path: `/pdb/query${op.path}`,
  summary: `${op.summary} (PuppetDB URL)`,
});

/**
 * The query endpoints at PuppetDB's URLs (`/pdb/query/v4/resources`, `/pdb/query/v4/nodes/{certname}`, ...), as
 * pypuppetdb and Puppetboard ask them: each runs its `/v4` twin's query, so criteria, paging, errors and the
 * active-node rule are the same; report records take PuppetDB's field names, as at the root endpoint.
 */
export const pdbQueryEndpoints = Object.fromEntries(
  Object.entries(queryEndpoints).map(([key, q]) => {
    const run: QueryRun =
      q.get.path.startsWith('/v4/environments/{environment}/reports') || key === 'reports'
        ? async (store, inv, i) => inv.withPuppetdbNames(await q.run(store, inv, i), i.query)
        : q.run;
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
) as Record<string, QueryOperations>;

export const pdbSingleEndpoints = Object.fromEntries(
  Object.entries(singleEndpoints).map(([key, op]) => [key, atPuppetdbUrl(op)]),
) as typeof singleEndpoints;

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

// ---- metrics: the population figures Puppetboard shows, as PuppetDB's Jolokia endpoint answers them ----------------

const POPULATION = 'puppetlabs.puppetdb.population';
/** PuppetDB's population mbeans, by their `name=` key. */
const POPULATION_MBEANS = [
  'num-nodes',
  'num-resources',
  'avg-resources-per-node',
  'pct-resource-dupes',
  'num-inactive-nodes',
] as const;

/** The population figures of the stored inventory, each from a query both backends answer. */
async function population(store: InventoryStore, inv: Inventory): Promise<Record<string, number>> {
  const count = async (entity: string, query: unknown[]) => {
    const found = await store.query(
      inv.ENTITIES[entity]!,
      new URLSearchParams({ query: JSON.stringify(['extract', [['function', 'count']], ...query]) }),
    );
    return Number((found.rows[0] as { count: number } | undefined)?.count ?? 0);
  };
  const nodes = await count('nodes', []);
  const resources = await count('resources', []);
  const distinct = (
    await store.query(
      inv.resources,
      new URLSearchParams({ query: JSON.stringify(['extract', ['resource'], ['group_by', 'resource']]) }),
    )
  ).rows.length;
  return {
    'num-nodes': nodes,
    'num-resources': resources,
    'avg-resources-per-node': nodes ? resources / nodes : 0,
    'pct-resource-dupes': resources ? (resources - distinct) / resources : 0,
    'num-inactive-nodes': await count('nodes', [['=', 'node_state', 'inactive']]),
  };
}

/** What Jolokia's list says of each attribute (PuppetDB's population mbeans have one, Value). */
const MBEAN_INFO = {
  attr: { Value: { rw: false, type: 'java.lang.Object', desc: 'Attribute exposed for management' } },
  desc: 'Information on the management interface of the MBean',
};

export const metricsList = operation({
  name: 'metrics.list',
  method: 'GET',
  path: '/metrics/v2/list',
  summary: "The metrics nfv answers (PuppetDB's population mbeans), as Jolokia lists them",
  reply: 'json',
  status: 200,
  errors: 'puppetdb',
  handler: async (i) => {
    noParameters(i.query);
    const beans = Object.fromEntries(POPULATION_MBEANS.map((m) => [`name=${m}`, MBEAN_INFO]));
    return json({ request: { type: 'list' }, value: { [POPULATION]: beans }, status: 200 });
  },
});

/** A Jolokia name from a URL segment: `!/` is `/`, `!"` is `"`, `!!` is `!` (Jolokia's escapes). */
const jolokiaName = (segment: string) => segment.replace(/!(.)/g, '$1');

export const metricsRead = operation({
  name: 'metrics.read',
  method: 'GET',
  path: '/metrics/v2/read/{mbean}',
  summary: 'One population figure (num-nodes, num-resources, ...), as Jolokia reads an mbean',
  reply: 'json',
  status: 200,
  errors: 'puppetdb',
  handler: async (i) => {
    noParameters(i.query);
    const mbean = jolokiaName(String(i.params.mbean));
    const request = { mbean, type: 'read' };
    const name = mbean.startsWith(`${POPULATION}:name=`) ? mbean.slice(POPULATION.length + 6) : undefined;
    // Jolokia answers an unknown mbean with HTTP 200 and its own status; pypuppetdb raises on `error`.
    if (name === undefined || !(POPULATION_MBEANS as readonly string[]).includes(name))
      return json({
        request,
        error_type: 'javax.management.InstanceNotFoundException',
        error: `javax.management.InstanceNotFoundException : ${clip(mbean)}`,
        status: 404,
      });
    const figures = await population(await storeOf(i), await inventory());
    return json({ request, value: { Value: figures[name] }, timestamp: Math.floor(Date.now() / 1000), status: 200 });
  },
});

export const inventoryOperations: Operation[] = [
  metaVersion,
  metaServerTime,
  statusService,
  metricsList,
  metricsRead,
  ingestCommand,
  ingestBatch,
  pdbCommand,
  ...Object.values(queryEndpoints).flatMap((q) => [q.get, q.post]),
  ...Object.values(pdbQueryEndpoints).flatMap((q) => [q.get, q.post]),
  ...Object.values(singleEndpoints),
  ...Object.values(pdbSingleEndpoints),
  rootQuery.get,
  rootQuery.post,
];
