/**
 * Every failure a caller can meet carries its own code, never a plain Error
 * and never E_UNEXPECTED_EXIT for something the caller did. Each case here
 * was a plain Error (a TypeError, "not loaded", "glue asked for unknown core
 * module"), a wrong code, or a hang before; each runs through real
 * worker_threads sandboxes. Programs branch on `code`, so the tests check it
 * exactly, with the details a program would read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral, ComponentCache, CorralError, Registry, SandboxWorker, type Tool } from '@corral/node';
import type { PreparedComponent, RunRequest } from '@corral/wasi';

const FIXTURES = new URL('./fixtures/tools/', import.meta.url).pathname;
const PREVIEW1 = new URL('./fixtures/preview1/', import.meta.url).pathname;
const MODULE_WASM = new URL('../wasm-tools/diff-summary/diff-summary.module.wasm', import.meta.url).pathname;

const scratch = () => mkdtempSync(join(tmpdir(), 'corral-codes-'));

let corral: Corral;
beforeAll(async () => {
  corral = await Corral.create({ toolDirs: [FIXTURES], size: 1, store: false, cache: new ComponentCache(scratch()) });
});
afterAll(() => corral?.close());

describe('a caller’s mistake is E_INPUT_VALIDATION in the envelope, not a TypeError', () => {
  // Before: invoke(123) threw "ref.indexOf is not a function" synchronously; invoke(…, null) threw reading
  // opts.recordInput; mounts, args and signal of the wrong type came back as E_UNEXPECTED_EXIT "Corral failed".
  const cases: Array<[string, () => ReturnType<Corral['invoke']>, string]> = [
    ['a tool reference that is not a string', () => corral.invoke(123 as unknown as string, {}), 'ref'],
    ['options that are null', () => corral.invoke('echo', {}, null as unknown as object), 'options'],
    ['mounts that are not an array', () => corral.invoke('echo', {}, { mounts: {} as unknown as [] }), 'mounts'],
    ['a mount binding that is null', () => corral.invoke('echo', {}, { mounts: [null as never] }), 'mounts[0]'],
    ['args that are not strings', () => corral.invoke('echo', {}, { args: [1 as unknown as string] }), 'args'],
    ['env that is not an object', () => corral.invoke('echo', {}, { env: 'LANG=C' as unknown as Record<string, string> }), 'env'],
    ['a signal that is not an AbortSignal', () => corral.invoke('echo', {}, { signal: {} as AbortSignal }), 'signal'],
    ['a timeout that is a string', () => corral.invoke('echo', {}, { timeoutMs: '5' as unknown as number }), 'timeoutMs'],
    ['a decisionId that is not a string', () => corral.invoke('echo', {}, { decisionId: 7 as unknown as string }), 'decisionId'],
    ['invokeTool without a tool', () => corral.invokeTool(null as unknown as Tool, {}), 'tool'],
    ['invokeTool with a spec alone', () => corral.invokeTool({ spec: { name: 'echo' } } as unknown as Tool, {}), 'tool'],
  ];
  for (const [what, call, option] of cases) {
    it(`${what}: E_INPUT_VALIDATION (details.option ${option}), nothing run`, async () => {
      const result = await call();
      expect(result).toMatchObject({ ok: false, exit_code: null, error: { code: 'E_INPUT_VALIDATION', details: { option } } });
    });
  }

  it('exec with a signal that is not an AbortSignal: E_INPUT_VALIDATION, thrown before anything runs', async () => {
    // Before: TypeError "options.signal?.addEventListener is not a function", from inside the pool.
    const wasm = new Uint8Array(readFileSync(MODULE_WASM));
    await expect(corral.exec(wasm, { signal: {} as AbortSignal })).rejects.toMatchObject({
      code: 'E_INPUT_VALIDATION',
      details: { option: 'signal' },
    });
  });

  it('Corral.create with options of the wrong type: E_INPUT_VALIDATION naming the option, no worker started', async () => {
    // Before: TypeErrors ("(options.toolDirs ?? []) is not iterable", reading 'bundled' of null,
    // ERR_INVALID_ARG_TYPE for a numeric store), and a size of NaN made a pool that never started a worker.
    const refused = (options: unknown, option: string) =>
      expect(Corral.create(options as object)).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION', details: { option } });
    await refused(null, 'options');
    await refused({ toolDirs: 'tools' }, 'toolDirs');
    await refused({ store: 5 }, 'store');
    await refused({ size: Number.NaN, store: false }, 'size');
    await refused({ size: 0, store: false }, 'size');
    await refused({ bundled: 'no', store: false }, 'bundled');
  });

  it('Corral.create with a name that is no option: E_INPUT_VALIDATION naming it, with the option meant', async () => {
    // Before: dropped without a word, so `storeMaxByte` left the store uncapped.
    const refusal = (options: object) =>
      Corral.create(options).then(
        () => {
          throw new Error('accepted');
        },
        (e: unknown) => e as CorralError,
      );
    const typo = await refusal({ storeMaxByte: 1 << 20, store: false });
    expect(typo).toMatchObject({ code: 'E_INPUT_VALIDATION', details: { option: 'storeMaxByte' } });
    expect(typo.message).toMatch(/storeMaxByte is not an option: did you mean storeMaxBytes\?/);
    const unknown = await refusal({ quiet: true, store: false });
    expect(unknown).toMatchObject({ code: 'E_INPUT_VALIDATION', details: { option: 'quiet' } });
    expect(unknown.message).toMatch(/options: bundled, toolDirs, store/);
    // A key left undefined (a conditional spread) is as good as absent.
    const corral = await Corral.create({ store: false, bundled: false, size: 1, idleWorkers: 0, quiet: undefined } as object);
    await corral.close();
  });

  it('Registry.resolve with a non-string is E_INPUT_VALIDATION; Registry.register with bytes that are not bytes is E_REGISTRATION', async () => {
    const registry = new Registry();
    expect(() => registry.resolve(null as unknown as string)).toThrow(expect.objectContaining({ code: 'E_INPUT_VALIDATION' }));
    const spec = JSON.parse(readFileSync(join(FIXTURES, 'echo/tool-spec.json'), 'utf8'));
    await expect(registry.register(spec, 'not bytes' as unknown as Uint8Array)).rejects.toMatchObject({
      code: 'E_REGISTRATION',
      message: /must be a Uint8Array \(got string\)/,
    });
  });
});

describe('a tool under a small memory cap fails with the code for how it failed', () => {
  // Before: under a cap of 2 MiB or less every failure was E_RESOURCE_EXHAUSTED (memory), the margin for
  // "near the cap" (2 MiB) being all of it: a caller told to raise memory_mb for a plain exit 1 or a trap.
  for (const memoryMb of [1, 2]) {
    it(`memory_mb ${memoryMb}: a non-zero exit and a trap are E_UNEXPECTED_EXIT, a memory bomb E_RESOURCE_EXHAUSTED`, async () => {
      const exited = await corral.invoke('exit-fail', {}, { memoryMb });
      expect(exited).toMatchObject({ ok: false, exit_code: 1, error: { code: 'E_UNEXPECTED_EXIT' } });
      expect(exited.stderr_tail).toContain('refusing on purpose');
      const trapped = await corral.invoke('trap', {}, { memoryMb });
      expect(trapped).toMatchObject({ ok: false, error: { code: 'E_UNEXPECTED_EXIT', details: { trap: true } } });
      // Under 1 MiB too, where its first 1 MiB block never fits and its memory never grows (a failed memory.grow is seen).
      const bomb = await corral.invoke('memory-bomb', {}, { memoryMb });
      expect(bomb.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'memory' } });
    });
  }
});

describe('a closed runtime is E_CLOSED, whenever the call was', () => {
  it('a call running when close() comes gets E_CLOSED (running: true), not a worker crash or a hang', async () => {
    // Before: the terminated worker read as a crash in Node (E_UNEXPECTED_EXIT, exit code 1) and,
    // in browsers, the call never settled at all (a terminated Web Worker never answers).
    const own = await Corral.create({ toolDirs: [PREVIEW1], size: 1, store: join(scratch(), 'snapshots.db') });
    const warm = await own.invoke('p1-echo', { warm: true });
    expect(warm.ok).toBe(true);
    const running = own.invoke('p1-spin', {}, { timeoutMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await own.close();
    expect((await running).error).toMatchObject({ code: 'E_CLOSED', retryable: false, details: { running: true } });
    // And after: a new call, and a decision (not the store's E_STORE "is closed": the runtime was closed).
    expect((await own.invoke('p1-echo', {})).error).toMatchObject({ code: 'E_CLOSED', details: { running: false } });
    await expect(own.recordDecision({ prompt: 'p', output: 'o' })).rejects.toMatchObject({ code: 'E_CLOSED' });
  });
});

describe('inside the sandbox worker', () => {
  const request = (over: Partial<RunRequest> = {}): RunRequest => ({
    toolName: 'diff-summary',
    stdin: new TextEncoder().encode('{"diff":""}'),
    args: ['diff-summary'],
    env: {},
    mounts: [],
    outputLimitBytes: 1 << 20,
    memoryLimitBytes: 64 << 20,
    diskLimitBytes: 16 << 20,
    ...over,
  });

  it('a job sent by key to a worker that does not hold it is refused as not_loaded (the host then sends the code)', async () => {
    // Before: "sandbox worker failed: module k is not loaded", with no way to tell a host bug from a tool's.
    // Now a worker may have evicted the code (its byte budget), so the answer is one the host acts on.
    const worker = new SandboxWorker({});
    try {
      const outcome = await worker.api.run({ kind: 'module', key: 'never-sent', request: request() });
      expect(outcome).toMatchObject({
        ok: false,
        error: {
          code: 'E_UNEXPECTED_EXIT',
          message: /has not loaded module never-sent/,
          details: { reason: 'not_loaded', cause: 'module never-sent is not loaded' },
        },
      });
    } finally {
      await worker.terminate();
    }
  });

  it('a host folder gone by the time the worker opens it is E_INPUT_VALIDATION, as it is when the host checks it', async () => {
    // Before: E_UNEXPECTED_EXIT "sandbox worker failed: no-entry" (openHostDirectory throws an error-code string);
    // now the E_INPUT_VALIDATION hostMountChecks gives on the host's side, with the worker's cause.
    const gone = join(scratch(), 'gone');
    const worker = new SandboxWorker({});
    try {
      const bytes = new Uint8Array(readFileSync(MODULE_WASM));
      const outcome = await worker.api.run({
        kind: 'module',
        key: 'diff-summary-module',
        bytes,
        request: request({ mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: gone } }] }),
      });
      expect(outcome).toMatchObject({
        ok: false,
        error: { code: 'E_INPUT_VALIDATION', details: { guest: '/workspace', kind: 'host', path: gone, cause: 'no-entry' } },
      });
    } finally {
      await worker.terminate();
    }
  });
});

// The disk cache checks its entries' hashes, and reads a damaged one as a miss (prepared.test.ts);
// a cache of one's own is not checked that way, and what it hands back is checked before it runs.
describe("a damaged prepared component from a cache of one's own", () => {
  /** Run echo once so its transpiled component is kept, then run it again from a cache that hands back `damage` of it. */
  async function withDamagedCache(damage: (prepared: PreparedComponent) => PreparedComponent) {
    let kept: PreparedComponent | undefined;
    const keeping = { get: async () => undefined, set: async (_key: string, prepared: PreparedComponent) => void (kept = prepared) };
    const first = await Corral.create({ toolDirs: [FIXTURES], size: 1, store: false, cache: keeping as unknown as ComponentCache });
    try {
      expect((await first.invoke('echo', { n: 1 })).ok).toBe(true);
    } finally {
      await first.close();
    }
    const damaged = damage(kept!);
    const handing = { get: async () => damaged, set: async () => {} };
    const second = await Corral.create({ toolDirs: [FIXTURES], size: 1, store: false, cache: handing as unknown as ComponentCache });
    try {
      return await second.invoke('echo', { n: 2 });
    } finally {
      await second.close();
    }
  }

  it('glue that asks for a core module the entry lost, or an entry with a module its glue never asks for: prepared again', async () => {
    // Before: the first was E_UNEXPECTED_EXIT "echo failed: glue asked for unknown core module …", then
    // E_REGISTRATION at every call; the second took a share of the memory cap from the tool's own memory.
    const lost = await withDamagedCache((prepared) => {
      const [name] = Object.keys(prepared.modules);
      const { [name!]: _lost, ...modules } = prepared.modules;
      return { ...prepared, modules };
    });
    expect(lost).toMatchObject({ ok: true, output: { n: 2 } });
    const memory = Uint8Array.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 3, 1, 0, 1]); // (module (memory 1))
    const extra = await withDamagedCache((prepared) => ({ ...prepared, modules: { ...prepared.modules, 'extra.core.wasm': memory } }));
    expect(extra).toMatchObject({ ok: true, output: { n: 2 } });
  }, 60_000);

  it('a core module whose code is not valid WebAssembly is E_REGISTRATION that names it', async () => {
    // Before: E_UNEXPECTED_EXIT "sandbox worker failed: WebAssembly.compile(): …" (jco checks structure, not code).
    let damaged = '';
    const result = await withDamagedCache(({ preview1: _runsTheGlue, ...prepared }) => {
      const names = Object.keys(prepared.modules);
      const sizes = names.map((name) => prepared.modules[name]!.length);
      damaged = names[sizes.indexOf(Math.max(...sizes))]!;
      const bytes = prepared.modules[damaged]!.slice();
      bytes[codeSectionEnd(bytes) - 1] = 0xff; // the last function body's `end` becomes an opcode that does not exist
      return { ...prepared, modules: { ...prepared.modules, [damaged]: bytes } };
    });
    expect(result.error).toMatchObject({ code: 'E_REGISTRATION', details: { module: damaged } });
    expect(result.error?.message).toMatch(/not valid WebAssembly/);
  }, 60_000);

  it('an adapted preview1 module whose code is not valid WebAssembly is E_REGISTRATION too', async () => {
    const result = await withDamagedCache((prepared) => {
      // echo is a preview1 module in jco's adapter: prepared with that module, which runs instead of the glue.
      expect(prepared.preview1).toBeInstanceOf(Uint8Array);
      const bytes = prepared.preview1!.slice();
      bytes[codeSectionEnd(bytes) - 1] = 0xff;
      return { ...prepared, preview1: bytes };
    });
    expect(result.error).toMatchObject({ code: 'E_REGISTRATION' });
    expect(result.error?.message).toMatch(/not valid WebAssembly|compile/);
  }, 60_000);
});

/** Offset just past a core module's code section (id 10). */
function codeSectionEnd(bytes: Uint8Array): number {
  let pos = 8;
  while (pos < bytes.length) {
    const id = bytes[pos]!;
    let size = 0;
    let shift = 0;
    let at = pos + 1;
    for (;;) {
      const b = bytes[at++]!;
      size |= (b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    if (id === 10) return at + size;
    pos = at + size;
  }
  throw new Error('no code section');
}
