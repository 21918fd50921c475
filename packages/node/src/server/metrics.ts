/**
 * `GET /metrics` of `corral serve`: Prometheus text through prom-client, in
 * a registry of its own (not prom-client's global one), so two servers in
 * one process, or an application's own metrics, never collide.
 *
 * Every label has a bounded set of values: tools are the registered ones
 * (a name no tool has is counted as "_unknown"), routes are the server's
 * own templates ("other" for any other path), codes are error codes.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { InvokeResult, PolicyDenialReason } from '@corral/core';

/** `details.reason` of E_POLICY_DENIED, the label values of corral_policy_denials_total (anything else counts as "other"). */
const DENIAL_REASONS: readonly PolicyDenialReason[] = [
  'bad_request',
  'policy_invalid',
  'tool_denied',
  'unlisted_tool',
  'undeclared_mount',
  'not_granted',
  'access_not_granted',
  'folder_missing',
  'protected_folder',
  'outside_roots',
  'approval_rejected',
  'approval_expired',
  'approval_revoked',
  'approval_timeout',
  'approval_unavailable',
  'client_closed',
];

/** What the worker pool reports (WorkerPool: SandboxPool's read-only counters). */
export interface PoolStats {
  readonly queued: number;
  readonly running: number;
  readonly workerCount: number;
  readonly replacedWorkers: number;
}

export class HttpMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'route' | 'status'>;
  readonly #requestErrors: Counter<'code'>;
  readonly #calls: Counter<'tool' | 'outcome'>;
  readonly #callErrors: Counter<'tool' | 'code'>;
  readonly #callSeconds: Histogram<'tool' | 'outcome'>;
  readonly #snapshotErrors: Counter<'tool'>;
  readonly #denials: Counter<'reason'>;

  /** `pendingApprovals`: how many calls wait for a person's approval (read when scraped). */
  constructor(pool: PoolStats | undefined, inflight: () => number, pendingApprovals?: () => Promise<number>) {
    const registers = [this.registry];
    this.#requests = new Counter({
      name: 'corral_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status (499: the client left first).',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.#requestErrors = new Counter({
      name: 'corral_http_errors_total',
      help: 'Requests refused before reaching a tool, by error code (E_INPUT_VALIDATION for a bad body, E_UNAUTHORIZED, E_RESOURCE_EXHAUSTED when full, …).',
      labelNames: ['code'],
      registers,
    });
    this.#calls = new Counter({
      name: 'corral_calls_total',
      help: 'Tool calls that returned a result envelope, by tool and outcome (ok or error).',
      labelNames: ['tool', 'outcome'],
      registers,
    });
    this.#callErrors = new Counter({
      name: 'corral_call_errors_total',
      help: 'Tool calls whose envelope carries an error, by tool and error code.',
      labelNames: ['tool', 'code'],
      registers,
    });
    this.#callSeconds = new Histogram({
      name: 'corral_call_duration_seconds',
      help: 'Wall-clock time of a tool call from the request being read to its result, waiting for a worker included.',
      labelNames: ['tool', 'outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.#snapshotErrors = new Counter({
      name: 'corral_snapshot_errors_total',
      help: 'Calls whose execution snapshot could not be written durably (their envelope says so in snapshot.error).',
      labelNames: ['tool'],
      registers,
    });
    this.#denials = new Counter({
      name: 'corral_policy_denials_total',
      help: 'Calls the policy refused (E_POLICY_DENIED, answered 403), by details.reason: not_granted, protected_folder, approval_rejected, ….',
      labelNames: ['reason'],
      registers,
    });
    if (pendingApprovals) {
      new Gauge({
        name: 'corral_approvals_pending',
        help: "Calls waiting for a person's approval, in the store this server keeps approvals in (asked over HTTP, MCP or by any process sharing it).",
        registers,
        async collect() {
          try {
            this.set(await pendingApprovals());
          } catch {
            // A store that cannot be read now: the last value stands.
          }
        },
      });
    }
    new Gauge({
      name: 'corral_http_inflight_calls',
      help: 'POST /execute requests admitted and not yet answered (reading the body, waiting for a worker, or running).',
      registers,
      collect() {
        this.set(inflight());
      },
    });
    if (pool) {
      new Gauge({
        name: 'corral_queue_depth',
        help: 'Calls waiting for a sandbox worker.',
        registers,
        collect() {
          this.set(pool.queued);
        },
      });
      new Gauge({
        name: 'corral_calls_running',
        help: 'Calls running on a sandbox worker.',
        registers,
        collect() {
          this.set(pool.running);
        },
      });
      new Gauge({
        name: 'corral_workers',
        help: 'Sandbox workers alive (busy or idle).',
        registers,
        collect() {
          this.set(pool.workerCount);
        },
      });
      let reported = 0;
      new Counter({
        name: 'corral_worker_restarts_total',
        help: 'Sandbox workers stopped and replaced because their call timed out, was cancelled while running, or crashed them.',
        registers,
        collect() {
          const now = pool.replacedWorkers;
          if (now > reported) this.inc(now - reported);
          reported = now;
        },
      });
    }
    collectDefaultMetrics({ register: this.registry });
  }

  request(method: string, route: string, status: number): void {
    this.#requests.inc({ method, route, status: String(status) });
  }

  requestError(code: string): void {
    this.#requestErrors.inc({ code });
  }

  /** `tool`: the registered tool's name, or "_unknown" when none matched. */
  call(tool: string, result: InvokeResult, seconds: number): void {
    const outcome = result.ok ? 'ok' : 'error';
    this.#calls.inc({ tool, outcome });
    this.#callSeconds.observe({ tool, outcome }, seconds);
    if (result.error) this.#callErrors.inc({ tool, code: result.error.code });
    if (result.snapshot?.error) this.#snapshotErrors.inc({ tool });
  }

  /** A call the policy refused; `reason` is its details.reason. */
  policyDenial(reason: unknown): void {
    this.#denials.inc({ reason: DENIAL_REASONS.includes(reason as PolicyDenialReason) ? (reason as string) : 'other' });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
