/**
 * The workspace areas in PostgreSQL (`--database URL` or `NFV_DATABASE_URL`): each area (`adp`, `fwd`) is one row
 * of `nfv_areas`, and every change is a transaction that holds that row's lock (`SELECT ... FOR UPDATE`) while it
 * reads, changes and writes it. Several nfv processes on one database (serve instances behind one address, shell
 * commands) therefore see each other's changes whole and never lose one. Ids come from one sequence per area and
 * kind (`nfv_adp_graph_id`, ...), so no two processes can hand out the same id even outside the lock; the area's
 * counters follow the sequences, so that the document stays valid on its own. A change that is rolled back leaves
 * a gap in the ids, never a reuse. A lock wait is bounded like the file lock's (`lock_timeout`, 503). The column is
 * `json`, not `jsonb`, so that documents keep their key order: the same input gives the same bytes on both backends.
 *
 * The schema is versioned (`nfv db migrate`, `migrations` below); a database without it is refused with a sentence
 * that says what to run.
 */
import type pg from 'pg';
import { NfvError } from '../model/errors.js';
import { DATABASE_CONNECT_TIMEOUT_MS } from '../model/limits.js';
import { Unchanged, countersOf, raiseCounter, type AreaSpec, type Change, type IdSource } from './area.js';

/** Versioned migrations, applied in order by `nfv db migrate`; never edit one that was released. */
export const MIGRATIONS: { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'workspace areas',
    sql: `CREATE TABLE nfv_areas (
            name text PRIMARY KEY,
            doc json NOT NULL,
            version bigint NOT NULL DEFAULT 1,
            updated timestamptz NOT NULL DEFAULT now()
          )`,
  },
  {
    version: 2,
    name: 'inventory tables',
    // Timestamps are milliseconds since the epoch (as the queries compare them); `ord` orders rows as the folder
    // backend does (a node's first catalog, then the resource's place in it; a report's arrival, then the event's
    // place in it), so both backends give the same bytes. `params` is the jsonb twin of `parameters`, which keeps the
    // key order of the answer. json values of events keep their canonical text for equality, regexes and ordering.
    sql: `CREATE TABLE nfv_inv_nodes (
            certname text PRIMARY KEY,
            deactivated bigint,
            last_seen bigint,
            catalog_time bigint,
            catalog_environment text,
            catalog_version text,
            catalog_ord bigint,
            latest_report_time bigint
          );
          CREATE SEQUENCE nfv_inv_catalog_ord;
          CREATE TABLE nfv_inv_resources (
            ord bigint PRIMARY KEY,
            certname text NOT NULL,
            resource text NOT NULL,
            type text NOT NULL,
            title text NOT NULL,
            exported boolean NOT NULL,
            tags text[] NOT NULL,
            file text,
            line integer,
            environment text,
            parameters json NOT NULL,
            params jsonb NOT NULL,
            active boolean NOT NULL
          );
          CREATE INDEX nfv_inv_resources_certname ON nfv_inv_resources (certname);
          CREATE INDEX nfv_inv_resources_type_title ON nfv_inv_resources (type, title);
          -- Listings of a type paged by node (order_by certname): read in order, counted from the index alone.
          CREATE INDEX nfv_inv_resources_type_certname ON nfv_inv_resources (type, certname COLLATE "C") WHERE active;
          CREATE INDEX nfv_inv_resources_tags ON nfv_inv_resources USING gin (tags);
          CREATE INDEX nfv_inv_resources_params ON nfv_inv_resources USING gin (params jsonb_path_ops);
          CREATE INDEX nfv_inv_resources_line ON nfv_inv_resources (line);
          CREATE INDEX nfv_inv_resources_exported ON nfv_inv_resources (type) WHERE exported;
          CREATE TABLE nfv_inv_reports (
            id bigint PRIMARY KEY,
            hash text NOT NULL UNIQUE,
            certname text NOT NULL,
            puppet_version text NOT NULL,
            report_format integer NOT NULL,
            configuration_version text NOT NULL,
            start_time bigint NOT NULL,
            end_time bigint NOT NULL,
            producer_timestamp bigint NOT NULL,
            receive_time bigint NOT NULL,
            producer text,
            transaction_uuid text,
            catalog_uuid text,
            code_id text,
            job_id text,
            cached_catalog_status text,
            status text,
            noop boolean,
            noop_pending boolean,
            environment text,
            type text NOT NULL,
            latest boolean NOT NULL,
            metrics json,
            logs json
          );
          CREATE SEQUENCE nfv_inv_report_id;
          CREATE INDEX nfv_inv_reports_certname ON nfv_inv_reports (certname, producer_timestamp);
          CREATE INDEX nfv_inv_reports_latest ON nfv_inv_reports (certname) WHERE latest;
          CREATE INDEX nfv_inv_reports_status ON nfv_inv_reports (status);
          CREATE TABLE nfv_inv_events (
            ord bigint PRIMARY KEY,
            report_id bigint NOT NULL REFERENCES nfv_inv_reports (id),
            status text,
            "timestamp" bigint NOT NULL,
            resource_type text NOT NULL,
            resource_title text NOT NULL,
            property text,
            name text,
            new_value json,
            old_value json,
            new_value_canon text NOT NULL,
            old_value_canon text NOT NULL,
            message text,
            file text,
            line integer,
            containment_path text[],
            containing_class text
          );
          CREATE INDEX nfv_inv_events_report ON nfv_inv_events (report_id);
          CREATE INDEX nfv_inv_events_status ON nfv_inv_events (status);
          CREATE INDEX nfv_inv_events_resource ON nfv_inv_events (resource_type, resource_title);
          -- PuppetDB's text of a JSON value (sorted keys, no spaces), for regexes and ordering on parameters.
          CREATE FUNCTION nfv_canonical(j jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT AS $f$
          BEGIN
            RETURN CASE jsonb_typeof(j)
              WHEN 'object' THEN '{' || coalesce((SELECT string_agg(to_json(k)::text || ':' || nfv_canonical(v), ','
                  ORDER BY k COLLATE "C") FROM jsonb_each(j) AS e(k, v)), '') || '}'
              WHEN 'array' THEN '[' || coalesce((SELECT string_agg(nfv_canonical(v), ',' ORDER BY n)
                  FROM jsonb_array_elements(j) WITH ORDINALITY AS a(v, n)), '') || ']'
              ELSE j::text END;
          END $f$`,
  },
  {
    version: 3,
    name: 'id sequences',
    // One sequence per area and kind of id, started after the counters of what the database holds already.
    sql: `DO $m$
          DECLARE k record;
          BEGIN
            FOR k IN SELECT * FROM (VALUES ('adp', 'graph'), ('adp', 'node'), ('adp', 'neighbour'),
                ('adp', 'configuration'), ('adp', 'requirementSet'), ('adp', 'property'), ('adp', 'substrate'),
                ('adp', 'simulation'), ('fwd', 'node'), ('fwd', 'rule')) AS v(area, kind) LOOP
              EXECUTE format('CREATE SEQUENCE %I', 'nfv_' || k.area || '_' || lower(k.kind) || '_id');
              PERFORM setval(('nfv_' || k.area || '_' || lower(k.kind) || '_id')::regclass,
                  (doc->'counters'->>k.kind)::bigint)
                FROM nfv_areas WHERE name = k.area AND (doc->'counters'->>k.kind)::bigint > 0;
            END LOOP;
          END $m$`,
  },
  {
    version: 4,
    name: 'inventory facts and catalog details',
    // Facts as the fact entities read them: each factset (values as json, for answers in their key order, and as
    // jsonb, for inventory's dotted criteria), its
    // top-level facts and its leaves (fact-contents, fact-paths), each value twice (json answered, jsonb compared).
    // Catalogs get their own rows (receive time, uuids, producer, hash) and their edges; catalogs stored before this
    // migration keep what the nodes knew of them.
    sql: `ALTER TABLE nfv_inv_nodes ADD COLUMN facts_time bigint;
          CREATE TABLE nfv_inv_catalogs (
            certname text PRIMARY KEY,
            version text,
            environment text,
            transaction_uuid text,
            catalog_uuid text,
            code_id text,
            job_id text,
            producer text,
            producer_timestamp bigint NOT NULL,
            receive_time bigint,
            hash text,
            ord bigint NOT NULL
          );
          INSERT INTO nfv_inv_catalogs (certname, version, environment, producer_timestamp, ord)
            SELECT certname, catalog_version, catalog_environment, catalog_time, catalog_ord FROM nfv_inv_nodes
            WHERE catalog_time IS NOT NULL;
          CREATE TABLE nfv_inv_edges (
            ord bigint PRIMARY KEY,
            certname text NOT NULL,
            source_type text NOT NULL,
            source_title text NOT NULL,
            target_type text NOT NULL,
            target_title text NOT NULL,
            relationship text NOT NULL
          );
          CREATE INDEX nfv_inv_edges_certname ON nfv_inv_edges (certname);
          CREATE TABLE nfv_inv_factsets (
            certname text PRIMARY KEY,
            environment text,
            producer_timestamp bigint NOT NULL,
            producer text,
            receive_time bigint NOT NULL,
            hash text NOT NULL,
            facts json NOT NULL,
            facts_jsonb jsonb NOT NULL
          );
          CREATE INDEX nfv_inv_factsets_facts ON nfv_inv_factsets USING gin (facts_jsonb jsonb_path_ops);
          CREATE TABLE nfv_inv_facts (
            certname text NOT NULL,
            name text NOT NULL,
            value jsonb NOT NULL,
            value_json json NOT NULL,
            PRIMARY KEY (certname, name)
          );
          CREATE INDEX nfv_inv_facts_name ON nfv_inv_facts (name);
          CREATE TABLE nfv_inv_fact_contents (
            certname text NOT NULL,
            path_key text NOT NULL,
            path jsonb NOT NULL,
            name text NOT NULL,
            value jsonb NOT NULL,
            type text NOT NULL,
            PRIMARY KEY (certname, path_key)
          );
          CREATE INDEX nfv_inv_fact_contents_path ON nfv_inv_fact_contents (path_key);`,
  },
  {
    version: 5,
    name: 'fact paths and leaves by integer ids',
    // A dictionary of fact paths (PuppetDB's fact_paths), one row per path and leaf type, and the leaves as
    // (factset id, path id, value): integer keys make the two btree indexes of a leaf row several times cheaper to
    // write than (certname, path text) were, and a path criterion is matched on the dictionary's rows, then found
    // through the path id index. A path no factset holds any more stays in the dictionary (fact-paths lists only
    // held ones).
    sql: `CREATE TABLE nfv_inv_fact_paths (
            id serial PRIMARY KEY,
            path_key text NOT NULL,
            type text NOT NULL,
            path jsonb NOT NULL,
            name text NOT NULL,
            UNIQUE (path_key, type)
          );
          ALTER TABLE nfv_inv_factsets ADD COLUMN id serial UNIQUE;
          CREATE TABLE nfv_inv_fact_leaves (
            factset_id integer NOT NULL,
            path_id integer NOT NULL,
            value jsonb NOT NULL,
            PRIMARY KEY (factset_id, path_id)
          );
          CREATE INDEX nfv_inv_fact_leaves_path ON nfv_inv_fact_leaves (path_id);
          INSERT INTO nfv_inv_fact_paths (path_key, type, path, name)
            SELECT DISTINCT path_key, type, path, name FROM nfv_inv_fact_contents ORDER BY path_key, type;
          INSERT INTO nfv_inv_fact_leaves (factset_id, path_id, value)
            SELECT s.id, p.id, c.value FROM nfv_inv_fact_contents c
            JOIN nfv_inv_factsets s ON s.certname = c.certname
            JOIN nfv_inv_fact_paths p ON p.path_key = c.path_key AND p.type = c.type;
          DROP TABLE nfv_inv_fact_contents;`,
  },
  {
    version: 6,
    name: 'indexes that counts read alone',
    // Counts of a node environment's resources (PuppetDB's `extract count ... group_by type`) and event counts by
    // resource read these indexes alone instead of every row: at 100,000 resources 15 ms instead of 50-70, at
    // 6,329 events 62 pages instead of 414 (report_id is included because PostgreSQL still asks for the column
    // of the report join it leaves out).
    sql: `CREATE INDEX nfv_inv_resources_environment_type ON nfv_inv_resources (environment, type) INCLUDE (ord)
            WHERE active;
          DROP INDEX nfv_inv_events_resource;
          CREATE INDEX nfv_inv_events_resource ON nfv_inv_events (resource_type, resource_title)
            INCLUDE (status, ord, report_id);`,
  },
];
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** A sentence for a database failure; other errors pass through. */
function databaseError(e: unknown, where: string): unknown {
  const code = (e as { code?: string } | undefined)?.code;
  if (code === '55P03')
    return new NfvError(503, `the database ${where} is busy: another nfv process holds the area's lock`);
  if (code === '57014')
    return new NfvError(503, `the database ${where} stopped a query that ran longer than its time limit`);
  if (code === '42P01')
    return new NfvError(424, `the database ${where} has no nfv schema yet: run nfv db migrate --database URL`);
  if (code === '3D000' || code === '28P01' || code === '28000')
    return new NfvError(503, `the database ${where} refused nfv: ${(e as Error).message}`);
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'ETIMEDOUT' || code === 'EAI_AGAIN')
    return new NfvError(503, `the database ${where} cannot be reached (${code})`);
  // pg's own timeouts carry no code: a new connection not made in time, or no client of the pool freed in time.
  const message = (e as Error | undefined)?.message;
  if (
    message === 'Connection terminated due to connection timeout' ||
    message === 'timeout exceeded when trying to connect'
  )
    return new NfvError(
      503,
      `the database ${where} gave nfv no connection within ${DATABASE_CONNECT_TIMEOUT_MS / 1000} s`,
    );
  return e;
}

/** The URL without its password, for messages. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'given';
  }
}

/** Bytes of COPY data per CopyData message: a large batch goes as a few such messages, not one huge buffer. */
const COPY_CHUNK = 1 << 20;

/**
 * COPY `sql` (`COPY table (columns) FROM STDIN`) with `text` in COPY's text format (escaped by `copyField`). The pg
 * driver has no COPY of its own; this is the protocol's few messages as a submittable query. Rows sent this way cost
 * the driver no bind parameters: a batch of 160,000 fact leaves as five text arrays spent more time escaping array
 * literals and measuring them than PostgreSQL spent storing them.
 */
export function copyIn(client: pg.PoolClient, sql: string, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(text, 'utf8');
    const copy = {
      submit: (connection: CopyConnection) => connection.query(sql),
      handleCopyInResponse: (connection: CopyConnection) => {
        for (let at = 0; at < data.length; at += COPY_CHUNK)
          connection.sendCopyFromChunk(data.subarray(at, at + COPY_CHUNK));
        connection.endCopyFrom();
      },
      handleCommandComplete: () => undefined,
      handleReadyForQuery: () => resolve(),
      // An ErrorResponse ends the query: no ReadyForQuery reaches it afterwards.
      handleError: (e: Error) => reject(e),
    };
    client.query(copy as unknown as pg.Submittable);
  });
}

interface CopyConnection {
  query(sql: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

/** A value as a field of COPY's text format: NULL as \N; backslash, tab, newline and return escaped. */
export function copyField(value: string | number | null): string {
  if (value === null) return '\\N';
  if (typeof value === 'number') return String(value);
  return COPY_SPECIAL.test(value) ? value.replace(COPY_SPECIALS, (c) => COPY_ESCAPES.get(c)!) : value;
}
const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_SPECIALS = /[\\\t\n\r]/g;
const COPY_ESCAPES = new Map([
  ['\\', '\\\\'],
  ['\t', '\\t'],
  ['\n', '\\n'],
  ['\r', '\\r'],
]);

export class PostgresAreas {
  private connected?: Promise<pg.Pool>;
  private readonly url: string;
  readonly where: string;

  constructor(
    url: string,
    private readonly lockTimeoutMs: number,
  ) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new NfvError(400, '--database: not a URL (postgres://USER@HOST:PORT/DATABASE)');
    }
    if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')
      throw new NfvError(400, `--database: ${parsed.protocol} is not postgres: (postgres://USER@HOST:PORT/DATABASE)`);
    this.where = shownUrl(url);
    this.url = url;
  }

  /** The connection pool, made on first use: pg is loaded only by commands that touch the database. */
  private pool(): Promise<pg.Pool> {
    this.connected ??= import('pg').then(({ default: driver }) => {
      const pool = new driver.Pool({
        connectionString: this.url,
        max: 4,
        connectionTimeoutMillis: DATABASE_CONNECT_TIMEOUT_MS,
      });
      // An idle client that loses its connection must not crash the process; the next query reconnects.
      pool.on('error', () => undefined);
      return pool;
    });
    return this.connected;
  }

  /**
   * Runs `fn` on one connection of the pool: a transaction it opened and did not end is rolled back, and failures
   * become sentences.
   */
  async session<R>(fn: (client: pg.PoolClient) => Promise<R>): Promise<R> {
    let client: pg.PoolClient | undefined;
    try {
      client = await (await this.pool()).connect();
      return await fn(client);
    } catch (e) {
      await client?.query('ROLLBACK').catch(() => undefined);
      throw databaseError(e, this.where);
    } finally {
      client?.release();
    }
  }

  /**
   * The last version read of each area: a read that finds the version unchanged skips the document (callers must
   * not modify what `read` returns, as with the folder's cache).
   */
  private readonly cache = new Map<string, { version: string; data: unknown }>();

  async read<T>(area: AreaSpec<T>): Promise<T> {
    return this.session(async (client) => {
      const known = this.cache.get(area.name);
      const r = await client.query<{ version: string; doc: unknown }>(
        'SELECT version, CASE WHEN version::text = $2 THEN NULL ELSE doc END AS doc FROM nfv_areas WHERE name = $1',
        [area.name, known?.version ?? ''],
      );
      if (!r.rows.length) return area.initial();
      const { version, doc } = r.rows[0]!;
      if (doc === null && known) return known.data as T;
      const data = decoded(area, doc, this.where);
      this.cache.set(area.name, { version: String(version), data });
      return data;
    });
  }

  /** Milliseconds a transaction waits for a row lock before giving up with 503. */
  get lockTimeout(): number {
    return Math.max(1, Math.round(this.lockTimeoutMs));
  }

  /** Applies `change` inside one transaction holding the area's row lock; writes nothing if it throws. */
  async mutate<T, R>(area: AreaSpec<T>, change: Change<T, R>): Promise<R> {
    return this.session(async (client) => {
      // One round trip for the four statements that open the change (a simple query takes no parameters, so the
      // two short values are literals): each round trip costs both processes a loopback write and a wake-up.
      const name = client.escapeLiteral(area.name);
      const initial = client.escapeLiteral(JSON.stringify(area.initial()));
      const opened = (await client.query(
        `BEGIN; SET LOCAL lock_timeout = ${this.lockTimeout}; ` +
          `INSERT INTO nfv_areas (name, doc) VALUES (${name}, ${initial}) ON CONFLICT (name) DO NOTHING; ` +
          `SELECT doc FROM nfv_areas WHERE name = ${name} FOR UPDATE`,
      )) as unknown as pg.QueryResult<{ doc: unknown }>[];
      const data = decoded(area, opened[3]!.rows[0]!.doc, this.where);
      const result = await change(data, sequenceIds(client, area, data));
      if (result instanceof Unchanged) {
        await client.query('ROLLBACK');
        return result.value;
      }
      await client.query('UPDATE nfv_areas SET doc = $2, version = version + 1, updated = now() WHERE name = $1', [
        area.name,
        JSON.stringify(data),
      ]);
      await client.query('COMMIT');
      return result;
    });
  }

  /** The schema version the database is at (0: none), and the areas it holds with their change counts. */
  async status(): Promise<{ version: number; areas: { name: string; changes: number; updated: string }[] }> {
    return this.session(async (client) => {
      const has = await client.query(`SELECT to_regclass('nfv_schema_migrations') IS NOT NULL AS present`);
      if (!has.rows[0].present) return { version: 0, areas: [] };
      const v = await client.query<{ version: number | null }>(
        'SELECT max(version) AS version FROM nfv_schema_migrations',
      );
      const areas = await client.query<{ name: string; version: string; updated: Date }>(
        'SELECT name, version, updated FROM nfv_areas ORDER BY name',
      );
      return {
        version: v.rows[0]?.version ?? 0,
        areas: areas.rows.map((a) => ({ name: a.name, changes: Number(a.version), updated: a.updated.toISOString() })),
      };
    });
  }

  /** Applies the migrations the database lacks, each in its own transaction, one migrating process at a time. */
  async migrate(): Promise<{ from: number; to: number }> {
    return this.session(async (client) => {
      // Two processes migrating at once: the second waits, then finds nothing left to do.
      await client.query('SELECT pg_advisory_lock(74270211)');
      try {
        await client.query(
          'CREATE TABLE IF NOT EXISTS nfv_schema_migrations (version int PRIMARY KEY, name text NOT NULL, ' +
            'applied timestamptz NOT NULL DEFAULT now())',
        );
        const v = await client.query<{ version: number | null }>(
          'SELECT max(version) AS version FROM nfv_schema_migrations',
        );
        const from = v.rows[0]?.version ?? 0;
        for (const m of MIGRATIONS.filter((x) => x.version > from)) {
          await client.query('BEGIN');
          await client.query(m.sql);
          await client.query('INSERT INTO nfv_schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
          await client.query('COMMIT');
        }
        return { from, to: SCHEMA_VERSION };
      } finally {
        // End a failed migration's transaction first (an aborted one refuses every query), then give up the lock:
        // a pooled connection keeps session locks after its release.
        await client.query('ROLLBACK').catch(() => undefined);
        await client.query('SELECT pg_advisory_unlock(74270211)').catch(() => undefined);
      }
    });
  }

  async close(): Promise<void> {
    if (this.connected) await (await this.connected).end();
    this.connected = undefined;
  }
}

/** The sequence of an area's kind of id (migration 3). */
const sequenceName = (area: string, kind: string) => `nfv_${area}_${kind.toLowerCase()}_id`;

/** The database's ids: from the area's sequences, with the area's counters following them. */
function sequenceIds<T>(client: pg.PoolClient, area: AreaSpec<T>, data: T): IdSource {
  return {
    take: async (kind, count) => {
      const counters = countersOf(area, data, kind);
      if (count === 0) return [];
      const r = await client.query<{ id: string }>(
        'SELECT nextval($1::regclass) AS id FROM generate_series(1, $2::int)',
        [sequenceName(area.name, kind), count],
      );
      const ids = r.rows.map((row) => Number(row.id)).sort((a, b) => a - b);
      raiseCounter(counters, kind, ids[ids.length - 1]!);
      return ids;
    },
    skipPast: async (kind, id) => {
      const counters = countersOf(area, data, kind);
      if (id < 1) return;
      await client.query(
        'SELECT setval($1::regclass, greatest($2::bigint, coalesce(pg_sequence_last_value($1::regclass), 0)))',
        [sequenceName(area.name, kind), id],
      );
      raiseCounter(counters, kind, id);
    },
    restart: async (kind) => {
      countersOf(area, data, kind)[kind] = 0;
      await client.query('SELECT setval($1::regclass, 1, false)', [sequenceName(area.name, kind)]);
    },
  };
}

function decoded<T>(area: AreaSpec<T>, raw: unknown, where: string): T {
  try {
    return area.decode(raw);
  } catch (e) {
    throw new NfvError(
      409,
      `the ${area.name} area in the database ${where} is not what nfv wrote: ${(e as Error).message}; ` +
        'nfv leaves it untouched',
    );
  }
}
