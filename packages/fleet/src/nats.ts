/** Connecting to NATS and setting up the calls stream, with failures as Corral errors. */
import { CorralError, ErrorCodes } from '@corral/core';
import { JetStreamApiError, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { CALLS_PREFIX, STREAM } from './protocol.js';

/** How long the JetStream dedupe window is: a call re-published within it (same key) is stored once. */
const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function unreachable(servers: string, err: unknown): CorralError<'E_RESOURCE_EXHAUSTED'> {
  return new CorralError(
    ErrorCodes.RESOURCE_EXHAUSTED,
    `The fleet's NATS server${servers.includes(',') ? 's' : ''} ${servers} could not be reached: ${errorText(err)}. Is nats-server running there, with JetStream on (nats-server -js)?`,
    { resource: 'fleet', reason: 'unreachable', servers, cause: errorText(err) },
  );
}

/** The servers as one string for messages; refuses what is not a list of URLs. */
export function serversText(servers: unknown, where: string): string {
  const list = typeof servers === 'string' ? [servers] : servers;
  if (!Array.isArray(list) || list.length === 0 || list.length > 64 || !list.every((s) => typeof s === 'string' && validServer(s))) {
    throw new CorralError(
      ErrorCodes.INPUT_VALIDATION,
      `${where}: servers must be a NATS URL (nats://host:port or host:port) or a list of them (got ${JSON.stringify(servers)?.slice(0, 200)})`,
      { option: 'servers' },
    );
  }
  return list.join(',');
}

function validServer(s: string): boolean {
  if (s.length === 0 || s.length > 2048) return false;
  try {
    const url = new URL(s.includes('://') ? s : `nats://${s}`);
    return ['nats:', 'tls:', 'ws:', 'wss:'].includes(url.protocol) && url.hostname !== '';
  } catch {
    return false;
  }
}

/** `once`: one attempt and no reconnecting (a one-off question, such as a status, answers at once when the server is down). */
export async function connectTo(servers: string, name: string, { once = false } = {}): Promise<NatsConnection> {
  try {
    return await connect({
      servers: servers.split(','),
      name,
      timeout: 5000,
      ...(once ? { reconnect: false } : { maxReconnectAttempts: -1, reconnectTimeWait: 500 }),
    });
  } catch (err) {
    throw unreachable(servers, err);
  }
}

/**
 * A connection to the fleet's servers as a worker keeps one (reconnecting
 * forever), for a process that shares it between a FleetWorker and
 * serveStatus. Refuses what is not a list of NATS URLs (E_INPUT_VALIDATION);
 * a server that cannot be reached is E_RESOURCE_EXHAUSTED (resource "fleet").
 */
export function connectFleet(servers: string | string[], name = 'corral-worker'): Promise<NatsConnection> {
  return connectTo(serversText(servers, 'connectFleet'), name);
}

/** Create the calls stream, or bring an existing one to this configuration (idempotent). */
export async function ensureStream(jsm: JetStreamManager): Promise<void> {
  const config = {
    name: STREAM,
    subjects: [`${CALLS_PREFIX}>`],
    // Each message is taken by one worker and removed once acked.
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
  };
  try {
    await jsm.streams.add(config);
  } catch (err) {
    // 10058: the name is in use with another configuration. Update what may change; retention may not.
    if (!(err instanceof JetStreamApiError) || err.code !== 10058) throw err;
    const { retention: _r, storage: _s, ...editable } = config;
    await jsm.streams.update(STREAM, editable);
  }
}
