/**
 * @corral/node — the Node host: Corral in one object, the worker_threads
 * sandbox pool, the SQLite snapshot store, host-folder mounts, the
 * transpile cache. The policy gate is `@corral/node/policy`, the HTTP API
 * server `@corral/node/http` and the MCP server `@corral/node/mcp`, so a
 * host that uses none of them does not load them (nor the YAML parser, the
 * workflow engine and Node's HTTP server they bring). The CLI (`corral`) is not exported: it is the package's bin.
 *
 * Everything exported here is public API, including the part of
 * @corral/core a host's user needs (errors, tool and result types, the
 * snapshot model), re-exported so one import serves. The rest of core
 * (spec validation, registry internals) is imported from @corral/core.
 */
export { Corral, BUNDLED_TOOLS_DIR, type CorralOptions } from './corral.js';
export type { ExecOptions } from '@corral/wasi';
export { WorkerExecutor, type WorkerExecutorOptions } from './executor.js';
export type { PrepareEvent } from '@corral/wasi/host-kit';
export { WorkerPool, SandboxWorker, DEFAULT_RESOURCE_LIMITS, type PoolOptions, type TaskOptions } from './pool.js';
export { ComponentCache, defaultCacheDir } from './cache.js';
export { openHostDirectory, hostConfinement, exactHostFileTimes, type Confinement } from './host-fs.js';
export { hostMountOpeners, type HostMountSource } from './mounts.js';
export { loadToolFolder, loadToolFiles } from './tool-folder.js';
export { loadWorkflowFolders, type LoadedWorkflow } from './workflow-folder.js';
export { watchToolFolders, type ToolWatcher, type ToolWatchOptions, type ToolChange } from './tool-watch.js';
export {
  SqliteStore,
  defaultStorePath,
  SCHEMA_VERSION as SQLITE_SCHEMA_VERSION,
  APPLICATION_ID as SQLITE_APPLICATION_ID,
  type SqliteStoreOptions,
} from './store-sqlite.js';
// The policy gate and policy files are the subpath @corral/node/policy.
// The HTTP API (`corral serve`) is the subpath @corral/node/http.

// The part of @corral/core a host's user needs (one list, shared with @corral/browser).
export * from '@corral/core/host-api';
