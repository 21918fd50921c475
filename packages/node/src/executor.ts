import {
  CorralError,
  ErrorCodes,
  type ExecutionRequest,
  type ExecutionResult,
  type Executor,
  type Tool,
  specDefaults,
} from '@corral/core';
import type { PreparedComponent } from '@corral/wasi';
import { WorkerPool, type PoolOptions } from './pool.js';
import { ComponentCache } from './cache.js';
import { resolveHostMounts } from './mounts.js';

export interface WorkerExecutorOptions extends PoolOptions {
  /** Where transpiled components are cached; `false` keeps them in memory only. */
  cache?: ComponentCache | false;
  /** Time allowed to transpile a component the first time. Default 120 s. */
  prepareTimeoutMs?: number;
}

/**
 * Runs tools in a pool of worker_threads sandboxes. Each component is
 * transpiled once (cached in memory and on disk by its SHA-256), compiled once
 * per worker, and instantiated fresh for every call.
 */
export class WorkerExecutor implements Executor {
  readonly pool: WorkerPool;
  readonly #cache: ComponentCache | undefined;
  readonly #prepared = new Map<string, Promise<PreparedComponent>>();
  readonly #prepareTimeoutMs: number;

  constructor(options: WorkerExecutorOptions = {}) {
    this.pool = new WorkerPool(options);
    this.#cache = options.cache === false ? undefined : (options.cache ?? new ComponentCache());
    this.#prepareTimeoutMs = options.prepareTimeoutMs ?? 120_000;
  }

  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    const { tool } = request;
    const key = tool.wasmSha256;
    // A preview1 module runs as it is: no jco transpile, the worker gets its bytes.
    const kind = tool.spec.kind ?? 'component';
    const prepared = kind === 'module' ? tool.wasm : await this.prepare(tool);
    const mounts = await resolveHostMounts(request.mounts);
    const runRequest = {
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
        // Send the transpiled component only to workers that have not compiled it.
        const outcome = await worker.api.run(key, worker.loaded.has(key) ? undefined : prepared, runRequest, kind);
        if (!outcome.ok) throw CorralError.fromJSON(outcome.error);
        worker.loaded.add(key);
        return outcome.value;
      },
      {
        timeoutMs: request.timeoutMs,
        signal: request.signal,
        onTimeout: () =>
          new CorralError(
            ErrorCodes.RESOURCE_EXHAUSTED,
            `${tool.spec.name} did not finish within ${request.timeoutMs} ms; its worker was stopped.`,
            { resource: 'time', timeout_ms: request.timeoutMs },
          ),
      },
    );
  }

  /** Transpile a tool's component (memory cache, then disk cache, then a worker). */
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
    const fromDisk = await this.#cache?.get(tool.wasmSha256);
    if (fromDisk) return fromDisk;
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
    await this.#cache?.set(tool.wasmSha256, prepared);
    return prepared;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
