/**
 * A fleet worker: pulls calls from the JetStream stream, runs each in its own
 * executor, records it, replies on the caller's inbox, and acks only once
 * the result is durable. Host-agnostic: it takes a Registry, an Executor
 * and a LedgerStore; `corral worker` (in @corral/node) builds one from a
 * Node sandbox pool.
 *
 * Exactly-once results (a call's key is its execution id): a call whose
 * result is recorded is answered from the record and not run; one whose
 * intent is recorded without an outcome (the worker running it died) runs
 * again, recorded as a retry; of two deliveries that both ran, the first to
 * record wins and the other answers its result. Execution is at least once.
 */
import {
  CorralError,
  ErrorCodes,
  isCorralErrorJSON,
  nowNs,
  specDefaults,
  type CorralErrorJSON,
  type ExecutionResult,
  type Executor,
  type Registry,
  type Tool,
} from '@corral/core';
import { executionIntent, executionOutcome } from '@corral/core/store-kit';
import { hostname } from 'node:os';
import { AckPolicy, jetstream, jetstreamManager, JetStreamApiError, type Consumer, type JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders, nanos, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { LedgerStore } from './ledger.js';
import { connectTo, ensureStream, errorText, serversText } from './nats.js';
import {
  CALLS_PREFIX,
  CANCEL_PREFIX,
  DEFAULT_CONSUMER,
  HEADER_KEY,
  HEADER_REPLY,
  MalformedMessage,
  STREAM,
  decodeCall,
  encodeReply,
  isCallKey,
  isReplySubject,
  type CallMessage,
  type ReplyMessage,
} from './protocol.js';

export interface FleetWorkerOptions {
  /** NATS server URL(s); the worker connects and closes the connection on close(). */
  servers?: string | string[];
  /** Or a connection the caller owns (left open on close()). */
  connection?: NatsConnection;
  registry: Registry;
  executor: Executor;
  ledger: LedgerStore;
  /** Calls run at once (and pulled at once). Default 1. */
  concurrency?: number;
  /** How long a delivered call may go without an ack or a heartbeat before it goes to another worker. Default 30000. */
  ackWaitMs?: number;
  /** Deliveries of one call before JetStream gives up on it. Default 5. */
  maxDeliver?: number;
  /** The durable consumer's name (every worker of a fleet shares it). Default 'corral-workers'. */
  consumer?: string;
  /** Reply subjects must start with this (so a hostile publisher cannot make workers publish anywhere). Default '_INBOX.'. */
  replyPrefix?: string;
  /** This worker's name, in each call's `ran_on` ("fleet NAME") and in fleet status. Default: host name and process id. */
  name?: string;
  /** Told what happens to each call (for a log). */
  onEvent?: (event: WorkerEvent) => void;
}

export type WorkerEvent =
  | { event: 'run'; key: string; tool: string; delivery: number; retry: boolean }
  | { event: 'done'; key: string; tool: string; error_code: string | null; exit_code: number | null; duration_ms: number }
  | { event: 'recorded'; key: string; tool: string }
  | { event: 'refused'; key: string | null; reason: string }
  | { event: 'store_error'; key: string; cause: string }
  | { event: 'error'; cause: string }
  /** Pulling stopped working (the server went away): said once, not at every retry; pulls go on every 0.5 s while the client reconnects. */
  | { event: 'pull_paused'; cause: string }
  /** A pull worked again after `pull_paused`. */
  | { event: 'pull_resumed'; paused_ms: number };

type ResolvedOptions = Required<Pick<FleetWorkerOptions, 'concurrency' | 'ackWaitMs' | 'replyPrefix' | 'name'>> & FleetWorkerOptions;

/** Bounds on cancellations kept for calls not (yet) seen here. */
const MAX_CANCELLED = 10_000;
const CANCELLED_TTL_MS = 10 * 60 * 1000;
/** Clocks of client and worker may differ this much before a call counts as stale. */
const CLOCK_SKEW_MS = 60_000;
/** How long one pull waits for a message (the shortest NATS allows is 1 s); bounds drain latency. */
const PULL_EXPIRES_MS = 2000;
/** How long a call is held back after the store failed, before it is delivered again. */
const STORE_RETRY_MS = 2000;

export class FleetWorker {
  readonly #nc: NatsConnection;
  readonly #ownsConnection: boolean;
  readonly #consumer: Consumer;
  readonly #options: ResolvedOptions;
  readonly #running = new Map<string, AbortController>();
  readonly #cancelled = new Map<string, number>();
  /** Heartbeats of calls held while the store is away (see #storeAway). */
  readonly #holding = new Map<JsMsg, ReturnType<typeof setInterval>>();
  readonly #cancelSub: Subscription;
  readonly #lanes: Promise<void>[] = [];
  #closing = false;
  #closed: Promise<void> | undefined;
  /** What this worker's calls record as `ran_on`. */
  readonly ranOn: string;
  /** Counters, for a status line and tests. */
  readonly stats = { runs: 0, answeredFromRecord: 0, retries: 0, refused: 0 };

  private constructor(nc: NatsConnection, owns: boolean, consumer: Consumer, options: ResolvedOptions) {
    this.#nc = nc;
    this.#ownsConnection = owns;
    this.#consumer = consumer;
    this.#options = options;
    this.ranOn = `fleet ${options.name}`;
    this.#cancelSub = nc.subscribe(`${CANCEL_PREFIX}*`, { callback: (_err, msg) => this.#cancel(msg.subject.slice(CANCEL_PREFIX.length)) });
    for (let i = 0; i < options.concurrency; i++) this.#lanes.push(this.#lane());
  }

  /** Connect, create the stream and the durable consumer if missing, and start pulling. */
  static async start(options: FleetWorkerOptions): Promise<FleetWorker> {
    const bad = (option: string, problem: string): never => {
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `FleetWorker.start: ${option} ${problem}`, { option });
    };
    if (typeof options !== 'object' || options === null) bad('options', 'must be an object');
    const whole = (option: 'concurrency' | 'ackWaitMs' | 'maxDeliver', min: number, max: number) => {
      const v = options[option];
      if (v !== undefined && !(Number.isInteger(v) && v >= min && v <= max)) bad(option, `must be a whole number from ${min} to ${max}`);
    };
    whole('concurrency', 1, 1024);
    whole('ackWaitMs', 1000, 3_600_000);
    whole('maxDeliver', 1, 1000);
    if (typeof options.executor?.execute !== 'function') bad('executor', 'must be an Executor');
    if (typeof options.ledger?.finishCall !== 'function' || typeof options.ledger?.getCallResult !== 'function')
      bad('ledger', 'must be a LedgerStore');
    const durable = options.consumer ?? DEFAULT_CONSUMER;
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(durable)) bad('consumer', 'must be letters, digits, _ or - (at most 64)');
    if (options.connection === undefined && options.servers === undefined) bad('servers', 'or connection is needed');
    // Else a hostile call's reply subject could be any subject: another call's cancel, the calls stream, another program's.
    const rp = options.replyPrefix;
    if (
      rp !== undefined &&
      !(typeof rp === 'string' && /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.$/.test(rp) && rp.length <= 128 && !rp.startsWith('corral.'))
    )
      bad('replyPrefix', "must be subject tokens ending in '.' (like '_INBOX.'), outside corral.");
    const name = options.name ?? `${hostname()}-${process.pid}`;
    if (typeof name !== 'string' || !/^[\w.:@-]{1,64}$/.test(name)) bad('name', 'must be 1 to 64 letters, digits or . _ : @ -');
    const nc = options.connection ?? (await connectTo(serversText(options.servers, 'FleetWorker.start'), 'corral-worker'));
    try {
      const jsm = await jetstreamManager(nc);
      await ensureStream(jsm);
      const ackWaitMs = options.ackWaitMs ?? 30_000;
      const config = {
        durable_name: durable,
        ack_policy: AckPolicy.Explicit,
        ack_wait: nanos(ackWaitMs),
        max_deliver: options.maxDeliver ?? 5,
        filter_subject: `${CALLS_PREFIX}>`,
      };
      try {
        await jsm.consumers.add(STREAM, config);
      } catch (err) {
        // It exists with other settings (another worker's): take this worker's.
        if (!(err instanceof JetStreamApiError)) throw err;
        await jsm.consumers.update(STREAM, durable, { ack_wait: config.ack_wait, max_deliver: config.max_deliver });
      }
      const consumer = await jetstream(nc).consumers.get(STREAM, durable);
      return new FleetWorker(nc, options.connection === undefined, consumer, {
        ...options,
        name,
        concurrency: options.concurrency ?? 1,
        ackWaitMs,
        replyPrefix: options.replyPrefix ?? '_INBOX.',
      });
    } catch (err) {
      if (options.connection === undefined) await nc.close().catch(() => {});
      if (err instanceof CorralError) throw err;
      throw new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, `The fleet's stream could not be set up: ${errorText(err)}`, {
        resource: 'fleet',
        reason: 'unreachable',
        cause: errorText(err),
      });
    }
  }

  /** Calls running now. */
  get running(): number {
    return this.#running.size;
  }

  /**
   * Drain: stop pulling, let the calls in flight finish (and ack them),
   * then close the connection if the worker opened it. The executor and the
   * ledger are the caller's to close.
   */
  close(): Promise<void> {
    this.#closing = true;
    this.#closed ??= (async () => {
      await Promise.all(this.#lanes);
      this.#cancelSub.unsubscribe();
      if (this.#ownsConnection) await this.#nc.drain().catch(() => {});
    })();
    return this.#closed;
  }

  /** When pulls began failing (shared by the lanes, so an outage is reported once), or undefined while they work. */
  #pausedSince: number | undefined;

  /** One call at a time, until close(). */
  async #lane(): Promise<void> {
    while (!this.#closing) {
      let msg: JsMsg | null = null;
      try {
        msg = await this.#consumer.next({ expires: PULL_EXPIRES_MS });
      } catch (err) {
        // The server is away (restarting, a network cut): wait and pull again; the client reconnects.
        if (this.#pausedSince === undefined) {
          this.#pausedSince = Date.now();
          this.#emit({ event: 'pull_paused', cause: `${errorText(err)}; pulls resume by themselves once the client has reconnected` });
        }
        if (this.#nc.isClosed()) return;
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (this.#pausedSince !== undefined) {
        this.#emit({ event: 'pull_resumed', paused_ms: Date.now() - this.#pausedSince });
        this.#pausedSince = undefined;
      }
      // A message that arrived while closing is still handled: it was delivered to this worker.
      if (!msg) continue;
      try {
        await this.#handle(msg);
      } catch (err) {
        // A bug, not the call's: keep the lane alive, and let the call come back (to its record, if it has one).
        this.#emit({ event: 'error', cause: `handling a call failed: ${errorText(err)}` });
        msg.nak(STORE_RETRY_MS);
      } finally {
        clearInterval(this.#holding.get(msg));
        this.#holding.delete(msg);
      }
    }
  }

  async #handle(msg: JsMsg): Promise<void> {
    const key = msg.headers?.get(HEADER_KEY) ?? '';
    const replyTo = msg.headers?.get(HEADER_REPLY) ?? '';
    const validKey = isCallKey(key);
    const validReply = isReplySubject(replyTo, this.#options.replyPrefix);
    let call: CallMessage;
    try {
      if (!validKey) throw new MalformedMessage(`its ${HEADER_KEY} header is not a UUID`);
      if (!validReply) throw new MalformedMessage(`its ${HEADER_REPLY} header is not a subject under ${this.#options.replyPrefix}`);
      call = decodeCall(msg.data);
      if (msg.subject !== `${CALLS_PREFIX}${call.tool}`)
        throw new MalformedMessage(`it names tool ${call.tool} but came on ${msg.subject}`);
    } catch (err) {
      // Hostile or broken: never redeliver it; answer when there is someone to answer.
      const reason = err instanceof MalformedMessage ? err.message : errorText(err);
      this.stats.refused++;
      this.#emit({ event: 'refused', key: validKey ? key : null, reason });
      if (validKey && validReply) {
        const error = new CorralError(ErrorCodes.INPUT_VALIDATION, `The fleet refused the call: ${reason}`, {
          reason: 'bad_request_body',
          cause: reason,
        });
        this.#reply(replyTo, key, encodeReply({ kind: 'error', error: error.toJSON() }));
      }
      // No reason text: nats-server before 2.10.4 does not read one and would redeliver the message.
      msg.term();
      return;
    }

    if (this.#running.has(key)) {
      // Delivered again while this worker still runs it (its heartbeats were late): the run in hand answers; this copy comes back later, to the record.
      msg.nak(STORE_RETRY_MS);
      return;
    }
    const { ledger } = this.#options;
    let retry = false;
    try {
      const intent = await executionIntent({
        id: key,
        decisionId: null,
        tool: call.tool,
        version: call.version,
        wasmSha256: call.wasm_sha256,
        stdin: call.stdin,
        json: jsonTextOf(call.stdin),
        keepText: true,
      });
      const existing = await ledger.getExecution(key);
      // A key is one call: another tool or input under a recorded key (a reuse, a forgery) must not get that call's result, nor run as its retry.
      const differs = existing && (['tool', 'version', 'wasm_sha256', 'input_sha256'] as const).find((f) => existing[f] !== intent[f]);
      if (differs) {
        const reason = `its key ${key} is another call's (the recorded call differs in ${differs})`;
        this.stats.refused++;
        this.#emit({ event: 'refused', key, reason });
        const error = new CorralError(ErrorCodes.INPUT_VALIDATION, `The fleet refused the call: ${reason}`, {
          reason: 'bad_request_body',
          cause: reason,
        });
        this.#reply(replyTo, key, encodeReply({ kind: 'error', error: error.toJSON() }));
        await ack(msg);
        return;
      }
      const recorded = await ledger.getCallResult(key);
      if (recorded) {
        this.stats.answeredFromRecord++;
        this.#emit({ event: 'recorded', key, tool: call.tool });
        this.#reply(replyTo, key, recorded);
        await ack(msg);
        return;
      }
      if (existing) {
        if (existing.status !== 'interrupted') {
          // An outcome without a result record: not something this worker wrote. Never run it twice.
          const error = new CorralError(ErrorCodes.STORE, `Execution ${key} has an outcome in ${ledger.location} but no recorded result`, {
            store: ledger.location,
            id: key,
          });
          this.#reply(replyTo, key, encodeReply({ kind: 'error', error: error.toJSON() }));
          msg.term();
          return;
        }
        retry = true;
        this.stats.retries++;
        await ledger.recordAudit({
          id: crypto.randomUUID(),
          time_ns: nowNs(),
          action: 'fleet_retry',
          actor: 'corral-worker',
          tool: call.tool,
          approval_id: null,
          detail: { execution_id: key, delivery: msg.info.deliveryCount, intent_ns: existing.intent_ns },
        });
      } else {
        await ledger.beginExecution(intent);
      }
    } catch (err) {
      // Nothing durable can be written: do not run yet; hold the call and try again (see #storeAway).
      this.#emit({ event: 'store_error', key, cause: errorText(err) });
      if (await this.#storeAway(msg, call)) return this.#handle(msg);
      return;
    }

    this.#emit({ event: 'run', key, tool: call.tool, delivery: msg.info.deliveryCount, retry });
    const started = performance.now();
    const reply = await this.#run(call, key, msg);
    const durationMs = Math.round((performance.now() - started) * 100) / 100;
    let encoded = encodeReply(reply);
    const maxPayload = this.#nc.info?.max_payload ?? Number.POSITIVE_INFINITY;
    if (encoded.length > maxPayload - 4096) {
      const error = new CorralError(
        ErrorCodes.RESOURCE_EXHAUSTED,
        `${call.tool}'s result (${encoded.length} bytes) is larger than the fleet's NATS servers carry (max_payload ${maxPayload}); lower outputLimitBytes or raise max_payload`,
        { resource: 'fleet', reason: 'message_too_large', message_bytes: encoded.length, max_payload: maxPayload },
      );
      encoded = encodeReply({ kind: 'error', error: error.toJSON() });
    }
    const result = reply.kind === 'result' ? reply.result : undefined;
    const error: CorralErrorJSON | null = reply.kind === 'error' ? reply.error : (reply.result.error ?? null);
    this.#emit({
      event: 'done',
      key,
      tool: call.tool,
      error_code: error?.code ?? null,
      exit_code: result?.exitCode ?? null,
      duration_ms: durationMs,
    });
    const outcome = { ...(await executionOutcome(result, error, durationMs)), ran_on: this.ranOn };
    let answered = false;
    for (;;) {
      try {
        const won = await ledger.finishCall(key, outcome, encoded);
        // Another delivery recorded first: answer what it recorded, so every answer is the same.
        if (!won) encoded = (await ledger.getCallResult(key)) ?? encoded;
        break;
      } catch (err) {
        // Not durable: answer anyway (the caller waits) and record it once the store is back (see #storeAway);
        // failing that, do not ack: the call comes back and its retry is recorded.
        this.#emit({ event: 'store_error', key, cause: errorText(err) });
        if (!answered) this.#reply(replyTo, key, encoded);
        answered = true;
        if (!(await this.#storeAway(msg, call))) return;
      }
    }
    if (!answered) this.#reply(replyTo, key, encoded);
    await ack(msg);
  }

  /**
   * The store failed (a restart, a failover). Handing the call back (nak) counts a delivery each
   * time, and after max_deliver JetStream never delivers it again: an outage a little longer than
   * max_deliver × STORE_RETRY_MS would lose every call that came meanwhile. So the call is held
   * here, JetStream told it is in progress, and the store tried again after a pause (true); it is
   * handed back (false) once its caller has stopped waiting, or when the worker drains.
   */
  async #storeAway(msg: JsMsg, call: CallMessage): Promise<boolean> {
    if (this.#closing || Date.now() > call.sent_ms + call.wait_ms) {
      msg.nak(STORE_RETRY_MS);
      return false;
    }
    // Heartbeats while held, during the next try too (a connection attempt may outlast ack_wait); #lane stops them.
    const every = Math.max(500, Math.floor(this.#options.ackWaitMs / 3));
    if (!this.#holding.has(msg))
      this.#holding.set(
        msg,
        setInterval(() => msg.working(), every),
      );
    msg.working();
    await new Promise((r) => setTimeout(r, Math.min(STORE_RETRY_MS, every)));
    return true;
  }

  async #run(call: CallMessage, key: string, msg: JsMsg): Promise<ReplyMessage> {
    const errorReply = (err: unknown): ReplyMessage => ({
      kind: 'error',
      error:
        err instanceof CorralError
          ? err.toJSON()
          : isCorralErrorJSON(err)
            ? CorralError.fromJSON(err).toJSON()
            : new CorralError(ErrorCodes.UNEXPECTED_EXIT, `The worker failed: ${errorText(err)} (an internal error; please report it)`, {
                reason: 'internal',
                cause: errorText(err),
              }).toJSON(),
    });
    if (this.#cancelled.has(key)) return errorReply(cancelledError());
    if (Date.now() > call.sent_ms + call.wait_ms + CLOCK_SKEW_MS) {
      return errorReply(
        new CorralError(ErrorCodes.CANCELLED, 'The call waited in the queue longer than its caller waits for it, so it was not run.', {
          cancelled: true,
          reason: 'stale',
        }),
      );
    }
    let tool: Tool;
    try {
      tool = this.#toolFor(call);
      checkAgainstSpec(call, tool, this.#nc.info?.max_payload);
    } catch (err) {
      return errorReply(err);
    }
    const controller = new AbortController();
    this.#running.set(key, controller);
    // Tell JetStream the call is still running, well within ack_wait, so it is not redelivered.
    const heartbeat = setInterval(() => msg.working(), Math.max(500, Math.floor(this.#options.ackWaitMs / 3)));
    this.stats.runs++;
    try {
      const result: ExecutionResult = await this.#options.executor.execute({
        tool,
        stdin: call.stdin,
        args: call.args,
        env: call.env,
        mounts: call.mounts.map((m) => ({ guest: m.guest, access: m.access, source: { kind: 'memory', tree: m.tree } })),
        timeoutMs: call.timeout_ms,
        outputLimitBytes: call.output_limit_bytes,
        memoryLimitBytes: call.memory_limit_bytes,
        diskLimitBytes: call.disk_limit_bytes,
        signal: controller.signal,
        stdinTransferable: true,
      });
      return { kind: 'result', result: { ...result, ranOn: this.ranOn } };
    } catch (err) {
      return errorReply(err);
    } finally {
      clearInterval(heartbeat);
      this.#running.delete(key);
    }
  }

  /** The registered tool the call names, exactly: the same name, version and wasm. */
  #toolFor(call: CallMessage): Tool {
    const same = this.#options.registry.list().filter((t) => t.spec.name === call.tool);
    const tool = same.find((t) => t.spec.version === call.version);
    const available = same.map((t) => `${t.spec.version} (wasm ${t.wasmSha256.slice(0, 12)}…)`);
    if (!tool) {
      throw new CorralError(
        ErrorCodes.TOOL_NOT_FOUND,
        same.length === 0
          ? `The fleet worker has no tool named '${call.tool}'`
          : `The fleet worker has no version ${call.version} of '${call.tool}'; it has ${available.join(', ')}`,
        { name: call.tool, range: call.version, available },
      );
    }
    if (tool.wasmSha256 !== call.wasm_sha256) {
      throw new CorralError(
        ErrorCodes.TOOL_NOT_FOUND,
        `The fleet worker's ${call.tool}@${call.version} is other wasm than the caller's (SHA-256 ${tool.wasmSha256} here, ${call.wasm_sha256} there); give both the same tool`,
        { name: call.tool, range: call.version, available, cause: 'wasm_sha256 differs' },
      );
    }
    return tool;
  }

  #cancel(key: string): void {
    if (!isCallKey(key)) return;
    const running = this.#running.get(key);
    if (running) {
      running.abort(new Error('the caller cancelled it'));
      return;
    }
    // Not here (yet): remember it, bounded, in case its message comes to this worker later.
    const now = Date.now();
    for (const [k, at] of this.#cancelled) {
      if (this.#cancelled.size < MAX_CANCELLED && now - at < CANCELLED_TTL_MS) break;
      this.#cancelled.delete(k);
    }
    this.#cancelled.set(key, now);
  }

  #reply(subject: string, key: string, data: Uint8Array): void {
    try {
      this.#nc.publish(`${subject}`, data, { headers: keyHeaders(key) });
    } catch (err) {
      // The caller may be gone; the result is recorded.
      this.#emit({ event: 'error', cause: `reply to ${subject} failed: ${errorText(err)}` });
    }
  }

  #emit(event: WorkerEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch {
      // A log callback's failure is not the call's.
    }
  }
}

function keyHeaders(key: string) {
  const h = natsHeaders();
  h.set(HEADER_KEY, key);
  return h;
}

/** Ack and wait for the server to confirm, so a drain that ends has really acked. */
async function ack(msg: JsMsg): Promise<void> {
  try {
    await msg.ackAck();
  } catch {
    // The connection dropped: the call comes back, and is answered from its record.
  }
}

/** Longest time limit a worker takes from a message. */
const MAX_TIMEOUT_MS = 24 * 3600 * 1000;

/**
 * What the caller's pipeline already checked, checked again: a message may
 * come from anyone who can publish, and must not get more than the tool's
 * spec allows (memory, disk, variables, mounts) or more than a reply carries.
 */
function checkAgainstSpec(call: CallMessage, tool: Tool, maxPayload: number | undefined): void {
  const { spec } = tool;
  const refuse = (message: string, details: Record<string, unknown>): never => {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `The fleet refused the call to ${spec.name}: ${message}`, details);
  };
  const memoryMb = spec.resources?.memory_mb ?? specDefaults.resources.memory_mb;
  const diskMb = spec.resources?.disk_mb ?? specDefaults.resources.disk_mb;
  if (call.memory_limit_bytes > memoryMb * 2 ** 20)
    refuse(`its memory limit is above the spec's ${memoryMb} MiB`, {
      option: 'memoryMb',
      memory_mb: memoryMb,
      requested: call.memory_limit_bytes / 2 ** 20,
    });
  if (call.disk_limit_bytes > diskMb * 2 ** 20)
    refuse(`its disk limit is above the spec's ${diskMb} MiB`, {
      option: 'diskMb',
      disk_mb: diskMb,
      requested: call.disk_limit_bytes / 2 ** 20,
    });
  if (call.timeout_ms > MAX_TIMEOUT_MS)
    refuse(`its time limit is above ${MAX_TIMEOUT_MS} ms`, { option: 'timeoutMs', requested: call.timeout_ms });
  if (maxPayload !== undefined && call.output_limit_bytes > maxPayload)
    refuse(`its output limit is above what a reply can carry (max_payload ${maxPayload})`, {
      option: 'outputLimitBytes',
      requested: call.output_limit_bytes,
    });
  const listed = [...(spec.env ?? []), 'TZ'];
  const unlisted = Object.keys(call.env).filter((k) => !listed.includes(k));
  if (unlisted.length > 0) refuse(`environment variables ${unlisted.join(', ')} are not listed in its env`, { unlisted, listed });
  for (const m of call.mounts) {
    const decl = spec.mounts?.find((d) => d.guest === m.guest);
    if (!decl) refuse(`mount ${m.guest} is not declared`, { guest: m.guest, declared: (spec.mounts ?? []).map((d) => d.guest) });
    if (m.access === 'read-write' && decl!.access === 'read')
      refuse(`mount ${m.guest} is declared read-only`, { guest: m.guest, declared_access: decl!.access, requested_access: m.access });
  }
}

function cancelledError(): CorralError {
  return new CorralError(ErrorCodes.CANCELLED, 'The call was cancelled: the caller cancelled it.', {
    cancelled: true,
    reason: 'the caller cancelled it',
  });
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
/** The input's JSON text for the snapshot, when stdin is UTF-8 (it is JSON from the invoke pipeline). */
function jsonTextOf(stdin: Uint8Array): string | null {
  try {
    return strictUtf8.decode(stdin);
  } catch {
    return null;
  }
}
