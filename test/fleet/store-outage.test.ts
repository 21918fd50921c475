// A fleet worker whose PostgreSQL goes away for longer than a few redeliveries
// last: the call that arrives meanwhile is not given up on (each redelivery
// counts towards max_deliver, after which JetStream never delivers it again);
// it is answered and recorded once the database is back, within its caller's wait.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { Corral } from '@corral/node';
import { FleetWorker, remote, type WorkerEvent } from '@corral/fleet';
import { PostgresStore } from '@corral/postgres';
import { startNats, type NatsServer } from '../helpers/nats.js';
import { startPostgres, type PostgresCluster } from '../helpers/postgres.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/tools/', import.meta.url));

let nats: NatsServer;
let pg: PostgresCluster;
let local: Corral;
let client: Corral;
let store: PostgresStore;
let worker: FleetWorker;
const events: WorkerEvent[] = [];

beforeAll(async () => {
  [nats, pg] = await Promise.all([startNats(), startPostgres()]);
  store = await PostgresStore.open(await pg.createDatabase('outage'), { connectTimeoutMs: 1000 });
  local = await Corral.create({ size: 1, bundled: false, toolDirs: [FIXTURES], store: false });
  // The defaults an operator has: 5 deliveries at most.
  worker = await FleetWorker.start({
    servers: nats.url,
    registry: local.registry,
    executor: local.executor,
    ledger: store,
    ackWaitMs: 2000,
    onEvent: (e) => events.push(e),
  });
  client = await Corral.create({ bundled: false, toolDirs: [FIXTURES], store: false, executor: remote({ servers: nats.url }) });
}, 120_000);

afterAll(async () => {
  await client?.close();
  await worker?.close();
  await local?.close();
  await store?.close();
  await nats?.stop();
  await pg?.destroy();
});

describe('a fleet worker while its store is down', () => {
  it('holds a call until PostgreSQL is back (15 s), then runs it once and records it', async () => {
    expect(await client.invoke('echo', { before: true })).toMatchObject({ ok: true });
    await pg.stop('fast');
    const call = client.invoke('echo', { during: 'outage' });
    await new Promise((r) => setTimeout(r, 15_000));
    const failedMeanwhile = events.filter((e) => e.event === 'store_error').length;
    await pg.start();
    const result = await call;
    expect(result).toMatchObject({ ok: true, output: { during: 'outage' } });
    expect(failedMeanwhile).toBeGreaterThan(0);
    const recorded = await store.listExecutions({ tool: 'echo' });
    expect(recorded.map((r) => r.status).sort()).toEqual(['ok', 'ok']);
    expect(events.filter((e) => e.event === 'run')).toHaveLength(2);
  }, 90_000);
});
