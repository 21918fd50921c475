// `corral mcp` as a real subprocess, with the official SDK client as the peer over stdio.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, readStore, EXAMPLE_DIFF, ROOT, connectClient, makeWorkspace } from './helpers.js';
import { mcpScenarios } from './scenarios.js';
import { SqliteStore } from '@corral/node';

/** The environment the server runs with: this one (the test run's own store and cache), minus nothing. */
const env = () => Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));

/** A `corral mcp` subprocess over `workspace`, as an MCP client starts one. */
function mcpTransport(workspace: ReturnType<typeof makeWorkspace>): StdioClientTransport {
  return new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--tools', workspace.tools, '--store', workspace.store, '--policy', workspace.policy],
    cwd: ROOT,
    env: env(),
    stderr: 'pipe',
  });
}

mcpScenarios('corral mcp over stdio', async () => {
  const workspace = makeWorkspace();
  const transports: StdioClientTransport[] = [];
  return {
    workspace,
    async connect(roots) {
      // Every stdio client starts its own server, as MCP clients do.
      const transport = mcpTransport(workspace);
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
    },
  };
});

/** An answer as it came on stdout: a result, or a JSON-RPC error. */
interface RawAnswer {
  id: number;
  result?: { isError?: boolean; content: { text: string }[]; structuredContent?: unknown; _meta?: Record<string, unknown> };
  error?: unknown;
}

/** `corral mcp ARGS` on raw pipes, with what it has written so far on each, and ways to talk to it. */
function rawMcp(workspace: { tools: string; store: string }, args: string[] = []) {
  const child = spawn(process.execPath, [CLI, 'mcp', '--tools', workspace.tools, '--store', workspace.store, ...args], {
    cwd: ROOT,
    env: process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const io = {
    child,
    stdout: '',
    stderr: '',
    send: (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`),
    until: (ok: () => boolean) =>
      new Promise<void>((resolve) => {
        const check = () => (ok() ? resolve() : setTimeout(check, 20));
        check();
      }),
    /** `initialize` with the client's `capabilities`, answered, then `notifications/initialized`. */
    async initialize(capabilities: object = {}) {
      io.send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'raw', version: '1' } },
      });
      await io.until(() => io.stdout.includes('"id":1'));
      io.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    },
    /** Close stdin as MCP clients do to stop the server: its exit code, and how long it took to exit. */
    async closeStdin(): Promise<{ code: number | null; ms: number }> {
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      const closedAt = Date.now();
      child.stdin.end();
      const code = await exited;
      return { code, ms: Date.now() - closedAt };
    },
    /** The answer to request `id`, once it has come. */
    answer: (id: number): RawAnswer | undefined =>
      io.stdout
        .split('\n')
        .filter((line) => line.includes(`"id":${id}`) && !line.includes('"method"'))
        .map((line) => JSON.parse(line) as RawAnswer)[0],
  };
  child.stdout.on('data', (d: Buffer) => (io.stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (io.stderr += d.toString('utf8')));
  return io;
}

/** `corral mcp` under a policy that makes diff-summary wait for approval, with call 2 of it waiting. */
async function callWaitingForApproval() {
  const workspace = makeWorkspace();
  workspace.writePolicy({ version: 1, tools: { 'diff-summary': { approval: 'required' } } });
  const io = rawMcp(workspace, ['--policy', workspace.policy]);
  await io.initialize();
  io.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'diff-summary', arguments: EXAMPLE_DIFF } });
  await io.until(() => /waits for a decision/.test(io.stderr));
  return { workspace, io };
}

describe('corral mcp on stdio', () => {
  it('writes nothing but JSON-RPC on stdout, logs on stderr, and exits 0 when the client closes stdin', async () => {
    const workspace = makeWorkspace();
    try {
      const io = rawMcp(workspace);
      const { child } = io;
      const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
      const responses = (n: number) =>
        new Promise<void>((resolve) => {
          const check = () => (io.stdout.split('\n').filter((l) => l.includes('"id"')).length >= n ? resolve() : setTimeout(check, 20));
          check();
        });
      send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      });
      await responses(1);
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'diff-summary', arguments: EXAMPLE_DIFF } });
      send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'diff-summary', arguments: { diff: 5 } } });
      send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'nope' } });
      // A tool that writes to its own io.stdout: that must stay inside the sandbox.
      send({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'diff-summary', arguments: { diff: 'not a diff at all' } } });
      await responses(6);
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.stdin.end();
      expect(await exited).toBe(0);

      const lines = io.stdout.split('\n');
      expect(lines.pop()).toBe(''); // every message ends with a newline
      const messages = lines.map((line) => JSON.parse(line) as { jsonrpc: string; id?: number; result?: unknown; error?: unknown });
      for (const m of messages) expect(m.jsonrpc).toBe('2.0');
      // Calls run concurrently, so answers come in any order.
      expect(messages.map((m) => m.id).sort()).toEqual([1, 2, 3, 4, 5, 6]);
      const answer = (id: number) => messages.find((m) => m.id === id);
      expect(answer(3)).toMatchObject({ result: { structuredContent: { totals: { files: 3 } } } });
      expect(answer(4)).toMatchObject({ result: { isError: true } });
      expect(answer(5)).toMatchObject({ error: { code: -32602 } });
      expect(answer(6)).toMatchObject({ result: { isError: true, content: [{ text: expect.stringMatching(/^E_UNEXPECTED_EXIT/) }] } });
      expect(io.stderr).toMatch(/^corral mcp: serving \d+ tool\(s\) over stdio$/m);
      expect(existsSync(workspace.store)).toBe(true);
    } finally {
      workspace.cleanup();
    }
  });

  // Before: the call went on waiting for an approval nobody could give any more, and the process with it
  // (10 minutes by default), until the client's SIGTERM.
  it('a client that closes stdin while a call waits for approval gets its answer at once, and the server exits; the approval stays pending', async () => {
    const { workspace, io } = await callWaitingForApproval();
    try {
      const closed = await io.closeStdin();
      expect(closed.code).toBe(0);
      expect(closed.ms).toBeLessThan(20_000);

      const answer = io.answer(2);
      expect(answer?.result?.isError).toBe(true);
      expect(answer?.result?.content[0]?.text).toMatch(
        /^E_POLICY_DENIED: The client closed the connection while the call of diff-summary.* stays pending/,
      );
      expect(answer?.result?._meta?.['corral/error']).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'client_closed' } });
      const approvals = await readStore(workspace.store, (store) => store.listApprovals());
      expect(approvals.map((a) => [a.tool, a.status])).toEqual([['diff-summary', 'pending']]);
    } finally {
      io.child.kill('SIGKILL');
      workspace.cleanup();
    }
  }, 60_000);

  // Before: approved with `corral approve` a moment before the client closed stdin (between two of the server's
  // polls of the store, up to a second apart), the call was answered client_closed, "stays pending: approve it",
  // and did not run, though a person had approved it.
  it('a call approved just before the client closes stdin runs, and is not answered as pending', async () => {
    const { workspace, io } = await callWaitingForApproval();
    try {
      const id = /approval ([0-9a-f-]{36}):/.exec(io.stderr)![1]!;
      // The server polls the store every second by now: the approval below lands between two polls.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      // As `corral approve` records it, from another process's handle on the store (which does not wake the server).
      const store = await SqliteStore.open(workspace.store);
      try {
        const [a] = await store.listApprovals();
        expect(a?.id).toBe(id);
        await store.updateApproval(id, ['pending'], {
          status: 'approved',
          decided_by: 'cli:ada',
          decided_ns: a!.requested_ns,
          scope: 'once',
        });
      } finally {
        await store.close();
      }
      expect((await io.closeStdin()).code).toBe(0);
      const answer = io.answer(2);
      expect(answer?.result?.content[0]?.text).not.toMatch(/client_closed|stays pending/);
      expect(answer?.result?.isError).toBeFalsy();
      expect(answer?.result?.structuredContent).toMatchObject({ totals: {} });
      const approvals = await readStore(workspace.store, (store) => store.listApprovals());
      expect(approvals.map((a) => [a.id, a.status])).toEqual([[id, 'done']]);
    } finally {
      io.child.kill('SIGKILL');
      workspace.cleanup();
    }
  }, 60_000);

  // Before: the call waited out the roots/list timeout (10 s) for a client that could no longer answer.
  it('a client that closes stdin while the server asks for its roots gets its answer at once, and the server exits', async () => {
    const workspace = makeWorkspace();
    const io = rawMcp(workspace, ['--policy', workspace.policy]);
    try {
      await io.initialize({ roots: {} });
      io.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'file-stats', arguments: {} } });
      await io.until(() => io.stdout.includes('"method":"roots/list"'));
      const closed = await io.closeStdin();
      expect(closed.code).toBe(0);
      expect(closed.ms).toBeLessThan(5_000);
      expect(io.answer(2)?.result?._meta?.['corral/error']).toMatchObject({
        code: 'E_INPUT_VALIDATION',
        details: { reason: 'roots_unavailable' },
      });
    } finally {
      io.child.kill('SIGKILL');
      workspace.cleanup();
    }
  }, 60_000);

  it('a message over 10 MiB is answered with an error to its request, and the session goes on', async () => {
    const workspace = makeWorkspace();
    const transport = mcpTransport(workspace);
    let stderr = '';
    transport.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    try {
      const { client } = await connectClient(transport);
      // Over 10 MiB: the SDK's own transport closed the session here, and every later call waited for nothing.
      const big = client.callTool({ name: 'diff-summary', arguments: { diff: 'x'.repeat(11 * 2 ** 20) } });
      await expect(big).rejects.toMatchObject({ code: -32600, data: { reason: 'message_too_large' } });
      const after = await client.callTool({ name: 'diff-summary', arguments: EXAMPLE_DIFF });
      expect(after).toMatchObject({ structuredContent: { totals: { files: 3 } } });
      expect(stderr).toMatch(/a message over 10485760 bytes was dropped \(request id \d+\)/);
      await client.close();
    } finally {
      await transport.close();
      workspace.cleanup();
    }
  });

  it('a line that is not JSON, or not JSON-RPC, is answered with the JSON-RPC error (id null), logged, and the next is served', async () => {
    const workspace = makeWorkspace();
    try {
      const io = rawMcp(workspace);
      const { child } = io;
      const messages = () =>
        io.stdout
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { id?: unknown; error?: { code: number } });
      const init = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } };
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: init })}\n`);
      await expect.poll(() => messages().length, { timeout: 15_000 }).toBe(1);
      child.stdin.write(
        '{"jsonrpc":"2.0","method":"notifications/initialized"}\nnot json\n[1, 2]\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n',
      );
      await expect.poll(() => messages().length).toBe(4);
      expect(messages().slice(1)).toEqual([
        { jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.any(String) } },
        { jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.any(String) } },
        { jsonrpc: '2.0', id: 2, result: {} },
      ]);
      expect(io.stderr).toMatch(/a line that is not JSON was dropped/);
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.stdin.end();
      expect(await exited).toBe(0);
    } finally {
      workspace.cleanup();
    }
  });

  it('--help and misuse do not start a server', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, 'mcp', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d));
        child.stderr.on('data', (d: Buffer) => (stderr += d));
        child.once('exit', (code) => resolve({ code, stdout, stderr }));
      });
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^corral mcp \[--tools DIR\]/);
    const bad = await run(['--store', 'x.db', '--no-store']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--store PATH or --no-store/);
    expect((await run(['--frob'])).code).toBe(2);
  });
});
