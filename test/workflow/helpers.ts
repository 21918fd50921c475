/**
 * What the workflow tests share: an in-memory WorkflowJournal (the Store
 * adapters get theirs from the store work; this one only has to behave
 * like the interface says), fake tools with scripted outcomes, and an
 * approval desk a test decides on.
 */
import {
  CorralError,
  ErrorCodes,
  type ErrorDetails,
  type InvokeResult,
  type WorkflowEvent,
  type WorkflowJournal,
  type WorkflowRunFilter,
  type WorkflowRunPatch,
  type WorkflowRunRecord,
  type WorkflowRunStatus,
} from '@corral/core';
import type { ApprovalRequest, ApprovalState, StepInvokeOptions, WorkflowHost } from '@corral/workflow';

const clone = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

export class MemoryJournal implements WorkflowJournal {
  runs = new Map<string, WorkflowRunRecord>();
  events = new Map<string, WorkflowEvent[]>();

  async createWorkflowRun(run: WorkflowRunRecord): Promise<void> {
    if (this.runs.has(run.id)) throw new CorralError(ErrorCodes.STORE, `run ${run.id} exists`, { store: 'memory' });
    this.runs.set(run.id, clone(run));
    this.events.set(run.id, []);
  }

  async getWorkflowRun(id: string): Promise<WorkflowRunRecord | null> {
    return clone(this.runs.get(id) ?? null);
  }

  async listWorkflowRuns(filter: WorkflowRunFilter = {}): Promise<WorkflowRunRecord[]> {
    return [...this.runs.values()].filter((r) => !filter.status || filter.status.includes(r.status)).map(clone);
  }

  async updateWorkflowRun(id: string, from: readonly WorkflowRunStatus[], patch: WorkflowRunPatch): Promise<WorkflowRunRecord | null> {
    const run = this.runs.get(id);
    if (!run) throw new CorralError(ErrorCodes.STORE, `no run ${id}`, { store: 'memory' });
    if (!from.includes(run.status)) return null;
    Object.assign(run, clone(patch));
    return clone(run);
  }

  async appendWorkflowEvent(event: WorkflowEvent): Promise<void> {
    const list = this.events.get(event.run_id);
    if (!list) throw new CorralError(ErrorCodes.STORE, `no run ${event.run_id}`, { store: 'memory' });
    // Appends come in order: only the tail can hold a seq that exists, unless a test wrote out of order.
    if (list.length > 0 && list[list.length - 1]!.seq >= event.seq && list.some((e) => e.seq === event.seq)) {
      throw new CorralError(ErrorCodes.STORE, `event ${event.seq} of ${event.run_id} exists`, {
        store: 'memory',
        reason: 'conflict',
      } as ErrorDetails<'E_STORE'>);
    }
    list.push(clone(event));
    if (list.length > 1 && list[list.length - 2]!.seq > event.seq) list.sort((a, b) => a.seq - b.seq);
  }

  async listWorkflowEvents(runId: string, afterSeq = 0): Promise<WorkflowEvent[]> {
    return clone((this.events.get(runId) ?? []).filter((e) => e.seq > afterSeq));
  }

  /** A copy holding the run as a crash after its first `k` events would have left it. */
  truncated(runId: string, k: number, status: WorkflowRunStatus = 'running'): MemoryJournal {
    const copy = new MemoryJournal();
    const run = clone(this.runs.get(runId)!);
    copy.runs.set(runId, { ...run, status, outputs: null, error: null });
    copy.events.set(runId, clone(this.events.get(runId)!.slice(0, k)));
    return copy;
  }
}

export function ok(tool: string, output: unknown, durationMs = 1): InvokeResult {
  return {
    ok: true,
    tool,
    version: '1.0.0',
    output,
    error: null,
    exit_code: 0,
    duration_ms: durationMs,
    stdout_head: '',
    stderr_tail: '',
    stdout_truncated: false,
    stderr_truncated: false,
  };
}

export function failure(tool: string, code: string, message = `${tool} failed with ${code}`, durationMs = 1): InvokeResult {
  return {
    ok: false,
    tool,
    version: '1.0.0',
    output: null,
    error: { code, message, details: {}, retryable: false } as unknown as Extract<InvokeResult, { ok: false }>['error'],
    exit_code: 1,
    duration_ms: durationMs,
    stdout_head: '',
    stderr_tail: '',
    stdout_truncated: false,
    stderr_truncated: false,
  };
}

export interface Call {
  tool: string;
  input: unknown;
  options: StepInvokeOptions;
}

/** A tool as a function of its input and how many times it was called before. */
export type FakeTool = (input: Record<string, unknown>, n: number) => InvokeResult | Promise<InvokeResult>;

/** Fake tools: records every call, and the most calls in flight at once. */
export class Tools {
  calls: Call[] = [];
  inFlight = 0;
  maxInFlight = 0;
  readonly counts = new Map<string, number>();
  constructor(readonly tools: Record<string, FakeTool>) {}

  invoke = async (tool: string, input: unknown, options: StepInvokeOptions): Promise<InvokeResult> => {
    this.calls.push({ tool, input, options });
    const n = this.counts.get(tool) ?? 0;
    this.counts.set(tool, n + 1);
    const fn = this.tools[tool.split('@')[0]!];
    if (!fn) return failure(tool, ErrorCodes.TOOL_NOT_FOUND, `no tool ${tool}`);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      return await fn(input as Record<string, unknown>, n);
    } finally {
      this.inFlight--;
    }
  };

  called(tool: string): Call[] {
    return this.calls.filter((c) => c.tool === tool);
  }
}

/** Approvals a test decides on: `decide(id, 'approved', 'ada')`. */
export class ApprovalDesk {
  requests: Array<ApprovalRequest & { id: string }> = [];
  states = new Map<string, ApprovalState>();
  #n = 0;

  requestApproval = async (request: ApprovalRequest): Promise<string> => {
    const id = `approval-${++this.#n}`;
    this.requests.push({ ...request, id });
    this.states.set(id, { status: 'pending' });
    return id;
  };

  getApprovalStatus = async (id: string): Promise<ApprovalState> => this.states.get(id) ?? { status: 'pending' };

  decide(id: string, status: string, by = 'ada', comment: string | null = null): void {
    this.states.set(id, { status, decided_by: by, comment });
  }
}

/** A host over a journal, fake tools and a desk, with deterministic ids and clock. */
export function host(journal: MemoryJournal, tools: Tools, extra: Partial<WorkflowHost> & { desk?: ApprovalDesk } = {}): WorkflowHost {
  let t = 1_700_000_000_000_000_000n;
  let id = 0;
  const { desk, ...rest } = extra;
  return {
    journal,
    invoke: tools.invoke,
    now: () => (t += 1_000_000n).toString(),
    newId: () => `run-${++id}`,
    ...(desk ? { requestApproval: desk.requestApproval, getApprovalStatus: desk.getApprovalStatus } : {}),
    ...rest,
  };
}

export const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));
