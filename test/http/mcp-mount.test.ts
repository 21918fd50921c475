// The /mcp mount point: what a handler mounted there gets (the parsed body,
// every method) and what the server keeps for itself (auth, the Host check,
// body limits, shutdown). A stand-in handler plays the MCP endpoint.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { HttpMount } from '@corral/node/http';
import { send, startTestServer } from './helpers.js';

const TOKEN = 'mcp-mount-token-0123456789';

function standIn() {
  const seen: Array<{ method: string; body: unknown }> = [];
  let closed = 0;
  const mount: HttpMount = {
    async handle(req: IncomingMessage, res: ServerResponse, body?: unknown) {
      seen.push({ method: req.method!, body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { echoed: body ?? null } }));
    },
    async close() {
      closed++;
    },
  };
  return { mount, seen, closed: () => closed };
}

describe('the /mcp mount', () => {
  it('gets every method at /mcp, a POST body parsed; the server keeps auth, limits and shutdown', async () => {
    const h = standIn();
    const t = await startTestServer({ mcp: h.mount, token: TOKEN, maxBodyBytes: 1024 });
    const auth = { authorization: `Bearer ${TOKEN}` };
    try {
      const message = { jsonrpc: '2.0', id: 1, method: 'ping' };
      expect((await send(t.url, '/mcp', { json: message })).status).toBe(401);
      expect((await send(t.url, '/mcp', { json: message, headers: { ...auth, host: 'evil.test' } })).status).toBe(403);
      const r = await send(t.url, '/mcp', { json: message, headers: auth });
      expect(r.status).toBe(200);
      expect(r.json.result.echoed).toEqual(message);
      expect((await send(t.url, '/mcp', { method: 'GET', headers: auth })).status).toBe(200);
      expect((await send(t.url, '/mcp', { method: 'DELETE', headers: auth })).status).toBe(200);
      expect(h.seen.map((s) => s.method)).toEqual(['POST', 'GET', 'DELETE']);
      // Not JSON: the JSON-RPC parse error, as the MCP SDK answers it; too large: 413.
      const bad = await send(t.url, '/mcp', { body: '{"jsonrpc":', headers: { ...auth, 'content-type': 'application/json' } });
      expect(bad.status).toBe(400);
      expect(bad.json).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: expect.stringMatching(/Parse error/) }, id: null });
      const big = await send(t.url, '/mcp', { json: { pad: 'x'.repeat(2000) }, headers: auth });
      expect(big.status).toBe(413);
      expect(h.seen).toHaveLength(3);
      // Documented in the OpenAPI document.
      const doc = (await send(t.url, '/openapi.json', { headers: auth })).json;
      expect(doc.paths['/mcp'].post.operationId).toBe('mcp');
    } finally {
      await t.stop();
    }
    expect(h.closed()).toBe(1);
  });
});
