/**
 * Validators compiled when Corral is built (the bundled tools'): their code,
 * loaded, decides every value as the validator compiled at run time does,
 * errors included; invoke uses them when the registry was given them, and
 * compiles the schema as usual when their format or code is not usable.
 */
import { describe, expect, it } from 'vitest';
import {
  Registry,
  Runtime,
  VALIDATOR_FORMAT,
  prebuiltValidator,
  validatorSource,
  type ExecutionResult,
  type Executor,
  type JsonSchema,
} from '@corral/core';
import { compileUserSchema } from '../src/schema.js';
import { goodSpec, MODULE_BYTES } from './helpers.js';

const SCHEMAS: JsonSchema[] = [
  goodSpec().input_schema as JsonSchema,
  {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 2, maxLength: 5, pattern: '^[a-z😀]+$' },
      tags: { type: 'array', items: { type: 'string' }, uniqueItems: true, maxItems: 3 },
      mode: { const: { fast: true } },
      level: { enum: [1, 2, 'three', null] },
      when: { type: 'string', format: 'date-time' },
      file: { type: 'string', format: 'path' },
      nested: { $ref: '#/definitions/node' },
    },
    required: ['name'],
    additionalProperties: false,
    definitions: { node: { type: 'object', properties: { next: { $ref: '#/definitions/node' } }, additionalProperties: false } },
  },
  {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'array',
    prefixItems: [
      { type: 'integer', minimum: 0 },
      { type: 'string', maxLength: 2 },
    ],
    items: false,
  },
];

const VALUES: unknown[] = [
  {},
  { diff: 'x' },
  { diff: 5, language: 'fr', extra: 1 },
  { diff: '', file: '/a/../b' },
  { diff: '', file: '/workspace/x' },
  { name: 'ab' },
  { name: 'a' },
  { name: 'abcdef' },
  { name: '😀😀😀😀😀' },
  { name: 'AB', tags: ['a', 'a'], mode: { fast: true }, level: 'three' },
  { name: 'ab', tags: ['a', 'b', 'c', 'd'], mode: { fast: false }, level: 4 },
  { name: 'ab', when: '2026-12-02T01:00:00Z', file: '/x' },
  { name: 'ab', when: 'yesterday', file: 'relative' },
  { name: 'ab', nested: { next: { next: {} } } },
  { name: 'ab', nested: { next: { other: 1 } } },
  [1, 'ab'],
  [-1, 'abc'],
  [1, 'a', 'more'],
  'not an object',
  null,
];

describe('prebuilt validators', () => {
  it('decide every value as the run-time compiled validator does, errors included', () => {
    let checked = 0;
    for (const schema of SCHEMAS) {
      const prebuilt = prebuiltValidator(validatorSource(schema));
      const compiled = compileUserSchema(schema, '').validate!;
      for (const value of VALUES) {
        expect(prebuilt(value), JSON.stringify(value)).toBe(compiled(value));
        expect(prebuilt.errors ?? null).toEqual(compiled.errors ?? null);
        checked++;
      }
    }
    expect(checked).toBe(SCHEMAS.length * VALUES.length);
  });

  it('refuse to load code that needs a module Corral does not provide', () => {
    expect(() => prebuiltValidator('module.exports.default = require("node:fs")')).toThrow(/requires 'node:fs'/);
    expect(() => prebuiltValidator('module.exports = 1')).toThrow(/exports no function/);
  });

  describe('in invoke', () => {
    const executor: Executor = {
      execute: async (): Promise<ExecutionResult> => ({
        exitCode: 0,
        stdout: new TextEncoder().encode('{"files":[]}'),
        stderr: new Uint8Array(),
        durationMs: 1,
      }),
    };
    const spec = goodSpec({ mounts: undefined });
    const refuseAll = `module.exports.default = function v() { v.errors = [{ instancePath: '', schemaPath: '#', keyword: 'x', params: {}, message: 'refused by the prebuilt code' }]; return false; };`;
    const run = async (validators: { format: string; input: string }) => {
      const registry = new Registry();
      await registry.register(spec, MODULE_BYTES, 'bytes', { validators });
      return new Runtime({ registry, executor }).invoke('diff-summary', { diff: '' });
    };

    it('uses the code the registry was given', async () => {
      const r = await run({ format: VALIDATOR_FORMAT, input: refuseAll });
      expect(r.error).toMatchObject({ code: 'E_INPUT_VALIDATION', message: expect.stringMatching(/refused by the prebuilt code/) });
    });

    it('compiles the schema instead when the code is of another format, or does not load', async () => {
      for (const validators of [
        { format: 'ajv-0.0.0/other', input: refuseAll },
        { format: VALIDATOR_FORMAT, input: 'this is not JavaScript(' },
      ]) {
        const r = await run(validators);
        expect(r.error, validators.input).toBeNull();
        expect(r.ok).toBe(true);
      }
    });
  });
});
