import { Worker, type ResourceLimits } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { wrap, releaseProxy, type Remote } from 'comlink';
import nodeEndpoint from 'comlink/dist/umd/node-adapter.js';
import { CorralError, ErrorCodes } from '@corral/core';
import type { SandboxWorkerApi } from './worker.js';

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
export class SandboxWorker {
  readonly thread: Worker;
  readonly api: Remote<SandboxWorkerApi>;
  /** Keys of components this worker has compiled, so they are sent only once. */
  readonly loaded = new Set<string>();
  /** Settles when the thread exits, for whatever reason. */
  readonly exited: Promise<number>;
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
  }

  async terminate(): Promise<void> {
    this.alive = false;
    this.api[releaseProxy]();
    await this.thread.terminate();
  }
}

export interface TaskOptions {
  /** Wall-clock limit of the task once it has a worker; on expiry the worker is killed. */
  timeoutMs: number;
  /** The error the caller gets when the limit passes. */
  onTimeout: () => CorralError;
  signal?: AbortSignal;
}

interface Job {
  task: (worker: SandboxWorker) => Promise<unknown>;
  options: TaskOptions;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/**
 * A bounded pool of sandbox workers with a bounded queue.
 * A worker that times out, is cancelled or crashes is thrown away and a fresh
 * one is started on demand, so a bad call never affects calls on other workers.
 */
export class WorkerPool {
  readonly size: number;
  readonly maxQueue: number;
  readonly #options: PoolOptions;
  readonly #idle: SandboxWorker[] = [];
  readonly #all = new Set<SandboxWorker>();
  readonly #queue: Job[] = [];
  #closed = false;

  constructor(options: PoolOptions = {}) {
    this.size = Math.max(1, options.size ?? availableParallelism());
    this.maxQueue = options.maxQueue ?? 1000;
    this.#options = options;
  }

  /** Workers currently alive (busy or idle). */
  get workerCount(): number {
    return this.#all.size;
  }

  get queued(): number {
    return this.#queue.length;
  }

  run<T>(task: (worker: SandboxWorker) => Promise<T>, options: TaskOptions): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('the worker pool is closed'));
    if (this.#queue.length >= this.maxQueue) {
      return Promise.reject(
        new CorralError(
          ErrorCodes.RESOURCE_EXHAUSTED,
          `The call queue is full (${this.maxQueue} calls waiting); retry later or raise maxQueue.`,
          { resource: 'queue', max_queue: this.maxQueue },
        ),
      );
    }
    return new Promise<T>((resolve, reject) => {
      const job: Job = { task, options, resolve: resolve as (v: unknown) => void, reject };
      if (options.signal?.aborted) return reject(abortError(options.signal));
      options.signal?.addEventListener(
        'abort',
        () => {
          // A queued job is simply dropped; a running one is handled in #start.
          const at = this.#queue.indexOf(job);
          if (at !== -1) {
            this.#queue.splice(at, 1);
            reject(abortError(options.signal!));
          }
        },
        { once: true },
      );
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.reject(new Error('the worker pool was closed'));
    await Promise.all([...this.#all].map((w) => w.terminate()));
    this.#all.clear();
    this.#idle.length = 0;
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let worker = this.#idle.pop();
      // An idle worker can die without a task (a spare that failed to boot): drop it.
      while (worker && !worker.alive) {
        this.#all.delete(worker);
        worker = this.#idle.pop();
      }
      if (!worker && this.#all.size < this.size) {
        worker = new SandboxWorker(this.#options);
        this.#all.add(worker);
      }
      if (!worker) return;
      void this.#start(worker, this.#queue.shift()!);
    }
  }

  async #start(worker: SandboxWorker, job: Job): Promise<void> {
    const { timeoutMs, onTimeout, signal } = job.options;
    // A timeout, a cancellation or a crash leaves the worker in an unknown state: it is replaced.
    let faulted = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        faulted = true;
        reject(onTimeout());
      }, timeoutMs);
      onAbort = () => {
        faulted = true;
        reject(abortError(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    const crashed = worker.exited.then((code) => {
      faulted = true;
      throw new CorralError(ErrorCodes.UNEXPECTED_EXIT, `The sandbox worker stopped unexpectedly (exit code ${code}).`, {
        worker_exit_code: code,
      });
    });
    // Whichever loses the race must not surface later as an unhandled rejection.
    stopped.catch(() => {});
    crashed.catch(() => {});
    try {
      job.resolve(await Promise.race([job.task(worker), stopped, crashed]));
    } catch (err) {
      job.reject(err);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
    if (!faulted && worker.alive && !this.#closed) {
      this.#idle.push(worker);
    } else {
      this.#all.delete(worker);
      if (worker.alive) void worker.terminate();
      // Start the replacement now, so its boot overlaps whatever the caller does next.
      if (!this.#closed) {
        const spare = new SandboxWorker(this.#options);
        this.#all.add(spare);
        this.#idle.push(spare);
      }
    }
    this.#dispatch();
  }
}

/** A cancelled call: the caller's own decision, so it carries the caller's reason. */
function abortError(signal: AbortSignal): CorralError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : reason === undefined ? '' : String(reason);
  return new CorralError(ErrorCodes.UNEXPECTED_EXIT, `The call was cancelled${why ? `: ${why}` : ''}.`, { cancelled: true }, false);
}
