/**
 * A workflow as users write it (YAML or JSON, snake_case), after
 * validation. Plain data: a run keeps it whole in its run record, and a
 * resume validates that copy again rather than trusting the file.
 */
import type { MountAccess } from '@corral/core';

export type WorkflowInputType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array';

export interface WorkflowInput {
  type?: WorkflowInputType;
  description?: string;
  default?: unknown;
  /** Defaults to true when there is no `default`, false when there is one. */
  required?: boolean;
}

/** What to do when a step's attempt fails, chosen by the error's code (then `default`). */
export type OnErrorAction =
  /** Run the same tool again, up to `max` more times, waiting backoff_ms, 2×backoff_ms, …; `input` is merged over the step's input. */
  | { action: 'retry'; max: number; backoff_ms?: number; input?: Record<string, unknown> }
  /** Run another tool once, with the step's input or `input`. */
  | { action: 'fallback'; tool: string; input?: Record<string, unknown> }
  /** A fallback meant for E_NETWORK_BLOCKED: a tool that works without the network. */
  | { action: 'offline'; tool: string; input?: Record<string, unknown> }
  /** The step counts as skipped; the run goes on. */
  | { action: 'skip' }
  /** Pause for a person: approve runs the step once more, reject fails it. */
  | { action: 'human_review'; prompt?: string }
  /** The step fails, and the run with it (what every error does when nothing is configured). */
  | { action: 'fail' };

export type OnErrorActionName = OnErrorAction['action'];

/** A folder bound to a mount the tool declares: passed to the host's invoke as a MountBinding. */
export interface WorkflowMount {
  /** The guest path the tool declares, e.g. /workspace. */
  guest: string;
  /** A host folder (a template), bound as `{ kind: 'host', path }` (hosts that open folders: @corral/node). */
  host?: string;
  /**
   * A mount source as the host's invoke takes it (templated): `{ kind: 'memory', tree }`,
   * `{ kind: 'opfs', path }` …, or a string `{{ expr }}` that gives one. Neither this nor
   * `host`: an empty in-memory folder.
   */
  source?: Record<string, unknown> | string;
  /** Defaults to `read`. */
  access?: MountAccess;
}

export interface RouteOptions {
  /** `utility` (default): the best expected utility; `thompson`: Thompson sampling. */
  strategy?: 'utility' | 'thompson';
  /** How much a tool's (normalized) mean duration costs against its success probability. Default 0. */
  cost_weight?: number;
}

interface StepBase {
  /** ^[a-z][a-z0-9_-]*$, unique in the workflow. */
  id: string;
  description?: string;
  depends_on?: string[];
  /** An expression: the step runs only when it is truthy. */
  condition?: string;
  /** Keys: an error code (E_NETWORK_BLOCKED …) or `default`. */
  on_error?: Record<string, OnErrorAction>;
}

export interface ToolStep extends StepBase {
  /** A tool (`name` or `name@range`), or alternatives the router picks from. */
  tool: string | string[];
  /** The tool's input; every string in it may hold `{{ expr }}` templates. */
  input?: Record<string, unknown>;
  timeout_ms?: number;
  mounts?: WorkflowMount[];
  route?: RouteOptions;
}

export interface ApprovalStep extends StepBase {
  /** `prompt` may hold templates. */
  approval: { prompt: string };
  /** Shown to the approver with the prompt (templated). */
  input?: Record<string, unknown>;
}

export type WorkflowStep = ToolStep | ApprovalStep;

export interface Workflow {
  /** ^[a-z0-9][a-z0-9._-]*$ like a tool's name: it names runs and URLs. */
  name: string;
  description?: string;
  inputs?: Record<string, WorkflowInput>;
  /** Rendered from templates when the run succeeds. */
  outputs?: Record<string, unknown>;
  steps: WorkflowStep[];
}

export function isApprovalStep(step: WorkflowStep): step is ApprovalStep {
  return 'approval' in step;
}
