// Issue 17's fault test, with real processes on loopback: 4 `corral worker`
// processes sharing one nats-server (JetStream) and one PostgreSQL; 8 client
// processes, each a Corral whose invoke pipeline sends its calls through
// remote(), submit 2,000 calls of the `mark` fixture; meanwhile random workers
// are SIGKILLed at random moments (each replaced at once, so 4 keep running),
// and nats-server and PostgreSQL are each restarted once. Then, reading
// PostgreSQL directly and the workers' own logs:
// - every call got exactly one answer at its client: its result, or a
//   classified Corral error;
// - no call has two records and no key two outcomes, and the result kept for
//   replays says what the outcome says;
// - every success a client got is in PostgreSQL with the same stdout hash, and
//   no call was acknowledged without an outcome;
// - every recorded result was really produced by a run of the tool, and every
//   run beyond the first of a call is accounted for by a fault.
//
// Size: CI runs 1,000 calls through at least 30 SIGKILLs, submitted over
// 70 s (about 2 minutes on this 2-core machine, where each replaced worker
// costs some 3 s of CPU to start); FLEET_FAULTS_SIZE=full (`npm run
// test:fleet-faults`) runs the issue's 2,000 calls through at least 55, over
// 150 s (about 3.5 minutes). FLEET_FAULTS_CALLS, FLEET_FAULTS_KILLS and
// FLEET_FAULTS_SPREAD_MS set each. FLEET_FAULTS_SEED replays a run: the seed
// (random unless given) is printed first, and fixes the kill schedule, the
// victims and the calls' inputs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ErrorCodes } from '@corral/core';
import { DEFAULT_CONSUMER, STREAM, decodeReply } from '@corral/fleet';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNats, type NatsServer } from '../helpers/nats.js';
import { startPostgres, type PostgresCluster } from '../helpers/postgres.js';

const CLI = fileURLToPath(new URL('../../packages/node/bin/corral.js', import.meta.url));
const CLIENT = fileURLToPath(new URL('./fault-client.mjs', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../fixtures/tools/', import.meta.url));

const envInt = (name: string, fallback: number) => {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  if (!/^\d+$/.test(v)) throw new Error(`${name} must be a whole number (got ${v})`);
  return Number(v);
};
const FULL = process.env.FLEET_FAULTS_SIZE === 'full';
const CALLS = envInt('FLEET_FAULTS_CALLS', FULL ? 2000 : 1000);
const KILLS = envInt('FLEET_FAULTS_KILLS', FULL ? 55 : 30);
const SPREAD_MS = envInt('FLEET_FAULTS_SPREAD_MS', FULL ? 150_000 : 70_000);
const SEED = envInt('FLEET_FAULTS_SEED', Math.floor(Math.random() * 2 ** 31));
const CLIENTS = 8;
const WORKERS = 4;
const CONCURRENCY = 2;
const ACK_WAIT_MS = 3000;
const CLIENT_IN_FLIGHT = 8;

/** mulberry32: one seed, one schedule of faults. */
function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type LogEvent = { event?: string; time?: string; key?: string; [k: string]: unknown };

interface WorkerProcess {
  name: string;
  child: ChildProcess;
  events: LogEvent[];
  ready: boolean;
  killed: boolean;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface Answer {
  c: number;
  i: number;
  ok: boolean;
  /** When the client sent it, and how long the answer took. */
  at: number;
  ms: number;
  same?: boolean;
  sha?: string;
  code?: string | null;
  reason?: string | null;
  message?: string;
  threw?: string;
}

interface ClientProcess {
  id: number;
  child: ChildProcess;
  answers: Answer[];
  other: string[];
  ready: boolean;
  done: boolean;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function lines(stream: NodeJS.ReadableStream, each: (line: string) => void): void {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buf += chunk;
    for (let i = buf.indexOf('\n'); i !== -1; i = buf.indexOf('\n')) {
      each(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
}

const exitOf = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let nats: NatsServer | undefined;
let pg: PostgresCluster | undefined;
let pgUrl: string;
let nc: NatsConnection | undefined;
const workers: WorkerProcess[] = [];
const clients: ClientProcess[] = [];

beforeAll(async () => {
  [nats, pg] = await Promise.all([startNats(), startPostgres()]);
  pgUrl = await pg.createDatabase('fleet');
}, 120_000);

afterAll(async () => {
  for (const p of [...workers, ...clients]) p.child.kill('SIGKILL');
  await Promise.all([...workers, ...clients].map((p) => p.exited));
  await nc?.close().catch(() => {});
  await nats?.stop();
  await pg?.destroy();
});

let generation = 0;

/** Start a worker; a start that fails (the server it needs is restarting) is tried again, as a supervisor would. */
async function startWorker(slot: number, startFailures: { count: number }): Promise<WorkerProcess> {
  for (;;) {
    const name = `w${slot}-${++generation}`;
    const child = spawn(
      process.execPath,
      [
        CLI,
        'worker',
        '--nats',
        nats!.url,
        '--postgres',
        pgUrl,
        '--name',
        name,
        '--no-bundled',
        '--tools',
        FIXTURES,
        '--workers',
        '1',
        '--concurrency',
        String(CONCURRENCY),
        '--ack-wait',
        String(ACK_WAIT_MS),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const w: WorkerProcess = { name, child, events: [], ready: false, killed: false, exited: exitOf(child) };
    workers.push(w);
    lines(child.stdout!, (l) => {
      if (l.includes('worker ready')) w.ready = true;
    });
    lines(child.stderr!, (l) => {
      try {
        w.events.push(JSON.parse(l));
      } catch {
        w.events.push({ text: l });
      }
    });
    const ready = await Promise.race([
      (async () => {
        while (!w.ready && child.exitCode === null && child.signalCode === null) await sleep(20);
        return w.ready;
      })(),
      w.exited.then(() => w.ready),
    ]);
    if (ready) return w;
    startFailures.count++;
    await sleep(500);
  }
}

function startClient(id: number, count: number): ClientProcess {
  const child = spawn(
    process.execPath,
    [CLIENT, nats!.url, FIXTURES, String(id), String(count), String(SPREAD_MS), String(CLIENT_IN_FLIGHT), String(SEED)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const c: ClientProcess = { id, child, answers: [], other: [], ready: false, done: false, exited: exitOf(child) };
  lines(child.stdout!, (l) => {
    const line = JSON.parse(l) as Answer & { ready?: boolean; done?: boolean };
    if (line.done) c.done = true;
    else if (line.ready) c.ready = true;
    else c.answers.push(line);
  });
  lines(child.stderr!, (l) => c.other.push(l));
  clients.push(c);
  return c;
}

describe('the fleet under faults', () => {
  it(
    `${CALLS} calls from ${CLIENTS} clients to ${WORKERS} workers through ≥${KILLS} SIGKILLs and a nats-server and a PostgreSQL restart: one answer each, one record each, every run accounted for`,
    async () => {
      const wallStart = Date.now();
      const random = rng(SEED);
      console.log(`fleet faults: seed ${SEED} (FLEET_FAULTS_SEED=${SEED} replays this schedule)`);
      const startFailures = { count: 0 };
      const slots: WorkerProcess[] = [];
      for (let s = 0; s < WORKERS; s++) slots.push(await startWorker(s, startFailures));

      const perClient = Array.from({ length: CLIENTS }, (_, c) => Math.floor(CALLS / CLIENTS) + (c < CALLS % CLIENTS ? 1 : 0));
      for (const [c, n] of perClient.entries()) startClient(c, n);
      // The faults start with the calls: once every client is up (their start is not what is tested).
      while (!clients.every((c) => c.ready || c.child.exitCode !== null)) await sleep(50);
      const allDone = () => clients.every((c) => c.done || c.child.exitCode !== null);

      // The faults, while the clients submit: kills at random gaps, each worker replaced at once; one
      // restart of nats-server a third of the way in, one of PostgreSQL (as if it crashed) two thirds in.
      // The gaps are drawn first and scaled to end at 85% of the spread, so every kill lands while calls
      // are coming in (drawn one by one, a run of long gaps left the last kill past the clients' end).
      const clientsStarted = Date.now();
      const kills: { name: string; at: number }[] = [];
      const restarts: { what: 'nats-server' | 'PostgreSQL'; from: number; to: number }[] = [];
      const gaps = Array.from({ length: KILLS }, () => 0.2 + 1.6 * random());
      const scale = (0.85 * SPREAD_MS) / gaps.reduce((sum, gap) => sum + gap, 0);
      let due = 0;
      const killsDue = gaps.map((gap) => (due += gap * scale));
      const restartsDue = [
        { what: 'nats-server' as const, at: SPREAD_MS / 3 },
        { what: 'PostgreSQL' as const, at: (2 * SPREAD_MS) / 3 },
      ];
      const replacing: Promise<void>[] = [];
      while (!allDone() && (kills.length < KILLS || restarts.length < restartsDue.length)) {
        const next = Math.min(killsDue[kills.length] ?? Infinity, restartsDue[restarts.length]?.at ?? Infinity);
        await sleep(Math.max(0, clientsStarted + next - Date.now()));
        if (allDone()) break;
        const restart = restartsDue[restarts.length];
        if (restart && Date.now() - clientsStarted >= restart.at) {
          const from = Date.now();
          if (restart.what === 'nats-server') await nats!.restart();
          else await pg!.restart('immediate');
          restarts.push({ what: restart.what, from, to: Date.now() });
          continue;
        }
        const live = slots.map((w, s) => [w, s] as const).filter(([w]) => w.ready && !w.killed);
        // Every worker is down or starting: this kill waits for one to be up.
        if (live.length === 0) {
          await sleep(100);
          continue;
        }
        const [victim, slot] = live[Math.floor(random() * live.length)]!;
        victim.killed = true;
        victim.child.kill('SIGKILL');
        kills.push({ name: victim.name, at: Date.now() });
        replacing.push(
          victim.exited.then(async () => {
            slots[slot] = await startWorker(slot, startFailures);
          }),
        );
      }
      await Promise.all(replacing);
      const clientExits = await Promise.all(clients.map((c) => c.exited));

      // Let the fleet finish what is still queued or running (answers to clients that gave up), then drain it.
      nc = await connect({ servers: nats!.url });
      const jsm = await jetstreamManager(nc);
      for (let i = 0; i < 600; i++) {
        const info = await jsm.consumers.info(STREAM, DEFAULT_CONSUMER);
        if (info.num_pending === 0 && info.num_ack_pending === 0) break;
        await sleep(100);
      }
      const consumer = await jsm.consumers.info(STREAM, DEFAULT_CONSUMER);
      const stream = await jsm.streams.info(STREAM);
      for (const w of slots) w.child.kill('SIGTERM');
      const drained = await Promise.all(slots.map((w) => w.exited));
      const wallMs = Date.now() - wallStart;

      // --- What the clients got: one answer per call, each a result or a classified Corral error.
      for (const [n, c] of clients.entries()) {
        expect(clientExits[n], `client ${c.id} exit; stderr: ${c.other.join('\n').slice(0, 2000)}`).toEqual({ code: 0, signal: null });
        expect(c.done).toBe(true);
        expect(c.answers.filter((a) => a.threw)).toEqual([]);
        expect(c.answers.map((a) => a.i).sort((a, b) => a - b)).toEqual(Array.from({ length: perClient[n]! }, (_, i) => i));
      }
      const answers = clients.flatMap((c) => c.answers);
      const codes = new Set<string>(Object.values(ErrorCodes));
      const kinds = new Map<string, number>();
      for (const a of answers) {
        if (a.ok) expect(a.same, `call ${a.c}/${a.i} answered with another call's output`).toBe(true);
        else expect(codes.has(a.code ?? ''), `call ${a.c}/${a.i}: ${a.code}: ${a.message}`).toBe(true);
        const kind = a.ok ? 'ok' : `${a.code}${a.reason ? `/${a.reason}` : ''}`;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }

      // --- What PostgreSQL holds.
      const rows = (
        await pg!.sql<{
          id: string;
          input: string | null;
          result_ns: string | null;
          stdout_sha256: string | null;
          error_code: string | null;
          ran_on: string | null;
          duration_ms: number | null;
          result: Buffer | null;
        }>(
          `SELECT e.id, convert_from(CASE WHEN e.input_ref IS NOT NULL THEN i.json ELSE e.input_json END, 'UTF8') AS input,
                  e.result_ns, e.stdout_sha256, e.error_code, convert_from(e.ran_on, 'UTF8') AS ran_on, e.duration_ms, r.result
             FROM corral.executions e
             LEFT JOIN corral.inputs i ON i.sha256 = e.input_ref
             LEFT JOIN corral.call_results r ON r.execution_id = e.id`,
          [],
          'fleet',
        )
      ).rows;
      const orphanResults = await pg!.sql(
        'SELECT count(*)::int AS n FROM corral.call_results r WHERE NOT EXISTS (SELECT 1 FROM corral.executions e WHERE e.id = r.execution_id AND e.result_ns IS NOT NULL)',
        [],
        'fleet',
      );
      expect(orphanResults.rows[0]?.n, 'results kept without an outcome').toBe(0);
      const byCall = new Map<string, typeof rows>();
      for (const row of rows) {
        const input = JSON.parse(row.input ?? 'null') as { client?: number; i?: number } | null;
        const call = `${input?.client}/${input?.i}`;
        byCall.set(call, [...(byCall.get(call) ?? []), row]);
      }
      // One record per call: a call sent once (one key) never has two executions.
      const twice = [...byCall].filter(([, r]) => r.length > 1).map(([call]) => call);
      expect(twice, 'calls recorded under two keys').toEqual([]);
      const submitted = new Set(answers.map((a) => `${a.c}/${a.i}`));
      expect(
        [...byCall.keys()].filter((call) => !submitted.has(call)),
        'records of calls nobody sent',
      ).toEqual([]);
      // One outcome per key: the reply kept for replays says what the outcome says.
      for (const row of rows) {
        if (row.result_ns === null) {
          expect(row.result, `call ${row.id} has a kept reply but no outcome`).toBeNull();
          continue;
        }
        expect(row.result, `call ${row.id} has an outcome but no kept reply`).not.toBeNull();
        const reply = decodeReply(new Uint8Array(row.result!), 1 << 20);
        if (reply.kind === 'error') expect(reply.error.code).toBe(row.error_code);
        else {
          expect(createHash('sha256').update(reply.result.stdout).digest('hex')).toBe(row.stdout_sha256);
          expect(reply.result.error?.code ?? null).toBe(row.error_code);
          expect(reply.result.ranOn).toBe(row.ran_on);
        }
      }
      // Every success a client got is in PostgreSQL, the same bytes; every call that ended without an
      // outcome is one whose client was told it failed (it gave up on it).
      const failedAtClient = new Set(answers.filter((a) => !a.ok).map((a) => `${a.c}/${a.i}`));
      let recordedAfterGivingUp = 0;
      for (const a of answers) {
        const [row] = byCall.get(`${a.c}/${a.i}`) ?? [];
        if (a.ok) {
          expect(row, `success of call ${a.c}/${a.i} is not in PostgreSQL`).toBeDefined();
          expect(row!.result_ns).not.toBeNull();
          expect(row!.error_code).toBeNull();
          expect(row!.stdout_sha256, `call ${a.c}/${a.i}`).toBe(a.sha);
        } else if (row?.result_ns !== null && row !== undefined) recordedAfterGivingUp++;
      }
      const withoutOutcome = rows.filter((r) => r.result_ns === null);
      const unexplained = withoutOutcome.filter((r) => {
        const input = JSON.parse(r.input ?? 'null') as { client?: number; i?: number } | null;
        return !failedAtClient.has(`${input?.client}/${input?.i}`);
      });
      expect(
        unexplained.map((r) => r.id),
        'calls left without an outcome that their client got a result for',
      ).toEqual([]);
      // Nothing is still queued or handed out: every message was acked (after its outcome) or taken back by its caller.
      expect({ pending: consumer.num_pending, ack_pending: consumer.num_ack_pending }).toEqual({ pending: 0, ack_pending: 0 });

      // --- Runs: from the workers' own logs (a SIGKILLed worker's lines up to its death are in the pipe).
      type Run = {
        worker: WorkerProcess;
        key: string;
        retry: boolean;
        at: number;
        end: 'killed' | 'unrecorded' | 'done' | 'none';
        doneAt?: number;
        /** Its result's first try to record failed (the store was away). */
        storeFailed?: boolean;
      };
      const runs: Run[] = [];
      let answeredFromRecord = 0;
      const storeErrors: { at: number; cause: string }[] = [];
      for (const w of workers) {
        const open = new Map<string, Run>();
        for (const e of w.events) {
          const at = Date.parse(String(e.time));
          if (e.event === 'run') {
            const run: Run = { worker: w, key: String(e.key), retry: e.retry === true, at, end: 'none' };
            runs.push(run);
            open.set(run.key, run);
          } else if (e.event === 'done') {
            const run = open.get(String(e.key));
            if (run) {
              run.end = 'done';
              run.doneAt = at;
            }
          } else if (e.event === 'store_error') {
            storeErrors.push({ at, cause: String(e.cause) });
            const run = open.get(String(e.key));
            if (run?.end === 'done') run.storeFailed = true;
          } else if (e.event === 'recorded') answeredFromRecord++;
        }
        for (const run of open.values()) if (run.end === 'none' && w.killed) run.end = 'killed';
      }
      // A run that finished but whose call's outcome is another run's: its worker was killed before it could
      // record, or the store was away until the call was handed back.
      const ranOnOf = new Map(rows.map((r) => [r.id, r.ran_on]));
      for (const run of runs) {
        if (run.end !== 'done' || ranOnOf.get(run.key) === `fleet ${run.worker.name}`) continue;
        if (run.worker.killed) run.end = 'killed';
        else if (run.storeFailed) run.end = 'unrecorded';
      }
      expect(
        runs.filter((r) => r.end === 'none').map((r) => `${r.key} on ${r.worker.name}`),
        'runs that neither finished nor had their worker killed',
      ).toEqual([]);
      const runsByKey = new Map<string, Run[]>();
      for (const r of runs) runsByKey.set(r.key, [...(runsByKey.get(r.key) ?? []), r]);
      // Every recorded outcome came from a finished run, on the worker it names.
      for (const row of rows.filter((r) => r.result_ns !== null)) {
        const finished = (runsByKey.get(row.id) ?? []).filter((r) => r.end === 'done' && `fleet ${r.worker.name}` === row.ran_on);
        expect(finished.length, `outcome of ${row.id} (ran_on ${row.ran_on}) without a finished run there`).toBeGreaterThanOrEqual(1);
      }
      // Re-runs: every run of a call beyond its first follows a run of it that was killed, or that
      // finished but could not record (the store was away), or that the servers lost track of
      // (its heartbeats could not reach a restarting nats-server, so the call went to another worker).
      const natsRestart = restarts.find((r) => r.what === 'nats-server');
      const pgRestart = restarts.find((r) => r.what === 'PostgreSQL');
      const lostTrack = (r: Run) =>
        natsRestart !== undefined && r.at <= natsRestart.to + 2 * ACK_WAIT_MS && (r.doneAt ?? Date.now()) >= natsRestart.from - ACK_WAIT_MS;
      let reruns = 0;
      const rerunCauses = { killed: 0, unrecorded: 0, lost_track: 0 };
      const unaccounted: string[] = [];
      for (const [key, list] of runsByKey) {
        list.sort((a, b) => a.at - b.at);
        for (let n = 1; n < list.length; n++) {
          reruns++;
          const before = list.slice(0, n);
          if (before.some((r) => r.end === 'killed')) rerunCauses.killed++;
          else if (before.some((r) => r.end === 'unrecorded')) rerunCauses.unrecorded++;
          else if (before.some(lostTrack)) rerunCauses.lost_track++;
          else
            unaccounted.push(
              `${key}: ${list.map((r) => `${r.worker.name}${r.worker.killed ? ' (killed)' : ''} ran at ${new Date(r.at).toISOString()}, ${r.end}`).join('; ')}; recorded by ${ranOnOf.get(key)}`,
            );
        }
      }
      if (unaccounted.length > 0) {
        // What a reader needs to see why: every log line about those calls, and when the faults struck.
        const keys = new Set(unaccounted.map((u) => u.slice(0, 36)));
        for (const w of workers) for (const e of w.events) if (keys.has(String(e.key))) console.log(`${w.name}: ${JSON.stringify(e)}`);
        console.log(`restarts: ${JSON.stringify(restarts.map((r) => ({ ...r, from: new Date(r.from), to: new Date(r.to) })))}`);
        console.log(`kills: ${kills.map((k) => `${k.name}@${new Date(k.at).toISOString()}`).join(' ')}`);
      }
      expect(unaccounted, 're-runs no fault accounts for').toEqual([]);
      const killedRuns = runs.filter((r) => r.end === 'killed').length;
      expect(killedRuns, 'a kill interrupts at most the calls its worker runs at once').toBeLessThanOrEqual(kills.length * CONCURRENCY);
      const heldThrough = runs.filter((r) => r.storeFailed && r.end === 'done').length;
      // The store only failed around its restart.
      if (pgRestart)
        expect(
          storeErrors.filter((e) => e.at < pgRestart.from - 1000 || e.at > pgRestart.to + 30_000).map((e) => e.cause),
          'store errors away from the PostgreSQL restart',
        ).toEqual([]);
      // Every retry the workers ran is in the audit log, as fleet_retry.
      const audits = await pg!.sql<{ detail_json: string }>(
        "SELECT detail_json FROM corral.audit WHERE action = 'fleet_retry'",
        [],
        'fleet',
      );
      const audited = new Set(audits.rows.map((a) => (JSON.parse(a.detail_json) as { execution_id: string }).execution_id));
      expect(
        runs.filter((r) => r.retry && !audited.has(r.key)).map((r) => r.key),
        'retries not audited',
      ).toEqual([]);

      // --- The faults really happened, and the survivors drained cleanly.
      expect(kills.length).toBeGreaterThanOrEqual(KILLS);
      expect(restarts.map((r) => r.what).sort()).toEqual(['PostgreSQL', 'nats-server']);
      expect(drained).toEqual(slots.map(() => ({ code: 0, signal: null })));

      // FLEET_FAULTS_TRACE=FILE: every worker log line, kill, restart and answer, by time, for a reader.
      if (process.env.FLEET_FAULTS_TRACE) {
        const trace = [
          ...workers.flatMap((w) => w.events.map((e) => ({ t: Date.parse(String(e.time)), worker: w.name, ...e }))),
          ...kills.map((k) => ({ t: k.at, kill: k.name })),
          ...restarts.flatMap((r) => [
            { t: r.from, restart: r.what, phase: 'stop' },
            { t: r.to, restart: r.what, phase: 'up' },
          ]),
          ...answers.map((a) => ({ t: a.at, sent: `${a.c}/${a.i}`, answer: a.ok ? 'ok' : `${a.code}/${a.reason}`, ms: a.ms })),
        ].sort((a, b) => a.t - b.t);
        writeFileSync(process.env.FLEET_FAULTS_TRACE, trace.map((x) => JSON.stringify({ ...x, t: (x.t - wallStart) / 1000 })).join('\n'));
      }
      const kindText = [...kinds]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k} ${n}`)
        .join(', ');
      console.log(
        `fleet faults: seed ${SEED}; ${CALLS} calls by ${CLIENTS} clients to ${WORKERS} workers; ${kills.length} SIGKILLs ` +
          `(${startFailures.count} replacement starts failed and were retried), ${restarts.map((r) => `${r.what} restart ${r.to - r.from} ms`).join(', ')}; ` +
          `answers: ${kindText}; recorded after the client gave up: ${recordedAfterGivingUp}; ` +
          `runs ${runs.length} for ${runsByKey.size} calls, re-runs ${reruns} (after a kill ${rerunCauses.killed}, after a store error ${rerunCauses.unrecorded}, ` +
          `lost track at the nats restart ${rerunCauses.lost_track}); killed mid-run ${killedRuns}; answered from the record ${answeredFromRecord}; ` +
          `fleet_retry audits ${audits.rows.length}; store errors ${storeErrors.length} (results recorded after one ${heldThrough}); left in stream ${stream.state.messages}; wall ${(wallMs / 1000).toFixed(1)} s`,
      );
    },
    15 * 60_000,
  );
});
