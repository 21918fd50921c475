/**
 * What a Store keeps of a workflow run: one run record, changed only by
 * compare-and-set, and an append-only journal of events numbered 1, 2, 3 …
 * per run. Resume reads the journal: a step with a recorded end is never run
 * again. Two processes driving one run collide on a sequence number, and the
 * one whose append is refused stops.
 */
import type { Nanos } from './snapshot.js';

export type WorkflowRunStatus = 'running' | 'waiting' | 'succeeded' | 'failed' | 'cancelled';

export interface WorkflowRunError {
  code: string;
  message: string;
  /** The step that failed the run, when one did. */
  step?: string;
}

export interface WorkflowRunRecord {
  /** Chosen by the engine; the same id charset as executions. */
  id: string;
  /** The workflow's `name`. */
  workflow: string;
  /** The validated workflow as JSON, kept whole: a resume never depends on the file still being there or unchanged. */
  definition: unknown;
  /** SHA-256 (hex) of the definition's canonical JSON text. */
  definition_sha256: string;
  /** The run's inputs, after defaults. */
  inputs: unknown;
  status: WorkflowRunStatus;
  created_ns: Nanos;
  updated_ns: Nanos;
  /** Set when the run succeeded: the workflow's `outputs`, rendered. */
  outputs: unknown | null;
  error: WorkflowRunError | null;
}

/** The fields `updateWorkflowRun` may change. `updated_ns` is required. */
export type WorkflowRunPatch = Partial<Pick<WorkflowRunRecord, 'status' | 'outputs' | 'error'>> & { updated_ns: Nanos };

export type WorkflowEventKind =
  /** The step's tool is about to run (attempt n). */
  | 'step_started'
  /** The step ended with an output; it never runs again. */
  | 'step_succeeded'
  /** The attempt failed; `error` says how. Another event follows unless the run failed. */
  | 'step_failed'
  /** The condition was false, a dependency was skipped/failed, or on_error said skip. */
  | 'step_skipped'
  /** An approval or human_review step now waits on `approval_id`. */
  | 'step_waiting'
  | 'step_approved'
  | 'step_rejected'
  /** A process took the run up again after a stop or a crash. */
  | 'run_resumed';

export interface WorkflowEvent {
  run_id: string;
  /** 1, 2, 3 … within the run; appending a seq that exists is refused. */
  seq: number;
  at_ns: Nanos;
  /** Null for run-level events. */
  step: string | null;
  kind: WorkflowEventKind;
  /** 1-based; retries count up. 0 for run-level events. */
  attempt: number;
  /** The tool that ran (after routing and fallbacks), and its version. */
  tool: string | null;
  tool_version: string | null;
  /** The execution snapshot of the tool call. */
  execution_id: string | null;
  approval_id: string | null;
  /** A step's output (step_succeeded). At most MAX_WORKFLOW_EVENT_BYTES as JSON. */
  output: unknown | null;
  error: { code: string; message: string } | null;
  /** Free text for people: why skipped, which on_error action was taken, who approved. */
  note: string | null;
}

export interface WorkflowRunFilter {
  status?: WorkflowRunStatus[];
  workflow?: string;
  /** At most this many, newest first (by created_ns, then id). */
  limit?: number;
}

export const WORKFLOW_RUN_STATUSES: readonly WorkflowRunStatus[] = ['running', 'waiting', 'succeeded', 'failed', 'cancelled'];
export const WORKFLOW_EVENT_KINDS: readonly WorkflowEventKind[] = [
  'step_started',
  'step_succeeded',
  'step_failed',
  'step_skipped',
  'step_waiting',
  'step_approved',
  'step_rejected',
  'run_resumed',
];
/** Largest definition, inputs or outputs kept in a run record, as JSON text. */
export const MAX_WORKFLOW_RECORD_BYTES = 4 * 1024 * 1024;
/** Largest event (its output included), as JSON text. */
export const MAX_WORKFLOW_EVENT_BYTES = 16 * 1024 * 1024;

/** The part of a Store a workflow engine needs. Every Store implements it. */
export interface WorkflowJournal {
  /** Refuses an id that exists (E_STORE). */
  createWorkflowRun(run: WorkflowRunRecord): Promise<void>;
  getWorkflowRun(id: string): Promise<WorkflowRunRecord | null>;
  listWorkflowRuns(filter?: WorkflowRunFilter): Promise<WorkflowRunRecord[]>;
  /**
   * Change a run only if its status is one of `from`, atomically (also
   * between processes sharing the store): the changed record, or null when
   * its status was another. Refuses an unknown id.
   */
  updateWorkflowRun(id: string, from: readonly WorkflowRunStatus[], patch: WorkflowRunPatch): Promise<WorkflowRunRecord | null>;
  /** Refuses an unknown run and a (run_id, seq) that exists (E_STORE, details.reason 'conflict' for the latter). */
  appendWorkflowEvent(event: WorkflowEvent): Promise<void>;
  /** The run's events in seq order, those after `afterSeq` when given. */
  listWorkflowEvents(runId: string, afterSeq?: number): Promise<WorkflowEvent[]>;
}
