/**
 * The example workflows, run with real tools: patch-review over a folder
 * on disk with the bundled tools, on-error over the hostile test fixtures.
 * The journal is this folder's in-memory one: the stores' own journals are
 * tested with the stores.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral } from '@corral/node';
import { loadWorkflow, resumeWorkflow, runWorkflow, type WorkflowHost, type WorkflowResult } from '@corral/workflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalDesk, MemoryJournal } from './helpers.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const TOOL_DIRS = [join(ROOT, 'test/fixtures/tools'), join(ROOT, 'test/fixtures/network')];
const example = (name: string) => readFileSync(join(ROOT, 'examples/workflows', name), 'utf8');
const byId = (r: WorkflowResult) => Object.fromEntries(r.steps.map((s) => [s.id, s]));

/** Every tool name a tool-spec.json under these folders declares. */
function toolNames(...dirs: string[]): Set<string> {
  const names = new Set<string>();
  for (const dir of dirs) {
    for (const entry of readdirSync(dir)) {
      const spec = join(dir, entry, 'tool-spec.json');
      if (existsSync(spec)) names.add(JSON.parse(readFileSync(spec, 'utf8')).name);
    }
  }
  return names;
}

let corral: Corral;
const scratch = mkdtempSync(join(tmpdir(), 'corral-workflow-examples-'));
beforeAll(async () => {
  corral = await Corral.create({ toolDirs: TOOL_DIRS, store: false });
});
afterAll(async () => {
  await corral?.close();
  rmSync(scratch, { recursive: true, force: true });
});

function hostFor(journal: MemoryJournal, desk: ApprovalDesk): WorkflowHost {
  return {
    journal,
    invoke: (tool, input, options) => corral.invoke(tool, input, options),
    requestApproval: desk.requestApproval,
    getApprovalStatus: desk.getApprovalStatus,
  };
}

describe('the example workflows', () => {
  it('name only tools that exist', () => {
    const bundled = toolNames(join(ROOT, 'wasm-tools'));
    const fixtures = toolNames(...TOOL_DIRS);
    expect(() =>
      loadWorkflow(example('patch-review.yaml'), { source: 'patch-review.yaml', knownTool: (t) => bundled.has(t) }),
    ).not.toThrow();
    expect(() => loadWorkflow(example('on-error.yaml'), { source: 'on-error.yaml', knownTool: (t) => fixtures.has(t) })).not.toThrow();
  });

  it('patch-review: summarizes, checks and scans a patch, waits for a person, then applies it', async () => {
    const repo = join(scratch, 'repo');
    mkdirSync(join(repo, 'src'), { recursive: true });
    writeFileSync(join(repo, 'src/app.js'), 'export function add(a, b) {\n  return a + b;\n}\n');
    writeFileSync(join(repo, 'README.md'), '# app\n');
    const diff = [
      'diff --git a/src/app.js b/src/app.js',
      '--- a/src/app.js',
      '+++ b/src/app.js',
      '@@ -1,3 +1,4 @@',
      ' export function add(a, b) {',
      '+  // TODO: check the types',
      '   return a + b;',
      ' }',
      '',
    ].join('\n');
    const journal = new MemoryJournal();
    const desk = new ApprovalDesk();
    const wf = loadWorkflow(example('patch-review.yaml'), { source: 'patch-review.yaml' });
    const inputs = { diff, workspace: { kind: 'host', path: repo } };

    const first = await runWorkflow(wf, inputs, hostFor(journal, desk));
    expect(first.status).toBe('waiting');
    const steps = byId(first);
    expect(steps.summary!.output).toMatchObject({ totals: { files: 1, additions: 1, deletions: 0 } });
    expect(steps.check!.output).toMatchObject({ applies: true, applied: false });
    expect(steps.stats!.output).toMatchObject({ totals: { files: 2, lines: 4 } });
    expect(steps.markers!.output).toMatchObject({ count: 0 });
    expect(steps.leftovers).toMatchObject({
      status: 'skipped',
      note: 'condition is false: steps.summary.output.totals.additions > inputs.big',
    });
    expect(first.pending).toEqual([
      {
        step: 'sign-off',
        approvalId: 'approval-1',
        kind: 'approval',
        prompt: `Apply this patch? ${(steps.summary!.output as { summary: string }).summary}`,
      },
    ]);
    expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).not.toContain('TODO'); // nothing applied yet

    desk.decide('approval-1', 'approved', 'ada');
    const done = await resumeWorkflow(first.runId, hostFor(journal, desk));
    expect(done.status).toBe('succeeded');
    expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).toContain('// TODO: check the types');
    expect(done.outputs).toEqual({
      summary: expect.any(String),
      files: 1,
      applies: true,
      markers: 0,
      leftovers: null,
      applied: true,
      lines_before: 4,
      lines_after: 5,
    });
  });

  it('on-error: shows every action, pauses for review, and fails at the step that says fail', async () => {
    const journal = new MemoryJournal();
    const desk = new ApprovalDesk();
    const wf = loadWorkflow(example('on-error.yaml'), { source: 'on-error.yaml' });
    const first = await runWorkflow(wf, {}, hostFor(journal, desk));
    expect(first.status).toBe('waiting');
    expect(first.pending).toEqual([
      {
        step: 'review',
        approvalId: 'approval-1',
        kind: 'human_review',
        prompt: 'not-json printed text that is not JSON. Run it once more?',
      },
    ]);
    desk.decide('approval-1', 'approved', 'ada');
    const done = await resumeWorkflow(first.runId, hostFor(journal, desk));
    const s = byId(done);
    expect(s.retry).toMatchObject({ status: 'skipped', attempts: 3, error: { code: 'E_RESOURCE_EXHAUSTED' } });
    expect(s.fallback).toMatchObject({ status: 'succeeded', tool: 'echo', output: { message: 'hello' } });
    expect(s.skip).toMatchObject({ status: 'skipped', error: { code: 'E_UNEXPECTED_EXIT' } });
    expect(s.offline).toMatchObject({ status: 'succeeded', tool: 'echo', output: { offline: true } });
    expect(s.review).toMatchObject({ status: 'skipped', attempts: 2 });
    expect(s.fail).toMatchObject({ status: 'failed', error: { code: 'E_RESOURCE_EXHAUSTED' } });
    expect(done).toMatchObject({ status: 'failed', error: { code: 'E_RESOURCE_EXHAUSTED', step: 'fail' } });

    // Without the failing step, and with the review rejected: the rejection fails the run.
    const quiet = await runWorkflow(wf, { show_fail: false }, hostFor(journal, desk));
    desk.decide(quiet.pending![0]!.approvalId, 'rejected', 'bob', 'leave it');
    const rejected = await resumeWorkflow(quiet.runId, hostFor(journal, desk));
    expect(rejected).toMatchObject({ status: 'failed', error: { code: 'E_POLICY_DENIED', step: 'review' } });
    expect(byId(rejected).fail).toMatchObject({ status: 'pending' });
  });
});
