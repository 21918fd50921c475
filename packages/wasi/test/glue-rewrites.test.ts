/**
 * Corral rewrites jco's glue before it loads it (run.ts). Each rewrite is a
 * pattern over the pinned jco's output: if a jco upgrade changes that
 * output, these fail first, instead of a rewrite silently doing nothing.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { transpileComponent } from '@corral/wasi';
import { lighterHostCalls, loadGlue } from '@corral/wasi/internal';

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
