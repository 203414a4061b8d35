/**
 * The workspace: a folder of lowdb JSON files, one per area (`adp.json`, `fwd.json`, `inventory.json`).
 *
 * Every change is a locked read-modify-write: a cross-process lock (proper-lockfile) and an in-process mutex are
 * held while the file is read afresh, changed and written. The write goes to a unique temporary file that is
 * fsynced and renamed over the old one, so a process killed at any moment leaves either the old or the new
 * contents, never a mix; readers need no lock. A change whose function throws writes nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, readdir, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Low, type Adapter } from 'lowdb';
import lockfile from 'proper-lockfile';

/** Resolves the workspace folder: `--workspace DIR`, else `NFV_WORKSPACE`, else `./workspaces/default`. */
export function resolveWorkspaceDir(option?: string): string {
  return path.resolve(option ?? process.env.NFV_WORKSPACE ?? path.join('workspaces', 'default'));
}

/** A lowdb adapter that writes atomically and durably: unique temp file, fsync, rename. */
class DurableJsonFile<T> implements Adapter<T> {
  constructor(
    private readonly file: string,
    private readonly pretty: boolean,
  ) {}

  async read(): Promise<T | null> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new Error(`workspace file ${this.file} is not valid JSON`);
    }
  }

  async write(data: T): Promise<void> {
    const dir = path.dirname(this.file);
    await mkdir(dir, { recursive: true });
    const tmp = path.join(dir, `.${path.basename(this.file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    const handle = await open(tmp, 'w');
    try {
      await handle.writeFile(this.pretty ? `${JSON.stringify(data, null, 1)}\n` : JSON.stringify(data));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.file);
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

const LOCK_OPTIONS = {
  realpath: false,
  stale: 5_000,
  retries: { retries: 2_000, minTimeout: 2, maxTimeout: 40, factor: 1.3 },
};

export interface AreaSpec<T> {
  /** File name without `.json`. */
  name: string;
  /** Contents of an area that was never written. */
  initial: () => T;
  /** Indented JSON (readable) or compact (large areas). */
  pretty?: boolean;
}

interface CachedRead {
  key: string;
  data: unknown;
}

export class Workspace {
  private readonly cache = new Map<string, CachedRead>();
  private readonly swept = new Set<string>();

  constructor(readonly dir: string) {}

  private file(area: AreaSpec<unknown>): string {
    return path.join(this.dir, `${area.name}.json`);
  }

  /**
   * The current contents of an area, read without a lock (renames are atomic). The result is shared with later
   * reads while the file is unchanged: callers must not modify it.
   */
  async read<T>(area: AreaSpec<T>): Promise<T> {
    const file = this.file(area);
    let key: string;
    try {
      const s = await stat(file, { bigint: true });
      key = `${s.ino}:${s.size}:${s.mtimeNs}`;
    } catch {
      return area.initial();
    }
    const hit = this.cache.get(file);
    if (hit?.key === key) return hit.data as T;
    const data = (await new DurableJsonFile<T>(file, false).read()) ?? area.initial();
    this.cache.set(file, { key, data });
    return data;
  }

  /** Applies `change` to a fresh copy of the area under both locks and writes it back, or writes nothing if it throws. */
  async mutate<T, R>(area: AreaSpec<T>, change: (data: T) => R | Promise<R>): Promise<R> {
    const file = this.file(area);
    return serialise(file, async () => {
      await mkdir(this.dir, { recursive: true });
      const release = await lockfile.lock(file, { ...LOCK_OPTIONS, lockfilePath: `${file}.lock` });
      try {
        await this.sweepTemporaries(file);
        const db = new Low<T>(new DurableJsonFile<T>(file, area.pretty ?? true), area.initial());
        await db.read();
        const result = await change(db.data);
        await db.write();
        this.cache.delete(file);
        return result;
      } finally {
        await release();
      }
    });
  }

  /** Removes temporary files left by a process that was killed mid-write (once per file and process). */
  private async sweepTemporaries(file: string): Promise<void> {
    if (this.swept.has(file)) return;
    this.swept.add(file);
    const prefix = `.${path.basename(file)}.`;
    for (const name of await readdir(this.dir)) {
      if (name.startsWith(prefix) && name.endsWith('.tmp')) await unlink(path.join(this.dir, name)).catch(() => undefined);
    }
  }
}
