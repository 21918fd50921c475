/**
 * A Store that keeps everything in memory: for tests, for hosts without
 * storage, and as the reference the other adapters are checked against.
 * Nothing survives the process; "durable" here means "acknowledged".
 */
import {
  checkExecutionFilter,
  checkIds,
  checkPruneOptions,
  checkRecord,
  decisionSnapshot,
  executionSnapshot,
  matchesFilter,
  newestFirst,
  NO_OUTCOME,
  selectPruned,
  storeError,
  type DecisionSnapshot,
  type ExecutionFilter,
  type ExecutionIntent,
  type ExecutionOutcome,
  type ExecutionSnapshot,
  type ApprovalFilter,
  type ApprovalPatch,
  type ApprovalRecord,
  type ApprovalStatus,
  type AuditEvent,
  type AuditFilter,
  type Nullable,
  type PruneOptions,
  type SnapshotRecord,
  type Store,
} from './snapshot.js';
import {
  approvalPatch,
  approvalRecord,
  auditEvent,
  checkApprovalFilter,
  checkAuditFilter,
  matchesApprovalFilter,
  matchesAuditFilter,
  newestByTime,
} from './policy-records.js';
import type { WorkflowEvent, WorkflowRunFilter, WorkflowRunPatch, WorkflowRunRecord, WorkflowRunStatus } from './workflow-records.js';
import {
  checkWorkflowEventQuery,
  checkWorkflowRunFilter,
  matchesWorkflowRunFilter,
  newestRunFirst,
  workflowEventFromRow,
  workflowEventRow,
  workflowRefusal,
  workflowRunFromRow,
  workflowRunPatchRow,
  workflowRunRow,
  type WorkflowEventRow,
  type WorkflowRunRow,
} from './workflow-store-kit.js';

/** An execution as kept: its input text lives in #inputs when it has a hash (`input_json` is then null here). */
type Row = ExecutionIntent & Nullable<ExecutionOutcome> & { input_kept: boolean };

export class MemoryStore implements Store {
  readonly location: string;
  readonly #decisions = new Map<string, DecisionSnapshot>();
  readonly #executions = new Map<string, Row>();
  readonly #audit = new Map<string, AuditEvent>();
  readonly #approvals = new Map<string, ApprovalRecord>();
  readonly #runs = new Map<string, WorkflowRunRow>();
  /** Each run's events by seq. */
  readonly #events = new Map<string, Map<number, WorkflowEventRow>>();
  /** Input texts by SHA-256, each kept once however many executions refer to it. */
  readonly #inputs = new Map<string, string>();
  readonly #archived = new Set<string>();
  #closed = false;

  constructor(location = 'memory') {
    this.location = location;
  }

  async recordDecision(decision: DecisionSnapshot): Promise<void> {
    checkRecord('recordDecision', decision);
    this.#open();
    if (this.#decisions.has(decision.id)) throw storeError(this.location, `a decision with id ${decision.id} already exists`);
    this.#decisions.set(decision.id, decisionSnapshot(decision));
  }

  async beginExecution(intent: ExecutionIntent): Promise<void> {
    checkRecord('beginExecution', intent);
    this.#open();
    if (this.#executions.has(intent.id)) throw storeError(this.location, `an execution with id ${intent.id} already exists`);
    const hash = intent.input_sha256 ?? null;
    const json = intent.input_json ?? null;
    const keep = hash !== null && json !== null;
    if (keep) {
      const held = this.#inputs.get(hash);
      if (held !== undefined && held !== json) throw storeError(this.location, inputMismatch(hash));
      this.#inputs.set(hash, json);
    }
    this.#executions.set(intent.id, { ...intent, input_json: keep ? null : json, input_kept: keep, ...NO_OUTCOME });
  }

  async finishExecution(id: string, outcome: ExecutionOutcome): Promise<void> {
    checkRecord('finishExecution', outcome, id);
    this.#open();
    const row = this.#executions.get(id);
    if (!row) throw storeError(this.location, `no execution with id ${id} to finish`);
    if (row.result_ns !== null) throw storeError(this.location, `execution ${id} already has a result`);
    this.#executions.set(id, { ...row, ...outcome });
  }

  async getExecution(id: string): Promise<ExecutionSnapshot | null> {
    this.#open();
    const row = this.#executions.get(id);
    return row ? this.#snapshotOf(row) : null;
  }

  async getDecision(id: string): Promise<DecisionSnapshot | null> {
    this.#open();
    const d = this.#decisions.get(id);
    return d ? decisionSnapshot(d) : null;
  }

  async listExecutions(filter: ExecutionFilter = {}): Promise<ExecutionSnapshot[]> {
    checkExecutionFilter(filter);
    this.#open();
    const found = [...this.#executions.values()].map((r) => this.#snapshotOf(r)).filter((e) => matchesFilter(e, filter));
    found.sort(newestFirst);
    const listed = filter.limit === undefined ? found : found.slice(0, filter.limit);
    return filter.withInput === false ? listed.map((e) => ({ ...e, input_json: null })) : listed;
  }

  async *export(): AsyncIterable<SnapshotRecord> {
    this.#open();
    const decisions = [...this.#decisions.values()].sort((a, b) =>
      newestFirst({ intent_ns: b.time_ns, id: b.id }, { intent_ns: a.time_ns, id: a.id }),
    );
    for (const d of decisions) yield { kind: 'decision', ...{ ...d } };
    const executions = [...this.#executions.values()].map((r) => this.#snapshotOf(r)).sort((a, b) => newestFirst(b, a));
    for (const e of executions) yield { kind: 'execution', ...e };
  }

  async prune(options: PruneOptions): Promise<SnapshotRecord[]> {
    this.#open();
    checkPruneOptions(options);
    const gone = selectPruned([...this.#executions.values()], [...this.#decisions.values()], options);
    const records: SnapshotRecord[] = [];
    for await (const r of this.export()) if ((r.kind === 'decision' ? gone.decisions : gone.executions).has(r.id)) records.push(r);
    if (records.length > 0) await options.archive?.(records);
    for (const id of gone.executions) this.#executions.delete(id), this.#archived.delete(id);
    for (const id of gone.decisions) this.#decisions.delete(id), this.#archived.delete(id);
    const kept = new Set([...this.#executions.values()].filter((r) => r.input_kept).map((r) => r.input_sha256));
    for (const hash of this.#inputs.keys()) if (!kept.has(hash)) this.#inputs.delete(hash);
    return records;
  }

  async markArchived(ids: readonly string[]): Promise<number> {
    checkIds('markArchived', ids);
    this.#open();
    let n = 0;
    for (const id of new Set(ids)) {
      if ((this.#executions.has(id) || this.#decisions.has(id)) && !this.#archived.has(id)) this.#archived.add(id), n++;
    }
    return n;
  }

  async recordAudit(event: AuditEvent): Promise<void> {
    this.#open();
    const e = auditEvent(event, this.location);
    if (this.#audit.has(e.id)) throw storeError(this.location, `an audit event with id ${e.id} already exists`);
    this.#audit.set(e.id, e);
  }

  async listAudit(filter: AuditFilter = {}): Promise<AuditEvent[]> {
    this.#open();
    checkAuditFilter(filter, this.location);
    const found = [...this.#audit.values()].filter((e) => matchesAuditFilter(e, filter)).sort(newestByTime((e) => e.time_ns));
    return (filter.limit === undefined ? found : found.slice(0, filter.limit)).map((e) => auditEvent(e, this.location));
  }

  async createApproval(approval: ApprovalRecord): Promise<void> {
    this.#open();
    const a = approvalRecord(approval, this.location);
    if (this.#approvals.has(a.id)) throw storeError(this.location, `an approval with id ${a.id} already exists`);
    this.#approvals.set(a.id, a);
  }

  async getApproval(id: string): Promise<ApprovalRecord | null> {
    this.#open();
    const a = this.#approvals.get(id);
    return a ? approvalRecord(a, this.location) : null;
  }

  async listApprovals(filter: ApprovalFilter = {}): Promise<ApprovalRecord[]> {
    this.#open();
    checkApprovalFilter(filter, this.location);
    const found = [...this.#approvals.values()].filter((a) => matchesApprovalFilter(a, filter)).sort(newestByTime((a) => a.requested_ns));
    return (filter.limit === undefined ? found : found.slice(0, filter.limit)).map((a) => approvalRecord(a, this.location));
  }

  async updateApproval(id: string, from: readonly ApprovalStatus[], patch: ApprovalPatch): Promise<ApprovalRecord | null> {
    this.#open();
    const change = approvalPatch(patch, from, this.location);
    const a = this.#approvals.get(id);
    if (!a) throw storeError(this.location, `no approval with id ${id}`);
    if (!from.includes(a.status)) return null;
    const next = approvalRecord({ ...a, ...change }, this.location);
    this.#approvals.set(id, next);
    return approvalRecord(next, this.location);
  }

  async createWorkflowRun(run: WorkflowRunRecord): Promise<void> {
    this.#open();
    const row = workflowRunRow(run, this.location);
    if (this.#runs.has(row.id)) throw workflowRefusal.runExists(this.location, row.id);
    this.#runs.set(row.id, row);
    this.#events.set(row.id, new Map());
  }

  async getWorkflowRun(id: string): Promise<WorkflowRunRecord | null> {
    this.#open();
    const row = this.#runs.get(id);
    return row ? workflowRunFromRow(row, this.location) : null;
  }

  async listWorkflowRuns(filter: WorkflowRunFilter = {}): Promise<WorkflowRunRecord[]> {
    this.#open();
    checkWorkflowRunFilter(filter, this.location);
    const found = [...this.#runs.values()].filter((r) => matchesWorkflowRunFilter(r, filter)).sort(newestRunFirst);
    return (filter.limit === undefined ? found : found.slice(0, filter.limit)).map((r) => workflowRunFromRow(r, this.location));
  }

  async updateWorkflowRun(id: string, from: readonly WorkflowRunStatus[], patch: WorkflowRunPatch): Promise<WorkflowRunRecord | null> {
    this.#open();
    const checked = workflowRunPatchRow(patch, from, this.location);
    const row = this.#runs.get(id);
    if (!row) throw workflowRefusal.noRun(this.location, id);
    if (!checked.from.includes(row.status)) return null;
    const next = { ...row, ...checked.change };
    this.#runs.set(id, next);
    return workflowRunFromRow(next, this.location);
  }

  async appendWorkflowEvent(event: WorkflowEvent): Promise<void> {
    this.#open();
    const row = workflowEventRow(event, this.location);
    const events = this.#events.get(row.run_id);
    if (!events) throw workflowRefusal.noRunForEvent(this.location, row.run_id, row.seq);
    if (events.has(row.seq)) throw workflowRefusal.eventExists(this.location, row.run_id, row.seq);
    events.set(row.seq, row);
  }

  async listWorkflowEvents(runId: string, afterSeq?: number): Promise<WorkflowEvent[]> {
    this.#open();
    checkWorkflowEventQuery(runId, afterSeq, this.location);
    const events = [...(this.#events.get(runId)?.values() ?? [])];
    return events
      .filter((e) => afterSeq === undefined || e.seq > afterSeq)
      .sort((a, b) => a.seq - b.seq)
      .map((e) => workflowEventFromRow(e, this.location));
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #snapshotOf(row: Row): ExecutionSnapshot {
    const { input_kept, ...rest } = row;
    return executionSnapshot({ ...rest, input_json: input_kept ? (this.#inputs.get(row.input_sha256!) ?? null) : row.input_json });
  }

  #open(): void {
    if (this.#closed) throw storeError(this.location, 'is closed');
  }
}

function inputMismatch(hash: string): string {
  return `holds a different input under input_sha256 ${hash}; an input's hash must be the SHA-256 of its text`;
}
