/**
 * Nothing one call does reaches the next on the same worker. Earlier,
 * wasi:io/poll answered a component with a Promise (read as zero events), a
 * timer the guest dropped kept running after the call and then threw inside
 * the worker, failing the next caller's call; and a global inode counter let
 * a call see how many files earlier calls had made. One worker here, so
 * every call lands on the same one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral, ComponentCache } from '@corral/node';

const TOOLS = new URL('../fixtures/tools/', import.meta.url).pathname;
const PREVIEW1 = new URL('../fixtures/preview1/', import.meta.url).pathname;

interface Report {
  poll1: { errno: number; events: number; first: number };
  poll2: { errno: number; events: number; first: number; slept_ms: number };
  tmp_ino: number;
}

let corral: Corral;
beforeAll(async () => {
  corral = await Corral.create({
    toolDirs: [TOOLS, PREVIEW1],
    size: 1,
    store: false,
    cache: new ComponentCache(mkdtempSync(join(tmpdir(), 'corral-cache-'))),
  });
});
afterAll(() => corral?.close());

describe.each(['cross-call', 'p1-cross-call'])('%s', (tool) => {
  it('polls synchronously, leaves no timer behind, and sees only its own /tmp', async () => {
    const reports: Report[] = [];
    for (let i = 0; i < 3; i++) {
      const result = await corral.invoke(tool, { call: i });
      expect(result.error, `call ${i}`).toBeNull();
      reports.push(result.output as Report);
    }
    for (const r of reports) {
      // stdin is ready at once: one event, stdin's, not the 10 s timer's.
      expect(r.poll1).toEqual({ errno: 0, events: 1, first: 2 });
      // A timer alone fires, after its 20 ms.
      expect(r.poll2).toMatchObject({ errno: 0, events: 1, first: 3 });
      expect(r.poll2.slept_ms).toBeGreaterThanOrEqual(19);
    }
    // Every call's /tmp starts empty, inode numbers included.
    expect(new Set(reports.map((r) => r.tmp_ino)).size).toBe(1);
    // The dropped 10 s timers did not outlive their calls: the worker is the same and fine.
    expect(corral.executor.pool.workerCount).toBe(1);
    expect((await corral.invoke('echo', { after: tool })).output).toEqual({ after: tool });
  });
});

// Linear memory is reused from one call to the next (memory-pool.ts): a call
// must still find it as a fresh instance would, zeroed, and always of the
// same size, even after a call that grew it.
describe.each(['residue', 'p1-residue'])('%s', (tool) => {
  it('finds no byte of an earlier call in its heap or static data, and starts with the same memory every call', async () => {
    const outputs: Array<{ pages_at_start: number; pages_at_end: number; heap_dirty: number; bss_dirty: number }> = [];
    for (const input of [{}, {}, { grow: true }, {}, {}]) {
      const result = await corral.invoke(tool, input);
      expect(result.error, JSON.stringify(input)).toBeNull();
      outputs.push(result.output as (typeof outputs)[number]);
    }
    for (const out of outputs) expect(out).toMatchObject({ heap_dirty: 0, bss_dirty: 0 });
    // The third call grew its memory by 8 MiB; the calls after it start as the first did.
    expect(outputs[2]!.pages_at_end).toBeGreaterThan(outputs[2]!.pages_at_start + 100);
    expect(new Set(outputs.map((o) => o.pages_at_start)).size).toBe(1);
  });
});
