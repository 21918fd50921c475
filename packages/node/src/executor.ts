import { PoolExecutor, type PrepareEvent } from '@corral/wasi/host-kit';
import { WorkerPool, type PoolOptions, type SandboxWorker } from './pool.js';
import { ComponentCache } from './cache.js';
import { hostMountChecks } from './mounts.js';

export interface WorkerExecutorOptions extends PoolOptions {
  /** Where transpiled components are cached; `false` keeps them in memory only. */
  cache?: ComponentCache | false;
  /** Time allowed to transpile a component the first time. Default 120 s. */
  prepareTimeoutMs?: number;
  /** Told when a component has to be transpiled before its first call (not cached): seconds for a large one. */
  onPrepare?: (event: PrepareEvent) => void;
  /**
   * Run a component that only wraps a preview1 module in jco's preview1 adapter
   * as that module, at about half the cost a call. Default true; false runs
   * every component through jco's glue, answering edge cases as the adapter
   * does under wasmtime (README, "Tools may also be plain WASI preview1 modules").
   */
  adaptedModules?: boolean;
}

/**
 * Runs tools in a pool of worker_threads sandboxes. Each component is
 * transpiled once (cached in memory and on disk by its SHA-256), compiled once
 * per worker, and instantiated fresh for every call; host folders
 * (`{ kind: 'host', path }`) are checked before the call and opened live in
 * the worker.
 */
export class WorkerExecutor extends PoolExecutor<SandboxWorker> {
  declare readonly pool: WorkerPool;

  constructor(options: WorkerExecutorOptions = {}) {
    super(new WorkerPool(options), {
      cache: options.cache === false ? undefined : (options.cache ?? new ComponentCache()),
      ...(options.prepareTimeoutMs !== undefined ? { prepareTimeoutMs: options.prepareTimeoutMs } : {}),
      ...(options.onPrepare !== undefined ? { onPrepare: options.onPrepare } : {}),
      ...(options.adaptedModules !== undefined ? { adaptedModules: options.adaptedModules } : {}),
      mountSources: hostMountChecks,
    });
  }
}
