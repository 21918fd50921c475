/**
 * The review panel: the patch-review workflow (examples/workflows/
 * patch-review.yaml, its text unchanged) run on the page's diff by
 * @corral/workflow's `Workflows` on the page's BrowserCorral, offline.
 *
 * - The files the diff applies to are a folder the user picks; they are
 *   copied into a folder of the origin private file system (OPFS), which
 *   the workflow mounts as its `workspace`: `apply` writes there, and the
 *   patched files can be downloaded. No folder: an empty one (only new
 *   files apply).
 * - Each step's state and duration are drawn as the journal grows
 *   (`onEvent`); at `sign-off` the run waits, and Approve / Reject decide the
 *   approval and continue it.
 * - Runs, their journals and approvals are in IndexedDB (the page's store),
 *   so the list below survives a reload, and a run that waits can be decided
 *   after one. A run the page was driving when it closed can be continued.
 *
 * Loaded once the runtime is ready, as its own chunk (yaml and the engine).
 */
import { opfsDirectory, writeOpfsTree, type BrowserCorral, type MemoryTree } from '@corral/browser';
import type { WorkflowEvent, WorkflowRunRecord } from '@corral/core';
import { Workflows, type Workflow, type WorkflowRunSummary } from '@corral/workflow';
import patchReviewText from '../../../examples/workflows/patch-review.yaml?raw';
import { h } from './dom.js';
import { relativeTime } from './history.js';
import { formatBytes, formatMs, type Strings } from './i18n.js';
import { firstPathOf, reviewOutcome, stepIdsOf, stepRows, type StepRow } from './review-model.js';

/** Where the copies of picked folders live in OPFS, one folder per run (named by the run's id). */
export const WORKSPACES = 'corral-web/reviews';
/** Runs listed; the OPFS copies of older ones are removed when the page starts. */
const RUNS_SHOWN = 20;
/** Folders never copied from a picked folder: large, and never what a diff changes. */
const LEFT_OUT = new Set(['.git', 'node_modules']);

export interface ReviewElements {
  body: HTMLElement;
  runs: HTMLOListElement;
  runsEmpty: HTMLElement;
}

export interface ReviewOptions {
  corral: BrowserCorral;
  /** The diff in the input box (a large one is fetched from the runtime's worker). */
  diff: () => Promise<string>;
  strings: Strings;
  language: () => 'en' | 'zh';
  /** A run called tools (their executions are in the history now). */
  onChange?: () => void;
}

export interface ReviewPanel {
  /** Resolves when the runs are listed (and a run that waits is shown). */
  ready: Promise<void>;
  setStrings(s: Strings): void;
}

interface View {
  run: WorkflowRunRecord;
  events: WorkflowEvent[];
  /** The approvals the run waits for: step and prompt. */
  pending: Array<{ step: string; prompt: string }>;
}

type Busy = 'copying' | 'preparing' | 'running' | null;

export function mountReview(els: ReviewElements, options: ReviewOptions): ReviewPanel {
  const { corral } = options;
  let t = options.strings;
  const workflows = corral.store ? new Workflows(corral, { by: 'corral-web' }) : null;
  const workflow: Workflow | null = workflows ? workflows.load(patchReviewText, { source: 'patch-review.yaml' }) : null;
  let picked: { name: string; files: File[]; bytes: number; leftOut: number } | null = null;
  let busy: Busy = null;
  let message: { error: boolean; text: string } | null = null;
  let view: View | null = null;
  /** The run this page is driving now (its events arrive through onEvent). */
  let driving: string | null = null;
  let runs: WorkflowRunSummary[] = [];

  // ---- actions -------------------------------------------------------------------------

  const pick = (input: HTMLInputElement) => {
    const all = [...(input.files ?? [])];
    if (all.length === 0) return;
    const files = all.filter((f) => !relativePath(f).some((part) => LEFT_OUT.has(part)));
    picked = {
      name: (all[0]!.webkitRelativePath || all[0]!.name).split('/')[0]!,
      files,
      bytes: files.reduce((n, f) => n + f.size, 0),
      leftOut: all.length - files.length,
    };
    draw();
  };

  /** Run `action` on the run `runId`, drawing its events as they are stored; then show the run as the store has it. */
  const drive = async (runId: string, action: (onEvent: (e: WorkflowEvent) => void) => Promise<unknown>) => {
    driving = runId;
    busy = 'running';
    message = null;
    draw();
    try {
      await action((e) => {
        if (view?.run.id !== e.run_id) return;
        view.events.push(e);
        if (e.kind === 'step_waiting') view.pending.push({ step: e.step ?? '', prompt: e.note ?? '' });
        draw();
      });
    } catch (err) {
      message = { error: true, text: errorText(err) };
    } finally {
      driving = null;
      busy = null;
      await show(runId).catch(() => {
        // The run was never recorded (refused inputs, a store that failed): nothing to show but the error.
        if (view?.run.id === runId && view.events.length === 0) view = null;
      });
      await listRuns();
      // The buttons that started this are gone (an approval box) or were disabled: keep the keyboard in the panel.
      if (document.activeElement === document.body || document.activeElement === null)
        document.getElementById('review-run-heading')?.focus();
      options.onChange?.();
    }
  };

  const start = async () => {
    if (!workflows || !workflow || busy) return;
    const diff = await options.diff();
    if (busy) return; // started meanwhile
    if (!diff.trim()) {
      message = { error: true, text: t.reviewNeedsDiff };
      draw();
      return;
    }
    busy = 'copying';
    message = null;
    draw();
    const runId = crypto.randomUUID();
    const workspace = `${WORKSPACES}/${runId}`;
    try {
      await ready; // old copies are pruned first
      await writeOpfsTree(workspace, await treeOf(picked?.files ?? []));
      busy = 'preparing';
      draw();
      await prepareTools(corral, workflow);
    } catch (err) {
      busy = null;
      message = { error: true, text: errorText(err) };
      draw();
      return;
    }
    // Drawn at once from what is known, until the store has the run.
    const now = `${BigInt(Date.now()) * 1_000_000n}`;
    view = {
      run: {
        id: runId,
        workflow: workflow.name,
        definition: workflow,
        definition_sha256: '',
        inputs: { diff, workspace: { kind: 'opfs', path: workspace } },
        status: 'running',
        created_ns: now,
        updated_ns: now,
        outputs: null,
        error: null,
      },
      events: [],
      pending: [],
    };
    await drive(runId, (onEvent) => workflows.run(workflow, { diff, workspace: { kind: 'opfs', path: workspace } }, { runId, onEvent }));
  };

  const decide = async (step: string, reject: boolean, comment: string) => {
    if (!workflows || !view || busy) return;
    const runId = view.run.id;
    view.run = { ...view.run, status: 'running' };
    view.pending = view.pending.filter((p) => p.step !== step);
    await drive(runId, (onEvent) =>
      workflows.approve(runId, step, { reject, by: 'corral-web user', ...(comment ? { comment } : {}), onEvent }),
    );
  };

  const resume = async () => {
    if (!workflows || !view || busy) return;
    const runId = view.run.id;
    await drive(runId, (onEvent) => workflows.resume(runId, { onEvent }));
  };

  /** Show a run as the store has it. */
  const show = async (runId: string) => {
    if (!workflows) return;
    const { run, events, pending } = await workflows.status(runId);
    view = {
      run,
      events,
      pending: pending.map((a) => ({ step: a.workflow_step ?? '', prompt: a.prompt ?? '' })),
    };
    draw();
  };

  const listRuns = async () => {
    if (!workflows) return;
    try {
      runs = await workflows.list({ workflow: workflow!.name, limit: RUNS_SHOWN });
    } catch {
      runs = [];
    }
    drawRuns();
  };

  const download = async (file: string) => {
    const folder = workspaceOf(view?.run);
    if (!folder) return;
    try {
      const parts = file.split('/');
      const name = parts.pop()!;
      let blob: Blob;
      try {
        blob = await (await (await opfsDirectory([folder, ...parts].join('/'))).getFileHandle(name)).getFile();
      } catch {
        throw new Error(t.fileGone(file));
      }
      const url = URL.createObjectURL(blob);
      const a = h('a', { href: url, download: name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      message = { error: true, text: errorText(err) };
      draw();
    }
  };

  // ---- drawing -------------------------------------------------------------------------

  const stepRow = (row: StepRow) =>
    h(
      'li',
      { class: 'step', 'data-step': row.id, 'data-state': row.state },
      h('span', { class: 'step-id' }, row.id),
      h('span', { class: `badge state ${row.state}` }, t.stepState[row.state]),
      h('span', { class: 'step-ms' }, row.ms === null || row.state === 'skipped' ? '' : duration(row.ms)),
      row.tool && row.tool !== row.id ? h('span', { class: 'step-tool' }, row.tool) : null,
      row.error && row.state === 'failed'
        ? h('small', { class: 'step-note error' }, row.error)
        : row.note && row.state !== 'running'
          ? h('small', { class: 'step-note' }, row.note)
          : null,
    );

  const approvalBox = (p: { step: string; prompt: string }) => {
    const id = `review-comment-${p.step}`;
    const comment = h('input', { type: 'text', id, autocomplete: 'off' });
    return h(
      'div',
      { class: 'approval', role: 'group', 'aria-labelledby': 'review-approval-heading' },
      h('h3', { id: 'review-approval-heading' }, t.approvalHeading),
      h('p', { class: 'approval-prompt', id: 'review-prompt' }, p.prompt),
      h('label', { class: 'field', for: id }, h('span', {}, t.comment), comment),
      h(
        'div',
        { class: 'row' },
        h(
          'button',
          { type: 'button', class: 'primary', id: 'review-approve', onclick: () => void decide(p.step, false, comment.value.trim()) },
          t.approve,
        ),
        h('button', { type: 'button', id: 'review-reject', onclick: () => void decide(p.step, true, comment.value.trim()) }, t.reject),
      ),
    );
  };

  const runView = (v: View) => {
    const rows = stepRows(stepIdsOf(v.run.definition), v.events);
    const outcome = v.run.id === driving ? 'running' : reviewOutcome(v.run);
    const interrupted = v.run.status === 'running' && v.run.id !== driving;
    const applied = rows.find((r) => r.id === 'apply' && r.state === 'succeeded')?.output as
      | { files?: Array<{ path: string; status: string }> }
      | undefined;
    const outputs = v.run.status === 'succeeded' && v.run.outputs && typeof v.run.outputs === 'object' ? v.run.outputs : null;
    return h(
      'div',
      { class: 'run-view', id: 'review-run', 'data-run': v.run.id, 'data-outcome': outcome },
      h(
        'div',
        { class: 'run-head' },
        h('h3', { id: 'review-run-heading', tabindex: -1 }, t.runLabel(v.run.id.slice(0, 8))),
        h('span', { class: `badge outcome ${outcome}`, id: 'review-outcome' }, interrupted ? t.interrupted : t.outcome[outcome]),
      ),
      h('ol', { class: 'steps', id: 'review-steps', 'aria-label': t.stepsLabel }, ...rows.map(stepRow)),
      v.run.id !== driving && v.run.status === 'waiting' && v.pending[0] ? approvalBox(v.pending[0]) : null,
      interrupted && !busy
        ? h('div', { class: 'row' }, h('button', { type: 'button', id: 'review-continue', onclick: () => void resume() }, t.continueRun))
        : null,
      v.run.status === 'failed' && v.run.error ? h('p', { class: 'message error', id: 'review-error' }, v.run.error.message) : null,
      outputs
        ? h(
            'dl',
            { class: 'outputs', id: 'review-outputs', 'aria-label': t.outputsHeading },
            ...Object.entries(outputs).flatMap(([k, value]) => [
              h('dt', {}, k),
              h('dd', { 'data-output': k }, value === null ? '—' : typeof value === 'string' ? value : JSON.stringify(value)),
            ]),
          )
        : null,
      applied?.files?.length
        ? h(
            'div',
            { class: 'patched' },
            h('p', { class: 'section-title' }, t.patchedFiles),
            h(
              'ul',
              {},
              ...applied.files
                .filter((f) => f.status !== 'deleted')
                .map((f) =>
                  h(
                    'li',
                    {},
                    h(
                      'button',
                      { type: 'button', class: 'ghost small', 'data-download': f.path, onclick: () => void download(f.path) },
                      t.download(f.path),
                    ),
                  ),
                ),
            ),
          )
        : null,
    );
  };

  // The form is built once (and again when the language changes), so focus stays on its
  // controls; what changes as a run goes (its status, the run) is drawn into `live`.
  const folder = h('input', {
    type: 'file',
    id: 'review-folder',
    class: 'visually-hidden',
    webkitdirectory: true,
    multiple: true,
    'aria-describedby': 'review-folder-title review-folder-note',
    onchange: (e: Event) => pick(e.target as HTMLInputElement),
  });
  const folderNote = h('small', { id: 'review-folder-note' });
  const startButton = h('button', { type: 'button', class: 'primary', id: 'review-start', onclick: () => void start() });
  const status = h('span', { class: 'message', id: 'review-status', role: 'status' });
  const live = h('div', { class: 'review-live' });

  const build = () => {
    if (!workflows) {
      els.body.replaceChildren(h('p', { class: 'empty' }, t.reviewUnavailable));
      return;
    }
    els.body.replaceChildren(
      h('p', { class: 'intro' }, t.reviewIntro),
      // Drawn like the page's main file picker (the browser's own says "Choose Files" in its language, not the page's).
      h(
        'div',
        { class: 'field' },
        h('span', { id: 'review-folder-title' }, t.reviewFolder),
        h('div', { class: 'row' }, h('label', { class: 'button ghost picker' }, h('span', {}, t.chooseFolder), folder)),
        folderNote,
      ),
      h('div', { class: 'row' }, startButton, status),
      live,
    );
    draw();
  };

  const draw = () => {
    if (!workflows) return;
    folderNote.textContent = picked
      ? `${t.reviewPicked(picked.name, picked.files.length, formatBytes(picked.bytes))}${picked.leftOut ? ` · ${t.reviewLeftOut(picked.leftOut)}` : ''}`
      : t.reviewNoFolder;
    folder.disabled = busy !== null;
    startButton.disabled = busy !== null;
    startButton.textContent = t.reviewStart;
    const outcome = view ? (view.run.id === driving ? 'running' : reviewOutcome(view.run)) : null;
    status.textContent = busy
      ? { copying: t.reviewCopying, preparing: t.reviewPreparing, running: t.reviewRunning }[busy]
      : outcome
        ? t.outcome[outcome]
        : '';
    live.replaceChildren(
      ...[
        message ? h('p', { class: `message ${message.error ? 'error' : 'ok'}`, role: 'alert', id: 'review-message' }, message.text) : null,
        view ? runView(view) : null,
      ].filter((el) => el !== null),
    );
    drawRuns();
  };

  const drawRuns = () => {
    els.runsEmpty.textContent = workflows ? t.runsEmpty : t.reviewUnavailable;
    els.runsEmpty.hidden = runs.length > 0;
    els.runs.replaceChildren(
      ...runs.map((run) => {
        const outcome = reviewOutcome(run);
        const interrupted = run.status === 'running' && run.id !== driving;
        const when = new Date(Number(BigInt(run.created_ns) / 1_000_000n));
        const button = h(
          'button',
          {
            type: 'button',
            'data-run': run.id,
            'aria-current': view?.run.id === run.id ? 'true' : null,
            onclick: () => void show(run.id).catch((err) => ((message = { error: true, text: errorText(err) }), draw())),
          },
          h(
            'span',
            { class: 'h-line' },
            h('span', { class: 'h-title' }, firstPathOf((run.inputs as { diff?: unknown } | null)?.diff) ?? run.workflow),
            h('span', { class: 'h-meta' }, relativeTime(when, options.language())),
          ),
          h(
            'span',
            { class: 'h-line' },
            h('span', { class: `badge outcome ${outcome}` }, interrupted ? t.interrupted : t.outcome[outcome]),
            h('span', { class: 'h-meta' }, run.id.slice(0, 8)),
          ),
        );
        return h('li', { class: 'history-item' }, button);
      }),
    );
  };

  build();
  const ready: Promise<void> = (async () => {
    await listRuns();
    await pruneWorkspaces(runs).catch(() => {});
    // A run that waits for a person (or was cut off by the reload) is shown at once.
    const open = runs.find((r) => r.status === 'waiting' || r.status === 'running');
    if (open) await show(open.id).catch(() => {});
  })();
  return {
    ready,
    setStrings(s: Strings) {
      t = s;
      build();
    },
  };
}

function relativePath(file: File): string[] {
  // "picked/src/app.js" → ["src", "app.js"]: the picked folder is the workspace.
  const parts = (file.webkitRelativePath || file.name).split('/');
  return parts.length > 1 ? parts.slice(1) : parts;
}

async function treeOf(files: File[]): Promise<MemoryTree> {
  const tree: MemoryTree = {};
  for (const file of files) {
    const parts = relativePath(file);
    let dir = tree;
    for (const part of parts.slice(0, -1)) dir = (dir[part] ??= {}) as MemoryTree;
    dir[parts[parts.length - 1]!] = new Uint8Array(await file.arrayBuffer());
  }
  return tree;
}

/** Fetch the workflow tools' transpiled components before the run (made when Corral was built), so step times are the tools'. */
async function prepareTools(corral: BrowserCorral, workflow: Workflow): Promise<void> {
  const names = new Set(workflow.steps.flatMap((s) => ('tool' in s ? [s.tool].flat() : [])));
  await Promise.all(
    [...names]
      .map((name) => corral.registry.resolve(name))
      .filter((tool) => (tool.spec.kind ?? 'component') === 'component')
      .map((tool) => corral.executor.prepare(tool)),
  );
}

function workspaceOf(run: WorkflowRunRecord | undefined): string | null {
  const source = (run?.inputs as { workspace?: { kind?: unknown; path?: unknown } } | undefined)?.workspace;
  return source?.kind === 'opfs' && typeof source.path === 'string' ? source.path : null;
}

/** Remove the OPFS copies of runs no longer listed. */
async function pruneWorkspaces(listed: WorkflowRunSummary[]): Promise<void> {
  const keep = new Set(listed.map((r) => workspaceOf(r)?.split('/').pop()));
  const dir = await opfsDirectory(WORKSPACES, { create: true });
  const gone: string[] = [];
  for await (const name of dir.keys()) if (!keep.has(name)) gone.push(name);
  for (const name of gone) await dir.removeEntry(name, { recursive: true });
}

function errorText(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  const text = typeof e?.message === 'string' ? e.message : String(err);
  return typeof e?.code === 'string' ? `${e.code}: ${text}` : text;
}

/** A step's time: milliseconds for tools, minutes or hours for a wait on a person. */
function duration(ms: number): string {
  if (ms < 60_000) return formatMs(ms);
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}
