/**
 * Starts the runtime worker from the page's <head>, before anything else
 * loads. The page's module script runs only once its whole module graph has
 * arrived, the stylesheet is in and the document is parsed (1.0–1.2 s into a
 * first visit here); a classic script placed first in <head> runs as soon
 * as the parser reaches it, so the worker's code downloads and compiles
 * while the rest of the page loads. boot.ts takes that worker when it
 * exists, and starts its own otherwise (`vite dev`, or a page built without
 * this plugin).
 */
import type { Plugin } from 'vite';

export interface EarlyWorkerOptions {
  /** The worker's source file name, as written in `new URL(…, import.meta.url)` (e.g. 'runtime.worker.ts'). */
  source: string;
  /** The global the started worker is left under, for boot.ts. */
  global: string;
  /** The worker's name (its `name` option). */
  name: string;
}

export function earlyWorker(options: EarlyWorkerOptions): Plugin {
  const stem = options.source.replace(/\.[tj]s$/, '');
  const emitted = new RegExp(`(^|/)${stem.replace(/[.]/g, '\\.')}-[\\w-]+\\.js$`);
  return {
    name: 'corral-early-worker',
    apply: 'build',
    transformIndexHtml: {
      order: 'post',
      handler(html, ctx) {
        const files = Object.keys(ctx.bundle ?? {}).filter((file) => emitted.test(file));
        if (files.length !== 1)
          throw new Error(`corral-early-worker: expected one built ${options.source} in the bundle, found ${files.length}`);
        // The error is kept for boot.ts: a worker whose script fails to load may report it before the page listens.
        const code =
          `try{const w=new Worker(${JSON.stringify(`./${files[0]}`)},{type:'module',name:${JSON.stringify(options.name)}});` +
          `w.addEventListener('error',(e)=>{w.earlyError=e.message||'it did not start'},{once:true});` +
          `globalThis[${JSON.stringify(options.global)}]=w}catch{}`;
        // Right after <meta charset> (which must come first), before the stylesheet a classic script would wait for.
        const charset = /<meta charset=[^>]*>/i;
        if (!charset.test(html)) throw new Error('corral-early-worker: the page has no <meta charset> to place the script after');
        return html.replace(charset, (meta) => `${meta}\n    <script>${code}</script>`);
      },
    },
  };
}
