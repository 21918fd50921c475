/**
 * Audit events and approvals as every Store adapter keeps them: one check of
 * each record before it is written and after it is read (a store file is
 * untrusted too), one field order, one filter and one sort order, so the
 * adapters answer alike (test/store-conformance.ts holds them to it).
 */
import { jsonTextTooDeep } from './json-depth.js';
import { sha256Hex } from './wasm.js';
import {
  storeError,
  type ApprovalFilter,
  type ApprovalPatch,
  type ApprovalRecord,
  type ApprovalScope,
  type ApprovalStatus,
  type AuditAction,
  type AuditEvent,
  type AuditFilter,
  type FolderUse,
  type Nanos,
} from './snapshot.js';

export const AUDIT_ACTIONS: readonly AuditAction[] = [
  'grant',
  'revoke',
  'deny',
  'approval_requested',
  'approve',
  'reject',
  'approval_revoked',
  'fleet_retry',
];
export const APPROVAL_STATUSES: readonly ApprovalStatus[] = ['pending', 'approved', 'rejected', 'expired', 'claimed', 'done', 'revoked'];
/** Narrowest first: an approver may give any scope up to the policy's `approval_scope`. */
export const APPROVAL_SCOPES: readonly ApprovalScope[] = ['once', 'folder', 'tool'];

/** Largest audit `detail`, as JSON text. */
export const MAX_AUDIT_DETAIL_BYTES = 64 * 1024;
/** Largest input a call waiting for approval may carry (it is kept whole, to run after a restart). */
export const MAX_APPROVAL_INPUT_BYTES = 4 * 1024 * 1024;
/** Most mounts one request may bind; most folders one approval remembers. */
export const MAX_BINDINGS = 64;
/** Longest host path Corral accepts in a policy, a request or a record. */
export const MAX_PATH_LENGTH = 4096;
const MAX_CALLER_BYTES = 16 * 1024;
const MAX_NAME = 256;
const MAX_COMMENT = 4096;
/** Longest text an approval shows its approver (a workflow step's prompt). */
export const MAX_APPROVAL_PROMPT = 16 * 1024;
/** The `version` of a workflow step's approval (it names no tool version: `tool` is the workflow's name). */
export const WORKFLOW_APPROVAL_VERSION = '0';

/**
 * Whether an approval belongs to a workflow step rather than a tool call.
 * Such an approval runs nothing when it is approved: hosts that run approved
 * calls (claim, invokeApproved, the HTTP runner) leave it to the workflow engine.
 */
export function isWorkflowApproval(a: Pick<ApprovalRecord, 'workflow_run_id'>): boolean {
  return a.workflow_run_id !== null;
}

/** What a workflow engine says about a step that waits for a person. */
export interface WorkflowApprovalRequest {
  /** The approval's id (the engine's choice; an id charset as everywhere). */
  id: string;
  /** The workflow's name: kept as the approval's `tool`, so `corral approvals --tool NAME` finds it. */
  workflow: string;
  run_id: string;
  step: string;
  /** What to ask the approver. */
  prompt: string | null;
  /** The step's rendered input, shown to the approver; none: {}. */
  input?: unknown;
  /** Who asked (the caller that started the run, or the engine). */
  requested_by: string;
  caller?: Record<string, unknown>;
  requested_ns: Nanos;
  expires_ns: Nanos;
}

/**
 * The approval record for a workflow step, with the tool-call fields as a
 * step's approval holds them (see ApprovalRecord). Store it with
 * `store.createApproval`, which checks it.
 */
export async function workflowApproval(r: WorkflowApprovalRequest): Promise<ApprovalRecord> {
  const input = JSON.stringify(r.input === undefined ? {} : r.input) ?? '{}';
  return {
    id: r.id,
    tool: r.workflow,
    version: WORKFLOW_APPROVAL_VERSION,
    workflow_run_id: r.run_id,
    workflow_step: r.step,
    prompt: r.prompt,
    input_sha256: await sha256Hex(input),
    input_json: input,
    bindings: {},
    caller: r.caller ?? {},
    folders: [],
    requested_by: r.requested_by,
    requested_ns: r.requested_ns,
    expires_ns: r.expires_ns,
    max_scope: 'once',
    status: 'pending',
    scope: null,
    decided_by: null,
    decided_ns: null,
    comment: null,
    claimed_ns: null,
    execution_id: null,
    revoked_by: null,
    revoked_ns: null,
  };
}

const encoder = new TextEncoder();

/** Why a record is refused: thrown by the checks below, turned into E_STORE by `checkRecord`. */
class RecordProblem extends Error {}

function fail(field: string, what: string): never {
  throw new RecordProblem(`${field} ${what}`);
}

const isId = (v: unknown): v is string => typeof v === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(v);
const isNanos = (v: unknown): v is string => typeof v === 'string' && /^\d{1,32}$/.test(v);

function str(field: string, v: unknown, max: number, nullable = false): string | null {
  if (v === null && nullable) return null;
  if (typeof v !== 'string' || v.length === 0 || v.length > max || v.includes('\0'))
    fail(field, `must be ${nullable ? 'null or ' : ''}a string of 1 to ${max} characters without NUL`);
  return v;
}
function id(field: string, v: unknown, nullable = false): string | null {
  if (v === null && nullable) return null;
  if (!isId(v)) fail(field, `must be ${nullable ? 'null or ' : ''}an id (1 to 128 of A-Z a-z 0-9 . _ : -)`);
  return v;
}
function nanos(field: string, v: unknown, nullable = false): string | null {
  if (v === null && nullable) return null;
  if (!isNanos(v)) fail(field, `must be ${nullable ? 'null or ' : ''}whole nanoseconds as a decimal string`);
  return v;
}
function oneOf<T extends string>(field: string, v: unknown, values: readonly T[], nullable = false): T | null {
  if (v === null && nullable) return null;
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) fail(field, `must be one of ${values.join(', ')}`);
  return v as T;
}
function plainObject(field: string, v: unknown): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(field, 'must be a JSON object');
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== null && Object.getPrototypeOf(proto) !== null) fail(field, 'must be a plain JSON object');
  return v as Record<string, unknown>;
}
/** A JSON object of at most `max` bytes, returned as a fresh copy (what a store keeps is never the caller's object). */
function jsonObject(field: string, v: unknown, max: number): Record<string, unknown> {
  plainObject(field, v);
  let text: string | undefined;
  try {
    text = JSON.stringify(v);
  } catch {
    fail(field, 'must be JSON data (no cycles, no BigInt, not nested past the stack)');
  }
  if (text === undefined) fail(field, 'must be JSON data');
  if (encoder.encode(text).length > max) fail(field, `is larger than ${max} bytes as JSON`);
  if (jsonTextTooDeep(text)) fail(field, 'nests too deep');
  return JSON.parse(text) as Record<string, unknown>;
}
const ACCESS = ['read', 'read-write'] as const;

/** A POSIX absolute path without NUL, within the length limit. */
export function isHostPath(v: unknown): v is string {
  return typeof v === 'string' && v.startsWith('/') && v.length <= MAX_PATH_LENGTH && !v.includes('\0');
}
/** A guest mount path as specs write it: /name[/name...], no '.', '..' or empty segments. */
export function isGuestPath(v: unknown): v is string {
  return (
    typeof v === 'string' &&
    v.length > 1 &&
    v.length <= MAX_NAME &&
    v.startsWith('/') &&
    !v.includes('\0') &&
    v
      .slice(1)
      .split('/')
      .every((s) => s !== '' && s !== '.' && s !== '..')
  );
}

function folderUses(field: string, v: unknown): FolderUse[] {
  if (!Array.isArray(v) || v.length > MAX_BINDINGS) fail(field, `must be a list of at most ${MAX_BINDINGS} folders`);
  return v.map((f, i) => {
    const o = plainObject(`${field}[${i}]`, f);
    if (!isGuestPath(o.guest)) fail(`${field}[${i}].guest`, 'must be a guest mount path like /workspace');
    if (!isHostPath(o.folder)) fail(`${field}[${i}].folder`, 'must be an absolute host path');
    return { guest: o.guest, folder: o.folder, access: oneOf(`${field}[${i}].access`, o.access, ACCESS)! };
  });
}

function bindingsOf(field: string, v: unknown): ApprovalRecord['bindings'] {
  const o = plainObject(field, v);
  const entries = Object.entries(o);
  if (entries.length > MAX_BINDINGS) fail(field, `binds more than ${MAX_BINDINGS} mounts`);
  const out: ApprovalRecord['bindings'] = {};
  for (const [guest, b] of entries) {
    if (!isGuestPath(guest))
      fail(field, `has ${JSON.stringify(String(guest).slice(0, 80))}, which is not a guest mount path like /workspace`);
    const binding = plainObject(`${field}.${guest}`, b);
    if (!isHostPath(binding.folder)) fail(`${field}.${guest}.folder`, 'must be an absolute host path');
    Object.defineProperty(out, guest, {
      value:
        binding.access === undefined
          ? { folder: binding.folder }
          : { folder: binding.folder, access: oneOf(`${field}.${guest}.access`, binding.access, ACCESS)! },
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** Run a check; a problem becomes E_STORE naming the store and the record. */
function checkRecord<T>(location: string, what: string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof RecordProblem) throw storeError(location, `${what}: ${err.message}`);
    throw err;
  }
}

/** An audit event with exactly its fields, checked, in a fixed order; E_STORE when a field is wrong. */
export function auditEvent(e: AuditEvent, location: string, what = 'refuses an audit event'): AuditEvent {
  return checkRecord(location, what, () => {
    const o = plainObject('the event', e);
    return {
      id: id('id', o.id)!,
      time_ns: nanos('time_ns', o.time_ns)!,
      action: oneOf('action', o.action, AUDIT_ACTIONS)!,
      actor: str('actor', o.actor, MAX_NAME)!,
      tool: str('tool', o.tool, MAX_NAME, true),
      approval_id: id('approval_id', o.approval_id, true),
      detail: jsonObject('detail', o.detail, MAX_AUDIT_DETAIL_BYTES),
    };
  });
}

/** An approval with exactly its fields, checked, in a fixed order; E_STORE when a field is wrong. */
export function approvalRecord(a: ApprovalRecord, location: string, what = 'refuses an approval'): ApprovalRecord {
  return checkRecord(location, what, () => {
    const o = plainObject('the approval', a);
    const input = o.input_json;
    if (typeof input !== 'string' || input.length > MAX_APPROVAL_INPUT_BYTES || encoder.encode(input).length > MAX_APPROVAL_INPUT_BYTES)
      fail('input_json', `must be JSON text of at most ${MAX_APPROVAL_INPUT_BYTES} bytes`);
    if (typeof o.input_sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(o.input_sha256))
      fail('input_sha256', 'must be a lower-case hex SHA-256');
    const record: ApprovalRecord = {
      id: id('id', o.id)!,
      tool: str('tool', o.tool, MAX_NAME)!,
      version: str('version', o.version, MAX_NAME)!,
      workflow_run_id: id('workflow_run_id', o.workflow_run_id, true),
      workflow_step: str('workflow_step', o.workflow_step, MAX_NAME, true),
      prompt: str('prompt', o.prompt, MAX_APPROVAL_PROMPT, true),
      input_sha256: o.input_sha256,
      input_json: input,
      bindings: bindingsOf('bindings', o.bindings),
      caller: jsonObject('caller', o.caller, MAX_CALLER_BYTES),
      folders: folderUses('folders', o.folders),
      requested_by: str('requested_by', o.requested_by, MAX_NAME)!,
      requested_ns: nanos('requested_ns', o.requested_ns)!,
      expires_ns: nanos('expires_ns', o.expires_ns)!,
      max_scope: oneOf('max_scope', o.max_scope, APPROVAL_SCOPES)!,
      status: oneOf('status', o.status, APPROVAL_STATUSES)!,
      scope: oneOf('scope', o.scope, APPROVAL_SCOPES, true),
      decided_by: str('decided_by', o.decided_by, MAX_NAME, true),
      decided_ns: nanos('decided_ns', o.decided_ns, true),
      comment: str('comment', o.comment, MAX_COMMENT, true),
      claimed_ns: nanos('claimed_ns', o.claimed_ns, true),
      execution_id: id('execution_id', o.execution_id, true),
      revoked_by: str('revoked_by', o.revoked_by, MAX_NAME, true),
      revoked_ns: nanos('revoked_ns', o.revoked_ns, true),
    };
    checkWorkflowApproval(record);
    return record;
  });
}

/**
 * A workflow step's approval holds no tool call (see ApprovalRecord): both
 * workflow fields or neither, no folders, no mounts, and a scope of this
 * step only, so nothing can read it as permission for a later call.
 */
function checkWorkflowApproval(a: ApprovalRecord): void {
  if ((a.workflow_run_id === null) !== (a.workflow_step === null))
    fail(
      a.workflow_run_id === null ? 'workflow_run_id' : 'workflow_step',
      'must be set together with the other (a workflow step), or both null',
    );
  if (a.workflow_run_id === null) return;
  const what = "for a workflow step's approval";
  if (a.version !== WORKFLOW_APPROVAL_VERSION) fail('version', `must be '${WORKFLOW_APPROVAL_VERSION}' ${what}`);
  if (Object.keys(a.bindings).length > 0) fail('bindings', `must be empty ${what}: it runs no tool call`);
  if (a.folders.length > 0) fail('folders', `must be empty ${what}: it runs no tool call`);
  if (a.max_scope !== 'once') fail('max_scope', `must be 'once' ${what}: it covers that step only`);
  if (a.scope !== null && a.scope !== 'once') fail('scope', `must be null or 'once' ${what}`);
}

const PATCH_FIELDS = [
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

/** A patch with only the fields it may change, each checked as in `approvalRecord`. */
export function approvalPatch(patch: ApprovalPatch, from: readonly ApprovalStatus[], location: string): ApprovalPatch {
  return checkRecord(location, 'refuses an approval change', () => {
    const o = plainObject('the change', patch);
    if (!Array.isArray(from) || from.length === 0) fail('from', 'must list the statuses the approval may be in');
    for (const s of from) oneOf('from', s, APPROVAL_STATUSES);
    const unknown = Object.keys(o).filter((k) => !(PATCH_FIELDS as readonly string[]).includes(k));
    if (unknown.length > 0) fail('the change', `may not set ${unknown.join(', ')}`);
    const out: ApprovalPatch = {};
    if ('status' in o) out.status = oneOf('status', o.status, APPROVAL_STATUSES)!;
    if ('scope' in o) out.scope = oneOf('scope', o.scope, APPROVAL_SCOPES, true);
    if ('decided_by' in o) out.decided_by = str('decided_by', o.decided_by, MAX_NAME, true);
    if ('decided_ns' in o) out.decided_ns = nanos('decided_ns', o.decided_ns, true);
    if ('comment' in o) out.comment = str('comment', o.comment, MAX_COMMENT, true);
    if ('claimed_ns' in o) out.claimed_ns = nanos('claimed_ns', o.claimed_ns, true);
    if ('execution_id' in o) out.execution_id = id('execution_id', o.execution_id, true);
    if ('revoked_by' in o) out.revoked_by = str('revoked_by', o.revoked_by, MAX_NAME, true);
    if ('revoked_ns' in o) out.revoked_ns = nanos('revoked_ns', o.revoked_ns, true);
    return out;
  });
}

export function matchesAuditFilter(e: AuditEvent, f: AuditFilter): boolean {
  return (
    (f.since === undefined || BigInt(e.time_ns) >= BigInt(f.since)) &&
    (f.tool === undefined || e.tool === f.tool) &&
    (f.action === undefined || e.action === f.action) &&
    (f.approvalId === undefined || e.approval_id === f.approvalId)
  );
}

export function matchesApprovalFilter(a: ApprovalRecord, f: ApprovalFilter): boolean {
  return (
    (f.status === undefined || f.status.includes(a.status)) &&
    (f.tool === undefined || a.tool === f.tool) &&
    (f.workflowRunId === undefined || a.workflow_run_id === f.workflowRunId)
  );
}

/** Check a filter's values up front (they may come from a command line or a request). */
export function checkAuditFilter(f: AuditFilter, location: string): void {
  checkRecord(location, 'refuses an audit filter', () => {
    if (f.since !== undefined && !/^\d{1,32}$/.test(String(f.since))) fail('since', 'must be whole nanoseconds');
    if (f.action !== undefined) oneOf('action', f.action, AUDIT_ACTIONS);
    if (f.limit !== undefined && !(Number.isInteger(f.limit) && f.limit >= 0)) fail('limit', 'must be a whole number ≥ 0');
  });
}

export function checkApprovalFilter(f: ApprovalFilter, location: string): void {
  checkRecord(location, 'refuses an approval filter', () => {
    if (f.status !== undefined) {
      if (!Array.isArray(f.status)) fail('status', 'must be a list of statuses');
      for (const s of f.status) oneOf('status', s, APPROVAL_STATUSES);
    }
    if (f.workflowRunId !== undefined) id('workflowRunId', f.workflowRunId, true);
    if (f.limit !== undefined && !(Number.isInteger(f.limit) && f.limit >= 0)) fail('limit', 'must be a whole number ≥ 0');
  });
}

/**
 * The checks above, for the other record kinds adapters keep (workflow runs
 * and events, workflow-store-kit.ts), so every record is refused in the same
 * words. `recordProblem` throws what `withRecordCheck` turns into E_STORE.
 */
export {
  fail as recordProblem,
  str as checkedString,
  id as checkedId,
  nanos as checkedNanos,
  oneOf as checkedOneOf,
  plainObject as checkedPlainObject,
  checkRecord as withRecordCheck,
};

/** Newest first by a time, then by id (descending), like executions. */
export function newestByTime<T extends { id: string }>(time: (t: T) => string): (a: T, b: T) => number {
  return (a, b) => {
    const d = BigInt(time(b)) - BigInt(time(a));
    return d !== 0n ? (d > 0n ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
  };
}
