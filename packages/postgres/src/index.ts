/**
 * @corral/postgres — Corral's snapshot store in PostgreSQL, shared by the
 * processes of a fleet: `PostgresStore.open('postgres://…')`.
 */
export { MAX_CALL_RESULT_BYTES, PostgresStore, SCHEMA_VERSION, type PostgresStoreOptions } from './store-postgres.js';
