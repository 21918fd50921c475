/**
 * @corral/browser — the browser host: Corral in one object, a Web Worker
 * sandbox pool, OPFS mounts, the IndexedDB snapshot store and transpile cache.
 *
 * Everything exported here is public API, including the part of
 * @corral/core a host's user needs (errors, tool and result types, the
 * snapshot model), re-exported so one import serves. The rest of core
 * (spec validation, registry internals) is imported from @corral/core.
 */
export { BrowserCorral, type BrowserCorralOptions } from './corral.js';
export type { ExecOptions } from '@corral/wasi';
export { BrowserExecutor, type BrowserExecutorOptions } from './executor.js';
export { BrowserWorkerPool, BrowserSandboxWorker, defaultPoolSize, startSandboxWorker, type BrowserPoolOptions } from './pool.js';
export { IndexedDbComponentCache, type PreparedComponentCache } from './component-cache.js';
export { bundledTools, registerBundledTools, type BundledTool, type RegisterBundledOptions } from './bundled.js';
export { opfsDirectory, writeOpfsTree, readOpfsTree, type OpfsMountSource } from './opfs.js';
export { IndexedDbStore, SCHEMA_VERSION as INDEXEDDB_SCHEMA_VERSION, type IndexedDbStoreOptions } from './store-indexeddb.js';

// The part of @corral/core a host's user needs (one list, shared with @corral/node).
export * from '@corral/core/host-api';
