/**
 * The worker pool under concurrency: many callers, few workers, and calls
 * killed by their timeout mixed in. Every call must be answered exactly once
 * with its own result, and no worker may leak.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getEventListeners } from 'node:events';
import { Corral, ComponentCache, WorkerPool, SandboxWorker, CorralError, DEFAULT_RESOURCE_LIMITS, type WorkerExecutor } from '@corral/node';
import { EXECUTOR_CLOSE_GRACE_MS } from '@corral/wasi/host-kit';
import { startExitsAndCatches } from '../packages/wasi/test/start-exits.js';

const FIXTURES = new URL('./fixtures/tools/', import.meta.url).pathname;
let corral: Corral;

beforeAll(async () => {
  corral = await Corral.create({ toolDirs: [FIXTURES], size: 2, cache: new ComponentCache(mkdtempSync(join(tmpdir(), 'corral-cache-'))) });
});
afterAll(() => corral?.close());

describe('the worker pool', () => {
  it('8 callers × 200 calls through 2 workers, a timeout-killed call every 50: each answered once, correctly', async () => {
    const answered = new Map<string, number>();
    let timeouts = 0;
    const caller = async (c: number) => {
      for (let i = 0; i < 200; i++) {
        const id = `${c}:${i}`;
        if (i % 50 === 49) {
          const r = await corral.invoke('spin', {}, { timeoutMs: 150 });
          expect(r.error?.code).toBe('E_RESOURCE_EXHAUSTED');
          expect(r.error?.details.resource).toBe('time');
          timeouts++;
        } else {
          const r = await corral.invoke('echo', { id });
          expect(r.error).toBeNull();
          expect(r.output).toEqual({ id });
        }
        answered.set(id, (answered.get(id) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, c) => caller(c)));
    expect(answered.size).toBe(1600);
    expect([...answered.values()].every((n) => n === 1)).toBe(true);
    expect(timeouts).toBe(8 * 4);
    expect(corral.executor.pool.workerCount).toBeLessThanOrEqual(2);
    expect(corral.executor.pool.queued).toBe(0);
  }, 180_000);

  // Inputs are encoded into buffers that go to the worker and come back for later calls
  // (input-buffers.ts), and a large input's memory starts with room for it (memory-pool.ts).
  it('4 callers with large inputs of shrinking sizes: each call sees its own input, whole and alone', async () => {
    const KiB = 1024;
    const sizes = [900 * KiB, 800 * KiB, 700 * KiB, 600 * KiB, 500 * KiB];
    const caller = async (c: number) => {
      for (let round = 0; round < sizes.length; round++) {
        const text = `${c}:${round}:`.padEnd(sizes[(c + round) % sizes.length]!, String.fromCharCode(97 + c));
        const r = await corral.invoke('echo', { text });
        expect(r.error).toBeNull();
        const echoed = (r.output as { text: string }).text;
        expect(echoed.length).toBe(text.length);
        expect(echoed === text).toBe(true);
      }
    };
    await Promise.all([0, 1, 2, 3].map(caller));
  }, 60_000);

  // A large input's memory starts with room for it; started near the cap, any failure looked like running out of memory.
  it('a tool that fails on a large input under a small memory cap is reported as failing, not as out of memory', async () => {
    const r = await corral.invoke('exit-fail', { pad: 'x'.repeat(3.5 * 2 ** 20) }, { memoryMb: 16 });
    expect(r.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(r.exit_code).not.toBe(0);
  });

  it('hands a moved input back to the caller that gave it up, and leaves one it kept alone', async () => {
    const tool = corral.registry.resolve('echo');
    const request = (stdin: Uint8Array) => ({
      tool,
      stdin,
      args: ['echo'],
      env: {},
      mounts: [],
      timeoutMs: 5_000,
      outputLimitBytes: 2 ** 20,
      memoryLimitBytes: 64 * 2 ** 20,
      diskLimitBytes: 0,
    });
    const input = new TextEncoder().encode(JSON.stringify({ text: 'x'.repeat(100_000) }));
    const given = input.slice();
    const returned: Uint8Array[] = [];
    const moved = await corral.executor.execute({ ...request(given), stdinTransferable: true, returnStdin: (b) => returned.push(b) });
    expect(moved.exitCode).toBe(0);
    expect(given.byteLength).toBe(0); // moved to the worker
    expect(returned).toHaveLength(1);
    expect(returned[0]).toEqual(input);

    const kept = input.slice();
    const copied = await corral.executor.execute({ ...request(kept), returnStdin: (b) => returned.push(b) });
    expect(copied.exitCode).toBe(0);
    expect(kept).toEqual(input);
    expect(returned).toHaveLength(1);
  });

  it('refuses a call when its queue is full, with E_RESOURCE_EXHAUSTED (queue)', async () => {
    const pool = new WorkerPool({ size: 1, maxQueue: 2 });
    try {
      const hold = () => new Promise((resolve) => setTimeout(resolve, 200));
      const task = {
        timeoutMs: 5_000,
        onTimeout: () => new CorralError('E_RESOURCE_EXHAUSTED', 'timeout', { resource: 'time', timeout_ms: 5_000 }),
      };
      const running = [pool.run(hold, task), pool.run(hold, task), pool.run(hold, task)];
      await expect(pool.run(hold, task)).rejects.toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'queue' } });
      await Promise.all(running);
    } finally {
      await pool.close();
    }
  });

  it('starts every worker with default V8 limits, which a caller overrides one by one', async () => {
    expect(DEFAULT_RESOURCE_LIMITS).toEqual({ maxOldGenerationSizeMb: 1024, maxYoungGenerationSizeMb: 64, stackSizeMb: 4 });
    const limitsOf = async (worker: SandboxWorker) => {
      await new Promise((resolve) => worker.thread.once('online', resolve));
      const limits = worker.thread.resourceLimits;
      await worker.terminate();
      return limits;
    };
    expect(await limitsOf(new SandboxWorker({}))).toMatchObject(DEFAULT_RESOURCE_LIMITS);
    expect(await limitsOf(new SandboxWorker({ resourceLimits: { maxOldGenerationSizeMb: 300 } }))).toMatchObject({
      ...DEFAULT_RESOURCE_LIMITS,
      maxOldGenerationSizeMb: 300,
    });
  });

  it('cancels a queued call and a running one; the pool carries on', async () => {
    const pool = new WorkerPool({ size: 1 });
    try {
      const task = {
        timeoutMs: 5_000,
        onTimeout: () => new CorralError('E_RESOURCE_EXHAUSTED', 'timeout', { resource: 'time', timeout_ms: 5_000 }),
      };
      const running = new AbortController();
      const queued = new AbortController();
      const first = pool.run(() => new Promise(() => {}), { ...task, signal: running.signal });
      const second = pool.run(async () => 'never', { ...task, signal: queued.signal });
      queued.abort();
      await expect(second).rejects.toMatchObject({ code: 'E_CANCELLED', details: { cancelled: true } });
      running.abort();
      await expect(first).rejects.toMatchObject({ code: 'E_CANCELLED', details: { cancelled: true } });
      await expect(pool.run(async () => 'after', task)).resolves.toBe('after');
      expect(pool.workerCount).toBe(1);
    } finally {
      await pool.close();
    }
  });

  // Before: each call left an 'abort' listener on the caller's signal, holding its job (and its input) for as
  // long as the signal lived, and Node warned of a leak from the eleventh call on.
  it('one signal shared by many calls, one after another or at once: no listener left behind, no warning, still cancels', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const session = new AbortController();
      for (let i = 0; i < 200; i++) expect((await corral.invoke('echo', { i }, { signal: session.signal })).error).toBeNull();
      const batch = await Promise.all(Array.from({ length: 50 }, (_, i) => corral.invoke('echo', { i }, { signal: session.signal })));
      expect(batch.every((r) => r.error === null)).toBe(true);
      expect(getEventListeners(session.signal, 'abort').length).toBeLessThanOrEqual(1);
      // Still one signal for all: aborting it cancels every call still waiting on it.
      const slow = Array.from({ length: 12 }, () => corral.invoke('spin', {}, { signal: session.signal, timeoutMs: 30_000 }));
      setTimeout(() => session.abort('the agent stopped'), 300);
      for (const r of await Promise.all(slow)) expect(r.error?.code).toBe('E_CANCELLED');
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  }, 60_000);

  it('answers calls on a closed pool, running, queued or new, with E_CLOSED', async () => {
    const pool = new WorkerPool({ size: 1 });
    const task = {
      timeoutMs: 5_000,
      onTimeout: () => new CorralError('E_RESOURCE_EXHAUSTED', 'timeout', { resource: 'time', timeout_ms: 5_000 }),
    };
    // Both settle while close() runs: their handlers must be attached first. The running one was
    // E_UNEXPECTED_EXIT before (its terminated worker read as a crash).
    const running = expect(pool.run(() => new Promise(() => {}), task)).rejects.toMatchObject({
      code: 'E_CLOSED',
      details: { running: true },
    });
    const queued = expect(pool.run(async () => 'never', task)).rejects.toMatchObject({ code: 'E_CLOSED', details: { running: false } });
    await pool.close();
    await Promise.all([running, queued]);
    await expect(pool.run(async () => 'after', task)).rejects.toMatchObject({ code: 'E_CLOSED', message: /closed/ });
  });

  // Closing twice threw "Proxy has been released" from the second worker.terminate(): `void corral.close()`
  // twice ended the host process, and an executor option returning the local executor closed it twice.
  it('closes twice, at once or one after the other, as it closes once', async () => {
    const pool = new WorkerPool({ size: 1 });
    const worker = new SandboxWorker({});
    await Promise.all([pool.close(), pool.close(), worker.terminate(), worker.terminate()]);
    await pool.close();
    await worker.terminate();
    for (const executor of [undefined, (local: WorkerExecutor) => local]) {
      const c = await Corral.create({ size: 1, store: false, toolDirs: [FIXTURES], ...(executor ? { executor } : {}) });
      expect((await c.invoke('echo', { text: 'before close' })).ok).toBe(true);
      await Promise.all([c.close(), c.close()]);
      await c.close();
    }
  });

  // An executor whose close() closes its own host (a wrapper that closes everything) re-entered
  // close() before the first one was remembered, until the stack overflowed.
  it('an executor that closes its own host from its close(): close resolves once, and the workers stop', async () => {
    let corral: Corral | undefined;
    let entered = 0;
    const wrappers = [
      (local: WorkerExecutor) => ({ execute: local.execute.bind(local), close: () => (entered++, corral!.close()) }),
      (local: WorkerExecutor) => ({ execute: local.execute.bind(local), close: async () => (entered++, await corral!.close()) }),
    ];
    for (const executor of wrappers) {
      entered = 0;
      corral = await Corral.create({ size: 1, store: false, toolDirs: [FIXTURES], executor });
      expect((await corral.invoke('echo', { text: 'before close' })).ok).toBe(true);
      await corral.close();
      expect(entered).toBe(1);
      expect(corral.executor.pool.workerCount).toBe(0);
    }
  });

  it('an executor whose close() throws at once: the workers still stop, and close rejects with its error', async () => {
    const corral = await Corral.create({
      size: 1,
      store: false,
      toolDirs: [FIXTURES],
      executor: (local: WorkerExecutor) => ({
        execute: local.execute.bind(local),
        close: () => {
          throw new Error('remote gone');
        },
      }),
    });
    expect((await corral.invoke('echo', { text: 'x' })).ok).toBe(true);
    await expect(corral.close()).rejects.toThrow('remote gone');
    expect(corral.executor.pool.workerCount).toBe(0);
  });

  // A close() that never ended, or one that awaited something and then its Corral's close (which waits for
  // it), hung corral.close() for ever, and the snapshot store stayed open with it.
  it('an executor whose close never ends, or waits for its own Corral: close gives up after the grace, stops the workers, closes the store', async () => {
    const wrappers = {
      'never ends': () => () => new Promise<void>(() => {}),
      'awaits, then closes its Corral': (corral: () => Corral) => async () => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        await corral().close();
      },
    };
    await Promise.all([
      ...Object.entries(wrappers).map(async ([what, close]) => {
        let corral: Corral | undefined;
        corral = await Corral.create({
          size: 1,
          store: join(mkdtempSync(join(tmpdir(), 'corral-close-')), 'snapshots.db'),
          toolDirs: [FIXTURES],
          executor: (local: WorkerExecutor) => ({ execute: local.execute.bind(local), close: close(() => corral!) }),
        });
        expect((await corral.invoke('echo', { text: what })).ok).toBe(true);
        const started = performance.now();
        await expect(corral.close(), what).rejects.toMatchObject({
          code: 'E_CLOSED',
          details: { reason: 'executor_close_timeout', waited_ms: EXECUTOR_CLOSE_GRACE_MS },
        });
        expect(performance.now() - started).toBeGreaterThanOrEqual(EXECUTOR_CLOSE_GRACE_MS - 50);
        expect(corral.executor.pool.workerCount, what).toBe(0);
        await expect(corral.store!.listExecutions(), what).rejects.toMatchObject({ code: 'E_STORE' });
      }),
      // A create that fails closes what it made the same way, and still says why.
      expect(
        Corral.create({
          size: 1,
          store: tmpdir(),
          toolDirs: [FIXTURES],
          executor: (local: WorkerExecutor) => ({ execute: local.execute.bind(local), close: () => new Promise<void>(() => {}) }),
        }),
      ).rejects.toMatchObject({ code: 'E_STORE' }),
    ]);
  }, 30_000);

  it('a create that fails (a store path that is a folder) says why, even when the executor it made throws on close', async () => {
    const create = Corral.create({
      size: 1,
      store: tmpdir(),
      toolDirs: [FIXTURES],
      executor: (local: WorkerExecutor) => ({
        execute: local.execute.bind(local),
        close: () => {
          throw new Error('remote gone');
        },
      }),
    });
    await expect(create).rejects.toMatchObject({ code: 'E_STORE' });
  });

  // A stopped worker's calls said nothing and hung: its comlink proxies were not released with it.
  it("a stopped worker's calls fail at once", async () => {
    const worker = new SandboxWorker({});
    await worker.api.ping();
    await worker.terminate();
    for (const call of [worker.api.ping, worker.api.run, worker.api.prepare, worker.api.preload] as ((...args: unknown[]) => unknown)[]) {
      expect(() => call()).toThrow(/released/);
    }
  });

  // 22af399 kept the exit of a start function that caught its own unwinding and then trapped; one that
  // then returned went on to _start, which ran (here forever, until the time limit).
  it('a start function that exited and then returned: the call exits, and _start never runs', async () => {
    const result = await corral.exec(startExitsAndCatches(0, 'returns'), { timeoutMs: 3000 });
    expect([result.exitCode, result.error]).toEqual([0, undefined]);
  });
});
