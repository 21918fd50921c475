/**
 * Crash safety with real processes: a child runs echo calls on four lanes and
 * reports each acknowledged result; the parent SIGKILLs it at a random moment,
 * over and over, and after every kill reopens the store and checks that
 *  - every acknowledged result is there, complete and ok,
 *  - every call that did not finish reads back as interrupted (never lost, never half-written),
 *  - PRAGMA integrity_check says ok.
 * Children run side by side on their own stores: one through the real
 * Corral (worker pool running echo.wasm), the others through the real
 * Runtime with an in-process executor, which boots faster and so fits more
 * kills in, with 8 concurrent calls (their writes sharing commits on the
 * store's commit thread) and with one call at a time.
 * CORRAL_CRASH_KILLS=N multiplies the number of kills (default 1: 102 kills).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '@corral/node';

const ROOT = new URL('..', import.meta.url).pathname;
const CHILD = join(ROOT, 'test/helpers/snapshot-child.mjs');
const TOOLS = join(ROOT, 'test/fixtures/tools');
const SCALE = Math.max(1, Number(process.env.CORRAL_CRASH_KILLS) || 1);
/** Each child: its mode, lanes (concurrent calls) and kills. */
const CHILDREN = [
  { mode: 'corral', lanes: 4, kills: 12 * SCALE },
  { mode: 'runtime', lanes: 8, kills: 45 * SCALE },
  { mode: 'runtime', lanes: 1, kills: 45 * SCALE },
] as const;
type Child = (typeof CHILDREN)[number];
const TOTAL_KILLS = CHILDREN.reduce((n, c) => n + c.kills, 0);

const dir = mkdtempSync(join(tmpdir(), 'corral-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Round {
  acks: { id: string; seq: number }[];
  output: string;
}

/** Start the child, SIGKILL it a while after it says ready or after its first ack, and collect its acks. */
function runAndKill(
  { mode, lanes }: Pick<Child, 'mode' | 'lanes'>,
  storePath: string,
  when: { afterReady: number } | { afterFirstAck: number },
): Promise<Round> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, storePath, TOOLS, String(lanes), mode], {
      env: { ...process.env, CORRAL_CACHE_DIR: join(dir, 'cache') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let stderr = '';
    let timer: NodeJS.Timeout | undefined;
    const kill = () => child.kill('SIGKILL');
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (timer !== undefined) return;
      if ('afterReady' in when && output.includes('ready\n')) timer = setTimeout(kill, when.afterReady);
      if ('afterFirstAck' in when && output.includes('ack ')) timer = setTimeout(kill, when.afterFirstAck);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (signal !== 'SIGKILL') return reject(new Error(`child exited by itself (code ${code}): ${stderr}${output.slice(-2000)}`));
      const acks = [...output.matchAll(/^ack (\S+) (\d+)$/gm)].map((m) => ({ id: m[1]!, seq: Number(m[2]) }));
      resolve({ acks, output });
    });
  });
}

/** What one store has shown so far, checked again after every kill. */
class Checker {
  readonly seen = new Map<string, string>(); // id → status at the previous check
  kills = 0;
  killsWithInterrupted = 0;
  killsWithAcksAndInterrupted = 0;
  acks = 0;
  constructor(
    readonly child: Child,
    readonly path: string,
  ) {}

  async check({ acks }: Round): Promise<void> {
    this.kills++;
    this.acks += acks.length;
    // Only reads here: no commit thread to start.
    const store = await SqliteStore.open(this.path, { commits: 'inline' });
    try {
      expect(await store.integrityCheck()).toEqual(['ok']);
      expect(store.synchronous).toBe(2); // FULL, set again on this open
      for (const { id, seq } of acks) {
        const e = await store.getExecution(id);
        const input = JSON.stringify({ seq, pad: 'x'.repeat((seq % 7) * 150) });
        expect(e, `acknowledged ${id} after kill ${this.kills}`).toMatchObject({
          status: 'ok',
          tool: 'echo',
          input_json: input,
          stdout_head: input,
          exit_code: 0,
        });
      }
      const all = await store.listExecutions();
      const fresh = all.filter((e) => !this.seen.has(e.id));
      expect(fresh.length).toBeGreaterThanOrEqual(acks.length);
      // Finished but unacknowledged is possible (killed between commit and ack); failed or lost is not.
      expect(fresh.filter((e) => e.status === 'failed')).toEqual([]);
      const interrupted = fresh.filter((e) => e.status === 'interrupted');
      expect(interrupted.length).toBeLessThanOrEqual(this.child.lanes);
      for (const e of interrupted) expect(e).toMatchObject({ result_ns: null, exit_code: null, stdout_head: null, tool: 'echo' });
      // What was interrupted stays interrupted; what was ok stays ok.
      for (const e of all) if (this.seen.has(e.id)) expect(e.status).toBe(this.seen.get(e.id));
      if (interrupted.length > 0) this.killsWithInterrupted++;
      if (interrupted.length > 0 && acks.length > 0) this.killsWithAcksAndInterrupted++;
      for (const e of all) this.seen.set(e.id, e.status);
    } finally {
      await store.close();
    }
  }
}

describe('snapshots survive SIGKILL', () => {
  it(
    `keeps every acknowledged result and marks unfinished calls interrupted, over ${TOTAL_KILLS} kills`,
    async () => {
      // Warm the transpile cache so rounds spend their time calling, not transpiling.
      await runAndKill({ mode: 'corral', lanes: 4 }, join(dir, 'warm.db'), { afterFirstAck: 0 });
      const checkers = CHILDREN.map((c, i) => new Checker(c, join(dir, `${c.mode}-${i}.db`)));
      await Promise.all(
        checkers.map(async (checker) => {
          for (let round = 0; round < checker.child.kills; round++) {
            // Alternate: anywhere from "intents written, worker still starting" to
            // "calls flowing, results being group-committed".
            const when = round % 2 === 0 ? { afterReady: Math.random() * 300 } : { afterFirstAck: Math.random() * 200 };
            await checker.check(await runAndKill(checker.child, checker.path, when));
          }
        }),
      );
      for (const c of checkers) {
        // Most kills must land mid-invocation, also through the real Corral pipeline.
        const name = `${c.child.mode}, ${c.child.lanes} lane${c.child.lanes === 1 ? '' : 's'}`;
        expect(c.kills).toBe(c.child.kills);
        // One lane spends more of its time between calls (its commits are not overlapped by others').
        expect(c.killsWithInterrupted, name).toBeGreaterThanOrEqual(c.child.lanes === 1 ? c.kills / 5 : c.kills / 2);
        expect(c.killsWithAcksAndInterrupted, name).toBeGreaterThanOrEqual(3);
        console.log(
          `${name}: ${c.kills} kills, ${c.acks} acknowledged calls all kept; ${c.killsWithInterrupted} kills left interrupted ` +
            `calls (${c.killsWithAcksAndInterrupted} of them after calls had completed); ${c.seen.size} records in all`,
        );
      }
    },
    300_000 * SCALE,
  );
});
