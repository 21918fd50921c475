import { PoolExecutor } from '@corral/wasi/host-kit';
import { sourceString, type MountSourceChecks } from '@corral/wasi/fs';
import { BrowserWorkerPool, type BrowserPoolOptions, type BrowserSandboxWorker } from './pool.js';
import { IndexedDbComponentCache, type PreparedComponentCache } from './component-cache.js';
import { OPFS_KIND, parseOpfsPath, type OpfsMountSource } from './opfs.js';

export interface BrowserExecutorOptions extends BrowserPoolOptions {
  /** Where transpiled components are kept between page loads. Default: IndexedDB ('corral-components'); `false` keeps them in memory only. */
  cache?: PreparedComponentCache | false;
  /** Time allowed to transpile a component the first time. Default 120 s. */
  prepareTimeoutMs?: number;
}

/** Before a call: an OPFS source's path must name a folder from the OPFS root, without climbing (the worker loads it). */
const opfsMountChecks: MountSourceChecks = {
  [OPFS_KIND]: (source, guest) => {
    const path = sourceString(source, 'path', guest);
    parseOpfsPath(path);
    return { kind: OPFS_KIND, path } satisfies OpfsMountSource;
  },
};

/**
 * Runs tools in a pool of sandbox Web Workers. Each component is transpiled
 * once in a worker (cached in memory and in IndexedDB by its SHA-256),
 * compiled once per worker, and instantiated fresh for every call; a preview1
 * module is sent as it is. Mounts are in-memory trees or OPFS folders
 * (`{ kind: 'opfs', path }`).
 */
export class BrowserExecutor extends PoolExecutor<BrowserSandboxWorker> {
  declare readonly pool: BrowserWorkerPool;
  readonly cache: PreparedComponentCache | undefined;

  constructor(options: BrowserExecutorOptions = {}) {
    const cache = options.cache === false ? undefined : (options.cache ?? new IndexedDbComponentCache());
    super(new BrowserWorkerPool(options), {
      cache,
      ...(options.prepareTimeoutMs !== undefined ? { prepareTimeoutMs: options.prepareTimeoutMs } : {}),
      mountSources: opfsMountChecks,
    });
    this.cache = cache;
  }
}
