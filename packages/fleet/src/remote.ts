/**
 * `remote()`: an Executor that runs each call in the fleet. The caller's
 * invoke pipeline (input and output checks, policy, its own snapshots) is
 * unchanged; only where the tool runs differs, so `invoke('diff-summary', …)`
 * is the same call, with the same result envelope and error codes, locally
 * or in the fleet.
 */
import {
  CorralError,
  ErrorCodes,
  onAbort,
  type CorralErrorJSON,
  type ExecutionRequest,
  type ExecutionResult,
  type MemoryTree,
} from '@corral/core';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { createInbox, headers, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { connectTo, ensureStream, errorText, serversText, unreachable } from './nats.js';
import type { FleetSide } from './route.js';
import {
  CALLS_PREFIX,
  CANCEL_PREFIX,
  DEFAULT_CONSUMER,
  HEADER_KEY,
  HEADER_MSG_ID,
  HEADER_REPLY,
  MalformedMessage,
  STREAM,
  decodeReply,
  encodeCall,
  isCallKey,
  isToolName,
} from './protocol.js';

export interface RemoteOptions {
  /** NATS server URL(s); the executor connects on its first call and closes on close(). */
  servers?: string | string[];
  /** Or a connection the caller owns (left open on close()). */
  connection?: NatsConnection;
  /** How long a call may wait in the queue for a free worker, on top of its own time limit. Default 30000. */
  queueTimeoutMs?: number;
  /** The workers' durable consumer, whose backlog queueDepth() reads. Default 'corral-workers'. */
  consumer?: string;
}

interface Pending {
  outputLimitBytes: number;
  /** Cancel it in the fleet (and take it out of the stream if still queued). */
  giveUp: () => void;
  resolve: (result: ExecutionResult) => void;
  reject: (err: CorralError) => void;
}

/** While the fleet is unreachable, how often reachable() tries to connect again (in the background). */
const RECONNECT_CHECK_MS = 2000;
/** How often the queue depth is read from JetStream, and how old a reading may be before it counts as unknown. */
const DEPTH_REFRESH_MS = 1000;
const DEPTH_STALE_MS = 10_000;

/** How long a call's publish is retried while the servers do not answer. */
const PUBLISH_RETRY_MS = 10_000;

/** Room left in a message for its headers and framing. */
const HEADROOM_BYTES = 4096;

export class RemoteExecutor implements FleetSide {
  readonly #options: RemoteOptions;
  readonly #servers: string;
  readonly #queueTimeoutMs: number;
  readonly #pending = new Map<string, Pending>();
  #ready: Promise<{ nc: NatsConnection; js: JetStreamClient; jsm: JetStreamManager; inbox: string; sub: Subscription }> | undefined;
  #closed = false;
  /** Connected now (false while the servers are away, undefined before the first try). */
  #up: boolean | undefined;
  #lastTry = 0;
  #depth: { calls: number; at: number } | undefined;
  #depthReading = false;

  constructor(options: RemoteOptions) {
    const bad = (option: string, problem: string): never => {
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `remote: ${option} ${problem}`, { option });
    };
    if (typeof options !== 'object' || options === null) bad('options', 'must be an object');
    if ((options.servers === undefined) === (options.connection === undefined)) bad('servers', 'or connection is needed (one of them)');
    this.#servers = options.servers !== undefined ? serversText(options.servers, 'remote') : 'the given connection';
    const q = options.queueTimeoutMs;
    if (q !== undefined && !(Number.isInteger(q) && q >= 0 && q <= 86_400_000))
      bad('queueTimeoutMs', 'must be a whole number of milliseconds (0 to a day)');
    this.#queueTimeoutMs = q ?? 30_000;
    if (options.consumer !== undefined && !(typeof options.consumer === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(options.consumer)))
      bad('consumer', 'must be letters, digits, _ or - (at most 64)');
    this.#options = options;
  }

  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    if (this.#closed) throw closedError();
    const { tool, signal } = request;
    if (signal?.aborted) throw cancelled(signal);
    const name = tool.spec.name;
    if (!isToolName(name)) {
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Tool name '${name}' cannot be sent to the fleet: it is not a valid tool name`, {
        name,
      });
    }
    const mounts = request.mounts.map((m) => {
      const source = m.source ?? { kind: 'memory', tree: {} };
      if (source.kind !== 'memory') {
        throw new CorralError(
          ErrorCodes.INPUT_VALIDATION,
          `Mount ${m.guest} is a '${source.kind}' mount, which the fleet cannot open: a worker runs on another machine and sees none of this one's folders. Bind an in-memory tree ({ kind: 'memory', tree }) or run the call locally`,
          { guest: m.guest, kind: source.kind, supported_kinds: ['memory'] },
        );
      }
      return { guest: m.guest, access: m.access, tree: (source as { tree?: MemoryTree }).tree ?? {} };
    });
    const waitMs = request.timeoutMs + this.#queueTimeoutMs;
    const body = encodeCall({
      tool: name,
      version: tool.spec.version,
      wasm_sha256: tool.wasmSha256,
      stdin: request.stdin,
      args: request.args,
      env: request.env,
      mounts,
      timeout_ms: request.timeoutMs,
      output_limit_bytes: request.outputLimitBytes,
      memory_limit_bytes: request.memoryLimitBytes,
      disk_limit_bytes: request.diskLimitBytes,
      sent_ms: Date.now(),
      wait_ms: waitMs,
    });
    const { nc, js, inbox } = await this.#connection();
    const maxPayload = nc.info?.max_payload ?? Number.POSITIVE_INFINITY;
    if (body.length > maxPayload - HEADROOM_BYTES) {
      throw new CorralError(
        ErrorCodes.RESOURCE_EXHAUSTED,
        `The call to ${name} (${body.length} bytes with its input and mounts) is larger than the fleet's NATS servers carry (max_payload ${maxPayload}); send less or run it locally`,
        { resource: 'fleet', reason: 'message_too_large', message_bytes: body.length, max_payload: maxPayload, servers: this.#servers },
      );
    }

    const key = crypto.randomUUID();
    const h = headers();
    h.set(HEADER_KEY, key);
    h.set(HEADER_MSG_ID, key);
    h.set(HEADER_REPLY, `${inbox}.${key}`);
    return new Promise<ExecutionResult>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      /** The call's place in the stream, once JetStream has stored it. */
      let seq: number | undefined;
      let stopWaiting = () => {};
      const finish = () => {
        clearTimeout(timer);
        stopWaiting();
        this.#pending.delete(key);
      };
      this.#pending.set(key, {
        outputLimitBytes: request.outputLimitBytes,
        giveUp: () => void this.#cancel(key, seq),
        resolve: (r) => {
          finish();
          resolve(r);
        },
        reject: (e) => {
          finish();
          reject(e);
        },
      });
      timer = setTimeout(() => {
        // Nobody answered in time: make sure it does not run later for nobody (out of the queue before the caller hears).
        const given = this.#cancel(key, seq);
        finish();
        const error = new CorralError(
          ErrorCodes.RESOURCE_EXHAUSTED,
          `No fleet worker answered the call to ${name} within ${waitMs} ms (its time limit ${request.timeoutMs} ms plus ${this.#queueTimeoutMs} ms of queueing); are workers running for ${this.#servers}?`,
          { resource: 'fleet', reason: 'no_reply', waited_ms: waitMs, servers: this.#servers },
        );
        void given.finally(() => reject(error));
      }, waitMs);
      // A server restarting or a failover: publish again with the same Nats-Msg-Id (JetStream
      // stores it once) for up to PUBLISH_RETRY_MS, then the fleet counts as unreachable.
      const firstTry = Date.now();
      const publish = (): void => {
        js.publish(`${CALLS_PREFIX}${name}`, body, { msgID: key, headers: h }).then(
          (ack) => {
            seq = ack.seq;
            // Given up on before JetStream answered: take it back out now.
            if (!this.#pending.has(key)) void this.#cancel(key, seq);
          },
          (err: unknown) => {
            if (!this.#pending.has(key)) return;
            if (Date.now() - firstTry < PUBLISH_RETRY_MS && !nc.isClosed()) {
              setTimeout(publish, 250);
              return;
            }
            // JetStream may have stored it without its ack reaching us: tell any worker that takes it later not to run it.
            void this.#cancel(key);
            finish();
            reject(unreachable(this.#servers, err));
          },
        );
      };
      // Cancelled while connecting too (then at once, and nothing is sent).
      if (signal)
        stopWaiting = onAbort(signal, () => {
          void this.#cancel(key, seq);
          finish();
          reject(cancelled(signal));
        });
      if (this.#pending.has(key)) publish();
    });
  }

  /**
   * Whether the fleet can take a call now, without waiting: true while
   * connected. While it is not, a connection is tried again in the
   * background (every 2 s at most), so a fleet that comes back is used again.
   */
  reachable(): boolean {
    if (this.#closed) return false;
    if (this.#up) return true;
    if (!this.#ready && Date.now() - this.#lastTry >= RECONNECT_CHECK_MS) {
      this.#lastTry = Date.now();
      this.#connection().catch(() => {});
    }
    return false;
  }

  /** Calls waiting in the fleet's queue (not yet taken by a worker), from a reading at most ~1 s old; undefined when unknown. */
  queueDepth(): number | undefined {
    const now = Date.now();
    if (this.#up && !this.#depthReading && (!this.#depth || now - this.#depth.at >= DEPTH_REFRESH_MS)) {
      this.#depthReading = true;
      void this.#connection()
        .then(({ jsm }) => jsm.consumers.info(STREAM, this.#options.consumer ?? DEFAULT_CONSUMER))
        .then((info) => {
          this.#depth = { calls: info.num_pending, at: Date.now() };
        })
        .catch(() => {
          // No worker has made the consumer yet, or the server is away: unknown.
          this.#depth = undefined;
        })
        .finally(() => {
          this.#depthReading = false;
        });
    }
    return this.#depth && now - this.#depth.at < DEPTH_STALE_MS ? this.#depth.calls : undefined;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const p of this.#pending.values()) {
      p.giveUp();
      p.reject(closedError());
    }
    const ready = this.#ready;
    this.#ready = undefined;
    if (!ready) return;
    try {
      const { nc, sub } = await ready;
      sub.unsubscribe();
      if (this.#options.connection === undefined) await nc.drain();
      else await nc.flush();
    } catch {
      // It never connected, or it is gone already.
    }
  }

  /** One connection and one inbox subscription for the executor's life; a failed attempt is retried by the next call. */
  #connection() {
    this.#ready ??= (async () => {
      const nc = this.#options.connection ?? (await connectTo(this.#servers, 'corral-remote'));
      let jsm: JetStreamManager;
      try {
        jsm = await jetstreamManager(nc);
        await ensureStream(jsm);
      } catch (err) {
        if (this.#options.connection === undefined) await nc.close().catch(() => {});
        throw unreachable(this.#servers, err);
      }
      const inbox = createInbox();
      const sub = nc.subscribe(`${inbox}.*`, { callback: (_err, msg) => this.#onReply(msg.subject.slice(inbox.length + 1), msg.data) });
      this.#up = true;
      void this.#watch(nc);
      return { nc, js: jetstream(nc), jsm, inbox, sub };
    })();
    const ready = this.#ready;
    ready.catch(() => {
      this.#up = false;
      if (this.#ready === ready) this.#ready = undefined;
    });
    return ready;
  }

  /** Follow the connection: down on a disconnect, up again when the client reconnects by itself. */
  async #watch(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') this.#up = false;
      else if (status.type === 'reconnect') this.#up = true;
    }
    this.#up = false; // closed
  }

  #onReply(key: string, data: Uint8Array): void {
    // A second answer to a call (a redelivery's) finds nothing pending and is dropped.
    const pending = isCallKey(key) ? this.#pending.get(key) : undefined;
    if (!pending) return;
    try {
      const reply = decodeReply(data, pending.outputLimitBytes);
      if (reply.kind === 'error') pending.reject(CorralError.fromJSON(delivered(reply.error)));
      else {
        // The call's key names the worker's own snapshot of it (its execution id in the fleet's store).
        const result = { ...reply.result, ranOn: `${reply.result.ranOn ?? 'fleet'}, call ${key}` };
        pending.resolve(result.error ? { ...result, error: delivered(result.error) } : result);
      }
    } catch (err) {
      const cause = err instanceof MalformedMessage ? err.message : errorText(err);
      pending.reject(
        new CorralError(ErrorCodes.UNEXPECTED_EXIT, `The fleet's reply could not be read: ${cause}`, { reason: 'internal', cause }),
      );
    }
  }

  /**
   * Stop a call given up on: a worker running it aborts it (corral.cancel.KEY),
   * and a call still queued is deleted from the stream so no worker takes it later.
   */
  #cancel(key: string, seq?: number): Promise<void> {
    if (!this.#ready) return Promise.resolve();
    return this.#ready
      .then(async ({ nc, jsm }) => {
        nc.publish(`${CANCEL_PREFIX}${key}`);
        // Fails when a worker has acked it already (or the server is away): nothing left to do then.
        if (seq !== undefined) await jsm.streams.deleteMessage(STREAM, seq, false).catch(() => false);
      })
      .catch(() => {
        // Not connected: a worker that takes the call later drops it once its caller's wait is over.
      });
  }
}

/**
 * A fleet error that came back from a worker (a result too large to carry,
 * or a lie): the call reached the fleet, so routed() must not run it again
 * locally as one the fleet never took.
 */
function delivered(error: CorralErrorJSON): CorralErrorJSON {
  const details = error.details as { resource?: unknown } | undefined;
  return details?.resource === 'fleet' ? ({ ...error, details: { ...details, delivered: true } } as unknown as CorralErrorJSON) : error;
}

/** An executor that runs each call in the fleet of `corral worker`s behind these NATS servers. */
export function remote(options: RemoteOptions): RemoteExecutor {
  return new RemoteExecutor(options);
}

function cancelled(signal: AbortSignal): CorralError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : reason === undefined ? '' : String(reason);
  return new CorralError(ErrorCodes.CANCELLED, `The call was cancelled${why ? `: ${why}` : ''}.`, {
    cancelled: true,
    ...(why ? { reason: why } : {}),
  });
}

function closedError(): CorralError {
  return new CorralError(ErrorCodes.CLOSED, 'The remote executor was closed, so the call cannot run. Create a new one.', {
    running: false,
  });
}
