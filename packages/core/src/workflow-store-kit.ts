/**
 * Workflow runs and events as every Store adapter keeps them, the way
 * policy-records.ts does for audit events and approvals: one check of each
 * record before it is written and after it is read (a store file is
 * untrusted too), one row shape, one filter and one sort order, so the
 * adapters answer alike (test/store-conformance.ts holds them to it).
 *
 * The adapters keep rows, not records: the JSON values of a record
 * (definition, inputs, outputs, an event's output, errors) as JSON text,
 * checked for size and depth once, and parsed afresh on every read, so what
 * a reader gets is never the object a writer passed, nor anything but JSON.
 * SQLite keeps a row's fields as columns of the same names, IndexedDB as an
 * object, MemoryStore as is.
 */
import { MAX_JSON_DEPTH, jsonTextTooDeep } from './json-depth.js';
import {
  checkedId as id,
  checkedNanos,
  checkedOneOf as oneOf,
  checkedPlainObject as plainObject,
  checkedString as str,
  newestByTime,
  recordProblem as fail,
  withRecordCheck,
} from './policy-records.js';
import { storeError, type Nanos } from './snapshot.js';
import {
  MAX_WORKFLOW_EVENT_BYTES,
  MAX_WORKFLOW_RECORD_BYTES,
  WORKFLOW_EVENT_KINDS,
  WORKFLOW_RUN_STATUSES,
  type WorkflowEvent,
  type WorkflowEventKind,
  type WorkflowRunError,
  type WorkflowRunFilter,
  type WorkflowRunPatch,
  type WorkflowRunRecord,
  type WorkflowRunStatus,
} from './workflow-records.js';

/** A workflow run as a store keeps it. */
export interface WorkflowRunRow {
  id: string;
  workflow: string;
  /** A JSON object's text. */
  definition_json: string;
  definition_sha256: string;
  inputs_json: string;
  status: WorkflowRunStatus;
  created_ns: Nanos;
  updated_ns: Nanos;
  /** Null when the run has no outputs (yet). */
  outputs_json: string | null;
  /** A WorkflowRunError's JSON text, or null. */
  error_json: string | null;
}

/** The columns `updateWorkflowRun` may change, as row fields. */
export type WorkflowRunRowPatch = Partial<Pick<WorkflowRunRow, 'status' | 'outputs_json' | 'error_json'>> & { updated_ns: Nanos };

/** A workflow event as a store keeps it. */
export interface WorkflowEventRow {
  run_id: string;
  seq: number;
  at_ns: Nanos;
  step: string | null;
  kind: WorkflowEventKind;
  attempt: number;
  tool: string | null;
  tool_version: string | null;
  execution_id: string | null;
  approval_id: string | null;
  /** Null when the event has no output. */
  output_json: string | null;
  /** `{code, message}` as JSON text, or null. */
  error_json: string | null;
  note: string | null;
}

/** Field order of a run row: the SQLite columns, the order adapters write them in. */
export const WORKFLOW_RUN_COLUMNS = [
  'id',
  'workflow',
  'definition_json',
  'definition_sha256',
  'inputs_json',
  'status',
  'created_ns',
  'updated_ns',
  'outputs_json',
  'error_json',
] as const satisfies readonly (keyof WorkflowRunRow)[];

/** Field order of an event row. */
export const WORKFLOW_EVENT_COLUMNS = [
  'run_id',
  'seq',
  'at_ns',
  'step',
  'kind',
  'attempt',
  'tool',
  'tool_version',
  'execution_id',
  'approval_id',
  'output_json',
  'error_json',
  'note',
] as const satisfies readonly (keyof WorkflowEventRow)[];

const MAX_NAME = 256;
/** Longest error message or note kept (characters). */
const MAX_TEXT = 64 * 1024;
/** Largest error as JSON text. */
const MAX_ERROR_BYTES = 2 * MAX_TEXT;
/** The latest time a record may carry: SQLite's largest integer (in the year 2262), the same for every store. */
const MAX_NS = 2n ** 63n - 1n;
const RUN_LEVEL_KINDS: readonly WorkflowEventKind[] = ['run_resumed'];

const time = (field: string, v: unknown): Nanos => {
  const ns = checkedNanos(field, v)!;
  if (BigInt(ns) > MAX_NS) fail(field, 'must be at most 2^63-1 nanoseconds');
  return ns;
};
const sha256 = (field: string, v: unknown): string => {
  if (typeof v !== 'string' || !/^[0-9a-f]{64}$/.test(v)) fail(field, 'must be a lower-case hex SHA-256');
  return v;
};
const count = (field: string, v: unknown, min: number): number => {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) fail(field, `must be a whole number ≥ ${min}`);
  return v;
};
/** A string of up to `max` characters without NUL; unlike `str`, it may be empty (a message, a note). */
const text = (field: string, v: unknown, max: number, nullable = false): string | null => {
  if (v === null && nullable) return null;
  if (typeof v !== 'string' || v.length > max || v.includes('\0'))
    fail(field, `must be ${nullable ? 'null or ' : ''}a string of at most ${max} characters without NUL`);
  return v;
};

/** UTF-8 length of a string, without encoding it. */
function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x800) {
      // A surrogate pair is 2 UTF-16 units and 4 bytes; a lone surrogate is replaced by U+FFFD (3 bytes).
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) (n += 2), i++;
      else n += 2;
    } else if (c >= 0x80) n += 1;
  }
  return n;
}

/** JSON text within `max` bytes and the depth limit. */
function jsonText(field: string, v: unknown, max: number): string {
  if (typeof v !== 'string') fail(field, 'must be JSON text');
  if (v.length > max || (v.length * 3 > max && utf8Length(v) > max)) fail(field, `is larger than ${max} bytes as JSON`);
  if (jsonTextTooDeep(v)) fail(field, `nests arrays and objects more than ${MAX_JSON_DEPTH} deep`);
  return v;
}

/** A value as JSON text, checked as `jsonText` does. */
function toJson(field: string, v: unknown, max: number): string {
  let t: string | undefined;
  try {
    t = JSON.stringify(v);
  } catch {
    fail(field, 'must be JSON data (no cycles, no BigInt, not nested past the stack)');
  }
  if (t === undefined) fail(field, 'must be JSON data');
  return jsonText(field, t, max);
}

/** JSON text as a value: a fresh one, never shared with the store. */
function fromJson(field: string, v: unknown, max: number): unknown {
  const t = jsonText(field, v, max);
  try {
    return JSON.parse(t);
  } catch {
    fail(field, 'is not JSON text');
  }
}

const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

function runError(field: string, v: unknown): WorkflowRunError {
  const o = plainObject(field, v);
  const e: WorkflowRunError = { code: str(`${field}.code`, o.code, MAX_NAME)!, message: text(`${field}.message`, o.message, MAX_TEXT)! };
  if (o.step !== undefined) e.step = str(`${field}.step`, o.step, MAX_NAME)!;
  return e;
}

function eventError(field: string, v: unknown): { code: string; message: string } {
  const o = plainObject(field, v);
  return { code: str(`${field}.code`, o.code, MAX_NAME)!, message: text(`${field}.message`, o.message, MAX_TEXT)! };
}

/** A workflow run from a caller, checked, as the row to keep; E_STORE when a field is wrong. */
export function workflowRunRow(run: WorkflowRunRecord, location: string): WorkflowRunRow {
  return withRecordCheck(location, 'refuses a workflow run', () => {
    const o = plainObject('the run', run);
    if (!isObject(o.definition)) fail('definition', 'must be a JSON object (the validated workflow)');
    return {
      id: id('id', o.id)!,
      workflow: str('workflow', o.workflow, MAX_NAME)!,
      definition_json: toJson('definition', o.definition, MAX_WORKFLOW_RECORD_BYTES),
      definition_sha256: sha256('definition_sha256', o.definition_sha256),
      inputs_json: toJson('inputs', o.inputs, MAX_WORKFLOW_RECORD_BYTES),
      status: oneOf('status', o.status, WORKFLOW_RUN_STATUSES)!,
      created_ns: time('created_ns', o.created_ns),
      updated_ns: time('updated_ns', o.updated_ns),
      outputs_json: o.outputs === null ? null : toJson('outputs', o.outputs, MAX_WORKFLOW_RECORD_BYTES),
      error_json: o.error === null ? null : JSON.stringify(runError('error', o.error)),
    };
  });
}

/** A run row read back from a store, checked, as the record; E_STORE ('holds a damaged workflow run') when it is not one. */
export function workflowRunFromRow(row: unknown, location: string): WorkflowRunRecord {
  return withRecordCheck(location, 'holds a damaged workflow run', () => {
    const o = plainObject('the run', row);
    const definition = fromJson('definition', o.definition_json, MAX_WORKFLOW_RECORD_BYTES);
    if (!isObject(definition)) fail('definition', 'must be a JSON object');
    return {
      id: id('id', o.id)!,
      workflow: str('workflow', o.workflow, MAX_NAME)!,
      definition,
      definition_sha256: sha256('definition_sha256', o.definition_sha256),
      inputs: fromJson('inputs', o.inputs_json, MAX_WORKFLOW_RECORD_BYTES),
      status: oneOf('status', o.status, WORKFLOW_RUN_STATUSES)!,
      created_ns: time('created_ns', o.created_ns),
      updated_ns: time('updated_ns', o.updated_ns),
      outputs: o.outputs_json === null ? null : fromJson('outputs', o.outputs_json, MAX_WORKFLOW_RECORD_BYTES),
      error: o.error_json === null ? null : runError('error', fromJson('error', o.error_json, MAX_ERROR_BYTES)),
    };
  });
}

const PATCH_FIELDS = ['status', 'outputs', 'error', 'updated_ns'] as const;

/**
 * A run change from a caller, checked, as the row fields to set (only those
 * the patch names; `updated_ns` always), and the statuses it may change from.
 */
export function workflowRunPatchRow(
  patch: WorkflowRunPatch,
  from: readonly WorkflowRunStatus[],
  location: string,
): { change: WorkflowRunRowPatch; from: WorkflowRunStatus[] } {
  return withRecordCheck(location, 'refuses a workflow run change', () => {
    const o = plainObject('the change', patch);
    if (!Array.isArray(from) || from.length === 0) fail('from', 'must list the statuses the run may be in');
    const statuses = from.map((s) => oneOf('from', s, WORKFLOW_RUN_STATUSES)!);
    const unknown = Object.keys(o).filter((k) => !(PATCH_FIELDS as readonly string[]).includes(k));
    if (unknown.length > 0) fail('the change', `may not set ${unknown.join(', ')} (only ${PATCH_FIELDS.join(', ')})`);
    const change: WorkflowRunRowPatch = { updated_ns: time('updated_ns', o.updated_ns) };
    if ('status' in o) change.status = oneOf('status', o.status, WORKFLOW_RUN_STATUSES)!;
    if ('outputs' in o) change.outputs_json = o.outputs === null ? null : toJson('outputs', o.outputs, MAX_WORKFLOW_RECORD_BYTES);
    if ('error' in o) change.error_json = o.error === null ? null : JSON.stringify(runError('error', o.error));
    return { change, from: statuses };
  });
}

/** Check the event's fields that do not depend on how it is kept. */
function eventFields(o: Record<string, unknown>): Omit<WorkflowEventRow, 'output_json' | 'error_json'> {
  const kind = oneOf('kind', o.kind, WORKFLOW_EVENT_KINDS)!;
  const step = str('step', o.step, MAX_NAME, true);
  if (RUN_LEVEL_KINDS.includes(kind) ? step !== null : step === null)
    fail('step', RUN_LEVEL_KINDS.includes(kind) ? `must be null for a run-level event (${kind})` : `must name the step of a ${kind} event`);
  return {
    run_id: id('run_id', o.run_id)!,
    seq: count('seq', o.seq, 1),
    at_ns: time('at_ns', o.at_ns),
    step,
    kind,
    attempt: count('attempt', o.attempt, 0),
    tool: str('tool', o.tool, MAX_NAME, true),
    tool_version: str('tool_version', o.tool_version, MAX_NAME, true),
    execution_id: id('execution_id', o.execution_id, true),
    approval_id: id('approval_id', o.approval_id, true),
    note: text('note', o.note, MAX_TEXT, true),
  };
}

/** The whole event's size as JSON text, its output included. */
function checkEventSize(row: WorkflowEventRow): void {
  const { output_json, error_json, ...rest } = row;
  const bytes = utf8Length(JSON.stringify(rest)) + utf8Length(output_json ?? 'null') + utf8Length(error_json ?? 'null') + 20;
  if (bytes > MAX_WORKFLOW_EVENT_BYTES) fail('the event', `is larger than ${MAX_WORKFLOW_EVENT_BYTES} bytes as JSON`);
}

/** A workflow event from a caller, checked, as the row to keep; E_STORE when a field is wrong. */
export function workflowEventRow(event: WorkflowEvent, location: string): WorkflowEventRow {
  return withRecordCheck(location, 'refuses a workflow event', () => {
    const o = plainObject('the event', event);
    const fields = eventFields(o);
    const row: WorkflowEventRow = {
      ...fields,
      output_json: o.output === null ? null : toJson('output', o.output, MAX_WORKFLOW_EVENT_BYTES),
      error_json: o.error === null ? null : JSON.stringify(eventError('error', o.error)),
    };
    checkEventSize(row);
    return reorder(row);
  });
}

/** An event row read back from a store, checked, as the event; E_STORE ('holds a damaged workflow event') when it is not one. */
export function workflowEventFromRow(row: unknown, location: string): WorkflowEvent {
  return withRecordCheck(location, 'holds a damaged workflow event', () => {
    const o = plainObject('the event', row);
    const f = eventFields(o);
    return {
      run_id: f.run_id,
      seq: f.seq,
      at_ns: f.at_ns,
      step: f.step,
      kind: f.kind,
      attempt: f.attempt,
      tool: f.tool,
      tool_version: f.tool_version,
      execution_id: f.execution_id,
      approval_id: f.approval_id,
      output: o.output_json === null ? null : fromJson('output', o.output_json, MAX_WORKFLOW_EVENT_BYTES),
      error: o.error_json === null ? null : eventError('error', fromJson('error', o.error_json, MAX_ERROR_BYTES)),
      note: f.note,
    };
  });
}

function reorder(row: WorkflowEventRow): WorkflowEventRow {
  return Object.fromEntries(WORKFLOW_EVENT_COLUMNS.map((c) => [c, row[c]])) as unknown as WorkflowEventRow;
}

/** Check a filter's values up front (they may come from a command line or a request). */
export function checkWorkflowRunFilter(f: WorkflowRunFilter, location: string): void {
  withRecordCheck(location, 'refuses a workflow run filter', () => {
    const o = plainObject('the filter', f);
    if (o.status !== undefined) {
      if (!Array.isArray(o.status)) fail('status', 'must be a list of statuses');
      for (const s of o.status) oneOf('status', s, WORKFLOW_RUN_STATUSES);
    }
    if (o.workflow !== undefined) str('workflow', o.workflow, MAX_NAME);
    if (o.limit !== undefined && !(Number.isSafeInteger(o.limit) && (o.limit as number) >= 0)) fail('limit', 'must be a whole number ≥ 0');
  });
}

/** Check `listWorkflowEvents`' arguments. */
export function checkWorkflowEventQuery(runId: string, afterSeq: number | undefined, location: string): void {
  withRecordCheck(location, 'refuses a workflow event query', () => {
    if (typeof runId !== 'string') fail('runId', 'must be a string');
    if (afterSeq !== undefined) count('afterSeq', afterSeq, 0);
  });
}

export function matchesWorkflowRunFilter(run: Pick<WorkflowRunRow, 'status' | 'workflow'>, f: WorkflowRunFilter): boolean {
  return (f.status === undefined || f.status.includes(run.status)) && (f.workflow === undefined || run.workflow === f.workflow);
}

/** Newest first, by creation time, then id (descending), as `listWorkflowRuns` answers. */
export const newestRunFirst = newestByTime<Pick<WorkflowRunRow, 'id' | 'created_ns'>>((r) => r.created_ns);

/** The refusals every adapter words the same. */
export const workflowRefusal = {
  runExists: (location: string, id: string) =>
    storeError(location, `a workflow run with id ${id} already exists`, { reason: 'conflict', workflow_run_id: id }),
  noRun: (location: string, id: string) => storeError(location, `no workflow run with id ${id}`, { workflow_run_id: id }),
  noRunForEvent: (location: string, runId: string, seq: number) =>
    storeError(location, `no workflow run with id ${runId} to append event ${seq} to`, { workflow_run_id: runId, seq }),
  eventExists: (location: string, runId: string, seq: number) =>
    storeError(location, `workflow run ${runId} already has an event ${seq}`, { reason: 'conflict', workflow_run_id: runId, seq }),
};
