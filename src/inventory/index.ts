/**
 * What the inventory operations use, in one module that the operation table loads only when an inventory
 * operation runs (so that other commands do not pay for the query language and the store at start-up).
 * It also chooses each workspace's store, so that neither backend imports the other.
 */
import type { Workspace } from '../store/workspace.js';
import type { InventoryStore } from './backend.js';
import { PostgresInventoryStore } from './postgres.js';
import { JournalInventoryStore } from './store.js';

export { ENTITIES, events, indexOf, reports, resources } from './entities.js';
export { rejectUnknown } from './paging.js';
export {
  aggregateEventCounts,
  eventCounts,
  isExtract,
  queryEntity,
  rootQuery,
  withPuppetdbNames,
  type Answer,
  type RootQuery,
} from './service.js';

const stores = new WeakMap<Workspace, InventoryStore>();

/**
 * The inventory store of a workspace: its database's tables when it has one, else the folder's journal (one store
 * per workspace object, so that serve keeps its state between requests).
 */
export function inventoryStore(ws: Workspace): InventoryStore {
  let store = stores.get(ws);
  if (!store)
    stores.set(ws, (store = ws.database ? new PostgresInventoryStore(ws.database) : new JournalInventoryStore(ws)));
  return store;
}
