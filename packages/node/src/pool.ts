import { statSync } from 'node:fs';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { wrap } from 'comlink/dist/esm/comlink.mjs';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { SandboxPool, workerCalls, type PoolWorker, type WorkerCalls } from '@corral/wasi/host-kit';
import type { SandboxWorkerApi } from '@corral/wasi/host-kit';
import { hostRuntime, warnUnenforcedLimits } from './runtime.js';
import { packagePath, packageUrl } from './package-files.js';

export type { TaskOptions } from '@corral/wasi/host-kit';

/**
 * Whether `file`, made by `npm run build` (scripts/bundle.mjs), holds the
 * code the packages hold now: in a checkout where `tsc -b` rebuilt a
 * package after it was made, it does not (the build info files exist only
 * in a checkout), and the modules themselves run instead of stale code.
 */
function freshBundle(file: string): boolean {
  const bundled = statSync(packagePath(file), { throwIfNoEntry: false })?.mtimeMs;
  if (bundled === undefined) return false;
  for (const pkg of ['../core/', '../wasi/', '']) {
    const rebuilt = statSync(packagePath(`${pkg}tsconfig.tsbuildinfo`), { throwIfNoEntry: false })?.mtimeMs;
    if (rebuilt !== undefined && rebuilt > bundled) return false;
  }
  return true;
}

/**
 * The worker script: the one-file bundle `npm run build` makes, from which a
 * thread boots ~70 ms sooner than from its ~40 modules. In Node, its
 * CommonJS form: an ES module first starts the thread's module loader, ~7 ms
 * of every cold start's first call. Bun and Deno take the ES module.
 */
function workerUrl(): URL {
  if (hostRuntime().name === 'node' && freshBundle('dist/worker.bundle.cjs')) return packageUrl('dist/worker.bundle.cjs');
  return packageUrl(freshBundle('dist/worker.bundle.js') ? 'dist/worker.bundle.js' : 'dist/worker.js');
}
let defaultWorkerUrl: URL | undefined;

/**
 * V8 limits every sandbox worker starts with; a caller's `resourceLimits`
 * override them one by one. They bound what a tool can make its worker
 * allocate on the JS heap (objects and strings the glue and the host build
 * for it; wasm memories and tables are capped separately, in limits.ts). A
 * worker that reaches them stops, and its call gets E_RESOURCE_EXHAUSTED
 * (memory); the pool starts a replacement.
 *
 * Why 1024 MB and not less: Node gives a worker that reaches its limit only
 * 16 MB more to finish in, and when the allocation that crossed the limit
 * is bigger than that, V8 aborts the whole process (nodejs/node#47224). A
 * tool can arrange such allocations: the tables behind its handles double
 * in one piece as it leaks stream handles, and a 400 MiB path is copied
 * onto the heap as a property key. With 64 or 256 MB both aborted the host; with
 * 1024 MB (as with Node's default, 4 GB here) both end inside the worker
 * (test/fixtures/wat handle-leak, string-bomb). So this bounds slow growth;
 * it does not make every out-of-memory survivable (only a process per
 * sandbox would).
 *
 * Measured on Node 20: jco's transpile, which runs in these workers, works
 * with an 8 MB old generation even for an 11.6 MB componentize-js component
 * (jco's bindgen runs in wasm memory, not on the heap). The young
 * generation is a trade of memory for speed: each call's instance outlives
 * its first scavenge (BENCHMARKS.md, fourteenth round), so a worker under
 * load spends much of its time scavenging, and fewer, larger young
 * generations cost less. 64 MB ran 8 callers ~10% faster than 32 MB, for
 * ~20 MB more resident memory per busy worker (seventeenth round); an edge
 * device can pass 8. 4 MB of stack is Node's default.
 * `--max-old-space-size` on the host's command line overrides these in
 * every worker (nodejs/node#43991).
 */
export const DEFAULT_RESOURCE_LIMITS: Readonly<ResourceLimits> = Object.freeze({
  maxOldGenerationSizeMb: 1024,
  maxYoungGenerationSizeMb: 64,
  stackSizeMb: 4,
});

export interface PoolOptions {
  /** Most workers alive at once. Default: the number of cores. */
  size?: number;
  /** Most calls waiting for a worker; one more is refused. Default 1000. */
  maxQueue?: number;
  /** V8 heap limits for each worker, over DEFAULT_RESOURCE_LIMITS (wasm memory is capped separately). */
  resourceLimits?: ResourceLimits;
  /**
   * Workers kept once no call has run for `idleTimeoutMs`; the others stop
   * and start again when calls come. Default: `size` (workers stay up).
   * `{ size: 1, idleWorkers: 0 }` suits a small device: one worker, none while idle.
   */
  idleWorkers?: number;
  /** Idle time before workers over `idleWorkers` stop. Default 5000 ms. */
  idleTimeoutMs?: number;
  /**
   * Keep one booted worker in reserve (beyond `size`, once a call has run),
   * so a worker killed by a timeout or a crash is replaced at once rather
   * than by one still booting (~100 ms). Default true; false saves its memory.
   */
  spareWorker?: boolean;
  /**
   * Bytes of compiled tools each worker keeps (least recently used go
   * first; an evicted tool is compiled again on its next call). Default 256 MiB.
   */
  toolCacheBytes?: number;
}

/** Why a sandbox thread ended under its call: `error` is what its 'error' event gave, if anything. */
function crashError(error: unknown, code: number, heapLimitMb: number | undefined): CorralError {
  const nodeCode = (error as { code?: unknown } | undefined)?.code;
  if (nodeCode === 'ERR_WORKER_OUT_OF_MEMORY')
    return new CorralError(
      ErrorCodes.RESOURCE_EXHAUSTED,
      `The call ran its sandbox worker out of JS heap (${heapLimitMb} MB, resourceLimits.maxOldGenerationSizeMb); the worker was stopped and replaced.`,
      { resource: 'memory', worker_heap_limit_mb: heapLimitMb, worker_exit_code: code },
    );
  // Node's own message (uv_cwd), not the tool's: a thread cannot start in a folder that was removed.
  if (nodeCode === 'ENOENT' && /\buv_cwd\b/.test((error as Error).message))
    return new CorralError(
      ErrorCodes.UNEXPECTED_EXIT,
      "The sandbox worker could not start: this process's current folder no longer exists (it was deleted or moved), and Node starts no thread without one. Run from a folder that exists.",
      { reason: 'worker_crashed', worker_exit_code: code, cause: 'cwd_missing' },
    );
  return new CorralError(ErrorCodes.UNEXPECTED_EXIT, `The sandbox worker stopped unexpectedly (exit code ${code}).`, {
    reason: 'worker_crashed',
    worker_exit_code: code,
  });
}

/** One sandbox thread and what it has already compiled. */
export class SandboxWorker implements PoolWorker {
  readonly thread: Worker;
  readonly api: WorkerCalls;
  /** Keys of components this worker has compiled, so they are sent only once. */
  readonly loaded = new Set<string>();
  /** Settles when the thread exits, for whatever reason. */
  readonly exited: Promise<number>;
  /** The error a task gets when the thread exits under it. */
  readonly crashed: Promise<CorralError>;
  alive = true;
  #terminated: Promise<void> | undefined;

  /** `url`: the worker script; another one (wasm-check-worker.js) starts with the same flags, environment and limits. */
  constructor(options: PoolOptions, url: URL = (defaultWorkerUrl ??= workerUrl())) {
    const resourceLimits = { ...DEFAULT_RESOURCE_LIMITS, ...options.resourceLimits };
    this.thread = new Worker(url, {
      resourceLimits,
      // Not the parent's flags: from `node --input-type=module -e …` they made
      // every worker fail to start, and --import/--loader/--inspect would run
      // the host's own hooks or debugger inside the sandbox. The worker is
      // plain compiled JS and needs no flag.
      execArgv: [],
      workerData: { toolCacheBytes: options.toolCacheBytes },
      // A tool never sees the host's environment, and the worker needs none of it.
      env: {},
      stdout: true,
      stderr: true,
    });
    warnUnenforcedLimits(this.thread);
    const endpoint = (nodeEndpoint as unknown as (w: Worker) => Parameters<typeof wrap>[0])(this.thread);
    this.api = workerCalls(wrap<SandboxWorkerApi>(endpoint));
    // Node emits 'error' before 'exit'; a worker over its heap limit ends
    // with ERR_WORKER_OUT_OF_MEMORY.
    let error: unknown;
    this.exited = new Promise((resolve) => {
      this.thread.once('exit', (code) => {
        this.alive = false;
        resolve(code);
      });
      this.thread.on('error', (err) => {
        error = err;
        this.alive = false;
      });
    });
    this.crashed = this.exited.then((code) => crashError(error, code, resourceLimits.maxOldGenerationSizeMb));
  }

  /** Stop the thread; stopping it again waits for the first stop. */
  terminate(): Promise<void> {
    this.#terminated ??= this.#terminate();
    return this.#terminated;
  }

  async #terminate(): Promise<void> {
    this.alive = false;
    this.api.release();
    // A thread the runtime cannot stop (runtime.ts) must not keep the host
    // alive; in Bun a 'message' listener holds the process even when unref'd.
    this.thread.removeAllListeners('message');
    this.thread.unref();
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
      spare: options.spareWorker ?? true,
      ...(options.maxQueue !== undefined ? { maxQueue: options.maxQueue } : {}),
      ...(options.idleWorkers !== undefined ? { idleWorkers: options.idleWorkers } : {}),
      ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
    });
  }
}
