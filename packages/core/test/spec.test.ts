import { describe, expect, it } from 'vitest';
import { CorralError, parseSpec, specDefaults, toolSpecSchema, validateSpec } from '@corral/core';
import { goodSpec } from './helpers.js';

describe('validateSpec', () => {
  it('accepts a good spec and fills defaults', () => {
    const result = validateSpec(goodSpec());
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.spec.name).toBe('diff-summary');
    expect(result.spec.resources?.memory_mb).toBe(64);

    const minimal = validateSpec({ name: 'x', version: '0.1.0', component: 'x.wasm', input_schema: true });
    expect(minimal).toEqual({
      ok: true,
      spec: {
        name: 'x',
        version: '0.1.0',
        component: 'x.wasm',
        input_schema: true,
        resources: { ...specDefaults.resources },
        mounts: [],
        env: [],
      },
    });
  });

  it("does not modify the caller's object", () => {
    const raw = goodSpec({ resources: undefined });
    delete raw.resources;
    validateSpec(raw);
    expect(raw.resources).toBeUndefined();
  });

  it('lists every problem by JSON path', () => {
    const result = validateSpec(
      goodSpec({
        version: '1.0',
        component: '../escape.wasm',
        resources: { memory_mb: 1.5 },
        mounts: [{ guest: '/workspace', access: 'write' }],
      }),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => p.path)).toEqual(['/version', '/component', '/resources/memory_mb', '/mounts/0/access']);
    expect(result.problems).toContainEqual({ path: '/resources/memory_mb', message: 'must be integer' });
  });

  it('uses / for the root and names unknown and missing properties', () => {
    const result = validateSpec({ name: 'x', version: '1.0.0', input_schema: {}, colour: 'red' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual([
      { path: '/', message: "must have required property 'component'" },
      { path: '/', message: "must NOT have additional property 'colour'" },
    ]);
  });

  it('reports an input_schema that is not a valid JSON Schema', () => {
    const result = validateSpec(goodSpec({ input_schema: { type: 'object', properties: { diff: { type: 'strnig' } } } }));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.length).toBeGreaterThan(0);
    expect(result.problems.every((p) => p.path === '/input_schema/properties/diff/type')).toBe(true);
  });

  it('reports an unresolvable $ref in output_schema', () => {
    const result = validateSpec(goodSpec({ output_schema: { $ref: '#/definitions/missing' } }));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems[0]?.path).toBe('/output_schema');
  });

  it('refuses network access with a sentence about it', () => {
    const result = validateSpec(goodSpec({ resources: { network_access: ['https://example.com'] } }));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]!.path).toBe('/resources/network_access');
    expect(result.problems[0]!.message).toMatch(/Corral tools run without network/);
    expect(validateSpec(goodSpec({ resources: { network_access: [] } })).ok).toBe(true);
  });

  it('checks mounts, env, name and limits', () => {
    const result = validateSpec(
      goodSpec({
        name: 'Diff_Summary',
        mounts: [
          { guest: '/', access: 'read' },
          { guest: '/a/../b', access: 'read' },
          { guest: 'relative', access: 'read' },
          { guest: '/w/', access: 'read' },
          { guest: '/x', access: 'read' },
          { guest: '/x', access: 'read-write' },
        ],
        env: ['LANG', 'TZ', '1BAD', 'LANG'],
        resources: { cpu_cores: 0, memory_mb: 8192, disk_mb: -1, timeout_ms: 0 },
      }),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const paths = result.problems.map((p) => p.path);
    for (const path of [
      '/name',
      '/mounts/0/guest',
      '/mounts/1/guest',
      '/mounts/2/guest',
      '/mounts/3/guest',
      '/mounts/5/guest',
      '/env',
      '/env/1',
      '/env/2',
      '/resources/cpu_cores',
      '/resources/memory_mb',
      '/resources/disk_mb',
      '/resources/timeout_ms',
    ]) {
      expect(paths).toContain(path);
    }
    expect(result.problems).toContainEqual({ path: '/env/1', message: 'TZ is reserved: Corral always sets TZ=UTC' });
  });

  it('accepts a 2020-12 input_schema', () => {
    const schema = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [{ type: 'string' }] };
    expect(validateSpec(goodSpec({ input_schema: schema })).ok).toBe(true);
  });

  it('names the $schema of a draft it does not understand', () => {
    const result = validateSpec(goodSpec({ input_schema: { $schema: 'http://json-schema.org/draft-04/schema#' } }));
    expect(result).toMatchObject({ ok: false, problems: [{ path: '/input_schema/$schema' }] });
  });

  it('ships its schema as data', () => {
    expect(toolSpecSchema.additionalProperties).toBe(false);
    expect(toolSpecSchema.required).toContain('input_schema');
  });
});

describe('parseSpec', () => {
  it('throws E_REGISTRATION listing the problems', () => {
    let error: unknown;
    try {
      parseSpec(goodSpec({ version: 'one', resources: { memory_mb: 'a lot' } }), 'tools/x/tool-spec.json');
    } catch (err) {
      error = err;
    }
    expect(CorralError.is(error, 'E_REGISTRATION')).toBe(true);
    const e = error as CorralError;
    expect(e.message).toBe(
      'Invalid tool spec tools/x/tool-spec.json: 2 problems: /version: must be a semantic version such as 1.0.0; ' +
        '/resources/memory_mb: must be integer',
    );
    expect(e.details.problems).toHaveLength(2);
  });

  it('returns the spec when valid', () => {
    expect(parseSpec(goodSpec(), 'x').version).toBe('1.0.0');
  });
});
