/**
 * Corral rewrites jco's glue before it loads it (glue.ts). Each rewrite is a
 * pattern over the pinned jco's output: if a jco upgrade changes that
 * output, these fail first, instead of a rewrite silently doing nothing.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { componentEmbed, componentNew, parse } from '@bytecodealliance/jco';
import { ComponentRunner, PREPARED_FORMAT, prepareComponent, transpileComponent } from '@corral/wasi';
import {
  CappedSink,
  capHandleTables,
  checkExportNames,
  classify,
  guardLiftedLists,
  lighterHostCalls,
  loadGlue,
  MAX_LIVE_HANDLES,
  refuseAsyncBuiltins,
  rewriteGlue,
  TRAP_IMPORT,
  trapsEndTheInstance,
} from '@corral/wasi/internal';
import { GLUE_REWRITES } from '../src/prepared-format.js';

const GREP = new URL('../../../wasm-tools/grep/grep.wasm', import.meta.url);

describe('lighterHostCalls', () => {
  it("finds jco's debug log in the glue, and makes each call of it a statement that evaluates nothing", async () => {
    const { glue } = await transpileComponent(readFileSync(GREP), 'grep');
    const lighter = lighterHostCalls(glue);
    expect(lighter).toContain('const _debugLog = () => {};');
    expect(lighter).not.toContain('JCO_DEBUG');
    const calls = lighter.match(/_debugLog\(/g)!.length;
    expect(calls).toBeGreaterThan(50);
    expect(lighter.match(/^[ \t]*false && _debugLog\(/gm)).toHaveLength(calls);
  }, 60_000);

  it('makes the task functions do nothing in a glue where nothing reads the tasks, and every call still makes them', async () => {
    const { glue } = await transpileComponent(readFileSync(GREP), 'grep');
    const lighter = lighterHostCalls(glue);
    expect(lighter).toMatch(/^[ \t]*function startCurrentTask\(\) \{\}$/m);
    expect(lighter).toMatch(/^[ \t]*function endCurrentTask\(\) \{\}$/m);
    expect(lighter).not.toContain('ASYNC_CURRENT_TASK_IDS.push');
    // Calls name their component by number.
    expect(glue.match(/startCurrentTask\(\d/g)!.length).toBeGreaterThan(10);
    expect(lighter.match(/startCurrentTask\(\d/g)).toHaveLength(glue.match(/startCurrentTask\(\d/g)!.length);
    expect(lighter.match(/endCurrentTask\(\d/g)).toHaveLength(glue.match(/endCurrentTask\(\d/g)!.length);
    // The async helpers that would read them are left as they were (no call of them is made).
    expect(lighter).toMatch(/function prepareCall\(memoryIdx\) \{\n[\s\S]*?getCurrentTask\(/);
  }, 60_000);

  it('keeps the tasks where anything else reads them, each built when first read', async () => {
    const { glue } = await transpileComponent(readFileSync(GREP), 'grep');
    // As an async-lowered import's trampoline would: the task stack is read.
    for (const reader of ['prepareCall(0);', 'const id = ASYNC_CURRENT_TASK_IDS.at(-1);', 'const meta = getCurrentTask(0, 1n);']) {
      const reading = glue.replace(/(function trampoline\d+\([^)]*\) \{)/, `$1 ${reader}`);
      const lighter = lighterHostCalls(reading);
      expect(lighter, reader).not.toMatch(/function startCurrentTask\(\) \{\}/);
      expect(lighter, reader).toContain('const newTaskMeta = new CorralTaskMeta(nextId, componentIdx, isAsync, entryFnName);');
      expect(lighter, reader).toMatch(/class CorralTaskMeta \{[\s\S]*get task\(\) \{\n\s*return \(this\.#task \?\?= new AsyncTask\(/);
      expect(lighter.match(/new AsyncTask\(/g), reader).toHaveLength(reading.match(/new AsyncTask\(/g)!.length);
    }
    // So does a glue that reads the id startCurrentTask returns.
    const readsId = glue.replace(/(const (_\w+_currentTaskID) = startCurrentTask\([^)]*\);)/, '$1 endCurrentTask(0, $2);');
    expect(readsId).not.toBe(glue);
    expect(lighterHostCalls(readsId)).not.toMatch(/function startCurrentTask\(\) \{\}/);
  }, 60_000);
});

describe('checkExportNames', () => {
  /** A command component that also exports `names` (a function each) in an interface x:y/z and at its root. */
  const exportingComponent = (names: string[], root: string[] = []) =>
    parse(`(component
      (core module $m (func (export "run") (result i32) i32.const 0) (func (export "f")))
      (core instance $i (instantiate $m))
      (func $run (result (result)) (canon lift (core func $i "run")))
      (func $f (canon lift (core func $i "f")))
      (instance $runi (export "run" (func $run)))
      (export "wasi:cli/run@0.2.3" (instance $runi))
      (instance $x ${names.map((n) => `(export "${n}" (func $f))`).join(' ')})
      (export "x:y/z" (instance $x))
      ${root.map((n) => `(export "${n}" (func $f))`).join(' ')})`);
  /** Its glue, as jco writes it. */
  const exporting = async (names: string[], root: string[] = []) =>
    (await transpileComponent(await exportingComponent(names, root), 'names')).glue;

  it("refuses exports that jco names like its glue's functions or values, and lets other names be", async () => {
    // jco calls the wrapper of `start-current-task` startCurrentTask: its own helper's name.
    for (const [name, where] of [
      ['start-current-task', 'x:y/z'],
      ['run-next', 'root'],
      ['module0', 'x:y/z'],
      ['get-core-module', 'x:y/z'],
    ] as const) {
      const glue = where === 'root' ? await exporting(['f'], [name]) : await exporting([name]);
      expect(() => checkExportNames(glue, 'names'), name).toThrow(
        expect.objectContaining({ code: 'E_REGISTRATION', details: expect.objectContaining({ reason: 'export_shadows_glue' }) }),
      );
    }
    // Names jco keeps apart (f and f$1; its own exports0F becomes exports0F$1) and names of nothing in the glue are fine.
    const fine = await exporting(['f', 'summarize', 'run', 'exports0-f', 'handle-tables'], ['f']);
    expect(() => checkExportNames(fine, 'names')).not.toThrow();
  }, 60_000);

  // toUint64 is declared indented, at the top of instantiate, where the glue needs it to lower a
  // u64 from the host: an export of that name made the glue hand the clock's reading to the guest's code.
  it("refuses an export named like a helper jco declares for this component's imports (to-uint64)", async () => {
    const wit = `package corral:hostile;
package wasi:cli@0.2.0 { interface run { run: func() -> result; } }
package wasi:clocks@0.2.0 { interface monotonic-clock { type instant = u64; now: func() -> instant; } }
package x:y@0.1.0 { interface z { to-uint64: func() -> u64; } }
world w { import wasi:clocks/monotonic-clock@0.2.0; export wasi:cli/run@0.2.0; export x:y/z@0.1.0; }`;
    const core = `(module
  (import "wasi:clocks/monotonic-clock@0.2.0" "now" (func $now (result i64)))
  (memory (export "memory") 1)
  (func (export "x:y/z@0.1.0#to-uint64") (result i64) i64.const 7)
  (func (export "wasi:cli/run@0.2.0#run") (result i32) (drop (call $now)) i32.const 0))`;
    const bytes = await componentNew(await componentEmbed({ binary: await parse(core), witSource: wit, world: 'w' }), []);
    const { glue } = await transpileComponent(bytes, 'shadow');
    expect(glue).toMatch(/^ {2}const toUint64 = /m);
    expect(() => checkExportNames(glue, 'shadow')).toThrow(
      expect.objectContaining({ details: { reason: 'export_shadows_glue', exports: ['toUint64'] } }),
    );
  }, 60_000);

  it('refuses such a tool before it runs: E_REGISTRATION naming the export', async () => {
    const prepared = await transpileComponent(await exportingComponent(['start-current-task']), 'names');
    const run = new ComponentRunner().run('names', prepared, {
      toolName: 'names',
      stdin: new Uint8Array(),
      args: ['names'],
      env: {},
      mounts: [],
      outputLimitBytes: 1 << 20,
      memoryLimitBytes: 64 << 20,
      diskLimitBytes: 0,
    });
    await expect(run).rejects.toMatchObject({
      code: 'E_REGISTRATION',
      details: { reason: 'export_shadows_glue', exports: ['startCurrentTask'] },
    });
  }, 60_000);
});

describe('capHandleTables', () => {
  it("guards every place jco's glue adds a slot, with a count of the instance's own", async () => {
    const { glue } = await transpileComponent(readFileSync(GREP), 'grep');
    const creators = glue.match(/function rscTableCreate(?:Own|Borrow) \(/g)!.length;
    expect(creators).toBeGreaterThan(0);
    expect(glue.match(/^\s*insert\(val\) \{$/gm)).toHaveLength(1); // RepTable's
    const capped = capHandleTables(lighterHostCalls(glue), 'grep');
    const guards = capped.match(/(?:if \(free === 0\)|if \(freeIdx === 0\)) \{ if \(\+\+__corralHandleSlots > 65536\) throw/g) ?? [];
    expect(guards).toHaveLength(creators + 1);
    expect(MAX_LIVE_HANDLES).toBe(65536);
    // A handle the guest drops must be one of the table's: past its end, the table grew without bound.
    expect(capped).toMatch(
      /function rscTableRemove \(table, handle\) \{ if \(!\(Number\.isInteger\(handle\) && handle > 0 && handle \* 2 \+ 1 < table\.length\)\) throw new TypeError\('Invalid handle'\);/,
    );
    // Declared first thing in instantiate: each instance (each call) counts from zero.
    expect(capped).toMatch(/^export function instantiate\([^\n]*\{\n {2}let __corralHandleSlots = 0;\n/m);
  }, 60_000);

  it('leaves a glue without handle tables alone, and refuses one whose tables it cannot bound', () => {
    const plain = 'export function instantiate() { return {}; }\n';
    expect(capHandleTables(plain)).toBe(plain);
    const otherShape =
      'export function instantiate() {\n  const T_FLAG = 1 << 30;\n  function rscTableCreateOwn (table, rep) {\n    table.push(0, rep);\n  }\n}\n';
    expect(() => capHandleTables(otherShape, 'odd')).toThrow(expect.objectContaining({ code: 'E_REGISTRATION' }));
  });

  it("mends jco's borrow table free list, which read the next free slot from the wrong index", () => {
    const borrow = [
      'export function instantiate() {',
      '  const T_FLAG = 1 << 30;',
      '  function rscTableCreateBorrow (table, rep) {',
      '    const free = table[0] & ~T_FLAG;',
      '    if (free === 0) {',
      '      table.push(scopeId);',
      '      table.push(rep);',
      '      return (table.length >> 1) - 1;',
      '    }',
      '    table[0] = table[free];',
      '    table[free << 1] = scopeId;',
      '    table[(free << 1) + 1] = rep;',
      '    return free;',
      '  }',
      '}',
    ].join('\n');
    const mended = capHandleTables(borrow);
    expect(mended).toContain('table[0] = table[free << 1];');
    expect(mended).not.toContain('table[0] = table[free];');
    expect(mended).toMatch(/if \(free === 0\) \{ if \(\+\+__corralHandleSlots > 65536\)/);
  });

  it('throws, past the cap, an error the run classifies as E_RESOURCE_EXHAUSTED (handles)', async () => {
    const glue = [
      'export function instantiate() {',
      '  const T_FLAG = 1 << 30;',
      '  function rscTableCreateOwn (table, rep) {',
      '    const free = table[0] & ~T_FLAG;',
      '    if (free === 0) {',
      '      table.push(0);',
      '      table.push(rep | T_FLAG);',
      '      return (table.length >> 1) - 1;',
      '    }',
      '    return free;',
      '  }',
      '  const table = [T_FLAG, 0];',
      '  return (n) => { for (let i = 1; i <= n; i++) rscTableCreateOwn(table, i); return table.length >> 1; };',
      '}',
    ].join('\n');
    const make = (await loadGlue(capHandleTables(glue))) as unknown as () => (n: number) => number;
    expect(make()(MAX_LIVE_HANDLES)).toBe(MAX_LIVE_HANDLES + 1);
    let thrown: unknown;
    try {
      make()(MAX_LIVE_HANDLES + 1);
    } catch (err) {
      thrown = err;
    }
    const end = classify(thrown, 'leaky', new CappedSink(1024, 'tail'));
    expect(end.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'handles', limit: MAX_LIVE_HANDLES } });
  });
});

describe('trapsEndTheInstance', () => {
  // A guest that catches what its host calls throw, as wasm exception handling lets it.
  const glue = [
    'export function instantiate(getCoreModule, imports) {',
    '  let ran = 0;',
    '  function trampoline0(n) {',
    '    ran++;',
    "    if (n > 1) throw new Error('refused ' + n);",
    '    return n;',
    '  }',
    '  const caught = [];',
    '  for (const n of [1, 2, 3, 1]) {',
    '    try { trampoline0(n); } catch (e) { caught.push(e.message); }',
    '  }',
    '  return { ran, caught };',
    '}',
  ].join('\n');

  it('makes the first error that leaves a host call final: every later call throws it before running, and the host is told once', async () => {
    const rewritten = trapsEndTheInstance(glue);
    expect(rewritten.match(/__corralTrap !== undefined\) throw/g)).toHaveLength(1);
    const instantiate = (await loadGlue(rewritten)) as unknown as (g: unknown, i: unknown) => { ran: number; caught: string[] };
    const told: string[] = [];
    const imports = { [TRAP_IMPORT]: { trapped: (e: Error) => told.push(e.message) } };
    expect(instantiate(undefined, imports)).toEqual({ ran: 2, caught: ['refused 2', 'refused 2', 'refused 2'] });
    expect(told).toEqual(['refused 2']);
    // Each instance starts clean.
    expect(instantiate(undefined, imports).ran).toBe(2);
    // Unguarded, the guest went on calling the host.
    const plain = (await loadGlue(glue)) as unknown as (g: unknown, i: unknown) => { ran: number };
    expect(plain(undefined, {}).ran).toBe(4);
  });

  it("wraps every trampoline of the pinned jco's glue, and refuses a glue whose trampolines it cannot wrap", async () => {
    const { glue: real } = await transpileComponent(readFileSync(GREP), 'grep');
    const trampolines = real.match(/function trampoline\d+\(/g)!.length;
    expect(trampolines).toBeGreaterThan(10);
    expect(trapsEndTheInstance(real).match(/^\s*if \(__corralTrap !== undefined\) throw __corralTrap\.error;$/gm)).toHaveLength(
      trampolines,
    );
    const oneLine = 'export function instantiate(getCoreModule, imports) {\n  function trampoline0() { return 1; }\n}\n';
    expect(() => trapsEndTheInstance(oneLine, 'odd')).toThrow(
      expect.objectContaining({ code: 'E_REGISTRATION', details: { reason: 'unguarded_host_calls' } }),
    );
  }, 60_000);
});

describe('refuseAsyncBuiltins', () => {
  /** A command component whose core module imports `func` (a canon built-in, as WAT) as "" "f" with type `type` and calls it once. */
  const calling = (canon: string, type: string, call: string) =>
    parse(`(component
      (type $r (resource (rep i32)))
      (core module $mm (memory (export "memory") 1))
      (core instance $mi (instantiate $mm))
      (alias core export $mi "memory" (core memory $mem))
      (core func $f ${canon})
      (core module $m (import "" "f" (func $f ${type})) (import "" "memory" (memory 1))
        (func (export "run") (result i32) ${call} i32.const 0))
      (core instance $i (instantiate $m (with "" (instance (export "f" (func $f)) (export "memory" (memory $mem))))))
      (func $run (result (result)) (canon lift (core func $i "run")))
      (instance $runi (export "run" (func $run)))
      (export "wasi:cli/run@0.2.3" (instance $runi)))`);

  it('refuses the async built-ins jco binds straight to the guest, naming them', async () => {
    for (const [canon, type, call, builtin] of [
      [
        '(canon error-context.new (memory $mem))',
        '(param i32 i32) (result i32)',
        '(drop (call $f (i32.const 0) (i32.const 1)))',
        'errCtxNew',
      ],
      ['(canon waitable-set.new)', '(result i32)', '(drop (call $f))', 'waitableSetNew'],
    ] as const) {
      const { glue } = await transpileComponent(await calling(canon, type, call), 'async');
      expect(() => refuseAsyncBuiltins(glue, 'async'), builtin).toThrow(
        expect.objectContaining({ code: 'E_REGISTRATION', details: { reason: 'unsupported_builtins', builtins: [builtin] } }),
      );
    }
  }, 60_000);

  it('refuses resources passed between components nested in one, which jco binds the same way', async () => {
    const nested = await parse(`(component
      (type $r (resource (rep i32)))
      (component $B
        (import "r" (type $r (sub resource)))
        (core func $drop (canon resource.drop $r))
        (core module $bm (import "" "drop" (func $drop (param i32))) (func (export "take") (param i32) (call $drop (local.get 0))))
        (core instance $bi (instantiate $bm (with "" (instance (export "drop" (func $drop))))))
        (func (export "take") (param "x" (own $r)) (canon lift (core func $bi "take"))))
      (instance $b (instantiate $B (with "r" (type $r))))
      (alias export $b "take" (func $take))
      (core func $new (canon resource.new $r))
      (core func $take (canon lower (func $take)))
      (core module $m (import "" "new" (func $new (param i32) (result i32))) (import "" "take" (func $take (param i32)))
        (memory (export "memory") 1)
        (func (export "run") (result i32) (call $take (call $new (i32.const 7))) i32.const 0))
      (core instance $i (instantiate $m (with "" (instance (export "new" (func $new)) (export "take" (func $take))))))
      (func $run (result (result)) (canon lift (core func $i "run")))
      (instance $runi (export "run" (func $run)))
      (export "wasi:cli/run@0.2.3" (instance $runi)))`);
    const { glue } = await transpileComponent(nested, 'nested');
    expect(() => refuseAsyncBuiltins(glue, 'nested')).toThrow(
      expect.objectContaining({ details: { reason: 'unsupported_builtins', builtins: ['resourceTransferOwn'] } }),
    );
  }, 60_000);

  it('keeps resource.new, as a function trampoline that the trap guard wraps and the handle cap counts', async () => {
    const { glue } = await transpileComponent(
      await calling('(canon resource.new $r)', '(param i32) (result i32)', '(drop (call $f (i32.const 5)))'),
      'rnew',
    );
    expect(glue).toMatch(/const trampoline\d+ = rscTableCreateOwn\.bind\(null, handleTable\d+\);/);
    const kept = refuseAsyncBuiltins(glue, 'rnew');
    expect(kept).not.toMatch(/const trampoline\d+ =/);
    expect(kept).toMatch(/function trampoline\d+\(rep\) \{\n\s*return rscTableCreateOwn\(handleTable\d+, rep\);\n\s*\}/);
    expect(trapsEndTheInstance(kept)).toMatch(/function trampoline\d+\(rep\) \{\n\s*if \(__corralTrap !== undefined\)/);
  }, 60_000);
});

describe('guardLiftedLists', () => {
  it("counts every string jco's glue decodes and every byte list it copies, and refuses a glue that does either another way", async () => {
    const { glue } = await transpileComponent(readFileSync(GREP), 'grep');
    const decodes = glue.match(/utf8Decoder\.decode\(/g)!.length;
    const copies = glue.match(/memory\d+\.buffer\.slice\(/g)!.length;
    const guarded = guardLiftedLists(glue);
    expect(guarded.match(/utf8Decoder\.decode\(__corralStrings\(new Uint8Array\(memory\d+\.buffer, ptr\d+, len\d+\)\)\)/g)).toHaveLength(
      decodes,
    );
    expect(guarded.match(/\.buffer\.slice\(ptr\d+, ptr\d+ \+ __corralBytes\(len\d+ \* \d+\)\)/g)).toHaveLength(copies);
    const odd = 'export function instantiate() {\n  return utf8Decoder.decode(bytes);\n}\n';
    expect(() => guardLiftedLists(odd, 'odd')).toThrow(expect.objectContaining({ details: { reason: 'unguarded_host_calls' } }));
  }, 60_000);
});

describe('rewriteGlue', () => {
  it('is named by the SHA-256 of the rewrites, so caches of glue rewritten by other code are never used', () => {
    const source = readFileSync(new URL('../src/glue.ts', import.meta.url));
    const hash = createHash('sha256').update(source).digest('hex').slice(0, 12);
    expect(GLUE_REWRITES, `glue.ts changed: set GLUE_REWRITES in prepared-format.ts to '${hash}'`).toBe(hash);
    expect(PREPARED_FORMAT).toContain(GLUE_REWRITES);
  });

  it('rewrites a glue once, when the component is prepared, and refuses glue another version rewrote', async () => {
    const wasm = readFileSync(GREP);
    const [{ glue }, prepared] = await Promise.all([transpileComponent(wasm, 'grep'), prepareComponent(wasm, 'grep')]);
    expect(prepared.glue).toBe(rewriteGlue(glue, 'grep'));
    expect(prepared.glue.startsWith(`// rewritten by corral ${GLUE_REWRITES}\n`)).toBe(true);
    expect(prepared.glue).toContain('__corralTrap');
    // Rewritten by this code: kept as it is, not guarded twice.
    expect(rewriteGlue(prepared.glue, 'grep')).toBe(prepared.glue);
    const other = prepared.glue.replace(GLUE_REWRITES, '000000000000');
    expect(() => rewriteGlue(other, 'grep')).toThrow(expect.objectContaining({ details: { reason: 'prepared_by_other_version' } }));
  }, 60_000);

  it("bounds a host call's byte lists by the memory limit the glue is loaded with", async () => {
    // A host call copying a list of bytes out of guest memory, as jco lifts a list<u8>.
    const glue = guardLiftedLists(
      [
        'const memory0 = { buffer: new ArrayBuffer(4096) };',
        'function trampoline0(ptr0, len0) {',
        '  return memory0.buffer.slice(ptr0, ptr0 + len0 * 1).byteLength;',
        '}',
        'export function instantiate() { return trampoline0; }',
        '',
      ].join('\n'),
    );
    for (const source of [glue, `await 0;\n${glue}`]) {
      // The second only parses as a module, and is imported as one.
      const lift = ((await loadGlue(source, 1500)) as unknown as () => (ptr: number, len: number) => number)();
      expect(lift(0, 1500)).toBe(1500);
      expect(() => lift(0, 1501)).toThrow('list arguments of more than 1500 bytes');
      const roomy = ((await loadGlue(source, 4096)) as unknown as () => (ptr: number, len: number) => number)();
      expect(roomy(0, 4096)).toBe(4096);
    }
  });
});

describe('loadGlue', () => {
  // The test glues below take no arguments; jco's instantiate takes three.
  const call = (instantiate: unknown) => (instantiate as () => unknown)();

  it("evaluates the pinned jco's glue as a function, with top-level state of its own for each load", async () => {
    const { glue } = await transpileComponent(readFileSync(GREP), 'grep');
    const [a, b] = [await loadGlue(glue), await loadGlue(glue)];
    expect(a).toBeTypeOf('function');
    // An import of the same data: URL hands back the one module it loaded first.
    expect(a).not.toBe(b);
  }, 60_000);

  it('gives each load its own copy of the top-level state', async () => {
    const glue = 'let calls = 0;\nexport function instantiate() { return ++calls; }\n';
    const [a, b] = [await loadGlue(glue), await loadGlue(glue)];
    expect([call(a), call(a), call(b)]).toEqual([1, 2, 1]);
  });

  it('imports a glue that only parses as a module, or has more exports, as a module', async () => {
    const awaiting = await loadGlue('const ready = await Promise.resolve(7);\nexport function instantiate() { return ready; }\n');
    expect(call(awaiting)).toBe(7);
    const more = await loadGlue('export const other = 1;\nexport function instantiate() { return other + 1; }\n');
    expect(call(more)).toBe(2);
  });

  it('lets a glue that does not compile fail as it would as a module', async () => {
    await expect(loadGlue('export function instantiate() { return ; ) }\n')).rejects.toThrow(SyntaxError);
  });
});
