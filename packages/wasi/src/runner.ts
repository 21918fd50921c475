/**
 * What the two runners share (ComponentRunner in run.ts for wasi:cli
 * components, Preview1Runner in preview1/runner.ts for preview1 modules):
 * the compiled code kept per key and memory cap,
 * and one run from start to classified end. Each runner says only how to
 * compile its kind of code and how to start and run one instance of it.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { ExecutionResult } from '@corral/core';
import type { RunRequest, RunnerOptions } from './request.js';
import { WASM_PAGE_BYTES } from './limits.js';
import { classify, finishRun, type RunEnd } from './outcome.js';
import { openCall, type OpenedCall } from './call.js';

export type { RunRequest, RunnerOptions } from './request.js';

/** One instance being run, as a runner's `start` sets it up. */
export interface Execution {
  /** Instantiate and run to the end; what it throws is classified (exit, trap, limit). */
  run(): Promise<void>;
  /** A runner's own verdict on how the run ended, after the call is closed. */
  settle?(end: RunEnd): RunEnd;
  /** The largest size the instance's memories reached. */
  peakMemoryBytes(): number;
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
  readonly #sources = new Map<string, Source>();
  /** Compiled per key and memory cap: the cap is part of the compiled code. */
  readonly #compiled = new Map<string, Promise<Compiled>>();

  constructor(options: RunnerOptions = {}) {
    this.#options = { ...(options.mountOpeners ? { mountOpeners: { ...options.mountOpeners } } : {}) };
  }

  /** What the code is called in the error for an unknown key ("component", "module"). */
  protected abstract readonly kind: string;

  /** Compile `source` with each memory capped at `maxPages`, refusing what this runner cannot run. */
  protected abstract compile(source: Source, maxPages: number, toolName: string): Promise<Compiled>;

  /** Set up one instance of `compiled` for `call` (its imports); `run` then instantiates and runs it. */
  protected abstract start(compiled: Compiled, call: OpenedCall, request: RunRequest): Execution;

  /** True when this runner holds the code with this key. */
  has(key: string): boolean {
    return this.#sources.has(key);
  }

  #load(key: string, maxPages: number, toolName: string): Promise<Compiled> {
    const compiledKey = `${key}/${maxPages}`;
    let compiled = this.#compiled.get(compiledKey);
    if (!compiled) {
      compiled = this.compile(this.#sources.get(key)!, maxPages, toolName);
      // A failed compile is not kept: the next run tries again.
      compiled.catch(() => this.#compiled.delete(compiledKey));
      this.#compiled.set(compiledKey, compiled);
    }
    return compiled;
  }

  /** Run the code with this key; pass it the first time (or always). */
  async run(key: string, source: Source | undefined, request: RunRequest): Promise<ExecutionResult> {
    const started = performance.now();
    if (source) this.#sources.set(key, source);
    else if (!this.#sources.has(key)) {
      // The host sends a key alone only to a worker it saw compile it (ExecutorWorker.loaded).
      throw new CorralError(
        ErrorCodes.UNEXPECTED_EXIT,
        `The sandbox worker was sent ${this.kind} ${key} by its key alone, but it has not loaded it (an internal error, not the tool's; please report it)`,
        { reason: 'internal', cause: `${this.kind} ${key} is not loaded` },
      );
    }
    const maxPages = Math.max(1, Math.floor(request.memoryLimitBytes / WASM_PAGE_BYTES));
    const compiled = await this.#load(key, maxPages, request.toolName);

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
    if (execution.settle) end = execution.settle(end);
    const peakMemoryBytes = execution.peakMemoryBytes();
    execution.release?.();
    return finishRun(end, {
      request,
      started,
      stdout,
      stderr,
      peakMemoryBytes,
      maxPages,
      quota: call.quota,
    });
  }
}
