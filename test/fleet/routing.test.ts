// Hybrid routing with a real nats-server and a real fleet worker: a host
// whose calls go local or to the fleet by policy and input size; with the
// fleet stopped they run locally and their snapshots say so; with it back
// they go out again. Each call's snapshot (the caller's and the worker's)
// says where it ran and why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { MemoryStore, type InvokeResult } from '@corral/core';
import { Corral } from '@corral/node';
import { FleetWorker, MemoryLedger, remote, routed, type RemoteExecutor } from '@corral/fleet';
import { startNats, type NatsServer } from '../helpers/nats.js';

const example = JSON.parse(readFileSync(new URL('../../wasm-tools/diff-summary/examples/example.diff.json', import.meta.url), 'utf8'));

let nats: NatsServer;
let fleetHost: Corral;
let ledger: MemoryLedger;
let worker: FleetWorker;
let fleet: RemoteExecutor;
let client: Corral;
const clientStore = new MemoryStore('client snapshots');

beforeAll(async () => {
  nats = await startNats();
  fleetHost = await Corral.create({ size: 1, store: false });
  ledger = new MemoryLedger();
  worker = await FleetWorker.start({
    servers: nats.url,
    registry: fleetHost.registry,
    executor: fleetHost.executor,
    ledger,
    name: 'w1',
    ackWaitMs: 5000,
  });
  fleet = remote({ servers: nats.url, queueTimeoutMs: 20_000 });
  client = await Corral.create({
    size: 1,
    store: clientStore,
    // Small inputs stay here while a local worker is free; 64 KiB and more go out.
    executor: (local) => routed({ local, fleet, policy: { fleetFromBytes: 64 * 1024 } }),
  });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await worker?.close();
  await fleetHost?.close();
  await nats?.stop();
});

async function ranOn(r: InvokeResult): Promise<string | null | undefined> {
  expect(r.snapshot?.error).toBeUndefined();
  return (await clientStore.getExecution(r.snapshot!.id))?.ran_on;
}

/** A diff of about `kb` KiB, so the input's size decides the route. */
function diffOf(kb: number): { diff: string } {
  const line = `+${'x'.repeat(99)}\n`;
  return { diff: `diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -0,0 +1,${kb * 10} @@\n${line.repeat(kb * 10)}` };
}

/** Calls until one runs where `where` says (the client sees the fleet come and go within seconds). */
async function until(where: RegExp, input: unknown): Promise<{ result: InvokeResult; ran: string }> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await client.invoke('diff-summary', input);
    const ran = String(await ranOn(result));
    if (where.test(ran) || Date.now() > deadline) return { result, ran };
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('routing between the local pool and the fleet', () => {
  it('keeps a small call local and sends a large one to the fleet, each snapshot saying where and why', async () => {
    const small = await client.invoke('diff-summary', example);
    expect(small.ok).toBe(true);
    expect(await ranOn(small)).toBe('local: a local worker is free');

    const { result, ran } = await until(/^fleet/, diffOf(100));
    expect(result.ok, JSON.stringify(result.error)).toBe(true);
    // The worker, the call's key (its snapshot's id in the fleet's store) and why.
    const [, key] = /^fleet w1, call ([0-9a-f-]{36}): the input is \d+ KiB$/.exec(ran) ?? [];
    expect(key, ran).toBeDefined();
    expect(result.output).toMatchObject({ totals: { files: 1, additions: 1000 } });
    // The worker recorded the same call, under its own name.
    expect(await ledger.getExecution(key!)).toMatchObject({ ran_on: 'fleet w1', status: 'ok', tool: 'diff-summary' });
  });

  it('runs locally and says so while the fleet is stopped, and sends calls out again when it is back', async () => {
    await nats.halt();
    try {
      const { result, ran } = await until(/^local/, diffOf(100));
      expect(result.ok, JSON.stringify(result.error)).toBe(true);
      expect(ran).toMatch(/^local: (the fleet is unreachable|the fleet could not take it)/);
      expect(result.output).toMatchObject({ totals: { files: 1, additions: 1000 } });
    } finally {
      await nats.start();
    }
    const { result, ran } = await until(/^fleet/, diffOf(100));
    expect(result.ok, JSON.stringify(result.error)).toBe(true);
    expect(ran).toMatch(/^fleet w1, call [0-9a-f-]{36}: the input is/);
  }, 90_000);

  it('refuses a policy that is not one (E_INPUT_VALIDATION naming the option)', () => {
    const local = fleetHost.executor;
    expect(() => routed({ local, fleet, policy: { fleetFromBytes: -1 } })).toThrow(
      expect.objectContaining({ code: 'E_INPUT_VALIDATION', details: { option: 'policy.fleetFromBytes' } }),
    );
    expect(() => routed({ local, fleet, policy: { tools: { 'diff-summary': 'cloud' as 'fleet' } } })).toThrow(
      expect.objectContaining({ code: 'E_INPUT_VALIDATION' }),
    );
  });
});
