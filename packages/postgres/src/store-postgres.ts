/**
 * The PostgreSQL snapshot store: the same Store as SQLite and IndexedDB, in
 * one schema of a database many processes share (a fleet's workers, the CLI).
 *
 * Every write is one transaction, acknowledged after its COMMIT returned.
 * What must hold across processes holds in the database, not here: an
 * intent's id is a primary key (a second beginExecution fails on it), and a
 * result is written by `UPDATE … WHERE result_ns IS NULL` (of two processes
 * finishing one call, exactly one changes a row; the other reads rowCount 0).
 * Approvals and workflow runs change the same way, by status.
 *
 * Connections come from a bounded pool. A connection the server dropped (a
 * restart, a network cut) is discarded, never fatal to the process: a call
 * that failed on one before anything was committed is tried again on a
 * fresh connection (a transaction that never committed wrote nothing), and
 * once the server is back the next call succeeds. A connection lost during
 * COMMIT leaves the write in doubt: an intent, an outcome and a fleet call's
 * result are written again in a way that finds the earlier try's row if it
 * landed (and waits for it if it is still committing); any other write is
 * reported as possibly not durable.
 */
import pg from 'pg';
import {
  approvalPatch,
  approvalRecord,
  auditEvent,
  checkApprovalFilter,
  checkAuditFilter,
  checkExecutionFilter,
  checkIds,
  checkPruneOptions,
  checkRecord,
  checkWorkflowEventQuery,
  checkWorkflowRunFilter,
  decisionSnapshot,
  executionSnapshot,
  storeError,
  WORKFLOW_EVENT_COLUMNS,
  WORKFLOW_RUN_COLUMNS,
  workflowEventFromRow,
  workflowEventRow,
  workflowRefusal,
  workflowRunFromRow,
  workflowRunPatchRow,
  workflowRunRow,
} from '@corral/core/store-kit';
import {
  CorralError,
  nowNs,
  type ApprovalFilter,
  type ApprovalPatch,
  type ApprovalRecord,
  type ApprovalStatus,
  type AuditEvent,
  type AuditFilter,
  type DecisionSnapshot,
  type ExecutionFilter,
  type ExecutionIntent,
  type ExecutionOutcome,
  type ExecutionSnapshot,
  type PruneOptions,
  type SnapshotRecord,
  type Store,
  type WorkflowEvent,
  type WorkflowRunFilter,
  type WorkflowRunPatch,
  type WorkflowRunRecord,
  type WorkflowRunStatus,
} from '@corral/core';
import { APPLICATION, EXPECTED_COLUMNS, EXPECTED_RELATIONS, MIGRATIONS, SCHEMA_VERSION } from './schema.js';

export { SCHEMA_VERSION } from './schema.js';

/** The largest fleet call result `finishCall` keeps (bytes). */
export const MAX_CALL_RESULT_BYTES = 16 * 1024 * 1024;

export interface PostgresStoreOptions {
  /** The schema the store keeps its tables in (created when missing). Default `corral`. */
  schema?: string;
  /** Most connections this store holds at once (1-100). Default 10. */
  maxConnections?: number;
  /** How long to wait for a connection before a call fails (ms). Default 10,000. */
  connectTimeoutMs?: number;
}

type Row = Record<string, unknown>;
type Query = (sql: string, params?: unknown[]) => Promise<pg.QueryResult<Row>>;
/**
 * `again`: an earlier try of this work lost its connection during COMMIT, so
 * it may have landed; work that passes `rerun` to #use finds its own earlier
 * write and succeeds instead of refusing it as another's.
 */
type Work<T> = (q: Query, again: boolean) => Promise<T>;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Tries of a call whose connection failed before it committed anything. */
const ATTEMPTS = 3;
/** SQLSTATEs node-postgres reports for a duplicate key and a foreign key still referenced. */
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';
/** Executions ready to be selected with their input text (kept in `inputs`, or in the row). */
const EXECUTION_FIELDS = `e.id, e.decision_id, e.tool, e.version, e.wasm_sha256, e.input_sha256, e.intent_ns, e.result_ns, e.exit_code,
  e.error_code, e.error_message, e.stdout_sha256, e.stdout_head, e.stdout_tail, e.stderr_head, e.stderr_tail, e.duration_ms, e.peak_memory_bytes,
  e.ran_on`;
const EXECUTIONS = `SELECT ${EXECUTION_FIELDS}, CASE WHEN e.input_ref IS NOT NULL THEN i.json ELSE e.input_json END AS input_text
  FROM @executions e LEFT JOIN @inputs i ON i.sha256 = e.input_ref`;
/** The same rows without their inputs' text, which may be megabytes each (`withInput: false`). */
const EXECUTIONS_WITHOUT_INPUT = `SELECT ${EXECUTION_FIELDS}, NULL::bytea AS input_text FROM @executions e`;
/** Drops every input no execution keeps; an input a call in progress holds (FOR KEY SHARE) is left for the next prune. */
const COLLECT_INPUTS = `DELETE FROM @inputs WHERE sha256 IN (SELECT sha256 FROM @inputs i
  WHERE NOT EXISTS (SELECT 1 FROM @executions e WHERE e.input_ref = i.sha256) FOR UPDATE SKIP LOCKED)`;

const APPROVAL_FIELDS = [
  'id',
  'tool',
  'version',
  'workflow_run_id',
  'workflow_step',
  'prompt',
  'input_sha256',
  'input_json',
  'bindings_json',
  'caller_json',
  'folders_json',
  'requested_by',
  'requested_ns',
  'expires_ns',
  'max_scope',
  'status',
  'scope',
  'decided_by',
  'decided_ns',
  'comment',
  'claimed_ns',
  'execution_id',
  'revoked_by',
  'revoked_ns',
] as const;

export class PostgresStore implements Store {
  /** The database as messages name it: the URL without its password, and the schema. */
  readonly location: string;
  readonly schema: string;
  readonly #pool: pg.Pool;
  /** The schema as an SQL identifier, for `@table` in this file's SQL. */
  readonly #quoted: string;
  #closed = false;
  /** Calls under way: close waits for them, so a write made before close is not cut off. */
  readonly #running = new Set<Promise<unknown>>();

  private constructor(location: string, schema: string, pool: pg.Pool) {
    this.location = location;
    this.schema = schema;
    this.#pool = pool;
    this.#quoted = `"${schema}"`;
  }

  /**
   * Connect to the database at `url` (postgres:// or postgresql://) and make
   * its schema a Corral store: create it and its tables when it holds
   * nothing, upgrade an older one. Several processes may open one database
   * at once: the check and the migrations run in one transaction under an
   * advisory lock. Refuses (E_STORE) a schema that holds anything that is
   * not Corral's and one written by a newer Corral, changing nothing; and a
   * database that cannot be reached, saying why.
   */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const target = parseUrl(url);
    const schema = options.schema ?? 'corral';
    if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
      throw new CorralError(
        'E_INPUT_VALIDATION',
        `PostgresStore.open: schema must be a lower-case SQL name (letters, digits, _; at most 63) (got ${JSON.stringify(schema)})`,
        { option: 'schema' },
      );
    }
    const max = options.maxConnections ?? 10;
    if (!(Number.isInteger(max) && max >= 1 && max <= 100)) {
      throw new CorralError('E_INPUT_VALIDATION', `PostgresStore.open: maxConnections must be a whole number from 1 to 100 (got ${max})`, {
        option: 'maxConnections',
      });
    }
    const timeout = options.connectTimeoutMs ?? 10_000;
    if (!(Number.isInteger(timeout) && timeout > 0)) {
      throw new CorralError('E_INPUT_VALIDATION', `PostgresStore.open: connectTimeoutMs must be a positive whole number (got ${timeout})`, {
        option: 'connectTimeoutMs',
      });
    }
    const pool = new pg.Pool({
      connectionString: url,
      max,
      connectionTimeoutMillis: timeout,
      idleTimeoutMillis: 30_000,
      // An idle store does not keep the process alive, as an idle SQLite store does not.
      allowExitOnIdle: true,
      keepAlive: true,
      application_name: 'corral',
    });
    // An idle connection the server closed (a restart): the pool drops it and the next call opens another.
    // Without a listener the 'error' event would end the process.
    pool.on('error', () => {});
    // A connection that breaks emits 'error' on its client, checked out or not, even after the pool dropped
    // it (the server's FATAL can arrive after release, or in the packet that finished opening it, before the
    // pool's caller has the client). The failure itself reaches the query that was running, so each client
    // gets a listener for life the moment the pool makes it: 'connect' fires before the pool hands it out.
    pool.on('connect', (client) => client.on('error', () => {}));
    const store = new PostgresStore(`${target} (schema ${schema})`, schema, pool);
    try {
      await store.#use(true, (q) => store.#setUp(q));
    } catch (err) {
      await pool.end().catch(() => {});
      throw err;
    }
    return store;
  }

  /** Check the schema and bring it to SCHEMA_VERSION, in the open's transaction. */
  async #setUp(q: Query): Promise<void> {
    // One opener at a time per schema, across processes; released with the transaction.
    await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`corral-store:${this.schema}`]);
    const objects = await this.#objects(q);
    if (objects.length === 0) {
      await q(`CREATE SCHEMA IF NOT EXISTS ${this.#quoted}`);
      await this.#migrate(q, 0);
      return;
    }
    if (!objects.includes('r corral_meta')) {
      const tables = objects.filter((o) => o.startsWith('r ')).map((o) => o.slice(2));
      throw storeError(
        this.location,
        `holds tables that are not a Corral snapshot store's (${objects.join(', ')}); Corral will not write to it. ` +
          'Choose another schema (the schema option) or another database',
        { schema: this.schema, tables },
      );
    }
    const meta = await q(this.#sql('SELECT application, schema_version FROM @corral_meta'));
    const row = meta.rows[0];
    if (meta.rows.length !== 1 || row?.application !== APPLICATION || !Number.isInteger(row.schema_version)) {
      throw storeError(this.location, 'has a damaged corral_meta table (it must hold one row); Corral will not write to it', {
        schema: this.schema,
      });
    }
    const version = row.schema_version as number;
    if (version > SCHEMA_VERSION || !EXPECTED_RELATIONS[version]) {
      throw storeError(
        this.location,
        `was written by a newer Corral (schema version ${version}; this Corral understands up to ${SCHEMA_VERSION}). ` +
          'Upgrade Corral to use it, or choose another schema or database',
        { schema: this.schema, schema_version: version, supported_version: SCHEMA_VERSION },
      );
    }
    const expected = EXPECTED_RELATIONS[version]!;
    const unexpected = objects.filter((o) => !expected.includes(o));
    const missing = expected.filter((o) => !objects.includes(o));
    // A table of the right name whose columns another program changed is no more Corral's.
    const columns = await this.#columns(q);
    const changed = Object.entries(EXPECTED_COLUMNS[version] ?? {})
      .filter(([table, want]) => columns.get(table) !== undefined && columns.get(table) !== want)
      .map(([table]) => table);
    if (unexpected.length > 0 || missing.length > 0 || changed.length > 0) {
      const parts = [
        unexpected.length > 0 ? `not Corral’s: ${unexpected.join(', ')}` : '',
        missing.length > 0 ? `missing: ${missing.join(', ')}` : '',
        changed.length > 0 ? `columns changed: ${changed.join(', ')}` : '',
      ].filter(Boolean);
      throw storeError(
        this.location,
        `is marked as a Corral store but does not hold its schema (${parts.join('; ')}); Corral will not write to it. ` +
          'Choose another schema or database',
        { schema: this.schema, schema_version: version, unexpected, missing: [...missing, ...changed.map((t) => `columns of ${t}`)] },
      );
    }
    if (version < SCHEMA_VERSION) await this.#migrate(q, version);
  }

  /**
   * What the schema holds, as `kind name`: relations (r table, i index, v
   * view, S sequence …), triggers (t), rules (u) and functions (f). Any of
   * the last three on Corral's tables would run on its writes.
   */
  async #objects(q: Query): Promise<string[]> {
    const result = await q(
      `SELECT c.relkind::text AS kind, c.relname::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
       UNION ALL SELECT 't', t.tgname::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND NOT t.tgisinternal
       UNION ALL SELECT 'u', r.rulename::text FROM pg_rules r WHERE r.schemaname = $1
       UNION ALL SELECT 'f', p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
       ORDER BY 2, 1`,
      [this.schema],
    );
    return result.rows.map((r) => `${r.kind} ${r.name}`);
  }

  /** Each table's columns as EXPECTED_COLUMNS spells them: `name type[ collate C][ not null]`, in order. */
  async #columns(q: Query): Promise<Map<string, string>> {
    const result = await q(
      `SELECT c.relname::text AS t, a.attname::text AS col, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS nn,
              co.collname::text AS coll
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_collation co ON co.oid = a.attcollation
       WHERE n.nspname = $1 AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.relname, a.attnum`,
      [this.schema],
    );
    const tables = new Map<string, string[]>();
    for (const r of result.rows) {
      const spelled = `${r.col} ${r.type}${r.coll === 'C' ? ' collate C' : ''}${r.nn ? ' not null' : ''}`;
      tables.set(String(r.t), [...(tables.get(String(r.t)) ?? []), spelled]);
    }
    return new Map([...tables].map(([t, cols]) => [t, cols.join(', ')]));
  }

  async #migrate(q: Query, from: number): Promise<void> {
    await q(`SET LOCAL search_path TO ${this.#quoted}`);
    for (let v = from; v < SCHEMA_VERSION; v++) await q(MIGRATIONS[v]!);
    await q(`RESET search_path`);
    await q(
      this.#sql(`INSERT INTO @corral_meta (application, schema_version) VALUES ($1, $2)
                 ON CONFLICT (application) DO UPDATE SET schema_version = EXCLUDED.schema_version`),
      [APPLICATION, SCHEMA_VERSION],
    );
  }

  async recordDecision(d: DecisionSnapshot): Promise<void> {
    checkRecord('recordDecision', d);
    const params = [d.id, nanos(d.time_ns), d.prompt_sha256, bytes(d.output), d.model ?? null, d.run_id ?? null];
    await this.#use(true, async (q) => {
      await q(
        this.#sql('INSERT INTO @decisions (id, time_ns, prompt_sha256, output, model, run_id) VALUES ($1, $2, $3, $4, $5, $6)'),
        params,
      ).catch(this.#duplicate(`a decision with id ${d.id} already exists`));
    });
  }

  async beginExecution(i: ExecutionIntent): Promise<void> {
    checkRecord('beginExecution', i);
    const hash = i.input_sha256 ?? null;
    const json = i.input_json ?? null;
    // An input with a hash is kept once, in inputs; one without stays in the row (nothing to key it by).
    const keep = hash !== null && json !== null;
    const text = json === null ? null : bytes(json);
    const params = [
      i.id,
      i.decision_id ?? null,
      i.tool,
      i.version ?? null,
      i.wasm_sha256 ?? null,
      hash,
      keep ? hash : null,
      keep ? null : text,
      nanos(i.intent_ns),
    ];
    const work: Work<void> = async (q, again) => {
      if (keep) await this.#keepInput(q, hash, text!);
      const sql = `INSERT INTO @executions (id, decision_id, tool, version, wasm_sha256, input_sha256, input_ref, input_json, intent_ns)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;
      // ON CONFLICT DO NOTHING: the transaction stays usable to tell our own earlier insert from another's.
      const inserted = await q(this.#sql(`${sql} ON CONFLICT (id) DO NOTHING`), params);
      if (inserted.rowCount === 1) return;
      if (again) {
        const mine = await q(
          this.#sql(`SELECT 1 FROM @executions WHERE id = $1 AND tool = $2 AND intent_ns = $3 AND input_sha256 IS NOT DISTINCT FROM $4
                       AND wasm_sha256 IS NOT DISTINCT FROM $5`),
          [i.id, i.tool, params[8], hash, params[4]],
        );
        if (mine.rows.length === 1) return;
      }
      throw storeError(this.location, `an execution with id ${i.id} already exists`);
    };
    await this.#use(true, work, true);
  }

  /**
   * Keep an input under its hash (or find it kept), holding it (FOR KEY
   * SHARE) until the execution that refers to it commits, so a prune running
   * meanwhile cannot drop it. Refuses a different text under a kept hash.
   */
  async #keepInput(q: Query, hash: string, text: Buffer): Promise<void> {
    // A prune may drop the input between the insert and the lock: then insert it again.
    for (let tries = 0; tries < 3; tries++) {
      await q(this.#sql('INSERT INTO @inputs (sha256, json) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING'), [hash, text]);
      const held = await q(this.#sql('SELECT json = $2 AS same FROM @inputs WHERE sha256 = $1 FOR KEY SHARE'), [hash, text]);
      if (held.rows.length === 0) continue;
      if (held.rows[0]!.same !== true) throw storeError(this.location, inputMismatch(hash));
      return;
    }
    throw storeError(this.location, `could not keep the input ${hash}: it was removed three times while being written`);
  }

  async finishExecution(id: string, o: ExecutionOutcome): Promise<void> {
    checkRecord('finishExecution', o, id);
    const done = await this.#use(true, (q, again) => this.#finish(q, id, o, again), true);
    if (!done) throw storeError(this.location, `execution ${id} already has a result`);
  }

  /**
   * Write an outcome if the execution has none: true when this call wrote
   * it, false when it had one already (another process won). Refuses an
   * unknown id.
   */
  async #finish(q: Query, id: string, o: ExecutionOutcome, again: boolean): Promise<boolean> {
    const sql = `UPDATE @executions SET result_ns = $1, exit_code = $2, error_code = $3, error_message = $4, stdout_sha256 = $5,
                   stdout_head = $6, stdout_tail = $7, stderr_head = $8, stderr_tail = $9, duration_ms = $10, peak_memory_bytes = $11,
                   ran_on = $13
                 WHERE id = $12 AND result_ns IS NULL`;
    const params = [
      nanos(o.result_ns),
      o.exit_code ?? null,
      o.error_code ?? null,
      o.error_message === null || o.error_message === undefined ? null : bytes(o.error_message),
      o.stdout_sha256 ?? null,
      bytes(o.stdout_head),
      bytes(o.stdout_tail),
      bytes(o.stderr_head),
      bytes(o.stderr_tail),
      o.duration_ms,
      o.peak_memory_bytes ?? null,
      id,
      o.ran_on === null || o.ran_on === undefined ? null : bytes(o.ran_on),
    ];
    const changed = await q(this.#sql(sql), params);
    if (changed.rowCount === 1) return true;
    const found = await q(this.#sql('SELECT result_ns, stdout_sha256, exit_code, error_code FROM @executions WHERE id = $1'), [id]);
    const row = found.rows[0];
    if (!row) throw storeError(this.location, `no execution with id ${id} to finish`, { id });
    // Our own outcome from a try whose COMMIT landed though its connection was lost: ours, not another's.
    const same =
      again &&
      String(row.result_ns) === params[0] &&
      row.stdout_sha256 === params[4] &&
      num(row.exit_code) === params[1] &&
      row.error_code === params[2];
    return same;
  }

  /** The full result of fleet call `key` (the execution with id `key`), if one was recorded. */
  async getCallResult(key: string): Promise<Uint8Array | null> {
    checkKey('getCallResult', key);
    const result = await this.#use(false, (q) => q(this.#sql('SELECT result FROM @call_results WHERE execution_id = $1'), [key]));
    const value = result.rows[0]?.result;
    return value instanceof Uint8Array ? new Uint8Array(value) : null;
  }

  /**
   * Records execution `key`'s outcome and the call's full encoded result in
   * one transaction. False, writing nothing, if that execution already has
   * an outcome. Refuses (E_STORE) an unknown key and a result over 16 MiB.
   */
  async finishCall(key: string, outcome: ExecutionOutcome, result: Uint8Array): Promise<boolean> {
    checkKey('finishCall', key);
    checkRecord('finishExecution', outcome, key);
    if (!(result instanceof Uint8Array)) {
      throw new CorralError('E_INPUT_VALIDATION', 'finishCall: result must be a Uint8Array', { option: 'result' });
    }
    if (result.byteLength > MAX_CALL_RESULT_BYTES) {
      throw storeError(
        this.location,
        `refuses the result of call ${key}: ${result.byteLength} bytes, over the ${MAX_CALL_RESULT_BYTES}-byte limit`,
        {
          id: key,
        },
      );
    }
    const data = Buffer.from(result.buffer, result.byteOffset, result.byteLength);
    return this.#use(
      true,
      async (q, again) => {
        if (!(await this.#finish(q, key, outcome, again))) return false;
        const kept = await q(this.#sql('INSERT INTO @call_results (execution_id, result) VALUES ($1, $2) ON CONFLICT DO NOTHING'), [
          key,
          data,
        ]);
        if (kept.rowCount === 1) return true;
        // Only an earlier try of this very call can have written it (the outcome was ours): the same bytes, or a refusal.
        const same = await q(this.#sql('SELECT result = $2 AS same FROM @call_results WHERE execution_id = $1'), [key, data]);
        if (same.rows[0]?.same === true) return true;
        throw storeError(this.location, `call ${key} already has a different result`, { id: key });
      },
      true,
    );
  }

  async getExecution(id: string): Promise<ExecutionSnapshot | null> {
    const result = await this.#use(false, (q) => q(this.#sql(`${EXECUTIONS} WHERE e.id = $1`), [id]));
    return result.rows[0] ? toExecution(result.rows[0]) : null;
  }

  async getDecision(id: string): Promise<DecisionSnapshot | null> {
    const result = await this.#use(false, (q) => q(this.#sql('SELECT * FROM @decisions WHERE id = $1'), [id]));
    return result.rows[0] ? toDecision(result.rows[0]) : null;
  }

  async listExecutions(filter: ExecutionFilter = {}): Promise<ExecutionSnapshot[]> {
    checkExecutionFilter(filter);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (filter.tool !== undefined) add('e.tool = ?', filter.tool);
    if (filter.since !== undefined) add('e.intent_ns >= ?', bounded(nanos(filter.since)));
    if (filter.errorCode !== undefined) add('e.error_code = ?', filter.errorCode);
    if (filter.decisionId !== undefined) add('e.decision_id = ?', filter.decisionId);
    if (filter.status === 'interrupted') where.push('e.result_ns IS NULL');
    if (filter.status === 'ok') where.push('e.result_ns IS NOT NULL AND e.error_code IS NULL');
    if (filter.status === 'failed') where.push('e.result_ns IS NOT NULL AND e.error_code IS NOT NULL');
    // checkExecutionFilter vouched for the limit: a whole number, spelled into the SQL.
    const sql =
      `${filter.withInput === false ? EXECUTIONS_WITHOUT_INPUT : EXECUTIONS} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY e.intent_ns DESC, e.id DESC` +
      (filter.limit !== undefined ? ` LIMIT ${filter.limit}` : '');
    const result = await this.#use(false, (q) => q(this.#sql(sql), params));
    return result.rows.map(toExecution);
  }

  /** Decisions then executions, oldest first, a page at a time (each page its own query, so nothing holds a connection between pages). */
  async *export(): AsyncIterable<SnapshotRecord> {
    const PAGE = 500;
    for (const kind of ['decision', 'execution'] as const) {
      const [from, time, alias] = kind === 'decision' ? ['SELECT * FROM @decisions d', 'time_ns', 'd'] : [EXECUTIONS, 'intent_ns', 'e'];
      let after: [string, string] = ['-1', ''];
      for (;;) {
        const sql = `${from} WHERE (${alias}.${time}, ${alias}.id) > ($1::bigint, $2) ORDER BY ${alias}.${time}, ${alias}.id LIMIT ${PAGE}`;
        const { rows } = await this.#use(false, (q) => q(this.#sql(sql), after));
        for (const row of rows) yield kind === 'decision' ? { kind, ...toDecision(row) } : { kind, ...toExecution(row) };
        if (rows.length < PAGE) break;
        const last = rows[rows.length - 1]!;
        after = [String(last[time]), String(last.id)];
      }
    }
  }

  async prune(options: PruneOptions): Promise<SnapshotRecord[]> {
    checkPruneOptions(options);
    const cutoff = options.olderThan === undefined ? undefined : bounded(nanos(options.olderThan));
    // Select in SQL; see selectPruned in core for the rules this mirrors.
    const pick = (table: string, time: string): string => {
      const parts: string[] = [];
      if (cutoff !== undefined) parts.push(`SELECT id FROM @${table} WHERE ${time} < ${cutoff}`);
      // checkPruneOptions vouched for keep: a whole number.
      if (options.keep !== undefined)
        parts.push(`SELECT id FROM (SELECT id FROM @${table} ORDER BY ${time} DESC, id DESC OFFSET ${options.keep}) k`);
      return parts.join(' UNION ');
    };
    const { executions, decisions } = await this.#use(false, async (q) => {
      const executions = (await q(this.#sql(pick('executions', 'intent_ns')))).rows.map((r) => String(r.id));
      // A decision that a kept execution points to stays.
      const decisions = (
        await q(
          this.#sql(`SELECT id FROM (${pick('decisions', 'time_ns')}) p WHERE id NOT IN
                       (SELECT decision_id FROM @executions WHERE decision_id IS NOT NULL AND NOT (id = ANY($1::text[])))`),
          [executions],
        )
      ).rows.map((r) => String(r.id));
      return { executions, decisions };
    });
    if (executions.length === 0 && decisions.length === 0) return [];
    const records = await this.#use(false, async (q) => {
      const records: SnapshotRecord[] = [];
      const d = await q(this.#sql('SELECT * FROM @decisions d WHERE d.id = ANY($1::text[])'), [decisions]);
      for (const row of d.rows) records.push({ kind: 'decision', ...toDecision(row) });
      const e = await q(this.#sql(`${EXECUTIONS} WHERE e.id = ANY($1::text[])`), [executions]);
      for (const row of e.rows) records.push({ kind: 'execution', ...toExecution(row) });
      return records;
    });
    records.sort((a, b) => {
      if (a.kind !== b.kind) return a.kind === 'decision' ? -1 : 1;
      const d = BigInt(timeOf(a)) - BigInt(timeOf(b));
      return d !== 0n ? (d < 0n ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
    if (records.length === 0) return records;
    // The archive is written before anything is deleted; if it fails, nothing is.
    await options.archive?.(records);
    await this.#use(true, async (q) => {
      // Deleting an execution deletes its fleet call result with it (ON DELETE CASCADE).
      await q(this.#sql('DELETE FROM @executions WHERE id = ANY($1::text[])'), [executions]);
      await q(this.#sql('DELETE FROM @decisions WHERE id = ANY($1::text[])'), [decisions]);
      await this.#collectInputs(q);
    });
    // PostgreSQL's autovacuum gives the space back to the table; nothing to do here.
    return records;
  }

  /** Drop unreferenced inputs; one a concurrent call just took is kept (its key check fails), for the next prune. */
  async #collectInputs(q: Query): Promise<void> {
    await q('SAVEPOINT collect_inputs');
    try {
      await q(this.#sql(COLLECT_INPUTS));
      await q('RELEASE SAVEPOINT collect_inputs');
    } catch (err) {
      if (codeOf(err) !== FOREIGN_KEY_VIOLATION) throw err;
      await q('ROLLBACK TO SAVEPOINT collect_inputs');
    }
  }

  async markArchived(ids: readonly string[]): Promise<number> {
    checkIds('markArchived', ids);
    const list = [...new Set(ids)];
    const now = nowNs();
    return this.#use(true, async (q) => {
      let marked = 0;
      for (const table of ['executions', 'decisions']) {
        const r = await q(this.#sql(`UPDATE @${table} SET archived_ns = $1 WHERE archived_ns IS NULL AND id = ANY($2::text[])`), [
          now,
          list,
        ]);
        marked += r.rowCount ?? 0;
      }
      return marked;
    });
  }

  async recordAudit(event: AuditEvent): Promise<void> {
    const e = auditEvent(event, this.location);
    const sql = 'INSERT INTO @audit (id, time_ns, action, actor, tool, approval_id, detail_json) VALUES ($1, $2, $3, $4, $5, $6, $7)';
    const params = [e.id, nanos(e.time_ns), e.action, e.actor, e.tool, e.approval_id, JSON.stringify(e.detail)];
    await this.#use(true, (q) => q(this.#sql(sql), params).catch(this.#duplicate(`an audit event with id ${e.id} already exists`)));
  }

  async listAudit(filter: AuditFilter = {}): Promise<AuditEvent[]> {
    checkAuditFilter(filter, this.location);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (column: string, op: string, value: unknown) => {
      params.push(value);
      where.push(`${column} ${op} $${params.length}`);
    };
    if (filter.since !== undefined) add('time_ns', '>=', bounded(nanos(filter.since)));
    if (filter.tool !== undefined) add('tool', '=', filter.tool);
    if (filter.action !== undefined) add('action', '=', filter.action);
    if (filter.approvalId !== undefined) add('approval_id', '=', filter.approvalId);
    const sql =
      `SELECT * FROM @audit ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY time_ns DESC, id DESC` +
      (filter.limit !== undefined ? ` LIMIT ${filter.limit}` : '');
    const result = await this.#use(false, (q) => q(this.#sql(sql), params));
    return result.rows.map((r) => toAudit(r, this.location));
  }

  async createApproval(approval: ApprovalRecord): Promise<void> {
    const a = approvalRecord(approval, this.location);
    const values = approvalValues(a);
    const sql = `INSERT INTO @approvals (${APPROVAL_FIELDS.join(', ')}) VALUES (${APPROVAL_FIELDS.map((_, n) => `$${n + 1}`).join(', ')})`;
    await this.#use(true, (q) => q(this.#sql(sql), values).catch(this.#duplicate(`an approval with id ${a.id} already exists`)));
  }

  async getApproval(id: string): Promise<ApprovalRecord | null> {
    const result = await this.#use(false, (q) => q(this.#sql('SELECT * FROM @approvals WHERE id = $1'), [id]));
    return result.rows[0] ? toApproval(result.rows[0], this.location) : null;
  }

  async listApprovals(filter: ApprovalFilter = {}): Promise<ApprovalRecord[]> {
    checkApprovalFilter(filter, this.location);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (filter.status !== undefined) add('status = ANY(?::text[])', [...filter.status]);
    if (filter.tool !== undefined) add('tool = ?', filter.tool);
    if (filter.workflowRunId === null) where.push('workflow_run_id IS NULL');
    else if (filter.workflowRunId !== undefined) add('workflow_run_id = ?', filter.workflowRunId);
    const sql =
      `SELECT * FROM @approvals ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY requested_ns DESC, id DESC` +
      (filter.limit !== undefined ? ` LIMIT ${filter.limit}` : '');
    const result = await this.#use(false, (q) => q(this.#sql(sql), params));
    return result.rows.map((r) => toApproval(r, this.location));
  }

  async updateApproval(id: string, from: readonly ApprovalStatus[], patch: ApprovalPatch): Promise<ApprovalRecord | null> {
    const change = approvalPatch(patch, from, this.location);
    // Column names come from the checked patch's own fields, never from the caller's text.
    const fields = APPROVAL_FIELDS.filter((f) => f in change) as (keyof ApprovalPatch)[];
    const row = await this.#use(true, async (q) => {
      if (fields.length === 0) {
        const r = await q(this.#sql('SELECT * FROM @approvals WHERE id = $1'), [id]);
        if (r.rows.length === 0) throw storeError(this.location, `no approval with id ${id}`);
        return from.includes(r.rows[0]!.status as ApprovalStatus) ? r.rows[0]! : null;
      }
      const params = [...fields.map((f) => change[f] ?? null), id, [...from]];
      const sql = `UPDATE @approvals SET ${fields.map((f, n) => `${f} = $${n + 1}`).join(', ')}
                   WHERE id = $${fields.length + 1} AND status = ANY($${fields.length + 2}::text[]) RETURNING *`;
      const r = await q(this.#sql(sql), params);
      if (r.rows.length === 1) return r.rows[0]!;
      const found = await q(this.#sql('SELECT 1 FROM @approvals WHERE id = $1'), [id]);
      if (found.rows.length === 0) throw storeError(this.location, `no approval with id ${id}`);
      return null;
    });
    return row ? toApproval(row, this.location) : null;
  }

  async createWorkflowRun(run: WorkflowRunRecord): Promise<void> {
    const row = workflowRunRow(run, this.location);
    const sql = `INSERT INTO @workflow_runs (${WORKFLOW_RUN_COLUMNS.join(', ')}) VALUES (${WORKFLOW_RUN_COLUMNS.map((_, n) => `$${n + 1}`).join(', ')})`;
    await this.#use(true, async (q) => {
      await q(
        this.#sql(sql),
        WORKFLOW_RUN_COLUMNS.map((c) => row[c]),
      ).catch((err: unknown) => {
        throw codeOf(err) === UNIQUE_VIOLATION ? workflowRefusal.runExists(this.location, row.id) : err;
      });
    });
  }

  async getWorkflowRun(id: string): Promise<WorkflowRunRecord | null> {
    const result = await this.#use(false, (q) => q(this.#sql('SELECT * FROM @workflow_runs WHERE id = $1'), [id]));
    return result.rows[0] ? workflowRunFromRow(result.rows[0], this.location) : null;
  }

  async listWorkflowRuns(filter: WorkflowRunFilter = {}): Promise<WorkflowRunRecord[]> {
    checkWorkflowRunFilter(filter, this.location);
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status !== undefined) params.push([...filter.status]), where.push(`status = ANY($${params.length}::text[])`);
    if (filter.workflow !== undefined) params.push(filter.workflow), where.push(`workflow = $${params.length}`);
    const sql =
      `SELECT * FROM @workflow_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_ns DESC, id DESC` +
      (filter.limit !== undefined ? ` LIMIT ${filter.limit}` : '');
    const result = await this.#use(false, (q) => q(this.#sql(sql), params));
    return result.rows.map((r) => workflowRunFromRow(r, this.location));
  }

  async updateWorkflowRun(id: string, from: readonly WorkflowRunStatus[], patch: WorkflowRunPatch): Promise<WorkflowRunRecord | null> {
    const { change, from: statuses } = workflowRunPatchRow(patch, from, this.location);
    // Column names come from the checked change's own fields, never from the caller's text.
    const fields = WORKFLOW_RUN_COLUMNS.filter((c) => c in change) as (keyof typeof change)[];
    // One statement: the status test and the change are one step, across processes too.
    const sql = `UPDATE @workflow_runs SET ${fields.map((f, n) => `${f} = $${n + 1}`).join(', ')}
                 WHERE id = $${fields.length + 1} AND status = ANY($${fields.length + 2}::text[]) RETURNING *`;
    const params = [...fields.map((f) => change[f] ?? null), id, statuses];
    const row = await this.#use(true, async (q) => {
      const r = await q(this.#sql(sql), params);
      if (r.rows.length === 1) return r.rows[0]!;
      const found = await q(this.#sql('SELECT 1 FROM @workflow_runs WHERE id = $1'), [id]);
      if (found.rows.length === 0) throw workflowRefusal.noRun(this.location, id);
      return null;
    });
    return row ? workflowRunFromRow(row, this.location) : null;
  }

  async appendWorkflowEvent(event: WorkflowEvent): Promise<void> {
    const row = workflowEventRow(event, this.location);
    const sql = `INSERT INTO @workflow_events (${WORKFLOW_EVENT_COLUMNS.join(', ')}) VALUES (${WORKFLOW_EVENT_COLUMNS.map((_, n) => `$${n + 1}`).join(', ')})`;
    await this.#use(true, async (q) => {
      // The run is held (FOR KEY SHARE) until the event is in.
      const run = await q(this.#sql('SELECT 1 FROM @workflow_runs WHERE id = $1 FOR KEY SHARE'), [row.run_id]);
      if (run.rows.length === 0) throw workflowRefusal.noRunForEvent(this.location, row.run_id, row.seq);
      await q(
        this.#sql(sql),
        WORKFLOW_EVENT_COLUMNS.map((c) => row[c]),
      ).catch((err: unknown) => {
        throw codeOf(err) === UNIQUE_VIOLATION ? workflowRefusal.eventExists(this.location, row.run_id, row.seq) : err;
      });
    });
  }

  async listWorkflowEvents(runId: string, afterSeq?: number): Promise<WorkflowEvent[]> {
    checkWorkflowEventQuery(runId, afterSeq, this.location);
    const result = await this.#use(false, (q) =>
      q(this.#sql('SELECT * FROM @workflow_events WHERE run_id = $1 AND seq > $2 ORDER BY seq'), [runId, afterSeq ?? 0]),
    );
    return result.rows.map((r) => workflowEventFromRow(r, this.location));
  }

  /** Waits for the calls under way, then closes every connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#running]);
    await this.#pool.end().catch(() => {});
  }

  // --- plumbing -----------------------------------------------------------------

  /** `@table` → the table in this store's schema. */
  #sql(sql: string): string {
    return sql.replace(/@([a-z_]+)/g, `${this.#quoted}.$1`);
  }

  /** Turns a duplicate key into the refusal a caller reads; other errors pass on. */
  #duplicate(message: string): (err: unknown) => never {
    return (err) => {
      throw codeOf(err) === UNIQUE_VIOLATION ? storeError(this.location, message) : err;
    };
  }

  /**
   * Run `work` on one pooled connection, in a transaction when `tx`. A
   * connection that fails before COMMIT was sent rolled back with it, so the
   * work is tried again on another (up to ATTEMPTS). After COMMIT was sent
   * the outcome is unknown: work that can recognise its own earlier write
   * (`rerun`: an intent, an outcome, a call's result) runs again with
   * `again` set; for any other the caller is told the write may or may not
   * be durable.
   */
  #use<T>(tx: boolean, work: Work<T>, rerun = false): Promise<T> {
    if (this.#closed) return Promise.reject(storeError(this.location, 'is closed'));
    const call = this.#attempt(tx, work, rerun);
    this.#running.add(call);
    const forget = () => this.#running.delete(call);
    call.then(forget, forget);
    return call;
  }

  async #attempt<T>(tx: boolean, work: Work<T>, rerun: boolean): Promise<T> {
    let again = false;
    for (let attempt = 1; ; attempt++) {
      let client: pg.PoolClient;
      try {
        client = await this.#pool.connect();
      } catch (err) {
        if (attempt < ATTEMPTS && isRetryable(err)) {
          await pause(attempt);
          continue;
        }
        throw this.#error(err);
      }
      let discard = false;
      let committing = false;
      try {
        const q: Query = (sql, params) => client.query<Row>(sql, params);
        if (!tx) return await work(q, again);
        await q('BEGIN');
        const result = await work(q, again);
        committing = true;
        await q('COMMIT');
        return result;
      } catch (err) {
        if (isConnectionError(err)) {
          discard = true;
          if (committing && !(rerun && attempt < ATTEMPTS)) {
            throw this.#error(err, 'the connection was lost while committing: the write may or may not be durable');
          }
          // Work that can tell its own earlier write (rerun) runs again, knowing it may find it.
          if (committing) again = true;
          if (attempt < ATTEMPTS) {
            await pause(attempt);
            continue;
          }
        } else if (tx) {
          await client.query('ROLLBACK').catch(() => {
            discard = true;
          });
        }
        throw this.#error(err);
      } finally {
        client.release(discard || undefined);
      }
    }
  }

  #error(err: unknown, context?: string): CorralError {
    if (err instanceof CorralError) return err;
    const code = codeOf(err);
    const message = (err as { message?: unknown } | null)?.message;
    const text = typeof message === 'string' && message ? message : String(err);
    const details = { store: this.location, schema: this.schema, ...(code ? { pg_code: code } : {}) };
    if (isConnectionError(err)) {
      return new CorralError(
        'E_STORE',
        `Snapshot store ${this.location}: ${context ?? 'cannot reach PostgreSQL'} (${text}${code && !text.includes(code) ? `, ${code}` : ''})`,
        details,
        true,
      );
    }
    return new CorralError(
      'E_STORE',
      `Snapshot store ${this.location}: PostgreSQL refused the request: ${text}${code ? ` (SQLSTATE ${code})` : ''}`,
      details,
    );
  }
}

/** The URL as messages show it (no password), refusing what is not a PostgreSQL URL. */
function parseUrl(url: unknown): string {
  const bad = (why: string): never => {
    throw new CorralError('E_INPUT_VALIDATION', `PostgresStore.open: ${why}`, { option: 'url' });
  };
  if (typeof url !== 'string') return bad(`the URL must be a string (got a ${typeof url})`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return bad('the URL is not a URL; expected postgres://user@host:port/database');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    return bad(`the URL must start with postgres:// or postgresql:// (got ${parsed.protocol}//)`);
  }
  parsed.password = '';
  parsed.search = '';
  parsed.hash = '';
  return parsed.toString();
}

function checkKey(method: string, key: unknown): void {
  if (typeof key !== 'string' || key.length === 0) {
    throw new CorralError('E_INPUT_VALIDATION', `${method}: key must be a non-empty string`, { option: 'key' });
  }
}

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A dropped or refused connection, as opposed to a statement the server refused. */
function isConnectionError(err: unknown): boolean {
  if (err instanceof CorralError) return false;
  const code = codeOf(err) ?? '';
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND'].includes(code))
    return true;
  // SQLSTATE class 08 (connection exception), and the server shutting down or starting up.
  if (code.startsWith('08') || ['57P01', '57P02', '57P03'].includes(code)) return true;
  const message = String((err as { message?: unknown } | null)?.message ?? '');
  return /Connection terminated|connection error|timeout exceeded when trying to connect|not queryable|Client was closed/i.test(message);
}

/** Worth another try on a new connection: not a host name that does not resolve. */
function isRetryable(err: unknown): boolean {
  return isConnectionError(err) && codeOf(err) !== 'ENOTFOUND';
}

function pause(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 100 * attempt * attempt));
}

/** Text as UTF-8 bytes: PostgreSQL's text type cannot hold NUL, bytea can. */
function bytes(s: string): Buffer {
  return Buffer.from(s, 'utf8');
}

function text(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  return Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
}

function num(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

function toExecution(r: Row): ExecutionSnapshot {
  const str = (v: unknown) => (v === null ? null : String(v));
  return executionSnapshot({
    id: String(r.id),
    decision_id: str(r.decision_id),
    tool: String(r.tool),
    version: str(r.version),
    wasm_sha256: str(r.wasm_sha256),
    input_sha256: str(r.input_sha256),
    input_json: text(r.input_text),
    intent_ns: String(r.intent_ns),
    result_ns: str(r.result_ns),
    exit_code: num(r.exit_code),
    error_code: str(r.error_code),
    error_message: text(r.error_message),
    stdout_sha256: str(r.stdout_sha256),
    stdout_head: text(r.stdout_head),
    stdout_tail: text(r.stdout_tail),
    stderr_head: text(r.stderr_head),
    stderr_tail: text(r.stderr_tail),
    duration_ms: num(r.duration_ms),
    peak_memory_bytes: num(r.peak_memory_bytes),
    ran_on: text(r.ran_on),
  });
}

function toDecision(r: Row): DecisionSnapshot {
  return decisionSnapshot({
    id: String(r.id),
    time_ns: String(r.time_ns),
    prompt_sha256: String(r.prompt_sha256),
    output: text(r.output) ?? '',
    model: r.model === null ? null : String(r.model),
    run_id: r.run_id === null ? null : String(r.run_id),
  });
}

/** JSON text from a row, or a value the record check refuses (so a damaged row is E_STORE, not a crash). */
function parseColumn(v: unknown): unknown {
  try {
    return JSON.parse(String(v));
  } catch {
    return undefined;
  }
}

function toAudit(r: Row, location: string): AuditEvent {
  return auditEvent(
    {
      id: r.id as string,
      time_ns: String(r.time_ns),
      action: r.action as AuditEvent['action'],
      actor: r.actor as string,
      tool: r.tool as string | null,
      approval_id: r.approval_id as string | null,
      detail: parseColumn(r.detail_json) as Record<string, unknown>,
    },
    location,
    'holds a damaged audit event',
  );
}

function approvalValues(a: ApprovalRecord): unknown[] {
  return APPROVAL_FIELDS.map((f) => {
    if (f === 'bindings_json') return JSON.stringify(a.bindings);
    if (f === 'caller_json') return JSON.stringify(a.caller);
    if (f === 'folders_json') return JSON.stringify(a.folders);
    return a[f];
  });
}

function toApproval(r: Row, location: string): ApprovalRecord {
  const str = (v: unknown) => (v === null ? null : String(v));
  return approvalRecord(
    {
      id: r.id as string,
      tool: r.tool as string,
      version: r.version as string,
      workflow_run_id: str(r.workflow_run_id),
      workflow_step: str(r.workflow_step),
      prompt: str(r.prompt),
      input_sha256: r.input_sha256 as string,
      input_json: r.input_json as string,
      bindings: parseColumn(r.bindings_json) as ApprovalRecord['bindings'],
      caller: parseColumn(r.caller_json) as Record<string, unknown>,
      folders: parseColumn(r.folders_json) as ApprovalRecord['folders'],
      requested_by: r.requested_by as string,
      requested_ns: String(r.requested_ns),
      expires_ns: String(r.expires_ns),
      max_scope: r.max_scope as ApprovalRecord['max_scope'],
      status: r.status as ApprovalStatus,
      scope: str(r.scope) as ApprovalRecord['scope'],
      decided_by: str(r.decided_by),
      decided_ns: str(r.decided_ns),
      comment: str(r.comment),
      claimed_ns: str(r.claimed_ns),
      execution_id: str(r.execution_id),
      revoked_by: str(r.revoked_by),
      revoked_ns: str(r.revoked_ns),
    },
    location,
    'holds a damaged approval',
  );
}

function inputMismatch(hash: string): string {
  return `holds a different input under input_sha256 ${hash}; an input's hash must be the SHA-256 of its text`;
}

function timeOf(r: SnapshotRecord): string {
  return r.kind === 'decision' ? r.time_ns : r.intent_ns;
}

/** Nanos as a decimal string for a bigint column, refusing anything that is not a whole number. */
function nanos(value: string | bigint): string {
  if (typeof value === 'bigint') return value.toString();
  if (!/^\d+$/.test(value)) throw new TypeError(`a time must be whole nanoseconds as a decimal string (got ${JSON.stringify(value)})`);
  return value;
}

/** bigint columns stop at 2^63-1 ns (the year 2262); a bound past that means "everything". */
function bounded(ns: string): string {
  const max = 2n ** 63n - 1n;
  return BigInt(ns) > max ? max.toString() : ns;
}
