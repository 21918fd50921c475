// What remote() answers when the fleet cannot: no server, no worker, a call
// or a result too large for NATS. Each is a stable code the caller (or a
// router that falls back to local) can branch on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { CorralError, ErrorCodes, type ExecutionOutcome, type Executor } from '@corral/core';
import { Corral } from '@corral/node';
import { DEFAULT_CONSUMER, FleetWorker, MemoryLedger, STREAM, remote, type WorkerEvent } from '@corral/fleet';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { startNats, type NatsServer } from '../helpers/nats.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/tools/', import.meta.url));

let nats: NatsServer;
let local: Corral;
let client: Corral;

beforeAll(async () => {
  nats = await startNats();
  local = await Corral.create({ size: 1, bundled: false, toolDirs: [FIXTURES], store: false });
  client = await Corral.create({
    bundled: false,
    toolDirs: [FIXTURES],
    store: false,
    executor: remote({ servers: nats.url, queueTimeoutMs: 300 }),
  });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await local?.close();
  await nats?.stop();
});

describe('remote() when the fleet cannot answer', () => {
  it('no server: E_RESOURCE_EXHAUSTED, resource fleet, reason unreachable', async () => {
    const stopped = await startNats();
    const url = stopped.url;
    await stopped.stop();
    const offline = await Corral.create({ bundled: false, toolDirs: [FIXTURES], store: false, executor: remote({ servers: url }) });
    try {
      const r = await offline.invoke('echo', {});
      expect(r.error).toMatchObject({
        code: 'E_RESOURCE_EXHAUSTED',
        retryable: true,
        details: { resource: 'fleet', reason: 'unreachable', servers: url },
      });
    } finally {
      await offline.close();
    }
  });

  it('a server list (or an executor) that is not one is E_INPUT_VALIDATION naming the option', async () => {
    expect(() => remote({ servers: 'http://example.com/' })).toThrow(
      expect.objectContaining({ code: 'E_INPUT_VALIDATION', details: { option: 'servers' } }),
    );
    expect(() => remote({} as never)).toThrow(expect.objectContaining({ code: 'E_INPUT_VALIDATION' }));
    await expect(Corral.create({ bundled: false, store: false, executor: {} as never })).rejects.toMatchObject({
      code: 'E_INPUT_VALIDATION',
      details: { option: 'executor' },
    });
  });

  it('no worker: no_reply after the time limit plus the queueing allowance, and the call never runs later', async () => {
    const r = await client.invoke('echo', { stale: true }, { timeoutMs: 200 });
    expect(r.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'fleet', reason: 'no_reply', waited_ms: 500 } });
    // A worker that comes up now finds nothing of that call: it was taken back out of the stream.
    const ran: unknown[] = [];
    const counting: Executor = {
      execute: (request) => {
        ran.push(JSON.parse(new TextDecoder().decode(request.stdin)));
        return local.executor.execute(request);
      },
    };
    const worker = await FleetWorker.start({ servers: nats.url, registry: local.registry, executor: counting, ledger: new MemoryLedger() });
    try {
      const fresh = await client.invoke('echo', { fresh: true }, { timeoutMs: 5000 });
      expect(fresh).toMatchObject({ ok: true, output: { fresh: true } });
      expect(ran).toEqual([{ fresh: true }]);

      // A result larger than NATS carries (max_payload, 1 MB by default) is a classified error, not a lost reply.
      const flood = await client.invoke('stdout-flood', {}, { timeoutMs: 5000 });
      expect(flood.error).toMatchObject({
        code: 'E_RESOURCE_EXHAUSTED',
        details: { resource: 'fleet', reason: 'message_too_large', max_payload: 1048576 },
      });
    } finally {
      await worker.close();
    }
  });

  it('a call larger than NATS carries is refused before it is sent', async () => {
    const r = await client.invoke('echo', { big: 'x'.repeat(2 * 1024 * 1024) });
    expect(r.error).toMatchObject({
      code: 'E_RESOURCE_EXHAUSTED',
      details: { resource: 'fleet', reason: 'message_too_large', max_payload: 1048576 },
    });
    expect((r.error?.details as { message_bytes?: number } | undefined)?.message_bytes).toBeGreaterThan(2 * 1024 * 1024);
  });
});

describe('a nats-server restart', () => {
  /** A worker in this process and a patient caller through remote(), for `use`; both closed after. */
  async function withFleet(options: { concurrency?: number; onEvent?: (e: WorkerEvent) => void }, use: (caller: Corral) => Promise<void>) {
    const worker = await FleetWorker.start({
      servers: nats.url,
      registry: local.registry,
      executor: local.executor,
      ledger: new MemoryLedger(),
      ...options,
    });
    const caller = await Corral.create({
      bundled: false,
      toolDirs: [FIXTURES],
      store: false,
      executor: remote({ servers: nats.url, queueTimeoutMs: 30_000 }),
    });
    try {
      await use(caller);
    } finally {
      await caller.close();
      await worker.close();
    }
  }

  it('the worker and the caller reconnect and the next call is answered', async () => {
    await withFleet({}, async (caller) => {
      expect(await caller.invoke('echo', { before: true })).toMatchObject({ ok: true, output: { before: true } });
      await nats.restart();
      expect(await caller.invoke('echo', { after: true })).toMatchObject({ ok: true, output: { after: true } });
    });
  }, 90_000);

  it('a worker says once that pulls stopped working and once that they resumed, not at every retry', async () => {
    const events: WorkerEvent[] = [];
    await withFleet({ concurrency: 2, onEvent: (e) => events.push(e) }, async (caller) => {
      await nats.halt();
      // Long enough for several failed pulls in each of the two lanes (one every 0.5 s once a pull fails).
      await new Promise((r) => setTimeout(r, 6000));
      await nats.start();
      expect(await caller.invoke('echo', { back: true })).toMatchObject({ ok: true, output: { back: true } });
    });
    const paused = events.filter((e) => e.event === 'pull_paused');
    const resumed = events.filter((e) => e.event === 'pull_resumed');
    expect(paused).toHaveLength(1);
    expect(resumed).toHaveLength(1);
    expect(resumed[0]).toMatchObject({ paused_ms: expect.any(Number) });
    expect((resumed[0] as { paused_ms: number }).paused_ms).toBeGreaterThan(1000);
    expect(events.filter((e) => e.event === 'error')).toEqual([]);
  }, 90_000);
});

describe('a worker whose store fails to record a result', () => {
  it('answers at once, holds the call and records its result when the store works again: run once, acked once', async () => {
    // A real MemoryLedger whose first finishCall fails, as a database that went away for a moment would.
    class FlakyLedger extends MemoryLedger {
      failures = 1;
      override async finishCall(key: string, outcome: ExecutionOutcome, result: Uint8Array): Promise<boolean> {
        if (this.failures-- > 0) throw new CorralError(ErrorCodes.STORE, 'Snapshot store flaky: connection lost', { store: 'flaky' });
        return super.finishCall(key, outcome, result);
      }
    }
    const ledger = new FlakyLedger();
    let runs = 0;
    const counting: Executor = {
      execute: (request) => {
        runs++;
        return local.executor.execute(request);
      },
    };
    const worker = await FleetWorker.start({ servers: nats.url, registry: local.registry, executor: counting, ledger });
    const patient = await Corral.create({
      bundled: false,
      toolDirs: [FIXTURES],
      store: false,
      executor: remote({ servers: nats.url, queueTimeoutMs: 30_000 }),
    });
    try {
      // The caller is answered at once (the result exists), though it is not recorded yet.
      expect(await patient.invoke('echo', { flaky: true })).toMatchObject({ ok: true, output: { flaky: true } });
      for (let i = 0; i < 600 && (await ledger.listExecutions({ status: 'ok' })).length === 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      const [done] = await ledger.listExecutions({ tool: 'echo' });
      expect(done?.status).toBe('ok');
      expect(ledger.failures).toBe(-1);
      // Not handed back to run again (each hand-back spends one of max_deliver): acked once recorded.
      const nc = await connect({ servers: nats.url });
      const jsm = await jetstreamManager(nc);
      for (let i = 0; i < 200 && (await jsm.consumers.info(STREAM, DEFAULT_CONSUMER)).num_ack_pending > 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      const pending = (await jsm.consumers.info(STREAM, DEFAULT_CONSUMER)).num_ack_pending;
      await nc.close();
      expect(pending).toBe(0);
      expect(runs).toBe(1);
      expect(await ledger.listAudit({ action: 'fleet_retry' })).toEqual([]);
    } finally {
      await patient.close();
      await worker.close();
    }
  }, 60_000);
});
