/** Recording snapshots in the invoke pipeline, against a fake executor and the in-memory store. */
import { describe, expect, it } from 'vitest';
import {
  MemoryStore,
  Registry,
  Runtime,
  CorralError,
  isoFromNs,
  nowNs,
  nsFromDate,
  sha256Hex as sha256,
  type ExecutionRequest,
  type ExecutionResult,
  type Executor,
  type Store,
} from '@corral/core';
import { goodSpec, MODULE_BYTES } from './helpers.js';
import { storeError } from '@corral/core/store-kit';

const encode = (s: string) => new TextEncoder().encode(s);
const INPUT = { diff: '--- a\n+++ b\n' };

class FakeExecutor implements Executor {
  calls = 0;
  constructor(private respond: (req: ExecutionRequest) => Partial<ExecutionResult> | Promise<Partial<ExecutionResult>>) {}
  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    this.calls++;
    const r = await this.respond(request);
    return { exitCode: 0, stdout: new Uint8Array(), stderr: new Uint8Array(), durationMs: 1, ...r };
  }
}

async function setup(executor: Executor, store: Store = new MemoryStore(), more: { recordInputs?: boolean } = {}) {
  const registry = new Registry();
  await registry.register(goodSpec({ mounts: undefined }), MODULE_BYTES);
  return { runtime: new Runtime({ registry, executor, store, ...more }), store, tool: registry.resolve('diff-summary') };
}

/** A store whose chosen methods fail, as a read-only or full disk would, and the way the Store contract says every adapter fails: with E_STORE. */
function failing(methods: (keyof Store)[]): Store {
  const inner = new MemoryStore('failing');
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (methods.includes(prop as keyof Store)) return () => Promise.reject(storeError('failing', `disk is full (${String(prop)})`));
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('snapshots in the invoke pipeline', () => {
  it('records a successful call: intent before the tool runs, result before invoke returns', async () => {
    const store = new MemoryStore();
    const seenDuringCall: string[] = [];
    const executor = new FakeExecutor(async () => {
      // The intent is already durable while the tool runs.
      seenDuringCall.push(...(await store.listExecutions()).map((e) => e.status));
      return { stdout: encode('{"files":[]}'), stderr: encode('note\n'), peakMemoryBytes: 2 * 65536 };
    });
    const { runtime, tool } = await setup(executor, store);
    const before = BigInt(nowNs());
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result.ok).toBe(true);
    expect(seenDuringCall).toEqual(['interrupted']);
    expect(result.snapshot).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/) });

    const snap = await store.getExecution(result.snapshot!.id);
    expect(snap).toMatchObject({
      status: 'ok',
      tool: 'diff-summary',
      version: '1.0.0',
      decision_id: null,
      wasm_sha256: tool.wasmSha256,
      input_json: JSON.stringify(INPUT),
      input_sha256: await sha256(JSON.stringify(INPUT)),
      exit_code: 0,
      error_code: null,
      stdout_sha256: await sha256('{"files":[]}'),
      stdout_head: '{"files":[]}',
      stdout_tail: '{"files":[]}',
      stderr_head: 'note\n',
      stderr_tail: 'note\n',
      duration_ms: result.duration_ms,
      peak_memory_bytes: 131072,
    });
    expect(BigInt(snap!.intent_ns)).toBeGreaterThanOrEqual(before);
    expect(BigInt(snap!.result_ns!)).toBeGreaterThan(BigInt(snap!.intent_ns));
  });

  it('keeps the first and last KiB of long output, whole characters only', async () => {
    const stdout = `{"files":[],"pad":"${'é'.repeat(3000)}"}`;
    const { runtime, store } = await setup(new FakeExecutor(() => ({ stdout: encode(stdout), stderr: encode('x'.repeat(5000) + 'END') })));
    const result = await runtime.invoke('diff-summary', INPUT);
    const snap = (await store.getExecution(result.snapshot!.id))!;
    expect(stdout.startsWith(snap.stdout_head!)).toBe(true);
    expect(stdout.endsWith(snap.stdout_tail!)).toBe(true);
    expect(encode(snap.stdout_head!).length).toBeLessThanOrEqual(1024);
    expect(encode(snap.stdout_head!).length).toBeGreaterThan(1020);
    expect(snap.stderr_tail!.endsWith('END')).toBe(true);
    expect(snap.stderr_head).toBe('x'.repeat(1024));
  });

  it('records failures with their error code, and calls refused before running', async () => {
    const { runtime, store } = await setup(new FakeExecutor(() => ({ exitCode: 1, stdout: encode('{"error":{"message":"bad diff"}}') })));
    const failed = await runtime.invoke('diff-summary', INPUT);
    expect(await store.getExecution(failed.snapshot!.id)).toMatchObject({
      status: 'failed',
      exit_code: 1,
      error_code: 'E_UNEXPECTED_EXIT',
      error_message: 'diff-summary exited with code 1: bad diff',
    });
    const missing = await runtime.invoke('nope@^2', { a: 1 });
    expect(await store.getExecution(missing.snapshot!.id)).toMatchObject({
      status: 'failed',
      tool: 'nope',
      version: null,
      wasm_sha256: null,
      input_json: '{"a":1}',
      exit_code: null,
      error_code: 'E_TOOL_NOT_FOUND',
      stdout_sha256: null,
    });
    const invalid = await runtime.invoke('diff-summary', { diff: 5 });
    expect(await store.getExecution(invalid.snapshot!.id)).toMatchObject({
      status: 'failed',
      version: '1.0.0',
      error_code: 'E_INPUT_VALIDATION',
    });
    const notJson = await runtime.invoke('diff-summary', { diff: 'x', n: 10n });
    expect(await store.getExecution(notJson.snapshot!.id)).toMatchObject({
      input_json: null,
      input_sha256: null,
      error_code: 'E_INPUT_VALIDATION',
    });
  });

  it('keeps only the input hash when the caller opts out', async () => {
    const { runtime, store } = await setup(new FakeExecutor(() => ({ stdout: encode('{"files":[]}') })));
    const r = await runtime.invoke('diff-summary', INPUT, { recordInput: false });
    expect(await store.getExecution(r.snapshot!.id)).toMatchObject({ input_json: null, input_sha256: await sha256(JSON.stringify(INPUT)) });

    const quiet = await setup(new FakeExecutor(() => ({ stdout: encode('{"files":[]}') })), new MemoryStore(), { recordInputs: false });
    const r2 = await quiet.runtime.invoke('diff-summary', INPUT);
    expect((await quiet.store.getExecution(r2.snapshot!.id))?.input_json).toBeNull();
    const r3 = await quiet.runtime.invoke('diff-summary', INPUT, { recordInput: true });
    expect((await quiet.store.getExecution(r3.snapshot!.id))?.input_json).toBe(JSON.stringify(INPUT));
  });

  it('records a decision and links the calls it caused', async () => {
    const { runtime, store } = await setup(new FakeExecutor(() => ({ stdout: encode('{"files":[]}') })));
    const decision = await runtime.recordDecision({
      prompt: 'Summarize my diff',
      output: '{"tool":"diff-summary"}',
      model: 'm-1',
      runId: 'r-9',
    });
    expect(decision).toMatchObject({
      prompt_sha256: await sha256('Summarize my diff'),
      output: '{"tool":"diff-summary"}',
      model: 'm-1',
      run_id: 'r-9',
    });
    expect(await store.getDecision(decision.id)).toEqual(decision);
    const a = await runtime.invoke('diff-summary', INPUT, { decisionId: decision.id });
    await runtime.invoke('diff-summary', INPUT);
    expect((await store.listExecutions({ decisionId: decision.id })).map((e) => e.id)).toEqual([a.snapshot!.id]);
  });

  it('a store that cannot write the intent: the call still runs and says so', async () => {
    const executor = new FakeExecutor(() => ({ stdout: encode('{"files":[]}') }));
    const { runtime } = await setup(executor, failing(['beginExecution', 'finishExecution']));
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result).toMatchObject({ ok: true, output: { files: [] } });
    expect(executor.calls).toBe(1);
    expect(result.snapshot).toEqual({
      id: expect.any(String),
      error: "the snapshot's intent could not be written: Snapshot store failing: disk is full (beginExecution)",
    });
  });

  it('a store that cannot write the result: the call keeps its result, and the record reads as interrupted', async () => {
    const store = failing(['finishExecution']);
    const { runtime } = await setup(new FakeExecutor(() => ({ stdout: encode('{"files":[]}') })), store);
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result.ok).toBe(true);
    expect(result.snapshot?.error).toBe(
      "the snapshot's result could not be written (it reads back as interrupted): Snapshot store failing: disk is full (finishExecution)",
    );
    expect((await store.getExecution(result.snapshot!.id))?.status).toBe('interrupted');
  });

  it("recordDecision throws the store's E_STORE error rather than dropping the decision", async () => {
    const { runtime } = await setup(new FakeExecutor(() => ({})), failing(['recordDecision']));
    const failed = await runtime.recordDecision({ prompt: 'p', output: 'o' }).then(
      (snapshot) => expect.fail(`resolved with ${JSON.stringify(snapshot)} though nothing was recorded`),
      (err: unknown) => err,
    );
    // The store's own error, unwrapped: its code, its message, its details.
    expect(failed).toBeInstanceOf(CorralError);
    expect(failed).toMatchObject({
      code: 'E_STORE',
      message: 'Snapshot store failing: disk is full (recordDecision)',
      details: { store: 'failing' },
      retryable: false,
    });
    // What it is given is checked first: a bad decision is the caller's error, not the store's.
    for (const bad of [null, { prompt: 5, output: 'o' }, { prompt: 'p' }, { prompt: 'p', output: 'o', model: 3 }]) {
      await expect(runtime.recordDecision(bad as never)).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION' });
    }
  });

  it('records nothing, and adds no field, without a store', async () => {
    const registry = new Registry();
    await registry.register(goodSpec({ mounts: undefined }), MODULE_BYTES);
    const runtime = new Runtime({ registry, executor: new FakeExecutor(() => ({ stdout: encode('{"files":[]}') })) });
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result.ok).toBe(true);
    expect('snapshot' in result).toBe(false);
    expect((await runtime.recordDecision({ prompt: 'p', output: 'o' })).id).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('snapshot time', () => {
  it('is UTC nanoseconds, exact as a string', () => {
    expect(nsFromDate(new Date('2026-11-29T09:47:06.123Z'))).toBe('1795945626123000000');
    expect(isoFromNs('1795945626123456789')).toBe('2026-11-29T09:47:06.123456789Z');
    const now = BigInt(nowNs());
    expect(Number(now / 1_000_000n)).toBeGreaterThan(Date.now() - 1000);
    expect(Number(now / 1_000_000n)).toBeLessThan(Date.now() + 1000);
  });
});
