/**
 * The workflow engine at scale (issue 14): `npm run bench:workflow`.
 *
 * 1. Engine overhead per step, the tool excluded: a 200-step chain whose
 *    tool answers at once, so the time between one step's tool returning and
 *    the next one's being called is the engine's own (journal appends,
 *    templates, conditions, scheduling). Journals: in memory, and the
 *    durable SQLite store (FULL sync: two fsyncs per step).
 * 2. A 200-step workflow with fan-out 16 on real tools through the worker
 *    pool (saturated: 16 ready steps, 2 workers), against the same 200 tool
 *    calls made directly with 16 in flight: what the workflow costs on top.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore, type InvokeResult, type WorkflowJournal } from '@corral/core';
import { Corral, SqliteStore } from '@corral/node';
import { Workflows, runWorkflow, validateWorkflow, type Workflow } from '@corral/workflow';
import { fmt, median, quantile, table } from './stats.js';

const STEPS = 200;
const FAN_OUT = 16;
const runs = Number(process.argv[2] ?? 5);

/** a chain s0 -> s1 -> … ; each step's input refers to the previous output (a template per step). */
function chain(n: number): Workflow {
  return validateWorkflow({
    name: 'chain',
    steps: Array.from({ length: n }, (_, i) => ({
      id: `s${i}`,
      tool: 'echo',
      ...(i > 0 ? { depends_on: [`s${i - 1}`], condition: `steps.s${i - 1}.status == 'succeeded'` } : {}),
      input: { i, prev: i > 0 ? `{{ steps.s${i - 1}.output.i }}` : null },
    })),
  });
}

/** Layers of FAN_OUT steps, each depending on one step of the layer before (a fan-out of 16 from a root). */
function fanOut(n: number): Workflow {
  const steps: Record<string, unknown>[] = [{ id: 'root', tool: 'echo', input: { i: 0 } }];
  for (let i = 1; i < n; i++) {
    const layer = Math.ceil(i / FAN_OUT);
    const parent = layer === 1 ? 'root' : `s${(layer - 2) * FAN_OUT + 1 + ((i - 1) % FAN_OUT)}`;
    steps.push({ id: `s${i}`, tool: 'echo', depends_on: [parent], input: { i, from: `{{ steps.${parent}.output.i }}` } });
  }
  return validateWorkflow({ name: 'fan-out', steps });
}

const instant = async (_tool: string, input: unknown): Promise<InvokeResult> =>
  ({ ok: true, output: input, tool: 'echo', version: '1.0.0', duration_ms: 0 }) as unknown as InvokeResult;

/** Per-step gaps between tool calls of the chain: the engine's time per step. */
async function chainGaps(journal: WorkflowJournal): Promise<number[]> {
  const calls: number[] = [];
  const wf = chain(STEPS);
  await runWorkflow(
    wf,
    {},
    {
      journal,
      invoke: async (tool, input) => {
        calls.push(performance.now());
        return instant(tool, input);
      },
    },
  );
  return calls.slice(1).map((t, i) => t - calls[i]!);
}

const dir = mkdtempSync(join(tmpdir(), 'corral-bench-wf-'));
try {
  const rows: string[][] = [];
  for (const [label, open] of [
    ['in-memory journal', async () => new MemoryStore()],
    ['SQLite journal (synchronous=FULL)', async () => SqliteStore.open(join(dir, `j-${Math.random()}.db`))],
  ] as const) {
    const gaps: number[] = [];
    const totals: number[] = [];
    for (let r = 0; r < runs + 1; r++) {
      const journal = await open();
      const t0 = performance.now();
      const g = await chainGaps(journal);
      if (r > 0) {
        gaps.push(...g);
        totals.push(performance.now() - t0);
      }
      await (journal as { close?: () => Promise<void> }).close?.();
    }
    rows.push([label, fmt(median(gaps)), fmt(quantile(gaps, 0.99)), fmt(median(totals))]);
  }
  console.log(`## Engine overhead per step (${STEPS}-step chain, tool answers at once; ${runs} runs)\n`);
  console.log(table(['journal', 'per step p50', 'per step p99', 'whole run (median)'], rows));

  const corral = await Corral.create({
    bundled: false,
    toolDirs: [join(import.meta.dirname, '../../test/fixtures/tools/echo')],
    store: join(dir, 'store.db'),
    size: 2,
  });
  try {
    const workflows = new Workflows(corral, { concurrency: FAN_OUT });
    const wf = fanOut(STEPS);
    const direct: number[] = [];
    const through: number[] = [];
    await workflows.run(wf); // warm: compile, workers up
    for (let r = 0; r < runs; r++) {
      let t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: FAN_OUT }, async () => {
          while (next < STEPS) {
            const i = next++;
            const res = await corral.invoke('echo', { i });
            if (!res.ok) throw new Error(res.error.message);
          }
        }),
      );
      direct.push(performance.now() - t0);
      t0 = performance.now();
      const result = await workflows.run(wf);
      if (result.status !== 'succeeded') throw new Error(`fan-out run ${result.status}`);
      through.push(performance.now() - t0);
    }
    console.log(`\n## ${STEPS} steps, fan-out ${FAN_OUT}, real tool (echo) through a pool of 2 workers, SQLite store (${runs} runs)\n`);
    console.log(
      table(
        ['what', 'whole run (median)', 'per step', 'vs direct'],
        [
          [`${STEPS} direct calls, ${FAN_OUT} in flight`, fmt(median(direct)), fmt(median(direct) / STEPS), '1.00×'],
          [
            `workflow of ${STEPS} steps`,
            fmt(median(through)),
            fmt(median(through) / STEPS),
            `${(median(through) / median(direct)).toFixed(2)}×`,
          ],
        ],
      ),
    );
  } finally {
    await corral.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
