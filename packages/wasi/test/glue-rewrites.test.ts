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
  it("finds jco's debug log and per-call task in the glue, and leaves the rest alone", async () => {
    const { glue } = await transpileComponent(readFileSync(GREP), 'grep');
    const lighter = lighterHostCalls(glue);
    expect(lighter).toContain('const _debugLog = () => {};');
    expect(lighter).not.toContain('JCO_DEBUG');
    expect(lighter).toContain('const newTaskMeta = new CorralTaskMeta(nextId, componentIdx, isAsync, entryFnName);');
    expect(lighter).toMatch(/class CorralTaskMeta \{[\s\S]*get task\(\) \{\n\s*return \(this\.#task \?\?= new AsyncTask\(/);
    expect(lighter.match(/new AsyncTask\(/g)).toHaveLength(glue.match(/new AsyncTask\(/g)!.length);
    // Every trampoline still starts and ends its task.
    expect(lighter.match(/startCurrentTask\(/g)).toHaveLength(glue.match(/startCurrentTask\(/g)!.length);
    expect(lighter.match(/endCurrentTask\(/g)).toHaveLength(glue.match(/endCurrentTask\(/g)!.length);
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
