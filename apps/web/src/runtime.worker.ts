/**
 * The summaries' runtime, in a worker of its own: host.ts's BrowserCorral
 * (which starts the sandbox worker inside this one) and the history's
 * store. The page reaches it through runtime.ts; nothing here touches the
 * page, so a large diff's encoding, hashing and IndexedDB write cost the
 * page only the copy of the text it sends.
 */
import { expose } from 'comlink';
import type { ExecutionFilter, ExecutionSnapshot, PruneOptions } from '@corral/core';
import { startHost, type Host, type PrepStep, type Summarized, type ToolFlavor } from './host.js';
import type { Language } from './summary.js';

let host: Promise<Host> | null = null;

function started(): Promise<Host> {
  if (!host) throw new Error('the runtime worker was not started');
  return host;
}

async function store() {
  const store = (await started()).corral.store;
  if (!store) throw new Error('there is no history: the store could not be opened');
  return store;
}

const api = {
  /** Starts the runtime once; `onStep` and `warm` are the page's (comlink proxies). */
  async start(
    onStep: (step: PrepStep) => void,
    flavor: ToolFlavor,
    warm: (() => Promise<boolean>) | null,
  ): Promise<{ storeError: string | null; hasStore: boolean }> {
    host ??= startHost((step) => void onStep(step), { flavor, ...(warm ? { warm } : {}) });
    const { storeError, corral } = await host;
    return { storeError, hasStore: corral.store !== undefined };
  },
  async summarize(diff: string, language: Language, options: { record?: boolean } = {}): Promise<Summarized> {
    return (await started()).summarize(diff, language, options);
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
