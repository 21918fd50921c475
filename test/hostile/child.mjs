// Runs hostile calls through a real Corral in a process of its own, so a
// tool that takes its host down takes down only this process, and the test
// that started it sees the exit status. Used by test/hostile/child.ts.
//
// Usage: node child.mjs '<json>' with
//   { toolDirs: string[], corral?: CorralOptions (JSON-able), calls: [{ tool, input?, options? }] }
// Prints one line per call, `result <json>`, then `rss <max RSS in MB>`, and
// exits 0 once Corral is closed. Store: none; transpile cache: a fresh folder.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral, ComponentCache } from '@corral/node';

const { toolDirs, corral: options = {}, calls } = JSON.parse(process.argv[2]);
const cacheDir = mkdtempSync(join(tmpdir(), 'corral-child-cache-'));
const corral = await Corral.create({ bundled: false, toolDirs, size: 1, store: false, cache: new ComponentCache(cacheDir), ...options });
try {
  for (const { tool, input = {}, options: callOptions = {} } of calls) {
    const started = performance.now();
    const r = await corral.invoke(tool, input, callOptions);
    const { ok, error, exit_code, output, stderr_tail } = r;
    console.log(`result ${JSON.stringify({ tool, ok, error, exit_code, output, stderr_tail, ms: performance.now() - started })}`);
  }
} finally {
  await corral.close();
  rmSync(cacheDir, { recursive: true, force: true });
}
console.log(`rss ${process.resourceUsage().maxRSS / 1024}`);
