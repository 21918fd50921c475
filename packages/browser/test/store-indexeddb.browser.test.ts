/**
 * IndexedDbStore in real Chromium (the vitest `browser` project): the shared
 * Store conformance suite, then what only this adapter has to get right.
 */
import { deleteDB, openDB } from 'idb';
import { describe, expect, it } from 'vitest';
import { IndexedDbStore, INDEXEDDB_SCHEMA_VERSION as SCHEMA_VERSION } from '@corral/browser';
import { approval, describeStoreConformance, intent, outcome, stepApproval, workflowRun } from '../../../test/store-conformance.js';

let serial = 0;
const freshName = () => `corral-test-${Date.now()}-${serial++}`;

describeStoreConformance('IndexedDbStore in Chromium', async () => {
  const name = freshName();
  let store = await IndexedDbStore.open(name);
  return {
    store,
    reopen: async () => {
      await store.close();
      store = await IndexedDbStore.open(name);
      return store;
    },
    // Another connection to the database, as another script of the origin could open.
    damage: async (what, key, fields) => {
      const raw = await openDB(name);
      try {
        const storeName = what === 'workflow_run' ? 'workflow_runs' : 'workflow_events';
        const row = await raw.get(storeName, key);
        if (!row) throw new Error(`nothing to damage at ${String(key)}`);
        await raw.put(storeName, { ...row, ...fields });
      } finally {
        raw.close();
      }
    },
    cleanup: async () => {
      await store.close();
      await deleteDB(name);
    },
  };
});

describe('IndexedDbStore', () => {
  it('upgrades a version-1 database (no audit trail, no approvals), keeping its records', async () => {
    const name = freshName();
    const i = intent();
    // What the previous Corral left: meta, decisions and executions, at version 1.
    const v1 = await openDB(name, 1, {
      upgrade(db, _old, _new, tx) {
        db.createObjectStore('meta');
        void tx.objectStore('meta').put('corral-snapshots', 'format');
        db.createObjectStore('decisions', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
        const executions = db.createObjectStore('executions', { keyPath: 'id' });
        executions.createIndex('by_time', ['t', 'id']);
        executions.createIndex('by_tool', ['tool', 't', 'id']);
        executions.createIndex('by_decision', ['decision_id', 't', 'id']);
      },
    });
    const row = {
      ...i,
      status: 'interrupted',
      result_ns: null,
      exit_code: null,
      error_code: null,
      error_message: null,
      stdout_sha256: null,
      stdout_head: null,
      stdout_tail: null,
      stderr_head: null,
      stderr_tail: null,
      duration_ms: null,
      peak_memory_bytes: null,
    };
    await v1.put('executions', { ...row, t: i.intent_ns.padStart(32, '0') });
    v1.close();
    const store = await IndexedDbStore.open(name);
    expect(SCHEMA_VERSION).toBe(4);
    // A row from before `ran_on` existed reads back with it null.
    expect(await store.getExecution(i.id)).toEqual({ ...row, ran_on: null });
    await store.finishExecution(i.id, outcome());
    expect((await store.getExecution(i.id))?.status).toBe('ok');
    const event = {
      id: 'a-1',
      time_ns: i.intent_ns,
      action: 'grant' as const,
      actor: 'ada',
      tool: null,
      approval_id: null,
      detail: { x: 1 },
    };
    await store.recordAudit(event);
    expect(await store.listAudit()).toEqual([event]);
    await store.close();
    const raw = await openDB(name);
    expect(raw.version).toBe(4);
    expect([...raw.objectStoreNames].sort()).toEqual([
      'approvals',
      'audit',
      'decisions',
      'executions',
      'inputs',
      'meta',
      'workflow_events',
      'workflow_runs',
    ]);
    raw.close();
    await deleteDB(name);
  });

  it('upgrades a version-2 database: inputs move to one record per hash, and every execution reads back the same', async () => {
    const name = freshName();
    const v2 = await openDB(name, 2, {
      upgrade(db, _old, _new, tx) {
        db.createObjectStore('meta');
        void tx.objectStore('meta').put('corral-snapshots', 'format');
        db.createObjectStore('decisions', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
        const executions = db.createObjectStore('executions', { keyPath: 'id' });
        executions.createIndex('by_time', ['t', 'id']);
        executions.createIndex('by_tool', ['tool', 't', 'id']);
        executions.createIndex('by_decision', ['decision_id', 't', 'id']);
        db.createObjectStore('audit', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
        db.createObjectStore('approvals', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
      },
    });
    const done = (over: Partial<ReturnType<typeof intent>>) => {
      const i = intent(over);
      return { ...i, status: 'ok', ...outcome() };
    };
    const text = JSON.stringify({ diff: 'x'.repeat(10_000) });
    const rows = [
      done({ input_sha256: '1'.repeat(64), input_json: text }),
      done({ input_sha256: '1'.repeat(64), input_json: text }),
      // Its text disagrees with its hash (Corral never wrote such a row): it keeps its own.
      done({ input_sha256: '1'.repeat(64), input_json: '{"other":1}' }),
      done({ input_sha256: null, input_json: '{"n":1}' }),
      done({ input_sha256: '2'.repeat(64), input_json: null }),
    ];
    for (const r of rows) await v2.put('executions', { ...r, t: r.intent_ns.padStart(32, '0') });
    v2.close();
    const store = await IndexedDbStore.open(name);
    for (const r of rows) expect(await store.getExecution(r.id)).toEqual(r);
    await store.close();
    const raw = await openDB(name);
    expect(raw.version).toBe(4);
    expect(await raw.getAll('inputs')).toEqual([{ sha256: '1'.repeat(64), json: text }]);
    raw.close();
    // Pruning every call that keeps the input drops it.
    const again = await IndexedDbStore.open(name);
    await again.prune({ keep: 0 });
    await again.close();
    const empty = await openDB(name);
    expect(await empty.count('inputs')).toBe(0);
    empty.close();
    await deleteDB(name);
  });

  it('upgrades a version-3 database: approvals gain null workflow fields, everything else reads back the same', async () => {
    const name = freshName();
    // What Corral left at schema 3 (MIGRATIONS[0..2], frozen).
    const v3 = await openDB(name, 3, {
      upgrade(db, _old, _new, tx) {
        db.createObjectStore('meta');
        void tx.objectStore('meta').put('corral-snapshots', 'format');
        db.createObjectStore('decisions', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
        const executions = db.createObjectStore('executions', { keyPath: 'id' });
        executions.createIndex('by_time', ['t', 'id']);
        executions.createIndex('by_tool', ['tool', 't', 'id']);
        executions.createIndex('by_decision', ['decision_id', 't', 'id']);
        db.createObjectStore('audit', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
        db.createObjectStore('approvals', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
        db.createObjectStore('inputs', { keyPath: 'sha256' });
        executions.createIndex('by_input', 'input_ref');
      },
    });
    // Approvals as schema 3 kept them: without workflow_run_id, workflow_step and prompt.
    const old = [approval({ requested_ns: '1764409626000000001' }), approval({ requested_ns: '1764409626000000002', status: 'approved' })];
    for (const a of old) {
      const { workflow_run_id: _r, workflow_step: _s, prompt: _p, ...v3Row } = a;
      await v3.put('approvals', { ...v3Row, t: a.requested_ns.padStart(32, '0') });
    }
    const i = intent();
    await v3.put('executions', { ...i, status: 'ok', ...outcome(), t: i.intent_ns.padStart(32, '0') });
    v3.close();
    const store = await IndexedDbStore.open(name);
    for (const a of old) expect(await store.getApproval(a.id)).toEqual(a);
    expect(await store.listApprovals({ workflowRunId: null })).toEqual([old[1], old[0]]);
    expect(await store.getExecution(i.id)).toEqual({ ...i, status: 'ok', ...outcome() });
    // And it keeps what schema 4 brought.
    const run = workflowRun();
    await store.createWorkflowRun(run);
    const step = stepApproval(run.id);
    await store.createApproval(step);
    expect(await store.listApprovals({ workflowRunId: run.id })).toEqual([step]);
    await store.close();
    const raw = await openDB(name);
    expect(raw.version).toBe(4);
    expect(await raw.get('approvals', old[0]!.id)).toMatchObject({ workflow_run_id: null, workflow_step: null, prompt: null });
    raw.close();
    await deleteDB(name);
  });

  it('refuses a database of the same name that another app keeps, and leaves it alone', async () => {
    const name = freshName();
    const other = await openDB(name, 1, { upgrade: (db) => void db.createObjectStore('todos') });
    await other.put('todos', 'milk', 'first');
    other.close();
    await expect(IndexedDbStore.open(name)).rejects.toMatchObject({ code: 'E_STORE', message: /not Corral|other than Corral.*todos/ });
    const again = await openDB(name);
    expect([...again.objectStoreNames]).toEqual(['todos']);
    expect(await again.get('todos', 'first')).toBe('milk');
    again.close();
    await deleteDB(name);
  });

  it('refuses a database from a newer Corral, naming both versions, without touching it', async () => {
    const name = freshName();
    const store = await IndexedDbStore.open(name);
    const i = intent();
    await store.beginExecution(i);
    await store.close();
    // What a future Corral would leave: our stores, one version up.
    const future = await openDB(name, SCHEMA_VERSION + 1, { upgrade: (db) => void db.createObjectStore('future') });
    future.close();
    await expect(IndexedDbStore.open(name)).rejects.toMatchObject({
      code: 'E_STORE',
      message: new RegExp(`newer Corral \\(schema version ${SCHEMA_VERSION + 1}; .*up to ${SCHEMA_VERSION}\\)`),
      details: { schema_version: SCHEMA_VERSION + 1, supported_version: SCHEMA_VERSION },
    });
    const raw = await openDB(name);
    expect(raw.version).toBe(SCHEMA_VERSION + 1);
    expect((await raw.get('executions', i.id))?.id).toBe(i.id);
    raw.close();
    await deleteDB(name);
  });

  it('steps aside when the database is deleted or upgraded elsewhere, failing later calls with E_STORE', async () => {
    const name = freshName();
    const store = await IndexedDbStore.open(name);
    await store.beginExecution(intent());
    await deleteDB(name); // would wait forever if the store kept its connection open
    await expect(store.beginExecution(intent())).rejects.toMatchObject({ code: 'E_STORE', message: /newer Corral|closed/ });
    await store.close();
  });

  it('rejects a time that is not whole nanoseconds, alone, without failing the writes beside it', async () => {
    const name = freshName();
    const store = await IndexedDbStore.open(name);
    const good = intent();
    const settled = await Promise.allSettled([store.beginExecution({ ...intent(), intent_ns: '1.5e18' }), store.beginExecution(good)]);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'fulfilled']);
    await store.finishExecution(good.id, outcome());
    expect((await store.getExecution(good.id))?.status).toBe('ok');
    await store.close();
    await deleteDB(name);
  });
});
