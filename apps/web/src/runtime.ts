/**
 * The page's side of runtime.worker.ts: the summaries' runtime, started in
 * a worker so that the page's thread only draws. Calls go through comlink;
 * a worker that fails to start or dies makes every waiting call reject
 * (with the reason), never hang.
 */
import { proxy, wrap, type Remote } from 'comlink';
import type { ExecutionFilter, ExecutionSnapshot, PruneOptions } from '@corral/core';
import type { PrepStep, Summarized, ToolFlavor } from './host.js';
import type { RuntimeApi } from './runtime.worker.js';
import type { Language } from './summary.js';

export type { PrepStep, Summarized, ToolFlavor };

/** What the history needs of the snapshot store (which lives in the worker). */
export interface HistoryStore {
  listExecutions(filter: ExecutionFilter): Promise<ExecutionSnapshot[]>;
  getExecution(id: string): Promise<ExecutionSnapshot | null>;
  /** How many records were removed. */
  prune(options: PruneOptions): Promise<number>;
}

export interface Host {
  /** Why there is no history (the store could not be opened), or null. */
  storeError: string | null;
  /** The snapshot store, or null when there is none. */
  store: HistoryStore | null;
  /** One diff-summary call; `record: false` keeps it out of the history (the benchmark's "sandbox alone"). */
  summarize(diff: string, language: Language, options?: { record?: boolean }): Promise<Summarized>;
}

export interface StartOptions {
  flavor?: ToolFlavor;
  /** Asked before the warm-up call: false skips it (a summary is already waiting). */
  warm?: () => boolean;
}

/**
 * Starts the runtime in `worker` (a runtime.worker.ts, made by boot.ts as
 * early as possible); resolves once diff-summary is ready to run.
 */
export function startRuntime(worker: Worker, onStep: (step: PrepStep) => void, options: StartOptions = {}): Promise<Host> {
  // Rejects once the worker cannot go on (its script failed to load, or an
  // error escaped it: its state is then unknown, so it is stopped); every call races it.
  const dead = new Promise<never>((_, reject) => {
    const stop = (message: string) => {
      worker.terminate();
      reject(new Error(`the runtime worker stopped: ${message}`));
    };
    worker.addEventListener('error', (e) => stop(e.message || 'it did not start'));
    worker.addEventListener('messageerror', () => stop('it sent a message the page cannot read'));
  });
  dead.catch(() => {});
  const api: Remote<RuntimeApi> = wrap<RuntimeApi>(worker);
  const call = <T>(promise: Promise<T>): Promise<T> => Promise.race([promise, dead]);
  const warm = options.warm;
  // comlink proxies only top-level arguments: the two callbacks are passed as such.
  return call(api.start(proxy(onStep), options.flavor ?? 'component', warm ? proxy(async () => warm()) : null)).then(
    ({ storeError, hasStore }) => ({
      storeError,
      store: hasStore
        ? {
            listExecutions: (filter) => call(api.listExecutions(filter)),
            getExecution: (id) => call(api.getExecution(id)),
            prune: (options) => call(api.prune(options)),
          }
        : null,
      summarize: (diff, language, options = {}) => call(api.summarize(diff, language, options)),
    }),
  );
}
