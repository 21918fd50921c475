/**
 * The browser snapshot store: one IndexedDB database, through `idb`.
 *
 * Writes are group-committed like the SQLite store's: one readwrite
 * transaction at a time, opened with `durability: 'strict'` (the browser
 * flushes it to disk before reporting it complete; 'default' lets a browser
 * acknowledge before that), carrying every write issued while the previous
 * one committed; each promise resolves only once its transaction completed.
 * In Chromium most of a commit's cost is per request, not per transaction,
 * but sixteen writes in one transaction still cost a fifth of sixteen
 * transactions.
 *
 * A transaction created later sees every transaction created before it
 * (IndexedDB orders overlapping transactions by creation), so a read only
 * waits for writes that are still queued, not for those already started.
 *
 * Inputs are kept once per SHA-256 in their own object store (schema 3),
 * as in the SQLite store: an execution row refers to its input by
 * `input_ref`, and prune drops an input with the last execution keeping it.
 *
 * Workflow runs and their events (schema 4) have object stores of their
 * own; a run changes only inside one readwrite transaction that reads its
 * status and writes the change (IndexedDB runs such transactions one at a
 * time, across tabs and workers too), and an event's key is [run_id, seq].
 * Neither is pruned or exported.
 */
import { openDB, type DBSchema, type IDBPDatabase, type IDBPTransaction } from 'idb';
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
  matchesApprovalFilter,
  matchesAuditFilter,
  executionSnapshot,
  matchesFilter,
  NO_OUTCOME,
  matchesWorkflowRunFilter,
  selectPruned,
  storeError,
  workflowEventFromRow,
  workflowEventRow,
  workflowRefusal,
  workflowRunFromRow,
  workflowRunPatchRow,
  workflowRunRow,
  type WorkflowEventRow,
  type WorkflowRunRow,
} from '@corral/core/store-kit';
import {
  CorralError,
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
  nowNs,
  type Nanos,
  type PruneOptions,
  type SnapshotRecord,
  type Store,
  type WorkflowEvent,
  type WorkflowRunFilter,
  type WorkflowRunPatch,
  type WorkflowRunRecord,
  type WorkflowRunStatus,
} from '@corral/core';

/** The schema this code writes: IndexedDB's version number. A database from a newer Corral is refused. */
export const SCHEMA_VERSION = 4;
/** Kept in the `meta` store under 'format', to tell a Corral database from another app's of the same name. */
const FORMAT = 'corral-snapshots';

/** Nanos zero-padded to a fixed width, so string order is time order (index keys cannot be bigints). */
type SortKey = string;
const SORT_WIDTH = 32;

/** `archived_ns`: when markArchived marked it (schema 3; absent before). */
type DecisionRow = DecisionSnapshot & { t: SortKey; archived_ns?: Nanos };
/**
 * `input_ref`: the input_sha256 whose text is in `inputs` (the row's own
 * input_json is then null); absent when the row keeps no input there.
 */
type ExecutionRow = ExecutionSnapshot & { t: SortKey; input_ref?: string; archived_ns?: Nanos };
interface InputRow {
  sha256: string;
  json: string;
}
type AuditRow = AuditEvent & { t: SortKey };
type ApprovalRow = ApprovalRecord & { t: SortKey };
/** `t`: the sort key of `created_ns`. */
type RunRow = WorkflowRunRow & { t: SortKey };

interface Schema extends DBSchema {
  meta: { key: string; value: string };
  decisions: { key: string; value: DecisionRow; indexes: { by_time: [SortKey, string] } };
  executions: {
    key: string;
    value: ExecutionRow;
    // Rows whose decision_id is null are left out of by_decision (a null is not a valid key).
    indexes: {
      by_time: [SortKey, string];
      by_tool: [string, SortKey, string];
      by_decision: [string, SortKey, string];
      // Schema version 3: rows without input_ref are left out.
      by_input: string;
    };
  };
  // Schema version 3: each input's text once, by its SHA-256.
  inputs: { key: string; value: InputRow };
  // Schema version 2: the policy's audit trail (by time) and approvals (by request time).
  audit: { key: string; value: AuditRow; indexes: { by_time: [SortKey, string] } };
  approvals: { key: string; value: ApprovalRow; indexes: { by_time: [SortKey, string] } };
  // Schema version 4: workflow runs (by creation time) and their events (keyed [run_id, seq]).
  workflow_runs: { key: string; value: RunRow; indexes: { by_time: [SortKey, string] } };
  workflow_events: { key: [string, number]; value: WorkflowEventRow };
}

type Db = IDBPDatabase<Schema>;
type StoreName = 'meta' | 'decisions' | 'executions' | 'audit' | 'approvals' | 'inputs' | 'workflow_runs' | 'workflow_events';
type UpgradeTx = IDBPTransaction<Schema, StoreName[], 'versionchange'>;

/** Migration N takes a database from version N to N+1. Append, never edit. */
const MIGRATIONS: ((db: Db, tx: UpgradeTx) => void)[] = [
  (db, tx) => {
    db.createObjectStore('meta');
    quiet(tx.objectStore('meta').put(FORMAT, 'format'));
    db.createObjectStore('decisions', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
    const executions = db.createObjectStore('executions', { keyPath: 'id' });
    executions.createIndex('by_time', ['t', 'id']);
    executions.createIndex('by_tool', ['tool', 't', 'id']);
    executions.createIndex('by_decision', ['decision_id', 't', 'id']);
  },
  (db) => {
    db.createObjectStore('audit', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
    db.createObjectStore('approvals', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
  },
  // 3: inputs once per hash. Existing rows move their text over, oldest first;
  // a row whose text disagrees with the one kept under its hash keeps its own.
  (db, tx) => {
    db.createObjectStore('inputs', { keyPath: 'sha256' });
    tx.objectStore('executions').createIndex('by_input', 'input_ref');
    void (async () => {
      const inputs = tx.objectStore('inputs');
      for (let c = await tx.objectStore('executions').index('by_time').openCursor(); c; c = await c.continue()) {
        const row = c.value;
        if (row.input_sha256 === null || row.input_json === null) continue;
        const held = await inputs.get(row.input_sha256);
        if (held !== undefined && held.json !== row.input_json) continue;
        if (held === undefined) quiet(inputs.put({ sha256: row.input_sha256, json: row.input_json }));
        quiet(c.update({ ...row, input_json: null, input_ref: row.input_sha256 }));
      }
    })().catch(() => undefined); // a failed request aborts the upgrade: openDB reports it
  },
  // 4: workflow runs and events; approvals gain the fields of a workflow step's
  // approval, null in every older one (a tool call's), as SQLite's new columns are.
  (db, tx) => {
    db.createObjectStore('workflow_runs', { keyPath: 'id' }).createIndex('by_time', ['t', 'id']);
    db.createObjectStore('workflow_events', { keyPath: ['run_id', 'seq'] });
    void (async () => {
      for (let c = await tx.objectStore('approvals').openCursor(); c; c = await c.continue()) {
        const row = c.value as Partial<ApprovalRow>;
        quiet(c.update({ workflow_run_id: null, workflow_step: null, prompt: null, ...row } as ApprovalRow));
      }
    })().catch(() => undefined); // a failed request aborts the upgrade: openDB reports it
  },
];

export interface IndexedDbStoreOptions {
  /** 'strict' (default) waits for the disk; 'relaxed' is for the benchmark baseline only: it can lose acknowledged writes. */
  durability?: 'strict' | 'relaxed';
}

type WriteOp =
  | { kind: 'decision'; decision: DecisionSnapshot }
  | { kind: 'begin'; intent: ExecutionIntent }
  | { kind: 'finish'; id: string; outcome: ExecutionOutcome }
  | { kind: 'archive'; ids: string[]; time_ns: Nanos };

interface PendingWrite {
  op: WriteOp;
  resolve: () => void;
  reject: (err: unknown) => void;
  /** Told how many rows the write changed (markArchived). */
  count?: (n: number) => void;
}

/** Rows per read transaction while exporting: a transaction cannot stay open while the consumer awaits. */
const EXPORT_PAGE = 500;

export class IndexedDbStore implements Store {
  readonly location: string;
  readonly #db: Db;
  readonly #durability: 'strict' | 'relaxed';
  #queue: PendingWrite[] = [];
  /** One write transaction at a time: writes that arrive while it commits share the next one. */
  #committing = false;
  /** Why the store no longer works ('is closed', or what the browser did); undefined while open. */
  #closed: string | undefined;
  /** Settles after the latest write: close, and reads behind queued writes, wait for it. */
  #lastWrite: Promise<unknown> = Promise.resolve();

  private constructor(location: string, db: Db, durability: 'strict' | 'relaxed') {
    this.location = location;
    this.#db = db;
    this.#durability = durability;
  }

  /**
   * Open (or create) the database `name` of this origin. Refuses, with
   * E_STORE and without changing it, a database that another app keeps
   * under that name and one written by a newer Corral. When IndexedDB is
   * unavailable or refuses to open (a private window, storage blocked) the
   * error has `details.unwritable: true`, as the SQLite store's does.
   */
  static async open(name = 'corral-snapshots', options: IndexedDbStoreOptions = {}): Promise<IndexedDbStore> {
    const location = `IndexedDB database "${name}"`;
    if (typeof indexedDB === 'undefined') {
      throw storeError(location, 'cannot be opened: IndexedDB is not available here', { unwritable: true });
    }
    let foreign: string[] | undefined;
    let store: IndexedDbStore | undefined;
    let db: Db;
    try {
      db = await openDB<Schema>(name, SCHEMA_VERSION, {
        upgrade(db, oldVersion, _newVersion, tx) {
          // An older database that is not ours: leave it exactly as it was.
          if (oldVersion > 0 && !db.objectStoreNames.contains('meta')) {
            foreign = [...db.objectStoreNames];
            // idb's promise for this transaction rejects with AbortError: expected here, not an unhandled rejection.
            tx.done.catch(() => undefined);
            return tx.abort();
          }
          for (let v = oldVersion; v < SCHEMA_VERSION; v++) MIGRATIONS[v]!(db, tx);
        },
        blocking(_current, next) {
          // Another tab upgrades or deletes the database: step aside rather than stall it.
          const why = next === null ? 'it is being deleted' : `a newer Corral (schema version ${next}) is opening it`;
          if (store) store.#shut(`was closed because ${why}`);
        },
        terminated() {
          if (store) store.#shut('was closed by the browser (its storage was cleared or failed)');
        },
      });
    } catch (err) {
      if (foreign) throw foreignError(location, foreign);
      if ((err as DOMException | null)?.name === 'VersionError') throw await newerError(name, location);
      throw storeError(location, `cannot be opened: ${describe(err)}`, { unwritable: true });
    }
    const ours = db.objectStoreNames.contains('meta') && (await db.get('meta', 'format').catch(() => undefined)) === FORMAT;
    if (!ours) {
      db.close();
      throw foreignError(location, [...db.objectStoreNames]);
    }
    return (store = new IndexedDbStore(location, db, options.durability ?? 'strict'));
  }

  async recordDecision(decision: DecisionSnapshot): Promise<void> {
    checkRecord('recordDecision', decision);
    return this.#write({ kind: 'decision', decision });
  }

  async beginExecution(intent: ExecutionIntent): Promise<void> {
    checkRecord('beginExecution', intent);
    return this.#write({ kind: 'begin', intent });
  }

  async finishExecution(id: string, outcome: ExecutionOutcome): Promise<void> {
    checkRecord('finishExecution', outcome, id);
    return this.#write({ kind: 'finish', id, outcome });
  }

  async getExecution(id: string): Promise<ExecutionSnapshot | null> {
    return this.#read(async () => {
      const tx = this.#db.transaction(['executions', 'inputs']);
      const row = await tx.objectStore('executions').get(id);
      return row ? withInput(row, tx.objectStore('inputs')) : null;
    });
  }

  async getDecision(id: string): Promise<DecisionSnapshot | null> {
    const row = await this.#read(() => this.#db.get('decisions', id));
    return row ? decisionSnapshot(row) : null;
  }

  async listExecutions(filter: ExecutionFilter = {}): Promise<ExecutionSnapshot[]> {
    checkExecutionFilter(filter);
    const limit = filter.limit ?? Infinity;
    return this.#read(async () => {
      const since = filter.since === undefined ? sortKey(0n) : sortKey(filter.since, true);
      // Narrow with the best index, newest first; matchesFilter checks the rest.
      const tx = this.#db.transaction(['executions', 'inputs']);
      const index = tx
        .objectStore('executions')
        .index(filter.decisionId !== undefined ? 'by_decision' : filter.tool !== undefined ? 'by_tool' : 'by_time');
      const prefix = filter.decisionId !== undefined ? [filter.decisionId] : filter.tool !== undefined ? [filter.tool] : [];
      // An array key sorts after every string, so [...prefix, []] bounds every row of the prefix.
      const range = IDBKeyRange.bound([...prefix, since], [...prefix, []]);
      const found: ExecutionSnapshot[] = [];
      for (let cursor = await index.openCursor(range, 'prev'); cursor && found.length < limit; cursor = await cursor.continue()) {
        const e = executionSnapshot(cursor.value);
        if (!matchesFilter(e, filter)) continue;
        // Without inputs the 'inputs' store is never read: a listing costs the same with 50 MB inputs as with none.
        found.push(filter.withInput === false ? { ...e, input_json: null } : await withInput(cursor.value, tx.objectStore('inputs')));
      }
      return found;
    });
  }

  async *export(): AsyncIterable<SnapshotRecord> {
    for await (const row of this.#scan('decisions')) yield { kind: 'decision', ...decisionSnapshot(row as DecisionRow) };
    for await (const row of this.#scan('executions')) yield { kind: 'execution', ...(row as ExecutionSnapshot) };
  }

  async prune(options: PruneOptions): Promise<SnapshotRecord[]> {
    checkPruneOptions(options);
    const [executions, decisions] = await this.#read(() => {
      const tx = this.#db.transaction(['executions', 'decisions']);
      return Promise.all([tx.objectStore('executions').getAll(), tx.objectStore('decisions').getAll()]);
    });
    const gone = selectPruned(executions, decisions, options);
    // Only the removed executions' inputs are read (for the records returned), not every input kept.
    const goneRefs = [...new Set(executions.flatMap((e) => (gone.executions.has(e.id) && e.input_ref !== undefined ? [e.input_ref] : [])))];
    const inputs =
      goneRefs.length === 0
        ? []
        : await this.#read(() => {
            const store = this.#db.transaction('inputs').store;
            return Promise.all(goneRefs.map((ref) => store.get(ref)));
          });
    const texts = new Map(inputs.flatMap((i) => (i ? [[i.sha256, i.json] as const] : [])));
    const oldestFirst = (a: { t: SortKey; id: string }, b: { t: SortKey; id: string }) =>
      a.t < b.t ? -1 : a.t > b.t ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    const records: SnapshotRecord[] = [
      ...decisions
        .filter((d) => gone.decisions.has(d.id))
        .sort(oldestFirst)
        .map((d) => ({ kind: 'decision' as const, ...decisionSnapshot(d) })),
      ...executions
        .filter((e) => gone.executions.has(e.id))
        .sort(oldestFirst)
        .map((e) => ({
          kind: 'execution' as const,
          ...executionSnapshot(e.input_ref === undefined ? e : { ...e, input_json: texts.get(e.input_ref) ?? null }),
        })),
    ];
    if (records.length === 0) return records;
    // The archive is written before anything is deleted; if it fails, nothing is.
    await options.archive?.(records);
    this.#open();
    const done = (async () => {
      const tx = this.#db.transaction(['decisions', 'executions', 'inputs'], 'readwrite', { durability: this.#durability });
      for (const id of gone.executions) quiet(tx.objectStore('executions').delete(id));
      for (const id of gone.decisions) quiet(tx.objectStore('decisions').delete(id));
      // In this transaction, so a call that began since the read and keeps the same input keeps it.
      const refs = new Set(executions.flatMap((e) => (gone.executions.has(e.id) && e.input_ref !== undefined ? [e.input_ref] : [])));
      for (const ref of refs) {
        if ((await tx.objectStore('executions').index('by_input').count(ref)) === 0) quiet(tx.objectStore('inputs').delete(ref));
      }
      await tx.done;
    })().catch((err) => Promise.reject(this.#error(err)));
    this.#lastWrite = Promise.all([this.#lastWrite, done.catch(() => undefined)]);
    await done;
    return records;
  }

  async markArchived(ids: readonly string[]): Promise<number> {
    checkIds('markArchived', ids);
    let marked = 0;
    await this.#write({ kind: 'archive', ids: [...new Set(ids)], time_ns: nowNs() }, (n) => (marked = n));
    return marked;
  }

  async recordAudit(event: AuditEvent): Promise<void> {
    const e = auditEvent(event, this.location);
    const t = sortKey(e.time_ns);
    await this.#transact('audit', async (tx) => {
      const store = tx.objectStore('audit');
      if ((await store.getKey(e.id)) !== undefined) return `an audit event with id ${e.id} already exists`;
      quiet(store.add({ ...e, t }));
      return undefined;
    });
  }

  async listAudit(filter: AuditFilter = {}): Promise<AuditEvent[]> {
    checkAuditFilter(filter, this.location);
    const limit = filter.limit ?? Infinity;
    return this.#read(async () => {
      const since = filter.since === undefined ? sortKey(0n) : sortKey(filter.since, true);
      const index = this.#db.transaction('audit').store.index('by_time');
      const found: AuditEvent[] = [];
      const range = IDBKeyRange.bound([since], [[]]);
      for (let cursor = await index.openCursor(range, 'prev'); cursor && found.length < limit; cursor = await cursor.continue()) {
        const e = auditEvent(withoutSortKey(cursor.value), this.location, 'holds a damaged audit event');
        if (matchesAuditFilter(e, filter)) found.push(e);
      }
      return found;
    });
  }

  async createApproval(approval: ApprovalRecord): Promise<void> {
    const a = approvalRecord(approval, this.location);
    const t = sortKey(a.requested_ns);
    await this.#transact('approvals', async (tx) => {
      const store = tx.objectStore('approvals');
      if ((await store.getKey(a.id)) !== undefined) return `an approval with id ${a.id} already exists`;
      quiet(store.add({ ...a, t }));
      return undefined;
    });
  }

  async getApproval(id: string): Promise<ApprovalRecord | null> {
    const row = await this.#read(() => this.#db.get('approvals', id));
    return row ? approvalRecord(withoutSortKey(row), this.location, 'holds a damaged approval') : null;
  }

  async listApprovals(filter: ApprovalFilter = {}): Promise<ApprovalRecord[]> {
    checkApprovalFilter(filter, this.location);
    const limit = filter.limit ?? Infinity;
    return this.#read(async () => {
      const index = this.#db.transaction('approvals').store.index('by_time');
      const found: ApprovalRecord[] = [];
      for (let cursor = await index.openCursor(null, 'prev'); cursor && found.length < limit; cursor = await cursor.continue()) {
        const a = approvalRecord(withoutSortKey(cursor.value), this.location, 'holds a damaged approval');
        if (matchesApprovalFilter(a, filter)) found.push(a);
      }
      return found;
    });
  }

  async updateApproval(id: string, from: readonly ApprovalStatus[], patch: ApprovalPatch): Promise<ApprovalRecord | null> {
    const change = approvalPatch(patch, from, this.location);
    let updated: ApprovalRecord | null = null;
    // One readwrite transaction: IndexedDB runs it alone against the store, across tabs too.
    await this.#transact('approvals', async (tx) => {
      const store = tx.objectStore('approvals');
      const row = await store.get(id);
      if (!row) return `no approval with id ${id}`;
      const current = approvalRecord(withoutSortKey(row), this.location, 'holds a damaged approval');
      if (!from.includes(current.status)) return undefined;
      updated = approvalRecord({ ...current, ...change }, this.location);
      quiet(store.put({ ...updated, t: row.t }));
      return undefined;
    });
    return updated;
  }

  async createWorkflowRun(run: WorkflowRunRecord): Promise<void> {
    const row = workflowRunRow(run, this.location);
    const t = sortKey(row.created_ns);
    await this.#transact(['workflow_runs'], async (tx) => {
      const store = tx.objectStore('workflow_runs');
      if ((await store.getKey(row.id)) !== undefined) return workflowRefusal.runExists(this.location, row.id);
      quiet(store.add({ ...row, t }));
      return undefined;
    });
  }

  async getWorkflowRun(id: string): Promise<WorkflowRunRecord | null> {
    if (typeof id !== 'string') return null;
    const row = await this.#read(() => this.#db.get('workflow_runs', id));
    return row ? workflowRunFromRow(withoutSortKey(row), this.location) : null;
  }

  async listWorkflowRuns(filter: WorkflowRunFilter = {}): Promise<WorkflowRunRecord[]> {
    checkWorkflowRunFilter(filter, this.location);
    const limit = filter.limit ?? Infinity;
    return this.#read(async () => {
      const index = this.#db.transaction('workflow_runs').store.index('by_time');
      const found: WorkflowRunRecord[] = [];
      for (let cursor = await index.openCursor(null, 'prev'); cursor && found.length < limit; cursor = await cursor.continue()) {
        // Filtered on the raw row, then checked, as SQLite filters in its query and checks what it returns.
        if (matchesWorkflowRunFilter(cursor.value, filter)) found.push(workflowRunFromRow(withoutSortKey(cursor.value), this.location));
      }
      return found;
    });
  }

  async updateWorkflowRun(id: string, from: readonly WorkflowRunStatus[], patch: WorkflowRunPatch): Promise<WorkflowRunRecord | null> {
    const { change, from: statuses } = workflowRunPatchRow(patch, from, this.location);
    let updated: WorkflowRunRecord | null = null;
    // One readwrite transaction reads the status and writes the change: IndexedDB runs it alone against the store, across tabs too.
    await this.#transact(['workflow_runs'], async (tx) => {
      const store = tx.objectStore('workflow_runs');
      const row = typeof id === 'string' ? await store.get(id) : undefined;
      if (!row) return workflowRefusal.noRun(this.location, String(id));
      const current = workflowRunFromRow(withoutSortKey(row), this.location);
      if (!statuses.includes(current.status)) return undefined;
      const next: RunRow = { ...row, ...change };
      updated = workflowRunFromRow(withoutSortKey(next), this.location);
      quiet(store.put(next));
      return undefined;
    });
    return updated;
  }

  async appendWorkflowEvent(event: WorkflowEvent): Promise<void> {
    const row = workflowEventRow(event, this.location);
    await this.#transact(['workflow_runs', 'workflow_events'], async (tx) => {
      if ((await tx.objectStore('workflow_runs').getKey(row.run_id)) === undefined)
        return workflowRefusal.noRunForEvent(this.location, row.run_id, row.seq);
      const events = tx.objectStore('workflow_events');
      if ((await events.getKey([row.run_id, row.seq])) !== undefined)
        return workflowRefusal.eventExists(this.location, row.run_id, row.seq);
      quiet(events.add(row));
      return undefined;
    });
  }

  async listWorkflowEvents(runId: string, afterSeq?: number): Promise<WorkflowEvent[]> {
    checkWorkflowEventQuery(runId, afterSeq, this.location);
    const rows = await this.#read(() =>
      this.#db.getAll('workflow_events', IDBKeyRange.bound([runId, afterSeq ?? 0], [runId, Number.POSITIVE_INFINITY], true, false)),
    );
    return rows.map((r) => workflowEventFromRow(r, this.location));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = 'is closed';
    // A write issued before close still lands.
    await this.#lastWrite;
    this.#db.close();
  }

  // --- plumbing -----------------------------------------------------------------

  #write(op: WriteOp, count?: (n: number) => void): Promise<void> {
    try {
      this.#open();
      // Check times now, so a bad one fails its own write and not the batch.
      if (op.kind === 'decision') sortKey(op.decision.time_ns);
      if (op.kind === 'begin') sortKey(op.intent.intent_ns);
      if (op.kind === 'finish') sortKey(op.outcome.result_ns);
    } catch (err) {
      return Promise.reject(err);
    }
    const promise = new Promise<void>((resolve, reject) => {
      this.#queue.push({ op, resolve, reject, ...(count ? { count } : {}) });
      // Everything issued before the microtask runs shares one transaction.
      if (this.#queue.length === 1) queueMicrotask(() => this.#flush());
    });
    this.#lastWrite = promise.catch(() => undefined);
    return promise;
  }

  /** Start committing the queued writes, unless a commit is running: then they go when it ends. */
  #flush(): void {
    if (this.#committing || this.#queue.length === 0) return;
    const batch = this.#queue;
    this.#queue = [];
    this.#committing = true;
    void this.#commit(batch).finally(() => {
      this.#committing = false;
      this.#flush();
    });
  }

  /** Commit a batch in one transaction; each write settles when it is on disk, or refused. */
  async #commit(batch: PendingWrite[]): Promise<void> {
    try {
      const tx = this.#db.transaction(['decisions', 'executions', 'inputs'], 'readwrite', { durability: this.#durability });
      const refusals = await this.#apply(
        tx,
        batch.map((w) => w.op),
      );
      batch.forEach((w, i) => {
        const r = refusals[i];
        if (typeof r === 'string') w.reject(storeError(this.location, r));
        else w.count?.(r ?? 0), w.resolve();
      });
    } catch (err) {
      const error = this.#error(err);
      for (const w of batch) w.reject(error);
    }
  }

  /**
   * Read every row the batch touches at once, apply the writes in order in
   * memory (so a refused one, even a duplicate within the batch, never
   * aborts the others), put what changed, and wait for the commit.
   * Returns, per write, why it was refused, or how many rows it changed (markArchived).
   */
  async #apply(
    tx: IDBPTransaction<Schema, ('decisions' | 'executions' | 'inputs')[], 'readwrite'>,
    ops: WriteOp[],
  ): Promise<(string | number | undefined)[]> {
    const decisions = tx.objectStore('decisions');
    const executions = tx.objectStore('executions');
    const inputStore = tx.objectStore('inputs');
    const archived = ops.flatMap((op) => (op.kind === 'archive' ? op.ids : []));
    const decisionIds = [...new Set(ops.flatMap((op) => (op.kind === 'decision' ? [op.decision.id] : [])))];
    const executionIds = [
      ...new Set([...ops.flatMap((op) => (op.kind === 'begin' ? [op.intent.id] : op.kind === 'finish' ? [op.id] : [])), ...archived]),
    ];
    const hashes = [...new Set(ops.flatMap((op) => (op.kind === 'begin' && keepsInput(op.intent) ? [op.intent.input_sha256!] : [])))];
    const archivedDecisions = [...new Set(archived)];
    const [dRows, eRows, iRows, aRows] = await Promise.all([
      Promise.all(decisionIds.map((id) => decisions.getKey(id))),
      Promise.all(executionIds.map((id) => executions.get(id))),
      Promise.all(hashes.map((h) => inputStore.get(h))),
      Promise.all(archivedDecisions.map((id) => decisions.get(id))),
    ]);
    const decided = new Set(decisionIds.filter((_, i) => dRows[i] !== undefined));
    const rows = new Map(executionIds.map((id, i) => [id, eRows[i]]));
    const texts = new Map(hashes.map((h, i) => [h, iRows[i]?.json]));
    const newInputs = new Set<string>();
    const decisionRows = new Map(archivedDecisions.map((id, i) => [id, aRows[i]]));
    const changed = new Set<string>();
    const changedDecisions = new Set<string>();
    const refusals = ops.map((op): string | number | undefined => {
      if (op.kind === 'archive') {
        let n = 0;
        for (const id of new Set(op.ids)) {
          const row = rows.get(id);
          if (row && row.archived_ns === undefined) rows.set(id, { ...row, archived_ns: op.time_ns }), changed.add(id), n++;
          const d = decisionRows.get(id);
          if (d && d.archived_ns === undefined) decisionRows.set(id, { ...d, archived_ns: op.time_ns }), changedDecisions.add(id), n++;
        }
        return n;
      }
      if (op.kind === 'decision') {
        const d = op.decision;
        if (decided.has(d.id)) return `a decision with id ${d.id} already exists`;
        decided.add(d.id);
        quiet(decisions.add({ ...decisionSnapshot(d), t: sortKey(d.time_ns) }));
      } else if (op.kind === 'begin') {
        const i = op.intent;
        if (rows.get(i.id)) return `an execution with id ${i.id} already exists`;
        const keep = keepsInput(i);
        if (keep) {
          const hash = i.input_sha256!;
          const held = texts.get(hash);
          if (held !== undefined && held !== i.input_json) {
            return `holds a different input under input_sha256 ${hash}; an input's hash must be the SHA-256 of its text`;
          }
          if (held === undefined) texts.set(hash, i.input_json!), newInputs.add(hash);
        }
        const row: ExecutionRow = { ...executionSnapshot({ ...i, ...NO_OUTCOME }), t: sortKey(i.intent_ns) };
        rows.set(i.id, keep ? { ...row, input_json: null, input_ref: i.input_sha256! } : row);
        changed.add(i.id);
      } else {
        const row = rows.get(op.id);
        if (!row) return `no execution with id ${op.id} to finish`;
        if (row.result_ns !== null) return `execution ${op.id} already has a result`;
        rows.set(op.id, { ...row, ...executionSnapshot({ ...row, ...op.outcome }) });
        changed.add(op.id);
      }
      return undefined;
    });
    for (const hash of newInputs) quiet(inputStore.put({ sha256: hash, json: texts.get(hash)! }));
    for (const id of changed) quiet(executions.put(rows.get(id)!));
    for (const id of changedDecisions) quiet(decisions.put(decisionRows.get(id)!));
    await tx.done;
    return refusals;
  }

  /**
   * One readwrite transaction on stores outside the group commit (audit,
   * approvals, workflows), ordered after every write issued before it; `fn`
   * returns why it refused (a message, or the error to throw; the
   * transaction is then aborted) or undefined. Resolves once it is durable.
   */
  #transact<N extends 'audit' | 'approvals' | 'workflow_runs' | 'workflow_events'>(
    names: N | N[],
    fn: (tx: IDBPTransaction<Schema, N[], 'readwrite'>) => Promise<string | CorralError | undefined>,
  ): Promise<void> {
    try {
      this.#open();
    } catch (err) {
      return Promise.reject(err);
    }
    const done = (async () => {
      // Behind queued snapshot writes, so a caller's writes land in the order it issued them.
      if (this.#queue.length > 0) await this.#lastWrite;
      const tx = this.#db.transaction(Array.isArray(names) ? names : [names], 'readwrite', { durability: this.#durability });
      let refusal: string | CorralError | undefined;
      try {
        refusal = await fn(tx);
      } catch (err) {
        // A record read back damaged (or a failed request): nothing of this transaction lands, and
        // its promise's AbortError is expected here, not an unhandled rejection.
        tx.done.catch(() => undefined);
        try {
          tx.abort();
        } catch {
          // Already aborted by the failed request.
        }
        throw err;
      }
      if (refusal !== undefined) {
        tx.abort();
        await tx.done.catch(() => undefined);
        throw typeof refusal === 'string' ? storeError(this.location, refusal) : refusal;
      }
      await tx.done;
    })().catch((err) => Promise.reject(this.#error(err)));
    this.#lastWrite = Promise.all([this.#lastWrite, done.catch(() => undefined)]);
    return done;
  }

  /** Run a read after every write issued before it, so a caller reads what it wrote. */
  async #read<T>(fn: () => Promise<T>): Promise<T> {
    this.#open();
    this.#flush();
    // Started writes are ordered before this read by IndexedDB; queued ones are not yet.
    if (this.#queue.length > 0) await this.#lastWrite;
    try {
      return await fn();
    } catch (err) {
      throw this.#error(err);
    }
  }

  /** Every row of a store, oldest first, a page per transaction; executions come with their inputs. */
  async *#scan(name: 'decisions' | 'executions'): AsyncIterable<DecisionRow | ExecutionSnapshot> {
    let range: IDBKeyRange | undefined;
    for (;;) {
      const page: (DecisionRow | ExecutionRow)[] = [];
      const records = await this.#read(async () => {
        const tx = this.#db.transaction([name, 'inputs']);
        page.push(...(await tx.objectStore(name).index('by_time').getAll(range, EXPORT_PAGE)));
        if (name === 'decisions') return page as DecisionRow[];
        return Promise.all(page.map((row) => withInput(row as ExecutionRow, tx.objectStore('inputs'))));
      });
      yield* records;
      const last = page.at(-1);
      if (page.length < EXPORT_PAGE || !last) return;
      range = IDBKeyRange.lowerBound([last.t, last.id], true);
    }
  }

  #open(): void {
    if (this.#closed) throw storeError(this.location, this.#closed);
  }

  #shut(reason: string): void {
    if (this.#closed) return;
    this.#closed = reason;
    this.#db.close();
    const error = storeError(this.location, reason);
    for (const w of this.#queue.splice(0)) w.reject(error);
  }

  #error(err: unknown): CorralError {
    if (err instanceof CorralError) return err;
    const name = (err as DOMException | null)?.name;
    // The connection went away under the call: say why, not what IndexedDB called it.
    if (this.#closed && name === 'InvalidStateError') return storeError(this.location, this.#closed);
    return storeError(this.location, describe(err), { dom_error: name, unwritable: name === 'QuotaExceededError' || undefined });
  }
}

/** Whether an intent's input is kept in `inputs` (it needs a hash to be kept by). */
function keepsInput(i: ExecutionIntent): boolean {
  return (i.input_sha256 ?? null) !== null && (i.input_json ?? null) !== null;
}

/** An execution row as a snapshot, with its input's text read from `inputs` when it keeps it there. */
async function withInput(row: ExecutionRow, inputs: { get(key: string): Promise<InputRow | undefined> }): Promise<ExecutionSnapshot> {
  if (row.input_ref === undefined) return executionSnapshot(row);
  const input = await inputs.get(row.input_ref);
  return executionSnapshot({ ...row, input_json: input?.json ?? null });
}

/** A row as kept, minus its sort key. */
function withoutSortKey<T extends { t: SortKey }>(row: T): Omit<T, 't'> {
  const { t: _t, ...rest } = row;
  return rest;
}

/** A request whose failure aborts its transaction: `tx.done` reports it, so its own promise is left quiet. */
function quiet(request: Promise<unknown>): void {
  request.catch(() => undefined);
}

/** The fixed-width key of a time; `lenient` clamps a bound past the width instead of refusing it. */
function sortKey(ns: Nanos | bigint, lenient = false): SortKey {
  const s = String(ns);
  if (!/^\d+$/.test(s)) throw new TypeError(`a time must be whole nanoseconds as a decimal string (got ${JSON.stringify(ns)})`);
  if (s.length > SORT_WIDTH) {
    if (lenient) return '9'.repeat(SORT_WIDTH);
    throw new TypeError(`a time must be under 10^${SORT_WIDTH} ns (got ${s})`);
  }
  return s.padStart(SORT_WIDTH, '0');
}

function foreignError(location: string, objectStores: string[]): CorralError {
  return storeError(
    location,
    `holds something other than Corral snapshots (object stores: ${objectStores.join(', ') || 'none'}); ` +
      'Corral will not write to it. Open the store under another name',
    { object_stores: objectStores },
  );
}

/** The error for a database whose version is past ours: newer Corral, or not Corral at all. */
async function newerError(name: string, location: string): Promise<CorralError> {
  // Opening without a version opens it as it is; were it deleted meanwhile, aborting the upgrade creates nothing.
  const db = await openDB(name, undefined, { upgrade: (_db, _old, _new, tx) => tx.abort() }).catch(() => undefined);
  const version = db?.version;
  const objectStores = db ? [...db.objectStoreNames] : [];
  db?.close();
  if (db && !objectStores.includes('meta')) return foreignError(location, objectStores);
  return storeError(
    location,
    `was written by a newer Corral (schema version ${version ?? 'unknown'}; this Corral understands up to ${SCHEMA_VERSION}). ` +
      'Upgrade Corral to use it, or open the store under another name',
    { schema_version: version, supported_version: SCHEMA_VERSION },
  );
}

/** A sentence for an IndexedDB failure. */
function describe(err: unknown): string {
  const name = (err as DOMException | null)?.name ?? '';
  const message = err instanceof Error ? err.message : String(err);
  if (name === 'QuotaExceededError') return `the browser's storage quota for this site is used up (${message})`;
  if (name === 'InvalidStateError') return `the connection is closed (${message})`;
  if (name === 'UnknownError') return `the browser could not read or write its storage (${message})`;
  return name ? `${name}: ${message}` : message;
}
