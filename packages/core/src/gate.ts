/**
 * The policy gate: what a server (MCP, HTTP) puts between a remote caller
 * and `invoke`. It reads the policy as it is now, decides each call, keeps
 * approvals durably in the snapshot store (so they survive a restart and can
 * be decided from another process: `corral approve`), and records every
 * denial and approval decision in the audit trail.
 *
 * Host-agnostic: the policy source, `realpath` and the environment come from
 * the host (`openPolicyGate` from @corral/node/policy reads corral.policy.yaml).
 *
 * The one entry point a server needs is `gate.invoke(corral, ref, input, { bindings, caller, signal })`:
 * it returns the result envelope, with E_POLICY_DENIED as its error when
 * the policy refuses. After a restart, `gate.resume()` lists approved calls
 * that have not run and `gate.invokeApproved(corral, id)` runs one.
 */
import { CorralError, ErrorCodes } from './errors.js';
import type { InvokeOptions } from './invoke.js';
import { APPROVAL_SCOPES, MAX_APPROVAL_INPUT_BYTES, isWorkflowApproval } from './policy-records.js';
import {
  approvalCovers,
  evaluatePolicy,
  policyDenied,
  type CallerInfo,
  type Policy,
  type PolicyDecision,
  type PolicyDenialReason,
  type PolicyEffect,
  type PolicyHost,
  type RequestedBinding,
} from './policy.js';
import type { Registry } from './registry.js';
import { nowNs, type ApprovalRecord, type ApprovalScope, type AuditAction, type Nanos, type Store } from './snapshot.js';
import type { InvokeResult, Tool } from './types.js';
import { sha256Hex } from './wasm.js';

/** Where the gate reads the policy. `load` runs before every decision, so it must be cheap when nothing changed. */
export interface PolicySource {
  /** For messages: a file path. */
  readonly location: string;
  /** The policy as it is now. Throws (a CorralError, best) when it cannot be read or is invalid: the gate then denies every call. */
  load(): Promise<Policy>;
}

/** A policy that never changes (tests, hosts without files). */
export function fixedPolicy(policy: Policy, location = 'inline policy'): PolicySource {
  return { location, load: async () => policy };
}

export interface PolicyGateOptions {
  store: Store;
  policy: PolicySource;
  host: PolicyHost;
  /** How long an approval may stay pending. Default 24 h, at most 30 days. */
  approvalTtlMs?: number;
  /** Most approvals pending at once; a call past that is refused (approval_unavailable). Default 1000. */
  maxPending?: number;
}

/** One call as a server hands it to the gate. */
export interface GateRequest {
  /** The tool the call resolved to. */
  tool: Tool;
  input: unknown;
  /** Declared guest mount → host folder (or { folder, access }). */
  bindings?: Record<string, RequestedBinding>;
  caller?: CallerInfo;
}

export type GateDecision =
  | {
      decision: 'allow';
      tool: Tool;
      /** Pass these to `invokeTool` (add `signal` and the like): mounts, env, timeoutMs, memoryMb, diskMb. */
      options: InvokeOptions;
      effect: PolicyEffect;
      /** The approval this call runs under, when the policy required one. */
      approval: ApprovalRecord | null;
    }
  | { decision: 'approval_required'; tool: Tool; effect: PolicyEffect; max_scope: ApprovalScope }
  | { decision: 'deny'; error: CorralError };

/** How a wait for a decision ended. `timeout`: nobody decided in time; the approval stays pending. */
export type ApprovalOutcome = 'approved' | 'rejected' | 'expired' | 'revoked' | 'timeout';

export interface WaitOptions {
  /** Stops waiting with E_CANCELLED; the approval stays pending. */
  signal?: AbortSignal;
  /** Default 10 minutes, at most 24 h. */
  timeoutMs?: number;
}

export interface ApprovalHandle {
  id: string;
  approval: ApprovalRecord;
  /** Until someone decides (here or in another process sharing the store), the approval expires, or the wait times out. */
  wait(options?: WaitOptions): Promise<ApprovalOutcome>;
}

export interface DecideOptions {
  /** Who decided (a person). */
  by: string;
  comment?: string;
  /** How far an approval reaches. Default `once`; at most the policy's `approval_scope`. */
  scope?: ApprovalScope;
}

export interface AuthorizeOptions {
  /** Stops the call, and a wait for approval with E_CANCELLED (the approval stays pending). */
  signal?: AbortSignal;
  /** How long to wait for a person's decision. Default 10 minutes, at most 24 h; then E_POLICY_DENIED (approval_timeout), the approval still pending. */
  approvalTimeoutMs?: number;
  /** Called once a call waits for approval (show the id to a person, send an MCP elicitation, …). Errors are ignored. */
  onApprovalRequired?: (approval: ApprovalRecord) => void | Promise<void>;
}

export interface GateInvokeOptions extends AuthorizeOptions {
  bindings?: Record<string, RequestedBinding>;
  caller?: CallerInfo;
  /** The caller's own time limit for the tool: it may lower the policy's (and the spec's) timeout_ms, never raise it. */
  timeoutMs?: number;
  /** As in InvokeOptions: link the call to a recorded decision, keep or drop its input. */
  decisionId?: string;
  recordInput?: boolean;
}

/** What the gate needs of a Corral host (Corral, BrowserCorral). */
export interface GateHost {
  readonly registry: Registry;
  invokeTool(tool: Tool, input: unknown, options?: InvokeOptions): Promise<InvokeResult>;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const MAX_LISTED = 1000;
const POLL_FIRST_MS = 25;
const POLL_MAX_MS = 1000;
const encoder = new TextEncoder();

const scopeRank = (s: ApprovalScope) => APPROVAL_SCOPES.indexOf(s);
const plusMs = (ns: Nanos, ms: number): Nanos => (BigInt(ns) + BigInt(Math.round(ms)) * 1_000_000n).toString();

/** How the audit trail names a caller: kind:id, bounded. */
export function callerLabel(caller: CallerInfo | undefined): string {
  const kind = typeof caller?.kind === 'string' && caller.kind !== '' ? caller.kind : 'caller';
  const id = typeof caller?.id === 'string' && caller.id !== '' ? `:${caller.id}` : '';
  return `${kind}${id}`.slice(0, 256);
}

/** The caller as kept in records: known fields only, each bounded. */
function callerRecord(caller: CallerInfo | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (typeof caller?.kind === 'string') out.kind = caller.kind.slice(0, 256);
  if (typeof caller?.id === 'string') out.id = caller.id.slice(0, 256);
  if (Array.isArray(caller?.roots))
    out.roots = caller.roots
      .filter((r) => typeof r === 'string')
      .slice(0, 256)
      .map((r) => r.slice(0, 4096));
  return out;
}

function bindingsRecord(bindings: Record<string, RequestedBinding> | undefined): ApprovalRecord['bindings'] {
  const out: ApprovalRecord['bindings'] = {};
  for (const [guest, b] of Object.entries(bindings ?? {})) {
    const value =
      typeof b === 'string' ? { folder: b } : b.access === undefined ? { folder: b.folder } : { folder: b.folder, access: b.access };
    Object.defineProperty(out, guest, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * What a refused call asked for, as the audit trail keeps it: the caller's
 * value may be anything (that may be why it was refused), so only strings are
 * kept, cut short, and at most 64 mounts. Never throws.
 */
function bindingsForAudit(bindings: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (typeof bindings !== 'object' || bindings === null || Array.isArray(bindings)) return out;
  for (const [guest, b] of Object.entries(bindings).slice(0, 64)) {
    const folder = typeof b === 'object' && b !== null ? (b as { folder?: unknown }).folder : b;
    const access = typeof b === 'object' && b !== null ? (b as { access?: unknown }).access : undefined;
    const value = {
      folder: typeof folder === 'string' ? folder.slice(0, 512) : `(${folder === null ? 'null' : typeof folder})`,
      ...(typeof access === 'string' ? { access: access.slice(0, 32) } : {}),
    };
    Object.defineProperty(out, guest.slice(0, 256), { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function effectOf(d: PolicyEffect): PolicyEffect {
  return { mounts: d.mounts, folders: d.folders, env: d.env, limits: d.limits, warnings: d.warnings };
}

function invokeOptionsOf(effect: PolicyEffect): InvokeOptions {
  return {
    mounts: effect.mounts.map((m) => ({ ...m })),
    env: { ...effect.env },
    timeoutMs: effect.limits.timeout_ms,
    memoryMb: effect.limits.memory_mb,
    diskMb: effect.limits.disk_mb,
  };
}

/** The envelope of a call that never ran: the policy (or resolution) refused it. */
export function refusedEnvelope(tool: string, version: string | null, error: CorralError, started = performance.now()): InvokeResult {
  return {
    ok: false,
    tool,
    version,
    output: null,
    error: error.toJSON(),
    exit_code: null,
    duration_ms: Math.round((performance.now() - started) * 100) / 100,
    stdout_head: '',
    stderr_tail: '',
    stdout_truncated: false,
    stderr_truncated: false,
  };
}

function cancelled(): CorralError {
  return new CorralError(ErrorCodes.CANCELLED, 'Stopped waiting for approval: the caller cancelled.', {
    cancelled: true,
    reason: 'stopped waiting for approval',
  });
}

export class PolicyGate {
  readonly store: Store;
  readonly policy: PolicySource;
  readonly #host: PolicyHost;
  readonly #ttlMs: number;
  readonly #maxPending: number;
  /** Waiters in this process, woken at once when this process decides. */
  readonly #wakers = new Map<string, Set<() => void>>();

  constructor(options: PolicyGateOptions) {
    this.store = options.store;
    this.policy = options.policy;
    this.#host = options.host;
    const ttl = options.approvalTtlMs ?? DAY_MS;
    if (!(Number.isFinite(ttl) && ttl > 0 && ttl <= 30 * DAY_MS)) throw new RangeError('approvalTtlMs must be between 1 ms and 30 days');
    this.#ttlMs = ttl;
    const max = options.maxPending ?? 1000;
    if (!(Number.isInteger(max) && max > 0 && max <= 100_000)) throw new RangeError('maxPending must be a whole number from 1 to 100000');
    this.#maxPending = max;
  }

  /** The policy now, or a denial saying why it cannot be used (fail closed). */
  async #load(tool: Tool): Promise<Policy | CorralError> {
    try {
      return await this.policy.load();
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return policyDenied(`The policy ${this.policy.location} cannot be used, so every call is refused until it is fixed: ${why}`, {
        reason: 'policy_invalid',
        tool: tool.spec.name,
        version: tool.spec.version,
        policy: this.policy.location,
        ...(CorralError.is(err) && Array.isArray(err.details.problems) ? { problems: err.details.problems as never } : {}),
      });
    }
  }

  /** Evaluate the policy for a call, without recording anything. */
  async evaluate(request: Omit<GateRequest, 'input'>): Promise<PolicyDecision> {
    const tool = request.tool;
    const policy = await this.#load(tool);
    if (policy instanceof CorralError) return { decision: 'deny', tool: tool.spec.name, version: tool.spec.version, error: policy };
    const { bindings, caller } = request;
    return evaluatePolicy(
      policy,
      { tool: tool.spec, ...(bindings !== undefined ? { bindings } : {}), ...(caller !== undefined ? { caller } : {}) },
      this.#host,
      this.policy.location,
    );
  }

  /**
   * Decide a call: allow (with the mounts, env and limits to run it with),
   * deny (recorded in the audit trail), or approval_required. A call a
   * remembered approval covers (scope folder or tool) is allowed.
   */
  async check(request: GateRequest): Promise<GateDecision> {
    const d = await this.evaluate(request);
    if (d.decision === 'deny') return this.#denied(request, d.error);
    const effect = effectOf(d);
    if (d.decision === 'allow') return { decision: 'allow', tool: request.tool, options: invokeOptionsOf(effect), effect, approval: null };
    const standing = await this.#standingFor(request.tool, d.folders, d.max_scope);
    if (standing) return { decision: 'allow', tool: request.tool, options: invokeOptionsOf(effect), effect, approval: standing };
    return { decision: 'approval_required', tool: request.tool, effect, max_scope: d.max_scope };
  }

  /**
   * Record in the audit trail a call the server refused on its own, before
   * the gate decided (an MCP mount outside the client's roots, a malformed
   * request), as the same `deny` event the gate writes for its refusals, so
   * the trail shows every refused call. Best effort: never throws.
   */
  async recordDenial(request: Pick<GateRequest, 'tool' | 'bindings' | 'caller'>, error: CorralError): Promise<void> {
    await this.#denied(request, error);
  }

  /** Record a denial in the audit trail (best effort: a store that fails does not turn a denial into anything else). */
  async #denied(
    request: Pick<GateRequest, 'tool' | 'bindings' | 'caller'>,
    error: CorralError,
    approvalId: string | null = null,
  ): Promise<GateDecision> {
    await this.#audit('deny', callerLabel(request.caller), request.tool.spec.name, approvalId, {
      version: request.tool.spec.version,
      reason: error.details.reason ?? error.code,
      message: error.message.slice(0, 2000),
      bindings: bindingsForAudit(request.bindings),
      caller: callerRecord(request.caller),
    }).catch(() => undefined);
    return { decision: 'deny', error };
  }

  async #audit(
    action: AuditAction,
    actor: string,
    tool: string | null,
    approvalId: string | null,
    detail: Record<string, unknown>,
  ): Promise<void> {
    await this.store.recordAudit({
      id: crypto.randomUUID(),
      time_ns: nowNs(),
      action,
      actor: actor.slice(0, 256) || 'unknown',
      tool: tool === null ? null : tool.slice(0, 256),
      approval_id: approvalId,
      detail,
    });
  }

  /**
   * A remembered approval (scope folder or tool, not revoked) that covers this call. Only scopes the
   * policy allows *now* count: narrowing `approval_scope` withdraws wider approvals given before.
   */
  async #standingFor(tool: Tool, folders: PolicyEffect['folders'], maxScope: ApprovalScope): Promise<ApprovalRecord | null> {
    let standing: ApprovalRecord[];
    try {
      standing = await this.store.listApprovals({
        status: ['approved', 'claimed', 'done'],
        tool: tool.spec.name,
        workflowRunId: null,
        limit: MAX_LISTED,
      });
    } catch {
      return null;
    }
    return (
      standing.find(
        (a) =>
          a.scope !== null &&
          a.scope !== 'once' &&
          scopeRank(a.scope) <= scopeRank(maxScope) &&
          approvalCovers(a, tool.spec.name, tool.spec.version, folders),
      ) ?? null
    );
  }

  /**
   * Keep a call that needs approval as a pending approval (durably), record
   * the request in the audit trail, and return a handle to wait on. `decision`
   * is what `check` returned for this request.
   */
  async requestApproval(request: GateRequest, decision: Extract<GateDecision, { decision: 'approval_required' }>): Promise<ApprovalHandle> {
    const { tool } = request;
    const refuse = (reason: PolicyDenialReason, message: string) =>
      policyDenied(message, { reason, tool: tool.spec.name, version: tool.spec.version, policy: this.policy.location });
    let inputJson: string | undefined;
    try {
      inputJson = JSON.stringify(request.input);
    } catch {
      inputJson = undefined;
    }
    if (inputJson === undefined) throw refuse('bad_request', 'The input is not JSON data, so it cannot wait for approval.');
    if (encoder.encode(inputJson).length > MAX_APPROVAL_INPUT_BYTES)
      throw refuse(
        'approval_unavailable',
        `The input is larger than ${MAX_APPROVAL_INPUT_BYTES} bytes, the most a call waiting for approval may carry.`,
      );
    const pending = await this.pending();
    if (pending.length >= this.#maxPending)
      throw refuse(
        'approval_unavailable',
        `${pending.length} calls already wait for approval (the limit); decide some with corral approve first.`,
      );
    const now = nowNs();
    const approval: ApprovalRecord = {
      id: crypto.randomUUID(),
      tool: tool.spec.name,
      version: tool.spec.version,
      workflow_run_id: null,
      workflow_step: null,
      prompt: null,
      input_sha256: await sha256Hex(inputJson),
      input_json: inputJson,
      bindings: bindingsRecord(request.bindings),
      caller: callerRecord(request.caller),
      folders: decision.effect.folders.map((f) => ({ ...f })),
      requested_by: callerLabel(request.caller),
      requested_ns: now,
      expires_ns: plusMs(now, this.#ttlMs),
      max_scope: decision.max_scope,
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
    await this.store.createApproval(approval);
    await this.#audit('approval_requested', approval.requested_by, approval.tool, approval.id, {
      version: approval.version,
      input_sha256: approval.input_sha256,
      folders: approval.folders,
      caller: approval.caller,
    });
    return { id: approval.id, approval, wait: (options) => this.wait(approval.id, options) };
  }

  /**
   * Wait for a decision on an approval: polls the store (25 ms, doubling to
   * 1 s) so a decision made by another process is seen, and wakes at once for
   * one made through this gate.
   */
  async wait(id: string, options: WaitOptions = {}): Promise<ApprovalOutcome> {
    const timeoutMs = options.timeoutMs ?? 10 * 60 * 1000;
    if (!(Number.isFinite(timeoutMs) && timeoutMs >= 0 && timeoutMs <= DAY_MS))
      throw new RangeError('timeoutMs must be between 0 and 24 h');
    const { signal } = options;
    const deadline = performance.now() + timeoutMs;
    let delay = POLL_FIRST_MS;
    for (;;) {
      if (signal?.aborted) throw cancelled();
      const a = await this.store.getApproval(id);
      if (!a) throw new CorralError(ErrorCodes.INPUT_VALIDATION, `No approval with id ${id}.`, { approval_id: id });
      switch (a.status) {
        case 'approved':
        case 'claimed':
        case 'done':
          return 'approved';
        case 'rejected':
        case 'expired':
        case 'revoked':
          return a.status;
        case 'pending':
          if (BigInt(nowNs()) >= BigInt(a.expires_ns)) {
            await this.#expire(a);
            continue; // read again: it may have been decided just before
          }
      }
      const left = deadline - performance.now();
      if (left <= 0) return 'timeout';
      await this.#sleep(id, Math.min(delay, left), signal);
      delay = Math.min(delay * 2, POLL_MAX_MS);
    }
  }

  #sleep(id: string, ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      let wakers = this.#wakers.get(id);
      if (!wakers) this.#wakers.set(id, (wakers = new Set()));
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        wakers.delete(done);
        if (wakers.size === 0 && this.#wakers.get(id) === wakers) this.#wakers.delete(id);
        resolve();
      };
      const timer = setTimeout(done, ms);
      wakers.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  #wake(id: string): void {
    for (const wake of [...(this.#wakers.get(id) ?? [])]) wake();
  }

  async #expire(a: ApprovalRecord): Promise<void> {
    await this.store.updateApproval(a.id, ['pending'], { status: 'expired' });
  }

  /**
   * Approvals waiting for a decision, newest first (ones past their time are
   * marked expired, not listed): tool calls' and workflow steps' alike.
   */
  async pending(): Promise<ApprovalRecord[]> {
    const found = await this.store.listApprovals({ status: ['pending'], limit: Math.max(MAX_LISTED, this.#maxPending) });
    const now = BigInt(nowNs());
    const live: ApprovalRecord[] = [];
    for (const a of found) {
      if (now >= BigInt(a.expires_ns)) await this.#expire(a).catch(() => undefined);
      else live.push(a);
    }
    return live;
  }

  /** Remembered approvals (scope folder or tool) that still cover calls, newest first. */
  async standing(tool?: string): Promise<ApprovalRecord[]> {
    const found = await this.store.listApprovals({
      status: ['approved', 'claimed', 'done'],
      ...(tool !== undefined ? { tool } : {}),
      workflowRunId: null,
      limit: MAX_LISTED,
    });
    return found.filter((a) => a.scope === 'folder' || a.scope === 'tool');
  }

  /**
   * Approved calls no host has taken to run yet (after a restart: run each
   * with `invokeApproved`). Not workflow steps' approvals: their workflow
   * engine continues those runs.
   */
  resume(): Promise<ApprovalRecord[]> {
    return this.store.listApprovals({ status: ['approved'], workflowRunId: null, limit: MAX_LISTED });
  }

  /**
   * A person's decision on a pending approval. Throws E_INPUT_VALIDATION for
   * an unknown id, one that is no longer pending, or a scope wider than the
   * policy allows. The decision is recorded in the audit trail.
   */
  async decide(id: string, verdict: 'approve' | 'reject', options: DecideOptions): Promise<ApprovalRecord> {
    const by = typeof options?.by === 'string' ? options.by.trim().slice(0, 256) : '';
    if (by === '') throw new CorralError(ErrorCodes.INPUT_VALIDATION, 'Say who decides (by).', { approval_id: id });
    if (verdict !== 'approve' && verdict !== 'reject')
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `verdict must be 'approve' or 'reject'`, { approval_id: id });
    const comment = options.comment === undefined || options.comment === '' ? null : String(options.comment).slice(0, 4096);
    const a = await this.#get(id);
    const scope = options.scope ?? 'once';
    if (!APPROVAL_SCOPES.includes(scope))
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `scope must be one of ${APPROVAL_SCOPES.join(', ')}`, { approval_id: id });
    if (verdict === 'approve' && scopeRank(scope) > scopeRank(a.max_scope))
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        isWorkflowApproval(a)
          ? `Approval ${id} is for step ${a.workflow_step} of workflow run ${a.workflow_run_id}: it covers that step only (scope 'once'; asked: '${scope}').`
          : `The policy lets approvals of ${a.tool} reach at most '${a.max_scope}' (asked: '${scope}').`,
        { approval_id: id, max_scope: a.max_scope, scope },
      );
    if (a.status === 'pending' && BigInt(nowNs()) >= BigInt(a.expires_ns)) await this.#expire(a);
    const updated = await this.store.updateApproval(id, ['pending'], {
      status: verdict === 'approve' ? 'approved' : 'rejected',
      scope: verdict === 'approve' ? scope : null,
      decided_by: by,
      decided_ns: nowNs(),
      comment,
    });
    if (!updated) {
      const now = await this.#get(id);
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Approval ${id} is ${now.status}, not pending: it cannot be decided again.`, {
        approval_id: id,
        status: now.status,
      });
    }
    this.#wake(id);
    await this.#audit(verdict, by, updated.tool, id, {
      version: updated.version,
      ...(verdict === 'approve' ? { scope } : {}),
      comment,
      folders: updated.folders,
      input_sha256: updated.input_sha256,
      requested_by: updated.requested_by,
      ...workflowDetail(updated),
    });
    return updated;
  }

  /**
   * Withdraw an approval: an approved call that has not run never will, and
   * a remembered one (scope folder or tool) covers no more calls. Recorded in
   * the audit trail. To refuse a pending one, `decide(id, 'reject', …)`.
   */
  async revokeApproval(id: string, options: { by: string; comment?: string }): Promise<ApprovalRecord> {
    const by = typeof options?.by === 'string' ? options.by.trim().slice(0, 256) : '';
    if (by === '') throw new CorralError(ErrorCodes.INPUT_VALIDATION, 'Say who revokes (by).', { approval_id: id });
    const comment = options.comment === undefined || options.comment === '' ? null : String(options.comment).slice(0, 4096);
    await this.#get(id);
    const updated = await this.store.updateApproval(id, ['approved', 'claimed', 'done'], {
      status: 'revoked',
      revoked_by: by,
      revoked_ns: nowNs(),
      ...(comment !== null ? { comment } : {}),
    });
    if (!updated) {
      const now = await this.#get(id);
      const hint = now.status === 'pending' ? ' (it is still pending: reject it instead)' : '';
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Approval ${id} is ${now.status}; only a given approval can be revoked${hint}.`, {
        approval_id: id,
        status: now.status,
      });
    }
    this.#wake(id);
    await this.#audit('approval_revoked', by, updated.tool, id, {
      version: updated.version,
      scope: updated.scope,
      comment,
      folders: updated.folders,
      ...workflowDetail(updated),
    });
    return updated;
  }

  async #get(id: string): Promise<ApprovalRecord> {
    if (typeof id !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(id))
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `${JSON.stringify(String(id).slice(0, 200))} is not an approval id.`, {});
    const a = await this.store.getApproval(id);
    if (!a) throw new CorralError(ErrorCodes.INPUT_VALIDATION, `No approval with id ${id}.`, { approval_id: id });
    return a;
  }

  /**
   * Take an approved call to run it: marks it claimed (only one process
   * can), then checks the policy again (it may have changed while the call
   * waited). Allow carries the approval; call `finish` after running.
   */
  async claim(id: string, tool: Tool): Promise<GateDecision> {
    const a = await this.#get(id);
    const request = { tool, bindings: a.bindings as Record<string, RequestedBinding>, caller: a.caller as CallerInfo };
    if (isWorkflowApproval(a)) return this.#denied(request, workflowApprovalRuns(a), id);
    const unavailable = (why: string) =>
      this.#denied(
        request,
        policyDenied(`Approval ${id} cannot be run: ${why}.`, {
          reason: a.status === 'revoked' ? 'approval_revoked' : 'approval_unavailable',
          tool: a.tool,
          version: a.version,
          approval_id: id,
        }),
        id,
      );
    if (tool.spec.name !== a.tool || tool.spec.version !== a.version)
      return unavailable(`it approves ${a.tool}@${a.version}, not ${tool.spec.name}@${tool.spec.version}`);
    const claimed = await this.store.updateApproval(id, ['approved'], { status: 'claimed', claimed_ns: nowNs() });
    if (!claimed) return unavailable(`it is ${(await this.#get(id)).status}`);
    const d = await this.evaluate(request);
    if (d.decision === 'deny') {
      await this.store.updateApproval(id, ['claimed'], { status: 'done' }).catch(() => undefined);
      return this.#denied(request, d.error, id);
    }
    const effect = effectOf(d);
    // The person approved these folders, as they were resolved when the call asked: a path that now resolves
    // elsewhere (a folder on the way swapped for a symlink, even to another folder the policy grants) is not
    // what was approved.
    const sameFolders =
      Array.isArray(a.folders) &&
      effect.folders.length === a.folders.length &&
      effect.folders.every((f) =>
        a.folders.some((g) => g.guest === f.guest && g.folder === f.folder && (f.access === 'read' || g.access === 'read-write')),
      );
    if (!sameFolders) {
      await this.store.updateApproval(id, ['claimed'], { status: 'done' }).catch(() => undefined);
      return this.#denied(
        request,
        policyDenied(
          `Approval ${id} cannot be run: its folders now resolve to ${effect.folders.map((f) => `${f.guest} → ${f.folder}`).join(', ') || 'none'}, not the ${(Array.isArray(a.folders) ? a.folders : []).map((f) => `${f.guest} → ${f.folder}`).join(', ') || 'none'} that was approved.`,
          { reason: 'approval_unavailable', tool: a.tool, version: a.version, approval_id: id },
        ),
        id,
      );
    }
    return { decision: 'allow', tool, options: invokeOptionsOf(effect), effect, approval: claimed };
  }

  /** Mark a claimed approval as run, with the execution snapshot's id when there is one. */
  async finish(id: string, executionId: string | null): Promise<void> {
    await this.store.updateApproval(id, ['claimed'], { status: 'done', execution_id: executionId });
  }

  /**
   * The whole decision for one call: check, and when the policy requires
   * approval, keep it pending, tell `onApprovalRequired`, wait, and claim it
   * once approved. Returns allow or deny (E_POLICY_DENIED, or E_CANCELLED
   * when `signal` stopped the wait).
   */
  async authorize(request: GateRequest, options: AuthorizeOptions = {}): Promise<Extract<GateDecision, { decision: 'allow' | 'deny' }>> {
    const d = await this.check(request);
    if (d.decision !== 'approval_required') return d;
    let handle: ApprovalHandle;
    try {
      handle = await this.requestApproval(request, d);
    } catch (err) {
      const error = CorralError.is(err, ErrorCodes.POLICY_DENIED)
        ? err
        : policyDenied(`The call needs approval, which cannot be kept: ${err instanceof Error ? err.message : String(err)}`, {
            reason: 'approval_unavailable',
            tool: request.tool.spec.name,
            version: request.tool.spec.version,
          });
      return this.#denied(request, error) as Promise<{ decision: 'deny'; error: CorralError }>;
    }
    try {
      await options.onApprovalRequired?.(handle.approval);
    } catch {
      // The host's notification failed; the approval is still pending and can be decided with corral approve.
    }
    let outcome: ApprovalOutcome;
    try {
      outcome = await handle.wait({
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.approvalTimeoutMs !== undefined ? { timeoutMs: options.approvalTimeoutMs } : {}),
      });
    } catch (err) {
      if (CorralError.is(err)) return { decision: 'deny', error: err };
      throw err;
    }
    const label = `${request.tool.spec.name}@${request.tool.spec.version}`;
    const base = { tool: request.tool.spec.name, version: request.tool.spec.version, approval_id: handle.id, policy: this.policy.location };
    switch (outcome) {
      case 'approved': {
        const claimed = await this.claim(handle.id, request.tool);
        return claimed as Extract<GateDecision, { decision: 'allow' | 'deny' }>;
      }
      case 'timeout':
        return {
          decision: 'deny',
          error: policyDenied(
            `Nobody approved the call of ${label} in time; it stays pending as ${handle.id} (corral approve ${handle.id}), and a host may run it once approved.`,
            { reason: 'approval_timeout', ...base },
          ),
        };
      default: {
        const a = await this.store.getApproval(handle.id).catch(() => null);
        const who = a?.decided_by ?? a?.revoked_by;
        const why = a?.comment ? `: ${a.comment}` : '';
        return {
          decision: 'deny',
          error: policyDenied(`The call of ${label} was ${outcome}${who ? ` by ${who}` : ''}${why}.`, {
            reason: outcome === 'rejected' ? 'approval_rejected' : outcome === 'expired' ? 'approval_expired' : 'approval_revoked',
            ...base,
          }),
        };
      }
    }
  }

  /**
   * The one call a server makes: resolve `ref`, decide under the policy
   * (waiting for approval when it says so), run the tool with what the policy
   * gives it, and return the result envelope. A refused call's envelope has
   * `error.code` E_POLICY_DENIED (or E_TOOL_NOT_FOUND, E_CANCELLED) and
   * never reaches the tool. Never throws for a refused call.
   */
  async invoke(host: GateHost, ref: string, input: unknown, options: GateInvokeOptions = {}): Promise<InvokeResult> {
    const started = performance.now();
    let tool: Tool;
    try {
      tool = host.registry.resolve(ref);
    } catch (err) {
      const error = CorralError.is(err) ? err : new CorralError(ErrorCodes.TOOL_NOT_FOUND, String(err));
      return refusedEnvelope(String(ref).split('@')[0]!.slice(0, 256), null, error, started);
    }
    const { bindings, caller, signal, decisionId, recordInput } = options;
    const request: GateRequest = {
      tool,
      input,
      ...(bindings !== undefined ? { bindings } : {}),
      ...(caller !== undefined ? { caller } : {}),
    };
    const d = await this.authorize(request, options);
    if (d.decision === 'deny') return refusedEnvelope(tool.spec.name, tool.spec.version, d.error, started);
    return this.#run(host, d, input, { signal, decisionId, recordInput, timeoutMs: options.timeoutMs });
  }

  /** Run an approved call that has not run yet (see `resume`): claim, re-check the policy, run. */
  async invokeApproved(host: GateHost, id: string, options: { signal?: AbortSignal } = {}): Promise<InvokeResult> {
    const started = performance.now();
    const a = await this.#get(id);
    if (isWorkflowApproval(a)) return refusedEnvelope(a.tool, null, workflowApprovalRuns(a), started);
    let tool: Tool;
    try {
      tool = host.registry.resolve(`${a.tool}@${a.version}`);
    } catch (err) {
      return refusedEnvelope(
        a.tool,
        a.version,
        CorralError.is(err) ? err : new CorralError(ErrorCodes.TOOL_NOT_FOUND, String(err)),
        started,
      );
    }
    // The store is untrusted too: the input must still be what was approved.
    let input: unknown;
    try {
      if ((await sha256Hex(a.input_json)) !== a.input_sha256) throw new Error('input changed');
      input = JSON.parse(a.input_json);
    } catch {
      const error = policyDenied(`Approval ${id}'s input no longer matches what was approved; refusing to run it.`, {
        reason: 'approval_unavailable',
        tool: a.tool,
        version: a.version,
        approval_id: id,
      });
      return refusedEnvelope(a.tool, a.version, error, started);
    }
    const d = await this.claim(id, tool);
    if (d.decision !== 'allow') return refusedEnvelope(a.tool, a.version, (d as { error: CorralError }).error, started);
    return this.#run(host, d, input, options);
  }

  async #run(
    host: GateHost,
    d: Extract<GateDecision, { decision: 'allow' }>,
    input: unknown,
    extra: {
      signal?: AbortSignal | undefined;
      decisionId?: string | undefined;
      recordInput?: boolean | undefined;
      timeoutMs?: number | undefined;
    },
  ): Promise<InvokeResult> {
    const options: InvokeOptions = { ...d.options };
    // A caller's time limit can only shorten the call; anything else (NaN, 0, negative) is ignored here and the policy's stands.
    if (typeof extra.timeoutMs === 'number' && Number.isFinite(extra.timeoutMs) && extra.timeoutMs > 0)
      options.timeoutMs = Math.min(options.timeoutMs ?? extra.timeoutMs, Math.ceil(extra.timeoutMs));
    if (extra.signal) options.signal = extra.signal;
    if (extra.decisionId !== undefined) options.decisionId = extra.decisionId;
    if (extra.recordInput !== undefined) options.recordInput = extra.recordInput;
    // Only the call that claimed an approval finishes it; calls a remembered approval covers leave it as it is.
    const claimed = d.approval?.status === 'claimed' ? d.approval.id : undefined;
    let result: InvokeResult;
    try {
      result = await host.invokeTool(d.tool, input, options);
    } catch (err) {
      if (claimed) await this.finish(claimed, null).catch(() => undefined);
      throw err;
    }
    if (claimed) await this.finish(claimed, result.snapshot?.id ?? null).catch(() => undefined);
    return result;
  }
}

/** What the audit trail adds about a workflow step's approval. */
function workflowDetail(a: ApprovalRecord): Record<string, unknown> {
  return isWorkflowApproval(a) ? { workflow_run_id: a.workflow_run_id, workflow_step: a.workflow_step } : {};
}

/** Why a workflow step's approval is not a call to run. */
function workflowApprovalRuns(a: ApprovalRecord): CorralError {
  return policyDenied(
    `Approval ${a.id} is for step ${a.workflow_step} of workflow run ${a.workflow_run_id}, not a tool call: ` +
      `deciding it is all there is to do here, and the workflow continues when its engine resumes the run (corral workflow resume ${a.workflow_run_id}).`,
    { reason: 'approval_unavailable', tool: a.tool, version: a.version, approval_id: a.id },
  );
}
