import {
  CorralError,
  ErrorCodes,
  Registry,
  Runtime,
  type DecisionInput,
  type ExecutionResult,
  type DecisionSnapshot,
  type InvokeOptions,
  type InvokeResult,
  type Store,
  type Tool,
} from '@corral/core';
import { UnavailableStore } from '@corral/core/store-kit';
import { execRequest, type ExecOptions } from '@corral/wasi';
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
 * and error codes as @corral/node.
 */
export class BrowserCorral {
  readonly registry: Registry;
  readonly executor: BrowserExecutor;
  readonly runtime: Runtime;
  /** Where snapshots go, or null when recording is off. */
  readonly store: Store | null;
  /** A store this object opened and so must close. */
  readonly #ownedStore: Store | undefined;

  private constructor(executor: BrowserExecutor, store: Store | null, owned: boolean, recordInputs: boolean | undefined) {
    this.registry = new Registry();
    this.executor = executor;
    this.store = store;
    this.#ownedStore = owned && store ? store : undefined;
    this.runtime = new Runtime({
      registry: this.registry,
      executor,
      ...(store ? { store } : {}),
      ...(recordInputs !== undefined ? { recordInputs } : {}),
    });
  }

  static async create(options: BrowserCorralOptions = {}): Promise<BrowserCorral> {
    // Open the store before starting workers, so a refused store costs nothing to report.
    const given = options.store;
    const store = given === false ? null : given ?? (await openStore());
    const executor = new BrowserExecutor({
      ...(options.size !== undefined ? { size: options.size } : {}),
      ...(options.maxQueue !== undefined ? { maxQueue: options.maxQueue } : {}),
      ...(options.cache !== undefined ? { cache: options.cache } : {}),
      ...(options.prepareTimeoutMs !== undefined ? { prepareTimeoutMs: options.prepareTimeoutMs } : {}),
      ...(options.createWorker ? { createWorker: options.createWorker } : {}),
    });
    executor.pool.prestart(options.prestart ?? 1);
    return new BrowserCorral(executor, store, given === undefined, options.recordInputs);
  }

  /**
   * Register a tool from its tool-spec.json (a parsed object or the JSON
   * text) and its wasm bytes. Throws CorralError E_REGISTRATION with every
   * problem of a bad spec, or when the bytes are not WebAssembly.
   */
  async register(spec: unknown, wasm: Uint8Array, source = 'bytes'): Promise<Tool> {
    let raw = spec;
    if (typeof spec === 'string') {
      try {
        raw = JSON.parse(spec);
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new CorralError(ErrorCodes.REGISTRATION, `Invalid tool spec ${source}: it is not JSON (${reason})`, { source, reason });
      }
    }
    if (!(wasm instanceof Uint8Array)) {
      throw new CorralError(ErrorCodes.REGISTRATION, `The wasm of ${source} must be a Uint8Array (got ${describe(wasm)})`, { source });
    }
    return this.registry.register(raw, wasm, source);
  }

  invoke<O = unknown>(ref: string, input: unknown, options?: InvokeOptions): Promise<InvokeResult<O>> {
    return this.runtime.invoke(ref, input, options) as Promise<InvokeResult<O>>;
  }

  invokeTool<O = unknown>(tool: Tool, input: unknown, options?: InvokeOptions): Promise<InvokeResult<O>> {
    return this.runtime.invokeTool(tool, input, options) as Promise<InvokeResult<O>>;
  }

  /**
   * Run any WASI program — a preview1 command module or a wasi:cli command
   * component — the way `wasmtime run` would, inside a sandbox worker: argv,
   * environment and directories exactly as given, no network, and the
   * memory, disk and time limits of `options` (see ExecOptions). Output is
   * captured into the result, or streamed to onStdout/onStderr. Nothing is
   * recorded in the snapshot store: the program is not a registered tool.
   */
  async exec(wasm: Uint8Array, options?: ExecOptions): Promise<ExecutionResult> {
    return this.executor.exec(execRequest(options), wasm);
  }

  /** Record a model decision; pass its id as `decisionId` to the calls it causes. See Runtime.recordDecision. */
  recordDecision(decision: DecisionInput): Promise<DecisionSnapshot> {
    return this.runtime.recordDecision(decision);
  }

  /** Stop the workers (calls still queued are refused) and close a store this object opened. */
  async close(): Promise<void> {
    try {
      await this.executor.close();
    } finally {
      await this.#ownedStore?.close();
    }
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  return (value as { constructor?: { name?: string } }).constructor?.name ?? 'object';
}

/** As in Node: a damaged, foreign or newer store is refused; one that cannot be opened at all still lets tools run. */
async function openStore(): Promise<Store> {
  try {
    return await IndexedDbStore.open();
  } catch (err) {
    if (CorralError.is(err, ErrorCodes.STORE) && err.details.unwritable === true) return new UnavailableStore('IndexedDB database "corral-snapshots"', err);
    throw err;
  }
}
