import { readFile } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { CorralError, ErrorCodes, Registry, type Executor, type Store, type Tool } from '@corral/core';
import {
  CorralHost,
  EXECUTOR_CLOSE_GRACE_MS,
  checkHostOptions,
  decodePreparedFile,
  openHostStore,
  settledWithin,
  type CorralHostParts,
} from '@corral/wasi/host-kit';
import { WorkerExecutor, type WorkerExecutorOptions } from './executor.js';
import { loadToolFolder } from './tool-folder.js';
import { SqliteStore, defaultStorePath, type SqliteStoreOptions } from './store-sqlite.js';
import { isPostgresUrl, openPostgresStore } from './store-url.js';
import { packageRequire } from './package-files.js';

/**
 * The first-party tools that ship with Corral: the folder of the @corral/tools
 * package (`wasm-tools/` in the repository), found the way Node finds any
 * dependency, so it is right in the repository and in an installed copy alike.
 */
export const BUNDLED_TOOLS_DIR = dirname(packageRequire.resolve('@corral/tools/package.json')) + sep;

export interface CorralOptions extends WorkerExecutorOptions {
  /** Load the bundled first-party tools. Default true. */
  bundled?: boolean;
  /** More folders of tools (each a tool folder or a folder of tool folders). */
  toolDirs?: string[];
  /**
   * Where execution snapshots are recorded: a Store, the path of an SQLite
   * file, a PostgreSQL URL (`postgres://user@host/db`: a PostgresStore in
   * its `corral` schema, shared by every process that opens it), or false
   * for none. Default: the SQLite file at `defaultStorePath()`
   * ($CORRAL_STORE, else $XDG_DATA_HOME/corral/snapshots.db, else
   * ~/.local/share/corral/snapshots.db). A file that is not a Corral store,
   * one from a newer Corral, or a path that is not a regular file (a folder,
   * FIFO, device) makes `create` throw E_STORE.
   */
  store?: Store | string | false;
  /** Keep each call's input in its snapshot (the hash is always kept). Default true. */
  recordInputs?: boolean;
  /**
   * A size cap, in bytes, for the SQLite store Corral opens from a path: past
   * it the oldest records go, archived ones first (see SqliteStoreOptions.maxBytes).
   * A Store passed in takes its own cap.
   */
  storeMaxBytes?: number;
  /** Told (a line of text) about slow store maintenance and what the size cap removed. */
  onStoreProgress?: (message: string) => void;
  /**
   * Run tool calls on this executor instead of the local worker pool, e.g.
   * `remote({ servers })` from @corral/fleet; or a function given the local
   * pool's executor that returns the one to use, e.g.
   * `(local) => routed({ local, fleet: remote({ servers }) })` to send each
   * call locally or to the fleet. The pipeline around it (input and output
   * checks, snapshots) is the same; `exec` still runs locally. Closed with
   * Corral: `close()` waits up to EXECUTOR_CLOSE_GRACE_MS (5 s) for its close,
   * then closes the store anyway and rejects (E_CLOSED). Its close may call
   * Corral's close at once, but must not wait for it (that waits for it).
   */
  executor?: Executor | ((local: WorkerExecutor) => Executor);
}

/**
 * Corral for Node in one object: a registry of tools, a pool of sandbox
 * workers, and the invoke pipeline between them. Everything but creating
 * them (CorralHost in @corral/wasi) is shared with @corral/browser.
 */
export class Corral extends CorralHost<WorkerExecutor> {
  /** Tool folders that failed to load, kept so `corral tools` can report them. */
  readonly loadErrors: CorralError[];

  private constructor(parts: CorralHostParts<WorkerExecutor>, loadErrors: CorralError[]) {
    super(parts);
    this.loadErrors = loadErrors;
  }

  static async create(options: CorralOptions = {}): Promise<Corral> {
    checkHostOptions<CorralOptions>('Corral.create', options, {
      bundled: 'boolean',
      toolDirs: 'string[]',
      store: 'store|path|false',
      recordInputs: 'boolean',
      storeMaxBytes: 'size',
      onStoreProgress: 'function',
      size: 'size',
      maxQueue: 'count',
      resourceLimits: 'object|false',
      cache: 'object|false',
      prepareTimeoutMs: 'ms',
      onPrepare: 'function',
      adaptedModules: 'boolean',
      idleWorkers: 'count',
      idleTimeoutMs: 'ms',
      spareWorker: 'boolean',
      toolCacheBytes: 'size',
      executor: 'executor|function',
    });
    const registry = new Registry();
    const dirs = [...(options.bundled === false ? [] : [BUNDLED_TOOLS_DIR]), ...(options.toolDirs ?? [])];
    const loadErrors: CorralError[] = [];
    const given = options.store;
    if (typeof given === 'object' && options.storeMaxBytes !== undefined) {
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        'Corral.create: storeMaxBytes applies to a store Corral opens from a path; give your Store its own cap (SqliteStore.open(path, { maxBytes }))',
        { option: 'storeMaxBytes' },
      );
    }
    const location = given === undefined ? defaultStorePath() : given;
    if (typeof location === 'string' && isPostgresUrl(location) && options.storeMaxBytes !== undefined) {
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        'Corral.create: storeMaxBytes caps an SQLite store; a PostgreSQL store has no size cap',
        {
          option: 'storeMaxBytes',
        },
      );
    }
    const storeOptions = {
      ...(options.storeMaxBytes !== undefined ? { maxBytes: options.storeMaxBytes } : {}),
      ...(options.onStoreProgress ? { onProgress: options.onStoreProgress } : {}),
    };
    // The first worker boots (its own thread) while the tools load and the store opens.
    const executor = new WorkerExecutor(options);
    let invokeExecutor: Executor | undefined;
    try {
      invokeExecutor = typeof options.executor === 'function' ? options.executor(executor) : options.executor;
    } catch (err) {
      await executor.close();
      throw err;
    }
    // With calls going only to another executor, the local pool serves `exec` alone: start no worker until one runs.
    if (typeof options.executor !== 'object') executor.pool.prestart(1);
    let store: Store | undefined;
    try {
      for (const dir of dirs) {
        const { loaded, errors } = await loadToolFolder(registry, dir);
        loadErrors.push(...errors);
        for (const tool of loaded) usePrebuilt(executor, tool);
      }
      store = given === false ? undefined : typeof given === 'object' ? given : await openStore(location as string, storeOptions);
    } catch (err) {
      // The failure is what the caller needs to read, whatever the executors' close does (a throw, or never ending).
      const closeInvoke = async () => invokeExecutor?.close?.();
      await settledWithin([executor.close(), closeInvoke()], EXECUTOR_CLOSE_GRACE_MS);
      throw err;
    }
    return new Corral(
      {
        registry,
        executor,
        invokeExecutor,
        store,
        ownsStore: typeof given !== 'object',
        recordInputs: options.recordInputs,
      },
      loadErrors,
    );
  }
}

/**
 * A bundled component's transpiled form, made when Corral was built
 * (wasm-tools/prepare-components.mjs): its first call needs no jco (~1 s and
 * ~80 MB). Read only from Corral's own tools folder, judged by where the
 * registered tool came from (a folder loaded earlier may have registered the
 * same bytes first): the glue is code the sandbox worker runs.
 */
function usePrebuilt(executor: WorkerExecutor, tool: Tool): void {
  if (tool.spec.kind !== 'component' || !tool.source.startsWith(BUNDLED_TOOLS_DIR)) return;
  const file = resolve(dirname(tool.source), tool.spec.component).replace(/\.wasm$/, '.prepared.json');
  if (!file.startsWith(BUNDLED_TOOLS_DIR)) return;
  executor.addPrebuilt(tool.wasmSha256, async () => decodePreparedFile(await readFile(file, 'utf8'), tool.wasmSha256));
}

/**
 * A store that is damaged, foreign or from a newer Corral is refused (throws);
 * one that merely cannot be written (read-only, full disk) still lets tools
 * run, and every call's envelope says its snapshot was not saved.
 */
function openStore(path: string, options: SqliteStoreOptions): Promise<Store> {
  if (isPostgresUrl(path)) return openPostgresStore(path);
  return openHostStore(path, () => SqliteStore.open(path, options));
}
