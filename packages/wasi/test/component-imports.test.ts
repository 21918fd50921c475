/**
 * Declared component imports, read from the binary: every encoding of an
 * import name and type is stepped over, nested components' imports are not
 * the host's, and anything malformed is E_REGISTRATION, never a hang.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { checkComponentImports, declaredImports, PROVIDED_INTERFACES } from '@corral/wasi';
import { CappedSink, preview2Imports } from '@corral/wasi/internal';
import { u32, section } from './wasm-bytes.js';

const ROOT = new URL('../../../', import.meta.url);
const file = (path: string) => new Uint8Array(readFileSync(new URL(path, ROOT)));

// --- building components byte by byte ------------------------------------------------
const enc = new TextEncoder();
const str = (s: string) => [...u32(enc.encode(s).length), ...enc.encode(s)];
const PREAMBLE = [0, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0];
const component = (...sections: number[][]) => new Uint8Array([...PREAMBLE, ...sections.flat()]);
/** An import section; each import is [nameattributes bytes, externtype bytes]. */
const imports = (...entries: Array<[number[], number[]]>) =>
  section(10, [...u32(entries.length), ...entries.flatMap(([n, t]) => [...n, ...t])]);
const name = (s: string, form = 0x00) => [form, ...str(s)];
const INSTANCE = [0x05, 0x00];

describe('declaredImports', () => {
  it('reads a real component: the WASI interfaces with their versions, all provided', () => {
    const names = declaredImports(file('test/fixtures/tools/echo/echo.wasm'));
    expect(names.length).toBeGreaterThan(3);
    expect(names).toContain('wasi:cli/stdin@0.2.3');
    expect(checkComponentImports(names, 'echo')).toEqual(names);
  });

  it('reads a component with no imports as none', () => {
    expect(declaredImports(file('test/fixtures/wat/table-bomb/table-bomb.wasm'))).toEqual([]);
  });

  it('reads an import nobody calls (jco lists only used ones)', () => {
    expect(declaredImports(file('test/fixtures/wat/declares-http/declares-http.wasm'))).toContain('wasi:http/outgoing-handler@0.2.0');
  });

  it('reads all three name forms, with a 🔗 version suffix appended and other attributes skipped', () => {
    const bytes = component(
      imports(
        [name('wasi:io/poll@0.2.0'), INSTANCE],
        [name('wasi:io/streams@0.2.0', 0x01), INSTANCE],
        // 0x02: vec(attribute): versionsuffix ".3", external-id "x", implements "wasi:io/error@0.2.0"
        [[0x02, ...str('wasi:io/error@0.2'), 3, 0x01, ...str('.3'), 0x02, ...str('x'), 0x00, ...str('wasi:io/error@0.2.0')], INSTANCE],
      ),
    );
    expect(declaredImports(bytes)).toEqual(['wasi:io/poll@0.2.0', 'wasi:io/streams@0.2.0', 'wasi:io/error@0.2.3']);
  });

  it('steps over every kind of import type', () => {
    const kinds: number[][] = [
      [0x00, 0x11, 0x05], // core module (type 5)
      [0x01, 0x80, 0x01], // func (type 128)
      [0x02, 0x00, 0x07], // value (eq 7)
      [0x02, 0x01, 0x73], // value string
      [0x02, 0x01, 0x81, 0x01], // value (type 129), a two-byte s33
      [0x03, 0x00, 0x02], // type (eq 2)
      [0x03, 0x01], // type (sub resource)
      [0x04, 0x03], // component (type 3)
      [0x05, 0x09], // instance (type 9)
    ];
    const bytes = component(imports(...kinds.map((t, i) => [name(`import-${i}`), t] as [number[], number[]])));
    expect(declaredImports(bytes)).toEqual(kinds.map((_, i) => `import-${i}`));
  });

  it('skips other sections by size, reads every import section, and ignores nested components', () => {
    const nested = [...PREAMBLE.slice(4), ...imports([name('wasi:http/outgoing-handler@0.2.0'), INSTANCE])];
    const bytes = component(
      section(0, [...str('custom'), 1, 2, 3]),
      imports([name('wasi:cli/stdin@0.2.0'), INSTANCE]),
      section(4, [0, 0x61, 0x73, 0x6d, ...nested]), // a nested component: its imports are its parent's business
      section(7, [0x01, 0x42, 0x00]),
      imports([name('wasi:cli/stdout@0.2.0'), INSTANCE]),
    );
    expect(declaredImports(bytes)).toEqual(['wasi:cli/stdin@0.2.0', 'wasi:cli/stdout@0.2.0']);
  });

  it.each([
    ['a core module', new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]), /component preamble/],
    ['an empty file', new Uint8Array(), /component preamble/],
    ['a section longer than the file', component([10, 0xff, 0xff, 0xff, 0xff, 0x0f]), /section 10 claims 4294967295 bytes/],
    ['an import count larger than the section', component(section(10, [0xff, 0xff, 0xff, 0xff, 0x0f])), /unexpected end of section/],
    ['a name longer than the section', component(section(10, [1, 0x00, 0xff, 0xff, 0x03, 0x61])), /name runs past the end/],
    ['a u32 of six bytes', component(section(10, [0x80, 0x80, 0x80, 0x80, 0x80, 0x00])), /u32 longer than 5 bytes/],
    ['a u32 over 2^32', component(section(10, [0xff, 0xff, 0xff, 0xff, 0x7f])), /u32 out of range/],
    ['an unknown name form', component(imports([name('x', 0x03), INSTANCE])), /unknown import name form 0x3/],
    ['an unknown attribute', component(imports([[0x02, ...str('x'), 1, 0x07, ...str('y')], INSTANCE])), /unknown import attribute 0x7/],
    ['an unknown import kind', component(imports([name('x'), [0x06, 0]])), /unknown import kind 0x6/],
    ['a core import that is not a module', component(imports([name('x'), [0x00, 0x10, 0]])), /core import that is not a module/],
    ['a name that is not UTF-8', component(imports([[0x00, 2, 0xc3, 0x28], INSTANCE])), /not valid UTF-8/],
    ['bytes after the last import', component(section(10, [1, ...name('x'), ...INSTANCE, 0xaa])), /bytes after its last import/],
  ])('%s is E_REGISTRATION', (_what, bytes, message) => {
    expect(() => declaredImports(bytes, 'bad')).toThrow(
      expect.objectContaining({ code: 'E_REGISTRATION', message: expect.stringMatching(/^bad is not a valid WebAssembly component: /) }),
    );
    expect(() => declaredImports(bytes, 'bad')).toThrow(message);
  });

  it('every prefix and random corruption of a real component ends in names or E_REGISTRATION', () => {
    const echo = file('test/fixtures/tools/echo/echo.wasm');
    for (let end = 0; end < echo.length; end += 7) {
      try {
        declaredImports(echo.subarray(0, end));
      } catch (err) {
        expect((err as { code?: string }).code, `prefix of ${end} bytes`).toBe('E_REGISTRATION');
      }
    }
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let i = 0; i < 2000; i++) {
      const copy = echo.slice();
      for (let k = 0; k < 3; k++) copy[8 + (next() % (copy.length - 8))] = next() % 256;
      try {
        declaredImports(copy);
      } catch (err) {
        expect((err as { code?: string }).code).toBe('E_REGISTRATION');
      }
    }
  });
});

describe('checkComponentImports', () => {
  it('the allow-list is exactly the interfaces the component host implements, version-less', () => {
    const host = preview2Imports({
      args: [],
      env: {},
      stdin: new Uint8Array(),
      stdout: new CappedSink(1, 'head'),
      stderr: new CappedSink(1, 'tail'),
      preopens: [],
      memoryLimitBytes: 1 << 16,
    });
    expect([...PROVIDED_INTERFACES].sort()).toEqual(Object.keys(host).sort());
    expect(Object.isFrozen(PROVIDED_INTERFACES)).toBe(true);
  });

  it.each([
    [['wasi:http/outgoing-handler@0.2.0'], ['wasi:http/outgoing-handler']],
    [
      ['wasi:sockets/tcp@0.3.0-draft', 'wasi:sockets/network@0.2.3'],
      ['wasi:sockets/tcp', 'wasi:sockets/network'],
    ],
    // Network is named first, even beside imports that are refused for other reasons.
    [['acme:evil/thing@1.0.0', 'wasi:http/types'], ['wasi:http/types']],
  ])('%j → E_NETWORK_BLOCKED naming %j', (names, network) => {
    expect(() => checkComponentImports(names, 't')).toThrow(
      expect.objectContaining({
        code: 'E_NETWORK_BLOCKED',
        details: { imports: network },
        message: expect.stringContaining('without network access'),
      }),
    );
  });

  it.each([
    [['constructor'], 'constructor'],
    [['acme:evil/thing@1.0.0'], 'acme:evil/thing@1.0.0'],
    [['wasi:cli/stdin@0.3.0'], 'wasi:cli/stdin@0.3.0 (version 0.3.0; Corral provides 0.2.x)'],
    [['wasi:cli/stdin@0.2.0-rc-2023-11-10'], 'version 0.2.0-rc-2023-11-10'],
    [['wasi:cli/stdin'], 'wasi:cli/stdin (no version; Corral provides 0.2.x)'],
    [['wasi:cli/run@0.2.0'], 'wasi:cli/run@0.2.0'],
    [['__proto__'], '__proto__'],
  ])('%j → E_REGISTRATION naming it', (names, text) => {
    expect(() => checkComponentImports(['wasi:io/poll@0.2.0', ...names], 't')).toThrow(
      expect.objectContaining({
        code: 'E_REGISTRATION',
        details: expect.objectContaining({ imports: names }),
        message: expect.stringContaining(text),
      }),
    );
  });

  it('names every refused import at once, and says what is allowed', () => {
    expect(() => checkComponentImports(['constructor', 'wasi:io/poll@0.2.0', 'acme:evil/thing@1.0.0'], 'tool')).toThrow(
      'tool imports constructor, acme:evil/thing@1.0.0, which Corral does not provide; a Corral tool may import only wasi:cli/{environment,exit,stdin,stdout,stderr,terminal-input,terminal-output,terminal-stdin,terminal-stdout,terminal-stderr}, wasi:clocks/{monotonic-clock,wall-clock}, wasi:filesystem/{types,preopens}, wasi:io/{error,poll,streams}, wasi:random/{random,insecure,insecure-seed} of WASI 0.2.',
    );
  });

  it('accepts any 0.2.x, and the canonical version 0.2', () => {
    const names = ['wasi:cli/stdin@0.2.0', 'wasi:cli/stdout@0.2.10', 'wasi:io/streams@0.2'];
    expect(checkComponentImports(names, 't')).toEqual(names);
  });

  it('reads the bytes when given bytes', () => {
    expect(() => checkComponentImports(file('test/fixtures/wat/imports-constructor/imports-constructor.wasm'), 'c')).toThrow(
      expect.objectContaining({ code: 'E_REGISTRATION', details: expect.objectContaining({ imports: ['constructor'] }) }),
    );
    expect(() => checkComponentImports(file('test/fixtures/network/uses-sockets/uses-sockets.wasm'), 's')).toThrow(
      expect.objectContaining({ code: 'E_NETWORK_BLOCKED' }),
    );
  });

  it('refuses a damaged list from a cache', () => {
    expect(() => checkComponentImports([42 as unknown as string], 't')).toThrow(expect.objectContaining({ code: 'E_REGISTRATION' }));
  });
});
