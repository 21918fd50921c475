/**
 * Running a workflow durably. Every step's start and end is appended to the
 * run's journal before the engine acts on it, and the engine's state is
 * nothing but a fold over that journal (`#apply`), live and on resume alike:
 * a step whose end is recorded never runs again; a step that was started
 * and has no end (the process died under it) runs again.
 *
 * Scheduling: a step is ready when every step it depends on succeeded or
 * was skipped. Ready steps run in parallel, at most `concurrency` at once.
 * A step that fails (after its on_error policy) fails the run: nothing new
 * starts, steps already running finish and are recorded.
 */
import {
  CorralError,
  ErrorCodes,
  MAX_APPROVAL_INPUT_BYTES,
  MAX_APPROVAL_PROMPT,
  MAX_WORKFLOW_EVENT_BYTES,
  MAX_WORKFLOW_RECORD_BYTES,
  nowNs,
  parseToolRef,
  sha256Hex,
  type ErrorDetails,
  type InvokeResult,
  type MountBinding,
  type Nanos,
  type WorkflowEvent,
  type WorkflowEventKind,
  type WorkflowJournal,
  type WorkflowRunError,
  type WorkflowRunRecord,
  type WorkflowRunStatus,
} from '@corral/core';
import { evaluate, truthy } from './expression.js';
import { article, compileWorkflow, hasType, type CompiledAction, type CompiledStep, type CompiledWorkflow } from './load.js';
import { Reliability } from './reliability.js';
import { renderTemplate, renderValue, type CompiledValue } from './template.js';
import type { Workflow } from './types.js';

export interface StepInvokeOptions {
  signal: AbortSignal;
  timeoutMs?: number;
  mounts?: MountBinding[];
}

/** What a person is asked, for an approval step or a failed step's human_review. */
export interface ApprovalRequest {
  runId: string;
  workflow: string;
  step: string;
  kind: 'approval' | 'human_review';
  /** Rendered from the step's templates. */
  prompt: string;
  /** The approval step's input, or the input of the attempt that failed. */
  input: unknown;
  /** human_review: the tool that failed and how. */
  tool: string | null;
  error: { code: string; message: string } | null;
}

/** An approval's state as the host's approval records say it (ApprovalStatus of @corral/core). */
export interface ApprovalState {
  /** `pending` waits; `approved` (also `claimed`, `done`) continues; `rejected`, `expired`, `revoked` reject. */
  status: string;
  decided_by?: string | null;
  comment?: string | null;
}

/** What the engine needs from the host it runs in. */
export interface WorkflowHost {
  journal: WorkflowJournal;
  /** Run one tool: a Runtime's invoke (behind the policy gate, where there is one). */
  invoke(tool: string, input: unknown, options: StepInvokeOptions): Promise<InvokeResult>;
  /** Create a durable approval record; returns its id. Without it, approval steps are rejected. */
  requestApproval?(request: ApprovalRequest): Promise<string>;
  getApprovalStatus?(id: string): Promise<ApprovalState>;
  /** Steps running at once. Default 4. */
  concurrency?: number;
  /** UTC nanoseconds, as text. Default nowNs() of @corral/core. */
  now?(): Nanos;
  /** A new run id. Default crypto.randomUUID(). */
  newId?(): string;
  /** Every event, once it is in the journal: progress displays. */
  onEvent?(event: WorkflowEvent): void;
  /** Stops the run as a crash would: nothing more is recorded; resume continues it. */
  signal?: AbortSignal;
  /** Beliefs that route `tool: [a, b]` steps and learn from every outcome. Default: a fresh one per run. */
  reliability?: Reliability;
}

export interface ResumeOptions {
  /**
   * Take the run up only if it waits for approvals (and one was decided);
   * a run that is `running` is only reported. For a host that continues runs
   * after a decision: a running run may be driven by another process, and
   * driving it too would run its step in flight again.
   */
  onlyIfWaiting?: boolean;
}

/** Errors that say nothing about a tool's reliability: the caller's input, a policy, a stop, a missing tool, the store. */
export const NOT_THE_TOOLS_FAULT: ReadonlySet<string> = new Set([
  ErrorCodes.INPUT_VALIDATION,
  ErrorCodes.POLICY_DENIED,
  ErrorCodes.CANCELLED,
  ErrorCodes.CLOSED,
  ErrorCodes.TOOL_NOT_FOUND,
  ErrorCodes.STORE,
]);

export interface RunOptions {
  /** The run's id (default host.newId()). */
  runId?: string;
}

export type StepStatus = 'pending' | 'running' | 'waiting' | 'succeeded' | 'failed' | 'skipped';

export interface StepResult {
  id: string;
  status: StepStatus;
  attempts: number;
  /** The tool of the last attempt (after routing and fallbacks). */
  tool: string | null;
  version?: string | null;
  output?: unknown;
  error?: { code: string; message: string };
  /** From the step's first event to its last (to now while it runs or waits). */
  durationMs: number;
  /** Why it was skipped, what on_error did, who approved. */
  note?: string;
}

export interface PendingApproval {
  step: string;
  approvalId: string;
  kind: 'approval' | 'human_review';
  prompt: string;
}

export interface WorkflowResult {
  runId: string;
  workflow: string;
  status: WorkflowRunStatus;
  steps: StepResult[];
  /** The rendered `outputs`, when the run succeeded. */
  outputs?: unknown;
  /** Approvals the run waits for, when it is waiting. */
  pending?: PendingApproval[];
  error?: WorkflowRunError;
}

/** Start a run: validate the inputs, create the run record, run until it ends or waits. */
export async function runWorkflow(
  workflow: Workflow,
  inputs: Record<string, unknown> | undefined,
  host: WorkflowHost,
  options: RunOptions = {},
): Promise<WorkflowResult> {
  const compiled = compileWorkflow(workflow);
  const resolved = resolveInputs(compiled.workflow, inputs ?? {});
  const definition = JSON.parse(JSON.stringify(workflow)) as unknown;
  const now = (host.now ?? nowNs)();
  const run: WorkflowRunRecord = {
    id: options.runId ?? host.newId?.() ?? crypto.randomUUID(),
    workflow: workflow.name,
    definition,
    definition_sha256: await sha256Hex(canonicalJson(definition)),
    inputs: resolved,
    status: 'running',
    created_ns: now,
    updated_ns: now,
    outputs: null,
    error: null,
  };
  await host.journal.createWorkflowRun(run);
  return new Driver(compiled, run, host, []).drive();
}

/**
 * Take a run up again: after a crash, a stop, or approvals being decided.
 * A finished run is only reported; a waiting run whose approvals are all
 * still pending is reported without writing anything.
 */
export async function resumeWorkflow(runId: string, host: WorkflowHost, options: ResumeOptions = {}): Promise<WorkflowResult> {
  const run = await host.journal.getWorkflowRun(runId);
  if (!run) throw new CorralError(ErrorCodes.INPUT_VALIDATION, `There is no workflow run '${runId}'`, { id: runId });
  const compiled = compileWorkflow(run.definition);
  const events = await host.journal.listWorkflowEvents(runId);
  const driver = new Driver(compiled, run, host, events);
  if (run.status === 'succeeded' || run.status === 'failed' || run.status === 'cancelled') return driver.result(run.status, run);
  if (run.status === 'running' && options.onlyIfWaiting) return driver.result('running', run);
  if (run.status === 'waiting') {
    if (!(await driver.anyDecided())) return driver.result('waiting', run);
    const taken = await host.journal.updateWorkflowRun(runId, ['waiting'], { status: 'running', updated_ns: driver.now() });
    if (!taken) throw anotherDriver(runId, 'its status changed while this process resumed it');
  }
  return driver.drive(true);
}

/** Inputs after defaults, checked against the declarations: E_INPUT_VALIDATION naming each problem. */
export function resolveInputs(workflow: Workflow, given: Record<string, unknown>): Record<string, unknown> {
  const declared = workflow.inputs ?? {};
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `The inputs of workflow ${workflow.name} must be an object`, { option: 'inputs' });
  }
  const problems: Array<{ path: string; message: string }> = [];
  for (const name of Object.keys(given)) {
    if (!Object.hasOwn(declared, name)) {
      const names = Object.keys(declared);
      problems.push({
        path: `/${name}`,
        message: `is not an input of this workflow (${names.length ? `it takes ${names.join(', ')}` : 'it takes none'})`,
      });
    }
  }
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(declared)) {
    // Own properties only: an input named toString or constructor left out is missing, not Object.prototype's.
    const own = Object.hasOwn(given, name) ? given[name] : undefined;
    const value = own !== undefined ? own : spec.default;
    if (value === undefined) {
      if (spec.required ?? spec.default === undefined) problems.push({ path: `/${name}`, message: 'is required' });
      continue;
    }
    if (spec.type && !hasType(value, spec.type)) problems.push({ path: `/${name}`, message: `must be ${article(spec.type)}` });
    Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
  }
  if (problems.length > 0) {
    const text = problems.map((p) => `${p.path}: ${p.message}`).join('; ');
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Invalid inputs for workflow ${workflow.name}: ${text}`, { problems });
  }
  return out;
}

/** JSON with object keys sorted: the text whose hash identifies a definition. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

function anotherDriver(runId: string, why: string, details: Record<string, unknown> = {}): CorralError {
  return new CorralError(ErrorCodes.STORE, `Workflow run ${runId} is being driven by another process (${why}): this one stopped`, {
    store: 'workflow journal',
    ...details,
    reason: 'conflict',
  } as ErrorDetails<'E_STORE'>);
}

/** What a step does when it is started again, after a failure, an approval or a crash. */
type Next =
  | { kind: 'attempt'; tool: string; delayMs: number; note: string }
  | { kind: 'skip'; note: string }
  | { kind: 'review'; action: CompiledAction };

/** An on_error decision: what comes next, or null when the step fails. */
interface Decision {
  next: Next | null;
  note: string;
  /** The rule that was used (its key), counted so a rule's budget holds across a resume. */
  rule: string | null;
  /** A changed input: merged over the step's (retry), or replacing it (fallback, offline). */
  input?: { merge?: CompiledValue; replace?: CompiledValue };
}

interface StepState {
  step: CompiledStep;
  status: StepStatus;
  /** A task is working on the step (deciding, invoking, asking for approval). */
  busy: boolean;
  /** Some event of the step is in the journal. */
  begun: boolean;
  /** Dependencies not yet succeeded or skipped. */
  unmet: number;
  attempts: number;
  tool: string | null;
  version: string | null;
  output: unknown;
  error: { code: string; message: string } | null;
  note: string | null;
  approvalId: string | null;
  waitKind: 'approval' | 'human_review' | null;
  prompt: string | null;
  firstNs: Nanos | null;
  endNs: Nanos | null;
  next: Next | null;
  /** Rule key → times used. */
  uses: Map<string, number>;
  inputBase: CompiledValue | null;
  inputMerge: CompiledValue | null;
}

/** The longest wait between retries, however many doublings `max` allows. */
export const MAX_BACKOFF_MS = 3_600_000;

const APPROVED = new Set(['approved', 'claimed', 'done']);
const REJECTED = new Set(['rejected', 'expired', 'revoked']);

class Driver {
  readonly #wf: CompiledWorkflow;
  readonly #run: WorkflowRunRecord;
  readonly #host: WorkflowHost;
  readonly #states: StepState[];
  readonly #byId: Map<string, StepState>;
  readonly #dependents: StepState[][];
  /** What expressions read: `inputs`, and `steps.ID.{output,status,error}` of steps that ended. */
  readonly #scope: { inputs: unknown; steps: Record<string, unknown> };
  readonly #reliability: Reliability;
  readonly #controller = new AbortController();
  /**
   * One controller per attempt, all aborted by #stop: the host's invoke adds
   * a listener to the signal it is given, and one signal shared by many
   * attempts in flight trips Node's listener-leak warning.
   */
  readonly #attempts = new Set<AbortController>();
  readonly #ready: StepState[] = [];
  #readyHead = 0;
  #seq = 0;
  #chain: Promise<void> = Promise.resolve();
  #fatal: unknown = null;
  #failed: StepState | null = null;

  constructor(wf: CompiledWorkflow, run: WorkflowRunRecord, host: WorkflowHost, events: WorkflowEvent[]) {
    this.#wf = wf;
    this.#run = run;
    this.#host = host;
    this.#reliability = host.reliability ?? new Reliability();
    this.#scope = { inputs: run.inputs, steps: Object.create(null) as Record<string, unknown> };
    this.#states = wf.steps.map((step) => ({
      step,
      status: 'pending',
      busy: false,
      begun: false,
      unmet: step.deps.length,
      attempts: 0,
      tool: null,
      version: null,
      output: null,
      error: null,
      note: null,
      approvalId: null,
      waitKind: null,
      prompt: null,
      firstNs: null,
      endNs: null,
      next: null,
      uses: new Map(),
      inputBase: null,
      inputMerge: null,
    }));
    this.#byId = new Map(this.#states.map((s) => [s.step.id, s]));
    this.#dependents = this.#states.map(() => []);
    for (const s of this.#states) for (const dep of s.step.deps) this.#dependents[this.#byId.get(dep)!.step.index]!.push(s);
    // Rebuild from the journal with the same fold that runs live.
    for (const event of events) {
      this.#seq = Math.max(this.#seq, event.seq);
      const s = event.step === null ? undefined : this.#byId.get(event.step);
      if (s) this.#apply(s, event);
    }
    for (const s of this.#states) {
      if (s.status === 'running') {
        // Started, never ended: the process stopped under it. It runs again (at least once, not exactly once).
        s.status = 'pending';
        s.next = {
          kind: 'attempt',
          tool: s.tool!,
          delayMs: 0,
          note: `attempt ${s.attempts} was interrupted (the process stopped); running it again`,
        };
      }
    }
    for (const s of this.#states) this.#offer(s);
  }

  now(): Nanos {
    return (this.#host.now ?? nowNs)();
  }

  // ------------------------------------------------------------ the fold

  /** Apply one journal event to the state. Live runs call this after the append, resumes for every stored event. */
  #apply(s: StepState, e: WorkflowEvent): void {
    s.begun = true;
    s.firstNs ??= e.at_ns;
    if (e.note !== null) s.note = e.note;
    switch (e.kind as WorkflowEventKind) {
      case 'step_started':
        s.status = 'running';
        s.attempts = Math.max(s.attempts, e.attempt);
        s.tool = e.tool;
        s.next = null;
        s.error = null;
        break;
      case 'step_succeeded':
        s.tool = e.tool ?? s.tool;
        s.version = e.tool_version;
        this.#end(s, 'succeeded', e.at_ns, e.output ?? null, null);
        break;
      case 'step_skipped':
        // After on_error skip, the error stays readable (steps.ID.error).
        this.#end(s, 'skipped', e.at_ns, null, s.error);
        break;
      case 'step_failed': {
        s.tool = e.tool ?? s.tool;
        s.version = e.tool_version;
        this.#decided(s, e, this.#decide(s, e.error?.code ?? ErrorCodes.UNEXPECTED_EXIT));
        break;
      }
      case 'step_waiting':
        s.status = 'waiting';
        s.next = null;
        s.approvalId = e.approval_id;
        s.waitKind = s.step.approval ? 'approval' : 'human_review';
        s.prompt = e.note;
        s.attempts = Math.max(s.attempts, e.attempt);
        break;
      case 'step_approved':
        if (s.step.approval) {
          this.#end(s, 'succeeded', e.at_ns, e.output ?? null, null);
        } else {
          // human_review approved: the failed attempt runs once more, same tool, same input.
          s.status = 'pending';
          s.next = { kind: 'attempt', tool: s.tool!, delayMs: 0, note: `reviewed: ${e.note ?? 'approved'}; running it again` };
        }
        s.waitKind = null;
        break;
      case 'step_rejected': {
        s.waitKind = null;
        const error = e.error ?? { code: ErrorCodes.POLICY_DENIED, message: 'rejected' };
        if (s.step.approval) this.#decided(s, e, this.#decide(s, error.code));
        else this.#end(s, 'failed', e.at_ns, null, error);
        break;
      }
      case 'run_resumed':
        break;
    }
    this.#offer(s);
  }

  /** A step ended: record it where expressions see it, and release its dependents. */
  #end(s: StepState, status: 'succeeded' | 'skipped' | 'failed', at: Nanos, output: unknown, error: StepState['error']): void {
    s.status = status;
    s.endNs = at;
    s.output = output;
    s.error = error;
    s.next = null;
    this.#scope.steps[s.step.id] = { output, status, error };
    if (status === 'failed') {
      this.#failed ??= s;
      return;
    }
    for (const d of this.#dependents[s.step.index]!) {
      d.unmet--;
      this.#offer(d);
    }
  }

  /** The effect of an on_error decision on the state (shared by the fold of step_failed and step_rejected). */
  #decided(s: StepState, e: WorkflowEvent, d: Decision): void {
    s.error = e.error;
    if (d.rule) s.uses.set(d.rule, (s.uses.get(d.rule) ?? 0) + 1);
    if (d.input?.replace) {
      s.inputBase = d.input.replace;
      s.inputMerge = null;
    }
    if (d.input?.merge) s.inputMerge = d.input.merge;
    if (d.next) {
      s.status = 'pending';
      s.next = d.next;
    } else {
      this.#end(s, 'failed', e.at_ns, null, e.error);
    }
  }

  /**
   * What on_error says for an error code, given the rules used so far: the
   * code's rule, or `default`. A rule whose budget is spent (retries used up,
   * a fallback or a review already done) hands over to `default`; when that
   * is spent too, or there is none, the step fails. Pure: the fold replays it.
   */
  #decide(s: StepState, code: string): Decision {
    const rules = [s.step.onError.get(code), s.step.onError.get('default')].filter(
      (r, i, all): r is CompiledAction => !!r && all.indexOf(r) === i,
    );
    if (rules.length === 0) return { next: null, note: `${code}: no on_error rule; the step failed`, rule: null };
    const spent: string[] = [];
    for (const rule of rules) {
      const d = this.#rule(s, code, rule);
      if (typeof d === 'string') {
        spent.push(d);
        continue;
      }
      if (spent.length === 0) return d;
      // Say why the code's own rule was passed over, in the event and in what follows it.
      const why = `${spent.join('; ')}; `;
      const next = d.next && 'note' in d.next ? { ...d.next, note: why + d.next.note } : d.next;
      return { ...d, next, note: why + d.note };
    }
    return { next: null, note: `${spent.join('; ')}; the step failed`, rule: null };
  }

  /** One rule's decision, or why its budget is spent. */
  #rule(s: StepState, code: string, rule: CompiledAction): Decision | string {
    const used = s.uses.get(rule.key) ?? 0;
    const on = `${code}: on_error ${rule.key}`;
    switch (rule.action) {
      case 'retry': {
        if (used >= rule.max) return `${on}: ${rule.max} retries used`;
        const delayMs = Math.min((rule.backoff_ms ?? 0) * 2 ** used, MAX_BACKOFF_MS);
        const note = `${on}: retry ${used + 1} of ${rule.max}${delayMs ? ` after ${delayMs} ms` : ''}`;
        const input = rule.compiledInput ? { merge: rule.compiledInput } : undefined;
        return { next: { kind: 'attempt', tool: s.tool ?? s.step.tools[0]!, delayMs, note }, note, rule: rule.key, input };
      }
      case 'fallback':
      case 'offline': {
        if (used > 0) return `${on}: the ${rule.action} tool already ran`;
        const note = `${on}: ${rule.action} to ${rule.tool}`;
        const input = rule.compiledInput ? { replace: rule.compiledInput } : undefined;
        return { next: { kind: 'attempt', tool: rule.tool, delayMs: 0, note }, note, rule: rule.key, input };
      }
      case 'skip':
        return { next: { kind: 'skip', note: `${on}: skipped` }, note: `${on}: skip`, rule: rule.key };
      case 'human_review':
        if (used > 0) return `${on}: already reviewed once`;
        return { next: { kind: 'review', action: rule }, note: `${on}: human review`, rule: rule.key };
      case 'fail':
        return { next: null, note: `${on}: fail`, rule: rule.key };
    }
  }

  // ------------------------------------------------------------ the journal

  /** Append an event (serialized: seq numbers are consecutive), then fold it in. */
  #record(s: StepState | null, kind: WorkflowEventKind, fields: Partial<WorkflowEvent> = {}): Promise<void> {
    const step = this.#chain.then(async () => {
      if (this.#fatal) throw this.#fatal;
      const event: WorkflowEvent = {
        run_id: this.#run.id,
        seq: this.#seq + 1,
        at_ns: this.now(),
        step: s ? s.step.id : null,
        kind,
        attempt: 0,
        tool: null,
        tool_version: null,
        execution_id: null,
        approval_id: null,
        output: null,
        error: null,
        note: null,
        ...fields,
      };
      try {
        await this.#host.journal.appendWorkflowEvent(event);
      } catch (err) {
        this.#stop(
          CorralError.is(err, ErrorCodes.STORE) && (err.details as { reason?: string }).reason === 'conflict'
            ? anotherDriver(this.#run.id, `event ${event.seq} was already written`)
            : err,
        );
        throw this.#fatal;
      }
      this.#seq = event.seq;
      if (s) this.#apply(s, event);
      try {
        this.#host.onEvent?.(event);
      } catch {
        // A progress display that throws must not stop the run.
      }
    });
    this.#chain = step.catch(() => {});
    return step;
  }

  #stop(err: unknown): void {
    this.#fatal ??= err;
    this.#controller.abort(err);
    for (const c of this.#attempts) c.abort(err);
  }

  // ------------------------------------------------------------ scheduling

  /** Queue a step if it can start now. */
  #offer(s: StepState): void {
    if (this.#isReady(s)) this.#ready.push(s);
  }

  #isReady(s: StepState): boolean {
    return s.status === 'pending' && !s.busy && (s.next !== null || (!s.begun && s.unmet === 0));
  }

  async drive(resumed = false): Promise<WorkflowResult> {
    const onAbort = () =>
      this.#stop(
        new CorralError(ErrorCodes.CANCELLED, `Workflow run ${this.#run.id} was stopped; resume it to go on`, {
          cancelled: true,
          reason: String(this.#host.signal?.reason ?? ''),
        }),
      );
    if (this.#host.signal?.aborted) onAbort();
    this.#host.signal?.addEventListener('abort', onAbort, { once: true });
    const running = new Set<Promise<void>>();
    const concurrency = Math.max(1, this.#host.concurrency ?? 4);
    try {
      if (resumed && !this.#fatal) await this.#record(null, 'run_resumed', { note: 'resumed' }).catch(() => {});
      for (;;) {
        while (!this.#fatal && !this.#failed && running.size < concurrency && this.#readyHead < this.#ready.length) {
          const s = this.#ready[this.#readyHead++]!;
          if (!this.#isReady(s)) continue;
          s.busy = true;
          const task: Promise<void> = this.#task(s).finally(() => {
            s.busy = false;
            running.delete(task);
            this.#offer(s);
          });
          running.add(task);
        }
        if (this.#readyHead > 1024 && this.#readyHead * 2 > this.#ready.length) {
          this.#ready.splice(0, this.#readyHead);
          this.#readyHead = 0;
        }
        if (running.size > 0) {
          await Promise.race(running);
          continue;
        }
        if (this.#fatal || this.#failed) break;
        if (!this.#states.some((s) => s.status === 'waiting')) break;
        if (!(await this.#poll())) break;
      }
    } finally {
      this.#host.signal?.removeEventListener('abort', onAbort);
    }
    if (this.#fatal) throw this.#fatal;
    return this.#finish();
  }

  /** One step's turn: skip it, run an attempt, or ask for approval. Errors of the journal stop the run (#fatal). */
  async #task(s: StepState): Promise<void> {
    try {
      const next = s.next;
      if (next?.kind === 'attempt') return await this.#attempt(s, next.tool, next.delayMs, next.note);
      if (next?.kind === 'skip') return await this.#record(s, 'step_skipped', { attempt: s.attempts, note: next.note });
      if (next?.kind === 'review') return await this.#review(s, next.action);
      // First turn: dependencies and condition decide whether it runs.
      const cond = s.step.condition;
      const skippedDep = s.step.deps.find((d) => this.#byId.get(d)!.status === 'skipped');
      if (cond) {
        if (!truthy(evaluate(cond, this.#scope))) {
          return await this.#record(s, 'step_skipped', { note: `condition is false: ${s.step.def.condition}` });
        }
      } else if (skippedDep) {
        return await this.#record(s, 'step_skipped', { note: `depends on '${skippedDep}', which was skipped` });
      }
      if (s.step.approval) return await this.#askApproval(s);
      const tool = this.#reliability.choose(s.step.tools, {
        strategy: 'route' in s.step.def ? s.step.def.route?.strategy : undefined,
        costWeight: 'route' in s.step.def ? s.step.def.route?.cost_weight : undefined,
      });
      const note = s.step.tools.length > 1 ? `routed to ${tool} (of ${s.step.tools.join(', ')})` : '';
      await this.#attempt(s, tool, 0, note);
    } catch (err) {
      this.#stop(err);
    }
  }

  #input(s: StepState): unknown {
    const base = s.inputBase ?? s.step.input;
    const input = base ? renderValue(base, this.#scope) : {};
    if (!s.inputMerge) return input;
    const merge = renderValue(s.inputMerge, this.#scope);
    return typeof input === 'object' && input !== null && typeof merge === 'object' && merge !== null ? { ...input, ...merge } : merge;
  }

  async #attempt(s: StepState, tool: string, delayMs: number, note: string): Promise<void> {
    const signal = this.#controller.signal;
    if (delayMs > 0) await sleep(delayMs, signal);
    if (signal.aborted) return;
    const input = this.#input(s);
    // Sources go to the host as they render: its invoke checks them (a kind it cannot open is E_INPUT_VALIDATION).
    const mounts: MountBinding[] = s.step.mounts.map((m) => {
      const source = m.source
        ? renderValue(m.source, this.#scope)
        : m.host
          ? { kind: 'host', path: renderValue(m.host, this.#scope) }
          : null;
      return { guest: m.guest, access: m.access, ...(source !== null ? { source: source as MountBinding['source'] } : {}) };
    });
    const attempt = s.attempts + 1;
    await this.#record(s, 'step_started', { attempt, tool, note: note || null });
    const timeoutMs = 'timeout_ms' in s.step.def ? s.step.def.timeout_ms : undefined;
    const own = new AbortController();
    if (signal.aborted) own.abort(signal.reason);
    this.#attempts.add(own);
    let result: Awaited<ReturnType<typeof invokeSafely>>;
    try {
      result = await invokeSafely(this.#host, tool, input, {
        signal: own.signal,
        ...(timeoutMs ? { timeoutMs } : {}),
        ...(mounts.length ? { mounts } : {}),
      });
    } finally {
      this.#attempts.delete(own);
    }
    // Stopping: the attempt stays started without an end, and runs again on resume.
    if (signal.aborted) return;
    // A call refused before the tool ran (a policy, a bad input) teaches nothing about the tool: a caller
    // whose calls are refused must not make a tool look unreliable and steer routing away from it.
    if (result.ok || !NOT_THE_TOOLS_FAULT.has(result.error.code))
      this.#reliability.observe({ tool, version: result.version, ok: result.ok, durationMs: result.duration_ms });
    const common = { attempt, tool, tool_version: result.version, execution_id: result.snapshot?.id ?? null };
    if (result.ok) {
      const output = result.output === undefined ? null : result.output;
      const size = jsonSize(output);
      if (size <= MAX_WORKFLOW_EVENT_BYTES) return await this.#record(s, 'step_succeeded', { ...common, output });
      const error = {
        code: ErrorCodes.RESOURCE_EXHAUSTED,
        message: `The output of ${tool} (${size} bytes as JSON) is larger than a workflow journal keeps (${MAX_WORKFLOW_EVENT_BYTES})`,
      };
      return await this.#record(s, 'step_failed', { ...common, error, note: this.#decide(s, error.code).note });
    }
    const error = { code: result.error.code, message: result.error.message };
    await this.#record(s, 'step_failed', { ...common, error, note: this.#decide(s, error.code).note });
  }

  async #askApproval(s: StepState): Promise<void> {
    const prompt = s.step.prompt ? String(renderTemplate(s.step.prompt, this.#scope)) : s.step.id;
    const input = s.step.input ? renderValue(s.step.input, this.#scope) : null;
    await this.#wait(s, { kind: 'approval', prompt, input, tool: null, error: null });
  }

  async #review(s: StepState, action: CompiledAction): Promise<void> {
    const error = s.error ?? { code: ErrorCodes.UNEXPECTED_EXIT, message: 'failed' };
    const prompt = action.compiledPrompt
      ? String(renderTemplate(action.compiledPrompt, this.#scope))
      : `Step '${s.step.id}' failed (${s.tool}: ${error.code}: ${error.message}). Approve to run it once more; reject to fail the run.`;
    await this.#wait(s, { kind: 'human_review', prompt, input: this.#input(s), tool: s.tool, error });
  }

  async #wait(s: StepState, request: Omit<ApprovalRequest, 'runId' | 'workflow' | 'step'>): Promise<void> {
    if (!this.#host.requestApproval) {
      const error = { code: ErrorCodes.POLICY_DENIED, message: 'This host takes no approvals (it has no requestApproval)' };
      return await this.#record(s, 'step_rejected', { attempt: Math.max(1, s.attempts), error, note: error.message });
    }
    // The prompt renders from inputs (a remote caller's, over a server): make it one an approval record holds.
    request = { ...request, prompt: fitPrompt(request.prompt, s.step.id) };
    // So may what the approver is shown: too large for an approval record, the step is refused, not the run stuck.
    const shown = request.kind === 'human_review' ? { tool: request.tool, error: request.error, input: request.input } : request.input;
    const size = jsonSize(shown ?? {}, MAX_APPROVAL_INPUT_BYTES);
    if (size > MAX_APPROVAL_INPUT_BYTES) {
      const error = {
        code: ErrorCodes.RESOURCE_EXHAUSTED,
        message: `What step '${s.step.id}' asks a person to approve is ${size} bytes as JSON, more than an approval keeps (${MAX_APPROVAL_INPUT_BYTES})`,
      };
      return await this.#record(s, 'step_rejected', { attempt: Math.max(1, s.attempts), error, note: error.message });
    }
    const approvalId = await this.#host.requestApproval({ runId: this.#run.id, workflow: this.#run.workflow, step: s.step.id, ...request });
    await this.#record(s, 'step_waiting', {
      attempt: Math.max(1, s.attempts),
      tool: request.tool,
      approval_id: approvalId,
      note: request.prompt,
    });
  }

  /** Whether any approval the run waits for has been decided (reads only). */
  async anyDecided(): Promise<boolean> {
    if (!this.#host.getApprovalStatus) return false;
    for (const s of this.#states) {
      if (s.status !== 'waiting' || !s.approvalId) continue;
      const state = await this.#host.getApprovalStatus(s.approvalId);
      if (APPROVED.has(state.status) || REJECTED.has(state.status)) return true;
    }
    return false;
  }

  /** Record the decisions made on the approvals the run waits for; true when any was. */
  async #poll(): Promise<boolean> {
    if (!this.#host.getApprovalStatus) return false;
    let changed = false;
    for (const s of this.#states) {
      if (s.status !== 'waiting' || !s.approvalId) continue;
      let state: ApprovalState;
      try {
        state = await this.#host.getApprovalStatus(s.approvalId);
      } catch (err) {
        this.#stop(err);
        return false;
      }
      const who = state.decided_by ? ` by ${state.decided_by}` : '';
      const comment = state.comment ? `: ${state.comment}` : '';
      const common = { attempt: s.attempts || 1, approval_id: s.approvalId, tool: s.step.approval ? null : s.tool };
      try {
        if (APPROVED.has(state.status)) {
          const output = s.step.approval ? { approved: true, decided_by: state.decided_by ?? null, comment: state.comment ?? null } : null;
          await this.#record(s, 'step_approved', { ...common, output, note: `approved${who}${comment}` });
          changed = true;
        } else if (REJECTED.has(state.status)) {
          const message =
            state.status === 'rejected'
              ? `Step '${s.step.id}' was rejected${who}${comment}`
              : `The approval of step '${s.step.id}' is ${state.status}`;
          await this.#record(s, 'step_rejected', {
            ...common,
            error: { code: ErrorCodes.POLICY_DENIED, message },
            note: `${state.status}${who}${comment}`,
          });
          changed = true;
        }
      } catch {
        return false; // #record set #fatal
      }
    }
    return changed;
  }

  // ------------------------------------------------------------ results

  async #finish(): Promise<WorkflowResult> {
    const updated_ns = this.now();
    let status: WorkflowRunStatus;
    let patch: Partial<WorkflowRunRecord> = {};
    if (this.#failed) {
      const f = this.#failed;
      status = 'failed';
      const error = f.error ?? { code: ErrorCodes.UNEXPECTED_EXIT, message: 'failed' };
      patch = { error: { code: error.code, message: `Step '${f.step.id}' failed: ${error.message}`, step: f.step.id } };
    } else if (this.#states.some((s) => s.status === 'waiting')) {
      status = 'waiting';
    } else if (this.#states.every((s) => s.status === 'succeeded' || s.status === 'skipped')) {
      const outputs = this.#wf.outputs ? renderValue(this.#wf.outputs, this.#scope) : {};
      const size = jsonSize(outputs, MAX_WORKFLOW_RECORD_BYTES);
      if (size <= MAX_WORKFLOW_RECORD_BYTES) {
        status = 'succeeded';
        patch = { outputs };
      } else {
        // The store would refuse the record, and every resume would render the same outputs: fail, said as such.
        status = 'failed';
        patch = {
          error: {
            code: ErrorCodes.RESOURCE_EXHAUSTED,
            message: `The workflow's outputs are ${size} bytes as JSON, more than a run record keeps (${MAX_WORKFLOW_RECORD_BYTES})`,
          },
        };
      }
    } else {
      // Nothing ready, nothing running, nothing waiting, yet not done: a bug in the scheduler, said as such.
      status = 'failed';
      const stuck = this.#states.filter((s) => s.status === 'pending').map((s) => s.step.id);
      patch = { error: { code: ErrorCodes.UNEXPECTED_EXIT, message: `internal: steps ${stuck.join(', ')} can never start` } };
    }
    const record = await this.#host.journal.updateWorkflowRun(this.#run.id, ['running'], { status, updated_ns, ...patch });
    if (!record) {
      const current = await this.#host.journal.getWorkflowRun(this.#run.id);
      if (current?.status === 'cancelled') return this.result('cancelled', current);
      throw anotherDriver(this.#run.id, `its status became ${current?.status ?? 'unknown'} under this one`);
    }
    return this.result(status, record);
  }

  result(status: WorkflowRunStatus, record: WorkflowRunRecord): WorkflowResult {
    const now = BigInt(this.now());
    const steps = this.#states.map((s): StepResult => {
      const start = s.firstNs === null ? null : BigInt(s.firstNs);
      const end = s.endNs !== null ? BigInt(s.endNs) : s.status === 'running' || s.status === 'waiting' ? now : start;
      const r: StepResult = {
        id: s.step.id,
        status: s.status,
        attempts: s.attempts,
        tool: s.tool,
        durationMs: start !== null && end !== null ? Number(end - start) / 1e6 : 0,
      };
      if (s.version) r.version = s.version;
      if (s.status === 'succeeded') r.output = s.output;
      if (s.error && s.status !== 'succeeded') r.error = s.error;
      if (s.note) r.note = s.note;
      return r;
    });
    const out: WorkflowResult = { runId: this.#run.id, workflow: this.#run.workflow, status, steps };
    if (status === 'succeeded') out.outputs = record.outputs;
    if (record.error) out.error = record.error;
    if (status === 'waiting') {
      out.pending = this.#states
        .filter((s) => s.status === 'waiting' && s.approvalId)
        .map((s) => ({ step: s.step.id, approvalId: s.approvalId!, kind: s.waitKind ?? 'approval', prompt: s.prompt ?? '' }));
    }
    return out;
  }
}

/** The host's invoke as a result: a throw becomes a failure with its code, so on_error handles it like any other. */
async function invokeSafely(host: WorkflowHost, tool: string, input: unknown, options: StepInvokeOptions): Promise<InvokeResult> {
  try {
    return await host.invoke(tool, input, options);
  } catch (err) {
    const error = CorralError.is(err)
      ? err.toJSON()
      : new CorralError(ErrorCodes.UNEXPECTED_EXIT, `invoke of ${tool} threw: ${err instanceof Error ? err.message : String(err)}`, {
          reason: 'internal',
          cause: String(err),
        }).toJSON();
    return {
      ok: false,
      tool: parseToolRef(tool).name,
      version: null,
      output: null,
      error,
      exit_code: null,
      duration_ms: 0,
      stdout_head: '',
      stderr_tail: '',
      stdout_truncated: false,
      stderr_truncated: false,
    };
  }
}

/**
 * A prompt as an approval record holds it: 1 to MAX_APPROVAL_PROMPT characters without NUL. An empty
 * one names the step; a longer one is cut (never in the middle of a surrogate pair) and says so.
 */
function fitPrompt(text: string, fallback: string): string {
  const clean = text.replaceAll('\0', '\uFFFD');
  if (clean.trim() === '') return fallback;
  if (clean.length <= MAX_APPROVAL_PROMPT) return clean;
  let end = MAX_APPROVAL_PROMPT - 1;
  if (/[\uD800-\uDBFF]/.test(clean[end - 1]!)) end--;
  return `${clean.slice(0, end)}…`;
}

function jsonSize(value: unknown, max = MAX_WORKFLOW_EVENT_BYTES): number {
  const text = JSON.stringify(value) ?? 'null';
  // Characters are a lower bound of UTF-8 bytes, and 3× an upper one: encode only when it matters.
  return text.length * 3 <= max ? text.length : new TextEncoder().encode(text).length;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
