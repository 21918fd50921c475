/**
 * Issue 12, item 7 (store size), with real SQLite files: inputs kept once per
 * hash, prune giving the space back, the size cap, `--no-record-input`, and
 * the schema 2 → 3 upgrade of a store the previous Corral wrote.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { Corral, MemoryStore, SQLITE_APPLICATION_ID, SqliteStore, nowNs, type ExecutionIntent, type ExecutionOutcome } from '@corral/node';

const ROOT = new URL('../../..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const FIXTURES = join(ROOT, 'test/fixtures/tools');
const dir = mkdtempSync(join(tmpdir(), 'corral-store-size-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const MB = 1024 * 1024;

async function corral(args: string[], env: Record<string, string> = {}) {
  return promisify(execFile)(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, CORRAL_STORE: join(dir, 'never-the-default.db'), ...env },
    maxBuffer: 64 << 20,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

/** What a store takes on disk: the file and its WAL. */
function onDisk(path: string): number {
  const size = (p: string) => {
    try {
      return statSync(p).size;
    } catch {
      return 0;
    }
  };
  return size(path) + size(`${path}-wal`);
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A call's intent as the runtime writes it: the input's JSON text and its real SHA-256. */
function intentFor(json: string | null, over: Partial<ExecutionIntent> = {}): ExecutionIntent {
  return {
    id: crypto.randomUUID(),
    decision_id: null,
    tool: 'diff-summary',
    version: '1.0.0',
    wasm_sha256: 'a'.repeat(64),
    input_sha256: json === null ? null : sha256(json),
    input_json: json,
    intent_ns: nowNs(),
    ...over,
  };
}

function outcome(): ExecutionOutcome {
  return {
    result_ns: nowNs(),
    exit_code: 0,
    error_code: null,
    error_message: null,
    stdout_sha256: 'c'.repeat(64),
    stdout_head: '{"files":[]}',
    stdout_tail: '{"files":[]}',
    stderr_head: '',
    stderr_tail: '',
    duration_ms: 1,
    peak_memory_bytes: null,
  };
}

/** A diff-like input of about `bytes` bytes as JSON text. */
function bigInput(bytes: number, seed = 'x'): string {
  const line = `+${seed.repeat(99)}\n`;
  return JSON.stringify({ diff: `--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n${line.repeat(Math.ceil(bytes / line.length))}` });
}

async function record(store: SqliteStore, json: string | null, over: Partial<ExecutionIntent> = {}, finish = true): Promise<string> {
  const i = intentFor(json, over);
  await store.beginExecution(i);
  if (finish) await store.finishExecution(i.id, outcome());
  return i.id;
}

describe('store size (issue 12)', () => {
  // Found on main: one 50 MB input grew snapshots.db from 5 MB to 110 MB (kept with the intent, then
  // rewritten whole by the result's UPDATE), and `snapshots prune --keep 0` left it at 110 MB.
  it('a 50 MB input takes its size once, a second call with it nothing, and prune --keep 0 returns the file to its empty size', async () => {
    const path = join(dir, 'fifty.db');
    const store = await SqliteStore.open(path);
    await record(store, '{"diff":""}');
    await store.close();
    const empty = onDisk(path);

    const input = bigInput(50 * MB);
    const again = await SqliteStore.open(path);
    const first = await record(again, input);
    await again.close();
    const withInput = onDisk(path);
    expect(withInput).toBeLessThan(empty + input.length * 1.1);

    // The same input again is kept once; a call without its input only by hash.
    const other = await SqliteStore.open(path);
    const second = await record(other, input);
    const hashOnly = await record(other, null, { input_sha256: sha256(input) });
    expect((await other.getExecution(second))?.input_json).toBe(input);
    expect(await other.getExecution(hashOnly)).toMatchObject({ input_json: null, input_sha256: sha256(input) });
    await other.close();
    expect(onDisk(path)).toBeLessThan(empty + input.length * 1.1);

    const r = await corral(['snapshots', 'prune', '--keep', '0', '--store', path, '--archive', join(dir, 'fifty.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Removed 4 executions');
    const pruned = onDisk(path);
    expect(pruned).toBeLessThanOrEqual(empty * 1.1);
    // The archive has the input in full, once per call that kept it.
    const archived = readFileSync(join(dir, 'fifty.jsonl'), 'utf8').trim().split('\n');
    expect(archived.map((l) => (JSON.parse(l) as { id: string; input_json: string | null }).id)).toContain(first);
    console.log(`store size: empty ${empty} B, after a 50 MB input ${withInput} B, after prune --keep 0 ${pruned} B`);

    const reopened = await SqliteStore.open(path);
    expect(await reopened.integrityCheck()).toEqual(['ok']);
    await reopened.close();
  }, 60_000);

  it('a size cap removes archived records first, then the oldest finished, then interrupted ones, never a call still running', async () => {
    const path = join(dir, 'cap.db');
    // The cap counts the schema's own pages too (each table and index takes one in an empty store, and schema 4 added
    // the workflow tables): the records get the room they had when this test was written, 1 MB less schema 3's 84 KiB.
    const empty = await SqliteStore.open(join(dir, 'cap-empty.db'));
    const cap = 1 * MB - 84 * 1024 + (await empty.usedBytes());
    await empty.close();
    // Written by another process, which stopped mid-call: interrupted, and the oldest.
    const other = await SqliteStore.open(path);
    const stranded = await record(other, bigInput(150 * 1024, 's'), {}, false);
    await other.close();

    const progress: string[] = [];
    const store = await SqliteStore.open(path, { maxBytes: cap, onProgress: (m) => progress.push(m) });
    const a = await record(store, bigInput(200 * 1024, 'a'));
    const b = await record(store, bigInput(200 * 1024, 'b'));
    expect(await store.markArchived([b])).toBe(1);
    const running = intentFor(bigInput(200 * 1024, 'r'));
    await store.beginExecution(running);
    expect(progress).toEqual([]);
    // Over the cap: the archived record goes before the older one that is not.
    const d = await record(store, bigInput(250 * 1024, 'd'));
    expect(await store.getExecution(b)).toBeNull();
    expect(await store.getExecution(a)).not.toBeNull();
    expect((await store.getExecution(d))?.input_json).toBe(bigInput(250 * 1024, 'd'));
    expect(progress).toEqual([
      expect.stringMatching(new RegExp(`over its size cap \\(${(cap / MB).toFixed(1)} MB\\): removed the 1 oldest record, `)),
    ]);
    // Then the oldest finished one; the interrupted one, older still, stays while finished ones remain.
    await record(store, bigInput(300 * 1024, 'e'));
    expect(await store.getExecution(a)).toBeNull();
    expect(await store.getExecution(stranded)).not.toBeNull();
    expect(await store.getExecution(running.id)).toMatchObject({ status: 'interrupted' });
    // A call much bigger than the rest: every finished record goes, then the interrupted one, never the running call.
    const x = await record(store, bigInput(700 * 1024, 'x'));
    expect(await store.getExecution(stranded)).toBeNull();
    expect(await store.getExecution(running.id)).not.toBeNull();
    expect((await store.getExecution(x))?.input_json).toBe(bigInput(700 * 1024, 'x'));
    await store.finishExecution(running.id, outcome());
    expect(await store.usedBytes()).toBeLessThanOrEqual(cap);
    // An input bigger than the cap itself is recorded by its hash only.
    const huge = bigInput(2 * MB, 'h');
    const hugeId = await record(store, huge);
    expect(await store.getExecution(hugeId)).toMatchObject({ input_sha256: sha256(huge), input_json: null, status: 'ok' });
    expect(progress.every((m) => /over its size cap/.test(m))).toBe(true);
    await store.close();
    expect(onDisk(path)).toBeLessThanOrEqual(cap + 0.2 * MB);
  }, 60_000);

  it('corral run --no-record-input keeps the hash, not the input, and replay says the input was not recorded', async () => {
    const path = join(dir, 'no-input.db');
    const r = await corral([
      'run',
      'echo',
      '--tools',
      FIXTURES,
      '--input',
      '{"secret":"s3cr3t"}',
      '--no-record-input',
      '--json',
      '--store',
      path,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const id = (JSON.parse(r.stdout) as { snapshot: { id: string } }).snapshot.id;
    const show = await corral(['snapshots', 'show', id, '--json', '--store', path]);
    expect(JSON.parse(show.stdout)).toMatchObject({ input_json: null, input_sha256: sha256('{"secret":"s3cr3t"}') });
    // The input is in no table (echo's output, which is the input, is still kept as stdout's head and tail).
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT count(*) AS n FROM inputs').get()).toEqual({ n: 0 });
    expect(db.prepare('SELECT input_json FROM executions').all()).toEqual([{ input_json: null }]);
    db.close();
    const replay = await corral(['replay', id, '--tools', FIXTURES, '--store', path]);
    expect(replay.code).toBe(1);
    expect(replay.stderr).toMatch(/recorded without its input \(only its hash\), so it cannot be replayed/);
  });

  it('corral run --store-max-mb caps the store, says what it removed, and refuses a bad size as misuse', async () => {
    const path = join(dir, 'cli-cap.db');
    const input = JSON.stringify({ pad: 'p'.repeat(400 * 1024) });
    const ids: string[] = [];
    let stderr = '';
    for (let n = 0; n < 4; n++) {
      const file = join(dir, `cap-input-${n}.json`);
      writeFileSync(file, input.replace('"p', `"${n}`));
      const r = await corral(['run', 'echo', '--tools', FIXTURES, '--input-file', file, '--json', '--store', path, '--store-max-mb', '1']);
      expect(r.code, r.stderr).toBe(0);
      ids.push((JSON.parse(r.stdout) as { snapshot: { id: string } }).snapshot.id);
      stderr += r.stderr;
    }
    expect(stderr).toMatch(/over its size cap \(1\.0 MB\): removed the \d+ oldest records?/);
    const store = await SqliteStore.open(path);
    expect(await store.getExecution(ids[0]!)).toBeNull();
    expect(await store.getExecution(ids[3]!)).not.toBeNull();
    await store.close();
    expect(onDisk(path)).toBeLessThanOrEqual(1.2 * MB);
    // Through the environment too, as for serve and mcp.
    const viaEnv = await corral(['run', 'echo', '--tools', FIXTURES, '--input', '{}', '--store', path], { CORRAL_STORE_MAX_MB: 'lots' });
    expect(viaEnv.code).toBe(2);
    expect(viaEnv.stderr).toContain('bad CORRAL_STORE_MAX_MB "lots"');
    for (const bad of ['0', '-1', 'x']) {
      const r = await corral(['run', 'echo', '--tools', FIXTURES, '--input', '{}', '--store', path, '--store-max-mb', bad]);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toContain('--store-max-mb');
    }
    expect((await corral(['run', 'echo', '--no-store', '--store-max-mb', '5'])).code).toBe(2);
  }, 60_000);

  it('refuses a cap that is not a positive size, and one given for a Store Corral did not open', async () => {
    const refused = (options: object, option: string) =>
      expect(Corral.create(options)).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION', details: { option } });
    await refused({ store: false, storeMaxBytes: 0 }, 'storeMaxBytes');
    await refused({ store: false, storeMaxBytes: 1.5 }, 'storeMaxBytes');
    await refused({ store: false, onStoreProgress: 'stderr' }, 'onStoreProgress');
    await refused({ store: new MemoryStore(), storeMaxBytes: MB }, 'storeMaxBytes');
    await expect(SqliteStore.open(join(dir, 'bad-cap.db'), { maxBytes: -1 })).rejects.toMatchObject({
      code: 'E_INPUT_VALIDATION',
      details: { option: 'maxBytes' },
    });
  });

  it('snapshots export --output marks what it wrote archived', async () => {
    const path = join(dir, 'export.db');
    const store = await SqliteStore.open(path);
    const id = await record(store, '{"diff":""}');
    await store.close();
    const r = await corral(['snapshots', 'export', '--output', join(dir, 'export.jsonl'), '--store', path]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('exported 1 record to');
    expect(r.stderr).toContain('(marked archived)');
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT archived_ns IS NOT NULL AS archived FROM executions WHERE id = ?').get(id)).toEqual({ archived: 1 });
    db.close();
  });
});

/** Schema 2 exactly as the previous Corral created it (MIGRATIONS[0] and [1] in store-sqlite.ts, frozen). */
const V2 = `CREATE TABLE decisions (
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
   CREATE INDEX executions_by_decision ON executions (decision_id) WHERE decision_id IS NOT NULL;
CREATE TABLE audit (
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
   CREATE INDEX approvals_by_tool ON approvals (tool, requested_ns);`;

const COLUMNS = [
  'id',
  'decision_id',
  'tool',
  'version',
  'wasm_sha256',
  'input_sha256',
  'input_json',
  'intent_ns',
  'result_ns',
  'exit_code',
  'error_code',
  'error_message',
  'stdout_sha256',
  'stdout_head',
  'stdout_tail',
  'stderr_head',
  'stderr_tail',
  'duration_ms',
  'peak_memory_bytes',
] as const;

describe('SQLite store schema 3', () => {
  it('upgrades a version-2 file: inputs move to one row per hash, old snapshots read back the same, replay still works', async () => {
    // A real call, recorded by this Corral, is copied into a version-2 file as the previous Corral kept it.
    const fresh = join(dir, 'fresh.db');
    const ran = await corral(['run', 'echo', '--tools', FIXTURES, '--input', '{"say":"hi"}', '--json', '--store', fresh]);
    expect(ran.code, ran.stderr).toBe(0);
    const id = (JSON.parse(ran.stdout) as { snapshot: { id: string } }).snapshot.id;
    const source = await SqliteStore.open(fresh);
    const real = (await source.getExecution(id))!;
    await source.close();

    const path = join(dir, 'v2.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.exec(V2);
    db.pragma(`application_id = ${SQLITE_APPLICATION_ID}`);
    db.pragma('user_version = 2');
    const insert = db.prepare(`INSERT INTO executions (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`);
    const row = (e: object) =>
      COLUMNS.map((c) => {
        const v = (e as Record<string, unknown>)[c] ?? null;
        return c.endsWith('_ns') && v !== null ? BigInt(v as string) : v;
      });
    insert.run(...row(real));
    // Another call with the same input, one whose text disagrees with its hash (Corral never wrote such a row),
    // one with no hash, and a large one (over the size that gets a progress line) that shares nothing.
    const twin = { ...real, id: 'twin', intent_ns: (BigInt(real.intent_ns) + 1n).toString() };
    const odd = { ...real, id: 'odd', input_json: '{"say":"other"}', intent_ns: (BigInt(real.intent_ns) + 2n).toString() };
    const unhashed = { ...real, id: 'unhashed', input_sha256: null, input_json: '{"n":1}' };
    const big = bigInput(20 * MB, 'b');
    const large = { ...real, id: 'large', input_sha256: sha256(big), input_json: big, intent_ns: (BigInt(real.intent_ns) + 3n).toString() };
    for (const e of [twin, odd, unhashed, large]) insert.run(...row(e));
    // Free pages the old layout never gave back.
    insert.run(...row({ ...real, id: 'gone', input_sha256: 'f'.repeat(64), input_json: bigInput(5 * MB, 'g') }));
    db.prepare("DELETE FROM executions WHERE id = 'gone'").run();
    db.prepare('INSERT INTO audit VALUES (?, ?, ?, ?, ?, ?, ?)').run('a-1', 1n, 'grant', 'ada', 'echo', null, '{}');
    db.pragma('wal_checkpoint(TRUNCATE)');
    expect(db.pragma('auto_vacuum', { simple: true })).toBe(0);
    db.close();
    const before = onDisk(path);

    const progress: string[] = [];
    const store = await SqliteStore.open(path, { onProgress: (m) => progress.push(m) });
    expect(progress).toEqual([expect.stringMatching(/^compacting the snapshot store .*v2\.db \(\d+\.\d MB\) once, for schema 3/)]);
    for (const e of [real, twin, odd, unhashed, large]) expect(await store.getExecution(e.id)).toEqual(e);
    expect(await store.listAudit()).toHaveLength(1);
    expect(await store.integrityCheck()).toEqual(['ok']);
    await store.close();
    expect(onDisk(path)).toBeLessThan(before - 4 * MB);

    const after = new Database(path, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(5); // and on to schemas 4 (workflows) and 5 (ran_on) in the same open
    expect(after.pragma('auto_vacuum', { simple: true })).toBe(2);
    // One row per hash; the odd row keeps its own text, as does the one without a hash.
    expect(after.prepare('SELECT count(*) AS n FROM inputs').get()).toEqual({ n: 2 });
    expect(after.prepare('SELECT id FROM executions WHERE input_json IS NOT NULL ORDER BY id').all()).toEqual([
      { id: 'odd' },
      { id: 'unhashed' },
    ]);
    after.close();

    const replay = await corral(['replay', id, '--tools', FIXTURES, '--store', path]);
    expect(replay.code, replay.stdout + replay.stderr).toBe(0);
    expect(replay.stdout).toMatch(/identical/i);

    // Pruning the big call gives its space back at once.
    const pruned = await corral(['snapshots', 'prune', '--keep', '4', '--store', path, '--archive', join(dir, 'v2.jsonl')]);
    expect(pruned.code, pruned.stderr).toBe(0);
    const again = await corral(['snapshots', 'prune', '--older-than', '1ms', '--store', path, '--archive', join(dir, 'v2b.jsonl')]);
    expect(again.code, again.stderr).toBe(0);
    expect(onDisk(path)).toBeLessThan(200 * 1024);
  }, 60_000);
});
