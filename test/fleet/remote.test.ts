// The fleet round trip with a real nats-server: a FleetWorker (in this
// process, over a real sandbox pool) serves calls that a second Corral sends
// through remote(); what comes back is what the local pool gives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Executor, InvokeResult } from '@corral/core';
import { Corral } from '@corral/node';
import { DEFAULT_CONSUMER, FleetWorker, MemoryLedger, STREAM, decodeReply, encodeCall, remote, type CallMessage } from '@corral/fleet';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNats, type NatsServer } from '../helpers/nats.js';
import { callFor, publishCall } from '../helpers/fleet-calls.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/tools/', import.meta.url));
const example = JSON.parse(readFileSync(new URL('../../wasm-tools/diff-summary/examples/example.diff.json', import.meta.url), 'utf8'));

let nats: NatsServer;
let local: Corral;
let client: Corral;
let ledger: MemoryLedger;
let worker: FleetWorker;
let nc: NatsConnection;
/** Real runs in the worker's pool, by tool. */
const runs = new Map<string, number>();

beforeAll(async () => {
  nats = await startNats();
  local = await Corral.create({ size: 2, toolDirs: [FIXTURES], store: false });
  const counting: Executor = {
    execute: (request) => {
      runs.set(request.tool.spec.name, (runs.get(request.tool.spec.name) ?? 0) + 1);
      return local.executor.execute(request);
    },
  };
  ledger = new MemoryLedger();
  worker = await FleetWorker.start({
    servers: nats.url,
    registry: local.registry,
    executor: counting,
    ledger,
    concurrency: 2,
    ackWaitMs: 5000,
  });
  client = await Corral.create({ toolDirs: [FIXTURES], store: false, executor: remote({ servers: nats.url, queueTimeoutMs: 20_000 }) });
  nc = await connect({ servers: nats.url });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await worker?.close();
  await local?.close();
  await nc?.close();
  await nats?.stop();
});

/** The envelope without what differs from run to run. */
function comparable(r: InvokeResult) {
  const { duration_ms: _d, ...rest } = r;
  return rest;
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('remote()', () => {
  it('gives the same envelope as the local pool for diff-summary on its example', async () => {
    const here = await local.invoke('diff-summary', example);
    const there = await client.invoke('diff-summary', example);
    expect(here.ok).toBe(true);
    expect(comparable(there)).toEqual(comparable(here));
  });

  it("keeps a tool failure's code and details", async () => {
    const here = await local.invoke('exit-fail', {});
    const there = await client.invoke('exit-fail', {});
    expect(there.ok).toBe(false);
    expect(there.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(comparable(there)).toEqual(comparable(here));
  });

  it("keeps a timeout's code: the worker stops the tool at the call's limit", async () => {
    const there = await client.invoke('spin', {}, { timeoutMs: 300 });
    expect(there.ok).toBe(false);
    expect(there.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'time', timeout_ms: 300 } });
  });

  it('refuses a host-folder mount, saying why, and sends nothing', async () => {
    const before = runs.get('mark') ?? 0;
    const r = await client.invoke(
      'mark',
      {},
      { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'folder', path: '/tmp' } }] },
    );
    expect(r.error).toMatchObject({ code: 'E_INPUT_VALIDATION', details: { kind: 'folder', supported_kinds: ['memory'] } });
    expect(r.error?.message).toMatch(/fleet cannot open/);
    expect(runs.get('mark') ?? 0).toBe(before);
  });

  it('carries an in-memory mount to the worker', async () => {
    const r = await client.invoke(
      'mark',
      { n: 1 },
      { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'memory', tree: { 'a.txt': 'x' } } }] },
    );
    expect(r).toMatchObject({ ok: true, output: { n: 1 } });
  });

  it('cancels: aborting the call stops it in the worker', async () => {
    const controller = new AbortController();
    const before = worker.stats.runs;
    const call = client.invoke(
      'mark',
      { spin_ms: 60_000 },
      { signal: controller.signal, mounts: [{ guest: '/workspace', access: 'read-write' }] },
    );
    await waitFor('the worker to run the call', () => worker.running === 1 && worker.stats.runs === before + 1);
    controller.abort('enough');
    const r = await call;
    expect(r.error?.code).toBe('E_CANCELLED');
    // The worker's own record of the call says it was cancelled there, not that it ran to its end.
    await waitFor(
      'the worker to record the cancellation',
      async () => worker.running === 0 && (await ledger.listExecutions({ tool: 'mark', errorCode: 'E_CANCELLED' })).length === 1,
    );
    const [rec] = await ledger.listExecutions({ tool: 'mark', errorCode: 'E_CANCELLED' });
    expect(rec!.status).toBe('failed');
  });

  it('a call to a tool the worker lacks is E_TOOL_NOT_FOUND saying what differs', async () => {
    const other = await Corral.create({ bundled: false, store: false, executor: remote({ servers: nats.url }) });
    try {
      // Same name and version as the worker's echo, other bytes.
      const echo = local.registry.resolve('echo');
      const wasm = readFileSync(new URL('../fixtures/tools/exit-fail/exit-fail.wasm', import.meta.url));
      await other.register({ ...echo.spec, component: 'x.wasm' }, wasm);
      const r = await other.invoke('echo', {});
      expect(r.error?.code).toBe('E_TOOL_NOT_FOUND');
      expect(r.error?.message).toMatch(/other wasm than the caller's/);
    } finally {
      await other.close();
    }
  });
});

describe('the worker against hostile messages', () => {
  it('terms a malformed message, answers it with E_INPUT_VALIDATION, and keeps serving', async () => {
    const key = crypto.randomUUID();
    const bad = await publishCall(nc, 'echo', new TextEncoder().encode('{"not":"a call"}'), key);
    const reply = await bad.reply;
    const decoded = decodeReply(reply!, 1024);
    expect(decoded).toMatchObject({ kind: 'error', error: { code: 'E_INPUT_VALIDATION' } });
    // No key at all: nobody to answer, still termed; a body claiming another tool than its subject, too.
    const refused = worker.stats.refused;
    (await publishCall(nc, 'echo', new Uint8Array([0x43, 0x46, 0x43, 9, 0, 0, 0, 0]), null)).stop();
    const wrongSubject = await publishCall(nc, 'echo', encodeCall(callFor(local.registry, 'exit-fail', {})), crypto.randomUUID());
    expect(decodeReply((await wrongSubject.reply)!, 1024)).toMatchObject({ kind: 'error', error: { code: 'E_INPUT_VALIDATION' } });
    await waitFor('the worker to refuse both', () => worker.stats.refused === refused + 2);
    // Nothing is left to deliver or redeliver (nats-server 2.9 keeps a termed message in a work queue, but never delivers it again).
    const jsm = await jetstreamManager(nc);
    await waitFor('the consumer to have nothing pending', async () => {
      const info = await jsm.consumers.info(STREAM, DEFAULT_CONSUMER);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    });
    const r = await client.invoke('echo', { still: 'serving' });
    expect(r).toMatchObject({ ok: true, output: { still: 'serving' } });
  });
});

describe('the worker against calls that ask for more than the spec allows', () => {
  it('refuses a call whose limits, variables or mounts the spec does not give, without running it', async () => {
    const before = runs.get('echo') ?? 0;
    const asks: [Partial<CallMessage>, RegExp][] = [
      [{ memory_limit_bytes: 2 ** 40 }, /memory limit is above the spec's 64 MiB/],
      [{ env: { SECRET: 'x' } }, /SECRET are not listed/],
      [{ mounts: [{ guest: '/etc', access: 'read', tree: {} }] }, /mount \/etc is not declared/],
      [{ output_limit_bytes: 2 ** 30 }, /output limit is above what a reply can carry/],
    ];
    for (const [ask, message] of asks) {
      const key = crypto.randomUUID();
      const sent = await publishCall(nc, 'echo', encodeCall({ ...callFor(local.registry, 'echo', {}), ...ask }), key);
      const reply = decodeReply((await sent.reply)!, 1024);
      expect(reply).toMatchObject({ kind: 'error', error: { code: 'E_INPUT_VALIDATION' } });
      expect(reply.kind === 'error' && reply.error.message).toMatch(message);
    }
    expect(runs.get('echo') ?? 0).toBe(before);
  });
});

describe('exactly-once results', () => {
  it('answers a redelivered call whose result is recorded from the record, without running it again', async () => {
    const key = crypto.randomUUID();
    const body = encodeCall(callFor(local.registry, 'echo', { once: key }));
    const before = runs.get('echo') ?? 0;
    const first = await publishCall(nc, 'echo', body, key);
    const firstReply = (await first.reply)!;
    // The same call again (another Nats-Msg-Id, as after the dedupe window or a re-publish).
    const second = await publishCall(nc, 'echo', body, key);
    const secondReply = (await second.reply)!;
    expect(runs.get('echo')).toBe(before + 1);
    expect(Buffer.from(secondReply).equals(Buffer.from(firstReply))).toBe(true);
    const decoded = decodeReply(secondReply, 1 << 20);
    expect(decoded.kind === 'result' && JSON.parse(new TextDecoder().decode(decoded.result.stdout))).toEqual({ once: key });
    expect((await ledger.getExecution(key))?.status).toBe('ok');
  });

  it('runs again a call whose intent is recorded without an outcome, and records the retry', async () => {
    const key = crypto.randomUUID();
    const call = callFor(local.registry, 'echo', { retried: key });
    // What a worker that died mid-call leaves: the intent, no outcome.
    await ledger.beginExecution({
      id: key,
      decision_id: null,
      tool: 'echo',
      version: call.version,
      wasm_sha256: call.wasm_sha256,
      // The same call: a different input under the key would be refused (another call's key).
      input_sha256: createHash('sha256').update(call.stdin).digest('hex'),
      input_json: null,
      intent_ns: '1',
    });
    const before = runs.get('echo') ?? 0;
    const sent = await publishCall(nc, 'echo', encodeCall(call), key);
    const decoded = decodeReply((await sent.reply)!, 1 << 20);
    expect(decoded.kind).toBe('result');
    expect(runs.get('echo')).toBe(before + 1);
    expect((await ledger.getExecution(key))?.status).toBe('ok');
    const audit = await ledger.listAudit({ action: 'fleet_retry' });
    expect(audit.map((e) => e.detail.execution_id)).toContain(key);
  });
});
