/**
 * The policy over MCP as a user meets it: `corral mcp` as a real subprocess
 * with its own policy file and SQLite store in a temp folder, the official
 * SDK client as the peer (with roots, with or without elicitation), and
 * `corral policy`, `corral approve` as subprocesses changing things while
 * the server runs. The real file-stats tool, deny by default.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ApprovalRecord, AuditEvent } from '@corral/core';
import { SqliteStore } from '@corral/node';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  type CallToolResult,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { CLI, ROOT, makeWorkspace, type Workspace } from './helpers.js';

type Result = CallToolResult & { _meta?: Record<string, unknown> };
type CorralErrorJson = { code: string; message: string; details: Record<string, unknown> };
const errorOf = (r: Result) => r._meta?.['corral/error'] as CorralErrorJson | undefined;
const text = (r: Result) => (r.content[0] as { text: string }).text;

const CLIENT = 'policy-test';

/** The environment the CLI runs with: the test run's, pointed at this workspace's policy and store. */
const envFor = (w: Workspace) => ({
  ...Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
  CORRAL_POLICY: w.policy,
  CORRAL_STORE: w.store,
});

async function corral(w: Workspace, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [CLI, ...args], { cwd: ROOT, env: envFor(w) }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

async function fromStore<T>(w: Workspace, read: (store: SqliteStore) => Promise<T>): Promise<T> {
  const store = await SqliteStore.open(w.store, { readonly: true });
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}
const audit = (w: Workspace): Promise<AuditEvent[]> => fromStore(w, async (s) => (await s.listAudit()).reverse()); // oldest first
const approvals = (w: Workspace): Promise<ApprovalRecord[]> => fromStore(w, (s) => s.listApprovals());

interface Session {
  client: Client;
  /** notifications/message texts, in order. */
  logs: string[];
  /** elicitation/create requests the client got. */
  asked: ElicitRequest['params'][];
  stderr: () => string;
  /** Resolves with the first log text matching `re`. */
  log(re: RegExp, timeoutMs?: number): Promise<string>;
  stats(): Promise<Result>;
  close(): Promise<void>;
}

const open: Session[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

/**
 * `corral mcp` on this workspace's store and policy, and a client whose root is `w.root`. With `answer`,
 * the client supports form elicitation and answers each request with it.
 */
async function connect(
  w: Workspace,
  options: { answer?: (params: ElicitRequest['params']) => ElicitResult | Promise<ElicitResult>; args?: string[]; store?: boolean } = {},
): Promise<Session> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', ...(options.store === false ? ['--no-store'] : ['--store', w.store]), '--policy', w.policy, ...(options.args ?? [])],
    cwd: ROOT,
    // The server's default store stays the test run's, so its messages must name this one (--store).
    env: { ...envFor(w), CORRAL_STORE: process.env.CORRAL_STORE! },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const client = new Client(
    { name: CLIENT, version: '1.0.0' },
    { capabilities: { roots: {}, ...(options.answer ? { elicitation: {} } : {}) } },
  );
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: w.uri(w.root) }] }));
  const asked: ElicitRequest['params'][] = [];
  const answer = options.answer;
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return answer(request.params);
    });
  }
  const logs: string[] = [];
  let wake: (() => void)[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
    logs.push(String(n.params.data));
    for (const w of wake.splice(0)) w();
  });
  await client.connect(transport);
  const session: Session = {
    client,
    logs,
    asked,
    stderr: () => stderr,
    async log(re, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = logs.find((l) => re.test(l));
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no log message matching ${re}; got ${JSON.stringify(logs)}; stderr: ${stderr}`);
        await new Promise<void>((r) => {
          wake.push(r);
          setTimeout(r, 200);
        });
      }
    },
    stats: () => client.callTool({ name: 'file-stats', arguments: {} }) as Promise<Result>,
    async close() {
      wake = [];
      await client.close();
    },
  };
  open.push(session);
  return session;
}

/** A workspace whose policy lists nothing (deny by default for folders). */
function emptyWorkspace(): Workspace {
  const w = makeWorkspace();
  w.writePolicy({ version: 1 });
  cleanups.push(w.cleanup);
  return w;
}
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** Grant file-stats the workspace root, read-only, with more `corral policy grant` options. */
async function grant(w: Workspace, ...more: string[]): Promise<void> {
  const r = await corral(w, ['policy', 'grant', 'file-stats', '--mount', `${w.root}:/workspace:ro`, '--by', 'ada', ...more]);
  expect(r.code, r.stderr).toBe(0);
}

const ok = (r: Result) => {
  expect(r.isError, text(r)).toBeFalsy();
  expect(r.structuredContent).toMatchObject({ totals: { files: 2 } });
};

describe('corral mcp under the policy', () => {
  it('refuses a folder the policy does not grant; a grant and a revoke take effect without a restart; each step is in the audit trail', async () => {
    const w = emptyWorkspace();
    const s = await connect(w);
    const before = await s.stats();
    expect(before.isError).toBe(true);
    expect(text(before)).toMatch(
      /^E_POLICY_DENIED: file-stats@1\.0\.0 is not in the policy .*, so it gets no host folder .* Grant one with: corral policy grant file-stats --mount /,
    );
    expect(errorOf(before)).toMatchObject({
      code: 'E_POLICY_DENIED',
      details: { reason: 'not_granted', folder: w.root, policy: w.policy },
    });
    expect((await audit(w)).map((e) => [e.action, e.actor, e.tool, e.detail.reason])).toEqual([
      ['deny', `mcp:${CLIENT}`, 'file-stats', 'not_granted'],
    ]);

    await grant(w);
    ok(await s.stats());

    const revoked = await corral(w, ['policy', 'revoke', 'file-stats', '--mount', w.root, '--by', 'ada']);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(errorOf(await s.stats())).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'not_granted' } });

    expect((await audit(w)).map((e) => [e.action, e.actor])).toEqual([
      ['deny', `mcp:${CLIENT}`],
      ['grant', 'ada'],
      ['revoke', 'ada'],
      ['deny', `mcp:${CLIENT}`],
    ]);
    expect(s.stderr()).toContain(`corral mcp: policy: ${w.policy}`);
  });

  it('approval required: the client is asked (elicitation), and its approval runs the call, recorded as the client’s', async () => {
    const w = emptyWorkspace();
    await grant(w, '--approval', 'required', '--approval-scope', 'folder');
    let scope = 'once';
    const s = await connect(w, { answer: () => ({ action: 'accept', content: { decision: 'approve', scope } }) });
    ok(await s.stats());
    expect(s.asked).toHaveLength(1);
    const params = s.asked[0] as unknown as { message: string; requestedSchema: { properties: Record<string, { enum?: string[] }> } };
    expect(params.message).toContain('Tool: file-stats 1.0.0');
    expect(params.message).toContain(`/workspace → ${w.root} (read)`);
    expect(params.message).toContain(`Asked by: mcp:${CLIENT}`);
    expect(params.message).toMatch(/Input \(chosen by the model\): \{\}/);
    expect(params.message).toMatch(/corral approve [0-9a-f-]{36} --store /);
    // The policy's approval_scope (folder) bounds what the form offers.
    expect(params.requestedSchema.properties.decision!.enum).toEqual(['approve', 'reject']);
    expect(params.requestedSchema.properties.scope!.enum).toEqual(['once', 'folder']);

    // Once means once: the next call is asked again; a folder approval then covers the calls after it.
    scope = 'folder';
    ok(await s.stats());
    expect(s.asked).toHaveLength(2);
    ok(await s.stats());
    expect(s.asked).toHaveLength(2);

    const trail = (await audit(w)).filter((e) => e.action !== 'grant');
    expect(trail.map((e) => [e.action, e.actor, e.detail.scope ?? null])).toEqual([
      ['approval_requested', `mcp:${CLIENT}`, null],
      ['approve', `mcp-client:${CLIENT}`, 'once'],
      ['approval_requested', `mcp:${CLIENT}`, null],
      ['approve', `mcp-client:${CLIENT}`, 'folder'],
    ]);
    expect((await approvals(w)).map((a) => [a.status, a.decided_by])).toEqual([
      ['done', `mcp-client:${CLIENT}`],
      ['done', `mcp-client:${CLIENT}`],
    ]);
  });

  it('approval required: the client declines (or answers outside the form), and the call is refused as rejected', async () => {
    const w = emptyWorkspace();
    await grant(w, '--approval', 'required', '--approval-scope', 'once');
    const answers: ElicitResult[] = [
      { action: 'decline' },
      { action: 'cancel' },
      { action: 'accept', content: { decision: 'reject' } },
      // Not what the form offered: approval_scope once offers no scope at all, and no such field.
      { action: 'accept', content: { decision: 'approve', scope: 'tool' } },
      { action: 'accept', content: { decision: 'approve', admin: true } },
      { action: 'accept', content: { decision: 'yes' } },
    ];
    let next = 0;
    const s = await connect(w, { answer: () => answers[next++]! });
    for (let i = 0; i < answers.length; i++) {
      const r = await s.stats();
      expect(errorOf(r), JSON.stringify(answers[i])).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'approval_rejected' } });
      expect(text(r)).toMatch(new RegExp(`was rejected by mcp-client:${CLIENT}: `));
    }
    expect(s.asked.map((p) => Object.keys((p as { requestedSchema: { properties: object } }).requestedSchema.properties))).toEqual(
      answers.map(() => ['decision']),
    );
    const decisions = (await approvals(w)).reverse().map((a) => [a.status, a.comment]);
    expect(decisions).toEqual([
      ['rejected', 'declined in the MCP client'],
      ['rejected', 'dismissed in the MCP client'],
      ['rejected', 'rejected in the MCP client'],
      ['rejected', expect.stringMatching(/did not match the form \(the form has no field "scope"\)/)],
      ['rejected', expect.stringMatching(/did not match the form \(the form has no field "admin"\)/)],
      ['rejected', expect.stringMatching(/did not match the form \(decision must be approve or reject\)/)],
    ]);
  });

  it('approval required, no elicitation: the call waits, says how to approve, and `corral approve ID` lets it run', async () => {
    const w = emptyWorkspace();
    await grant(w, '--approval', 'required');
    const s = await connect(w);
    const progress: string[] = [];
    const pending = s.client.callTool({ name: 'file-stats', arguments: {} }, undefined, {
      onprogress: (p) => void progress.push(p.message ?? ''),
    }) as Promise<Result>;
    const note = await s.log(/waits for your approval/);
    const command = /`(corral approve [^`]+)`/.exec(note)?.[1];
    expect(command).toMatch(new RegExp(`^corral approve [0-9a-f-]{36} --store ${w.store}$`));
    await vi.waitFor(() => expect(progress.join('\n')).toContain(command!));
    const approved = await corral(w, [...command!.split(' ').slice(1), '--by', 'ada', '--comment', 'fine']);
    expect(approved.code, approved.stderr).toBe(0);
    ok(await pending);
    expect((await audit(w)).filter((e) => e.action === 'approve').map((e) => [e.actor, e.detail.comment])).toEqual([['ada', 'fine']]);
    expect(s.stderr()).toMatch(/approval [0-9a-f-]{36}: file-stats@1\.0\.0 asked by mcp:policy-test waits for a decision/);
  });

  it('a wait that times out leaves the approval pending; once approved, the same call runs — also after a restart, which reports it', async () => {
    const w = emptyWorkspace();
    await grant(w, '--approval', 'required');
    const first = await connect(w, { args: ['--approval-timeout', '800'] });
    const timedOut = await first.stats();
    expect(errorOf(timedOut)).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'approval_timeout' } });
    const id = errorOf(timedOut)!.details.approval_id as string;
    expect(text(timedOut)).toMatch(/It stays pending as .*: approve it with `corral approve .* --store .*`, then make the same call again/);
    // The same call again waits on the same approval rather than asking anew.
    const again = await first.stats();
    expect(errorOf(again)!.details.approval_id).toBe(id);
    expect((await approvals(w)).map((a) => [a.id, a.status])).toEqual([[id, 'pending']]);
    await first.close();

    expect((await corral(w, ['approve', id, '--by', 'ada'])).code).toBe(0);
    const second = await connect(w);
    ok(await second.stats());
    expect(second.stderr()).toMatch(
      new RegExp(`1 approved MCP call has not run: ${id} \\(file-stats@1\\.0\\.0, asked by mcp:${CLIENT}\\)`),
    );
    expect((await approvals(w)).map((a) => [a.id, a.status])).toEqual([[id, 'done']]);
    // It ran once: the next call needs a new approval.
    const third = await connect(w, { args: ['--approval-timeout', '300'] });
    expect(errorOf(await third.stats())!.details.approval_id).not.toBe(id);
  });

  it('--no-elicit-approvals: a client that could answer is never asked', async () => {
    const w = emptyWorkspace();
    await grant(w, '--approval', 'required');
    const s = await connect(w, {
      answer: () => ({ action: 'accept', content: { decision: 'approve' } }),
      args: ['--no-elicit-approvals', '--approval-timeout', '500'],
    });
    expect(errorOf(await s.stats())).toMatchObject({ details: { reason: 'approval_timeout' } });
    expect(s.asked).toHaveLength(0);
    expect(s.stderr()).toContain('(approvals only through corral approve)');
  });

  it('--no-store: approvals live in memory; without elicitation a call that needs one is refused at once, with it the client can approve', async () => {
    const w = emptyWorkspace();
    await grant(w, '--approval', 'required');
    const plain = await connect(w, { store: false });
    const started = performance.now();
    const refused = await plain.stats();
    expect(performance.now() - started).toBeLessThan(5000);
    expect(errorOf(refused)).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'approval_unavailable' } });
    expect(plain.stderr()).toMatch(
      /no snapshot store: the policy still decides every call, but the audit trail and approvals are kept in memory only/,
    );

    const asking = await connect(w, { store: false, answer: () => ({ action: 'accept', content: { decision: 'approve' } }) });
    ok(await asking.stats());
    expect(asking.asked[0]!.message).not.toContain('--store');
    // Nothing reached the workspace's store but the grant.
    expect((await audit(w)).map((e) => e.action)).toEqual(['grant']);
  });
});
