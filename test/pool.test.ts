/**
 * The worker pool under concurrency: many callers, few workers, and calls
 * killed by their timeout mixed in. Every call must be answered exactly once
 * with its own result, and no worker may leak.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral, ComponentCache, WorkerPool, SandboxWorker, CorralError, DEFAULT_RESOURCE_LIMITS } from '@corral/node';

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
    expect(DEFAULT_RESOURCE_LIMITS).toEqual({ maxOldGenerationSizeMb: 1024, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 });
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
});
