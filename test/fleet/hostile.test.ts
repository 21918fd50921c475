// The fleet against a hostile publisher on its NATS server: calls that reuse
// another call's key, messages the worker refuses, replies from a worker
// that lies. Each test fails if the hole it names is open.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import type { Executor } from '@corral/core';
import { Corral } from '@corral/node';
import {
  CALLS_PREFIX,
  FleetWorker,
  HEADER_KEY,
  MemoryLedger,
  STREAM,
  remote,
  routed,
  decodeReply,
  encodeCall,
  encodeReply,
} from '@corral/fleet';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { startNats, type NatsServer } from '../helpers/nats.js';
import { callFor, publishCall } from '../helpers/fleet-calls.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/tools/', import.meta.url));

let nats: NatsServer;
let local: Corral;
let ledger: MemoryLedger;
let worker: FleetWorker;
let nc: NatsConnection;
const ran: unknown[] = [];

beforeAll(async () => {
  nats = await startNats();
  local = await Corral.create({ size: 1, bundled: false, toolDirs: [FIXTURES], store: false });
  const recording: Executor = {
    execute: (request) => {
      ran.push(JSON.parse(new TextDecoder().decode(request.stdin)));
      return local.executor.execute(request);
    },
  };
  ledger = new MemoryLedger();
  worker = await FleetWorker.start({ servers: nats.url, registry: local.registry, executor: recording, ledger });
  nc = await connect({ servers: nats.url });
}, 60_000);

afterAll(async () => {
  await worker?.close();
  await local?.close();
  await nc?.close();
  await nats?.stop();
});

/** Publish a call under `key` with a fresh reply inbox, and wait for the one answer. */
async function send(tool: string, body: Uint8Array, key: string): Promise<Uint8Array> {
  const reply = await (await publishCall(nc, tool, body, key)).reply;
  if (!reply) throw new Error('no reply');
  return reply;
}

const stdoutOf = (reply: Uint8Array) => {
  const r = decodeReply(reply, 1 << 20);
  return r.kind === 'result' ? JSON.parse(new TextDecoder().decode(r.result.stdout)) : r;
};

describe('a call key is one call', () => {
  it("another input under a recorded key is refused, not answered with that call's result", async () => {
    const key = crypto.randomUUID();
    expect(stdoutOf(await send('echo', encodeCall(callFor(local.registry, 'echo', { secret: 'victim' })), key))).toEqual({
      secret: 'victim',
    });
    // Someone who saw the key publishes their own call under it, answered on their own inbox.
    const forged = decodeReply(await send('echo', encodeCall(callFor(local.registry, 'echo', { mine: true })), key), 1 << 20);
    expect(forged).toMatchObject({ kind: 'error', error: { code: 'E_INPUT_VALIDATION' } });
    expect(forged.kind === 'error' && forged.error.message).toMatch(/another call's.*input_sha256/);
    // The same call again is still answered from its record, and nothing ran twice.
    expect(stdoutOf(await send('echo', encodeCall(callFor(local.registry, 'echo', { secret: 'victim' })), key))).toEqual({
      secret: 'victim',
    });
    expect(ran.filter((r) => JSON.stringify(r).includes('victim'))).toHaveLength(1);
    expect(ran).not.toContainEqual({ mine: true });
  });

  it("another tool under an interrupted call's key does not run as that call's retry", async () => {
    const key = crypto.randomUUID();
    const echo = callFor(local.registry, 'echo', { first: true });
    await ledger.beginExecution({
      id: key,
      decision_id: null,
      tool: 'echo',
      version: echo.version,
      wasm_sha256: echo.wasm_sha256,
      input_sha256: null,
      input_json: null,
      intent_ns: '1',
    });
    const forged = decodeReply(await send('exit-fail', encodeCall(callFor(local.registry, 'exit-fail', {})), key), 1 << 20);
    expect(forged).toMatchObject({ kind: 'error', error: { code: 'E_INPUT_VALIDATION' } });
    expect((await ledger.getExecution(key))?.status).toBe('interrupted');
  });
});

describe('what the worker refuses leaves the stream', () => {
  it('a malformed message is gone from the stream once refused, so a flood of them does not fill its disk', async () => {
    const jsm = await jetstreamManager(nc);
    const before = worker.stats.refused;
    for (let i = 0; i < 20; i++) {
      const h = headers();
      h.set(HEADER_KEY, crypto.randomUUID());
      await jetstream(nc).publish(`${CALLS_PREFIX}echo`, new Uint8Array(1000), { headers: h });
    }
    for (let i = 0; i < 400 && worker.stats.refused < before + 20; i++) await new Promise((r) => setTimeout(r, 50));
    expect(worker.stats.refused).toBe(before + 20);
    for (let i = 0; i < 100 && (await jsm.streams.info(STREAM)).state.messages > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await jsm.streams.info(STREAM)).state).toMatchObject({ messages: 0 });
  });
});

describe('routed() and a call the fleet ran', () => {
  it('a result too large to carry back (or a worker saying the fleet could not take it) is not run again locally', async () => {
    let localRuns = 0;
    const host = await Corral.create({
      bundled: false,
      toolDirs: [FIXTURES],
      store: false,
      size: 1,
      executor: (local) =>
        routed({
          local: { execute: (r) => (localRuns++, local.execute(r)) },
          localLoad: local.pool,
          fleet: remote({ servers: nats.url }),
          policy: { tools: { 'stdout-flood': 'fleet' } },
        }),
    });
    try {
      const mark = crypto.randomUUID();
      const r = await host.invoke('stdout-flood', { mark }, { timeoutMs: 2000 });
      // It ran in the fleet (once), and its caller hears why nothing came back, not a second, local run's result.
      expect(ran).toContainEqual({ mark });
      expect(localRuns).toBe(0);
      expect(r.error).toMatchObject({
        code: 'E_RESOURCE_EXHAUSTED',
        details: { resource: 'fleet', reason: 'message_too_large', delivered: true },
      });
    } finally {
      await host.close();
    }
  });
});

describe("a worker's reply is untrusted", () => {
  it('a ran_on other than "fleet NAME" (claiming a local run, or carrying terminal escapes) is refused', () => {
    const reply = (ranOn: string) =>
      encodeReply({ kind: 'result', result: { exitCode: 0, stdout: new Uint8Array(), stderr: new Uint8Array(), durationMs: 1, ranOn } });
    expect(decodeReply(reply('fleet w1.example:4@x'), 10)).toMatchObject({ kind: 'result', result: { ranOn: 'fleet w1.example:4@x' } });
    for (const lie of ['local: a local worker is free', 'fleet w1\u001b]0;pwned\u0007', 'fleet ', `fleet ${'w'.repeat(65)}`])
      expect(() => decodeReply(reply(lie), 10)).toThrow(/ran_on is not "fleet NAME"/);
  });
});

describe("the host's own options", () => {
  it('a reply prefix that would let a call name any subject (none, a wildcard, the calls stream) is E_INPUT_VALIDATION', async () => {
    for (const replyPrefix of ['', '>', 'corral.', '_INBOX', 42 as unknown as string]) {
      await expect(
        FleetWorker.start({
          servers: nats.url,
          registry: local.registry,
          executor: local.executor,
          ledger: new MemoryLedger(),
          replyPrefix,
        }),
      ).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION', details: { option: 'replyPrefix' } });
    }
  });
});

describe("a worker's memory ledger", () => {
  it('keeps at most maxCalls calls, the newest, results and snapshots together, so a long-lived worker does not grow without bound', async () => {
    const small = new MemoryLedger('bounded', { maxCalls: 10 });
    const keys: string[] = [];
    for (let i = 0; i < 35; i++) {
      const key = crypto.randomUUID();
      keys.push(key);
      const intent = {
        id: key,
        decision_id: null,
        tool: 'echo',
        version: '1.0.0',
        wasm_sha256: null,
        input_sha256: null,
        input_json: null,
      };
      await small.beginExecution({ ...intent, intent_ns: String(1000 + i) });
      const outcome = { result_ns: String(2000 + i), exit_code: 0, error_code: null, error_message: null, stdout_sha256: null };
      const rest = {
        stdout_head: '',
        stdout_tail: '',
        stderr_head: '',
        stderr_tail: '',
        duration_ms: 1,
        peak_memory_bytes: null,
        ran_on: null,
      };
      expect(await small.finishCall(key, { ...outcome, ...rest }, new Uint8Array(1000))).toBe(true);
    }
    const kept = (await Promise.all(keys.map((k) => small.getCallResult(k)))).filter(Boolean).length;
    expect(kept).toBeLessThanOrEqual(10);
    expect((await small.listExecutions()).length).toBeLessThanOrEqual(10);
    expect(await small.getCallResult(keys[34]!)).not.toBeNull();
    expect(await small.getCallResult(keys[0]!)).toBeNull();
    expect(await small.getExecution(keys[0]!)).toBeNull();
    expect(() => new MemoryLedger('x', { maxBytes: 0 })).toThrow(expect.objectContaining({ code: 'E_INPUT_VALIDATION' }));
  });
});
