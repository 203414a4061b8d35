/**
 * What the inventory operations use, in one module that the operation table loads only when an inventory
 * operation runs (so that other commands do not pay for the query language and the store at start-up).
 */
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
export { inventoryStore } from './store.js';
