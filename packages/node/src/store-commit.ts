/**
 * One group commit of the SQLite snapshot store: every queued write in one
 * IMMEDIATE transaction. Shared by the store's own connection and its commit
 * thread (store-writer.ts), so both commit exactly alike.
 */
import type Database from 'better-sqlite3';

export type Row = Record<string, string | number | bigint | null>;

/** One SQL statement of a write. */
export interface WriteOp {
  sql: string;
  params: unknown[];
  /** When the statement changes no row, run this and report whether it found one ("unknown id" vs "already done"). */
  probe?: { sql: string; params: unknown[] };
  /** The statement is a query whose single value must be 1; otherwise the write fails with this message. */
  expect?: string;
  /** The statement has a RETURNING clause: the (first) row it returns is the write's `row`; no row counts as no change. */
  returning?: boolean;
}

/** The code of a write refused by an `expect` check. */
export const CHECK_FAILED = 'CORRAL_CHECK_FAILED';

/** How one write (a list of ops that succeed or fail together) went. */
export type WriteResult = { ok: true; changes: number; found?: boolean; row?: Row } | { ok: false; code?: string; message: string };

/** Commits batches of writes on one connection (see batchCommitter). */
export type BatchCommitter = (writes: WriteOp[][]) => WriteResult[];

/**
 * One group commit at each call: every queued write in one transaction,
 * each in a savepoint of its own so a refused write (a duplicate id) fails
 * alone. Made once per connection: its prepared statements and its two
 * transaction functions are kept (better-sqlite3 builds four wrappers and
 * their properties at each `transaction()`; called twice a commit, that was
 * ~8 µs of it).
 */
export function batchCommitter(db: Database.Database): BatchCommitter {
  const statements = new Map<string, Database.Statement>();
  const stmt = (sql: string) => {
    let s = statements.get(sql);
    if (!s) statements.set(sql, (s = db.prepare(sql)));
    return s;
  };
  // A nested better-sqlite3 transaction is a SAVEPOINT: it rolls back alone when it throws.
  const one = db.transaction((ops: WriteOp[]): WriteResult => {
    let changes = 0;
    let found: boolean | undefined;
    let returned: Row | undefined;
    for (const op of ops) {
      if (op.expect !== undefined) {
        if (
          stmt(op.sql)
            .pluck()
            .get(...op.params) !== 1
        )
          throw Object.assign(new Error(op.expect), { code: CHECK_FAILED });
        continue;
      }
      let n: number;
      if (op.returning) {
        // With RETURNING, every change happens at the first step; integers as bigint, so times stay exact.
        returned = stmt(op.sql)
          .safeIntegers(true)
          .get(...op.params) as Row | undefined;
        n = returned === undefined ? 0 : 1;
      } else {
        n = stmt(op.sql).run(...op.params).changes;
      }
      changes += n;
      if (n === 0 && op.probe) found = stmt(op.probe.sql).get(...op.probe.params) !== undefined;
    }
    return { ok: true, changes, ...(found !== undefined ? { found } : {}), ...(returned !== undefined ? { row: returned } : {}) };
  });
  // IMMEDIATE: wait for another process's write lock up front (busy_timeout), not fail mid-way.
  const all = db.transaction((writes: WriteOp[][]): WriteResult[] => {
    const results: WriteResult[] = [];
    for (const ops of writes) {
      try {
        results.push(one(ops));
      } catch (err) {
        // Statement errors leave the transaction open; I/O errors may have rolled it all back.
        if (!db.inTransaction) throw err;
        const e = err as { code?: string; message?: string };
        results.push({ ok: false, ...(e.code ? { code: e.code } : {}), message: e.message ?? String(err) });
      }
    }
    return results;
  }).immediate;
  // When it returns, COMMIT has returned: with synchronous=FULL the WAL is fsynced.
  return all;
}
