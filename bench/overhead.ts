/**
 * Sandbox overhead (issue 3): what a call costs when the tool itself does
 * nothing — a trivial component and a trivial preview1 module (both `echo`
 * of `{}`) through the worker pool — plus pool throughput, the time to get a
 * working worker back after a timeout, and the same trivial module under
 * other hosts in the same run: node:wasi, @wasmer/sdk, and a native process.
 * Also what an agent notices first: a fresh process's time to its first
 * result against an empty Node script's, and a host's resident memory.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WASI } from 'node:wasi';
import { Corral, ComponentCache } from '@corral/node';
import { nodeWasiScratch } from './node-wasi-io.js';
import { fmt, median, quantile, sample } from './stats.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const COMPONENT_TOOLS = join(ROOT, 'test/fixtures/tools');
const PREVIEW1_TOOLS = join(ROOT, 'test/fixtures/preview1');
const P1_ECHO = join(PREVIEW1_TOOLS, 'echo/p1-echo.wasm');
const ECHO_SOURCE = join(ROOT, 'test/fixtures/tools/echo/main.c');

export async function benchOverhead(runs: number): Promise<string[][]> {
  const scratch = mkdtempSync(join(tmpdir(), 'corral-bench-overhead-'));
  const rows: string[][] = [];
  const input = {};
  try {
    const corral = await Corral.create({
      toolDirs: [COMPONENT_TOOLS, PREVIEW1_TOOLS],
      size: 2,
      store: false,
      cache: new ComponentCache(join(scratch, 'cache')),
    });
    const call = async (tool: string) => {
      const r = await corral.invoke(tool, input);
      if (!r.ok) throw new Error(`${tool}: ${JSON.stringify(r.error)}`);
    };
    const component = await sample(runs, () => call('echo'));
    const preview1 = await sample(runs, () => call('p1-echo'));

    // The filesystem layer at work: file-stats walks a host folder of 10 folders × 10 files,
    // resolving each path from the mount root as every call does.
    const folder = join(scratch, 'workspace');
    for (let d = 0; d < 10; d++) {
      mkdirSync(join(folder, `dir-${d}`, 'nested'), { recursive: true });
      for (let f = 0; f < 10; f++) writeFileSync(join(folder, `dir-${d}`, 'nested', `file-${f}.txt`), 'some words\n'.repeat(f + 1));
    }
    const mounts = [{ guest: '/workspace', access: 'read' as const, source: { kind: 'host', path: folder } }];
    const fileStats = await sample(Math.max(20, runs / 5), async () => {
      const r = await corral.invoke('file-stats', {}, { mounts });
      if (!r.ok || (r.output as { totals?: { files?: number } }).totals?.files !== 100)
        throw new Error(`file-stats: ${JSON.stringify(r.error ?? r.output)}`);
    });

    // Throughput: 8 callers keep both workers busy.
    const throughput = async (tool: string, total: number) => {
      // Warm both workers first, so compiling the tool is not counted.
      await Promise.all(Array.from({ length: 8 }, () => call(tool)));
      let next = 0;
      const t = performance.now();
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next++ < total) await call(tool);
        }),
      );
      return total / ((performance.now() - t) / 1000);
    };
    const componentRate = await throughput('echo', runs * 2);
    const preview1Rate = await throughput('p1-echo', runs * 2);

    // echo is a preview1 module in jco's adapter, so the pool runs it as that module (adapted.ts).
    // A component that is not (componentize-js, wasip2) runs through its glue, as every one does here.
    const glueOnly = await Corral.create({
      toolDirs: [COMPONENT_TOOLS],
      bundled: false,
      size: 2,
      store: false,
      cache: new ComponentCache(join(scratch, 'cache')),
      adaptedModules: false,
    });
    const glueCall = async () => {
      const r = await glueOnly.invoke('echo', input);
      if (!r.ok) throw new Error(`echo (glue): ${JSON.stringify(r.error)}`);
    };
    await glueCall();
    const viaGlue = await sample(runs, glueCall);
    await glueOnly.close();

    // Recovery: a call killed by its timeout, then the next call on a fresh worker.
    const recovery: number[] = [];
    const solo = await Corral.create({ bundled: false, toolDirs: [PREVIEW1_TOOLS], size: 1, store: false });
    await solo.invoke('p1-echo', input);
    for (let i = 0; i < Math.max(5, runs / 20); i++) {
      // Timeouts are not back to back: a spare worker (where the pool keeps one) has time to boot.
      await new Promise((r) => setTimeout(r, 500));
      await solo.invoke('p1-spin', {}, { timeoutMs: 50 });
      const t = performance.now();
      const r = await solo.invoke('p1-echo', input);
      if (!r.ok) throw new Error('no recovery');
      recovery.push(performance.now() - t);
    }
    await solo.close();
    await corral.close();

    // Baselines: the same preview1 module under node:wasi, @wasmer/sdk, and a native build spawned per call.
    const module = await WebAssembly.compile(readFileSync(P1_ECHO));
    const wasiScratch = nodeWasiScratch('corral-bench-overhead-wasi-');
    const inPath = join(wasiScratch, 'in.json');
    const outPath = join(wasiScratch, 'out.json');
    writeFileSync(inPath, JSON.stringify(input));
    const nodeWasi = await sample(runs, async () => {
      const stdin = openSync(inPath, 'r');
      const stdout = openSync(outPath, 'w');
      try {
        const wasi = new WASI({ version: 'preview1', args: ['echo'], env: {}, stdin, stdout, returnOnExit: true });
        const instance = await WebAssembly.instantiate(module, wasi.getImportObject() as WebAssembly.Imports);
        if (wasi.start(instance) !== 0) throw new Error('node:wasi echo failed');
      } finally {
        closeSync(stdin);
        closeSync(stdout);
      }
    });
    rmSync(wasiScratch, { recursive: true, force: true });
    const wasmer = await wasmerBaseline(readFileSync(P1_ECHO), runs);
    const native = nativeBaseline(scratch, runs);

    const c = median(component);
    const row = (what: string, samples: number[] | undefined, note = '') =>
      rows.push([
        what,
        samples ? fmt(median(samples)) : 'n/a',
        samples ? fmt(quantile(samples, 0.99)) : '',
        samples && !note ? `${(median(samples) / c).toFixed(2)}× component` : note,
      ]);
    row('trivial component (echo {}) through the pool', component, '1.00×');
    row('trivial preview1 module (echo {}) through the pool', preview1);
    row('trivial component through its glue (echo {}, adaptedModules: false)', viaGlue);
    row('file-stats over a host folder (100 files in 20 folders, mounted read-only)', fileStats);
    rows.push(['pool throughput, 2 workers, 8 callers: component', `${componentRate.toFixed(0)} calls/s`, '', '']);
    rows.push(['pool throughput, 2 workers, 8 callers: preview1 module', `${preview1Rate.toFixed(0)} calls/s`, '', '']);
    row('first call after a timeout killed the only worker (recovery)', recovery, 'includes starting a worker');
    row('baseline: the preview1 module under node:wasi (in-process, fresh instance)', nodeWasi);
    row('baseline: the preview1 module under @wasmer/sdk (runWasix)', wasmer.samples, wasmer.note);
    row('baseline: native build of the same C, one process per call', native.samples, native.note);
    rows.push(...startAndMemory(scratch, runs));
    return rows;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function wasmerBaseline(moduleBytes: Uint8Array, runs: number): Promise<{ samples?: number[]; note: string }> {
  let wasmer: import('@wasmer/sdk/node').Wasmer | undefined;
  try {
    const { Wasmer } = await import('@wasmer/sdk/node');
    wasmer = new Wasmer();
    // A package made from the raw module, and one sandbox reused for every call (its cheapest path).
    const pkg = await wasmer.packages.load(moduleBytes);
    const sandbox = await wasmer.sandboxes.create({ packages: [pkg] });
    const samples = await sample(runs, async () => {
      const output = await sandbox.command(pkg).run({ stdin: '{}' });
      if (output.text().trim() !== '{}') throw new Error('@wasmer/sdk echo returned something else');
    });
    await sandbox.close();
    return { samples, note: '' };
  } catch (err) {
    return { note: `not measured: ${(err as Error).message.split('\n')[0]}` };
  } finally {
    await wasmer?.close().catch(() => {});
  }
}

function nativeBaseline(scratch: string, runs: number): { samples?: number[]; note: string } {
  const binary = join(scratch, 'echo-native');
  try {
    execFileSync('cc', ['-O2', '-o', binary, ECHO_SOURCE], { stdio: 'ignore' });
  } catch {
    return { note: 'not measured: no C compiler (cc)' };
  }
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const r = spawnSync(binary, [], { input: '{}' });
    samples.push(performance.now() - t);
    if (r.status !== 0) throw new Error('native echo failed');
  }
  return { samples, note: '' };
}

/**
 * Cold start and resident memory, each in fresh processes (bench/cold.ts,
 * bench/rss.ts). Cold start is the time from the process's start to the first
 * diff-summary result (warm transpile cache), against the same clock at the
 * end of an empty script: what Corral adds to Node's own start.
 * CORRAL_BENCH_BEFORE=DIR (another built checkout) adds its cold start, run
 * alternately with this tree's.
 */
function startAndMemory(scratch: string, runs: number): string[][] {
  const script = (name: string) => new URL(`./${name}`, import.meta.url).pathname;
  const cacheDir = join(scratch, 'start-cache');
  const env = { ...process.env, CORRAL_CACHE_DIR: cacheDir, CORRAL_STORE: join(scratch, 'start-store.db') };
  const json = <T>(args: string[]) => JSON.parse(execFileSync(process.execPath, args, { env, encoding: 'utf8' })) as T;
  const before = process.env.CORRAL_BENCH_BEFORE;
  const beforeCold = before ? join(before, 'bench/dist/cold.js') : undefined;
  json([script('cold.js')]); // fills the transpile cache
  if (beforeCold) json([beforeCold]);
  const n = Math.max(5, Math.min(11, runs / 20));
  const cold: number[] = [];
  const coldBefore: number[] = [];
  const empty: number[] = [];
  // Alternate, so all see the same load on a shared machine.
  for (let i = 0; i < n; i++) {
    cold.push(json<{ processMs: number }>([script('cold.js')]).processMs);
    if (beforeCold) coldBefore.push(json<{ processMs: number }>([beforeCold]).processMs);
    empty.push(json<number>(['-e', 'process.stdout.write(String(performance.now()))']));
  }
  const rss = (mode: string, count: number) => Array.from({ length: count }, () => json<{ rssMb: number }>([script('rss.js'), mode]).rssMb);
  const calls = rss('calls', 3);
  const transpiled = rss('transpile', 2);
  const mb = (v: number[]) => `${median(v).toFixed(0)} MB`;
  return [
    [
      'cold: new process → first diff-summary result (warm cache), from process start',
      fmt(median(cold)),
      '',
      `empty script: ${fmt(median(empty))}; +${fmt(median(cold) - median(empty))}`,
    ],
    ...(beforeCold
      ? [
          [
            `the same, ${before} (CORRAL_BENCH_BEFORE)`,
            fmt(median(coldBefore)),
            '',
            `+${fmt(median(coldBefore) - median(empty))} over the empty script`,
          ],
        ]
      : []),
    ['RSS: host with 2 workers after their first diff-summary calls', mb(calls), '', 'whole process (workers are threads)'],
    [
      'RSS: the same after a first call that transpiled its component (empty cache)',
      mb(transpiled),
      '',
      `+${(median(transpiled) - median(calls)).toFixed(0)} MB over the warm-cache host`,
    ],
  ];
}
