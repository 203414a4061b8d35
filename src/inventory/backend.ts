/**
 * The inventory store as the operations see it: the interface both backends implement, the folder's journal
 * (store.ts) and PostgreSQL (postgres.ts). Types only, so that neither backend imports the other and the choice
 * between them (index.ts) imports both.
 */
import type { NfvError } from '../model/errors.js';
import type { Entity } from './entities.js';
import type { CommandOutcome } from './ingest.js';
import type { Answer } from './service.js';

/** What one command of a batch came to: its answer, or the error that refused it (nothing stored for it). */
export type CommandResult = { ok: CommandOutcome } | { error: NfvError };

/** What a stored report answers at /reports/{hash}/metrics and /logs. */
export interface StoredReportParts {
  metrics: unknown[] | null;
  logs: unknown[] | null;
}

/** The inventory as the operations see it; the folder's journal and PostgreSQL give the same answers. */
export interface InventoryStore {
  /**
   * Applies commands in order. Each is checked on its own (a refused one changes nothing and does not stop the
   * others) and is durable when this resolves.
   */
  apply(commands: unknown[], now: number): Promise<CommandResult[]>;
  /** A query on an entity; `fixed` adds the route's criteria (`/resources/<type>`). */
  query(entity: Entity, query: URLSearchParams, fixed?: unknown[]): Promise<Answer>;
  eventCounts(query: URLSearchParams): Promise<Answer>;
  aggregateEventCounts(query: URLSearchParams): Promise<Answer>;
  /** The report with this hash, or undefined. */
  report(hash: string): Promise<StoredReportParts | undefined>;
}
