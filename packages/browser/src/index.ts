/** @corral/browser — the browser host: a Web Worker sandbox pool, OPFS mounts, the IndexedDB snapshot store. */
export { BrowserCorral, type BrowserCorralOptions } from './corral.js';
export type { ExecOptions } from '@corral/wasi';
export { BrowserExecutor, type BrowserExecutorOptions } from './executor.js';
export { BrowserWorkerPool, BrowserSandboxWorker, defaultPoolSize, startSandboxWorker, type BrowserPoolOptions } from './pool.js';
export { IndexedDbComponentCache, type PreparedComponentCache } from './component-cache.js';
export { bundledTools, registerBundledTools, type BundledTool, type RegisterBundledOptions } from './bundled.js';
export { parseOpfsPath, opfsDirectory, writeOpfsTree, readOpfsTree } from './opfs.js';
export { IndexedDbStore, SCHEMA_VERSION, type IndexedDbStoreOptions } from './store-indexeddb.js';
export type { SandboxWorkerApi } from './worker.js';
export type { Outcome } from '@corral/wasi';
export * from '@corral/core';
