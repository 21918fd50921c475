/**
 * The summaries' runtime, in a worker of its own: host.ts's BrowserCorral
 * (which starts the sandbox worker inside this one) and the history's
 * store. The page reaches it through runtime.ts.
 *
 * A large diff never crosses to the page whole (at 50 MB each copy between
 * threads is a 200-500 ms task here): files are read here, and a text over
 * the page's `inline` size is kept here under an id, the page getting its
 * start to show; summaries and a file's hunks are then asked for by id.
 */
import { expose } from 'comlink';
import type { ExecutionFilter, ExecutionSnapshot, PruneOptions } from '@corral/core';
import { flavorOfWorker } from './boot.js';
import { cutHunks, matchSections, splitSections, type FileHunksReply, type FileSection } from './file-sections.js';
import { inputOf } from './history.js';
import { openHost, startHost, type Host, type PrepStep, type Summarized, type ToolFlavor } from './host.js';
import { readDiffFile, textStart, utf8Length } from './read-file.js';
import type { Language } from './summary.js';

/** How the page wants a text: whole up to `inline` characters, else kept here and its first `head` shown. */
export interface Offer {
  inline: number;
  head: number;
}

/** A text as the page gets it: whole, or kept here (`id`) with its start. */
export type TextRef =
  | { kind: 'text'; text: string; bytes: number }
  | { kind: 'kept'; id: number; head: string; length: number; bytes: number };

export type FileReply =
  | TextRef
  | { kind: 'binary'; bytes: number; reason: 'nul' | 'not-utf8' }
  | { kind: 'too-large'; bytes: number }
  | { kind: 'error'; bytes: number; message: string };

let host: Promise<Host> | null = null;
/**
 * The runtime starts opening as this worker loads, before the page asks: a
 * production build starts this worker from the page's <head>, so the store,
 * the first sandbox worker and diff-summary are ready about when the page's
 * own code runs. Which build of diff-summary: the worker's name says (boot.ts).
 */
const opening = openHost(flavorOfWorker(self.name));

function started(): Promise<Host> {
  if (!host) throw new Error('the runtime worker was not started');
  return host;
}

async function store() {
  const store = (await started()).corral.store;
  if (!store) throw new Error('there is no history: the store could not be opened');
  return store;
}

/** Kept texts, newest last: the shown one and the one before (a summary being replaced). */
const kept = new Map<number, { text: string; matched?: Array<FileSection[] | null> }>();
const KEPT = 2;
let nextId = 1;

function offer(text: string, bytes: number, how: Offer): TextRef {
  if (text.length <= how.inline) return { kind: 'text', text, bytes };
  const id = nextId++;
  kept.set(id, { text });
  for (const old of kept.keys()) if (kept.size > KEPT) kept.delete(old);
  return { kind: 'kept', id, head: textStart(text, how.head), length: text.length, bytes };
}

function keptText(id: number): string {
  const entry = kept.get(id);
  if (!entry) throw new Error('that diff is no longer kept; load it again');
  return entry.text;
}

const api = {
  /** Starts the runtime once; `onStep` and `warm` are the page's (comlink proxies). */
  async start(
    onStep: (step: PrepStep) => void,
    flavor: ToolFlavor,
    warm: (() => Promise<boolean>) | null,
  ): Promise<{ storeError: string | null; hasStore: boolean }> {
    host ??= startHost((step) => void onStep(step), { flavor, ...(warm ? { warm } : {}) }, opening);
    const { storeError, corral } = await host;
    return { storeError, hasStore: corral.store !== undefined };
  },
  /** Reads a picked or dropped file (read-file.ts); files over `maxBytes` are not decoded. */
  async readFile(file: File, maxBytes: number, how: Offer): Promise<FileReply> {
    const reply = await readDiffFile(file, maxBytes);
    return reply.kind === 'text' ? offer(reply.text, reply.bytes, how) : reply;
  },
  /** One summary of a text, or of a kept one by its id. */
  async summarize(diff: string | number, language: Language, options: { record?: boolean } = {}): Promise<Summarized> {
    const h = await started();
    return h.summarize(typeof diff === 'number' ? keptText(diff) : diff, language, options);
  },
  /** Drops a kept text the page will not use. */
  async forget(id: number): Promise<void> {
    kept.delete(id);
  },
  /** A kept text, whole (the review panel applies it). */
  async text(id: number): Promise<string> {
    return keptText(id);
  },
  /** The hunks of the tool's `index`th file of a kept text; `paths` (the tool's files) once per text. */
  async fileHunks(id: number, index: number, paths?: string[]): Promise<FileHunksReply | 'paths'> {
    const entry = kept.get(id);
    if (!entry) return 'gone';
    if (paths)
      entry.matched = matchSections(
        paths.map((path) => ({ path })),
        splitSections(entry.text),
      );
    if (!entry.matched) return 'paths';
    return cutHunks(entry.text, entry.matched[index]);
  },
  /** A history entry's diff and language, offered like a file; null when its input was not kept. */
  async reopen(snapshotId: string, how: Offer): Promise<{ language: Language; diff: TextRef } | null> {
    const snapshot = await (await store()).getExecution(snapshotId);
    const input = snapshot ? inputOf(snapshot) : null;
    if (!input) return null;
    return { language: input.language, diff: offer(input.diff, utf8Length(input.diff), how) };
  },
  async listExecutions(options: ExecutionFilter): Promise<ExecutionSnapshot[]> {
    return (await store()).listExecutions(options);
  },
  async getExecution(id: string): Promise<ExecutionSnapshot | null> {
    return (await store()).getExecution(id);
  },
  /** How many records went (not the records: they hold whole diffs). */
  async prune(options: PruneOptions): Promise<number> {
    return (await (await store()).prune(options)).length;
  },
};

export type RuntimeApi = typeof api;

expose(api);
