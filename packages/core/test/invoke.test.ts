/** The invoke pipeline against a fake executor: a unit test of the checks, not of running wasm. */
import { describe, expect, it } from 'vitest';
import {
  CorralError,
  MAX_JSON_DEPTH,
  MemoryStore,
  Registry,
  jsonTextTooDeep,
  Runtime,
  type ExecutionRequest,
  type ExecutionResult,
  type Executor,
  type MountBinding,
} from '@corral/core';
import { goodSpec, MODULE_BYTES } from './helpers.js';

const encode = (s: string) => new TextEncoder().encode(s);

/** Records requests; answers with whatever `respond` returns (or throws). */
class FakeExecutor implements Executor {
  requests: ExecutionRequest[] = [];
  constructor(private respond: (req: ExecutionRequest) => Partial<ExecutionResult> | Promise<Partial<ExecutionResult>>) {}
  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    this.requests.push(request);
    const r = await this.respond(request);
    return { exitCode: 0, stdout: new Uint8Array(), stderr: new Uint8Array(), durationMs: 1, ...r };
  }
}

const printing = (stdout: string, more: Partial<ExecutionResult> = {}) => new FakeExecutor(() => ({ stdout: encode(stdout), ...more }));

/** The fake tool declares no mounts unless a test is about them: a declared mount must be bound. */
const MOUNTED = goodSpec();
async function setup(executor: Executor, spec = goodSpec({ mounts: undefined })) {
  const registry = new Registry();
  await registry.register(spec, MODULE_BYTES);
  return new Runtime({ registry, executor });
}

const INPUT = { diff: '--- a\n+++ b\n' };

describe('Runtime.invoke', () => {
  it('lets a call lower memory_mb and disk_mb (a policy does), never raise them', async () => {
    const executor = printing('{"files":[]}');
    const runtime = await setup(executor);
    expect((await runtime.invoke('diff-summary', INPUT, { memoryMb: 32, diskMb: 0 })).ok).toBe(true);
    expect(executor.requests[0]).toMatchObject({ memoryLimitBytes: 32 * 2 ** 20, diskLimitBytes: 0 });
    for (const [opts, message] of [
      [{ memoryMb: 65 }, /memoryMb 65 is above diff-summary's resources.memory_mb \(64\)/],
      [{ diskMb: 17 }, /diskMb 17 is above/],
      [{ memoryMb: 0 }, /memoryMb must be a whole number ≥ 1/],
      [{ diskMb: 1.5 }, /diskMb must be a whole number/],
    ] as const) {
      const r = await runtime.invoke('diff-summary', INPUT, opts);
      expect(r.error, JSON.stringify(opts)).toMatchObject({ code: 'E_INPUT_VALIDATION', message });
    }
    expect(executor.requests).toHaveLength(1);
  });

  it('returns the envelope on success and builds the request', async () => {
    const executor = printing('{"files":[]}', { stderr: encode('note\n') });
    const runtime = await setup(executor, MOUNTED);
    const result = await runtime.invoke('diff-summary@^1', INPUT, {
      mounts: [
        { guest: '/workspace', access: 'read', source: { kind: 'memory', tree: { 'a.txt': 'hi' } } },
        { guest: '/out', access: 'read' },
      ],
      env: { LANG: 'C' },
      args: ['--verbose'],
    });
    expect(result).toMatchObject({
      ok: true,
      tool: 'diff-summary',
      version: '1.0.0',
      output: { files: [] },
      error: null,
      exit_code: 0,
      stdout_head: '{"files":[]}',
      stderr_tail: 'note\n',
      stdout_truncated: false,
      stderr_truncated: false,
    });
    expect(result.duration_ms).toBeGreaterThanOrEqual(0);
    expect(Math.round(result.duration_ms * 100) / 100).toBe(result.duration_ms);

    const [request] = executor.requests;
    expect(JSON.parse(new TextDecoder().decode(request!.stdin))).toEqual(INPUT);
    expect(request!.args).toEqual(['diff-summary', '--verbose']);
    expect(request!.env).toEqual({ LANG: 'C', TZ: 'UTC' });
    expect(request!.timeoutMs).toBe(5000);
    expect(request!.outputLimitBytes).toBe(1024 * 1024);
    expect(request!.mounts.map((m) => `${m.guest}:${m.access}`)).toEqual(['/workspace:read', '/out:read']);
  });

  it("hands the tool the UTF-8 bytes of the input's JSON, whether it is ASCII or not", async () => {
    const executor = printing('{"files":[]}');
    const runtime = await setup(executor);
    const diffs = ['--- a\n+++ b\n', '--- café\n', '+ 😀 end', 'x'.repeat(100_000) + 'é', 'lone \ud800 surrogate', ''];
    for (const diff of diffs) expect((await runtime.invoke('diff-summary', { diff })).ok).toBe(true);
    expect(executor.requests.map((r) => [...r.stdin])).toEqual(diffs.map((diff) => [...encode(JSON.stringify({ diff }))]));
  });

  it('lets the call override timeout and output limit', async () => {
    const executor = printing('{"files":[]}');
    const runtime = await setup(executor);
    await runtime.invoke('diff-summary', INPUT, { timeoutMs: 10, outputLimitBytes: 100 });
    expect(executor.requests[0]).toMatchObject({ timeoutMs: 10, outputLimitBytes: 100 });
  });

  it('reports an unknown tool without throwing', async () => {
    const runtime = await setup(printing('{}'));
    const result = await runtime.invoke('nope@^1', INPUT);
    expect(result).toMatchObject({ ok: false, tool: 'nope', version: null, exit_code: null, output: null });
    expect(result.error).toMatchObject({ code: 'E_TOOL_NOT_FOUND', message: "No tool named 'nope'. Available: diff-summary" });
  });

  it('names the JSON path of each input problem', async () => {
    const executor = printing('{}');
    const runtime = await setup(executor);
    const result = await runtime.invoke('diff-summary', { diff: 'x', language: 'fr' });
    expect(result.error).toMatchObject({
      code: 'E_INPUT_VALIDATION',
      message: "Input does not match diff-summary's input_schema: /language: must be equal to one of the allowed values (en, zh)",
      details: { problems: [{ path: '/language', message: 'must be equal to one of the allowed values (en, zh)' }] },
    });
    const missing = await runtime.invoke('diff-summary', { extra: 1 });
    expect(missing.error?.message).toBe(
      "Input does not match diff-summary's input_schema: /: must have required property 'diff'; /: must NOT have additional property 'extra'",
    );
    expect(executor.requests).toHaveLength(0);
  });

  it('refuses input that JSON cannot carry', async () => {
    const runtime = await setup(printing('{}'));
    const cyclic: Record<string, unknown> = { diff: 'x' };
    cyclic.self = cyclic;
    for (const [input, path] of [
      [undefined, '/'],
      [{ diff: 'x', n: 10n }, '/n'],
      [{ diff: 'x', f: () => 1 }, '/f'],
      [{ diff: 'x', list: [1, undefined] }, '/list/1'],
      [{ diff: 'x', when: new Date(0) }, '/when'],
      [{ diff: 'x', n: NaN }, '/n'],
      [cyclic, '/self'],
    ] as const) {
      const result = await runtime.invoke('diff-summary', input);
      expect(result.error?.code).toBe('E_INPUT_VALIDATION');
      expect(result.error?.details.problems).toEqual([expect.objectContaining({ path })]);
    }
  });

  it('refuses path traversal in format "path" strings', async () => {
    const runtime = await setup(printing('{"files":[]}'));
    for (const file of ['/workspace/../etc/passwd', 'relative/file', '/workspace/a\0b']) {
      const result = await runtime.invoke('diff-summary', { diff: 'x', file });
      expect(result.error).toMatchObject({
        code: 'E_INPUT_VALIDATION',
        details: { problems: [{ path: '/file', message: expect.stringMatching(/absolute path without '\.\.'/) }] },
      });
    }
    expect((await runtime.invoke('diff-summary', { diff: 'x', file: '/workspace/a/b.txt' })).ok).toBe(true);
  });

  it('refuses a mount the spec does not declare', async () => {
    const runtime = await setup(printing('{}'), MOUNTED);
    const result = await runtime.invoke('diff-summary', INPUT, { mounts: [{ guest: '/etc', access: 'read' }] });
    expect(result.error).toMatchObject({
      code: 'E_INPUT_VALIDATION',
      message: 'Mount /etc is not declared by tool diff-summary; declared: /workspace, /out',
    });
  });

  it('refuses a call that leaves a declared mount unbound, before anything runs', async () => {
    const executor = printing('{"files":[]}');
    const runtime = await setup(executor, MOUNTED);
    const none = await runtime.invoke('diff-summary', INPUT);
    expect(none.error).toMatchObject({
      code: 'E_INPUT_VALIDATION',
      message: expect.stringMatching(/^Tool diff-summary declares mounts \/workspace, \/out but the call binds nothing to them/),
      details: { reason: 'unbound_mount', guest: '/workspace', unbound: ['/workspace', '/out'], declared: ['/workspace', '/out'] },
    });
    const one = await runtime.invoke('diff-summary', INPUT, { mounts: [{ guest: '/workspace/', access: 'read' }] });
    expect(one.error).toMatchObject({
      message: expect.stringMatching(
        /declares mount \/out but the call binds nothing to it; bind each, e\.g\. \{ guest: '\/out', access: 'read-write'/,
      ),
      details: { unbound: ['/out'] },
    });
    expect(executor.requests).toHaveLength(0);
  });

  it('refuses widening a read mount to read-write', async () => {
    const runtime = await setup(printing('{}'), MOUNTED);
    const result = await runtime.invoke('diff-summary', INPUT, { mounts: [{ guest: '/workspace', access: 'read-write' }] });
    expect(result.error).toMatchObject({
      code: 'E_INPUT_VALIDATION',
      message: "Mount /workspace is declared read-only by tool diff-summary; bind it with access 'read'",
    });
  });

  it("refuses a mount source that names no kind, before the executor sees it; which kinds exist is the host's business", async () => {
    const executor = printing('{"files":[]}');
    const runtime = await setup(executor, goodSpec({ mounts: [{ guest: '/workspace', access: 'read' }] }));
    for (const source of [null, 'memory', [], { tree: {} }, { kind: 7 }]) {
      const mounts = [{ guest: '/workspace', access: 'read', source }] as unknown as MountBinding[];
      const result = await runtime.invoke('diff-summary', INPUT, { mounts });
      expect(result.error, JSON.stringify(source)).toMatchObject({
        code: 'E_INPUT_VALIDATION',
        message: expect.stringMatching(/^Mount \/workspace has a source that is not an object with a kind \(a string\)/),
      });
    }
    expect(executor.requests).toHaveLength(0);
    // A kind core does not know is passed on: the host's executor decides.
    const source = { kind: 'elsewhere', where: 'x' };
    const other = await runtime.invoke('diff-summary', INPUT, { mounts: [{ guest: '/workspace', access: 'read', source }] });
    expect(other.error).toBeNull();
    expect(executor.requests[0]!.mounts).toEqual([{ guest: '/workspace', access: 'read', source }]);
  });

  it('refuses an env var the spec does not list', async () => {
    const runtime = await setup(printing('{}'));
    const result = await runtime.invoke('diff-summary', INPUT, { env: { LANG: 'C', HOME: '/root' } });
    expect(result.error?.code).toBe('E_INPUT_VALIDATION');
    expect(result.error?.message).toMatch(/HOME not listed in diff-summary's env \(listed: LANG/);
    expect(result.error?.details).toMatchObject({ unlisted: ['HOME'] });
  });

  it('reports a non-zero exit with the error JSON the tool printed', async () => {
    const runtime = await setup(
      printing('{"error":{"code":"bad_diff","message":"line 3 is not a hunk header"}}', {
        exitCode: 1,
        stderr: encode('parsing...\nfailed\n'),
      }),
    );
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result).toMatchObject({ ok: false, exit_code: 1, stderr_tail: 'parsing...\nfailed\n' });
    expect(result.error).toEqual({
      code: 'E_UNEXPECTED_EXIT',
      message: 'diff-summary exited with code 1: line 3 is not a hunk header',
      retryable: false,
      details: {
        reason: 'exit',
        exit_code: 1,
        stderr_tail: 'parsing...\nfailed\n',
        tool_error: { code: 'bad_diff', message: 'line 3 is not a hunk header' },
      },
    });
  });

  it('falls back to the last stderr line when the tool printed no error JSON', async () => {
    const runtime = await setup(printing('', { exitCode: 1, stderr: encode('boom\npanicked at src/main.rs\n') }));
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result.error?.message).toBe('diff-summary exited with code 1 (stderr: panicked at src/main.rs)');
    expect(result.error?.details.tool_error).toBeNull();
  });

  it('reports stdout that is not JSON', async () => {
    const runtime = await setup(printing('Summary: 3 files changed', { stderr: encode('warn') }));
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result.error).toMatchObject({
      code: 'E_UNEXPECTED_EXIT',
      message: 'diff-summary printed output that is not JSON: Summary: 3 files changed',
      details: { stdout_head: 'Summary: 3 files changed', stderr_tail: 'warn' },
    });
  });

  it('reports output that fails output_schema', async () => {
    const runtime = await setup(printing('{"files":"three"}'));
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result).toMatchObject({ ok: false, output: null, exit_code: 0 });
    expect(result.error).toMatchObject({
      code: 'E_UNEXPECTED_EXIT',
      message: "diff-summary's output does not match its output_schema: /files: must be array",
      details: { problems: [{ path: '/files', message: 'must be array' }] },
    });
  });

  it('maps an executor that throws', async () => {
    const runtime = await setup(
      new FakeExecutor(() => {
        throw new Error('worker died');
      }),
    );
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result).toMatchObject({ ok: false, exit_code: null, tool: 'diff-summary', version: '1.0.0' });
    // Corral's own executors throw only CorralErrors: anything else is a bug, and says so.
    expect(result.error).toMatchObject({
      code: 'E_UNEXPECTED_EXIT',
      message: "The executor failed: worker died (an internal error, not the tool's; please report it)",
      details: { reason: 'internal', cause: 'worker died' },
    });
  });

  it('passes a CorralError from the executor through', async () => {
    const runtime = await setup(
      new FakeExecutor(() => {
        throw new CorralError('E_NETWORK_BLOCKED', 'imports wasi:sockets/tcp');
      }),
    );
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result.error).toEqual({ code: 'E_NETWORK_BLOCKED', message: 'imports wasi:sockets/tcp', details: {}, retryable: false });
  });

  it('passes an error the executor classified', async () => {
    const error = {
      code: 'E_RESOURCE_EXHAUSTED',
      message: 'timed out after 5000 ms',
      details: { resource: 'time', timeout_ms: 5000 },
      retryable: true,
    } as const;
    const runtime = await setup(printing('{"files":[', { exitCode: 1, error, stdoutTruncated: true }));
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result).toMatchObject({ ok: false, error, exit_code: 1, stdout_head: '{"files":[', stdout_truncated: true });
  });

  it('classifies cut-off stdout as an output cap', async () => {
    const runtime = await setup(printing('{"files":[', { stdoutTruncated: true }));
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', retryable: true, details: { resource: 'output' } });
  });

  it('keeps the first and last KiB without splitting UTF-8 characters', async () => {
    const big = 'é'.repeat(2000); // 2 bytes each: 1 KiB boundaries land mid-character if uncareful
    const runtime = await setup(printing(`{"files":[],"pad":"${big}"}`, { stderr: encode(`x${big}`) }));
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result.ok).toBe(true);
    expect(result.stdout_head).not.toContain('\uFFFD');
    expect(result.stderr_tail).not.toContain('\uFFFD');
    expect(new TextEncoder().encode(result.stdout_head).length).toBeLessThanOrEqual(1024);
    expect(result.stderr_tail).toBe('é'.repeat(512));
  });

  it('invokeTool runs a tool the caller holds', async () => {
    const registry = new Registry();
    const tool = await registry.register(goodSpec({ mounts: undefined }), MODULE_BYTES);
    const runtime = new Runtime({ registry, executor: printing('{"files":[1]}'), defaults: { outputLimitBytes: 10 } });
    const result = await runtime.invokeTool(tool, INPUT);
    expect(result).toMatchObject({ ok: true, output: { files: [1] } });
  });

  it('invokeTool checks the schemas of a Tool built by hand in full: {type: []} is E_REGISTRATION, not a schema that accepts anything', async () => {
    const registry = new Registry();
    const registeredTool = await registry.register(goodSpec({ mounts: undefined }), MODULE_BYTES);
    const runtime = new Runtime({ registry, executor: printing('{"files":[1]}') });
    const byHand = { ...registeredTool, spec: { ...registeredTool.spec, version: '9.0.0', input_schema: { type: [] } as never } };
    const result = await runtime.invokeTool(byHand, INPUT);
    expect(result.error?.code).toBe('E_REGISTRATION');
    expect(result.error?.details.problems).toContainEqual(expect.objectContaining({ path: '/input_schema/type' }));
  });
});

/** `depth` arrays inside each other, around `inner`. Built with a loop: a recursive builder would itself overflow. */
function nestedArrays(depth: number, inner: unknown = 0): unknown {
  let value = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}
const nestedText = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('JSON nesting depth (MAX_JSON_DEPTH)', () => {
  it('refuses output nested 500,000 deep as E_UNEXPECTED_EXIT, leaving an envelope JSON.stringify can print', async () => {
    const runtime = await setup(printing(`{"files":${nestedText(500_000)}}`), goodSpec({ output_schema: undefined, mounts: undefined }));
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result).toMatchObject({ ok: false, output: null, exit_code: 0 });
    expect(result.error).toMatchObject({
      code: 'E_UNEXPECTED_EXIT',
      message: `diff-summary printed JSON nested more than ${MAX_JSON_DEPTH} levels deep (the limit); Corral does not pass on output it cannot safely serialize`,
      details: { reason: 'output_too_deep', max_depth: MAX_JSON_DEPTH },
    });
    expect(() => JSON.stringify(result)).not.toThrow();
  });

  it('accepts output exactly MAX_JSON_DEPTH deep and refuses one level more', async () => {
    const atLimit = await setup(printing(`{"files":${nestedText(MAX_JSON_DEPTH - 1)}}`));
    const ok = await atLimit.invoke('diff-summary', INPUT);
    expect(ok.ok).toBe(true);
    expect(JSON.stringify(ok.output)).toBe(`{"files":${nestedText(MAX_JSON_DEPTH - 1)}}`);
    const over = await setup(printing(`{"files":${nestedText(MAX_JSON_DEPTH)}}`));
    expect((await over.invoke('diff-summary', INPUT)).error?.details.reason).toBe('output_too_deep');
  });

  it('counts brackets inside strings, escaped quotes and backslashes included, as text', async () => {
    const brackets = '['.repeat(5000);
    // A string holding \" then brackets, and a string ending in an escaped backslash before real JSON.
    const stdout = String.raw`{"files":[],"a":"\\\"${brackets}","b":"x\\","c":"{${brackets}"}`;
    const runtime = await setup(printing(stdout));
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result.error).toBeNull();
    expect(result.output).toEqual(JSON.parse(stdout));
    expect(jsonTextTooDeep(String.raw`["\\"${'['.repeat(MAX_JSON_DEPTH)}`)).toBe(true); // the string closed: these brackets count
  });

  it('keeps no tool_error from a failing tool whose error JSON is too deep', async () => {
    const runtime = await setup(
      printing(`{"error":{"message":"bad","deep":${nestedText(100_000)}}}`, { exitCode: 1, stderr: encode('last words\n') }),
    );
    const result = await runtime.invoke('diff-summary', INPUT);
    expect(result.error).toMatchObject({ code: 'E_UNEXPECTED_EXIT', details: { exit_code: 1, tool_error: null } });
    expect(() => JSON.stringify(result)).not.toThrow();
  });

  it('refuses input nested too deep with E_INPUT_VALIDATION, without throwing or running, and records it', async () => {
    const executor = printing('{"files":[]}');
    const registry = new Registry();
    await registry.register(goodSpec({ input_schema: { type: 'object' }, mounts: undefined }), MODULE_BYTES);
    const store = new MemoryStore();
    const runtime = new Runtime({ registry, executor, store });
    for (const depth of [MAX_JSON_DEPTH, 500_000]) {
      const result = await runtime.invoke('diff-summary', { diff: 'x', deep: nestedArrays(depth) });
      expect(result.error).toMatchObject({
        code: 'E_INPUT_VALIDATION',
        message: `Input for diff-summary nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep (the limit)`,
        details: { reason: 'input_too_deep', max_depth: MAX_JSON_DEPTH },
      });
      expect(() => JSON.stringify(result)).not.toThrow();
      const recorded = await store.getExecution(result.snapshot!.id);
      expect(recorded).toMatchObject({ status: 'failed', error_code: 'E_INPUT_VALIDATION' });
      expect(() => JSON.stringify(recorded)).not.toThrow();
    }
    expect(executor.requests).toHaveLength(0);
    // Exactly the limit (the object around the arrays is a level too): it runs.
    expect((await runtime.invoke('diff-summary', { diff: 'x', deep: nestedArrays(MAX_JSON_DEPTH - 1) })).ok).toBe(true);
    expect(executor.requests).toHaveLength(1);
  });
});
