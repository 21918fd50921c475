/**
 * capModule: every defined memory and table gets a maximum within the caps
 * derived from resources.memory_mb, and what the rewrite cannot bound (wasm
 * GC types, 64-bit memories and tables, ...) is refused before compiling.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { capComponentModules, capModule } from '@corral/wasi';
import { tableBudget, TABLE_ENTRIES_PER_PAGE, WASM_PAGE_BYTES } from '@corral/wasi/internal';
import { u32, section, vec } from './wasm-bytes.js';

const ROOT = new URL('../../../', import.meta.url);

// --- building modules byte by byte ----------------------------------------------------
const module = (...sections: number[][]) => new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, ...sections.flat()]);
const FUNCREF = 0x70;
const table = (min: number, max?: number, type = FUNCREF) =>
  max === undefined ? [type, 0x00, ...u32(min)] : [type, 0x01, ...u32(min), ...u32(max)];
const memory = (min: number, max?: number) => (max === undefined ? [0x00, ...u32(min)] : [0x01, ...u32(min), ...u32(max)]);
const tables = (...t: number[][]) => section(4, vec(t));
const memories = (...m: number[][]) => section(5, vec(m));
/** Exports table i as "t<i>", so a test can grow it from JS. */
const exportTables = (n: number) => section(7, vec(Array.from({ length: n }, (_, i) => [...u32(2), 0x74, 0x30 + i, 0x01, ...u32(i)])));

/** The [min, max] of each table / memory of a module (its own sections, re-read). */
function limitsOf(bytes: Uint8Array, id: 4 | 5): Array<[number, number | undefined]> {
  const out: Array<[number, number | undefined]> = [];
  let pos = 8;
  const read = () => {
    let v = 0;
    for (let shift = 0; ; shift += 7) {
      const b = bytes[pos++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (pos < bytes.length) {
    const sid = bytes[pos++]!;
    const size = read();
    const end = pos + size;
    if (sid === id) {
      for (let n = read(); n > 0; n--) {
        if (id === 4) pos++; // reftype
        const flags = bytes[pos++]!;
        const min = read();
        out.push([min, flags & 1 ? read() : undefined]);
      }
    }
    pos = end;
  }
  return out;
}

const PAGES = 16; // a 1 MB memory cap
const BUDGET = PAGES * TABLE_ENTRIES_PER_PAGE;

describe('table caps', () => {
  it('the budget is 1/16 of the memory cap in 8-byte entries', () => {
    expect(TABLE_ENTRIES_PER_PAGE).toBe(512);
    expect(tableBudget(256 * 16)).toBe((256 * 2 ** 20) / 16 / 8);
    expect(tableBudget(PAGES)).toBe((PAGES * WASM_PAGE_BYTES) / 16 / 8);
  });

  it('a table without a maximum gets the whole budget, and table.grow past it fails in the engine', () => {
    const capped = capModule(module(tables(table(0)), exportTables(1)), PAGES);
    expect(limitsOf(capped, 4)).toEqual([[0, BUDGET]]);
    const t = new WebAssembly.Instance(new WebAssembly.Module(capped)).exports.t0 as WebAssembly.Table;
    expect(t.grow(BUDGET)).toBe(0);
    expect(() => t.grow(1)).toThrow(RangeError);
  });

  it('a fixed-size table keeps its size; the rest of the budget goes to the growable one; the total stays in the budget', () => {
    const capped = capModule(module(tables(table(5, 5), table(10), table(0, 100), table(3))), PAGES);
    const limits = limitsOf(capped, 4);
    expect(limits[0]).toEqual([5, 5]);
    expect(limits[2]).toEqual([0, 100]);
    expect(limits.reduce((sum, [, max]) => sum + max!, 0)).toBeLessThanOrEqual(BUDGET);
    // Shared evenly between the two that want more than their share.
    expect(limits[1]![1]! - 10).toBe(Math.floor((BUDGET - 18 - 100) / 2));
    expect(limits[3]![1]! - 3).toBeGreaterThanOrEqual(Math.floor((BUDGET - 18 - 100) / 2));
  });

  it('60 growable tables share one budget: 60 × 10 million entries cannot happen', () => {
    const sixty = Array.from({ length: 60 }, () => table(0));
    const limits = limitsOf(capModule(module(tables(...sixty)), PAGES), 4);
    expect(limits).toHaveLength(60);
    expect(limits.reduce((sum, [, max]) => sum + max!, 0)).toBeLessThanOrEqual(BUDGET);
  });

  it('tables whose minimums alone are over the budget are refused: E_RESOURCE_EXHAUSTED (memory)', () => {
    const bytes = module(tables(table(BUDGET), table(1)));
    expect(() => capModule(bytes, PAGES, 'big')).toThrow(
      expect.objectContaining({
        code: 'E_RESOURCE_EXHAUSTED',
        details: { resource: 'memory', table_entries: BUDGET + 1, max_table_entries: BUDGET },
        message: expect.stringMatching(/^big defines tables of 8193 entries at start; a module may have 8192/),
      }),
    );
    expect(() => capModule(module(tables(table(BUDGET))), PAGES)).not.toThrow();
  });

  it.each([
    ['a 64-bit table', [FUNCREF, 0x04, 0], /uses a 64-bit table/],
    ['a 64-bit table with a maximum', [FUNCREF, 0x05, 0, 1], /uses a 64-bit table/],
    ['a shared table', [FUNCREF, 0x03, 0, 1], /limits flags 0x3/],
    ['a table with an initializer expression', [0x40, 0x00, FUNCREF, 0x00, 0x00, 0xd0, 0x70, 0x0b], /initializer expression/],
    ['a table of (ref null $t)', [0x63, 0x00, 0x00, 0x00], /reference type 0x63/],
  ])('%s is refused at load: E_REGISTRATION', (_name, entry, message) => {
    expect(() => capModule(module(section(4, vec([entry]))), PAGES)).toThrow(
      expect.objectContaining({ code: 'E_REGISTRATION', message: expect.stringMatching(message) }),
    );
  });
});

describe('memory caps', () => {
  it('each memory gets at most the cap (a lower declared maximum stays), as before', () => {
    expect(limitsOf(capModule(module(memories(memory(1))), PAGES), 5)).toEqual([[1, PAGES]]);
    expect(limitsOf(capModule(module(memories(memory(1, 4))), PAGES), 5)).toEqual([[1, 4]]);
    expect(limitsOf(capModule(module(memories(memory(2, 65536))), PAGES), 5)).toEqual([[2, PAGES]]);
  });

  it('the memories of one module share the cap (multi-memory cannot multiply it)', () => {
    const limits = limitsOf(capModule(module(memories(memory(1), memory(1), memory(1, 2))), PAGES), 5);
    expect(limits[2]).toEqual([1, 2]);
    expect(limits.reduce((sum, [, max]) => sum + max!, 0)).toBeLessThanOrEqual(PAGES);
  });

  it('memories that need more than the cap at start are refused: E_RESOURCE_EXHAUSTED (memory)', () => {
    expect(() => capModule(module(memories(memory(PAGES + 1))), PAGES, 'fat')).toThrow(
      expect.objectContaining({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'memory', min_pages: PAGES + 1, max_pages: PAGES } }),
    );
    expect(() => capModule(module(memories(memory(PAGES / 2 + 1), memory(PAGES / 2))), PAGES)).toThrow(
      expect.objectContaining({ code: 'E_RESOURCE_EXHAUSTED' }),
    );
  });

  it.each([
    ['64-bit memory', [0x04, 1], /uses 64-bit memory/],
    ['a custom page size', [0x08, 1, 0], /custom page size/],
    ['unknown flags', [0x10, 1], /unknown memory flags/],
  ])('%s is refused at load: E_REGISTRATION', (_name, entry, message) => {
    expect(() => capModule(module(section(5, vec([entry]))), PAGES)).toThrow(
      expect.objectContaining({ code: 'E_REGISTRATION', message: expect.stringMatching(message) }),
    );
  });

  it('keeps a shared memory shared', () => {
    const capped = capModule(module(memories([0x03, 1, 2])), PAGES);
    expect(Array.from(capped.subarray(-4))).toEqual([1, 0x03, 1, 2]);
  });
});

describe('types the caps cannot bound', () => {
  const types = (...entries: number[][]) => section(1, vec(entries));
  const I32 = 0x7f;

  it('plain function types pass, reference-typed parameters included', () => {
    expect(() =>
      capModule(
        module(types([0x60, 1, I32, 1, I32], [0x60, 2, 0x70, 0x6f, 0], [0x60, 1, 0x63, 0x70, 0], [0x60, 1, 0x64, 0x80, 0x00, 0])),
        PAGES,
      ),
    ).not.toThrow();
  });

  it.each([
    ['a struct', [0x5f, 1, I32, 0], /wasm GC types \(a struct\)/],
    ['an array', [0x5e, I32, 1], /wasm GC types \(an array\)/],
    ['a rec group', [0x4e, 1, 0x60, 0, 0], /wasm GC types \(a rec group\)/],
    ['a subtype', [0x50, 0, 0x60, 0, 0], /wasm GC types \(a subtype\)/],
    ['a final subtype', [0x4f, 0, 0x60, 0, 0], /wasm GC types \(a final subtype\)/],
    ['an unknown form', [0x41], /type of unknown form 0x41/],
    ['an unknown value type', [0x60, 1, 0x42, 0], /value type of unknown encoding 0x42/],
  ])('%s is refused at load: E_REGISTRATION', (_name, entry, message) => {
    // A plain function type first: the check must look at every entry.
    expect(() => capModule(module(types([0x60, 0, 0], entry)), PAGES, 'gc')).toThrow(
      expect.objectContaining({ code: 'E_REGISTRATION', message: expect.stringMatching(message) }),
    );
  });

  it('the gc-bomb fixture is refused before the engine sees it', () => {
    const bytes = new Uint8Array(readFileSync(new URL('test/fixtures/wat/p1-gc-bomb/p1-gc-bomb.wasm', ROOT)));
    expect(() => capModule(bytes, PAGES, 'p1-gc-bomb')).toThrow(
      expect.objectContaining({ code: 'E_REGISTRATION', message: expect.stringMatching(/^p1-gc-bomb uses wasm GC types/) }),
    );
  });
});

describe('malformed modules', () => {
  const echo = new Uint8Array(readFileSync(new URL('test/fixtures/preview1/echo/p1-echo.wasm', ROOT)));

  it('every prefix of a real module is rewritten or refused with E_REGISTRATION, nothing else', () => {
    for (let end = 0; end < echo.length; end++) {
      try {
        capModule(echo.subarray(0, end), PAGES);
      } catch (err) {
        expect((err as { code?: string }).code, `prefix of ${end} bytes`).toBe('E_REGISTRATION');
      }
    }
  });

  it('random byte flips never escape as anything but E_REGISTRATION or E_RESOURCE_EXHAUSTED', () => {
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let i = 0; i < 3000; i++) {
      const copy = echo.slice();
      for (let k = 0; k < 3; k++) copy[8 + (next() % (copy.length - 8))] = next() % 256;
      try {
        capModule(copy, PAGES);
      } catch (err) {
        expect(['E_REGISTRATION', 'E_RESOURCE_EXHAUSTED']).toContain((err as { code?: string }).code);
      }
    }
  });

  it.each([
    ['a section longer than the file', module([4, 0xff, 0xff, 0xff, 0xff, 0x0f])],
    ['a table count larger than the section', module(section(4, [0xff, 0xff, 0xff, 0xff, 0x0f]))],
    ['a u32 of six bytes', module(section(5, [0x80, 0x80, 0x80, 0x80, 0x80, 0x00]))],
    ['bytes after the last memory', module(section(5, [1, 0, 1, 0xaa]))],
    ['a component', new Uint8Array([0, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0])],
    // Invalid (the engine refuses them), and a rewritten maximum would have made them valid.
    ['a memory whose maximum is below its minimum', module(memories(memory(2, 1)))],
    ['a table whose maximum is below its minimum', module(tables(table(2, 1)))],
    ['a shared memory without a maximum', module(memories([0x02, ...u32(1)]))],
  ])('%s: E_REGISTRATION', (_name, bytes) => {
    expect(WebAssembly.validate(bytes)).toBe(false);
    expect(() => capModule(bytes, PAGES)).toThrow(expect.objectContaining({ code: 'E_REGISTRATION' }));
  });
});

describe('real modules still compile after the rewrite', () => {
  const files = [
    ...readdirSync(new URL('test/fixtures/preview1/', ROOT), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .flatMap((e) =>
        readdirSync(new URL(`test/fixtures/preview1/${e.name}/`, ROOT))
          .filter((f) => f.startsWith('p1-') && f.endsWith('.wasm'))
          .map((f) => `test/fixtures/preview1/${e.name}/${f}`),
      ),
    ...readdirSync(new URL('wasm-tools/', ROOT), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .flatMap((e) =>
        readdirSync(new URL(`wasm-tools/${e.name}/`, ROOT))
          .filter((f) => f.endsWith('.module.wasm'))
          .map((f) => `wasm-tools/${e.name}/${f}`),
      ),
  ];

  it.each(files)('%s', async (file) => {
    const bytes = new Uint8Array(readFileSync(new URL(file, ROOT)));
    const capped = capModule(bytes, 64 * 16);
    await expect(WebAssembly.compile(capped)).resolves.toBeInstanceOf(WebAssembly.Module);
    for (const [min, max] of limitsOf(capped, 4)) expect(max).toBeGreaterThanOrEqual(min);
  });
});

describe('capComponentModules: the core modules of one component share the caps', () => {
  it('one module defining memory (a component made from a preview1 module) keeps the whole cap', () => {
    const capped = capComponentModules({ main: module(memories(memory(2))), adapter: module(), shim: module(tables(table(4))) }, 64);
    expect(limitsOf(capped.main!, 5)).toEqual([[2, 64]]);
    expect(limitsOf(capped.shim!, 4)).toEqual([[4, tableBudget(64)]]);
  });

  it('N modules defining memories or tables get 1/N of each cap, not N times it', () => {
    const capped = capComponentModules(
      {
        a: module(memories(memory(1)), tables(table(1))),
        b: module(memories(memory(1))),
        c: module(memories(memory(1)), tables(table(1))),
        d: module(),
      },
      90,
    );
    for (const name of ['a', 'b', 'c']) expect(limitsOf(capped[name]!, 5)).toEqual([[1, 30]]);
    expect(limitsOf(capped.a!, 4)).toEqual([[1, Math.floor(tableBudget(90) / 2)]]);
    expect(limitsOf(capped.c!, 4)).toEqual([[1, Math.floor(tableBudget(90) / 2)]]);
  });
});
