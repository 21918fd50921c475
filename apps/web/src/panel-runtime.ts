/**
 * The review and advanced panels' Corral, in the page: they drive workflows
 * with approvals and register third-party tools, which want the runtime's
 * whole API at hand. Created the first time a panel needs it (summaries
 * never wait for it: they run in runtime.worker.ts), with every bundled tool
 * registered. It records into the same IndexedDB store as the summaries.
 */
import { BrowserCorral, registerBundledTools } from '@corral/browser';
import type { ToolFlavor } from './host.js';

let corral: Promise<BrowserCorral> | null = null;

export function panelCorral(flavor: ToolFlavor): Promise<BrowserCorral> {
  corral ??= (async () => {
    let created: BrowserCorral;
    try {
      created = await BrowserCorral.create({ size: 1 });
    } catch {
      // No IndexedDB (the summaries' history says why): the panels still run tools.
      created = await BrowserCorral.create({ size: 1, store: false });
    }
    await registerBundledTools(created, { kind: flavor });
    return created;
  })().catch((err: unknown) => {
    corral = null; // the next panel to open tries again
    throw err;
  });
  return corral;
}
