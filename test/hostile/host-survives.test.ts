/**
 * Tools that took, or could take, the whole host process down. Each runs
 * in a child process (child.ts), and each test asserts that the child
 * survived (exit status 0), the call's error code, and that nothing in a
 * folder beside the tool changed. Sources: test/fixtures/wat/build.mjs.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from '@bytecodealliance/jco';
import { runInChild, treeHash, type ChildRun } from './child.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const TOOLS = new URL('../fixtures/tools/', import.meta.url).pathname;

let base: string;
let before: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'corral-survives-'));
  mkdirSync(join(base, 'outside'));
  writeFileSync(join(base, 'outside', 'keep.txt'), 'a sibling of the sandbox\n');
  before = treeHash(base);
});
afterEach(() => {
  expect(treeHash(base), 'a folder beside the sandbox changed').toBe(before);
  rmSync(base, { recursive: true, force: true });
});

/** The child survived, and made exactly one call: its result. */
function only(run: ChildRun) {
  expect(run.stderr).not.toMatch(/FATAL ERROR/);
  expect(run.signal).toBeNull();
  expect(run.status).toBe(0);
  expect(run.results).toHaveLength(1);
  return run.results[0]!;
}

describe('growable structures are capped', () => {
  // Before table caps: "FATAL ERROR: Reached heap limit" and SIGABRT.
  it('60 funcref tables grown by 10 million entries each (preview1): table.grow is refused, the tool says so and exits 1', async () => {
    const result = only(await runInChild([{ tool: 'p1-table-bomb' }]));
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.exit_code).toBe(1);
    expect(result.stderr_tail).toBe('table-bomb: table.grow was refused\n');
  }, 60_000);

  it('the same bomb as a component with no imports: the refused grow traps, E_UNEXPECTED_EXIT', async () => {
    const result = only(await runInChild([{ tool: 'table-bomb' }]));
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.error?.details).toMatchObject({ reason: 'trap', trap: true, cause: 'unreachable' });
  }, 60_000);

  it('tables that ask for 600 million entries up front are refused at load: E_RESOURCE_EXHAUSTED (memory)', async () => {
    const result = only(await runInChild([{ tool: 'p1-table-min-bomb' }]));
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details).toEqual({ resource: 'memory', table_entries: 600_000_000, max_table_entries: 16 * 8192 });
    expect(result.exit_code).toBeNull();
  }, 60_000);

  it('wasm GC types are refused at load, before any engine that has GC sees them: E_REGISTRATION', async () => {
    const result = only(await runInChild([{ tool: 'p1-gc-bomb' }]));
    expect(result.error?.code).toBe('E_REGISTRATION');
    expect(result.error?.message).toMatch(/^p1-gc-bomb uses wasm GC types \(an array\)/);
  }, 60_000);
});

describe("the sandbox worker's heap", () => {
  it('one-byte writes up to a 4 MiB output cap fit in a 64 MB worker heap: E_RESOURCE_EXHAUSTED (output), quickly', async () => {
    const result = only(
      await runInChild([{ tool: 'p1-byte-flood', options: { outputLimitBytes: 4 * 2 ** 20 } }], {
        corral: { resourceLimits: { maxOldGenerationSizeMb: 64 } },
      }),
    );
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details.resource).toBe('output');
    expect(result.ms).toBeLessThan(15_000);
  }, 60_000);

  it('a worker that reaches its heap limit is stopped: E_RESOURCE_EXHAUSTED (memory), and the host carries on', async () => {
    // 2 MB cannot even load the worker's code: every worker started dies of it.
    const run = await runInChild([{ tool: 'echo' }, { tool: 'echo' }], {
      toolDirs: [TOOLS],
      corral: { resourceLimits: { maxOldGenerationSizeMb: 2 } },
    });
    expect(run.status).toBe(0);
    expect(run.results).toHaveLength(2);
    for (const result of run.results) {
      expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
      expect(result.error?.details).toMatchObject({ resource: 'memory', worker_heap_limit_mb: 2 });
    }
  }, 60_000);

  // The tables behind the leaked handles grow by doubling; with a 64 or 256
  // MB worker limit, a doubling bigger than the 16 MB Node grants past the
  // limit aborted the host, and with 1 GB it did once a change made host
  // calls leave less garbage (ab57c69). The glue now caps what a component
  // holds (glue.ts), long before any heap limit.
  it('a tool that leaks stream handles is stopped at 65,536 held: E_RESOURCE_EXHAUSTED (handles), the host lives', async () => {
    const result = only(await runInChild([{ tool: 'handle-leak', options: { timeoutMs: 60_000 } }]));
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details).toEqual({ resource: 'handles', limit: 65_536 });
  }, 90_000);

  // 120,000 handles in a call, at most 40,000 held: dropped handles free
  // their places, and the count starts again with each call.
  it('a tool that takes and drops 120,000 handles in a call runs, twice on one worker (the child has one)', async () => {
    const run = await runInChild([{ tool: 'handle-churn' }, { tool: 'handle-churn' }]);
    expect(run.status).toBe(0);
    expect(run.results.map((r) => [r.error, r.output])).toEqual([
      [null, { ran: true }],
      [null, { ran: true }],
    ]);
  }, 90_000);

  // jco's rscTableRemove took a handle past the table's end as an empty slot:
  // dropping 1000, 1001, … grew the table until V8 killed the host process
  // ("invalid size error", SIGTRAP), and a slot freed that way was taken
  // again without being counted against the handle cap.
  it('a tool that drops handles it never had traps at the first: Invalid handle, the host lives', async () => {
    const result = only(await runInChild([{ tool: 'bogus-drop', options: { timeoutMs: 60_000 } }]));
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.error?.details).toMatchObject({ cause: 'Invalid handle' });
  }, 90_000);

  // No import needed: a component-model async built-in whose state the glue
  // keeps in a table of its own (a RepTable), outside the handle tables; the
  // same for error contexts (two Maps). Such built-ins are refused at load.
  it('a tool that makes waitable sets forever is refused at load: E_REGISTRATION (unsupported_builtins)', async () => {
    const result = only(await runInChild([{ tool: 'waitable-leak', options: { timeoutMs: 60_000 } }]));
    expect(result.error?.code).toBe('E_REGISTRATION');
    expect(result.error?.details).toEqual({ reason: 'unsupported_builtins', builtins: ['waitableSetNew'] });
  }, 90_000);

  // Where wasm exception handling runs (Deno here; Chromium too), a tool can
  // catch the error of a host call and call again. Each handle refused at
  // the cap left its host object in the glue's Map, and the tool went on
  // past the cap and printed {"ran":true}. A trap in a host call now ends
  // the instance: every later host call throws it again, and the call
  // fails with it. Node 20 cannot compile try_table: the tool is refused.
  it('a tool that catches the trap of a host call and carries on still ends with it (Deno), and is refused where try_table is unknown (Node 20)', async () => {
    const deno = only(
      await runInChild([{ tool: 'catches-traps', options: { timeoutMs: 60_000 } }], {
        runtime: [join(ROOT, 'node_modules/.bin/deno'), 'run', '-A'],
      }),
    );
    expect(deno.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(deno.error?.details).toEqual({ resource: 'handles', limit: 65_536 });
    expect(deno.output).toBeNull();
    const node = only(await runInChild([{ tool: 'catches-traps' }]));
    expect(node.error?.code).toBe('E_REGISTRATION');
    expect(node.error?.message).toMatch(/not valid WebAssembly/);
  }, 120_000);

  // The glue makes the path a string before any host code can refuse it;
  // with a 256 MB worker limit, copying it as a property key aborted the
  // host. Strings a host call is given are now bounded before they are decoded.
  it('a 400 MiB path is refused before the glue decodes it; the host lives', async () => {
    const result = only(await runInChild([{ tool: 'string-bomb' }]));
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.error?.details).toMatchObject({ cause: 'string arguments of more than 1048576 bytes' });
  }, 90_000);
});

describe('what the glue lifts for a host call, and when it may be called', () => {
  // The element count read a list's length as a signed number: -2^31 took
  // it below zero, and the next list was lifted uncounted (250 million
  // elements killed the host process).
  it('a list of negative length does not switch the element count off', async () => {
    const result = only(await runInChild([{ tool: 'negative-list' }]));
    expect(result.error?.details).toMatchObject({ cause: 'a list argument of more than 65536 elements' });
  }, 60_000);

  // 65,536 strings may all name the same bytes: 400 MB each aborted the host at its heap limit.
  it('strings that alias one stretch of memory count every time: over 1 MiB a host call, the call traps', async () => {
    const result = only(await runInChild([{ tool: 'aliased-strings' }]));
    expect(result.error?.details).toMatchObject({ cause: 'string arguments of more than 1048576 bytes' });
  }, 60_000);

  // The glue lowers a host result through the guest's cabi_realloc, which could call the host
  // again; each level held a buffer as large as the memory limit.
  it('a call into the host from the cabi_realloc that receives a result traps', async () => {
    const result = only(await runInChild([{ tool: 'reentrant-realloc' }]));
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.error?.details).toMatchObject({
      cause: expect.stringMatching(/^a call into the host while the host was still answering another/),
    });
  }, 60_000);
});

describe('pooled memories (memory-pool.ts)', () => {
  // A reused memory is zeroed, which touches every page; a fresh one's pages
  // cost nothing until written. A tool that declared 2 GiB and wrote 2 bytes
  // left its worker (and so the host process) 2.1 GB resident, and its next
  // call spent 13 s zeroing, under its own timeout.
  it('a tool that declares 2 GiB and touches none of it costs neither resident memory nor time on its next call', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-big-min-'));
    try {
      mkdirSync(join(dir, 'big-min'));
      const wat = `(module
        (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
        (memory (export "memory") 32768)
        (data (i32.const 16) "{}")
        (func (export "_start")
          (i32.store (i32.const 0) (i32.const 16)) (i32.store (i32.const 4) (i32.const 2))
          (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))`;
      writeFileSync(join(dir, 'big-min', 'big-min.wasm'), await parse(wat));
      writeFileSync(
        join(dir, 'big-min', 'tool-spec.json'),
        JSON.stringify({
          name: 'big-min',
          version: '1.0.0',
          description: 'declares 2 GiB of memory and writes 2 bytes',
          kind: 'module',
          component: 'big-min.wasm',
          input_schema: { type: 'object' },
          resources: { memory_mb: 2048, timeout_ms: 10_000 },
        }),
      );
      const run = await runInChild([{ tool: 'big-min' }, { tool: 'big-min' }, { tool: 'big-min' }], { toolDirs: [dir] });
      expect(run.status).toBe(0);
      for (const result of run.results) expect(result.error).toBeNull();
      expect(run.maxRssMb).toBeLessThan(1024);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('workers do not inherit the host process', () => {
  // Workers inherited the parent's execArgv: `--input-type=module` made every
  // worker fail to start, and an --import hook ran inside the sandbox.
  it('from `node --import HOOK --input-type=module -e SCRIPT`, calls work and the hook stays out of the sandbox', () => {
    const hook = `data:text/javascript,${encodeURIComponent("import { isMainThread } from 'node:worker_threads'; if (!isMainThread) throw new Error('host hook ran in a sandbox worker');")}`;
    const script = `
      import { Corral } from '@corral/node';
      const corral = await Corral.create({ bundled: false, toolDirs: [${JSON.stringify(TOOLS)}], size: 1, store: false, cache: false });
      const result = await corral.invoke('echo', { from: 'eval' });
      console.log(JSON.stringify({ ok: result.ok, output: result.output, error: result.error }));
      await corral.close();`;
    const child = spawnSync(process.execPath, ['--import', hook, '--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual({ ok: true, output: { from: 'eval' }, error: null });
  }, 90_000);
});
