// What the HTTP API's exports say about options they cannot use: a
// CorralError E_INPUT_VALIDATION naming the option, as every Corral export
// does (README: "Nothing Corral exports throws a plain Error").
import { describe, expect, it } from 'vitest';
import { CorralError } from '@corral/core';
import { buildOpenApi, checkHttpServerOptions, startHttpServer, type HttpServerOptions } from '@corral/node/http';

describe('checkHttpServerOptions', () => {
  it.each([
    [{ port: 70000 }, 'port', /port must be an integer from 0 to 65535/],
    [{ concurrency: 0 }, 'concurrency', /concurrency must be a positive integer/],
    [{ token: 'short' }, 'token', /bearer token must be at least 16 characters/],
    [{ host: '0.0.0.0' }, 'token', /refusing to serve on 0\.0\.0\.0 without a token/],
    [{ token: 'a'.repeat(20), approverToken: 'a'.repeat(20) }, 'approverToken', /must differ from the API token/],
    [{ approvalWaitMs: -1 }, 'approvalWaitMs', /approvalWaitMs must be a whole number/],
    [{ prot: 8080 }, 'prot', /prot is not an option of the HTTP server: did you mean port\?/],
    [{ tokens: 'a'.repeat(20) }, 'tokens', /did you mean token\?/],
    [[], 'options', /options must be an object \(got an array\)/],
  ])('refuses %j as E_INPUT_VALIDATION naming %s', async (options, option, message) => {
    const err = await checkHttpServerOptions(options as HttpServerOptions).catch((e: unknown) => e);
    expect(CorralError.is(err, 'E_INPUT_VALIDATION'), String(err)).toBe(true);
    expect((err as CorralError).details).toMatchObject({ option });
    expect((err as CorralError).message).toMatch(message);
  });

  it('accepts a loopback server with no token', async () => {
    await expect(checkHttpServerOptions({ host: '127.0.0.1', port: 0 })).resolves.toBeUndefined();
  });
});

describe('startHttpServer', () => {
  it('says which argument is which when given the options alone', async () => {
    // Before: TypeError "Cannot read properties of undefined (reading 'pool')".
    const err = await startHttpServer({ port: 0 } as never).catch((e: unknown) => e);
    expect(CorralError.is(err, 'E_INPUT_VALIDATION'), String(err)).toBe(true);
    expect((err as CorralError).details).toMatchObject({ option: 'corral' });
    expect((err as CorralError).message).toMatch(/the first argument must be a Corral/);
  });
});

describe('buildOpenApi', () => {
  it('says what it wants when given the registry instead of its list of tools', () => {
    const call = () => buildOpenApi({ list: () => [] } as never, { version: '1' } as never);
    expect(call).toThrow(CorralError);
    expect(call).toThrow(/tools must be an array of tools, such as corral\.registry\.list\(\)/);
  });
});
