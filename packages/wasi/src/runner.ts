/**
 * What the two runners share (ComponentRunner in run.ts for wasi:cli
 * components, Preview1Runner in preview1/runner.ts for preview1 modules):
 * the code kept per key and memory cap (code-cache.ts, under a byte budget),
 * and one run from start to classified end. Each runner says only how to
 * compile its kind of code and how to start and run one instance of it.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { ExecutionResult } from '@corral/core';
import type { RunRequest, RunnerOptions } from './request.js';
import { WASM_PAGE_BYTES } from './limits.js';
import { classify, finishRun, type RunEnd } from './outcome.js';
import { openCall, type OpenedCall } from './call.js';
import { CodeCache, NOT_LOADED, type CodeEntry } from './code-cache.js';
import type { MemoryWatch } from './memory-watch.js';

export type { RunRequest, RunnerOptions } from './request.js';

/** One instance being run, as a runner's `start` sets it up. */
export interface Execution {
  /** Instantiate and run to the end; what it throws is classified (exit, trap, limit). */
  run(): Promise<void>;
  /** A runner's own verdict on how the run ended, after the call is closed. */
  settle?(end: RunEnd): RunEnd;
  /** The instance's memories, as it makes them: the run's peak, and whether it ran out. */
  memory: MemoryWatch;
  /** Give back what the run borrowed (pooled memories), once it is over and measured. */
  release?(): void;
}

/**
 * Compiles what it is given once per key and memory cap and runs it many
 * times, each run in a fresh instance with its own stdio, environment and
 * filesystem (call.ts), ended the same way whatever the kind of code
 * (outcome.ts).
 */
export abstract class Runner<Source, Compiled> {
  readonly #options: RunnerOptions;
  /** Loaded and compiled code, under a byte budget (shared by a worker's runners). */
  readonly #cache: CodeCache;

  constructor(options: RunnerOptions = {}) {
    this.#options = { ...(options.mountOpeners ? { mountOpeners: { ...options.mountOpeners } } : {}) };
    this.#cache = options.codeCache ?? new CodeCache(options.cacheBytes);
  }

  /** What the code is called in the error for an unknown key ("component", "module"). */
  protected abstract readonly kind: string;

  /** Compile `source` with each memory capped at `maxPages`, refusing what this runner cannot run. */
  protected abstract compile(source: Source, maxPages: number, toolName: string): Promise<Compiled>;

  /** Set up one instance of `compiled` for `call` (its imports); `run` then instantiates and runs it. */
  protected abstract start(compiled: Compiled, call: OpenedCall, request: RunRequest): Execution;

  /** True when this runner holds the code with this key. */
  has(key: string): boolean {
    return this.#cache.has(`${this.kind}:${key}`);
  }

  #load(entry: CodeEntry<Source, Compiled>, cacheKey: string, maxPages: number, toolName: string): Promise<Compiled> {
    let compiled = entry.compiled.get(maxPages);
    if (!compiled) {
      compiled = this.compile(entry.source, maxPages, toolName);
      // A failed compile is not kept: the next run tries again.
      compiled.catch(() => {
        if (entry.compiled.get(maxPages) === compiled) entry.compiled.delete(maxPages);
        this.#cache.reweigh(cacheKey, entry);
      });
      entry.compiled.set(maxPages, compiled);
      this.#cache.reweigh(cacheKey, entry);
    }
    return compiled;
  }

  /**
   * Compile the code with this key for calls capped at `memoryLimitBytes`,
   * ahead of its first call here (a spare worker, so that a replacement for
   * a killed worker answers at once). Compiling runs no guest code.
   */
  async preload(key: string, source: Source, memoryLimitBytes: number, toolName: string): Promise<void> {
    const cacheKey = `${this.kind}:${key}`;
    const entry = this.#cache.use<Source, Compiled>(cacheKey, source)!;
    await this.#load(entry, cacheKey, capPages(memoryLimitBytes), toolName);
  }

  /** Run the code with this key; pass it the first time (or always). */
  async run(key: string, source: Source | undefined, request: RunRequest): Promise<ExecutionResult> {
    const started = performance.now();
    const cacheKey = `${this.kind}:${key}`;
    const entry = this.#cache.use<Source, Compiled>(cacheKey, source);
    if (!entry) {
      // The host sends a key alone to a worker it saw compile it (ExecutorWorker.loaded);
      // this one has evicted it since, and the host sends it again with its code.
      throw new CorralError(
        ErrorCodes.UNEXPECTED_EXIT,
        `The sandbox worker has not loaded ${this.kind} ${key} (evicted, or never sent): the host sends it again.`,
        {
          reason: NOT_LOADED,
          cause: `${this.kind} ${key} is not loaded`,
        },
      );
    }
    const maxPages = capPages(request.memoryLimitBytes);
    const compiled = await this.#load(entry, cacheKey, maxPages, request.toolName);

    const call = openCall(request, this.#options);
    const { stdout, stderr } = call.captured;
    const execution = this.start(compiled, call, request);

    let end: RunEnd = { exitCode: 0, exited: true };
    try {
      await execution.run();
    } catch (err) {
      end = classify(err, request.toolName, stderr);
    } finally {
      call.close();
    }
    let peakMemoryBytes: number;
    let ranOutOfMemory: boolean;
    try {
      if (execution.settle) end = execution.settle(end);
      peakMemoryBytes = execution.memory.peakBytes();
      ranOutOfMemory = execution.memory.ranOut();
    } finally {
      // Whatever measuring throws, the pooled memories go back.
      execution.release?.();
    }
    return finishRun(end, {
      request,
      started,
      stdout,
      stderr,
      peakMemoryBytes,
      ranOutOfMemory,
      maxPages,
      quota: call.quota,
    });
  }
}

/** The memory cap in wasm pages (at least one). */
function capPages(memoryLimitBytes: number): number {
  return Math.max(1, Math.floor(memoryLimitBytes / WASM_PAGE_BYTES));
}
