/**
 * The snapshot store's commit thread: its own connection to the store file,
 * committing the batches the store sends, one at a time, so the fsync of a
 * commit blocks this thread and not the event loop that dispatches calls
 * (see the header of store-sqlite.ts for what was measured).
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { batchCommitter, type BatchCommitter, type WriteOp, type WriteResult } from './store-commit.js';

export interface WriterConfig {
  location: string;
  synchronous: 'FULL' | 'NORMAL';
  walSizeLimit: number;
}

/** A batch to commit. */
export interface CommitRequest {
  writes: WriteOp[][];
}

/** The commit's outcome: each write's result, or why the commit itself failed. */
export type CommitReply = { results: WriteResult[] } | { error: { code?: string; message: string } };

const port = parentPort!;
const config = workerData as WriterConfig;
let db: Database.Database;
let commit: BatchCommitter;
try {
  db = new Database(config.location, { fileMustExist: true });
  // Per connection, like the store's own: every commit is fsynced before its reply.
  db.pragma(`synchronous = ${config.synchronous}`);
  db.pragma(`journal_size_limit = ${config.walSizeLimit}`);
  commit = batchCommitter(db);
  port.postMessage('ready');
} catch (err) {
  // The store keeps committing on its own connection.
  port.postMessage({ failed: String((err as Error)?.message ?? err) });
  process.exit(0);
}

port.on('message', (message: CommitRequest | 'close') => {
  if (message === 'close') {
    db.close();
    port.close();
    return;
  }
  let reply: CommitReply;
  try {
    reply = { results: commit(message.writes) };
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    reply = { error: { ...(typeof e?.code === 'string' ? { code: e.code } : {}), message: String(e?.message ?? err) } };
  }
  port.postMessage(reply);
});
