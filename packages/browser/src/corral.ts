import type { Store } from '@corral/core';
import { CorralHost, checkHostOptions, openHostStore } from '@corral/wasi/host-kit';
import { BrowserExecutor } from './executor.js';
import type { PreparedComponentCache } from './component-cache.js';
import { IndexedDbStore } from './store-indexeddb.js';

export interface BrowserCorralOptions {
  /** Web Workers in the pool. Default: min(navigator.hardwareConcurrency, 4). */
  size?: number;
  /**
   * Where execution snapshots are recorded: a Store, or false for none.
   * Default: `await IndexedDbStore.open()` (the database 'corral-snapshots').
   * A database that is not a Corral store, or one from a newer Corral, makes
   * `create` throw E_STORE; when IndexedDB cannot be opened at all (a
   * private window, storage blocked) tools still run and every result's
   * `snapshot.error` says the record is missing.
   */
  store?: Store | false;
  /** Most calls waiting for a worker; one more is refused with E_RESOURCE_EXHAUSTED (queue). Default 1000. */
  maxQueue?: number;
  /** Where transpiled components are kept between page loads. Default: IndexedDB ('corral-components'); false: memory only. */
  cache?: PreparedComponentCache | false;
  /** Keep each call's input in its snapshot (the hash is always kept). Default true. */
  recordInputs?: boolean;
  /** Time allowed to transpile a component the first time. Default 120 s. */
  prepareTimeoutMs?: number;
  /** Starts one sandbox worker; see BrowserPoolOptions.createWorker. */
  createWorker?: () => Worker;
  /**
   * Workers started by `create`, before any call, so their boot overlaps
   * registering tools and the page's own work. Default 1; 0 starts workers
   * only when calls need them (as Node does).
   */
  prestart?: number;
}

/**
 * Corral in a browser tab: a registry of tools, a pool of sandbox Web
 * Workers, and the invoke pipeline between them — the same pipeline, checks
 * and error codes as @corral/node. Everything but creating them (CorralHost
 * in @corral/wasi) is shared with Node's `Corral`.
 */
export class BrowserCorral extends CorralHost<BrowserExecutor> {
  static async create(options: BrowserCorralOptions = {}): Promise<BrowserCorral> {
    checkHostOptions<BrowserCorralOptions>('BrowserCorral.create', options, {
      size: 'size',
      store: 'store|false',
      maxQueue: 'count',
      cache: 'object|false',
      recordInputs: 'boolean',
      prepareTimeoutMs: 'ms',
      createWorker: 'function',
      prestart: 'count',
    });
    const executor = new BrowserExecutor({
      ...(options.size !== undefined ? { size: options.size } : {}),
      ...(options.maxQueue !== undefined ? { maxQueue: options.maxQueue } : {}),
      ...(options.cache !== undefined ? { cache: options.cache } : {}),
      ...(options.prepareTimeoutMs !== undefined ? { prepareTimeoutMs: options.prepareTimeoutMs } : {}),
      ...(options.createWorker ? { createWorker: options.createWorker } : {}),
    });
    // The first worker boots while the store opens (creating a database on a
    // first visit takes a while); a store that cannot be opened stops it again.
    executor.pool.prestart(options.prestart ?? 1);
    const given = options.store;
    let store: Store | undefined;
    try {
      store = given === false ? undefined : (given ?? (await openStore()));
    } catch (err) {
      await executor.close();
      throw err;
    }
    return new BrowserCorral({ executor, store, ownsStore: given === undefined, recordInputs: options.recordInputs });
  }
}

/** As in Node: a damaged, foreign or newer store is refused; one that cannot be opened at all still lets tools run. */
function openStore(): Promise<Store> {
  return openHostStore('IndexedDB database "corral-snapshots"', () => IndexedDbStore.open());
}
