// Bearer-token auth: with a token configured every endpoint but /healthz
// needs it; without one the server refuses to listen beyond loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Corral } from '@corral/node';
import { isLoopbackAddress, startHttpServer } from '@corral/node/http';
import { execute, send, startTestServer, type TestServer } from './helpers.js';

const TOKEN = 'auth-test-token-5f0c2a9e81b34d67';
const good = { authorization: `Bearer ${TOKEN}` };

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ token: TOKEN });
});
afterAll(async () => {
  await t?.stop();
});

describe('bearer token', () => {
  it('every endpoint but /healthz answers 401 with WWW-Authenticate without it', async () => {
    for (const [method, path] of [
      ['POST', '/execute'],
      ['POST', '/execute/diff-summary'],
      ['GET', '/tools'],
      ['GET', '/openapi.json'],
      ['GET', '/metrics'],
      // An unknown path says nothing about what exists until the caller is known.
      ['GET', '/nope'],
      ['DELETE', '/tools'],
    ] as const) {
      const r = await send(t.url, path, { method, ...(method === 'POST' ? { json: { tool: 'diff-summary', input: { diff: '' } } } : {}) });
      expect(r.status, `${method} ${path}`).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Bearer realm="corral"');
      expect(r.json.error).toMatchObject({ code: 'E_UNAUTHORIZED', retryable: false });
    }
    const health = await send(t.url, '/healthz');
    expect(health.status).toBe(200);
  });

  it('a wrong token, another scheme or a malformed header is 401 invalid_token', async () => {
    for (const authorization of [
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(0, -1)}`,
      'Bearer ',
      `Basic ${Buffer.from(`user:${TOKEN}`).toString('base64')}`,
      `Bearer ${TOKEN} extra`,
      TOKEN,
      `Bearer ${'a'.repeat(5000)}`,
    ]) {
      const r = await execute(t.url, { tool: 'diff-summary', input: { diff: '' } }, { authorization });
      expect(r.status, authorization.slice(0, 40)).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Bearer realm="corral", error="invalid_token"');
    }
  });

  it('the right token opens every endpoint (the scheme is case-insensitive)', async () => {
    const r = await execute(t.url, { tool: 'diff-summary', input: { diff: '' } }, good);
    expect(r.status).toBe(200);
    expect(r.json.ok).toBe(true);
    expect((await execute(t.url, { tool: 'diff-summary', input: { diff: '' } }, { authorization: `bearer ${TOKEN}` })).status).toBe(200);
    for (const path of ['/tools', '/openapi.json', '/metrics']) expect((await send(t.url, path, { headers: good })).status, path).toBe(200);
  });

  it('a request without the token never reaches a tool, so nothing is recorded', async () => {
    const before = (await t.corral.store!.listExecutions()).length;
    await execute(t.url, { tool: 'diff-summary', input: { diff: '' } });
    expect((await t.corral.store!.listExecutions()).length).toBe(before);
  });
});

describe('where the server may listen', () => {
  it('tells loopback addresses from the rest', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1']) expect(isLoopbackAddress(a), a).toBe(true);
    for (const a of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', 'example.com', '', '128.0.0.1', '::ffff:10.0.0.1'])
      expect(isLoopbackAddress(a), a).toBe(false);
  });

  it('refuses to listen beyond loopback without a token, and refuses a short token', async () => {
    const corral = await Corral.create({ store: false, size: 1 });
    try {
      for (const host of ['0.0.0.0', '::', '192.0.2.1']) {
        await expect(startHttpServer(corral, { host, port: 0, log: false }), host).rejects.toThrow(/without a token.*--token-file/);
      }
      await expect(startHttpServer(corral, { port: 0, token: 'short', log: false })).rejects.toThrow(/at least 16 characters/);
      await expect(startHttpServer(corral, { port: 0, token: 'has a space in it 123', log: false })).rejects.toThrow(/without spaces/);
      await expect(startHttpServer(corral, { port: 70000, log: false })).rejects.toThrow(/port/);
    } finally {
      await corral.close();
    }
  });
});
