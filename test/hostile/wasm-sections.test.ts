/**
 * Core's section reader (packages/core/src/wasm-sections.ts) reads every
 * tool folder's wasm on the host, at registration (`corral tools`, `corral
 * mcp`, `corral serve` load whole folders) and in `corral validate`. A
 * hostile file must end in E_REGISTRATION or an answer, quickly and in
 * bounded memory, never in anything else: a fuzzer over random and mutated
 * bytes, and the shapes that once cost the host gigabytes.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CorralError, adapterReallocProblem, componentCoreModules, coreModuleInterface, hasStartFunction } from '@corral/core';

const VALIDATE = new URL('../fixtures/validate/', import.meta.url).pathname;
const NO_REALLOC = new Uint8Array(readFileSync(`${VALIDATE}no-realloc.wasm`));
const WITH_REALLOC = new Uint8Array(readFileSync(`${VALIDATE}with-realloc.wasm`));
const CORE_HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
const COMPONENT_HEADER = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

const leb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
};
const section = (id: number, body: Uint8Array | number[]): Uint8Array => {
  const head = [id, ...leb(body.length)];
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
};
const concat = (...parts: (Uint8Array | number[])[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.length);
  return out;
};
/** A core module whose import section lists `count` imports of `a`.`` (5 bytes each). */
const manyImports = (count: number): Uint8Array => {
  const body = new Uint8Array(leb(count).length + count * 5);
  body.set(leb(count));
  for (let i = 0, at = leb(count).length; i < count; i++, at += 5) body.set([1, 0x61, 0, 0, 0], at);
  return concat(CORE_HEADER, section(2, body));
};
const inComponent = (...modules: Uint8Array[]): Uint8Array => concat(COMPONENT_HEADER, ...modules.map((m) => section(1, m)));

/** Every parser entry point on `bytes`: an answer or E_REGISTRATION, nothing else. */
function readAll(bytes: Uint8Array): void {
  for (const read of [
    () => coreModuleInterface(bytes),
    () => componentCoreModules(bytes),
    () => adapterReallocProblem(bytes),
    () => hasStartFunction(bytes, 'module'),
    () => hasStartFunction(bytes, 'component'),
  ]) {
    try {
      read();
    } catch (err) {
      if (!CorralError.is(err) || err.code !== 'E_REGISTRATION') throw err;
    }
  }
}

describe('the section reader on hostile bytes', () => {
  it('random bytes behind a module or component header end in an answer or E_REGISTRATION', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.uint8Array({ maxLength: 512 }), (component, body) => {
        readAll(concat(component ? COMPONENT_HEADER : CORE_HEADER, body));
      }),
      { numRuns: 3000 },
    );
  });

  it('fixtures with bytes flipped, cut or inserted end in an answer or E_REGISTRATION', () => {
    const mutation = fc.record({
      at: fc.nat(),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
      how: fc.constantFrom('overwrite', 'insert', 'truncate'),
    });
    fc.assert(
      fc.property(fc.constantFrom(NO_REALLOC, WITH_REALLOC), fc.array(mutation, { minLength: 1, maxLength: 4 }), (fixture, mutations) => {
        let bytes: Uint8Array = fixture.slice();
        for (const m of mutations) {
          if (bytes.length <= 8) break; // cut down to the header: nothing left to mutate
          const at = 8 + (m.at % (bytes.length - 8));
          if (m.how === 'overwrite') bytes.set(m.bytes.subarray(0, bytes.length - at), at);
          else if (m.how === 'insert') bytes = concat(bytes.subarray(0, at), m.bytes, bytes.subarray(at));
          else bytes = bytes.slice(0, at);
        }
        readAll(bytes);
      }),
      { numRuns: 2000 },
    );
  });

  it('agrees with the engine on the imports and exports of every module it accepts', () => {
    // Mutations of the fixtures' own core modules that V8 still compiles.
    const modules = componentCoreModules(WITH_REALLOC);
    let compared = 0;
    fc.assert(
      fc.property(fc.constantFrom(...modules), fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 2 }), (module, at, patch) => {
        const bytes = module.slice();
        bytes.set(patch.subarray(0, bytes.length - 8 - (at % (bytes.length - 8))), 8 + (at % (bytes.length - 8)));
        if (!WebAssembly.validate(bytes)) return;
        compared++;
        const engine = new WebAssembly.Module(bytes);
        const ours = coreModuleInterface(bytes);
        expect(ours.imports).toEqual(WebAssembly.Module.imports(engine));
        expect(ours.exports).toEqual(WebAssembly.Module.exports(engine));
      }),
      { numRuns: 1500 },
    );
    expect(compared).toBeGreaterThan(100);
  });

  it('u32s longer than 5 bytes, counts of 2^32-1 and sections larger than the file are E_REGISTRATION', () => {
    const refused = (bytes: Uint8Array | number[]) => expect(() => coreModuleInterface(new Uint8Array(bytes))).toThrow(/not a valid/);
    refused([...CORE_HEADER, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
    refused([...CORE_HEADER, 2, 0xff, 0xff, 0xff, 0xff, 0x1f]);
    refused([...CORE_HEADER, 2, 0xff, 0xff, 0xff, 0xff, 0x0f, 0]);
    refused([...CORE_HEADER, 2, 5, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    refused([...CORE_HEADER, 2, 4, 1, 1, 0xff, 0]);
  });
});

// `corral validate` blames a start function for a slow instantiation only when there is one.
it('finds a start section in a core module, in a module a component embeds, and in the component itself', () => {
  const withStart = concat(CORE_HEADER, section(8, [0]));
  const withoutStart = concat(CORE_HEADER, section(2, [0]));
  expect(hasStartFunction(withStart, 'module')).toBe(true);
  expect(hasStartFunction(withoutStart, 'module')).toBe(false);
  expect(hasStartFunction(inComponent(withoutStart, withStart), 'component')).toBe(true);
  expect(hasStartFunction(inComponent(withoutStart), 'component')).toBe(false);
  expect(hasStartFunction(concat(COMPONENT_HEADER, section(9, [0, 0, 0])), 'component')).toBe(true);
  expect(hasStartFunction(WITH_REALLOC, 'component')).toBe(false);
  expect(() => hasStartFunction(concat(CORE_HEADER, [8, 5]), 'module')).toThrow(expect.objectContaining({ code: 'E_REGISTRATION' }));
});

describe('what a hostile file can make the host hold', () => {
  // 10 million 5-byte imports (a 48 MB file) became 10 million objects: 700 MB
  // of heap and 9 s, and a 334 MB file kept `corral tools` for 2.5 minutes at
  // 5.5 GB. No engine runs a module with more than 100,000 imports.
  it('a core module with more imports than any engine accepts is E_REGISTRATION, read no further', () => {
    const component = inComponent(manyImports(100_001));
    const started = performance.now();
    expect(() => adapterReallocProblem(component)).toThrow(/more than 100000 imports/);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(coreModuleInterface(manyImports(100_000)).imports).toHaveLength(100_000);
  });

  it('a component of a million tiny core modules is E_REGISTRATION after the thousandth', () => {
    const tiny = section(1, CORE_HEADER);
    const count = 1_000_000;
    const bytes = new Uint8Array(8 + count * tiny.length);
    bytes.set(COMPONENT_HEADER);
    for (let i = 0; i < count; i++) bytes.set(tiny, 8 + i * tiny.length);
    expect(() => componentCoreModules(bytes)).toThrow(/more than 1000 core modules/);
    expect(componentCoreModules(bytes.subarray(0, 8 + 1000 * tiny.length))).toHaveLength(1000);
  });

  it('components nested a hundred thousand deep are E_REGISTRATION, not a stack overflow', () => {
    // Each level is a header, then section 4 holding the level inside it; built outside in, in one buffer.
    const prefixes: number[][] = [];
    let size = COMPONENT_HEADER.length;
    for (let i = 0; i < 100_000; i++) {
      const prefix = [...COMPONENT_HEADER, 4, ...leb(size)];
      prefixes.push(prefix);
      size += prefix.length;
    }
    const bytes = concat(...prefixes.reverse(), COMPONENT_HEADER);
    let thrown: unknown;
    try {
      componentCoreModules(bytes);
    } catch (err) {
      thrown = err;
    }
    expect(CorralError.is(thrown) && thrown.code).toBe('E_REGISTRATION');
    expect((thrown as Error).message).toMatch(/more than 1000 nested components/);
  });
});
