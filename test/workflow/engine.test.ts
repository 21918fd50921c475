/**
 * The engine over an in-memory journal and fake tools: DAG order and
 * parallelism, conditions, every on_error action, approvals across a
 * restart, stopping, and two processes driving one run.
 */
import { CorralError, ErrorCodes } from '@corral/core';
import { Reliability, loadWorkflow, resumeWorkflow, runWorkflow, type WorkflowResult } from '@corral/workflow';
import { describe, expect, it } from 'vitest';
import { ApprovalDesk, failure, host, MemoryJournal, ok, tick, Tools } from './helpers.js';

const byId = (r: WorkflowResult) => Object.fromEntries(r.steps.map((s) => [s.id, s]));

describe('scheduling', () => {
  it('runs a step after everything it depends on, and independent steps in parallel up to the concurrency', async () => {
    const bs = ['b1', 'b2', 'b3', 'b4', 'b5'];
    const wf = loadWorkflow(
      [
        'name: fan',
        'steps:',
        '  - { id: a, tool: work, input: { id: a } }',
        ...bs.map((b) => `  - { id: ${b}, tool: work, depends_on: [a], input: { id: ${b} } }`),
        `  - { id: c, tool: work, depends_on: [${bs.join(', ')}], input: { id: c } }`,
      ].join('\n'),
    );
    const order: string[] = [];
    const tools = new Tools({
      work: async (input) => {
        order.push(`start ${input.id}`);
        await tick(5);
        order.push(`end ${input.id}`);
        return ok('work', { id: input.id });
      },
    });
    const journal = new MemoryJournal();
    const result = await runWorkflow(wf, {}, host(journal, tools, { concurrency: 3 }));
    expect(result.status).toBe('succeeded');
    expect(tools.maxInFlight).toBe(3);
    expect(order[0]).toBe('start a');
    expect(order[1]).toBe('end a');
    expect(order.slice(-2)).toEqual(['start c', 'end c']);
    // c started only after every b ended.
    const cStart = order.indexOf('start c');
    for (const b of bs) expect(order.indexOf(`end ${b}`)).toBeLessThan(cStart);
    expect(result.steps.every((s) => s.status === 'succeeded' && s.attempts === 1)).toBe(true);
  });

  it('defaults to 4 steps at once', async () => {
    const steps = Array.from({ length: 10 }, (_, i) => `  - { id: s${i}, tool: work }`).join('\n');
    const tools = new Tools({
      work: async () => {
        await tick(3);
        return ok('work', {});
      },
    });
    await runWorkflow(loadWorkflow(`name: wide\nsteps:\n${steps}\n`), {}, host(new MemoryJournal(), tools));
    expect(tools.maxInFlight).toBe(4);
  });

  it('journals each start before the tool runs and each end after it, with consecutive seq numbers', async () => {
    const journal = new MemoryJournal();
    const seen: string[] = [];
    const tools = new Tools({
      work: async () => {
        seen.push(
          `invoke after ${journal.events
            .get('run-1')!
            .map((e) => e.kind)
            .join(',')}`,
        );
        return ok('work', { n: 1 });
      },
    });
    const events: string[] = [];
    const result = await runWorkflow(
      loadWorkflow('name: one\nsteps:\n  - { id: a, tool: work }\n'),
      {},
      host(journal, tools, { onEvent: (e) => events.push(`${e.seq} ${e.kind}`) }),
    );
    expect(seen).toEqual(['invoke after step_started']);
    expect(events).toEqual(['1 step_started', '2 step_succeeded']);
    const stored = journal.events.get(result.runId)!;
    expect(stored[1]).toMatchObject({
      kind: 'step_succeeded',
      step: 'a',
      attempt: 1,
      tool: 'work',
      tool_version: '1.0.0',
      output: { n: 1 },
    });
    expect(journal.runs.get(result.runId)).toMatchObject({ status: 'succeeded', workflow: 'one', outputs: {} });
  });
});

describe('templates and outputs', () => {
  it('renders inputs and earlier outputs into a step input, and the outputs when the run succeeds', async () => {
    const wf = loadWorkflow(`
name: t
inputs:
  diff: { type: string }
  lang: { type: string, default: en }
outputs:
  files: "{{ steps.summary.output.totals.files }}"
  text: "{{ steps.summary.output.totals.files }} files ({{ inputs.lang }})"
  echoed: { all: "{{ steps.echo.output }}" }
steps:
  - id: summary
    tool: diff-summary
    input: { diff: "{{ inputs.diff }}", language: "{{ inputs.lang }}" }
  - id: echo
    tool: echo
    depends_on: [summary]
    input: { totals: "{{ steps.summary.output.totals }}", label: "n={{ steps.summary.output.totals.files }}" }
`);
    const tools = new Tools({
      'diff-summary': () => ok('diff-summary', { totals: { files: 2, additions: 10 } }),
      echo: (input) => ok('echo', input),
    });
    const result = await runWorkflow(wf, { diff: 'DIFF' }, host(new MemoryJournal(), tools));
    expect(tools.calls[0]!.input).toEqual({ diff: 'DIFF', language: 'en' });
    expect(tools.calls[1]!.input).toEqual({ totals: { files: 2, additions: 10 }, label: 'n=2' });
    expect(result.outputs).toEqual({
      files: 2,
      text: '2 files (en)',
      echoed: { all: { totals: { files: 2, additions: 10 }, label: 'n=2' } },
    });
  });

  it('refuses inputs that are missing, unknown or of the wrong type, before creating a run', async () => {
    const wf = loadWorkflow(
      'name: t\ninputs:\n  n: { type: integer }\n  flag: { type: boolean, required: false }\nsteps:\n  - { id: a, tool: work }\n',
    );
    const journal = new MemoryJournal();
    const h = host(journal, new Tools({}));
    await expect(runWorkflow(wf, {}, h)).rejects.toThrow('Invalid inputs for workflow t: /n: is required');
    await expect(runWorkflow(wf, { n: 1.5, other: 1 }, h)).rejects.toThrow(
      'Invalid inputs for workflow t: /other: is not an input of this workflow (it takes n, flag); /n: must be an integer',
    );
    expect(journal.runs.size).toBe(0);
  });
});

describe('mounts and timeouts', () => {
  it('pass to invoke as MountBindings: host is short for a host source, source goes as it renders', async () => {
    const wf = loadWorkflow(`
name: m
inputs:
  repo: { type: string }
  tree: { type: object, default: { a.txt: hi } }
steps:
  - id: stats
    tool: file-stats
    timeout_ms: 1500
    mounts:
      - { guest: /workspace, host: "{{ inputs.repo }}" }
      - { guest: /out, access: read-write }
  - id: more
    tool: file-stats
    mounts:
      - { guest: /workspace, source: { kind: memory, tree: "{{ inputs.tree }}" } }
      - { guest: /other, source: "{{ inputs.tree }}" }
`);
    const tools = new Tools({ 'file-stats': () => ok('file-stats', {}) });
    await runWorkflow(wf, { repo: '/src/project' }, host(new MemoryJournal(), tools, { concurrency: 1 }));
    expect(tools.calls[0]!.options).toMatchObject({
      timeoutMs: 1500,
      mounts: [
        { guest: '/workspace', access: 'read', source: { kind: 'host', path: '/src/project' } },
        { guest: '/out', access: 'read-write' },
      ],
    });
    expect(tools.calls[0]!.options.mounts![1]).not.toHaveProperty('source');
    expect(tools.calls[0]!.options.signal).toBeInstanceOf(AbortSignal);
    expect(tools.calls[1]!.options.mounts).toEqual([
      { guest: '/workspace', access: 'read', source: { kind: 'memory', tree: { 'a.txt': 'hi' } } },
      { guest: '/other', access: 'read', source: { 'a.txt': 'hi' } }, // not a source: the host's invoke refuses it
    ]);
    expect(tools.calls[1]!.options).not.toHaveProperty('timeoutMs');
  });
});

describe('conditions', () => {
  const wf = loadWorkflow(`
name: cond
inputs:
  threshold: { type: integer }
steps:
  - { id: summary, tool: summary }
  - id: deep
    tool: lint
    depends_on: [summary]
    condition: "steps.summary.output.totals.additions > inputs.threshold"
  - id: after-deep
    tool: lint
    depends_on: [deep]
  - id: report
    tool: lint
    depends_on: [deep]
    condition: "steps.deep.status == 'skipped' || steps.deep.output.clean"
`);
  const tools = () => new Tools({ summary: () => ok('summary', { totals: { additions: 100 } }), lint: () => ok('lint', { clean: true }) });

  it('runs a step whose condition is true', async () => {
    const t = tools();
    const r = byId(await runWorkflow(wf, { threshold: 80 }, host(new MemoryJournal(), t)));
    expect(r.deep!.status).toBe('succeeded');
    expect(r['after-deep']!.status).toBe('succeeded');
    expect(r.report!.status).toBe('succeeded');
    expect(t.called('lint')).toHaveLength(3);
  });

  it('skips a step whose condition is false, and the steps after it unless their own condition says otherwise', async () => {
    const t = tools();
    const result = await runWorkflow(wf, { threshold: 500 }, host(new MemoryJournal(), t));
    const r = byId(result);
    expect(result.status).toBe('succeeded');
    expect(r.deep).toMatchObject({
      status: 'skipped',
      note: 'condition is false: steps.summary.output.totals.additions > inputs.threshold',
    });
    expect(r['after-deep']).toMatchObject({ status: 'skipped', note: "depends on 'deep', which was skipped" });
    expect(r.report!.status).toBe('succeeded');
    expect(t.called('lint')).toHaveLength(1);
  });
});

describe('on_error', () => {
  async function runOne(onError: string, tools: Tools, extra: { desk?: ApprovalDesk; input?: string } = {}) {
    const journal = new MemoryJournal();
    const wf = loadWorkflow(`
name: errs
steps:
  - id: step
    tool: flaky
    input: ${extra.input ?? '{ strict: true, n: 1 }'}
    on_error: ${onError}
  - { id: next, tool: after, depends_on: [step] }
`);
    const h = host(journal, tools, extra.desk ? { desk: extra.desk } : {});
    return { journal, h, result: await runWorkflow(wf, {}, h) };
  }
  const after = () => ok('after', { done: true });

  it('retry: runs the tool again with the changed input merged in, waiting backoff_ms, then 2× that', async () => {
    const times: number[] = [];
    const tools = new Tools({
      flaky: (_, n) => {
        times.push(Date.now());
        return n < 2 ? failure('flaky', ErrorCodes.RESOURCE_EXHAUSTED) : ok('flaky', { fine: true });
      },
      after,
    });
    const { result, journal } = await runOne(
      '{ E_RESOURCE_EXHAUSTED: { action: retry, max: 2, backoff_ms: 20, input: { strict: false } } }',
      tools,
    );
    expect(result.status).toBe('succeeded');
    expect(byId(result).step).toMatchObject({ status: 'succeeded', attempts: 3 });
    expect(tools.called('flaky').map((c) => c.input)).toEqual([
      { strict: true, n: 1 },
      { strict: false, n: 1 },
      { strict: false, n: 1 },
    ]);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(18);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(38);
    const notes = journal.events
      .get(result.runId)!
      .filter((e) => e.kind === 'step_failed')
      .map((e) => e.note);
    expect(notes).toEqual([
      'E_RESOURCE_EXHAUSTED: on_error E_RESOURCE_EXHAUSTED: retry 1 of 2 after 20 ms',
      'E_RESOURCE_EXHAUSTED: on_error E_RESOURCE_EXHAUSTED: retry 2 of 2 after 40 ms',
    ]);
  });

  it('retry: fails the step, and the run, once the retries are used up', async () => {
    const tools = new Tools({ flaky: () => failure('flaky', ErrorCodes.RESOURCE_EXHAUSTED, 'out of memory'), after });
    const { result } = await runOne('{ default: { action: retry, max: 1 } }', tools);
    expect(result.status).toBe('failed');
    expect(result.error).toEqual({ code: 'E_RESOURCE_EXHAUSTED', message: "Step 'step' failed: out of memory", step: 'step' });
    expect(byId(result).step).toMatchObject({
      status: 'failed',
      attempts: 2,
      note: 'E_RESOURCE_EXHAUSTED: on_error default: 1 retries used; the step failed',
    });
    expect(byId(result).next!.status).toBe('pending');
    expect(tools.called('after')).toHaveLength(0);
  });

  it('retry: once the retries are used up, hands over to the default rule', async () => {
    const tools = new Tools({ flaky: () => failure('flaky', ErrorCodes.RESOURCE_EXHAUSTED), after });
    const { result } = await runOne('{ E_RESOURCE_EXHAUSTED: { action: retry, max: 1 }, default: { action: skip } }', tools);
    expect(result.status).toBe('succeeded');
    expect(byId(result).step).toMatchObject({
      status: 'skipped',
      attempts: 2,
      note: 'E_RESOURCE_EXHAUSTED: on_error E_RESOURCE_EXHAUSTED: 1 retries used; E_RESOURCE_EXHAUSTED: on_error default: skipped',
    });
  });

  it('fallback: runs the other tool, with the same input or the one given', async () => {
    const tools = new Tools({
      flaky: () => failure('flaky', ErrorCodes.TOOL_NOT_FOUND),
      backup: (input) => ok('backup', { via: 'backup', input }),
      after,
    });
    const same = await runOne('{ E_TOOL_NOT_FOUND: { action: fallback, tool: backup } }', tools);
    expect(byId(same.result).step).toMatchObject({
      status: 'succeeded',
      tool: 'backup',
      attempts: 2,
      output: { via: 'backup', input: { strict: true, n: 1 } },
    });
    const given = await runOne('{ E_TOOL_NOT_FOUND: { action: fallback, tool: backup, input: { other: 1 } } }', tools);
    expect(byId(given.result).step!.output).toEqual({ via: 'backup', input: { other: 1 } });
  });

  it('fallback: a failing fallback tool is not tried twice', async () => {
    const tools = new Tools({
      flaky: () => failure('flaky', ErrorCodes.UNEXPECTED_EXIT),
      backup: () => failure('backup', ErrorCodes.UNEXPECTED_EXIT),
      after,
    });
    const { result } = await runOne('{ default: { action: fallback, tool: backup } }', tools);
    expect(result.status).toBe('failed');
    expect(byId(result).step).toMatchObject({
      attempts: 2,
      tool: 'backup',
      note: 'E_UNEXPECTED_EXIT: on_error default: the fallback tool already ran; the step failed',
    });
  });

  it('skip: the step counts as skipped and the run goes on (its dependents are skipped too)', async () => {
    const tools = new Tools({ flaky: () => failure('flaky', ErrorCodes.UNEXPECTED_EXIT), after });
    const { result } = await runOne('{ E_UNEXPECTED_EXIT: { action: skip } }', tools);
    expect(result.status).toBe('succeeded');
    expect(byId(result).step).toMatchObject({ status: 'skipped', note: 'E_UNEXPECTED_EXIT: on_error E_UNEXPECTED_EXIT: skipped' });
    expect(byId(result).next).toMatchObject({ status: 'skipped', note: "depends on 'step', which was skipped" });
  });

  it('offline: on E_NETWORK_BLOCKED runs the offline tool; other codes go to default', async () => {
    const tools = new Tools({
      flaky: (input) =>
        input.n === 1 ? failure('flaky', ErrorCodes.NETWORK_BLOCKED, 'imports wasi:http') : failure('flaky', ErrorCodes.UNEXPECTED_EXIT),
      local: () => ok('local', { offline: true }),
      after,
    });
    const onError = '{ E_NETWORK_BLOCKED: { action: offline, tool: local }, default: { action: fail } }';
    const blocked = await runOne(onError, tools);
    expect(byId(blocked.result).step).toMatchObject({ status: 'succeeded', tool: 'local', output: { offline: true } });
    const crashed = await runOne(onError, tools, { input: '{ n: 2 }' });
    expect(byId(crashed.result).step).toMatchObject({ status: 'failed', note: 'E_UNEXPECTED_EXIT: on_error default: fail' });
  });

  it('fail, and no rule at all: the step and the run fail', async () => {
    const tools = new Tools({ flaky: () => failure('flaky', ErrorCodes.INPUT_VALIDATION, 'bad input'), after });
    const explicit = await runOne('{ E_INPUT_VALIDATION: { action: fail } }', tools);
    expect(explicit.result).toMatchObject({ status: 'failed', error: { code: 'E_INPUT_VALIDATION', step: 'step' } });
    const none = await runOne('{ E_NETWORK_BLOCKED: { action: skip } }', tools);
    expect(byId(none.result).step).toMatchObject({ status: 'failed', note: 'E_INPUT_VALIDATION: no on_error rule; the step failed' });
    expect(none.journal.runs.get(none.result.runId)!.status).toBe('failed');
  });

  it('a tool call that throws is a failure like any other, handled by on_error', async () => {
    const tools = new Tools({
      flaky: () => {
        throw new Error('host bug');
      },
      after,
    });
    const { result } = await runOne('{ E_UNEXPECTED_EXIT: { action: skip } }', tools);
    expect(byId(result).step).toMatchObject({
      status: 'skipped',
      error: { code: 'E_UNEXPECTED_EXIT', message: 'invoke of flaky threw: host bug' },
    });
  });

  it('human_review: pauses the run; approved runs the step once more, rejected fails it', async () => {
    let healthy = false;
    const tools = new Tools({
      flaky: () => (healthy ? ok('flaky', { fixed: true }) : failure('flaky', ErrorCodes.UNEXPECTED_EXIT, 'crashed')),
      after,
    });
    const desk = new ApprovalDesk();
    const { result, journal, h } = await runOne(
      "{ default: { action: human_review, prompt: 'Retry {{ inputs.x }}?' } }".replace(' {{ inputs.x }}', ''),
      tools,
      { desk },
    );
    expect(result.status).toBe('waiting');
    expect(result.pending).toEqual([{ step: 'step', approvalId: 'approval-1', kind: 'human_review', prompt: 'Retry?' }]);
    expect(desk.requests[0]).toMatchObject({
      kind: 'human_review',
      step: 'step',
      tool: 'flaky',
      input: { strict: true, n: 1 },
      error: { code: 'E_UNEXPECTED_EXIT', message: 'crashed' },
    });
    expect(journal.runs.get(result.runId)!.status).toBe('waiting');

    healthy = true;
    desk.decide('approval-1', 'approved', 'ada', 'try again');
    const resumed = await resumeWorkflow(result.runId, h);
    expect(resumed.status).toBe('succeeded');
    expect(byId(resumed).step).toMatchObject({ status: 'succeeded', attempts: 2, output: { fixed: true } });

    healthy = false;
    const second = await runOne('{ default: { action: human_review } }', tools, { desk });
    expect(second.result.pending![0]!.prompt).toBe(
      "Step 'step' failed (flaky: E_UNEXPECTED_EXIT: crashed). Approve to run it once more; reject to fail the run.",
    );
    desk.decide(second.result.pending![0]!.approvalId, 'rejected', 'bob', 'not now');
    const rejected = await resumeWorkflow(second.result.runId, second.h);
    expect(rejected).toMatchObject({
      status: 'failed',
      error: { code: 'E_POLICY_DENIED', message: "Step 'step' failed: Step 'step' was rejected by bob: not now" },
    });
  });
});

describe('approvals', () => {
  const wf = loadWorkflow(`
name: gated
steps:
  - { id: summary, tool: summary }
  - id: sign-off
    approval: { prompt: "Merge {{ steps.summary.output.files }} files?" }
    input: { files: "{{ steps.summary.output.files }}" }
    depends_on: [summary]
  - { id: other, tool: slow }
  - { id: merge, tool: merge, depends_on: [sign-off], input: { by: "{{ steps.sign-off.output.decided_by }}" } }
outputs:
  approved_by: "{{ steps.sign-off.output.decided_by }}"
`);
  const tools = () =>
    new Tools({
      summary: () => ok('summary', { files: 3 }),
      slow: async () => {
        await tick(20);
        return ok('slow', {});
      },
      merge: (input) => ok('merge', input),
    });

  it('pause the run once nothing else can progress, and continue in a new process when approved', async () => {
    const journal = new MemoryJournal();
    const desk = new ApprovalDesk();
    const t1 = tools();
    const first = await runWorkflow(wf, {}, host(journal, t1, { desk }));
    expect(first.status).toBe('waiting');
    // The independent step ran to its end while the approval waited.
    expect(byId(first).other!.status).toBe('succeeded');
    expect(first.pending).toEqual([{ step: 'sign-off', approvalId: 'approval-1', kind: 'approval', prompt: 'Merge 3 files?' }]);
    expect(desk.requests[0]).toMatchObject({ runId: first.runId, workflow: 'gated', step: 'sign-off', input: { files: 3 } });

    // A restart: a new host and engine over the same journal. Nothing decided yet: nothing is written.
    const t2 = tools();
    const before = journal.events.get(first.runId)!.length;
    const still = await resumeWorkflow(first.runId, host(journal, t2, { desk }));
    expect(still.status).toBe('waiting');
    expect(journal.events.get(first.runId)!.length).toBe(before);

    desk.decide('approval-1', 'approved', 'ada', 'ship it');
    const done = await resumeWorkflow(first.runId, host(journal, t2, { desk }));
    expect(done.status).toBe('succeeded');
    expect(done.outputs).toEqual({ approved_by: 'ada' });
    expect(byId(done)['sign-off']).toMatchObject({
      status: 'succeeded',
      output: { approved: true, decided_by: 'ada', comment: 'ship it' },
    });
    expect(t2.calls.map((c) => c.tool)).toEqual(['merge']); // nothing that ended before ran again
    expect(t2.calls[0]!.input).toEqual({ by: 'ada' });
    const kinds = journal.events.get(first.runId)!.map((e) => `${e.step ?? '-'}:${e.kind}`);
    expect(kinds.filter((k) => k.startsWith('sign-off'))).toEqual(['sign-off:step_waiting', 'sign-off:step_approved']);
    expect(kinds).toContain('-:run_resumed');
  });

  it('fail the run when rejected, unless the approval step says skip', async () => {
    for (const onError of ['', '    on_error: { E_POLICY_DENIED: { action: skip } }\n']) {
      const journal = new MemoryJournal();
      const desk = new ApprovalDesk();
      const text = `name: gate\nsteps:\n  - id: ok\n    approval: { prompt: go? }\n${onError}  - { id: after, tool: summary, depends_on: [ok] }\n`;
      const first = await runWorkflow(loadWorkflow(text), {}, host(journal, tools(), { desk }));
      desk.decide(first.pending![0]!.approvalId, 'rejected', 'bob', 'no');
      const r = await resumeWorkflow(first.runId, host(journal, tools(), { desk }));
      if (onError) {
        expect(r.status).toBe('succeeded');
        expect(byId(r).ok).toMatchObject({ status: 'skipped', note: 'E_POLICY_DENIED: on_error E_POLICY_DENIED: skipped' });
      } else {
        expect(r).toMatchObject({
          status: 'failed',
          error: { code: 'E_POLICY_DENIED', message: "Step 'ok' failed: Step 'ok' was rejected by bob: no" },
        });
      }
    }
  });

  it('are rejected on a host that takes none', async () => {
    const r = await runWorkflow(
      loadWorkflow('name: g\nsteps:\n  - id: ok\n    approval: { prompt: go? }\n'),
      {},
      host(new MemoryJournal(), tools()),
    );
    expect(r).toMatchObject({
      status: 'failed',
      error: { code: 'E_POLICY_DENIED', message: "Step 'ok' failed: This host takes no approvals (it has no requestApproval)" },
    });
  });
});

describe('durability', () => {
  it('stops like a crash when the signal aborts, and resume finishes the run', async () => {
    const journal = new MemoryJournal();
    const controller = new AbortController();
    const tools = new Tools({
      work: async (_, n) => {
        if (n === 1) controller.abort('shutting down');
        await tick(5);
        return ok('work', { n });
      },
    });
    const wf = loadWorkflow(
      'name: s\nsteps:\n  - { id: a, tool: work }\n  - { id: b, tool: work, depends_on: [a] }\n  - { id: c, tool: work, depends_on: [b] }\n',
    );
    const err = await runWorkflow(wf, {}, host(journal, tools, { signal: controller.signal })).catch((e) => e);
    expect(err).toBeInstanceOf(CorralError);
    expect(err.code).toBe('E_CANCELLED');
    const runId = [...journal.runs.keys()][0]!;
    expect(journal.runs.get(runId)!.status).toBe('running');
    expect(journal.events.get(runId)!.map((e) => `${e.step}:${e.kind}`)).toEqual(['a:step_started', 'a:step_succeeded', 'b:step_started']);
    const done = await resumeWorkflow(runId, host(journal, tools));
    expect(done.status).toBe('succeeded');
    expect(byId(done).b).toMatchObject({ attempts: 2, note: 'attempt 1 was interrupted (the process stopped); running it again' });
    expect(tools.calls).toHaveLength(4);
  });

  it('stops a second process driving the same run at its first conflicting event', async () => {
    const journal = new MemoryJournal();
    const gate = { open: () => {} };
    const opened = new Promise<void>((resolve) => (gate.open = resolve));
    const tools = new Tools({
      work: async () => {
        await opened;
        return ok('work', {});
      },
    });
    const wf = loadWorkflow('name: two\nsteps:\n  - { id: a, tool: work }\n');
    const first = runWorkflow(wf, {}, host(journal, tools));
    while ((journal.events.get('run-1')?.length ?? 0) < 1) await tick(1);
    // A second process resumes the run while the first is still in step a: it appends run_resumed,
    // re-runs a (interrupted, as far as it can tell) … and the first process's end of a collides.
    const second = resumeWorkflow('run-1', host(journal, tools));
    while ((journal.events.get('run-1')?.length ?? 0) < 3) await tick(1);
    gate.open();
    const results = await Promise.allSettled([first, second]);
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(1);
    const reason = (refused[0] as PromiseRejectedResult).reason as CorralError;
    expect(reason.code).toBe('E_STORE');
    expect(reason.message).toMatch(
      /^Workflow run run-1 is being driven by another process \(event \d+ was already written\): this one stopped$/,
    );
    expect((reason.details as { reason?: string }).reason).toBe('conflict');
    const seqs = journal.events.get('run-1')!.map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  it('reports a finished run on resume without running anything', async () => {
    const journal = new MemoryJournal();
    const tools = new Tools({ work: () => ok('work', { x: 1 }) });
    const r = await runWorkflow(
      loadWorkflow('name: f\noutputs: { x: "{{ steps.a.output.x }}" }\nsteps:\n  - { id: a, tool: work }\n'),
      {},
      host(journal, tools),
    );
    const again = await resumeWorkflow(r.runId, host(journal, tools));
    expect(again).toMatchObject({ status: 'succeeded', outputs: { x: 1 } });
    expect(tools.calls).toHaveLength(1);
    await expect(resumeWorkflow('nope', host(journal, tools))).rejects.toThrow("There is no workflow run 'nope'");
  });

  it('onlyIfWaiting: a running run (another process may drive it) is reported, never driven again', async () => {
    const wf = loadWorkflow('name: f\nsteps:\n  - { id: a, tool: work }\n  - { id: b, tool: work, depends_on: [a] }\n');
    const tools = new Tools({ work: () => ok('work', {}) });
    const full = new MemoryJournal();
    const r = await runWorkflow(wf, {}, host(full, tools));
    // As a process left it mid-step: a started, with no end.
    const journal = full.truncated(r.runId, 1);
    const reported = await resumeWorkflow(r.runId, host(journal, tools), { onlyIfWaiting: true });
    expect(reported.status).toBe('running');
    expect(tools.calls).toHaveLength(2);
    expect(journal.events.get(r.runId)).toHaveLength(1);
  });
});

describe('reliability', () => {
  it('learns nothing about a tool from calls refused before it ran (a policy, a bad input)', async () => {
    const reliability = new Reliability();
    const tools = new Tools({
      guarded: (input) =>
        input.n === 0 ? ok('guarded', {}) : failure('guarded', input.n === 1 ? ErrorCodes.POLICY_DENIED : ErrorCodes.INPUT_VALIDATION),
    });
    for (const n of [0, 1, 1, 1, 2, 2]) {
      await runWorkflow(
        loadWorkflow(`name: f\nsteps:\n  - { id: a, tool: guarded, input: { n: ${n} } }\n`),
        {},
        host(new MemoryJournal(), tools, { reliability }),
      );
    }
    const [belief] = reliability.beliefs();
    expect(belief).toMatchObject({ key: 'guarded@1.0.0', alpha: 2, beta: 1 });
  });
});
