import { describe, expect, it } from 'vitest';
import { CorralError, Registry } from '@corral/core';
import { COMPONENT_BYTES, goodSpec, moduleVariant, MODULE_BYTES } from './helpers.js';

async function registryWith(versions: Record<string, string[]>): Promise<Registry> {
  const registry = new Registry();
  let tag = 0;
  for (const [name, list] of Object.entries(versions)) {
    for (const version of list) await registry.register(goodSpec({ name, version }), moduleVariant(tag++));
  }
  return registry;
}

function notFound(fn: () => unknown): CorralError {
  try {
    fn();
  } catch (err) {
    if (CorralError.is(err, 'E_TOOL_NOT_FOUND')) return err;
    throw err;
  }
  throw new Error('expected E_TOOL_NOT_FOUND');
}

describe('Registry', () => {
  it('registers a tool with its kind and hash', async () => {
    const registry = new Registry();
    const tool = await registry.register(goodSpec(), COMPONENT_BYTES, 'tool-spec.json');
    expect(tool.spec.kind).toBe('component');
    expect(tool.wasmSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(tool.source).toBe('tool-spec.json');
  });

  it('resolves names and semver ranges to the highest match', async () => {
    const registry = await registryWith({ 'diff-summary': ['1.0.0', '1.2.0', '1.10.0', '2.0.0', '3.0.0-beta.1'] });
    expect(registry.resolve('diff-summary').spec.version).toBe('2.0.0');
    expect(registry.resolve('diff-summary@^1').spec.version).toBe('1.10.0');
    expect(registry.resolve('diff-summary@~1.2').spec.version).toBe('1.2.0');
    expect(registry.resolve('diff-summary@1.0.0').spec.version).toBe('1.0.0');
    expect(registry.resolve('diff-summary@>=1.1 <2').spec.version).toBe('1.10.0');
    expect(registry.resolve('diff-summary@3.0.0-beta.1').spec.version).toBe('3.0.0-beta.1');
    expect(registry.has('diff-summary@^2')).toBe(true);
    expect(registry.has('diff-summary@^4')).toBe(false);
  });

  it('finds a tool that only has prereleases by bare name', async () => {
    const registry = await registryWith({ beta: ['0.1.0-rc.1', '0.1.0-rc.2'] });
    expect(registry.resolve('beta').spec.version).toBe('0.1.0-rc.2');
  });

  it('says which tools exist when the name is unknown', async () => {
    const registry = await registryWith({ b: ['1.0.0'], a: ['1.0.0'] });
    const e = notFound(() => registry.resolve('x'));
    expect(e.message).toBe("No tool named 'x'. Available: a, b");
    expect(e.details).toEqual({ name: 'x', range: null, available: ['a', 'b'] });
  });

  it('says which versions exist when none matches the range', async () => {
    const registry = await registryWith({ x: ['1.1.0', '1.0.0'] });
    const e = notFound(() => registry.resolve('x@^2'));
    expect(e.message).toBe("No version of 'x' matches '^2'. Available: 1.0.0, 1.1.0");
    expect(e.details).toEqual({ name: 'x', range: '^2', available: ['1.0.0', '1.1.0'] });
    expect(notFound(() => registry.resolve('x@not a range')).message).toMatch(/is not a semver range/);
  });

  it('lists by name ascending, version descending', async () => {
    const registry = await registryWith({ zed: ['1.0.0'], alpha: ['1.0.0', '10.0.0', '2.0.0'] });
    expect(registry.list().map((t) => `${t.spec.name}@${t.spec.version}`)).toEqual([
      'alpha@10.0.0',
      'alpha@2.0.0',
      'alpha@1.0.0',
      'zed@1.0.0',
    ]);
  });

  it('unregisters one exact version, and the name once its last version goes', async () => {
    const registry = await registryWith({ a: ['1.0.0', '2.0.0'], b: ['1.0.0'] });
    expect(registry.unregister('a', '2.0.0')?.spec.version).toBe('2.0.0');
    expect(registry.resolve('a').spec.version).toBe('1.0.0');
    // A range is not a version: nothing matches it exactly.
    expect(registry.unregister('a', '^1')).toBeUndefined();
    expect(registry.unregister('a', '1.0.0')?.spec.name).toBe('a');
    expect(registry.unregister('a', '1.0.0')).toBeUndefined();
    expect(registry.list().map((t) => t.spec.name)).toEqual(['b']);
    expect(notFound(() => registry.resolve('a')).details).toMatchObject({ available: ['b'] });
    expect(registry.unregister('nope', '1.0.0')).toBeUndefined();
  });

  it('registers again what was unregistered, even with other bytes', async () => {
    const registry = await registryWith({ a: ['1.0.0'] });
    registry.unregister('a', '1.0.0');
    const again = await registry.register(goodSpec({ name: 'a', version: '1.0.0' }), moduleVariant(99));
    expect(registry.resolve('a')).toBe(again);
  });

  it('treats re-registering identical bytes as a no-op', async () => {
    const registry = new Registry();
    const first = await registry.register(goodSpec(), MODULE_BYTES);
    const second = await registry.register(goodSpec(), MODULE_BYTES.slice());
    expect(second).toBe(first);
    expect(registry.list()).toHaveLength(1);
  });

  it('refuses re-registering the same version with different bytes', async () => {
    const registry = new Registry();
    await registry.register(goodSpec(), moduleVariant(1), 'a/tool-spec.json');
    await expect(registry.register(goodSpec(), moduleVariant(2), 'b/tool-spec.json')).rejects.toMatchObject({
      code: 'E_REGISTRATION',
      message: expect.stringMatching(/diff-summary@1\.0\.0 is already registered \(from a\/tool-spec\.json\) with different wasm/),
    });
  });

  it('refuses a kind that disagrees with the bytes', async () => {
    const registry = new Registry();
    await expect(registry.register(goodSpec({ kind: 'component' }), MODULE_BYTES, 'x/tool-spec.json')).rejects.toMatchObject({
      code: 'E_REGISTRATION',
      message: expect.stringMatching(/kind "component" but diff-summary\.wasm is a core module/),
    });
  });

  it('refuses bad wasm and bad specs', async () => {
    const registry = new Registry();
    await expect(registry.register(goodSpec(), new Uint8Array())).rejects.toMatchObject({ code: 'E_REGISTRATION' });
    await expect(registry.register({}, MODULE_BYTES)).rejects.toMatchObject({ code: 'E_REGISTRATION' });
  });
});
