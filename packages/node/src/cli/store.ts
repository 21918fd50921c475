/** The snapshot store the `snapshots` and `replay` commands read: one that already exists. */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { SqliteStore, defaultStorePath } from '../store-sqlite.js';

/** Open the store named by --store (else the default) that must already exist. */
export async function openExisting(path: string | undefined): Promise<SqliteStore | undefined> {
  const location = resolve(path ?? defaultStorePath());
  if (!existsSync(location)) return undefined;
  return SqliteStore.open(location);
}

export function noStore(path: string | undefined): CorralError {
  const location = resolve(path ?? defaultStorePath());
  return new CorralError(ErrorCodes.STORE, `No snapshot store at ${location} (nothing recorded yet, or pass --store PATH)`, {
    store: location,
  });
}
