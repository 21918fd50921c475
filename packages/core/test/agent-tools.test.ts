import { describe, expect, it } from 'vitest';
import { Registry, agentTools, failureText, type InvokeResult } from '@corral/core';

const MODULE = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);

async function registryOf(...specs: Array<Record<string, unknown>>): Promise<Registry> {
  const registry = new Registry();
  for (const spec of specs) await registry.register({ component: 't.wasm', input_schema: { type: 'object' }, ...spec }, MODULE);
  return registry;
}

const host = (registry: Registry) => ({ registry, invoke: () => Promise.reject(new Error('not called')) });

describe('agentTools', () => {
  it('offers each name once, at the version a bare name resolves to, sorted', async () => {
    const registry = await registryOf(
      { name: 'zeta', version: '1.0.0' },
      { name: 'alpha', version: '1.0.0' },
      { name: 'alpha', version: '1.2.0' },
      { name: 'alpha', version: '2.0.0-beta.1' },
    );
    expect(agentTools(host(registry)).map((t) => t.ref)).toEqual(['alpha@1.2.0', 'zeta@1.0.0']);
  });

  it('makes dotted names safe for model APIs and refuses two tools that would share one', async () => {
    const registry = await registryOf({ name: 'lint.js', version: '1.0.0' }, { name: 'lint_js', version: '1.0.0' });
    expect(agentTools(host(registry), { tools: ['lint.js'] }).map((t) => t.name)).toEqual(['lint_js']);
    expect(() => agentTools(host(registry))).toThrow(expect.objectContaining({ code: 'E_INPUT_VALIDATION' }));
  });

  it('wraps a non-object input schema as { input } and unwraps the arguments', async () => {
    const registry = await registryOf({ name: 'upper', version: '1.0.0', input_schema: { type: 'string' } });
    const [tool] = agentTools(host(registry));
    expect(tool!.inputSchema).toEqual({
      type: 'object',
      properties: { input: { type: 'string' } },
      required: ['input'],
      additionalProperties: false,
    });
    expect(tool!.toToolInput({ input: 'abc' })).toBe('abc');
  });

  it('describes a failure with its code first', () => {
    const result = { ok: false, tool: 't', error: { code: 'E_RESOURCE_EXHAUSTED', message: 'out of time' } } as InvokeResult;
    expect(failureText(result)).toBe('E_RESOURCE_EXHAUSTED: out of time');
  });
});
