/**
 * Corral's HTTP API (`corral serve`), on node:http alone.
 *
 *   POST /execute          {tool, input, mounts?, timeout_ms?} → the result envelope
 *   POST /execute/{name}   {input, mounts?, timeout_ms?}       → the same, one typed operation per tool
 *   GET  /approvals        calls waiting for a person's approval
 *   GET  /approvals/{id}   one approval, and its call's result once it ran
 *   POST /approvals/{id}   {decision, comment?, scope?}: decide it (the approver token only)
 *   GET  /workflows        the workflows served (--workflows DIR), with their inputs
 *   POST /workflows/{name}/runs        {inputs?}: run one (as the caller, through the policy) → WorkflowResult
 *   GET  /workflows/runs/{id}          a run's record, events and pending approvals
 *   POST /workflows/runs/{id}/resume   take a run up again → WorkflowResult
 *   GET  /tools            the registered tools and their schemas
 *   GET  /openapi.json     OpenAPI 3.1, generated from the registered tools
 *   GET  /healthz          liveness (never needs a token)
 *   GET  /metrics          Prometheus text
 *   *    /mcp              an MCP endpoint, when one is mounted (`mcp` option)
 *
 * Every call goes through the policy gate (corral.policy.yaml): a refused
 * call is 403 E_POLICY_DENIED; one that waits for approval longer than
 * `approvalWaitMs` is answered 202 and run later (approvals.ts).
 *
 * Status codes: status.ts. Every byte from the network is untrusted: the
 * body is read only up to a limit (and not at all when the answer does not
 * need it), /execute calls in flight are bounded (503 + Retry-After beyond),
 * tokens are compared in constant time, logs never carry bodies, and
 * metric labels only take values from bounded sets.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import {
  CorralError,
  ErrorCodes,
  MemoryStore,
  isWorkflowApproval,
  nowNs,
  specDefaults,
  type ApprovalScope,
  type ErrorCode,
  type InvokeResult,
  type PolicyGate,
  type RequestedBinding,
  type Tool,
} from '@corral/core';
import { ServedWorkflows, workflowInputSchema, type Workflow, type WorkflowResult } from '@corral/workflow';
import { closest } from '@corral/core/errors';
import type { Corral } from '../corral.js';
import { openPolicyGate } from '../policy-gate.js';
import { forTerminal } from '../terminal.js';
import { APPROVAL_ID, ApprovalResults, ApprovalRunner, approvalView } from './approvals.js';
import type { HttpMetrics } from './metrics.js';
import { buildOpenApi } from './openapi.js';
import { HttpErrorCodes, statusForResult, type HttpErrorCode, type WireErrorDetails } from './status.js';
import { packagePath } from '../package-files.js';

export const DEFAULT_HTTP_PORT = 8787;
export const DEFAULT_HTTP_HOST = '127.0.0.1';
export const DEFAULT_MAX_BODY_BYTES = 4 * 2 ** 20;
export const DEFAULT_HTTP_CONCURRENCY = 256;
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000;
/** A shorter token is refused: it could be guessed. */
export const MIN_TOKEN_LENGTH = 16;
/** How long POST /execute holds a call that waits for approval before answering 202. */
export const DEFAULT_APPROVAL_WAIT_MS = 10_000;
const MAX_APPROVAL_WAIT_MS = 10 * 60_000;
/** Most mounts one request may bind, and the longest host path (as the policy gate takes them). */
const MAX_MOUNTS = 64;
const MAX_HOST_PATH = 4096;

/** Longest `tool` reference accepted (a name is at most 64 characters; a range follows it). */
const MAX_TOOL_REF = 256;
/** After refusing a body unread, how much more of it is read (and dropped) so the client gets the answer, not a reset. */
const LINGER_BYTES = 8 * 2 ** 20;
const LINGER_MS = 2_000;
/** When shutdown stops calls that outlived the drain, how long their answers get to go out. */
const ABORT_GRACE_MS = 5_000;

const VERSION = (() => {
  try {
    return (JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
})();

/**
 * Something mounted at `/mcp`: the MCP Streamable HTTP handler. It gets
 * every method; a POST's body arrives already read (within the size limit)
 * and parsed as JSON. Auth, the Host check, logging and shutdown are the
 * server's; the rest of the protocol is the handler's.
 */
export interface HttpMount {
  handle(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void>;
  /** Stop its calls in flight, each still answered: shutdown calls it when they outlive the drain. */
  abortCalls?(reason: string): void;
  close(): Promise<void>;
}

/** One line of the request log (a JSON object on one line). */
export interface HttpLogEntry {
  time: string;
  event:
    | 'request'
    | 'listening'
    | 'draining'
    | 'closed'
    | 'internal_error'
    | 'tools_changed'
    | 'notice'
    | 'approved_call'
    | 'workflow_continued';
  [key: string]: unknown;
}

export interface HttpServerOptions {
  /** Default 127.0.0.1. Any address that is not loopback needs `token`. */
  host?: string;
  /** Default 8787; 0 picks a free port (see `url`). */
  port?: number;
  /**
   * Bearer token every endpoint but /healthz then requires (at least 16
   * characters). Required when `host` is not a loopback address.
   */
  token?: string;
  /** Largest request body in bytes. Default 4 MiB. */
  maxBodyBytes?: number;
  /** Most POST /execute requests in flight at once; one more gets 503 with Retry-After. Default 256. */
  concurrency?: number;
  /** How long `close` lets calls in flight finish before stopping them. Default 30 s. */
  shutdownTimeoutMs?: number;
  /**
   * Host header names accepted besides the defaults. On a loopback address
   * only localhost, 127.0.0.1, [::1] and the bound host are accepted unless
   * listed here (a DNS-rebinding page sends its own name); beyond loopback,
   * any Host is accepted unless this is given.
   */
  allowedHosts?: string[];
  /** Where log lines go. Default: one JSON line each on stderr. `false`: nowhere. */
  log?: ((entry: HttpLogEntry) => void) | false;
  /** An MCP handler mounted at /mcp. */
  mcp?: HttpMount;
  /**
   * The policy gate every call goes through. Default: `openPolicyGate` over
   * the default policy file, keeping approvals and the audit trail in the
   * Corral's store (in memory when it has none).
   */
  gate?: PolicyGate;
  /**
   * A second bearer token, the only one that can decide approvals
   * (POST /approvals/ID); at least 16 characters and not `token`: whoever
   * calls tools must not approve their own calls. Without it, approvals are
   * decided with `corral approve` (and POST /approvals/ID answers 403).
   */
  approverToken?: string;
  /** How long POST /execute holds a call that waits for approval before answering 202 with its id. Default 10 s, at most 10 min. */
  approvalWaitMs?: number;
  /**
   * The workflows served under /workflows (`corral serve --workflows DIR`), over the same gate as
   * /execute (`new ServedWorkflows({ host: corral, gate, workflows })`). Default: none offered, but
   * runs in the store can still be read, resumed and continued after their approvals.
   */
  workflows?: ServedWorkflows;
}

/** True for addresses that only this machine can reach. */
export function isLoopbackAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase();
  if (a === 'localhost' || a === '::1') return true;
  const v4 = a.startsWith('::ffff:') ? a.slice(7) : a;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/**
 * The server: `url` once listening, `close()` to shut down gracefully. The
 * Corral it serves stays open: whoever created it closes it (after `close`).
 */
export class CorralHttpServer {
  readonly server: Server;
  readonly metrics: HttpMetrics;
  readonly host: string;
  readonly #corral: Corral;
  readonly #gate: PolicyGate;
  readonly #token: Buffer | undefined;
  readonly #approverToken: Buffer | undefined;
  readonly #approvalWaitMs: number;
  readonly #results = new ApprovalResults();
  readonly #runner: ApprovalRunner;
  readonly #maxBody: number;
  readonly #concurrency: number;
  readonly #shutdownMs: number;
  readonly #allowedHosts: Set<string> | undefined;
  readonly #log: ((entry: HttpLogEntry) => void) | undefined;
  readonly #mcp: HttpMount | undefined;
  readonly #workflows: ServedWorkflows;
  /** POST /execute requests admitted and not yet answered. */
  #inflight = 0;
  /** Requests that shutdown waits for (all but long-lived MCP streams). */
  #active = 0;
  readonly #idleWaiters: Array<() => void> = [];
  readonly #calls = new Set<AbortController>();
  /** Calls held while they wait for approval: shutdown answers them 202 at once. */
  readonly #approvalWaits = new Set<AbortController>();
  #draining = false;
  #closing: Promise<void> | undefined;
  #openapi: { key: string; text: string } | undefined;

  private constructor(
    corral: Corral,
    gate: PolicyGate,
    metrics: HttpMetrics,
    options: Required<Pick<HttpServerOptions, 'host'>> & HttpServerOptions,
  ) {
    this.#corral = corral;
    this.#gate = gate;
    this.#workflows =
      options.workflows ??
      new ServedWorkflows({ host: corral, gate, workflows: [], log: (message) => this.#emit({ event: 'notice', message }) });
    this.#workflows.subscribe({ onContinued: (result) => this.#emitContinued(result), onSettled: () => this.#settled() });
    this.metrics = metrics;
    this.host = options.host;
    this.#token = options.token === undefined ? undefined : digest(options.token);
    this.#approverToken = options.approverToken === undefined ? undefined : digest(options.approverToken);
    this.#approvalWaitMs = options.approvalWaitMs ?? DEFAULT_APPROVAL_WAIT_MS;
    this.#runner = new ApprovalRunner({
      gate,
      corral,
      results: this.#results,
      onResult: (approval, result, seconds) => {
        this.#count(result, seconds);
        this.#emit({
          event: 'approved_call',
          approval_id: approval.id,
          tool: result.tool.slice(0, 128),
          ok: result.ok,
          ...(result.error ? { error_code: result.error.code } : {}),
          ...(result.snapshot ? { snapshot_id: result.snapshot.id } : {}),
        });
      },
      onError: (message) => this.#emit({ event: 'notice', message }),
      onSettled: () => this.#settled(),
    });
    this.#maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.#concurrency = options.concurrency ?? DEFAULT_HTTP_CONCURRENCY;
    this.#shutdownMs = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
    this.#mcp = options.mcp;
    this.#log = options.log === false ? undefined : (options.log ?? writeLogLine);
    const extra = (options.allowedHosts ?? []).map((h) => h.toLowerCase());
    if (isLoopbackAddress(options.host)) {
      const bound = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
      this.#allowedHosts = new Set(['localhost', '127.0.0.1', '[::1]', bound.toLowerCase(), ...extra]);
    } else {
      this.#allowedHosts = extra.length > 0 ? new Set(extra) : undefined;
    }
    this.server = createServer({ requestTimeout: 60_000, headersTimeout: 20_000, keepAliveTimeout: 5_000 }, (req, res) => {
      void this.#handle(req, res);
    });
    // Sockets beyond this are dropped by node before any request is read.
    this.server.maxConnections = Math.max(1024, this.#concurrency * 2);
  }

  /** Check the options, then listen. Throws a sentence saying what to change. */
  static async start(corral: Corral, options: HttpServerOptions = {}): Promise<CorralHttpServer> {
    if (typeof (corral as Partial<Corral> | null)?.invoke !== 'function' || !(corral as Partial<Corral>).executor?.pool) {
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        'startHttpServer(corral, options): the first argument must be a Corral (await Corral.create()), the options come second',
        { option: 'corral' },
      );
    }
    await checkHttpServerOptions(options);
    const host = options.host ?? DEFAULT_HTTP_HOST;
    const port = options.port ?? DEFAULT_HTTP_PORT;
    const { HttpMetrics } = await import('./metrics.js');
    const pool = corral.executor.pool;
    // Without a store of the Corral's, approvals and the audit trail live as long as the server.
    const gate = options.gate ?? openPolicyGate({ store: corral.store ?? new MemoryStore('memory (corral serve --no-store)') });
    let self: CorralHttpServer | undefined;
    const metrics = new HttpMetrics(pool, () => (self ? self.#inflight : 0), pendingCounter(gate));
    self = new CorralHttpServer(corral, gate, metrics, { ...options, host });
    const server = self.server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    self.#emit({
      event: 'listening',
      url: self.url,
      tools: corral.registry.list().length,
      auth: self.#token !== undefined,
      approver_token: self.#approverToken !== undefined,
      policy: gate.policy.location,
    });
    // Calls earlier requests left waiting for approval (before a restart, too) run once approved.
    await self.#runner.start();
    // Workflow runs remote callers left waiting (before a restart, too) go on once decided.
    await self.#workflows.start();
    return self;
  }

  /** The bound address, e.g. http://127.0.0.1:8787. */
  get url(): string {
    const { address, port } = this.server.address() as AddressInfo;
    return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** True once `close` was called: new requests get 503. */
  get draining(): boolean {
    return this.#draining;
  }

  /**
   * Shut down gracefully: stop accepting connections, answer new requests
   * on open ones with 503, let calls in flight finish for up to
   * `timeoutMs` (default `shutdownTimeoutMs`), then cancel what is left
   * (each still gets its answer, E_CANCELLED), close the MCP mount and
   * every connection. Calling it again returns the same promise.
   */
  close({ timeoutMs = this.#shutdownMs }: { timeoutMs?: number } = {}): Promise<void> {
    this.#closing ??= this.#shutdown(timeoutMs);
    return this.#closing;
  }

  /** Stop waiting for calls in flight: cancel them now (a second SIGTERM), approved calls the server runs on its own too. */
  abortCalls(reason = 'the server is shutting down'): void {
    for (const controller of this.#calls) controller.abort(new Error(reason));
    this.#mcp?.abortCalls?.(reason);
    this.#runner.abort(reason);
    this.#workflows.abort(reason);
  }

  async #shutdown(timeoutMs: number): Promise<void> {
    this.#draining = true;
    this.#emit({ event: 'draining', inflight: this.#inflight, active: this.#active, timeout_ms: timeoutMs });
    // Approvals stay pending in the store: calls held for one are answered 202 now, and run after a restart once approved.
    this.#runner.close();
    this.#workflows.close();
    for (const controller of this.#approvalWaits) controller.abort(new Error('the server is shutting down'));
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    if (!(await this.#idle(timeoutMs))) {
      this.abortCalls();
      await this.#idle(ABORT_GRACE_MS);
    }
    try {
      await this.#mcp?.close();
    } finally {
      this.server.closeAllConnections();
      await closed;
      this.#emit({ event: 'closed' });
    }
  }

  /** Resolves true once no request is active and no approved call runs, false if `ms` passes first. */
  #idle(ms: number): Promise<boolean> {
    if (this.#isIdle()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const at = this.#idleWaiters.indexOf(done);
        if (at !== -1) this.#idleWaiters.splice(at, 1);
        resolve(false);
      }, ms);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.#idleWaiters.push(done);
    });
  }

  #isIdle(): boolean {
    return this.#active === 0 && this.#runner.running === 0 && this.#workflows.running === 0;
  }

  /** A request or an approved call ended: wake shutdown if nothing is left. */
  #settled(): void {
    if (this.#isIdle()) for (const done of this.#idleWaiters.splice(0)) done();
  }

  #emit(entry: Omit<HttpLogEntry, 'time'>): void {
    this.#log?.({ time: new Date().toISOString(), ...entry } as HttpLogEntry);
  }

  /** A workflow run this server continued after a decision ended or waits again. */
  #emitContinued(result: WorkflowResult): void {
    this.#emit({
      event: 'workflow_continued',
      run_id: result.runId,
      workflow: result.workflow,
      status: result.status,
      ...(result.error ? { error_code: result.error.code } : {}),
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const id = requestIdOf(req);
    const path = pathOf(req.url ?? '');
    const route = routeOf(path, this.#mcp !== undefined);
    const method = req.method ?? 'GET';
    const ctx: RequestContext = { id, route, tool: undefined, errorCode: undefined, snapshotId: undefined, approvalId: undefined };
    const streaming = route === '/mcp' && method === 'GET';
    if (!streaming) this.#active++;
    res.setHeader('X-Request-Id', id);
    res.once('close', () => {
      // Not finished: the client went away before the answer was complete.
      const status = res.writableFinished ? res.statusCode : 499;
      this.metrics.request(method, route, status);
      this.#emit({
        event: 'request',
        request_id: id,
        method,
        path: path.length > 200 ? `${path.slice(0, 200)}…` : path,
        status,
        duration_ms: Math.round((performance.now() - started) * 100) / 100,
        ...(ctx.tool !== undefined ? { tool: ctx.tool } : {}),
        ...(ctx.errorCode !== undefined ? { error_code: ctx.errorCode } : {}),
        ...(ctx.snapshotId !== undefined ? { snapshot_id: ctx.snapshotId } : {}),
        ...(ctx.approvalId !== undefined ? { approval_id: ctx.approvalId } : {}),
        remote: req.socket.remoteAddress ?? null,
      });
      if (!streaming) {
        this.#active--;
        this.#settled();
      }
    });
    try {
      await this.#route(req, res, method, path, ctx);
    } catch (err) {
      // A bug: say nothing about it on the wire, everything in the log.
      this.#emit({ event: 'internal_error', request_id: id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      if (!res.headersSent && !res.destroyed) {
        this.#fail(res, ctx, 500, HttpErrorCodes.INTERNAL, 'The server failed to answer this request; its log has the reason.', {});
      } else {
        res.destroy();
      }
    }
  }

  async #route(req: IncomingMessage, res: ServerResponse, method: string, path: string, ctx: RequestContext): Promise<void> {
    if (this.#draining) res.setHeader('Connection', 'close');
    if (this.#allowedHosts && !this.#hostAllowed(req.headers.host)) {
      return this.#refuse(req, res, ctx, 403, HttpErrorCodes.FORBIDDEN, "The Host header is not one of this server's names.", {
        reason: 'host_not_allowed',
      });
    }
    if (ctx.route === '/healthz') {
      if (!this.#allow(req, res, ctx, ['GET', 'HEAD'])) return;
      const draining = this.#draining;
      return send(res, draining ? 503 : 200, { status: draining ? 'draining' : 'ok' });
    }
    const credential = this.#credential(req.headers.authorization);
    // Deciding an approval takes the approver token, and only it: #decide checks.
    if (ctx.route === '/approvals/{id}' && method === 'POST') return this.#decide(req, res, path, ctx, credential);
    const readsApprovals = ctx.route === '/approvals' || ctx.route === '/approvals/{id}';
    if (this.#token && !(credential === 'api' || (readsApprovals && credential === 'approver'))) {
      if (credential === 'approver')
        return this.#refuse(
          req,
          res,
          ctx,
          403,
          HttpErrorCodes.FORBIDDEN,
          'The approver token only reads and decides approvals (/approvals); this endpoint takes the API token.',
          { reason: 'approver_token' },
        );
      return this.#unauthorized(req, res, ctx);
    }
    switch (ctx.route) {
      case '/tools':
        if (!this.#allow(req, res, ctx, ['GET', 'HEAD'])) return;
        return send(res, 200, { tools: this.#corral.registry.list().map(describeTool) });
      case '/openapi.json':
        if (!this.#allow(req, res, ctx, ['GET', 'HEAD'])) return;
        return sendText(res, 200, 'application/json; charset=utf-8', this.#openapiText());
      case '/metrics':
        if (!this.#allow(req, res, ctx, ['GET', 'HEAD'])) return;
        return sendText(res, 200, this.metrics.contentType, await this.metrics.text());
      case '/execute':
      case '/execute/{name}':
        if (!this.#allow(req, res, ctx, ['POST'])) return;
        return this.#execute(req, res, path, ctx);
      case '/workflows':
        if (!this.#allow(req, res, ctx, ['GET', 'HEAD'])) return;
        return send(res, 200, { workflows: this.#workflows.list().map(describeWorkflow) });
      case '/workflows/{name}/runs':
        if (!this.#allow(req, res, ctx, ['POST'])) return;
        return this.#runWorkflow(req, res, path, ctx);
      case '/workflows/runs/{id}':
        if (!this.#allow(req, res, ctx, ['GET', 'HEAD'])) return;
        return this.#workflowStatus(res, path, ctx);
      case '/workflows/runs/{id}/resume':
        if (!this.#allow(req, res, ctx, ['POST'])) return;
        return this.#resumeWorkflow(req, res, path, ctx);
      case '/approvals':
        if (!this.#allow(req, res, ctx, ['GET', 'HEAD'])) return;
        return send(res, 200, { approvals: (await this.#gate.pending()).map((a) => approvalView(a)) });
      case '/approvals/{id}':
        if (!this.#allow(req, res, ctx, ['GET', 'HEAD', 'POST'])) return;
        return this.#showApproval(res, path, ctx);
      case '/mcp':
        return this.#mcpRequest(req, res, method, ctx);
      default:
        return this.#refuse(req, res, ctx, 404, HttpErrorCodes.NOT_FOUND, 'No such endpoint. See GET /openapi.json.', {});
    }
  }

  /** The method check: true to go on, or a 405 with Allow was sent. */
  #allow(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, methods: string[]): boolean {
    if (methods.includes(req.method ?? '')) return true;
    res.setHeader('Allow', methods.join(', '));
    this.#refuse(req, res, ctx, 405, HttpErrorCodes.METHOD_NOT_ALLOWED, `${ctx.route} takes ${methods.join(' or ')}.`, {
      allow: methods,
    });
    return false;
  }

  #hostAllowed(host: string | undefined): boolean {
    // HTTP/1.0 may leave it out; a browser (the rebinding attacker) never does.
    if (host === undefined) return true;
    const name = host
      .toLowerCase()
      .replace(/:\d{1,5}$/, '')
      .replace(/\.$/, '');
    return this.#allowedHosts!.has(name);
  }

  /** Which of the server's tokens the request carries: 'none' without Authorization, 'invalid' for any other. */
  #credential(header: string | undefined): 'none' | 'api' | 'approver' | 'invalid' {
    if (header === undefined) return 'none';
    if (header.length > 4096) return 'invalid';
    const match = /^Bearer +(\S+) *$/i.exec(header);
    if (match === null) return 'invalid';
    // Both sides hashed first: equal lengths for timingSafeEqual, and the token's length does not leak.
    // Both tokens are compared every time, so the time taken does not tell which one matched.
    const given = digest(match[1]!);
    const api = this.#token !== undefined && timingSafeEqual(given, this.#token);
    const approver = this.#approverToken !== undefined && timingSafeEqual(given, this.#approverToken);
    return api ? 'api' : approver ? 'approver' : 'invalid';
  }

  #unauthorized(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void {
    const given = req.headers.authorization !== undefined;
    res.setHeader('WWW-Authenticate', given ? 'Bearer realm="corral", error="invalid_token"' : 'Bearer realm="corral"');
    this.#refuse(
      req,
      res,
      ctx,
      401,
      HttpErrorCodes.UNAUTHORIZED,
      given ? "The bearer token is not this server's." : 'This server needs "Authorization: Bearer TOKEN".',
      {},
    );
  }

  #openapiText(): string {
    const tools = this.#corral.registry.list();
    const workflows = this.#workflows.list();
    const key = [
      ...tools.map((t) => `${t.spec.name}@${t.spec.version}+${t.wasmSha256}`),
      ...workflows.map((w) => `workflow:${w.name}`),
    ].join(',');
    if (this.#openapi?.key !== key) {
      const doc = buildOpenApi(tools, {
        version: VERSION,
        auth: this.#token !== undefined,
        approverAuth: this.#approverToken !== undefined,
        approvalWaitMs: this.#approvalWaitMs,
        hostCheck: this.#allowedHosts !== undefined,
        maxBodyBytes: this.#maxBody,
        mcp: this.#mcp !== undefined,
        workflows,
      });
      this.#openapi = { key, text: JSON.stringify(doc) };
    }
    return this.#openapi.text;
  }

  async #execute(req: IncomingMessage, res: ServerResponse, path: string, ctx: RequestContext): Promise<void> {
    if (this.#draining) {
      res.setHeader('Retry-After', '5');
      return this.#refuse(req, res, ctx, 503, ErrorCodes.CLOSED, 'The server is shutting down; send the call to another instance.', {});
    }
    if (this.#inflight >= this.#concurrency) {
      res.setHeader('Retry-After', '1');
      return this.#refuse(
        req,
        res,
        ctx,
        503,
        ErrorCodes.RESOURCE_EXHAUSTED,
        `The server has ${this.#concurrency} calls in flight (--concurrency); retry after a second.`,
        { resource: 'http_concurrency', concurrency: this.#concurrency },
        true,
      );
    }
    this.#inflight++;
    const controller = new AbortController();
    this.#calls.add(controller);
    try {
      const body = await this.#readJson(req, res, ctx);
      if (body === undefined) return;
      const fromPath = ctx.route === '/execute/{name}' ? decodeSegment(path.slice('/execute/'.length)) : undefined;
      if (fromPath === null)
        return this.#badRequest(res, ctx, [{ path: '/', message: 'the tool name in the path is not valid percent-encoded UTF-8' }]);
      const problems: Problem[] = [];
      const request = checkExecuteBody(body, fromPath, problems);
      ctx.tool = request?.tool.slice(0, 128);
      if (!request) return this.#badRequest(res, ctx, problems);
      // A call may shorten the tool's time limit, never lengthen it.
      const tool = this.#resolve(request.tool);
      if (tool && request.timeoutMs !== undefined) {
        const max = tool.spec.resources?.timeout_ms ?? specDefaults.resources.timeout_ms;
        if (request.timeoutMs > max) {
          return this.#badRequest(res, ctx, [
            {
              path: '/timeout_ms',
              message: `must be at most ${max}, ${tool.spec.name}'s own timeout_ms (a call may shorten it, not lengthen it)`,
            },
          ]);
        }
      }
      // The caller leaving stops its call: nobody is there to read the answer.
      const onGone = () => {
        if (!res.writableFinished) controller.abort(new Error('the client closed the connection'));
      };
      res.once('close', onGone);
      const started = performance.now();
      const timeout = request.timeoutMs !== undefined ? { timeoutMs: request.timeoutMs } : {};
      // Where the call is: deciding, held for approval (shutdown answers 202 then), or running.
      let phase = 'policy' as 'policy' | 'approval' | 'running';
      let approvalId = undefined as string | undefined;
      let result: InvokeResult;
      if (!tool) {
        // No such tool: nothing can run, so the policy has nothing to decide; the attempt is recorded.
        result = await this.#corral.invoke(request.tool, request.input, { signal: controller.signal, ...timeout });
      } else {
        const wait = Math.min(this.#approvalWaitMs, preferredWaitMs(req.headers.prefer) ?? Number.POSITIVE_INFINITY);
        result = await this.#gate.invoke(
          {
            registry: this.#corral.registry,
            invokeTool: (t, input, options) => {
              phase = 'running';
              this.#approvalWaits.delete(controller);
              return this.#corral.invokeTool(t, input, options);
            },
          },
          request.tool,
          request.input,
          {
            caller: { kind: 'http', id: `${ctx.id}@${req.socket.remoteAddress ?? 'unknown'}` },
            ...(request.mounts !== undefined ? { bindings: request.mounts } : {}),
            signal: controller.signal,
            ...timeout,
            approvalTimeoutMs: wait,
            onApprovalRequired: (approval) => {
              phase = 'approval';
              approvalId = approval.id;
              ctx.approvalId = approval.id;
              this.#approvalWaits.add(controller);
              if (this.#draining) controller.abort(new Error('the server is shutting down'));
            },
          },
        );
        this.#approvalWaits.delete(controller);
      }
      res.off('close', onGone);
      ctx.tool = result.tool.slice(0, 128);
      if (approvalId !== undefined && stillWaiting(result, phase)) {
        // Nobody decided in time (or the server is stopping, or the client left): the approval stays
        // pending, and the call runs once approved, here or after a restart; GET /approvals/ID follows it.
        this.#runner.detach(approvalId);
        return this.#accepted(res, approvalId);
      }
      if (approvalId !== undefined && phase === 'running') this.#results.set(approvalId, result);
      this.#count(result, (performance.now() - started) / 1000);
      ctx.errorCode = result.error?.code;
      ctx.snapshotId = result.snapshot?.id;
      const status = statusForResult(result);
      if (status === 503) res.setHeader('Retry-After', '1');
      if (this.#draining) res.setHeader('Connection', 'close');
      send(res, status, result);
    } finally {
      this.#approvalWaits.delete(controller);
      this.#calls.delete(controller);
      this.#inflight--;
    }
  }

  /** Admit one workflow drive (a run or a resume) like a call: 503 when stopping or full. Returns false once refused. */
  #admit(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): boolean {
    if (this.#draining) {
      res.setHeader('Retry-After', '5');
      this.#refuse(req, res, ctx, 503, ErrorCodes.CLOSED, 'The server is shutting down; send the request to another instance.', {});
      return false;
    }
    if (this.#inflight >= this.#concurrency) {
      res.setHeader('Retry-After', '1');
      this.#refuse(
        req,
        res,
        ctx,
        503,
        ErrorCodes.RESOURCE_EXHAUSTED,
        `The server has ${this.#concurrency} calls in flight (--concurrency); retry after a second.`,
        { resource: 'http_concurrency', concurrency: this.#concurrency },
        true,
      );
      return false;
    }
    return true;
  }

  /**
   * POST /workflows/{name}/runs {inputs?}: run a workflow for this request's caller. Every tool call of
   * its steps goes through the policy gate as this caller's own call would (ServedWorkflows); the
   * answer is the WorkflowResult once the run ended or waits for a person (200 either way).
   */
  async #runWorkflow(req: IncomingMessage, res: ServerResponse, path: string, ctx: RequestContext): Promise<void> {
    const name = decodeSegment(path.slice('/workflows/'.length, -'/runs'.length));
    const workflow = name === null ? undefined : this.#workflows.get(name);
    if (!workflow)
      return this.#refuse(req, res, ctx, 404, HttpErrorCodes.NOT_FOUND, 'No workflow with that name. GET /workflows lists them.', {});
    if (!this.#admit(req, res, ctx)) return;
    this.#inflight++;
    try {
      const body = await this.#readJson(req, res, ctx);
      if (body === undefined) return;
      const problems: Problem[] = [];
      const inputs = checkRunBody(body, problems);
      if (problems.length > 0) return this.#badRequest(res, ctx, problems, 'POST /workflows/{name}/runs');
      const caller = { kind: 'http', id: `${ctx.id}@${req.socket.remoteAddress ?? 'unknown'}` };
      // The run goes on if the client leaves (it is durable: GET /workflows/runs/ID); shutdown stops it.
      let result: WorkflowResult;
      try {
        result = await this.#workflows.run(workflow.name, inputs, caller);
      } catch (err) {
        return this.#workflowError(res, ctx, err);
      }
      this.#sendRun(res, ctx, result);
    } finally {
      this.#inflight--;
    }
  }

  /** GET /workflows/runs/{id}: the run's record, its events and the approvals it waits for. */
  async #workflowStatus(res: ServerResponse, path: string, ctx: RequestContext): Promise<void> {
    const id = decodeSegment(path.slice('/workflows/runs/'.length));
    if (id === null || !APPROVAL_ID.test(id)) return this.#noRun(res, ctx);
    let status: Awaited<ReturnType<ServedWorkflows['status']>>;
    try {
      status = await this.#workflows.status(id);
    } catch (err) {
      if (CorralError.is(err, ErrorCodes.INPUT_VALIDATION)) return this.#noRun(res, ctx);
      throw err;
    }
    send(res, 200, { run: status.run, events: status.events, pending: status.pending.map((a) => approvalView(a)) });
  }

  /**
   * POST /workflows/runs/{id}/resume: take a run up again (after a crash, or once its approvals are
   * decided), as the caller that started it when its approvals keep one, else as this request's caller.
   */
  async #resumeWorkflow(req: IncomingMessage, res: ServerResponse, path: string, ctx: RequestContext): Promise<void> {
    const id = decodeSegment(path.slice('/workflows/runs/'.length, -'/resume'.length));
    if (id === null || !APPROVAL_ID.test(id)) return this.#refuse(req, res, ctx, 404, HttpErrorCodes.NOT_FOUND, NO_RUN, {});
    if (!this.#admit(req, res, ctx)) return;
    this.#inflight++;
    try {
      // No body needed; one that is sent must be an empty object.
      if (hasBody(req)) {
        const body = await this.#readJson(req, res, ctx);
        if (body === undefined) return;
        if (typeof body !== 'object' || body === null || Array.isArray(body) || Object.keys(body).length > 0)
          return this.#badRequest(res, ctx, [{ path: '/', message: 'must be empty or {}' }], 'POST /workflows/runs/{id}/resume');
      }
      const caller = { kind: 'http', id: `${ctx.id}@${req.socket.remoteAddress ?? 'unknown'}` };
      let result: WorkflowResult;
      try {
        await this.#workflows.status(id);
      } catch (err) {
        if (CorralError.is(err, ErrorCodes.INPUT_VALIDATION)) return this.#noRun(res, ctx);
        throw err;
      }
      try {
        result = await this.#workflows.resume(id, caller);
      } catch (err) {
        return this.#workflowError(res, ctx, err);
      }
      this.#sendRun(res, ctx, result);
    } finally {
      this.#inflight--;
    }
  }

  #noRun(res: ServerResponse, ctx: RequestContext): void {
    this.#fail(res, ctx, 404, HttpErrorCodes.NOT_FOUND, NO_RUN, {});
  }

  /** A WorkflowResult: 200 whether the run succeeded, failed or waits (read `status`); Location names the run. */
  #sendRun(res: ServerResponse, ctx: RequestContext, result: WorkflowResult): void {
    if (result.error) ctx.errorCode = result.error.code;
    res.setHeader('Location', `/workflows/runs/${encodeURIComponent(result.runId)}`);
    if (this.#draining) res.setHeader('Connection', 'close');
    send(res, 200, result);
  }

  /** A run or resume that could not start (bad inputs) or go on (another process drives it, the store failed). */
  #workflowError(res: ServerResponse, ctx: RequestContext, err: unknown): void {
    if (!CorralError.is(err)) throw err;
    if (err.code === ErrorCodes.INPUT_VALIDATION)
      return this.#fail(res, ctx, 422, ErrorCodes.INPUT_VALIDATION, err.message, err.details as WireErrorDetails<'E_INPUT_VALIDATION'>);
    if (err.code === ErrorCodes.STORE && (err.details as { reason?: string }).reason === 'conflict')
      return this.#fail(res, ctx, 409, HttpErrorCodes.CONFLICT, err.message, { reason: 'run_driven_elsewhere' });
    if (err.code === ErrorCodes.RESOURCE_EXHAUSTED) {
      res.setHeader('Retry-After', '60');
      return this.#fail(res, ctx, 503, ErrorCodes.RESOURCE_EXHAUSTED, err.message, err.details as WireErrorDetails<'E_RESOURCE_EXHAUSTED'>);
    }
    if (err.code === ErrorCodes.CANCELLED || err.code === ErrorCodes.CLOSED) {
      res.setHeader('Retry-After', '5');
      return this.#fail(
        res,
        ctx,
        503,
        ErrorCodes.CLOSED,
        `The server stopped the run; POST /workflows/runs/ID/resume continues it. ${err.message}`,
        {},
      );
    }
    throw err;
  }

  /** A call's result in the metrics: calls, errors, latency, and policy denials by reason. */
  #count(result: InvokeResult, seconds: number): void {
    this.metrics.call(result.version !== null ? result.tool : '_unknown', result, seconds);
    if (result.error?.code === ErrorCodes.POLICY_DENIED) this.metrics.policyDenial(result.error.details?.reason);
  }

  /** 202: the call waits for approval; Location is where to follow it. */
  async #accepted(res: ServerResponse, id: string): Promise<void> {
    const approval = await this.#gate.store.getApproval(id);
    if (!approval) throw new Error(`approval ${id} vanished from the store`);
    res.setHeader('Location', `/approvals/${id}`);
    res.setHeader('Retry-After', '5');
    if (this.#draining) res.setHeader('Connection', 'close');
    send(res, 202, {
      approval: approvalView(approval),
      message:
        `${approval.tool}@${approval.version} waits for a person's approval (${id}): corral approve ${id}, or POST /approvals/${id} ` +
        `with the approver token. GET /approvals/${id} shows its status and, once it ran, its result.`,
    });
  }

  /** GET /approvals/{id}: the approval, its input, and its call's result once this server ran it. */
  async #showApproval(res: ServerResponse, path: string, ctx: RequestContext): Promise<void> {
    const id = path.slice('/approvals/'.length);
    let approval = APPROVAL_ID.test(id) ? await this.#gate.store.getApproval(id) : null;
    if (!approval)
      return this.#fail(res, ctx, 404, HttpErrorCodes.NOT_FOUND, 'No approval with that id. GET /approvals lists the pending ones.', {});
    ctx.approvalId = id;
    if (approval.status === 'pending' && BigInt(nowNs()) >= BigInt(approval.expires_ns))
      approval =
        (await this.#gate.store.updateApproval(id, ['pending'], { status: 'expired' })) ?? (await this.#gate.store.getApproval(id))!;
    const result = this.#results.get(id);
    send(res, 200, { approval: approvalView(approval, true), ...(result ? { result } : {}) });
  }

  /**
   * POST /approvals/{id} {decision, comment?, scope?}: a person's decision,
   * with the approver token only. The agent holds the API token; if that
   * token could approve, the agent could approve its own calls.
   */
  async #decide(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    ctx: RequestContext,
    credential: 'none' | 'api' | 'approver' | 'invalid',
  ): Promise<void> {
    if (credential !== 'approver') {
      if (this.#token && credential !== 'api') return this.#unauthorized(req, res, ctx);
      if (!this.#approverToken)
        return this.#refuse(
          req,
          res,
          ctx,
          403,
          HttpErrorCodes.FORBIDDEN,
          'Approvals over HTTP need an approver token: start the server with --approver-token-file FILE (or CORRAL_APPROVER_TOKEN), or decide with: corral approve ID',
          { reason: 'no_approver_token' },
        );
      if (credential === 'api')
        return this.#refuse(
          req,
          res,
          ctx,
          403,
          HttpErrorCodes.FORBIDDEN,
          'The API token cannot decide approvals (whoever calls tools must not approve them): use the approver token, or corral approve ID.',
          { reason: 'api_token_cannot_approve' },
        );
      return this.#unauthorized(req, res, ctx);
    }
    const id = path.slice('/approvals/'.length);
    if (!APPROVAL_ID.test(id))
      return this.#refuse(
        req,
        res,
        ctx,
        404,
        HttpErrorCodes.NOT_FOUND,
        'No approval with that id. GET /approvals lists the pending ones.',
        {},
      );
    ctx.approvalId = id;
    const body = await this.#readJson(req, res, ctx);
    if (body === undefined) return;
    const problems: Problem[] = [];
    const decision = checkDecisionBody(body, problems);
    if (!decision) return this.#badRequest(res, ctx, problems, 'POST /approvals/{id}');
    const approval = await this.#gate.store.getApproval(id);
    if (!approval)
      return this.#fail(res, ctx, 404, HttpErrorCodes.NOT_FOUND, 'No approval with that id. GET /approvals lists the pending ones.', {});
    const by = `http-approver@${req.socket.remoteAddress ?? 'unknown'}`;
    let decided: Awaited<ReturnType<PolicyGate['decide']>>;
    try {
      decided = await this.#gate.decide(id, decision.decision, {
        by,
        ...(decision.comment !== undefined ? { comment: decision.comment } : {}),
        ...(decision.scope !== undefined ? { scope: decision.scope } : {}),
      });
    } catch (err) {
      if (!CorralError.is(err, ErrorCodes.INPUT_VALIDATION)) throw err;
      // Decided already (here, by corral approve, or it expired): 409 with its status; a scope wider than the policy lets: 400.
      const { approval_id, status } = err.details;
      if (typeof status === 'string')
        return this.#fail(res, ctx, 409, HttpErrorCodes.CONFLICT, err.message, {
          reason: 'not_pending',
          status,
          ...(approval_id !== undefined ? { approval_id } : {}),
        });
      return this.#fail(res, ctx, 400, ErrorCodes.INPUT_VALIDATION, err.message, { ...err.details, reason: 'bad_decision' });
    }
    // A call whose request is gone runs now, not at the runner's next look; a workflow run waiting on this goes on.
    if (isWorkflowApproval(decided)) this.#workflows.continueRun(decided.workflow_run_id!);
    else if (decided.status === 'approved') this.#runner.kick();
    send(res, 200, { approval: approvalView(decided) });
  }

  #resolve(ref: string): Tool | undefined {
    try {
      return this.#corral.registry.resolve(ref);
    } catch {
      return undefined; // invoke records and answers E_TOOL_NOT_FOUND
    }
  }

  async #mcpRequest(req: IncomingMessage, res: ServerResponse, method: string, ctx: RequestContext): Promise<void> {
    const mcp = this.#mcp!;
    if (this.#draining) {
      res.setHeader('Retry-After', '5');
      return this.#refuse(req, res, ctx, 503, ErrorCodes.CLOSED, 'The server is shutting down.', {});
    }
    if (method !== 'POST') return mcp.handle(req, res);
    const text = await this.#readText(req, res, ctx);
    if (text === undefined) return;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      // What the MCP SDK answers for a body that is not JSON.
      ctx.errorCode = 'PARSE_ERROR';
      return send(res, 400, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is not JSON' }, id: null });
    }
    return mcp.handle(req, res, body);
  }

  /** The body as JSON, or undefined once an error was sent. */
  async #readJson(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): Promise<unknown> {
    const type = (req.headers['content-type'] ?? '').toLowerCase();
    const [mediaType, ...params] = type.split(';').map((p) => p.trim());
    const charset = params
      .find((p) => p.startsWith('charset='))
      ?.slice('charset='.length)
      .replace(/"/g, '');
    if (mediaType !== 'application/json' || (charset !== undefined && charset !== 'utf-8')) {
      this.#refuse(req, res, ctx, 415, ErrorCodes.INPUT_VALIDATION, 'Send the body as JSON, with "Content-Type: application/json".', {
        reason: 'unsupported_media_type',
        content_type: type.slice(0, 100),
      });
      return undefined;
    }
    const text = await this.#readText(req, res, ctx);
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text);
    } catch (err) {
      this.#fail(res, ctx, 400, ErrorCodes.INPUT_VALIDATION, `The body is not valid JSON: ${(err as Error).message.slice(0, 200)}`, {
        reason: 'body_not_json',
      });
      return undefined;
    }
  }

  /** The body as UTF-8 text within the size limit, or undefined once an error was sent (or the client left). */
  async #readText(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): Promise<string | undefined> {
    const tooLarge = () =>
      this.#refuse(
        req,
        res,
        ctx,
        413,
        ErrorCodes.INPUT_VALIDATION,
        `The body is larger than ${this.#maxBody} bytes, this server's limit (--max-body-mb).`,
        { reason: 'body_too_large', max_body_bytes: this.#maxBody },
      );
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.#maxBody) {
      tooLarge();
      return undefined;
    }
    const bytes = await readBody(req, this.#maxBody);
    if (bytes === 'gone') return undefined;
    if (bytes === 'too_large') {
      tooLarge();
      return undefined;
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      this.#fail(res, ctx, 400, ErrorCodes.INPUT_VALIDATION, 'The body is not valid UTF-8.', { reason: 'body_not_utf8' });
      return undefined;
    }
  }

  #badRequest(res: ServerResponse, ctx: RequestContext, problems: Problem[], what = 'POST /execute'): void {
    const shown = problems
      .slice(0, 5)
      .map((p) => `${p.path} ${p.message}`)
      .join('; ');
    this.#fail(res, ctx, 400, ErrorCodes.INPUT_VALIDATION, `The request body is not what ${what} takes: ${shown}.`, {
      reason: 'bad_request_body',
      problems,
    });
  }

  /** An error answer once the body was read (or needs no reading). */
  #fail<C extends ErrorCode | HttpErrorCode>(
    res: ServerResponse,
    ctx: RequestContext,
    status: number,
    code: C,
    message: string,
    details: WireErrorDetails<C>,
    retryable = false,
  ): void {
    ctx.errorCode = code;
    this.metrics.requestError(code);
    send(res, status, { error: { code, message, details, retryable } });
  }

  /**
   * An error answer that may leave the body unread: the connection is closed
   * after it, and what the client is still sending is read and dropped for a
   * moment first (up to LINGER_BYTES or LINGER_MS), so it sees the answer
   * rather than a reset.
   */
  #refuse<C extends ErrorCode | HttpErrorCode>(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    status: number,
    code: C,
    message: string,
    details: WireErrorDetails<C>,
    retryable = false,
  ): void {
    const unread = !req.complete && hasBody(req);
    if (unread) res.setHeader('Connection', 'close');
    this.#fail(res, ctx, status, code, message, details, retryable);
    if (!unread) return;
    const socket = req.socket;
    // Node ends a "Connection: close" answer with destroySoon(), which closes the socket outright: the
    // body still on its way then meets a reset, and clients such as fetch() report that, not the answer.
    // Close in stages instead (RFC 9112 §9.6): the write side once the answer is out, reading on a moment.
    socket.destroySoon = () => {
      if (socket.writable) socket.end();
    };
    let dropped = 0;
    const stop = () => {
      clearTimeout(timer);
      socket.destroy();
    };
    const timer = setTimeout(stop, LINGER_MS);
    timer.unref();
    req.removeAllListeners('data');
    req.on('data', (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > LINGER_BYTES) stop();
    });
    // The whole body is in: nothing more to wait for once the answer is written.
    req.once('end', () => {
      if (socket.writableFinished) stop();
      else socket.once('finish', stop);
    });
    req.resume();
  }
}

/**
 * Throws CorralError E_INPUT_VALIDATION (`details.option` names the option)
 * with a sentence saying what to change when the options cannot make a safe
 * server: a bad number, a weak token, or no token for an address beyond
 * loopback. `start` runs it; the CLI runs it before it starts any worker.
 */
export async function checkHttpServerOptions(options: HttpServerOptions): Promise<void> {
  const refuse = (option: string, message: string): never => {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, message, { option });
  };
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    refuse(
      'options',
      `the server's options must be an object (got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options})`,
    );
  const known = Object.keys(HTTP_SERVER_OPTIONS);
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined || Object.hasOwn(HTTP_SERVER_OPTIONS, name)) continue;
    const near = closest(name, known);
    refuse(name, `${name} is not an option of the HTTP server${near ? `: did you mean ${near}?` : ''} (options: ${known.join(', ')})`);
  }
  const host = options.host ?? DEFAULT_HTTP_HOST;
  const port = options.port ?? DEFAULT_HTTP_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65535) refuse('port', `port must be an integer from 0 to 65535 (got ${port})`);
  for (const [name, value] of [
    ['maxBodyBytes', options.maxBodyBytes],
    ['concurrency', options.concurrency],
    ['shutdownTimeoutMs', options.shutdownTimeoutMs],
  ] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= (name === 'shutdownTimeoutMs' ? 0 : 1)))
      refuse(name, `${name} must be a positive integer (got ${value})`);
  }
  if (
    options.approvalWaitMs !== undefined &&
    !(Number.isSafeInteger(options.approvalWaitMs) && options.approvalWaitMs >= 0 && options.approvalWaitMs <= MAX_APPROVAL_WAIT_MS)
  )
    refuse(
      'approvalWaitMs',
      `approvalWaitMs must be a whole number of milliseconds from 0 to ${MAX_APPROVAL_WAIT_MS} (got ${options.approvalWaitMs})`,
    );
  if (options.approverToken !== undefined) {
    if (options.approverToken.length < MIN_TOKEN_LENGTH || /\s/.test(options.approverToken))
      refuse(
        'approverToken',
        `the approver token must be at least ${MIN_TOKEN_LENGTH} characters, without spaces (e.g. openssl rand -hex 32)`,
      );
    if (options.approverToken === options.token)
      refuse(
        'approverToken',
        'the approver token must differ from the API token: whoever holds the API token (the agent) could otherwise approve its own calls',
      );
  }
  if (options.token !== undefined) {
    if (options.token.length < MIN_TOKEN_LENGTH || /\s/.test(options.token))
      refuse('token', `the bearer token must be at least ${MIN_TOKEN_LENGTH} characters, without spaces (e.g. openssl rand -hex 32)`);
  } else if (!(await resolvesToLoopbackOnly(host))) {
    refuse(
      'token',
      `refusing to serve on ${host} without a token: anyone who can reach it could run tools. ` +
        'Give a bearer token (--token-file FILE or CORRAL_TOKEN), or bind to 127.0.0.1.',
    );
  }
}

/** Every option of HttpServerOptions, so a misspelt one is refused rather than dropped. */
const HTTP_SERVER_OPTIONS: { readonly [K in keyof Required<HttpServerOptions>]: true } = {
  host: true,
  port: true,
  token: true,
  maxBodyBytes: true,
  concurrency: true,
  shutdownTimeoutMs: true,
  allowedHosts: true,
  log: true,
  mcp: true,
  gate: true,
  approverToken: true,
  approvalWaitMs: true,
  workflows: true,
};

/** Start Corral's HTTP API for `corral` (see CorralHttpServer and HttpServerOptions). */
export function startHttpServer(corral: Corral, options: HttpServerOptions = {}): Promise<CorralHttpServer> {
  return CorralHttpServer.start(corral, options);
}

interface RequestContext {
  id: string;
  route: string;
  tool: string | undefined;
  errorCode: string | undefined;
  snapshotId: string | undefined;
  approvalId: string | undefined;
}

interface Problem {
  path: string;
  message: string;
}

/** Whether a request carries a body at all (RFC 9112 §6.3). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/** A caller's X-Request-Id when it is short and plain, else a new UUID. */
function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && /^[A-Za-z0-9._:-]{1,64}$/.test(given) ? given : randomUUID();
}

/** The path of a request target, without the query; '' for anything that is not origin-form. */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return path.startsWith('/') ? path : '';
}

/** The route template a path matches, or "other". Exact paths: no decoding, no dot segments. */
function routeOf(path: string, mcp: boolean): string {
  switch (path) {
    case '/execute':
    case '/tools':
    case '/openapi.json':
    case '/healthz':
    case '/metrics':
      return path;
    case '/approvals':
      return path;
    case '/mcp':
      return mcp ? path : 'other';
    case '/workflows':
      return path;
  }
  if (path.startsWith('/workflows/')) {
    // /workflows/{name}/runs, /workflows/runs/{id}, /workflows/runs/{id}/resume ('runs' is no workflow's name).
    const parts = path.slice('/workflows/'.length).split('/');
    if (parts.some((p) => p === '')) return 'other';
    if (parts[0] === 'runs') {
      if (parts.length === 2) return '/workflows/runs/{id}';
      if (parts.length === 3 && parts[2] === 'resume') return '/workflows/runs/{id}/resume';
      return 'other';
    }
    return parts.length === 2 && parts[1] === 'runs' ? '/workflows/{name}/runs' : 'other';
  }
  for (const [prefix, route] of [
    ['/execute/', '/execute/{name}'],
    ['/approvals/', '/approvals/{id}'],
  ] as const) {
    if (path.startsWith(prefix) && path.length > prefix.length && !path.slice(prefix.length).includes('/')) return route;
  }
  return 'other';
}

function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * The body of POST /execute (or /execute/{name}, whose name comes from the
 * path): `{ tool, input, timeout_ms? }` and nothing else. Every problem is
 * collected, each with its JSON pointer.
 */
function checkExecuteBody(
  body: unknown,
  fromPath: string | undefined,
  problems: Problem[],
): { tool: string; input: unknown; timeoutMs: number | undefined; mounts: Record<string, RequestedBinding> | undefined } | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    problems.push({
      path: '/',
      message: `must be an object (got ${body === null ? 'null' : Array.isArray(body) ? 'an array' : typeof body})`,
    });
    return undefined;
  }
  const b = body as Record<string, unknown>;
  const allowed = fromPath === undefined ? ['tool', 'input', 'mounts', 'timeout_ms'] : ['input', 'mounts', 'timeout_ms'];
  for (const key of Object.keys(b)) {
    if (!allowed.includes(key)) {
      const shown = JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key);
      problems.push({ path: '/', message: `has an unknown key ${shown} (allowed: ${allowed.join(', ')})` });
      if (problems.length >= 20) break;
    }
  }
  const tool = fromPath ?? b.tool;
  const at = fromPath === undefined ? '/tool' : 'the path';
  if (typeof tool !== 'string') {
    problems.push({ path: '/tool', message: tool === undefined ? 'is required' : 'must be a string' });
  } else if (tool.length === 0 || tool.length > MAX_TOOL_REF) {
    problems.push({ path: at, message: `must be a tool name of 1 to ${MAX_TOOL_REF} characters` });
  } else if (hasControlCharacter(tool)) {
    problems.push({ path: at, message: 'must not contain control characters' });
  }
  if (!Object.hasOwn(b, 'input')) problems.push({ path: '/input', message: "is required (the tool's input, e.g. {})" });
  const timeout = b.timeout_ms;
  if (timeout !== undefined && !(typeof timeout === 'number' && Number.isSafeInteger(timeout) && timeout >= 1)) {
    problems.push({ path: '/timeout_ms', message: 'must be a positive integer number of milliseconds' });
  }
  const mounts = b.mounts === undefined ? undefined : checkMounts(b.mounts, problems);
  if (problems.length > 0) return undefined;
  return { tool: tool as string, input: b.input, timeoutMs: timeout as number | undefined, mounts };
}

/** A JSON pointer token (RFC 6901), cut short: keys come from the caller. */
const pointer = (key: string) => (key.length > 64 ? `${key.slice(0, 64)}…` : key).replace(/~/g, '~0').replace(/\//g, '~1');

/** A guest mount path as specs write them: /name[/name…], no '.', '..' or empty segments. */
function isGuestPath(v: string): boolean {
  return (
    v.length > 1 &&
    v.length <= 256 &&
    v.startsWith('/') &&
    !v.includes('\0') &&
    v
      .slice(1)
      .split('/')
      .every((s) => s !== '' && s !== '.' && s !== '..')
  );
}

const isHostPath = (v: unknown): v is string =>
  typeof v === 'string' && v.startsWith('/') && v.length <= MAX_HOST_PATH && !v.includes('\0');

/**
 * `mounts` of POST /execute: declared guest mount → absolute host folder, or
 * → { folder, access? }. Only the shape is checked here; whether the tool
 * declares the mount and the policy grants the folder is the gate's to say
 * (403, recorded in the audit trail).
 */
function checkMounts(value: unknown, problems: Problem[]): Record<string, RequestedBinding> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push({
      path: '/mounts',
      message: 'must be an object mapping guest mounts to host folders, e.g. {"/workspace": "/home/ada/src"}',
    });
    return undefined;
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_MOUNTS) {
    problems.push({ path: '/mounts', message: `binds more than ${MAX_MOUNTS} mounts` });
    return undefined;
  }
  const out: Record<string, RequestedBinding> = {};
  const before = problems.length;
  for (const [guest, binding] of entries) {
    const at = `/mounts/${pointer(guest)}`;
    if (!isGuestPath(guest)) {
      problems.push({ path: at, message: "is not a guest mount path like /workspace (no '.', '..' or empty segments)" });
      continue;
    }
    const pathProblem = `must be an absolute host folder of at most ${MAX_HOST_PATH} characters, without NUL`;
    let checked: RequestedBinding | undefined;
    if (typeof binding === 'string') {
      if (isHostPath(binding)) checked = binding;
      else problems.push({ path: at, message: pathProblem });
    } else if (typeof binding === 'object' && binding !== null && !Array.isArray(binding)) {
      const b = binding as Record<string, unknown>;
      const unknown = Object.keys(b).filter((k) => k !== 'folder' && k !== 'access');
      if (unknown.length > 0)
        problems.push({ path: at, message: `has an unknown key ${JSON.stringify(unknown[0]!.slice(0, 64))} (allowed: folder, access)` });
      if (!isHostPath(b.folder)) problems.push({ path: `${at}/folder`, message: b.folder === undefined ? 'is required' : pathProblem });
      if (b.access !== undefined && b.access !== 'read' && b.access !== 'read-write')
        problems.push({ path: `${at}/access`, message: "must be 'read' or 'read-write'" });
      if (unknown.length === 0 && isHostPath(b.folder))
        checked = b.access === undefined ? { folder: b.folder } : { folder: b.folder, access: b.access as 'read' | 'read-write' };
    } else {
      problems.push({ path: at, message: 'must be a host folder, or {folder, access}' });
    }
    if (checked !== undefined) Object.defineProperty(out, guest, { value: checked, enumerable: true, writable: true, configurable: true });
    if (problems.length >= 20) break;
  }
  return problems.length > before ? undefined : out;
}

/** Whether a call that waited for approval left it pending: nobody decided in time, or the wait was stopped before it ran. */
function stillWaiting(result: InvokeResult, phase: 'policy' | 'approval' | 'running'): boolean {
  const error = result.error;
  if (!error || phase !== 'approval') return false;
  return (error.code === ErrorCodes.POLICY_DENIED && error.details?.reason === 'approval_timeout') || error.code === ErrorCodes.CANCELLED;
}

/**
 * How long the client is willing to wait, from its Prefer header (RFC 7240):
 * `respond-async` is 0, `wait=N` is N seconds. It may shorten the server's
 * approval wait, never lengthen it. Anything else is ignored.
 */
function preferredWaitMs(given: string | string[] | undefined): number | undefined {
  const header = Array.isArray(given) ? given.join(',') : given;
  if (header === undefined || header.length > 1024) return undefined;
  let ms: number | undefined;
  for (const preference of header.split(',')) {
    const [token = '', value] = preference
      .split(';')[0]!
      .split('=')
      .map((p) => p.trim().toLowerCase());
    if (token === 'respond-async' && value === undefined) ms = 0;
    else if (token === 'wait' && value !== undefined && /^\d{1,9}$/.test(value))
      ms = Math.min(ms ?? Number.POSITIVE_INFINITY, Number(value) * 1000);
  }
  return ms;
}

const NO_RUN = 'No workflow run with that id. POST /workflows/{name}/runs answers a run id.';

/** The body of POST /workflows/{name}/runs: {inputs?} and nothing else. The inputs themselves are the run's to check. */
function checkRunBody(body: unknown, problems: Problem[]): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    problems.push({ path: '/', message: 'must be an object like {"inputs": {…}}' });
    return {};
  }
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    if (key !== 'inputs') {
      problems.push({ path: '/', message: `has an unknown key ${JSON.stringify(key.slice(0, 64))} (allowed: inputs)` });
      if (problems.length >= 20) break;
    }
  }
  if (b.inputs === undefined) return {};
  if (typeof b.inputs !== 'object' || b.inputs === null || Array.isArray(b.inputs)) {
    problems.push({ path: '/inputs', message: 'must be an object of input names to values' });
    return {};
  }
  return b.inputs as Record<string, unknown>;
}

/** A workflow as GET /workflows lists it: what a caller needs to run it. */
function describeWorkflow(w: Workflow) {
  return {
    name: w.name,
    description: w.description ?? '',
    inputs: w.inputs ?? {},
    input_schema: workflowInputSchema(w),
    steps: w.steps.length,
  };
}

/** The body of POST /approvals/{id}: {decision, comment?, scope?} and nothing else. */
function checkDecisionBody(
  body: unknown,
  problems: Problem[],
): { decision: 'approve' | 'reject'; comment: string | undefined; scope: ApprovalScope | undefined } | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    problems.push({ path: '/', message: 'must be an object like {"decision": "approve"}' });
    return undefined;
  }
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    if (!['decision', 'comment', 'scope'].includes(key)) {
      problems.push({ path: '/', message: `has an unknown key ${JSON.stringify(key.slice(0, 64))} (allowed: decision, comment, scope)` });
      if (problems.length >= 20) break;
    }
  }
  if (b.decision !== 'approve' && b.decision !== 'reject')
    problems.push({
      path: '/decision',
      message: b.decision === undefined ? "is required: 'approve' or 'reject'" : "must be 'approve' or 'reject'",
    });
  if (b.comment !== undefined && !(typeof b.comment === 'string' && b.comment.length <= 4096))
    problems.push({ path: '/comment', message: 'must be a string of at most 4096 characters' });
  if (b.scope !== undefined && b.scope !== 'once' && b.scope !== 'folder' && b.scope !== 'tool')
    problems.push({ path: '/scope', message: "must be 'once', 'folder' or 'tool'" });
  else if (b.scope !== undefined && b.decision === 'reject')
    problems.push({ path: '/scope', message: 'is for approving; a rejection has none' });
  if (problems.length > 0) return undefined;
  return {
    decision: b.decision as 'approve' | 'reject',
    comment: b.comment as string | undefined,
    scope: b.scope as ApprovalScope | undefined,
  };
}

/** The pending approvals, for the gauge: read from the store at most once a second, however often it is scraped. */
function pendingCounter(gate: PolicyGate): () => Promise<number> {
  let at = Number.NEGATIVE_INFINITY;
  let value = 0;
  let reading: Promise<number> | undefined;
  return () => {
    if (performance.now() - at < 1000) return Promise.resolve(value);
    reading ??= gate.store
      .listApprovals({ status: ['pending'], limit: 100_000 })
      .then((pending) => {
        const now = BigInt(nowNs());
        value = pending.filter((a) => now < BigInt(a.expires_ns)).length;
        at = performance.now();
        return value;
      })
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** Read a request body up to `limit` bytes; stops reading (and keeps nothing) past it. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large' | 'gone'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (value: Buffer | 'too_large' | 'gone') => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('aborted', onGone);
      if (value !== 'too_large') req.resume();
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        req.pause();
        done('too_large');
      } else {
        chunks.push(chunk);
      }
    };
    const onEnd = () => done(Buffer.concat(chunks, size));
    const onGone = () => done('gone');
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('aborted', onGone);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  sendText(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
}

function sendText(res: ServerResponse, status: number, contentType: string, text: string): void {
  if (res.headersSent || res.destroyed) return;
  const bytes = Buffer.from(text, 'utf8');
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': bytes.length,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(bytes);
}

/** A tool as GET /tools lists it: its contract, not where it was loaded from. */
function describeTool(tool: Tool) {
  const { spec } = tool;
  return {
    name: spec.name,
    version: spec.version,
    description: spec.description ?? '',
    kind: spec.kind ?? 'component',
    wasm_sha256: tool.wasmSha256,
    input_schema: spec.input_schema,
    ...(spec.output_schema !== undefined ? { output_schema: spec.output_schema } : {}),
    resources: { ...specDefaults.resources, ...spec.resources },
    mounts: spec.mounts ?? [],
    env: spec.env ?? [],
  };
}

/** True when every address `host` names is loopback (so no token is needed). */
async function resolvesToLoopbackOnly(host: string): Promise<boolean> {
  if (isIP(host.replace(/^\[|\]$/g, '')) !== 0 || host === 'localhost') return isLoopbackAddress(host);
  try {
    const addresses = await lookup(host, { all: true });
    return addresses.length > 0 && addresses.every((a) => isLoopbackAddress(a.address));
  } catch {
    return false;
  }
}

/** The default log: one JSON object per line on stderr, nothing in it able to act on a terminal. */
export function writeLogLine(entry: HttpLogEntry): void {
  process.stderr.write(`${forTerminal(JSON.stringify(entry), { oneLine: true })}\n`);
}
