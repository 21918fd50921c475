import { CorralError, ErrorCodes, type MountBinding } from '@corral/core';
import { PoolExecutor } from '@corral/wasi/host-kit';
import { BrowserWorkerPool, type BrowserPoolOptions, type BrowserSandboxWorker } from './pool.js';
import { IndexedDbComponentCache, type PreparedComponentCache } from './component-cache.js';
import { parseOpfsPath } from './opfs.js';

export interface BrowserExecutorOptions extends BrowserPoolOptions {
  /** Where transpiled components are kept between page loads. Default: IndexedDB ('corral-components'); `false` keeps them in memory only. */
  cache?: PreparedComponentCache | false;
  /** Time allowed to transpile a component the first time. Default 120 s. */
  prepareTimeoutMs?: number;
}

/**
 * Runs tools in a pool of sandbox Web Workers. Each component is transpiled
 * once in a worker (cached in memory and in IndexedDB by its SHA-256),
 * compiled once per worker, and instantiated fresh for every call; a preview1
 * module is sent as it is.
 */
export class BrowserExecutor extends PoolExecutor<BrowserSandboxWorker> {
  declare readonly pool: BrowserWorkerPool;
  readonly cache: PreparedComponentCache | undefined;

  constructor(options: BrowserExecutorOptions = {}) {
    const cache = options.cache === false ? undefined : (options.cache ?? new IndexedDbComponentCache());
    super(new BrowserWorkerPool(options), {
      cache,
      ...(options.prepareTimeoutMs !== undefined ? { prepareTimeoutMs: options.prepareTimeoutMs } : {}),
      checkMounts: checkBrowserMounts,
    });
    this.cache = cache;
  }
}

/** Browsers mount in-memory trees and OPFS folders; a host folder is refused before anything runs. */
function checkBrowserMounts(mounts: MountBinding[]): MountBinding[] {
  for (const mount of mounts) {
    if (mount.hostPath !== undefined) {
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        `Mount ${mount.guest} is bound to a host folder, which a browser cannot open; bind a tree or an OPFS folder (opfsPath) instead.`,
        { guest: mount.guest, host_path: mount.hostPath },
      );
    }
    if (mount.opfsPath !== undefined) parseOpfsPath(mount.opfsPath);
  }
  return mounts;
}
