/**
 * The page's side of runtime.worker.ts: the summaries' runtime, started in
 * a worker so that the page's thread only draws. Calls go through comlink;
 * a worker that fails to start or dies makes every waiting call reject
 * (with the reason), never hang.
 */
import { proxy, wrap, type Remote } from 'comlink';
import type { ExecutionFilter, ExecutionSnapshot, PruneOptions } from '@corral/core';
import type { PrepStep, Summarized, ToolFlavor } from './host.js';
import type { DiffText, FileHunksReply } from './file-sections.js';
import type { FileReply, Offer, RuntimeApi, TextRef } from './runtime.worker.js';
import type { Language } from './summary.js';

export type { FileReply, Offer, PrepStep, Summarized, TextRef, ToolFlavor };

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
  /**
   * One diff-summary call, of a text or of one the worker keeps (its id);
   * `record: false` keeps it out of the history (the benchmark's "sandbox alone").
   */
  summarize(diff: string | number, language: Language, options?: { record?: boolean }): Promise<Summarized>;
  /** A kept text, whole. */
  text(id: number): Promise<string>;
  /** Where a kept text's file hunks are read from. */
  keptDiff(id: number): DiffText;
  /** A history entry's diff (offered like a file) and language; null when its input was not kept. */
  reopen(snapshotId: string, how: Offer): Promise<{ language: Language; diff: TextRef } | null>;
}

export interface StartOptions {
  flavor?: ToolFlavor;
  /** Asked before the warm-up call: false skips it (a summary is already waiting). */
  warm?: () => boolean;
}

export interface Runtime {
  /** Resolves once diff-summary is ready to run. */
  host: Promise<Host>;
  /** Reads a file in the worker (at once, before the host is ready): its text whole, or kept there with its start (see Offer). */
  readFile(file: File, maxBytes: number, how: Offer): Promise<FileReply>;
  /** Lets a kept text go (one the page will not show: another was asked for meanwhile), so it never pushes out the one shown. */
  forget(id: number): void;
}

/** Starts the runtime in `worker` (a runtime.worker.ts, made by boot.ts as early as possible). */
export function startRuntime(worker: Worker, onStep: (step: PrepStep) => void, options: StartOptions = {}): Runtime {
  // Rejects once the worker cannot go on (its script failed to load, or an
  // error escaped it: its state is then unknown, so it is stopped); every call races it.
  const dead = new Promise<never>((_, reject) => {
    const stop = (message: string) => {
      worker.terminate();
      reject(new Error(`the runtime worker stopped: ${message}`));
    };
    worker.addEventListener('error', (e) => stop(e.message || 'it did not start'));
    worker.addEventListener('messageerror', () => stop('it sent a message the page cannot read'));
    // A worker started from the page's <head> (boot.ts) may have failed before anyone listened.
    const early = (worker as Worker & { earlyError?: string }).earlyError;
    if (early !== undefined) stop(early);
  });
  dead.catch(() => {});
  const api: Remote<RuntimeApi> = wrap<RuntimeApi>(worker);
  const call = <T>(promise: Promise<T>): Promise<T> => Promise.race([promise, dead]);
  const warm = options.warm;
  // comlink proxies only top-level arguments: the two callbacks are passed as such.
  const host = call(api.start(proxy(onStep), options.flavor ?? 'component', warm ? proxy(async () => warm()) : null)).then(
    ({ storeError, hasStore }): Host => ({
      storeError,
      store: hasStore
        ? {
            listExecutions: (filter) => call(api.listExecutions(filter)),
            getExecution: (id) => call(api.getExecution(id)),
            prune: (options) => call(api.prune(options)),
          }
        : null,
      summarize: (diff, language, options = {}) => call(api.summarize(diff, language, options)),
      text: (id) => call(api.text(id)),
      // comlink's types spread a union over Promise: the casts say what it is.
      keptDiff: (id) => keptDiff((index, paths) => call(api.fileHunks(id, index, paths) as Promise<FileHunksReply | 'paths'>)),
      reopen: (snapshotId, how) => call(api.reopen(snapshotId, how)),
    }),
  );
  return {
    host,
    readFile: (file, maxBytes, how) => call(api.readFile(file, maxBytes, how) as Promise<FileReply>),
    forget: (id) => void call(api.forget(id)).catch(() => {}),
  };
}

/**
 * A kept text's file hunks, read in the worker. The tool's paths go along
 * once per list of files (50,000 of them make a large message), and again
 * if the worker asks (it kept another text's match since).
 */
function keptDiff(fileHunks: (index: number, paths?: string[]) => Promise<FileHunksReply | 'paths'>): DiffText {
  const sent = new WeakSet<object>();
  return {
    async fileHunks(files, index) {
      const paths = () => files.map((file) => file.path);
      let reply = await fileHunks(index, sent.has(files) ? undefined : paths());
      sent.add(files);
      if (reply === 'paths') reply = await fileHunks(index, paths());
      return reply === 'paths' ? 'gone' : reply;
    },
  };
}
