/**
 * Whether this runtime can load better-sqlite3, the native addon under the
 * SQLite snapshot store. Node can; Bun 1.4.5 and Deno 2.9.6 cannot (Bun has no
 * support for it, Deno loads only Node-API addons). Without this check the
 * load failure looked like an unwritable store, and calls ran unrecorded; a
 * store that can never open here is refused instead, saying what to do.
 */
import type DatabaseConstructor from 'better-sqlite3';
import { storeError } from '@corral/core/store-kit';
import { hostRuntime } from './runtime.js';
import { packageRequire } from './package-files.js';

let Database: typeof DatabaseConstructor | undefined;
let loadError: unknown;

/**
 * better-sqlite3's Database, loaded when a store first opens rather than
 * when Corral is imported (its modules and native addon cost ~20 ms, and a
 * store opens while the first worker boots). Throws E_STORE (not
 * `unwritable`) when it cannot load in this runtime.
 */
export function sqliteDatabase(location: string): typeof DatabaseConstructor {
  if (Database === undefined && loadError === undefined) {
    try {
      const loaded = packageRequire('better-sqlite3') as typeof DatabaseConstructor;
      new loaded(':memory:').close();
      Database = loaded;
    } catch (err) {
      loadError = err;
    }
  }
  if (Database !== undefined) return Database;
  const runtime = hostRuntime();
  const reason = loadError instanceof Error ? loadError.message.split('\n')[0] : String(loadError);
  const code = (loadError as { code?: unknown }).code;
  throw storeError(
    location,
    `cannot be opened on ${runtime.name} ${runtime.version}: the SQLite store needs better-sqlite3, a native addon this runtime cannot load (${reason}). ` +
      'Run without recording (Corral.create({ store: false }), or --no-store), pass a Store of your own, or run on Node.',
    typeof code === 'string' ? { sqlite_code: code } : {},
  );
}
