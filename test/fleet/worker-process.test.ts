// `corral worker` as real processes against a real nats-server: it drains on
// SIGTERM (the call in flight finishes and is answered, exit 0), and a call
// whose worker is SIGKILLed mid-run goes to another worker process and comes
// back to its caller once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Corral } from '@corral/node';
import { remote } from '@corral/fleet';
import { startNats, type NatsServer } from '../helpers/nats.js';
import {
  CLI,
  FIXTURES,
  spawnWorkerProcess,
  startWorkerProcess,
  stopAllWorkerProcesses,
  waitFor,
  type WorkerProcess,
} from '../helpers/worker-cli.js';

const workspace = [{ guest: '/workspace', access: 'read-write' as const }];
const BUNDLED = dirname(createRequire(import.meta.url).resolve('@corral/tools/package.json'));

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

/** `wasm` with a custom section appended (a component or a module may carry any number): the same code, other bytes. */
function withCustomSection(wasm: Uint8Array, text: string): Uint8Array {
  const name = Buffer.from('corral-test');
  const payload = Buffer.from(text);
  const body = Buffer.concat([Buffer.from([name.length]), name, payload]);
  if (body.length > 127) throw new Error('withCustomSection: keep the text short (one-byte LEB128 size)');
  return Buffer.concat([wasm, Buffer.from([0, body.length]), body]);
}

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
    // It compiled every tool first, and said so.
    const compiled = w.events.find((e) => e.event === 'compiled');
    expect(compiled).toMatchObject({ failed: 0 });
    expect(compiled!.tools).toBeGreaterThan(1);
    expect(await client.invoke('echo', { hello: 'fleet' })).toMatchObject({ ok: true, output: { hello: 'fleet' } });

    const call = client.invoke('mark', { spin_ms: 1500, drained: true }, { mounts: workspace });
    await waitFor('the worker to run the call', () => runsOf(w).some((e) => e.tool === 'mark'), w);
    w.child.kill('SIGTERM');
    const result = await call;
    expect(result).toMatchObject({ ok: true, output: { spin_ms: 1500, drained: true } });
    expect(await w.exited).toEqual({ code: 0, signal: null });
    expect(w.events.map((e) => e.event)).toContain('drained');
  });

  it('says it is compiling its tools before it is ready, and a SIGTERM meanwhile stops it at once with exit 0', async () => {
    // The bundled components as third-party tools (spec and component only) with an empty transpile
    // cache, each with a custom section of its own: no transpile Corral ships matches them, so each
    // is transpiled before it compiles, seconds in all.
    const cache = mkdtempSync(join(tmpdir(), 'corral-worker-cache-'));
    const tools = mkdtempSync(join(tmpdir(), 'corral-worker-tools-'));
    try {
      for (const name of readdirSync(BUNDLED)) {
        if (!existsSync(join(BUNDLED, name, 'tool-spec.json'))) continue;
        const spec = JSON.parse(readFileSync(join(BUNDLED, name, 'tool-spec.json'), 'utf8')) as { component?: string };
        if (!spec.component) continue;
        mkdirSync(join(tools, name));
        copyFileSync(join(BUNDLED, name, 'tool-spec.json'), join(tools, name, 'tool-spec.json'));
        writeFileSync(join(tools, name, spec.component), withCustomSection(readFileSync(join(BUNDLED, name, spec.component)), tools));
      }
      const w = spawnWorkerProcess(['--nats', nats.url, '--no-bundled', '--tools', tools, '--workers', '1'], { CORRAL_CACHE_DIR: cache });
      await waitFor('the worker to start compiling', () => w.events.some((e) => e.event === 'compiling'), w);
      expect(w.events.find((e) => e.event === 'compiling')!.tools).toBeGreaterThanOrEqual(5);
      w.child.kill('SIGTERM');
      expect(await w.exited).toEqual({ code: 0, signal: null });
      const events = w.events.map((e) => e.event);
      expect(events).toContain('stopped');
      expect(events).not.toContain('compiled');
      expect(events).not.toContain('compile_failed'); // the compiles the closing pool cut short are not reported as failures
      expect(w.stdout.join('\n')).not.toMatch(/worker ready/);
    } finally {
      rmSync(cache, { recursive: true, force: true });
      rmSync(tools, { recursive: true, force: true });
    }
  });

  it('names a tool that did not compile, and is ready with the others', async () => {
    const tools = mkdtempSync(join(tmpdir(), 'corral-worker-tools-'));
    try {
      const grep = readFileSync(join(BUNDLED, 'grep', 'grep.wasm'));
      mkdirSync(join(tools, 'broken'));
      writeFileSync(join(tools, 'broken', 'broken.wasm'), grep.subarray(0, grep.length >> 1));
      const spec = JSON.parse(readFileSync(join(BUNDLED, 'grep', 'tool-spec.json'), 'utf8')) as Record<string, unknown>;
      writeFileSync(join(tools, 'broken', 'tool-spec.json'), JSON.stringify({ ...spec, name: 'broken', component: 'broken.wasm' }));
      const w = await startWorker('--tools', tools, '--workers', '1');
      expect(w.events.find((e) => e.event === 'compile_failed')).toMatchObject({ tool: 'broken', code: 'E_REGISTRATION' });
      expect(w.events.find((e) => e.event === 'compiled')).toMatchObject({ failed: 1 });
      expect(w.stdout.find((l) => l.includes('worker ready'))).toMatch(
        /: \d+ tools \(broken@[\d.]+ did not compile: each call of it tries again\), concurrency/,
      );
      w.child.kill('SIGTERM');
      expect((await w.exited).code).toBe(0);
    } finally {
      rmSync(tools, { recursive: true, force: true });
    }
  }, 60_000);

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
