/**
 * Issue 14, point 6: the same workflow file in the browser. The patch-review
 * example (its text unchanged, imported raw) runs in real Chromium through
 * `Workflows` on a `BrowserCorral` with the bundled tools as a page loads
 * them, its journal and approvals in IndexedDB and its workspace an OPFS
 * folder (a read-write in-memory tree is copied per call, so what `apply`
 * wrote could not be read back). It pauses at `sign-off`; the page is
 * "reloaded" (the host and its store closed, new ones opened on the same
 * database); the waiting run is listed, decided and resumed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserCorral, IndexedDbStore, readOpfsTree, registerBundledTools, writeOpfsTree, type MemoryTree } from '@corral/browser';
import { Workflows, type WorkflowResult } from '@corral/workflow';
import type { WorkflowEvent } from '@corral/core';
import patchReview from '../../../examples/workflows/patch-review.yaml?raw';

const APP_JS = 'export function add(a, b) {\n  return a + b;\n}\n';
const DIFF = [
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

/** One "page load": a store on the database, a host on it, the bundled tools, Workflows. */
interface Page {
  corral: BrowserCorral;
  store: IndexedDbStore;
  workflows: Workflows;
  close(): Promise<void>;
}

async function openPage(database: string): Promise<Page> {
  const store = await IndexedDbStore.open(database);
  const corral = await BrowserCorral.create({ size: 2, store });
  await registerBundledTools(corral);
  return {
    corral,
    store,
    workflows: new Workflows(corral, { by: 'page' }),
    close: async () => {
      await corral.close();
      await store.close();
    },
  };
}

const byId = (r: WorkflowResult) => Object.fromEntries(r.steps.map((s) => [s.id, s]));
const text = async (path: string) => new TextDecoder().decode(((await readOpfsTree(path)).src as MemoryTree)['app.js'] as Uint8Array);

let serial = 0;
const databases: string[] = [];
const folders: string[] = [];

/** A fresh database and an OPFS checkout holding src/app.js and a README. */
async function fresh(): Promise<{ database: string; folder: string }> {
  const id = `${Date.now()}-${serial++}`;
  const database = `corral-workflow-test-${id}`;
  const folder = `workflow-test-${id}`;
  databases.push(database);
  folders.push(folder);
  await writeOpfsTree(folder, { src: { 'app.js': APP_JS }, 'README.md': '# app\n' });
  return { database, folder };
}

/** Start patch-review on the folder: it must stop at sign-off, having written nothing. */
async function startReview(page: Page, folder: string): Promise<{ first: WorkflowResult; events: WorkflowEvent[] }> {
  const workflow = page.workflows.load(patchReview, { source: 'patch-review.yaml' });
  const events: WorkflowEvent[] = [];
  const first = await page.workflows.run(
    workflow,
    { diff: DIFF, workspace: { kind: 'opfs', path: folder } },
    { onEvent: (e) => events.push(e) },
  );
  expect(first.status, JSON.stringify(first.error)).toBe('waiting');
  expect(first.pending).toEqual([
    { step: 'sign-off', approvalId: expect.any(String), kind: 'approval', prompt: expect.stringMatching(/^Apply this patch\? 1 file/) },
  ]);
  const steps = byId(first);
  expect(steps.summary!.output).toMatchObject({ totals: { files: 1, additions: 1, deletions: 0 } });
  expect(steps.check!.output).toMatchObject({ applies: true, applied: false });
  expect(steps.stats!.output).toMatchObject({ totals: { files: 2, lines: 4 } });
  expect(steps.markers!.output).toMatchObject({ count: 0 });
  expect(steps.leftovers!.status).toBe('skipped');
  expect(steps.apply!.status).toBe('pending');
  expect(await text(folder)).toBe(APP_JS);
  return { first, events };
}

afterAll(async () => {
  for (const name of databases) indexedDB.deleteDatabase(name);
  const root = await navigator.storage.getDirectory();
  for (const name of folders) await root.removeEntry(name, { recursive: true }).catch(() => {});
});

describe('patch-review.yaml in Chromium (IndexedDB journal, OPFS workspace)', () => {
  let prepared: Page;
  beforeAll(async () => {
    // Transpile the four components once (kept in IndexedDB): the runs below then measure the workflow, not jco.
    const { database } = await fresh();
    prepared = await openPage(database);
    await Promise.all(
      ['diff-summary', 'apply-patch', 'file-stats', 'grep'].map((name) =>
        prepared.corral.executor.prepare(prepared.corral.registry.resolve(name)),
      ),
    );
    await prepared.close();
  }, 120_000);

  it('pauses at sign-off, survives a reload, and applies the patch once approved', async () => {
    const { database, folder } = await fresh();
    let page = await openPage(database);
    const { first, events } = await startReview(page, folder);
    // onEvent saw every journal event, in order, each once it was stored.
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.kind === 'step_waiting').map((e) => e.step)).toEqual(['sign-off']);
    await page.close();

    // A reload: nothing in memory survives, the database does.
    page = await openPage(database);
    try {
      const waiting = await page.workflows.list({ pending: true });
      expect(waiting).toHaveLength(1);
      expect(waiting[0]).toMatchObject({ id: first.runId, workflow: 'patch-review', status: 'waiting' });
      expect(waiting[0]!.pending).toEqual([
        expect.objectContaining({
          workflow_run_id: first.runId,
          workflow_step: 'sign-off',
          status: 'pending',
          prompt: first.pending![0]!.prompt,
        }),
      ]);

      const later: WorkflowEvent[] = [];
      const { approval, result } = await page.workflows.approve(first.runId, 'sign-off', {
        by: 'ada',
        comment: 'looks right',
        onEvent: (e) => later.push(e),
      });
      expect(approval).toMatchObject({ status: 'approved', decided_by: 'ada', comment: 'looks right' });
      expect(result?.status).toBe('succeeded');
      expect(result?.outputs).toEqual({
        summary: expect.any(String),
        files: 1,
        applies: true,
        markers: 0,
        leftovers: null,
        applied: true,
        lines_before: 4,
        lines_after: 5,
      });
      expect(later.map((e) => e.kind)).toEqual(expect.arrayContaining(['run_resumed', 'step_approved', 'step_started', 'step_succeeded']));
      // Recorded steps never ran again: only apply and stats-after started after the reload.
      expect(later.filter((e) => e.kind === 'step_started').map((e) => e.step)).toEqual(['apply', 'stats-after']);
      expect(await text(folder)).toBe('export function add(a, b) {\n  // TODO: check the types\n  return a + b;\n}\n');

      expect(await page.workflows.list({ pending: true })).toEqual([]);
      expect((await page.workflows.list())[0]).toMatchObject({ id: first.runId, status: 'succeeded', pending: [] });
    } finally {
      await page.close();
    }
  });

  it('fails the run at sign-off when the approval is rejected, and never applies the patch', async () => {
    const { database, folder } = await fresh();
    let page = await openPage(database);
    const { first } = await startReview(page, folder);
    await page.close();

    page = await openPage(database);
    try {
      const { approval, result } = await page.workflows.approve(first.runId, 'sign-off', { reject: true, by: 'bo', comment: 'not now' });
      expect(approval).toMatchObject({ status: 'rejected', decided_by: 'bo', comment: 'not now' });
      expect(result?.status).toBe('failed');
      const steps = byId(result!);
      expect(steps['sign-off']).toMatchObject({ status: 'failed', error: { code: 'E_POLICY_DENIED' } });
      expect(steps.apply!.status).toBe('pending');
      expect(result?.outputs).toBeUndefined();
      expect(await text(folder)).toBe(APP_JS);
      const { run, events } = await page.workflows.status(first.runId);
      expect(run.status).toBe('failed');
      expect(events.some((e) => e.kind === 'step_rejected' && e.step === 'sign-off')).toBe(true);
      expect(await page.workflows.list({ pending: true })).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
