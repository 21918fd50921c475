// Core's wasm section reader (wasm-sections.ts), which registration and
// `corral validate` use to find a preview1-adapted component without
// cabi_realloc: it must read every binary the engine reads the same way.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { adapterReallocProblem, componentCoreModules, coreModuleInterface, detectWasmKind } from '@corral/core/wasm';

const ROOT = new URL('..', import.meta.url).pathname;

function wasmFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === 'node_modules') return [];
    const path = join(dir, e.name);
    return e.isDirectory() ? wasmFiles(path) : e.name.endsWith('.wasm') ? [path] : [];
  });
}

const files = [...wasmFiles(join(ROOT, 'wasm-tools')), ...wasmFiles(join(ROOT, 'test'))]
  .filter((path) => {
    try {
      detectWasmKind(readFileSync(path));
      return true;
    } catch {
      return false; // the not-wasm fixtures
    }
  })
  .map((path) => relative(ROOT, path));

describe('wasm sections', () => {
  it('finds the repository fixtures', () => expect(files.length).toBeGreaterThan(40));

  it.each(files)('%s: imports and exports as the engine lists them', (file) => {
    const bytes = new Uint8Array(readFileSync(join(ROOT, file)));
    const modules = detectWasmKind(bytes) === 'module' ? [bytes] : componentCoreModules(bytes);
    for (const module of modules) {
      let compiled: WebAssembly.Module;
      try {
        compiled = new WebAssembly.Module(module as Uint8Array<ArrayBuffer>);
      } catch {
        continue; // hostile fixtures Node cannot compile (wasm GC): the engine has no list to compare with
      }
      expect(coreModuleInterface(module)).toEqual({
        imports: WebAssembly.Module.imports(compiled).map(({ module, name, kind }) => ({ module, name, kind })),
        exports: WebAssembly.Module.exports(compiled).map(({ name, kind }) => ({ name, kind })),
      });
    }
  });

  it('every first-party and fixture component that adapts a preview1 module exports cabi_realloc', () => {
    const components = files.filter((f) => detectWasmKind(readFileSync(join(ROOT, f))) === 'component');
    const refused = components.filter((f) => adapterReallocProblem(new Uint8Array(readFileSync(join(ROOT, f)))) !== undefined);
    expect(refused).toEqual(['test/fixtures/validate/no-realloc.wasm']);
  });

  it('malformed bytes are E_REGISTRATION, not a hang or a RangeError', () => {
    const component = new Uint8Array(readFileSync(join(ROOT, 'test/fixtures/validate/no-realloc.wasm')));
    for (const cut of [9, 100, 5000, component.length - 1]) {
      expect(() => adapterReallocProblem(component.subarray(0, cut), 'cut.wasm')).toThrow(
        expect.objectContaining({
          code: 'E_REGISTRATION',
          message: expect.stringMatching(/^cut\.wasm is not a valid WebAssembly component: /),
        }),
      );
    }
  });
});
