// `corral serve --mcp` as a real subprocess: the same MCP scenarios over the
// HTTP API's /mcp endpoint, with the official SDK client as the peer.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLI, readStore, ROOT, connectClient, makeWorkspace } from './helpers.js';
import { mcpScenarios } from './scenarios.js';
import { SLOW_MS, metric, parsePrometheus, send, serve, slowToolDir } from '../http/helpers.js';

mcpScenarios('corral serve --mcp over Streamable HTTP', async () => {
  const workspace = makeWorkspace();
  const child = spawn(
    process.execPath,
    [CLI, 'serve', '--mcp', '--port', '0', '--workers', '1', '--quiet', '--tools', workspace.tools, '--store', workspace.store],
    // serve has no --policy flag yet: the policy comes from $CORRAL_POLICY.
    { cwd: ROOT, env: { ...process.env, CORRAL_TOKEN: undefined, CORRAL_POLICY: workspace.policy }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
      const found = /on (http:\/\/\S+) /.exec(stdout)?.[1];
      if (found) resolve(found);
    });
    void exited.then((code) => reject(new Error(`corral serve exited ${code}: ${stderr}`)));
  });
  const transports: StreamableHTTPClientTransport[] = [];
  return {
    workspace,
    async connect(roots) {
      const transport = new StreamableHTTPClientTransport(new URL('/mcp', url));
      transports.push(transport);
      return connectClient(
        transport,
        roots?.map((path) => ({ uri: workspace.uri(path) })),
      );
    },
    snapshot: (id) => readStore(workspace.store, (store) => store.getExecution(id)),
    audit: () => readStore(workspace.store, (store) => store.listAudit()),
    async close() {
      await Promise.all(transports.map((t) => t.close()));
      child.kill('SIGTERM');
      const code = await exited;
      if (code !== 0) throw new Error(`corral serve exited ${code} after SIGTERM: ${stderr}`);
    },
  };
});

describe('corral serve --mcp shutting down', () => {
  it('a call that outlives --shutdown-timeout is stopped and still answered over MCP (E_CANCELLED); exit 0', async () => {
    const store = join(mkdtempSync(join(tmpdir(), 'corral-serve-mcp-')), 'snapshots.db');
    const s = await serve(['--mcp', '--tools', dirname(await slowToolDir()), '--store', store, '--shutdown-timeout', '200', '--quiet']);
    try {
      const transport = new StreamableHTTPClientTransport(new URL('/mcp', s.url));
      const { client } = await connectClient(transport);
      const started = Date.now();
      const call = client.callTool({ name: 'slow', arguments: {} });
      for (let i = 0; metric(parsePrometheus((await send(s.url, '/metrics')).text), 'corral_calls_running') !== 1; i++) {
        if (i > 500) throw new Error('the slow call never started');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      s.child.kill('SIGTERM');
      // Stopped at the drain's end, not left to run on, and answered rather than cut off with the connection.
      const result = await call;
      expect(Date.now() - started).toBeLessThan(SLOW_MS);
      expect(result.isError).toBe(true);
      const error = (result._meta as Record<string, { code: string; message: string }>)['corral/error']!;
      expect(error.code).toBe('E_CANCELLED');
      expect(error.message).toMatch(/shutting down/);
      expect(await s.exited).toBe(0);
      const id = (result._meta as Record<string, { id: string }>)['corral/snapshot']!.id;
      expect(await readStore(store, (db) => db.getExecution(id))).toMatchObject({ status: 'failed', error_code: 'E_CANCELLED' });
      await client.close();
    } finally {
      s.child.kill('SIGKILL');
    }
  });
});
