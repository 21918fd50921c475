/**
 * CappedSink keeps the head of stdout and the tail of stderr within a cap,
 * in one buffer: many tiny writes must cost neither an object each nor a
 * copy of the whole buffer each.
 */
import { describe, expect, it } from 'vitest';
import { CappedSink, OutputLimitExceeded } from '@corral/wasi/internal';

const bytes = (...n: number[]) => Uint8Array.from(n);

describe('CappedSink', () => {
  it('head: keeps what fits, then stops the tool at the first byte past the cap', () => {
    const sink = new CappedSink(5, 'head');
    sink.write(bytes(1, 2));
    sink.write(bytes(3, 4));
    expect(sink.truncated).toBe(false);
    expect(() => sink.write(bytes(5, 6, 7))).toThrow(OutputLimitExceeded);
    expect(sink.truncated).toBe(true);
    expect(Array.from(sink.bytes())).toEqual([1, 2, 3, 4, 5]);
    expect(() => sink.write(bytes(8))).toThrow(OutputLimitExceeded);
    expect(Array.from(sink.bytes())).toEqual([1, 2, 3, 4, 5]);
  });

  it('copies what it is given (a tool reuses its buffer)', () => {
    const sink = new CappedSink(8, 'head');
    const scratch = bytes(1, 2);
    sink.write(scratch);
    scratch[0] = 9;
    expect(Array.from(sink.bytes())).toEqual([1, 2]);
  });

  it('tail: matches a plain model over random writes, through every compaction', () => {
    let seed = 1;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (const limit of [1, 7, 64, 1000]) {
      const sink = new CappedSink(limit, 'tail');
      let model: number[] = [];
      let written = 0;
      for (let i = 0; i < 500; i++) {
        const chunk = Array.from({ length: next() % (limit * 2 + 2) }, () => next() % 256);
        sink.write(Uint8Array.from(chunk));
        written += chunk.length;
        model = [...model, ...chunk].slice(-limit);
        expect(Array.from(sink.bytes())).toEqual(model);
        expect(sink.truncated).toBe(written > limit);
      }
    }
  });

  it('a million one-byte writes cost neither a chunk object each nor a full copy each', () => {
    const one = bytes(120);
    const head = new CappedSink(2 ** 20, 'head');
    const tail = new CappedSink(2 ** 20, 'tail');
    const before = process.memoryUsage().heapUsed;
    const started = performance.now();
    for (let i = 0; i < 2 ** 20; i++) {
      head.write(one);
      tail.write(one);
    }
    for (let i = 0; i < 2 ** 20; i++) tail.write(one);
    // A chunk list held ~250 MB of heap here; the buffers are outside the heap.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(32 * 2 ** 20);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(head.bytes()).toHaveLength(2 ** 20);
    expect(() => head.write(one)).toThrow(OutputLimitExceeded);
    expect(tail.bytes()).toHaveLength(2 ** 20);
    expect(tail.truncated).toBe(true);
  });
});
