/**
 * Where a worker keeps each call's result so a redelivered call is answered,
 * not run again: a snapshot Store (intent, outcome, audit) plus the encoded
 * reply of each finished call, keyed by the call's idempotency key (which is
 * also its execution id).
 */
import { MemoryStore, type ExecutionOutcome, type Store } from '@corral/core';

export interface CallLedger {
  /** The encoded reply of call `key`, or null when it has no outcome yet. */
  getCallResult(key: string): Promise<Uint8Array | null>;
  /** Records execution `key`'s outcome and the full encoded result in one transaction; false (nothing written) if it already has an outcome. */
  finishCall(key: string, outcome: ExecutionOutcome, result: Uint8Array): Promise<boolean>;
}

/** What a FleetWorker records into: a Store that is also a CallLedger (PostgresStore is one). */
export type LedgerStore = Store & CallLedger;

/**
 * A ledger in memory, over core's MemoryStore: for tests, and for a worker
 * started without a shared database. Results are exactly-once only within
 * this process's life and among the deliveries it sees; another worker, or
 * this one after a restart, does not know them.
 */
export class MemoryLedger extends MemoryStore implements LedgerStore {
  readonly #results = new Map<string, Uint8Array>();

  constructor(location = 'memory ledger') {
    super(location);
  }

  async getCallResult(key: string): Promise<Uint8Array | null> {
    return this.#results.get(key)?.slice() ?? null;
  }

  async finishCall(key: string, outcome: ExecutionOutcome, result: Uint8Array): Promise<boolean> {
    // Checked and written without an await in between: one "transaction" in a single-threaded process.
    if (this.#results.has(key)) return false;
    const done = this.finishExecution(key, outcome);
    this.#results.set(key, result.slice());
    try {
      await done;
    } catch (err) {
      this.#results.delete(key);
      throw err;
    }
    return true;
  }
}
