/**
 * diff-summary on one large synthetic diff, through a pool of one worker (no
 * store), against the same tool's preview1 module under node:wasi in this
 * process, reading the input's JSON from a file: the "1 MB vs node:wasi" row
 * of issue 15, small enough to run many times alternately against another
 * build (run it from another checkout).
 *
 *   node bench/dist/large-input.js [bytes] [calls]   (default 1048576 bytes, 40 calls)
 *
 * Prints one line of JSON: medians in ms, and their ratio.
 */
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WASI } from 'node:wasi';
import { BUNDLED_TOOLS_DIR, Corral } from '@corral/node';
import { syntheticDiff } from './diffs.js';
import { nodeWasiScratch } from './node-wasi-io.js';
import { median } from './stats.js';

const bytes = Number(process.argv[2] ?? 2 ** 20);
const calls = Number(process.argv[3] ?? 40);
if (!Number.isInteger(bytes) || bytes < 1) throw new Error(`bytes: a positive integer, not ${process.argv[2]}`);
// node:wasi (Node 20.20) crashed the process with SIGSEGV on this module with inputs of 8 MB and more (BENCHMARKS.md).
if (bytes > 7 * 2 ** 20) throw new Error(`bytes: at most ${7 * 2 ** 20}; larger inputs crash the node:wasi baseline`);
if (!Number.isInteger(calls) || calls < 5) throw new Error(`calls: an integer of at least 5, not ${process.argv[3]}`);
const WARM_UP = 5;
const input = { diff: syntheticDiff(bytes) };

async function timed(run: () => Promise<void> | void): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < WARM_UP + calls; i++) {
    const started = performance.now();
    await run();
    if (i >= WARM_UP) times.push(performance.now() - started);
  }
  return median(times);
}

const corral = await Corral.create({ size: 1, store: false, spareWorker: false });
const pool = await timed(async () => {
  const result = await corral.invoke('diff-summary', input);
  if (!result.ok) throw new Error(JSON.stringify(result.error));
});
await corral.close();

const module = await WebAssembly.compile(readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/diff-summary.module.wasm')));
const scratch = nodeWasiScratch('corral-large-input-');
writeFileSync(join(scratch, 'in.json'), JSON.stringify(input));
const nodeWasi = await timed(async () => {
  const stdin = openSync(join(scratch, 'in.json'), 'r');
  const stdout = openSync(join(scratch, 'out.json'), 'w');
  try {
    const wasi = new WASI({ version: 'preview1', args: ['diff-summary'], env: { TZ: 'UTC' }, stdin, stdout, returnOnExit: true });
    const instance = await WebAssembly.instantiate(module, wasi.getImportObject() as WebAssembly.Imports);
    if (wasi.start(instance) !== 0) throw new Error('node:wasi run failed');
  } finally {
    closeSync(stdin);
    closeSync(stdout);
  }
});
rmSync(scratch, { recursive: true, force: true });

const round = (ms: number) => Math.round(ms * 100) / 100;
process.stdout.write(
  `${JSON.stringify({ inputBytes: JSON.stringify(input).length, poolMs: round(pool), nodeWasiMs: round(nodeWasi), ratio: round(pool / nodeWasi) })}\n`,
);
