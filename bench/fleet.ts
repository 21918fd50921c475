/**
 * `npm run bench:fleet`: a Corral fleet on this machine.
 *
 * Starts nats-server (JetStream) and a PostgreSQL cluster on loopback, then
 * measures, in one run:
 *  - throughput of diff-summary on its small example through 1, 2 and 4
 *    `corral worker` processes (each: 1 sandbox worker, 2 lanes, recording in
 *    PostgreSQL), many concurrent callers in this process (remote()), and
 *    the CPU seconds per call each part used (workers, nats-server,
 *    PostgreSQL, the callers);
 *  - the same calls through the local pool (2 sandbox workers), for scale;
 *  - per-call latency (p50) of one caller, fleet path against local pool;
 *  - the per-message costs the fleet is made of: a JetStream publish+ack
 *    round trip (one at a time and pipelined) with delivery and ack, and a
 *    PostgreSQL intent + finishCall (one at a time and 16 at once).
 *
 *   node bench/dist/fleet.js [--seconds 10] [--callers 32] [--quick]
 *
 * The machine is shared and has 2 cores: every process here competes for
 * them, so the worker counts beyond 2 show contention, not scale-out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { executionIntent, executionOutcome } from '@corral/core/store-kit';
import { remote } from '@corral/fleet';
import { BUNDLED_TOOLS_DIR, Corral } from '@corral/node';
import { PostgresStore } from '@corral/postgres';
import { AckPolicy, RetentionPolicy, StorageType, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers } from '@nats-io/transport-node';
import { cpuSeconds, startNatsServer, startPostgresServer, type BenchServer } from './fleet-servers.js';
import { fmt, median, quantile, table } from './stats.js';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '10' }, callers: { type: 'string', default: '32' }, quick: { type: 'boolean' } },
});
const quick = values.quick === true;
const SECONDS = quick ? 3 : Number(values.seconds);
const CALLERS = Number(values.callers);
const N_SEQ = quick ? 40 : 200;
const N_JS_SEQ = quick ? 200 : 1000;
const N_JS_PIPE = quick ? 2000 : 10_000;
const N_PG_SEQ = quick ? 50 : 300;
const N_PG_CONC = quick ? 300 : 1500;
const WORKER_COUNTS = [1, 2, 4];

const CLI = fileURLToPath(new URL('../../packages/node/bin/corral.js', import.meta.url));
const example = JSON.parse(readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/examples/example.diff.json'), 'utf8')) as { diff: string };
const log = (s: string) => process.stderr.write(`${s}\n`);

interface Worker {
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** `postgres` null: the worker records in memory (no database on the call's path). */
async function startWorker(nats: string, postgres: string | null, name: string): Promise<Worker> {
  const child = spawn(
    process.execPath,
    [
      CLI,
      'worker',
      '--nats',
      nats,
      ...(postgres ? ['--postgres', postgres] : []),
      '--workers',
      '1',
      '--concurrency',
      '2',
      '--name',
      name,
      '--quiet',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let out = '';
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err = (err + c).slice(-4096)));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      if (out.includes('worker ready')) resolve();
    });
    void exited.then((code) => reject(new Error(`worker ${name} exited (${code}): ${err}`)));
  });
  return { child, exited };
}

/** `callers` loops calling back to back until `seconds` pass; calls/s, latencies, failures. */
async function load(corral: Corral, callers: number, seconds: number) {
  const latencies: number[] = [];
  let failed = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        const r = await corral.invoke('diff-summary', example);
        if (r.ok) latencies.push(performance.now() - t);
        else failed++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return {
    rate: latencies.length / elapsed,
    p50: median(latencies),
    p99: quantile(latencies, 0.99),
    calls: latencies.length,
    failed,
    elapsed,
  };
}

async function sequential(corral: Corral, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + 10; i++) {
    const t = performance.now();
    const r = await corral.invoke('diff-summary', example);
    if (!r.ok) throw new Error(`a call failed: ${r.error?.code} ${r.error?.message}`);
    if (i >= 10) out.push(performance.now() - t);
  }
  return out;
}

const cpuOf = (pids: number[]) => cpuSeconds(pids);
const selfCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function benchJetStream(nats: BenchServer) {
  const nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  // As the calls stream is: file storage, work-queue retention, dedupe by Nats-Msg-Id.
  await jsm.streams.add({ name: 'BENCH_JS', subjects: ['bench.js.>'], retention: RetentionPolicy.Workqueue, storage: StorageType.File });
  await jsm.consumers.add('BENCH_JS', { durable_name: 'bench', ack_policy: AckPolicy.Explicit });
  const js = jetstream(nc);
  const body = new Uint8Array(1200); // about a diff-summary call on the small example
  const publish = (i: number) => {
    const h = headers();
    h.set('Nats-Msg-Id', `m-${i}-${Math.random()}`);
    return js.publish('bench.js.x', body, { headers: h });
  };
  const seq: number[] = [];
  for (let i = 0; i < N_JS_SEQ; i++) {
    const t = performance.now();
    await publish(i);
    seq.push(performance.now() - t);
  }
  const c0 = cpuOf(nats.pids());
  let t = performance.now();
  const inFlight = 256;
  for (let i = 0; i < N_JS_PIPE; i += inFlight)
    await Promise.all(Array.from({ length: Math.min(inFlight, N_JS_PIPE - i) }, (_, k) => publish(i + k)));
  const pubRate = N_JS_PIPE / ((performance.now() - t) / 1000);
  const pubCpu = (cpuOf(nats.pids()) - c0) / N_JS_PIPE;
  // Take every message and ack it (waiting for the server's confirmation, as a worker does).
  const consumer = await js.consumers.get('BENCH_JS', 'bench');
  const total = N_JS_SEQ + N_JS_PIPE;
  const c1 = cpuOf(nats.pids());
  t = performance.now();
  const acks: Promise<unknown>[] = [];
  const messages = await consumer.consume({ max_messages: 512 });
  for await (const m of messages) {
    acks.push(m.ackAck());
    if (acks.length === total) break;
  }
  await Promise.all(acks);
  const ackRate = total / ((performance.now() - t) / 1000);
  const ackCpu = (cpuOf(nats.pids()) - c1) / total;
  await jsm.streams.delete('BENCH_JS');
  await nc.close();
  return { seqP50: median(seq), seqP99: quantile(seq, 0.99), pubRate, pubCpu, ackRate, ackCpu };
}

async function benchPostgres(pg: BenchServer) {
  const store = await PostgresStore.open(pg.url, { schema: 'bench' });
  const result = new Uint8Array(900); // about a diff-summary reply
  const one = async () => {
    const key = crypto.randomUUID();
    const stdin = new TextEncoder().encode(JSON.stringify(example));
    const intent = await executionIntent({
      id: key,
      decisionId: null,
      tool: 'diff-summary',
      version: '1.0.0',
      wasmSha256: '0'.repeat(64),
      stdin,
      json: JSON.stringify(example),
      keepText: true,
    });
    const t = performance.now();
    await store.getCallResult(key);
    await store.getExecution(key);
    await store.beginExecution(intent);
    const outcome = await executionOutcome({ exitCode: 0, stdout: result, stderr: new Uint8Array(0), durationMs: 5 } as never, null, 5);
    await store.finishCall(key, { ...outcome, ran_on: 'fleet bench' }, result);
    return performance.now() - t;
  };
  const seq: number[] = [];
  for (let i = 0; i < N_PG_SEQ; i++) seq.push(await one());
  const c0 = cpuOf(pg.pids());
  const t = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < N_PG_CONC) await one();
    }),
  );
  const rate = N_PG_CONC / ((performance.now() - t) / 1000);
  const cpu = (cpuOf(pg.pids()) - c0) / N_PG_CONC;
  await store.close();
  return { seqP50: median(seq), seqP99: quantile(seq, 0.99), rate, cpu };
}

async function main() {
  const began = performance.now();
  log(`fleet bench on ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})…`);
  const nats = await startNatsServer();
  const pg = await startPostgresServer();
  const workers: Worker[] = [];
  try {
    log('per-message costs: JetStream…');
    const jsCost = await benchJetStream(nats);
    log('per-message costs: PostgreSQL…');
    const pgCost = await benchPostgres(pg);

    log('local pool…');
    const local = await Corral.create({ store: false, size: 2 });
    await sequential(local, 10);
    const localSeq = await sequential(local, N_SEQ);
    const localLoad = await load(local, CALLERS, SECONDS);
    await local.close();

    const client = await Corral.create({ store: false, executor: remote({ servers: nats.url, queueTimeoutMs: 120_000 }) });
    const rows: string[][] = [];
    const cpuRows: string[][] = [];
    let fleetSeq: number[] = [];
    for (const n of WORKER_COUNTS) {
      while (workers.length < n) workers.push(await startWorker(nats.url, pg.url, `bench-${workers.length + 1}`));
      log(`${n} worker process${n === 1 ? '' : 'es'}…`);
      // Every worker loads diff-summary before it is timed.
      await Promise.all(Array.from({ length: 8 * n }, () => client.invoke('diff-summary', example)));
      if (n === 1) fleetSeq = await sequential(client, N_SEQ);
      const wpids = workers.map((w) => w.child.pid!);
      const before = { w: cpuOf(wpids), nats: cpuOf(nats.pids()), pg: cpuOf(pg.pids()), self: selfCpu() };
      const r = await load(client, CALLERS, SECONDS);
      const per = (x: number) => `${((x / r.calls) * 1000).toFixed(2)} ms`;
      rows.push([String(n), `${r.rate.toFixed(0)}/s`, fmt(r.p50), fmt(r.p99), String(r.calls), String(r.failed)]);
      cpuRows.push([
        String(n),
        per(cpuOf(wpids) - before.w),
        per(cpuOf(nats.pids()) - before.nats),
        per(cpuOf(pg.pids()) - before.pg),
        per(selfCpu() - before.self),
      ]);
    }
    for (const w of workers) w.child.kill('SIGTERM');
    const codes = await Promise.all(workers.map((w) => w.exited));
    workers.length = 0;
    // The same path without PostgreSQL: what JetStream and the worker cost alone.
    log('1 worker process recording in memory…');
    workers.push(await startWorker(nats.url, null, 'bench-memory'));
    await Promise.all(Array.from({ length: 8 }, () => client.invoke('diff-summary', example)));
    const memorySeq = await sequential(client, N_SEQ);
    const memoryLoad = await load(client, CALLERS, SECONDS);
    workers[0]!.child.kill('SIGTERM');
    codes.push(await workers[0]!.exited);
    workers.length = 0;
    await client.close();

    const out: string[] = [];
    out.push(`### Throughput: diff-summary (small example), ${CALLERS} concurrent callers, ${SECONDS} s each`);
    out.push('');
    out.push(
      table(
        ['worker processes (1 sandbox, 2 lanes each)', 'calls/s', 'p50', 'p99', 'calls', 'failed'],
        [
          ...rows,
          [
            '1, recording in memory (no PostgreSQL)',
            `${memoryLoad.rate.toFixed(0)}/s`,
            fmt(memoryLoad.p50),
            fmt(memoryLoad.p99),
            String(memoryLoad.calls),
            String(memoryLoad.failed),
          ],
          [
            'local pool (2 sandbox workers), same callers',
            `${localLoad.rate.toFixed(0)}/s`,
            fmt(localLoad.p50),
            fmt(localLoad.p99),
            String(localLoad.calls),
            String(localLoad.failed),
          ],
        ],
      ),
    );
    out.push('');
    out.push('### CPU per call, by process (user + system)');
    out.push('');
    out.push(table(['worker processes', 'workers', 'nats-server', 'PostgreSQL', 'callers (this process)'], cpuRows));
    out.push('');
    out.push(`### One caller, one call at a time (${N_SEQ} calls, p50 / p99)`);
    out.push('');
    out.push(
      table(
        ['path', 'p50', 'p99'],
        [
          ['local pool', fmt(median(localSeq)), fmt(quantile(localSeq, 0.99))],
          ['fleet (1 worker process, PostgreSQL records)', fmt(median(fleetSeq)), fmt(quantile(fleetSeq, 0.99))],
          ['fleet (1 worker process, records in memory)', fmt(median(memorySeq)), fmt(quantile(memorySeq, 0.99))],
          ['fleet path overhead (p50 difference)', fmt(median(fleetSeq) - median(localSeq)), ''],
        ],
      ),
    );
    out.push('');
    out.push('### Per-message costs');
    out.push('');
    out.push(
      table(
        ['operation', 'one at a time p50 / p99', 'throughput', 'server CPU per op'],
        [
          [
            'JetStream publish + ack (file store, 1.2 kB)',
            `${fmt(jsCost.seqP50)} / ${fmt(jsCost.seqP99)}`,
            `${jsCost.pubRate.toFixed(0)}/s (256 in flight)`,
            `${(jsCost.pubCpu * 1e6).toFixed(0)} µs`,
          ],
          ['JetStream deliver + ackAck (work queue)', '', `${jsCost.ackRate.toFixed(0)}/s`, `${(jsCost.ackCpu * 1e6).toFixed(0)} µs`],
          [
            'PostgreSQL getCallResult + getExecution + beginExecution + finishCall',
            `${fmt(pgCost.seqP50)} / ${fmt(pgCost.seqP99)}`,
            `${pgCost.rate.toFixed(0)}/s (16 at once)`,
            `${(pgCost.cpu * 1e3).toFixed(2)} ms`,
          ],
        ],
      ),
    );
    out.push('');
    out.push(`Workers exited ${JSON.stringify(codes)} after SIGTERM; whole run ${((performance.now() - began) / 1000).toFixed(0)} s.`);
    console.log(out.join('\n'));
  } finally {
    for (const w of workers) w.child.kill('SIGKILL');
    await nats.stop();
    await pg.stop();
  }
}

await main();
