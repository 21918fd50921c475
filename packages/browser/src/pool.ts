/**
 * The browser's sandbox workers: Web Workers running worker.ts, driven
 * through comlink, in @corral/wasi's SandboxPool (the same queue, time
 * limits, cancellation and replacement as Node's worker_threads pool).
 */
// The file @corral/wasi imports transfer() from (types/comlink-esm.d.ts): a runtime that resolves bare
// 'comlink' to its UMD main (Node, Deno, Bun; a CDN's import map) would load a second comlink, whose
// wrap() never sees those transfers, so a call's input was copied to its worker instead of moved.
import { wrap } from 'comlink/dist/esm/comlink.mjs';
import { CorralError, ErrorCodes } from '@corral/core';
import { SandboxPool, workerCalls, type PoolWorker, type WorkerCalls } from '@corral/wasi/host-kit';
import type { SandboxWorkerApi } from '@corral/wasi/host-kit';

export interface BrowserPoolOptions {
  /** Most Web Workers alive at once. Default: min(navigator.hardwareConcurrency, 4). */
  size?: number;
  /** Most calls waiting for a worker; one more is refused with E_RESOURCE_EXHAUSTED (queue). Default 1000. */
  maxQueue?: number;
  /**
   * Starts one sandbox worker. The default starts this package's worker.js
   * as a module worker, in the form bundlers (Vite, webpack) recognise; pass
   * your own when your bundler places the worker elsewhere.
   */
  createWorker?: () => Worker;
}

/** The default pool size: one worker per core, at most 4. */
export function defaultPoolSize(): number {
  const cores = typeof navigator !== 'undefined' ? navigator.hardwareConcurrency : undefined;
  return Math.min(cores && cores > 0 ? cores : 2, 4);
}

/** Start one sandbox worker (this package's worker.js, as a module worker): the default `createWorker`. */
export function startSandboxWorker(): Worker {
  return new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'corral-sandbox' });
}

/** One sandbox Web Worker and what it has already compiled. */
export class BrowserSandboxWorker implements PoolWorker {
  readonly worker: Worker;
  readonly api: WorkerCalls;
  /** Keys of components this worker has compiled, so they are sent only once. */
  readonly loaded = new Set<string>();
  readonly crashed: Promise<CorralError>;
  alive = true;
  #crashListener: ((event: Event) => void) | undefined;

  constructor(createWorker: () => Worker = startSandboxWorker) {
    this.worker = createWorker();
    this.api = workerCalls(wrap<SandboxWorkerApi>(this.worker));
    // A Web Worker has no exit event. An error that escapes it (its script
    // failed to load, or something threw outside any call) or a message it
    // cannot read leaves it in an unknown state: it counts as a crash, and
    // is stopped so nothing else lands on it.
    this.crashed = new Promise((resolve) => {
      const crash = (event: Event) => {
        if (!this.alive) return;
        event.preventDefault();
        const why =
          event.type === 'messageerror'
            ? 'a message from it could not be read'
            : (event as ErrorEvent).message || 'its script failed to load or threw outside a call';
        void this.terminate();
        resolve(
          new CorralError(ErrorCodes.UNEXPECTED_EXIT, `The sandbox worker stopped unexpectedly: ${why}.`, {
            reason: 'worker_crashed',
            worker_error: why,
          }),
        );
      };
      this.worker.addEventListener('error', crash);
      this.worker.addEventListener('messageerror', crash);
      this.#crashListener = crash;
    });
  }

  async terminate(): Promise<void> {
    if (!this.alive) return;
    this.alive = false;
    this.api.release();
    // A terminated Web Worker keeps its listeners, and through them this object.
    this.worker.removeEventListener('error', this.#crashListener!);
    this.worker.removeEventListener('messageerror', this.#crashListener!);
    this.worker.terminate();
  }
}

/**
 * A bounded pool of sandbox Web Workers with a bounded queue. A worker that
 * times out, is cancelled or crashes is terminated and a fresh one starts at
 * once, so a bad call never affects calls on other workers.
 */
export class BrowserWorkerPool extends SandboxPool<BrowserSandboxWorker> {
  constructor(options: BrowserPoolOptions = {}) {
    const create = options.createWorker;
    super(() => new BrowserSandboxWorker(create), {
      size: options.size ?? defaultPoolSize(),
      ...(options.maxQueue !== undefined ? { maxQueue: options.maxQueue } : {}),
    });
  }
}
