/**
 * indirection.ts: the shim and fixup wit-component links a preview1 adapter
 * with are run as JS only when they are exactly that, byte for byte; any
 * other module is instantiated as it is.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parse } from '@bytecodealliance/jco';
import { transpileComponent } from '@corral/wasi';
import { newIndirection, readIndirection, standIns, type Fixup, type Shim } from '@corral/wasi/internal';

const TOOLS = new URL('../../../test/fixtures/tools/', import.meta.url);

/** A shim of three entries as wit-component writes one, with `change` applied to its text. */
const shimWat = (change: (wat: string) => string = (w) => w) =>
  change(`(module
  (type (;0;) (func (param i32) (result i32)))
  (type (;1;) (func (param i32 i64 i32)))
  (type (;2;) (func))
  (table (;0;) 3 3 funcref)
  (export "0" (func 0))
  (export "1" (func 1))
  (export "2" (func 2))
  (export "$imports" (table 0))
  (func (;0;) (type 0) (param i32) (result i32) local.get 0 i32.const 0 call_indirect (type 0))
  (func (;1;) (type 1) (param i32 i64 i32) local.get 0 local.get 1 local.get 2 i32.const 1 call_indirect (type 1))
  (func (;2;) (type 2) i32.const 2 call_indirect (type 2)))`);

const fixupWat = (change: (wat: string) => string = (w) => w) =>
  change(`(module
  (type (;0;) (func (param i32) (result i32)))
  (type (;1;) (func (param i32 i64 i32)))
  (type (;2;) (func))
  (import "" "0" (func (;0;) (type 0)))
  (import "" "1" (func (;1;) (type 1)))
  (import "" "2" (func (;2;) (type 2)))
  (import "" "$imports" (table (;0;) 3 3 funcref))
  (elem (;0;) (i32.const 0) func 0 1 2))`);

const read = async (wat: string) => readIndirection(await parse(wat));

describe('readIndirection', () => {
  it('reads the shim and fixup of every bundled-style component, and neither its main module nor its adapter', async () => {
    for (const name of ['echo', 'env-dump', 'fs-writer']) {
      const prepared = await transpileComponent(readFileSync(new URL(`${name}/${name}.wasm`, TOOLS)), name);
      const kinds = Object.values(prepared.modules).map((bytes) => readIndirection(bytes)?.kind);
      expect(kinds, name).toEqual([undefined, undefined, 'shim', 'fixup']);
      const [shim, fixup] = Object.values(prepared.modules)
        .slice(2)
        .map((bytes) => readIndirection(bytes)!) as [Shim, Fixup];
      // Export i calls entry i, which the fixup fills with its import named i.
      expect(shim.calls.map(([exportName, entry]) => [exportName, entry])).toEqual(shim.calls.map((_, i) => [String(i), i]));
      expect(fixup.entries).toEqual(shim.calls.map((_, i) => [i, String(i)]));
    }
  });

  it('reads a shim and a fixup written as wit-component writes them', async () => {
    expect(await read(shimWat())).toEqual({
      kind: 'shim',
      calls: [
        ['0', 0, 1],
        ['1', 1, 3],
        ['2', 2, 0],
      ],
    });
    expect(await read(fixupWat())).toEqual({
      kind: 'fixup',
      entries: [
        [0, '0'],
        [1, '1'],
        [2, '2'],
      ],
    });
  });

  const shims: Array<[string, (wat: string) => string]> = [
    [
      'a body that does more than pass its arguments on',
      (w) => w.replace('local.get 0 i32.const 0', 'local.get 0 i32.const 1 i32.add i32.const 0'),
    ],
    ['arguments passed in another order', (w) => w.replace('local.get 0 local.get 1 local.get 2', 'local.get 2 local.get 1 local.get 0')],
    [
      'a call through a type other than its own',
      (w) => w.replace('i32.const 2 call_indirect (type 2)', 'i32.const 2 call_indirect (type 0)'),
    ],
    ['an entry past the end of the table', (w) => w.replace('i32.const 2 call_indirect', 'i32.const 3 call_indirect')],
    ['a local of its own', (w) => w.replace('(func (;2;) (type 2)', '(func (;2;) (type 2) (local i32)')],
    ['a direct call', (w) => w.replace('i32.const 2 call_indirect (type 2)', 'call 0 drop')],
    ['no table export', (w) => w.replace('(export "$imports" (table 0))', '')],
    ['an export named otherwise', (w) => w.replace('(export "2" (func 2))', '(export "two" (func 2))')],
    ['a memory', (w) => w.replace('(table (;0;)', '(memory 1) (table (;0;)')],
    ['a global', (w) => w.replace('(table (;0;)', '(global (mut i32) (i32.const 0)) (table (;0;)')],
    ['a start function', (w) => w.replace('(export "0"', '(start 2) (export "0"')],
    ['an import', (w) => w.replace('(table (;0;)', '(import "env" "f" (func (type 2))) (table (;0;)')],
    ['a data segment', (w) => w.replace('(table (;0;)', '(memory 1) (data (i32.const 0) "x") (table (;0;)')],
    ['an element segment', (w) => w.replace('(export "0"', '(elem (i32.const 0) func 0) (export "0"')],
    ['a table of externref', (w) => w.replace('3 3 funcref', '3 3 externref')],
    [
      'a reference-typed parameter',
      (w) =>
        w
          .replace('(type (;2;) (func))', '(type (;2;) (func (param externref)))')
          .replace('i32.const 2 call_indirect (type 2)', 'local.get 0 i32.const 2 call_indirect (type 2)'),
    ],
  ];
  for (const [what, change] of shims) {
    it(`does not take for a shim a module with ${what}`, async () => {
      expect(await read(shimWat(change))).toBeUndefined();
    });
  }

  const fixups: Array<[string, (wat: string) => string]> = [
    ['an export', (w) => w.replace('(elem', '(export "t" (table 0)) (elem')],
    ['an import from another module', (w) => w.replace('(import "" "2"', '(import "env" "2"')],
    [
      'a global import',
      (w) => w.replace('(import "" "2" (func (;2;) (type 2)))', '(import "" "g" (global i32)) (import "" "2" (func (;2;) (type 2)))'),
    ],
    ['a segment past the table minimum', (w) => w.replace('(elem (;0;) (i32.const 0)', '(elem (;0;) (i32.const 1)')],
    ['a passive segment', (w) => w.replace('(elem (;0;) (i32.const 0) func 0 1 2)', '(elem func 0 1 2)')],
    [
      'two segments',
      (w) => w.replace('(elem (;0;) (i32.const 0) func 0 1 2)', '(elem (i32.const 0) func 0 1) (elem (i32.const 2) func 2)'),
    ],
    ['a function of its own', (w) => w.replace('(elem (;0;) (i32.const 0) func 0 1 2)', '(func (type 2)) (elem (i32.const 0) func 0 1 3)')],
    ['a start function', (w) => w.replace('(elem', '(start 2) (elem')],
    ['no table import', (w) => w.replace('(import "" "$imports" (table (;0;) 3 3 funcref))', '(table 3 funcref)')],
  ];
  for (const [what, change] of fixups) {
    it(`does not take for a fixup a module with ${what}`, async () => {
      expect(await read(fixupWat(change))).toBeUndefined();
    });
  }

  it('never throws, and takes for a shim or fixup only a valid module, whatever bytes of one are changed', async () => {
    const originals = [await parse(shimWat()), await parse(fixupWat())];
    fc.assert(
      fc.property(
        fc.constantFrom(0, 1),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        (which, edits) => {
          const bytes = originals[which]!.slice();
          for (const [at, value] of edits) bytes[8 + (at % (bytes.length - 8))] = value;
          const found = readIndirection(bytes);
          if (found) expect(WebAssembly.validate(bytes), Buffer.from(bytes).toString('hex')).toBe(true);
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe('standIns', () => {
  const compile = async (wats: string[]) => {
    const map = new Map<WebAssembly.Module, Uint8Array>();
    for (const wat of wats) {
      const bytes = await parse(wat);
      map.set(new WebAssembly.Module(bytes), bytes);
    }
    return map;
  };
  const other = '(module (func (export "f")))';

  it('stands in for a shim and its fixup together', async () => {
    expect([...(await standIns(await compile([other, shimWat(), fixupWat()]))).values()].map((s) => s.kind)).toEqual(['shim', 'fixup']);
  });

  it('stands in for none when a shim has no fixup to fill it, or another module imports a table', async () => {
    expect((await standIns(await compile([other, shimWat()]))).size).toBe(0);
    expect((await standIns(await compile([shimWat(), fixupWat(), '(module (import "" "t" (table 1 funcref)))']))).size).toBe(0);
  });
});

describe('newIndirection', () => {
  const shim: Shim = {
    kind: 'shim',
    calls: [
      ['0', 0, 1],
      ['1', 1, 6],
    ],
  };
  const fixup: Fixup = {
    kind: 'fixup',
    entries: [
      [0, 'a'],
      [1, 'b'],
    ],
  };

  it('forwards each export to the function the fixup placed in its entry, arguments and result whole', () => {
    const indirection = newIndirection();
    const exports = indirection.shimExports(shim);
    const seen: unknown[][] = [];
    expect(
      indirection.fill(fixup, {
        '': {
          $imports: exports.$imports,
          a: (x: unknown) => (x as number) + 1,
          b: (...args: unknown[]) => seen.push(args),
        },
      } as unknown as WebAssembly.Imports),
    ).toBe(true);
    expect((exports['0'] as (x: number) => number)(41)).toBe(42);
    (exports['1'] as (...args: unknown[]) => void)(1, 2n, 3, 4, 5, 6);
    expect(seen).toEqual([[1, 2n, 3, 4, 5, 6]]);
  });

  it('traps as call_indirect does on an entry no fixup filled', () => {
    const exports = newIndirection().shimExports(shim);
    expect(() => (exports['0'] as (x: number) => number)(1)).toThrow(WebAssembly.RuntimeError);
  });

  it("fills nothing when handed another instance's table, a real table, or an entry that is not a function", () => {
    const one = newIndirection();
    const two = newIndirection();
    const exports = one.shimExports(shim);
    two.shimExports(shim);
    const functions = { a: () => 0, b: () => 0 };
    const imports = (table: unknown, fns: Record<string, unknown> = functions) =>
      ({ '': { $imports: table, ...fns } }) as unknown as WebAssembly.Imports;
    expect(two.fill(fixup, imports(exports.$imports))).toBe(false);
    expect(one.fill(fixup, imports(new WebAssembly.Table({ initial: 2, element: 'anyfunc' })))).toBe(false);
    expect(one.fill(fixup, imports(exports.$imports, { a: () => 0, b: 7 }))).toBe(false);
    expect(() => (exports['0'] as (x: number) => number)(1)).toThrow(WebAssembly.RuntimeError);
  });

  it('gives the shim exports nothing inherited', () => {
    const exports = newIndirection().shimExports(shim);
    expect(Object.getPrototypeOf(exports)).toBeNull();
    expect(exports.constructor).toBeUndefined();
  });
});
