// onAbort: one 'abort' listener per signal, whatever number of calls wait on it.
import { execFile } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { promisify } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { onAbort } from '@corral/core';

const ROOT = new URL('../../..', import.meta.url).pathname;

describe('onAbort', () => {
  it('tells each waiting listener once, through one listener on the signal, and forgets removed ones', () => {
    const controller = new AbortController();
    const told: number[] = [];
    const removes = Array.from({ length: 100 }, (_, i) => onAbort(controller.signal, () => told.push(i)));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    for (const remove of removes.slice(0, 98)) remove();
    controller.abort();
    controller.abort();
    expect(told).toEqual([98, 99]);
  });

  it('calls a listener at once for a signal already aborted, and a later one on a fresh wait', () => {
    const told: string[] = [];
    onAbort(AbortSignal.abort(), () => told.push('already'));
    expect(told).toEqual(['already']);
    const controller = new AbortController();
    const remove = onAbort(controller.signal, () => told.push('first'));
    remove();
    remove();
    onAbort(controller.signal, () => told.push('second'));
    controller.abort();
    expect(told).toEqual(['already', 'second']);
  });

  // Each call's own 'abort' listener once: a waiter is told whatever another did, as a listener was.
  it('a waiter that throws does not keep the others from being told, and its error is still reported', async () => {
    // In a process of its own: the error is reported as an uncaught exception, as an 'abort' listener's is.
    const script = `
      import { onAbort } from '@corral/core';
      const told = [];
      const uncaught = [];
      process.on('uncaughtException', (e) => uncaught.push(e.message));
      const controller = new AbortController();
      onAbort(controller.signal, () => told.push(1));
      onAbort(controller.signal, () => { throw new Error('one call broke'); });
      onAbort(controller.signal, () => told.push(3));
      controller.abort();
      setTimeout(() => console.log(JSON.stringify({ told, uncaught })), 10);`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ told: [1, 3], uncaught: ['one call broke'] });
  });

  it('a waiter removed during the abort, by one told before it, is not called', () => {
    const controller = new AbortController();
    const told: string[] = [];
    let removeSecond = () => {};
    onAbort(controller.signal, () => {
      told.push('first');
      removeSecond();
    });
    removeSecond = onAbort(controller.signal, () => told.push('second'));
    onAbort(controller.signal, () => told.push('third'));
    controller.abort();
    expect(told).toEqual(['first', 'third']);
  });

  // Node keeps a timeout or AbortSignal.any() signal that has an 'abort' listener alive until it aborts:
  // a call given AbortSignal.any([session, ...]) kept its signal for the session's life once it was over.
  it('no waiter left, no listener on the signal: per-call timeout and any() signals are collected once their calls are over', async () => {
    const controller = new AbortController();
    const remove = onAbort(controller.signal, () => {});
    remove();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);

    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const session = new AbortController();
    const refs: WeakRef<AbortSignal>[] = [];
    for (let i = 0; i < 500; i++) {
      for (const signal of [AbortSignal.any([session.signal]), AbortSignal.timeout(3_600_000)]) {
        const removes = [onAbort(signal, () => {}), onAbort(signal, () => {})];
        for (const r of removes) r();
        refs.push(new WeakRef(signal));
      }
    }
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
    }
    expect(refs.filter((r) => r.deref() !== undefined).length).toBeLessThan(50);

    // And a signal whose waiters all left still tells the ones that come later.
    const told: string[] = [];
    const again = new AbortController();
    onAbort(again.signal, () => told.push('gone'))();
    onAbort(again.signal, () => told.push('later'));
    again.abort();
    expect(told).toEqual(['later']);
  });
});
