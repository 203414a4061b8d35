/**
 * The workspace: a folder of lowdb JSON files, one per area (`adp.json`, `fwd.json`, `inventory.json`).
 *
 * Every change is a locked read-modify-write: a cross-process lock (proper-lockfile) and an in-process mutex are
 * held while the file is read afresh, changed and written. The write goes to a unique temporary file that is
 * fsynced and renamed over the old one, so a process killed at any moment leaves either the old or the new
 * contents, never a mix; readers need no lock. A change whose function throws writes nothing, and a write that
 * fails removes its temporary file at once.
 *
 * Waiting for another process's lock is bounded (5 s unless told otherwise; then 503). A file that is not what nfv
 * wrote (bad JSON, wrong shape, counters behind the ids) is refused with its name and what is wrong, and never
 * overwritten. Operating-system failures on the folder become sentences (read-only, full disk, not a folder).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, readdir, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Low, type Adapter } from 'lowdb';
import { NfvError } from '../model/errors.js';
import { DEFAULT_LOCK_TIMEOUT_MS } from '../model/limits.js';
import type { PostgresAreas } from './postgres.js';
import { countersOf, raiseCounter, Unchanged, type AreaSpec, type Change, type IdSource } from './area.js';

/**
 * proper-lockfile, loaded by the first lock: it loads graceful-fs, which patches fs and loads Node's streams, a tenth
 * of the CLI's start that `nfv --version`, the help and a plain `nfv simulate FILE` never use.
 */
const lockfile = async () => (await import('proper-lockfile')).default;

/** Resolves the workspace folder: `--workspace DIR`, else `NFV_WORKSPACE`, else `./workspaces/default`. */
export function resolveWorkspaceDir(option?: string): string {
  return path.resolve(option ?? process.env.NFV_WORKSPACE ?? path.join('workspaces', 'default'));
}

/** The folder's ids: the area's counters, advanced only by the holder of the area's lock. */
function counterIds<T>(area: AreaSpec<T>, data: T): IdSource {
  return {
    take: async (kind, count) => {
      const counters = countersOf(area, data, kind);
      const first = (counters[kind] ?? 0) + 1;
      counters[kind] = first + count - 1;
      return Array.from({ length: count }, (_, k) => first + k);
    },
    skipPast: async (kind, id) => raiseCounter(countersOf(area, data, kind), kind, id),
    restart: async (kind) => {
      countersOf(area, data, kind)[kind] = 0;
    },
  };
}

/** A sentence for an operating-system failure on the workspace; other errors pass through. */
export function storageError(e: unknown, dir: string): unknown {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return new NfvError(503, `the workspace ${dir} cannot be written or read: permission denied`);
    case 'EROFS':
      return new NfvError(503, `the workspace ${dir} cannot be written: it is on a read-only file system`);
    case 'ENOSPC':
    case 'EDQUOT':
      return new NfvError(
        507,
        `the workspace ${dir} cannot be written: no space left on its device; nothing was changed`,
      );
    case 'ENOTDIR':
    case 'EEXIST':
      return new NfvError(400, `the workspace ${dir} is not a folder`);
    default:
      return e;
  }
}

/**
 * Creates the workspace folder and its missing parents one by one. (`mkdir -p` in Node 20 loops forever where the
 * file system answers ENOENT to a mkdir whose parent exists, as /proc does.)
 */
async function ensureFolder(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let cur = dir; ; cur = path.dirname(cur)) {
    try {
      if (!(await stat(cur)).isDirectory())
        throw Object.assign(new Error(`${cur} is not a folder`), { code: 'ENOTDIR' });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || path.dirname(cur) === cur) throw e;
      missing.push(cur);
    }
  }
  for (const folder of missing.reverse()) {
    try {
      await mkdir(folder);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT')
        throw new NfvError(503, `the workspace ${dir} cannot be created: ${path.dirname(folder)} takes no folders`);
      if (code !== 'EEXIST') throw e;
    }
  }
}

const damaged = (file: string, problem: string) =>
  new NfvError(
    409,
    `the workspace file ${file} is damaged: ${problem}; nfv leaves it untouched (repair it or move it away)`,
  );

/** Reads and decodes an area's file, or null when there is none. A UTF-8 BOM is accepted. */
async function readArea<T>(file: string, area: AreaSpec<T>): Promise<T | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    if ((e as NodeJS.ErrnoException).code === 'EISDIR') throw damaged(file, 'it is a folder');
    throw storageError(e, path.dirname(file));
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (e) {
    throw damaged(file, `it is not valid JSON (${(e as Error).message.slice(0, 80)})`);
  }
  try {
    return area.decode(raw);
  } catch (e) {
    throw damaged(file, (e as Error).message);
  }
}

/** A lowdb adapter that reads through the area's decoder and writes atomically and durably. */
class DurableJsonFile<T> implements Adapter<T> {
  constructor(
    private readonly file: string,
    private readonly area: AreaSpec<T>,
    /** Called right before the new contents replace the old; throwing there writes nothing. */
    private readonly beforeCommit: () => void,
  ) {}

  read(): Promise<T | null> {
    return readArea(this.file, this.area);
  }

  async write(data: T): Promise<void> {
    const dir = path.dirname(this.file);
    const tmp = path.join(dir, `.${path.basename(this.file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      const handle = await open(tmp, 'w');
      try {
        await handle.writeFile(
          this.area.pretty === false ? JSON.stringify(data) : `${JSON.stringify(data, null, 1)}\n`,
        );
        await handle.sync();
      } finally {
        await handle.close();
      }
      this.beforeCommit();
      await rename(tmp, this.file);
    } catch (e) {
      await unlink(tmp).catch(() => undefined);
      throw e;
    }
  }
}

/** A promise-chain mutex, one per file within this process. */
const mutexes = new Map<string, Promise<unknown>>();
function serialise<R>(key: string, fn: () => Promise<R>): Promise<R> {
  const previous = mutexes.get(key) ?? Promise.resolve();
  const run = previous.then(fn, fn);
  const tail = run.catch(() => undefined);
  mutexes.set(key, tail);
  void tail.then(() => {
    if (mutexes.get(key) === tail) mutexes.delete(key);
  });
  return run;
}

/**
 * A lock whose holder stops refreshing it for this long is taken over as stale (a killed process). The holder
 * refreshes it every half of that; an event loop stalled longer loses the lock (the change then fails, see below).
 */
const STALE_MS = 4_000;

export interface WorkspaceOptions {
  /** How long a writer waits for another process's lock (default 5 s). */
  lockTimeoutMs?: number;
  /** Reads of a folder that does not exist fail (404) instead of reading as empty: a workspace the user named. */
  mustExist?: boolean;
  /** Areas marked `database` live there instead of in the folder (postgres.ts). */
  database?: PostgresAreas;
  /** Where a warning about the workspace goes (a line on stderr, serve's log); by default nowhere. */
  warn?: (message: string) => void;
}

interface CachedRead {
  key: string;
  data: unknown;
}

export class Workspace {
  private readonly cache = new Map<string, CachedRead>();
  private readonly swept = new Set<string>();
  readonly lockTimeoutMs: number;
  private readonly mustExist: boolean;
  readonly database?: PostgresAreas;
  readonly warn: (message: string) => void;

  constructor(
    readonly dir: string,
    options: WorkspaceOptions = {},
  ) {
    this.lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    this.mustExist = options.mustExist ?? false;
    this.database = options.database;
    this.warn = options.warn ?? (() => undefined);
  }

  /** For reads of something never written: a named workspace that does not exist is said as such. */
  async checkExists(): Promise<void> {
    if (!this.mustExist) return;
    const s = await stat(this.dir).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') throw new NfvError(404, `the workspace ${this.dir} does not exist`);
      throw storageError(e, this.dir);
    });
    if (!s.isDirectory()) throw new NfvError(400, `the workspace ${this.dir} is not a folder`);
  }

  private file<T>(area: AreaSpec<T>): string {
    return path.join(this.dir, `${area.name}.json`);
  }

  /**
   * The current contents of an area, read without a lock (renames are atomic). The result is shared with later
   * reads while the file is unchanged: callers must not modify it.
   */
  async read<T>(area: AreaSpec<T>): Promise<T> {
    if (this.database && area.database) return this.database.read(area);
    const file = this.file(area);
    let key: string;
    try {
      const s = await stat(file, { bigint: true });
      key = `${s.ino}:${s.size}:${s.mtimeNs}`;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw storageError(e, this.dir);
      await this.checkExists();
      return area.initial();
    }
    const hit = this.cache.get(file);
    if (hit?.key === key) return hit.data as T;
    const data = (await readArea(file, area)) ?? area.initial();
    this.cache.set(file, { key, data });
    return data;
  }

  /**
   * Applies `change` to a fresh copy of the area under both locks and writes it back, or writes nothing if it throws
   * or returns `Unchanged`.
   */
  async mutate<T, R>(area: AreaSpec<T>, change: Change<T, R>): Promise<R> {
    if (this.database && area.database) return this.database.mutate(area, change);
    const file = this.file(area);
    return this.exclusive(file, async (guard) => {
      await this.sweepTemporaries(file);
      const db = new Low<T>(new DurableJsonFile<T>(file, area, guard), area.initial());
      await db.read();
      const result = await change(db.data, counterIds(area, db.data));
      if (result instanceof Unchanged) return result.value;
      await db.write();
      this.cache.delete(file);
      return result;
    });
  }

  /**
   * Runs `fn` holding the in-process mutex and the cross-process lock of `file` (a path in the workspace). `guard`
   * throws once the lock was lost (taken over after this process stalled): call it right before committing.
   */
  async exclusive<R>(file: string, fn: (guard: () => void) => Promise<R>): Promise<R> {
    return serialise(file, async () => {
      let lost: Error | undefined;
      let release: (() => Promise<void>) | undefined;
      try {
        await ensureFolder(this.dir);
        release = await this.lock(file, (e) => (lost = e));
        return await fn(() => {
          if (lost) {
            throw new NfvError(
              503,
              `another process took the lock of the workspace ${this.dir} while this change was made; ` +
                'nothing was written',
            );
          }
        });
      } catch (e) {
        throw storageError(e, this.dir);
      } finally {
        await release?.().catch(() => undefined);
      }
    });
  }

  /** Whether a process (this one included) holds the cross-process lock of `file` now; a stale lock does not count. */
  async locked(file: string): Promise<boolean> {
    const { check } = await lockfile();
    return check(file, { realpath: false, stale: STALE_MS, lockfilePath: `${file}.lock` }).catch(() => false);
  }

  /** Takes the cross-process lock of a file, waiting at most `lockTimeoutMs` for another holder. */
  private async lock(file: string, onCompromised: (e: Error) => void): Promise<() => Promise<void>> {
    const { lock } = await lockfile();
    const deadline = Date.now() + this.lockTimeoutMs;
    let pause = 5;
    for (;;) {
      try {
        return await lock(file, {
          realpath: false,
          stale: STALE_MS,
          retries: 0,
          lockfilePath: `${file}.lock`,
          onCompromised,
        });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ELOCKED') throw e;
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new NfvError(
            503,
            `the workspace ${this.dir} is locked by another nfv process ` +
              `(waited ${this.lockTimeoutMs / 1000} s; see --lock-timeout)`,
          );
        }
        await sleep(Math.min(pause, left));
        pause = Math.min(pause * 1.5, 50);
      }
    }
  }

  /** Removes temporary files left by a process that was killed mid-write (once per file and process). */
  private async sweepTemporaries(file: string): Promise<void> {
    if (this.swept.has(file)) return;
    this.swept.add(file);
    const prefix = `.${path.basename(file)}.`;
    for (const name of await readdir(this.dir)) {
      if (name.startsWith(prefix) && name.endsWith('.tmp'))
        await unlink(path.join(this.dir, name)).catch(() => undefined);
    }
  }
}
