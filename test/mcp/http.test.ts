// createMcpHttpHandler on a bare node:http server on loopback, with the official SDK client over Streamable HTTP.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Corral } from '@corral/node';
import { createMcpHttpHandler, openServerGate, watchToolFolders, type McpHttpHandler, type McpHttpOptions } from '@corral/node/mcp';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, makeWorkspace, scenarioPolicy } from './helpers.js';
import { mcpScenarios } from './scenarios.js';

interface Served {
  corral: Corral;
  handler: McpHttpHandler;
  url: URL;
  close(): Promise<void>;
}

/**
 * Corral, the MCP handler at /mcp of a loopback server, and a watcher telling the handler when tools change.
 * With `policyPath`, the gate reads that policy; without, the handler opens its own (the test run's $CORRAL_POLICY).
 */
async function serve(store: string | false, toolsDir?: string, options: McpHttpOptions = {}, policyPath?: string): Promise<Served> {
  const corral = await Corral.create({ size: 1, store });
  const gate = policyPath ? openServerGate(corral.store, { policyPath }) : undefined;
  const handler = createMcpHttpHandler(corral, { ...options, ...(gate ? { gate } : {}) });
  const watcher = toolsDir ? watchToolFolders(corral.registry, [toolsDir], { onChange: () => void handler.toolsChanged() }) : undefined;
  await watcher?.reload();
  const server: Server = createServer((req, res) => {
    if (req.url === '/mcp') void handler.handle(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    corral,
    handler,
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    async close() {
      watcher?.close();
      await handler.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await corral.close();
    },
  };
}

mcpScenarios('MCP over Streamable HTTP', async () => {
  const workspace = makeWorkspace();
  const served = await serve(workspace.store, workspace.tools, {}, workspace.policy);
  return {
    workspace,
    connect: (roots) =>
      connectClient(
        new StreamableHTTPClientTransport(served.url),
        roots?.map((path) => ({ uri: workspace.uri(path) })),
      ),
    snapshot: (id) => served.corral.store!.getExecution(id),
    audit: () => served.corral.store!.listAudit(),
    close: () => served.close(),
  };
});

/** One raw HTTP exchange, with whatever headers (Host included) the test wants. */
function raw(
  url: URL,
  init: { method?: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'POST', headers: init.headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('the Streamable HTTP handler', () => {
  let served: Served;
  beforeAll(async () => {
    served = await serve(false, undefined, { maxSessions: 2, maxBodyBytes: 64 * 1024 });
  });
  afterAll(async () => served?.close());

  it('keeps one session per client until DELETE ends it', async () => {
    const transport = new StreamableHTTPClientTransport(served.url);
    const { client } = await connectClient(transport);
    const id = transport.sessionId!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(served.handler.sessions).toBe(1);
    await transport.terminateSession();
    expect(served.handler.sessions).toBe(0);
    const after = await raw(served.url, {
      headers: { ...JSON_HEADERS, 'mcp-session-id': id },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(after.status).toBe(404);
    expect(JSON.parse(after.body)).toMatchObject({ error: { code: -32001 } });
    await client.close();
  });

  it('refuses what does not start or continue a session', async () => {
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect((await raw(served.url, { headers: JSON_HEADERS, body: list })).status).toBe(400);
    expect((await raw(served.url, { method: 'GET', headers: { accept: 'text/event-stream' } })).status).toBe(400);
    expect((await raw(served.url, { headers: { ...JSON_HEADERS, 'mcp-session-id': 'nope' }, body: list })).status).toBe(404);
    const badJson = await raw(served.url, { headers: JSON_HEADERS, body: '{not json' });
    expect(badJson.status).toBe(400);
    expect(JSON.parse(badJson.body)).toMatchObject({ error: { code: -32700 } });
    const big = await raw(served.url, { headers: JSON_HEADERS, body: Buffer.alloc(65 * 1024, 0x20) });
    expect(big.status).toBe(413);
    // A refused initialize (no text/event-stream in Accept) leaves no session behind.
    const refused = await raw(served.url, { headers: { ...JSON_HEADERS, accept: 'application/json' }, body: INIT });
    expect(refused.status).toBe(406);
    expect(served.handler.sessions).toBe(0);
  });

  it('refuses a Host or Origin that is not loopback (DNS rebinding)', async () => {
    const refused: Array<Record<string, string>> = [
      { host: 'evil.example' },
      { host: `127.0.0.1:${served.url.port}`, origin: 'http://evil.example' },
    ];
    for (const headers of refused) {
      const res = await raw(served.url, { headers: { ...JSON_HEADERS, ...headers }, body: INIT });
      expect(res.status, JSON.stringify(headers)).toBe(403);
    }
    const local = await raw(served.url, {
      headers: { ...JSON_HEADERS, host: `localhost:${served.url.port}`, origin: `http://localhost:${served.url.port}` },
      body: INIT,
    });
    expect(local.status).toBe(200);
    const id = local.headers['mcp-session-id'] as string;
    await raw(served.url, { method: 'DELETE', headers: { 'mcp-session-id': id } });
    expect(served.handler.sessions).toBe(0);
  });

  it('holds at most maxSessions sessions', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await raw(served.url, { headers: JSON_HEADERS, body: INIT });
      expect(res.status).toBe(200);
      ids.push(res.headers['mcp-session-id'] as string);
    }
    const third = await raw(served.url, { headers: JSON_HEADERS, body: INIT });
    expect(third.status).toBe(503);
    expect(JSON.parse(third.body).error.message).toMatch(/Too many MCP sessions/);
    for (const id of ids) await raw(served.url, { method: 'DELETE', headers: { 'mcp-session-id': id } });
    expect(served.handler.sessions).toBe(0);
  });
});

describe('the Streamable HTTP handler under the policy', () => {
  it('asks for an approval on the call’s own stream (elicitation) and runs the call once the client approves', async () => {
    const workspace = makeWorkspace();
    const policy = scenarioPolicy(workspace) as { tools: Record<string, Record<string, unknown>> };
    policy.tools['file-stats']!.approval = 'required';
    workspace.writePolicy(policy);
    const served = await serve(workspace.store, undefined, {}, workspace.policy);
    try {
      const client = new Client({ name: 'http-approver', version: '1' }, { capabilities: { roots: {}, elicitation: {} } });
      client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: workspace.uri(workspace.root) }] }));
      const asked: string[] = [];
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params.message);
        return { action: 'accept', content: { decision: 'approve' } };
      });
      await client.connect(new StreamableHTTPClientTransport(served.url));
      const result = await client.callTool({ name: 'file-stats', arguments: {} });
      expect(result.isError, JSON.stringify(result)).toBeFalsy();
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain(`/workspace → ${workspace.root} (read)`);
      const [approval] = await served.corral.store!.listApprovals();
      expect(approval).toMatchObject({ status: 'done', decided_by: 'mcp-client:http-approver', requested_by: 'mcp:http-approver' });
      await client.close();
    } finally {
      await served.close();
      workspace.cleanup();
    }
  });
});
