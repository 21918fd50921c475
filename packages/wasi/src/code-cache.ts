/**
 * The code a sandbox worker keeps loaded between calls, under a byte budget:
 * each tool's code as sent and its compiled copies (one per memory cap), the
 * least recently used dropped first. One cache serves both runners of a
 * worker. A dropped tool is sent and compiled again on its next call
 * (PoolExecutor resends code a worker answers NOT_LOADED for).
 */

/** The `reason` of the error a runner answers for a key it does not hold (evicted since, or never sent). */
export const NOT_LOADED = 'not_loaded';

/** Bytes of code a worker keeps by default. */
export const DEFAULT_CACHE_BYTES = 256 * 1024 * 1024;

export interface CodeEntry<Source, Compiled> {
  readonly source: Source;
  /** Compiled per memory cap (in pages): the cap is part of the compiled code. */
  readonly compiled: Map<number, Promise<Compiled>>;
  weight: number;
}

export class CodeCache {
  readonly budget: number;
  /** By key, least recently used first (a Map keeps insertion order). */
  readonly #entries = new Map<string, CodeEntry<unknown, unknown>>();
  #bytes = 0;

  constructor(budget = DEFAULT_CACHE_BYTES) {
    this.budget = budget;
  }

  /** What the kept code counts as (see `weight`). */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /**
   * The entry for `key`, made the most recently used; made from `source` if
   * there is none (keys are content hashes: a source sent again is the same
   * code, and what was compiled from it stays). Undefined: not held, none given.
   */
  use<Source, Compiled>(key: string, source: Source | undefined): CodeEntry<Source, Compiled> | undefined {
    let entry = this.#entries.get(key) as CodeEntry<Source, Compiled> | undefined;
    if (entry) {
      this.#entries.delete(key);
      this.#bytes -= entry.weight;
    } else if (source !== undefined) {
      entry = { source, compiled: new Map(), weight: 0 };
    } else {
      return undefined;
    }
    entry.weight = weight(entry.source, entry.compiled.size);
    this.#entries.set(key, entry);
    this.#bytes += entry.weight;
    this.#evict();
    return entry;
  }

  /** Count an entry again after its compiled copies changed (if it is still held). */
  reweigh(key: string, entry: CodeEntry<unknown, unknown>): void {
    if (this.#entries.get(key) !== entry) return;
    this.#bytes -= entry.weight;
    entry.weight = weight(entry.source, entry.compiled.size);
    this.#bytes += entry.weight;
    this.#evict();
  }

  /** Drop the least recently used until the budget holds; the newest stays whatever its size (a call is using it). */
  #evict(): void {
    for (const [key, entry] of this.#entries) {
      if (this.#bytes <= this.budget || this.#entries.size <= 1) return;
      this.#entries.delete(key);
      this.#bytes -= entry.weight;
      for (const compiled of entry.compiled.values()) compiled.then(dispose, () => {});
    }
  }
}

/** What compiled code holds beyond itself (its pooled memories) goes with it. */
function dispose(compiled: unknown): void {
  (compiled as { dispose?: () => void } | null)?.dispose?.();
}

/**
 * What an entry counts against the budget: its code bytes (a module's bytes;
 * a component's core modules and glue) once as sent, and once more for each
 * compiled copy, whose machine code and metadata are of the same order.
 */
function weight(source: unknown, compiledCopies: number): number {
  let bytes = 0;
  if (source instanceof Uint8Array) bytes = source.byteLength;
  else if (typeof source === 'object' && source !== null) {
    const { glue, modules } = source as { glue?: unknown; modules?: Record<string, Uint8Array> };
    if (typeof glue === 'string') bytes += glue.length * 2;
    for (const m of Object.values(modules ?? {})) bytes += m.byteLength;
  }
  return bytes * (1 + compiledCopies);
}
