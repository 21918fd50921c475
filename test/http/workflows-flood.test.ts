// Red team: a remote caller must not be able to leave workflow runs waiting without end. Each keeps its
// inputs (up to 4 MiB) and a pending approval, and pending workflow approvals count against the policy
// gate's limit, so a flood of them also refused every direct tool call's approval. A server keeps at
// most `maxWaiting` such runs; past it, a new run is refused (503, E_RESOURCE_EXHAUSTED) and nothing is stored.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Corral, loadWorkflowFolders } from '@corral/node';
import { startHttpServer, type CorralHttpServer } from '@corral/node/http';
import { openPolicyGate } from '@corral/node/policy';
import { ServedWorkflows } from '@corral/workflow';
import { FIXTURES, send } from './helpers.js';

describe('waiting workflow runs of remote callers are bounded', () => {
  let corral: Corral;
  let server: CorralHttpServer;
  let url: string;

  beforeAll(async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'corral-http-wf-flood-')));
    const wfDir = join(dir, 'workflows');
    mkdirSync(wfDir);
    writeFileSync(
      join(wfDir, 'ask.yaml'),
      'name: ask\ninputs:\n  pad: { type: string, default: "" }\nsteps:\n  - id: ok\n    approval: { prompt: "Go on?" }\n  - id: after\n    tool: echo\n    depends_on: [ok]\n    input: { x: 1 }\n',
    );
    const policyPath = join(dir, 'policy.yaml');
    writeFileSync(policyPath, JSON.stringify({ version: 1, tools: {} }));
    corral = await Corral.create({ size: 1, store: join(dir, 'snapshots.db'), toolDirs: [join(FIXTURES, 'echo')] });
    const gate = openPolicyGate({ store: corral.store!, policyPath });
    const { loaded } = await loadWorkflowFolders(corral.registry, [wfDir]);
    const workflows = new ServedWorkflows({ host: corral, gate, workflows: loaded.map((l) => l.workflow), maxWaiting: 3 });
    server = await startHttpServer(corral, { port: 0, log: false, gate, workflows });
    url = server.url;
  });
  afterAll(async () => {
    await server?.close({ timeoutMs: 1000 });
    await corral?.close();
  });

  it('past maxWaiting runs that wait, a new run is refused with 503 E_RESOURCE_EXHAUSTED and stores nothing', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await send(url, '/workflows/ask/runs', { json: { inputs: { pad: 'x'.repeat(1000) } } });
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ status: 'waiting' });
    }
    const store = corral.store!;
    const before = (await store.listWorkflowRuns({ limit: 100 })).length;
    const pendingBefore = (await store.listApprovals({ status: ['pending'], limit: 100 })).length;
    const refused = await send(url, '/workflows/ask/runs', { json: { inputs: {} } });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBeDefined();
    expect(refused.json).toMatchObject({
      error: { code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'waiting_workflow_runs', max_waiting: 3 } },
    });
    expect((await store.listWorkflowRuns({ limit: 100 })).length).toBe(before);
    expect((await store.listApprovals({ status: ['pending'], limit: 100 })).length).toBe(pendingBefore);
  });
});
