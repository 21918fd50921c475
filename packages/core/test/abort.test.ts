// onAbort: one 'abort' listener per signal, whatever number of calls wait on it.
import { execFile } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { promisify } from 'node:util';
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
});
