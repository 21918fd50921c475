/**
 * ComponentRunner.prepareNext: after a call, an instance of the same
 * component made for the next one, off that call's path. It must serve the
 * next call as a fresh instance would (that call's stdin, arguments and
 * environment, zeroed memory), serve one call only, and be made only where
 * instantiating runs none of the tool's code.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ComponentRunner, transpileComponent, type RunRequest } from '@corral/wasi';
import { mayRunAtInstantiation } from '@corral/wasi/internal';

const TOOLS = new URL('../../../test/fixtures/tools/', import.meta.url);
const component = (name: string) => transpileComponent(readFileSync(new URL(`${name}/${name}.wasm`, TOOLS)), name);

function request(toolName: string, stdin: string, env: Record<string, string> = {}): RunRequest {
  return {
    toolName,
    stdin: new TextEncoder().encode(stdin),
    args: [toolName],
    env: { TZ: 'UTC', ...env },
    mounts: [],
    outputLimitBytes: 1 << 20,
    memoryLimitBytes: 64 << 20,
    diskLimitBytes: 0,
  };
}
const output = (r: { stdout: Uint8Array }) => JSON.parse(new TextDecoder().decode(r.stdout)) as Record<string, unknown>;

// Loaded machines (CI) make instantiation slower than the default bound; these tests are about what the instance does, not when.
const options = { aheadMaxMs: 1000 };

describe('an instance made ahead of its call', () => {
  it('finds memory zeroed and of the same size, call after call, as a fresh instance does', async () => {
    const runner = new ComponentRunner(options);
    const prepared = await component('residue');
    const outputs = [];
    const made = [];
    for (const input of ['{}', '{}', '{"grow":true}', '{}', '{}']) {
      outputs.push(output(await runner.run('residue', prepared, request('residue', input))));
      made.push(runner.prepareNext());
    }
    expect(made).toEqual([true, true, true, true, true]);
    for (const out of outputs) expect(out).toMatchObject({ heap_dirty: 0, bss_dirty: 0 });
    expect(outputs[2]!.pages_at_end as number).toBeGreaterThan((outputs[2]!.pages_at_start as number) + 100);
    expect(new Set(outputs.map((o) => o.pages_at_start)).size).toBe(1);
  }, 60_000);

  it('sees the environment of the call it serves, not of the call after which it was made', async () => {
    const runner = new ComponentRunner(options);
    const prepared = await component('env-dump');
    const seen = [];
    for (const who of ['first', 'second', 'third']) {
      seen.push(output(await runner.run('env-dump', prepared, request('env-dump', '{}', { WHO: who }))));
      expect(runner.prepareNext()).toBe(true);
    }
    expect(seen.map((env) => env.WHO)).toEqual(['first', 'second', 'third']);
  }, 60_000);

  it('is dropped when the next call is of another tool, which runs in a fresh instance of its own', async () => {
    const runner = new ComponentRunner(options);
    const [envDump, residue] = await Promise.all([component('env-dump'), component('residue')]);
    expect(output(await runner.run('env-dump', envDump, request('env-dump', '{}', { WHO: 'a' }))).WHO).toBe('a');
    expect(runner.prepareNext()).toBe(true);
    expect(output(await runner.run('residue', residue, request('residue', '{}')))).toMatchObject({ heap_dirty: 0 });
    expect(output(await runner.run('env-dump', envDump, request('env-dump', '{}', { WHO: 'b' }))).WHO).toBe('b');
  }, 60_000);

  it('is not made when told not to (aheadMaxMs 0), nor before any call', async () => {
    const runner = new ComponentRunner({ aheadMaxMs: 0 });
    expect(runner.prepareNext()).toBe(false);
    const prepared = await component('env-dump');
    await runner.run('env-dump', prepared, request('env-dump', '{}'));
    expect(runner.prepareNext()).toBe(false);
  }, 60_000);
});

describe('what an instance keeps of the component it came from', () => {
  it('names the tool of the call in its errors, not the tool whose call first compiled the shared code', async () => {
    // Two tools with the same wasm share compiled code under one key; a glue that asks for a core
    // module the prepared component lacks fails each call with a message naming its tool.
    const whole = await component('env-dump');
    const modules = Object.fromEntries(Object.entries(whole.modules).slice(1));
    const damaged = { ...whole, modules };
    const runner = new ComponentRunner(options);
    for (const tool of ['alpha', 'beta']) {
      const result = await runner.run('shared', damaged, request(tool, '{}'));
      expect(result.error?.message, tool).toMatch(new RegExp(`^${tool}: the prepared component is damaged`));
    }
  }, 60_000);

  it('keeps nothing of a component the code cache dropped', async () => {
    // A budget of one byte keeps one tool's code: loading residue drops env-dump's.
    const runner = new ComponentRunner({ ...options, cacheBytes: 1 });
    const [envDump, residue] = await Promise.all([component('env-dump'), component('residue')]);
    await runner.run('env-dump', envDump, request('env-dump', '{}'));
    await runner.preload('residue', residue, 64 << 20, 'residue');
    expect(runner.has('env-dump')).toBe(false);
    expect(runner.prepareNext()).toBe(false);
  }, 60_000);
});

describe('the time an instance made ahead takes', () => {
  // Made ahead at once after a call, an instance first zeroes the memories that call used, which a
  // call's own instantiation finds zeroed already; a busy machine slows it too. The runner's clock is
  // the test's here: each reading moves it on by `step` ms, so an instantiation takes `step`.
  it('stops them for a component when three in a row took longer than allowed, tries one every 50 calls, and resumes when it is quick', async () => {
    let clock = 0;
    let step = 0;
    const runner = new ComponentRunner({ aheadMaxMs: 1, now: () => (clock += step) });
    const prepared = await component('echo');
    const made: boolean[] = [];
    const call = async (aheadMs: number) => {
      step = 0.1; // the call's own instantiation, when it makes one: quick
      const result = await runner.run('echo', prepared, request('echo', '{}'));
      expect(result.exitCode, JSON.stringify(result.error)).toBe(0);
      step = aheadMs;
      made.push(runner.prepareNext());
      await new Promise((resolve) => setImmediate(resolve)); // the instance made ahead is timed when its exports settle
    };
    for (let i = 0; i < 56; i++) await call(5);
    const trace = made.map(Number).join('');
    // Three slow ones in a row, then none for 49 calls, then a trial, slow again, which stops them again.
    expect(trace).toBe(`111${'0'.repeat(49)}1000`);
    // 50 calls after that trial, a quick one resumes them: one for every call after it.
    for (let i = 0; i < 52; i++) await call(0.5);
    expect(made.slice(56).map(Number).join('')).toBe(`${'0'.repeat(46)}111111`);
  }, 60_000);
});

describe('mayRunAtInstantiation', () => {
  // (type (func)) (func) with and without (start 0), and the same cut short.
  const header = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  const types = [0x01, 0x04, 0x01, 0x60, 0x00, 0x00];
  const funcs = [0x03, 0x02, 0x01, 0x00];
  const start = [0x08, 0x01, 0x00];
  const code = [0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b];
  const withStart = new Uint8Array([...header, ...types, ...funcs, ...start, ...code]);
  const without = new Uint8Array([...header, ...types, ...funcs, ...code]);

  it('says a module with a start function runs code when instantiated, and one without does not', () => {
    // Both are valid modules, as V8 reads them.
    expect(() => new WebAssembly.Module(withStart)).not.toThrow();
    expect(() => new WebAssembly.Module(without)).not.toThrow();
    expect(mayRunAtInstantiation(withStart)).toBe(true);
    expect(mayRunAtInstantiation(without)).toBe(false);
  });

  it('assumes it may when the sections cannot be read to the end', () => {
    expect(mayRunAtInstantiation(without.subarray(0, without.length - 2))).toBe(true);
    expect(mayRunAtInstantiation(new Uint8Array([...without, 0x0b, 0xff]))).toBe(true);
  });
});
