// Operating a fleet of real `corral worker` processes against a real
// nats-server: `corral fleet status` (workers, queue depth; an unreachable
// server; no worker; hostile answers) and each worker's /metrics scraped
// after real calls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Corral } from '@corral/node';
import { STATUS_LIMITS, STATUS_SUBJECT, encodeCall, fleetStatus, remote, serveStatus } from '@corral/fleet';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNats, type NatsServer } from '../helpers/nats.js';
import { callFor, publishCall } from '../helpers/fleet-calls.js';
import { FIXTURES, runCli, startWorkerProcess, stopAllWorkerProcesses, waitFor, type WorkerProcess } from '../helpers/worker-cli.js';

const workspace = [{ guest: '/workspace', access: 'read-write' as const }];

let nats: NatsServer;
let client: Corral;
let nc: NatsConnection;

beforeAll(async () => {
  nats = await startNats();
  client = await Corral.create({
    bundled: false,
    toolDirs: [FIXTURES],
    store: false,
    executor: remote({ servers: nats.url, queueTimeoutMs: 60_000 }),
  });
  nc = await connect({ servers: nats.url });
}, 60_000);

afterAll(async () => {
  await stopAllWorkerProcesses();
  await client?.close();
  await nc?.close();
  await nats?.stop();
});

/** Publish raw bytes as a call to `subjectTool` with the given key; resolves with the reply (null if none in 20 s). */
/** Publish a call and wait (20 s at most) for its one reply. */
async function publishRaw(tool: string, body: Uint8Array, key: string): Promise<Uint8Array | null> {
  const sent = await publishCall(nc, tool, body, key);
  const timer = setTimeout(sent.stop, 20_000);
  try {
    return await sent.reply;
  } finally {
    clearTimeout(timer);
  }
}

async function scrape(url: string): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/** The value of one sample, e.g. sample(text, 'corral_calls_total', { tool: 'echo', outcome: 'ok' }); undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v) && Object.keys(got).length === Object.keys(labels).length)
      return Number(m[3]);
  }
  return undefined;
}

function labelValues(text: string, label: string): Set<string> {
  return new Set([...text.matchAll(new RegExp(`[{,]${label}="([^"]*)"`, 'g'))].map((m) => m[1]!));
}

interface StatusJson {
  workers: {
    name: string;
    host: string;
    state: string;
    tools: string[];
    tool_count: number;
    concurrency: number;
    running: number;
    runs: number;
    answered_from_record: number;
    retries: number;
    refused: number;
    uptime_s: number;
    metrics: string | null;
  }[];
  unreadable_answers: number;
  queue: { pending: number; ack_pending: number; redelivered: number; waiting_pulls: number } | null;
  queue_problem: string | null;
}

async function statusJson(...extra: string[]): Promise<{ status: number | null; json: StatusJson; stderr: string }> {
  const r = await runCli('fleet', 'status', '--nats', nats.url, '--json', ...extra);
  return { status: r.status, json: JSON.parse(r.stdout) as StatusJson, stderr: r.stderr };
}

describe('corral fleet status', () => {
  it('says plainly when the server is unreachable (exit 1), and refuses misuse (exit 2)', async () => {
    const down = await runCli('fleet', 'status', '--nats', 'nats://127.0.0.1:1');
    expect(down.status).toBe(1);
    expect(down.stderr).toMatch(/nats:\/\/127\.0\.0\.1:1 could not be reached.*\(E_RESOURCE_EXHAUSTED\)/);
    const downJson = await runCli('fleet', 'status', '--nats', 'nats://127.0.0.1:1', '--json');
    expect(downJson.status).toBe(1);
    expect(JSON.parse(downJson.stdout)).toMatchObject({
      ok: false,
      error: { code: 'E_RESOURCE_EXHAUSTED', details: { reason: 'unreachable' } },
    });
    expect((await runCli('fleet', 'status')).status).toBe(2);
    expect((await runCli('fleet', 'status', '--nats', 'http://x/')).stderr).toMatch(/must be a NATS URL/);
    expect((await runCli('fleet', 'status', '--nats', nats.url, '--timeout', 'soon')).status).toBe(2);
    expect((await runCli('fleet', 'stats', '--nats', nats.url)).status).toBe(2);
  });

  it('says when no worker answers (exit 1), with the queue still reported', async () => {
    const human = await runCli('fleet', 'status', '--nats', nats.url, '--timeout', '300');
    expect(human.status).toBe(1);
    expect(human.stdout).toMatch(/Workers: none/);
    // No worker has ever started on this server: there is no stream yet, and it says so.
    expect(human.stdout).toMatch(/no stream CORRAL_CALLS yet/);
    expect(human.stderr).toMatch(/no worker answered within 300 ms/);
  });

  it('lists every worker process with its counters and the queue depth; ignores answers that are not a status', async () => {
    const a = await startWorkerProcess(nats.url, '--name', 'worker-a', '--concurrency', '2');
    const b = await startWorkerProcess(nats.url, '--name', 'worker-b', '--concurrency', '1');
    const calls = Array.from({ length: 6 }, (_, i) => client.invoke('echo', { i }));
    expect((await Promise.all(calls)).every((r) => r.ok)).toBe(true);

    // Someone else answering on the status subject: garbage, and a look-alike with a wrong field.
    const rogue = nc.subscribe(STATUS_SUBJECT, {
      callback: (_e, m) => {
        m.respond(new TextEncoder().encode('not json'));
        m.respond(new TextEncoder().encode(JSON.stringify({ name: 'rogue', state: 'running', runs: -1 })));
      },
    });
    try {
      const { status, json } = await statusJson();
      expect(status).toBe(0);
      expect(json.workers.map((w) => w.name)).toEqual(['worker-a', 'worker-b']);
      expect(json.unreadable_answers).toBe(2);
      const [wa, wb] = json.workers;
      expect(wa).toMatchObject({ state: 'running', concurrency: 2, running: 0, retries: 0, refused: 0, metrics: null });
      expect(wb).toMatchObject({ state: 'running', concurrency: 1 });
      expect(wa!.tools).toContain('echo@1.0.0');
      expect(wa!.tool_count).toBe(wa!.tools.length);
      // Every call ran once, in one of the two.
      expect(wa!.runs + wb!.runs).toBe(6);
      expect(json.queue).toMatchObject({ pending: 0, ack_pending: 0, redelivered: 0 });
    } finally {
      rogue.unsubscribe();
    }

    // A long call in flight, then SIGTERM to its worker: it shows as running, then as draining.
    const long = client.invoke('mark', { spin_ms: 4000 }, { mounts: workspace });
    const runner = await Promise.race([
      waitFor('a worker to run the call', () => a.events.some((e) => e.event === 'run' && e.tool === 'mark')).then(() => a),
      waitFor('a worker to run the call', () => b.events.some((e) => e.event === 'run' && e.tool === 'mark')).then(() => b),
    ]);
    const other = runner === a ? b : a;
    const runnerName = runner === a ? 'worker-a' : 'worker-b';
    const during = await statusJson();
    expect(during.json.workers.find((w) => w.name === runnerName)).toMatchObject({ running: 1, state: 'running' });
    expect(during.json.queue).toMatchObject({ pending: 0, ack_pending: 1 });
    runner.child.kill('SIGTERM');
    await waitFor('the worker to drain', () => runner.events.some((e) => e.event === 'draining'), runner);
    const draining = await statusJson();
    expect(draining.json.workers.find((w) => w.name === runnerName)).toMatchObject({ running: 1, state: 'draining' });
    expect((await long).ok).toBe(true);
    expect((await runner.exited).code).toBe(0);

    // The human table names both columns and workers.
    other.child.kill('SIGTERM');
    await other.exited;
    const after = await statusJson('--timeout', '300');
    expect(after.status).toBe(1);
    expect(after.json.workers).toEqual([]);
    expect(after.json.queue).toMatchObject({ pending: 0, ack_pending: 0 });
  }, 120_000);

  it('a worker with more tools than an answer carries lists fewer, and still says how many', async () => {
    const tools = Array.from({ length: 1000 }, (_, i) => `tool-${i}-${'x'.repeat(50)}@${'1.0.0-'.padEnd(200, 'a')}`);
    const served = serveStatus(nc, () => ({
      name: 'many-tools',
      host: 'here',
      pid: 1,
      state: 'running',
      tools,
      tool_count: tools.length,
      concurrency: 1,
      running: 0,
      runs: 0,
      answered_from_record: 0,
      retries: 0,
      refused: 0,
      started_at: new Date().toISOString(),
      uptime_s: 1,
      metrics: null,
    }));
    try {
      const status = await fleetStatus({ servers: nats.url, timeoutMs: 500 });
      const w = status.workers.find((x) => x.name === 'many-tools');
      expect(w?.tool_count).toBe(1000);
      expect(w!.tools.length).toBeGreaterThan(0);
      expect(w!.tools.length).toBeLessThan(1000);
      expect(JSON.stringify(w).length).toBeLessThanOrEqual(STATUS_LIMITS.answerBytes);
      expect(status.unreadable_answers).toBe(0);
    } finally {
      served.close();
    }
  });

  it('prints a table a person can read', async () => {
    const w = await startWorkerProcess(nats.url, '--name', 'table-worker');
    await client.invoke('echo', { table: true });
    const r = await runCli('fleet', 'status', '--nats', nats.url);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(
      /Queue: stream CORRAL_CALLS, consumer corral-workers\n {2}0 pending, 0 ack pending, 0 redelivered, \d+ idle pulls/,
    );
    expect(r.stdout).toMatch(/NAME +HOST +STATE +TOOLS +CONC +RUNNING +RUN +FROM RECORD +RETRIES +REFUSED +UPTIME/);
    expect(r.stdout).toMatch(/table-worker +\S+ +running +\d+ +1 +0 +1 +0 +0 +0 +\d+s/);
    w.child.kill('SIGTERM');
    await w.exited;
  }, 60_000);
});

describe('corral worker --metrics', () => {
  let w: WorkerProcess;
  let url: string;

  it('refuses a bad address as misuse, and a port in use with a sentence (exit 1)', async () => {
    const bad = await runCli('worker', '--nats', nats.url, '--no-bundled', '--metrics', '9464');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/bad --metrics "9464": expected HOST:PORT/);
    const taken = await startWorkerProcess(nats.url, '--name', 'port-holder', '--metrics', '127.0.0.1:0');
    const port = /metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(taken.stdout.join('\n'))![1]!;
    const clash = await runCli('worker', '--nats', nats.url, '--no-bundled', '--workers', '1', '--metrics', `127.0.0.1:${port}`);
    expect(clash.status).toBe(1);
    expect(clash.stderr).toMatch(/cannot serve metrics on 127\.0\.0\.1:\d+: the port is in use/);
    taken.child.kill('SIGTERM');
    await taken.exited;
  }, 60_000);

  it('serves Prometheus text counting real calls by tool and outcome, with bounded labels', async () => {
    w = await startWorkerProcess(nats.url, '--name', 'metered', '--metrics', '127.0.0.1:0', '--concurrency', '2');
    url = /metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(w.stdout.join('\n'))![1]!;
    // It is the only worker now: every call below reaches it.
    for (let i = 0; i < 3; i++) expect((await client.invoke('echo', { i })).ok).toBe(true);
    const failed = await client.invoke('exit-fail', {});
    expect(failed.ok).toBe(false);

    // The same call twice (same key): the second is answered from the record.
    const key = crypto.randomUUID();
    const body = encodeCall(callFor(client.registry, 'echo', { twice: key }));
    const first = await publishRaw('echo', body, key);
    const second = await publishRaw('echo', body, key);
    expect(second && first && Buffer.from(second).equals(Buffer.from(first))).toBe(true);
    // A malformed message, and a call to a tool no worker has (a name anyone can send).
    expect(await publishRaw('echo', new TextEncoder().encode('garbage'), crypto.randomUUID())).not.toBeNull();
    expect(
      await publishRaw('no-such-tool', encodeCall({ ...callFor(client.registry, 'echo', {}), tool: 'no-such-tool' }), crypto.randomUUID()),
    ).not.toBeNull();

    const { status, type, text } = await scrape(url);
    expect(status).toBe(200);
    expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sample(text, 'corral_calls_total', { tool: 'echo', outcome: 'ok' })).toBe(4);
    expect(sample(text, 'corral_calls_total', { tool: 'exit-fail', outcome: 'error' })).toBe(1);
    expect(sample(text, 'corral_call_errors_total', { tool: 'exit-fail', code: failed.error!.code })).toBe(1);
    expect(sample(text, 'corral_call_duration_seconds_count', { tool: 'echo', outcome: 'ok' })).toBe(4);
    expect(sample(text, 'corral_fleet_answered_from_record_total', { tool: 'echo' })).toBe(1);
    expect(sample(text, 'corral_fleet_refused_total')).toBe(1);
    expect(sample(text, 'corral_calls_total', { tool: '_unknown', outcome: 'error' })).toBe(1);
    expect(sample(text, 'corral_call_errors_total', { tool: '_unknown', code: 'E_TOOL_NOT_FOUND' })).toBe(1);
    expect(sample(text, 'corral_fleet_retries_total', { tool: 'echo' }) ?? 0).toBe(0);
    expect(sample(text, 'corral_fleet_calls_inflight')).toBe(0);
    expect(sample(text, 'corral_fleet_concurrency')).toBe(2);
    expect(sample(text, 'corral_workers')).toBe(1);
    expect(sample(text, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    // Tool labels are the registered tools or _unknown, whatever was sent.
    const registered = new Set(client.registry.list().map((t) => t.spec.name));
    for (const tool of labelValues(text, 'tool')) expect(tool === '_unknown' || registered.has(tool)).toBe(true);

    // fleet status points at the metrics.
    const { json } = await statusJson();
    expect(json.workers.find((x) => x.name === 'metered')).toMatchObject({ metrics: url, answered_from_record: 1, refused: 1 });
  }, 60_000);

  it('shows a call in flight, and answers only GET /metrics', async () => {
    const long = client.invoke('mark', { spin_ms: 2000 }, { mounts: workspace });
    // Running on a sandbox worker (after the worker took it and its component was loaded there).
    let during = await scrape(url);
    for (let i = 0; i < 200 && sample(during.text, 'corral_calls_running') !== 1; i++) {
      await new Promise((r) => setTimeout(r, 50));
      during = await scrape(url);
    }
    expect(sample(during.text, 'corral_calls_running')).toBe(1);
    expect(sample(during.text, 'corral_fleet_calls_inflight')).toBe(1);
    expect((await long).ok).toBe(true);
    expect((await fetch(url.replace('/metrics', '/'))).status).toBe(404);
    expect((await fetch(url, { method: 'POST', body: 'x' })).status).toBe(405);
    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    // The port is closed with the worker.
    await expect(fetch(url)).rejects.toThrow();
  }, 60_000);
});
