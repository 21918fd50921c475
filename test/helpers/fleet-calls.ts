// Calls put on the fleet's stream by hand, as remote() would (or as an
// attacker would, with the body and headers they choose).
import { CALLS_PREFIX, HEADER_KEY, HEADER_REPLY, type CallMessage } from '@corral/fleet';
import type { Registry } from '@corral/core';
import { jetstream } from '@nats-io/jetstream';
import { createInbox, headers, type NatsConnection } from '@nats-io/transport-node';

/** A call message for `tool` (resolved in `registry`) as remote() would send it. */
export function callFor(registry: Registry, tool: string, input: unknown): CallMessage {
  const t = registry.resolve(tool);
  return {
    tool,
    version: t.spec.version,
    wasm_sha256: t.wasmSha256,
    stdin: new TextEncoder().encode(JSON.stringify(input)),
    args: [],
    env: {},
    mounts: [],
    timeout_ms: 5000,
    output_limit_bytes: 1 << 20,
    memory_limit_bytes: 64 << 20,
    disk_limit_bytes: 1 << 20,
    sent_ms: Date.now(),
    wait_ms: 30_000,
  };
}

/**
 * Publish `body` as a call on `corral.calls.<tool>` under `key` (none when
 * null), with a fresh reply inbox; `reply` is the first message back there
 * (null once `stop()` ends the wait).
 */
export async function publishCall(
  nc: NatsConnection,
  tool: string,
  body: Uint8Array,
  key: string | null,
  msgId: string = crypto.randomUUID(),
): Promise<{ reply: Promise<Uint8Array | null>; stop: () => void }> {
  const inbox = createInbox();
  const sub = nc.subscribe(inbox, { max: 1 });
  const h = headers();
  if (key) h.set(HEADER_KEY, key);
  h.set(HEADER_REPLY, inbox);
  h.set('Nats-Msg-Id', msgId);
  await jetstream(nc).publish(`${CALLS_PREFIX}${tool}`, body, { headers: h });
  return {
    reply: (async () => {
      for await (const m of sub) return m.data;
      return null;
    })(),
    stop: () => sub.unsubscribe(),
  };
}
