/**
 * A crash at every point of a run: the journal cut after its first k
 * events (what a process killed there leaves), then resumed. Every step
 * whose end was recorded never runs again; the one attempt that was cut off
 * runs again; the outputs are those of a run that was never interrupted.
 */
import { ErrorCodes } from '@corral/core';
import { loadWorkflow, resumeWorkflow, runWorkflow, type WorkflowResult } from '@corral/workflow';
import { describe, expect, it } from 'vitest';
import { ApprovalDesk, failure, host, MemoryJournal, ok, Tools } from './helpers.js';

// 8 steps: a fan-out, a retry, an offline fallback, a condition that skips, an approval, a join.
const workflow = loadWorkflow(`
name: crashy
inputs:
  text: { type: string, default: "hello world" }
outputs:
  words: "{{ steps.count.output.n }}"
  upper: "{{ steps.upper.output.text }}"
  lint: "{{ steps.lint.output }}"
  joined: "{{ steps.join.output }}"
steps:
  - id: count
    tool: count
    input: { step: count, text: "{{ inputs.text }}" }
  - id: upper
    tool: upper
    input: { step: upper, text: "{{ inputs.text }}" }
  - id: flaky
    tool: flaky
    depends_on: [count]
    input: { step: flaky, strict: true }
    on_error:
      E_RESOURCE_EXHAUSTED: { action: retry, max: 2, input: { strict: false } }
  - id: lint
    tool: net-lint
    depends_on: [upper]
    input: { step: lint, text: "{{ steps.upper.output.text }}" }
    on_error:
      E_NETWORK_BLOCKED: { action: offline, tool: local-lint }
  - id: big
    tool: count
    depends_on: [count]
    condition: "steps.count.output.n > 100"
    input: { step: big, text: x }
  - id: gate
    approval: { prompt: "go on with {{ steps.count.output.n }} words?" }
    depends_on: [flaky, lint]
  - id: join
    tool: join
    depends_on: [gate, big]
    condition: "steps.gate.status == 'succeeded'"
    input: { step: join, parts: ["{{ steps.count.output.n }}", "{{ steps.lint.output.clean }}", "{{ steps.flaky.output.ok }}"] }
  - id: tail
    tool: upper
    depends_on: [join]
    input: { step: tail, text: "{{ steps.join.output.text }}" }
`);

function tools(): Tools {
  return new Tools({
    count: (input) => ok('count', { n: String(input.text).split(' ').length }),
    upper: (input) => ok('upper', { text: String(input.text).toUpperCase() }),
    flaky: (input) => (input.strict ? failure('flaky', ErrorCodes.RESOURCE_EXHAUSTED) : ok('flaky', { ok: true })),
    'net-lint': () => failure('net-lint', ErrorCodes.NETWORK_BLOCKED),
    'local-lint': (input) => ok('local-lint', { clean: !String(input.text).includes('X') }),
    join: (input) => ok('join', { text: (input.parts as unknown[]).join('+') }),
  });
}

/** An approval desk that approves whatever it is asked at once. */
function autoDesk(): ApprovalDesk {
  const desk = new ApprovalDesk();
  const request = desk.requestApproval;
  desk.requestApproval = async (r) => {
    const id = await request(r);
    desk.decide(id, 'approved', 'auto');
    return id;
  };
  return desk;
}

const stepCalls = (t: Tools) => {
  const counts: Record<string, number> = {};
  for (const c of t.calls) {
    const step = (c.input as { step: string }).step;
    counts[step] = (counts[step] ?? 0) + 1;
  }
  return counts;
};
const summary = (r: WorkflowResult) => r.steps.map((s) => ({ id: s.id, status: s.status, output: s.output ?? null, tool: s.tool }));

describe('resume after a crash at every event of a run', async () => {
  const journal = new MemoryJournal();
  // Approval records live in the host's store, which outlives the crash: one desk for every process.
  const desk = autoDesk();
  const first = tools();
  const reference = await runWorkflow(workflow, {}, host(journal, first, { desk, concurrency: 2 }));
  const events = journal.events.get(reference.runId)!;
  const calls = stepCalls(first);

  it('the uninterrupted run', () => {
    expect(reference.status).toBe('succeeded');
    expect(reference.outputs).toEqual({ words: 2, upper: 'HELLO WORLD', lint: { clean: true }, joined: { text: '2+true+true' } });
    expect(calls).toEqual({ count: 1, upper: 1, flaky: 2, lint: 2, join: 1, tail: 1 });
    expect(events.length).toBe(19);
  });

  it.each(Array.from({ length: events.length + 1 }, (_, k) => k))('cut after %i events', async (k) => {
    const cut = journal.truncated(reference.runId, k);
    const prefix = events.slice(0, k);
    const again = tools();
    const resumed = await resumeWorkflow(reference.runId, host(cut, again, { desk, concurrency: 2 }));

    expect(resumed.status).toBe('succeeded');
    expect(resumed.outputs).toEqual(reference.outputs);
    expect(summary(resumed)).toEqual(summary(reference));

    // Calls before the cut (attempts started in the prefix) plus calls after it: what the
    // uninterrupted run made, plus one for each attempt the cut left without an end.
    const before: Record<string, number> = {};
    const open = new Map<string, boolean>();
    for (const e of prefix) {
      if (e.step === null) continue;
      if (e.kind === 'step_started') before[e.step] = (before[e.step] ?? 0) + 1;
      open.set(e.step, e.kind === 'step_started');
    }
    const after = stepCalls(again);
    for (const step of Object.keys(calls)) {
      const total = (before[step] ?? 0) + (after[step] ?? 0);
      expect(total, `calls of ${step}`).toBe(calls[step]! + (open.get(step) ? 1 : 0));
    }
    // A step whose end was recorded before the cut is never called again.
    for (const e of prefix) {
      if (e.step !== null && (e.kind === 'step_succeeded' || e.kind === 'step_skipped')) expect(after[e.step] ?? 0, e.step).toBe(0);
    }
    // The journal stays one gapless sequence, with the resume marked.
    const all = cut.events.get(reference.runId)!;
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all[k]).toMatchObject({ kind: 'run_resumed', step: null });
  });
});
