/**
 * Crash resume with real processes: `corral workflow run` of a 7-step
 * workflow is SIGKILLed at random moments, and `corral workflow resume` is
 * killed again and again, 20 times in all, then left to finish. Each step's
 * tool writes a new file in the mounted folder every time it really
 * runs, so the test sees what ran, not what the journal claims:
 *  - a step whose end was recorded never ran again: its lines are one, plus
 *    at most one for each kill that caught it running (started, no end);
 *  - the outputs equal those of a run nobody killed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../packages/node/dist/index.js';

const ROOT = join(import.meta.dirname, '../..');
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const TOOLS = join(ROOT, 'test/fixtures/tools');
const KILLS = 20;
/** One transpile cache for every process of the test: the first one fills it. */
const CACHE = mkdtempSync(join(tmpdir(), 'corral-kill-cache-'));

const WORKFLOW = `
name: seven-marks
inputs:
  spin: { type: integer, default: 120 }
  workspace: { type: object }
outputs:
  last: "{{ steps.g.output }}"
  middle: "{{ steps.d.output.from }}"
steps:
  - { id: a, tool: mark, input: { step: a, spin_ms: "{{ inputs.spin }}" }, mounts: [{ guest: /workspace, source: "{{ inputs.workspace }}", access: read-write }] }
  - { id: b, tool: mark, depends_on: [a], input: { step: b, spin_ms: "{{ inputs.spin }}", from: "{{ steps.a.output.step }}" }, mounts: [{ guest: /workspace, source: "{{ inputs.workspace }}", access: read-write }] }
  - { id: c, tool: mark, depends_on: [a], input: { step: c, spin_ms: "{{ inputs.spin }}", from: "{{ steps.a.output.step }}" }, mounts: [{ guest: /workspace, source: "{{ inputs.workspace }}", access: read-write }] }
  - { id: d, tool: mark, depends_on: [b, c], input: { step: d, spin_ms: "{{ inputs.spin }}", from: "{{ steps.b.output.step }}{{ steps.c.output.step }}" }, mounts: [{ guest: /workspace, source: "{{ inputs.workspace }}", access: read-write }] }
  - { id: e, tool: mark, depends_on: [d], input: { step: e, spin_ms: "{{ inputs.spin }}", from: "{{ steps.d.output.from }}" }, mounts: [{ guest: /workspace, source: "{{ inputs.workspace }}", access: read-write }] }
  - { id: f, tool: mark, depends_on: [d], input: { step: f, spin_ms: "{{ inputs.spin }}", from: "{{ steps.d.output.from }}" }, mounts: [{ guest: /workspace, source: "{{ inputs.workspace }}", access: read-write }] }
  - { id: g, tool: mark, depends_on: [e, f], input: { step: g, spin_ms: "{{ inputs.spin }}", from: "{{ steps.e.output.from }}{{ steps.f.output.from }}" }, mounts: [{ guest: /workspace, source: "{{ inputs.workspace }}", access: read-write }] }
`;

function setup(name: string) {
  const dir = mkdtempSync(join(tmpdir(), `corral-kill-${name}-`));
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace);
  const file = join(dir, 'wf.yaml');
  writeFileSync(file, WORKFLOW);
  const inputs = join(dir, 'inputs.json');
  writeFileSync(inputs, JSON.stringify({ workspace: { kind: 'host', path: workspace } }));
  const env = { ...process.env, CORRAL_STORE: join(dir, 'store.db'), CORRAL_CACHE_DIR: CACHE, CORRAL_POLICY: join(dir, 'policy.yaml') };
  return { dir, workspace, file, inputs, env, store: join(dir, 'store.db') };
}

const runArgs = (s: ReturnType<typeof setup>, id: string) => [
  'workflow',
  'run',
  s.file,
  '--inputs',
  s.inputs,
  '--tools',
  TOOLS,
  '--run-id',
  id,
  '--json',
  '--quiet',
];

/**
 * Runs per step: the mark tool writes a new run-*.json (its input) every
 * time it really runs. A kill between the tool creating its file and
 * writing it leaves the file empty or cut: that run is counted under '?'.
 */
function runsPerStep(workspace: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of readdirSync(workspace).filter((n) => /^run-.*\.json$/.test(n))) {
    let step = '?';
    try {
      step = (JSON.parse(readFileSync(join(workspace, name), 'utf8')) as { step: string }).step;
    } catch {}
    counts[step] = (counts[step] ?? 0) + 1;
  }
  return counts;
}

/** Steps started and not ended in the journal now: what a kill just interrupted. */
async function inFlight(storePath: string, runId: string): Promise<string[]> {
  let store: SqliteStore;
  try {
    store = await SqliteStore.open(storePath);
  } catch {
    return [];
  }
  try {
    if (!(await store.getWorkflowRun(runId))) return [];
    const open = new Set<string>();
    for (const e of await store.listWorkflowEvents(runId)) {
      if (e.step === null) continue;
      if (e.kind === 'step_started') open.add(e.step);
      else if (e.kind === 'step_succeeded' || e.kind === 'step_failed' || e.kind === 'step_skipped') open.delete(e.step);
    }
    return [...open];
  } finally {
    await store.close();
  }
}

function killAfter(args: string[], env: NodeJS.ProcessEnv, ms: number): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

describe('a workflow killed at 20 random moments', () => {
  it('resumes each time, runs no recorded step again, and ends with the outputs of an uninterrupted run', async () => {
    const calm = setup('calm');
    const straight = spawnSync(process.execPath, [CLI, ...runArgs(calm, 'calm')], { env: calm.env, encoding: 'utf8' });
    expect(straight.status, straight.stderr).toBe(0);
    const expected = JSON.parse(straight.stdout) as { outputs: unknown };
    expect(runsPerStep(calm.workspace)).toEqual({ a: 1, b: 1, c: 1, d: 1, e: 1, f: 1, g: 1 });

    // A seeded sequence of moments, so a failure can be reproduced: 50 ms to 2 s after the process starts.
    let seed = 20261201;
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 1950 + 50;
    let kills = 0;
    let caught = 0;
    let again = 0;
    let rounds = 0;
    // A run that finishes before the kills add up to KILLS is followed by another one, each checked whole.
    for (let round = 0; kills < KILLS; round++) {
      const s = setup(`killed-${round}`);
      const runId = `kill-test-${round}`;
      const interrupted: Record<string, number> = {};
      let finished = false;
      while (!finished && kills < KILLS) {
        const recorded = await runRecorded(s.store, runId);
        const args = recorded ? ['workflow', 'resume', runId, '--tools', TOOLS, '--json', '--quiet'] : runArgs(s, runId);
        const code = await killAfter(args, s.env, next());
        if (code === 0) finished = true;
        else {
          kills++;
          for (const step of await inFlight(s.store, runId)) interrupted[step] = (interrupted[step] ?? 0) + 1;
        }
      }
      const args = (await runRecorded(s.store, runId))
        ? ['workflow', 'resume', runId, '--tools', TOOLS, '--json', '--quiet']
        : runArgs(s, runId);
      const last = spawnSync(process.execPath, [CLI, ...args], { env: s.env, encoding: 'utf8' });
      expect(last.status, last.stderr).toBe(0);
      const result = JSON.parse(last.stdout) as { status: string; outputs: unknown };
      expect(result.status).toBe('succeeded');
      expect(result.outputs).toEqual(expected.outputs);

      const runs = runsPerStep(s.workspace);
      rounds++;
      const caughtNow = Object.values(interrupted).reduce((a, b) => a + b, 0);
      caught += caughtNow;
      const beyond = Object.values(runs).reduce((a, b) => a + b, 0) - 7;
      again += beyond;
      // Every run past one per step, '?' included (a kill left its file unwritten), was caught mid-run by a kill.
      expect(beyond, `round ${round}: ${JSON.stringify(runs)}, kills that caught a step: ${caughtNow}`).toBeLessThanOrEqual(caughtNow);
      for (const step of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) {
        expect(runs[step], `round ${round}, step ${step}`).toBeGreaterThanOrEqual(1);
        // Once for the run that was recorded, plus at most once per kill that caught it mid-run.
        const extra = runs[step]! - (interrupted[step] ?? 0);
        expect(
          extra,
          `round ${round}: step ${step} ran ${runs[step]} times, caught mid-run by ${interrupted[step] ?? 0} kills`,
        ).toBeLessThanOrEqual(1);
      }
    }
    expect(kills).toBe(KILLS);
    console.log(`${kills} kills over ${rounds} runs; steps caught mid-run: ${caught}; tool runs beyond one per step: ${again}`);
  }, 600_000);
});

async function runRecorded(storePath: string, runId: string): Promise<boolean> {
  try {
    const store = await SqliteStore.open(storePath);
    try {
      return (await store.getWorkflowRun(runId)) !== null;
    } finally {
      await store.close();
    }
  } catch {
    return false;
  }
}
