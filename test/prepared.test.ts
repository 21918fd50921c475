/**
 * The bundled components as jco transpiled them when Corral was built
 * (wasm-tools/prepare-components.mjs): a host with an empty transpile cache
 * runs them without jco, reads them only from Corral's own tools folder, and
 * transpiles as before when a file is missing, stale or from another jco.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUNDLED_TOOLS_DIR, ComponentCache, Corral, type PrepareEvent } from '@corral/node';
import { PREPARED_FORMAT, decodePreparedFile, encodePreparedFile, type PreparedComponent } from '@corral/wasi';

const TOOLS = new URL('../wasm-tools/', import.meta.url).pathname;
const FIXTURES = new URL('./fixtures/tools/', import.meta.url).pathname;
const DIFF = { diff: 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n' };
const scratch = mkdtempSync(join(tmpdir(), 'corral-prepared-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A Corral with its own empty transpile cache, counting transpiles. */
async function fresh(options: Parameters<typeof Corral.create>[0] = {}) {
  const transpiles: PrepareEvent[] = [];
  const cache = new ComponentCache(mkdtempSync(join(scratch, 'cache-')));
  const corral = await Corral.create({
    size: 1,
    store: false,
    spareWorker: false,
    cache,
    onPrepare: (e) => transpiles.push(e),
    ...options,
  });
  return { corral, transpiles };
}

/** diff-summary answers through a Corral made with `options`, and was transpiled with jco for it (no prepared file was used). */
async function expectTranspiled(options: Parameters<typeof Corral.create>[0], before?: (corral: Corral) => void) {
  const { corral, transpiles } = await fresh(options);
  try {
    before?.(corral);
    const r = await corral.invoke('diff-summary', DIFF);
    expect(r.error).toBeNull();
    expect(transpiles.map((e) => e.name)).toEqual(['diff-summary']);
  } finally {
    await corral.close();
  }
}

describe('bundled components, transpiled at build time', () => {
  it('each bundled component has its prepared file, made from exactly its bytes', () => {
    const tools = readdirSync(TOOLS).filter((name) => existsSync(join(TOOLS, name, 'tool-spec.json')));
    expect(tools.length).toBeGreaterThanOrEqual(7);
    for (const name of tools) {
      const wasm = readFileSync(join(TOOLS, name, `${name}.wasm`));
      const sha256 = createHash('sha256').update(wasm).digest('hex');
      const prepared = decodePreparedFile(readFileSync(join(TOOLS, name, `${name}.prepared.json`), 'utf8'), sha256);
      expect(prepared, name).toBeDefined();
      expect(prepared!.glue).toContain('export function instantiate');
      expect(Object.keys(prepared!.modules).length).toBeGreaterThan(0);
    }
  });

  it('a host with an empty transpile cache runs every bundled tool without transpiling', async () => {
    const { corral, transpiles } = await fresh();
    try {
      expect((await corral.invoke('diff-summary', DIFF)).output).toMatchObject({ totals: { files: 1 } });
      const tools = corral.registry.list();
      expect(tools.length).toBeGreaterThanOrEqual(7);
      for (const tool of tools) expect((await corral.executor.prepare(tool)).glue).toContain('export function instantiate');
      expect(transpiles).toEqual([]);
    } finally {
      await corral.close();
    }
  });

  it('a prepared file in a tool folder of the user is never read: the component is transpiled', async () => {
    const folder = join(scratch, 'mine', 'diff-summary');
    mkdirSync(folder, { recursive: true });
    for (const file of ['tool-spec.json', 'diff-summary.wasm']) copyFileSync(join(TOOLS, 'diff-summary', file), join(folder, file));
    // Well-formed, for these very bytes, and hostile: its glue would run in the sandbox worker.
    const wasm = readFileSync(join(folder, 'diff-summary.wasm'));
    const sha256 = createHash('sha256').update(wasm).digest('hex');
    const real = decodePreparedFile(readFileSync(join(TOOLS, 'diff-summary', 'diff-summary.prepared.json'), 'utf8'), sha256)!;
    const hostile = { ...real, glue: 'export function instantiate() { throw new Error("hostile glue ran"); }' };
    writeFileSync(join(folder, 'diff-summary.prepared.json'), encodePreparedFile(sha256, hostile));
    await expectTranspiled({ bundled: false, toolDirs: [join(scratch, 'mine')] });
  }, 60_000);

  it('nor when the same bytes were registered from a user folder before the bundled folder loaded', async () => {
    // The bundled folder then registers nothing of its own: the tool it gets back is the user's.
    await expectTranspiled({ bundled: false, toolDirs: [join(scratch, 'mine'), BUNDLED_TOOLS_DIR] }, (corral) =>
      expect(corral.registry.resolve('diff-summary').source).toContain(join(scratch, 'mine')),
    );
  }, 60_000);

  it('a cache entry whose glue another version of Corral rewrote is prepared again, and the new one kept', async () => {
    // A cache of one's own that does not key its entries by PREPARED_FORMAT.
    const folder = join(scratch, 'stale', 'diff-summary');
    mkdirSync(folder, { recursive: true });
    for (const file of ['tool-spec.json', 'diff-summary.wasm']) copyFileSync(join(TOOLS, 'diff-summary', file), join(folder, file));
    const sha256 = createHash('sha256')
      .update(readFileSync(join(folder, 'diff-summary.wasm')))
      .digest('hex');
    const real = decodePreparedFile(readFileSync(join(TOOLS, 'diff-summary', 'diff-summary.prepared.json'), 'utf8'), sha256)!;
    const stale = { ...real, glue: real.glue.replace(/^\/\/ rewritten by corral \w+/, '// rewritten by corral 000000000000') };
    expect(stale.glue).not.toBe(real.glue);
    const kept: string[] = [];
    const cache = { get: async () => stale, set: async (_key: string, prepared: { glue: string }) => void kept.push(prepared.glue) };
    const { corral, transpiles } = await fresh({
      bundled: false,
      toolDirs: [join(scratch, 'stale')],
      cache: cache as unknown as ComponentCache,
    });
    try {
      const r = await corral.invoke('diff-summary', DIFF);
      expect(r.error).toBeNull();
      expect(transpiles.map((e) => e.name)).toEqual(['diff-summary']);
      expect(kept).toEqual([real.glue]);
    } finally {
      await corral.close();
    }
  }, 60_000);

  it("a cache of one's own that fails, or hands back what is not a prepared component, is a miss; a failed write fails no call", async () => {
    const answers: Array<() => unknown> = [
      () => ({}),
      () => ({ glue: 42, modules: {}, imports: [] }),
      () => ({ glue: '', modules: { 'echo.core.wasm': 'not bytes' }, imports: [] }),
      () => ({ glue: '', modules: {}, imports: 'wasi:cli/run' }),
      () => {
        throw new Error('disk gone');
      },
    ];
    for (const answer of answers) {
      const cache = {
        get: async () => answer(),
        set: async () => {
          throw new Error('read-only');
        },
      };
      const { corral, transpiles } = await fresh({ bundled: false, toolDirs: [FIXTURES], cache: cache as unknown as ComponentCache });
      try {
        const r = await corral.invoke('echo', { n: 1 });
        expect(r.error, String(answer)).toBeNull();
        expect(transpiles.map((e) => e.name)).toEqual(['echo']);
      } finally {
        await corral.close();
      }
    }
  }, 120_000);

  // Before: a cache whose get never answered held every call of the tool for ever, past its signal.
  it("a cache of one's own that never answers is given up on: a call's signal ends it at once, and others go on after the prepare time limit", async () => {
    const never = () => new Promise<never>(() => {});
    const cache = { get: never, set: never } as unknown as ComponentCache;
    const { corral, transpiles } = await fresh({ bundled: false, toolDirs: [FIXTURES], cache, prepareTimeoutMs: 8_000 });
    try {
      let started = Date.now();
      const cancelled = await corral.invoke('echo', { n: 1 }, { signal: AbortSignal.timeout(300) });
      expect(cancelled.error?.code).toBe('E_CANCELLED');
      expect(Date.now() - started).toBeLessThan(5_000);
      started = Date.now();
      const r = await corral.invoke('echo', { n: 2 });
      expect(r.error).toBeNull();
      expect(r.output).toEqual({ n: 2 });
      expect(transpiles.map((e) => e.name)).toEqual(['echo']);
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      await corral.close();
    }
  }, 120_000);

  // Before: close() left the wait on the stalled cache to its timer (prepareTimeoutMs, 2 minutes by default): a
  // call made before close was answered only then, a transpile was announced for a closed pool, and the timer
  // kept the process from exiting that long after close.
  it('a cache that never answers does not outlive close: a call waiting on it is answered E_CLOSED at once, and nothing is transpiled', async () => {
    const never = () => new Promise<never>(() => {});
    const cache = { get: never, set: never } as unknown as ComponentCache;
    const { corral, transpiles } = await fresh({ bundled: false, toolDirs: [FIXTURES], cache, prepareTimeoutMs: 60_000 });
    const pending = corral.invoke('echo', { n: 1 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    await corral.close();
    const r = await pending;
    expect(r.error?.code).toBe('E_CLOSED');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(transpiles).toEqual([]);
  }, 120_000);

  // Before: the entry was checked, then read again when the call posted it to a worker (or could not be
  // posted at all, a Proxy): every call of the tool in that process failed with an internal error,
  // "#<Object> could not be cloned", "glue.startsWith is not a function", "source is not iterable".
  it("what a cache of one's own hands back is read once and copied: a Proxy, or getters that answer otherwise later, fail no call", async () => {
    let kept: PreparedComponent | undefined;
    const keeping = { get: async () => undefined, set: async (_key: string, prepared: PreparedComponent) => void (kept = prepared) };
    const first = await fresh({ bundled: false, toolDirs: [FIXTURES], cache: keeping as unknown as ComponentCache });
    try {
      expect((await first.corral.invoke('echo', { n: 0 })).error).toBeNull();
    } finally {
      await first.corral.close();
    }
    const real = kept!;
    /** `valid` at the first read, `garbage` at every later one. */
    const flips = (valid: unknown, garbage: unknown) => {
      let reads = 0;
      return () => (reads++ === 0 ? valid : garbage);
    };
    /** The entry with `field` a getter that answers the real value at its first read, `garbage` after. */
    const flipping = (field: 'glue' | 'modules' | 'imports', garbage: unknown) => () => {
      const value = flips(real[field], garbage);
      return Object.defineProperty({ ...real }, field, { get: value, enumerable: true });
    };
    const revocable = Proxy.revocable(real, {});
    revocable.revoke();
    // Each entry, and how many transpiles it costs: 0 when its copy is the component, 1 when it is a miss.
    const entries: Array<[string, () => unknown, number]> = [
      ['the entry a Proxy', () => new Proxy(real, {}), 0],
      ['its modules a Proxy', () => ({ ...real, modules: new Proxy(real.modules, {}) }), 0],
      [
        'a Proxy that answers each field once, then with nothing',
        () => {
          const read = new Set<string | symbol>();
          return new Proxy(real, {
            get: (target, key) => (read.has(key) ? undefined : (read.add(key), target[key as keyof PreparedComponent])),
          });
        },
        0,
      ],
      ['glue a getter: valid, then a number', flipping('glue', 42), 0],
      ['modules a getter: valid, then strings', flipping('modules', { 'echo.core.wasm': 'garbage' }), 0],
      ['imports a getter: valid, then a number', flipping('imports', 7), 0],
      [
        'each core module a Proxy of its bytes',
        () => ({ ...real, modules: Object.fromEntries(Object.entries(real.modules).map(([name, bytes]) => [name, new Proxy(bytes, {})])) }),
        1,
      ],
      ['a revoked Proxy', () => revocable.proxy, 1],
      // Before: passed the checks, then every call ended E_REGISTRATION ("asks for a core module … it does not have").
      ['no core modules at all', () => ({ ...real, modules: {} }), 1],
      // Before: the copy read 2^40 entries, one by one, and the call never came.
      [
        'imports a Proxy claiming 2^40 entries',
        () => ({ ...real, imports: new Proxy([], { get: (t, k) => (k === 'length' ? 2 ** 40 : Reflect.get(t, k)) }) }),
        1,
      ],
    ];
    for (const [what, entry, transpileCount] of entries) {
      const handed = entry();
      const cache = { get: async () => handed, set: async () => {} };
      const { corral, transpiles } = await fresh({ bundled: false, toolDirs: [FIXTURES], cache: cache as unknown as ComponentCache });
      try {
        for (const n of [1, 2]) {
          const r = await corral.invoke('echo', { n });
          expect(r.error, what).toBeNull();
          expect(r.output, what).toEqual({ n });
        }
        expect(transpiles.length, what).toBe(transpileCount);
      } finally {
        await corral.close();
      }
    }
  }, 120_000);

  it('an entry of the disk cache with a damaged file is a miss, and is replaced by the component prepared again', async () => {
    const damages: Record<string, (entry: string) => void> = {
      'truncated glue': (entry) => writeFileSync(join(entry, 'glue.js'), readFileSync(join(entry, 'glue.js'), 'utf8').slice(0, 5000)),
      'a module overwritten': (entry) => {
        const [module] = JSON.parse(readFileSync(join(entry, 'meta.json'), 'utf8')).modules as string[];
        writeFileSync(join(entry, module!), 'garbage');
      },
      'meta.json of another shape': (entry) => writeFileSync(join(entry, 'meta.json'), '{"imports":"x","modules":[]}'),
      'a module dropped from meta.json': (entry) => {
        const meta = JSON.parse(readFileSync(join(entry, 'meta.json'), 'utf8'));
        writeFileSync(join(entry, 'meta.json'), JSON.stringify({ ...meta, modules: meta.modules.slice(1) }));
      },
      'meta.json without hashes (an older Corral)': (entry) => {
        const { sha256: _hashes, ...older } = JSON.parse(readFileSync(join(entry, 'meta.json'), 'utf8'));
        writeFileSync(join(entry, 'meta.json'), JSON.stringify(older));
      },
    };
    for (const [damage, apply] of Object.entries(damages)) {
      const dir = mkdtempSync(join(scratch, 'disk-cache-'));
      const transpiled = async () => {
        const { corral, transpiles } = await fresh({ bundled: false, toolDirs: [FIXTURES], cache: new ComponentCache(dir) });
        try {
          const r = await corral.invoke('echo', { damage });
          expect(r.error, damage).toBeNull();
          expect(r.output).toEqual({ damage });
          return transpiles.length;
        } finally {
          await corral.close();
        }
      };
      expect(await transpiled()).toBe(1);
      const [entry] = readdirSync(dir);
      apply(join(dir, entry!));
      expect(await transpiled(), damage).toBe(1);
      expect(await transpiled(), `${damage}, replaced`).toBe(0);
      expect(readdirSync(dir)).toEqual([entry]);
    }
  }, 180_000);

  it('a prepared form that never arrives (a stalled fetch) is given up on after the prepare time limit', async () => {
    const { corral } = await fresh({ prepareTimeoutMs: 300 });
    try {
      const tool = corral.registry.resolve('diff-summary');
      corral.executor.addPrebuilt(tool.wasmSha256, () => new Promise(() => {}));
      const started = Date.now();
      const r = await corral.invoke('diff-summary', DIFF);
      // It went on to jco, which cannot finish in 300 ms either: the call ends, classified.
      expect(r.error?.code).toBe('E_RESOURCE_EXHAUSTED');
      expect(r.error?.message).toMatch(/Preparing diff-summary took longer than 300 ms/);
      expect(Date.now() - started).toBeLessThan(30_000);
    } finally {
      await corral.close();
    }
  });

  it('a prepared file from another jco, or for other bytes, is not used', () => {
    const wasm = readFileSync(join(TOOLS, 'diff-summary', 'diff-summary.wasm'));
    const sha256 = createHash('sha256').update(wasm).digest('hex');
    const text = readFileSync(join(TOOLS, 'diff-summary', 'diff-summary.prepared.json'), 'utf8');
    expect(decodePreparedFile(text, sha256)).toBeDefined();
    expect(decodePreparedFile(text, '0'.repeat(64))).toBeUndefined();
    expect(decodePreparedFile(text.replace(PREPARED_FORMAT, 'jco-0.0.0/v0'), sha256)).toBeUndefined();
    for (const broken of ['', 'null', '[]', '{"format":1}', text.slice(0, 100)]) expect(decodePreparedFile(broken, sha256)).toBeUndefined();
  });

  it('decodes the core modules exactly, and refuses a file whose base64 is damaged', () => {
    const wasm = readFileSync(join(TOOLS, 'diff-summary', 'diff-summary.wasm'));
    const sha256 = createHash('sha256').update(wasm).digest('hex');
    const text = readFileSync(join(TOOLS, 'diff-summary', 'diff-summary.prepared.json'), 'utf8');
    const file = JSON.parse(text) as { modules: Record<string, string> };
    const prepared = decodePreparedFile(text, sha256)!;
    for (const [name, base64] of Object.entries(file.modules)) {
      const bytes = prepared.modules[name]!;
      expect(bytes.byteOffset).toBe(0);
      expect(bytes.buffer.byteLength).toBe(bytes.length); // its own buffer, nothing else to post along
      expect(Buffer.from(bytes).toString('base64')).toBe(base64);
    }
    const [name, base64] = Object.entries(file.modules)[0]!;
    // Each accepted by one decoder or another: Buffer skips what it cannot read, atob a space.
    for (const damaged of [
      `${base64.slice(0, 40)}*${base64.slice(41)}`,
      `${base64.slice(0, 42)}==${base64.slice(44)}`,
      `${base64.slice(0, 40)}\n${base64.slice(41)}`,
      `${base64} `,
      `${base64}===`,
      `${base64}a`,
      `${base64}ab=`,
      '==',
    ]) {
      const edited = JSON.stringify({ ...JSON.parse(text), modules: { ...file.modules, [name]: damaged } });
      expect(decodePreparedFile(edited, sha256)).toBeUndefined();
    }
  });

  it('preload compiles a tool in a worker before its first call, which then sends no code', async () => {
    const { corral, transpiles } = await fresh();
    try {
      const tool = corral.registry.resolve('diff-summary');
      await corral.executor.preload(tool);
      const [worker] = corral.executor.pool.workers;
      expect(worker?.loaded.has(tool.wasmSha256)).toBe(true);
      expect(transpiles).toEqual([]);
      const r = await corral.invoke('diff-summary', DIFF);
      expect(r.ok).toBe(true);
      expect(corral.executor.pool.workers).toEqual([worker]);
      // A module the worker cannot compile leaves it as it was: the call reports what is wrong.
      const broken = {
        ...tool,
        wasmSha256: 'f'.repeat(64),
        wasm: new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 0xff]),
        spec: { ...tool.spec, kind: 'module' as const },
      };
      await corral.executor.preload(broken);
      expect(worker?.loaded.has(broken.wasmSha256)).toBe(false);
      expect((await corral.invoke('diff-summary', DIFF)).ok).toBe(true);
    } finally {
      await corral.close();
    }
  });
});
