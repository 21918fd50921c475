// `corral worker` as real processes against a real nats-server: it drains on
// SIGTERM (the call in flight finishes and is answered, exit 0), and a call
// whose worker is SIGKILLed mid-run goes to another worker process and comes
// back to its caller once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { Corral } from '@corral/node';
import { remote } from '@corral/fleet';
import { startNats, type NatsServer } from '../helpers/nats.js';
import { CLI, FIXTURES, startWorkerProcess, stopAllWorkerProcesses, waitFor, type WorkerProcess } from '../helpers/worker-cli.js';

const workspace = [{ guest: '/workspace', access: 'read-write' as const }];

let nats: NatsServer;
let client: Corral;

beforeAll(async () => {
  nats = await startNats();
  client = await Corral.create({
    bundled: false,
    toolDirs: [FIXTURES],
    store: false,
    executor: remote({ servers: nats.url, queueTimeoutMs: 60_000 }),
  });
}, 60_000);

afterAll(async () => {
  await stopAllWorkerProcesses();
  await client?.close();
  await nats?.stop();
});

const startWorker = (...extra: string[]) => startWorkerProcess(nats.url, ...extra);

const runsOf = (w: WorkerProcess, key?: string) => w.events.filter((e) => e.event === 'run' && (key === undefined || e.key === key));

describe('corral worker', () => {
  it('refuses misuse with exit 2 and an unreachable server with exit 1, saying which', () => {
    const run = (...args: string[]) => spawnSync(process.execPath, [CLI, 'worker', ...args], { encoding: 'utf8' });
    const noNats = run();
    expect(noNats.status).toBe(2);
    expect(noNats.stderr).toMatch(/--nats URL is required/);
    const badUrl = run('--nats', 'http://x/');
    expect(badUrl.status).toBe(2);
    expect(badUrl.stderr).toMatch(/must be a NATS URL/);
    const badCount = run('--nats', nats.url, '--concurrency', '0');
    expect(badCount.status).toBe(2);
    const down = run('--nats', 'nats://127.0.0.1:1', '--no-bundled');
    expect(down.status).toBe(1);
    expect(down.stderr).toMatch(/could not be reached.*E_RESOURCE_EXHAUSTED/);
  });

  it('answers a call, and on SIGTERM finishes the call in flight, answers it and exits 0', async () => {
    const w = await startWorker('--concurrency', '1');
    expect(w.stdout[0]).toMatch(/worker ready on nats:\/\/127\.0\.0\.1:\d+: \d+ tools, concurrency 1/);
    expect(await client.invoke('echo', { hello: 'fleet' })).toMatchObject({ ok: true, output: { hello: 'fleet' } });

    const call = client.invoke('mark', { spin_ms: 1500, drained: true }, { mounts: workspace });
    await waitFor('the worker to run the call', () => runsOf(w).some((e) => e.tool === 'mark'), w);
    w.child.kill('SIGTERM');
    const result = await call;
    expect(result).toMatchObject({ ok: true, output: { spin_ms: 1500, drained: true } });
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(w.events.map((e) => e.event)).toContain('drained');
  });

  it('a worker SIGKILLed mid-call: the call runs again in another worker process and its caller gets one result', async () => {
    const a = await startWorker('--ack-wait', '2000');
    const call = client.invoke('mark', { spin_ms: 6000, killed: true }, { mounts: workspace });
    await waitFor('worker A to run the call', () => runsOf(a).some((e) => e.tool === 'mark'), a);
    const key = runsOf(a).find((e) => e.tool === 'mark')!.key as string;
    a.child.kill('SIGKILL');
    expect((await a.exited).signal).toBe('SIGKILL');

    // Only now is there another worker: the call can only reach it as a redelivery.
    const b = await startWorker('--ack-wait', '2000');
    await waitFor('worker B to run the call', () => runsOf(b, key).length > 0, b);
    expect(runsOf(b, key)[0]).toMatchObject({ delivery: 2, tool: 'mark' });
    // B records nothing of A's (its ledger is its own memory), so it is a plain second run, not an answer from a record.
    expect(await call).toMatchObject({ ok: true, output: { spin_ms: 6000, killed: true } });
    await waitFor("worker B's record of the call", () => b.events.some((e) => e.event === 'done' && e.key === key), b);
    expect(runsOf(b, key)).toHaveLength(1);
    expect(b.events.filter((e) => e.event === 'done' && e.key === key)).toHaveLength(1);
    b.child.kill('SIGTERM');
    expect((await b.exited).code).toBe(0);
  }, 120_000);
});
