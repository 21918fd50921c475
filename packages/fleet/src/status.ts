/**
 * Fleet status: each worker answers a request on the core NATS subject
 * `corral.status` with what it is doing (serveStatus), and fleetStatus()
 * gathers every answer that comes within a short deadline (scatter-gather)
 * together with the work queue's depth from JetStream's consumer info.
 *
 * Answers are read as hostile input: bounded in count and size, checked
 * field by field; one that does not parse is counted, not trusted.
 */
import { CorralError, ErrorCodes } from '@corral/core';
import { jetstreamManager, JetStreamApiError } from '@nats-io/jetstream';
import { createInbox, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { connectTo, errorText, serversText } from './nats.js';
import { DEFAULT_CONSUMER, STREAM } from './protocol.js';

/** Workers answer status requests here (core NATS, not JetStream: a status is not work). */
export const STATUS_SUBJECT = 'corral.status';

/** What one worker says about itself. */
export interface WorkerStatus {
  name: string;
  host: string;
  pid: number;
  /** 'draining' after SIGTERM: no new calls are pulled, the ones in flight finish. */
  state: 'running' | 'draining';
  /** The tools it runs, as name@version (at most MAX_TOOLS listed; tool_count has them all). */
  tools: string[];
  tool_count: number;
  concurrency: number;
  /** Calls running now. */
  running: number;
  /** Calls run since start, answered from the record without running, run again as a retry, refused as malformed. */
  runs: number;
  answered_from_record: number;
  retries: number;
  refused: number;
  started_at: string;
  uptime_s: number;
  /** Where it serves Prometheus metrics, if it does. */
  metrics: string | null;
}

/** The work queue, from JetStream's info on the workers' shared consumer. */
export interface QueueStatus {
  stream: string;
  consumer: string;
  /** Calls in the stream no worker has taken yet. */
  pending: number;
  /** Calls delivered to a worker and not yet acked (running, or their worker died and ack_wait has not passed). */
  ack_pending: number;
  /** Of those, calls delivered more than once. */
  redelivered: number;
  /** Pull requests waiting for a call: idle worker lanes. */
  waiting_pulls: number;
  /** Messages and bytes the stream holds now. */
  messages: number;
  bytes: number;
}

export interface FleetStatus {
  servers: string;
  /** The server the status was read from. */
  server: { name: string; version: string; jetstream: boolean };
  workers: WorkerStatus[];
  /** Answers on the status subject that were not a worker status (malformed or oversized). */
  unreadable_answers: number;
  /** null when the stream or its consumer does not exist yet (no worker has started on these servers), with queue_problem saying so. */
  queue: QueueStatus | null;
  queue_problem: string | null;
  waited_ms: number;
}

/** Bounds on what a status gathers from peers. */
export const STATUS_LIMITS = { answers: 10_000, answerBytes: 64 * 1024, tools: 1000 };

/**
 * Answer status requests for one worker on `connection` until close():
 * `describe` is called for each request (it must be cheap).
 */
export function serveStatus(connection: NatsConnection, describe: () => WorkerStatus): { close(): void } {
  const encoder = new TextEncoder();
  const sub: Subscription = connection.subscribe(STATUS_SUBJECT, {
    callback: (_err, msg: Msg) => {
      if (!msg.reply) return;
      try {
        const status = describe();
        // Within what a reader takes: fewer tools listed (tool_count still says how many) rather than no answer.
        let tools = status.tools.slice(0, STATUS_LIMITS.tools);
        let data = encoder.encode(JSON.stringify({ ...status, tools }));
        while (data.length > STATUS_LIMITS.answerBytes && tools.length > 0) {
          tools = tools.slice(0, Math.floor(tools.length / 2));
          data = encoder.encode(JSON.stringify({ ...status, tools }));
        }
        msg.respond(data);
      } catch {
        // A status that cannot be described or sent now: the requester counts this worker as silent.
      }
    },
  });
  return { close: () => sub.unsubscribe() };
}

export interface FleetStatusOptions {
  servers: string | string[];
  /** How long to gather worker answers. Default 1000 ms. */
  timeoutMs?: number;
  /** The consumer whose queue to report. Default 'corral-workers'. */
  consumer?: string;
}

/** Ask every worker for its status and JetStream for the queue's depth. */
export async function fleetStatus(options: FleetStatusOptions): Promise<FleetStatus> {
  const servers = serversText(options?.servers, 'fleetStatus');
  const timeoutMs = options.timeoutMs ?? 1000;
  if (!(Number.isInteger(timeoutMs) && timeoutMs >= 10 && timeoutMs <= 60_000)) {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, 'fleetStatus: timeoutMs must be a whole number from 10 to 60000', {
      option: 'timeoutMs',
    });
  }
  const consumer = options.consumer ?? DEFAULT_CONSUMER;
  // One attempt, no reconnecting: a status of a server that is down says so at once.
  const nc = await connectTo(servers, 'corral-fleet-status', { once: true });
  try {
    const started = performance.now();
    const gathering = gatherWorkers(nc, timeoutMs);
    const { queue, problem } = await queueStatus(nc, consumer);
    const { workers, unreadable } = await gathering;
    const info = nc.info;
    workers.sort((a, b) => a.name.localeCompare(b.name));
    return {
      servers,
      server: { name: info?.server_name ?? '', version: info?.version ?? '', jetstream: info?.jetstream === true },
      workers,
      unreadable_answers: unreadable,
      queue,
      queue_problem: problem,
      waited_ms: Math.round(performance.now() - started),
    };
  } finally {
    await nc.close().catch(() => {});
  }
}

async function gatherWorkers(nc: NatsConnection, timeoutMs: number): Promise<{ workers: WorkerStatus[]; unreadable: number }> {
  const workers: WorkerStatus[] = [];
  let unreadable = 0;
  const inbox = createInbox();
  const sub = nc.subscribe(inbox, { max: STATUS_LIMITS.answers });
  const timer = setTimeout(() => sub.unsubscribe(), timeoutMs);
  nc.publish(STATUS_SUBJECT, undefined, { reply: inbox });
  const decoder = new TextDecoder('utf-8', { fatal: true });
  for await (const msg of sub) {
    // "No responders" (status 503) and other status messages are the server's, not a worker's.
    if (msg.headers?.code) continue;
    const status = msg.data.length <= STATUS_LIMITS.answerBytes ? parseWorkerStatus(msg.data, decoder) : null;
    if (status) workers.push(status);
    else unreadable++;
  }
  clearTimeout(timer);
  return { workers, unreadable };
}

function parseWorkerStatus(data: Uint8Array, decoder: { decode(bytes: Uint8Array): string }): WorkerStatus | null {
  let v: unknown;
  try {
    v = JSON.parse(decoder.decode(data));
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const text = (k: string, max = 256) => typeof o[k] === 'string' && (o[k] as string).length <= max;
  const count = (k: string) => Number.isSafeInteger(o[k]) && (o[k] as number) >= 0;
  const ok =
    text('name', 64) &&
    text('host') &&
    text('started_at', 64) &&
    (o.metrics === null || text('metrics')) &&
    (o.state === 'running' || o.state === 'draining') &&
    Array.isArray(o.tools) &&
    o.tools.length <= STATUS_LIMITS.tools &&
    o.tools.every((t) => typeof t === 'string' && t.length <= 320) &&
    ['pid', 'tool_count', 'concurrency', 'running', 'runs', 'answered_from_record', 'retries', 'refused'].every(count) &&
    typeof o.uptime_s === 'number' &&
    Number.isFinite(o.uptime_s) &&
    o.uptime_s >= 0;
  if (!ok) return null;
  const pick = <K extends keyof WorkerStatus>(k: K) => o[k] as WorkerStatus[K];
  return {
    name: pick('name'),
    host: pick('host'),
    pid: pick('pid'),
    state: pick('state'),
    tools: pick('tools'),
    tool_count: pick('tool_count'),
    concurrency: pick('concurrency'),
    running: pick('running'),
    runs: pick('runs'),
    answered_from_record: pick('answered_from_record'),
    retries: pick('retries'),
    refused: pick('refused'),
    started_at: pick('started_at'),
    uptime_s: pick('uptime_s'),
    metrics: pick('metrics'),
  };
}

async function queueStatus(nc: NatsConnection, consumer: string): Promise<{ queue: QueueStatus | null; problem: string | null }> {
  if (nc.info?.jetstream !== true) return { queue: null, problem: 'JetStream is not enabled on this server (start nats-server with -js)' };
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5000 });
    const [c, s] = await Promise.all([jsm.consumers.info(STREAM, consumer), jsm.streams.info(STREAM)]);
    return {
      queue: {
        stream: STREAM,
        consumer,
        pending: c.num_pending,
        ack_pending: c.num_ack_pending,
        redelivered: c.num_redelivered,
        waiting_pulls: c.num_waiting,
        messages: s.state.messages,
        bytes: s.state.bytes,
      },
      problem: null,
    };
  } catch (err) {
    // 10059: no such stream; 10014: no such consumer. Neither exists until a worker starts.
    if (err instanceof JetStreamApiError && (err.code === 10059 || err.code === 10014)) {
      return {
        queue: null,
        problem: `no ${err.code === 10059 ? `stream ${STREAM}` : `consumer ${consumer} on stream ${STREAM}`} yet: no worker has started on these servers`,
      };
    }
    return { queue: null, problem: `JetStream did not report the queue: ${errorText(err)}` };
  }
}
