/**
 * Workflow runs in the SQLite store (schema 4): the compare-and-set and the
 * event journal hold between real processes sharing one file, and a
 * schema-3 file, as the previous Corral wrote it, upgrades in place keeping
 * every record (its approvals read back as tool calls': null workflow fields).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { ApprovalRecord, WorkflowRunRecord } from '@corral/core';
import { SQLITE_APPLICATION_ID, SQLITE_SCHEMA_VERSION, SqliteStore } from '@corral/node';
import { approval, auditEvent, intent, outcome, stepApproval, workflowEvent, workflowRun } from '../../../test/store-conformance.js';

const ROOT = new URL('../../..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'corral-store-workflow-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** MIGRATIONS[0..2] of store-sqlite.ts exactly as schema 3 shipped them (frozen: the store checks its schema text). */
const V3_MIGRATIONS = [
  `CREATE TABLE decisions (
     id            TEXT PRIMARY KEY,
     time_ns       INTEGER NOT NULL,
     prompt_sha256 TEXT NOT NULL,
     output        TEXT NOT NULL,
     model         TEXT,
     run_id        TEXT
   ) STRICT;
   CREATE INDEX decisions_by_time ON decisions (time_ns, id);
   CREATE TABLE executions (
     id                TEXT PRIMARY KEY,
     decision_id       TEXT,
     tool              TEXT NOT NULL,
     version           TEXT,
     wasm_sha256       TEXT,
     input_sha256      TEXT,
     input_json        TEXT,
     intent_ns         INTEGER NOT NULL,
     -- NULL until the call ends: a row without a result reads as 'interrupted'.
     result_ns         INTEGER,
     exit_code         INTEGER,
     error_code        TEXT,
     error_message     TEXT,
     stdout_sha256     TEXT,
     stdout_head       TEXT,
     stdout_tail       TEXT,
     stderr_head       TEXT,
     stderr_tail       TEXT,
     duration_ms       REAL,
     peak_memory_bytes INTEGER
   ) STRICT;
   CREATE INDEX executions_by_time ON executions (intent_ns, id);
   CREATE INDEX executions_by_tool ON executions (tool, intent_ns);
   CREATE INDEX executions_by_decision ON executions (decision_id) WHERE decision_id IS NOT NULL;`,
  `CREATE TABLE audit (
     id          TEXT PRIMARY KEY,
     time_ns     INTEGER NOT NULL,
     action      TEXT NOT NULL,
     actor       TEXT NOT NULL,
     tool        TEXT,
     approval_id TEXT,
     detail_json TEXT NOT NULL
   ) STRICT;
   CREATE INDEX audit_by_time ON audit (time_ns, id);
   CREATE INDEX audit_by_tool ON audit (tool, time_ns);
   CREATE TABLE approvals (
     id            TEXT PRIMARY KEY,
     tool          TEXT NOT NULL,
     version       TEXT NOT NULL,
     input_sha256  TEXT NOT NULL,
     input_json    TEXT NOT NULL,
     bindings_json TEXT NOT NULL,
     caller_json   TEXT NOT NULL,
     folders_json  TEXT NOT NULL,
     requested_by  TEXT NOT NULL,
     requested_ns  INTEGER NOT NULL,
     expires_ns    INTEGER NOT NULL,
     max_scope     TEXT NOT NULL,
     status        TEXT NOT NULL,
     scope         TEXT,
     decided_by    TEXT,
     decided_ns    INTEGER,
     comment       TEXT,
     claimed_ns    INTEGER,
     execution_id  TEXT,
     revoked_by    TEXT,
     revoked_ns    INTEGER
   ) STRICT;
   CREATE INDEX approvals_by_status ON approvals (status, requested_ns);
   CREATE INDEX approvals_by_tool ON approvals (tool, requested_ns);`,
  `CREATE TABLE inputs (
     sha256 TEXT PRIMARY KEY,
     json   TEXT NOT NULL
   ) STRICT;
   ALTER TABLE executions ADD COLUMN input_kept INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE executions ADD COLUMN archived_ns INTEGER;
   ALTER TABLE decisions ADD COLUMN archived_ns INTEGER;
   INSERT INTO inputs (sha256, json)
     SELECT input_sha256, input_json FROM executions
     WHERE input_sha256 IS NOT NULL AND input_json IS NOT NULL ORDER BY intent_ns, id
     ON CONFLICT (sha256) DO NOTHING;
   UPDATE executions SET input_kept = 1, input_json = NULL
     WHERE input_json IS NOT NULL AND input_json = (SELECT json FROM inputs WHERE sha256 = executions.input_sha256);
   CREATE INDEX executions_by_input ON executions (input_sha256) WHERE input_kept = 1;`,
];

describe('SqliteStore workflow runs shared by processes', () => {
  it('processes racing to change the same runs and append the same events: exactly one wins each', async () => {
    const RUNS = 256;
    const PROCESSES = 4;
    // A process scheduled well before the others can change every run before they wake (seen under
    // load in CI): each race is checked in full, and run again (up to 3 times) until it was a race.
    for (let attempt = 1; ; attempt++) {
      const wonBy = await race(attempt);
      if (wonBy > 1 || attempt === 3) {
        // More than one process won something, or the race was not one.
        expect(wonBy).toBeGreaterThan(1);
        break;
      }
    }

    async function race(attempt: number): Promise<number> {
      const path = join(dir, `race-${attempt}.db`);
      const setup = await SqliteStore.open(path);
      const runs = Array.from({ length: RUNS }, (_, n) => workflowRun({ id: `race-${n}` }));
      for (const r of runs) await setup.createWorkflowRun(r);
      await setup.close();
      // Each process opens the store, waits for the same moment, then tries every run, one after the other, each
      // starting at a run of its own (so each is first somewhere, and meets the others' commits on the rest):
      // change it from 'running' (naming itself in outputs), and append its event 1.
      // The same moment is when all have opened the store: each says so with a file, then waits for
      // the others' (a fixed start time lost the race to a process that took longer to start, in CI).
      const ready = join(dir, `race-${attempt}-ready`);
      mkdirSync(ready);
      const script = `
      import { readdirSync, statSync, writeFileSync } from 'node:fs';
      import { SqliteStore, nowNs } from '@corral/node';
      const store = await SqliteStore.open(${JSON.stringify(path)});
      const ready = ${JSON.stringify(ready)};
      writeFileSync(ready + '/' + process.env.LANE, '');
      while (readdirSync(ready).length < ${PROCESSES}) await new Promise((r) => setTimeout(r, 1));
      // All start 300 ms after the last was ready, a moment every process reads alike.
      const startAt = Math.max(...readdirSync(ready).map((f) => statSync(ready + '/' + f).mtimeMs)) + 300;
      await new Promise((r) => setTimeout(r, startAt - Date.now()));
      const first = Number(process.env.LANE) * ${RUNS / PROCESSES};
      const ids = Array.from({ length: ${RUNS} }, (_, n) => 'race-' + ((first + n) % ${RUNS}));
      const won = [];
      const appended = [];
      let conflicts = 0;
      for (const id of ids) {
        const changed = await store.updateWorkflowRun(id, ['running'], { status: 'waiting', outputs: { winner: process.pid }, updated_ns: nowNs() });
        if (changed !== null) won.push(id);
        try {
          await store.appendWorkflowEvent({ run_id: id, seq: 1, at_ns: nowNs(), step: 'summary', kind: 'step_started', attempt: 1,
            tool: 'diff-summary', tool_version: '1.0.0', execution_id: null, approval_id: null, output: null, error: null, note: String(process.pid) });
          appended.push(id);
        } catch (err) {
          if (err.code === 'E_STORE' && err.details.reason === 'conflict') conflicts++;
          else throw err;
        }
      }
      await store.close();
      process.stdout.write(JSON.stringify({ pid: process.pid, won, appended, conflicts }));`;
      const run = (_: unknown, lane: number) =>
        promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
          cwd: ROOT,
          env: { ...process.env, LANE: String(lane) },
        });
      const results = (await Promise.all(Array.from({ length: PROCESSES }, run))).map(
        (r) => JSON.parse(r.stdout) as { pid: number; won: string[]; appended: string[]; conflicts: number },
      );
      const store = await SqliteStore.open(path);
      for (const r of runs) {
        const winners = results.filter((p) => p.won.includes(r.id));
        expect(winners, r.id).toHaveLength(1);
        expect(await store.getWorkflowRun(r.id)).toMatchObject({ status: 'waiting', outputs: { winner: winners[0]!.pid } });
        const appenders = results.filter((p) => p.appended.includes(r.id));
        expect(appenders, r.id).toHaveLength(1);
        expect((await store.listWorkflowEvents(r.id)).map((e) => [e.seq, e.note])).toEqual([[1, String(appenders[0]!.pid)]]);
      }
      expect(results.reduce((n, p) => n + p.conflicts, 0)).toBe(RUNS * (PROCESSES - 1));
      expect(await store.integrityCheck()).toEqual(['ok']);
      await store.close();
      return results.filter((p) => p.won.length > 0).length;
    }
  }, 120_000);
});

/** A schema-3 store with an execution (its input kept once), an audit event and two approvals, as the previous Corral left it. */
function v3Store(name: string): { path: string; approvals: ApprovalRecord[]; execution: ReturnType<typeof intent> } {
  const path = join(dir, name);
  const db = new Database(path);
  db.pragma('auto_vacuum = INCREMENTAL');
  db.pragma('journal_mode = WAL');
  for (const m of V3_MIGRATIONS) db.exec(m);
  db.pragma(`application_id = ${SQLITE_APPLICATION_ID}`);
  db.pragma('user_version = 3');
  const approvals = [
    approval({ requested_ns: '1764409626000000001' }),
    approval({
      requested_ns: '1764409626000000002',
      status: 'approved',
      scope: 'tool',
      decided_by: 'ada',
      decided_ns: '1764409626000000003',
    }),
  ];
  const columns = [
    'id',
    'tool',
    'version',
    'input_sha256',
    'input_json',
    'bindings_json',
    'caller_json',
    'folders_json',
    'requested_by',
    'requested_ns',
    'expires_ns',
    'max_scope',
    'status',
    'scope',
    'decided_by',
    'decided_ns',
    'comment',
    'claimed_ns',
    'execution_id',
    'revoked_by',
    'revoked_ns',
  ];
  const insert = db.prepare(`INSERT INTO approvals (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
  for (const a of approvals) {
    const row: Record<string, unknown> = {
      ...a,
      bindings_json: JSON.stringify(a.bindings),
      caller_json: JSON.stringify(a.caller),
      folders_json: JSON.stringify(a.folders),
    };
    insert.run(...columns.map((c) => (c.endsWith('_ns') && row[c] !== null ? BigInt(row[c] as string) : (row[c] ?? null))));
  }
  const e = auditEvent();
  db.prepare('INSERT INTO audit VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    e.id,
    BigInt(e.time_ns),
    e.action,
    e.actor,
    e.tool,
    e.approval_id,
    JSON.stringify(e.detail),
  );
  const execution = intent();
  db.prepare('INSERT INTO inputs (sha256, json) VALUES (?, ?)').run(execution.input_sha256, execution.input_json);
  db.prepare(
    `INSERT INTO executions (id, decision_id, tool, version, wasm_sha256, input_sha256, input_json, input_kept, intent_ns)
     VALUES (?, ?, ?, ?, ?, ?, NULL, 1, ?)`,
  ).run(execution.id, null, execution.tool, execution.version, execution.wasm_sha256, execution.input_sha256, BigInt(execution.intent_ns));
  db.close();
  return { path, approvals, execution };
}

describe('SQLite store schema 4 and on', () => {
  it('upgrades a schema-3 file in place: old approvals read back with null workflow fields, everything else the same', async () => {
    const { path, approvals, execution } = v3Store('v3.db');
    expect(SQLITE_SCHEMA_VERSION).toBe(5);
    await expect(SqliteStore.open(path, { readonly: true })).rejects.toMatchObject({
      code: 'E_STORE',
      message: /schema version 3; open it writable once/,
    });
    const store = await SqliteStore.open(path);
    for (const a of approvals) expect(await store.getApproval(a.id)).toEqual(a);
    expect(await store.listApprovals({ workflowRunId: null })).toEqual([approvals[1], approvals[0]]);
    expect(await store.listAudit()).toHaveLength(1);
    expect(await store.getExecution(execution.id)).toMatchObject({
      id: execution.id,
      input_json: execution.input_json,
      status: 'interrupted',
    });
    await store.finishExecution(execution.id, outcome());
    // What schema 4 brings works at once.
    const run: WorkflowRunRecord = workflowRun();
    await store.createWorkflowRun(run);
    await store.appendWorkflowEvent(workflowEvent(run.id, 1));
    const step = stepApproval(run.id);
    await store.createApproval(step);
    expect(await store.listApprovals({ workflowRunId: run.id })).toEqual([step]);
    expect(await store.integrityCheck()).toEqual(['ok']);
    await store.close();

    const db = new Database(path, { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(5);
    expect(db.prepare('SELECT workflow_run_id, workflow_step, prompt FROM approvals WHERE id = ?').get(approvals[0]!.id)).toEqual({
      workflow_run_id: null,
      workflow_step: null,
      prompt: null,
    });
    db.close();
    // Opened again (read-only too), it is simply a store of the current version.
    const again = await SqliteStore.open(path, { readonly: true });
    expect(await again.getWorkflowRun(run.id)).toEqual(run);
    expect(await again.getExecution(execution.id)).toMatchObject({ status: 'ok' });
    await again.close();
  });

  it('refuses a schema-3 file that gained a workflow table it did not make, without touching it', async () => {
    const { path } = v3Store('v3-foreign.db');
    const db = new Database(path);
    db.exec('CREATE TABLE workflow_runs (id TEXT)');
    db.close();
    await expect(SqliteStore.open(path)).rejects.toMatchObject({ code: 'E_STORE', message: /not Corral’s: table workflow_runs/ });
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(3);
    raw.close();
  });
});
