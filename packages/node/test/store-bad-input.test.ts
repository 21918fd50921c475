/**
 * A store file Corral cannot use is refused with a clear E_STORE and left
 * byte-for-byte alone; a store Corral cannot write (read-only, full disk)
 * never costs a call its result: the envelope says the snapshot was not saved.
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Corral, SCHEMA_VERSION, SqliteStore, APPLICATION_ID, sha256 } from '@corral/node';

const ROOT = new URL('../../..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const TOOLS = join(ROOT, 'test/fixtures/tools');
const dir = mkdtempSync(join(tmpdir(), 'corral-bad-store-'));
const cacheDir = join(dir, 'cache');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fileHash = async (path: string) => sha256(new Uint8Array(readFileSync(path)));

/** Run the CLI in a child; `shell` wraps the command (for ulimit), `uid` runs it as another user. */
async function corral(args: string[], opts: { uid?: number; gid?: number; prefix?: string } = {}) {
  const env = { ...process.env, CORRAL_CACHE_DIR: cacheDir };
  const [file, argv] = opts.prefix
    ? ['bash', ['-c', `${opts.prefix}; exec "$0" "$@"`, process.execPath, CLI, ...args]]
    : [process.execPath, [CLI, ...args]];
  return promisify(execFile)(file, argv as string[], { env, maxBuffer: 64 << 20, ...(opts.uid !== undefined ? { uid: opts.uid, gid: opts.gid } : {}) }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

/** A store with one recorded call in it. */
async function storeWithOneCall(path: string): Promise<string> {
  const r = await corral(['run', 'echo', '--tools', TOOLS, '--input', '{"kept":true}', '--store', path, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).snapshot.id;
}

beforeAll(async () => {
  mkdirSync(cacheDir, { recursive: true });
  await storeWithOneCall(join(dir, 'warm.db')); // fills the transpile cache
}, 120_000);

describe('the SQLite store file', () => {
  it('is created with WAL, synchronous=FULL on every open, its application id and schema version', async () => {
    const path = join(dir, 'fresh', 'nested', 'snapshots.db');
    for (let i = 0; i < 2; i++) {
      const store = await SqliteStore.open(path);
      expect(store.synchronous).toBe(2);
      await store.close();
    }
    const db = new Database(path, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(db.pragma('application_id', { simple: true })).toBe(APPLICATION_ID);
    db.close();
  });

  it('refuses a file that is not SQLite, untouched', async () => {
    const path = join(dir, 'random.db');
    writeFileSync(path, new Uint8Array(Array.from({ length: 8192 }, (_, i) => (i * 131 + 7) & 255)));
    const before = await fileHash(path);
    await expect(SqliteStore.open(path)).rejects.toMatchObject({ code: 'E_STORE', message: expect.stringMatching(/random\.db: is not an SQLite database.*will not touch it/) });
    await expect(Corral.create({ bundled: false, store: path })).rejects.toMatchObject({ code: 'E_STORE' });
    const cli = await corral(['run', 'echo', '--tools', TOOLS, '--input', '{}', '--store', path]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/not an SQLite database.*\(E_STORE\)/);
    expect(await fileHash(path)).toBe(before);
  });

  it('refuses a damaged store, untouched', async () => {
    const path = join(dir, 'damaged.db');
    await storeWithOneCall(path);
    const bytes = readFileSync(path);
    for (let i = 100; i < bytes.length; i++) bytes[i] = (i * 7) & 255; // keep the 100-byte header, wreck the pages
    writeFileSync(path, bytes);
    const before = await fileHash(path);
    await expect(SqliteStore.open(path)).rejects.toMatchObject({ code: 'E_STORE', message: expect.stringMatching(/is damaged/) });
    expect(await fileHash(path)).toBe(before);
  });

  it('refuses another program’s SQLite database, untouched', async () => {
    const path = join(dir, 'foreign.db');
    const db = new Database(path);
    db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada')");
    db.close();
    const before = await fileHash(path);
    await expect(SqliteStore.open(path)).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringMatching(/is an SQLite database but not a Corral snapshot store \(application_id 0, tables: users\)/),
    });
    expect(await fileHash(path)).toBe(before);
  });

  it('refuses a store from a newer Corral, untouched', async () => {
    const path = join(dir, 'newer.db');
    await storeWithOneCall(path);
    const db = new Database(path);
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    const before = await fileHash(path);
    await expect(SqliteStore.open(path)).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringMatching(new RegExp(`newer Corral \\(schema version ${SCHEMA_VERSION + 1}; this Corral understands up to ${SCHEMA_VERSION}\\)`)),
      details: { schema_version: SCHEMA_VERSION + 1 },
    });
    const cli = await corral(['snapshots', 'list', '--store', path]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/newer Corral.*E_STORE/);
    expect(await fileHash(path)).toBe(before);
  });
});

describe('a store that cannot be written never costs a call its result', () => {
  it('a store opened read-only: the result stands and the envelope says why nothing was saved', async () => {
    const path = join(dir, 'ro-mode.db');
    await storeWithOneCall(path);
    const store = await SqliteStore.open(path, { readonly: true });
    const corral = await Corral.create({ bundled: false, toolDirs: [TOOLS], store, size: 1 });
    try {
      const result = await corral.invoke('echo', { a: 1 });
      expect(result).toMatchObject({ ok: true, output: { a: 1 } });
      expect(result.snapshot?.error).toMatch(/intent could not be written: Snapshot store .*ro-mode\.db: is read-only/);
      expect(await store.listExecutions()).toHaveLength(1); // reading still works
    } finally {
      await corral.close();
      await store.close();
    }
  });

  it('a file with no write permission (as a user who lacks it): `corral run` prints the output and a warning', async (ctx) => {
    if (process.getuid?.() !== 0) return ctx.skip(); // the test chmods as root and runs the CLI as nobody
    const nobody = { uid: 65534, gid: 65534 };
    chmodSync(dir, 0o755); // mkdtemp made it 0700: let nobody reach the store and the transpile cache

    // (a) the folder is writable, the file is not: SQLite opens it and every write fails.
    const folder = join(dir, 'ro-file');
    mkdirSync(folder);
    const path = join(folder, 'snapshots.db');
    const kept = await storeWithOneCall(path);
    chmodSync(path, 0o444);
    chownSync(folder, nobody.uid, nobody.gid);
    const before = await fileHash(path);
    const a = await corral(['run', 'echo', '--tools', TOOLS, '--input', '{"b":2}', '--store', path], nobody);
    expect(a.code, a.stderr).toBe(0);
    expect(JSON.parse(a.stdout)).toEqual({ b: 2 });
    expect(a.stderr).toMatch(/^corral: warning: snapshot \S+ not saved: .*is read-only/m);

    // (b) neither can be written: the store cannot even be opened; calls still run.
    chownSync(folder, 0, 0);
    const b = await corral(['run', 'echo', '--tools', TOOLS, '--input', '{"c":3}', '--store', path, '--json'], nobody);
    expect(b.code, b.stderr).toBe(0);
    const envelope = JSON.parse(b.stdout);
    expect(envelope).toMatchObject({ ok: true, output: { c: 3 }, snapshot: { error: expect.stringMatching(/read-only/) } });
    expect(await fileHash(path)).toBe(before);

    const store = await SqliteStore.open(path);
    expect((await store.listExecutions()).map((e) => e.id)).toEqual([kept]);
    await store.close();
  });

  it('a full disk (file size limit): the result stands, the store keeps what it had and stays sound', async () => {
    const path = join(dir, 'full.db');
    const kept = await storeWithOneCall(path);
    // RLIMIT_FSIZE makes writes past 100 KiB fail as a full disk would (SIGXFSZ ignored, so
    // the write returns an error instead of killing the process); the 200 KB input cannot fit.
    const inputFile = join(dir, 'big-input.json');
    writeFileSync(inputFile, JSON.stringify({ pad: 'y'.repeat(200_000) }));
    const r = await corral(['run', 'echo', '--tools', TOOLS, '--input-file', inputFile, '--store', path, '--json'], { prefix: "trap '' XFSZ; ulimit -f 100" });
    expect(r.code, r.stderr.slice(0, 500)).toBe(0);
    const envelope = JSON.parse(r.stdout);
    expect(envelope.ok).toBe(true);
    expect(envelope.output.pad).toHaveLength(200_000);
    expect(envelope.snapshot.error).toMatch(/could not be written: Snapshot store .*full\.db: (the disk is full|an I\/O error)/);
    expect(r.stderr).toMatch(/corral: warning: snapshot \S+ not saved/);

    const store = await SqliteStore.open(path);
    expect(await store.integrityCheck()).toEqual(['ok']);
    expect((await store.listExecutions()).map((e) => e.id)).toEqual([kept]);
    await store.close();
  });

  it('a path whose parent is a file: calls run and say the store cannot be opened', async () => {
    const blocker = join(dir, 'a-file');
    writeFileSync(blocker, 'not a folder');
    const corral = await Corral.create({ bundled: false, toolDirs: [TOOLS], store: join(blocker, 'snapshots.db'), size: 1 });
    try {
      const result = await corral.invoke('echo', { d: 4 });
      expect(result).toMatchObject({ ok: true, output: { d: 4 } });
      expect(result.snapshot?.error).toMatch(/its folder .*a-file cannot be created: a file is in the way/);
      await expect(corral.recordDecision({ prompt: 'p', output: 'o' })).rejects.toMatchObject({ code: 'E_STORE' });
    } finally {
      await corral.close();
    }
    expect(readFileSync(blocker, 'utf8')).toBe('not a folder');
  });
});
