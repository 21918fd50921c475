/**
 * SandboxPool, the host-agnostic pool both hosts use (Node's worker_threads
 * pool and the browser's Web Worker pool), with fake workers: what a crash,
 * a timeout and prestart do, whatever a worker is.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { CorralError } from '@corral/core';
import { SandboxPool, type PoolWorker } from '@corral/wasi/host-kit';

class FakeWorker implements PoolWorker {
  static started = 0;
  readonly id = ++FakeWorker.started;
  alive = true;
  terminated = false;
  crash!: (error: CorralError) => void;
  readonly crashed = new Promise<CorralError>((resolve) => {
    this.crash = (error) => {
      this.alive = false;
      resolve(error);
    };
  });
  async terminate(): Promise<void> {
    this.alive = false;
    this.terminated = true;
  }
}

const task = {
  timeoutMs: 5_000,
  onTimeout: () => new CorralError('E_RESOURCE_EXHAUSTED', 'too slow', { resource: 'time', timeout_ms: 5_000 }),
};

describe('SandboxPool', () => {
  it('a worker that crashes fails only its own task; a replacement starts at once', async () => {
    const workers: FakeWorker[] = [];
    const pool = new SandboxPool(
      () => {
        const w = new FakeWorker();
        workers.push(w);
        return w;
      },
      { size: 2 },
    );
    const doomed = pool.run((w) => {
      setTimeout(() => w.crash(new CorralError('E_UNEXPECTED_EXIT', 'the worker died', { reason: 'worker_crashed' })), 20);
      return new Promise(() => {});
    }, task);
    const fine = pool.run((w) => new Promise((resolve) => setTimeout(() => resolve(`ok from ${w.id}`), 50)), task);
    await expect(doomed).rejects.toMatchObject({ code: 'E_UNEXPECTED_EXIT', message: 'the worker died' });
    await expect(fine).resolves.toMatch(/^ok from/);
    expect(workers).toHaveLength(3);
    expect(pool.workerCount).toBe(2);
    await expect(pool.run(async (w) => w.alive, task)).resolves.toBe(true);
    await pool.close();
    expect(workers.every((w) => !w.alive)).toBe(true);
  });

  it('a timeout rejects with the caller’s error and terminates the worker', async () => {
    const workers: FakeWorker[] = [];
    const pool = new SandboxPool(
      () => {
        const w = new FakeWorker();
        workers.push(w);
        return w;
      },
      { size: 1 },
    );
    await expect(pool.run(() => new Promise(() => {}), { ...task, timeoutMs: 30 })).rejects.toMatchObject({
      details: { resource: 'time' },
    });
    expect(workers[0]!.terminated).toBe(true);
    expect(workers).toHaveLength(2);
    await pool.close();
  });

  it('prestart starts idle workers up to the pool size, and calls use them', async () => {
    let started = 0;
    const pool = new SandboxPool(() => (started++, new FakeWorker()), { size: 2 });
    pool.prestart(5);
    expect(started).toBe(2);
    expect(pool.workerCount).toBe(2);
    await Promise.all([pool.run(async () => 1, task), pool.run(async () => 2, task)]);
    expect(started).toBe(2);
    await pool.close();
    pool.prestart();
    expect(started).toBe(2);
  });

  it('a worker keeps nothing of the calls it ran: 20,000 calls on one worker leave the heap as it was', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const pool = new SandboxPool(() => new FakeWorker(), { size: 1 });
    const calls = async (n: number) => {
      for (let i = 0; i < n; i++) await pool.run(async () => i, { ...task, signal: new AbortController().signal });
    };
    await calls(1_000);
    gc();
    const before = process.memoryUsage().heapUsed;
    await calls(20_000);
    gc();
    const grown = (process.memoryUsage().heapUsed - before) / 1024 / 1024;
    // Each call once chained a reaction to its worker's `crashed` promise, which settles only if the
    // worker dies, and the reaction kept the call's timer and listeners alive: ~2.6 KB a call, 50 MB here.
    expect(grown, `heap grew ${grown.toFixed(1)} MB`).toBeLessThan(8);
    await pool.close();
  });

  it('a worker whose crashed promise rejects (against the contract) fails its task, not the host', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let fail!: (reason: unknown) => void;
      const worker: PoolWorker = {
        alive: true,
        crashed: new Promise<CorralError>((_, reject) => (fail = reject)),
        terminate: async () => {},
      };
      const pool = new SandboxPool(() => worker, { size: 1 });
      const call = pool.run(
        () => {
          setTimeout(() => fail(new Error('the host broke it')), 10);
          return new Promise(() => {});
        },
        { ...task, timeoutMs: Number.POSITIVE_INFINITY },
      );
      await expect(call).rejects.toMatchObject({ code: 'E_UNEXPECTED_EXIT', message: expect.stringMatching(/the host broke it/) });
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
      await pool.close();
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
