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
