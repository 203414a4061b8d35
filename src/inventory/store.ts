/**
 * The inventory store: the interface the inventory operations use, and its embedded implementation on a journal in
 * the workspace (`inventory.journal`). Each applied command is one fsynced journal line, so the cost of a command
 * does not grow with what is stored: the writer keeps the staleness state (node activity, catalog times, report
 * hashes) in memory and catches up with other writers by reading only the lines they added. Queries see the data
 * materialised in memory; a fresh process parses a catalog or report payload only when a query needs that half.
 * Superseded catalogs are dead lines; when they outweigh the live ones the journal is rewritten (compacted).
 * The PostgreSQL backend (postgres.ts) implements the same interface (backend.ts).
 */
import { readFile, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { NfvError } from '../model/errors.js';
import { Journal, type Line } from '../store/journal.js';
import type { Workspace } from '../store/workspace.js';
import type { AreaSpec } from '../store/area.js';
import type { CommandResult, InventoryStore, StoredReportParts } from './backend.js';
import { indexOf, type Entity } from './entities.js';
import { aggregateEventCounts, eventCounts, queryEntity, type Answer } from './service.js';
import {
  decide,
  decodeInventory,
  emptyInventory,
  factOf,
  outcomeOf,
  prepareEach,
  type CatalogRecord,
  type Fact,
  type FactsetRecord,
  type InventoryData,
  type Prepared,
  type StoredReport,
} from './ingest.js';

/**
 * The staleness state at a journal offset, so that a fresh writer (one CLI ingest) reads a small file and the lines
 * after `end` instead of the whole journal. Only a cache: a missing, damaged or outdated one is ignored.
 */
interface Checkpoint {
  /** Identity of the journal it belongs to, and the offset it describes. */
  id: string;
  end: number;
  nodes: Record<string, { deactivated: number | null; lastSeen: number | null }>;
  catalogTimes: Record<string, number>;
  /** Absent in checkpoints written before facts were stored. */
  factTimes?: Record<string, number>;
  hashes: string[];
  activity: number;
  catalogBytes: Record<string, number>;
  factBytes?: Record<string, number>;
  otherBytes: number;
}

/** A checkpoint is written once this many journal bytes were appended since the last one. */
const CHECKPOINT_EVERY = 4 * 1024 * 1024;

interface JournalHeader {
  b: number;
  /** catalog, facts, report, deactivation */
  k: 'c' | 'f' | 'r' | 'd';
  /** certname */
  n: string;
  /** producer_timestamp, ms */
  t: number;
  /** report hash */
  h?: string;
}

/** A payload as stored: journal bytes are parsed, a stored form just written is used as it is. */
function parsedPayload<T>(payload: Buffer | T): T {
  return Buffer.isBuffer(payload) ? (JSON.parse(payload.toString('utf8')) as T) : payload;
}

/** The data of the journal read so far; catalog and report payloads are parsed on first use. */
class JournalData implements InventoryData {
  // Keyed by certname: null prototypes, as in every IngestState.
  nodes: InventoryData['nodes'] = Object.create(null);
  catalogTimes: InventoryData['catalogTimes'] = Object.create(null);
  factTimes: InventoryData['factTimes'] = Object.create(null);
  hashes = new Set<string>();
  activity = 0;
  revision = { catalogs: 0, reports: 0, facts: 0 };
  private catalogPayloads = new Map<string, Buffer | CatalogRecord>();
  private factPayloads = new Map<string, Buffer | FactsetRecord>();
  private reportPayloads: (Buffer | StoredReport)[] = [];
  private parsedCatalogs?: Record<string, CatalogRecord>;
  private parsedFactsets?: Record<string, FactsetRecord>;
  private parsedReports?: StoredReport[];
  /** Bytes of the lines that still count: the latest catalog and facts per node, every report and deactivation. */
  private catalogBytes = new Map<string, number>();
  private factBytes = new Map<string, number>();
  private otherBytes = 0;
  /** Loaded from a checkpoint: the staleness state only, without the payloads (enough for a writer). */
  partial = false;

  /** The staleness state and live-byte counts, for a checkpoint. */
  toCheckpoint(): Omit<Checkpoint, 'id' | 'end'> {
    return {
      nodes: this.nodes,
      catalogTimes: this.catalogTimes,
      factTimes: this.factTimes,
      hashes: [...this.hashes],
      activity: this.activity,
      catalogBytes: Object.fromEntries(this.catalogBytes),
      factBytes: Object.fromEntries(this.factBytes),
      otherBytes: this.otherBytes,
    };
  }

  static fromCheckpoint(c: Checkpoint): JournalData {
    const d = new JournalData();
    for (const [certname, n] of Object.entries(c.nodes))
      d.nodes[certname] = { deactivated: n.deactivated, lastSeen: n.lastSeen ?? Number.NEGATIVE_INFINITY };
    for (const [certname, t] of Object.entries(c.catalogTimes)) d.catalogTimes[certname] = t;
    for (const [certname, t] of Object.entries(c.factTimes ?? {})) d.factTimes[certname] = t;
    d.hashes = new Set(c.hashes);
    d.activity = c.activity;
    d.catalogBytes = new Map(Object.entries(c.catalogBytes));
    d.factBytes = new Map(Object.entries(c.factBytes ?? {}));
    d.otherBytes = c.otherBytes;
    d.partial = true;
    return d;
  }

  get catalogs(): Record<string, CatalogRecord> {
    if (!this.parsedCatalogs) {
      const parsed = Object.create(null) as Record<string, CatalogRecord>;
      for (const [certname, p] of this.catalogPayloads) parsed[certname] = parsedPayload(p);
      this.parsedCatalogs = parsed;
      this.catalogPayloads.clear();
    }
    return this.parsedCatalogs;
  }

  get factsets(): Record<string, FactsetRecord> {
    if (!this.parsedFactsets) {
      const parsed = Object.create(null) as Record<string, FactsetRecord>;
      for (const [certname, p] of this.factPayloads) parsed[certname] = parsedPayload(p);
      this.parsedFactsets = parsed;
      this.factPayloads.clear();
    }
    return this.parsedFactsets;
  }

  get reports(): StoredReport[] {
    if (!this.parsedReports) {
      this.parsedReports = this.reportPayloads.map(parsedPayload);
      this.reportPayloads = [];
    }
    return this.parsedReports;
  }

  get liveBytes(): number {
    let sum = this.otherBytes;
    for (const b of this.catalogBytes.values()) sum += b;
    for (const b of this.factBytes.values()) sum += b;
    return sum;
  }

  /** Adds a command that applied, with its data: payload bytes from the journal, or the stored form just written. */
  add(p: Fact, lineBytes: number, record?: Buffer | CatalogRecord | FactsetRecord | StoredReport): void {
    if (p.kind === 'catalog') {
      const catalog = record as Buffer | CatalogRecord;
      if (this.parsedCatalogs) this.parsedCatalogs[p.certname] = parsedPayload(catalog);
      else this.catalogPayloads.set(p.certname, catalog);
      this.catalogBytes.set(p.certname, lineBytes);
      this.revision.catalogs++;
    } else if (p.kind === 'facts') {
      const factset = record as Buffer | FactsetRecord;
      if (this.parsedFactsets) this.parsedFactsets[p.certname] = parsedPayload(factset);
      else this.factPayloads.set(p.certname, factset);
      this.factBytes.set(p.certname, lineBytes);
      this.revision.facts++;
    } else if (p.kind === 'report') {
      const report = record as Buffer | StoredReport;
      if (this.parsedReports) this.parsedReports.push(parsedPayload(report));
      else this.reportPayloads.push(report);
      this.otherBytes += lineBytes;
      this.revision.reports++;
    } else {
      this.otherBytes += lineBytes;
    }
  }
}

const KINDS = { c: 'catalog', f: 'facts', r: 'report', d: 'deactivate' } as const;

/** A header as the staleness rules see it (replaying a journal line decides it again, with the same effect). */
const replayed = (h: JournalHeader): Fact => ({ kind: KINDS[h.k], certname: h.n, at: h.t, hash: h.h });

function record(p: Prepared): { header: Omit<JournalHeader, 'b'>; payload: string } {
  switch (p.kind) {
    case 'catalog':
      return { header: { k: 'c', n: p.certname, t: p.at }, payload: JSON.stringify(p.catalog) };
    case 'facts':
      return { header: { k: 'f', n: p.certname, t: p.at }, payload: JSON.stringify(p.factset) };
    case 'report':
      return { header: { k: 'r', n: p.certname, t: p.at, h: p.report.hash }, payload: JSON.stringify(p.report) };
    case 'deactivate':
      return { header: { k: 'd', n: p.certname, t: p.at }, payload: '' };
  }
}

const lineBytes = (line: Line<JournalHeader>) =>
  line.payload.length + 1 + Buffer.byteLength(JSON.stringify(line.header)) + 1;

/** Compaction starts when the journal is this many times its live bytes, and at least this large. */
const COMPACT_RATIO = 2;
const COMPACT_MIN_BYTES = 16 * 1024 * 1024;

export class JournalInventoryStore implements InventoryStore {
  private readonly journal: Journal<JournalHeader>;
  private readonly checkpointFile: string;
  private checkpointEnd = 0;
  private swept = false;
  private state = new JournalData();
  private end = 0;
  private id = '';
  /** The torn tail said last (`id:offset:bytes`): each is said once. */
  private saidTorn = '';
  /**
   * Serialises reading the journal and changing the state within this process: a query's catch-up must not replay
   * lines this process is appending. Held only for the catch-up and the append itself (milliseconds), never while
   * waiting for another process's lock.
   */
  private turn: Promise<unknown> = Promise.resolve();

  private serial<R>(fn: () => Promise<R>): Promise<R> {
    const run = this.turn.then(fn, fn);
    this.turn = run.catch(() => undefined);
    return run;
  }

  private readonly compactMinBytes: number;
  private readonly checkpointEvery: number;

  constructor(
    private readonly ws: Workspace,
    /**
     * Smaller thresholds for the tests: compaction from this journal size (16 MiB), checkpoints every N bytes (4 MiB).
     */
    options: { compactMinBytes?: number; checkpointEvery?: number } = {},
  ) {
    this.compactMinBytes = options.compactMinBytes ?? COMPACT_MIN_BYTES;
    this.checkpointEvery = options.checkpointEvery ?? CHECKPOINT_EVERY;
    this.journal = new Journal<JournalHeader>(path.join(ws.dir, 'inventory.journal'));
    this.checkpointFile = path.join(ws.dir, 'inventory.checkpoint.json');
  }

  /** Starts a writer from the checkpoint when it belongs to the journal as it is now. */
  private async fromCheckpoint(): Promise<void> {
    const [text, journal] = await Promise.all([
      readFile(this.checkpointFile, 'utf8').catch(() => undefined),
      stat(this.journal.file, { bigint: true }).catch(() => undefined),
    ]);
    if (text === undefined || journal === undefined) return;
    try {
      const c = JSON.parse(text) as Checkpoint;
      if (c.id !== `${journal.dev}:${journal.ino}` || c.end > Number(journal.size)) return;
      this.state = JournalData.fromCheckpoint(c);
      this.end = c.end;
      this.id = c.id;
      this.checkpointEnd = c.end;
    } catch {
      // Not what nfv wrote: read the journal instead.
    }
  }

  /** Writes a checkpoint (temporary file and rename; a lost one only costs the next writer a full read). */
  private async checkpoint(): Promise<void> {
    const tmp = `${this.checkpointFile}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify({ id: this.id, end: this.end, ...this.state.toCheckpoint() }));
    await rename(tmp, this.checkpointFile);
    this.checkpointEnd = this.end;
  }

  /** Removes temporary files of writers that were killed (under the lock, so none is being written). */
  private async sweep(): Promise<void> {
    if (this.swept) return;
    this.swept = true;
    const names = await readdir(this.ws.dir).catch(() => [] as string[]);
    const stale = names.filter((n) => /^inventory\.(journal|checkpoint\.json)\.\d+(\.[0-9a-f]+)?\.tmp$/.test(n));
    await Promise.all(stale.map((n) => unlink(path.join(this.ws.dir, n)).catch(() => undefined)));
  }

  /**
   * Reads what other writers appended since the last read (or everything, if the journal was rewritten). `locked`:
   * the caller holds the journal's lock.
   */
  private async catchUp(locked: boolean): Promise<void> {
    const read = await this.journal.read(this.end, this.id);
    if (read.id !== this.id) this.state = new JournalData();
    for (const line of read.lines) {
      const fact = replayed(line.header);
      if (!decide(this.state, fact))
        throw new NfvError(409, `the journal ${this.journal.file} is damaged: a line that does not apply`);
      this.state.add(fact, lineBytes(line), line.payload);
    }
    this.end = read.end;
    this.id = read.id;
    if (read.torn) await this.sayTorn(read.id, read.end, read.torn, locked);
  }

  /**
   * Says once that the journal ends in a torn write of `bytes` bytes from `at`. A reader without the lock may have
   * seen a write under way: it says so only when no writer holds the lock and the file still ends there.
   */
  private async sayTorn(id: string, at: number, bytes: number, locked: boolean): Promise<void> {
    const key = `${id}:${at}:${bytes}`;
    if (key === this.saidTorn) return;
    if (!locked) {
      if (await this.ws.locked(this.journal.file)) return;
      const s = await stat(this.journal.file, { bigint: true }).catch(() => undefined);
      if (!s || `${s.dev}:${s.ino}` !== id || Number(s.size) !== at + bytes) return;
    }
    this.saidTorn = key;
    this.ws.warn(
      `warning: the inventory journal ${this.journal.file} ends in a torn write of ${bytes} bytes ` +
        `(from byte ${at}; left out of what is read, the next write removes it)`,
    );
  }

  async query(entity: Entity, query: URLSearchParams, fixed: unknown[] = []): Promise<Answer> {
    return queryEntity(entity, await this.data(), query, fixed);
  }

  async eventCounts(query: URLSearchParams): Promise<Answer> {
    return eventCounts(await this.data(), query);
  }

  async aggregateEventCounts(query: URLSearchParams): Promise<Answer> {
    return aggregateEventCounts(await this.data(), query);
  }

  async report(hash: string): Promise<StoredReportParts | undefined> {
    return indexOf(await this.data()).byHash.get(hash);
  }

  /** The stored inventory, for queries; valid until the next call. */
  async data(): Promise<InventoryData> {
    await this.ws.checkExists();
    await this.migrate();
    return this.serial(async () => {
      // A writer started from a checkpoint has no payloads: queries read the whole journal.
      if (this.state.partial) this.forget();
      await this.catchUp(false);
      return this.state;
    });
  }

  async apply(commands: unknown[], now: number): Promise<CommandResult[]> {
    const prepared = prepareEach(commands, now);
    await this.migrate();
    return this.ws.exclusive(this.journal.file, (guard) => this.serial(() => this.applyLocked(prepared, guard)));
  }

  private async applyLocked(prepared: (Prepared | NfvError)[], guard: () => void): Promise<CommandResult[]> {
    await this.sweep();
    if (this.id === '') await this.fromCheckpoint();
    await this.catchUp(true);
    const applied: Prepared[] = [];
    const results: CommandResult[] = prepared.map((p) => {
      if (p instanceof NfvError) return { error: p };
      const ok = decide(this.state, factOf(p));
      if (ok) applied.push(p);
      return { ok: outcomeOf(p, ok) };
    });
    if (applied.length) {
      const encoded = applied.map((p) => Journal.encode<JournalHeader>([record(p)]));
      const bytes = Buffer.concat(encoded);
      try {
        const written = await this.journal.append(bytes, guard);
        if (written.cut) await this.sayTorn(written.id, written.end - bytes.length, written.cut, true);
        const sameFile = written.id === this.id || (this.id === '' && this.end === 0);
        if (written.end - bytes.length !== this.end || !sameFile) {
          // A torn tail was cut, or the file changed under us: read it again from the start next time.
          this.forget();
        } else {
          applied.forEach((p, k) =>
            this.state.add(
              factOf(p),
              encoded[k]!.length,
              p.kind === 'catalog'
                ? p.catalog
                : p.kind === 'facts'
                  ? p.factset
                  : p.kind === 'report'
                    ? p.report
                    : undefined,
            ),
          );
          this.end = written.end;
          this.id = written.id;
        }
      } catch (e) {
        // The staleness state already counted these commands; start again from the journal.
        this.forget();
        throw e;
      }
      await this.compactIfWorthIt(guard);
      if (this.end - this.checkpointEnd >= this.checkpointEvery || this.end < this.checkpointEnd)
        await this.checkpoint();
    }
    return results;
  }

  private forget(): void {
    this.state = new JournalData();
    this.end = 0;
    this.id = '';
  }

  /** Rewrites the journal without superseded catalogs and facts when they outweigh the live lines. */
  private async compactIfWorthIt(guard: () => void): Promise<void> {
    if (this.end < this.compactMinBytes || this.end < COMPACT_RATIO * this.state.liveBytes) return;
    const all = await this.journal.read(0, '');
    const last = new Map<string, number>();
    const replaced = (k: JournalHeader['k']) => k === 'c' || k === 'f';
    all.lines.forEach((l, k) => replaced(l.header.k) && last.set(`${l.header.k}:${l.header.n}`, k));
    const kept = all.lines.filter((l, k) => !replaced(l.header.k) || last.get(`${l.header.k}:${l.header.n}`) === k);
    const bytes = Buffer.concat(
      kept.flatMap((l) => [Buffer.from(`${JSON.stringify(l.header)}\t`), l.payload, Buffer.from('\n')]),
    );
    const written = await this.journal.rewrite(bytes, guard);
    this.end = written.end;
    this.id = written.id;
    await this.checkpoint();
  }

  private migrated = false;

  /**
   * Moves a workspace's `inventory.json` (nfv 0.1) into the journal once, then renames it `inventory.json.migrated`.
   */
  private async migrate(): Promise<void> {
    if (this.migrated) return;
    const old = path.join(this.ws.dir, 'inventory.json');
    const exists = () =>
      stat(old).then(
        () => true,
        () => false,
      );
    if (await exists()) {
      await this.ws.exclusive(this.journal.file, async (guard) => {
        // Under the lock, look again: another process may have moved it meanwhile.
        if (!(await exists())) return;
        // Read as any workspace file is: a BOM accepted, a damaged file refused by name and left as it is.
        const data = await this.ws.read(LEGACY_AREA);
        const bytes = Journal.encode<JournalHeader>(preparedOf(data).map(record));
        const written = await this.journal.append(bytes, guard);
        if (written.cut) await this.sayTorn(written.id, written.end - bytes.length, written.cut, true);
        await rename(old, `${old}.migrated`);
      });
    }
    this.migrated = true;
  }
}

/**
 * Commands that rebuild a stored inventory: each node's catalog and facts, every report in order, and the
 * deactivations that hold (applied last, they are newer than everything else of their node).
 */
export function preparedOf(data: InventoryData): Prepared[] {
  return [
    ...Object.entries(data.catalogs).map(([certname, catalog]) => ({
      kind: 'catalog' as const,
      certname,
      at: catalog.producer_timestamp,
      catalog,
    })),
    ...Object.entries(data.factsets).map(([certname, factset]) => ({
      kind: 'facts' as const,
      certname,
      at: factset.producer_timestamp,
      factset,
    })),
    ...data.reports.map((report) => ({
      kind: 'report' as const,
      certname: report.certname,
      at: report.producer_timestamp,
      report,
    })),
    ...Object.entries(data.nodes)
      .filter(([, n]) => n.deactivated !== null)
      .map(([certname, n]) => ({ kind: 'deactivate' as const, certname, at: n.deactivated! })),
  ];
}

/** The single file that held the inventory in nfv 0.1. */
const LEGACY_AREA: AreaSpec<InventoryData> = { name: 'inventory', initial: emptyInventory, decode: decodeInventory };
