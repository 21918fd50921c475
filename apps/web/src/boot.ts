/**
 * The summaries' runtime worker, started as early as the page can. A
 * production build starts it from a script first in <head>
 * (early-worker-plugin.ts), long before the page's modules run; otherwise
 * main.ts starts it here, first thing.
 */
import type { ToolFlavor } from './host.js';

/** Where the <head> script leaves the worker it started (the plugin's `global`, in vite.config.ts). */
export const RUNTIME_WORKER_GLOBAL = 'corralRuntimeWorker';

/** A worker started by the <head> script, with the error it reported before the page listened, if any. */
export type RuntimeWorker = Worker & { earlyError?: string };

/**
 * The runtime worker for `flavor`. The worker readies diff-summary as soon
 * as it loads, in the build its name ends with (runtime.worker.ts); the
 * <head> script's worker, named without one, readies the component.
 */
export function runtimeWorker(flavor: ToolFlavor): RuntimeWorker {
  const scope = globalThis as Record<string, unknown>;
  const early = scope[RUNTIME_WORKER_GLOBAL] as RuntimeWorker | undefined;
  delete scope[RUNTIME_WORKER_GLOBAL];
  if (early && flavor === 'component') return early;
  early?.terminate();
  return new Worker(new URL('./runtime.worker.ts', import.meta.url), { type: 'module', name: `corral-runtime:${flavor}` });
}

/** The flavor a runtime worker readies, from its name (see runtimeWorker). */
export function flavorOfWorker(name: string): ToolFlavor {
  return name.endsWith(':module') ? 'module' : 'component';
}
