// Red team: a run whose rendered outputs (or approval step input) are larger than a record keeps (4 MiB) must fail cleanly,
// not leave the run `running` for ever (every resume renders the same outputs) and answer 500. Here a
// remote caller's input, which the operator's outputs name twice, is enough.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Corral, loadWorkflowFolders } from '@corral/node';
import { startHttpServer, type CorralHttpServer } from '@corral/node/http';
import { openPolicyGate } from '@corral/node/policy';
import { ServedWorkflows } from '@corral/workflow';
import { FIXTURES, send } from './helpers.js';

describe('outputs larger than a run record keeps', () => {
  let corral: Corral;
  let server: CorralHttpServer;
  let url: string;

  beforeAll(async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'corral-http-wf-outputs-')));
    const wfDir = join(dir, 'workflows');
    mkdirSync(wfDir);
    writeFileSync(
      join(wfDir, 'twice.yaml'),
      'name: twice\ninputs:\n  x: { type: string }\noutputs:\n  a: "{{ inputs.x }}"\n  b: "{{ inputs.x }}"\nsteps:\n  - id: e\n    tool: echo\n    input: { n: 1 }\n',
    );
    writeFileSync(
      join(wfDir, 'ask-twice.yaml'),
      'name: ask-twice\ninputs:\n  x: { type: string }\nsteps:\n  - id: ok\n    approval: { prompt: "Go on?" }\n    input: { a: "{{ inputs.x }}", b: "{{ inputs.x }}" }\n  - id: e\n    tool: echo\n    depends_on: [ok]\n    input: { n: 1 }\n',
    );
    const policyPath = join(dir, 'policy.yaml');
    writeFileSync(policyPath, JSON.stringify({ version: 1, tools: {} }));
    corral = await Corral.create({ size: 1, store: join(dir, 'snapshots.db'), toolDirs: [join(FIXTURES, 'echo')] });
    const gate = openPolicyGate({ store: corral.store!, policyPath });
    const { loaded } = await loadWorkflowFolders(corral.registry, [wfDir]);
    const workflows = new ServedWorkflows({ host: corral, gate, workflows: loaded.map((l) => l.workflow) });
    server = await startHttpServer(corral, { port: 0, log: false, gate, workflows, maxBodyBytes: 8 * 1024 * 1024 });
    url = server.url;
  });
  afterAll(async () => {
    await server?.close({ timeoutMs: 1000 });
    await corral?.close();
  });

  it('fail the run with E_RESOURCE_EXHAUSTED; the run is failed in the store, not running', async () => {
    const r = await send(url, '/workflows/twice/runs', { json: { inputs: { x: 'y'.repeat(3 * 1024 * 1024) } } });
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(r.json).toMatchObject({ status: 'failed', error: { code: 'E_RESOURCE_EXHAUSTED' } });
    const run = await corral.store!.getWorkflowRun(r.json.runId);
    expect(run?.status).toBe('failed');
  });

  it('an approval step shown more than an approval keeps fails its step (E_RESOURCE_EXHAUSTED), not the server', async () => {
    const r = await send(url, '/workflows/ask-twice/runs', { json: { inputs: { x: 'y'.repeat(3 * 1024 * 1024) } } });
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(r.json).toMatchObject({ status: 'failed', error: { code: 'E_RESOURCE_EXHAUSTED', step: 'ok' } });
    expect((await corral.store!.getWorkflowRun(r.json.runId))?.status).toBe('failed');
  });
});
