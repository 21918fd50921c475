// `corral serve --mcp` as a real subprocess: the same MCP scenarios over the
// HTTP API's /mcp endpoint, with the official SDK client as the peer.
import { spawn } from 'node:child_process';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLI, readStore, ROOT, connectClient, makeWorkspace } from './helpers.js';
import { mcpScenarios } from './scenarios.js';

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
