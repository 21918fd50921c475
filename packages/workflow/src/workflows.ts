/**
 * Workflows on a Corral host (Node's `Corral`, the browser's): the typed API
 * behind `corral workflow …`. The host gives tool calls and its Store; the
 * Store is the run journal and keeps the approvals, so a run started in one
 * process is listed, approved and resumed from any other sharing the store.
 */
import {
  CorralError,
  ErrorCodes,
  PolicyGate,
  isWorkflowApproval,
  callerLabel,
  nowNs,
  sha256Hex,
  workflowApproval,
  type ApprovalRecord,
  type CallerInfo,
  type InvokeOptions,
  type InvokeResult,
  type Registry,
  type Store,
  type WorkflowEvent,
  type WorkflowRunRecord,
  type WorkflowRunStatus,
} from '@corral/core';
import {
  NOT_THE_TOOLS_FAULT,
  canonicalJson,
  resumeWorkflow,
  runWorkflow,
  type ApprovalRequest,
  type ApprovalState,
  type WorkflowHost,
  type WorkflowResult,
} from './engine.js';
import { loadWorkflow, validateWorkflow, type LoadOptions } from './load.js';
import { Reliability, type ReliabilityOptions, type ToolBelief, type ToolOutcome } from './reliability.js';
import type { Workflow } from './types.js';

/** What Workflows needs of a host: `Corral` (Node) and `CorralBrowser` are one. */
export interface WorkflowRuntime {
  readonly registry: Registry;
  /** Undefined when the host records nothing: workflows need a store (their journal). */
  readonly store: Store | undefined;
  invoke(ref: string, input: unknown, options?: InvokeOptions): Promise<InvokeResult>;
}

export interface WorkflowsOptions {
  /** Who starts runs and asks for approvals, as approvals and the audit trail name them. Default 'corral'. */
  by?: string;
  /** Steps running at once. Default 4 (the pool queues what it cannot run yet). */
  concurrency?: number;
  /** How long an approval step waits before it counts as rejected. Default 7 days, at most 30. */
  approvalTtlMs?: number;
  /** The prior of a tool never seen, and the sampling of `thompson` routes. */
  reliability?: ReliabilityOptions;
  /** Past executions read from the store to seed the beliefs. Default 10 000 (the newest). */
  seedExecutions?: number;
  /**
   * The remote caller these workflows run for (an HTTP request, an MCP client), when a server runs
   * them: its runs get ids `KIND-UUID` (`remoteRunKind` tells them apart), their approvals keep this
   * caller (so the run is continued later with the same identity: `owner`), and `by` defaults to its
   * label. The runtime's invoke must then be the policy gate's for this caller (`gatedRuntime`).
   * Without it (the CLI, a program of the user's), a run a server started is never resumed here:
   * its tool calls would get this process's rights instead of the policy's for that caller.
   */
  caller?: CallerInfo;
}

export interface ResumeCallOptions extends Omit<RunCallOptions, 'runId'> {
  /** Only take up a run that waits and has a decided approval; a running one is only reported (see ResumeOptions). */
  onlyIfWaiting?: boolean;
}

/** The caller kinds a server runs workflows for: `KIND-UUID` run ids carry them. */
const REMOTE_RUN_ID = /^([a-z]{1,16})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The caller kind (`http`, `mcp`) of a run a server started for a remote caller, from its id, or
 * null for a run started locally. Such runs are resumed only through the policy gate.
 */
export function remoteRunKind(runId: string): string | null {
  return REMOTE_RUN_ID.exec(runId)?.[1] ?? null;
}

/** The largest caller record a run keeps in its approvals (its MCP roots included). */
const MAX_OWNER_BYTES = 12 * 1024;

/** A caller as approvals keep it: kind, id and roots, each bounded; null when it does not fit. */
function ownerRecord(caller: CallerInfo): Record<string, unknown> | null {
  const out: Record<string, unknown> = {};
  if (typeof caller.kind === 'string') out.kind = caller.kind.slice(0, 64);
  if (typeof caller.id === 'string') out.id = caller.id.slice(0, 256);
  if (caller.roots !== undefined) {
    if (!Array.isArray(caller.roots) || !caller.roots.every((r) => typeof r === 'string')) return null;
    out.roots = [...caller.roots];
  }
  return JSON.stringify(out).length <= MAX_OWNER_BYTES ? out : null;
}

export interface RunCallOptions {
  runId?: string;
  /** Every event, once it is in the journal. */
  onEvent?: (event: WorkflowEvent) => void;
  /** Stops the run as a crash would; `resume` continues it. */
  signal?: AbortSignal;
}

export interface WorkflowListFilter {
  status?: WorkflowRunStatus[];
  workflow?: string;
  /** Only runs waiting for a person, with what they wait for. */
  pending?: boolean;
  limit?: number;
}

export interface WorkflowRunSummary extends WorkflowRunRecord {
  /** The approvals the run waits for (pending ones only). */
  pending: ApprovalRecord[];
}

/** One tool version's belief, as `corral tools stats` shows it. */
export interface ToolStats extends ToolBelief {
  /** Mean success below the threshold with enough evidence: route around it, plan to replace it. */
  retire: boolean;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export class Workflows {
  readonly #runtime: WorkflowRuntime;
  readonly #store: Store;
  readonly #options: WorkflowsOptions;
  readonly #by: string;
  readonly #caller: Record<string, unknown> | null;
  readonly #concurrency: number | undefined;
  readonly #ttlMs: number;
  #reliability: Reliability;
  readonly #seedLimit: number;
  #seeded: Promise<void> | undefined;

  constructor(runtime: WorkflowRuntime, options: WorkflowsOptions = {}) {
    if (!runtime.store) {
      throw new CorralError(
        ErrorCodes.STORE,
        'Workflows need a snapshot store: it is their journal (every step start and end) and keeps their approvals. Create Corral with a store.',
        { store: 'none' },
      );
    }
    this.#runtime = runtime;
    this.#store = runtime.store;
    this.#options = options;
    this.#caller = null;
    if (options.caller !== undefined) {
      this.#caller = ownerRecord(options.caller);
      if (this.#caller === null || typeof this.#caller.kind !== 'string' || !/^[a-z]{1,16}$/.test(this.#caller.kind))
        throw new CorralError(
          ErrorCodes.INPUT_VALIDATION,
          `A workflow caller needs a kind of 1 to 16 letters a-z (http, mcp) and must fit in ${MAX_OWNER_BYTES} bytes as JSON, its roots included`,
          { option: 'caller' },
        );
    }
    this.#by = (options.by ?? (options.caller ? callerLabel(options.caller) : 'corral')).slice(0, 256) || 'corral';
    this.#concurrency = options.concurrency;
    const ttl = options.approvalTtlMs ?? 7 * DAY_MS;
    if (!(Number.isFinite(ttl) && ttl > 0 && ttl <= 30 * DAY_MS)) throw new RangeError('approvalTtlMs must be between 1 ms and 30 days');
    this.#ttlMs = ttl;
    this.#reliability = new Reliability(options.reliability);
    this.#seedLimit = options.seedExecutions ?? 10_000;
  }

  /**
   * The same store, settings and beliefs, acting for `caller` with tool calls through `runtime` (a
   * server gives each remote caller one, over the policy gate's invoke for that caller: `gatedRuntime`).
   */
  for(runtime: WorkflowRuntime, caller: CallerInfo): Workflows {
    const { by: _by, ...rest } = this.#options;
    const other = new Workflows(runtime, { ...rest, caller });
    other.#reliability = this.#reliability;
    other.#seeded = this.#seed();
    return other;
  }

  /** The caller this object acts for, as its runs' approvals keep it; null for a local one. */
  get caller(): CallerInfo | null {
    return this.#caller === null ? null : callerOf(this.#caller);
  }

  /**
   * Who started a run for a remote caller, as its approvals keep it (kind, id, MCP roots), or null: a
   * local run, or one that never asked for an approval. A server resumes the run as that caller.
   */
  async owner(runId: string): Promise<CallerInfo | null> {
    await this.#run(runId);
    const kind = remoteRunKind(runId);
    if (kind === null) return null;
    const owners = (await this.#store.listApprovals({ workflowRunId: runId, limit: 1000 }))
      .map((a) => callerOf(a.caller))
      .filter((c): c is CallerInfo => c !== null && c.kind !== 'workflow');
    // The kind that started it, else whoever resumed it over another protocol (a run with no approval of its own kind).
    return owners.find((c) => c.kind === kind) ?? owners[0] ?? null;
  }

  /** Parse and validate a workflow file's text; its tools must be registered. Throws E_INPUT_VALIDATION with every problem. */
  load(text: string, options: Omit<LoadOptions, 'knownTool'> = {}): Workflow {
    return loadWorkflow(text, { ...options, knownTool: (ref) => this.#runtime.registry.has(ref) });
  }

  /** Validate a workflow given as an object (JSON already parsed). */
  validate(value: unknown): Workflow {
    return validateWorkflow(value, { knownTool: (ref) => this.#runtime.registry.has(ref) });
  }

  /** Start a run; it resolves when the run ends or waits for a person. */
  async run(workflow: Workflow, inputs: Record<string, unknown> = {}, options: RunCallOptions = {}): Promise<WorkflowResult> {
    const checked = this.validate(workflow);
    let runId = options.runId;
    if (this.#caller !== null) {
      // A remote caller never picks the id: it marks the run as theirs (remoteRunKind).
      if (runId !== undefined)
        throw new CorralError(ErrorCodes.INPUT_VALIDATION, 'A run for a remote caller gets its id from Corral', { option: 'run_id' });
      runId = `${this.#caller.kind as string}-${crypto.randomUUID()}`;
    } else if (runId !== undefined && remoteRunKind(runId) !== null) {
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        `Run ids of the form KIND-UUID (${runId}) are those of runs a server starts for remote callers: pick another`,
        { option: 'run_id' },
      );
    }
    return runWorkflow(checked, inputs, await this.#host(options), runId !== undefined ? { runId } : {});
  }

  /**
   * Take a run up again: after a crash, a stop, or its approvals being decided. A finished run is only
   * reported. A run a server started for a remote caller is resumed only by a Workflows acting for a
   * caller (through the policy gate), never by a local one, which would give its tool calls this
   * process's rights: E_INPUT_VALIDATION names the server's way.
   */
  async resume(runId: string, options: ResumeCallOptions = {}): Promise<WorkflowResult> {
    const run = await this.#run(runId);
    const kind = remoteRunKind(runId);
    if (kind !== null && this.#caller === null)
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        `Workflow run ${runId} was started through a server (${kind}) for a remote caller: its tool calls go through the policy ` +
          'for that caller, so only a server continues it (it does once its approvals are decided; over HTTP: POST /workflows/runs/ID/resume). ' +
          'Decide its approvals here with corral approve ID or corral workflow approve RUN_ID STEP --no-resume.',
        { option: 'run_id' },
      );
    if (run.status === 'running' || run.status === 'waiting') this.#toolsHere(run);
    const { onlyIfWaiting, ...hooks } = options;
    return resumeWorkflow(runId, await this.#host(hooks), onlyIfWaiting ? { onlyIfWaiting } : {});
  }

  /** Whether `resume` here would refuse the run: a server's run, and this object acts for no caller. */
  resumesElsewhere(runId: string): boolean {
    return remoteRunKind(runId) !== null && this.#caller === null;
  }

  /** A run's record, its events and the approvals it waits for. Reads only. */
  async status(runId: string): Promise<{ run: WorkflowRunRecord; events: WorkflowEvent[]; pending: ApprovalRecord[] }> {
    const run = await this.#run(runId);
    const [events, pending] = await Promise.all([this.#store.listWorkflowEvents(runId), this.#pendingOf(runId)]);
    return { run, events, pending };
  }

  /** Runs, newest first; `pending: true` lists only those waiting for a person. */
  async list(filter: WorkflowListFilter = {}): Promise<WorkflowRunSummary[]> {
    const status = filter.pending ? ['waiting' as const] : filter.status;
    const runs = await this.#store.listWorkflowRuns({
      ...(status ? { status } : {}),
      ...(filter.workflow !== undefined ? { workflow: filter.workflow } : {}),
      ...(filter.limit !== undefined ? { limit: filter.limit } : {}),
    });
    const out: WorkflowRunSummary[] = [];
    for (const run of runs) {
      const pending = run.status === 'waiting' ? await this.#pendingOf(run.id) : [];
      if (!filter.pending || pending.length > 0) out.push({ ...run, pending });
    }
    return out;
  }

  /**
   * Decide the approval a run's step waits for (recorded with who and when,
   * in the same records and audit trail as tool calls' approvals), then
   * continue the run unless `resume: false`.
   */
  async approve(
    runId: string,
    step: string,
    decision: { reject?: boolean; comment?: string; by?: string; resume?: boolean } & Omit<RunCallOptions, 'runId'> = {},
  ): Promise<{ approval: ApprovalRecord; result: WorkflowResult | null }> {
    const run = await this.#run(runId);
    const waiting = (await this.#pendingOf(runId)).filter((a) => a.workflow_step === step);
    if (waiting.length === 0) {
      const decided = (await this.#store.listApprovals({ workflowRunId: runId })).find((a) => a.workflow_step === step);
      if (decided && decided.status !== 'pending') {
        const by = decided.decided_by ?? decided.revoked_by;
        throw new CorralError(
          ErrorCodes.INPUT_VALIDATION,
          `Step '${step}' of workflow run ${runId} was already decided: ${decided.status}${by ? ` by ${by}` : ''}` +
            (run.status === 'waiting' || run.status === 'running' ? `; corral workflow resume ${runId} continues the run` : ''),
          { option: 'step' },
        );
      }
      const ids = ((run.definition as { steps?: { id?: unknown }[] }).steps ?? []).map((s) => String(s.id));
      if (!ids.includes(step)) {
        throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Workflow run ${runId} has no step '${step}' (its steps: ${ids.join(', ')})`, {
          option: 'step',
        });
      }
      const steps = (await this.#pendingOf(runId)).map((a) => a.workflow_step);
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        `Step '${step}' of workflow run ${runId} waits for no approval` +
          (steps.length ? ` (waiting: ${steps.join(', ')})` : ' (the run waits for none)'),
        { option: 'step' },
      );
    }
    // Before deciding: a decision this host cannot go on from would strand the run.
    if (decision.resume !== false && !this.resumesElsewhere(runId)) this.#toolsHere(run);
    const approval = await this.#gate().decide(waiting[0]!.id, decision.reject ? 'reject' : 'approve', {
      by: decision.by ?? this.#by,
      ...(decision.comment !== undefined ? { comment: decision.comment } : {}),
    });
    // A server's run is continued by a server (see resume): deciding is all that happens here.
    const result = decision.resume === false || this.resumesElsewhere(runId) ? null : await this.resume(runId, decision);
    return { approval, result };
  }

  /** Every tool version's belief of success, from the store's executions and this object's runs. */
  async stats(options: StatsOptions = {}): Promise<ToolStats[]> {
    await this.#seed();
    return statsOf(this.#reliability, options);
  }

  async #host(options: Omit<RunCallOptions, 'runId'>): Promise<WorkflowHost> {
    await this.#seed();
    const runtime = this.#runtime;
    return {
      journal: this.#store,
      invoke: (tool, input, o) =>
        runtime.invoke(tool, input, {
          signal: o.signal,
          ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
          ...(o.mounts !== undefined ? { mounts: o.mounts } : {}),
        }),
      requestApproval: (request) => this.#requestApproval(request),
      getApprovalStatus: (id) => this.#approvalState(id),
      reliability: this.#reliability,
      ...(this.#concurrency !== undefined ? { concurrency: this.#concurrency } : {}),
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    };
  }

  async #requestApproval(request: ApprovalRequest): Promise<string> {
    // One approval per run, step and kind: the id is derived from them, so a
    // request repeated after a crash (the record was written, the journal's
    // step_waiting was not) finds the first one instead of leaving it pending.
    const id = `wf-${(await sha256Hex(canonicalJson([request.runId, request.step, request.kind]))).slice(0, 40)}`;
    if (await this.#store.getApproval(id)) return id;
    const now = nowNs();
    const record = await workflowApproval({
      id,
      workflow: request.workflow,
      run_id: request.runId,
      step: request.step,
      prompt: request.prompt,
      input: request.kind === 'human_review' ? { tool: request.tool, error: request.error, input: request.input } : request.input,
      requested_by: this.#by,
      // A remote caller's identity, kept so the run is continued as them after the decision (owner).
      caller: this.#caller ?? { kind: 'workflow', run_id: request.runId },
      requested_ns: now,
      expires_ns: (BigInt(now) + BigInt(this.#ttlMs) * 1_000_000n).toString(),
    });
    await this.#store.createApproval(record);
    await this.#store.recordAudit({
      id: crypto.randomUUID(),
      time_ns: now,
      action: 'approval_requested',
      actor: this.#by,
      tool: record.tool,
      approval_id: record.id,
      detail: { workflow_run_id: request.runId, workflow_step: request.step, kind: request.kind, prompt: request.prompt },
    });
    return record.id;
  }

  async #approvalState(id: string): Promise<ApprovalState> {
    const a = await this.#store.getApproval(id);
    if (!a) return { status: 'revoked', comment: 'the approval record is gone' };
    if (a.status === 'pending' && BigInt(nowNs()) >= BigInt(a.expires_ns)) {
      // The gate marks it expired (and audits it) the way it does for calls.
      await this.#gate().pending();
      const now = await this.#store.getApproval(id);
      return { status: now?.status ?? 'expired', decided_by: now?.decided_by ?? null, comment: now?.comment ?? null };
    }
    return { status: a.status, decided_by: a.decided_by, comment: a.comment };
  }

  /**
   * Refuse to go on with a run whose tools this host has not loaded: its
   * steps would fail with E_TOOL_NOT_FOUND, and their on_error would record
   * that for good (a resume started without the `--tools` of the run).
   */
  #toolsHere(run: WorkflowRunRecord): void {
    const missing = new Set<string>();
    try {
      validateWorkflow(run.definition, { knownTool: (ref) => this.#runtime.registry.has(ref) || (missing.add(ref), false) });
    } catch (err) {
      if (missing.size === 0) throw err;
    }
    if (missing.size > 0) {
      const names = [...missing].sort();
      throw new CorralError(
        ErrorCodes.TOOL_NOT_FOUND,
        `Workflow run ${run.id} needs ${names.length === 1 ? 'a tool' : 'tools'} not loaded here: ${names.join(', ')}. ` +
          'Load them as when the run started (corral: --tools DIR); nothing was recorded.',
        { name: names[0]!, range: null, available: [] },
      );
    }
  }

  async #pendingOf(runId: string): Promise<ApprovalRecord[]> {
    const found = await this.#store.listApprovals({ status: ['pending'], workflowRunId: runId });
    return found.filter(isWorkflowApproval);
  }

  async #run(runId: string): Promise<WorkflowRunRecord> {
    if (typeof runId !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(runId))
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `${JSON.stringify(String(runId).slice(0, 200))} is not a workflow run id`, {
        option: 'run_id',
      });
    const run = await this.#store.getWorkflowRun(runId);
    if (!run)
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `There is no workflow run '${runId}' in ${this.#store.location}`, {
        option: 'run_id',
      });
    return run;
  }

  /**
   * Deciding an approval needs no policy: it is a change of the record and
   * an audit event. The gate does both for calls' and steps' approvals
   * alike; a workflow approval never reaches the policy or the folders.
   */
  #gate(): PolicyGate {
    const noPolicy = (): never => {
      throw new Error('Workflows decide approvals only; they evaluate no policy and open no folder');
    };
    return new PolicyGate({
      store: this.#store,
      policy: { location: 'workflow approvals', load: async () => noPolicy() },
      host: { realpath: async () => noPolicy(), mountSource: () => noPolicy() },
    });
  }

  /** Beliefs start from the store's past executions, once per object. */
  #seed(): Promise<void> {
    this.#seeded ??= outcomesIn(this.#store, this.#seedLimit).then((outcomes) => this.#reliability.seed(outcomes));
    return this.#seeded;
  }
}

export interface StatsOptions {
  /** A mean success below this, with enough evidence, marks a tool for retirement. Default 0.5. */
  threshold?: number;
  /** Outcomes needed before a tool can be marked. Default 20. */
  minEvidence?: number;
  /** The credible interval's level. Default 0.95. */
  level?: number;
}

/** A caller record read back from the store (untrusted shape): only well-formed kind, id and roots. */
function callerOf(record: Record<string, unknown> | null | undefined): CallerInfo | null {
  if (typeof record !== 'object' || record === null || typeof record.kind !== 'string') return null;
  const caller: CallerInfo = { kind: record.kind };
  if (typeof record.id === 'string') caller.id = record.id;
  if (record.roots !== undefined) {
    // Roots that cannot be read would widen what the caller may bind: no owner at all then.
    if (!Array.isArray(record.roots) || !record.roots.every((r) => typeof r === 'string')) return null;
    caller.roots = [...(record.roots as string[])];
  }
  return caller;
}

/**
 * Beliefs of success for every tool version the store saw run (the newest
 * `limit` executions), without a host: `corral tools stats`.
 */
export async function toolStats(
  store: Store,
  options: StatsOptions & { prior?: ReliabilityOptions['prior']; limit?: number } = {},
): Promise<ToolStats[]> {
  const reliability = new Reliability(options.prior ? { prior: options.prior } : {});
  reliability.seed(await outcomesIn(store, options.limit ?? 10_000));
  return statsOf(reliability, options);
}

function statsOf(reliability: Reliability, options: StatsOptions): ToolStats[] {
  const threshold = options.threshold ?? 0.5;
  const minEvidence = options.minEvidence ?? 20;
  return reliability.beliefs(options.level ?? 0.95).map((b) => ({ ...b, retire: reliability.retired(b.key, threshold, minEvidence) }));
}

/** What past executions say about each tool, oldest first; calls that failed for reasons not the tool's are left out. */
async function outcomesIn(store: Store, limit: number): Promise<ToolOutcome[]> {
  const executions = await store.listExecutions({ limit });
  const outcomes: ToolOutcome[] = [];
  for (const e of executions.reverse()) {
    if (e.status === 'interrupted' || (e.error_code !== null && NOT_THE_TOOLS_FAULT.has(e.error_code))) continue;
    outcomes.push({
      tool: e.tool,
      version: e.version,
      ok: e.error_code === null,
      ...(e.duration_ms !== null ? { durationMs: e.duration_ms } : {}),
    });
  }
  return outcomes;
}
