/**
 * Snapshot write cost: how long one durable write takes (p50/p99) and how
 * many invocation records (an intent plus its result: two durable writes)
 * a store sustains, one call at a time and with concurrent calls sharing
 * group commits. SQLite `synchronous=NORMAL` runs in the same process as
 * the baseline: same work without an fsync per commit (not durable on
 * power loss, so never Corral's setting).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as corralNode from '@corral/node';
import Database from 'better-sqlite3';
import { BUNDLED_TOOLS_DIR, SqliteStore, nowNs, type ExecutionIntent, type ExecutionOutcome } from '@corral/node';
import { fmt, median, quantile } from './stats.js';

interface Run {
  /** Milliseconds of every single write, each measured from call to durable. */
  writes: number[];
  /** Invocation records (intent + result) per second over the whole run. */
  perSecond: number;
}

const pad = (n: number) => 'x'.repeat(n);
// Sizes like a real call: a ~0.5 KiB input, 1 KiB stdout head and tail.
const INPUT = JSON.stringify({ diff: pad(480) });
const HEAD = pad(1024);

function intent(): ExecutionIntent {
  return {
    id: crypto.randomUUID(),
    decision_id: null,
    tool: 'diff-summary',
    version: '1.0.0',
    wasm_sha256: 'a'.repeat(64),
    input_sha256: 'b'.repeat(64),
    input_json: INPUT,
    intent_ns: nowNs(),
  };
}

function outcome(): ExecutionOutcome {
  return {
    result_ns: nowNs(),
    exit_code: 0,
    error_code: null,
    error_message: null,
    stdout_sha256: 'c'.repeat(64),
    stdout_head: HEAD,
    stdout_tail: HEAD,
    stderr_head: '',
    stderr_tail: '',
    duration_ms: 3.1,
    peak_memory_bytes: 1 << 20,
  };
}

/**
 * Open loop at a fixed rate, the way an agent harness produces calls: a new
 * invocation starts every 1/rate s whether or not earlier ones finished; each
 * writes its intent, "runs" for 2 ms, then writes its result.
 */
async function paced(store: SqliteStore, rate: number, invocations: number): Promise<Run> {
  const writes: number[] = [];
  const timed = async (write: Promise<void>) => {
    const t = performance.now();
    await write;
    writes.push(performance.now() - t);
  };
  const one = async () => {
    const rec = intent();
    await timed(store.beginExecution(rec));
    await new Promise((r) => setTimeout(r, 2));
    await timed(store.finishExecution(rec.id, outcome()));
  };
  const started = performance.now();
  const calls: Promise<void>[] = [];
  for (let i = 0; i < invocations; i++) {
    const wait = started + (i * 1000) / rate - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    calls.push(one());
  }
  await Promise.all(calls);
  return { writes, perSecond: invocations / ((performance.now() - started) / 1000) };
}

/** `lanes` concurrent callers, each recording `perLane` invocations one after another. */
async function measure(store: SqliteStore, lanes: number, perLane: number): Promise<Run> {
  const writes: number[] = [];
  const timed = async (write: Promise<void>) => {
    const t = performance.now();
    await write;
    writes.push(performance.now() - t);
  };
  const started = performance.now();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      for (let i = 0; i < perLane; i++) {
        const rec = intent();
        await timed(store.beginExecution(rec));
        await timed(store.finishExecution(rec.id, outcome()));
      }
    }),
  );
  return { writes, perSecond: (lanes * perLane) / ((performance.now() - started) / 1000) };
}

export async function benchSnapshots(options: { quick?: boolean } = { quick: process.argv.includes('--quick') }): Promise<string[][]> {
  const invocations = options.quick ? 500 : 3000;
  const LANES = 16;
  const RATE = 1000;
  const dir = mkdtempSync(join(tmpdir(), 'corral-bench-snapshots-'));
  const results: Record<string, Run> = {};
  try {
    for (const sync of ['FULL', 'NORMAL'] as const) {
      for (const [mode, lanes] of [
        ['single', 1],
        ['batched', LANES],
      ] as const) {
        const store = await SqliteStore.open(join(dir, `${sync}-${mode}.db`), { synchronous: sync });
        await measure(store, lanes, Math.max(1, Math.floor(50 / lanes))); // warm up
        results[`${sync} ${mode}`] = await measure(store, lanes, Math.floor(invocations / lanes));
        await store.close();
      }
      const store = await SqliteStore.open(join(dir, `${sync}-paced.db`), { synchronous: sync });
      await measure(store, 1, 100); // warm up, and past the point where the background checkpointer starts
      results[`${sync} paced`] = await paced(store, RATE, invocations);
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const rate = (n: number) =>
    `${Math.round(n).toLocaleString('en-US')} invocations/s (${Math.round(2 * n).toLocaleString('en-US')} writes/s)`;
  const rows: string[][] = [];
  for (const [mode, label] of [
    ['paced', `${RATE.toLocaleString('en-US')} invocations/s offered (open loop)`],
    ['single', 'one call at a time, flat out'],
    ['batched', `${LANES} concurrent calls, flat out, group commit`],
  ] as const) {
    const full = results[`FULL ${mode}`]!;
    const normal = results[`NORMAL ${mode}`]!;
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}× NORMAL`;
    rows.push([
      `snapshot write, SQLite FULL, ${label}`,
      fmt(median(full.writes)),
      fmt(quantile(full.writes, 0.99)),
      ratio(median(full.writes), median(normal.writes)),
    ]);
    rows.push([
      `snapshot write, baseline SQLite NORMAL, ${label}`,
      fmt(median(normal.writes)),
      fmt(quantile(normal.writes, 0.99)),
      '1.00×',
    ]);
    rows.push([`sustained, SQLite FULL, ${label}`, rate(full.perSecond), '', ratio(full.perSecond, normal.perSecond)]);
    rows.push([`sustained, baseline SQLite NORMAL, ${label}`, rate(normal.perSecond), '', '1.00×']);
  }
  return rows;
}

// --- recorded calls through Corral ------------------------------------------------

/** Concurrent callers in the concurrency runs (the pool has 2 workers). */
const CALLERS = 8;

type NodeModule = typeof corralNode;
type CorralT = Awaited<ReturnType<NodeModule['Corral']['create']>>;

/** One Corral to measure: a tree's build, with or without a store, and how that store commits. */
interface Variant {
  tree: string;
  name: string;
  corral: CorralT;
  store?: { commits?: number; location: string; close(): Promise<void> };
  single: number[];
  concurrent: number[];
  /** Wall time per call of each 8-caller burst. */
  wall: number[];
  commits: number;
  calls: number;
}

/** What a store variant opens with (`false`: no store). */
type StoreChoice = false | { synchronous?: 'FULL' | 'NORMAL'; commits?: 'thread' | 'inline' };

const exampleInput = () => ({
  diff: (JSON.parse(readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/examples/example.diff.json'), 'utf8')) as { diff: string }).diff,
});

async function openVariant(mod: NodeModule, dir: string, tree: string, name: string, choice: StoreChoice): Promise<Variant> {
  const store =
    choice === false ? undefined : await mod.SqliteStore.open(join(dir, `${tree}-${name}.db`.replace(/[^\w.-]+/g, '_')), choice);
  const corral = await mod.Corral.create({ size: 2, store: store ?? false, cache: new mod.ComponentCache(join(dir, `cache-${tree}`)) });
  return { tree, name, corral, ...(store ? { store } : {}), single: [], concurrent: [], wall: [], commits: 0, calls: 0 };
}

async function call(v: Variant, input: unknown): Promise<void> {
  const r = await v.corral.invoke('diff-summary', input);
  if (!r.ok || r.snapshot?.error) throw new Error(`${v.tree} ${v.name}: ${JSON.stringify(r.error ?? r.snapshot)}`);
}

async function burst(v: Variant, input: unknown, perCaller: number, into: number[] | null): Promise<void> {
  const commits = v.store?.commits;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      for (let i = 0; i < perCaller; i++) {
        const t = performance.now();
        await call(v, input);
        into?.push(performance.now() - t);
      }
    }),
  );
  if (into === null) return;
  v.wall.push((performance.now() - started) / (CALLERS * perCaller));
  if (commits !== undefined && v.store?.commits !== undefined) v.commits += v.store.commits - commits;
  v.calls += CALLERS * perCaller;
}

/** The @corral/node entry of a tree: this one, or another checkout's build (`--before=DIR`). */
function entryOf(before?: string): string {
  return before ? join(resolve(before), 'packages/node/dist/index.js') : new URL(import.meta.resolve('@corral/node')).pathname;
}

/**
 * A real recorded call (diff-summary on its bundled example through
 * Corral.create({ size: 2, store })) against the same call without a store,
 * one caller and 8 concurrent callers, rounds alternating over every variant
 * (and over both trees when `before` names another checkout, e.g. main's,
 * built: its @corral/node is loaded beside this one). Each store variant is
 * also run in a child under strace to count fsyncs per call.
 */
export async function benchRecordedCalls(options: { quick?: boolean; before?: string } = {}): Promise<string[][]> {
  const rounds = options.quick ? 4 : 12;
  const SINGLE = 25;
  const PER_CALLER = 5;
  const input = exampleInput();
  const dir = mkdtempSync(join(tmpdir(), 'corral-bench-recorded-'));
  const trees: [string, NodeModule, StoreChoice[]][] = [
    [options.before ? 'after' : 'this tree', corralNode, [false, {}, { commits: 'inline' }, { synchronous: 'NORMAL' }]],
  ];
  if (options.before) trees.push(['before', (await import(pathToFileURL(entryOf(options.before)).href)) as NodeModule, [false, {}]]);
  const nameOf = (c: StoreChoice) =>
    c === false
      ? 'no store'
      : c.synchronous === 'NORMAL'
        ? 'store, synchronous=NORMAL (not durable: reference only)'
        : `store, FULL${c.commits === 'inline' ? ', always commit on the main thread' : ''}`;
  const variants: Variant[] = [];
  const choices = new Map<Variant, StoreChoice>();
  let closed = false;
  const closeAll = async () => {
    if (closed) return;
    closed = true;
    for (const v of variants) {
      await v.corral.close();
      await v.store?.close();
    }
  };
  try {
    for (const [tree, mod, list] of trees) {
      for (const choice of list) {
        const v = await openVariant(mod, dir, tree, nameOf(choice), choice);
        variants.push(v);
        choices.set(v, choice);
      }
    }
    for (const v of variants) {
      for (let i = 0; i < 10; i++) await call(v, input);
      await burst(v, input, 2, null);
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order)
        for (let i = 0; i < SINGLE; i++) {
          const t = performance.now();
          await call(v, input);
          v.single.push(performance.now() - t);
        }
      for (const v of order) await burst(v, input, PER_CALLER, v.concurrent);
    }
    await closeAll();
    // Every call had the same input: its text must be kept once, however many calls recorded it.
    for (const v of variants) {
      if (!v.store) continue;
      const db = new Database(v.store.location, { readonly: true });
      const [inputs, executions] = ['inputs', 'executions'].map(
        (t) => (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n,
      );
      db.close();
      if (inputs !== 1) throw new Error(`${v.tree} ${v.name}: ${inputs} input rows for ${executions} calls with one input`);
    }
  } finally {
    await closeAll();
    rmSync(dir, { recursive: true, force: true });
  }

  const rows: string[][] = [];
  const over = (v: Variant, base: Variant, pick: (x: Variant) => number) =>
    v === base
      ? 'baseline'
      : `${pick(v) - pick(base) >= 0 ? '+' : ''}${fmt(pick(v) - pick(base))}, ${(pick(v) / pick(base)).toFixed(2)}× no store`;
  for (const [tree] of trees) {
    const mine = variants.filter((v) => v.tree === tree);
    const base = mine.find((v) => v.store === undefined)!;
    for (const v of mine) {
      rows.push([
        `${tree}: 1 caller, ${v.name}: call`,
        fmt(median(v.single)),
        fmt(quantile(v.single, 0.99)),
        over(v, base, (x) => median(x.single)),
      ]);
    }
    for (const v of mine) {
      rows.push([
        `${tree}: ${CALLERS} callers, ${v.name}: call`,
        fmt(median(v.concurrent)),
        fmt(quantile(v.concurrent, 0.99)),
        over(v, base, (x) => median(x.concurrent)),
      ]);
    }
    for (const v of mine) {
      rows.push([
        `${tree}: ${CALLERS} callers, ${v.name}: wall time per call`,
        fmt(median(v.wall)),
        '',
        over(v, base, (x) => median(x.wall)),
      ]);
    }
    for (const v of mine) {
      if (v.store === undefined) continue;
      const commits = v.store.commits === undefined ? 'n/a' : (v.commits / v.calls).toFixed(2);
      const fsyncs = fsyncsPerCall(entryOf(tree === 'before' ? options.before : undefined), choices.get(v)!);
      rows.push([`${tree}: ${CALLERS} callers, ${v.name}: commits / fsyncs per call`, `${commits} / ${fsyncs}`, '', '']);
    }
  }
  return rows;
}

/**
 * fsync + fdatasync calls per recorded call with 8 concurrent callers, counted
 * by strace in a child process: the difference between two runs of different
 * lengths, so opening the store and warming up cancel out. 'n/a' without strace.
 */
function fsyncsPerCall(entry: string, choice: StoreChoice): string {
  const count = (calls: number): number => {
    const out = join(mkdtempSync(join(tmpdir(), 'corral-bench-strace-')), 'strace.txt');
    try {
      const probe = JSON.stringify({ entry, choice, calls });
      execFileSync(
        'strace',
        [
          '-f',
          '--seccomp-bpf',
          '-c',
          '-e',
          'trace=fsync,fdatasync',
          '-o',
          out,
          process.execPath,
          new URL(import.meta.url).pathname,
          `--probe=${probe}`,
        ],
        { stdio: 'ignore' },
      );
      let n = 0;
      for (const line of readFileSync(out, 'utf8').split('\n')) {
        const cells = line.trim().split(/\s+/);
        if (cells.at(-1) === 'fsync' || cells.at(-1) === 'fdatasync') n += Number(cells[3]);
      }
      return n;
    } finally {
      rmSync(join(out, '..'), { recursive: true, force: true });
    }
  };
  try {
    const [small, large] = [CALLERS * 5, CALLERS * 30];
    return ((count(large) - count(small)) / (large - small)).toFixed(2);
  } catch {
    return 'n/a';
  }
}

/** The child of fsyncsPerCall: `calls` recorded calls from 8 callers after a warm-up. */
async function probe({ entry, choice, calls }: { entry: string; choice: StoreChoice; calls: number }): Promise<void> {
  const mod = (await import(pathToFileURL(entry).href)) as NodeModule;
  const dir = mkdtempSync(join(tmpdir(), 'corral-bench-probe-'));
  try {
    const v = await openVariant(mod, dir, 'probe', 'probe', choice);
    const input = exampleInput();
    for (let i = 0; i < 10; i++) await call(v, input);
    await burst(v, input, calls / CALLERS, null);
    await v.corral.close();
    await v.store?.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// `node bench/dist/snapshots.js [--quick] [--before=DIR]` prints the tables on its own;
// DIR is another checkout (e.g. main's), built, to measure side by side.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const probeArg = arg('probe');
  if (probeArg !== undefined) {
    await probe(JSON.parse(probeArg));
  } else {
    const { table } = await import('./stats.js');
    const quick = process.argv.includes('--quick');
    const before = arg('before') ?? process.env.CORRAL_BENCH_BEFORE;
    console.log(table(['measurement', 'median', 'p99', 'ratio'], await benchRecordedCalls({ quick, ...(before ? { before } : {}) })));
    if (!process.argv.includes('--calls-only')) {
      console.log();
      console.log(table(['measurement', 'median', 'p99', 'ratio'], await benchSnapshots({ quick })));
    }
  }
}
