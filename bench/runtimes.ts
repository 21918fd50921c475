/**
 * The Node host under Node, Bun and Deno (node_modules/.bin): a fresh process
 * to its first diff-summary result, over the runtime's own empty start, and
 * the median warm call, each runtime against Node in the same run. The script
 * (test/portability/first-call.mjs) runs with no store: the SQLite store
 * loads only under Node (PORTABILITY.md). The transpile cache is filled by
 * Node first, as Bun cannot transpile a component itself.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmt, median, quantile } from './stats.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const FIRST_CALL = join(ROOT, 'test/portability/first-call.mjs');
const BIN = join(ROOT, 'node_modules/.bin');
const RUNTIMES: Array<[name: string, run: string[], empty: string[]]> = [
  ['node', [process.execPath], [process.execPath, '-e', '0']],
  ['bun', [join(BIN, 'bun')], [join(BIN, 'bun'), '-e', '0']],
  ['deno', [join(BIN, 'deno'), 'run', '-A'], [join(BIN, 'deno'), 'eval', '0']],
];

interface FirstCall {
  ok: boolean;
  firstMs: number;
  warmMs: number[];
}

function timed(argv: string[], env: NodeJS.ProcessEnv): { ms: number; stdout: string } {
  const [command, ...args] = argv;
  const t = performance.now();
  const stdout = execFileSync(command!, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return { ms: performance.now() - t, stdout };
}

export function benchRuntimes({ quick }: { quick: boolean }): string[][] {
  const runs = quick ? 3 : 7;
  const warmCalls = quick ? 40 : 300;
  const cacheDir = mkdtempSync(join(tmpdir(), 'corral-bench-runtimes-'));
  const env = { ...process.env, CORRAL_CACHE_DIR: cacheDir };
  try {
    timed([process.execPath, FIRST_CALL], env); // fill the transpile cache
    const measured = RUNTIMES.map(([name, run, empty]) => {
      const emptyMs = median(Array.from({ length: runs }, () => timed(empty, env).ms));
      const fresh = Array.from({ length: runs }, () => timed([...run, FIRST_CALL], env).ms);
      const warm = JSON.parse(timed([...run, FIRST_CALL, String(warmCalls)], env).stdout) as FirstCall;
      if (!warm.ok) throw new Error(`${name}: the first call failed`);
      return { name, emptyMs, fresh, warm: warm.warmMs };
    });
    const node = measured[0]!;
    const rows: string[][] = [];
    for (const m of measured) {
      const over = median(m.fresh) - m.emptyMs;
      rows.push([
        `${m.name}: fresh process → first result (to exit), warm transpile cache, no store`,
        fmt(median(m.fresh)),
        fmt(quantile(m.fresh, 0.99)),
        `${(median(m.fresh) / median(node.fresh)).toFixed(2)}× node; +${fmt(over)} over its empty start (${fmt(m.emptyMs)})`,
      ]);
      rows.push([
        `${m.name}: warm diff-summary call, small diff, 1 worker, no store (${m.warm.length} calls)`,
        fmt(median(m.warm)),
        fmt(quantile(m.warm, 0.99)),
        `${(median(m.warm) / median(node.warm)).toFixed(2)}× node`,
      ]);
    }
    return rows;
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
}
