/**
 * What every store backend shares: an area's specification, how a change is written and gets fresh ids. Apart from
 * workspace.ts so that the folder (workspace.ts) and PostgreSQL (postgres.ts) both build on it without importing
 * each other.
 */
/** What a change returns when it changed nothing: `mutate` then writes nothing and answers `value`. */
export class Unchanged<R> {
  constructor(readonly value: R) {}
}

/**
 * Where a change gets fresh ids: each id of a kind is handed out once, by any process on the same workspace. The
 * folder counts them in the area's counters under its lock; PostgreSQL takes them from sequences (postgres.ts).
 */
export interface IdSource {
  /** `count` fresh ids of `kind`, ascending. */
  take(kind: string, count: number): Promise<number[]>;
  /** Makes later ids of `kind` larger than `id`: data moved in from elsewhere brings ids of its own. */
  skipPast(kind: string, id: number): Promise<void>;
  /** Starts `kind` again at 1: only once nothing holding an id of that kind is left (VEREFOO's `/fwd` bulk delete). */
  restart(kind: string): Promise<void>;
}

export async function nextId(ids: IdSource, kind: string): Promise<number> {
  return (await ids.take(kind, 1))[0]!;
}

/** How an area hands out ids: the kinds, and the counters of the last id of each kind, kept in the area. */
export interface AreaIds<T> {
  kinds: readonly string[];
  counters: (data: T) => Record<string, number>;
}

/** The area's counters, for a kind of id it hands out (a misspelt kind is a bug, not a new counter). */
export function countersOf<T>(area: AreaSpec<T>, data: T, kind: string): Record<string, number> {
  if (!area.ids?.kinds.includes(kind)) throw new Error(`the ${area.name} area hands out no ${kind} ids`);
  return area.ids.counters(data);
}

/** Raises a kind's counter to `id` unless it is there already. */
export function raiseCounter(counters: Record<string, number>, kind: string, id: number): void {
  counters[kind] = Math.max(counters[kind] ?? 0, id);
}

export interface AreaSpec<T> {
  /** File name without `.json`. */
  name: string;
  /** Contents of an area that was never written. */
  initial: () => T;
  /** Checks what was read and gives it its in-memory form; throws an Error saying what is wrong otherwise. */
  decode: (raw: unknown) => T;
  /** Indented JSON (readable) or compact (large areas). */
  pretty?: boolean;
  /** Kept in PostgreSQL when the workspace has a database (`--database`); otherwise always in the folder. */
  database?: boolean;
  /** The ids its changes hand out, if any. */
  ids?: AreaIds<T>;
}

/** What `mutate` runs: changes the area's data in place, taking fresh ids from `ids`. */
export type Change<T, R> = (data: T, ids: IdSource) => R | Unchanged<R> | Promise<R | Unchanged<R>>;
