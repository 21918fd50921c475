/**
 * Workflows for remote callers: what a server (`corral serve`'s HTTP API, an
 * MCP server) offers of the workflow files it was given, run so that a
 * remote caller gets no more through a workflow than through a direct call.
 *
 * The security model, in one place:
 *
 * - A remote caller's inputs are untrusted, and templates can put them into
 *   a step's mounts (`source: "{{ inputs.workspace }}"`). So every tool call
 *   of a step goes through the policy gate as a direct call from that caller
 *   would (`gatedRuntime`): host folders are what the call *asks* the gate
 *   for, and it grants them or not (folder grants, tool allow/deny, protected
 *   paths, the caller's MCP roots), sets env and limits. A refused call is an
 *   E_POLICY_DENIED step failure, audited like any refused call, and its
 *   step's `on_error` applies. A source that is not a host folder is refused
 *   too, except an in-memory tree (the caller's own data, no host access).
 * - A step whose tool the policy makes wait for a person's approval fails
 *   with E_POLICY_DENIED `approval_required` (a run for a remote caller does
 *   not wait on a tool call; an approval step is how a workflow waits). A
 *   remembered approval (scope folder or tool) covers the call as usual.
 * - Runs started here get ids `KIND-UUID` (http, mcp); their approvals keep
 *   the caller (kind, id, MCP roots), and a run is continued — after its
 *   approvals are decided, or on request — as that caller, never with more
 *   rights. A local `Workflows` (the CLI) refuses to resume such a run.
 * - Continuing after a decision happens once, in the background, and only
 *   for a run that *waits* (`onlyIfWaiting`): a run another process drives
 *   is left alone, and if two processes race, the journal's compare-and-set
 *   stops the second before it acts.
 *
 * Host-agnostic: the host gives its tools (`GateHost`) and its PolicyGate.
 */
import {
  CorralError,
  ErrorCodes,
  nowNs,
  policyDenied,
  refusedEnvelope,
  type CallerInfo,
  type GateHost,
  type InvokeOptions,
  type InvokeResult,
  type JsonSchema,
  type MountBinding,
  type PolicyGate,
  type RequestedBinding,
  type Tool,
  type WorkflowRunRecord,
} from '@corral/core';
import type { WorkflowResult } from './engine.js';
import type { Workflow } from './types.js';
import { Workflows, remoteRunKind, type WorkflowRuntime, type WorkflowsOptions } from './workflows.js';

/** What the gated runtime needs of a policy gate (@corral/core's PolicyGate). */
export type WorkflowGate = Pick<PolicyGate, 'check' | 'recordDenial' | 'store' | 'policy'>;

/** Deepest nesting of a remote caller's workflow inputs (the same as a workflow file's). */
export const MAX_REMOTE_INPUT_DEPTH = 64;
/** Largest remote inputs, as JSON text: what a run record keeps at most. */
export const MAX_REMOTE_INPUT_BYTES = 4 * 1024 * 1024;

/**
 * The JSON Schema of a workflow's inputs, from its `inputs` declarations: an
 * object with one property per input (type, description, default), the
 * required ones required, nothing else allowed (unknown inputs are refused).
 */
export function workflowInputSchema(workflow: Workflow): Record<string, unknown> & { type: 'object' } {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [name, spec] of Object.entries(workflow.inputs ?? {})) {
    const p: Record<string, unknown> = {};
    if (spec.type) p.type = spec.type;
    if (spec.description !== undefined) p.description = spec.description;
    if (spec.default !== undefined) p.default = spec.default;
    Object.defineProperty(properties, name, { value: p, enumerable: true, writable: true, configurable: true });
    if (spec.required ?? spec.default === undefined) required.push(name);
  }
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
}

/** The JSON Schema of a WorkflowResult (what running a workflow answers). */
export const workflowResultSchema = {
  type: 'object',
  required: ['runId', 'workflow', 'status', 'steps'],
  properties: {
    runId: { type: 'string', description: 'The run: GET /workflows/runs/{id}, corral workflow status ID.' },
    workflow: { type: 'string' },
    status: { type: 'string', enum: ['running', 'waiting', 'succeeded', 'failed', 'cancelled'] },
    steps: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'status', 'attempts', 'tool', 'durationMs'],
        properties: {
          id: { type: 'string' },
          status: { type: 'string', enum: ['pending', 'running', 'waiting', 'succeeded', 'failed', 'skipped'] },
          attempts: { type: 'integer' },
          tool: { type: ['string', 'null'] },
          version: { type: ['string', 'null'] },
          output: {},
          error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
          durationMs: { type: 'number' },
          note: { type: 'string' },
        },
      },
    },
    outputs: { description: "The workflow's rendered outputs, when it succeeded." },
    pending: {
      type: 'array',
      description: 'The approvals the run waits for, when it waits.',
      items: {
        type: 'object',
        required: ['step', 'approvalId', 'kind', 'prompt'],
        properties: {
          step: { type: 'string' },
          approvalId: { type: 'string' },
          kind: { type: 'string', enum: ['approval', 'human_review'] },
          prompt: { type: 'string' },
        },
      },
    },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, step: { type: 'string' } },
    },
  },
} as const;

/**
 * A WorkflowRuntime whose every tool call goes through `gate` as a direct call
 * from `caller` would: the tools of `host`, the gate's store as the journal.
 * Mounts a step binds become what the call asks the gate for (see the file's
 * comment); the gate's decision sets mounts, env and limits.
 */
export function gatedRuntime(host: GateHost, gate: WorkflowGate, caller: CallerInfo): WorkflowRuntime {
  return {
    registry: host.registry,
    store: gate.store,
    invoke: (ref, input, options) => gatedInvoke(host, gate, caller, ref, input, options),
  };
}

async function gatedInvoke(
  host: GateHost,
  gate: WorkflowGate,
  caller: CallerInfo,
  ref: string,
  input: unknown,
  options: InvokeOptions = {},
): Promise<InvokeResult> {
  const started = performance.now();
  let tool: Tool;
  try {
    tool = host.registry.resolve(ref);
  } catch (err) {
    const error = CorralError.is(err) ? err : new CorralError(ErrorCodes.TOOL_NOT_FOUND, String(err));
    return refusedEnvelope(String(ref).split('@')[0]!.slice(0, 256), null, error, started);
  }
  const { spec } = tool;
  const refuse = async (message: string, bindings: Record<string, RequestedBinding>) => {
    const error = policyDenied(message, { reason: 'bad_request', tool: spec.name, version: spec.version, policy: gate.policy.location });
    await gate.recordDenial({ tool, bindings, caller }, error);
    return refusedEnvelope(spec.name, spec.version, error, started);
  };
  // Host folders become requests to the gate; an in-memory tree (or none: an empty folder) is the caller's own data.
  const bindings: Record<string, RequestedBinding> = {};
  const ownData: MountBinding[] = [];
  for (const m of options.mounts ?? []) {
    const source = m.source as { kind?: unknown; path?: unknown } | undefined;
    if (source === undefined || (typeof source === 'object' && source !== null && source.kind === 'memory')) {
      ownData.push(m);
      continue;
    }
    const guest = String(m.guest);
    if (typeof source === 'object' && source !== null && source.kind === 'host' && typeof source.path === 'string') {
      if (Object.hasOwn(bindings, guest)) return refuse(`Mount ${guest.slice(0, 256)} of ${spec.name} is bound more than once.`, bindings);
      const access = m.access === 'read-write' ? 'read-write' : 'read';
      Object.defineProperty(bindings, guest, {
        value: { folder: source.path, access },
        enumerable: true,
        writable: true,
        configurable: true,
      });
      continue;
    }
    const kind =
      typeof source === 'object' && source !== null && typeof source.kind === 'string' ? source.kind.slice(0, 64) : typeof source;
    return refuse(
      `Mount ${guest.slice(0, 256)} of ${spec.name}: a workflow run for a remote caller binds host folders (through the policy) ` +
        `and in-memory trees only, not a source of kind ${JSON.stringify(kind)}.`,
      bindings,
    );
  }
  const request = { tool, input, bindings, caller };
  const d = await gate.check(request);
  if (d.decision === 'deny') return refusedEnvelope(spec.name, spec.version, d.error, started);
  if (d.decision === 'approval_required') {
    const error = policyDenied(
      `${spec.name}@${spec.version} needs a person's approval for each call (the policy ${gate.policy.location} says approval: required), ` +
        'and a workflow run for a remote caller does not wait for a tool call: the step fails (its on_error applies). ' +
        'Put an approval step before it and let a remembered approval cover the tool (approve a direct call of it with scope folder or tool), ' +
        'or run the workflow locally with corral workflow run.',
      { reason: 'approval_required', tool: spec.name, version: spec.version, policy: gate.policy.location },
    );
    await gate.recordDenial(request, error);
    return refusedEnvelope(spec.name, spec.version, error, started);
  }
  const run: InvokeOptions = { ...d.options, mounts: [...(d.options.mounts ?? []), ...ownData] };
  // A step's timeout_ms can only shorten the call (as a caller's timeout_ms does).
  if (typeof options.timeoutMs === 'number' && Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)
    run.timeoutMs = Math.min(run.timeoutMs ?? options.timeoutMs, Math.ceil(options.timeoutMs));
  if (options.signal) run.signal = options.signal;
  return host.invokeTool(d.tool, input, run);
}

/** How deep a JSON value nests (`[]` is 1), without recursing; stops counting past `max`. */
function depthOver(value: unknown, max: number): boolean {
  const todo: Array<[unknown, number]> = [[value, 0]];
  while (todo.length > 0) {
    const [v, d] = todo.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) todo.push([child, d + 1]);
  }
  return false;
}

/** A remote caller's inputs, checked before anything is stored: an object, at most 64 deep and 4 MiB as JSON. */
export function checkRemoteInputs(workflow: string, inputs: unknown): Record<string, unknown> {
  if (inputs === undefined) return {};
  if (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs))
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `The inputs of workflow ${workflow} must be an object of input names to values`, {
      option: 'inputs',
    });
  if (depthOver(inputs, MAX_REMOTE_INPUT_DEPTH))
    throw new CorralError(
      ErrorCodes.INPUT_VALIDATION,
      `The inputs of workflow ${workflow} nest deeper than ${MAX_REMOTE_INPUT_DEPTH} levels, the most a remote caller may send`,
      { reason: 'input_too_deep', max_depth: MAX_REMOTE_INPUT_DEPTH },
    );
  const bytes = new TextEncoder().encode(JSON.stringify(inputs)).length;
  if (bytes > MAX_REMOTE_INPUT_BYTES)
    throw new CorralError(
      ErrorCodes.INPUT_VALIDATION,
      `The inputs of workflow ${workflow} are ${bytes} bytes as JSON, more than the ${MAX_REMOTE_INPUT_BYTES} a run keeps`,
      { reason: 'input_too_large', input_bytes: bytes, max_input_bytes: MAX_REMOTE_INPUT_BYTES },
    );
  return inputs as Record<string, unknown>;
}

export interface ServedWorkflowsOptions {
  /** The tools (a Corral host). */
  host: GateHost;
  /** Every step's tool call goes through it; its store is the runs' journal and keeps their approvals. */
  gate: WorkflowGate;
  /** The workflows offered, validated against `host`'s registry; names are unique. */
  workflows: readonly Workflow[];
  /** Steps at once, approvals' time to live, the routing prior. */
  settings?: Pick<WorkflowsOptions, 'concurrency' | 'approvalTtlMs' | 'reliability' | 'seedExecutions'>;
  /** What goes wrong in the background (a run that could not be continued). */
  log?: (message: string) => void;
  /**
   * Runs for remote callers that may wait for a person at once (each keeps its inputs and a pending
   * approval): past it, a new run is refused with E_RESOURCE_EXHAUSTED until some are decided. Default 1000.
   */
  maxWaiting?: number;
  /** How often the approvals of waiting runs are looked at. Default 1000 ms. */
  pollMs?: number;
  /** A run continued in the background ended or waits again (see also `subscribe`). */
  onContinued?: (result: WorkflowResult) => void;
  /** A drive (a run or a resume) ended: shutdown waits for none to be left (see also `subscribe`). */
  onSettled?: () => void;
}

/** What a server that shares a ServedWorkflows (HTTP and MCP in one process) wants to hear. */
export interface ServedWorkflowsListener {
  onContinued?: (result: WorkflowResult) => void;
  onSettled?: () => void;
}

/** Runs for remote callers waiting for a person at most, by default (`maxWaiting`). */
const DEFAULT_MAX_WAITING = 1000;

/** Runs watched at most (waiting ones this server continues once decided). */
const MAX_WATCHED = 10_000;

/** The workflows a server offers to remote callers (see the file's comment). */
export class ServedWorkflows {
  readonly #o: ServedWorkflowsOptions;
  readonly #defs = new Map<string, Workflow>();
  readonly #base: Workflows;
  /** Runs driven by this process now, by id: a second resume joins the first. */
  readonly #driving = new Map<string, Promise<WorkflowResult>>();
  /** Every drive in flight, to stop at shutdown. */
  readonly #controllers = new Set<AbortController>();
  /** Waiting runs this server continues once an approval they wait for is decided: run id → approval ids. */
  readonly #watched = new Map<string, string[]>();
  readonly #listeners = new Set<ServedWorkflowsListener>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(options: ServedWorkflowsOptions) {
    this.#o = options;
    this.#listeners.add({
      ...(options.onContinued ? { onContinued: options.onContinued } : {}),
      ...(options.onSettled ? { onSettled: options.onSettled } : {}),
    });
    for (const w of options.workflows) {
      if (this.#defs.has(w.name)) throw new RangeError(`two workflows are named ${w.name}`);
      this.#defs.set(w.name, w);
    }
    // Reads only (status, owners): its invoke refuses everything; runs go through `for(gatedRuntime(…))`.
    this.#base = new Workflows(
      {
        registry: options.host.registry,
        store: options.gate.store,
        invoke: async (ref) =>
          refusedEnvelope(ref, null, new CorralError(ErrorCodes.POLICY_DENIED, 'no caller', { reason: 'bad_request', tool: ref })),
      },
      { ...options.settings, by: 'corral serve' },
    );
  }

  /** Hear of runs continued in the background and of drives that ended; returns the way to stop hearing. */
  subscribe(listener: ServedWorkflowsListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The workflows offered, by name. */
  list(): Workflow[] {
    return [...this.#defs.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get(name: string): Workflow | undefined {
    return typeof name === 'string' ? this.#defs.get(name) : undefined;
  }

  /** Drives in flight (runs and resumes): shutdown waits for them. */
  get running(): number {
    return this.#controllers.size;
  }

  /**
   * Start a run of `name` for `caller` with untrusted `inputs`; it resolves when the run ends or waits
   * (then this server continues it once an approval it waits for is decided). E_TOOL_NOT_FOUND for an
   * unknown name, E_INPUT_VALIDATION for bad inputs (nothing is stored then).
   */
  async run(name: string, inputs: unknown, caller: CallerInfo, options: { signal?: AbortSignal } = {}): Promise<WorkflowResult> {
    const workflow = this.get(name);
    if (!workflow)
      throw new CorralError(ErrorCodes.TOOL_NOT_FOUND, `No workflow named ${JSON.stringify(String(name).slice(0, 100))}`, {
        name: String(name).slice(0, 100),
        available: [...this.#defs.keys()],
      });
    const checked = checkRemoteInputs(workflow.name, inputs);
    await this.#roomToWait(workflow.name);
    const workflows = this.#for(caller);
    return this.#drive(null, (signal) => workflows.run(workflow, checked, { signal }), options.signal);
  }

  /**
   * Refuse a new run while `maxWaiting` runs of remote callers wait already: without it, a caller
   * could leave runs waiting without end, each with its inputs stored and an approval pending (the
   * pending approvals then also fill the policy gate's, refusing every direct call's approval).
   */
  async #roomToWait(workflow: string): Promise<void> {
    const max = this.#o.maxWaiting ?? DEFAULT_MAX_WAITING;
    const waiting = await this.#o.gate.store.listWorkflowRuns({ status: ['waiting'], limit: max + 1000 });
    if (waiting.filter((r) => remoteRunKind(r.id) !== null).length < max) return;
    throw new CorralError(
      ErrorCodes.RESOURCE_EXHAUSTED,
      `${max} workflow runs for remote callers wait for a person already, the most this server keeps: ` +
        `decide some (corral approvals) before starting workflow ${workflow} again`,
      { resource: 'waiting_workflow_runs', max_waiting: max },
    );
  }

  /**
   * A run's record, its events and the approvals it waits for. Only runs a server started for a
   * remote caller (ids `http-…`, `mcp-…`): a run someone started locally is not a remote caller's to
   * read or drive. E_INPUT_VALIDATION for a bad, unknown or local id.
   */
  async status(runId: string): ReturnType<Workflows['status']> {
    this.#served(runId);
    return this.#base.status(runId);
  }

  #served(runId: string): void {
    if (typeof runId !== 'string' || remoteRunKind(runId) === null)
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        `There is no workflow run ${JSON.stringify(String(runId).slice(0, 200))} started through a server`,
        {
          option: 'run_id',
        },
      );
  }

  /**
   * Take a run a server started up again, as the caller that started it (its approvals keep who), or
   * as `requester` when it kept none (it never asked for an approval): never with more rights than the
   * one asking. Joins a drive of the same run in this process. A run that is `running` may be driven by
   * another process: taking it up here runs its step in flight again before the journal stops one of
   * the two (at least once, as for any resume), so a server only does that when asked.
   */
  resume(
    runId: string,
    requester: CallerInfo | null,
    options: { signal?: AbortSignal; onlyIfWaiting?: boolean } = {},
  ): Promise<WorkflowResult> {
    // Joined before anything is awaited: two resumes of one run in this process are one drive.
    try {
      this.#served(runId);
    } catch (err) {
      return Promise.reject(err);
    }
    const driving = this.#driving.get(runId);
    if (driving) return driving;
    const { onlyIfWaiting } = options;
    return this.#drive(
      runId,
      async (signal) => {
        const owner = (await this.#base.owner(runId)) ?? requester;
        if (!owner)
          throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Workflow run ${runId} keeps no caller to continue it as`, {
            option: 'run_id',
          });
        return this.#for(owner).resume(runId, { signal, ...(onlyIfWaiting ? { onlyIfWaiting } : {}) });
      },
      options.signal,
    );
  }

  /**
   * An approval of `runId` was decided (here, or noticed by the watch): continue the run in the
   * background, once, as its owner — only a run a server started, only if it waits.
   */
  continueRun(runId: string): void {
    if (this.#closed || this.#driving.has(runId)) return;
    if (remoteRunKind(runId) === null) {
      this.#o.log?.(`workflow run ${runId} was started locally: corral workflow resume ${runId} continues it`);
      return;
    }
    void this.resume(runId, null, { onlyIfWaiting: true }).then(
      (result) => {
        for (const l of this.#listeners) l.onContinued?.(result);
      },
      (err: unknown) => {
        const conflict = CorralError.is(err, ErrorCodes.STORE) && (err.details as { reason?: string }).reason === 'conflict';
        this.#o.log?.(
          conflict
            ? `workflow run ${runId} is driven by another process; left to it`
            : `workflow run ${runId} could not be continued: ${err instanceof Error ? err.message : String(err)}`,
        );
      },
    );
  }

  /** After a restart: continue or watch every waiting run a server started (their approvals may have been decided meanwhile). */
  async start(): Promise<void> {
    let waiting: WorkflowRunRecord[];
    try {
      waiting = await this.#o.gate.store.listWorkflowRuns({ status: ['waiting'], limit: MAX_WATCHED });
    } catch (err) {
      this.#o.log?.(`cannot list waiting workflow runs: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    // One at a time, in the background: each is read, and continued only if one of its approvals was decided.
    // A run keeps its definition: it is continued even when its file is no longer offered.
    const ids = waiting.map((r) => r.id).filter((id) => remoteRunKind(id) !== null);
    void (async () => {
      for (const id of ids) {
        if (this.#closed) return;
        if (this.#driving.has(id)) continue;
        await this.resume(id, null, { onlyIfWaiting: true }).then(
          (result) => {
            if (result.status !== 'waiting') for (const l of this.#listeners) l.onContinued?.(result);
          },
          (err: unknown) => this.#o.log?.(`workflow run ${id} could not be continued: ${err instanceof Error ? err.message : String(err)}`),
        );
      }
    })();
  }

  /** Stop watching and continuing runs; drives in flight go on until `abort`. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Stop the drives in flight, as a crash would: their runs stay `running` (POST …/resume continues them). */
  abort(reason = 'the server is shutting down'): void {
    for (const c of this.#controllers) c.abort(new Error(reason));
  }

  #for(caller: CallerInfo): Workflows {
    return this.#base.for(gatedRuntime(this.#o.host, this.#o.gate, caller), caller);
  }

  /** One drive (a run, or a resume of `runId`), tracked for shutdown and joins; a run that waits is watched. */
  #drive(runId: string | null, go: (signal: AbortSignal) => Promise<WorkflowResult>, outer?: AbortSignal): Promise<WorkflowResult> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(outer?.reason);
    if (outer?.aborted) controller.abort(outer.reason);
    outer?.addEventListener('abort', onAbort, { once: true });
    this.#controllers.add(controller);
    const drive = go(controller.signal)
      .then((result) => {
        if (result.status === 'waiting')
          this.#watch(
            result.runId,
            (result.pending ?? []).map((p) => p.approvalId),
          );
        else this.#watched.delete(result.runId);
        return result;
      })
      .finally(() => {
        outer?.removeEventListener('abort', onAbort);
        this.#controllers.delete(controller);
        if (runId !== null && this.#driving.get(runId) === drive) this.#driving.delete(runId);
        for (const l of this.#listeners) l.onSettled?.();
      });
    if (runId !== null) this.#driving.set(runId, drive);
    return drive;
  }

  #watch(runId: string, approvalIds: string[]): void {
    if (this.#closed || remoteRunKind(runId) === null) return;
    if (!this.#watched.has(runId) && this.#watched.size >= MAX_WATCHED) {
      this.#o.log?.(`${MAX_WATCHED} workflow runs wait already; run ${runId} continues only on POST /workflows/runs/ID/resume`);
      return;
    }
    this.#watched.set(runId, approvalIds);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#closed || this.#timer || this.#watched.size === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#look().finally(() => this.#schedule());
    }, this.#o.pollMs ?? 1000);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Decisions made anywhere (corral approve, another server) on what watched runs wait for: one query a look. */
  async #look(): Promise<void> {
    const now = BigInt(nowNs());
    let pending: Set<string>;
    try {
      const found = await this.#o.gate.store.listApprovals({ status: ['pending'], limit: 100_000 });
      pending = new Set(found.filter((a) => now < BigInt(a.expires_ns)).map((a) => a.id));
    } catch (err) {
      this.#o.log?.(`cannot look at the approvals of waiting workflow runs: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    for (const [runId, ids] of [...this.#watched]) {
      if (this.#closed) return;
      if (this.#driving.has(runId) || (ids.length > 0 && ids.every((id) => pending.has(id)))) continue;
      this.#watched.delete(runId);
      this.continueRun(runId);
    }
  }
}
