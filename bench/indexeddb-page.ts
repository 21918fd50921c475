/**
 * The page side of the IndexedDB benchmark (bench/indexeddb.ts bundles it
 * with vite and loads it in Chromium): records invocations through
 * IndexedDbStore and times every write, from call to durable.
 */
import { IndexedDbStore } from '@corral/browser';
import { nowNs, type ExecutionIntent, type ExecutionOutcome } from '@corral/core';

export interface PageOptions {
  name: string;
  durability: 'strict' | 'relaxed';
  /** Concurrent callers, each recording `perLane` invocations one after another. */
  lanes: number;
  perLane: number;
  /** Instead of lanes: start an invocation every 1/rate s, open loop. */
  rate?: number;
}

export interface PageRun {
  /** Milliseconds of every single write. */
  writes: number[];
  /** Invocation records (intent + result) per second over the whole run. */
  perSecond: number;
}

// Sizes like a real call, as in bench/snapshots.ts: a ~0.5 KiB input, 1 KiB stdout head and tail.
const INPUT = JSON.stringify({ diff: 'x'.repeat(480) });
const HEAD = 'x'.repeat(1024);

const intent = (): ExecutionIntent => ({
  id: crypto.randomUUID(),
  decision_id: null,
  tool: 'diff-summary',
  version: '1.0.0',
  wasm_sha256: 'a'.repeat(64),
  input_sha256: 'b'.repeat(64),
  input_json: INPUT,
  intent_ns: nowNs(),
});

const outcome = (): ExecutionOutcome => ({
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
});

async function run(options: PageOptions): Promise<PageRun> {
  const store = await IndexedDbStore.open(options.name, { durability: options.durability });
  const writes: number[] = [];
  const timed = async (write: Promise<void>) => {
    const t = performance.now();
    await write;
    writes.push(performance.now() - t);
  };
  // One invocation: its intent, 2 ms of "running" when paced, its result.
  const one = async (runMs: number) => {
    const rec = intent();
    await timed(store.beginExecution(rec));
    if (runMs > 0) await new Promise((r) => setTimeout(r, runMs));
    await timed(store.finishExecution(rec.id, outcome()));
  };
  const started = performance.now();
  let invocations = options.lanes * options.perLane;
  if (options.rate) {
    invocations = options.perLane;
    const calls: Promise<void>[] = [];
    for (let i = 0; i < invocations; i++) {
      const wait = started + (i * 1000) / options.rate - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      calls.push(one(2));
    }
    await Promise.all(calls);
  } else {
    await Promise.all(
      Array.from({ length: options.lanes }, async () => {
        for (let i = 0; i < options.perLane; i++) await one(0);
      }),
    );
  }
  const perSecond = invocations / ((performance.now() - started) / 1000);
  await store.close();
  return { writes, perSecond };
}

(globalThis as unknown as { corralBench: { run: typeof run } }).corralBench = { run };
