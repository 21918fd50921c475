/**
 * A snapshot store named by a URL instead of a file: `postgres://…` (or
 * `postgresql://…`) opens a PostgresStore, the store a fleet of workers
 * shares. @corral/postgres (and pg) load only when such a URL is given, so
 * SQLite users never load them.
 */
import type { Store } from '@corral/core';

/** Whether a --store / CORRAL_STORE value names a PostgreSQL database rather than an SQLite file. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** Open the PostgreSQL store at `url` (schema `corral`; created when missing). */
export async function openPostgresStore(url: string): Promise<Store> {
  const { PostgresStore } = await import('@corral/postgres');
  return PostgresStore.open(url);
}
