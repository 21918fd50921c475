// Red team: an approval step's prompt is a template, so a remote caller's inputs decide its text. A
// prompt an approval record cannot hold (empty, longer than MAX_APPROVAL_PROMPT, holding NUL) must not
// leave the run stuck `running` or answer 500: the prompt is made to fit, and the run waits as usual.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Corral, loadWorkflowFolders } from '@corral/node';
import { startHttpServer, type CorralHttpServer } from '@corral/node/http';
import { openPolicyGate } from '@corral/node/policy';
import { ServedWorkflows } from '@corral/workflow';
import { FIXTURES, send } from './helpers.js';

describe('an approval prompt rendered from a remote caller’s inputs', () => {
  let corral: Corral;
  let server: CorralHttpServer;
  let url: string;

  beforeAll(async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'corral-http-wf-prompt-')));
    const wfDir = join(dir, 'workflows');
    mkdirSync(wfDir);
    writeFileSync(
      join(wfDir, 'ask.yaml'),
      'name: ask\ninputs:\n  p: { type: string }\nsteps:\n  - id: ok\n    approval: { prompt: "{{ inputs.p }}" }\n  - id: after\n    tool: echo\n    depends_on: [ok]\n    input: { x: 1 }\n',
    );
    const policyPath = join(dir, 'policy.yaml');
    writeFileSync(policyPath, JSON.stringify({ version: 1, tools: {} }));
    corral = await Corral.create({ size: 1, store: join(dir, 'snapshots.db'), toolDirs: [join(FIXTURES, 'echo')] });
    const gate = openPolicyGate({ store: corral.store!, policyPath });
    const { loaded } = await loadWorkflowFolders(corral.registry, [wfDir]);
    const workflows = new ServedWorkflows({ host: corral, gate, workflows: loaded.map((l) => l.workflow) });
    server = await startHttpServer(corral, { port: 0, log: false, gate, workflows });
    url = server.url;
  });
  afterAll(async () => {
    await server?.close({ timeoutMs: 1000 });
    await corral?.close();
  });

  for (const [what, p] of [
    ['empty', ''],
    ['longer than an approval keeps', 'x'.repeat(100_000)],
    ['holding NUL', 'a\u0000b'],
  ] as const) {
    it(`${what}: the run waits, its approval pending, not stuck running`, async () => {
      const r = await send(url, '/workflows/ask/runs', { json: { inputs: { p } } });
      expect(r.status, r.text.slice(0, 300)).toBe(200);
      expect(r.json).toMatchObject({ status: 'waiting', pending: [{ step: 'ok' }] });
      const pending = r.json.pending[0];
      expect(pending.prompt.length).toBeLessThanOrEqual(16 * 1024);
      const run = await corral.store!.getWorkflowRun(r.json.runId);
      expect(run?.status).toBe('waiting');
    });
  }
});
