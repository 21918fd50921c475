/**
 * What the review panel shows of a workflow run, computed from the run's
 * journal alone: each step's state and duration (the same fold live, from
 * `onEvent`, and after a reload, from the events IndexedDB kept), and a
 * one-word outcome of a patch-review run for the list of runs. No DOM here:
 * test/web-units.test.ts runs it in Node.
 */
import type { WorkflowEvent, WorkflowRunRecord } from '@corral/core';

export type StepState = 'pending' | 'running' | 'waiting' | 'succeeded' | 'failed' | 'skipped';

export interface StepRow {
  id: string;
  state: StepState;
  /** From the step's first event to its end; null while it has not ended. */
  ms: number | null;
  /** The tool that ran (after routing or a fallback); null for approval steps. */
  tool: string | null;
  attempts: number;
  /** The engine's note: why skipped, the on_error decision, who approved. */
  note: string | null;
  /** The last error, for a failed or rejected step. */
  error: string | null;
  /** The output of a step that succeeded. */
  output: unknown;
}

const msBetween = (from: string, to: string): number => Number(BigInt(to) - BigInt(from)) / 1e6;

/** One row per step of the definition, in file order, folded from the run's events (in seq order). */
export function stepRows(stepIds: readonly string[], events: readonly WorkflowEvent[]): StepRow[] {
  const rows = new Map<string, StepRow & { firstNs: string | null }>(
    stepIds.map((id) => [
      id,
      { id, state: 'pending', ms: null, tool: null, attempts: 0, note: null, error: null, output: null, firstNs: null },
    ]),
  );
  for (const e of events) {
    const row = e.step === null ? undefined : rows.get(e.step);
    if (!row) continue;
    row.firstNs ??= e.at_ns;
    if (e.note !== null) row.note = e.note;
    if (e.tool !== null) row.tool = e.tool;
    row.attempts = Math.max(row.attempts, e.attempt);
    const end = (state: StepState) => {
      row.state = state;
      row.ms = msBetween(row.firstNs!, e.at_ns);
    };
    switch (e.kind) {
      case 'step_started':
        row.state = 'running';
        row.ms = null;
        row.error = null;
        break;
      case 'step_succeeded':
        row.output = e.output;
        end('succeeded');
        break;
      case 'step_skipped':
        end('skipped');
        break;
      case 'step_failed':
        // Final unless another event follows (a retry, a fallback, a review).
        row.error = e.error?.message ?? 'failed';
        end('failed');
        break;
      case 'step_waiting':
        row.state = 'waiting';
        row.ms = null;
        break;
      case 'step_approved':
        // An approval step is done; a reviewed tool step runs once more.
        if (e.tool === null) {
          row.output = e.output;
          end('succeeded');
        } else row.state = 'pending';
        break;
      case 'step_rejected':
        row.error = e.error?.message ?? 'rejected';
        end('failed');
        break;
      default:
        break;
    }
  }
  return [...rows.values()].map(({ firstNs: _, ...row }) => row);
}

/** The step ids of a run's stored definition (the validated workflow), in file order. */
export function stepIdsOf(definition: unknown): string[] {
  const steps = (definition as { steps?: unknown } | null)?.steps;
  return Array.isArray(steps) ? steps.map((s) => String((s as { id?: unknown }).id)) : [];
}

export type ReviewOutcome = 'running' | 'waiting' | 'applied' | 'not-applied' | 'does-not-apply' | 'rejected' | 'failed' | 'cancelled';

/** A patch-review run in one word, from its record. */
export function reviewOutcome(run: Pick<WorkflowRunRecord, 'status' | 'outputs' | 'error'>): ReviewOutcome {
  switch (run.status) {
    case 'running':
    case 'waiting':
    case 'cancelled':
      return run.status;
    case 'succeeded': {
      const out = (run.outputs ?? {}) as { applied?: unknown; applies?: unknown };
      return out.applied === true ? 'applied' : out.applies === false ? 'does-not-apply' : 'not-applied';
    }
    default:
      return run.error?.code === 'E_POLICY_DENIED' && run.error.step === 'sign-off' ? 'rejected' : 'failed';
  }
}

/** The first file a diff changes (its new path, else its old one), for naming a run; null when none is found. */
export function firstPathOf(diff: unknown): string | null {
  if (typeof diff !== 'string') return null;
  const m = /^\+\+\+ (?:b\/)?(.+?)\t?$/m.exec(diff.slice(0, 64 * 1024));
  if (m && m[1] !== '/dev/null') return m[1]!;
  const old = /^--- (?:a\/)?(.+?)\t?$/m.exec(diff.slice(0, 64 * 1024));
  return old && old[1] !== '/dev/null' ? old[1]! : null;
}
