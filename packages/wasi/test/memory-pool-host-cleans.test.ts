/**
 * A thread whose host zeroes spare memories after each call (a sandbox
 * worker: cleanSparesAfterEachCall) sets no timer per released memory, and a
 * spare still holding its last call's data is zeroed when the next call takes
 * it. Its own file: the setting is the thread's for the rest of its life.
 */
import { describe, expect, it } from 'vitest';
import { parse } from '@bytecodealliance/jco';
import { capModule } from '@corral/wasi';
import { cleanSpareMemories, cleanSparesAfterEachCall, importOwnMemory, MemoryPool } from '@corral/wasi/internal';

describe('spares cleaned by the host', () => {
  it('no timer zeroes a released memory; taking it again, or the host, does', async () => {
    cleanSparesAfterEachCall();
    const pooled = importOwnMemory(capModule(await parse('(module (memory (export "memory") 1))'), 64, 'test'))!;
    const pool = new MemoryPool(pooled);
    const memory = pool.acquire();
    new Uint8Array(memory.buffer).fill(7, 100, 200);
    pool.release(memory);
    await new Promise((r) => setTimeout(r, 5));
    // Still the last call's data: no timer ran for it.
    expect(new Uint8Array(memory.buffer)[150]).toBe(7);
    const again = pool.acquire();
    expect(again).toBe(memory);
    expect(new Uint8Array(again.buffer).some((byte) => byte !== 0)).toBe(false);

    new Uint8Array(again.buffer).fill(9, 0, 10);
    pool.release(again);
    cleanSpareMemories();
    expect(new Uint8Array(again.buffer).some((byte) => byte !== 0)).toBe(false);
  });
});
