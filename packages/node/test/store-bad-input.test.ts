/**
 * A store file Corral cannot use is refused with a clear E_STORE and left
 * byte-for-byte alone; a store Corral cannot write (read-only, full disk)
 * never costs a call its result: the envelope says the snapshot was not saved.
 */
import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Corral,
  SQLITE_SCHEMA_VERSION as SCHEMA_VERSION,
  SqliteStore,
  SQLITE_APPLICATION_ID as APPLICATION_ID,
  sha256Hex as sha256,
} from '@corral/node';

const ROOT = new URL('../../..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const TOOLS = join(ROOT, 'test/fixtures/tools');
const dir = mkdtempSync(join(tmpdir(), 'corral-bad-store-'));
const cacheDir = join(dir, 'cache');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fileHash = async (path: string) => sha256(new Uint8Array(readFileSync(path)));

/**
 * Run the CLI in a child; `shell` wraps the command (for ulimit), `uid` runs it as another user.
 * `killed` says the child outlived `timeout` (a hang) and was stopped.
 */
async function corral(args: string[], opts: { uid?: number; gid?: number; prefix?: string; timeout?: number } = {}) {
  const env = { ...process.env, CORRAL_CACHE_DIR: cacheDir };
  const [file, argv] = opts.prefix
    ? ['bash', ['-c', `${opts.prefix}; exec "$0" "$@"`, process.execPath, CLI, ...args]]
    : [process.execPath, [CLI, ...args]];
  const options = {
    env,
    maxBuffer: 64 << 20,
    timeout: opts.timeout ?? 0,
    ...(opts.uid !== undefined ? { uid: opts.uid, gid: opts.gid } : {}),
  };
  return promisify(execFile)(file, argv as string[], options).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr, killed: false }),
    (err: { code: number; stdout: string; stderr: string; killed?: boolean }) => ({
      code: err.code,
      stdout: err.stdout,
      stderr: err.stderr,
      killed: err.killed === true,
    }),
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
    await expect(SqliteStore.open(path)).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringMatching(/random\.db: is not an SQLite database.*will not touch it/),
    });
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
      message: expect.stringMatching(
        new RegExp(`newer Corral \\(schema version ${SCHEMA_VERSION + 1}; this Corral understands up to ${SCHEMA_VERSION}\\)`),
      ),
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
    const r = await corral(['run', 'echo', '--tools', TOOLS, '--input-file', inputFile, '--store', path, '--json'], {
      prefix: "trap '' XFSZ; ulimit -f 100",
    });
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
      expect(result.snapshot?.error).toMatch(/cannot create the folder .*a-file: a file that is not a folder is in the way/);
      await expect(corral.recordDecision({ prompt: 'p', output: 'o' })).rejects.toMatchObject({ code: 'E_STORE' });
    } finally {
      await corral.close();
    }
    expect(readFileSync(blocker, 'utf8')).toBe('not a folder');
  });
});

/** A real Corral store (created by SqliteStore, nothing in it), changed by `alter` the way another program would. */
async function alteredStore(name: string, alter: (db: Database.Database) => void): Promise<string> {
  const path = join(dir, name);
  await (await SqliteStore.open(path)).close();
  const db = new Database(path);
  alter(db);
  db.close();
  return path;
}

/** An SQLite file another program made (not a Corral store at all). */
function foreignFile(name: string, build: (db: Database.Database) => void): string {
  const path = join(dir, name);
  const db = new Database(path);
  build(db);
  db.close();
  return path;
}

describe('an SQLite file that is not exactly a Corral store is refused, untouched', () => {
  const cases: [string, () => Promise<string>][] = [
    ['only a view', async () => foreignFile('view-only.db', (db) => db.exec('CREATE VIEW answer AS SELECT 42 AS x'))],
    ['a Corral schema under another application_id', async () => alteredStore('other-app-id.db', (db) => db.pragma('application_id = 42'))],
    [
      'Corral’s application_id and version over another program’s table',
      async () =>
        foreignFile('claims-corral.db', (db) => {
          db.exec('CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)');
          db.pragma(`application_id = ${APPLICATION_ID}`);
          db.pragma(`user_version = ${SCHEMA_VERSION}`);
        }),
    ],
    [
      'a Corral store with a trigger added',
      async () =>
        alteredStore('trigger.db', (db) => db.exec('CREATE TRIGGER wipe AFTER INSERT ON executions BEGIN DELETE FROM decisions; END')),
    ],
    ['a Corral store with a table added', async () => alteredStore('extra-table.db', (db) => db.exec('CREATE TABLE notes (x TEXT)'))],
    [
      'a Corral store with an index added',
      async () => alteredStore('extra-index.db', (db) => db.exec('CREATE INDEX by_exit ON executions (exit_code)')),
    ],
    [
      'a Corral store with a view added',
      async () =>
        alteredStore('extra-view.db', (db) => db.exec('CREATE VIEW failures AS SELECT * FROM executions WHERE error_code IS NOT NULL')),
    ],
    [
      'a Corral store whose executions table was redefined',
      async () =>
        alteredStore('redefined.db', (db) => db.exec('DROP TABLE executions; CREATE TABLE executions (id TEXT PRIMARY KEY, tool TEXT)')),
    ],
  ];

  it.each(cases)('%s', async (_, make) => {
    const path = await make();
    const before = await fileHash(path);
    await expect(SqliteStore.open(path)).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringMatching(/not a Corral snapshot store.*Corral will not write to it/),
    });
    await expect(Corral.create({ bundled: false, store: path })).rejects.toMatchObject({ code: 'E_STORE' });
    expect(readdirSync(dir).filter((f) => f.startsWith(`${basename(path)}-`))).toEqual([]); // no -wal, -shm or -journal left behind
    // (A read-only connection to a WAL file cannot remove the -shm it needs, so this one comes last.)
    await expect(SqliteStore.open(path, { readonly: true })).rejects.toMatchObject({ code: 'E_STORE' });
    expect(await fileHash(path)).toBe(before);
  });

  it('says which objects are not Corral’s', async () => {
    const path = await alteredStore('named.db', (db) =>
      db.exec('CREATE TRIGGER wipe AFTER INSERT ON executions BEGIN DELETE FROM decisions; END'),
    );
    await expect(SqliteStore.open(path)).rejects.toMatchObject({
      message: expect.stringMatching(/has Corral’s application_id but not its schema \(not Corral’s: trigger wipe\)/),
      details: { unexpected: ['trigger wipe'], missing: [] },
    });
    const viewOnly = foreignFile('view-only-2.db', (db) => db.exec('CREATE VIEW v AS SELECT 1'));
    await expect(SqliteStore.open(viewOnly)).rejects.toMatchObject({
      message: expect.stringMatching(/is an SQLite database but not a Corral snapshot store \(application_id 0, tables: none, views: v\)/),
    });
  });

  it('`corral run` and `corral snapshots list` refuse a view-only file with E_STORE, untouched', async () => {
    const path = foreignFile('view-only-cli.db', (db) => db.exec('CREATE VIEW answer AS SELECT 42 AS x'));
    const before = await fileHash(path);
    const run = await corral(['run', 'echo', '--tools', TOOLS, '--input', '{}', '--store', path]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/not a Corral snapshot store.*\(E_STORE\)\n$/);
    const list = await corral(['snapshots', 'list', '--store', path]);
    expect(list.code).toBe(1);
    expect(list.stderr).toMatch(/not a Corral snapshot store.*\(E_STORE\)\n$/);
    expect(await fileHash(path)).toBe(before);
  });

  it('a foreign database whose WAL was never checkpointed (its program crashed) is not checkpointed by Corral', async () => {
    const path = join(dir, 'crashed-wal.db');
    // A child writes through the WAL and dies without closing: the rows live only in crashed-wal.db-wal.
    const script = `
      const Database = require('better-sqlite3');
      const db = new Database(${JSON.stringify(path)});
      db.pragma('journal_mode = WAL');
      db.pragma('wal_autocheckpoint = 0');
      db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada')");
      process.kill(process.pid, 'SIGKILL');`;
    expect(() => execFileSync(process.execPath, ['-e', script], { cwd: join(ROOT, 'packages/node') })).toThrow();
    expect(existsSync(`${path}-wal`)).toBe(true);
    const before = await fileHash(path);
    const walBefore = await fileHash(`${path}-wal`);
    await expect(SqliteStore.open(path)).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringMatching(/not a Corral snapshot store/),
    });
    expect(await fileHash(path)).toBe(before);
    expect(await fileHash(`${path}-wal`)).toBe(walBefore);
  });

  it('an empty (0-byte) file and a missing path become stores', async () => {
    const empty = join(dir, 'empty.db');
    writeFileSync(empty, '');
    for (const path of [empty, join(dir, 'not-yet', 'made.db')]) {
      const store = await SqliteStore.open(path);
      await store.close();
      const db = new Database(path, { readonly: true });
      expect(db.pragma('application_id', { simple: true })).toBe(APPLICATION_ID);
      db.close();
    }
  });
});

describe('a --store path that is not a regular file is refused with E_STORE, without blocking', () => {
  const kinds: [string, () => string, RegExp, string][] = [
    ['a directory', () => (mkdirSync(join(dir, 'a-dir.db')), join(dir, 'a-dir.db')), /is a directory, not a file/, 'directory'],
    [
      'a symlink to a directory',
      () => (mkdirSync(join(dir, 'linked-dir')), symlinkSync(join(dir, 'linked-dir'), join(dir, 'dir-link.db')), join(dir, 'dir-link.db')),
      /is a directory, not a file/,
      'directory',
    ],
    [
      'a FIFO',
      () => (execFileSync('mkfifo', [join(dir, 'pipe.db')]), join(dir, 'pipe.db')),
      /is a named pipe \(FIFO\), not a file/,
      'fifo',
    ],
    ['/dev/null', () => '/dev/null', /is a character device, not a file/, 'character-device'],
    ['/dev/zero', () => '/dev/zero', /is a character device, not a file/, 'character-device'],
  ];

  it.each(kinds)('%s', async (_, make, says, kind) => {
    const path = make();
    await expect(SqliteStore.open(path)).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringMatching(says),
      details: { kind },
    });
    await expect(Corral.create({ bundled: false, store: path })).rejects.toMatchObject({ code: 'E_STORE' });
    // A hang here would be the child blocked on the FIFO: the timeout stops it, and `killed` says so.
    for (const args of [
      ['run', 'echo', '--tools', TOOLS, '--input', '{}', '--store', path],
      ['snapshots', 'list', '--store', path],
    ]) {
      const r = await corral(args, { timeout: 20_000 });
      expect(r.killed, `${args[0]} hung on ${path}`).toBe(false);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`${says.source}.*\\(E_STORE\\)\\n$`));
    }
    if (path.startsWith(dir)) expect(readdirSync(dir).filter((f) => f.startsWith(`${basename(path)}-`))).toEqual([]); // no -wal or -journal beside it
  });

  it('a Unix socket', async () => {
    const path = join(dir, 'socket.db');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      await expect(SqliteStore.open(path)).rejects.toMatchObject({
        code: 'E_STORE',
        message: expect.stringMatching(/is a socket, not a file/),
      });
      const r = await corral(['run', 'echo', '--tools', TOOLS, '--input', '{}', '--store', path], { timeout: 20_000 });
      expect(r.killed).toBe(false);
      expect(r.stderr).toMatch(/is a socket, not a file.*\(E_STORE\)\n$/);
    } finally {
      server.close();
    }
  });

  it('a path whose parent is a file: E_STORE from the store, a warning from `corral run`, the file untouched', async () => {
    const blocker = join(dir, 'parent-file');
    writeFileSync(blocker, 'not a folder');
    const path = join(blocker, 'snapshots.db');
    await expect(SqliteStore.open(path)).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringMatching(/cannot create the folder .*parent-file: a file that is not a folder is in the way/),
      details: { unwritable: true },
    });
    const r = await corral(['run', 'echo', '--tools', TOOLS, '--input', '{"e":5}', '--store', path], { timeout: 20_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ e: 5 });
    expect(r.stderr).toMatch(/^corral: warning: snapshot \S+ not saved: .*a file that is not a folder is in the way/m);
    expect(readFileSync(blocker, 'utf8')).toBe('not a folder');
  });
});
