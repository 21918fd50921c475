import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteStore, type SqliteStoreOptions, type Store } from '@corral/node';
import { describeStoreConformance, type StoreHarness } from '../../../test/store-conformance.js';

/** The conformance fixture over a real file; `options` choose where commits run. */
const sqliteFixture = (options: SqliteStoreOptions) => async (): Promise<StoreHarness> => {
  const dir = mkdtempSync(join(tmpdir(), 'corral-store-'));
  const path = join(dir, 'snapshots.db');
  let store: Store = await SqliteStore.open(path, options);
  return {
    store,
    reopen: async () => {
      await store.close();
      return (store = await SqliteStore.open(path, options));
    },
    // Another connection to the file, as a program that damages it would open.
    damage: async (what, key, fields) => {
      const db = new Database(path);
      try {
        const columns = Object.keys(fields);
        const set = columns.map((c) => `${c} = ?`).join(', ');
        const sql =
          what === 'workflow_run'
            ? `UPDATE workflow_runs SET ${set} WHERE id = ?`
            : `UPDATE workflow_events SET ${set} WHERE run_id = ? AND seq = ?`;
        const changes = db.prepare(sql).run(...Object.values(fields), ...(Array.isArray(key) ? key : [key])).changes;
        if (changes !== 1) throw new Error(`nothing to damage at ${String(key)}`);
      } finally {
        db.close();
      }
    },
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
};

// By default commits run on the store's commit thread, once it is up.
describeStoreConformance('SqliteStore', sqliteFixture({}));

describeStoreConformance('SqliteStore, every commit on the caller thread', sqliteFixture({ commits: 'inline' }));

describe('SqliteStore under another connection’s write lock', () => {
  it('a lone write does not hold the event loop while the lock is taken, and commits once it is free', async () => {
    // Before: a lone write committed on the caller's thread waited there, up to the 5 s busy
    // timeout, so nothing else in the host ran, not even the timer that would free the lock.
    const dir = mkdtempSync(join(tmpdir(), 'corral-store-locked-'));
    const path = join(dir, 'snapshots.db');
    const store = await SqliteStore.open(path);
    const other = new Database(path);
    try {
      await store.recordDecision({ id: 'd0', time_ns: '1', prompt_sha256: 'p', output: '{}', model: null, run_id: null });
      other.exec('BEGIN IMMEDIATE');
      const started = performance.now();
      let longestTick = 0;
      let last = started;
      const ticker = setInterval(() => {
        const now = performance.now();
        longestTick = Math.max(longestTick, now - last);
        last = now;
      }, 10);
      const write = store.recordDecision({ id: 'd1', time_ns: '2', prompt_sha256: 'p', output: '{}', model: null, run_id: null });
      const released = new Promise<number>((resolve) =>
        setTimeout(() => {
          other.exec('COMMIT');
          resolve(performance.now() - started);
        }, 300),
      );
      await write;
      clearInterval(ticker);
      expect(await released).toBeLessThan(2000); // the timer ran while the write waited
      expect(longestTick).toBeLessThan(1000);
      expect((await store.getDecision('d1'))?.output).toBe('{}');
    } finally {
      other.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteStore shared by processes', () => {
  it('three processes writing one new store at once lose nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-store-shared-'));
    const path = join(dir, 'snapshots.db');
    // Each opens the (not yet existing) store, then records 150 invocations on 3 lanes.
    const script = `
      import { SqliteStore, nowNs } from '@corral/node';
      const store = await SqliteStore.open(${JSON.stringify(path)});
      await Promise.all([0, 1, 2].map(async () => {
        for (let i = 0; i < 50; i++) {
          const id = crypto.randomUUID();
          await store.beginExecution({ id, decision_id: null, tool: 'p' + process.pid, version: '1.0.0', wasm_sha256: null,
            input_sha256: null, input_json: '{}', intent_ns: nowNs() });
          await store.finishExecution(id, { result_ns: nowNs(), exit_code: 0, error_code: null, error_message: null,
            stdout_sha256: null, stdout_head: '', stdout_tail: '', stderr_head: '', stderr_tail: '', duration_ms: 1, peak_memory_bytes: null });
        }
      }));
      await store.close();`;
    const ROOT = new URL('../../..', import.meta.url).pathname;
    const run = () => promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
    await Promise.all([run(), run(), run()]);
    const store = await SqliteStore.open(path);
    const all = await store.listExecutions();
    expect(all).toHaveLength(450);
    expect(new Set(all.map((e) => e.tool)).size).toBe(3);
    expect(all.every((e) => e.status === 'ok')).toBe(true);
    expect(await store.integrityCheck()).toEqual(['ok']);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
