// The policy gate over HTTP: file-stats on real folders, a real policy file
// changed by `corral policy` subprocesses while the server runs, approvals
// decided over HTTP (only with the approver token) and by `corral approve`,
// and a `corral serve` restarted between a request and its approval.
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, describe, expect, it } from 'vitest';
import { nowNs, workflowApproval } from '@corral/core';
import { SqliteStore } from '@corral/node';
import {
  CLI,
  ROOT,
  execute,
  metric,
  parsePrometheus,
  send,
  serve,
  serveFails,
  startTestServer,
  type Served,
  type TestServer,
} from './helpers.js';

const TOKEN = 'policy-api-token-0123456789abcdef';
const APPROVER = 'policy-approver-token-fedcba9876543210';
const api = { authorization: `Bearer ${TOKEN}` };
const approver = { authorization: `Bearer ${APPROVER}` };

interface Sandbox {
  dir: string;
  /** A project folder with two files (3 lines, 5 words, 22 bytes). */
  src: string;
  /** A folder beside it, never granted. */
  other: string;
  policyPath: string;
  storePath: string;
  env: Record<string, string | undefined>;
}

/** A project to grant, and a policy file and a store of this test's own, apart from it. */
function sandbox(): Sandbox {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'corral-http-policy-')));
  const src = join(dir, 'project');
  mkdirSync(join(src, 'docs'), { recursive: true });
  writeFileSync(join(src, 'a.txt'), 'one two\nthree\n');
  writeFileSync(join(src, 'docs/b.md'), '# title\n');
  const other = join(dir, 'other');
  mkdirSync(other);
  const policyPath = join(dir, 'config/corral/policy.yaml');
  const storePath = join(dir, 'data/corral/snapshots.db');
  const env = {
    ...process.env,
    CORRAL_POLICY: policyPath,
    CORRAL_STORE: storePath,
    CORRAL_TOKEN: undefined,
    CORRAL_APPROVER_TOKEN: undefined,
  };
  return { dir, src, other, policyPath, storePath, env };
}

/** `corral ARGS` as a subprocess on the sandbox's policy and store. */
async function corral(s: Sandbox, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = await promisify(execFile)(process.execPath, [CLI, ...args], { cwd: ROOT, env: s.env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
  return r;
}

async function ok(s: Sandbox, args: string[]): Promise<string> {
  const r = await corral(s, args);
  expect(r.code, `corral ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

async function auditOf(storePath: string) {
  const store = await SqliteStore.open(storePath);
  try {
    return (await store.listAudit()).reverse(); // oldest first
  } finally {
    await store.close();
  }
}

async function waitFor<T>(check: () => T | Promise<T>, ms = 20_000): Promise<NonNullable<T>> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const fileStats = (src: string, extra: Record<string, unknown> = {}) => ({
  tool: 'file-stats',
  input: { path: '/workspace' },
  mounts: { '/workspace': src },
  ...extra,
});

/** GET /approvals/ID until its status is one of `statuses` (and, for done, its result is there). */
async function approvalOnceIn(url: string, id: string, statuses: string[], headers: Record<string, string> = api) {
  return waitFor(async () => {
    const r = await send(url, `/approvals/${id}`, { headers });
    expect(r.status).toBe(200);
    const { approval, result } = r.json;
    return statuses.includes(approval.status) && (approval.status !== 'done' || result) ? r.json : undefined;
  });
}

const servers: TestServer[] = [];
const children: Served[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.child.exitCode === null) c.child.kill('SIGKILL');
  for (const t of servers.splice(0)) await t.stop();
});

async function server(s: Sandbox, options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const t = await startTestServer(options, [], { storePath: s.storePath, policyPath: s.policyPath });
  servers.push(t);
  return t;
}

describe('POST /execute through the policy', () => {
  it('a folder not granted is 403 and audited; a grant by `corral policy` opens it without a restart; a revoke closes it', async () => {
    const s = sandbox();
    const t = await server(s);

    const denied = await execute(t.url, fileStats(s.src), { 'x-request-id': 'req-denied' });
    expect(denied.status).toBe(403);
    expect(denied.json).toMatchObject({
      ok: false,
      tool: 'file-stats',
      version: '1.0.0',
      output: null,
      error: { code: 'E_POLICY_DENIED', details: { reason: 'not_granted', guest: '/workspace', folder: s.src } },
    });
    expect(denied.json.error.message).toContain(`corral policy grant file-stats --mount ${s.src}:/workspace`);
    // Refused before it ran: no execution snapshot, but an audit event naming the HTTP caller.
    expect(denied.json.snapshot).toBeUndefined();
    const [deny] = await auditOf(s.storePath);
    expect(deny).toMatchObject({
      action: 'deny',
      actor: 'http:req-denied@127.0.0.1',
      tool: 'file-stats',
      detail: { reason: 'not_granted', bindings: { '/workspace': { folder: s.src } }, caller: { kind: 'http' } },
    });

    await ok(s, ['policy', 'grant', 'file-stats', '--mount', `${s.src}:/workspace:ro`, '--by', 'ada']);
    const granted = await execute(t.url, fileStats(s.src));
    expect(granted.status).toBe(200);
    expect(granted.json).toMatchObject({ ok: true, output: { root: '/workspace', totals: { files: 2, lines: 3, words: 5, bytes: 22 } } });
    // A folder inside the granted one, by the typed operation, with the access spelled out.
    const inside = await send(t.url, '/execute/file-stats', {
      json: { input: {}, mounts: { '/workspace': { folder: join(s.src, 'docs'), access: 'read' } } },
    });
    expect(inside.status).toBe(200);
    expect(inside.json.output.totals).toMatchObject({ files: 1, bytes: 8 });
    // Never more than granted, never a mount the tool does not declare, never Corral's own state.
    const refusals: Array<[unknown, string]> = [
      [{ '/workspace': { folder: s.src, access: 'read-write' } }, 'access_not_granted'],
      [{ '/other': s.src }, 'undeclared_mount'],
      [{ '/workspace': join(s.src, 'docs/../../other') }, 'not_granted'],
      [{ '/workspace': join(s.src, 'missing') }, 'folder_missing'],
      [{ '/workspace': dirname(s.storePath) }, 'protected_folder'],
    ];
    for (const [mounts, reason] of refusals) {
      const r = await execute(t.url, { tool: 'file-stats', input: {}, mounts });
      expect(r.status, reason).toBe(403);
      expect(r.json.error.details.reason).toBe(reason);
    }

    await ok(s, ['policy', 'revoke', 'file-stats', '--mount', s.src, '--by', 'ada']);
    const revoked = await execute(t.url, fileStats(s.src));
    expect(revoked.status).toBe(403);
    expect(revoked.json.error.details.reason).toBe('not_granted');

    const audit = await auditOf(s.storePath);
    expect(audit.map((e) => [e.action, e.detail.reason ?? null])).toEqual([
      ['deny', 'not_granted'],
      ['grant', null],
      ['deny', 'access_not_granted'],
      ['deny', 'undeclared_mount'],
      ['deny', 'not_granted'],
      ['deny', 'folder_missing'],
      ['deny', 'protected_folder'],
      ['revoke', null],
      ['deny', 'not_granted'],
    ]);
    const samples = parsePrometheus((await send(t.url, '/metrics')).text);
    expect(metric(samples, 'corral_policy_denials_total', { reason: 'not_granted' })).toBe(3);
    expect(metric(samples, 'corral_policy_denials_total', { reason: 'protected_folder' })).toBe(1);
    expect(metric(samples, 'corral_call_errors_total', { tool: 'file-stats', code: 'E_POLICY_DENIED' })).toBe(7);
    // The request log says which call the policy refused, never the folders asked for.
    const line = t.logs.find((e) => e.event === 'request' && e.status === 403);
    expect(line).toMatchObject({ tool: 'file-stats', error_code: 'E_POLICY_DENIED' });
    expect(JSON.stringify(t.logs)).not.toContain(s.src);
  });

  it('a broken policy refuses every call until it is fixed; unlisted tools run on their input alone', async () => {
    const s = sandbox();
    const t = await server(s);
    expect((await execute(t.url, { tool: 'diff-summary', input: { diff: '' } })).status).toBe(200);
    mkdirSync(dirname(s.policyPath), { recursive: true });
    writeFileSync(s.policyPath, 'version: 1\ntools: [\n');
    const broken = await execute(t.url, { tool: 'diff-summary', input: { diff: '' } });
    expect(broken.status).toBe(403);
    expect(broken.json.error.details.reason).toBe('policy_invalid');
    writeFileSync(s.policyPath, 'version: 1\nunlisted_tools: deny\n');
    const unlisted = await execute(t.url, { tool: 'diff-summary', input: { diff: '' } });
    expect(unlisted.status).toBe(403);
    expect(unlisted.json.error.details.reason).toBe('unlisted_tool');
    // An unknown tool is still 404 (and recorded): there is nothing for the policy to decide.
    expect((await execute(t.url, { tool: 'no-such-tool', input: {} })).status).toBe(404);
  });
});

describe('approvals over HTTP', () => {
  it('202 with the approval; only the approver token decides; GET /approvals/ID then shows the result; a rejection shows as rejected', async () => {
    const s = sandbox();
    await ok(s, [
      'policy',
      'grant',
      'file-stats',
      '--mount',
      `${s.src}:/workspace:ro`,
      '--approval',
      'required',
      '--approval-scope',
      'once',
    ]);
    const t = await server(s, { token: TOKEN, approverToken: APPROVER, approvalWaitMs: 300 });

    const started = Date.now();
    const accepted = await execute(t.url, fileStats(s.src), { ...api, 'x-request-id': 'req-1' });
    expect(accepted.status).toBe(202);
    expect(Date.now() - started).toBeLessThan(5000);
    const id: string = accepted.json.approval.id;
    expect(accepted.headers.location).toBe(`/approvals/${id}`);
    expect(accepted.headers['retry-after']).toBe('5');
    expect(accepted.json.approval).toMatchObject({
      status: 'pending',
      tool: 'file-stats',
      version: '1.0.0',
      requested_by: 'http:req-1@127.0.0.1',
      folders: [{ guest: '/workspace', folder: s.src, access: 'read' }],
      max_scope: 'once',
    });
    expect(accepted.json.message).toContain(`corral approve ${id}`);

    // Both tokens read approvals; the list leaves inputs out, the approval itself has it.
    for (const headers of [api, approver]) {
      const list = await send(t.url, '/approvals', { headers });
      expect(list.status).toBe(200);
      expect(list.json.approvals.map((a: { id: string }) => a.id)).toEqual([id]);
      expect(list.json.approvals[0].input).toBeUndefined();
    }
    const shown = await send(t.url, `/approvals/${id}`, { headers: approver });
    expect(shown.json).toEqual({ approval: expect.objectContaining({ id, status: 'pending', input: { path: '/workspace' } }) });
    const samples = parsePrometheus((await send(t.url, '/metrics', { headers: api })).text);
    expect(metric(samples, 'corral_approvals_pending')).toBe(1);

    // The agent holds the API token: it cannot approve its own call. Nor can anyone without a token.
    const self = await send(t.url, `/approvals/${id}`, { json: { decision: 'approve' }, headers: api });
    expect(self.status).toBe(403);
    expect(self.json.error).toMatchObject({ code: 'E_FORBIDDEN', details: { reason: 'api_token_cannot_approve' } });
    const anonymous = await send(t.url, `/approvals/${id}`, { json: { decision: 'approve' } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer/);
    // The approver token reaches approvals and nothing else.
    const sneaky = await execute(t.url, fileStats(s.src), approver);
    expect(sneaky.status).toBe(403);
    expect(sneaky.json.error.details.reason).toBe('approver_token');
    // Hostile bodies and ids.
    for (const body of [
      { decision: 'yes' },
      { decision: 'approve', scope: 'folder', extra: 1 },
      { decision: 'reject', scope: 'once' },
      [],
    ]) {
      const r = await send(t.url, `/approvals/${id}`, { json: body, headers: approver });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error.code).toBe('E_INPUT_VALIDATION');
    }
    const tooWide = await send(t.url, `/approvals/${id}`, { json: { decision: 'approve', scope: 'tool' }, headers: approver });
    expect(tooWide.status).toBe(400);
    expect(tooWide.json.error.details).toMatchObject({ max_scope: 'once', scope: 'tool' });
    for (const path of ['/approvals/nope', `/approvals/${'x'.repeat(200)}`, '/approvals/..%2Fexecute', '/approvals/a%00b']) {
      expect((await send(t.url, path, { headers: api })).status, path).toBe(404);
      expect((await send(t.url, path, { json: { decision: 'approve' }, headers: approver })).status, path).toBe(404);
    }
    expect((await send(t.url, `/approvals/${id}/x`, { headers: api })).json.error.code).toBe('E_NOT_FOUND');

    const decided = await send(t.url, `/approvals/${id}`, { json: { decision: 'approve', comment: 'fine' }, headers: approver });
    expect(decided.status).toBe(200);
    expect(decided.json.approval).toMatchObject({ id, status: 'approved', scope: 'once', comment: 'fine' });
    expect(decided.json.approval.decided_by).toBe('http-approver@127.0.0.1');
    const done = await approvalOnceIn(t.url, id, ['done']);
    expect(done.result).toMatchObject({ ok: true, tool: 'file-stats', output: { totals: { files: 2, lines: 3 } } });
    expect(done.approval.execution_id).toBe(done.result.snapshot.id);
    const again = await send(t.url, `/approvals/${id}`, { json: { decision: 'reject' }, headers: approver });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: 'E_CONFLICT', details: { status: 'done' } });
    expect(t.logs.find((e) => e.event === 'approved_call')).toMatchObject({ approval_id: id, tool: 'file-stats', ok: true });

    // A second call, rejected: its approval says so, and it never runs.
    const second = await execute(t.url, fileStats(s.src), api);
    expect(second.status).toBe(202);
    const rejected = await send(t.url, `/approvals/${second.json.approval.id}`, {
      json: { decision: 'reject', comment: 'not now' },
      headers: approver,
    });
    expect(rejected.status).toBe(200);
    const after = await send(t.url, `/approvals/${second.json.approval.id}`, { headers: api });
    expect(after.json.approval).toMatchObject({
      status: 'rejected',
      decided_by: 'http-approver@127.0.0.1',
      comment: 'not now',
      execution_id: null,
    });
    expect(after.json.result).toBeUndefined();
    // The gauge reads the store at most once a second.
    await waitFor(
      async () => metric(parsePrometheus((await send(t.url, '/metrics', { headers: api })).text), 'corral_approvals_pending') === 0,
    );
    expect((await send(t.url, '/approvals', { headers: api })).json.approvals).toEqual([]);

    const audit = await auditOf(s.storePath);
    expect(audit.filter((e) => e.action !== 'grant').map((e) => [e.action, e.actor])).toEqual([
      ['approval_requested', 'http:req-1@127.0.0.1'],
      ['approve', 'http-approver@127.0.0.1'],
      ['approval_requested', expect.stringMatching(/^http:[0-9a-f-]{36}@127\.0\.0\.1$/)],
      ['reject', 'http-approver@127.0.0.1'],
    ]);
  });

  it('a decision within the wait answers the held request itself (200 with the result); Prefer: respond-async does not wait', async () => {
    const s = sandbox();
    await ok(s, ['policy', 'grant', 'file-stats', '--mount', `${s.src}:/workspace:ro`, '--approval', 'required']);
    const t = await server(s, { approverToken: APPROVER, approvalWaitMs: 30_000 });
    const held = execute(t.url, fileStats(s.src));
    const [pending] = await waitFor(async () => {
      const { approvals } = (await send(t.url, '/approvals')).json as { approvals: Array<{ id: string }> };
      return approvals.length > 0 ? approvals : undefined;
    });
    // Decided by another process sharing the store, as a person at a terminal would.
    await ok(s, ['approve', pending!.id, '--by', 'ada']);
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ ok: true, output: { totals: { files: 2 } } });
    expect((await send(t.url, `/approvals/${pending!.id}`)).json).toMatchObject({
      approval: { status: 'done', decided_by: 'ada' },
      result: { ok: true },
    });

    const started = Date.now();
    const async = await execute(t.url, fileStats(s.src), { prefer: 'respond-async' });
    expect(async.status).toBe(202);
    const waited = await execute(t.url, fileStats(s.src), { prefer: 'wait=1' });
    expect(waited.status).toBe(202);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('without an approver token, POST /approvals/ID is 403 and says how to decide instead', async () => {
    const s = sandbox();
    await ok(s, ['policy', 'grant', 'file-stats', '--mount', `${s.src}:/workspace:ro`, '--approval', 'required']);
    const t = await server(s, { token: TOKEN, approvalWaitMs: 0 });
    const accepted = await execute(t.url, fileStats(s.src), api);
    expect(accepted.status).toBe(202);
    const r = await send(t.url, `/approvals/${accepted.json.approval.id}`, { json: { decision: 'approve' }, headers: api });
    expect(r.status).toBe(403);
    expect(r.json.error).toMatchObject({ code: 'E_FORBIDDEN', details: { reason: 'no_approver_token' } });
    expect(r.json.error.message).toMatch(/--approver-token-file.*corral approve ID/);
    // Deciding at the terminal still works, and the detached call runs.
    await ok(s, ['approve', accepted.json.approval.id]);
    const done = await approvalOnceIn(t.url, accepted.json.approval.id, ['done']);
    expect(done.result.ok).toBe(true);
  });

  it('the OpenAPI document with both tokens validates, and describes the 202, 403 and approval answers the server gives', async () => {
    const s = sandbox();
    await ok(s, ['policy', 'grant', 'file-stats', '--mount', `${s.src}:/workspace:ro`, '--approval', 'required']);
    const t = await server(s, { token: TOKEN, approverToken: APPROVER, approvalWaitMs: 0 });
    const doc = (await send(t.url, '/openapi.json', { headers: api })).json;
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toMatchObject({
      openapi: '3.1.0',
      paths: expect.objectContaining({ '/execute': expect.any(Object) }),
    });
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['approverAuth', 'bearerAuth']);
    expect(doc.paths['/approvals/{id}'].post.security).toEqual([{ approverAuth: [] }]);
    expect(doc.paths['/approvals'].get.security).toEqual([{ bearerAuth: [] }, { approverAuth: [] }]);
    expect(doc.components.schemas.FileStatsRequest.properties.mounts.properties['/workspace']).toEqual({
      $ref: '#/components/schemas/MountBinding',
    });

    const deref = (await SwaggerParser.dereference(structuredClone(doc))) as typeof doc;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const check = (path: string, method: string, status: string, body: unknown) => {
      const validate = ajv.compile(deref.paths[path][method].responses[status].content['application/json'].schema);
      expect(validate(body), `${method} ${path} ${status}: ${JSON.stringify(validate.errors)}`).toBe(true);
    };
    const request = deref.paths['/execute/file-stats'].post.requestBody.content['application/json'].schema;
    expect(ajv.compile(request)({ input: {}, mounts: { '/workspace': s.src } })).toBe(true);
    expect(ajv.compile(request)({ input: {}, mounts: { '/other': s.src } })).toBe(false);
    expect(ajv.compile(deref.components.schemas.Mounts)({ '/a/../b': '/x' })).toBe(false);

    const accepted = await send(t.url, '/execute/file-stats', { json: { input: {}, mounts: { '/workspace': s.src } }, headers: api });
    expect(accepted.status).toBe(202);
    check('/execute/file-stats', 'post', '202', accepted.json);
    const id = accepted.json.approval.id;
    check('/approvals', 'get', '200', (await send(t.url, '/approvals', { headers: api })).json);
    check('/approvals/{id}', 'get', '200', (await send(t.url, `/approvals/${id}`, { headers: api })).json);
    check('/approvals/{id}', 'get', '404', (await send(t.url, '/approvals/nope', { headers: api })).json);
    check('/approvals/{id}', 'post', '403', (await send(t.url, `/approvals/${id}`, { json: { decision: 'approve' }, headers: api })).json);
    check('/approvals/{id}', 'post', '400', (await send(t.url, `/approvals/${id}`, { json: {}, headers: approver })).json);
    check(
      '/approvals/{id}',
      'post',
      '200',
      (await send(t.url, `/approvals/${id}`, { json: { decision: 'approve' }, headers: approver })).json,
    );
    check(
      '/approvals/{id}',
      'post',
      '409',
      (await send(t.url, `/approvals/${id}`, { json: { decision: 'approve' }, headers: approver })).json,
    );
    check('/approvals/{id}', 'get', '200', await approvalOnceIn(t.url, id, ['done']));
    const denied = await send(t.url, '/execute', { json: fileStats(s.other), headers: api });
    expect(denied.status).toBe(403);
    check('/execute', 'post', '403', denied.json);
    const approverElsewhere = await send(t.url, '/tools', { headers: approver });
    expect(approverElsewhere.status).toBe(403);
    const forbidden = deref.paths['/tools'].get.responses['403'].content['application/json'].schema;
    expect(ajv.compile(forbidden)(approverElsewhere.json)).toBe(true);
  });

  it('a workflow step’s approval: listed with its run, step and prompt, decided with the approver token, never run by the server', async () => {
    const s = sandbox();
    await ok(s, ['policy', 'grant', 'file-stats', '--mount', `${s.src}:/workspace:ro`, '--approval', 'required']);
    // Two steps' approvals the server finds at start: one pending, one approved already and asked over HTTP.
    mkdirSync(dirname(s.storePath), { recursive: true });
    const store = await SqliteStore.open(s.storePath);
    const step = (id: string, run: string) =>
      workflowApproval({
        id,
        workflow: 'file-stats',
        run_id: run,
        step: 'sign-off',
        prompt: 'Merge this patch?',
        input: { path: '/workspace' },
        requested_by: 'workflow:file-stats',
        caller: { kind: 'http' },
        requested_ns: nowNs(),
        expires_ns: (BigInt(nowNs()) + 3_600_000_000_000n).toString(),
      });
    const pending = await step('wf-pending', 'run-1');
    const approved = { ...(await step('wf-approved', 'run-2')), status: 'approved' as const, scope: 'once' as const, decided_by: 'ada' };
    await store.createApproval(pending);
    await store.createApproval(approved);
    await store.close();
    const t = await server(s, { token: TOKEN, approverToken: APPROVER, approvalWaitMs: 0 });

    const list = await send(t.url, '/approvals', { headers: api });
    expect(list.json.approvals).toEqual([
      expect.objectContaining({
        id: 'wf-pending',
        tool: 'file-stats',
        version: '0',
        workflow_run_id: 'run-1',
        workflow_step: 'sign-off',
        prompt: 'Merge this patch?',
        folders: [],
      }),
    ]);
    const doc = (await send(t.url, '/openapi.json', { headers: api })).json;
    const deref = (await SwaggerParser.dereference(structuredClone(doc))) as typeof doc;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const listSchema = ajv.compile(deref.paths['/approvals'].get.responses['200'].content['application/json'].schema);
    expect(listSchema(list.json), JSON.stringify(listSchema.errors)).toBe(true);
    const wide = await send(t.url, '/approvals/wf-pending', { json: { decision: 'approve', scope: 'tool' }, headers: approver });
    expect(wide.status).toBe(400);
    expect(wide.json.error.message).toMatch(/covers that step only/);
    const decided = await send(t.url, '/approvals/wf-pending', { json: { decision: 'approve' }, headers: approver });
    expect(decided.status).toBe(200);
    expect(decided.json.approval).toMatchObject({ status: 'approved', scope: 'once', workflow_run_id: 'run-1' });
    // The runner looks once a second: after a few looks, neither step's approval was taken up as a call.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    for (const id of ['wf-pending', 'wf-approved']) {
      const shown = await send(t.url, `/approvals/${id}`, { headers: api });
      expect(shown.json.approval).toMatchObject({ status: 'approved', execution_id: null, input: { path: '/workspace' } });
      expect(shown.json.result).toBeUndefined();
    }
    const after = await SqliteStore.open(s.storePath);
    try {
      expect(await after.listExecutions()).toEqual([]);
      expect((await after.listAudit()).map((e) => e.action)).toEqual(['approve', 'grant']);
    } finally {
      await after.close();
    }
  });
});

describe('corral serve with a policy', () => {
  it('a restart between request and approval keeps the approval; approved calls run after the restart, and a held request is answered 202 on SIGTERM', async () => {
    const s = sandbox();
    const tokens = mkdtempSync(join(tmpdir(), 'corral-http-tokens-'));
    const tokenFile = join(tokens, 'token');
    const approverFile = join(tokens, 'approver');
    writeFileSync(tokenFile, TOKEN);
    writeFileSync(approverFile, `${APPROVER}\n`);
    chmodSync(tokenFile, 0o600);
    chmodSync(approverFile, 0o600);
    // The policy file named by --policy, not CORRAL_POLICY.
    const policy = join(s.dir, 'elsewhere/policy.yaml');
    await ok(s, ['policy', 'grant', 'file-stats', '--policy', policy, '--mount', `${s.src}:/workspace:ro`, '--approval', 'required']);
    const env = { ...s.env, CORRAL_POLICY: join(s.dir, 'not-this.yaml') };
    const args = [
      '--store',
      s.storePath,
      '--policy',
      policy,
      '--token-file',
      tokenFile,
      '--approver-token-file',
      approverFile,
      '--workers',
      '1',
    ];

    const first = await serve([...args, '--approval-wait', '60000'], env);
    children.push(first);
    const a = await execute(first.url, fileStats(s.src), { ...api, prefer: 'respond-async' });
    const b = await execute(first.url, fileStats(s.src), { ...api, prefer: 'respond-async' });
    expect([a.status, b.status]).toEqual([202, 202]);
    // A request still held for approval when the server is told to stop is answered 202 at once.
    const held = execute(first.url, fileStats(s.src), api);
    await waitFor(async () => (await send(first.url, '/approvals', { headers: api })).json.approvals.length === 3);
    const stopping = Date.now();
    first.child.kill('SIGTERM');
    const c = await held;
    expect(c.status).toBe(202);
    expect(Date.now() - stopping).toBeLessThan(10_000);
    expect(await first.exited).toBe(0);

    // While no server runs, a person approves one of them at the terminal.
    await ok(s, ['approve', a.json.approval.id, '--store', s.storePath]);

    const second = await serve(args, env);
    children.push(second);
    // The one approved while the server was down runs when it starts; the others still wait.
    const ranA = await approvalOnceIn(second.url, a.json.approval.id, ['done']);
    expect(ranA.result).toMatchObject({ ok: true, output: { totals: { files: 2 } } });
    const pending = (await send(second.url, '/approvals', { headers: api })).json.approvals.map((x: { id: string }) => x.id);
    expect(pending.sort()).toEqual([b.json.approval.id, c.json.approval.id].sort());
    // Approved over HTTP after the restart: it runs although its request ended in the first server's life.
    expect((await send(second.url, `/approvals/${b.json.approval.id}`, { json: { decision: 'approve' }, headers: approver })).status).toBe(
      200,
    );
    const ranB = await approvalOnceIn(second.url, b.json.approval.id, ['done']);
    expect(ranB.result.ok).toBe(true);
    expect((await send(second.url, `/approvals/${c.json.approval.id}`, { json: { decision: 'reject' }, headers: approver })).status).toBe(
      200,
    );

    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    // Each approved call ran exactly once, and is in the store.
    const store = await SqliteStore.open(s.storePath);
    try {
      const runs = await store.listExecutions({ tool: 'file-stats' });
      expect(runs).toHaveLength(2);
      expect((await store.getApproval(a.json.approval.id))!.execution_id).toBeTruthy();
      expect((await store.getApproval(c.json.approval.id))!.status).toBe('rejected');
    } finally {
      await store.close();
    }
    const lines = second
      .stderr()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.find((l) => l.event === 'listening')).toMatchObject({ policy, approver_token: true });
    expect(lines.filter((l) => l.event === 'approved_call').map((l) => l.approval_id)).toEqual([a.json.approval.id, b.json.approval.id]);
  });

  it('refuses an approver token that is the API token, or too short; --no-store keeps approvals in memory and says so', async () => {
    const same = await serveFails(['--no-store'], { CORRAL_TOKEN: TOKEN, CORRAL_APPROVER_TOKEN: TOKEN });
    expect(same.code).toBe(2);
    expect(same.stderr).toMatch(/approver token must differ from the API token/);
    const short = await serveFails(['--no-store'], { CORRAL_APPROVER_TOKEN: 'short' });
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/approver token must be at least 16 characters/);
    const missing = await serveFails(['--approver-token-file', '/nonexistent/approver']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read --approver-token-file/);
    expect((await serveFails(['--approval-wait', 'soon'])).code).toBe(2);

    const s = sandbox();
    await ok(s, ['policy', 'grant', 'file-stats', '--mount', `${s.src}:/workspace:ro`, '--approval', 'required']);
    const memory = await serve(['--no-store', '--approval-wait', '0'], { ...s.env, CORRAL_APPROVER_TOKEN: APPROVER });
    children.push(memory);
    const accepted = await execute(memory.url, fileStats(s.src));
    expect(accepted.status).toBe(202);
    const id = accepted.json.approval.id;
    // corral approve reads the store on disk, which this server does not use.
    expect((await corral(s, ['approve', id])).code).not.toBe(0);
    expect((await send(memory.url, `/approvals/${id}`, { json: { decision: 'approve' }, headers: approver })).status).toBe(200);
    expect((await approvalOnceIn(memory.url, id, ['done'])).result.ok).toBe(true);
    memory.child.kill('SIGTERM');
    expect(await memory.exited).toBe(0);
    expect(memory.stderr()).toMatch(/--no-store: approvals and the audit trail are kept in memory/);
  });
});
