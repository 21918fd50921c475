/**
 * The Node snapshot store: one SQLite file (better-sqlite3), WAL journal,
 * `synchronous=FULL` so a commit is on disk before a write resolves.
 *
 * Writes are group-committed: every write queued while no commit is running
 * goes into the next transaction, and each promise resolves only after that
 * transaction's COMMIT (an fsync of the WAL) returned. Nothing is
 * acknowledged before it is durable.
 *
 * Commits run on a commit thread of the store's own (store-writer.ts, a
 * second connection to the same file, started when writes first queue
 * together; a lone write, writes while it boots, and every write with
 * `commits: 'inline'` commit on the caller's thread, unless another
 * process holds the write lock), one batch at a time. While the commit
 * thread waits for the disk the event loop keeps dispatching calls, and the
 * writes they queue (intents of new calls, results of finished ones) gather
 * into the next batch, sent the moment the running commit ends: concurrent
 * calls share fsyncs, a result riding with the next intents. Reads wait for
 * every write queued before them, so a caller reads what it wrote. Should
 * the thread fail to start or die, commits run on the caller's thread (a
 * batch it had fails: it may or may not be durable).
 *
 * Measured (bench/snapshots.ts on a shared 2-core VM, ext4; medians of
 * alternating runs, the machine loaded by other work): in WAL mode
 * `synchronous=FULL` costs one fsync of the WAL per commit (strace: 157 WAL
 * fsyncs for 155 commits, plus one of the database per automatic
 * checkpoint, about every 150 commits); `NORMAL` skips it and is not
 * durable, and SQLite has no cheaper setting that is, so the levers are
 * fewer commits per call and keeping the fsync off the event loop. An
 * fsync costs 0.17 ms on a quiet disk (overwriting the WAL that
 * journal_size_limit keeps allocated; 0.22 ms appending) and 2-6 ms when
 * the machine is loaded; two in a row (intent, result) are the floor of a
 * single caller's cost. Through Corral (size 2, diff-summary), extra per
 * call over no store, 8 callers: main (commits on the caller's thread at
 * each event-loop turn) +14.5 ms median latency and +1.40 ms of wall time
 * per call; the commit thread +6.4 ms and +0.71 ms, at 0.85 commits (about
 * one fsync) per call; committing every batch on the caller's thread in
 * this code +9.9 ms and +1.01 ms. One caller: about two fsyncs wherever the
 * commit runs (+6.2 to +10 ms on the loaded disk). On a quiet machine
 * (2026-12-03: fdatasync 0.14 ms overwriting, 0.27 ms appending) the
 * thread's hops were a third of a lone caller's cost: +0.67-0.80 ms a call
 * through the thread, +0.50-0.57 ms with each lone write committed on the
 * caller's thread, and 8 callers as fast either way, so a batch of one
 * write is committed here. Automatic checkpoints stay (1000 pages, in the
 * commit that crosses the mark, wherever it runs), one database fsync per
 * ~150 commits: not worth a thread of their own.
 *
 * Size: an input's text is kept once per SHA-256 in `inputs`, apart from the
 * execution row, so finishing a call rewrites a small row, not the input, and
 * calls with the same input share it. The file uses auto_vacuum=INCREMENTAL:
 * prune (and the optional size cap, `maxBytes`) give freed pages back to the
 * file system instead of leaving the file at its largest.
 *
 * Workflow runs (schema 4) are rows of `workflow_runs`, changed only by one
 * `UPDATE … WHERE status IN (…) RETURNING *` in a group commit's IMMEDIATE
 * transaction: of two processes changing a run from the same status, exactly
 * one does. Their events are rows of `workflow_events` keyed by (run_id,
 * seq), so a second append of a sequence number fails on the key. Neither
 * is pruned, exported or removed by the size cap.
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { sqliteDatabase } from './sqlite-runtime.js';
import {
  approvalPatch,
  approvalRecord,
  auditEvent,
  checkApprovalFilter,
  checkAuditFilter,
  checkExecutionFilter,
  checkIds,
  checkPruneOptions,
  checkRecord,
  checkWorkflowEventQuery,
  checkWorkflowRunFilter,
  decisionSnapshot,
  executionSnapshot,
  selectEvicted,
  storeError,
  WORKFLOW_EVENT_COLUMNS,
  WORKFLOW_RUN_COLUMNS,
  workflowEventFromRow,
  workflowEventRow,
  workflowRefusal,
  workflowRunFromRow,
  workflowRunPatchRow,
  workflowRunRow,
  type EvictionCandidate,
} from '@corral/core/store-kit';
import {
  CorralError,
  nowNs,
  type ApprovalFilter,
  type ApprovalPatch,
  type ApprovalRecord,
  type ApprovalStatus,
  type AuditEvent,
  type AuditFilter,
  type DecisionSnapshot,
  type ExecutionFilter,
  type ExecutionIntent,
  type ExecutionOutcome,
  type ExecutionSnapshot,
  type PruneOptions,
  type SnapshotRecord,
  type Store,
  type WorkflowEvent,
  type WorkflowRunFilter,
  type WorkflowRunPatch,
  type WorkflowRunRecord,
  type WorkflowRunStatus,
} from '@corral/core';
import { CHECK_FAILED, batchCommitter, type BatchCommitter, type Row, type WriteOp, type WriteResult } from './store-commit.js';
import type { CommitReply, WriterConfig } from './store-writer.js';
import { packageUrl } from './package-files.js';
import { FolderError, makeFoldersSync } from './folders.js';

/** The schema this code writes. A store from a newer Corral (higher user_version) is refused. */
export const SCHEMA_VERSION = 5;
/** PRAGMA application_id of Corral stores ("CRRL"), to tell them from other SQLite files. */
export const APPLICATION_ID = 0x4352524c;

/**
 * Migration N takes a store from user_version N to N+1. Append, never edit:
 * an existing store must hold exactly the objects these statements make
 * (see checkOwnership), so an edited migration would refuse every older store.
 */
const MIGRATIONS: string[] = [
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
  // 2: the policy's audit trail and the approvals calls wait for.
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
  // 3: inputs kept once per SHA-256 (a 50 MB input was written twice per call:
  // with the intent, and again when the result's UPDATE rewrote the row), and
  // an archived mark for the size cap. Existing inputs move over; a row whose
  // text disagrees with the one kept under its hash (never written by Corral)
  // keeps its own text in executions.input_json, as rows without a hash do.
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
  // 4: workflow runs and their event journals, and approvals that belong to a
  // workflow step (older approvals are tool calls': their new columns are NULL).
  `ALTER TABLE approvals ADD COLUMN workflow_run_id TEXT;
   ALTER TABLE approvals ADD COLUMN workflow_step TEXT;
   ALTER TABLE approvals ADD COLUMN prompt TEXT;
   CREATE TABLE workflow_runs (
     id                TEXT PRIMARY KEY,
     workflow          TEXT NOT NULL,
     definition_json   TEXT NOT NULL,
     definition_sha256 TEXT NOT NULL,
     inputs_json       TEXT NOT NULL,
     status            TEXT NOT NULL,
     created_ns        INTEGER NOT NULL,
     updated_ns        INTEGER NOT NULL,
     outputs_json      TEXT,
     error_json        TEXT
   ) STRICT;
   CREATE INDEX workflow_runs_by_time ON workflow_runs (created_ns, id);
   CREATE INDEX workflow_runs_by_status ON workflow_runs (status, created_ns);
   CREATE TABLE workflow_events (
     run_id       TEXT NOT NULL,
     seq          INTEGER NOT NULL,
     at_ns        INTEGER NOT NULL,
     step         TEXT,
     kind         TEXT NOT NULL,
     attempt      INTEGER NOT NULL,
     tool         TEXT,
     tool_version TEXT,
     execution_id TEXT,
     approval_id  TEXT,
     output_json  TEXT,
     error_json   TEXT,
     note         TEXT,
     PRIMARY KEY (run_id, seq)
   ) STRICT;`,
  // 5: where each call ran, when an executor chose (local, or a fleet worker).
  `ALTER TABLE executions ADD COLUMN ran_on TEXT;`,
];

/**
 * An execution row with its input text: from `inputs` when the row keeps its
 * input there, else the row's own column (rows without a hash, older rows).
 */
const EXECUTIONS = `SELECT e.*, CASE WHEN e.input_kept = 1 THEN (SELECT json FROM inputs WHERE sha256 = e.input_sha256)
                      ELSE e.input_json END AS input_text FROM executions e`;

/** The same rows without their inputs' text, which may be megabytes each (`withInput: false`). */
const EXECUTIONS_WITHOUT_INPUT = `SELECT e.id, e.decision_id, e.tool, e.version, e.wasm_sha256, e.input_sha256, NULL AS input_text, e.intent_ns,
  e.result_ns, e.exit_code, e.error_code, e.error_message, e.stdout_sha256, e.stdout_head, e.stdout_tail, e.stderr_head, e.stderr_tail,
  e.duration_ms, e.peak_memory_bytes, e.ran_on FROM executions e`;

/** Drops every input no execution keeps. */
const COLLECT_INPUTS = `DELETE FROM inputs WHERE NOT EXISTS
  (SELECT 1 FROM executions WHERE input_kept = 1 AND input_sha256 = inputs.sha256)`;

/** The most the WAL file keeps after a checkpoint (it is truncated to this), so one large write does not leave it large. */
const WAL_SIZE_LIMIT = 4 * 1024 * 1024;
/** A store bigger than this says so (progress) before its one-time compaction. */
const SLOW_VACUUM_BYTES = 16 * 1024 * 1024;

/** $CORRAL_STORE, else $XDG_DATA_HOME/corral/snapshots.db, else ~/.local/share/corral/snapshots.db. */
export function defaultStorePath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CORRAL_STORE) return env.CORRAL_STORE;
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'corral', 'snapshots.db');
}

export interface SqliteStoreOptions {
  /** `FULL` (default) fsyncs every commit; `NORMAL` is for the benchmark baseline only: it can lose acknowledged writes on power loss. */
  synchronous?: 'FULL' | 'NORMAL';
  /** Open without writing anything (the file must exist); writes then fail with E_STORE. */
  readonly?: boolean;
  /**
   * A size cap in bytes for the live data in the file. After a write takes
   * it over the cap, the store removes whole records until it is 10% under:
   * archived ones first (see markArchived), then finished ones, then
   * interrupted ones, oldest first within each, never a call this store has
   * begun and not finished; then it returns the space to the file system.
   * Removed records are not archived. An input larger than the cap itself is
   * recorded by its hash only. Default: no cap.
   */
  maxBytes?: number;
  /** Told about slow maintenance before it starts (the one-time compaction of a large store), and about what the size cap removed. */
  onProgress?: (message: string) => void;
  /**
   * Where commits run: `thread` (default) on a commit thread of the store's
   * own, so the event loop keeps dispatching calls while the disk syncs;
   * `inline` on the caller's thread (the benchmark's comparison). Either
   * way a write resolves only once it is durable.
   */
  commits?: 'thread' | 'inline';
}

/** How long a connection's write waits for another process's write lock (better-sqlite3's default). */
const BUSY_TIMEOUT_MS = 5000;

/** The commit thread's script (store-writer.ts), beside this module. */
const WRITER_URL = packageUrl('dist/store-writer.js');

/** The commit thread, once it has said it is ready. */
interface Writer {
  worker: Worker;
  ready: boolean;
}

interface PendingWrite {
  ops: WriteOp[];
  resolve: (result: WriteResult) => void;
  reject: (err: unknown) => void;
}

const SQLITE_MAGIC = 'SQLite format 3\0';

export class SqliteStore implements Store {
  readonly location: string;
  readonly #db: Database.Database;
  /** Writes waiting for the next group commit. */
  #queue: PendingWrite[] = [];
  #scheduled = false;
  /** The batch the commit thread is committing: at most one at a time, the next one gathers meanwhile. */
  #committing: PendingWrite[] | null = null;
  #writer: Writer | undefined;
  /** The commit thread failed to start or died: commits stay on this thread. */
  #writerFailed = false;
  /** Whether commits go to the commit thread (`commits: 'thread'`, a writable store). */
  readonly #threaded: boolean;
  readonly #synchronous: 'FULL' | 'NORMAL';
  #commits = 0;
  #closed = false;
  readonly #statements = new Map<string, Database.Statement>();
  /** Commits on this connection; made at its first commit. */
  #commit: BatchCommitter | undefined;
  readonly #maxBytes: number | undefined;
  readonly #onProgress: ((message: string) => void) | undefined;
  /** Calls begun through this store and not finished: the size cap never removes them. */
  readonly #inFlight = new Set<string>();
  #capping = false;

  private constructor(location: string, db: Database.Database, options: SqliteStoreOptions) {
    this.location = location;
    this.#db = db;
    this.#maxBytes = options.maxBytes;
    this.#onProgress = options.onProgress;
    this.#threaded = !options.readonly && options.commits !== 'inline';
    this.#synchronous = options.synchronous ?? 'FULL';
  }

  /**
   * Open (or create) the store at `path`. Refuses, with E_STORE and without
   * writing a byte, a path that is not a regular file, a file that is not
   * SQLite, an SQLite file that is not exactly a Corral store, and a store
   * from a newer Corral. When the place cannot be written at all (read-only,
   * full disk, a file where the folder should be)
   * the E_STORE error has `details.unwritable: true`, so a host can keep
   * running calls and report each snapshot as not written (see Corral.create).
   */
  static async open(path: string = defaultStorePath(), options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    // resolve() drops a trailing slash: "dir/" became a file named dir.
    if (/[\\/]$/.test(path))
      throw storeError(path, 'ends in a slash, so it names a folder; the store is a file: give one, e.g. dir/snapshots.db');
    const location = resolve(path);
    if (options.maxBytes !== undefined && !(Number.isFinite(options.maxBytes) && options.maxBytes > 0)) {
      throw new CorralError(
        'E_INPUT_VALIDATION',
        `SqliteStore.open: maxBytes must be a positive number of bytes (got ${options.maxBytes})`,
        {
          option: 'maxBytes',
        },
      );
    }
    const SqliteDatabase = sqliteDatabase(location);
    const holdsData = checkFile(location);
    const unwritable = (what: string, err: unknown) =>
      storeError(location, `${what}: ${describe(err)}`, { sqlite_code: codeOf(err), unwritable: true });
    if (!options.readonly) {
      try {
        makeFoldersSync(dirname(location));
      } catch (err) {
        if (err instanceof FolderError) throw storeError(location, err.message, { sqlite_code: err.code, unwritable: true });
        throw unwritable(`its folder ${dirname(location)} cannot be created`, err);
      }
    }
    // A WAL with frames in it (its program crashed, or is running) would be
    // checkpointed into the file when a writable connection closes: judge such
    // a file through a read-only connection first. Without one, a refused
    // file is only read, and the writable connection removes its side files.
    if (holdsData && existsSync(`${location}-wal`)) inspect(location);
    let db: Database.Database;
    try {
      db = new SqliteDatabase(location, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
    } catch (err) {
      throw unwritable('cannot be opened', err);
    }
    try {
      const store = new SqliteStore(location, db, options);
      store.#setUp(options);
      if (!options.readonly) store.#enforceCap();
      return store;
    } catch (err) {
      db.close();
      if (err instanceof CorralError) throw err;
      if (isWriteProblem(err)) throw unwritable('cannot be opened', err);
      throw storeError(location, describe(err), { sqlite_code: codeOf(err) });
    }
  }

  #setUp(options: SqliteStoreOptions): void {
    const db = this.#db;
    // Again on this connection: the file may have been empty, or changed since it was inspected.
    const { version } = checkOwnership(db, this.location);
    // Not persistent: a connection opened without it runs at the default, so set it every time.
    db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    if (options.readonly) {
      if (version < SCHEMA_VERSION) throw storeError(this.location, `has schema version ${version}; open it writable once to upgrade it`);
      return;
    }
    try {
      // Only an empty file takes auto_vacuum from a pragma; an older store gets it from #compact's VACUUM.
      if (version === 0) db.pragma('auto_vacuum = INCREMENTAL');
      db.pragma('journal_mode = WAL');
      db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
      this.#migrate(version);
    } catch (err) {
      // A read-only or full disk: reading still works, every write will say why it failed.
      if (!isWriteProblem(err)) throw err;
      if (version < SCHEMA_VERSION) throw err;
      return;
    }
    this.#compact();
  }

  /**
   * Once per store made before schema 3: switch on incremental vacuum, which
   * only a full VACUUM can do to a file that has tables, and drop the space
   * the old layout left. Best effort: a store that cannot be compacted now
   * (another process holds it, the disk is full) works as before and is
   * tried again at the next open.
   */
  #compact(): void {
    const db = this.#db;
    if ((db.pragma('auto_vacuum', { simple: true }) as number) === 2) return;
    try {
      const bytes = statSync(this.location).size;
      if (bytes > SLOW_VACUUM_BYTES) {
        this.#onProgress?.(`compacting the snapshot store ${this.location} (${mb(bytes)}) once, for schema 3; this can take a while`);
      }
      db.pragma('auto_vacuum = INCREMENTAL');
      db.exec('VACUUM');
      db.pragma('wal_checkpoint(TRUNCATE)');
    } catch (err) {
      if (!isWriteProblem(err) && !codeOf(err)?.startsWith('SQLITE_BUSY')) throw err;
    }
  }

  #migrate(from: number): void {
    if (from === SCHEMA_VERSION) return;
    // IMMEDIATE takes the write lock first, so two processes cannot both migrate.
    this.#db
      .transaction(() => {
        const current = this.#db.pragma('user_version', { simple: true }) as number;
        for (let v = current; v < SCHEMA_VERSION; v++) this.#db.exec(MIGRATIONS[v]!);
        this.#db.pragma(`application_id = ${APPLICATION_ID}`);
        this.#db.pragma(`user_version = ${SCHEMA_VERSION}`);
      })
      .immediate();
  }

  /** Group commits this store has made (each is at most one fsync of the WAL), for benchmarks. */
  get commits(): number {
    return this.#commits;
  }

  /** `PRAGMA synchronous` as SQLite reports it (2 = FULL), for tests. */
  get synchronous(): number {
    return this.#db.pragma('synchronous', { simple: true }) as number;
  }

  /** `PRAGMA integrity_check`: ['ok'] for a sound file. */
  async integrityCheck(): Promise<string[]> {
    return this.#read(() => (this.#db.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check));
  }

  async recordDecision(d: DecisionSnapshot): Promise<void> {
    checkRecord('recordDecision', d);
    const sql = 'INSERT INTO decisions (id, time_ns, prompt_sha256, output, model, run_id) VALUES (?, ?, ?, ?, ?, ?)';
    const result = await this.#write([
      { sql, params: [d.id, nanos(d.time_ns), d.prompt_sha256, d.output, d.model ?? null, d.run_id ?? null] },
    ]);
    if (!result.ok) throw this.#refused(result, `a decision with id ${d.id} already exists`);
  }

  async beginExecution(i: ExecutionIntent): Promise<void> {
    checkRecord('beginExecution', i);
    const hash = i.input_sha256 ?? null;
    const json = i.input_json ?? null;
    // An input with a hash is kept once, in inputs; one without stays in the row (nothing to key it by).
    const keep = hash !== null && json !== null && !(this.#maxBytes !== undefined && json.length > this.#maxBytes);
    const ops: WriteOp[] = [];
    if (keep) {
      ops.push(
        { sql: 'INSERT INTO inputs (sha256, json) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING', params: [hash, json] },
        { sql: 'SELECT json = ? FROM inputs WHERE sha256 = ?', params: [json, hash], expect: inputMismatch(hash) },
      );
    }
    const sql = `INSERT INTO executions (id, decision_id, tool, version, wasm_sha256, input_sha256, input_json, input_kept, intent_ns)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`;
    const params = [
      i.id,
      i.decision_id ?? null,
      i.tool,
      i.version ?? null,
      i.wasm_sha256 ?? null,
      hash,
      hash === null ? json : null,
      keep ? 1 : 0,
      nanos(i.intent_ns),
    ];
    ops.push({ sql, params });
    this.#inFlight.add(i.id);
    const result = await this.#write(ops).catch((err) => {
      this.#inFlight.delete(i.id);
      throw err;
    });
    if (!result.ok) {
      this.#inFlight.delete(i.id);
      throw this.#refused(result, `an execution with id ${i.id} already exists`);
    }
  }

  async finishExecution(id: string, o: ExecutionOutcome): Promise<void> {
    checkRecord('finishExecution', o, id);
    const sql = `UPDATE executions SET result_ns = ?, exit_code = ?, error_code = ?, error_message = ?, stdout_sha256 = ?,
                   stdout_head = ?, stdout_tail = ?, stderr_head = ?, stderr_tail = ?, duration_ms = ?, peak_memory_bytes = ?,
                   ran_on = ?
                 WHERE id = ? AND result_ns IS NULL`;
    const params = [
      nanos(o.result_ns),
      o.exit_code ?? null,
      o.error_code ?? null,
      o.error_message ?? null,
      o.stdout_sha256 ?? null,
      o.stdout_head,
      o.stdout_tail,
      o.stderr_head,
      o.stderr_tail,
      o.duration_ms,
      o.peak_memory_bytes ?? null,
      o.ran_on ?? null,
      id,
    ];
    const result = await this.#write([{ sql, params, probe: { sql: 'SELECT 1 FROM executions WHERE id = ?', params: [id] } }]);
    this.#inFlight.delete(id);
    if (!result.ok) throw this.#refused(result);
    if (result.changes === 0) {
      throw storeError(this.location, result.found ? `execution ${id} already has a result` : `no execution with id ${id} to finish`);
    }
  }

  async getExecution(id: string): Promise<ExecutionSnapshot | null> {
    const row = await this.#read(() => this.#stmt(`${EXECUTIONS} WHERE id = ?`).get(id) as Row | undefined);
    return row ? toExecution(row) : null;
  }

  async getDecision(id: string): Promise<DecisionSnapshot | null> {
    const row = await this.#read(() => this.#stmt('SELECT * FROM decisions WHERE id = ?').get(id) as Row | undefined);
    return row ? toDecision(row) : null;
  }

  async listExecutions(filter: ExecutionFilter = {}): Promise<ExecutionSnapshot[]> {
    checkExecutionFilter(filter);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, value: unknown) => (where.push(sql), params.push(value));
    if (filter.tool !== undefined) add('tool = ?', filter.tool);
    if (filter.since !== undefined) add('intent_ns >= ?', bounded(nanos(filter.since)));
    if (filter.errorCode !== undefined) add('error_code = ?', filter.errorCode);
    if (filter.decisionId !== undefined) add('decision_id = ?', filter.decisionId);
    if (filter.status === 'interrupted') where.push('result_ns IS NULL');
    if (filter.status === 'ok') where.push('result_ns IS NOT NULL AND error_code IS NULL');
    if (filter.status === 'failed') where.push('result_ns IS NOT NULL AND error_code IS NOT NULL');
    const sql =
      `${filter.withInput === false ? EXECUTIONS_WITHOUT_INPUT : EXECUTIONS} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY intent_ns DESC, id DESC` +
      (filter.limit !== undefined ? ` LIMIT ${Math.max(0, Math.floor(filter.limit))}` : '');
    return this.#read(() => (this.#stmt(sql).all(...params) as Row[]).map(toExecution));
  }

  /**
   * Decisions then executions, oldest first, read a page at a time so the
   * connection stays free for writes between pages.
   */
  async *export(): AsyncIterable<SnapshotRecord> {
    const PAGE = 500;
    for (const kind of ['decision', 'execution'] as const) {
      const [from, time] = kind === 'decision' ? ['SELECT * FROM decisions', 'time_ns'] : [EXECUTIONS, 'intent_ns'];
      let after: [bigint, string] = [-1n, ''];
      for (;;) {
        const rows = await this.#read(
          () => this.#stmt(`${from} WHERE (${time}, id) > (?, ?) ORDER BY ${time}, id LIMIT ${PAGE}`).all(...after) as Row[],
        );
        for (const row of rows) yield kind === 'decision' ? { kind, ...toDecision(row) } : { kind, ...toExecution(row) };
        if (rows.length < PAGE) break;
        const last = rows[rows.length - 1]!;
        after = [last[time] as bigint, last.id as string];
      }
    }
  }

  async prune(options: PruneOptions): Promise<SnapshotRecord[]> {
    checkPruneOptions(options);
    const cutoff = options.olderThan === undefined ? undefined : bounded(nanos(options.olderThan));
    // Select in SQL; see selectPruned in core for the rules this mirrors.
    // checkPruneOptions vouched for both numbers, so they can be spelled into the SQL.
    const pick = (table: string, time: string, extra = '', ...params: unknown[]): string[] => {
      const parts: string[] = [];
      if (cutoff !== undefined) parts.push(`SELECT id FROM ${table} WHERE ${time} < ${cutoff}`);
      if (options.keep !== undefined)
        parts.push(`SELECT id FROM (SELECT id FROM ${table} ORDER BY ${time} DESC, id DESC LIMIT -1 OFFSET ${options.keep})`);
      const sql = `SELECT id FROM (${parts.join(' UNION ')}) ${extra}`;
      return (this.#stmt(sql).all(...params) as { id: string }[]).map((r) => r.id);
    };
    const { executions, decisions } = await this.#read(() => {
      const executions = pick('executions', 'intent_ns');
      // A decision that a kept execution points to stays.
      const decisions = pick(
        'decisions',
        'time_ns',
        `WHERE id NOT IN (SELECT decision_id FROM executions WHERE decision_id IS NOT NULL
                          AND id NOT IN (SELECT value FROM json_each(?)))`,
        JSON.stringify(executions),
      );
      return { executions, decisions };
    });
    const records: SnapshotRecord[] = [];
    const rowsOf = (from: string, ids: string[]) =>
      this.#read(() => this.#stmt(`${from} WHERE id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ids)) as Row[]);
    for (const row of await rowsOf('SELECT * FROM decisions', decisions)) records.push({ kind: 'decision', ...toDecision(row) });
    for (const row of await rowsOf(EXECUTIONS, executions)) records.push({ kind: 'execution', ...toExecution(row) });
    records.sort((a, b) => (a.kind !== b.kind ? (a.kind === 'decision' ? -1 : 1) : Number(BigInt(timeOf(a)) - BigInt(timeOf(b)))));
    if (records.length === 0) return records;
    // The archive is written before anything is deleted; if it fails, nothing is.
    await options.archive?.(records);
    const deleted = await this.#write([
      { sql: 'DELETE FROM executions WHERE id IN (SELECT value FROM json_each(?))', params: [JSON.stringify(executions)] },
      { sql: 'DELETE FROM decisions WHERE id IN (SELECT value FROM json_each(?))', params: [JSON.stringify(decisions)] },
      { sql: COLLECT_INPUTS, params: [] },
    ]);
    if (!deleted.ok) throw this.#refused(deleted);
    await this.#read(() => this.#reclaim());
    return records;
  }

  async markArchived(ids: readonly string[]): Promise<number> {
    checkIds('markArchived', ids);
    const now = nanos(nowNs());
    const list = JSON.stringify([...new Set(ids)]);
    const result = await this.#write(
      ['executions', 'decisions'].map((table) => ({
        sql: `UPDATE ${table} SET archived_ns = ? WHERE archived_ns IS NULL AND id IN (SELECT value FROM json_each(?))`,
        params: [now, list],
      })),
    );
    if (!result.ok) throw this.#refused(result);
    return result.changes;
  }

  /** Bytes of the file holding live data (pages not on the free list), as of the last commit. */
  async usedBytes(): Promise<number> {
    return this.#read(() => this.#usedBytes());
  }

  #usedBytes(): number {
    const pragma = (name: string) => Number(this.#db.pragma(name, { simple: true }));
    return (pragma('page_count') - pragma('freelist_count')) * pragma('page_size');
  }

  /**
   * Give free pages back to the file system: incremental vacuum moves them
   * to the end and truncates, and a checkpoint carries that into the file
   * (and truncates the WAL) when no other process is reading.
   */
  #reclaim(): void {
    this.#db.pragma('incremental_vacuum');
    this.#db.pragma('wal_checkpoint(TRUNCATE)');
  }

  /** The size cap (see SqliteStoreOptions.maxBytes): called after every commit, and at open. */
  #enforceCap(): void {
    try {
      this.#trimToCap();
    } catch (err) {
      // The writes are durable; the cap is tried again after the next commit.
      this.#onProgress?.(`the snapshot store ${this.location} is over its size cap and could not be trimmed: ${describe(err)}`);
    }
  }

  #trimToCap(): void {
    const max = this.#maxBytes;
    if (max === undefined || this.#capping) return;
    let used = this.#usedBytes();
    if (used <= max) return;
    this.#capping = true;
    const before = used;
    let removed = 0;
    try {
      const target = Math.floor(max * 0.9);
      while (used > target) {
        const chosen = selectEvicted(this.#evictionCandidates(), used - target);
        if (chosen.length === 0) break;
        const ids = (kind: string) => JSON.stringify(chosen.filter((c) => c.kind === kind).map((c) => c.id));
        this.#db
          .transaction(() => {
            this.#db.prepare('DELETE FROM executions WHERE id IN (SELECT value FROM json_each(?))').run(ids('execution'));
            // Never a decision a kept execution points to (the candidates already leave those out).
            this.#db
              .prepare(
                `DELETE FROM decisions WHERE id IN (SELECT value FROM json_each(?))
                   AND id NOT IN (SELECT decision_id FROM executions WHERE decision_id IS NOT NULL)`,
              )
              .run(ids('decision'));
            this.#db.prepare(COLLECT_INPUTS).run();
          })
          .immediate();
        removed += chosen.length;
        used = this.#usedBytes();
      }
      this.#reclaim();
      this.#onProgress?.(
        `the snapshot store ${this.location} was over its size cap (${mb(max)}): removed the ${removed} oldest record${removed === 1 ? '' : 's'}, ${mb(before)} → ${mb(this.#usedBytes())}`,
      );
    } finally {
      this.#capping = false;
    }
  }

  /** What the cap may remove, in small batches (it asks again until the store is under the cap). */
  #evictionCandidates(): EvictionCandidate[] {
    const BATCH = 1000;
    const inFlight = JSON.stringify([...this.#inFlight]);
    const executions = this.#db
      .prepare(
        `SELECT id, intent_ns AS t, archived_ns IS NOT NULL AS archived, result_ns IS NOT NULL AS finished,
                CASE WHEN input_kept = 1 THEN input_sha256 END AS input,
                CASE WHEN input_kept = 1 THEN (SELECT octet_length(json) FROM inputs WHERE sha256 = executions.input_sha256) ELSE 0 END AS input_bytes,
                200 + coalesce(octet_length(input_json), 0) + coalesce(octet_length(error_message), 0) + coalesce(octet_length(stdout_head), 0)
                    + coalesce(octet_length(stdout_tail), 0) + coalesce(octet_length(stderr_head), 0) + coalesce(octet_length(stderr_tail), 0) AS bytes
         FROM executions WHERE id NOT IN (SELECT value FROM json_each(?))
         ORDER BY archived_ns IS NULL, result_ns IS NULL, intent_ns, id LIMIT ${BATCH}`,
      )
      .safeIntegers(true)
      .all(inFlight) as Row[];
    const decisions = this.#db
      .prepare(
        `SELECT id, time_ns AS t, archived_ns IS NOT NULL AS archived, 100 + octet_length(output) AS bytes FROM decisions
         WHERE id NOT IN (SELECT decision_id FROM executions WHERE decision_id IS NOT NULL)
         ORDER BY archived_ns IS NULL, time_ns, id LIMIT ${BATCH}`,
      )
      .safeIntegers(true)
      .all() as Row[];
    return [
      ...executions.map(
        (r): EvictionCandidate => ({
          kind: 'execution',
          id: String(r.id),
          time_ns: String(r.t),
          archived: Number(r.archived) === 1,
          finished: Number(r.finished) === 1,
          bytes: Number(r.bytes),
          input_sha256: r.input === null ? null : String(r.input),
          input_bytes: Number(r.input_bytes ?? 0),
        }),
      ),
      ...decisions.map(
        (r): EvictionCandidate => ({
          kind: 'decision',
          id: String(r.id),
          time_ns: String(r.t),
          archived: Number(r.archived) === 1,
          finished: true,
          bytes: Number(r.bytes),
          input_sha256: null,
          input_bytes: 0,
        }),
      ),
    ];
  }

  async recordAudit(event: AuditEvent): Promise<void> {
    const e = auditEvent(event, this.location);
    const sql = 'INSERT INTO audit (id, time_ns, action, actor, tool, approval_id, detail_json) VALUES (?, ?, ?, ?, ?, ?, ?)';
    const params = [e.id, nanos(e.time_ns), e.action, e.actor, e.tool, e.approval_id, JSON.stringify(e.detail)];
    const result = await this.#write([{ sql, params }]);
    if (!result.ok) throw this.#refused(result, `an audit event with id ${e.id} already exists`);
  }

  async listAudit(filter: AuditFilter = {}): Promise<AuditEvent[]> {
    checkAuditFilter(filter, this.location);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, value: unknown) => (where.push(sql), params.push(value));
    if (filter.since !== undefined) add('time_ns >= ?', bounded(nanos(filter.since)));
    if (filter.tool !== undefined) add('tool = ?', filter.tool);
    if (filter.action !== undefined) add('action = ?', filter.action);
    if (filter.approvalId !== undefined) add('approval_id = ?', filter.approvalId);
    const sql =
      `SELECT * FROM audit ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY time_ns DESC, id DESC` +
      (filter.limit !== undefined ? ` LIMIT ${filter.limit}` : '');
    const rows = await this.#read(() => this.#stmt(sql).all(...params) as Row[]);
    return rows.map((r) => toAudit(r, this.location));
  }

  async createApproval(approval: ApprovalRecord): Promise<void> {
    const a = approvalRecord(approval, this.location);
    const columns = Object.keys(APPROVAL_COLUMNS);
    const sql = `INSERT INTO approvals (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`;
    const result = await this.#write([{ sql, params: columns.map((c) => APPROVAL_COLUMNS[c]!.toSql(a)) }]);
    if (!result.ok) throw this.#refused(result, `an approval with id ${a.id} already exists`);
  }

  async getApproval(id: string): Promise<ApprovalRecord | null> {
    const row = await this.#read(() => this.#stmt('SELECT * FROM approvals WHERE id = ?').get(id) as Row | undefined);
    return row ? toApproval(row, this.location) : null;
  }

  async listApprovals(filter: ApprovalFilter = {}): Promise<ApprovalRecord[]> {
    checkApprovalFilter(filter, this.location);
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status !== undefined) where.push('status IN (SELECT value FROM json_each(?))'), params.push(JSON.stringify(filter.status));
    if (filter.tool !== undefined) where.push('tool = ?'), params.push(filter.tool);
    if (filter.workflowRunId === null) where.push('workflow_run_id IS NULL');
    else if (filter.workflowRunId !== undefined) where.push('workflow_run_id = ?'), params.push(filter.workflowRunId);
    const sql =
      `SELECT * FROM approvals ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY requested_ns DESC, id DESC` +
      (filter.limit !== undefined ? ` LIMIT ${filter.limit}` : '');
    const rows = await this.#read(() => this.#stmt(sql).all(...params) as Row[]);
    return rows.map((r) => toApproval(r, this.location));
  }

  async updateApproval(id: string, from: readonly ApprovalStatus[], patch: ApprovalPatch): Promise<ApprovalRecord | null> {
    const change = approvalPatch(patch, from, this.location);
    // Column names come from the checked patch's own fields, never from the caller's text.
    const fields = Object.keys(change) as (keyof ApprovalPatch)[];
    if (fields.length === 0) {
      const a = await this.getApproval(id);
      if (!a) throw storeError(this.location, `no approval with id ${id}`);
      return from.includes(a.status) ? a : null;
    }
    const sql = `UPDATE approvals SET ${fields.map((f) => `${f} = ?`).join(', ')} WHERE id = ? AND status IN (SELECT value FROM json_each(?))`;
    const params = [
      ...fields.map((f) => {
        const v = change[f];
        return v === null || v === undefined ? null : f.endsWith('_ns') ? nanos(v) : v;
      }),
      id,
      JSON.stringify(from),
    ];
    const result = await this.#write([{ sql, params, probe: { sql: 'SELECT 1 FROM approvals WHERE id = ?', params: [id] } }]);
    if (!result.ok) throw this.#refused(result);
    if (result.changes === 0) {
      if (!result.found) throw storeError(this.location, `no approval with id ${id}`);
      return null;
    }
    return this.getApproval(id);
  }

  async createWorkflowRun(run: WorkflowRunRecord): Promise<void> {
    const row = workflowRunRow(run, this.location);
    const sql = `INSERT INTO workflow_runs (${WORKFLOW_RUN_COLUMNS.join(', ')}) VALUES (${WORKFLOW_RUN_COLUMNS.map(() => '?').join(', ')})`;
    const result = await this.#write([{ sql, params: WORKFLOW_RUN_COLUMNS.map((c) => toSqlValue(c, row[c])) }]);
    if (!result.ok) {
      if (result.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw workflowRefusal.runExists(this.location, row.id);
      throw this.#refused(result);
    }
  }

  async getWorkflowRun(id: string): Promise<WorkflowRunRecord | null> {
    const row = await this.#read(() => this.#stmt('SELECT * FROM workflow_runs WHERE id = ?').get(id) as Row | undefined);
    return row ? workflowRunFromRow(fromSqlRow(row), this.location) : null;
  }

  async listWorkflowRuns(filter: WorkflowRunFilter = {}): Promise<WorkflowRunRecord[]> {
    checkWorkflowRunFilter(filter, this.location);
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status !== undefined) where.push('status IN (SELECT value FROM json_each(?))'), params.push(JSON.stringify(filter.status));
    if (filter.workflow !== undefined) where.push('workflow = ?'), params.push(filter.workflow);
    const sql =
      `SELECT * FROM workflow_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_ns DESC, id DESC` +
      (filter.limit !== undefined ? ` LIMIT ${filter.limit}` : '');
    const rows = await this.#read(() => this.#stmt(sql).all(...params) as Row[]);
    return rows.map((r) => workflowRunFromRow(fromSqlRow(r), this.location));
  }

  async updateWorkflowRun(id: string, from: readonly WorkflowRunStatus[], patch: WorkflowRunPatch): Promise<WorkflowRunRecord | null> {
    const { change, from: statuses } = workflowRunPatchRow(patch, from, this.location);
    // Column names come from the checked change's own fields, never from the caller's text.
    const fields = WORKFLOW_RUN_COLUMNS.filter((c) => c in change) as (keyof typeof change)[];
    // One statement in the group commit's IMMEDIATE transaction: the status test and the change are one step, across processes too.
    const sql = `UPDATE workflow_runs SET ${fields.map((f) => `${f} = ?`).join(', ')}
                 WHERE id = ? AND status IN (SELECT value FROM json_each(?)) RETURNING *`;
    const params = [...fields.map((f) => toSqlValue(f, change[f] ?? null)), id, JSON.stringify(statuses)];
    const result = await this.#write([
      { sql, params, returning: true, probe: { sql: 'SELECT 1 FROM workflow_runs WHERE id = ?', params: [id] } },
    ]);
    if (!result.ok) throw this.#refused(result);
    if (result.row === undefined) {
      if (!result.found) throw workflowRefusal.noRun(this.location, id);
      return null;
    }
    return workflowRunFromRow(fromSqlRow(result.row), this.location);
  }

  async appendWorkflowEvent(event: WorkflowEvent): Promise<void> {
    const row = workflowEventRow(event, this.location);
    const sql = `INSERT INTO workflow_events (${WORKFLOW_EVENT_COLUMNS.join(', ')}) VALUES (${WORKFLOW_EVENT_COLUMNS.map(() => '?').join(', ')})`;
    const result = await this.#write([
      { sql: 'SELECT EXISTS (SELECT 1 FROM workflow_runs WHERE id = ?)', params: [row.run_id], expect: NO_RUN },
      { sql, params: WORKFLOW_EVENT_COLUMNS.map((c) => toSqlValue(c, row[c])) },
    ]);
    if (!result.ok) {
      if (result.code === CHECK_FAILED && result.message === NO_RUN)
        throw workflowRefusal.noRunForEvent(this.location, row.run_id, row.seq);
      if (result.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw workflowRefusal.eventExists(this.location, row.run_id, row.seq);
      throw this.#refused(result);
    }
  }

  async listWorkflowEvents(runId: string, afterSeq?: number): Promise<WorkflowEvent[]> {
    checkWorkflowEventQuery(runId, afterSeq, this.location);
    const rows = await this.#read(
      () => this.#stmt('SELECT * FROM workflow_events WHERE run_id = ? AND seq > ? ORDER BY seq').all(runId, afterSeq ?? 0) as Row[],
    );
    return rows.map((r) => workflowEventFromRow(fromSqlRow(r), this.location));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#settled();
    const writer = this.#writer;
    if (writer) {
      this.#writer = undefined;
      writer.worker.ref();
      const exited = new Promise((resolve) => writer.worker.once('exit', resolve));
      writer.worker.postMessage('close');
      await exited;
    }
    // The last connection to close checkpoints and removes the WAL.
    this.#db.close();
  }

  // --- plumbing -----------------------------------------------------------------

  #stmt(sql: string): Database.Statement {
    let s = this.#statements.get(sql);
    if (!s) {
      // Integers come back as bigint so nanosecond times stay exact; toExecution converts the rest.
      s = this.#db.prepare(sql);
      if (s.reader) s.safeIntegers(true);
      this.#statements.set(sql, s);
    }
    return s;
  }

  /** A write that failed on its own: a duplicate id, a failed check, or what SQLite said. */
  #refused(result: Extract<WriteResult, { ok: false }>, duplicate?: string): CorralError {
    if (duplicate && result.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return storeError(this.location, duplicate);
    if (result.code === CHECK_FAILED) return storeError(this.location, result.message);
    return this.#error(result);
  }

  /**
   * Queue a write for the next group commit; resolves with its result once
   * it is durable, rejects when the commit itself failed (read-only, disk
   * full, I/O error).
   */
  #write(ops: WriteOp[]): Promise<WriteResult> {
    if (this.#closed) return Promise.reject(storeError(this.location, 'is closed'));
    return this.#enqueue(ops);
  }

  #enqueue(ops: WriteOp[]): Promise<WriteResult> {
    return new Promise<WriteResult>((resolve, reject) => {
      this.#queue.push({ ops, resolve, reject });
      // While a commit is in flight the queue waits for it: it is sent the moment that commit ends.
      if (!this.#scheduled && this.#committing === null) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          this.#flush();
        });
      }
    });
  }

  /** Commit every queued write in one transaction: on the commit thread once it is up (a lone write here), else here. */
  #flush(): void {
    if (this.#committing !== null || this.#queue.length === 0) return;
    const batch = this.#queue;
    this.#queue = [];
    // Reads waiting for earlier writes queue empty writes: those need no commit.
    const writes = batch.filter((w) => w.ops.length > 0).length;
    if (writes === 0) return this.#settle(batch, { results: batch.map(() => ({ ok: true, changes: 0 })) });
    // Started when writes first queue together: one caller's writes (an intent, then a result,
    // each alone) never need it, and its ~40 ms boot competed with a fresh process's first call.
    if (this.#threaded && this.#writer === undefined && !this.#writerFailed && writes > 1) this.#startWriter();
    if (!this.#threaded || this.#writerFailed) {
      this.#commitHere(batch, { wait: true });
      return;
    }
    // A lone write commits here (with nothing queued to gather, the thread would add only its two
    // hops, ~0.1 ms each way, twice a call for one caller), as do writes while the thread boots;
    // but the event loop never waits for another process's write lock: the thread does.
    if ((writes === 1 || !this.#writer?.ready) && this.#commitHere(batch, { wait: false })) return;
    if (this.#writer?.ready) {
      this.#committing = batch;
      this.#writer.worker.ref(); // a pending commit keeps the process alive, as a pending setImmediate did
      this.#writer.worker.postMessage({ writes: batch.map((w) => w.ops) });
      return;
    }
    // Locked by another process while the thread boots: it takes them once ready.
    this.#queue = [...batch, ...this.#queue];
    if (this.#writer === undefined) this.#startWriter();
  }

  /**
   * Commit `batch` on this thread, waiting for another process's write lock
   * (at most BUSY_TIMEOUT_MS) or not. False when that lock was held and not
   * waited for (nothing written, the batch untouched); otherwise its writers are told.
   */
  #commitHere(batch: PendingWrite[], { wait }: { wait: boolean }): boolean {
    const ops = batch.map((w) => w.ops);
    let outcome: { results: WriteResult[] } | { error: CorralError };
    // Set, not prepared once: SQLite applies a busy_timeout pragma when it is prepared, not when run.
    if (!wait) this.#db.pragma('busy_timeout = 0');
    try {
      this.#commit ??= batchCommitter(this.#db);
      outcome = { results: this.#commit(ops) };
    } catch (err) {
      // BEGIN IMMEDIATE takes the lock first: refused there, nothing was written.
      if (codeOf(err) === 'SQLITE_BUSY' && !wait && !this.#db.inTransaction) return false;
      outcome = { error: this.#error(err) };
    } finally {
      if (!wait) this.#db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
    this.#settle(batch, outcome);
    return true;
  }

  /** Tell a committed (or failed) batch's writers, then send what queued meanwhile. */
  #settle(batch: PendingWrite[], outcome: { results: WriteResult[] } | { error: CorralError }): void {
    if ('error' in outcome) {
      for (const w of batch) w.reject(outcome.error);
    } else {
      if (batch.some((w) => w.ops.length > 0)) this.#commits++;
      batch.forEach((w, i) => {
        w.resolve(outcome.results[i]!);
      });
      this.#enforceCap();
    }
    this.#flush();
  }

  /** Start the commit thread; until it says ready (or if it never does), commits run here. */
  #startWriter(): void {
    let worker: Worker;
    try {
      const config: WriterConfig = { location: this.location, synchronous: this.#synchronous, walSizeLimit: WAL_SIZE_LIMIT };
      worker = new Worker(WRITER_URL, { workerData: config });
    } catch {
      this.#writerFailed = true;
      return;
    }
    worker.unref(); // an idle store does not keep the process alive
    const writer: Writer = { worker, ready: false };
    this.#writer = writer;
    worker.on('message', (message: CommitReply | 'ready' | { failed: string }) => {
      if (message === 'ready') {
        writer.ready = true;
        this.#flush(); // writes that found the lock held while it booted
      } else if ('failed' in message) this.#writerGone(writer, message.failed);
      else this.#committed(message);
    });
    worker.on('error', (err) => this.#writerGone(writer, describe(err)));
    worker.on('exit', () => this.#writerGone(writer, 'it exited'));
  }

  #committed(reply: CommitReply): void {
    const batch = this.#committing!;
    this.#committing = null;
    this.#writer?.worker.unref();
    if ('error' in reply) this.#settle(batch, { error: this.#error(Object.assign(new Error(reply.error.message), reply.error)) });
    else this.#settle(batch, { results: reply.results });
  }

  /** The commit thread failed or stopped: a commit it had may or may not be durable, so it fails; the rest commit here. */
  #writerGone(writer: Writer, why: string): void {
    if (this.#writer !== writer) return;
    this.#writer = undefined;
    this.#writerFailed = true;
    const batch = this.#committing;
    this.#committing = null;
    if (batch) this.#settle(batch, { error: storeError(this.location, `its commit thread stopped during a commit (${why})`) });
    else this.#flush();
  }

  /** Once every write queued so far is committed (or failed). */
  async #settled(): Promise<void> {
    if (this.#committing === null) this.#flush(); // commits here, or sends the batch to the commit thread
    if (this.#committing === null && this.#queue.length === 0) return;
    // An empty write queued last: it resolves with the commit that takes the writes before it.
    await this.#enqueue([]).catch(() => {});
  }

  /** Run a read after committing queued writes, so a caller reads what it wrote. */
  async #read<T>(fn: () => T): Promise<T> {
    if (this.#closed) throw storeError(this.location, 'is closed');
    await this.#settled();
    try {
      return fn();
    } catch (err) {
      throw this.#error(err);
    }
  }

  #error(err: unknown): CorralError {
    if (err instanceof CorralError) return err;
    return storeError(this.location, describe(err), { sqlite_code: codeOf(err) });
  }
}

/** What `stat` says a path is when it is not a regular file: [details.kind, words for the message]. */
function kindOf(st: Stats): [string, string] | null {
  if (st.isFile()) return null;
  if (st.isDirectory()) return ['directory', 'a directory'];
  if (st.isFIFO()) return ['fifo', 'a named pipe (FIFO)'];
  if (st.isSocket()) return ['socket', 'a socket'];
  if (st.isCharacterDevice()) return ['character-device', 'a character device'];
  if (st.isBlockDevice()) return ['block-device', 'a block device'];
  return ['other', 'not a regular file'];
}

/**
 * Before SQLite opens (or ever writes) anything: refuse a path that is not a
 * regular file (SQLite on a folder fails with a raw EISDIR, on a FIFO it
 * could block, on /dev/null it "writes" into nothing) and a non-empty file
 * that is not SQLite. Returns whether the file exists with bytes in it.
 */
function checkFile(location: string): boolean {
  let st: Stats;
  try {
    st = statSync(location); // follows symlinks: a link to a store is fine, a link to a folder is not
  } catch {
    return false; // missing (it will be created), or unreachable (opening says why)
  }
  const refuseKind = ([kind, words]: [string, string]) =>
    storeError(location, `is ${words}, not a file; a snapshot store is an SQLite file. Choose another path with --store or CORRAL_STORE`, {
      kind,
    });
  const kind = kindOf(st);
  if (kind) throw refuseKind(kind);
  if (st.size === 0) return false;
  const head = Buffer.alloc(16);
  let fd: number;
  try {
    // O_NONBLOCK: if the path was swapped for a FIFO since the stat, the open must not wait for a writer.
    fd = openSync(location, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw storeError(location, `cannot be read: ${describe(err)}`);
  }
  try {
    const swapped = kindOf(fstatSync(fd));
    if (swapped) throw refuseKind(swapped);
    readSync(fd, head, 0, 16, 0);
  } finally {
    closeSync(fd);
  }
  if (head.toString('latin1') !== SQLITE_MAGIC) {
    throw storeError(
      location,
      `is not an SQLite database (it may be damaged, or another kind of file); Corral will not touch it. ` +
        'Move it away or choose another file with --store or CORRAL_STORE',
      { size: st.size },
    );
  }
  return true;
}

/**
 * Run checkOwnership on a read-only connection. A file that cannot even be
 * opened read-only (a WAL file in a folder we cannot write) is left to the
 * writable open, which says why; a damaged one is refused here.
 */
function inspect(location: string): void {
  let db: Database.Database;
  try {
    db = new (sqliteDatabase(location))(location, { readonly: true, fileMustExist: true });
  } catch (err) {
    if (isWriteProblem(err)) return;
    throw storeError(location, describe(err), { sqlite_code: codeOf(err) });
  }
  try {
    checkOwnership(db, location);
  } catch (err) {
    if (err instanceof CorralError) throw err;
    if (isWriteProblem(err)) return;
    throw storeError(location, describe(err), { sqlite_code: codeOf(err) });
  } finally {
    db.close();
  }
}

interface SchemaObject {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

/** sqlite_schema, minus ANALYZE's statistics tables (SQLite's own, and harmless). */
function schemaOf(db: Database.Database): SchemaObject[] {
  const rows = db.prepare('SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name').all() as SchemaObject[];
  return rows.filter((o) => !o.name.startsWith('sqlite_stat'));
}

/** The objects the first `version` migrations make, read back from an in-memory database: exactly what a store of that version holds. */
const expectedSchemas = new Map<number, SchemaObject[]>();
function expectedSchema(version: number): SchemaObject[] {
  let schema = expectedSchemas.get(version);
  if (!schema) {
    const mem = new (sqliteDatabase(':memory:'))(':memory:');
    try {
      for (let v = 0; v < version; v++) mem.exec(MIGRATIONS[v]!);
      schema = schemaOf(mem);
    } finally {
      mem.close();
    }
    expectedSchemas.set(version, schema);
  }
  return schema;
}

/**
 * Throws E_STORE unless the database is a Corral store this code can use, or
 * holds nothing at all. Only reads. An SQLite file with no objects, no
 * application_id and no user_version is accepted as new: that is also what a
 * store looks like while another process is creating it (journal mode set,
 * migration not yet committed).
 */
function checkOwnership(db: Database.Database, location: string): { version: number } {
  // One read transaction, so the three come from one snapshot: read one by one, another process's
  // first migration could land in between (an id of 0 beside Corral's tables, refused as foreign).
  const { appId, version, objects } = db.transaction(() => ({
    appId: db.pragma('application_id', { simple: true }) as number,
    version: db.pragma('user_version', { simple: true }) as number,
    objects: schemaOf(db),
  }))();
  const fresh = appId === 0 && version === 0 && objects.length === 0;
  if (fresh) return { version };
  if (appId !== APPLICATION_ID) {
    const tables = objects.filter((o) => o.type === 'table').map((o) => o.name);
    const others = ['view', 'index', 'trigger']
      .map((type) => [type, objects.filter((o) => o.type === type && o.sql !== null).map((o) => o.name)] as const)
      .filter(([, names]) => names.length > 0)
      .map(([type, names]) => `, ${type === 'index' ? 'indexes' : `${type}s`}: ${names.join(', ')}`)
      .join('');
    throw storeError(
      location,
      `is an SQLite database but not a Corral snapshot store (application_id ${appId}, tables: ${tables.join(', ') || 'none'}${others}); ` +
        'Corral will not write to it. Choose another file with --store or CORRAL_STORE',
      { application_id: appId, tables },
    );
  }
  if (version > SCHEMA_VERSION) {
    throw storeError(
      location,
      `was written by a newer Corral (schema version ${version}; this Corral understands up to ${SCHEMA_VERSION}). ` +
        'Upgrade Corral to use it, or choose another file with --store or CORRAL_STORE',
      { schema_version: version, supported_version: SCHEMA_VERSION },
    );
  }
  // The right id is a claim, not proof: a trigger or view another program added would run on our writes.
  const key = (o: SchemaObject) => `${o.type}\0${o.name}\0${o.tbl_name}\0${o.sql ?? ''}`;
  const label = (o: SchemaObject) => `${o.type} ${o.name}`;
  const expected = expectedSchema(version);
  const have = new Set(objects.map(key));
  const want = new Set(expected.map(key));
  const unexpected = objects.filter((o) => !want.has(key(o))).map(label);
  const missing = expected.filter((o) => !have.has(key(o))).map(label);
  if (unexpected.length > 0 || missing.length > 0) {
    const parts = [
      unexpected.length > 0 ? `not Corral’s: ${unexpected.join(', ')}` : '',
      missing.length > 0 ? `missing or changed: ${missing.join(', ')}` : '',
    ].filter(Boolean);
    throw storeError(
      location,
      `has Corral’s application_id but not its schema (${parts.join('; ')}), so it is not a Corral snapshot store as this Corral wrote it; ` +
        'Corral will not write to it. Choose another file with --store or CORRAL_STORE',
      { application_id: appId, schema_version: version, unexpected, missing },
    );
  }
  return { version };
}

function toExecution(r: Row): ExecutionSnapshot {
  const str = (v: unknown) => (v === null ? null : String(v));
  const num = (v: unknown) => (v === null ? null : Number(v));
  return executionSnapshot({
    id: r.id as string,
    decision_id: str(r.decision_id),
    tool: r.tool as string,
    version: str(r.version),
    wasm_sha256: str(r.wasm_sha256),
    input_sha256: str(r.input_sha256),
    input_json: str(r.input_text),
    intent_ns: String(r.intent_ns),
    result_ns: str(r.result_ns),
    exit_code: num(r.exit_code),
    error_code: str(r.error_code),
    error_message: str(r.error_message),
    stdout_sha256: str(r.stdout_sha256),
    stdout_head: str(r.stdout_head),
    stdout_tail: str(r.stdout_tail),
    stderr_head: str(r.stderr_head),
    stderr_tail: str(r.stderr_tail),
    duration_ms: num(r.duration_ms),
    peak_memory_bytes: num(r.peak_memory_bytes),
    ran_on: str(r.ran_on),
  });
}

function toDecision(r: Row): DecisionSnapshot {
  return decisionSnapshot({
    id: r.id as string,
    time_ns: String(r.time_ns),
    prompt_sha256: r.prompt_sha256 as string,
    output: r.output as string,
    model: r.model === null ? null : String(r.model),
    run_id: r.run_id === null ? null : String(r.run_id),
  });
}

/** How each approval field is stored: JSON columns for the structured ones, integers for times. */
const APPROVAL_COLUMNS: Record<string, { toSql: (a: ApprovalRecord) => unknown }> = {
  id: { toSql: (a) => a.id },
  tool: { toSql: (a) => a.tool },
  version: { toSql: (a) => a.version },
  workflow_run_id: { toSql: (a) => a.workflow_run_id },
  workflow_step: { toSql: (a) => a.workflow_step },
  prompt: { toSql: (a) => a.prompt },
  input_sha256: { toSql: (a) => a.input_sha256 },
  input_json: { toSql: (a) => a.input_json },
  bindings_json: { toSql: (a) => JSON.stringify(a.bindings) },
  caller_json: { toSql: (a) => JSON.stringify(a.caller) },
  folders_json: { toSql: (a) => JSON.stringify(a.folders) },
  requested_by: { toSql: (a) => a.requested_by },
  requested_ns: { toSql: (a) => nanos(a.requested_ns) },
  expires_ns: { toSql: (a) => nanos(a.expires_ns) },
  max_scope: { toSql: (a) => a.max_scope },
  status: { toSql: (a) => a.status },
  scope: { toSql: (a) => a.scope },
  decided_by: { toSql: (a) => a.decided_by },
  decided_ns: { toSql: (a) => (a.decided_ns === null ? null : nanos(a.decided_ns)) },
  comment: { toSql: (a) => a.comment },
  claimed_ns: { toSql: (a) => (a.claimed_ns === null ? null : nanos(a.claimed_ns)) },
  execution_id: { toSql: (a) => a.execution_id },
  revoked_by: { toSql: (a) => a.revoked_by },
  revoked_ns: { toSql: (a) => (a.revoked_ns === null ? null : nanos(a.revoked_ns)) },
};

/** A workflow row's value as SQLite keeps it: times as integers, the rest as is. */
function toSqlValue(column: string, value: unknown): unknown {
  return typeof value === 'string' && column.endsWith('_ns') ? nanos(value) : value;
}

/**
 * A workflow row as read (integers as bigint) in the shape the record check
 * reads: times as decimal strings, other integers as numbers. Any other type
 * is passed on for the check to refuse.
 */
function fromSqlRow(r: Row): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) {
    out[k] = typeof v === 'bigint' ? (k.endsWith('_ns') ? v.toString() : Number(v)) : v;
  }
  return out;
}

/** The message of a workflow event refused because its run is unknown (an `expect` check's). */
const NO_RUN = 'no such workflow run';

/** JSON text from a row, or a value the record check refuses (so a damaged row is E_STORE, not a crash). */
function parseColumn(v: unknown): unknown {
  try {
    return JSON.parse(String(v));
  } catch {
    return undefined;
  }
}

function toAudit(r: Row, location: string): AuditEvent {
  const str = (v: unknown) => (v === null ? null : String(v));
  return auditEvent(
    {
      id: r.id as string,
      time_ns: String(r.time_ns),
      action: r.action as AuditEvent['action'],
      actor: r.actor as string,
      tool: str(r.tool),
      approval_id: str(r.approval_id),
      detail: parseColumn(r.detail_json) as Record<string, unknown>,
    },
    location,
    'holds a damaged audit event',
  );
}

function toApproval(r: Row, location: string): ApprovalRecord {
  const str = (v: unknown) => (v === null ? null : String(v));
  return approvalRecord(
    {
      id: r.id as string,
      tool: r.tool as string,
      version: r.version as string,
      workflow_run_id: str(r.workflow_run_id),
      workflow_step: str(r.workflow_step),
      prompt: str(r.prompt),
      input_sha256: r.input_sha256 as string,
      input_json: r.input_json as string,
      bindings: parseColumn(r.bindings_json) as ApprovalRecord['bindings'],
      caller: parseColumn(r.caller_json) as Record<string, unknown>,
      folders: parseColumn(r.folders_json) as ApprovalRecord['folders'],
      requested_by: r.requested_by as string,
      requested_ns: String(r.requested_ns),
      expires_ns: String(r.expires_ns),
      max_scope: r.max_scope as ApprovalRecord['max_scope'],
      status: r.status as ApprovalStatus,
      scope: str(r.scope) as ApprovalRecord['scope'],
      decided_by: str(r.decided_by),
      decided_ns: str(r.decided_ns),
      comment: str(r.comment),
      claimed_ns: str(r.claimed_ns),
      execution_id: str(r.execution_id),
      revoked_by: str(r.revoked_by),
      revoked_ns: str(r.revoked_ns),
    },
    location,
    'holds a damaged approval',
  );
}

function inputMismatch(hash: string): string {
  return `holds a different input under input_sha256 ${hash}; an input's hash must be the SHA-256 of its text`;
}

/** Bytes in MB, for messages. */
function mb(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MB`;
}

function timeOf(r: SnapshotRecord): string {
  return r.kind === 'decision' ? r.time_ns : r.intent_ns;
}

/** Nanos as an SQLite integer, refusing anything that is not a whole number. */
function nanos(value: string | bigint): bigint {
  if (typeof value === 'bigint') return value;
  if (!/^\d+$/.test(value)) throw new TypeError(`a time must be whole nanoseconds as a decimal string (got ${JSON.stringify(value)})`);
  return BigInt(value);
}

/** SQLite integers stop at 2^63-1 ns (the year 2262); a bound past that means "everything". */
function bounded(ns: bigint): bigint {
  const max = 2n ** 63n - 1n;
  return ns > max ? max : ns;
}

function codeOf(err: unknown): string | undefined {
  return (err as { code?: string } | null)?.code;
}

/** Errors that mean "cannot write here", as opposed to "this is not our file". */
function isWriteProblem(err: unknown): boolean {
  const code = codeOf(err) ?? '';
  return (
    code.startsWith('SQLITE_READONLY') ||
    code === 'SQLITE_FULL' ||
    code.startsWith('SQLITE_IOERR') ||
    code.startsWith('SQLITE_CANTOPEN') ||
    ['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'ENOTDIR', 'EEXIST'].includes(code)
  );
}

/** A sentence for an SQLite or file-system error. */
function describe(err: unknown): string {
  const code = codeOf(err) ?? '';
  const message = typeof (err as { message?: unknown } | null)?.message === 'string' ? (err as { message: string }).message : String(err);
  if (code.startsWith('SQLITE_READONLY')) return `is read-only (${message})`;
  if (code === 'SQLITE_FULL') return `the disk is full (${message})`;
  if (code.startsWith('SQLITE_IOERR')) return `an I/O error (${code}: ${message})`;
  if (code === 'SQLITE_CORRUPT' || code === 'SQLITE_NOTADB') return `is damaged (${message}); move it away or choose another file`;
  if (code.startsWith('SQLITE_BUSY')) return `stayed locked by another process (${message})`;
  if (code === 'EEXIST' || code === 'ENOTDIR') return `a file is in the way (${message})`;
  return message;
}
