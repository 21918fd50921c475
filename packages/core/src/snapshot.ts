/**
 * Snapshots: what the model decided, what ran, and with what result, kept
 * durably so the answers survive a crash. This file is the model and the
 * `Store` interface every adapter implements (SQLite in Node, IndexedDB in
 * browsers, `MemoryStore` for tests); it is host-agnostic.
 *
 * Records use snake_case like the result envelope, because they are data
 * people read (`corral snapshots show`, JSONL exports), not API objects.
 */
import { CorralError, ErrorCodes, type ErrorDetails } from './errors.js';
import type { WorkflowJournal } from './workflow-records.js';

/**
 * UTC nanoseconds since the Unix epoch, as a decimal string. A JS number
 * cannot hold it exactly and a bigint does not survive JSON or structured
 * clone everywhere; a string does. Compare with `BigInt(a) < BigInt(b)`.
 */
export type Nanos = string;

/** One model decision: the prompt's hash and the model's raw answer. */
export interface DecisionSnapshot {
  id: string;
  time_ns: Nanos;
  /** Lower-case hex SHA-256 of the prompt (UTF-8); the prompt itself is not kept. */
  prompt_sha256: string;
  /** The model's raw output, exactly as received. */
  output: string;
  model: string | null;
  run_id: string | null;
}

export type ExecutionStatus = 'ok' | 'failed' | 'interrupted';

/** What is known before a call runs. Written durably before the executor starts. */
export interface ExecutionIntent {
  id: string;
  /** The decision that caused this call, when the caller linked one. */
  decision_id: string | null;
  tool: string;
  /** Null when the tool could not be resolved. */
  version: string | null;
  /** SHA-256 of the wasm that ran: replay compares it to tell a changed artifact. */
  wasm_sha256: string | null;
  /** SHA-256 of the exact stdin bytes (the input as JSON text); null if the input is not JSON at all. */
  input_sha256: string | null;
  /**
   * The input as the JSON text the tool received; null when the caller opted
   * out (`recordInput: false`, `corral run --no-record-input`). Stores keep
   * each input text once per `input_sha256`, however many calls had it, and
   * drop it with the last execution that kept it. They trust the hash (the
   * runtime computes it), and refuse a different text under a hash they hold.
   */
  input_json: string | null;
  intent_ns: Nanos;
}

/** What is known after a call ends. Written when it returns. */
export interface ExecutionOutcome {
  result_ns: Nanos;
  /** Null when the tool never ran (refused input) or was stopped (timeout). */
  exit_code: number | null;
  error_code: string | null;
  error_message: string | null;
  /** SHA-256 of the whole captured stdout: replay compares outputs with it. */
  stdout_sha256: string | null;
  /** First and last 1 KiB of stdout and of stderr (UTF-8, not cut mid-character). */
  stdout_head: string;
  stdout_tail: string;
  stderr_head: string;
  stderr_tail: string;
  duration_ms: number;
  peak_memory_bytes: number | null;
  /**
   * Where the call ran, when an executor chose (a routing executor between
   * the local pool and a fleet): `local` or `fleet <worker>`, then the reason
   * after a colon ("local: the fleet is unreachable"). At most 256 characters.
   */
  ran_on?: string | null;
}

export type Nullable<T> = { [K in keyof T]: T[K] | null };

/** An execution as read back: intent, outcome (null fields when interrupted), and status. */
export type ExecutionSnapshot = ExecutionIntent & Nullable<ExecutionOutcome> & { status: ExecutionStatus };

/** One line of an export or a prune archive. */
export type SnapshotRecord = ({ kind: 'decision' } & DecisionSnapshot) | ({ kind: 'execution' } & ExecutionSnapshot);

export interface ExecutionFilter {
  tool?: string;
  /** Only executions whose intent is at or after this time. */
  since?: Nanos | bigint;
  errorCode?: string;
  decisionId?: string;
  status?: ExecutionStatus;
  /** At most this many, newest first. */
  limit?: number;
  /**
   * `false`: leave the inputs out (every listed snapshot's `input_json` is
   * null, kept or not), so a listing reads metadata only however large the
   * inputs are; `getExecution(id)` reads one with its input. Default true.
   */
  withInput?: boolean;
}

export interface PruneOptions {
  /** Remove records from before this time. */
  olderThan?: Nanos | bigint;
  /** Keep only the newest N executions (and the newest N decisions). */
  keep?: number;
  /**
   * Called with every record about to be removed, before anything is
   * deleted; if it throws, nothing is. Write an archive here.
   */
  archive?: (records: SnapshotRecord[]) => Promise<void> | void;
}

/**
 * What the audit trail records: changes to the policy, calls it refused, and
 * every step of an approval.
 */
export type AuditAction =
  /** `corral policy grant` changed the policy file. */
  | 'grant'
  /** `corral policy revoke` changed the policy file. */
  | 'revoke'
  /** The policy refused a call. */
  | 'deny'
  /** A call waits for a person's approval. */
  | 'approval_requested'
  | 'approve'
  | 'reject'
  /** A remembered (scoped) approval, or an approved call not yet run, was withdrawn. */
  | 'approval_revoked'
  /**
   * A fleet worker ran a call again: its intent was recorded without an
   * outcome (the worker that took it first died mid-call, or its lease ran
   * out), so the message came back. `detail` names the execution id.
   */
  | 'fleet_retry';

/** One entry of the audit trail: who did what, when. */
export interface AuditEvent {
  id: string;
  time_ns: Nanos;
  action: AuditAction;
  /**
   * Who: the person (`--by`, else the OS user) for grants, revocations and
   * approval decisions; the caller's identity for denials and requests.
   */
  actor: string;
  tool: string | null;
  approval_id: string | null;
  /** What: the grant, the reason for a denial, the folders asked for. A JSON object, at most 64 KiB as JSON. */
  detail: Record<string, unknown>;
}

export interface AuditFilter {
  /** Only events at or after this time. */
  since?: Nanos | bigint;
  tool?: string;
  action?: AuditAction;
  approvalId?: string;
  /** At most this many, newest first. */
  limit?: number;
}

/**
 * pending → approved | rejected | expired (nobody decided before
 * `expires_ns`); approved → claimed (a host took it to run) → done (it ran,
 * or the policy refused it by then); approved, claimed or done → revoked (a
 * person withdrew it: an approved call that has not run never will, and a
 * scoped approval stops covering later calls).
 */
export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired' | 'claimed' | 'done' | 'revoked';

/**
 * How far an approval reaches: `once` this call only; `folder` later calls
 * of this tool version that see only folders inside the ones this call saw;
 * `tool` every later call of this tool version the policy allows.
 */
export type ApprovalScope = 'once' | 'folder' | 'tool';

/** A host folder a call would see: the guest mount, the real path, the access. */
export interface FolderUse {
  guest: string;
  folder: string;
  access: 'read' | 'read-write';
}

/**
 * One call waiting for (or given) a person's approval, kept so it survives a
 * restart; or one step of a workflow run that waits for a person (an
 * `approval` or `human_review` step), through the same records, the same
 * `corral approve` and the same audit trail.
 *
 * A workflow step's approval has `workflow_run_id` and `workflow_step` set,
 * and holds no tool call: `tool` is the workflow's name, `version` is '0',
 * `input_json` the step's rendered input (or '{}'), `bindings` {}, `folders`
 * [], and `max_scope` 'once' (it covers that step only, never later calls).
 * Deciding it only changes its status; no host runs anything for it: the
 * workflow engine continues the run (see `isWorkflowApproval`).
 */
export interface ApprovalRecord {
  id: string;
  /** The tool to call; for a workflow step's approval, the workflow's name. */
  tool: string;
  /** The tool's version; '0' for a workflow step's approval. */
  version: string;
  /** The workflow run a step's approval belongs to; null for a tool call's. */
  workflow_run_id: string | null;
  /** That step's id; null for a tool call's. */
  workflow_step: string | null;
  /** What to show the approver (a workflow step's `prompt`); null when there is nothing but the call itself. */
  prompt: string | null;
  /** SHA-256 of the input's JSON text, as the tool would receive it. */
  input_sha256: string;
  /** The input's JSON text (at most 4 MiB), so the call can run after a restart. */
  input_json: string;
  /** The mounts the caller asked for: guest → host folder (and access), as given. */
  bindings: Record<string, { folder: string; access?: 'read' | 'read-write' }>;
  /** Who asked, as the host described the caller (kind, id, roots). */
  caller: Record<string, unknown>;
  /** The folders the call would see (real paths): what a `folder` scope remembers. */
  folders: FolderUse[];
  requested_by: string;
  requested_ns: Nanos;
  expires_ns: Nanos;
  /** The widest scope the policy lets an approver give. */
  max_scope: ApprovalScope;
  status: ApprovalStatus;
  scope: ApprovalScope | null;
  decided_by: string | null;
  decided_ns: Nanos | null;
  comment: string | null;
  claimed_ns: Nanos | null;
  /** The execution snapshot of the approved call, once it ran. */
  execution_id: string | null;
  revoked_by: string | null;
  revoked_ns: Nanos | null;
}

/** The fields of an approval that change after it is created. */
export type ApprovalPatch = Partial<
  Pick<
    ApprovalRecord,
    'status' | 'scope' | 'decided_by' | 'decided_ns' | 'comment' | 'claimed_ns' | 'execution_id' | 'revoked_by' | 'revoked_ns'
  >
>;

export interface ApprovalFilter {
  /** Only approvals in one of these states. */
  status?: ApprovalStatus[];
  tool?: string;
  /** Only the approvals of this workflow run's steps; null: only tool calls' approvals (no workflow run). */
  workflowRunId?: string | null;
  /** At most this many, newest first (by request time, then id). */
  limit?: number;
}

/**
 * Where snapshots live. Every write resolves only once it is durable, and
 * rejects with a CorralError E_STORE when it cannot be made so. Reads
 * return copies. Adapters share one conformance suite (test/store-conformance.ts).
 *
 * Order: listings are newest first (by intent time, then id); `export`
 * yields decisions then executions, each oldest first.
 * Prune never leaves an execution pointing at a removed decision: a decision
 * still referenced by a kept execution is kept.
 *
 * A Store is also a workflow journal (WorkflowJournal: runs and their
 * events). Like audit events and approvals, workflow runs and events are
 * neither exported nor pruned, nor removed by a size cap: a run that waits
 * for approval for a week must still be there to resume.
 */
export interface Store extends WorkflowJournal {
  /** Where it is, for messages (a file path, a database name). */
  readonly location: string;
  recordDecision(decision: DecisionSnapshot): Promise<void>;
  /** Refuses an id that exists. */
  beginExecution(intent: ExecutionIntent): Promise<void>;
  /** Refuses an unknown id and one that already has an outcome. */
  finishExecution(id: string, outcome: ExecutionOutcome): Promise<void>;
  getExecution(id: string): Promise<ExecutionSnapshot | null>;
  getDecision(id: string): Promise<DecisionSnapshot | null>;
  listExecutions(filter?: ExecutionFilter): Promise<ExecutionSnapshot[]>;
  /**
   * Every decision and execution (not audit events, approvals or workflow
   * runs: they are not snapshots, and an export marks what it wrote archived,
   * which only snapshots can be).
   */
  export(): AsyncIterable<SnapshotRecord>;
  /**
   * Removes what the options select and returns it, then the inputs no kept
   * execution refers to, and gives the freed space back where the storage
   * allows it (SQLite: incremental vacuum). Audit events, approvals, workflow
   * runs and workflow events are not pruned.
   */
  prune(options: PruneOptions): Promise<SnapshotRecord[]>;
  /**
   * Mark records as archived: a full copy of each is kept durably outside
   * the store (`corral snapshots export --output FILE` marks what it wrote).
   * A size cap removes archived records before any other. Unknown ids are
   * ignored; returns how many records were marked.
   */
  markArchived(ids: readonly string[]): Promise<number>;
  /** Append to the audit trail. Refuses an id that exists. */
  recordAudit(event: AuditEvent): Promise<void>;
  /** Audit events, newest first (by time, then id). */
  listAudit(filter?: AuditFilter): Promise<AuditEvent[]>;
  /** Keep a new approval (normally `pending`). Refuses an id that exists. */
  createApproval(approval: ApprovalRecord): Promise<void>;
  getApproval(id: string): Promise<ApprovalRecord | null>;
  listApprovals(filter?: ApprovalFilter): Promise<ApprovalRecord[]>;
  /**
   * Change an approval only if its status is one of `from`, atomically (also
   * between processes sharing the store): the changed record, or null when its
   * status was another. Refuses an unknown id.
   */
  updateApproval(id: string, from: readonly ApprovalStatus[], patch: ApprovalPatch): Promise<ApprovalRecord | null>;
  close(): Promise<void>;
}

// Wall-clock origin in whole microseconds plus a monotonic offset in
// nanoseconds: sub-millisecond precision without float rounding, and times
// taken in one process never go backwards.
const ORIGIN_NS = BigInt(Math.round(performance.timeOrigin * 1000)) * 1000n;

/** The current UTC time in nanoseconds since the epoch. */
export function nowNs(): Nanos {
  return (ORIGIN_NS + BigInt(Math.round(performance.now() * 1e6))).toString();
}

/** Nanos for a Date (or milliseconds since the epoch). */
export function nsFromDate(date: Date | number): Nanos {
  return (BigInt(Math.round(typeof date === 'number' ? date : date.getTime())) * 1_000_000n).toString();
}

/** An ISO-8601 UTC string with nanoseconds, e.g. 2026-11-29T09:47:06.123456789Z. */
export function isoFromNs(ns: Nanos | bigint): string {
  const n = BigInt(ns);
  const ms = n / 1_000_000n;
  const iso = new Date(Number(ms)).toISOString(); // ...:06.123Z
  const subMs = (n % 1_000_000n).toString().padStart(6, '0');
  return `${iso.slice(0, -1)}${subMs}Z`;
}

/** The status an execution reads back as: no outcome means it never finished. */
export function statusOf(record: { result_ns: Nanos | null; error_code: string | null }): ExecutionStatus {
  if (record.result_ns === null) return 'interrupted';
  return record.error_code === null ? 'ok' : 'failed';
}

/** A decision with exactly its own fields, in a fixed order. */
export function decisionSnapshot(d: DecisionSnapshot): DecisionSnapshot {
  return { id: d.id, time_ns: d.time_ns, prompt_sha256: d.prompt_sha256, output: d.output, model: d.model, run_id: d.run_id };
}

/**
 * An execution snapshot with its fields in one fixed order (status first),
 * so `show` and exports read the same whichever adapter produced them.
 */
export function executionSnapshot(row: ExecutionIntent & Nullable<ExecutionOutcome>): ExecutionSnapshot {
  return {
    id: row.id,
    status: statusOf(row),
    tool: row.tool,
    version: row.version,
    decision_id: row.decision_id,
    intent_ns: row.intent_ns,
    result_ns: row.result_ns,
    duration_ms: row.duration_ms,
    exit_code: row.exit_code,
    error_code: row.error_code,
    error_message: row.error_message,
    wasm_sha256: row.wasm_sha256,
    input_sha256: row.input_sha256,
    input_json: row.input_json,
    stdout_sha256: row.stdout_sha256,
    stdout_head: row.stdout_head,
    stdout_tail: row.stdout_tail,
    stderr_head: row.stderr_head,
    stderr_tail: row.stderr_tail,
    peak_memory_bytes: row.peak_memory_bytes,
    ran_on: row.ran_on ?? null,
  };
}

/** The outcome fields of an execution that has none (interrupted). */
export const NO_OUTCOME: Nullable<ExecutionOutcome> = {
  result_ns: null,
  exit_code: null,
  error_code: null,
  error_message: null,
  stdout_sha256: null,
  stdout_head: null,
  stdout_tail: null,
  stderr_head: null,
  stderr_tail: null,
  duration_ms: null,
  peak_memory_bytes: null,
  ran_on: null,
};

/** A CorralError E_STORE naming the store, for adapters. */
export function storeError(
  location: string,
  message: string,
  details: Omit<ErrorDetails<'E_STORE'>, 'store'> = {},
): CorralError<'E_STORE'> {
  return new CorralError(ErrorCodes.STORE, `Snapshot store ${location}: ${message}`, { store: location, ...details });
}

/** True when an execution passes a filter (for adapters that filter in JS). */
export function matchesFilter(e: ExecutionSnapshot, f: ExecutionFilter): boolean {
  return (
    (f.tool === undefined || e.tool === f.tool) &&
    (f.since === undefined || BigInt(e.intent_ns) >= BigInt(f.since)) &&
    (f.errorCode === undefined || e.error_code === f.errorCode) &&
    (f.decisionId === undefined || e.decision_id === f.decisionId) &&
    (f.status === undefined || e.status === f.status)
  );
}

/** Newest first: by intent time, then id, so equal times still sort the same everywhere. */
export function newestFirst(a: { intent_ns: Nanos; id: string }, b: { intent_ns: Nanos; id: string }): number {
  const d = BigInt(b.intent_ns) - BigInt(a.intent_ns);
  return d !== 0n ? (d > 0n ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * Which records a prune removes, given everything in a store. Adapters may
 * select in their own query language but must match this (the conformance
 * suite checks the behaviour).
 */
export function selectPruned(
  executions: { id: string; intent_ns: Nanos; decision_id: string | null }[],
  decisions: { id: string; time_ns: Nanos }[],
  options: PruneOptions,
): { executions: Set<string>; decisions: Set<string> } {
  const cutoff = options.olderThan === undefined ? undefined : BigInt(options.olderThan);
  const drop = <T extends { id: string }>(items: T[], time: (t: T) => Nanos): Set<string> => {
    const sorted = [...items].sort((a, b) => newestFirst({ intent_ns: time(a), id: a.id }, { intent_ns: time(b), id: b.id }));
    return new Set(
      sorted
        .filter((t, i) => (cutoff !== undefined && BigInt(time(t)) < cutoff) || (options.keep !== undefined && i >= options.keep))
        .map((t) => t.id),
    );
  };
  const goneExecutions = drop(executions, (e) => e.intent_ns);
  const referenced = new Set(executions.filter((e) => !goneExecutions.has(e.id)).map((e) => e.decision_id));
  const goneDecisions = new Set([...drop(decisions, (d) => d.time_ns)].filter((id) => !referenced.has(id)));
  return { executions: goneExecutions, decisions: goneDecisions };
}

/**
 * A record a size cap could remove, as adapters describe it: enough to order
 * them and to know roughly what removing each gives back.
 */
export interface EvictionCandidate {
  kind: 'decision' | 'execution';
  id: string;
  /** Intent time of an execution, time of a decision. */
  time_ns: Nanos;
  /** A copy is kept outside the store (see Store.markArchived). */
  archived: boolean;
  /** Has a result (decisions always do); an interrupted execution may still be running elsewhere. */
  finished: boolean;
  /** Roughly the bytes its row takes, not counting its input. */
  bytes: number;
  /** The input it keeps, if any: freed with the last execution keeping it. */
  input_sha256: string | null;
  /** Bytes of that input's text. */
  input_bytes: number;
}

/**
 * The order in which a size cap removes records: archived ones first (a copy
 * exists elsewhere), then finished ones, then interrupted ones (which may
 * still be running in another process), oldest first within each group.
 */
export function evictionOrder(a: EvictionCandidate, b: EvictionCandidate): number {
  if (a.archived !== b.archived) return a.archived ? -1 : 1;
  if (a.finished !== b.finished) return a.finished ? -1 : 1;
  const d = BigInt(a.time_ns) - BigInt(b.time_ns);
  return d !== 0n ? (d < 0n ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * Which candidates to remove to free at least `excess` bytes, in eviction
 * order. An input counts once, when the first execution keeping it goes
 * (an estimate: another execution outside the candidates may keep it).
 */
export function selectEvicted(candidates: EvictionCandidate[], excess: number): EvictionCandidate[] {
  const chosen: EvictionCandidate[] = [];
  const inputs = new Set<string>();
  let freed = 0;
  for (const c of [...candidates].sort(evictionOrder)) {
    if (freed >= excess) break;
    chosen.push(c);
    freed += c.bytes;
    if (c.input_sha256 !== null && !inputs.has(c.input_sha256)) {
      inputs.add(c.input_sha256);
      freed += c.input_bytes;
    }
  }
  return chosen;
}

/**
 * Throws E_INPUT_VALIDATION for a record no store can key or order: not an
 * object, an id that is not a string, a time that is not Nanos. Adapters
 * call it first, so a bad record from a caller is never a TypeError or an
 * E_STORE (the store is fine).
 */
export function checkRecord(method: 'recordDecision' | 'beginExecution' | 'finishExecution', record: unknown, id?: unknown): void {
  const bad = (option: string, problem: string): never => {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `${method}: ${option} ${problem}`, { option });
  };
  const what = method === 'recordDecision' ? 'decision' : method === 'beginExecution' ? 'intent' : 'outcome';
  if (typeof record !== 'object' || record === null) bad(what, 'must be an object');
  const r = record as Record<string, unknown>;
  if (method === 'finishExecution') {
    if (typeof id !== 'string') bad('id', `must be a string (got a ${typeof id})`);
  } else if (typeof r.id !== 'string') {
    bad('id', `must be a string (got a ${typeof r.id})`);
  }
  if (method === 'finishExecution' && r.ran_on != null && !(typeof r.ran_on === 'string' && r.ran_on.length <= MAX_RAN_ON)) {
    bad('ran_on', `must be a string of at most ${MAX_RAN_ON} characters, or null`);
  }
  const time = method === 'recordDecision' ? 'time_ns' : method === 'beginExecution' ? 'intent_ns' : 'result_ns';
  const ns = r[time];
  if (typeof ns !== 'string' || !/^\d+$/.test(ns) || BigInt(ns) > MAX_RECORD_NS) {
    bad(time, `must be nanoseconds since the epoch as a decimal string, at most 2^63-1 (got ${JSON.stringify(ns) ?? String(ns)})`);
  }
}

/** Longest `ran_on` a store keeps. */
export const MAX_RAN_ON = 256;

/** The latest time a record may carry: SQLite's largest integer (in the year 2262), the same for every store. */
const MAX_RECORD_NS = 2n ** 63n - 1n;

/** Throws E_INPUT_VALIDATION for a filter no store can apply (every adapter checks it the same way). */
export function checkExecutionFilter(filter: ExecutionFilter): void {
  const bad = (option: string, problem: string): never => {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `listExecutions: ${option} ${problem}`, { option });
  };
  if (typeof filter !== 'object' || filter === null) bad('filter', 'must be an object');
  const { since, limit, status } = filter;
  if (since !== undefined && !(typeof since === 'bigint' ? since >= 0n : typeof since === 'string' && /^\d+$/.test(since))) {
    bad(
      'since',
      `must be nanoseconds since the epoch, as a decimal string or a bigint (got ${typeof since === 'string' ? JSON.stringify(since) : String(since)})`,
    );
  }
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) bad('limit', `must be a whole number ≥ 0 (got ${String(limit)})`);
  if (status !== undefined && !STATUSES.includes(status)) bad('status', `must be one of ${STATUSES.join(', ')} (got ${String(status)})`);
  for (const key of ['tool', 'errorCode', 'decisionId'] as const) {
    if (filter[key] !== undefined && typeof filter[key] !== 'string') bad(key, `must be a string (got a ${typeof filter[key]})`);
  }
  if (filter.withInput !== undefined && typeof filter.withInput !== 'boolean')
    bad('withInput', `must be true or false (got a ${typeof filter.withInput})`);
}

const STATUSES: readonly ExecutionStatus[] = ['ok', 'failed', 'interrupted'];

/** Throws E_INPUT_VALIDATION unless `ids` is an array of strings (markArchived's argument). */
export function checkIds(method: string, ids: unknown): void {
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `${method}: ids must be an array of strings`, { option: 'ids' });
  }
}

/** Check prune options up front, so a typo cannot remove everything. */
export function checkPruneOptions(options: PruneOptions): void {
  const { olderThan, keep } = options;
  if (olderThan === undefined && keep === undefined) {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, 'prune needs olderThan or keep; refusing to guess what to remove', {
      option: 'olderThan',
    });
  }
  if (keep !== undefined && !(Number.isInteger(keep) && keep >= 0)) {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `prune: keep must be a whole number ≥ 0 (got ${keep})`, { option: 'keep' });
  }
  if (olderThan !== undefined && !/^\d+$/.test(String(olderThan))) {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `prune: olderThan must be nanoseconds since the epoch (got ${String(olderThan)})`, {
      option: 'olderThan',
    });
  }
}

/**
 * Stands in for a store that could not be opened because nothing can be
 * written there (a read-only file or folder, a full disk). Every operation
 * rejects with the reason, so each call's envelope says its snapshot was
 * not written, instead of the runtime refusing to run tools at all.
 */
export class UnavailableStore implements Store {
  constructor(
    readonly location: string,
    readonly reason: CorralError,
  ) {}
  #fail = (): Promise<never> => Promise.reject(this.reason);
  recordDecision = this.#fail;
  beginExecution = this.#fail;
  finishExecution = this.#fail;
  getExecution = this.#fail;
  getDecision = this.#fail;
  listExecutions = this.#fail;
  prune = this.#fail;
  markArchived = this.#fail;
  recordAudit = this.#fail;
  listAudit = this.#fail;
  createApproval = this.#fail;
  getApproval = this.#fail;
  listApprovals = this.#fail;
  updateApproval = this.#fail;
  createWorkflowRun = this.#fail;
  getWorkflowRun = this.#fail;
  listWorkflowRuns = this.#fail;
  updateWorkflowRun = this.#fail;
  appendWorkflowEvent = this.#fail;
  listWorkflowEvents = this.#fail;
  // biome-ignore lint/correctness/useYield: a broken store's export fails on the first read, yielding nothing
  async *export(): AsyncIterable<SnapshotRecord> {
    throw this.reason;
  }
  async close(): Promise<void> {}
}
