import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral, ComponentCache } from '@corral/node';

const FIXTURES = new URL('./fixtures/tools/', import.meta.url).pathname;

let corral: Corral;
beforeAll(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), 'corral-cache-'));
  corral = await Corral.create({ toolDirs: [FIXTURES], size: 2, cache: new ComponentCache(cacheDir) });
});
afterAll(() => corral?.close());

describe('the runtime, through real worker_threads sandboxes', () => {
  it('lists the bundled tools and the fixture folder; the not-wasm fixture is refused with a reason', () => {
    const names = corral.registry.list().map((t) => t.spec.name);
    expect(names).toEqual(expect.arrayContaining(['diff-summary', 'file-stats', 'echo', 'trap']));
    const refused = corral.loadErrors.find((e) => e.message.includes('not-wasm'));
    expect(refused?.code).toBe('E_REGISTRATION');
    expect(refused?.message).toMatch(/not a WebAssembly file/);
  });

  it('round-trips JSON through a component: what goes in on stdin comes out on stdout', async () => {
    const input = { text: 'héllo 世界', n: [1, 2, 3], nested: { ok: true } };
    const result = await corral.invoke('echo', input);
    expect(result.error).toBeNull();
    expect(result.ok).toBe(true);
    expect(result.output).toEqual(input);
    expect(result.exit_code).toBe(0);
    expect(result.tool).toBe('echo');
    expect(result.version).toBe('1.0.0');
  });

  it('answers an unknown tool with E_TOOL_NOT_FOUND naming what exists', async () => {
    const result = await corral.invoke('no-such-tool', {});
    expect(result.ok).toBe(false);
    expect(result.error?.code).toBe('E_TOOL_NOT_FOUND');
    expect(result.error?.message).toMatch(/diff-summary/);
    const badRange = await corral.invoke('echo@^2', {});
    expect(badRange.error?.code).toBe('E_TOOL_NOT_FOUND');
    expect(badRange.error?.message).toMatch(/1\.0\.0/);
  });

  it('refuses input that fails the schema before running anything, naming the JSON path', async () => {
    const result = await corral.invoke('diff-summary', { diff: 'x', language: 'fr' });
    expect(result.error?.code).toBe('E_INPUT_VALIDATION');
    expect(result.error?.message).toContain('/language');
    expect(result.exit_code).toBeNull();
    const missing = await corral.invoke('diff-summary', {});
    expect(missing.error?.code).toBe('E_INPUT_VALIDATION');
    expect(missing.error?.message).toMatch(/diff/);
  });

  it('reports a tool that prints non-JSON as E_UNEXPECTED_EXIT with what it printed', async () => {
    const result = await corral.invoke('not-json', {});
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.error?.message).toMatch(/not JSON/);
    expect(result.stdout_head).toContain('hello, this is not JSON');
  });

  it('reports a trap as E_UNEXPECTED_EXIT with the stderr tail, and the worker carries on', async () => {
    const result = await corral.invoke('trap', {});
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.error?.message).toMatch(/trap|unreachable/i);
    expect(result.stderr_tail).toContain('about to hit unreachable');
    const after = await corral.invoke('echo', { still: 'alive' });
    expect(after.output).toEqual({ still: 'alive' });
  });

  it('reports a non-zero exit with its stderr tail', async () => {
    const result = await corral.invoke('exit-fail', {});
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.exit_code).not.toBe(0);
    expect(result.stderr_tail).toContain('refusing on purpose');
  });

  it('stops a tool at its timeout with E_RESOURCE_EXHAUSTED and replaces the worker', async () => {
    const started = performance.now();
    const result = await corral.invoke('spin', {}, { timeoutMs: 300 });
    const elapsed = performance.now() - started;
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details.resource).toBe('time');
    expect(elapsed).toBeLessThan(300 + 5_000);
    const after = await corral.invoke('echo', { after: 'timeout' });
    expect(after.output).toEqual({ after: 'timeout' });
    expect(corral.executor.pool.workerCount).toBeLessThanOrEqual(2);
  });

  it('caps wasm memory at resources.memory_mb: a memory bomb gets E_RESOURCE_EXHAUSTED (memory)', async () => {
    const result = await corral.invoke('memory-bomb', {});
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details.resource).toBe('memory');
    expect(result.error?.details.peak_bytes).toBeLessThanOrEqual(32 * 2 ** 20);
    expect(result.stderr_tail).toMatch(/malloc failed after \d+ MiB/);
    expect((await corral.invoke('echo', { after: 'bomb' })).output).toEqual({ after: 'bomb' });
  });

  it('runs a tool file given directly, and refuses one that is not wasm', async () => {
    const { loadToolFiles, Registry } = await import('@corral/node');
    const tool = await loadToolFiles(new Registry(), join(FIXTURES, 'echo/tool-spec.json'), join(FIXTURES, 'echo/echo.wasm'));
    expect((await corral.invokeTool(tool, { direct: 1 })).output).toEqual({ direct: 1 });
    await expect(
      loadToolFiles(new Registry(), join(FIXTURES, 'not-wasm/tool-spec.json'), join(FIXTURES, 'not-wasm/not-wasm.wasm')),
    ).rejects.toMatchObject({ code: 'E_REGISTRATION' });
  });

  it('mounts a host folder read-only at /workspace for file-stats', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'corral-ws-'));
    await writeFile(join(dir, 'a.txt'), 'one two\nthree\n');
    const result = await corral.invoke(
      'file-stats',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: dir } }] },
    );
    expect(result.error).toBeNull();
    expect(JSON.stringify(result.output)).toContain('a.txt');
    expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('one two\nthree\n');
  });
});
