/**
 * Where a worker keeps each call's result so a redelivered call is answered,
 * not run again: a snapshot Store (intent, outcome, audit) plus the encoded
 * reply of each finished call, keyed by the call's idempotency key (which is
 * also its execution id).
 */
import { CorralError, ErrorCodes, MemoryStore, type ExecutionOutcome, type Store } from '@corral/core';

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
export interface MemoryLedgerLimits {
  /** Calls kept (results and snapshots), newest first. Default 10,000. */
  maxCalls?: number;
  /** Bytes of encoded results kept. Default 256 MiB. */
  maxBytes?: number;
}

export class MemoryLedger extends MemoryStore implements LedgerStore {
  readonly #results = new Map<string, Uint8Array>();
  readonly #maxCalls: number;
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(location = 'memory ledger', limits: MemoryLedgerLimits = {}) {
    super(location);
    this.#maxCalls = limits.maxCalls ?? 10_000;
    this.#maxBytes = limits.maxBytes ?? 256 * 2 ** 20;
    for (const [option, v] of [
      ['maxCalls', this.#maxCalls],
      ['maxBytes', this.#maxBytes],
    ] as const)
      if (!(Number.isSafeInteger(v) && v >= 1))
        throw new CorralError(ErrorCodes.INPUT_VALIDATION, `MemoryLedger: ${option} must be a whole number ≥ 1 (got ${String(v)})`, {
          option,
        });
  }

  async getCallResult(key: string): Promise<Uint8Array | null> {
    return this.#results.get(key)?.slice() ?? null;
  }

  async finishCall(key: string, outcome: ExecutionOutcome, result: Uint8Array): Promise<boolean> {
    // Checked and written without an await in between: one "transaction" in a single-threaded process.
    if (this.#results.has(key)) return false;
    const done = this.finishExecution(key, outcome);
    const copy = result.slice();
    this.#results.set(key, copy);
    this.#bytes += copy.length;
    try {
      await done;
    } catch (err) {
      this.#results.delete(key);
      this.#bytes -= copy.length;
      throw err;
    }
    if (this.#results.size > this.#maxCalls || this.#bytes > this.#maxBytes) await this.#trim();
    return true;
  }

  /**
   * A long-lived worker without a database must not grow without bound on
   * its callers' behalf: drop the oldest tenth of its calls, results and
   * snapshots together (a redelivery of one then runs again, as a new call).
   */
  async #trim(): Promise<void> {
    const calls = Math.floor(this.#maxCalls * 0.9);
    const bytes = Math.floor(this.#maxBytes * 0.9);
    for (const [key, result] of this.#results) {
      if (this.#results.size <= calls && this.#bytes <= bytes) break;
      this.#results.delete(key);
      this.#bytes -= result.length;
    }
    const gone = await this.prune({ keep: this.#results.size });
    for (const r of gone) {
      const result = r.kind === 'execution' ? this.#results.get(r.id) : undefined;
      if (result) {
        this.#results.delete(r.id);
        this.#bytes -= result.length;
      }
    }
  }
}
