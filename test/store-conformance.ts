/**
 * The behaviour every snapshot Store adapter must have, as one vitest suite.
 * Each adapter's test file calls `describeStoreConformance` with a factory.
 *
 * Host-agnostic on purpose (no node:*, no DOM): the browser project runs the
 * same suite against IndexedDB in Chromium.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type {
  ApprovalRecord,
  AuditEvent,
  DecisionSnapshot,
  ExecutionIntent,
  ExecutionOutcome,
  SnapshotRecord,
  Store,
  WorkflowEvent,
  WorkflowRunRecord,
} from '@corral/core';

export interface StoreHarness {
  store: Store;
  /** Close the store and open the same storage again (persistent adapters only). */
  reopen?: () => Promise<Store>;
  /**
   * Change a kept workflow row behind the store's back, as a damaged or
   * hostile file would (adapters whose storage can be reached from outside).
   * `key` is a run's id, or an event's [run_id, seq]; `fields` are row fields
   * (the JSON ones as text: definition_json, output_json …).
   */
  damage?: (what: 'workflow_run' | 'workflow_event', key: string | [string, number], fields: Record<string, unknown>) => Promise<void>;
  cleanup: () => Promise<void>;
}

/** Times in nanoseconds past 2^53, so an adapter that goes through a JS number fails. */
const T0 = 1_764_409_626_123_456_789n;
const at = (offsetNs: number | bigint) => (T0 + BigInt(offsetNs)).toString();

let serial = 0;
const uid = (prefix: string) => `${prefix}-${(serial++).toString().padStart(6, '0')}-${Math.random().toString(36).slice(2, 8)}`;

export function intent(over: Partial<ExecutionIntent> = {}): ExecutionIntent {
  return {
    id: uid('exec'),
    decision_id: null,
    tool: 'diff-summary',
    version: '1.0.0',
    wasm_sha256: 'a'.repeat(64),
    input_sha256: 'b'.repeat(64),
    input_json: '{"diff":"--- a\\n+++ b\\n"}',
    intent_ns: at(0),
    ...over,
  };
}

export function outcome(over: Partial<ExecutionOutcome> = {}): ExecutionOutcome {
  return {
    result_ns: at(5_000_001),
    exit_code: 0,
    error_code: null,
    error_message: null,
    stdout_sha256: 'c'.repeat(64),
    stdout_head: '{"files":[]}',
    stdout_tail: '{"files":[]}',
    stderr_head: '',
    stderr_tail: '',
    duration_ms: 5.25,
    peak_memory_bytes: 1_179_648,
    ran_on: null,
    ...over,
  };
}

export function decision(over: Partial<DecisionSnapshot> = {}): DecisionSnapshot {
  return {
    id: uid('dec'),
    time_ns: at(0),
    prompt_sha256: 'd'.repeat(64),
    output: '{"tool":"diff-summary","arguments":{"diff":"…"}}',
    model: 'test-model',
    run_id: 'run-1',
    ...over,
  };
}

const NO_OUTCOME = {
  result_ns: null,
  exit_code: null,
  error_code: null,
  error_message: null,
  stdout_sha256: null,
  stdout_head: null,
  stdout_tail: null,
  stderr_head: null,
  stderr_tail: null,
  duration_ms: null,
  peak_memory_bytes: null,
  ran_on: null,
};

export function auditEvent(over: Partial<AuditEvent> = {}): AuditEvent {
  return {
    id: uid('audit'),
    time_ns: at(0),
    action: 'grant',
    actor: 'ada',
    tool: 'file-stats',
    approval_id: null,
    detail: { mount: '/workspace', folder: '/home/ada/src', access: 'read', note: 'ünïcode\n' },
    ...over,
  };
}

export function approval(over: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return {
    id: uid('appr'),
    tool: 'file-stats',
    version: '1.0.0',
    workflow_run_id: null,
    workflow_step: null,
    prompt: null,
    input_sha256: 'e'.repeat(64),
    input_json: '{"path":"/workspace"}',
    bindings: { '/workspace': { folder: '/home/ada/src' }, '/out': { folder: '/tmp/out', access: 'read-write' } },
    caller: { kind: 'mcp', id: 'claude', roots: ['/home/ada'] },
    folders: [{ guest: '/workspace', folder: '/home/ada/src', access: 'read' }],
    requested_by: 'mcp:claude',
    requested_ns: at(0),
    expires_ns: at(86_400_000_000_000),
    max_scope: 'tool',
    status: 'pending',
    scope: null,
    decided_by: null,
    decided_ns: null,
    comment: null,
    claimed_ns: null,
    execution_id: null,
    revoked_by: null,
    revoked_ns: null,
    ...over,
  };
}

/** A workflow step's approval, as a workflow engine keeps one (see ApprovalRecord). */
export function stepApproval(runId: string, over: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return approval({
    tool: 'review-patch',
    version: '0',
    workflow_run_id: runId,
    workflow_step: 'sign-off',
    prompt: 'Merge this patch?\n(“yes” merges it)',
    input_json: '{}',
    input_sha256: '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a',
    bindings: {},
    folders: [],
    caller: { kind: 'cli' },
    requested_by: 'workflow:review-patch',
    max_scope: 'once',
    ...over,
  });
}

export function workflowRun(over: Partial<WorkflowRunRecord> = {}): WorkflowRunRecord {
  return {
    id: uid('run'),
    workflow: 'review-patch',
    definition: {
      name: 'review-patch',
      steps: [
        { id: 'summary', tool: 'diff-summary', input: { diff: '{{ inputs.diff }}' } },
        { id: 'sign-off', approval: { prompt: 'Merge this patch?' }, depends_on: ['summary'] },
      ],
    },
    definition_sha256: '9'.repeat(64),
    inputs: { diff: '--- a\n+++ b\n', note: 'ünïcode \u0000 “quoted”' },
    status: 'running',
    created_ns: at(0),
    updated_ns: at(0),
    outputs: null,
    error: null,
    ...over,
  };
}

export function workflowEvent(runId: string, seq: number, over: Partial<WorkflowEvent> = {}): WorkflowEvent {
  return {
    run_id: runId,
    seq,
    at_ns: at(seq),
    step: 'summary',
    kind: 'step_started',
    attempt: 1,
    tool: 'diff-summary',
    tool_version: '1.0.0',
    execution_id: null,
    approval_id: null,
    output: null,
    error: null,
    note: null,
    ...over,
  };
}

async function collect(iterable: AsyncIterable<SnapshotRecord>): Promise<SnapshotRecord[]> {
  const out: SnapshotRecord[] = [];
  for await (const r of iterable) out.push(r);
  return out;
}

export function describeStoreConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`Store conformance: ${name}`, () => {
    let harness: StoreHarness | undefined;
    const open = async () => (harness = await makeStore());
    afterEach(async () => {
      await harness?.cleanup();
      harness = undefined;
    });

    it('records and reads back a decision exactly', async () => {
      const { store } = await open();
      const d = decision({ output: 'raw output with “unicode”, a NUL \u0000 and\nnewlines', model: null, run_id: null });
      await store.recordDecision(d);
      expect(await store.getDecision(d.id)).toEqual(d);
      expect(await store.getDecision('no-such-id')).toBeNull();
      await expect(store.recordDecision({ ...d, output: 'other' })).rejects.toMatchObject({ code: 'E_STORE' });
      expect((await store.getDecision(d.id))?.output).toBe(d.output);
    });

    it('an intent without a result reads back as interrupted', async () => {
      const { store } = await open();
      const i = intent({ input_json: null, decision_id: 'dec-x' });
      await store.beginExecution(i);
      expect(await store.getExecution(i.id)).toEqual({ ...i, ...NO_OUTCOME, status: 'interrupted' });
      expect(await store.getExecution('no-such-id')).toBeNull();
    });

    it('a finished execution reads back with every field exact, ok or failed', async () => {
      const { store } = await open();
      const ok = intent();
      const okOutcome = outcome({
        stdout_head: 'é'.repeat(512),
        stdout_tail: '…\u0000',
        stderr_head: 'warn\n',
        stderr_tail: 'warn\n',
        ran_on: 'fleet worker-2: the input is 3 MB',
      });
      const bad = intent({ version: null, wasm_sha256: null, input_sha256: null, tool: 'nope' });
      const badOutcome = outcome({
        exit_code: null,
        error_code: 'E_TOOL_NOT_FOUND',
        error_message: 'No tool named nope',
        stdout_sha256: null,
        peak_memory_bytes: null,
        duration_ms: 0,
      });
      await store.beginExecution(ok);
      await store.finishExecution(ok.id, okOutcome);
      await store.beginExecution(bad);
      await store.finishExecution(bad.id, badOutcome);
      expect(await store.getExecution(ok.id)).toEqual({ ...ok, ...okOutcome, status: 'ok' });
      expect(await store.getExecution(bad.id)).toEqual({ ...bad, ...badOutcome, status: 'failed' });
    });

    it('refuses a duplicate intent, an unknown id and a second result, keeping what was there', async () => {
      const { store } = await open();
      const i = intent();
      await store.beginExecution(i);
      await expect(store.beginExecution({ ...i, tool: 'other' })).rejects.toMatchObject({ code: 'E_STORE' });
      await expect(store.finishExecution('no-such-id', outcome())).rejects.toMatchObject({ code: 'E_STORE', message: /no-such-id/ });
      await store.finishExecution(i.id, outcome());
      await expect(store.finishExecution(i.id, outcome({ exit_code: 9 }))).rejects.toMatchObject({ code: 'E_STORE', message: /already/ });
      expect(await store.getExecution(i.id)).toMatchObject({ tool: 'diff-summary', exit_code: 0, status: 'ok' });
    });

    it('a refused write does not take concurrent writes down with it', async () => {
      const { store } = await open();
      const first = intent();
      await store.beginExecution(first);
      const others = [intent(), intent()];
      const settled = await Promise.allSettled([
        store.beginExecution(others[0]!),
        store.beginExecution(first), // duplicate
        store.finishExecution('no-such-id', outcome()),
        store.beginExecution(others[1]!),
      ]);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
      for (const o of others) expect(await store.getExecution(o.id)).not.toBeNull();
    });

    it('keeps every write of many concurrent calls', async () => {
      const { store } = await open();
      const intents = Array.from({ length: 200 }, (_, n) => intent({ intent_ns: at(n) }));
      await Promise.all(
        intents.map(async (i, n) => {
          await store.beginExecution(i);
          if (n % 3 !== 0) await store.finishExecution(i.id, outcome({ exit_code: n }));
        }),
      );
      const all = await store.listExecutions();
      expect(all).toHaveLength(200);
      expect(all.filter((e) => e.status === 'interrupted')).toHaveLength(67);
      expect((await store.getExecution(intents[5]!.id))?.exit_code).toBe(5);
    });

    it('lists newest first and filters by tool, time, error, decision and status', async () => {
      const { store } = await open();
      const dec = decision();
      await store.recordDecision(dec);
      const a = intent({ tool: 'diff-summary', intent_ns: at(1), decision_id: dec.id });
      const b = intent({ tool: 'file-stats', intent_ns: at(2) });
      const c = intent({ tool: 'diff-summary', intent_ns: at(3), decision_id: dec.id });
      const d = intent({ tool: 'diff-summary', intent_ns: at(3) }); // same time as c: ties break on id
      for (const x of [a, b, c, d]) await store.beginExecution(x);
      await store.finishExecution(a.id, outcome());
      await store.finishExecution(b.id, outcome({ error_code: 'E_UNEXPECTED_EXIT', exit_code: 1 }));
      await store.finishExecution(d.id, outcome({ error_code: 'E_INPUT_VALIDATION', exit_code: null }));
      const ids = async (filter?: Parameters<Store['listExecutions']>[0]) => (await store.listExecutions(filter)).map((e) => e.id);
      const tie = [c, d].sort((x, y) => (x.id < y.id ? 1 : -1)).map((x) => x.id);
      expect(await ids()).toEqual([...tie, b.id, a.id]);
      expect(await ids({ tool: 'diff-summary' })).toEqual([...tie, a.id]);
      expect(await ids({ since: at(2) })).toEqual([...tie, b.id]);
      expect(await ids({ since: T0 + 3n })).toEqual(tie); // a bigint works too
      expect(await ids({ since: '99999999999999999999' })).toEqual([]); // past what a 64-bit integer holds
      expect(await ids({ errorCode: 'E_UNEXPECTED_EXIT' })).toEqual([b.id]);
      expect(await ids({ decisionId: dec.id })).toEqual([c.id, a.id]);
      expect(await ids({ status: 'interrupted' })).toEqual([c.id]);
      expect(await ids({ status: 'failed' })).toEqual(tie.filter((id) => id === d.id).concat(b.id));
      expect(await ids({ status: 'ok' })).toEqual([a.id]);
      expect(await ids({ tool: 'diff-summary', status: 'ok', since: at(1) })).toEqual([a.id]);
      expect(await ids({ limit: 2 })).toEqual(tie);
      expect(await ids({ tool: 'nothing' })).toEqual([]);
    });

    it('exports decisions then executions, oldest first, across many pages', async () => {
      const { store } = await open();
      const decisions = [decision({ time_ns: at(20) }), decision({ time_ns: at(10) })];
      for (const d of decisions) await store.recordDecision(d);
      const intents = Array.from({ length: 1203 }, (_, n) => intent({ intent_ns: at(1203 - n) }));
      await Promise.all(intents.map((i) => store.beginExecution(i)));
      await store.finishExecution(intents[0]!.id, outcome());
      const records = await collect(store.export());
      expect(records.map((r) => r.kind)).toEqual([...decisions.map(() => 'decision'), ...intents.map(() => 'execution')]);
      expect(records.slice(0, 2)).toEqual([
        { kind: 'decision', ...decisions[1] },
        { kind: 'decision', ...decisions[0] },
      ]);
      const executions = records.slice(2);
      expect(executions.map((r) => r.id)).toEqual([...intents].reverse().map((i) => i.id));
      expect(executions.at(-1)).toEqual({ kind: 'execution', ...intents[0], ...outcome(), status: 'ok' });
    });

    it('prunes by age: archive first, then delete; decisions a kept call points to stay', async () => {
      const { store } = await open();
      const oldDecision = decision({ time_ns: at(1) });
      const oldLinked = decision({ time_ns: at(2) });
      const newDecision = decision({ time_ns: at(100) });
      for (const d of [oldDecision, oldLinked, newDecision]) await store.recordDecision(d);
      const old1 = intent({ intent_ns: at(3) });
      const old2 = intent({ intent_ns: at(4), decision_id: oldDecision.id });
      const kept = intent({ intent_ns: at(50), decision_id: oldLinked.id });
      for (const i of [old1, old2, kept]) await store.beginExecution(i);
      await store.finishExecution(old1.id, outcome());

      let archived: SnapshotRecord[] = [];
      const removed = await store.prune({
        olderThan: at(10),
        archive: async (records) => {
          // Nothing is gone yet while the archive is written.
          expect(await store.getExecution(old1.id)).not.toBeNull();
          archived = records;
        },
      });
      expect(removed).toEqual(archived);
      expect(removed.map((r) => `${r.kind}:${r.id}`)).toEqual([
        `decision:${oldDecision.id}`,
        `execution:${old1.id}`,
        `execution:${old2.id}`,
      ]);
      expect(removed[1]).toMatchObject({ status: 'ok', exit_code: 0 });
      expect(await store.getExecution(old1.id)).toBeNull();
      expect(await store.getExecution(old2.id)).toBeNull();
      expect(await store.getDecision(oldDecision.id)).toBeNull();
      expect(await store.getDecision(oldLinked.id)).not.toBeNull(); // kept.decision_id points to it
      expect(await store.getDecision(newDecision.id)).not.toBeNull();
      expect((await store.listExecutions()).map((e) => e.id)).toEqual([kept.id]);
      expect(
        await store.prune({
          olderThan: at(10),
          archive: () => {
            throw new Error('not called for nothing');
          },
        }),
      ).toEqual([]);
    });

    it('prunes to the newest N', async () => {
      const { store } = await open();
      const intents = Array.from({ length: 10 }, (_, n) => intent({ intent_ns: at(n) }));
      for (const i of intents) await store.beginExecution(i);
      const decisions = Array.from({ length: 4 }, (_, n) => decision({ time_ns: at(n) }));
      for (const d of decisions) await store.recordDecision(d);
      const removed = await store.prune({ keep: 3 });
      expect(removed.filter((r) => r.kind === 'execution').map((r) => r.id)).toEqual(intents.slice(0, 7).map((i) => i.id));
      expect(removed.filter((r) => r.kind === 'decision').map((r) => r.id)).toEqual([decisions[0]!.id]);
      expect((await store.listExecutions()).map((e) => e.id)).toEqual(
        intents
          .slice(7)
          .reverse()
          .map((i) => i.id),
      );
      expect(await store.prune({ keep: 0 })).toHaveLength(6);
      expect(await collect(store.export())).toEqual([]);
    });

    it('deletes nothing when the archive fails, and refuses a prune that says nothing', async () => {
      const { store } = await open();
      const i = intent({ intent_ns: at(1) });
      await store.beginExecution(i);
      await expect(store.prune({ keep: 0, archive: () => Promise.reject(new Error('disk full')) })).rejects.toThrow('disk full');
      expect(await store.getExecution(i.id)).not.toBeNull();
      await expect(store.prune({})).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION' });
      await expect(store.prune({ keep: -1 })).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION' });
      expect(await store.getExecution(i.id)).not.toBeNull();
    });

    // Regression: SQLite threw a plain TypeError for since: 'yesterday' and E_STORE ("no such column: NaN")
    // for limit: 'x', the memory store sliced off the last row for limit: -1; a bad time in a record was a
    // TypeError. A caller's mistake is E_INPUT_VALIDATION, the same in every store, and changes nothing.
    it('refuses malformed filters and records with E_INPUT_VALIDATION, naming the option', async () => {
      const { store } = await open();
      const i = intent();
      await store.beginExecution(i);
      const refused = (promise: Promise<unknown>, option: string) =>
        expect(promise).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION', details: { option } });
      await refused(store.listExecutions({ since: 'yesterday' }), 'since');
      await refused(store.listExecutions({ since: -1n }), 'since');
      await refused(store.listExecutions({ limit: -1 }), 'limit');
      await refused(store.listExecutions({ limit: 'x' as unknown as number }), 'limit');
      await refused(store.listExecutions({ status: 'done' as 'ok' }), 'status');
      await refused(store.listExecutions({ tool: 5 as unknown as string }), 'tool');
      await refused(store.listExecutions(null as unknown as object), 'filter');
      await refused(store.listExecutions({ withInput: 'no' as unknown as boolean }), 'withInput');
      await refused(store.recordDecision(decision({ time_ns: 'now' })), 'time_ns');
      await refused(store.recordDecision(null as unknown as DecisionSnapshot), 'decision');
      await refused(store.beginExecution(intent({ intent_ns: (2n ** 63n).toString() })), 'intent_ns');
      await refused(store.beginExecution(intent({ id: 7 as unknown as string })), 'id');
      await refused(store.finishExecution(i.id, outcome({ result_ns: '1e9' })), 'result_ns');
      await refused(store.finishExecution(7 as unknown as string, outcome()), 'id');
      await refused(store.finishExecution(i.id, outcome({ ran_on: 'x'.repeat(257) })), 'ran_on');
      await refused(store.finishExecution(i.id, outcome({ ran_on: 7 as unknown as string })), 'ran_on');
      expect(await store.listExecutions()).toEqual([expect.objectContaining({ id: i.id, status: 'interrupted' })]);
      expect(await store.listExecutions({ since: 0n, limit: 0 })).toEqual([]);
    });

    // Issue 12: one 50 MB input grew the SQLite file by twice its size (kept with the intent, rewritten with the result).
    it('keeps an input once per hash: calls sharing it read it back until the last one is pruned', async () => {
      const { store } = await open();
      const text = JSON.stringify({ diff: `--- a\n+++ b\n${'x'.repeat(5000)}` });
      const [a, b] = [intent({ intent_ns: at(1), input_sha256: 'f'.repeat(64), input_json: text }), intent({ intent_ns: at(2) })];
      const c = intent({ intent_ns: at(3), input_sha256: 'f'.repeat(64), input_json: text });
      for (const i of [a, b, c]) await store.beginExecution(i);
      await store.finishExecution(a.id, outcome({ result_ns: at(4) }));
      expect((await store.getExecution(a.id))?.input_json).toBe(text);
      expect((await store.getExecution(c.id))?.input_json).toBe(text);
      // Pruning the oldest call leaves the input to the call that still keeps it, and the archive has it in full.
      const removed = await store.prune({ olderThan: at(2) });
      expect(removed).toEqual([expect.objectContaining({ kind: 'execution', id: a.id, input_json: text })]);
      expect((await store.getExecution(c.id))?.input_json).toBe(text);
      expect((await collect(store.export())).map((r) => (r.kind === 'execution' ? r.input_json : null))).toEqual([b.input_json, text]);
      // Gone with the last call that kept it: a new call with the same hash and another text is then accepted.
      await store.prune({ keep: 0 });
      const d = intent({ intent_ns: at(5), input_sha256: 'f'.repeat(64), input_json: '{"diff":""}' });
      await store.beginExecution(d);
      expect((await store.getExecution(d.id))?.input_json).toBe('{"diff":""}');
    });

    // Issue 16: a history of 1,000 calls must list without reading each call's (maybe 50 MB) input.
    it('lists without inputs when asked (withInput: false), and still reads one with getExecution', async () => {
      const { store } = await open();
      const text = JSON.stringify({ diff: `--- a\n+++ b\n${'y'.repeat(5000)}` });
      const kept = intent({ intent_ns: at(1), input_sha256: 'e'.repeat(64), input_json: text });
      const inline = intent({ intent_ns: at(2), input_sha256: null });
      for (const i of [kept, inline]) await store.beginExecution(i);
      await store.finishExecution(kept.id, outcome({ result_ns: at(3) }));
      const full = await store.listExecutions();
      const bare = await store.listExecutions({ withInput: false });
      expect(full.map((e) => e.input_json)).toEqual([inline.input_json, text]);
      // Everything else is the same, field for field.
      expect(bare).toEqual(full.map((e) => ({ ...e, input_json: null })));
      expect(await store.listExecutions({ withInput: false, tool: 'diff-summary', limit: 1 })).toEqual([{ ...full[0], input_json: null }]);
      expect((await store.getExecution(kept.id))?.input_json).toBe(text);
    });

    it('refuses a different text under an input hash it holds, and keeps calls without an input or without a hash', async () => {
      const { store } = await open();
      const a = intent({ input_sha256: '1'.repeat(64), input_json: '{"a":1}' });
      await store.beginExecution(a);
      const liar = intent({ input_sha256: '1'.repeat(64), input_json: '{"a":2}' });
      await expect(store.beginExecution(liar)).rejects.toMatchObject({ code: 'E_STORE', message: /different input under input_sha256/ });
      expect(await store.getExecution(liar.id)).toBeNull();
      // Recorded with its hash only (recordInput: false), though another call kept the same input.
      const hashOnly = intent({ input_sha256: '1'.repeat(64), input_json: null });
      const noHash = intent({ input_sha256: null, input_json: '{"b":2}' });
      for (const i of [hashOnly, noHash]) await store.beginExecution(i);
      expect(await store.getExecution(hashOnly.id)).toMatchObject({ input_sha256: '1'.repeat(64), input_json: null });
      expect(await store.getExecution(noHash.id)).toMatchObject({ input_sha256: null, input_json: '{"b":2}' });
      expect((await store.getExecution(a.id))?.input_json).toBe('{"a":1}');
    });

    it('marks records archived once, ignoring unknown ids, and refuses ids that are not strings', async () => {
      const { store } = await open();
      const i = intent();
      const d = decision();
      await store.beginExecution(i);
      await store.recordDecision(d);
      expect(await store.markArchived([i.id, d.id, 'no-such-id', i.id])).toBe(2);
      expect(await store.markArchived([i.id])).toBe(0);
      // Marking changes nothing a reader sees.
      expect(await store.getExecution(i.id)).toEqual({ ...i, ...NO_OUTCOME, status: 'interrupted' });
      expect(await store.getDecision(d.id)).toEqual(d);
      await expect(store.markArchived('x' as unknown as string[])).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION' });
      await expect(store.markArchived([7 as unknown as string])).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION' });
    });

    it('refuses work after close', async () => {
      const { store } = await open();
      const i = intent();
      await store.beginExecution(i);
      await store.close();
      await expect(store.beginExecution(intent())).rejects.toMatchObject({ code: 'E_STORE' });
      await expect(store.getExecution(i.id)).rejects.toMatchObject({ code: 'E_STORE' });
      await store.close(); // twice is fine
    });

    it('records the audit trail exactly and lists it newest first, filtered', async () => {
      const { store } = await open();
      const a = auditEvent({ time_ns: at(1) });
      const b = auditEvent({
        time_ns: at(2),
        action: 'deny',
        actor: 'mcp:claude',
        tool: 'diff-summary',
        detail: { reason: 'not_granted' },
      });
      const c = auditEvent({ time_ns: at(3), action: 'approve', tool: null, approval_id: 'appr-1', detail: {} });
      for (const e of [b, a, c]) await store.recordAudit(e);
      expect(await store.listAudit()).toEqual([c, b, a]);
      expect(await store.listAudit({ tool: 'diff-summary' })).toEqual([b]);
      expect(await store.listAudit({ action: 'approve' })).toEqual([c]);
      expect(await store.listAudit({ approvalId: 'appr-1' })).toEqual([c]);
      expect(await store.listAudit({ since: at(2) })).toEqual([c, b]);
      expect(await store.listAudit({ limit: 1 })).toEqual([c]);
      await expect(store.recordAudit({ ...a, actor: 'other' })).rejects.toMatchObject({ code: 'E_STORE', message: /already exists/ });
      expect((await store.listAudit({ action: 'grant' }))[0]?.actor).toBe('ada');
    });

    it('refuses audit events and approvals that are not well formed, writing nothing', async () => {
      const { store } = await open();
      const bad: unknown[] = [
        { ...auditEvent(), action: 'launch' },
        { ...auditEvent(), actor: '' },
        { ...auditEvent(), time_ns: '1e9' },
        { ...auditEvent(), detail: { big: 'x'.repeat(70_000) } },
        { ...auditEvent(), detail: [1, 2] },
      ];
      for (const e of bad) await expect(store.recordAudit(e as AuditEvent)).rejects.toMatchObject({ code: 'E_STORE' });
      const badApprovals: unknown[] = [
        { ...approval(), status: 'maybe' },
        { ...approval(), input_sha256: 'nope' },
        { ...approval(), bindings: { workspace: { folder: '/x' } } },
        { ...approval(), folders: [{ guest: '/workspace', folder: 'relative', access: 'read' }] },
      ];
      for (const a of badApprovals) await expect(store.createApproval(a as ApprovalRecord)).rejects.toMatchObject({ code: 'E_STORE' });
      expect(await store.listAudit()).toEqual([]);
      expect(await store.listApprovals()).toEqual([]);
    });

    it('keeps approvals exactly, lists them newest first by status and tool, and refuses a duplicate', async () => {
      const { store } = await open();
      const p = approval({ requested_ns: at(1) });
      const q = approval({ requested_ns: at(2), tool: 'diff-summary', bindings: {}, folders: [], caller: {} });
      await store.createApproval(p);
      await store.createApproval(q);
      expect(await store.getApproval(p.id)).toEqual(p);
      expect(await store.getApproval('no-such-id')).toBeNull();
      expect(await store.listApprovals()).toEqual([q, p]);
      expect(await store.listApprovals({ tool: 'file-stats' })).toEqual([p]);
      expect(await store.listApprovals({ status: ['approved'] })).toEqual([]);
      expect(await store.listApprovals({ status: ['pending', 'approved'], limit: 1 })).toEqual([q]);
      await expect(store.createApproval({ ...p, tool: 'other' })).rejects.toMatchObject({ code: 'E_STORE' });
      expect((await store.getApproval(p.id))?.tool).toBe('file-stats');
    });

    it('changes an approval only from the statuses given, once, and refuses an unknown id', async () => {
      const { store } = await open();
      const p = approval();
      await store.createApproval(p);
      const decided = {
        status: 'approved' as const,
        scope: 'folder' as const,
        decided_by: 'ada',
        decided_ns: at(10),
        comment: 'ok “fine”',
      };
      // Two racing decisions: exactly one wins.
      const [first, second] = await Promise.all([
        store.updateApproval(p.id, ['pending'], decided),
        store.updateApproval(p.id, ['pending'], { status: 'rejected', decided_by: 'bob', decided_ns: at(11) }),
      ]);
      expect([first, second].filter((r) => r !== null)).toHaveLength(1);
      const now = await store.getApproval(p.id);
      expect(now).toEqual(first ?? second);
      if (now?.status === 'approved') expect(now).toEqual({ ...p, ...decided });
      expect(await store.updateApproval(p.id, ['pending'], { status: 'approved' })).toBeNull();
      await expect(store.updateApproval('no-such-id', ['pending'], { status: 'approved' })).rejects.toMatchObject({ code: 'E_STORE' });
      await expect(store.updateApproval(p.id, ['approved', 'rejected'], { tool: 'other' } as never)).rejects.toMatchObject({
        code: 'E_STORE',
      });
      expect((await store.getApproval(p.id))?.tool).toBe('file-stats');
    });

    it('keeps audit events and approvals across a reopen, outside export and prune', async (ctx) => {
      const h = await open();
      if (!h.reopen) return ctx.skip();
      const e = auditEvent();
      const p = approval();
      await h.store.recordAudit(e);
      await h.store.createApproval(p);
      await h.store.updateApproval(p.id, ['pending'], { status: 'approved', scope: 'once', decided_by: 'ada', decided_ns: at(5) });
      const store = await h.reopen();
      expect(await store.listAudit()).toEqual([e]);
      expect(await store.getApproval(p.id)).toMatchObject({ status: 'approved', decided_by: 'ada' });
      expect(await collect(store.export())).toEqual([]);
      await store.prune({ keep: 0 });
      expect(await store.listAudit()).toEqual([e]);
    });

    it('keeps everything acknowledged across a reopen, and a write still in flight at close', async (ctx) => {
      const h = await open();
      if (!h.reopen) return ctx.skip();
      const d = decision();
      const done = intent({ intent_ns: at(1), decision_id: d.id });
      const open1 = intent({ intent_ns: at(2) });
      await h.store.recordDecision(d);
      await h.store.beginExecution(done);
      await h.store.finishExecution(done.id, outcome());
      await h.store.beginExecution(open1);
      const late = intent({ intent_ns: at(3) });
      const lateWrite = h.store.beginExecution(late); // not awaited before reopen closes the store
      const store = await h.reopen();
      await lateWrite;
      expect(await store.getDecision(d.id)).toEqual(d);
      expect(await store.getExecution(done.id)).toEqual({ ...done, ...outcome(), status: 'ok' });
      expect(await store.getExecution(open1.id)).toMatchObject({ status: 'interrupted', result_ns: null });
      expect(await store.getExecution(late.id)).toMatchObject({ status: 'interrupted' });
      // A result may still arrive for an interrupted call after a restart.
      await store.finishExecution(open1.id, outcome());
      expect((await store.getExecution(open1.id))?.status).toBe('ok');
    });

    // --- workflow runs and events (issue 14) ------------------------------------

    it('keeps a workflow run exactly, refuses a second run with its id as a conflict, and reads copies', async () => {
      const { store } = await open();
      const run = workflowRun();
      await store.createWorkflowRun(run);
      const back = await store.getWorkflowRun(run.id);
      expect(back).toEqual(run);
      expect(Object.keys(back!)).toEqual(Object.keys(workflowRun()));
      // A copy: changing what was read (or what was written) changes nothing kept.
      (back!.definition as { name: string }).name = 'changed';
      (run.inputs as { diff: string }).diff = 'changed';
      expect((await store.getWorkflowRun(run.id))?.definition).toMatchObject({ name: 'review-patch' });
      expect((await store.getWorkflowRun(run.id))?.inputs).toMatchObject({ diff: '--- a\n+++ b\n' });
      expect(await store.getWorkflowRun('no-such-run')).toBeNull();
      await expect(store.createWorkflowRun({ ...run, workflow: 'other' })).rejects.toMatchObject({
        code: 'E_STORE',
        message: /already exists/,
        details: { reason: 'conflict', workflow_run_id: run.id },
      });
      expect((await store.getWorkflowRun(run.id))?.workflow).toBe('review-patch');
      // Finished runs keep outputs and an error (with or without a step) exactly.
      const done = workflowRun({ status: 'succeeded', outputs: { merged: true, totals: [1, 2.5, null] } });
      const failed = workflowRun({ status: 'failed', error: { code: 'E_UNEXPECTED_EXIT', message: 'exit 1', step: 'summary' } });
      const cancelled = workflowRun({ status: 'cancelled', inputs: [], error: { code: 'cancelled', message: '' } });
      for (const r of [done, failed, cancelled]) await store.createWorkflowRun(r);
      for (const r of [done, failed, cancelled]) expect(await store.getWorkflowRun(r.id)).toEqual(r);
    });

    it('lists workflow runs newest first (ties by id), by status and workflow, up to a limit', async () => {
      const { store } = await open();
      const a = workflowRun({ created_ns: at(1), status: 'succeeded' });
      const b = workflowRun({ created_ns: at(2), workflow: 'other', definition: { name: 'other', steps: [] } });
      const c = workflowRun({ created_ns: at(3), status: 'waiting' });
      const d = workflowRun({ created_ns: at(3) }); // same time as c: ties break on id, descending
      for (const r of [b, d, a, c]) await store.createWorkflowRun(r);
      const ids = async (filter?: Parameters<Store['listWorkflowRuns']>[0]) => (await store.listWorkflowRuns(filter)).map((r) => r.id);
      const tie = [c, d].sort((x, y) => (x.id < y.id ? 1 : -1)).map((x) => x.id);
      expect(await ids()).toEqual([...tie, b.id, a.id]);
      expect(await store.listWorkflowRuns({ workflow: 'other' })).toEqual([b]);
      expect(await ids({ status: ['running', 'waiting'] })).toEqual([...tie, b.id]);
      expect(await ids({ status: ['succeeded'], workflow: 'review-patch' })).toEqual([a.id]);
      expect(await ids({ status: [] })).toEqual([]);
      expect(await ids({ limit: 3 })).toEqual([...tie, b.id]);
      expect(await ids({ limit: 0 })).toEqual([]);
      expect(await ids({ workflow: 'nothing' })).toEqual([]);
      for (const bad of [{ status: ['done'] }, { status: 'running' }, { limit: -1 }, { limit: 1.5 }, { workflow: '' }]) {
        await expect(store.listWorkflowRuns(bad as never)).rejects.toMatchObject({ code: 'E_STORE', message: /workflow run filter/ });
      }
    });

    it('changes a workflow run only from the statuses given (compare-and-set), once, and refuses an unknown id', async () => {
      const { store } = await open();
      const run = workflowRun();
      await store.createWorkflowRun(run);
      // Two racing changes from 'running': exactly one wins.
      const [first, second] = await Promise.all([
        store.updateWorkflowRun(run.id, ['running'], { status: 'waiting', updated_ns: at(10) }),
        store.updateWorkflowRun(run.id, ['running'], { status: 'cancelled', updated_ns: at(11) }),
      ]);
      expect([first, second].filter((r) => r !== null)).toHaveLength(1);
      expect(await store.getWorkflowRun(run.id)).toEqual(first ?? second);
      expect(first ?? second).toEqual(
        first ? { ...run, status: 'waiting', updated_ns: at(10) } : { ...run, status: 'cancelled', updated_ns: at(11) },
      );
      // A status it is not in: null, nothing changed.
      const now = (await store.getWorkflowRun(run.id))!;
      expect(await store.updateWorkflowRun(run.id, ['running'], { status: 'failed', updated_ns: at(12) })).toBeNull();
      expect(await store.getWorkflowRun(run.id)).toEqual(now);
      // Only the fields named change; outputs and error can be set and cleared.
      const ok = (await store.updateWorkflowRun(run.id, ['waiting', 'cancelled'], {
        status: 'succeeded',
        outputs: { merged: 'yes' },
        updated_ns: at(13),
      }))!;
      expect(ok).toEqual({ ...run, status: 'succeeded', outputs: { merged: 'yes' }, updated_ns: at(13) });
      const touched = await store.updateWorkflowRun(run.id, ['succeeded'], { updated_ns: at(14), error: { code: 'X', message: 'm' } });
      expect(touched).toEqual({ ...ok, updated_ns: at(14), error: { code: 'X', message: 'm' } });
      expect(await store.updateWorkflowRun(run.id, ['succeeded'], { updated_ns: at(15), outputs: null, error: null })).toEqual({
        ...ok,
        updated_ns: at(15),
        outputs: null,
      });
      await expect(store.updateWorkflowRun('no-such-run', ['running'], { status: 'failed', updated_ns: at(1) })).rejects.toMatchObject({
        code: 'E_STORE',
        message: /no workflow run with id no-such-run/,
      });
      // What a change may not do: touch other fields, leave out updated_ns, name no or unknown statuses.
      for (const [from, patch] of [
        [['succeeded'], { updated_ns: at(16), workflow: 'other' }],
        [['succeeded'], { updated_ns: at(16), definition: {} }],
        [['succeeded'], { status: 'failed' }],
        [['succeeded'], { status: 'done', updated_ns: at(16) }],
        [[], { status: 'failed', updated_ns: at(16) }],
        [['finished'], { status: 'failed', updated_ns: at(16) }],
        [['succeeded'], { updated_ns: at(16), outputs: { big: 'x'.repeat(4 * 1024 * 1024) } }],
      ] as const) {
        await expect(store.updateWorkflowRun(run.id, from as never, patch as never)).rejects.toMatchObject({ code: 'E_STORE' });
      }
      expect((await store.getWorkflowRun(run.id))?.updated_ns).toBe(at(15));
    });

    it('appends workflow events and lists them in seq order, after a seq when asked, run by run', async () => {
      const { store } = await open();
      const run = workflowRun();
      const other = workflowRun();
      await store.createWorkflowRun(run);
      await store.createWorkflowRun(other);
      const events = [
        workflowEvent(run.id, 1),
        workflowEvent(run.id, 2, {
          kind: 'step_succeeded',
          execution_id: 'exec-1',
          output: { files: [{ path: 'a.txt', additions: 81 }], totals: { additions: 81 } },
        }),
        workflowEvent(run.id, 3, { step: 'deep', kind: 'step_failed', error: { code: 'E_NETWORK_BLOCKED', message: 'no network' } }),
        workflowEvent(run.id, 4, {
          step: 'deep',
          kind: 'step_started',
          attempt: 2,
          tool: 'offline-linter',
          note: 'fallback: offline-linter',
        }),
        workflowEvent(run.id, 10, {
          step: 'sign-off',
          kind: 'step_waiting',
          tool: null,
          tool_version: null,
          approval_id: 'appr-1',
          attempt: 1,
        }),
        workflowEvent(run.id, 11, { step: null, kind: 'run_resumed', attempt: 0, tool: null, tool_version: null, note: 'pid 42' }),
      ];
      // Out of order, and interleaved with another run's.
      for (const e of [events[2]!, events[0]!, events[5]!, events[1]!, events[4]!, events[3]!]) await store.appendWorkflowEvent(e);
      await store.appendWorkflowEvent(workflowEvent(other.id, 1));
      await store.appendWorkflowEvent(workflowEvent(other.id, 2));
      const listed = await store.listWorkflowEvents(run.id);
      expect(listed).toEqual(events);
      expect(Object.keys(listed[0]!)).toEqual(Object.keys(events[0]!));
      expect((await store.listWorkflowEvents(run.id, 2)).map((e) => e.seq)).toEqual([3, 4, 10, 11]);
      expect((await store.listWorkflowEvents(run.id, 4)).map((e) => e.seq)).toEqual([10, 11]);
      expect(await store.listWorkflowEvents(run.id, 11)).toEqual([]);
      expect(await store.listWorkflowEvents(run.id, 0)).toEqual(events);
      expect((await store.listWorkflowEvents(other.id)).map((e) => e.seq)).toEqual([1, 2]);
      expect(await store.listWorkflowEvents('no-such-run')).toEqual([]);
      await expect(store.listWorkflowEvents(run.id, -1)).rejects.toMatchObject({ code: 'E_STORE' });
      await expect(store.listWorkflowEvents(run.id, 1.5)).rejects.toMatchObject({ code: 'E_STORE' });
      // What was read is a copy.
      (listed[1]!.output as { totals: { additions: number } }).totals.additions = 0;
      expect((await store.listWorkflowEvents(run.id, 1))[0]?.output).toMatchObject({ totals: { additions: 81 } });
    });

    it('refuses an event whose (run, seq) exists as a conflict, and one for an unknown run, keeping what was there', async () => {
      const { store } = await open();
      const run = workflowRun();
      await store.createWorkflowRun(run);
      const first = workflowEvent(run.id, 1);
      await store.appendWorkflowEvent(first);
      await expect(store.appendWorkflowEvent(workflowEvent(run.id, 1, { kind: 'step_succeeded', output: 1 }))).rejects.toMatchObject({
        code: 'E_STORE',
        message: /already has an event 1/,
        details: { reason: 'conflict', workflow_run_id: run.id, seq: 1 },
      });
      const unknown = store.appendWorkflowEvent(workflowEvent('no-such-run', 1));
      await expect(unknown).rejects.toMatchObject({ code: 'E_STORE', message: /no workflow run with id no-such-run/ });
      await unknown.catch((err: { details: { reason?: string } }) => expect(err.details.reason).toBeUndefined());
      expect(await store.listWorkflowEvents(run.id)).toEqual([first]);
      expect(await store.listWorkflowEvents('no-such-run')).toEqual([]);
      // Two writers racing for the next seq: exactly one appends it, the other hears 'conflict'.
      const settled = await Promise.allSettled([
        store.appendWorkflowEvent(workflowEvent(run.id, 2, { note: 'a' })),
        store.appendWorkflowEvent(workflowEvent(run.id, 2, { note: 'b' })),
        store.appendWorkflowEvent(workflowEvent(run.id, 3, { note: 'c' })),
      ]);
      expect(settled.map((s) => s.status).sort()).toEqual(['fulfilled', 'fulfilled', 'rejected']);
      expect(settled.find((s) => s.status === 'rejected')).toMatchObject({ reason: { details: { reason: 'conflict', seq: 2 } } });
      expect((await store.listWorkflowEvents(run.id)).map((e) => e.seq)).toEqual([1, 2, 3]);
    });

    it('refuses workflow runs and events that are not well formed or too large, writing nothing', async () => {
      const { store } = await open();
      const deep = (n: number): unknown => {
        let v: unknown = 0;
        for (let i = 0; i < n; i++) v = [v];
        return v;
      };
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const badRuns: unknown[] = [
        { ...workflowRun(), id: 'has spaces' },
        { ...workflowRun(), workflow: '' },
        { ...workflowRun(), status: 'paused' },
        { ...workflowRun(), definition: 'name: x' },
        { ...workflowRun(), definition: [1] },
        { ...workflowRun(), definition_sha256: 'ABC' },
        { ...workflowRun(), inputs: undefined },
        { ...workflowRun(), inputs: { n: 1n } },
        { ...workflowRun(), inputs: cyclic },
        { ...workflowRun(), inputs: deep(1001) },
        { ...workflowRun(), created_ns: '1e9' },
        { ...workflowRun(), updated_ns: (2n ** 63n).toString() },
        { ...workflowRun(), error: { code: 'E' } },
        { ...workflowRun(), error: 'failed' },
        { ...workflowRun(), outputs: undefined },
        // Past MAX_WORKFLOW_RECORD_BYTES (4 MiB) as JSON: in characters, and in UTF-8 bytes only.
        { ...workflowRun(), definition: { name: 'big', blob: 'x'.repeat(4 * 1024 * 1024) } },
        { ...workflowRun(), inputs: { text: 'é'.repeat(2 * 1024 * 1024 + 10) } },
        { ...workflowRun(), outputs: { text: 'x'.repeat(4 * 1024 * 1024) } },
        null,
      ];
      for (const r of badRuns) await expect(store.createWorkflowRun(r as WorkflowRunRecord)).rejects.toMatchObject({ code: 'E_STORE' });
      expect(await store.listWorkflowRuns()).toEqual([]);
      // Nearly at the limit is fine.
      const large = workflowRun({ inputs: { text: 'x'.repeat(4 * 1024 * 1024 - 100) }, definition: { name: 'ok', depth: deep(999) } });
      await store.createWorkflowRun(large);
      expect(await store.getWorkflowRun(large.id)).toEqual(large);

      const run = workflowRun();
      await store.createWorkflowRun(run);
      const badEvents: unknown[] = [
        workflowEvent(run.id, 0),
        { ...workflowEvent(run.id, 1), seq: 1.5 },
        { ...workflowEvent(run.id, 1), seq: '1' },
        workflowEvent(run.id, 1, { kind: 'step_paused' as never }),
        workflowEvent(run.id, 1, { step: null }), // a step event names its step
        workflowEvent(run.id, 1, { kind: 'run_resumed' }), // a run-level event has none
        workflowEvent(run.id, 1, { attempt: -1 }),
        workflowEvent(run.id, 1, { at_ns: 'now' }),
        workflowEvent(run.id, 1, { execution_id: 'has spaces' }),
        workflowEvent(run.id, 1, { error: { code: 'E_X' } as never }),
        workflowEvent(run.id, 1, { note: 'nul \u0000' }),
        workflowEvent(run.id, 1, { output: deep(1001) }),
        workflowEvent(run.id, 1, { output: undefined }),
        // Past MAX_WORKFLOW_EVENT_BYTES (16 MiB): the output alone, and the output with the rest of the event.
        workflowEvent(run.id, 1, { kind: 'step_succeeded', output: 'x'.repeat(16 * 1024 * 1024) }),
        workflowEvent(run.id, 1, { kind: 'step_succeeded', output: 'x'.repeat(16 * 1024 * 1024 - 100), note: 'n'.repeat(200) }),
        { ...workflowEvent(run.id, 1), run_id: 7 },
      ];
      for (const e of badEvents) await expect(store.appendWorkflowEvent(e as WorkflowEvent)).rejects.toMatchObject({ code: 'E_STORE' });
      expect(await store.listWorkflowEvents(run.id)).toEqual([]);
      const big = workflowEvent(run.id, 1, { kind: 'step_succeeded', output: { text: 'x'.repeat(8 * 1024 * 1024) } });
      await store.appendWorkflowEvent(big);
      expect(await store.listWorkflowEvents(run.id)).toEqual([big]);
    });

    it('refuses to read back a damaged workflow run or event', async (ctx) => {
      const h = await open();
      if (!h.damage) return ctx.skip();
      const { store } = h;
      const runs = [workflowRun(), workflowRun(), workflowRun(), workflowRun()];
      for (const r of runs) await store.createWorkflowRun(r);
      for (const seq of [1, 2, 3]) await store.appendWorkflowEvent(workflowEvent(runs[0]!.id, seq));
      await h.damage('workflow_run', runs[0]!.id, { status: 'paused' });
      await h.damage('workflow_run', runs[1]!.id, { definition_json: '{"name":' });
      await h.damage('workflow_run', runs[2]!.id, { inputs_json: `${'['.repeat(1001)}${']'.repeat(1001)}` });
      await h.damage('workflow_event', [runs[0]!.id, 2], { kind: 'step_paused' });
      await h.damage('workflow_event', [runs[0]!.id, 3], { output_json: '{"a":' });
      for (const r of runs.slice(0, 3)) {
        await expect(store.getWorkflowRun(r.id)).rejects.toMatchObject({ code: 'E_STORE', message: /damaged workflow run/ });
      }
      await expect(store.listWorkflowRuns()).rejects.toMatchObject({ code: 'E_STORE', message: /damaged workflow run/ });
      expect(await store.getWorkflowRun(runs[3]!.id)).toEqual(runs[3]);
      await expect(store.updateWorkflowRun(runs[1]!.id, ['running'], { status: 'failed', updated_ns: at(1) })).rejects.toMatchObject({
        code: 'E_STORE',
        message: /damaged workflow run/,
      });
      await expect(store.listWorkflowEvents(runs[0]!.id)).rejects.toMatchObject({ code: 'E_STORE', message: /damaged workflow event/ });
      await expect(store.listWorkflowEvents(runs[0]!.id, 2)).rejects.toMatchObject({ code: 'E_STORE', message: /output is not JSON/ });
      expect(await store.listWorkflowEvents(runs[0]!.id, 3)).toEqual([]);
    });

    it('keeps workflow runs and events across a reopen, outside export and prune', async (ctx) => {
      const h = await open();
      if (!h.reopen) return ctx.skip();
      const run = workflowRun({ created_ns: at(1) });
      await h.store.createWorkflowRun(run);
      await h.store.appendWorkflowEvent(workflowEvent(run.id, 1));
      const waiting = await h.store.updateWorkflowRun(run.id, ['running'], { status: 'waiting', updated_ns: at(2) });
      const store = await h.reopen();
      expect(await store.getWorkflowRun(run.id)).toEqual(waiting);
      expect(await store.listWorkflowEvents(run.id)).toEqual([workflowEvent(run.id, 1)]);
      expect(await collect(store.export())).toEqual([]);
      await store.prune({ keep: 0 });
      await store.prune({ olderThan: at(1_000_000_000) });
      expect(await store.listWorkflowRuns()).toEqual([waiting]);
      expect(await store.listWorkflowEvents(run.id)).toHaveLength(1);
      // A write still in flight at close lands too.
      const late = store.appendWorkflowEvent(workflowEvent(run.id, 2, { kind: 'step_succeeded', output: { ok: true } }));
      const again = await h.reopen();
      await late;
      expect((await again.listWorkflowEvents(run.id)).map((e) => e.seq)).toEqual([1, 2]);
    });

    it('keeps a workflow step’s approval, lists it by run, and holds it to what such an approval may be', async () => {
      const { store } = await open();
      const call = approval({ requested_ns: at(1) });
      const step = stepApproval('run-1', { requested_ns: at(2) });
      const other = stepApproval('run-2', { requested_ns: at(3), prompt: null, workflow_step: 'deep' });
      for (const a of [call, step, other]) await store.createApproval(a);
      expect(await store.getApproval(step.id)).toEqual(step);
      expect(await store.getApproval(call.id)).toMatchObject({ workflow_run_id: null, workflow_step: null, prompt: null });
      expect(await store.listApprovals()).toEqual([other, step, call]);
      expect(await store.listApprovals({ workflowRunId: 'run-1' })).toEqual([step]);
      expect(await store.listApprovals({ workflowRunId: null })).toEqual([call]);
      expect(await store.listApprovals({ workflowRunId: 'run-3' })).toEqual([]);
      expect(await store.listApprovals({ tool: 'review-patch', status: ['pending'], limit: 1 })).toEqual([other]);
      await expect(store.listApprovals({ workflowRunId: 'has spaces' })).rejects.toMatchObject({ code: 'E_STORE' });
      // Deciding it is a status change like any other.
      const decided = await store.updateApproval(step.id, ['pending'], {
        status: 'approved',
        scope: 'once',
        decided_by: 'ada',
        decided_ns: at(9),
      });
      expect(decided).toEqual({ ...step, status: 'approved', scope: 'once', decided_by: 'ada', decided_ns: at(9) });
      const bad: unknown[] = [
        stepApproval('run-1', { workflow_step: null }),
        approval({ workflow_step: 'sign-off' }),
        stepApproval('has spaces'),
        stepApproval('run-1', { version: '1.0.0' }),
        stepApproval('run-1', { bindings: { '/workspace': { folder: '/home/ada' } } }),
        stepApproval('run-1', { folders: [{ guest: '/workspace', folder: '/home/ada', access: 'read' }] }),
        stepApproval('run-1', { max_scope: 'tool' }),
        stepApproval('run-1', { scope: 'folder' }),
        stepApproval('run-1', { prompt: 'x'.repeat(16 * 1024 + 1) }),
        { ...stepApproval('run-1'), prompt: undefined },
      ];
      for (const a of bad) await expect(store.createApproval(a as ApprovalRecord)).rejects.toMatchObject({ code: 'E_STORE' });
      expect(await store.listApprovals()).toHaveLength(3);
    });
  });
}
