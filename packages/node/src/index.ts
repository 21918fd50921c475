export { Corral, BUNDLED_TOOLS_DIR, type CorralOptions } from './corral.js';
export { WorkerExecutor, type WorkerExecutorOptions } from './executor.js';
export { WorkerPool, SandboxWorker, DEFAULT_RESOURCE_LIMITS, type PoolOptions, type TaskOptions } from './pool.js';
export { ComponentCache, defaultCacheDir } from './cache.js';
export { parseMountFlag, resolveHostMounts } from './mounts.js';
export { loadToolFolder, loadToolFiles } from './tool-folder.js';
export { main } from './cli.js';
export * from '@corral/core';
export { SqliteStore, defaultStorePath, SCHEMA_VERSION, APPLICATION_ID, type SqliteStoreOptions } from './store-sqlite.js';
