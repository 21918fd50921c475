// onAbort: one 'abort' listener per signal, whatever number of calls wait on it.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { onAbort } from '@corral/core';

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
});
