/**
 * The browser host in real Chromium: BrowserCorral's Web Worker pool runs
 * the bundled tools (components, and their preview1 builds), every call is
 * recorded in IndexedDB, and the pool keeps Node's promises: a bounded
 * queue, cancellation, timeouts that replace the worker, and a crashed
 * worker failing only its own call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteDB } from 'idb';
import {
  BrowserCorral,
  BrowserSandboxWorker,
  BrowserWorkerPool,
  CorralError,
  IndexedDbStore,
  bundledTools,
  registerBundledTools,
  startSandboxWorker,
  writeOpfsTree,
  type InvokeResult,
} from '@corral/browser';
import { REAL_DIFF, REAL_NUMSTAT, parseNumstat, registerFolder } from './fixtures.js';

interface Summary {
  files: Array<{ path: string; old_path?: string; status: string; additions: number; deletions: number; hunks: number; binary: boolean }>;
  totals: { files: number; additions: number; deletions: number; hunks: number };
  summary: string;
}

interface FileStats {
  root: string;
  files: Array<{ path: string; lines: number; words: number; bytes: number }>;
  totals: { files: number; lines: number; words: number; bytes: number };
}

const STORE_NAME = `corral-pool-test-${Date.now()}`;
let corral: BrowserCorral;
let store: IndexedDbStore;
/** Snapshot ids of every call this file made through `corral`. */
const calls: InvokeResult[] = [];

async function invoke<O>(ref: string, input: unknown, options?: Parameters<BrowserCorral['invoke']>[2]): Promise<InvokeResult<O>> {
  const result = await corral.invoke<O>(ref, input, options);
  calls.push(result);
  return result;
}

beforeAll(async () => {
  store = await IndexedDbStore.open(STORE_NAME);
  corral = await BrowserCorral.create({ size: 2, store });
  await registerBundledTools(corral);
  for (const name of ['echo', 'spin']) await registerFolder(corral, `/test/fixtures/tools/${name}`);
  await registerFolder(corral, '/test/fixtures/preview1/echo');
});

afterAll(async () => {
  await corral?.close();
  await store?.close();
  await deleteDB(STORE_NAME);
});

describe('BrowserCorral runs the bundled tools in Web Workers', () => {
  it('diff-summary summarizes a diff made by real git, matching git diff --numstat', async () => {
    const result = await invoke<Summary>('diff-summary', { diff: REAL_DIFF });
    expect(result.error).toBeNull();
    expect(result.ok).toBe(true);
    const output = result.output!;
    const numstat = parseNumstat(REAL_NUMSTAT);
    expect(output.files.map((f) => f.path)).toEqual([...numstat.keys()]);
    for (const file of output.files) expect([file.additions, file.deletions], file.path).toEqual(numstat.get(file.path));
    expect(output.files.map((f) => f.status)).toEqual(['added', 'deleted', 'binary', 'modified', 'renamed']);
    expect(output.files[4]).toMatchObject({ path: 'src/settings.js', old_path: 'src/config.js', hunks: 1 });
    expect(output.totals).toEqual({ files: 5, additions: 9, deletions: 5, hunks: 5 });
    expect(output.summary).toMatch(/^5 files changed: .*\+9 −5 in 5 hunks\. Largest change: src\/math\.js \(\+5 −0\)\.$/);
  });

  it('diff-summary on an empty diff reports no changes; in Chinese too', async () => {
    const en = await invoke<Summary>('diff-summary', { diff: '' });
    expect(en.error).toBeNull();
    expect(en.output).toMatchObject({ files: [], totals: { files: 0, additions: 0, deletions: 0, hunks: 0 } });
    const zh = await invoke<Summary>('diff-summary', { diff: '', language: 'zh' });
    expect(zh.output?.summary).toMatch(/[\u4e00-\u9fff]/);
  });

  it('text that is not a diff is refused by the tool with a clear message (E_UNEXPECTED_EXIT)', async () => {
    const result = await invoke('diff-summary', { diff: 'hello, this is not a diff\n' });
    expect(result.ok).toBe(false);
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.error?.message).toMatch(/diff-summary exited with code 1: .+/);
  });

  it('input that fails the schema never reaches a worker (E_INPUT_VALIDATION)', async () => {
    const result = await invoke('diff-summary', { diff: 5 });
    expect(result.error?.code).toBe('E_INPUT_VALIDATION');
    expect(result.exit_code).toBeNull();
  });

  const tree = {
    'README.md': '# demo\nhello world\n',
    src: { 'a.ts': 'const a = 1;\nexport { a };\n', 'b.ts': 'export const b = 2;\n', nested: { 'c.txt': 'one two three' } },
  };
  // What @corral/node's file-stats prints for the same files in a host folder.
  const expectedStats = {
    root: '/workspace',
    files: [
      { path: '/workspace/README.md', lines: 2, words: 4, bytes: 19 },
      { path: '/workspace/src/a.ts', lines: 2, words: 8, bytes: 27 },
      { path: '/workspace/src/b.ts', lines: 1, words: 5, bytes: 20 },
      { path: '/workspace/src/nested/c.txt', lines: 0, words: 3, bytes: 13 },
    ],
    totals: { files: 4, lines: 5, words: 20, bytes: 79 },
  };

  it('file-stats walks an in-memory /workspace tree', async () => {
    const result = await invoke<FileStats>(
      'file-stats',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'memory', tree } }] },
    );
    expect(result.error).toBeNull();
    expect(result.output).toEqual(expectedStats);
    const ts = await invoke<FileStats>(
      'file-stats',
      { pattern: '*.ts' },
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'memory', tree } }] },
    );
    expect(ts.output?.files.map((f) => f.path)).toEqual(['/workspace/src/a.ts', '/workspace/src/b.ts']);
  });

  it('file-stats walks an OPFS folder mounted at /workspace', async () => {
    const folder = `pool-test-${Date.now()}`;
    await writeOpfsTree(folder, tree);
    try {
      const result = await invoke<FileStats>(
        'file-stats',
        {},
        { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'opfs', path: folder } }] },
      );
      expect(result.error).toBeNull();
      expect(result.output).toEqual(expectedStats);
    } finally {
      await (await navigator.storage.getDirectory()).removeEntry(folder, { recursive: true });
    }
  });

  it('a host folder cannot be mounted in a browser; a missing OPFS folder is named (E_INPUT_VALIDATION)', async () => {
    const host = await invoke(
      'file-stats',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: '/etc' } }] },
    );
    expect(host.error?.code).toBe('E_INPUT_VALIDATION');
    expect(host.error?.message).toMatch(/cannot open a source of kind "host"; it opens "memory", "opfs"/);
    const missing = await invoke(
      'file-stats',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'opfs', path: 'no/such/folder' } }] },
    );
    expect(missing.error?.code).toBe('E_INPUT_VALIDATION');
    expect(missing.error?.message).toContain('"no/such/folder"');
    const climbing = await invoke(
      'file-stats',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'opfs', path: 'a/../b' } }] },
    );
    expect(climbing.error?.code).toBe('E_INPUT_VALIDATION');
  });

  it('runs preview1 modules directly: a fixture, and the bundled tools built as modules give the same output', async () => {
    const echo = await invoke('p1-echo', { hello: 'preview1' });
    expect(echo.error).toBeNull();
    expect(echo.output).toEqual({ hello: 'preview1' });

    const modules = await BrowserCorral.create({ size: 1, store: false, cache: false });
    try {
      const tools = await registerBundledTools(modules, { kind: 'module' });
      expect(tools.map((t) => t.spec.kind)).toEqual(bundledTools.map(() => 'module'));
      const viaModule = await modules.invoke('diff-summary', { diff: REAL_DIFF });
      const viaComponent = await invoke('diff-summary', { diff: REAL_DIFF });
      expect(viaModule.error).toBeNull();
      expect(viaModule.output).toEqual(viaComponent.output);
      const stats = await modules.invoke(
        'file-stats',
        {},
        { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'memory', tree } }] },
      );
      expect(stats.output).toEqual(expectedStats);
    } finally {
      await modules.close();
    }
  });

  it('bundledTools lists each tool with its spec and fetchable .wasm URLs', async () => {
    expect(bundledTools.map((t) => t.name)).toEqual(['apply-patch', 'diff-summary', 'edit', 'file-stats', 'glob', 'grep', 'read']);
    for (const tool of bundledTools) {
      expect((tool.spec as { name: string }).name).toBe(tool.name);
      for (const url of [tool.wasmUrl, tool.moduleUrl]) {
        const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
        expect([...bytes.subarray(0, 4)], url).toEqual([0, 0x61, 0x73, 0x6d]);
      }
    }
  });

  it('registerBundledTools({ names }) fetches and registers only those, and again only what is missing', async () => {
    const fetched: string[] = [];
    const counting = (url: string) => (fetched.push(url), fetch(url));
    const some = await BrowserCorral.create({ size: 1, store: false, cache: false, prestart: 0 });
    try {
      const [diff] = await registerBundledTools(some, { names: ['diff-summary'], fetch: counting });
      expect(some.registry.list().map((t) => t.spec.name)).toEqual(['diff-summary']);
      const files = bundledTools.find((t) => t.name === 'diff-summary')!;
      expect(fetched.sort()).toEqual([files.validatorsUrl, files.wasmUrl].sort());
      const all = await registerBundledTools(some, { fetch: counting });
      expect(all.map((t) => t.spec.name)).toEqual(bundledTools.map((t) => t.name));
      expect(all.find((t) => t.spec.name === 'diff-summary')).toBe(diff);
      expect(fetched).toHaveLength(2 * bundledTools.length); // diff-summary's files were not fetched twice
      await expect(registerBundledTools(some, { names: ['diff-summary', 'nope'] })).rejects.toMatchObject({
        code: 'E_REGISTRATION',
        message: /Not bundled tools: nope\. Bundled: apply-patch, diff-summary/,
      });
    } finally {
      await some.close();
    }
  });

  it('registerBundledTools refuses names and kinds it cannot take, E_REGISTRATION, and registers nothing', async () => {
    const some = await BrowserCorral.create({ size: 1, store: false, cache: false, prestart: 0 });
    const fetched: string[] = [];
    const counting = (url: string) => (fetched.push(url), fetch(url));
    try {
      for (const [options, message] of [
        [{ names: 'diff-summary' }, /names must be an array of tool names \(got a string\)/],
        [{ names: new Set(['diff-summary']) }, /names must be an array of tool names \(got a Set\)/],
        [{ names: ['diff-summary', 5] }, /names must be an array of tool names/],
        [{ names: ['__proto__', 'constructor', 'toString'] }, /Not bundled tools: __proto__, constructor, toString\./],
        [{ kind: 'wasm' }, /kind must be 'component' or 'module' \(got "wasm"\)/],
      ] as const) {
        await expect(
          registerBundledTools(some, { ...(options as object), fetch: counting }),
          JSON.stringify(options),
        ).rejects.toMatchObject({
          code: 'E_REGISTRATION',
          message,
        });
      }
      expect(fetched).toEqual([]);
      expect(some.registry.list()).toEqual([]);
      // No names, nothing to do; the same name twice, one tool.
      expect(await registerBundledTools(some, { names: [], fetch: counting })).toEqual([]);
      const twice = await registerBundledTools(some, { names: ['diff-summary', 'diff-summary'], fetch: counting });
      expect(twice.map((t) => t.spec.name)).toEqual(['diff-summary']);
    } finally {
      await some.close();
    }
  });

  it('registers a bundled tool whose validators never arrive (a stalled request): its schemas are compiled at the first call', async () => {
    const files = bundledTools.find((t) => t.name === 'diff-summary')!;
    const stalling = (url: string) => (url === files.validatorsUrl ? new Promise<Response>(() => {}) : fetch(url));
    const some = await BrowserCorral.create({ size: 1, store: false, cache: false, prestart: 0 });
    try {
      const started = performance.now();
      const registered = await Promise.race([
        registerBundledTools(some, { names: ['diff-summary'], fetch: stalling }),
        new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000)),
      ]);
      expect(registered).not.toBe('hung');
      expect(performance.now() - started).toBeLessThan(10_000);
      const bad = await some.invoke('diff-summary', { diff: 5 });
      expect(bad.error).toMatchObject({ code: 'E_INPUT_VALIDATION', message: /\/diff: must be string/ });
      const good = await some.invoke('diff-summary', { diff: '' });
      expect(good.error).toBeNull();
    } finally {
      await some.close();
    }
  });

  it("uses the validators Corral's build compiled for a bundled spec, and only for that very spec", async () => {
    const files = bundledTools.find((t) => t.name === 'diff-summary')!;
    const real = (await (await fetch(files.validatorsUrl)).json()) as { spec: string; input: string; output: string };
    expect(real.spec).toMatch(/^[0-9a-f]{64}$/);
    // The output's validator in the input's place: used, it refuses every input.
    const swapped = (spec: string) => (url: string) =>
      url === files.validatorsUrl ? Promise.resolve(Response.json({ ...real, spec, input: real.output })) : fetch(url);
    for (const [spec, used] of [
      [real.spec, true],
      ['0'.repeat(64), false],
    ] as const) {
      const c = await BrowserCorral.create({ size: 1, store: false, prestart: 0 });
      try {
        await registerBundledTools(c, { names: ['diff-summary'], fetch: swapped(spec) });
        const r = await c.invoke('diff-summary', { diff: '' });
        if (used) expect(r.error?.code).toBe('E_INPUT_VALIDATION');
        else expect(r.error).toBeNull();
      } finally {
        await c.close();
      }
    }
  });

  it('register refuses a bad spec, JSON text that is not JSON, and bytes that are not wasm (E_REGISTRATION)', async () => {
    const wasm = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]);
    await expect(corral.register({ name: 'x' }, wasm)).rejects.toMatchObject({ code: 'E_REGISTRATION', message: /problem/ });
    await expect(corral.register('{"name": ', wasm, 'pasted spec')).rejects.toMatchObject({
      code: 'E_REGISTRATION',
      message: /pasted spec.*not JSON/,
    });
    const spec = { ...(bundledTools[0]!.spec as object), name: 'not-wasm' };
    await expect(corral.register(spec, new TextEncoder().encode('hello'))).rejects.toMatchObject({ code: 'E_REGISTRATION' });
  });
});

describe('the Web Worker pool', () => {
  it('4 callers × 25 calls through 2 workers, a timeout-killed call every 10: each answered once, correctly', async () => {
    const answered = new Map<string, number>();
    let timeouts = 0;
    const caller = async (c: number) => {
      for (let i = 0; i < 25; i++) {
        const id = `${c}:${i}`;
        if (i % 10 === 9) {
          const r = await invoke('spin', {}, { timeoutMs: 150 });
          expect(r.error?.code).toBe('E_RESOURCE_EXHAUSTED');
          expect(r.error?.details.resource).toBe('time');
          timeouts++;
        } else {
          const r = await invoke('echo', { id });
          expect(r.error).toBeNull();
          expect(r.output).toEqual({ id });
        }
        answered.set(id, (answered.get(id) ?? 0) + 1);
      }
    };
    await Promise.all([0, 1, 2, 3].map(caller));
    expect(answered.size).toBe(100);
    expect([...answered.values()].every((n) => n === 1)).toBe(true);
    expect(timeouts).toBe(8);
    expect(corral.executor.pool.workerCount).toBeLessThanOrEqual(2);
    expect(corral.executor.pool.queued).toBe(0);
  }, 120_000);

  it('an infinite loop is stopped at its timeout (E_RESOURCE_EXHAUSTED time), its worker replaced, and the next call works', async () => {
    const started = performance.now();
    const result = await invoke('spin', {});
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details).toMatchObject({ resource: 'time', timeout_ms: 500 });
    expect(result.error?.message).toMatch(/did not finish within 500 ms; its worker was stopped/);
    expect((await invoke('echo', { after: 'spin' })).output).toEqual({ after: 'spin' });
    expect(corral.executor.pool.workerCount).toBeLessThanOrEqual(2);
  });

  it('refuses a call when its queue is full, with E_RESOURCE_EXHAUSTED (queue)', async () => {
    const pool = new BrowserWorkerPool({ size: 1, maxQueue: 2 });
    try {
      const hold = () => new Promise((resolve) => setTimeout(resolve, 200));
      const task = {
        timeoutMs: 5_000,
        onTimeout: () => new CorralError('E_RESOURCE_EXHAUSTED', 'timeout', { resource: 'time', timeout_ms: 5_000 }),
      };
      const running = [pool.run(hold, task), pool.run(hold, task), pool.run(hold, task)];
      await expect(pool.run(hold, task)).rejects.toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'queue' } });
      await Promise.all(running);
    } finally {
      await pool.close();
    }
  });

  // A terminated Web Worker keeps its listeners, and comlink's finalization registry kept every
  // call proxy (and through them the worker) alive: no stopped worker was ever collected.
  it('a stopped worker lets go of its listeners and its calls, which then fail at once', async () => {
    const listening = new Set<string>();
    const worker = new BrowserSandboxWorker(() => {
      const real = startSandboxWorker();
      const add = real.addEventListener.bind(real);
      const remove = real.removeEventListener.bind(real);
      real.addEventListener = ((type: string, listener: EventListener, options?: AddEventListenerOptions) => {
        if (type !== 'message') listening.add(type);
        add(type, listener, options);
      }) as Worker['addEventListener'];
      real.removeEventListener = ((type: string, listener: EventListener, options?: EventListenerOptions) => {
        listening.delete(type);
        remove(type, listener, options);
      }) as Worker['removeEventListener'];
      return real;
    });
    await worker.api.ping();
    expect([...listening].sort()).toEqual(['error', 'messageerror']);
    await worker.terminate();
    expect([...listening]).toEqual([]);
    for (const call of [worker.api.ping, worker.api.run, worker.api.prepare, worker.api.preload] as ((...args: unknown[]) => unknown)[]) {
      expect(() => call()).toThrow(/released/);
    }
  });

  it('a full queue reaches the caller as the envelope error of invoke', async () => {
    const small = await BrowserCorral.create({ size: 1, maxQueue: 1, store: false });
    try {
      await registerFolder(small, '/test/fixtures/tools/spin');
      const results = await Promise.all([0, 1, 2].map(() => small.invoke('spin', {}, { timeoutMs: 300 })));
      const codes = results.map((r) => r.error?.details.resource);
      expect(codes.filter((c) => c === 'queue')).toHaveLength(1);
      expect(results.find((r) => r.error?.details.resource === 'queue')?.error?.message).toMatch(/call queue is full \(1 calls waiting\)/);
    } finally {
      await small.close();
    }
  });

  it('cancels a queued call and a running one (terminating its worker); the pool carries on', async () => {
    const controller = new AbortController();
    const pending = invoke('spin', {}, { signal: controller.signal, timeoutMs: 30_000 });
    setTimeout(() => controller.abort(new Error('the agent changed its mind')), 200);
    const result = await pending;
    expect(result.error?.code).toBe('E_CANCELLED');
    expect(result.error?.details.cancelled).toBe(true);
    expect(result.error?.message).toMatch(/cancelled: the agent changed its mind/);

    const pool = new BrowserWorkerPool({ size: 1 });
    try {
      const task = {
        timeoutMs: 5_000,
        onTimeout: () => new CorralError('E_RESOURCE_EXHAUSTED', 'timeout', { resource: 'time', timeout_ms: 5_000 }),
      };
      const running = new AbortController();
      const queued = new AbortController();
      const first = pool.run(() => new Promise(() => {}), { ...task, signal: running.signal });
      const second = pool.run(async () => 'never', { ...task, signal: queued.signal });
      queued.abort();
      await expect(second).rejects.toThrow(/cancel/i);
      running.abort();
      await expect(first).rejects.toThrow(/cancel/i);
      await expect(pool.run(async () => 'after', task)).resolves.toBe('after');
      expect(pool.workerCount).toBe(1);
    } finally {
      await pool.close();
    }
  });

  it('a worker that crashes fails only its own call (E_UNEXPECTED_EXIT); the other worker and later calls are fine', async () => {
    // The first worker started dies shortly after it starts; every later one is a real sandbox.
    let started = 0;
    const crashing = () =>
      new Worker(
        URL.createObjectURL(new Blob(['setTimeout(() => { throw new Error("sandbox blew up"); }, 300);'], { type: 'text/javascript' })),
      );
    const flaky = await BrowserCorral.create({
      size: 2,
      store: false,
      prestart: 0,
      createWorker: () => (started++ === 0 ? crashing() : startSandboxWorker()),
    });
    try {
      await registerFolder(flaky, '/test/fixtures/tools/echo');
      const [a, b] = await Promise.all([flaky.invoke('echo', { n: 1 }), flaky.invoke('echo', { n: 2 })]);
      const failed = [a, b].filter((r) => !r.ok);
      expect(failed).toHaveLength(1);
      expect(failed[0]!.error?.code).toBe('E_UNEXPECTED_EXIT');
      expect(failed[0]!.error?.message).toMatch(/sandbox worker stopped unexpectedly: .*sandbox blew up/);
      expect(failed[0]!.error?.details).toMatchObject({ reason: 'worker_crashed', worker_error: expect.stringMatching(/sandbox blew up/) });
      expect([a, b].filter((r) => r.ok).map((r) => r.output)).toHaveLength(1);
      const after = await Promise.all([3, 4, 5].map((n) => flaky.invoke('echo', { n })));
      expect(after.map((r) => r.output)).toEqual([{ n: 3 }, { n: 4 }, { n: 5 }]);
      expect(flaky.executor.pool.workerCount).toBeLessThanOrEqual(2);
    } finally {
      await flaky.close();
    }
  });
});

describe('closing', () => {
  // Regression: a terminated Web Worker never answers, and close() sets the worker dead before
  // terminating it, so no crash was reported either: the running call never settled.
  it('close() while a call runs answers it with E_CLOSED (running: true); later calls and decisions get E_CLOSED too', async () => {
    const closing = await BrowserCorral.create({ size: 1, store: false });
    await registerFolder(closing, '/test/fixtures/preview1/echo');
    await registerFolder(closing, '/test/fixtures/preview1/spin');
    expect((await closing.invoke('p1-echo', { warm: true })).ok).toBe(true);
    const running = closing.invoke('p1-spin', {}, { timeoutMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await closing.close();
    expect((await running).error).toMatchObject({ code: 'E_CLOSED', details: { running: true } });
    expect((await closing.invoke('p1-echo', {})).error).toMatchObject({ code: 'E_CLOSED', details: { running: false } });
    await expect(closing.recordDecision({ prompt: 'p', output: 'o' })).rejects.toMatchObject({ code: 'E_CLOSED' });
  });
});

describe('snapshots in IndexedDB', () => {
  // Runs after the calls above.
  it('every invoke of this file was recorded, with its outcome', async () => {
    expect(calls.length).toBeGreaterThan(100);
    for (const call of calls) {
      expect(call.snapshot?.id, JSON.stringify(call.error)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(call.snapshot?.error).toBeUndefined();
    }
    const recorded = await store.listExecutions();
    expect(recorded).toHaveLength(calls.length);
    const byId = new Map(recorded.map((e) => [e.id, e]));
    for (const call of calls) {
      const snapshot = byId.get(call.snapshot!.id)!;
      expect(snapshot.tool).toBe(call.tool);
      expect(snapshot.status).toBe(call.ok ? 'ok' : 'failed');
      expect(snapshot.error_code).toBe(call.error?.code ?? null);
    }
    const summary = recorded.find((e) => e.tool === 'diff-summary' && e.status === 'ok')!;
    expect(summary.stdout_head).toContain('"files"');
  });

  it('by default BrowserCorral records into the IndexedDB database corral-snapshots', async () => {
    const byDefault = await BrowserCorral.create({ size: 1 });
    try {
      expect(byDefault.store).toBeInstanceOf(IndexedDbStore);
      expect(byDefault.store?.location).toBe('IndexedDB database "corral-snapshots"');
      await registerBundledTools(byDefault);
      const result = await byDefault.invoke('diff-summary', { diff: '' });
      expect(result.ok).toBe(true);
      const snapshot = await byDefault.store!.getExecution(result.snapshot!.id);
      expect(snapshot).toMatchObject({ tool: 'diff-summary', version: '1.1.0', status: 'ok', exit_code: 0 });
    } finally {
      await byDefault.close();
    }
  });
});
