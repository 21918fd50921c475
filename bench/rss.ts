/**
 * A host's resident memory in a fresh process (bench/overhead.ts runs it):
 * `calls`: Corral with 2 workers after their first calls (a warm transpile
 * cache); `transpile`: after a first call that had to transpile its
 * component with jco (an empty cache, and diff-summary copied to a tool
 * folder of its own, as a third-party component is: the bundled tools come
 * transpiled). Prints JSON: { rssMb }.
 */
import { copyFileSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUNDLED_TOOLS_DIR, Corral, ComponentCache } from '@corral/node';

const mode = process.argv[2];
// `calls`: the default cache (under $CORRAL_CACHE_DIR, filled by the caller).
let options = {};
if (mode === 'transpile') {
  const scratch = mkdtempSync(join(tmpdir(), 'corral-rss-'));
  const folder = join(scratch, 'tools', 'diff-summary');
  mkdirSync(folder, { recursive: true });
  for (const file of ['tool-spec.json', 'diff-summary.wasm'])
    copyFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary', file), join(folder, file));
  options = { cache: new ComponentCache(join(scratch, 'cache')), bundled: false, toolDirs: [join(scratch, 'tools')] };
}
const corral = await Corral.create({ size: 2, store: false, ...options });
const diff = { diff: 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n' };
for (let round = 0; round < 3; round++) {
  const results = await Promise.all([corral.invoke('diff-summary', diff), corral.invoke('diff-summary', diff)]);
  for (const r of results) if (!r.ok) throw new Error(JSON.stringify(r.error));
}
// Let workers retired or booted after the calls settle.
await new Promise((r) => setTimeout(r, 500));
const rssMb = process.memoryUsage().rss / 2 ** 20;
await corral.close();
process.stdout.write(JSON.stringify({ rssMb }));
