/**
 * Starts the summaries' runtime worker as early as the page can: main.ts
 * imports this first, and index.html loads main.ts as an async module,
 * which runs as soon as it arrives, while the document is still parsed and
 * first laid out (200-500 ms of a first visit here), rather than after it.
 */
export const runtimeWorker = new Worker(new URL('./runtime.worker.ts', import.meta.url), { type: 'module', name: 'corral-runtime' });
