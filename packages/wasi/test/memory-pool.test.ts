/**
 * importOwnMemory and MemoryPool (memory-pool.ts): a module that defines one
 * memory is rewritten to import it, runs as before, and gets a memory that
 * is zeroed and of the same size at every call; any other module is left as
 * it is.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parse } from '@bytecodealliance/jco';
import { CodeCache, capModule } from '@corral/wasi';
import { checkPreview1Module } from '@corral/wasi';
import {
  cleanSpareMemories,
  importOwnMemory,
  MAX_POOLED_PAGES,
  MAX_REUSES,
  MAX_SPARES,
  MAX_SPARE_BYTES,
  MAX_SPARES_BYTES,
  MemoryLeases,
  MemoryPool,
  POOL_IMPORT_MODULE,
  POOLED_PAGES,
  WASM_PAGE_BYTES,
} from '@corral/wasi/internal';

const wat = async (text: string) => capModule(await parse(text), 64, 'test');

/** Keeps a value at 1024 across calls if its memory did, and exports the memory. */
const COUNTER = `(module
  (type (func (result i32)))
  (import "env" "log" (func $log (param i32)))
  (memory (export "memory") 1 20)
  (data (i32.const 16) "hi")
  (func (export "bump") (result i32)
    (i32.store (i32.const 1024) (i32.add (i32.load (i32.const 1024)) (i32.const 1)))
    (i32.load (i32.const 1024)))
  (func (export "grow") (result i32) (memory.grow (i32.const 3)))
  (func (export "size") (result i32) (memory.size)))`;

describe('importOwnMemory', () => {
  it('turns the defined memory into an import with the same limits, keeping exports, data and code', async () => {
    const pooled = importOwnMemory(await wat(COUNTER))!;
    expect(pooled).toMatchObject({ minPages: 1, maxPages: 20 });
    const module = new WebAssembly.Module(pooled.bytes);
    expect(WebAssembly.Module.imports(module)).toEqual([
      { module: 'env', name: 'log', kind: 'function' },
      { module: POOL_IMPORT_MODULE, name: 'memory', kind: 'memory' },
    ]);
    expect(WebAssembly.Module.exports(module).map((e) => e.name)).toEqual(['memory', 'bump', 'grow', 'size']);
    const pool = new MemoryPool(pooled);
    const leases = new MemoryLeases();
    const instance = new WebAssembly.Instance(module, leases.imports(pool, { env: { log: () => {} } }));
    const exports = instance.exports as { memory: WebAssembly.Memory; bump(): number };
    expect(exports.bump()).toBe(1);
    expect(new TextDecoder().decode(new Uint8Array(exports.memory.buffer, 16, 2))).toBe('hi');
  });

  it('adds an import section where the module had none', async () => {
    const pooled = importOwnMemory(await wat('(module (memory (export "memory") 2) (func (export "f")))'))!;
    expect(WebAssembly.Module.imports(new WebAssembly.Module(pooled.bytes))).toEqual([
      { module: POOL_IMPORT_MODULE, name: 'memory', kind: 'memory' },
    ]);
  });

  it('leaves alone a module with no memory, two memories, an imported memory or an import of its own from the pool name', async () => {
    expect(importOwnMemory(await wat('(module (func (export "f")))'))).toBeNull();
    expect(importOwnMemory(await wat('(module (import "env" "m" (memory 1)) (func))'))).toBeNull();
    expect(importOwnMemory(await wat(`(module (import "${POOL_IMPORT_MODULE}" "f" (func)) (memory 1))`))).toBeNull();
    expect(importOwnMemory(await wat('(module (memory $a 1) (memory $b 1))'))).toBeNull();
  });

  it('lets a preview1 module import the pool only when Corral rewrote it', async () => {
    const own = await wat(
      `(module (import "${POOL_IMPORT_MODULE}" "memory" (memory 1)) (export "memory" (memory 0)) (func (export "_start")))`,
    );
    expect(importOwnMemory(own)).toBeNull();
    expect(() => checkPreview1Module(new WebAssembly.Module(own), 'sly')).toThrow(/imports corral:memory-pool\.memory \(memory\)/);
  });
});

describe('MemoryPool', () => {
  it('hands every call a zeroed memory of the same size, and does not reuse one that grew', async () => {
    const pooled = importOwnMemory(await wat(COUNTER))!;
    const module = new WebAssembly.Module(pooled.bytes);
    const pool = new MemoryPool(pooled);
    expect(pool.pages).toBe(POOLED_PAGES);
    const call = (grow = false) => {
      const leases = new MemoryLeases();
      const exports = new WebAssembly.Instance(module, leases.imports(pool, { env: { log: () => {} } })).exports as {
        memory: WebAssembly.Memory;
        bump(): number;
        grow(): number;
        size(): number;
      };
      const seen = { size: exports.size(), count: exports.bump(), memory: exports.memory };
      if (grow) exports.grow();
      leases.release();
      return seen;
    };
    const first = call();
    const second = call();
    expect(second.memory).toBe(first.memory); // reused...
    expect(second).toMatchObject({ size: pool.pages, count: 1 }); // ...zeroed, same size
    const grew = call(true);
    expect(grew.memory.buffer.byteLength).toBe((pool.pages + 3) * WASM_PAGE_BYTES);
    const after = call();
    expect(after.memory).not.toBe(grew.memory);
    expect(after).toMatchObject({ size: pool.pages, count: 1 });
  });
});

describe('importOwnMemory and data segments', () => {
  it('keeps a module whose data lies past its declared minimum on its own memory, so instantiating it still fails', async () => {
    const outside = await wat('(module (memory (export "memory") 1) (data (i32.const 70000) "x"))');
    expect(importOwnMemory(outside)).toBeNull();
    expect(() => new WebAssembly.Instance(new WebAssembly.Module(outside))).toThrow(/out of bounds/);
    // Within the minimum, or passive: pooled.
    expect(importOwnMemory(await wat('(module (memory 1) (data (i32.const 65535) "x"))'))).not.toBeNull();
    expect(importOwnMemory(await wat('(module (memory 1) (data "passive, any size"))'))).not.toBeNull();
    // An offset from a global is not worked out: the module keeps its own memory.
    expect(importOwnMemory(await wat('(module (global i32 (i32.const 0)) (memory 1) (data (global.get 0) "x"))'))).toBeNull();
  });
});

/** The sections of a module, each with its id and size bytes. */
const sectionsOf = (module: Uint8Array): Uint8Array[] => {
  const out: Uint8Array[] = [];
  for (let pos = 8; pos < module.length; ) {
    let size = 0;
    let len = 0;
    for (let b = 0x80, shift = 0; b & 0x80; shift += 7, len++) size += ((b = module[pos + 1 + len]!) & 0x7f) * 2 ** shift;
    out.push(module.subarray(pos, pos + 1 + len + size));
    pos += 1 + len + size;
  }
  return out;
};
const joined = (parts: Uint8Array[]): Uint8Array<ArrayBuffer> => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
};

describe('importOwnMemory on malformed modules', () => {
  const POOLED = `(module
    (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
    (import "env" "t" (table 1 funcref))
    (import "env" "g" (global i32))
    (memory (export "memory") 1)
    (data (i32.const 16) "active") (data "passive")
    (func (export "_start") (memory.init 1 (i32.const 0) (i32.const 0) (i32.const 7)) (data.drop 1)))`;

  // A data section capModule does not read used to throw from here: "The sandbox
  // worker failed: unexpected end of module (an internal error)" instead of E_REGISTRATION.
  it('leaves a module it cannot read alone, for the engine to refuse, instead of throwing', async () => {
    const base = await parse(
      '(module (import "wasi_snapshot_preview1" "proc_exit" (func (param i32))) (memory (export "memory") 1) (func (export "_start")))',
    );
    const truncatedData = joined([base, Uint8Array.from([11, 3, 1, 0, 0x41])]);
    const longCount = joined([base, Uint8Array.from([11, 6, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])]);
    for (const bad of [truncatedData, longCount]) expect(importOwnMemory(capModule(bad, 64))).toBeNull();
    const { Preview1Runner } = await import('@corral/wasi');
    const request = {
      toolName: 'bad',
      stdin: new Uint8Array(),
      args: [],
      env: {},
      mounts: [],
      outputLimitBytes: 1e6,
      memoryLimitBytes: 4 * 2 ** 20,
      diskLimitBytes: 1e6,
    };
    await expect(new Preview1Runner().run('bad', truncatedData, request)).rejects.toMatchObject({ code: 'E_REGISTRATION' });
  });

  // Dropping every memory section and placing the import section anew made
  // these valid: a memory section before the imports, after the code, or twice.
  it('keeps a module with sections out of order or repeated invalid', async () => {
    const [type, imports, func, memory, ...rest] = sectionsOf(await parse(POOLED));
    const header = (await parse('(module)')).subarray(0, 8);
    for (const order of [
      [type, memory, imports, func, ...rest],
      [type, imports, func, ...rest, memory],
      [type, imports, func, memory, memory, ...rest],
    ]) {
      const bytes = capModule(joined([header, ...order.map((s) => s!)]), 64);
      expect(WebAssembly.validate(bytes)).toBe(false);
      expect(importOwnMemory(bytes)).toBeNull();
    }
  });

  it('never throws, and never makes an invalid module valid or a valid one invalid (mutated sections and bytes)', async () => {
    const sections = sectionsOf(await parse(POOLED));
    const header = (await parse('(module)')).subarray(0, 8);
    const mutation = fc.record({
      at: fc.nat(),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 6 }),
      how: fc.constantFrom('overwrite', 'insert', 'truncate'),
    });
    fc.assert(
      fc.property(
        fc.array(fc.nat(sections.length - 1), { minLength: 1, maxLength: 10 }),
        fc.array(mutation, { maxLength: 3 }),
        (picks, mutations) => {
          let bytes: Uint8Array = joined([header, ...picks.map((i) => sections[i]!)]);
          for (const { at, bytes: b, how } of mutations) {
            const i = 8 + (at % Math.max(1, bytes.length - 8));
            if (how === 'truncate') bytes = bytes.subarray(0, i);
            else if (how === 'insert') bytes = joined([bytes.subarray(0, i), b, bytes.subarray(i)]);
            else bytes = joined([bytes.subarray(0, i), b, bytes.subarray(i + b.length)]);
          }
          let capped: Uint8Array<ArrayBuffer>;
          try {
            capped = capModule(bytes, 64);
          } catch {
            return; // refused before any rewrite
          }
          const pooled = importOwnMemory(capped);
          if (pooled) expect(WebAssembly.validate(pooled.bytes)).toBe(WebAssembly.validate(capped));
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe('importOwnMemory and large memories', () => {
  it(`pools a memory that starts with at most ${MAX_POOLED_PAGES} pages, and leaves a larger one its own (zeroing would make it resident)`, async () => {
    expect(importOwnMemory(await wat(`(module (memory ${MAX_POOLED_PAGES}))`))).not.toBeNull();
    expect(importOwnMemory(await wat(`(module (memory ${MAX_POOLED_PAGES + 1}))`))).toBeNull();
  });
});

describe('a call with a large input', () => {
  /** Reports its memory's size, and what a past call may have left at byte 70,000 before leaving 5 there itself. */
  const SIZED = `(module
    (memory (export "memory") 1)
    (func (export "size") (result i32) (memory.size))
    (func (export "leave") (result i32)
      (i32.load (i32.const 70000))
      (i32.store (i32.const 70000) (i32.const 5))))`;
  const call = (module: WebAssembly.Module, pool: MemoryPool, inputBytes: number) => {
    const leases = new MemoryLeases(inputBytes);
    const exports = new WebAssembly.Instance(module, leases.imports(pool, {})).exports as {
      memory: WebAssembly.Memory;
      size(): number;
      leave(): number;
    };
    const seen = { size: exports.size(), found: exports.leave(), memory: exports.memory };
    leases.release();
    return seen;
  };

  // A memory that grows is not given again, and its new pages cost ~10 µs each at first touch:
  // a 1 MB diff-summary call spent ~7 ms so before its memory started with room for its input.
  it('starts with room for that input, set by its own input alone, and finds it zeroed when reused', async () => {
    const pooled = importOwnMemory(capModule(await parse(SIZED), 256, 'test'))!;
    const module = new WebAssembly.Module(pooled.bytes);
    const pool = new MemoryPool(pooled);
    const small = call(module, pool, 100);
    expect(small.size).toBe(POOLED_PAGES);
    // 256 KiB of input: four times that, past the first 256 KiB, is 20 pages.
    const large = call(module, pool, 256 * 1024);
    expect(large.size).toBe(20);
    // Each size has its spare: a small call after a large one starts small, in the small call's memory, zeroed.
    expect(call(module, pool, 100)).toMatchObject({ size: POOLED_PAGES, memory: small.memory, found: 0 });
    // An input of about the same size starts the same, in the large call's memory, zeroed.
    expect(call(module, pool, 250 * 1024)).toMatchObject({ size: 20, memory: large.memory, found: 0 });
    // Never past a quarter of the cap (256 pages here): an allocator that only grows its memory keeps the rest,
    // and a failure is not taken for running out of memory.
    expect(pool.pagesFor(100 * 2 ** 20)).toBe(64);
  });

  it(`keeps no spare over ${MAX_SPARE_BYTES / 2 ** 20} MiB, and at most ${MAX_SPARES_BYTES / 2 ** 20} MiB of spares in a worker`, async () => {
    const pooled = importOwnMemory(capModule(await parse('(module (memory (export "memory") 1))'), 4096, 'test'))!;
    const pool = new MemoryPool(pooled);
    const overSize = pool.pagesFor(8 * 2 ** 20);
    expect(overSize * WASM_PAGE_BYTES).toBeGreaterThan(MAX_SPARE_BYTES);
    const big = pool.acquire(overSize);
    pool.release(big);
    expect(pool.acquire(overSize)).not.toBe(big);

    const pages = MAX_SPARE_BYTES / WASM_PAGE_BYTES;
    const pools = Array.from({ length: MAX_SPARES_BYTES / MAX_SPARE_BYTES + 2 }, () => new MemoryPool(pooled));
    const released = pools.map((p) => {
      const memory = p.acquire(pages);
      p.release(memory);
      return memory;
    });
    const reused = pools.map((p, i) => p.acquire(pages) === released[i]);
    expect(reused).toEqual([false, false, ...Array(pools.length - 2).fill(true)]);
  });
});

describe('spare memories', () => {
  // Each pool kept its spare for as long as its compiled code was cached:
  // thousands of small tools (or memory caps) held 512 KiB resident each,
  // and V8 refuses any new memory past ~13,000 in one process.
  it(`keeps at most ${MAX_SPARES} in a worker, whatever the number of pooled modules, dropping the least recently used`, async () => {
    const pooled = importOwnMemory(await wat('(module (memory (export "memory") 1))'))!;
    const pools = Array.from({ length: MAX_SPARES + 10 }, () => new MemoryPool(pooled));
    const released = pools.map((pool) => {
      const memory = pool.acquire();
      pool.release(memory);
      return memory;
    });
    // The oldest ten were dropped, the newest kept.
    const reused = pools.map((pool, i) => pool.acquire() === released[i]);
    expect(reused).toEqual([...Array(10).fill(false), ...Array(MAX_SPARES).fill(true)]);
  });
});

describe('a memory reused', () => {
  // A new memory costs a page fault per page at its first zeroing; an old one keeps its instances until a full GC.
  it(`serves ${MAX_REUSES} calls, zeroed for each, and is then replaced`, async () => {
    const pool = new MemoryPool(importOwnMemory(await wat('(module (memory (export "memory") 1))'))!);
    const first = pool.acquire();
    let memory = first;
    for (let call = 1; call < MAX_REUSES; call++) {
      new Uint8Array(memory.buffer).fill(9, 0, 64);
      pool.release(memory);
      memory = pool.acquire();
      expect(memory).toBe(first);
      expect(new Uint8Array(memory.buffer).subarray(0, 64).every((byte) => byte === 0)).toBe(true);
    }
    pool.release(memory);
    expect(pool.acquire()).not.toBe(first);
  });
});

describe('cleanSpareMemories', () => {
  // A worker calls it once a reply is posted: its timers wait behind back-to-back calls.
  it("zeroes every spare that holds its last call's data at once, without waiting for a timer", async () => {
    const pooled = importOwnMemory(await wat('(module (memory (export "memory") 1))'))!;
    const pools = [new MemoryPool(pooled), new MemoryPool(pooled)];
    const memories = pools.map((pool) => {
      const memory = pool.acquire();
      new Uint8Array(memory.buffer).fill(7, 100, 200);
      pool.release(memory);
      return memory;
    });
    expect(memories.map((m) => new Uint8Array(m.buffer)[150])).toEqual([7, 7]);
    cleanSpareMemories();
    expect(memories.map((m) => new Uint8Array(m.buffer).some((byte) => byte !== 0))).toEqual([false, false]);
    expect(pools.map((pool, i) => pool.acquire() === memories[i])).toEqual([true, true]);
  });
});

describe('spare memories of evicted code', () => {
  // The bound above held each evicted tool's spare until 64 others came: 10,000
  // calls over 50 tools through a 16 MB code budget grew RSS ~60 MB more than without the pool.
  it('a pool whose code was dropped keeps no spare, and a memory a call gives back after that is not kept', async () => {
    const pooled = importOwnMemory(await wat('(module (memory (export "memory") 1))'))!;
    const pool = new MemoryPool(pooled);
    pool.release(pool.acquire());
    pool.dispose();
    const during = new MemoryPool(pooled);
    const leased = during.acquire();
    during.dispose();
    during.release(leased);
    expect(during.acquire()).not.toBe(leased);
  });

  it('the code cache disposes of what it evicts, once its compile settled', async () => {
    const disposed: string[] = [];
    const cache = new CodeCache(100);
    for (const key of ['a', 'b', 'c']) {
      const entry = cache.use<Uint8Array, { dispose(): void }>(key, new Uint8Array(60))!;
      entry.compiled.set(1, Promise.resolve({ dispose: () => disposed.push(key) }));
      cache.reweigh(key, entry as never);
    }
    await new Promise((r) => setTimeout(r, 0));
    expect([cache.has('a'), cache.has('b'), cache.has('c')]).toEqual([false, false, true]);
    expect(disposed).toEqual(['a', 'b']);
  });
});
