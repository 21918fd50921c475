/**
 * InputBuffers (input-buffers.ts): the buffers call inputs are encoded into,
 * given back by the executor and used again, never carrying one call's
 * input into another's buffer.
 */
import { describe, expect, it } from 'vitest';
import { InputBuffers } from '../src/input-buffers.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/** `take(length)` filled with `byte`, as an input encoded into it would be. */
function written(buffers: InputBuffers, length: number, byte: number): Uint8Array {
  return buffers.take(length).fill(byte);
}

describe('InputBuffers', () => {
  it('gives a large input a buffer back from an earlier call, with nothing of that call past its own length', () => {
    const buffers = new InputBuffers();
    const first = written(buffers, 900 * KiB, 7);
    buffers.give(first);
    const second = buffers.take(700 * KiB);
    expect(second.buffer).toBe(first.buffer);
    expect(second.byteLength).toBe(700 * KiB);
    // The view is the call's own length; the bytes past it, once the first input, are zero.
    expect(new Uint8Array(second.buffer).subarray(700 * KiB).every((b) => b === 0)).toBe(true);
  });

  it('hands a buffer to one call at a time: two calls in flight get two buffers', () => {
    const buffers = new InputBuffers();
    buffers.give(written(buffers, MiB, 1));
    const a = buffers.take(MiB);
    const b = buffers.take(MiB);
    expect(a.buffer).not.toBe(b.buffer);
  });

  it('does not use a buffer more than twice the size asked, nor keep small or very large ones', () => {
    const buffers = new InputBuffers();
    const large = written(buffers, 4 * MiB, 3);
    buffers.give(large);
    expect(buffers.take(MiB).buffer).not.toBe(large.buffer);
    expect(buffers.take(4 * MiB).buffer).toBe(large.buffer);

    const small = buffers.take(1000);
    buffers.give(small);
    expect(buffers.take(1000).buffer).not.toBe(small.buffer);

    const huge = buffers.take(20 * MiB);
    buffers.give(huge);
    expect(buffers.take(20 * MiB).buffer).not.toBe(huge.buffer);
  });

  it('keeps at most four buffers, and ignores one given twice or already moved away', () => {
    const buffers = new InputBuffers();
    const taken = Array.from({ length: 6 }, () => written(buffers, 100 * KiB, 5));
    for (const bytes of taken) buffers.give(bytes);
    buffers.give(taken[0]!);
    const again = Array.from({ length: 6 }, () => buffers.take(100 * KiB).buffer);
    expect(again.filter((buffer) => taken.some((t) => t.buffer === buffer))).toHaveLength(4);

    const moved = buffers.take(100 * KiB);
    structuredClone(moved.buffer, { transfer: [moved.buffer] });
    buffers.give(moved);
    expect(buffers.take(100 * KiB).byteLength).toBe(100 * KiB);
  });
});
