/**
 * Snapshot write cost: how long one durable write takes (p50/p99) and how
 * many invocation records (an intent plus its result: two durable writes)
 * a store sustains, one call at a time and with concurrent calls sharing
 * group commits. SQLite `synchronous=NORMAL` runs in the same process as
 * the baseline: same work without an fsync per commit (not durable on
 * power loss, so never Corral's setting).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore, nowNs, type ExecutionIntent, type ExecutionOutcome } from '@corral/node';
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

// `node bench/dist/snapshots.js` prints the table on its own.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { table } = await import('./stats.js');
  console.log(table(['measurement', 'median', 'p99', 'ratio'], await benchSnapshots()));
}
