/**
 * A long-running host's memory: 50 preview1 tools padded to 4 MB each,
 * called in turns (10 calls each, 4 callers) through Corral.create({ size: 2,
 * toolCacheBytes: 16 MB }). Every 5,000 calls it prints the process's RSS
 * growth over the warm baseline and the host's JS heap after a full GC: the
 * heap stays flat (no per-call state kept) and RSS levels off where the
 * workers' code budget, code awaiting collection and the allocator's kept
 * blocks settle. test/worker-memory.test.ts checks the first 10,000 calls.
 *
 *   npm run build && node --expose-gc bench/dist/memory.js [--calls 40000]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Corral } from '@corral/node';
import { writePaddedTools } from './padded-tools.js';

const MB = 1024 * 1024;
const ROOT = new URL('../../', import.meta.url).pathname;
const { values } = parseArgs({ options: { calls: { type: 'string', default: '40000' } } });
const total = Number(values.calls);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) console.error('(run with node --expose-gc to see the heap after a full GC; shown before one otherwise)');

const dir = mkdtempSync(join(tmpdir(), 'corral-bench-memory-'));
const names = writePaddedTools(readFileSync(join(ROOT, 'test/fixtures/preview1/echo/p1-echo.wasm')), dir, 50, 4 * MB);
const corral = await Corral.create({ bundled: false, toolDirs: [dir], size: 2, store: false, toolCacheBytes: 16 * MB, spareWorker: false });
try {
  await Promise.all([corral.invoke(names[0]!, {}), corral.invoke(names[1]!, {})]);
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  let next = 0;
  console.log('calls      RSS growth (peak)   host heap');
  const report = async (calls: number) => {
    gc?.();
    await new Promise((r) => setTimeout(r, 50)); // FinalizationRegistry callbacks run after a GC
    gc?.();
    const heap = process.memoryUsage().heapUsed / MB;
    console.log(
      `${String(calls).padStart(6)}   ${((peak - baseline) / MB).toFixed(0).padStart(8)} MB   ${heap.toFixed(1).padStart(12)} MB`,
    );
  };
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < total) {
        const i = next++;
        const r = await corral.invoke(names[Math.floor(i / 10) % names.length]!, { i });
        if (r.error) throw new Error(`${r.tool}: ${r.error.code} ${r.error.message}`);
        if (i % 250 === 0) peak = Math.max(peak, process.memoryUsage().rss);
        if (i > 0 && i % 5000 === 0) await report(i);
      }
    }),
  );
  await report(total);
} finally {
  await corral.close();
  rmSync(dir, { recursive: true, force: true });
}
