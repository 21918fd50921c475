/**
 * Workflows over MCP: `corral mcp --workflows DIR` as a real subprocess and
 * the official SDK client. Each workflow is a tool with its inputs as the
 * schema; a run that waits is a result that says how to approve; the client's
 * user is asked by elicitation when it can be, and otherwise `corral approve`
 * in a terminal lets the server continue the run. A step reaches only
 * folders inside the client's roots that the policy grants.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  ElicitRequestSchema,
  ListRootsRequestSchema,
  type CallToolResult,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { spawn } from 'node:child_process';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLI, FIXTURE_TOOLS, ROOT, connectClient, makeWorkspace, readStore, type Workspace } from './helpers.js';

type Result = CallToolResult & { _meta?: Record<string, unknown> };
// biome-ignore lint/suspicious/noExplicitAny: tests read whatever shape the server answered and assert on it
const structured = (r: Result) => r.structuredContent as any;

function workflowDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'corral-mcp-workflows-'));
  writeFileSync(
    join(dir, 'hello.yaml'),
    `name: hello
description: Echo a greeting, ask a person, echo again.
inputs:
  who: { type: string, description: Whom to greet }
  times: { type: integer, default: 1 }
outputs:
  said: "{{ steps.first.output.greeting }}"
steps:
  - id: first
    tool: echo
    input: { greeting: "hello {{ inputs.who }}" }
  - id: ok
    depends_on: [first]
    approval: { prompt: "Greet {{ inputs.who }} again?" }
  - id: after
    tool: echo
    depends_on: [ok]
    input: { again: true }
`,
  );
  writeFileSync(
    join(dir, 'stats.yaml'),
    `name: stats
inputs:
  workspace: { type: object }
outputs:
  files: "{{ steps.count.output.totals.files }}"
steps:
  - id: count
    tool: file-stats
    mounts: [{ guest: /workspace, source: "{{ inputs.workspace }}" }]
`,
  );
  return dir;
}

const envFor = (w: Workspace) => ({
  ...Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
  CORRAL_POLICY: w.policy,
  CORRAL_STORE: w.store,
});

interface Session {
  client: Client;
  asked: ElicitRequest['params'][];
  stderr: () => string;
  call(name: string, args: Record<string, unknown>): Promise<Result>;
}

const open: Array<{ close(): Promise<void> }> = [];
const cleanups: Array<() => void> = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  for (const c of cleanups.splice(0)) c();
});

async function connect(w: Workspace, dir: string, answer?: (p: ElicitRequest['params']) => ElicitResult): Promise<Session> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--store', w.store, '--policy', w.policy, '--tools', join(FIXTURE_TOOLS, 'echo'), '--workflows', dir],
    cwd: ROOT,
    env: { ...envFor(w), CORRAL_STORE: process.env.CORRAL_STORE! },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const client = new Client(
    { name: 'workflow-test', version: '1.0.0' },
    { capabilities: { roots: {}, ...(answer ? { elicitation: {} } : {}) } },
  );
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: w.uri(w.root) }] }));
  const asked: ElicitRequest['params'][] = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return answer(request.params);
    });
  }
  await client.connect(transport);
  // The client checks structured results against the output schemas it listed.
  await client.listTools();
  open.push(client);
  return {
    client,
    asked,
    stderr: () => stderr,
    call: (name, args) => client.callTool({ name, arguments: args }) as Promise<Result>,
  };
}

function workspace(): Workspace {
  const w = makeWorkspace();
  cleanups.push(w.cleanup);
  return w;
}

describe('corral mcp --workflows', () => {
  it('offers each workflow as a tool with its inputs as the schema; a step reaches only granted folders inside the roots', async () => {
    const w = workspace();
    const s = await connect(w, workflowDir());
    const { tools } = await s.client.listTools();
    const hello = tools.find((t) => t.name === 'workflow-hello')!;
    expect(hello).toMatchObject({
      description: expect.stringContaining('Echo a greeting, ask a person, echo again.'),
      inputSchema: {
        type: 'object',
        properties: { who: { type: 'string', description: 'Whom to greet' }, times: { type: 'integer', default: 1 } },
        required: ['who'],
        additionalProperties: false,
      },
      outputSchema: { type: 'object', required: ['runId', 'workflow', 'status', 'steps'] },
      _meta: { 'corral/workflow': 'hello' },
    });
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'file-stats', 'workflow-stats', 'workflow-runs']));

    // The client's root, which the policy grants: counted.
    const ok = await s.call('workflow-stats', { workspace: { kind: 'host', path: w.root } });
    expect(ok.isError, JSON.stringify(ok)).toBeFalsy();
    expect(structured(ok)).toMatchObject({ status: 'succeeded', outputs: { files: 2 } });
    expect(structured(ok).runId).toMatch(/^mcp-/);
    // Granted by the policy, but outside the client's roots: a direct call could not, so neither can the workflow.
    const outside = await s.call('workflow-stats', { workspace: { kind: 'host', path: w.outside } });
    expect(outside.isError).toBe(true);
    expect(structured(outside)).toMatchObject({ status: 'failed', error: { code: 'E_POLICY_DENIED', step: 'count' } });
    expect(structured(outside).steps[0].error.message).toContain('outside the folders the caller exposed');
    // A link inside the root that leads out, and a folder nobody granted.
    for (const path of [join(w.root, 'link'), '/etc', w.ungranted]) {
      const r = await s.call('workflow-stats', { workspace: { kind: 'host', path } });
      expect(structured(r), path).toMatchObject({ status: 'failed', error: { code: 'E_POLICY_DENIED' } });
    }
    const refused = await readStore(w.store, (store) => store.listAudit({ action: 'deny' }));
    expect(refused.length).toBe(4);
    expect(refused.every((e) => e.actor === 'mcp:workflow-test')).toBe(true);
    // Bad arguments are the model's to fix, not a run.
    const bad = await s.call('workflow-hello', { who: 'x', admin: true });
    expect(bad.isError).toBe(true);
    expect((bad.content[0] as { text: string }).text).toMatch(/^E_INPUT_VALIDATION: .*admin: is not an input/);
    await expect(s.call('workflow-nope', {})).rejects.toMatchObject({ code: -32602 });
    // workflow-runs shows runs started over MCP only.
    const shown = await s.call('workflow-runs', { run_id: structured(ok).runId });
    expect(structured(shown)).toMatchObject({ status: 'succeeded', outputs: { files: 2 }, pending: [] });
    expect((await s.call('workflow-runs', { run_id: 'http-00000000-0000-0000-0000-000000000000' })).isError).toBe(true);
  });

  it('asks the client’s user to approve a waiting step (elicitation), and the run goes on in the same call', async () => {
    const w = workspace();
    let reply: ElicitResult = { action: 'accept', content: { decision: 'approve' } };
    const s = await connect(w, workflowDir(), () => reply);
    const r = await s.call('workflow-hello', { who: 'ada' });
    expect(r.isError, JSON.stringify(r)).toBeFalsy();
    expect(structured(r)).toMatchObject({ workflow: 'hello', status: 'succeeded', outputs: { said: 'hello ada' } });
    expect(s.asked).toHaveLength(1);
    expect(s.asked[0]!.message).toContain('a workflow step waits for your approval');
    expect(s.asked[0]!.message).toContain('Greet ada again?');
    const approvals = await readStore(w.store, (store) => store.listApprovals({ workflowRunId: structured(r).runId }));
    expect(approvals).toEqual([
      expect.objectContaining({
        status: 'approved',
        decided_by: 'mcp-client:workflow-test',
        caller: expect.objectContaining({ kind: 'mcp' }),
      }),
    ]);

    // Declined in the client: the step is rejected, and the run fails.
    reply = { action: 'decline' };
    const declined = await s.call('workflow-hello', { who: 'bo' });
    expect(declined.isError).toBe(true);
    expect(structured(declined)).toMatchObject({ status: 'failed', error: { code: 'E_POLICY_DENIED', step: 'ok' } });
  });

  // Before: the run's question stayed open after the client closed stdin, and the process with it (10 minutes by default).
  it('a client that closes stdin while it is being asked about a step gets the waiting run at once, and the server exits', async () => {
    const w = workspace();
    const child = spawn(
      process.execPath,
      [CLI, 'mcp', '--store', w.store, '--policy', w.policy, '--tools', join(FIXTURE_TOOLS, 'echo'), '--workflows', workflowDir()],
      { cwd: ROOT, env: envFor(w), stdio: ['pipe', 'pipe', 'pipe'] },
    );
    cleanups.push(() => child.kill('SIGKILL'));
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    const until = (text: string) =>
      new Promise<void>((resolve) => {
        const check = () => (stdout.includes(text) ? resolve() : setTimeout(check, 20));
        check();
      });
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'leaving', version: '1' } },
    });
    await until('"id":1');
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'workflow-hello', arguments: { who: 'ada' } } });
    await until('"method":"elicitation/create"');
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const closedAt = Date.now();
    child.stdin.end();
    expect(await exited).toBe(0);
    expect(Date.now() - closedAt).toBeLessThan(20_000);
    const answer = stdout
      .split('\n')
      .filter((line) => line.includes('"id":2') && line.includes('"result"'))
      .map((line) => JSON.parse(line) as { result: Result })[0];
    expect(structured(answer!.result)).toMatchObject({ workflow: 'hello', status: 'waiting', pending: [{ step: 'ok' }] });
    const approvals = await readStore(w.store, (store) => store.listApprovals({ workflowRunId: structured(answer!.result).runId }));
    expect(approvals.map((a) => a.status)).toEqual(['pending']);
  }, 60_000);

  it('without elicitation, a waiting run is a result with its run id and how to approve; corral approve lets the server continue it', async () => {
    const w = workspace();
    const s = await connect(w, workflowDir());
    const r = await s.call('workflow-hello', { who: 'cy' });
    expect(r.isError).toBeFalsy();
    const waiting = structured(r);
    expect(waiting).toMatchObject({ status: 'waiting', pending: [{ step: 'ok', kind: 'approval', prompt: 'Greet cy again?' }] });
    const id = waiting.pending[0].approvalId;
    expect(waiting.message).toContain(`corral approve ${id}`);
    expect(waiting.message).toContain('You cannot approve it yourself');

    const approved = await promisify(execFile)(process.execPath, [CLI, 'approve', id, '--store', w.store, '--by', 'ada'], {
      cwd: ROOT,
      env: envFor(w),
    });
    expect(approved.stdout).toContain('that server continues it');
    const until = Date.now() + 20_000;
    let status: Record<string, unknown> = {};
    while (Date.now() < until) {
      status = structured(await s.call('workflow-runs', { run_id: waiting.runId }));
      if (status.status === 'succeeded') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toMatchObject({ status: 'succeeded', outputs: { said: 'hello cy' }, pending: [] });
  });

  it('corral serve --mcp offers the same workflow tools over Streamable HTTP, shared with the HTTP API', async () => {
    const w = workspace();
    const child = spawn(
      process.execPath,
      [
        CLI,
        'serve',
        '--mcp',
        '--port',
        '0',
        '--workers',
        '1',
        '--quiet',
        '--store',
        w.store,
        '--policy',
        w.policy,
        '--workflows',
        workflowDir(),
        '--tools',
        join(FIXTURE_TOOLS, 'echo'),
      ],
      { cwd: ROOT, env: { ...process.env, CORRAL_TOKEN: undefined, CORRAL_APPROVER_TOKEN: undefined }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    open.push({ close: async () => void (child.exitCode === null && child.kill('SIGKILL')) });
    const url = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString('utf8');
        const found = /on (http:\/\/\S+) /.exec(stdout)?.[1];
        if (found) resolve(found);
      });
      void exited.then((code) => reject(new Error(`corral serve exited ${code}: ${stderr}`)));
    });
    const { client } = await connectClient(new StreamableHTTPClientTransport(new URL('/mcp', url)), [{ uri: w.uri(w.root) }]);
    open.push(client);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['workflow-hello', 'workflow-stats', 'workflow-runs']));
    const r = (await client.callTool({ name: 'workflow-stats', arguments: { workspace: { kind: 'host', path: w.root } } })) as Result;
    expect(structured(r)).toMatchObject({ status: 'succeeded', outputs: { files: 2 } });
    const outside = (await client.callTool({
      name: 'workflow-stats',
      arguments: { workspace: { kind: 'host', path: w.outside } },
    })) as Result;
    expect(structured(outside)).toMatchObject({ status: 'failed', error: { code: 'E_POLICY_DENIED' } });
    // The same run through the HTTP API.
    const status = await fetch(new URL(`/workflows/runs/${structured(r).runId}`, url)).then((res) => res.json());
    expect(status.run).toMatchObject({ workflow: 'stats', status: 'succeeded' });
  });
});
