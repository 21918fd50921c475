/** The snapshot store the `snapshots` and `replay` commands read: one that already exists. */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Store } from '@corral/core';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { SqliteStore, defaultStorePath } from '../store-sqlite.js';
import { isPostgresUrl, openPostgresStore } from '../store-url.js';
import { UsageError } from './shared.js';

/** Open the store named by --store (else the default) that must already exist; a PostgreSQL URL opens that database's store. */
export async function openExisting(path: string | undefined): Promise<Store | undefined> {
  const given = path ?? defaultStorePath();
  if (isPostgresUrl(given)) return openPostgresStore(given);
  const location = resolve(given);
  // Only a store that is not there is "none yet": one that cannot be looked at (EACCES) is opened, which says why.
  try {
    statSync(location);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
  }
  return SqliteStore.open(location, { onProgress: storeProgress });
}

/** The store's progress lines (a slow one-time compaction, what the size cap removed), on stderr. */
export function storeProgress(message: string): void {
  process.stderr.write(`corral: ${message}\n`);
}

/**
 * --store-max-mb MB, else $CORRAL_STORE_MAX_MB: the size cap in bytes for
 * the commands that record calls (run, serve, mcp), or undefined for none.
 */
export function storeCapFlag(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): number | undefined {
  const [text, from] = flag !== undefined ? [flag, '--store-max-mb'] : [env.CORRAL_STORE_MAX_MB, 'CORRAL_STORE_MAX_MB'];
  if (text === undefined || text === '') return undefined;
  const mb = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text.trim()) || !(mb > 0)) {
    throw new UsageError(`bad ${from} ${JSON.stringify(text)}: a size in megabytes greater than 0, e.g. 500.`);
  }
  return Math.max(1, Math.round(mb * 1024 * 1024));
}

/** The Corral.create options for --store-max-mb (with the store's progress lines on stderr). */
export function storeCapOptions(flag: string | undefined): { storeMaxBytes?: number; onStoreProgress: (message: string) => void } {
  const max = storeCapFlag(flag);
  return { ...(max !== undefined ? { storeMaxBytes: max } : {}), onStoreProgress: storeProgress };
}

export function noStore(path: string | undefined): CorralError {
  const location = resolve(path ?? defaultStorePath());
  return new CorralError(ErrorCodes.STORE, `No snapshot store at ${location} (nothing recorded yet, or pass --store PATH)`, {
    store: location,
  });
}
