/**
 * Whether this runtime can load better-sqlite3, the native addon under the
 * SQLite snapshot store. Node can; Bun 1.4.5 and Deno 2.9.6 cannot (Bun has no
 * support for it, Deno loads only Node-API addons). Without this check the
 * load failure looked like an unwritable store, and calls ran unrecorded; a
 * store that can never open here is refused instead, saying what to do.
 */
import Database from 'better-sqlite3';
import { storeError } from '@corral/core/store-kit';
import { hostRuntime } from './runtime.js';

let loadError: unknown;
let probed = false;

/** Throws E_STORE (not `unwritable`) when better-sqlite3 cannot load in this runtime. */
export function checkSqliteLoads(location: string): void {
  if (!probed) {
    probed = true;
    try {
      new Database(':memory:').close();
    } catch (err) {
      loadError = err;
    }
  }
  if (loadError === undefined) return;
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
