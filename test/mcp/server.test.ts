// @corral/mcp on its own, through the SDK's in-memory transport: what it lists, what it binds, what it hands to invoke.
import { describe, expect, it } from 'vitest';
import {
  MemoryStore,
  PolicyGate,
  Registry,
  fixedPolicy,
  type InvokeOptions,
  type InvokeResult,
  type Policy,
  type Tool,
} from '@corral/core';
import { createMcpServer, type McpServerOptions } from '@corral/mcp';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { MODULE_BYTES, moduleVariant } from '../../packages/core/test/helpers.js';
import { connectClient } from './helpers.js';

interface Call {
  tool: Tool;
  input: unknown;
  options: InvokeOptions | undefined;
}

/** A registry of fake tools and an invokeTool that records what it was given and answers `answer`. */
async function fakeCorral(specs: Array<Record<string, unknown>>, answer: (call: Call) => Partial<InvokeResult> = () => ({})) {
  const registry = new Registry();
  let tag = 0;
  for (const spec of specs) {
    await registry.register(
      { component: 't.wasm', input_schema: { type: 'object' }, ...spec },
      tag === 0 ? MODULE_BYTES : moduleVariant(tag),
    );
    tag++;
  }
  const calls: Call[] = [];
  return {
    registry,
    calls,
    async invokeTool(tool: Tool, input: unknown, options?: InvokeOptions): Promise<InvokeResult> {
      const call = { tool, input, options };
      calls.push(call);
      return {
        ok: true,
        tool: tool.spec.name,
        version: tool.spec.version,
        output: { ran: tool.spec.version },
        error: null,
        exit_code: 0,
        duration_ms: 1,
        stdout_head: '',
        stderr_tail: '',
        stdout_truncated: false,
        stderr_truncated: false,
        ...answer(call),
      } as InvokeResult; // a test's answer may be a failure: the spread decides which
    },
  };
}

/** Folders that "exist" for the fake resolver: file:///a/b → /a/b. */
const resolveIn =
  (folders: string[]) =>
  async (uri: string): Promise<string> => {
    const path = decodeURIComponent(new URL(uri).pathname).replace(/\/$/, '') || '/';
    if (!folders.includes(path)) throw new Error('no such folder');
    return path;
  };

async function connect(corral: Awaited<ReturnType<typeof fakeCorral>>, options: McpServerOptions = {}, roots?: string[]) {
  const mcp = createMcpServer(corral, { folderSource: (path) => ({ kind: 'folder', path }), ...options });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverSide);
  const client = await connectClient(
    clientSide,
    roots?.map((uri) => ({ uri })),
  );
  return { mcp, ...client };
}

describe('@corral/mcp', () => {
  it('lists the version a call runs: the highest release, else the highest prerelease', async () => {
    const corral = await fakeCorral([
      { name: 'b', version: '1.0.0' },
      { name: 'b', version: '2.0.0' },
      { name: 'b', version: '3.0.0-rc.1' },
      { name: 'a', version: '0.1.0-beta.2' },
    ]);
    const { client } = await connect(corral);
    const { tools } = await client.listTools();
    expect(tools.map((t) => [t.name, t._meta?.['corral/version']])).toEqual([
      ['a', '0.1.0-beta.2'],
      ['b', '2.0.0'],
    ]);
    const result = await client.callTool({ name: 'b', arguments: { x: 1 } });
    expect(result.structuredContent).toEqual({ ran: '2.0.0' });
    expect(corral.calls[0]).toMatchObject({ input: { x: 1 }, options: { mounts: [] } });
    expect(corral.calls[0]!.options!.signal).toBeInstanceOf(AbortSignal);
  });

  it('leaves out, and refuses to call, a tool whose input schema MCP cannot carry; drops an output schema it cannot', async () => {
    const logged: string[] = [];
    const corral = await fakeCorral(
      [
        { name: 'any-input', version: '1.0.0', input_schema: true },
        { name: 'string-input', version: '1.0.0', input_schema: { type: 'string' } },
        { name: 'bool-prop', version: '1.0.0', input_schema: { type: 'object', properties: { x: true } } },
        { name: 'array-out', version: '1.0.0', output_schema: { type: 'array' } },
      ],
      () => ({ output: [1, 2] }),
    );
    const { client } = await connect(corral, { log: (m) => logged.push(m) });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['array-out']);
    expect(tools[0]!.outputSchema).toBeUndefined();
    await client.listTools();
    expect(logged.filter((m) => m.startsWith('not offered over MCP'))).toHaveLength(3); // once each, not per listing
    await expect(client.callTool({ name: 'any-input', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    const result = await client.callTool({ name: 'array-out', arguments: {} });
    expect(result.structuredContent).toBeUndefined();
    expect(result.content).toEqual([{ type: 'text', text: '[1,2]' }]);
  });

  it('a failed call is isError with the code in text and the whole error in _meta, the snapshot id beside it', async () => {
    const error = {
      code: 'E_RESOURCE_EXHAUSTED' as const,
      message: 'timed out after 5000 ms',
      details: { resource: 'time' as const, timeout_ms: 5000 },
      retryable: true,
    };
    const corral = await fakeCorral([{ name: 't', version: '1.0.0', output_schema: { type: 'object' } }], () => ({
      ok: false,
      output: null,
      error,
      snapshot: { id: 'snap-1' },
    }));
    const { client } = await connect(corral);
    await client.listTools();
    const result = await client.callTool({ name: 't', arguments: {} });
    expect(result).toEqual({
      content: [{ type: 'text', text: 'E_RESOURCE_EXHAUSTED: timed out after 5000 ms' }],
      isError: true,
      _meta: { 'corral/version': '1.0.0', 'corral/snapshot': { id: 'snap-1' }, 'corral/error': error },
    });
  });

  it('binds every declared mount, with its declared access, to the first root or the folder asked for', async () => {
    const corral = await fakeCorral([
      {
        name: 'two',
        version: '1.0.0',
        mounts: [
          { guest: '/workspace', access: 'read-write' },
          { guest: '/ref', access: 'read' },
        ],
      },
    ]);
    const resolveFolder = resolveIn(['/home/me/p', '/home/me/p/docs', '/home/me/q']);
    const { client } = await connect(corral, { resolveFolder }, ['file:///home/me/p', 'file:///home/me/q']);
    const listed = (await client.listTools()).tools[0]!;
    expect(listed.annotations).toEqual({ readOnlyHint: false, openWorldHint: false });
    await client.callTool({ name: 'two', arguments: {} });
    expect(corral.calls[0]!.options!.mounts).toEqual([
      { guest: '/workspace', access: 'read-write', source: { kind: 'folder', path: '/home/me/p' } },
      { guest: '/ref', access: 'read', source: { kind: 'folder', path: '/home/me/p' } },
    ]);
    await client.callTool({
      name: 'two',
      arguments: {},
      _meta: { 'corral/mounts': { '/ref': 'file:///home/me/q', '/workspace': 'file:///home/me/p/docs' } },
    });
    expect(corral.calls[1]!.options!.mounts).toEqual([
      { guest: '/workspace', access: 'read-write', source: { kind: 'folder', path: '/home/me/p/docs' } },
      { guest: '/ref', access: 'read', source: { kind: 'folder', path: '/home/me/q' } },
    ]);
    // '/home/me/p2' starts with '/home/me/p' but is not inside it.
    const sibling = await connect(corral, { resolveFolder: resolveIn(['/home/me/p', '/home/me/p2']) }, ['file:///home/me/p']);
    const refused = await sibling.client.callTool({
      name: 'two',
      arguments: {},
      _meta: { 'corral/mounts': { '/ref': 'file:///home/me/p2' } },
    });
    expect(refused.isError).toBe(true);
    expect(corral.calls).toHaveLength(2);
  });

  it('a tool without mounts refuses a corral/mounts request; one with mounts needs a folder resolver', async () => {
    const corral = await fakeCorral([
      { name: 'plain', version: '1.0.0' },
      { name: 'mounted', version: '1.0.0', mounts: [{ guest: '/workspace', access: 'read' }] },
    ]);
    const { client } = await connect(corral, {}, ['file:///x']);
    const plain = await client.callTool({ name: 'plain', arguments: {}, _meta: { 'corral/mounts': { '/workspace': 'file:///x' } } });
    expect(plain._meta?.['corral/error']).toMatchObject({ code: 'E_INPUT_VALIDATION', details: { reason: 'bad_mounts_meta' } });
    const mounted = await client.callTool({ name: 'mounted', arguments: {} });
    expect(mounted._meta?.['corral/error']).toMatchObject({ details: { reason: 'no_folder_resolver' } });
    expect(corral.calls).toHaveLength(0);
  });

  it('asks for roots once, again after roots/list_changed, and again after a failed answer', async () => {
    const corral = await fakeCorral([{ name: 'm', version: '1.0.0', mounts: [{ guest: '/workspace', access: 'read' }] }]);
    const { client, setRoots, rootsAsked } = await connect(corral, { resolveFolder: resolveIn(['/a', '/b']) }, ['file:///a']);
    await client.callTool({ name: 'm', arguments: {} });
    await client.callTool({ name: 'm', arguments: {} });
    expect(rootsAsked()).toBe(1);
    await setRoots([{ uri: 'file:///b' }]);
    await new Promise((r) => setTimeout(r, 20));
    await client.callTool({ name: 'm', arguments: {} });
    expect(rootsAsked()).toBe(2);
    expect(corral.calls.map((c) => c.options!.mounts![0]!.source?.path)).toEqual(['/a', '/a', '/b']);

    // A client that declares roots but fails to list them.
    const failing = createMcpServer(corral, {
      folderSource: (path) => ({ kind: 'folder', path }),
      resolveFolder: resolveIn(['/a']),
      rootsTimeoutMs: 200,
    });
    const [c, s] = InMemoryTransport.createLinkedPair();
    await failing.server.connect(s);
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { ListRootsRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const broken = new Client({ name: 'broken', version: '1' }, { capabilities: { roots: {} } });
    let answers = 0;
    broken.setRequestHandler(ListRootsRequestSchema, async () => {
      if (answers++ === 0) throw new Error('no roots today');
      return { roots: [{ uri: 'file:///a' }] };
    });
    await broken.connect(c);
    const first = await broken.callTool({ name: 'm', arguments: {} });
    expect(first._meta?.['corral/error']).toMatchObject({ details: { reason: 'roots_unavailable' } });
    const second = await broken.callTool({ name: 'm', arguments: {} });
    expect(second.isError).toBeFalsy();
  });

  it('toolsChanged is a no-op before the client initialized and after it left', async () => {
    const corral = await fakeCorral([{ name: 't', version: '1.0.0' }]);
    const early = createMcpServer(corral);
    await early.toolsChanged();
    const { mcp, client, nextToolsChanged } = await connect(corral);
    const changed = nextToolsChanged(2000);
    await mcp.toolsChanged();
    await mcp.toolsChanged(); // debounced with the first into one notice
    await changed;
    await client.close();
    await mcp.toolsChanged();
  });
});

describe('@corral/mcp with a policy gate', () => {
  /** A gate over a fixed policy and a store in memory; folders in `folders` "exist". */
  function gateFor(policy: Policy, folders: string[]) {
    const store = new MemoryStore();
    const gate = new PolicyGate({
      store,
      policy: fixedPolicy(policy),
      host: {
        mountSource: (path) => ({ kind: 'folder', path }),
        realpath: async (path) => {
          if (!folders.includes(path)) throw new Error('ENOENT');
          return path;
        },
      },
    });
    return { gate, store };
  }
  const mountTool = { name: 'm', version: '1.0.0', mounts: [{ guest: '/workspace', access: 'read-write' }] };

  it('decides on the folders the roots give: a grant narrows access, a folder it does not grant is refused and recorded', async () => {
    const corral = await fakeCorral([mountTool]);
    const { gate, store } = gateFor({ version: 1, tools: { m: { mounts: { '/workspace': [{ folder: '/a', access: 'read' }] } } } }, [
      '/a',
      '/b',
    ]);
    const { client } = await connect(corral, { gate, resolveFolder: resolveIn(['/a', '/b']) }, ['file:///a', 'file:///b']);
    const allowed = await client.callTool({ name: 'm', arguments: {} });
    expect(allowed.isError).toBeFalsy();
    expect(corral.calls[0]!.options!.mounts).toEqual([{ guest: '/workspace', access: 'read', source: { kind: 'folder', path: '/a' } }]);
    const refused = await client.callTool({ name: 'm', arguments: {}, _meta: { 'corral/mounts': { '/workspace': 'file:///b' } } });
    expect(refused._meta?.['corral/error']).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'not_granted', folder: '/b' } });
    const outside = await client.callTool({ name: 'm', arguments: {}, _meta: { 'corral/mounts': { '/workspace': 'file:///c' } } });
    expect(outside._meta?.['corral/error']).toMatchObject({ code: 'E_INPUT_VALIDATION', details: { reason: 'not_a_folder' } });
    expect(corral.calls).toHaveLength(1);
    expect((await store.listAudit()).map((e) => [e.action, e.actor, e.detail.reason]).reverse()).toEqual([
      ['deny', 'mcp:corral-test', 'not_granted'],
      ['deny', 'mcp:corral-test', 'not_a_folder'],
    ]);
  });

  it('the approval form shows the call bounded and escaped, whatever the model and the client put in it', async () => {
    const corral = await fakeCorral([{ ...mountTool, input_schema: { type: 'object' } }]);
    const { gate, store } = gateFor(
      {
        version: 1,
        tools: { m: { approval: 'required', approval_scope: 'tool', mounts: { '/workspace': [{ folder: '/a', access: 'read' }] } } },
      },
      ['/a'],
    );
    const mcp = createMcpServer(corral, { gate, resolveFolder: resolveIn(['/a']), approvalsOutOfBand: false });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await mcp.server.connect(serverSide);
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { ElicitRequestSchema, ListRootsRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const client = new Client(
      { name: 'ed\u001b[2J\u202eitor'.padEnd(200, 'x'), version: '1' },
      { capabilities: { roots: {}, elicitation: {} } },
    );
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///a' }] }));
    const messages: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      messages.push(request.params.message);
      return { action: 'accept', content: { decision: 'approve', scope: 'tool' } };
    });
    await client.connect(clientSide);
    const result = await client.callTool({ name: 'm', arguments: { note: `line\nfake: approved\u202e${'y'.repeat(10_000)}` } });
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    const [message] = messages as [string];
    expect(message.length).toBeLessThanOrEqual(4000);
    expect(message).not.toContain('\u001b');
    expect(message).not.toContain('\u202e');
    expect(message).toContain('\\u202e');
    expect(message.split('\n').filter((l) => l.startsWith('fake:'))).toEqual([]);
    expect(message).toContain('nothing else can decide it'); // no store a terminal could reach
    const [approval] = await store.listApprovals();
    expect(approval!.decided_by).toMatch(/^mcp-client:ed\\u001b\[2J\\u202eitorx+…$/);
    expect(approval!.decided_by!.length).toBeLessThanOrEqual('mcp-client:'.length + 64 + 1);
    expect(approval!.scope).toBe('tool');
  });
});
