/**
 * Components are transpiled by jco inside a sandbox worker, once: the
 * result is kept in memory and in IndexedDB (keyed by the component's
 * SHA-256 and PREPARED_FORMAT), so another BrowserCorral — a page reload —
 * runs the component without transpiling it again. Prints the timings.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { deleteDB, openDB } from 'idb';
import { BrowserCorral, IndexedDbComponentCache, bundledTools, registerBundledTools, type PreparedComponentCache } from '@corral/browser';
import { PREPARED_FORMAT } from '@corral/wasi';
import { REAL_DIFF } from './fixtures.js';

const CACHE_DB = `corral-components-test-${Date.now()}`;
afterAll(() => deleteDB(CACHE_DB));

/** A cache that counts what it was asked, around the real IndexedDB one. */
function counting(inner: PreparedComponentCache) {
  const counts = { hits: 0, misses: 0, sets: 0 };
  const cache: PreparedComponentCache = {
    async get(sha) {
      const found = await inner.get(sha);
      counts[found ? 'hits' : 'misses']++;
      return found;
    },
    async set(sha, prepared) {
      counts.sets++;
      await inner.set(sha, prepared);
    },
    clear: () => inner.clear(),
  };
  return { cache, counts };
}

const ms = (n: number) => `${n.toFixed(0)} ms`;

/** The bundled components registered as any other tool is (without their transpiled form), so jco has work to do. */
async function registerByHand(corral: BrowserCorral) {
  for (const tool of bundledTools.filter((t) => t.name === 'diff-summary' || t.name === 'file-stats')) {
    await corral.register(tool.spec, new Uint8Array(await (await fetch(tool.wasmUrl)).arrayBuffer()), tool.name);
  }
  return corral.registry.resolve('diff-summary');
}

describe('transpiling components in the browser', () => {
  it('transpiles diff-summary once per browser profile: a second BrowserCorral (a reload) reads IndexedDB, not jco', async () => {
    const timings: string[] = [];

    // Cold: a fresh worker loads jco (its 9 MB bindgen component) and transpiles.
    const first = counting(new IndexedDbComponentCache(CACHE_DB));
    const a = await BrowserCorral.create({ size: 1, store: false, cache: first.cache });
    const tool = await registerByHand(a);
    let t = performance.now();
    await a.executor.prepare(tool);
    timings.push(`transpile cold (worker boot + jco load + transpile): ${ms(performance.now() - t)}`);
    expect(first.counts).toEqual({ hits: 0, misses: 1, sets: 1 });

    // Warm: the same worker, jco already loaded, a component it has not seen (file-stats).
    t = performance.now();
    await a.executor.prepare(a.registry.resolve('file-stats'));
    timings.push(`transpile warm (jco loaded, file-stats): ${ms(performance.now() - t)}`);

    t = performance.now();
    let result = await a.invoke('diff-summary', { diff: REAL_DIFF });
    timings.push(`first call after transpile (compile + run): ${ms(performance.now() - t)}`);
    expect(result.ok).toBe(true);
    t = performance.now();
    result = await a.invoke('diff-summary', { diff: REAL_DIFF });
    timings.push(`warm call: ${ms(performance.now() - t)} (tool ran ${ms(result.duration_ms)})`);
    await a.close();

    // A reload: a new BrowserCorral, new workers, the same IndexedDB cache.
    const second = counting(new IndexedDbComponentCache(CACHE_DB));
    const b = await BrowserCorral.create({ size: 1, store: false, cache: second.cache });
    await registerByHand(b);
    t = performance.now();
    result = await b.invoke('diff-summary', { diff: REAL_DIFF });
    const reload = performance.now() - t;
    timings.push(`first call after a reload (IndexedDB hit + worker boot + compile + run): ${ms(reload)}`);
    expect(result.ok).toBe(true);
    // A hit and no set: nothing was transpiled again.
    expect(second.counts).toEqual({ hits: 1, misses: 0, sets: 0 });
    await b.close();

    console.log(`diff-summary in Chromium:\n  ${timings.join('\n  ')}`);
  });

  it('the bundled tools come transpiled: registerBundledTools runs them with neither jco nor the cache', async () => {
    const counted = counting(new IndexedDbComponentCache(`${CACHE_DB}-bundled`));
    const corral = await BrowserCorral.create({ size: 1, store: false, cache: counted.cache });
    try {
      const tools = await registerBundledTools(corral);
      const t = performance.now();
      const result = await corral.invoke('diff-summary', { diff: REAL_DIFF });
      console.log(
        `diff-summary in Chromium, transpiled at build time: first call ${ms(performance.now() - t)} (fetch + worker boot + compile + run)`,
      );
      expect(result.ok).toBe(true);
      for (const tool of tools) expect((await corral.executor.prepare(tool)).glue).toContain('export function instantiate');
      expect(counted.counts).toEqual({ hits: 0, misses: 0, sets: 0 });
    } finally {
      await corral.close();
      await deleteDB(`${CACHE_DB}-bundled`);
    }
  });

  it('keys entries by SHA-256 and PREPARED_FORMAT, drops other formats, and treats a damaged entry as a miss', async () => {
    const cache = new IndexedDbComponentCache(CACHE_DB);
    const db = await openDB(CACHE_DB, 1);
    const keys = (await db.getAllKeys('components')) as string[];
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key).toMatch(new RegExp(`^[0-9a-f]{64}/${PREPARED_FORMAT.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    await db.put('components', { glue: 'old' }, `${'0'.repeat(64)}/jco-0.0.0/v0`);
    await db.put('components', { glue: 42 }, `${'1'.repeat(64)}/${PREPARED_FORMAT}`);
    db.close();
    expect(await cache.get('1'.repeat(64))).toBeUndefined();
    const sample = { glue: 'export function instantiate() {}', modules: { 'm.wasm': new Uint8Array([0, 0x61, 0x73, 0x6d]) }, imports: [] };
    await cache.set('2'.repeat(64), sample);
    expect(await cache.get('2'.repeat(64))).toEqual(sample);
    const after = await openDB(CACHE_DB, 1);
    expect(((await after.getAllKeys('components')) as string[]).some((k) => k.includes('jco-0.0.0'))).toBe(false);
    after.close();
    await cache.close();
  });

  it('a component that is not valid is refused with E_REGISTRATION when it is first run', async () => {
    const corral = await BrowserCorral.create({ size: 1, store: false, cache: false });
    try {
      // A component header followed by garbage: detected as a component, refused when its imports are read.
      const bogus = new Uint8Array([0, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0, 0xff, 0xff, 0xff]);
      const spec = { ...(bundledTools.find((t) => t.name === 'diff-summary')!.spec as object), name: 'bogus' };
      await corral.register(spec, bogus);
      const result = await corral.invoke('bogus', { diff: '' });
      expect(result.error?.code).toBe('E_REGISTRATION');
      expect(result.error?.message).toMatch(/bogus is not a valid WebAssembly component/);
    } finally {
      await corral.close();
    }
  });
});
