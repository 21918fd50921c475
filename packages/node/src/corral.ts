import { fileURLToPath } from 'node:url';
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
import { WorkerExecutor, type WorkerExecutorOptions } from './executor.js';
import { loadToolFolder } from './tool-folder.js';
import { SqliteStore, defaultStorePath } from './store-sqlite.js';

/** The first-party tools that ship with Corral (`wasm-tools/` at the repository root). */
export const BUNDLED_TOOLS_DIR = fileURLToPath(new URL('../../../wasm-tools/', import.meta.url));

export interface CorralOptions extends WorkerExecutorOptions {
  /** Load the bundled first-party tools. Default true. */
  bundled?: boolean;
  /** More folders of tools (each a tool folder or a folder of tool folders). */
  toolDirs?: string[];
  /**
   * Where execution snapshots are recorded: a Store, the path of an SQLite
   * file, or false for none. Default: the SQLite file at `defaultStorePath()`
   * ($CORRAL_STORE, else $XDG_DATA_HOME/corral/snapshots.db, else
   * ~/.local/share/corral/snapshots.db). A file that is not a Corral store,
   * one from a newer Corral, or a path that is not a regular file (a folder,
   * FIFO, device) makes `create` throw E_STORE.
   */
  store?: Store | string | false;
  /** Keep each call's input in its snapshot (the hash is always kept). Default true. */
  recordInputs?: boolean;
}

/**
 * Corral for Node in one object: a registry of tools, a pool of sandbox
 * workers, and the invoke pipeline between them.
 */
export class Corral {
  readonly registry: Registry;
  readonly executor: WorkerExecutor;
  readonly runtime: Runtime;
  /** Where snapshots go, or undefined when recording is off. */
  readonly store: Store | undefined;
  /** Tool folders that failed to load, kept so `corral tools` can report them. */
  readonly loadErrors: CorralError[];
  /** A store this object opened (from a path) and so must close. */
  readonly #ownedStore: Store | undefined;

  private constructor(registry: Registry, executor: WorkerExecutor, loadErrors: CorralError[], store: Store | undefined, owned: boolean, recordInputs?: boolean) {
    this.registry = registry;
    this.executor = executor;
    this.store = store;
    this.#ownedStore = owned ? store : undefined;
    this.runtime = new Runtime({ registry, executor, store, ...(recordInputs !== undefined ? { recordInputs } : {}) });
    this.loadErrors = loadErrors;
  }

  static async create(options: CorralOptions = {}): Promise<Corral> {
    const registry = new Registry();
    const dirs = [...(options.bundled === false ? [] : [BUNDLED_TOOLS_DIR]), ...(options.toolDirs ?? [])];
    const loadErrors: CorralError[] = [];
    for (const dir of dirs) loadErrors.push(...(await loadToolFolder(registry, dir)).errors);
    // Open the store before starting workers, so a refused store costs nothing to report.
    const given = options.store;
    const store = given === false ? undefined : typeof given === 'object' ? given : await openStore(given ?? defaultStorePath());
    return new Corral(registry, new WorkerExecutor(options), loadErrors, store, typeof given !== 'object', options.recordInputs);
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

  async close(): Promise<void> {
    try {
      await this.executor.close();
    } finally {
      await this.#ownedStore?.close();
    }
  }
}

/**
 * A store that is damaged, foreign or from a newer Corral is refused (throws);
 * one that merely cannot be written (read-only, full disk) still lets tools
 * run, and every call's envelope says its snapshot was not saved.
 */
async function openStore(path: string): Promise<Store> {
  try {
    return await SqliteStore.open(path);
  } catch (err) {
    if (CorralError.is(err, ErrorCodes.STORE) && err.details.unwritable === true) return new UnavailableStore(path, err);
    throw err;
  }
}
