import {
  CorralError,
  ErrorCodes,
  specDefaults,
  type ExecutionRequest,
  type ExecutionResult,
  type Executor,
  type MountBinding,
  type Tool,
} from '@corral/core';
import type { PreparedComponent, RunRequest } from '@corral/wasi';
import { BrowserWorkerPool, type BrowserPoolOptions } from './pool.js';
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
export class BrowserExecutor implements Executor {
  readonly pool: BrowserWorkerPool;
  readonly cache: PreparedComponentCache | undefined;
  readonly #prepared = new Map<string, Promise<PreparedComponent>>();
  readonly #prepareTimeoutMs: number;

  constructor(options: BrowserExecutorOptions = {}) {
    this.pool = new BrowserWorkerPool(options);
    this.cache = options.cache === false ? undefined : (options.cache ?? new IndexedDbComponentCache());
    this.#prepareTimeoutMs = options.prepareTimeoutMs ?? 120_000;
  }

  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    const { tool } = request;
    const key = tool.wasmSha256;
    const mounts = checkBrowserMounts(request.mounts);
    // A preview1 module runs as it is: no jco transpile, the worker gets its bytes.
    const kind = tool.spec.kind ?? 'component';
    const prepared = kind === 'module' ? tool.wasm : await this.prepare(tool);
    const runRequest: RunRequest = {
      toolName: tool.spec.name,
      stdin: request.stdin,
      args: request.args,
      env: request.env,
      mounts,
      outputLimitBytes: request.outputLimitBytes,
      memoryLimitBytes: (tool.spec.resources?.memory_mb ?? specDefaults.resources.memory_mb) * 2 ** 20,
      diskLimitBytes: (tool.spec.resources?.disk_mb ?? specDefaults.resources.disk_mb) * 2 ** 20,
    };
    return this.pool.run(
      async (worker) => {
        // Send the component only to workers that have not compiled it.
        const outcome = await worker.api.run(key, worker.loaded.has(key) ? undefined : prepared, runRequest, kind);
        if (!outcome.ok) throw CorralError.fromJSON(outcome.error);
        worker.loaded.add(key);
        return outcome.value;
      },
      {
        timeoutMs: request.timeoutMs,
        ...(request.signal ? { signal: request.signal } : {}),
        onTimeout: () =>
          new CorralError(
            ErrorCodes.RESOURCE_EXHAUSTED,
            `${tool.spec.name} did not finish within ${request.timeoutMs} ms; its worker was stopped.`,
            { resource: 'time', timeout_ms: request.timeoutMs },
          ),
      },
    );
  }

  /**
   * Transpile a tool's component (memory, then IndexedDB, then jco in a
   * worker). Call it ahead of the first `invoke` to take the transpile off
   * that call's clock.
   */
  prepare(tool: Tool): Promise<PreparedComponent> {
    const key = tool.wasmSha256;
    let prepared = this.#prepared.get(key);
    if (!prepared) {
      prepared = this.#prepareUncached(tool);
      prepared.catch(() => this.#prepared.delete(key));
      this.#prepared.set(key, prepared);
    }
    return prepared;
  }

  async #prepareUncached(tool: Tool): Promise<PreparedComponent> {
    const cached = await this.cache?.get(tool.wasmSha256);
    if (cached) return cached;
    const prepared = await this.pool.run(
      async (worker) => {
        const outcome = await worker.api.prepare(tool.wasm, tool.spec.name);
        if (!outcome.ok) throw CorralError.fromJSON(outcome.error);
        return outcome.value;
      },
      {
        timeoutMs: this.#prepareTimeoutMs,
        onTimeout: () =>
          new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, `Preparing ${tool.spec.name} took longer than ${this.#prepareTimeoutMs} ms.`, {
            resource: 'time',
          }),
      },
    );
    await this.cache?.set(tool.wasmSha256, prepared);
    return prepared;
  }

  close(): Promise<void> {
    return this.pool.close();
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
