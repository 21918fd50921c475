/**
 * maxLength and minLength on a user's schema count code points as ajv's own
 * keywords do (a surrogate pair is one, a lone surrogate is one), with the
 * same errors, while deciding most strings from their UTF-16 length.
 */
import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import { compileUserSchema } from '../src/schema.js';

const ajv = new Ajv({ allErrors: true, strict: false, logger: false });
const pieces = ['a', 'é', '😀', '\ud800', '\udc00', '\ud800\ud800', 'b'];

describe('maxLength / minLength on user schemas', () => {
  it("agree with ajv's own keywords, errors included, on strings mixing surrogate pairs and lone surrogates", () => {
    let checked = 0;
    for (let len = 0; len <= 6; len++) {
      for (let variant = 0; variant < 40; variant++) {
        let s = '';
        for (let i = 0; i < len; i++) s += pieces[(variant * 7 + i * (variant + 3)) % pieces.length];
        for (let limit = 0; limit <= 13; limit++) {
          for (const keywords of [
            { maxLength: limit },
            { minLength: limit },
            { maxLength: limit, minLength: Math.max(0, limit - 2), pattern: 'a' },
          ]) {
            const schema = { type: 'object', properties: { x: { type: 'string', ...keywords } } };
            const ours = compileUserSchema(schema, '').validate!;
            const theirs = ajv.compile(schema);
            expect(ours({ x: s })).toBe(theirs({ x: s }));
            expect(ours.errors ?? null).toEqual(theirs.errors ?? null);
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(10_000);
  });

  it('decide a multi-megabyte string either way', () => {
    const big = 'x'.repeat(4_000_000) + '😀';
    const max = compileUserSchema({ type: 'string', maxLength: 4_000_000 }, '').validate!;
    expect(max(big)).toBe(false);
    expect(max.errors?.[0]?.message).toBe('must NOT have more than 4000000 characters');
    expect(compileUserSchema({ type: 'string', maxLength: 4_000_001 }, '').validate!(big)).toBe(true);
    expect(compileUserSchema({ type: 'string', minLength: 4_000_002 }, '').validate!(big)).toBe(false);
    expect(compileUserSchema({ type: 'string', minLength: 4_000_001 }, '').validate!(big)).toBe(true);
  });
});
