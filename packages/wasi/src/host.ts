/**
 * The host facade both hosts share: Corral in one object — a registry of
 * tools, an executor (the host's sandbox pool) and the invoke pipeline
 * between them, plus the snapshot store it may own. @corral/node's
 * `Corral` and @corral/browser's `BrowserCorral` subclass it and add only
 * how they create their executor and their default store.
 */
import {
  CorralError,
  ErrorCodes,
  Registry,
  Runtime,
  type DecisionInput,
  type DecisionSnapshot,
  type ExecutionResult,
  type Executor,
  type InvokeOptions,
  type InvokeResult,
  type Store,
  type Tool,
} from '@corral/core';
import { closest } from '@corral/core/errors';
import { UnavailableStore } from '@corral/core/store-kit';
import { execRequest, type ExecOptions } from './exec-options.js';
import type { ExecRequest } from './executor.js';

/** What a host's executor does beyond running tools: run any WASI program, and stop. */
export interface HostExecutor extends Executor {
  exec(request: ExecRequest, wasm: Uint8Array): Promise<ExecutionResult>;
  close(): Promise<void>;
}

export interface CorralHostParts<E extends HostExecutor> {
  /** Default: an empty registry. */
  registry?: Registry;
  executor: E;
  /**
   * Runs the registered tools' calls instead of `executor` (which still runs
   * `exec`): e.g. the fleet's remote executor. Closed by `close()`, which
   * waits for its close: that close may call the host's close() at once (it
   * returns at once), but must not wait for a later one (it would wait for
   * itself). close() waits `closeGraceMs` for it, then closes the store anyway.
   */
  invokeExecutor?: Executor | undefined;
  /** How long close() waits for the executors' own close. Default EXECUTOR_CLOSE_GRACE_MS. */
  closeGraceMs?: number | undefined;
  /** Where snapshots go; undefined: recording is off. */
  store: Store | undefined;
  /** True when the host opened the store itself, so `close` closes it. */
  ownsStore: boolean;
  /** Keep each call's input in its snapshot (the hash is always kept). Default true. */
  recordInputs?: boolean | undefined;
}

/**
 * How long a host's close() waits for its executors' close() before it closes
 * its store anyway and rejects: an executor whose close never ends (or waits
 * for the host's close, which waits for it) must not keep the store open.
 * Long enough for a remote executor to drain its calls, whose results are
 * recorded in that store.
 */
export const EXECUTOR_CLOSE_GRACE_MS = 5_000;

export class CorralHost<E extends HostExecutor = HostExecutor> {
  readonly registry: Registry;
  readonly executor: E;
  readonly runtime: Runtime;
  /** Where snapshots go, or undefined when recording is off. */
  readonly store: Store | undefined;
  /** A store this object opened and so must close. */
  readonly #ownedStore: Store | undefined;
  readonly #invokeExecutor: Executor | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** True while the executors' close() calls are being made (a close() from inside one must not wait for itself). */
  #closingExecutors = false;
  readonly #closeGraceMs: number;

  protected constructor(parts: CorralHostParts<E>) {
    this.registry = parts.registry ?? new Registry();
    this.executor = parts.executor;
    this.store = parts.store;
    this.#ownedStore = parts.ownsStore ? parts.store : undefined;
    this.#invokeExecutor = parts.invokeExecutor;
    this.#closeGraceMs = parts.closeGraceMs ?? EXECUTOR_CLOSE_GRACE_MS;
    this.runtime = new Runtime({
      registry: this.registry,
      executor: parts.invokeExecutor ?? parts.executor,
      ...(parts.store ? { store: parts.store } : {}),
      ...(parts.recordInputs !== undefined ? { recordInputs: parts.recordInputs } : {}),
    });
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
    if (this.#closed) {
      // Not the store's "is closed" (E_STORE): what the caller did was close this runtime.
      return Promise.reject(
        new CorralError(ErrorCodes.CLOSED, 'Corral was closed, so it records no more decisions. Create a new instance.', {
          running: false,
        }),
      );
    }
    return this.runtime.recordDecision(decision);
  }

  /** Stop the workers (calls still queued are refused) and close a store this object opened. Closing again waits for the first close. */
  close(): Promise<void> {
    // Called back from an executor's own close (a wrapper that closes everything): the close under way is
    // that executor's caller, and waiting for it from inside would wait for itself.
    if (this.#closingExecutors) return Promise.resolve();
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    // An invoke executor may be the executor itself (a host passed `(local) => local`): closed once.
    const invoke = this.#invokeExecutor === this.executor ? undefined : this.#invokeExecutor;
    let closes: Promise<unknown>[];
    this.#closingExecutors = true;
    try {
      // Each is closed even when another throws at once: the workers stop whatever a remote executor does.
      closes = [settle(() => this.executor.close()), settle(() => invoke?.close?.())];
    } finally {
      this.#closingExecutors = false;
    }
    const outcomes = await settledWithin(closes, this.#closeGraceMs);
    await this.#ownedStore?.close();
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/** What a host's `create` option may be; each is also allowed to be undefined. */
export type HostOptionKind =
  | 'boolean'
  | 'function'
  /** A whole number ≥ 1 (a pool's size). */
  | 'size'
  /** A whole number ≥ 0. */
  | 'count'
  /** A number of milliseconds > 0. */
  | 'ms'
  | 'string[]'
  /** An object (a cache, resource limits) or false. */
  | 'object|false'
  /** A Store, a path (Node) or false. */
  | 'store|path|false'
  | 'store|false'
  /** An Executor: an object with an execute function. */
  | 'executor'
  /** An Executor, or a function that makes one from the host's own (a routing executor). */
  | 'executor|function';

/**
 * Check the options a host's `create` was given against their kinds, so a
 * wrong type is E_INPUT_VALIDATION naming the option, not a TypeError from
 * deep inside (or, for a size of NaN, a pool that never starts a worker);
 * and a name that is no option (a typo: `storeMaxByte`) is refused too,
 * not silently dropped. `kinds` names every option of `Options`.
 */
export function checkHostOptions<Options extends object>(
  where: string,
  options: unknown,
  kinds: { readonly [K in keyof Required<Options>]: HostOptionKind },
): void {
  const bad = (option: string, problem: string): never => {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `${where}: ${option} ${problem}`, { option });
  };
  if (typeof options !== 'object' || options === null)
    bad('options', `must be an object (got ${options === null ? 'null' : typeof options})`);
  const given = options as Record<string, unknown>;
  const known = Object.keys(kinds);
  for (const [option, value] of Object.entries(given)) {
    // Left undefined (a conditional spread) is as good as absent.
    if (value === undefined || Object.hasOwn(kinds, option)) continue;
    const near = closest(option, known);
    bad(option, `is not an option${near ? `: did you mean ${near}?` : ''} (options: ${known.join(', ')})`);
  }
  for (const [option, kind] of Object.entries(kinds) as [string, HostOptionKind][]) {
    const value = given[option];
    if (value === undefined) continue;
    const got = `(got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'number' ? String(value) : `a ${typeof value}`})`;
    const isStore = typeof value === 'object' && value !== null && typeof (value as Store).recordDecision === 'function';
    switch (kind) {
      case 'boolean':
        if (typeof value !== 'boolean') bad(option, `must be true or false ${got}`);
        break;
      case 'function':
        if (typeof value !== 'function') bad(option, `must be a function ${got}`);
        break;
      case 'size':
      case 'count':
        if (!(Number.isInteger(value) && (value as number) >= (kind === 'size' ? 1 : 0))) {
          bad(option, `must be a whole number ≥ ${kind === 'size' ? 1 : 0} ${got}`);
        }
        break;
      case 'ms':
        if (!(typeof value === 'number' && value > 0)) bad(option, `must be a positive number of milliseconds ${got}`);
        break;
      case 'string[]':
        if (!(Array.isArray(value) && value.every((v) => typeof v === 'string'))) bad(option, `must be an array of strings ${got}`);
        break;
      case 'object|false':
        if (value !== false && (typeof value !== 'object' || value === null)) bad(option, `must be an object or false ${got}`);
        break;
      case 'store|path|false':
        if (value !== false && typeof value !== 'string' && !isStore)
          bad(option, `must be a Store, the path of a store file, or false ${got}`);
        break;
      case 'store|false':
        if (value !== false && !isStore) bad(option, `must be a Store or false ${got}`);
        break;
      case 'executor':
      case 'executor|function':
        if (kind === 'executor|function' && typeof value === 'function') break;
        if (typeof value !== 'object' || value === null || typeof (value as Executor).execute !== 'function')
          bad(
            option,
            `must be an Executor (an object with an execute method)${kind === 'executor' ? '' : ' or a function that makes one'} ${got}`,
          );
        break;
    }
  }
}

/**
 * Open a host's default store. A store that is damaged, foreign or from a
 * newer Corral is refused (throws); one that merely cannot be written or
 * opened (read-only, full disk, storage blocked) still lets tools run, and
 * every call's envelope says its snapshot was not saved.
 */
export async function openHostStore(location: string, open: () => Promise<Store>): Promise<Store> {
  try {
    return await open();
  } catch (err) {
    if (CorralError.is(err, ErrorCodes.STORE) && err.details.unwritable === true) return new UnavailableStore(location, err);
    throw err;
  }
}

/** `work()`'s promise, with a synchronous throw as its rejection. */
/**
 * Promise.allSettled, except that what has not settled after `ms` counts as
 * rejected (E_CLOSED, reason executor_close_timeout): see EXECUTOR_CLOSE_GRACE_MS.
 */
export async function settledWithin(closes: readonly Promise<unknown>[], ms: number): Promise<PromiseSettledResult<unknown>[]> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<PromiseRejectedResult>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          status: 'rejected',
          reason: new CorralError(
            ErrorCodes.CLOSED,
            `An executor's close() had not finished after ${ms} ms, so Corral closed its store without it. ` +
              "An executor's close must not wait for its Corral's close, which waits for it.",
            { reason: 'executor_close_timeout', waited_ms: ms },
          ),
        }),
      ms,
    );
  });
  try {
    return await Promise.all(
      closes.map((close) =>
        Promise.race([
          close.then(
            (value): PromiseSettledResult<unknown> => ({ status: 'fulfilled', value }),
            (reason: unknown): PromiseSettledResult<unknown> => ({ status: 'rejected', reason }),
          ),
          late,
        ]),
      ),
    );
  } finally {
    clearTimeout(timer);
  }
}

function settle(work: () => unknown): Promise<unknown> {
  try {
    return Promise.resolve(work());
  } catch (err) {
    return Promise.reject(err);
  }
}
