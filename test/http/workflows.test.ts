// Workflows over HTTP (`corral serve --workflows DIR`): a run waits, an approval over HTTP lets the
// server continue it as the caller that started it; and a remote caller's inputs, which templates put
// into step mounts, never reach a folder the policy would not give that caller's own call.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Corral, SqliteStore, loadWorkflowFolders } from '@corral/node';
import { startHttpServer, type CorralHttpServer } from '@corral/node/http';
import { openPolicyGate } from '@corral/node/policy';
import { ServedWorkflows } from '@corral/workflow';
import { CLI, FIXTURES, ROOT, send, serve, type Served } from './helpers.js';

const TOKEN = 'workflow-api-token-0123456789abcdef';
const APPROVER = 'workflow-approver-token-fedcba9876543210';
const api = { authorization: `Bearer ${TOKEN}` };
const approver = { authorization: `Bearer ${APPROVER}` };

/** Workflow files a server is given: good ones, a bad one and a second 'hello'. */
function workflowDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'corral-http-workflows-'));
  const files: Record<string, string> = {
    'hello.yaml': `name: hello
description: Echo a greeting, ask a person, echo again.
inputs:
  who: { type: string, description: Whom to greet }
outputs:
  said: "{{ steps.first.output.greeting }}"
  again: "{{ steps.after.output.again }}"
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
    // The shape of examples/workflows/patch-review.yaml: the caller names the folder, as a mount source.
    'stats.yaml': `name: stats
description: Count the files of a folder the caller names.
inputs:
  workspace: { type: object }
outputs:
  files: "{{ steps.count.output.totals.files }}"
steps:
  - id: count
    tool: file-stats
    mounts: [{ guest: /workspace, source: "{{ inputs.workspace }}" }]
`,
    'stats-or-skip.json': JSON.stringify({
      name: 'stats-or-skip',
      inputs: { folder: { type: 'string' } },
      steps: [
        {
          id: 'count',
          tool: 'file-stats',
          mounts: [{ guest: '/workspace', host: '{{ inputs.folder }}' }],
          on_error: { E_POLICY_DENIED: { action: 'skip' } },
        },
        { id: 'after', tool: 'echo', depends_on: ['count'], condition: "steps.count.status == 'skipped'", input: { skipped: true } },
      ],
    }),
    'needs-ok.yml': `name: needs-ok
inputs:
  diff: { type: string }
steps:
  - id: summary
    tool: diff-summary
    input: { diff: "{{ inputs.diff }}" }
`,
    // A person approves first; the folder is used after, when the run is continued.
    'ask-then-stats.yaml': `name: ask-then-stats
inputs:
  workspace: { type: object }
steps:
  - id: ask
    approval: { prompt: "Count the files?" }
  - id: count
    tool: file-stats
    depends_on: [ask]
    mounts: [{ guest: /workspace, source: "{{ inputs.workspace }}" }]
`,
    'bad.yaml': 'name: bad\nsteps:\n  - id: x\n    tool: no-such-tool\n',
    'zz-hello-again.yaml': 'name: hello\nsteps:\n  - id: a\n    tool: echo\n',
    'README.txt': 'not a workflow',
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

interface Sandbox {
  dir: string;
  /** Granted to file-stats (read): two files. */
  src: string;
  /** Never granted: a secret. */
  other: string;
  policyPath: string;
  storePath: string;
}

function sandbox(): Sandbox {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'corral-http-wf-')));
  const src = join(dir, 'project');
  const other = join(dir, 'other');
  mkdirSync(src);
  mkdirSync(other);
  writeFileSync(join(src, 'a.txt'), 'one two\n');
  writeFileSync(join(src, 'b.txt'), 'three\n');
  writeFileSync(join(other, 'secret.txt'), 'do not read\n');
  // A link inside the granted folder that leads out of it.
  symlinkSync(other, join(src, 'way-out'));
  const policyPath = join(dir, 'policy.yaml');
  writeFileSync(
    policyPath,
    JSON.stringify({
      version: 1,
      tools: {
        'file-stats': { mounts: { '/workspace': [{ folder: src, access: 'read' }] } },
        'diff-summary': { approval: 'required', approval_scope: 'tool' },
      },
    }),
  );
  return { dir, src, other, policyPath, storePath: join(dir, 'snapshots.db') };
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

async function fromStore<T>(path: string, read: (store: SqliteStore) => Promise<T>): Promise<T> {
  const store = await SqliteStore.open(path, { readonly: true });
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}

const children: Served[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.child.exitCode === null) c.child.kill('SIGKILL');
});

describe('corral serve --workflows (the binary)', () => {
  it('runs a workflow until it waits; an approval over HTTP lets the server continue it, and the run succeeds', async () => {
    const s = sandbox();
    const served = await serve(
      ['--workflows', workflowDir(), '--tools', join(FIXTURES, 'echo'), '--store', s.storePath, '--policy', s.policyPath],
      { CORRAL_TOKEN: TOKEN, CORRAL_APPROVER_TOKEN: APPROVER },
    );
    children.push(served);
    const { url } = served;
    // Bad files are reported like bad tool folders, and skipped; so is a second workflow named hello.
    expect(served.stderr()).toMatch(/skipped: Invalid workflow .*bad\.yaml.*unknown tool 'no-such-tool'/);
    expect(served.stderr()).toMatch(/zz-hello-again\.yaml is named 'hello', as .*hello\.yaml is already/);

    // Same auth as every endpoint: no token is 401, the approver token is refused outside /approvals.
    expect((await send(url, '/workflows')).status).toBe(401);
    expect((await send(url, '/workflows/hello/runs', { json: { inputs: { who: 'x' } }, headers: approver })).json.error).toMatchObject({
      code: 'E_FORBIDDEN',
      details: { reason: 'approver_token' },
    });

    const listed = await send(url, '/workflows', { headers: api });
    expect(listed.status).toBe(200);
    expect(listed.json.workflows.map((w: { name: string }) => w.name)).toEqual([
      'ask-then-stats',
      'hello',
      'needs-ok',
      'stats',
      'stats-or-skip',
    ]);
    expect(listed.json.workflows[1]).toEqual({
      name: 'hello',
      description: 'Echo a greeting, ask a person, echo again.',
      inputs: { who: { type: 'string', description: 'Whom to greet' } },
      input_schema: {
        type: 'object',
        properties: { who: { type: 'string', description: 'Whom to greet' } },
        required: ['who'],
        additionalProperties: false,
      },
      steps: 3,
    });

    const started = await send(url, '/workflows/hello/runs', { json: { inputs: { who: 'ada' } }, headers: api });
    expect(started.status).toBe(200);
    const run = started.json;
    expect(run).toMatchObject({
      workflow: 'hello',
      status: 'waiting',
      pending: [{ step: 'ok', kind: 'approval', prompt: 'Greet ada again?' }],
    });
    expect(run.runId).toMatch(/^http-[0-9a-f-]{36}$/);
    expect(started.headers.location).toBe(`/workflows/runs/${run.runId}`);
    const approvalId = run.pending[0].approvalId;

    // The step's approval is listed with the tool calls' ones, and decided with the approver token only.
    const pending = await send(url, '/approvals', { headers: approver });
    expect(pending.json.approvals).toEqual([
      expect.objectContaining({
        id: approvalId,
        workflow_run_id: run.runId,
        workflow_step: 'ok',
        requested_by: expect.stringMatching(/^http:/),
      }),
    ]);
    expect((await send(url, `/approvals/${approvalId}`, { json: { decision: 'approve' }, headers: api })).status).toBe(403);
    const decided = await send(url, `/approvals/${approvalId}`, { json: { decision: 'approve', comment: 'go' }, headers: approver });
    expect(decided.status).toBe(200);

    // The server goes on with the run by itself; its status says so.
    const done = await waitFor(async () => {
      const r = await send(url, `/workflows/runs/${run.runId}`, { headers: api });
      expect(r.status).toBe(200);
      return r.json.run.status === 'succeeded' ? r.json : undefined;
    });
    expect(done.run.outputs).toEqual({ said: 'hello ada', again: true });
    expect(done.pending).toEqual([]);
    expect(done.events.map((e: { kind: string; step: string | null }) => `${e.kind}:${e.step ?? ''}`)).toEqual([
      'step_started:first',
      'step_succeeded:first',
      'step_waiting:ok',
      'run_resumed:',
      'step_approved:ok',
      'step_started:after',
      'step_succeeded:after',
    ]);
    expect(done.events.find((e: { kind: string }) => e.kind === 'step_approved').note).toMatch(
      /^approved by http-approver@127\.0\.0\.1: go$/,
    );
    // Continued once: a resume now only reports it.
    const again = await send(url, `/workflows/runs/${run.runId}/resume`, { method: 'POST', headers: api });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ runId: run.runId, status: 'succeeded', outputs: { said: 'hello ada', again: true } });
    await waitFor(() => /"event":"workflow_continued".*"status":"succeeded"/.test(served.stderr()));

    // The CLI never resumes a server's run with its own rights; it points at the server.
    const cli = await promisify(execFile)(process.execPath, [CLI, 'workflow', 'resume', run.runId, '--store', s.storePath], {
      cwd: ROOT,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain('was started through a server (http) for a remote caller');
  });
});

describe('workflows from remote callers, through the policy', () => {
  let corral: Corral;
  let server: CorralHttpServer;
  let url: string;
  let s: Sandbox;

  beforeAll(async () => {
    s = sandbox();
    corral = await Corral.create({ size: 2, store: s.storePath, toolDirs: [join(FIXTURES, 'echo')] });
    const gate = openPolicyGate({ store: corral.store!, policyPath: s.policyPath });
    const { loaded } = await loadWorkflowFolders(corral.registry, [workflowDir()]);
    const workflows = new ServedWorkflows({ host: corral, gate, workflows: loaded.map((l) => l.workflow) });
    server = await startHttpServer(corral, { port: 0, log: false, gate, workflows, maxBodyBytes: 64 * 1024 });
    url = server.url;
  });
  afterAll(async () => {
    await server?.close({ timeoutMs: 1000 });
    await corral?.close();
  });

  const run = (name: string, inputs: unknown) => send(url, `/workflows/${name}/runs`, { json: { inputs } });
  const executions = () => fromStore(s.storePath, (store) => store.listExecutions({ limit: 1000 }));
  const denials = async () =>
    (await fromStore(s.storePath, (store) => store.listAudit({ action: 'deny' }))).map((e) => e.detail as Record<string, unknown>);

  it('a host path the policy does not grant (/etc, a sibling folder, a link out, a relative path) fails its step with E_POLICY_DENIED; nothing is read', async () => {
    const before = (await executions()).length;
    const cases: Array<[unknown, string]> = [
      [{ kind: 'host', path: '/etc' }, 'not_granted'],
      [{ kind: 'host', path: s.other }, 'not_granted'],
      [{ kind: 'host', path: join(s.src, 'way-out') }, 'not_granted'],
      [{ kind: 'host', path: join(s.src, '../other') }, 'not_granted'],
      [{ kind: 'host', path: '.' }, 'bad_request'],
      [{ kind: 'opfs', path: '/' }, 'bad_request'],
      [{ kind: 'host', path: s.src }, 'granted'],
    ];
    for (const [workspace, reason] of cases) {
      const r = await run('stats', { workspace });
      expect(r.status, JSON.stringify(workspace)).toBe(200);
      if (reason === 'granted') {
        // The control: the granted folder itself works, read-only, through the same path.
        expect(r.json).toMatchObject({ status: 'succeeded', outputs: { files: 2 } });
        continue;
      }
      expect(r.json, JSON.stringify(workspace)).toMatchObject({
        workflow: 'stats',
        status: 'failed',
        steps: [{ id: 'count', status: 'failed', tool: 'file-stats', error: { code: 'E_POLICY_DENIED' } }],
        error: { code: 'E_POLICY_DENIED', step: 'count' },
      });
    }
    // Only the granted run reached a tool: every refusal was decided before any worker opened a folder.
    const ran = (await executions()).slice(0, (await executions()).length - before);
    expect(ran.map((e) => e.tool)).toEqual(['file-stats']);
    // Each refusal is in the audit trail with the caller's identity and the reason.
    const reasons = (await denials()).map((d) => d.reason);
    expect(reasons).toEqual(expect.arrayContaining(['not_granted', 'bad_request']));
    expect((await denials()).filter((d) => d.reason === 'not_granted')).toHaveLength(4);
    const audit = await fromStore(s.storePath, (store) => store.listAudit({ action: 'deny' }));
    expect(audit.every((e) => /^http:[^@]+@127\.0\.0\.1$/.test(e.actor))).toBe(true);
  });

  it('an in-memory tree is the caller’s own data and runs; a denied step’s on_error applies (skip)', async () => {
    const tree = await run('stats', { workspace: { kind: 'memory', tree: { 'x.txt': 'a b c\n' } } });
    expect(tree.json).toMatchObject({ status: 'succeeded', outputs: { files: 1 } });

    const skipped = await run('stats-or-skip', { folder: '/etc' });
    expect(skipped.json).toMatchObject({
      status: 'succeeded',
      steps: [
        { id: 'count', status: 'skipped', error: { code: 'E_POLICY_DENIED' } },
        { id: 'after', status: 'succeeded', output: { skipped: true } },
      ],
    });
  });

  it('a tool the policy makes wait for approval fails its step (approval_required) and leaves no approval behind', async () => {
    const r = await run('needs-ok', { diff: '' });
    expect(r.json).toMatchObject({ status: 'failed', steps: [{ id: 'summary', status: 'failed', error: { code: 'E_POLICY_DENIED' } }] });
    expect(r.json.steps[0].error.message).toContain('does not wait for a tool call');
    const approvals = await fromStore(s.storePath, (store) => store.listApprovals({ tool: 'diff-summary' }));
    expect(approvals).toEqual([]);
    expect((await denials()).some((d) => d.reason === 'approval_required')).toBe(true);
  });

  it('a run continued after an approval decided elsewhere runs as the caller that started it, not with more rights', async () => {
    const started = await send(url, '/workflows/ask-then-stats/runs', {
      json: { inputs: { workspace: { kind: 'host', path: s.other } } },
      headers: { 'x-request-id': 'req-owner' },
    });
    expect(started.json).toMatchObject({ status: 'waiting', pending: [{ step: 'ask' }] });
    const id = started.json.pending[0].approvalId;
    // The approval keeps who started the run: that is who the run goes on as.
    const approval = await fromStore(s.storePath, (store) => store.getApproval(id));
    expect(approval).toMatchObject({ caller: { kind: 'http', id: 'req-owner@127.0.0.1' }, requested_by: 'http:req-owner@127.0.0.1' });
    // Decided by another process sharing the store (corral approve does this): the server notices and goes on.
    const store = await SqliteStore.open(s.storePath);
    try {
      await openPolicyGate({ store, policyPath: s.policyPath }).decide(id, 'approve', { by: 'ada' });
    } finally {
      await store.close();
    }
    const ended = await waitFor(async () => {
      const r = await send(url, `/workflows/runs/${started.json.runId}`);
      return r.json.run.status === 'failed' ? r.json : undefined;
    });
    expect(ended.run.error).toMatchObject({ code: 'E_POLICY_DENIED', step: 'count' });
    const audit = await fromStore(s.storePath, (st) => st.listAudit({ action: 'deny', limit: 1 }));
    expect(audit[0]).toMatchObject({ actor: 'http:req-owner@127.0.0.1', tool: 'file-stats', detail: { reason: 'not_granted' } });
  });

  it('a run left waiting by a server that stopped goes on when a new one starts, if its approval was decided meanwhile', async () => {
    const started = await send(url, '/workflows/hello/runs', { json: { inputs: { who: 'dee' } } });
    expect(started.json.status).toBe('waiting');
    const gate = openPolicyGate({ store: corral.store!, policyPath: s.policyPath });
    const { loaded } = await loadWorkflowFolders(corral.registry, [workflowDir()]);
    // Stopped (the run stays waiting), decided while no server runs, then a new server on the same store.
    await server.close({ timeoutMs: 1000 });
    await gate.decide(started.json.pending[0].approvalId, 'approve', { by: 'ada' });
    const workflows = new ServedWorkflows({ host: corral, gate, workflows: loaded.map((l) => l.workflow) });
    server = await startHttpServer(corral, { port: 0, log: false, gate, workflows, maxBodyBytes: 64 * 1024 });
    url = server.url;
    const done = await waitFor(async () => {
      const r = await send(url, `/workflows/runs/${started.json.runId}`);
      return r.json.run.status === 'succeeded' ? r.json : undefined;
    });
    expect(done.run.outputs).toEqual({ said: 'hello dee', again: true });
  });

  it('refuses bad requests: unknown workflows and run ids 404, bad inputs 422, bad bodies 400, big ones 413', async () => {
    const unknown = await run('nope', {});
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatchObject({ code: 'E_NOT_FOUND' });
    // 'runs' is no workflow's name: that path is a run's, which is only read.
    expect((await send(url, '/workflows/runs/runs', { json: {} })).status).toBe(405);

    const deep: Record<string, unknown> = {};
    let at = deep;
    for (let i = 0; i < 80; i++) at = at.x = {} as Record<string, unknown>;
    const tooDeep = await run('stats', { workspace: deep });
    expect(tooDeep.status).toBe(422);
    expect(tooDeep.json.error).toMatchObject({ code: 'E_INPUT_VALIDATION', details: { reason: 'input_too_deep', max_depth: 64 } });
    const undeclared = await run('hello', { who: 'x', role: 'admin' });
    expect(undeclared.status).toBe(422);
    expect(undeclared.json.error.message).toContain('/role: is not an input of this workflow');
    const wrongType = await run('hello', { who: 5 });
    expect(wrongType.status).toBe(422);
    expect((await run('hello', 'who=x')).status).toBe(400);
    expect((await send(url, '/workflows/hello/runs', { json: { inputs: {}, runId: 'mine' } })).status).toBe(400);
    const big = await run('hello', { who: 'x'.repeat(70 * 1024) });
    expect(big.status).toBe(413);
    expect((await send(url, '/workflows/hello/runs', { body: '{}', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
    expect((await send(url, '/workflows/hello/runs')).status).toBe(405);

    // Run ids are matched against their shape before the store is asked.
    for (const id of ['..%2F..%2Fetc', 'x'.repeat(200), 'no-such-run', '%E0%A4%A', 'a%20b']) {
      const status = await send(url, `/workflows/runs/${id}`);
      expect(status.status, id).toBe(404);
      expect(status.json.error.code).toBe('E_NOT_FOUND');
      expect((await send(url, `/workflows/runs/${id}/resume`, { method: 'POST' })).status, id).toBe(404);
    }
    // A run started locally (corral workflow run) is not a remote caller's to read or drive.
    const store = await SqliteStore.open(s.storePath);
    try {
      const now = '1700000000000000000';
      await store.createWorkflowRun({
        id: 'local-run',
        workflow: 'hello',
        definition: { name: 'hello', steps: [{ id: 'a', tool: 'echo' }] },
        definition_sha256: '0'.repeat(64),
        inputs: {},
        status: 'running',
        created_ns: now,
        updated_ns: now,
        outputs: null,
        error: null,
      });
    } finally {
      await store.close();
    }
    expect((await send(url, '/workflows/runs/local-run')).status).toBe(404);
    expect((await send(url, '/workflows/runs/local-run/resume', { method: 'POST' })).status).toBe(404);
    // A resume takes no body: nobody resumes a run as someone else.
    expect((await send(url, '/workflows/runs/x/resume', { json: { as: 'root' } })).status).toBe(400);
    // Nothing of that was stored as a run.
    const runs = await fromStore(s.storePath, (st) => st.listWorkflowRuns({}));
    expect(runs.filter((r) => !/^http-/.test(r.id)).map((r) => r.id)).toEqual(['local-run']);
    // The local run was never driven from here.
    expect(await fromStore(s.storePath, (st) => st.listWorkflowEvents('local-run'))).toEqual([]);
  });

  it('the OpenAPI document has the workflow endpoints, validates, and describes what they answer', async () => {
    const doc = (await send(url, '/openapi.json')).json;
    await SwaggerParser.validate(structuredClone(doc));
    expect(doc.paths['/workflows/stats/runs'].post.operationId).toBe('runWorkflowStats');
    expect(doc.components.schemas.WorkflowStatsInputs).toMatchObject({ type: 'object', required: ['workspace'] });
    const deref = (await SwaggerParser.dereference(structuredClone(doc))) as typeof doc;
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    const check = (schema: unknown, body: unknown) => {
      const validate = ajv.compile(schema as object);
      expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
    };
    const body = (path: string, method: string, status: string) =>
      deref.paths[path][method].responses[status].content['application/json'].schema;
    const waiting = await run('hello', { who: 'bo' });
    check(body('/workflows/hello/runs', 'post', '200'), waiting.json);
    check(body('/workflows/{name}/runs', 'post', '200'), (await run('stats', { workspace: { kind: 'host', path: '/etc' } })).json);
    check(body('/workflows/{name}/runs', 'post', '404'), (await run('nope', {})).json);
    check(body('/workflows/{name}/runs', 'post', '422'), (await run('hello', {})).json);
    check(body('/workflows', 'get', '200'), (await send(url, '/workflows')).json);
    check(body('/workflows/runs/{id}', 'get', '200'), (await send(url, `/workflows/runs/${waiting.json.runId}`)).json);
    check(
      body('/workflows/runs/{id}/resume', 'post', '200'),
      (await send(url, `/workflows/runs/${waiting.json.runId}/resume`, { method: 'POST' })).json,
    );
  });
});
