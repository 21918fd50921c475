/**
 * The same artifact, unchanged, under another WASI host: jco's own runner
 * (Node's preview2-shim), which reads stdin and writes stdout for real. This
 * is the portability promise in miniature (wasmtime is not installable on
 * these machines; `wasmtime run tool.wasm < input.json` is the same call).
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { runTool } from './helpers/corral.js';

const ROOT = new URL('..', import.meta.url).pathname;
const JCO = `${ROOT}node_modules/@bytecodealliance/jco/src/jco.js`;

function underJco(wasm: string, input: unknown): unknown {
  const r = spawnSync(process.execPath, [JCO, 'run', `${ROOT}${wasm}`], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('the bundled tools under another WASI host', () => {
  it('diff-summary gives the same output under jco run as under Corral', async () => {
    const input = JSON.parse(readFileSync(`${ROOT}wasm-tools/diff-summary/examples/example.diff.json`, 'utf8'));
    for (const language of ['en', 'zh']) {
      const ours = await runTool('diff-summary', { ...input, language });
      expect(ours.ok).toBe(true);
      expect(underJco('wasm-tools/diff-summary/diff-summary.wasm', { ...input, language })).toEqual(ours.output);
    }
  });
});
