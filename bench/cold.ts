/**
 * One cold start, measured in a fresh process: create Corral, run the first
 * call. Prints JSON for bench/run.ts and bench/overhead.ts. CORRAL_CACHE_DIR
 * picks a warm or empty cache. `processMs` counts from the process's start
 * (performance.now()'s origin), so it includes loading Corral's modules.
 */
import { Corral } from '@corral/node';

const t0 = performance.now();
const corral = await Corral.create({ size: 1 });
const created = performance.now();
const result = await corral.invoke('diff-summary', { diff: 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n' });
const done = performance.now();
await corral.close();
if (!result.ok) throw new Error(`cold call failed: ${JSON.stringify(result.error)}`);
process.stdout.write(
  JSON.stringify({ importMs: t0, createMs: created - t0, firstCallMs: done - created, totalMs: done - t0, processMs: done }),
);
