/**
 * The inventory in PostgreSQL tables (`--database`): nodes, resources, reports and events, with indexes (migration 2
 * in store/postgres.ts). Queries are compiled to SQL (query/sql.ts), ordered and paged in SQL; answers are rendered by
 * the same records as the folder backend's, from rows in the same order, so both backends give the same bytes.
 *
 * A batch of commands is one transaction. It first locks the rows of the batch's nodes (in one order, so two
 * writers cannot deadlock), decides each command with PuppetDB's staleness rules (`decide`, shared with the folder
 * backend) on what those rows and the stored report hashes say, then writes: a catalog replaces its node's
 * resources, a report adds its events and moves the node's latest report, a change of node activity updates its
 * resources. Lock waits are bounded by lock_timeout and queries by statement_timeout (503 when exceeded).
 */
import type pg from 'pg';
import { NfvError } from '../model/errors.js';
import { MAX_QUERY_SECONDS, QUERY_WORK_MEM_MB } from '../model/limits.js';
import { copyField, copyIn, type PostgresAreas } from '../store/postgres.js';
import type { CommandResult, InventoryStore, StoredReportParts } from './backend.js';
import {
  EVENT_OWN_COLUMNS,
  catalogs,
  events,
  resources,
  type CatalogItem,
  type Entity,
  type EventItem,
  type ReportItem,
  type ResourceItem,
} from './entities.js';
import {
  decide,
  emptyIngestState,
  emptyInventory,
  factOf,
  outcomeOf,
  prepareEach,
  type EventRow,
  type Prepared,
} from './ingest.js';
import { page, param, parsePaging, sortRows, type Paging } from './paging.js';
import { compileQuery, parseQueryParameter, project } from './query/ast.js';
import { SqlParameters, aggregateSql, filterSql, groupKey, orderKey } from './query/sql.js';
import {
  aggregateEventCounts,
  checkQuery,
  distinctWindow,
  eventCounts,
  parseCountsFilter,
  type Answer,
} from './service.js';
import { canonicalJson } from './values.js';
import { factLeaves, factRows, type FactLeaf } from './facts.js';

/** Rows of one catalog (or events of one report) per `ord` step: ord = owner's place * 2^24 + row's place. */
const PLACES = 2 ** 24;

/**
 * A resource's record as JSON text, byte for byte what JSON.stringify gives `resources.record` (the same keys in
 * the same order; to_json escapes text as JSON.stringify does; `parameters` is stored as nfv wrote it).
 */
const RESOURCE_JSON = `'{"certname":' || to_json(x.certname)::text || ',"resource":' || to_json(x.resource)::text
  || ',"type":' || to_json(x.type)::text || ',"title":' || to_json(x.title)::text
  || ',"exported":' || x.exported::text || ',"tags":' || array_to_json(x.tags)::text
  || ',"file":' || coalesce(to_json(x.file)::text, 'null') || ',"line":' || coalesce(x.line::text, 'null')
  || ',"environment":' || coalesce(to_json(x.environment)::text, 'null') || ',"parameters":' || x.parameters::text
  || '}'`;
function eventRow(r: any): EventRow {
  return {
    status: r.status,
    timestamp: r.timestamp,
    resource_type: r.resource_type,
    resource_title: r.resource_title,
    property: r.property,
    name: r.name,
    new_value: r.new_value,
    old_value: r.old_value,
    message: r.message,
    file: r.file,
    line: r.line,
    containment_path: r.containment_path,
    containing_class: r.containing_class,
  };
}

/** The rows of the events source in an order-preserving window: per event key only its newest in the time span. */
function distinctSource(window: { from: number; to: number }, params: SqlParameters): string {
  const key = 's.certname, s.resource_type, s.resource_title, s.property, s.name';
  return `(SELECT * FROM (SELECT s.*, row_number() OVER (PARTITION BY ${key} ORDER BY s."timestamp" DESC, s.ord)
    AS newest, min(s.ord) OVER (PARTITION BY ${key}) AS first FROM ${events.sql.source} s
    WHERE s."timestamp" >= ${params.add(window.from, 'float8')} AND s."timestamp" <= ${params.add(window.to, 'float8')})
    d WHERE d.newest = 1)`;
}

/** Where an entity's rows come from for this query, and the column that gives the folder backend's order. */
function sourceOf(
  entity: Entity,
  window: { from: number; to: number } | undefined,
  params: SqlParameters,
): { from: string; ord: string } {
  if (window) return { from: distinctSource(window, params), ord: 'first' };
  return { from: entity.sql.source, ord: 'ord' };
}

const orderBy = (keys: string[], ord: string) => [...keys, `x.${ord}`].join(', ');
const limits = (p: Paging) => `${p.limit === undefined ? '' : ` LIMIT ${p.limit}`} OFFSET ${p.offset}`;

export class PostgresInventoryStore implements InventoryStore {
  constructor(private readonly db: PostgresAreas) {}

  /**
   * Runs reads in one read-only snapshot, bounded by statement_timeout, with planner settings for what these reads
   * are: selective queries over a fleet that stays in memory. PostgreSQL's defaults are made for spinning disks
   * (random_page_cost 4 makes it scan the whole table rather than follow the tags index to a tenth of it), sort in
   * 4 MB (a large answer's sort went to temporary files) and compile expressions with JIT (30-40 ms spent on each
   * large answer, gained back by none). Measured at 1,000,000 resources: tag=profile::nginx from 600 to 370 ms.
   */
  private read<R>(fn: (client: pg.PoolClient) => Promise<R>): Promise<R> {
    return this.db.session(async (client) => {
      // One round trip for the transaction and its settings (a small answer's time is mostly round trips).
      await client.query(
        'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; ' +
          `SET LOCAL statement_timeout = ${MAX_QUERY_SECONDS * 1000}; SET LOCAL random_page_cost = 1.1; ` +
          `SET LOCAL work_mem = '${QUERY_WORK_MEM_MB}MB'; SET LOCAL jit = off`,
      );
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    });
  }

  async query(entity: Entity, query: URLSearchParams, fixed: unknown[] = []): Promise<Answer> {
    // Checked by the folder backend's code on no data: the same 400s, before any SQL.
    const { paging, compiled, window } = checkQuery(entity, emptyInventory(), query, fixed);
    const params = new SqlParameters();
    const source = sourceOf(entity, window, params);
    const where = filterSql(entity, compiled.where, 'x', params);
    const from = `${source.from} x WHERE ${where}`;
    const extract = compiled.extract;
    return this.read(async (client) => {
      if (extract && (extract.groupBy.length || extract.columns.some((c) => c.fn))) {
        const grouped = await this.grouped(client, entity, source, where, params, extract);
        const sorted = sortProjected(grouped, paging);
        const paged = page(sorted, paging);
        return { rows: paged.rows, total: paging.includeTotal ? paged.total : undefined };
      }
      // An extract orders only by the fields it answers (the folder backend sorts the answered records).
      const names = new Set(extract?.columns.map((c) => c.name));
      const keys = paging.orderBy
        .filter((o) => !extract || names.has(o.field))
        .map((o) => `${orderKey(entity, 'x', o.field)} ${o.desc ? 'DESC' : 'ASC'}`);
      const total = paging.includeTotal
        ? Number((await client.query(`SELECT count(*) AS n FROM ${from}`, params.values)).rows[0].n)
        : undefined;
      const order = `ORDER BY ${orderBy(keys, source.ord)}${limits(paging)}`;
      if (entity === resources && !extract) {
        // Resource answers are the largest: PostgreSQL writes each record's JSON, which nfv only joins.
        const found = await client.query(`SELECT ${RESOURCE_JSON} AS j FROM ${from} ${order}`, params.values);
        const json = `[${found.rows.map((r) => r.j).join(',')}]`;
        return {
          get rows() {
            return JSON.parse(json) as unknown[];
          },
          json,
          total,
        };
      }
      const found = await client.query(`SELECT ${entity.sql.select} FROM ${from} ${order}`, params.values);
      const items = await this.items(client, entity, found.rows);
      return { rows: extract ? project(items, extract, entity) : items.map(entity.record), total };
    });
  }

  /** Rows as the entity's items (what its fields and record read); reports get their events, catalogs their parts. */
  private async items(client: pg.PoolClient, entity: Entity, rows: any[]): Promise<unknown[]> {
    if (entity === resources) return rows as ResourceItem[];
    if (entity === catalogs) return this.catalogItems(client, rows);
    if (entity !== events && entity.name !== 'reports') return rows;
    if (entity === events) {
      return rows.map((r): EventItem => ({
        ...eventRow(r),
        report: {
          certname: r.certname,
          hash: r.report,
          configuration_version: r.configuration_version,
          environment: r.environment,
          start_time: r.run_start_time,
          end_time: r.run_end_time,
          receive_time: r.report_receive_time,
          latest: r.latest,
        } as ReportItem,
      }));
    }
    const byReport = new Map<number, EventRow[]>(rows.map((r) => [r.id, []]));
    if (rows.length) {
      const found = await client.query(
        `SELECT x.report_id::float8 AS report_id, ${EVENT_OWN_COLUMNS} FROM nfv_inv_events x
         WHERE x.report_id = ANY($1::bigint[]) ORDER BY x.ord`,
        [rows.map((r) => r.id)],
      );
      for (const e of found.rows) byReport.get(e.report_id)!.push(eventRow(e));
    }
    return rows.map((r): ReportItem => {
      const { id, ...report } = r;
      return { ...report, events: byReport.get(id)! };
    });
  }

  /** Catalogs with their resources and edges, each in its stored order. */
  private async catalogItems(client: pg.PoolClient, rows: any[]): Promise<CatalogItem[]> {
    const certnames = rows.map((r) => r.certname as string);
    const parts = new Map(certnames.map((c) => [c, { resources: [] as any[], edges: [] as any[] }]));
    if (rows.length) {
      const found = await client.query(
        `SELECT ${resources.sql.select} FROM nfv_inv_resources x WHERE x.certname = ANY($1::text[]) ORDER BY x.ord`,
        [certnames],
      );
      for (const r of found.rows) parts.get(r.certname)!.resources.push(r);
      const edgeRows = await client.query(
        `SELECT x.certname, x.source_type, x.source_title, x.target_type, x.target_title, x.relationship
         FROM nfv_inv_edges x WHERE x.certname = ANY($1::text[]) ORDER BY x.ord`,
        [certnames],
      );
      for (const e of edgeRows.rows) {
        const { certname, ...edge } = e;
        parts.get(certname)!.edges.push(edge);
      }
    }
    return rows.map((r) => ({ ...r, ...parts.get(r.certname)! }));
  }

  /** An extract with aggregates or group_by: one row per group, in the order of each group's first row. */
  private async grouped(
    client: pg.PoolClient,
    entity: Entity,
    source: { from: string; ord: string },
    where: string,
    params: SqlParameters,
    extract: NonNullable<ReturnType<typeof compileQuery>['extract']>,
  ): Promise<Record<string, unknown>[]> {
    const aggregates = extract.columns.map((c, k) =>
      c.fn ? `${aggregateSql(entity, 'x', params, c.fn.name, c.fn.raw)} AS a${k}` : `NULL AS a${k}`,
    );
    const groups = extract.groupBy.map((g) => groupKey(entity, 'x', g));
    const sql = `WITH g AS (SELECT min(x.${source.ord}) AS first, ${aggregates.join(', ')}
      FROM ${source.from} x WHERE ${where} ${groups.length ? `GROUP BY ${groups.join(', ')}` : ''})
      SELECT ${entity.sql.select}, ${extract.columns.map((_, k) => `g.a${k}`).join(', ')}
      FROM g JOIN ${source.from} x ON x.${source.ord} = g.first ORDER BY g.first`;
    const rows = (await client.query(sql, params.values)).rows;
    if (rows.length === 0 && extract.groupBy.length === 0) return project([], extract, entity);
    const items = await this.items(client, entity, rows);
    return items.map((item, n) => {
      const record = entity.record(item);
      const out: Record<string, unknown> = {};
      extract.columns.forEach((c, k) => {
        out[c.name] = c.fn ? rows[n][`a${k}`] : c.value!(item, record);
      });
      return out;
    });
  }

  async eventCounts(query: URLSearchParams): Promise<Answer> {
    eventCounts(emptyInventory(), query);
    const summarizeBy = param(query, 'summarize_by')!;
    const grouping = summarizeBy === 'resource' ? ['resource_type', 'resource_title'] : [summarizeBy];
    const paging = parsePaging(query, ['failures', 'successes', 'noops', 'skips', ...grouping]);
    return this.read(async (client) => {
      const params = new SqlParameters();
      const groups = this.countGroups(query, summarizeBy, params);
      const keys = paging.orderBy.map((o) => {
        const key =
          o.field === 'resource_type'
            ? 'c.subject_type COLLATE "C"'
            : grouping.includes(o.field)
              ? 'c.subject_title COLLATE "C"'
              : `c.${o.field}`;
        return `${key} ${o.desc ? 'DESC' : 'ASC'}`;
      });
      const rows = await client.query(
        `SELECT * FROM ${groups} c ORDER BY ${[...keys, 'c.first'].join(', ')}${limits(paging)}`,
        params.values,
      );
      const total = paging.includeTotal
        ? Number((await client.query(`SELECT count(*) AS n FROM ${groups} c`, params.values)).rows[0].n)
        : undefined;
      return { rows: rows.rows.map((r) => countRow(summarizeBy, r)), total };
    });
  }

  async aggregateEventCounts(query: URLSearchParams): Promise<Answer> {
    aggregateEventCounts(emptyInventory(), query);
    return this.read(async (client) => {
      const rows: unknown[] = [];
      for (const s of param(query, 'summarize_by')!.split(',')) {
        const params = new SqlParameters();
        const having = (f: string) => `count(*) FILTER (WHERE c.${f} > 0)::float8 AS ${f}`;
        const r = await client.query(
          `SELECT ${['successes', 'failures', 'noops', 'skips'].map(having).join(', ')}, count(*)::float8 AS total
           FROM ${this.countGroups(query, s.trim(), params)} c`,
          params.values,
        );
        rows.push({ summarize_by: s.trim(), ...r.rows[0] });
      }
      return { rows };
    });
  }

  /** Event counts per subject as a derived table: subject_type, subject_title, the four counts, first. */
  private countGroups(query: URLSearchParams, summarizeBy: string, params: SqlParameters): string {
    const source = sourceOf(events, distinctWindow(query), params);
    const where = filterSql(events, parseQueryParameter(param(query, 'query')), 'x', params);
    const counted = (param(query, 'count_by') ?? 'resource') === 'certname' ? 'DISTINCT x.certname' : '*';
    const count = (status: string) => `count(${counted}) FILTER (WHERE x.status = '${status}')::float8`;
    const subject =
      summarizeBy === 'resource'
        ? ['x.resource_type', 'x.resource_title']
        : [`NULL::text`, summarizeBy === 'certname' ? 'x.certname' : 'x.containing_class'];
    const filter = parseCountsFilter(param(query, 'counts_filter'));
    return `(SELECT * FROM (SELECT ${subject[0]} AS subject_type, ${subject[1]} AS subject_title,
      ${count('failure')} AS failures, ${count('success')} AS successes, ${count('noop')} AS noops,
      ${count('skipped')} AS skips, min(x.${source.ord}) AS first
      FROM ${source.from} x WHERE ${where} GROUP BY ${subject.filter((s) => s !== 'NULL::text').join(', ')}) g
      ${filter ? `WHERE g.${filter.field} ${filter.op} ${params.add(filter.value, 'float8')}` : ''})`;
  }

  async report(hash: string): Promise<StoredReportParts | undefined> {
    return this.read(async (client) => {
      const r = await client.query('SELECT metrics, logs FROM nfv_inv_reports WHERE hash = $1', [hash]);
      return r.rows[0];
    });
  }

  async apply(commands: unknown[], now: number): Promise<CommandResult[]> {
    const prepared = prepareEach(commands, now);
    const valid = prepared.filter((p): p is Prepared => !(p instanceof NfvError));
    const applied = valid.length ? await this.write(valid) : [];
    let k = 0;
    return prepared.map((p) => (p instanceof NfvError ? { error: p } : { ok: outcomeOf(p, applied[k++]!) }));
  }

  /** Stores commands already checked (a folder's inventory moving in), in batches; false when it holds data. */
  async importPrepared(commands: Prepared[]): Promise<boolean> {
    const held = await this.db.session((c) => c.query('SELECT EXISTS (SELECT 1 FROM nfv_inv_nodes) AS held'));
    if (held.rows[0].held) return false;
    for (let k = 0; k < commands.length; k += 1000) await this.write(commands.slice(k, k + 1000));
    return true;
  }

  /** Rows per table, for `nfv db status`. */
  async counts(): Promise<Record<string, number>> {
    return this.read(async (client) => {
      const r = await client.query(`SELECT (SELECT count(*) FROM nfv_inv_nodes)::float8 AS nodes,
        (SELECT count(*) FROM nfv_inv_resources)::float8 AS resources,
        (SELECT count(*) FROM nfv_inv_reports)::float8 AS reports,
        (SELECT count(*) FROM nfv_inv_events)::float8 AS events`);
      // Facts came with migration 4: a database not yet migrated to it has none.
      const facts = await client.query(`SELECT to_regclass('nfv_inv_factsets') IS NOT NULL AS held`);
      const factsets = facts.rows[0].held
        ? Number((await client.query('SELECT count(*) AS n FROM nfv_inv_factsets')).rows[0].n)
        : 0;
      return { ...r.rows[0], factsets };
    });
  }

  /** Settles when the batch written last has locked its nodes' rows (or failed). */
  private lastLocked: Promise<void> = Promise.resolve();

  /**
   * One transaction for the batch; retried when PostgreSQL chose it as a deadlock's or serialisation's victim.
   * A batch locks its nodes only once the batches this process was given before it have locked theirs, so that
   * commands on one node apply in the order they came, while batches on other nodes are written side by side. Its
   * rows are made before that wait: a caller with the next batch ready (batch ingest) prepares it while the one
   * before is written. The wait comes before taking a connection, so waiting batches never hold the pool.
   */
  private async write(batch: Prepared[]): Promise<boolean[]> {
    const rows = new Map(batch.flatMap((p) => (p.kind === 'facts' ? [[p, factsetRows(p)] as const] : [])));
    const before = this.lastLocked;
    let locked!: () => void;
    this.lastLocked = new Promise((resolve) => (locked = resolve));
    try {
      await before;
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.db.session(async (client) => {
            await client.query('BEGIN');
            await client.query(`SET LOCAL lock_timeout = ${this.db.lockTimeout}`);
            const applied = await writeBatch(client, batch, rows, locked);
            await client.query('COMMIT');
            return applied;
          });
        } catch (e) {
          const code = (e as { code?: string }).code;
          if (attempt >= 3 || (code !== '40P01' && code !== '40001')) throw e;
        }
      }
    } finally {
      locked();
    }
  }
}

/** The counts of a group as the folder backend answers them. */
function countRow(summarizeBy: string, r: any): Record<string, unknown> {
  return {
    subject_type: summarizeBy,
    subject: summarizeBy === 'resource' ? { type: r.subject_type, title: r.subject_title } : { title: r.subject_title },
    failures: r.failures,
    successes: r.successes,
    noops: r.noops,
    skips: r.skips,
  };
}

/** Grouped extract rows ordered as the folder backend orders them (by the answered values). */
function sortProjected(rows: Record<string, unknown>[], paging: Paging): Record<string, unknown>[] {
  return paging.orderBy.length ? sortRows(rows, paging.orderBy, (r, f) => r[f]) : rows;
}

interface NodeState {
  certname: string;
  deactivated: number | null;
  last_seen: number | null;
  catalog_time: number | null;
  catalog_ord: number | null;
  latest_report_time: number | null;
  facts_time: number | null;
}

const num = (v: string | null) => (v === null ? null : Number(v));

type FactsCommand = Extract<Prepared, { kind: 'facts' }>;

/**
 * Decides and writes a batch inside the caller's transaction; answers which commands applied. `onLocked` is called
 * once the batch's nodes are locked; `rows` are the factsets' rows.
 */
async function writeBatch(
  client: pg.PoolClient,
  batch: Prepared[],
  rows: Map<Prepared, FactsetRows>,
  onLocked: () => void,
): Promise<boolean[]> {
  const certnames = [...new Set(batch.map((p) => p.certname))].sort();
  // New nodes first, then every node row locked, both in one order.
  await client.query(
    `INSERT INTO nfv_inv_nodes (certname) SELECT c FROM unnest($1::text[]) WITH ORDINALITY AS u(c, k) ORDER BY k
     ON CONFLICT DO NOTHING`,
    [certnames],
  );
  const locked = await client.query(
    `SELECT n.certname, n.deactivated, n.last_seen, n.catalog_time, n.catalog_ord, n.latest_report_time, n.facts_time
     FROM unnest($1::text[]) WITH ORDINALITY AS u(c, k) JOIN nfv_inv_nodes n ON n.certname = u.c
     ORDER BY u.k FOR UPDATE OF n`,
    [certnames],
  );
  onLocked();
  const nodes = new Map<string, NodeState>();
  const state = emptyIngestState();
  for (const r of locked.rows) {
    const n: NodeState = {
      certname: r.certname,
      deactivated: num(r.deactivated),
      last_seen: num(r.last_seen),
      catalog_time: num(r.catalog_time),
      catalog_ord: num(r.catalog_ord),
      latest_report_time: num(r.latest_report_time),
      facts_time: num(r.facts_time),
    };
    nodes.set(n.certname, n);
    if (n.last_seen !== null || n.deactivated !== null)
      state.nodes[n.certname] = { deactivated: n.deactivated, lastSeen: n.last_seen ?? Number.NEGATIVE_INFINITY };
    if (n.catalog_time !== null) state.catalogTimes[n.certname] = n.catalog_time;
    if (n.facts_time !== null) state.factTimes[n.certname] = n.facts_time;
  }
  const wasActive = new Map([...nodes.values()].map((n) => [n.certname, n.deactivated === null]));
  const hashes = batch.flatMap((p) => (p.kind === 'report' ? [p.report.hash] : []));
  if (hashes.length) {
    const stored = await client.query('SELECT hash FROM nfv_inv_reports WHERE hash = ANY($1::text[])', [hashes]);
    for (const r of stored.rows) state.hashes.add(r.hash);
  }
  const applied = batch.map((p) => decide(state, factOf(p)));
  const done = batch.filter((_, k) => applied[k]);

  // Catalogs: the last applied one per node replaces its resources; a node's first catalog takes the next place.
  const catalogs = new Map<string, Extract<Prepared, { kind: 'catalog' }>>();
  for (const p of done) if (p.kind === 'catalog') catalogs.set(p.certname, p);
  const placeless = [...catalogs.keys()].filter((c) => nodes.get(c)!.catalog_ord === null);
  if (placeless.length) {
    const ords = await client.query(
      `SELECT nextval('nfv_inv_catalog_ord')::float8 AS n FROM generate_series(1, $1::int)`,
      [placeless.length],
    );
    placeless.forEach((c, k) => (nodes.get(c)!.catalog_ord = ords.rows[k].n));
  }
  for (const n of nodes.values()) {
    const s = state.nodes[n.certname];
    n.deactivated = s?.deactivated ?? null;
    n.last_seen = s && Number.isFinite(s.lastSeen) ? s.lastSeen : null;
    n.catalog_time = state.catalogTimes[n.certname] ?? null;
    n.facts_time = state.factTimes[n.certname] ?? null;
  }

  // Reports: ids in arrival order; an agent report newer than the node's latest becomes the latest.
  const stored = done.filter((p): p is Extract<Prepared, { kind: 'report' }> => p.kind === 'report');
  const ids = stored.length
    ? (
        await client.query(`SELECT nextval('nfv_inv_report_id')::float8 AS n FROM generate_series(1, $1::int)`, [
          stored.length,
        ])
      ).rows.map((r) => r.n as number)
    : [];
  const latest = new Map<string, number>();
  stored.forEach((p, k) => {
    const n = nodes.get(p.certname)!;
    if (p.report.type !== 'agent') return;
    if (n.latest_report_time === null || p.at > n.latest_report_time) {
      n.latest_report_time = p.at;
      latest.set(p.certname, ids[k]!);
    }
  });

  await client.query(
    `UPDATE nfv_inv_nodes n SET deactivated = u.deactivated, last_seen = u.last_seen, catalog_time = u.catalog_time,
       catalog_ord = u.catalog_ord, latest_report_time = u.latest_report_time, facts_time = u.facts_time,
       catalog_environment = CASE WHEN u.environment_set THEN u.environment ELSE n.catalog_environment END,
       catalog_version = CASE WHEN u.environment_set THEN u.version ELSE n.catalog_version END
     FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::boolean[],
       $8::text[], $9::text[], $10::bigint[])
       AS u(certname, deactivated, last_seen, catalog_time, catalog_ord, latest_report_time, environment_set,
         environment, version, facts_time)
     WHERE n.certname = u.certname`,
    columns(
      [...nodes.values()],
      [
        (n) => n.certname,
        (n) => n.deactivated,
        (n) => n.last_seen,
        (n) => n.catalog_time,
        (n) => n.catalog_ord,
        (n) => n.latest_report_time,
        (n) => catalogs.has(n.certname),
        (n) => catalogs.get(n.certname)?.catalog.environment ?? null,
        (n) => catalogs.get(n.certname)?.catalog.version ?? null,
        (n) => n.facts_time,
      ],
    ),
  );
  if (catalogs.size) await writeCatalogDetails(client, [...catalogs.values()], nodes);
  const factsets = new Map<string, FactsCommand>();
  for (const p of done) if (p.kind === 'facts') factsets.set(p.certname, p);
  if (factsets.size) await writeFacts(client, [...factsets.values()], rows);

  if (catalogs.size) {
    await client.query('DELETE FROM nfv_inv_resources WHERE certname = ANY($1::text[])', [[...catalogs.keys()]]);
    const rows = [...catalogs.values()].flatMap((p) => {
      const base = nodes.get(p.certname)!.catalog_ord! * PLACES;
      const active = nodes.get(p.certname)!.deactivated === null;
      return p.catalog.resources.map((r, k) => ({ ord: base + k, r, active }));
    });
    await client.query(
      `INSERT INTO nfv_inv_resources (ord, certname, resource, type, title, exported, tags, file, line, environment,
         parameters, params, active)
       SELECT o, c, r, ty, ti, ex, ARRAY(SELECT json_array_elements_text(tg::json)), fi, li, en, pa::json, pa::jsonb, ac
       FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::boolean[], $7::text[],
         $8::text[], $9::int[], $10::text[], $11::text[], $12::boolean[])
         AS u(o, c, r, ty, ti, ex, tg, fi, li, en, pa, ac)`,
      columns(rows, [
        (x) => x.ord,
        (x) => x.r.certname,
        (x) => x.r.resource,
        (x) => x.r.type,
        (x) => x.r.title,
        (x) => x.r.exported,
        (x) => JSON.stringify(x.r.tags),
        (x) => x.r.file,
        (x) => x.r.line,
        (x) => x.r.environment,
        (x) => JSON.stringify(x.r.parameters),
        (x) => x.active,
      ]),
    );
  }

  // Nodes whose activity changed and whose resources were not just written.
  for (const active of [true, false]) {
    const changed = [...nodes.values()]
      .filter((n) => !catalogs.has(n.certname) && (n.deactivated === null) === active)
      .filter((n) => wasActive.get(n.certname) !== active)
      .map((n) => n.certname);
    if (changed.length)
      await client.query('UPDATE nfv_inv_resources SET active = $2 WHERE certname = ANY($1::text[])', [
        changed,
        active,
      ]);
  }

  if (stored.length) {
    if (latest.size)
      await client.query('UPDATE nfv_inv_reports SET latest = false WHERE latest AND certname = ANY($1::text[])', [
        [...latest.keys()],
      ]);
    const reportsIn = stored.map((p, k) => ({ id: ids[k]!, r: p.report, latest: latest.get(p.certname) === ids[k] }));
    await client.query(
      `INSERT INTO nfv_inv_reports (id, hash, certname, puppet_version, report_format, configuration_version,
         start_time, end_time, producer_timestamp, receive_time, producer, transaction_uuid, catalog_uuid, code_id,
         job_id, cached_catalog_status, status, noop, noop_pending, environment, type, latest, metrics, logs)
       SELECT id, h, c, pv, rf, cv, st, et, pt, rt, pr, tu, cu, ci, ji, cc, s, n, np, en, ty, la, me::json, lo::json
       FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::bigint[],
         $8::bigint[], $9::bigint[], $10::bigint[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
         $16::text[], $17::text[], $18::boolean[], $19::boolean[], $20::text[], $21::text[], $22::boolean[],
         $23::text[], $24::text[])
         AS u(id, h, c, pv, rf, cv, st, et, pt, rt, pr, tu, cu, ci, ji, cc, s, n, np, en, ty, la, me, lo)`,
      columns(reportsIn, [
        (x) => x.id,
        (x) => x.r.hash,
        (x) => x.r.certname,
        (x) => x.r.puppet_version,
        (x) => x.r.report_format,
        (x) => x.r.configuration_version,
        (x) => x.r.start_time,
        (x) => x.r.end_time,
        (x) => x.r.producer_timestamp,
        (x) => x.r.receive_time,
        (x) => x.r.producer,
        (x) => x.r.transaction_uuid,
        (x) => x.r.catalog_uuid,
        (x) => x.r.code_id,
        (x) => x.r.job_id,
        (x) => x.r.cached_catalog_status,
        (x) => x.r.status,
        (x) => x.r.noop,
        (x) => x.r.noop_pending,
        (x) => x.r.environment,
        (x) => x.r.type,
        (x) => x.latest,
        (x) => (x.r.metrics === null ? null : JSON.stringify(x.r.metrics)),
        (x) => (x.r.logs === null ? null : JSON.stringify(x.r.logs)),
      ]),
    );
    const eventsIn = reportsIn.flatMap((x) => x.r.events.map((e, k) => ({ id: x.id, ord: x.id * PLACES + k, e })));
    if (eventsIn.length)
      await client.query(
        `INSERT INTO nfv_inv_events (ord, report_id, status, "timestamp", resource_type, resource_title, property,
           name, new_value, old_value, new_value_canon, old_value_canon, message, file, line, containment_path,
           containing_class)
         SELECT o, id, s, t, rt, rti, pr, na, nv::json, ov::json, nc, oc, me, fi, li,
           CASE WHEN cp IS NULL THEN NULL ELSE ARRAY(SELECT json_array_elements_text(cp::json)) END, cc
         FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[],
           $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::int[],
           $16::text[], $17::text[])
           AS u(o, id, s, t, rt, rti, pr, na, nv, ov, nc, oc, me, fi, li, cp, cc)`,
        columns(eventsIn, [
          (x) => x.ord,
          (x) => x.id,
          (x) => x.e.status,
          (x) => x.e.timestamp,
          (x) => x.e.resource_type,
          (x) => x.e.resource_title,
          (x) => x.e.property,
          (x) => x.e.name,
          (x) => JSON.stringify(x.e.new_value ?? null),
          (x) => JSON.stringify(x.e.old_value ?? null),
          (x) => canonicalJson(x.e.new_value ?? null),
          (x) => canonicalJson(x.e.old_value ?? null),
          (x) => x.e.message,
          (x) => x.e.file,
          (x) => x.e.line,
          (x) => (x.e.containment_path === null ? null : JSON.stringify(x.e.containment_path)),
          (x) => x.e.containing_class,
        ]),
      );
  }
  return applied;
}

/** A catalog's own row (receive time, uuids, producer, hash) and its edges, replacing the node's previous ones. */
async function writeCatalogDetails(
  client: pg.PoolClient,
  catalogs: Extract<Prepared, { kind: 'catalog' }>[],
  nodes: Map<string, NodeState>,
): Promise<void> {
  const certnames = catalogs.map((p) => p.certname);
  await client.query(
    `INSERT INTO nfv_inv_catalogs (certname, version, environment, transaction_uuid, catalog_uuid, code_id, job_id,
       producer, producer_timestamp, receive_time, hash, ord)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
       $8::text[], $9::bigint[], $10::bigint[], $11::text[], $12::bigint[])
     ON CONFLICT (certname) DO UPDATE SET version = EXCLUDED.version, environment = EXCLUDED.environment,
       transaction_uuid = EXCLUDED.transaction_uuid, catalog_uuid = EXCLUDED.catalog_uuid, code_id = EXCLUDED.code_id,
       job_id = EXCLUDED.job_id, producer = EXCLUDED.producer, producer_timestamp = EXCLUDED.producer_timestamp,
       receive_time = EXCLUDED.receive_time, hash = EXCLUDED.hash, ord = EXCLUDED.ord`,
    columns(catalogs, [
      (p) => p.certname,
      (p) => p.catalog.version,
      (p) => p.catalog.environment,
      (p) => p.catalog.transaction_uuid ?? null,
      (p) => p.catalog.catalog_uuid ?? null,
      (p) => p.catalog.code_id ?? null,
      (p) => p.catalog.job_id ?? null,
      (p) => p.catalog.producer ?? null,
      (p) => p.catalog.producer_timestamp,
      (p) => p.catalog.timestamp ?? null,
      (p) => p.catalog.hash ?? null,
      (p) => nodes.get(p.certname)!.catalog_ord,
    ]),
  );
  await client.query('DELETE FROM nfv_inv_edges WHERE certname = ANY($1::text[])', [certnames]);
  const edges = catalogs.flatMap((p) =>
    (p.catalog.edges ?? []).map((e, k) => ({ ord: nodes.get(p.certname)!.catalog_ord! * PLACES + k, p, e })),
  );
  if (edges.length)
    await client.query(
      `INSERT INTO nfv_inv_edges (ord, certname, source_type, source_title, target_type, target_title, relationship)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])`,
      columns(edges, [
        (x) => x.ord,
        (x) => x.p.certname,
        (x) => x.e.source_type,
        (x) => x.e.source_title,
        (x) => x.e.target_type,
        (x) => x.e.target_title,
        (x) => x.e.relationship,
      ]),
    );
}

/** A factset's rows, made before its transaction: values as JSON, facts as COPY lines, leaves with their values. */
interface FactsetRows {
  json: string;
  facts: string;
  leaves: FactLeaf[];
  /** Each leaf's value as a COPY field of JSON. */
  values: string[];
}

function factsetRows(p: FactsCommand): FactsetRows {
  const certname = copyField(p.certname);
  let facts = '';
  for (const f of factRows(p.factset.values)) {
    const value = copyField(JSON.stringify(f.value));
    facts += `${certname}\t${copyField(f.name)}\t${value}\t${value}\n`;
  }
  const leaves = factLeaves(p.factset.values);
  const values = leaves.map((l) => copyField(JSON.stringify(l.value)));
  return { json: JSON.stringify(p.factset.values), facts, leaves, values };
}

/**
 * Nodes' facts: each factset, its top-level facts and its leaves, replacing the previous ones. Facts and leaves go
 * by COPY (the bulk of a factset's rows); leaves name their path by its id in the dictionary of paths, which gets
 * the paths it lacks.
 */
async function writeFacts(
  client: pg.PoolClient,
  factsets: FactsCommand[],
  rows: Map<Prepared, FactsetRows>,
): Promise<void> {
  const certnames = factsets.map((p) => p.certname);
  const stored = await client.query(
    `INSERT INTO nfv_inv_factsets (certname, environment, producer_timestamp, producer, receive_time, hash, facts,
       facts_jsonb)
     SELECT c, e, pt, pr, rt, h, f::json, f::jsonb
     FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[])
       AS u(c, e, pt, pr, rt, h, f)
     ON CONFLICT (certname) DO UPDATE SET environment = EXCLUDED.environment,
       producer_timestamp = EXCLUDED.producer_timestamp, producer = EXCLUDED.producer,
       receive_time = EXCLUDED.receive_time, hash = EXCLUDED.hash, facts = EXCLUDED.facts,
       facts_jsonb = EXCLUDED.facts_jsonb
     RETURNING certname, id`,
    columns(factsets, [
      (p) => p.certname,
      (p) => p.factset.environment,
      (p) => p.factset.producer_timestamp,
      (p) => p.factset.producer,
      (p) => p.factset.timestamp,
      (p) => p.factset.hash,
      (p) => rows.get(p)!.json,
    ]),
  );
  const idOf = new Map<string, number>(stored.rows.map((r) => [r.certname, r.id]));
  await client.query('DELETE FROM nfv_inv_facts WHERE certname = ANY($1::text[])', [certnames]);
  await client.query('DELETE FROM nfv_inv_fact_leaves WHERE factset_id = ANY($1::int[])', [[...idOf.values()]]);
  const facts = factsets.map((p) => rows.get(p)!.facts).join('');
  if (facts) await copyIn(client, 'COPY nfv_inv_facts (certname, name, value, value_json) FROM STDIN', facts);

  const paths = new Map<string, FactLeaf>();
  for (const p of factsets) for (const l of rows.get(p)!.leaves) paths.set(`${l.type}:${l.pathKey}`, l);
  if (!paths.size) return;
  // New paths inserted in one order, so that two writers adding the same ones cannot deadlock.
  const wanted = columns([...paths.values()], [(l) => l.pathKey, (l) => l.type, (l) => l.name]);
  await client.query(
    `INSERT INTO nfv_inv_fact_paths (path_key, type, path, name)
     SELECT k, t, k::jsonb, n FROM unnest($1::text[], $2::text[], $3::text[]) AS u(k, t, n)
     ORDER BY k COLLATE "C", t ON CONFLICT DO NOTHING`,
    wanted,
  );
  const known = await client.query(
    `SELECT p.id, p.path_key, p.type FROM unnest($1::text[], $2::text[]) AS u(k, t)
     JOIN nfv_inv_fact_paths p ON p.path_key = u.k AND p.type = u.t`,
    wanted.slice(0, 2),
  );
  const pathId = new Map<string, number>(known.rows.map((r) => [`${r.type}:${r.path_key}`, r.id]));
  const lines: string[] = [];
  for (const p of factsets) {
    const { leaves, values } = rows.get(p)!;
    const id = idOf.get(p.certname)!;
    leaves.forEach((l, k) => lines.push(`${id}\t${pathId.get(`${l.type}:${l.pathKey}`)!}\t${values[k]}\n`));
  }
  await copyIn(client, 'COPY nfv_inv_fact_leaves (factset_id, path_id, value) FROM STDIN', lines.join(''));
}

/** Column arrays for `unnest`: one array per getter, one element per row. */
function columns<T>(rows: T[], getters: ((row: T) => unknown)[]): unknown[][] {
  return getters.map((g) => rows.map(g));
}
