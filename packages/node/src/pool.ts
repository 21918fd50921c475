import { Worker, type ResourceLimits } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { wrap, releaseProxy, type Remote } from 'comlink';
import nodeEndpoint from 'comlink/dist/umd/node-adapter.js';
import { CorralError, ErrorCodes } from '@corral/core';
import { SandboxPool, type PoolWorker } from '@corral/wasi';
import type { SandboxWorkerApi } from './worker.js';

export type { TaskOptions } from '@corral/wasi';

const WORKER_URL = new URL('./worker.js', import.meta.url);

export interface PoolOptions {
  /** Most workers alive at once. Default: the number of cores. */
  size?: number;
  /** Most calls waiting for a worker; one more is refused. Default 1000. */
  maxQueue?: number;
  /** V8 heap limits for each worker (wasm memory is capped separately). */
  resourceLimits?: ResourceLimits;
}

/** One sandbox thread and what it has already compiled. */
export class SandboxWorker implements PoolWorker {
  readonly thread: Worker;
  readonly api: Remote<SandboxWorkerApi>;
  /** Keys of components this worker has compiled, so they are sent only once. */
  readonly loaded = new Set<string>();
  /** Settles when the thread exits, for whatever reason. */
  readonly exited: Promise<number>;
  /** The error a task gets when the thread exits under it. */
  readonly crashed: Promise<CorralError>;
  alive = true;

  constructor(options: PoolOptions) {
    this.thread = new Worker(WORKER_URL, {
      resourceLimits: options.resourceLimits,
      // A tool never sees the host's environment, and the worker needs none of it.
      env: {},
      stdout: true,
      stderr: true,
    });
    const endpoint = (nodeEndpoint as unknown as (w: Worker) => Parameters<typeof wrap>[0])(this.thread);
    this.api = wrap<SandboxWorkerApi>(endpoint);
    this.exited = new Promise((resolve) => {
      this.thread.once('exit', (code) => {
        this.alive = false;
        resolve(code);
      });
      this.thread.on('error', () => {
        this.alive = false;
      });
    });
    this.crashed = this.exited.then(
      (code) =>
        new CorralError(ErrorCodes.UNEXPECTED_EXIT, `The sandbox worker stopped unexpectedly (exit code ${code}).`, {
          worker_exit_code: code,
        }),
    );
  }

  async terminate(): Promise<void> {
    this.alive = false;
    this.api[releaseProxy]();
    await this.thread.terminate();
  }
}

/**
 * A bounded pool of worker_threads sandboxes with a bounded queue (the queue,
 * time limits, cancellation and replacement are @corral/wasi's SandboxPool).
 * A worker that times out, is cancelled or crashes is thrown away and a fresh
 * one is started at once, so a bad call never affects calls on other workers.
 */
export class WorkerPool extends SandboxPool<SandboxWorker> {
  constructor(options: PoolOptions = {}) {
    super(() => new SandboxWorker(options), {
      size: options.size ?? availableParallelism(),
      ...(options.maxQueue !== undefined ? { maxQueue: options.maxQueue } : {}),
    });
  }
}
