/**
 * watchGrowth (grow-watch.ts): every memory.grow of a module made a call to
 * an added function that grows the same memory and records a failure in an
 * exported global; what the module does is otherwise unchanged.
 */
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse, print } from '@bytecodealliance/jco';
import { ComponentRunner, Preview1Runner, capModule, prepareComponent, type RunRequest } from '@corral/wasi';
import { GROW_FAILED_EXPORT, MemoryWatch, watchGrowth } from '@corral/wasi/internal';
import { section, u32, vec } from './wasm-bytes.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
/** A core module's preamble: the magic and version 1. */
const HEADER = [0, 0x61, 0x73, 0x6d, 1, 0, 0, 0];

/** Instantiate `bytes` with `imports`; its exports. */
const run = (bytes: Uint8Array<ArrayBuffer>, imports: WebAssembly.Imports = {}) =>
  new WebAssembly.Instance(new WebAssembly.Module(bytes), imports).exports as Record<string, unknown>;

/** A call of `toolName` under a memory cap of `memoryMb`, with `stdin`. */
const request = (toolName: string, memoryMb: number, stdin = ''): RunRequest => ({
  toolName,
  stdin: new TextEncoder().encode(stdin),
  args: [toolName],
  env: {},
  mounts: [],
  outputLimitBytes: 1 << 20,
  memoryLimitBytes: memoryMb * 2 ** 20,
  diskLimitBytes: 0,
});

const failed = (exports: Record<string, unknown>) => (exports[GROW_FAILED_EXPORT] as WebAssembly.Global).value;

describe('watchGrowth', () => {
  // Imported functions and globals come first in their index spaces: the added function and global go after all of them.
  const GROWER = `(module
    (import "env" "note" (func $note (param i32)))
    (import "env" "base" (global $base i32))
    (global $mine (mut i32) (i32.const 7))
    (memory (export "memory") 1 4)
    (func $helper (param i32) (result i32) (memory.grow (local.get 0)))
    (func (export "grow") (param i32) (result i32)
      (call $note (global.get $base))
      (call $helper (local.get 0)))
    (func (export "twice") (param i32) (result i32)
      (drop (memory.grow (local.get 0)))
      (memory.grow (local.get 0)))
    (func (export "mine") (result i32) (global.get $mine)))`;

  it('grows as before, returns the same results, and sets the global only when a grow returns -1', async () => {
    const watched = watchGrowth(await parse(GROWER))!;
    expect(watched.grows).toBe(3);
    const notes: number[] = [];
    const exports = run(watched.bytes, { env: { note: (n: number) => notes.push(n), base: 5 } });
    const grow = exports.grow as (pages: number) => number;
    expect(grow(1)).toBe(1);
    expect(grow(0)).toBe(2);
    expect(failed(exports)).toBe(0);
    expect(grow(3)).toBe(-1); // 2 + 3 pages is past the maximum of 4
    expect(failed(exports)).toBe(1);
    expect((exports.memory as WebAssembly.Memory).buffer.byteLength).toBe(2 * 65536);
    expect((exports.twice as (pages: number) => number)(1)).toBe(3);
    expect(grow(1)).toBe(-1);
    // The module's own imports, globals and calls are where they were.
    expect(notes).toEqual([5, 5, 5, 5]);
    expect((exports.mine as () => number)()).toBe(7);
  });

  it('the rewritten code has no memory.grow left but in the added function, and the same count of calls to it', async () => {
    const watched = watchGrowth(await parse(GROWER))!;
    const text = await print(watched.bytes);
    expect(text.match(/memory\.grow/g)).toHaveLength(1);
    expect(text.match(/call 5\b/g)).toHaveLength(3); // functions: note (imported), helper, grow, twice, mine, then the added one, 5
  });

  it('a module with a memory and no memory.grow gets the global, never set; one without a memory is left as it is', async () => {
    const fixed = watchGrowth(await parse('(module (memory (export "memory") 1) (func (export "f") (result i32) (i32.const 1)))'))!;
    expect(fixed.grows).toBe(0);
    expect(failed(run(fixed.bytes))).toBe(0);
    const memoryless = await parse('(module (func (export "f") (result i32) (i32.const 1)))');
    expect(watchGrowth(memoryless)!.bytes).toBe(memoryless);
  });

  it('adds the sections a module lacks, in their place (a module with only a memory and code)', async () => {
    const bare = await parse('(module (memory 1 2) (func (param i32) (result i32) (memory.grow (local.get 0))))');
    const watched = watchGrowth(bare)!;
    expect(WebAssembly.validate(watched.bytes)).toBe(true);
    expect(WebAssembly.Module.exports(new WebAssembly.Module(watched.bytes))).toEqual([{ name: GROW_FAILED_EXPORT, kind: 'global' }]);
  });

  it('a module Corral prepared is used as it is; any other with the reserved export is refused', async () => {
    const once = watchGrowth(await parse(GROWER))!;
    const twice = watchGrowth(once.bytes, { prepared: true })!;
    expect(twice.bytes).toBe(once.bytes);
    expect(twice.grows).toBe(0);
    expect(() => watchGrowth(once.bytes, { toolName: 'x' })).toThrow(/x exports corral:memory-grow-failed, a name Corral reserves/);
  });

  /** A module with one memory and one function () -> () whose body is `body` (locals included). */
  const withBody = (body: number[]) =>
    Uint8Array.from([
      ...HEADER,
      ...section(1, vec([[0x60, 0, 0]])),
      ...section(3, vec([[0]])),
      ...section(5, vec([[0x00, 1]])),
      ...section(10, vec([[...u32(body.length), ...body]])),
    ]);
  const GROW = [0x41, 0x01, 0x40, 0x00, 0x1a]; // (drop (memory.grow (i32.const 1)))

  it('leaves a module with an instruction it does not know, or a body it cannot read, to the fallback (null)', () => {
    expect(watchGrowth(withBody([0, ...GROW, 0x0b]))?.grows).toBe(1);
    expect(watchGrowth(withBody([0, 0xfb, 0x00, ...GROW, 0x0b]))).toBeNull(); // a GC instruction
    expect(watchGrowth(withBody([0, ...GROW, 0x41]))).toBeNull(); // i32.const without its value or end
    expect(watchGrowth(withBody([0, ...GROW, 0x41, 0x80, 0x80]))).toBeNull(); // a number that runs past the body
  });

  it('a module the engine refuses stays refused; a body without the bytes of memory.grow is not decoded', () => {
    // memory.grow's index in more bytes than one: Node 20 refuses it, and a call in its place would pass.
    const overlong = withBody([0, 0x41, 0x01, 0x40, 0x80, 0x00, 0x1a, 0x0b]);
    expect(WebAssembly.validate(overlong)).toBe(false);
    expect(watchGrowth(overlong)).toBeNull();
    // No memory.grow bytes: the body is the engine's to refuse, not read here.
    expect(watchGrowth(withBody([0, 0xfb, 0x00, 0x0b]))?.grows).toBe(0);
  });

  it('every committed fixture and bundled tool: the watched module is valid and its memory.grows are all calls now', async () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith('.wasm')) files.push(path);
      }
    };
    walk(join(ROOT, 'test/fixtures'));
    walk(join(ROOT, 'wasm-tools'));
    let checked = 0;
    for (const file of files) {
      const bytes = new Uint8Array(readFileSync(file));
      if (bytes[4] !== 1 || bytes[6] !== 0) continue; // components: their core modules are watched when prepared
      let capped: Uint8Array<ArrayBuffer>;
      try {
        capped = capModule(bytes, 4096);
      } catch {
        continue; // refused at load anyway
      }
      const before = ((await print(capped)).match(/memory\.grow/g) ?? []).length;
      const watched = watchGrowth(capped);
      expect(watched, file).not.toBeNull();
      expect(WebAssembly.validate(watched!.bytes), file).toBe(true);
      expect(watched!.grows, file).toBe(before);
      checked++;
    }
    expect(checked).toBeGreaterThan(20);
  });
});

describe('MemoryWatch', () => {
  const pages = (n: number) => n * 65536;

  it('a failed grow in a watched instance is running out, wherever the memory ended', async () => {
    const watched = watchGrowth(
      await parse('(module (memory (export "memory") 1 16) (func (export "g") (param i32) (result i32) (memory.grow (local.get 0))))'),
    )!;
    const instance = new WebAssembly.Instance(new WebAssembly.Module(watched.bytes), {});
    const memories = new MemoryWatch();
    memories.watch(instance.exports.memory as WebAssembly.Memory, { startPages: 1, maxPages: 16 });
    memories.instance(instance, true);
    (instance.exports.g as (n: number) => number)(1);
    expect(memories.ranOut()).toBe(false);
    (instance.exports.g as (n: number) => number)(15); // 2 + 15 > 16
    expect(memories.ranOut()).toBe(true);
    expect(memories.peakBytes()).toBe(pages(2));
  });

  it('without a watched instance: grown during the call to near its own maximum, near measured from where it started', () => {
    // Under a 1 MiB cap a pooled memory starts with 512 KiB: one page grown is not running out.
    const blind = (startPages: number, maxPages: number, grownTo: number) => {
      const memory = new WebAssembly.Memory({ initial: startPages, maximum: maxPages });
      const memories = new MemoryWatch();
      memories.watch(memory, { startPages, maxPages });
      memories.instance({ exports: {} } as WebAssembly.Instance, false);
      memory.grow(grownTo - startPages);
      return memories.ranOut();
    };
    expect(blind(8, 16, 9)).toBe(false);
    expect(blind(8, 16, 12)).toBe(true);
    expect(blind(8, 16, 8)).toBe(false); // at the margin from the start, but never grown
    expect(blind(8, 32, 16)).toBe(false); // 2 MiB cap, +512 KiB
    expect(blind(8, 4096, 4000)).toBe(true);
    expect(blind(8, 4096, 3000)).toBe(false);
  });
});

describe('a failed memory.grow is what makes a failed call E_RESOURCE_EXHAUSTED (memory)', () => {
  const TOOLS = new URL('../../../test/fixtures/tools/', import.meta.url);
  const wasm = (name: string) => readFileSync(new URL(`${name}/${name}.wasm`, TOOLS));

  it('a component whose first 1 MiB block never fits under a 1 MiB cap ran out of memory', async () => {
    // Before: E_UNEXPECTED_EXIT (abort), its memory still at the 512 KiB it started with: the host saw no growth.
    const result = await new ComponentRunner().run('bomb', await prepareComponent(wasm('memory-bomb'), 'bomb'), request('bomb', 1, '{}'));
    expect(result.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'memory' } });
    expect(result.peakMemoryBytes).toBeLessThan(2 ** 20);
  });

  it('a component given a module its glue never asks for still reports running out of memory', async () => {
    // Before: the unused module took half of the cap, the tool ran out at 8 of 16 MiB, and the peak was
    // compared with the whole cap: E_UNEXPECTED_EXIT.
    const prepared = await prepareComponent(wasm('memory-bomb'), 'bomb');
    const memory = Uint8Array.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 3, 1, 0, 1]); // (module (memory 1))
    const result = await new ComponentRunner().run(
      'bomb-extra',
      { ...prepared, modules: { ...prepared.modules, 'unused.core.wasm': memory } },
      request('bomb', 16, '{}'),
    );
    expect(result.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'memory' } });
  });

  it('glue that asks for a core module the prepared component lacks is E_REGISTRATION that says to clear the cache', async () => {
    const prepared = await prepareComponent(wasm('echo'), 'echo');
    const [lost] = Object.keys(prepared.modules);
    const { [lost!]: _lost, ...modules } = prepared.modules;
    const result = await new ComponentRunner().run('echo-lost', { ...prepared, modules }, request('echo', 16, '{}'));
    expect(result.error).toMatchObject({ code: 'E_REGISTRATION', message: /prepared component is damaged.*clear the cache/ });
  });
});

describe('preview1: a failure after growing is told apart from running out', () => {
  const tool = (pages: number, { exit = 1, extra = '' } = {}) =>
    parse(`(module
      (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      (memory (export "memory") 1)
      ${extra}
      (func (export "_start") (drop (memory.grow (i32.const ${pages}))) (call $exit (i32.const ${exit}))))`);

  it('one page grown, then exit 1, under a 1 MiB cap: E_UNEXPECTED_EXIT; a grow past the cap, then exit 1: out of memory', async () => {
    // Before: a pooled memory starts with 512 KiB, the margin under a 1 MiB cap; one page grown read as running out.
    const runner = new Preview1Runner();
    const grown = await runner.run('one-page', await tool(1), request('t', 1));
    expect([grown.exitCode, grown.error]).toEqual([1, undefined]);
    const refused = await runner.run('too-many', await tool(64), request('t', 1));
    expect(refused.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'memory', cause: 'exit code 1' } });
    // A 2 MiB cap, 512 KiB grown: not near enough to be taken for running out either.
    const half = await runner.run('eight-pages', await tool(8), request('t', 2));
    expect([half.exitCode, half.error]).toEqual([1, undefined]);
  });

  it('a refused grow the tool handles, then exit 0, is a success', async () => {
    const handled = await new Preview1Runner().run('handled', await tool(64, { exit: 0 }), request('t', 1));
    expect([handled.exitCode, handled.error]).toEqual([0, undefined]);
  });

  it("a tool exporting Corral's reserved name is refused at load, whatever it exports under it; the host lives", async () => {
    // Before: taken as watched already, the tool chose its own error code (an i32 1: out of memory on
    // demand; a constant 0: running out hidden), and a v128 global made every call fail with an internal
    // error of Corral's ("Can't get the value of s128 WebAssembly.Global"), its pooled memory kept.
    const runner = new Preview1Runner();
    for (const global of ['i32 (i32.const 1)', 'i32 (i32.const 0)', 'v128 (v128.const i64x2 0 0)', 'i64 (i64.const 0)']) {
      const bytes = await tool(1, { exit: 0, extra: `(global (export "${GROW_FAILED_EXPORT}") ${global})` });
      await expect(runner.run(`reserved-${global}`, bytes, request('t', 1)), global).rejects.toMatchObject({
        code: 'E_REGISTRATION',
        message: /reserves/,
      });
    }
    const fine = await runner.run('fine', await tool(1, { exit: 0 }), request('t', 1));
    expect([fine.exitCode, fine.error]).toEqual([0, undefined]);
  });
});

describe('a preview1 tool cannot reach what grow-watch appends', () => {
  // Before: Corral's global is appended after the tool's own, so `global.set 0` in a module with none was
  // invalid as written and valid once rewritten: a tool cleared the flag after a real failed grow (a plain
  // exit 1), or set it without growing (E_RESOURCE_EXHAUSTED on demand).
  it('a module that names an index one past its own globals or functions is refused as invalid, as the engine refuses it', async () => {
    const tool = (start: string) =>
      parse(`(module
        (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
        (memory (export "memory") 1)
        (func (export "_start") ${start}))`);
    const runner = new Preview1Runner();
    for (const start of [
      '(drop (memory.grow (i32.const 1000))) (global.set 0 (i32.const 0)) (call $exit (i32.const 1))',
      '(global.set 0 (i32.const 1)) (call $exit (i32.const 1))',
      '(drop (call 2 (i32.const 1000))) (call $exit (i32.const 1))',
    ]) {
      const bytes = await tool(start);
      expect(WebAssembly.validate(bytes), start).toBe(false);
      await expect(runner.run(start, bytes, request('t', 1)), start).rejects.toMatchObject({
        code: 'E_REGISTRATION',
        message: /not a valid WebAssembly module/,
      });
    }
  });

  it('an export named like the reserved one but for a leading U+FEFF is another name', async () => {
    const bytes = await parse(`(module (memory (export "memory") 1) (global (export "\u{feff}${GROW_FAILED_EXPORT}") i32 (i32.const 0)))`);
    expect(watchGrowth(bytes)?.bytes).not.toBe(bytes);
  });
});

describe('what watchGrowth adds stays within the engine', () => {
  it("a module at V8's 100,000 exports is left as it is (one more would make it invalid)", async () => {
    const entries = Array.from({ length: 99_999 }, (_, i) => {
      const name = [...new TextEncoder().encode(`f${i}`)];
      return [...u32(name.length), ...name, 0x00, 0x00];
    });
    const memoryExport = [...u32(6), ...new TextEncoder().encode('memory'), 0x02, 0x00];
    const body = [0, 0x41, 0x01, 0x40, 0x00, 0x1a, 0x0b];
    const full = Uint8Array.from([
      ...HEADER,
      ...section(1, vec([[0x60, 0, 0]])),
      ...section(3, vec([[0]])),
      ...section(5, vec([[0x01, 1, 2]])),
      ...section(7, vec([...entries, memoryExport])),
      ...section(10, vec([[...u32(body.length), ...body]])),
    ]);
    expect(entries.length + 1).toBe(100_000);
    expect(WebAssembly.validate(full)).toBe(true);
    expect(watchGrowth(full)).toBeNull();
  });
});
