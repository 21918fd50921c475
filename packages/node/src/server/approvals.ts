/**
 * Approvals for `corral serve`: how the HTTP API shows an approval, the
 * results of approved calls it ran, and the runner that runs approved calls
 * whose HTTP request is gone.
 *
 * A POST /execute that needs approval waits a short while (the request is
 * held); if nobody decides in time it is answered 202 with the approval's id,
 * and the call is *detached*: nobody waits for it any more. The runner then
 * watches detached approvals (one store query a second, only while there are
 * any) and runs each once it is approved — `corral approve` in another
 * process, or POST /approvals/ID here. On start, the server detaches every
 * approval a previous HTTP request left pending or approved but not run (so a
 * restart between request and approval loses nothing). The result envelope is
 * kept in memory for GET /approvals/ID; the execution snapshot is in the store.
 *
 * Only approvals asked over HTTP (`caller.kind` 'http') are the runner's: a
 * call an MCP session waits for belongs to that session's server, and a
 * workflow step's approval to its workflow engine (it is no call to run).
 */
import { isoFromNs, type ApprovalRecord, type FolderUse, type InvokeResult, type PolicyGate } from '@corral/core';
import type { Corral } from '../corral.js';

/** An approval id as records keep them (and the only shape looked up in the store). */
export const APPROVAL_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** How often detached approvals are looked at, while there are any. */
const POLL_MS = 1000;
/** How often detached approvals that were decided otherwise (rejected, expired, …) are forgotten. */
const PRUNE_EVERY = 30;
/** Approved calls run at once by the runner. */
const RUN_AT_ONCE = 4;
/** Detached approvals remembered at most (the gate keeps at most 1000 pending by default). */
const MAX_DETACHED = 100_000;
/** Results kept for GET /approvals/ID: at most this many, and this many bytes of JSON. */
const MAX_RESULTS = 1000;
const MAX_RESULT_BYTES = 32 * 2 ** 20;

/** An approval as the HTTP API shows it: its record, times in ISO 8601 (UTC), the input only when asked for. */
export interface ApprovalView {
  id: string;
  status: ApprovalRecord['status'];
  tool: string;
  version: string;
  /** The workflow run and step this approval belongs to; null for a tool call's. */
  workflow_run_id: string | null;
  workflow_step: string | null;
  /** What the approver is asked (a workflow step's prompt), or null. */
  prompt: string | null;
  requested_by: string;
  requested_at: string;
  expires_at: string;
  folders: FolderUse[];
  input_sha256: string;
  max_scope: ApprovalRecord['max_scope'];
  scope: ApprovalRecord['scope'];
  decided_by: string | null;
  decided_at: string | null;
  comment: string | null;
  execution_id: string | null;
  revoked_by: string | null;
  revoked_at: string | null;
  /** The call's input (GET /approvals/ID only). */
  input?: unknown;
}

const iso = (ns: string | null) => (ns === null ? null : isoFromNs(ns));

export function approvalView(a: ApprovalRecord, withInput = false): ApprovalView {
  const view: ApprovalView = {
    id: a.id,
    status: a.status,
    tool: a.tool,
    version: a.version,
    workflow_run_id: a.workflow_run_id,
    workflow_step: a.workflow_step,
    prompt: a.prompt,
    requested_by: a.requested_by,
    requested_at: isoFromNs(a.requested_ns),
    expires_at: isoFromNs(a.expires_ns),
    folders: a.folders.map((f) => ({ guest: f.guest, folder: f.folder, access: f.access })),
    input_sha256: a.input_sha256,
    max_scope: a.max_scope,
    scope: a.scope,
    decided_by: a.decided_by,
    decided_at: iso(a.decided_ns),
    comment: a.comment,
    execution_id: a.execution_id,
    revoked_by: a.revoked_by,
    revoked_at: iso(a.revoked_ns),
  };
  if (withInput) {
    try {
      view.input = JSON.parse(a.input_json);
    } catch {
      view.input = null; // the store is checked on read; this only guards a record damaged in between
    }
  }
  return view;
}

/** The result envelopes of approved calls this server ran, newest kept, bounded in count and bytes. */
export class ApprovalResults {
  readonly #results = new Map<string, { result: InvokeResult; bytes: number }>();
  #bytes = 0;

  set(id: string, result: InvokeResult): void {
    const bytes = Buffer.byteLength(JSON.stringify(result));
    this.delete(id);
    if (bytes > MAX_RESULT_BYTES) return;
    this.#results.set(id, { result, bytes });
    this.#bytes += bytes;
    for (const [oldest, kept] of this.#results) {
      if (this.#results.size <= MAX_RESULTS && this.#bytes <= MAX_RESULT_BYTES) break;
      this.#results.delete(oldest);
      this.#bytes -= kept.bytes;
    }
  }

  get(id: string): InvokeResult | undefined {
    return this.#results.get(id)?.result;
  }

  delete(id: string): void {
    const kept = this.#results.get(id);
    if (!kept) return;
    this.#results.delete(id);
    this.#bytes -= kept.bytes;
  }
}

export interface ApprovalRunnerOptions {
  gate: PolicyGate;
  corral: Corral;
  results: ApprovalResults;
  /** Each call the runner ran (or the policy refused when it was claimed). */
  onResult?: (approval: ApprovalRecord, result: InvokeResult, seconds: number) => void;
  /** Something went wrong that nobody else would see (a store that failed). */
  onError?: (message: string) => void;
  /** Each run that ended, so shutdown can tell when the runner is idle. */
  onSettled?: () => void;
}

/** Runs approved calls whose HTTP request has ended (see the file's comment). */
export class ApprovalRunner {
  readonly #o: ApprovalRunnerOptions;
  readonly #detached = new Set<string>();
  readonly #running = new Map<string, AbortController>();
  #timer: NodeJS.Timeout | undefined;
  #ticking = false;
  #again = false;
  #ticks = 0;
  #closed = false;

  constructor(options: ApprovalRunnerOptions) {
    this.#o = options;
  }

  /** Approved calls running now. */
  get running(): number {
    return this.#running.size;
  }

  /** Approvals waiting for a decision or a run with nobody's request attached. */
  get detached(): number {
    return this.#detached.size;
  }

  /** Take over what earlier HTTP requests left: pending, or approved and not run (after a restart). */
  async start(): Promise<void> {
    let left: ApprovalRecord[];
    try {
      left = await this.#o.gate.store.listApprovals({ status: ['pending', 'approved'], limit: MAX_DETACHED });
    } catch (err) {
      this.#o.onError?.(`cannot list approvals left by earlier requests: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    for (const a of left) if (a.caller.kind === 'http' && a.workflow_run_id === null) this.#detached.add(a.id);
    this.kick();
  }

  /** Nobody's request waits for this approval any more: run it once approved. */
  detach(id: string): void {
    if (this.#closed || this.#detached.size >= MAX_DETACHED) return;
    this.#detached.add(id);
    this.#schedule();
  }

  /** Look now (a decision was just made here). */
  kick(): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    void this.#tick();
  }

  /** Stop looking; calls running go on until `abort`. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Stop the calls running now (shutdown's second stage). */
  abort(reason: string): void {
    for (const controller of this.#running.values()) controller.abort(new Error(reason));
  }

  #schedule(): void {
    if (this.#closed || this.#timer || this.#detached.size === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#tick();
    }, POLL_MS);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = true;
    try {
      do {
        this.#again = false;
        if (this.#detached.size === 0 || this.#closed) break;
        const approved = await this.#o.gate.resume();
        for (const a of approved) {
          if (this.#running.size >= RUN_AT_ONCE) break;
          if (!this.#detached.has(a.id) || this.#running.has(a.id)) continue;
          // Tried once: an approval whose run fails to start (its input changed, its tool is gone) is not tried again.
          this.#detached.delete(a.id);
          this.#run(a);
        }
        if (++this.#ticks % PRUNE_EVERY === 0) await this.#prune();
      } while (this.#again);
    } catch (err) {
      this.#o.onError?.(`cannot look for approved calls: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.#ticking = false;
      this.#schedule();
    }
  }

  /** Forget detached approvals that can no longer run (rejected, expired, revoked, run elsewhere). */
  async #prune(): Promise<void> {
    for (const id of [...this.#detached]) {
      const a = await this.#o.gate.store.getApproval(id);
      if (!a || (a.status !== 'pending' && a.status !== 'approved')) this.#detached.delete(id);
    }
  }

  #run(a: ApprovalRecord): void {
    const controller = new AbortController();
    this.#running.set(a.id, controller);
    const started = performance.now();
    void this.#o.gate
      .invokeApproved(this.#o.corral, a.id, { signal: controller.signal })
      .then(
        (result) => {
          this.#o.results.set(a.id, result);
          this.#o.onResult?.(a, result, (performance.now() - started) / 1000);
        },
        (err: unknown) => this.#o.onError?.(`approved call ${a.id} failed to run: ${err instanceof Error ? err.message : String(err)}`),
      )
      .finally(() => {
        this.#running.delete(a.id);
        this.#o.onSettled?.();
        // More may be waiting for a free slot.
        if (this.#detached.size > 0) this.kick();
      });
  }
}
