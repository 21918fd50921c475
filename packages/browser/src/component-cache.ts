/**
 * Transpiled components kept in IndexedDB, keyed by the component's SHA-256
 * and PREPARED_FORMAT, so jco's transpile (about a second, plus fetching its
 * 9 MB bindgen) happens once per component per browser profile, not once
 * per page load. A PreparedComponent is plain data (glue text and core
 * module bytes), which IndexedDB stores as it is.
 *
 * A cache only costs or saves time: when IndexedDB is unavailable or fails,
 * `get` misses and `set` does nothing.
 */
import { openDB, type IDBPDatabase } from 'idb';
import { PREPARED_FORMAT, type PreparedComponent } from '@corral/wasi';

/** Where a host keeps transpiled components between page loads. */
export interface PreparedComponentCache {
  get(sha256: string): Promise<PreparedComponent | undefined>;
  set(sha256: string, prepared: PreparedComponent): Promise<void>;
  /** Remove every entry; returns how many there were. */
  clear(): Promise<number>;
}

const STORE = 'components';

export class IndexedDbComponentCache implements PreparedComponentCache {
  readonly name: string;
  #db: Promise<IDBPDatabase | undefined> | undefined;

  /** `name` is the IndexedDB database (default 'corral-components'). */
  constructor(name = 'corral-components') {
    this.name = name;
  }

  #open(): Promise<IDBPDatabase | undefined> {
    this.#db ??= (async () => {
      if (typeof indexedDB === 'undefined') return undefined;
      try {
        const db = await openDB(this.name, 1, { upgrade: (db) => void db.createObjectStore(STORE) });
        // Another tab deleting or upgrading the database must not wait on this one.
        db.addEventListener('versionchange', () => {
          db.close();
          this.#db = undefined;
        });
        return db;
      } catch {
        return undefined;
      }
    })();
    return this.#db;
  }

  async get(sha256: string): Promise<PreparedComponent | undefined> {
    try {
      const value = (await (await this.#open())?.get(STORE, key(sha256))) as PreparedComponent | undefined;
      return isPrepared(value) ? value : undefined;
    } catch {
      return undefined;
    }
  }

  async set(sha256: string, prepared: PreparedComponent): Promise<void> {
    try {
      const db = await this.#open();
      if (!db) return;
      const tx = db.transaction(STORE, 'readwrite');
      // Entries another jco made are never read again: drop them.
      for (const other of await tx.store.getAllKeys()) {
        if (typeof other === 'string' && !other.endsWith(`/${PREPARED_FORMAT}`)) tx.store.delete(other).catch(() => {});
      }
      tx.store.put({ glue: prepared.glue, modules: prepared.modules, imports: prepared.imports }, key(sha256)).catch(() => {});
      await tx.done;
    } catch {
      // Only speed is lost.
    }
  }

  async clear(): Promise<number> {
    const db = await this.#open();
    if (!db) return 0;
    const count = await db.count(STORE);
    await db.clear(STORE);
    return count;
  }

  /** Close the connection (reopened on next use). */
  async close(): Promise<void> {
    const db = await this.#db;
    this.#db = undefined;
    db?.close();
  }
}

function key(sha256: string): string {
  return `${sha256}/${PREPARED_FORMAT}`;
}

/** A damaged entry is a miss. */
function isPrepared(value: unknown): value is PreparedComponent {
  const v = value as PreparedComponent | undefined;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.glue === 'string' &&
    Array.isArray(v.imports) &&
    typeof v.modules === 'object' &&
    v.modules !== null &&
    Object.values(v.modules).every((m) => m instanceof Uint8Array) &&
    (v.preview1 === undefined || v.preview1 instanceof Uint8Array)
  );
}
