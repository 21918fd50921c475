/**
 * The PostgreSQL store's schema: the migrations, and what a schema of each
 * version holds, so a schema that holds anything else (another program's
 * tables, a trigger that would run on Corral's writes) is refused.
 *
 * Times are `bigint` (nanoseconds up to 2^63-1, the limit every Corral
 * store shares); node-postgres reads int8 as a decimal string, never as a JS
 * number, so they stay exact. Free text that may hold NUL (a model's output,
 * a tool's stdout and stderr, an error message, an input's text) is UTF-8 in
 * `bytea`: PostgreSQL's `text` cannot hold U+0000. Ids are `text COLLATE "C"`
 * so ties order by code point as in SQLite, whatever the database's locale.
 */

/** The schema this code writes. A schema whose meta row says more is refused. */
export const SCHEMA_VERSION = 1;

/** The value of `corral_meta.application`: what tells a Corral schema from another program's. */
export const APPLICATION = 'corral';

/**
 * Migration N takes a schema from version N to N+1; run with `search_path`
 * set to the store's schema. Append, never edit: an existing schema must
 * hold exactly what these statements make (see EXPECTED_RELATIONS).
 */
export const MIGRATIONS: string[] = [
  `CREATE TABLE corral_meta (
     application    text PRIMARY KEY CHECK (application = 'corral'),
     schema_version integer NOT NULL
   );
   CREATE TABLE decisions (
     id            text COLLATE "C" PRIMARY KEY,
     time_ns       bigint NOT NULL,
     prompt_sha256 text NOT NULL,
     output        bytea NOT NULL,
     model         text,
     run_id        text,
     archived_ns   bigint
   );
   CREATE INDEX decisions_by_time ON decisions (time_ns, id);
   -- An input's text, kept once per SHA-256 however many calls had it.
   CREATE TABLE inputs (
     sha256 text COLLATE "C" PRIMARY KEY,
     json   bytea NOT NULL
   );
   CREATE TABLE executions (
     id                text COLLATE "C" PRIMARY KEY,
     decision_id       text COLLATE "C",
     tool              text NOT NULL,
     version           text,
     wasm_sha256       text,
     input_sha256      text,
     -- Set when the input is kept in inputs: the key keeps a prune from dropping an input a new call is taking.
     input_ref         text COLLATE "C" REFERENCES inputs (sha256),
     -- The input's text when it is not kept in inputs (no hash to key it by).
     input_json        bytea,
     intent_ns         bigint NOT NULL,
     -- NULL until the call ends: a row without a result reads as 'interrupted'.
     result_ns         bigint,
     exit_code         bigint,
     error_code        text,
     error_message     bytea,
     stdout_sha256     text,
     stdout_head       bytea,
     stdout_tail       bytea,
     stderr_head       bytea,
     stderr_tail       bytea,
     duration_ms       double precision,
     peak_memory_bytes bigint,
     ran_on            bytea,
     archived_ns       bigint
   );
   CREATE INDEX executions_by_time ON executions (intent_ns, id);
   CREATE INDEX executions_by_tool ON executions (tool, intent_ns);
   CREATE INDEX executions_by_decision ON executions (decision_id) WHERE decision_id IS NOT NULL;
   CREATE INDEX executions_by_input ON executions (input_ref) WHERE input_ref IS NOT NULL;
   -- A fleet call's full encoded result, written with its execution's outcome; removed with the execution.
   CREATE TABLE call_results (
     execution_id text COLLATE "C" PRIMARY KEY REFERENCES executions (id) ON DELETE CASCADE,
     result       bytea NOT NULL
   );
   CREATE TABLE audit (
     id          text COLLATE "C" PRIMARY KEY,
     time_ns     bigint NOT NULL,
     action      text NOT NULL,
     actor       text NOT NULL,
     tool        text,
     approval_id text,
     detail_json text NOT NULL
   );
   CREATE INDEX audit_by_time ON audit (time_ns, id);
   CREATE INDEX audit_by_tool ON audit (tool, time_ns);
   CREATE TABLE approvals (
     id              text COLLATE "C" PRIMARY KEY,
     tool            text NOT NULL,
     version         text NOT NULL,
     workflow_run_id text,
     workflow_step   text,
     prompt          text,
     input_sha256    text NOT NULL,
     input_json      text NOT NULL,
     bindings_json   text NOT NULL,
     caller_json     text NOT NULL,
     folders_json    text NOT NULL,
     requested_by    text NOT NULL,
     requested_ns    bigint NOT NULL,
     expires_ns      bigint NOT NULL,
     max_scope       text NOT NULL,
     status          text NOT NULL,
     scope           text,
     decided_by      text,
     decided_ns      bigint,
     comment         text,
     claimed_ns      bigint,
     execution_id    text,
     revoked_by      text,
     revoked_ns      bigint
   );
   CREATE INDEX approvals_by_status ON approvals (status, requested_ns);
   CREATE INDEX approvals_by_tool ON approvals (tool, requested_ns);
   CREATE TABLE workflow_runs (
     id                text COLLATE "C" PRIMARY KEY,
     workflow          text NOT NULL,
     definition_json   text NOT NULL,
     definition_sha256 text NOT NULL,
     inputs_json       text NOT NULL,
     status            text NOT NULL,
     created_ns        bigint NOT NULL,
     updated_ns        bigint NOT NULL,
     outputs_json      text,
     error_json        text
   );
   CREATE INDEX workflow_runs_by_time ON workflow_runs (created_ns, id);
   CREATE INDEX workflow_runs_by_status ON workflow_runs (status, created_ns);
   CREATE TABLE workflow_events (
     run_id       text COLLATE "C" NOT NULL,
     seq          integer NOT NULL,
     at_ns        bigint NOT NULL,
     step         text,
     kind         text NOT NULL,
     attempt      integer NOT NULL,
     tool         text,
     tool_version text,
     execution_id text,
     approval_id  text,
     output_json  text,
     error_json   text,
     note         text,
     PRIMARY KEY (run_id, seq)
   );`,
];

/**
 * The relations (tables `r`, indexes `i`) a schema of each version holds, as
 * `kind name`: anything more is not Corral's, anything less is damage. A
 * test opens a fresh store, so a migration that drifts from this list fails
 * there first.
 */
export const EXPECTED_RELATIONS: Record<number, readonly string[]> = {
  1: [
    'r corral_meta',
    'i corral_meta_pkey',
    'r decisions',
    'i decisions_pkey',
    'i decisions_by_time',
    'r inputs',
    'i inputs_pkey',
    'r executions',
    'i executions_pkey',
    'i executions_by_time',
    'i executions_by_tool',
    'i executions_by_decision',
    'i executions_by_input',
    'r call_results',
    'i call_results_pkey',
    'r audit',
    'i audit_pkey',
    'i audit_by_time',
    'i audit_by_tool',
    'r approvals',
    'i approvals_pkey',
    'i approvals_by_status',
    'i approvals_by_tool',
    'r workflow_runs',
    'i workflow_runs_pkey',
    'i workflow_runs_by_time',
    'i workflow_runs_by_status',
    'r workflow_events',
    'i workflow_events_pkey',
  ],
};

/**
 * The columns of each table a schema of each version holds, as
 * `name type[ collate C][ not null]` (what `#columns` in store-postgres.ts
 * reads from the catalog): a table changed behind Corral's back is refused.
 */
export const EXPECTED_COLUMNS: Record<number, Record<string, string>> = {
  1: {
    approvals:
      'id text collate C not null, tool text not null, version text not null, workflow_run_id text, workflow_step text, prompt text, input_sha256 text not null, input_json text not null, bindings_json text not null, caller_json text not null, folders_json text not null, requested_by text not null, requested_ns bigint not null, expires_ns bigint not null, max_scope text not null, status text not null, scope text, decided_by text, decided_ns bigint, comment text, claimed_ns bigint, execution_id text, revoked_by text, revoked_ns bigint',
    audit:
      'id text collate C not null, time_ns bigint not null, action text not null, actor text not null, tool text, approval_id text, detail_json text not null',
    call_results: 'execution_id text collate C not null, result bytea not null',
    corral_meta: 'application text not null, schema_version integer not null',
    decisions:
      'id text collate C not null, time_ns bigint not null, prompt_sha256 text not null, output bytea not null, model text, run_id text, archived_ns bigint',
    executions:
      'id text collate C not null, decision_id text collate C, tool text not null, version text, wasm_sha256 text, input_sha256 text, input_ref text collate C, input_json bytea, intent_ns bigint not null, result_ns bigint, exit_code bigint, error_code text, error_message bytea, stdout_sha256 text, stdout_head bytea, stdout_tail bytea, stderr_head bytea, stderr_tail bytea, duration_ms double precision, peak_memory_bytes bigint, ran_on bytea, archived_ns bigint',
    inputs: 'sha256 text collate C not null, json bytea not null',
    workflow_events:
      'run_id text collate C not null, seq integer not null, at_ns bigint not null, step text, kind text not null, attempt integer not null, tool text, tool_version text, execution_id text, approval_id text, output_json text, error_json text, note text',
    workflow_runs:
      'id text collate C not null, workflow text not null, definition_json text not null, definition_sha256 text not null, inputs_json text not null, status text not null, created_ns bigint not null, updated_ns bigint not null, outputs_json text, error_json text',
  },
};
