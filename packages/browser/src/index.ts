/** @corral/browser — the browser host: IndexedDB snapshot store (Web Worker pool and OPFS mounts to come). */
export { IndexedDbStore, SCHEMA_VERSION, type IndexedDbStoreOptions } from './store-indexeddb.js';
