/**
 * `GET /metrics` of `corral worker --metrics HOST:PORT`: Prometheus text
 * through prom-client, in a registry of its own, as `corral serve` does
 * (the call metrics have the same names and labels, so one dashboard reads
 * both). Counted from the FleetWorker's events.
 *
 * Every label has a bounded set of values: a tool is a registered one (a
 * name no tool here has, which anyone who can publish may send, counts as
 * "_unknown"), an outcome is ok or error, a code is a Corral error code
 * ("other" for anything else).
 */
import { createServer, type Server } from 'node:http';
import { ErrorCodes } from '@corral/core';
import type { FleetWorker, WorkerEvent } from '@corral/fleet';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PoolStats } from './metrics.js';

const CODES = new Set<string>(Object.values(ErrorCodes));

export class WorkerMetrics {
  readonly registry = new Registry();
  readonly #tools: () => ReadonlySet<string>;
  readonly #calls: Counter<'tool' | 'outcome'>;
  readonly #callErrors: Counter<'tool' | 'code'>;
  readonly #callSeconds: Histogram<'tool' | 'outcome'>;
  readonly #fromRecord: Counter<'tool'>;
  readonly #retries: Counter<'tool'>;
  readonly #redeliveries: Counter<'tool'>;
  readonly #refused: Counter;
  readonly #storeErrors: Counter;
  readonly #errors: Counter;

  /** `tools`: the registered tool names (read per event); `worker()`: the FleetWorker, once started. */
  constructor(options: { tools: () => ReadonlySet<string>; pool: PoolStats; worker: () => FleetWorker | undefined; concurrency: number }) {
    this.#tools = options.tools;
    const registers = [this.registry];
    this.#calls = new Counter({
      name: 'corral_calls_total',
      help: 'Tool calls this worker ran, by tool and outcome (ok; error: the sandbox failed the call or the tool exited non-zero).',
      labelNames: ['tool', 'outcome'],
      registers,
    });
    this.#callErrors = new Counter({
      name: 'corral_call_errors_total',
      help: 'Tool calls this worker ran that ended in an error, by tool and error code.',
      labelNames: ['tool', 'code'],
      registers,
    });
    this.#callSeconds = new Histogram({
      name: 'corral_call_duration_seconds',
      help: 'Time a call ran in this worker, waiting for a sandbox worker included (queueing in JetStream not included).',
      labelNames: ['tool', 'outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.#fromRecord = new Counter({
      name: 'corral_fleet_answered_from_record_total',
      help: 'Calls delivered again whose result was already recorded: answered from the record, not run.',
      labelNames: ['tool'],
      registers,
    });
    this.#retries = new Counter({
      name: 'corral_fleet_retries_total',
      help: 'Calls whose intent was recorded without a result (their worker died): run again, recorded as a retry.',
      labelNames: ['tool'],
      registers,
    });
    this.#redeliveries = new Counter({
      name: 'corral_fleet_redelivered_runs_total',
      help: 'Calls this worker ran that JetStream had delivered before (to this or another worker).',
      labelNames: ['tool'],
      registers,
    });
    this.#refused = new Counter({
      name: 'corral_fleet_refused_total',
      help: 'Messages refused as malformed (bad headers or encoding) and terminated, never redelivered.',
      registers,
    });
    this.#storeErrors = new Counter({
      name: 'corral_fleet_store_errors_total',
      help: 'Calls whose intent or result could not be recorded: not acked, so they come back.',
      registers,
    });
    this.#errors = new Counter({
      name: 'corral_fleet_errors_total',
      help: "Failures of the worker's own (a pull from NATS, a reply) that did not lose a call.",
      registers,
    });
    new Gauge({
      name: 'corral_fleet_calls_inflight',
      help: 'Calls this worker is running now.',
      registers,
      collect() {
        this.set(options.worker()?.running ?? 0);
      },
    });
    new Gauge({
      name: 'corral_fleet_concurrency',
      help: 'Calls this worker runs at once at most (its pull lanes).',
      registers,
    }).set(options.concurrency);
    const { pool } = options;
    new Gauge({
      name: 'corral_queue_depth',
      help: 'Calls waiting for a sandbox worker in this process.',
      registers,
      collect() {
        this.set(pool.queued);
      },
    });
    new Gauge({
      name: 'corral_calls_running',
      help: 'Calls running on a sandbox worker in this process.',
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
    collectDefaultMetrics({ register: this.registry });
  }

  #tool(name: string): string {
    return this.#tools().has(name) ? name : '_unknown';
  }

  /** Count one of the FleetWorker's events. */
  event(e: WorkerEvent): void {
    switch (e.event) {
      case 'run':
        if (e.retry) this.#retries.inc({ tool: this.#tool(e.tool) });
        if (e.delivery > 1) this.#redeliveries.inc({ tool: this.#tool(e.tool) });
        return;
      case 'done': {
        const tool = this.#tool(e.tool);
        // A tool that exits non-zero is E_UNEXPECTED_EXIT to its caller, as the pipeline there will classify it.
        const code = e.error_code ?? (e.exit_code !== null && e.exit_code !== 0 ? ErrorCodes.UNEXPECTED_EXIT : null);
        const outcome = code === null ? 'ok' : 'error';
        this.#calls.inc({ tool, outcome });
        this.#callSeconds.observe({ tool, outcome }, e.duration_ms / 1000);
        if (code !== null) this.#callErrors.inc({ tool, code: CODES.has(code) ? code : 'other' });
        return;
      }
      case 'recorded':
        this.#fromRecord.inc({ tool: this.#tool(e.tool) });
        return;
      case 'refused':
        this.#refused.inc();
        return;
      case 'store_error':
        this.#storeErrors.inc();
        return;
      case 'error':
      case 'pull_paused':
        this.#errors.inc();
        return;
      case 'pull_resumed':
        return;
    }
  }

  /** Serve GET /metrics on host:port (port 0: any free one); resolves with the address once listening. */
  async listen(host: string, port: number): Promise<{ url: string; server: Server }> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: this server has only GET /metrics\n');
        return;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method not allowed\n');
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
        () => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('The metrics could not be collected\n'),
      );
    });
    // A scraper is one peer among few: no slow client holds a socket for long.
    server.requestTimeout = 10_000;
    server.headersTimeout = 10_000;
    server.maxConnections = 64;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as { address: string; port: number };
    const shown = address.address.includes(':') ? `[${address.address}]` : address.address;
    return { url: `http://${shown}:${address.port}/metrics`, server };
  }
}
