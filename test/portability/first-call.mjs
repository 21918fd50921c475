/**
 * A fresh process's first call (no store), printed as JSON: its outcome and
 * how long it took. Used by runtimes.test.ts (a cold transpile cache under
 * Bun) and bench/runtimes.ts (fresh process → first result, warm calls).
 * argv[2]: how many warm calls to time after the first (default 0).
 * argv[3]: a tools folder to take diff-summary from instead of the bundled
 * tools (a component of its own folder is transpiled at its first call;
 * the bundled ones come transpiled).
 */
import { Corral } from '@corral/node';

const started = performance.now();
const tools = process.argv[3] ? { bundled: false, toolDirs: [process.argv[3]] } : {};
const corral = await Corral.create({ size: 1, store: false, ...tools });
const diff = 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n';
const first = await corral.invoke('diff-summary', { diff });
const firstMs = performance.now() - started;
const warmMs = [];
for (let i = 0; i < Number(process.argv[2] ?? 0); i++) {
  const t = performance.now();
  const r = await corral.invoke('diff-summary', { diff });
  warmMs.push(performance.now() - t);
  if (!r.ok) throw new Error(JSON.stringify(r.error));
}
await corral.close();
process.stdout.write(
  JSON.stringify({ ok: first.ok, error: first.ok ? null : { code: first.error.code, details: first.error.details }, firstMs, warmMs }),
);
process.exit(0);
