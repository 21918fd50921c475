/**
 * `npm run bench`: Corral's per-call costs against baselines measured in the
 * same run, reported as medians (p99 where it matters) and ratios.
 * Machines here are shared and noisy: compare ratios, not absolute numbers.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WASI } from 'node:wasi';
import { Corral, BUNDLED_TOOLS_DIR, ComponentCache } from '@corral/node';
import { ComponentRunner, Preview1Runner, transpileComponent, type RunRequest } from '@corral/wasi';
import { availableParallelism } from 'node:os';
import { nodeWasiScratch } from './node-wasi-io.js';
import { fmt, median, quantile, sample, table } from './stats.js';
import { benchOverhead } from './overhead.js';
import { benchRecordedCalls, benchSnapshots } from './snapshots.js';
import { benchExec } from './exec.js';
import { benchIndexedDb } from './indexeddb.js';
import { benchWeb } from './web.js';
import { benchRuntimes } from './runtimes.js';
import { syntheticDiff } from './diffs.js';

const quick = process.argv.includes('--quick');
const N_SMALL = quick ? 40 : 300;
const N_LARGE = quick ? 5 : 30;
const N_COLD = quick ? 2 : 5;
/**
 * Calls made before a warm small call is timed, the same for Corral and the
 * baselines: a new worker's JavaScript and heap take a few thousand calls to
 * warm (BENCHMARKS.md, seventeenth round). Its first calls get a row of their own.
 */
const WARM_UP = quick ? 20 : 2000;
/** Warm calls of one input: timed after WARM_UP calls for the small diff, 5 for a large one. */
const sampleWarm = (label: string, fn: () => Promise<unknown>) =>
  sample(label === 'small' ? N_SMALL : N_LARGE, fn, label === 'small' ? WARM_UP : 5);

const example = JSON.parse(readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/examples/example.diff.json'), 'utf8')) as { diff: string };
const inputs = {
  small: { diff: example.diff },
  '1 MB': { diff: syntheticDiff(1024 * 1024) },
};
const CORRAL_BIN = new URL('../../packages/node/bin/corral.js', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'corral-bench-'));
const wasiScratch = nodeWasiScratch('corral-bench-wasi-');
const log = (s: string) => process.stderr.write(s + '\n');

/** The diff-summary table: cold start, warm calls through the pool, and the baselines. */
async function benchDiffSummary(): Promise<string[][]> {
  const rows: string[][] = [];
  // --- cold start, each in a fresh process -------------------------------------
  function coldRuns(cacheDir: () => string, runs: number): number[] {
    const out: number[] = [];
    for (let i = 0; i < runs; i++) {
      const json = execFileSync(process.execPath, [new URL('./cold.js', import.meta.url).pathname], {
        env: { ...process.env, CORRAL_CACHE_DIR: cacheDir(), CORRAL_STORE: join(scratch, 'cold-store.db') },
        encoding: 'utf8',
      });
      // From the process's start (performance.now()'s origin): loading Corral, create, first call.
      out.push((JSON.parse(json) as { processMs: number }).processMs);
    }
    return out;
  }
  log('cold starts…');
  const warmCacheDir = join(scratch, 'warm-cache');
  coldRuns(() => warmCacheDir, 1); // fill it
  const coldWarmCache = coldRuns(() => warmCacheDir, N_COLD);
  const coldEmptyCache = coldRuns(() => mkdtempSync(join(scratch, 'empty-cache-')), Math.max(2, N_COLD - 2));
  // The same clock in a script that does nothing: where its first line runs.
  const emptyScript = Array.from({ length: N_COLD }, () =>
    Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(performance.now()))'], { encoding: 'utf8' })),
  );
  // What an agent waits for: `corral run` in a new process, from spawn to exit, against `node -e 0` timed the same way.
  const wallMs = (args: string[]) => {
    const started = performance.now();
    execFileSync(process.execPath, args, { env: { ...process.env, CORRAL_STORE: join(scratch, 'cli-store.db') }, stdio: 'ignore' });
    return performance.now() - started;
  };
  const cliArgs = [CORRAL_BIN, 'run', 'diff-summary', '--input-file', join(BUNDLED_TOOLS_DIR, 'diff-summary/examples/example.diff.json')];
  wallMs(cliArgs); // its store created, its files in the page cache
  const cliRun: number[] = [];
  const nodeAlone: number[] = [];
  for (let i = 0; i < 2 * N_COLD; i++) {
    cliRun.push(wallMs(cliArgs));
    nodeAlone.push(wallMs(['-e', '0']));
  }

  // --- warm calls -----------------------------------------------------------------
  log('warm calls through the worker pool…');
  // The same tool's preview1 module, registered as diff-summary-p1 (kind "module": no jco).
  const p1Dir = join(scratch, 'p1-tools', 'diff-summary-p1');
  mkdirSync(p1Dir, { recursive: true });
  const p1Spec = JSON.parse(readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/tool-spec.json'), 'utf8'));
  writeFileSync(
    join(p1Dir, 'tool-spec.json'),
    JSON.stringify({ ...p1Spec, name: 'diff-summary-p1', kind: 'module', component: 'diff-summary.module.wasm' }),
  );
  copyFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/diff-summary.module.wasm'), join(p1Dir, 'diff-summary.module.wasm'));
  const corral = await Corral.create({
    size: 1,
    store: false,
    toolDirs: [join(scratch, 'p1-tools')],
    cache: new ComponentCache(join(scratch, 'pool-cache')),
  });
  const callPool = (tool: string, input: unknown) => async () => {
    const r = await corral.invoke(tool, input);
    if (!r.ok) throw new Error(JSON.stringify(r.error));
  };
  // A new worker's first calls (after the first few), before anything else has warmed it.
  const firstCalls = await sample(N_SMALL, callPool('diff-summary', inputs.small));
  const warm: Record<string, number[]> = {};
  const warmP1: Record<string, number[]> = {};
  for (const [label, input] of Object.entries(inputs)) {
    for (const [tool, into] of [
      ['diff-summary', warm],
      ['diff-summary-p1', warmP1],
    ] as const) {
      into[label] = await sampleWarm(label, callPool(tool, input));
    }
  }
  await corral.close();

  // Throughput: 8 callers keep 2 workers busy with the small diff (both workers warmed first).
  log('throughput, 8 callers on 2 workers…');
  const pair = await Corral.create({ size: 2, store: false, cache: new ComponentCache(join(scratch, 'pool-cache')) });
  const callPair = async () => {
    const r = await pair.invoke('diff-summary', inputs.small);
    if (!r.ok) throw new Error(JSON.stringify(r.error));
  };
  // Warmed as pool-rate.ts warms, so that the measured window holds neither the spare worker's
  // boot and compile (it starts once a call has run) nor the first, unoptimized calls.
  const warmUpCalls = quick ? 40 : 600;
  for (let i = 0; i < warmUpCalls / 2; i++) await Promise.all([callPair(), callPair()]);
  const totalCalls = quick ? 400 : 6000;
  const callsPerSecondOver = async (calls: number) => {
    let issued = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (issued++ < calls) await callPair();
      }),
    );
    return calls / ((performance.now() - started) / 1000);
  };
  const callsPerSecond = await callsPerSecondOver(totalCalls);
  // The same workers again: each new worker's JavaScript and heap take a few thousand calls to
  // warm (V8's optimizing compiler, first-touch page faults), so this is what a busy host sustains.
  const sustainedCallsPerSecond = await callsPerSecondOver(totalCalls);
  await pair.close();

  // The same small call with every execution recorded durably in a SQLite store.
  log('warm calls with the SQLite snapshot store…');
  const recorded = await Corral.create({
    size: 1,
    store: join(scratch, 'snapshots.db'),
    cache: new ComponentCache(join(scratch, 'pool-cache')),
  });
  const warmRecorded = await sample(
    N_SMALL,
    async () => {
      const r = await recorded.invoke('diff-summary', inputs.small);
      if (!r.ok || r.snapshot?.error) throw new Error(JSON.stringify(r.error ?? r.snapshot));
    },
    WARM_UP,
  );
  await recorded.close();

  // Baseline 1: the same tool as a preview1 module under node:wasi (fresh instance per call).
  log('baseline: node:wasi…');
  const moduleBytes = readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/diff-summary.module.wasm'));
  const module = await WebAssembly.compile(moduleBytes);
  const nodeWasi: Record<string, number[]> = {};
  for (const [label, input] of Object.entries(inputs)) {
    const inPath = join(wasiScratch, `in-${label}.json`);
    const outPath = join(wasiScratch, `out-${label}.json`);
    writeFileSync(inPath, JSON.stringify(input));
    nodeWasi[label] = await sampleWarm(label, async () => {
      const stdin = openSync(inPath, 'r');
      const stdout = openSync(outPath, 'w');
      try {
        const wasi = new WASI({ version: 'preview1', args: ['diff-summary'], env: { TZ: 'UTC' }, stdin, stdout, returnOnExit: true });
        const instance = await WebAssembly.instantiate(module, wasi.getImportObject() as WebAssembly.Imports);
        const code = wasi.start(instance);
        if (code !== 0) throw new Error(`node:wasi exit ${code}`);
      } finally {
        closeSync(stdin);
        closeSync(stdout);
      }
      JSON.parse(readFileSync(outPath, 'utf8'));
    });
  }

  // Baselines 2 and 3: the component and the preview1 module in this thread, no
  // worker (what the pool's messaging costs), through Corral's own runners.
  const request = (stdin: Uint8Array): RunRequest => ({
    toolName: 'diff-summary',
    stdin,
    args: ['diff-summary'],
    env: { TZ: 'UTC' },
    mounts: [],
    outputLimitBytes: 1 << 24,
    memoryLimitBytes: 128 * 2 ** 20,
    diskLimitBytes: 0,
  });
  const componentRunner = new ComponentRunner();
  const prepared = await transpileComponent(readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/diff-summary.wasm')), 'diff-summary');
  const preview1Runner = new Preview1Runner();
  const p1Bytes = new Uint8Array(moduleBytes);
  const inThreadRuns = {
    component: (stdin: Uint8Array) => componentRunner.run('diff-summary', prepared, request(stdin)),
    preview1: (stdin: Uint8Array) => preview1Runner.run('diff-summary-p1', p1Bytes, request(stdin)),
  };
  async function inThread(which: keyof typeof inThreadRuns): Promise<Record<string, number[]>> {
    log(`baseline: ${which} in-process…`);
    const out: Record<string, number[]> = {};
    for (const [label, input] of Object.entries(inputs)) {
      const stdin = new TextEncoder().encode(JSON.stringify(input));
      out[label] = await sampleWarm(label, async () => {
        const r = await inThreadRuns[which](stdin);
        if (r.exitCode !== 0) throw new Error(`${which} in-process run failed`);
        JSON.parse(new TextDecoder().decode(r.stdout));
      });
    }
    return out;
  }
  const inProcess = await inThread('component');
  const p1InProcess = await inThread('preview1');

  // --- report ---------------------------------------------------------------------
  const emptyMs = median(emptyScript);
  rows.push([
    'cold: new process → first result (warm transpile cache)',
    fmt(median(coldWarmCache)),
    '',
    `an empty script's first line: ${fmt(emptyMs)}; +${fmt(median(coldWarmCache) - emptyMs)}`,
  ]);
  rows.push([
    '`corral run diff-summary` on the example: spawn → exit (default store)',
    fmt(median(cliRun)),
    '',
    `node -e 0, spawn → exit: ${fmt(median(nodeAlone))}; +${fmt(median(cliRun) - median(nodeAlone))}`,
  ]);
  rows.push([
    'cold: new process → first result (empty transpile cache: the bundled tools come transpiled)',
    fmt(median(coldEmptyCache)),
    '',
    '',
  ]);
  for (const label of Object.keys(inputs)) {
    const c = median(warm[label]!);
    const w = median(nodeWasi[label]!);
    const p = median(inProcess[label]!);
    rows.push([
      `warm diff-summary, ${label} diff: Corral worker pool`,
      fmt(c),
      fmt(quantile(warm[label]!, 0.99)),
      `${(c / w).toFixed(2)}× node:wasi`,
    ]);
    if (label === 'small') {
      const f = median(firstCalls);
      rows.push([
        `diff-summary, small diff: Corral worker pool, a new worker's first ${N_SMALL} calls`,
        fmt(f),
        fmt(quantile(firstCalls, 0.99)),
        `${(f / w).toFixed(2)}× node:wasi`,
      ]);
    }
    rows.push([
      `warm diff-summary, ${label} diff: same component in-process (no worker)`,
      fmt(p),
      fmt(quantile(inProcess[label]!, 0.99)),
      `${(p / w).toFixed(2)}× node:wasi`,
    ]);
    const m = median(warmP1[label]!);
    const q = median(p1InProcess[label]!);
    rows.push([
      `warm diff-summary, ${label} diff: preview1 module, Corral worker pool`,
      fmt(m),
      fmt(quantile(warmP1[label]!, 0.99)),
      `${(m / w).toFixed(2)}× node:wasi`,
    ]);
    rows.push([
      `warm diff-summary, ${label} diff: preview1 module in-process (Preview1Runner)`,
      fmt(q),
      fmt(quantile(p1InProcess[label]!, 0.99)),
      `${(q / w).toFixed(2)}× node:wasi`,
    ]);
    rows.push([
      `warm diff-summary, ${label} diff: baseline, preview1 module under node:wasi`,
      fmt(w),
      fmt(quantile(nodeWasi[label]!, 0.99)),
      '1.00×',
    ]);
  }
  rows.push([
    `throughput, small diff: 8 callers, Corral pool of 2 workers, ${totalCalls} calls after ${warmUpCalls} to warm up`,
    `${callsPerSecond.toFixed(0)} calls/s`,
    '',
    `${(callsPerSecond / (1000 / median(nodeWasi.small!))).toFixed(2)}× node:wasi one call at a time`,
  ]);
  rows.push([
    `throughput, the same: the next ${totalCalls} calls on the same, warmed workers`,
    `${sustainedCallsPerSecond.toFixed(0)} calls/s`,
    '',
    `${(sustainedCallsPerSecond / (1000 / median(nodeWasi.small!))).toFixed(2)}× node:wasi one call at a time`,
  ]);
  rows.push([
    'warm diff-summary, small diff: Corral worker pool, every call recorded in SQLite (synchronous=FULL)',
    fmt(median(warmRecorded)),
    fmt(quantile(warmRecorded, 0.99)),
    `+${fmt(median(warmRecorded) - median(warm.small!))} for the snapshot`,
  ]);
  return rows;
}

const sizes = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, `${(JSON.stringify(v).length / 1024).toFixed(1)} KiB`]));
const sections: Array<[title: string, note: string, rows: () => Promise<string[][]> | string[][]]> = [
  [
    'diff-summary per call',
    `Inputs: small = bundled example (${sizes.small}), 1 MB = synthetic git-style diff (${sizes['1 MB']}). Runs: ${N_SMALL} small, ${N_LARGE} large, ${N_COLD} cold; a warm small call is timed after ${WARM_UP} untimed ones.`,
    benchDiffSummary,
  ],
  [
    'Sandbox overhead (a tool that does nothing)',
    `Runs: ${N_SMALL} per row; recovery and throughput as noted.`,
    () => benchOverhead(N_SMALL),
  ],
  [
    'corral exec (any WASI program)',
    'Whole commands, process start to exit, each in a fresh process; the same preview1 module under node:wasi is the baseline.',
    () => benchExec({ quick }),
  ],
  [
    'The Node host under Bun and Deno (runtimes)',
    'Each in fresh processes from node_modules/.bin (bun 1.4.5, deno 2.9.6); warm calls are one process each. See PORTABILITY.md for what differs.',
    () => benchRuntimes({ quick }),
  ],
  ['Snapshot writes (SQLite)', 'An invocation record is an intent plus its result: two durable writes.', () => benchSnapshots({ quick })],
  [
    'Recorded calls (Corral + SQLite store)',
    'diff-summary through Corral.create({ size: 2 }), with the store against without, 1 and 8 callers; CORRAL_BENCH_BEFORE=DIR adds another built checkout side by side.',
    () => benchRecordedCalls({ quick, ...(process.env.CORRAL_BENCH_BEFORE ? { before: process.env.CORRAL_BENCH_BEFORE } : {}) }),
  ],
  ['Snapshot writes (IndexedDB in Chromium)', 'Debian chromium, headless, a fresh profile.', () => benchIndexedDb({ quick })],
  [
    'The offline diff summarizer in Chromium (apps/web, production build)',
    'Page load to first summary and warm summaries of synthetic diffs; a pure-JS diff parser in the same page is the baseline. Peak memory: rise of the renderer process during one call.',
    () => benchWeb({ quick }),
  ],
];
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
console.log(`\n# npm run bench — ${new Date().toISOString()} — node ${process.version}, ${availableParallelism()} cores`);
for (const [title, note, make] of sections) {
  if (only && !title.toLowerCase().includes(only.toLowerCase())) continue;
  log(`${title}…`);
  let body: string;
  try {
    body = table(['measurement', 'median', 'p99', 'ratio'], await make());
  } catch (err) {
    body = `not measured: ${(err as Error).message}`;
  }
  console.log(`\n## ${title}\n\n${note}\n\n${body}`);
}
rmSync(scratch, { recursive: true, force: true });
rmSync(wasiScratch, { recursive: true, force: true });
