/**
 * Corral rewrites jco's glue before it loads it (run.ts). Each rewrite is a
 * pattern over the pinned jco's output: if a jco upgrade changes that
 * output, these fail first, instead of a rewrite silently doing nothing.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { transpileComponent } from '@corral/wasi';
import { lighterHostCalls } from '@corral/wasi/internal';

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
