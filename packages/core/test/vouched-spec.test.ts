/**
 * `register(spec, wasm, source, { validated: true })` is public: any caller
 * can vouch for a spec. Vouching skips only the costly part of validation
 * (the meta-schema check of input_schema and output_schema, done again
 * when the schemas are compiled at the first call); the fields the registry
 * and the sandbox act on (name, version, limits, mounts, env) are still
 * checked, as validateSpec checks them.
 */
import { describe, expect, it } from 'vitest';
import { CorralError, parseSpec, Registry, Runtime, validateSpec, type ExecutionResult, type Executor } from '@corral/core';
import { goodSpec, MODULE_BYTES } from './helpers.js';

/** The problems' paths when the spec is vouched for, or null when it is accepted. */
function vouchedPaths(raw: unknown): string[] | null {
  try {
    parseSpec(raw, 'vouched', { validated: true });
    return null;
  } catch (err) {
    if (!CorralError.is(err, 'E_REGISTRATION')) throw err;
    return [...new Set((err.details.problems as Array<{ path: string }>).map((p) => p.path))].sort();
  }
}

/** validateSpec's problems' paths outside input_schema and output_schema, or null when it accepts. */
function fullPaths(raw: unknown): string[] | null {
  const result = validateSpec(raw);
  if (result.ok) return null;
  const paths = result.problems.map((p) => p.path).filter((p) => !/^\/(input|output)_schema\//.test(p));
  return [...new Set(paths)].sort();
}

const resources = (r: Record<string, unknown>) => goodSpec({ resources: { ...(goodSpec().resources as object), ...r } });

const HOSTILE: Record<string, unknown> = {
  'negative memory_mb': resources({ memory_mb: -5 }),
  'memory_mb above the cap': resources({ memory_mb: 1e9 }),
  'fractional memory_mb': resources({ memory_mb: 1.5 }),
  'zero timeout_ms': resources({ timeout_ms: 0 }),
  'timeout_ms of 300 years': resources({ timeout_ms: 1e13 }),
  'negative disk_mb': resources({ disk_mb: -1 }),
  'zero cpu_cores': resources({ cpu_cores: 0 }),
  'memory_mb as a string': resources({ memory_mb: '64' }),
  'network access': resources({ network_access: ['http'] }),
  'unknown resource': resources({ gpu: 1 }),
  'a mount that climbs out': goodSpec({ mounts: [{ guest: '/../etc', access: 'read-write' }] }),
  'a mount at /': goodSpec({ mounts: [{ guest: '/', access: 'read' }] }),
  'a relative mount': goodSpec({ mounts: [{ guest: 'workspace', access: 'read' }] }),
  'a mount with unknown access': goodSpec({ mounts: [{ guest: '/w', access: 'root' }] }),
  'the same mount twice': goodSpec({
    mounts: [
      { guest: '/w', access: 'read' },
      { guest: '/w', access: 'read-write' },
    ],
  }),
  'mounts not an array': goodSpec({ mounts: { guest: '/w', access: 'read' } }),
  'env TZ': goodSpec({ env: ['TZ'] }),
  'env with a bad name': goodSpec({ env: ['A-B'] }),
  'env twice': goodSpec({ env: ['A', 'A'] }),
  'a name with @': goodSpec({ name: 'a@1' }),
  'the name __proto__': goodSpec({ name: '__proto__' }),
  'the name constructor, in capitals': goodSpec({ name: 'Constructor' }),
  'a 65-character name': goodSpec({ name: 'a'.repeat(65) }),
  'a version that is not semver': goodSpec({ version: 'latest' }),
  'no version': goodSpec({ version: undefined }),
  'a component outside the folder': goodSpec({ component: '../x.wasm' }),
  'a component that is not .wasm': goodSpec({ component: 'x.js' }),
  'an unknown kind': goodSpec({ kind: 'native' }),
  'input_schema a string': goodSpec({ input_schema: 'anything' }),
  'no input_schema': goodSpec({ input_schema: undefined }),
  'output_schema a number': goodSpec({ output_schema: 5 }),
  'an unknown field': goodSpec({ network: 'all' }),
  'an empty description': goodSpec({ description: '' }),
  'an array': [goodSpec()],
  'a string': 'diff-summary',
};

describe('a spec registered as validated', () => {
  for (const [what, raw] of Object.entries(HOSTILE)) {
    it(`is refused, at the paths validateSpec names: ${what}`, () => {
      const full = fullPaths(raw);
      expect(full, 'validateSpec refuses it').not.toBeNull();
      expect(vouchedPaths(raw)).toEqual(full);
    });
  }

  it('is refused with E_REGISTRATION when it is null, undefined or not JSON data', () => {
    const cyclic: Record<string, unknown> = goodSpec();
    cyclic.self = cyclic;
    for (const raw of [null, undefined, cyclic, goodSpec({ version: 1n })]) {
      expect(() => parseSpec(raw, 'vouched', { validated: true })).toThrow(CorralError);
    }
  });

  it('is checked as it will be registered: a toJSON cannot show one memory_mb to the check and register another', async () => {
    for (const validated of [true, false]) {
      const raw = resources({});
      // Not enumerable, so no additional property for the check to see.
      Object.defineProperty(raw.resources, 'toJSON', { value: () => ({ memory_mb: 1e9 }) });
      const registry = new Registry();
      await expect(registry.register(raw, MODULE_BYTES, 'x', { validated }), `validated: ${validated}`).rejects.toMatchObject({
        code: 'E_REGISTRATION',
        message: /\/resources\/memory_mb/,
      });
      expect(registry.list()).toEqual([]);
    }
  });

  it('is never registered with limits the sandbox cannot enforce', async () => {
    const registry = new Registry();
    await expect(registry.register(resources({ memory_mb: -5 }), MODULE_BYTES, 'x', { validated: true })).rejects.toMatchObject({
      code: 'E_REGISTRATION',
      message: /\/resources\/memory_mb/,
    });
    expect(registry.list()).toEqual([]);
  });

  it('agrees with validateSpec on 400 random mutations of a good spec', () => {
    const values: unknown[] = [
      undefined,
      null,
      0,
      -1,
      1,
      1.5,
      4096,
      4097,
      3_600_001,
      '',
      'x',
      '/w',
      '/../w',
      'x.wasm',
      'read',
      [],
      ['none'],
      {},
    ];
    const fields: Array<[string, string?]> = [
      ['name'],
      ['version'],
      ['component'],
      ['kind'],
      ['description'],
      ['env'],
      ['mounts'],
      ['resources'],
      ['resources', 'memory_mb'],
      ['resources', 'disk_mb'],
      ['resources', 'timeout_ms'],
      ['resources', 'cpu_cores'],
      ['resources', 'network_access'],
      ['mounts', 'guest'],
      ['mounts', 'access'],
    ];
    let seed = 7;
    const pick = <T>(list: T[]): T => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return list[seed % list.length]!;
    };
    let refused = 0;
    for (let i = 0; i < 400; i++) {
      const raw = goodSpec();
      for (let n = 0; n < 2; n++) {
        const [field, sub] = pick(fields);
        const value = pick(values);
        // A sub-field goes into the first mount or the resources object, if an earlier mutation left one.
        const parent = field === 'mounts' && Array.isArray(raw.mounts) ? raw.mounts[0] : raw[field];
        if (sub === undefined) raw[field] = value;
        else if (typeof parent === 'object' && parent !== null) (parent as Record<string, unknown>)[sub] = value;
      }
      const full = fullPaths(raw);
      expect(vouchedPaths(raw), JSON.stringify(raw)).toEqual(full);
      if (full) refused++;
    }
    expect(refused).toBeGreaterThan(100);
  });

  it('is accepted as validateSpec accepts it, with the same defaults', () => {
    for (const raw of [goodSpec(), goodSpec({ resources: undefined, mounts: undefined, env: undefined, description: undefined })]) {
      expect(parseSpec(raw, 'vouched', { validated: true })).toEqual((validateSpec(raw) as { spec: object }).spec);
    }
  });

  it('skips only the meta-schema check of its schemas: a bad input_schema fails its first call, E_REGISTRATION', async () => {
    const executor: Executor = {
      execute: async (): Promise<ExecutionResult> => ({ exitCode: 0, stdout: new Uint8Array(), stderr: new Uint8Array(), durationMs: 1 }),
    };
    const registry = new Registry();
    await registry.register(goodSpec({ mounts: [], input_schema: { type: 'nope' } }), MODULE_BYTES, 'x', { validated: true });
    const r = await new Runtime({ registry, executor }).invoke('diff-summary', { diff: '' });
    expect(r.error).toMatchObject({ code: 'E_REGISTRATION', message: /input_schema is not a usable JSON Schema/ });
  });
});
