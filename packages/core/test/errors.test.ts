/**
 * `details` is typed per code: a wrong key, a missing required one or a
 * value of the wrong type fails `npm run check` (tsc over the tests), which
 * the @ts-expect-error lines below prove; reading narrows by `code`.
 */
import { describe, expect, it } from 'vitest';
import { CorralError, ErrorCodes, type CorralErrorJSON } from '@corral/core';

describe('CorralError details, typed per code', () => {
  it('takes the details its code defines, and refuses others at compile time', () => {
    const time = new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, 'slow', { resource: 'time', timeout_ms: 500 });
    expect(time.details).toEqual({ resource: 'time', timeout_ms: 500 });
    expect(time.retryable).toBe(true);

    // @ts-expect-error a key E_RESOURCE_EXHAUSTED does not have
    void new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, 'slow', { resource: 'time', timeout_ms: 500, limit: 'timeout' });
    // @ts-expect-error the time limit's details need timeout_ms
    void new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, 'slow', { resource: 'time' });
    // @ts-expect-error E_RESOURCE_EXHAUSTED needs details (at least `resource`)
    void new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, 'slow');
    // @ts-expect-error E_UNEXPECTED_EXIT says why with `reason`
    void new CorralError(ErrorCodes.UNEXPECTED_EXIT, 'failed', { cause: 'x' });
    // @ts-expect-error a key of another code (E_STORE's) is not E_INPUT_VALIDATION's
    void new CorralError(ErrorCodes.INPUT_VALIDATION, 'bad', { store: 'x' });
    // @ts-expect-error the wrong type for a key
    void new CorralError(ErrorCodes.TOOL_NOT_FOUND, 'no', { available: 'a, b' });

    // Codes whose details are all optional may leave them out.
    expect(new CorralError(ErrorCodes.CLOSED, 'closed').details).toEqual({});
  });

  it('reads any key on any error (undefined where the code has none), precisely once the code is known', () => {
    const errors: CorralErrorJSON[] = [
      new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, 'big', { resource: 'output', limit_bytes: 10 }).toJSON(),
      new CorralError(ErrorCodes.UNEXPECTED_EXIT, 'bug', { reason: 'internal', cause: 'x' }).toJSON(),
    ];
    expect(errors.map((e) => e.details.resource)).toEqual(['output', undefined]);
    // Still plain JSON objects to code that takes any details (apps/web's failureMessage does).
    const loose: Record<string, unknown>[] = errors.map((e) => e.details);
    expect(loose).toHaveLength(2);
    const [first, second] = errors;
    if (first?.code === 'E_RESOURCE_EXHAUSTED' && first.details.resource === 'output') {
      const limit: number = first.details.limit_bytes;
      expect(limit).toBe(10);
    }
    if (second?.code === 'E_UNEXPECTED_EXIT' && second.details.reason === 'internal') {
      const cause: string = second.details.cause;
      expect(cause).toBe('x');
    }
  });

  it('survives the trip through JSON with its code, details and retryable', () => {
    const error = new CorralError(ErrorCodes.STORE, 'full', { store: '/tmp/s.db', unwritable: true }, true);
    const back = CorralError.fromJSON(JSON.parse(JSON.stringify(error)) as CorralErrorJSON<'E_STORE'>);
    expect(back).toBeInstanceOf(CorralError);
    expect(back.toJSON()).toEqual({ code: 'E_STORE', message: 'full', details: { store: '/tmp/s.db', unwritable: true }, retryable: true });
    const unknown: unknown = back;
    expect(CorralError.is(unknown, ErrorCodes.STORE) && unknown.details.unwritable).toBe(true);
  });
});
