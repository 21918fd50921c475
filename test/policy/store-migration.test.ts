/**
 * Schema version 2 of the SQLite store (audit trail, approvals): a version-1
 * file, as the previous Corral wrote it, upgrades in place and keeps every
 * record; a newer one is still refused untouched.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SQLITE_APPLICATION_ID, SQLITE_SCHEMA_VERSION, SqliteStore } from '@corral/node';

const ROOT = new URL('../..', import.meta.url).pathname;

/** Version 1 exactly as Corral 0.1 created it (MIGRATIONS[0] in store-sqlite.ts, frozen). */
const V1 = `CREATE TABLE decisions (
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
   CREATE INDEX executions_by_decision ON executions (decision_id) WHERE decision_id IS NOT NULL;`;

function v1Store(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'corral-migrate-')), 'snapshots.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec(V1);
  db.pragma(`application_id = ${SQLITE_APPLICATION_ID}`);
  db.pragma('user_version = 1');
  db.prepare('INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?)').run(
    'dec-1',
    1_764_409_626_000_000_001n,
    'd'.repeat(64),
    'call it',
    'm',
    null,
  );
  const insert = db.prepare(
    `INSERT INTO executions (id, decision_id, tool, version, wasm_sha256, input_sha256, input_json, intent_ns, result_ns, exit_code,
       error_code, error_message, stdout_sha256, stdout_head, stdout_tail, stderr_head, stderr_tail, duration_ms, peak_memory_bytes)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  insert.run(
    'ok-1',
    'dec-1',
    'diff-summary',
    '1.0.0',
    'a'.repeat(64),
    'b'.repeat(64),
    '{"diff":""}',
    1_764_409_626_000_000_002n,
    1_764_409_626_000_000_009n,
    0,
    null,
    null,
    'c'.repeat(64),
    '{}',
    '{}',
    '',
    '',
    2.5,
    1_179_648,
  );
  insert.run(
    'open-1',
    null,
    'file-stats',
    '1.0.0',
    null,
    null,
    null,
    1_764_409_626_000_000_003n,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
    null,
  );
  db.close();
  return path;
}

describe('SQLite store schema 2', () => {
  it('upgrades a version-1 file in place, keeping its decisions and executions, and then keeps audit events and approvals', async () => {
    const path = v1Store();
    expect(SQLITE_SCHEMA_VERSION).toBe(5);
    const store = await SqliteStore.open(path);
    expect(await store.getDecision('dec-1')).toMatchObject({ output: 'call it', time_ns: '1764409626000000001' });
    expect(await store.getExecution('ok-1')).toMatchObject({
      status: 'ok',
      tool: 'diff-summary',
      duration_ms: 2.5,
      intent_ns: '1764409626000000002',
    });
    expect(await store.getExecution('open-1')).toMatchObject({ status: 'interrupted' });
    expect((await store.listExecutions()).map((e) => e.id)).toEqual(['open-1', 'ok-1']);
    await store.recordAudit({
      id: 'a-1',
      time_ns: '1764409626000000010',
      action: 'grant',
      actor: 'ada',
      tool: 'file-stats',
      approval_id: null,
      detail: {},
    });
    expect(await store.listAudit()).toHaveLength(1);
    expect(await store.integrityCheck()).toEqual(['ok']);
    await store.close();

    const db = new Database(path, { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION);
    expect(db.pragma('application_id', { simple: true })).toBe(SQLITE_APPLICATION_ID);
    const tables = (db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map(
      (t) => t.name,
    );
    expect(tables).toEqual(['approvals', 'audit', 'decisions', 'executions', 'inputs', 'workflow_events', 'workflow_runs']);
    db.close();
    // Opened again, it is simply a store of the current version.
    const again = await SqliteStore.open(path);
    expect(await again.listAudit()).toHaveLength(1);
    await again.close();
  });

  it('a read-only open of a version-1 file says to open it writable once; the CLI upgrades it when it reads', async () => {
    const path = v1Store();
    await expect(SqliteStore.open(path, { readonly: true })).rejects.toMatchObject({
      code: 'E_STORE',
      message: /schema version 1; open it writable once/,
    });
    const r = await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'packages/node/bin/corral.js'), 'snapshots', 'list', '--json', '--store', path],
      { cwd: ROOT },
    );
    expect((JSON.parse(r.stdout) as { id: string }[]).map((e) => e.id)).toEqual(['open-1', 'ok-1']);
    const audit = await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'packages/node/bin/corral.js'), 'audit', '--json', '--store', path],
      { cwd: ROOT },
    );
    expect(JSON.parse(audit.stdout)).toEqual([]);
  });

  it('refuses a store from a newer Corral (one schema version past this one) without touching it', async () => {
    const path = v1Store();
    await (await SqliteStore.open(path)).close();
    const db = new Database(path);
    db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION + 1}`);
    db.close();
    const before = readFileSync(path);
    await expect(SqliteStore.open(path)).rejects.toMatchObject({
      code: 'E_STORE',
      message: new RegExp(
        `newer Corral \\(schema version ${SQLITE_SCHEMA_VERSION + 1}; this Corral understands up to ${SQLITE_SCHEMA_VERSION}\\)`,
      ),
    });
    expect(readFileSync(path)).toEqual(before);
  });

  it('refuses a version-1 file that has gained a table it did not make', async () => {
    const path = v1Store();
    const db = new Database(path);
    db.exec('CREATE TABLE audit (x TEXT)');
    db.close();
    await expect(SqliteStore.open(path)).rejects.toMatchObject({ code: 'E_STORE', message: /not Corral’s: table audit/ });
  });
});
