/**
 * The offline diff summarizer. Paste, drop or pick a diff; the bundled
 * diff-summary WASI tool summarizes it in a sandbox worker (through
 * @corral/browser); the result is drawn as totals, a chart and a table, and
 * every call lands in the history (IndexedDB execution snapshots). After
 * one visit a service worker serves the app and the tool, so it all works
 * with the network off, and summarizing never makes a request at all.
 */
import { h, byId } from './dom.js';
import type { Host, PrepStep } from './host.js';
import { historyEntries, inputOf, relativeTime, type HistoryEntry } from './history.js';
import { STRINGS, formatBytes, initialLanguage, saveLanguage, type Strings } from './i18n.js';
import { renderError, renderSummary } from './render.js';
import { failureMessage, type DiffSummary, type Language } from './summary.js';

// When the app's code starts (after its modules loaded): the benchmark's baseline for a cold start.
performance.mark('corral:app-start');
// The runtime (ajv, the sandbox pool, the store) loads beside the page, not before it:
// the page is drawn and takes input at once, and summarizing starts when it is ready.
const hostModule = import('./host.js');

/** Larger files are summarized whole but not put into the text box (a 5 MB textarea makes typing sluggish). */
const TEXTAREA_LIMIT = 1_500_000;
const HISTORY_SHOWN = 20;
/**
 * Snapshots kept in IndexedDB; older ones are pruned at start. Each keeps
 * its diff (that is what makes it reopenable), and listing reads them whole.
 */
const HISTORY_KEPT = 40;

const els = {
  status: byId('status'),
  statusText: byId('status-text'),
  prep: byId('prep'),
  prepFill: byId('prep-fill'),
  prepText: byId('prep-text'),
  input: byId<HTMLTextAreaElement>('diff-input'),
  drop: byId('drop'),
  fileInput: byId<HTMLInputElement>('file-input'),
  fileNote: byId('file-note'),
  summarize: byId<HTMLButtonElement>('summarize'),
  summarizeLabel: byId('summarize-label'),
  example: byId<HTMLButtonElement>('example'),
  clear: byId<HTMLButtonElement>('clear'),
  result: byId('result'),
  resultBody: byId('result-body'),
  history: byId<HTMLOListElement>('history'),
  historyEmpty: byId('history-empty'),
  clearHistory: byId<HTMLButtonElement>('clear-history'),
  reviewBody: byId('review-body'),
  runs: byId<HTMLOListElement>('runs'),
  runsEmpty: byId('runs-empty'),
  advanced: byId<HTMLDetailsElement>('advanced'),
  advancedBody: byId('advanced-body'),
  toast: byId('toast'),
  announce: byId('announce'),
};

type Shown =
  | { kind: 'none' }
  | { kind: 'summary'; diff: string; language: Language; output: DiffSummary; ms?: number; pageMs?: number; snapshotId?: string }
  | { kind: 'error'; diff: string; language: Language; notADiff: boolean; message: string; code: string; snapshotId?: string };

const state = {
  lang: initialLanguage(),
  host: null as Host | null,
  hostError: null as string | null,
  /** A file too large for the text box: summarized from here. */
  bigFile: null as { name: string; text: string } | null,
  busy: false,
  /** A summary asked for while the runtime prepares: run once it is ready. */
  queued: false,
  shown: { kind: 'none' } as Shown,
  history: [] as HistoryEntry[],
};

const t = (): Strings => STRINGS[state.lang];

// ---- words --------------------------------------------------------------------

function applyStrings(): void {
  const s = t();
  document.documentElement.lang = state.lang === 'zh' ? 'zh-CN' : 'en';
  document.title = `Corral · ${s.title}`;
  for (const el of document.querySelectorAll<HTMLElement>('[data-i18n]')) {
    const value = s[el.dataset.i18n as keyof Strings];
    if (typeof value === 'string') el.textContent = value;
  }
  els.input.placeholder = s.placeholder;
  for (const radio of document.querySelectorAll<HTMLInputElement>('input[name="lang"]')) radio.checked = radio.value === state.lang;
  updateStatus();
  updateFileNote();
  redrawShown();
  renderHistory();
  advancedPanel?.setStrings(s);
  reviewPanel?.setStrings(s);
}

function updateStatus(): void {
  const s = t();
  let text: string;
  let kind: 'busy' | 'ready' | 'error';
  if (state.hostError) [text, kind] = [s.prepFailed, 'error'];
  else if (!state.host) [text, kind] = [state.queued ? s.preparingQueued : s.preparing, 'busy'];
  else if (state.busy) [text, kind] = [s.summarizing, 'busy'];
  else {
    kind = 'ready';
    text = !navigator.onLine ? `${s.ready} · ${s.offline}` : navigator.serviceWorker?.controller ? s.readyOffline : s.ready;
  }
  els.status.dataset.state = kind;
  els.statusText.textContent = text;
  els.summarize.disabled = !state.host || state.busy;
  els.summarizeLabel.textContent = state.busy ? s.summarizing : s.summarize;
}

function updateFileNote(): void {
  const big = state.bigFile;
  els.fileNote.textContent = big ? t().bigFile(big.name, formatBytes(big.text.length)) : (els.fileNote.dataset.loaded ?? '');
}

// ---- first-run preparation ----------------------------------------------------

const PREP: Record<PrepStep, [percent: number, label: (s: Strings) => string]> = {
  workers: [10, (s) => s.prepStart],
  tools: [30, (s) => s.prepTools],
  prepare: [50, (s) => s.prepCompile],
  warm: [85, (s) => s.prepWarm],
  done: [100, (s) => s.prepDone],
};

function showPrep(step: PrepStep): void {
  performance.mark(`corral:prep:${step}`);
  const [percent, label] = PREP[step];
  els.prepFill.style.width = `${percent}%`;
  els.prep.setAttribute('aria-valuenow', String(percent));
  els.prepText.textContent = `${label(t())}…`;
}

let resolveReady!: () => void;
let rejectReady!: (err: Error) => void;
const ready = new Promise<void>((resolve, reject) => ((resolveReady = resolve), (rejectReady = reject)));
ready.catch(() => {}); // reported on the page; the hook's callers see the rejection

async function prepare(): Promise<void> {
  // Shown only if preparing takes a while (a first visit): a warm start is too quick to flash a bar.
  const showBar = setTimeout(() => (els.prep.hidden = false), 250);
  try {
    const flavor = new URLSearchParams(location.search).get('tools') === 'module' ? 'module' : 'component';
    showPrep('workers');
    const { startHost } = await hostModule;
    state.host = await startHost(showPrep, flavor);
    performance.mark('corral:ready');
    clearTimeout(showBar);
    els.prepText.textContent = t().prepDone;
    els.prep.hidden = true;
    updateStatus();
    resolveReady();
    void refreshHistory({ prune: true });
    loadReview();
  } catch (err) {
    clearTimeout(showBar);
    els.prep.hidden = false;
    state.hostError = (err as Error).message;
    els.prepText.textContent = `${t().prepFailed}: ${state.hostError}`;
    els.prep.classList.add('failed');
    updateStatus();
    rejectReady(err as Error);
  }
}

// ---- summarizing ----------------------------------------------------------------

/**
 * Summarize now, or as soon as the runtime is ready: a file picked or text
 * pasted while the page prepares is queued, never dropped. Requests made
 * while waiting become one run, of what the box holds then.
 */
async function runWhenReady(): Promise<void> {
  if (!state.host) {
    if (state.hostError) return; // the bar says why nothing can run
    state.queued = true;
    updateStatus();
    try {
      await ready;
    } catch {
      return;
    }
    if (!state.queued) return;
    state.queued = false;
  }
  await run();
}

function currentDiff(): string {
  return state.bigFile?.text ?? els.input.value;
}

interface RunTimings {
  ok: boolean;
  /** The runtime call: queue, sandbox worker, the tool, the snapshot writes. */
  invokeMs: number;
  /** Drawing the result. */
  renderMs: number;
  files: number;
  /** The execution snapshot of a recorded call. */
  snapshotId?: string;
  error?: string;
}

async function run(): Promise<RunTimings | null> {
  const host = state.host;
  if (!host || state.busy) return null;
  const diff = currentDiff();
  const language = state.lang;
  state.busy = true;
  els.result.setAttribute('aria-busy', 'true');
  updateStatus();
  try {
    const { result, ms } = await host.summarize(diff, language);
    const r0 = performance.now();
    const snapshotId = result.snapshot?.id;
    if (result.ok && result.output) {
      // The tool's own time; the page's (with queueing and the history writes) is in the tooltip.
      state.shown = {
        kind: 'summary',
        diff,
        language,
        output: result.output,
        ms: result.duration_ms,
        pageMs: ms,
        ...(snapshotId ? { snapshotId } : {}),
      };
    } else {
      const message = failureMessage(result);
      state.shown = {
        kind: 'error',
        diff,
        language,
        notADiff: /not a unified diff|malformed hunk header/.test(message),
        message,
        code: result.error?.code ?? 'error',
        ...(snapshotId ? { snapshotId } : {}),
      };
    }
    redrawShown();
    performance.mark('corral:summary-rendered');
    // Screen readers hear the sentence, not the whole table.
    const shown = state.shown;
    els.announce.textContent = shown.kind === 'summary' ? shown.output.summary : shown.kind === 'error' ? shown.message : '';
    const renderMs = performance.now() - r0;
    void refreshHistory();
    return {
      ok: result.ok,
      invokeMs: ms,
      renderMs,
      files: result.output?.files.length ?? 0,
      ...(result.ok ? {} : { error: failureMessage(result) }),
    };
  } catch (err) {
    // invoke answers tool failures in its envelope; this is the page's own trouble (a closed pool, say).
    state.shown = { kind: 'error', diff, language, notADiff: false, message: (err as Error).message, code: 'error' };
    redrawShown();
    return { ok: false, invokeMs: 0, renderMs: 0, files: 0, error: (err as Error).message };
  } finally {
    state.busy = false;
    els.result.setAttribute('aria-busy', 'false');
    updateStatus();
  }
}

function redrawShown(): void {
  const shown = state.shown;
  if (shown.kind === 'summary') {
    renderSummary(els.resultBody, shown.output, t(), {
      diff: shown.diff,
      ...(shown.ms !== undefined ? { ms: shown.ms } : {}),
      ...(shown.pageMs !== undefined ? { pageMs: shown.pageMs } : {}),
    });
  } else if (shown.kind === 'error') {
    // A non-diff gets a hint of what to paste; other failures their error code.
    if (shown.notADiff) renderError(els.resultBody, t().notADiff, shown.message, t().notADiffHint);
    else renderError(els.resultBody, t().failed, shown.message, undefined, shown.code);
  } else {
    els.resultBody.replaceChildren(h('p', { class: 'empty' }, t().empty));
  }
}

// ---- input: typing, pasting, files ----------------------------------------------

function setDiff(text: string, fileName?: string): void {
  els.fileNote.dataset.loaded = fileName ? t().loadedFile(fileName, formatBytes(text.length)) : '';
  if (text.length > TEXTAREA_LIMIT) {
    state.bigFile = { name: fileName ?? 'diff', text };
    els.input.value = '';
  } else {
    state.bigFile = null;
    els.input.value = text;
  }
  updateFileNote();
}

async function loadFile(file: File): Promise<void> {
  setDiff(await file.text(), file.name);
  await runWhenReady();
}

els.input.addEventListener('input', () => {
  if (state.bigFile) {
    state.bigFile = null;
    updateFileNote();
  }
});
els.input.addEventListener('paste', () => {
  // After the pasted text is in the box.
  setTimeout(() => {
    if (els.input.value.trim()) void runWhenReady();
  });
});
els.input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    void runWhenReady();
  }
});
els.summarize.addEventListener('click', () => void run());
els.fileInput.addEventListener('change', () => {
  const file = els.fileInput.files?.[0];
  if (file) void loadFile(file);
  els.fileInput.value = '';
});
els.clear.addEventListener('click', () => {
  state.queued = false;
  updateStatus();
  setDiff('');
  els.fileNote.dataset.loaded = '';
  updateFileNote();
  state.shown = { kind: 'none' };
  redrawShown();
  markCurrentHistory();
  els.input.focus();
});
els.example.addEventListener('click', async () => {
  const example = (await import('@corral/tools/diff-summary/examples/example.diff.json')).default as { diff: string };
  setDiff(example.diff);
  await runWhenReady();
});

// Dropping a file anywhere loads it (and never navigates away from the page).
let dragDepth = 0;
const hasFiles = (e: DragEvent) => e.dataTransfer?.types.includes('Files') ?? false;
document.addEventListener('dragenter', (e) => {
  if (!hasFiles(e)) return;
  dragDepth++;
  els.drop.classList.add('dragging');
});
document.addEventListener('dragleave', () => {
  if (--dragDepth <= 0) (dragDepth = 0), els.drop.classList.remove('dragging');
});
document.addEventListener('dragover', (e) => {
  if (hasFiles(e)) e.preventDefault();
});
document.addEventListener('drop', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  dragDepth = 0;
  els.drop.classList.remove('dragging');
  const file = e.dataTransfer?.files[0];
  if (file && !(e.target instanceof Element && e.target.closest('#advanced'))) void loadFile(file);
});

// ---- language -----------------------------------------------------------------------

for (const radio of document.querySelectorAll<HTMLInputElement>('input[name="lang"]')) {
  radio.addEventListener('change', () => {
    if (!radio.checked) return;
    state.lang = radio.value === 'zh' ? 'zh' : 'en';
    saveLanguage(state.lang);
    applyStrings();
    // The summary sentence is the tool's: ask it again in the new language.
    const shown = state.shown;
    if (shown.kind === 'summary' && shown.language !== state.lang && currentDiff() === shown.diff) void run();
  });
}

// ---- history --------------------------------------------------------------------------

async function pruneHistory(): Promise<void> {
  try {
    await state.host?.corral.store?.prune({ keep: HISTORY_KEPT });
  } catch {
    // A store that cannot prune still lists.
  }
}

let historyLoading: Promise<void> = Promise.resolve();

function refreshHistory(options: { prune?: boolean } = {}): Promise<void> {
  historyLoading = historyLoading.then(async () => {
    const store = state.host?.corral.store;
    if (!store) return renderHistory();
    if (options.prune) await pruneHistory();
    try {
      state.history = historyEntries(await store.listExecutions({ tool: 'diff-summary', limit: HISTORY_SHOWN * 2 })).slice(
        0,
        HISTORY_SHOWN,
      );
    } catch {
      state.history = [];
    }
    renderHistory();
  });
  return historyLoading;
}

function renderHistory(): void {
  const s = t();
  const unavailable = state.host !== null && (state.host.corral.store === undefined || state.host.storeError !== null);
  els.historyEmpty.textContent = unavailable ? s.historyUnavailable : s.historyEmpty;
  els.historyEmpty.hidden = state.history.length > 0;
  els.clearHistory.hidden = state.history.length === 0;
  const nf = new Intl.NumberFormat(state.lang === 'zh' ? 'zh-CN' : 'en');
  els.history.replaceChildren(
    ...state.history.map((entry) => {
      const title =
        entry.status !== 'ok'
          ? s.historyFailed
          : entry.firstPath === null
            ? s.noChanges
            : entry.totals && entry.totals.files > 1
              ? s.andMore(entry.firstPath, entry.totals.files - 1)
              : entry.firstPath;
      const stats = entry.totals
        ? h(
            'span',
            { class: 'h-stats' },
            h('span', { class: 'a' }, `+${nf.format(entry.totals.additions)}`),
            ' ',
            h('span', { class: 'd' }, `−${nf.format(entry.totals.deletions)}`),
            ` · ${nf.format(entry.totals.files)} ${s.files}`,
          )
        : h('span', { class: 'h-failed' }, entry.error ?? entry.status);
      const button = h(
        'button',
        {
          type: 'button',
          'data-snapshot': entry.id,
          disabled: !entry.hasInput && !entry.output,
          title: entry.summary ?? entry.error ?? '',
          onclick: () => void reopen(entry),
        },
        h(
          'span',
          { class: 'h-line' },
          h('span', { class: 'h-title' }, title),
          h('span', { class: 'h-meta' }, relativeTime(entry.when, state.lang)),
        ),
        h(
          'span',
          { class: 'h-line' },
          stats,
          h('span', { class: 'h-meta' }, entry.hasInput ? (entry.language === 'zh' ? '中文' : 'EN') : s.historyNoInput),
        ),
      );
      return h('li', { class: 'history-item' }, button);
    }),
  );
  markCurrentHistory();
}

function markCurrentHistory(): void {
  const shown = state.shown;
  const id = shown.kind === 'none' ? undefined : shown.snapshotId;
  for (const b of els.history.querySelectorAll<HTMLButtonElement>('button[data-snapshot]')) {
    if (id && b.dataset.snapshot === id) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
}

async function reopen(entry: HistoryEntry): Promise<void> {
  const input = inputOf(entry);
  if (!input) return;
  setDiff(input.diff);
  if (input.language !== state.lang) {
    state.lang = input.language;
    saveLanguage(state.lang);
    applyStrings();
  }
  if (entry.output) {
    // The whole output was kept: show it as it was, without running anything.
    state.shown = {
      kind: 'summary',
      diff: input.diff,
      language: input.language,
      output: entry.output,
      snapshotId: entry.id,
      ...(entry.durationMs !== null ? { ms: entry.durationMs } : {}),
    };
    redrawShown();
    markCurrentHistory();
  } else {
    await run();
  }
  els.result.scrollIntoView({ behavior: 'smooth', block: 'start' });
}

els.clearHistory.addEventListener('click', async () => {
  if (!confirm(t().confirmClear)) return;
  await state.host?.corral.store?.prune({ keep: 0 });
  await refreshHistory();
});

// ---- advanced panel (loaded when first opened) --------------------------------------

let advancedPanel: { setStrings(s: Strings): void } | null = null;
els.advanced.addEventListener('toggle', async () => {
  if (!els.advanced.open || advancedPanel) return;
  const { mountAdvanced } = await import('./advanced.js');
  advancedPanel = mountAdvanced(els.advancedBody, { ready: () => ready.then(() => state.host!.corral), strings: t() });
});

// ---- review and apply: the patch-review workflow (loaded once the runtime is ready) ----

let reviewPanel: { setStrings(s: Strings): void } | null = null;
let reviewLoading: Promise<void> = Promise.resolve();

function loadReview(): void {
  reviewLoading = import('./review.js')
    .then(async ({ mountReview }) => {
      const panel = mountReview(
        { body: els.reviewBody, runs: els.runs, runsEmpty: els.runsEmpty },
        {
          corral: state.host!.corral,
          diff: currentDiff,
          strings: t(),
          language: () => state.lang,
          // The review's summary step is a diff-summary call: it is in the history now.
          onChange: () => void refreshHistory(),
        },
      );
      reviewPanel = panel;
      await panel.ready;
    })
    .catch((err: Error) => {
      els.reviewBody.replaceChildren(h('p', { class: 'message error', role: 'alert' }, `${t().prepFailed}: ${err.message}`));
    });
}

// ---- offline --------------------------------------------------------------------------

function toast(message: string, action?: { label: string; run: () => void }): void {
  els.toast.replaceChildren(h('span', {}, message));
  if (action) els.toast.append(h('button', { type: 'button', onclick: action.run }, action.label));
  els.toast.hidden = false;
}

let serviceWorkerRegistered: Promise<void> = Promise.resolve();

function registerServiceWorker(): Promise<void> {
  serviceWorkerRegistered = registerServiceWorkerNow();
  return serviceWorkerRegistered;
}

async function registerServiceWorkerNow(): Promise<void> {
  // Not under the dev server (import.meta.hot): it serves sources that change under a cache.
  if (import.meta.hot || !('serviceWorker' in navigator)) return;
  const hadController = navigator.serviceWorker.controller !== null;
  navigator.serviceWorker.addEventListener('controllerchange', () => {
    updateStatus();
    if (hadController) toast(t().swUpdate, { label: t().reload, run: () => location.reload() });
  });
  try {
    await navigator.serviceWorker.register('./sw.js', { scope: './' });
  } catch (err) {
    console.warn('Corral: the service worker did not register; the page will not work offline.', err);
  }
}

addEventListener('online', updateStatus);
addEventListener('offline', updateStatus);

// ---- a handle for the end-to-end test and the benchmark -------------------------------

const hook = {
  ready,
  /** Resolves once the page is ready and has nothing left to do (history and reviews drawn, service worker registered). */
  async idle(): Promise<void> {
    await ready;
    await Promise.all([historyLoading, serviceWorkerRegistered, reviewLoading]);
  },
  /** The page's BrowserCorral, once ready. */
  get corral() {
    return state.host?.corral ?? null;
  },
  /**
   * Summarizes through the same path as the button (tool call, drawing,
   * history); with `render: false`, only the tool call the button makes.
   */
  async summarize(
    diff: string,
    language: Language = state.lang,
    options: { render?: boolean; record?: boolean } = {},
  ): Promise<RunTimings> {
    await ready;
    if (options.render === false) {
      const { result, ms } = await state.host!.summarize(diff, language, options.record === false ? { record: false } : {});
      return {
        ok: result.ok,
        invokeMs: ms,
        renderMs: 0,
        files: result.output?.files.length ?? 0,
        ...(result.snapshot ? { snapshotId: result.snapshot.id } : {}),
        ...(result.ok ? {} : { error: failureMessage(result) }),
      };
    }
    if (language !== state.lang) {
      state.lang = language;
      applyStrings();
    }
    setDiff(diff);
    const r = await run();
    if (!r) throw new Error('busy');
    return r;
  },
  /** Draws the shown result again, with no tool call: what drawing alone costs (ms). */
  redraw(): number {
    const t0 = performance.now();
    redrawShown();
    return performance.now() - t0;
  },
  /** The benchmark's baseline: the pure-JS parser (js-diff.ts), drawn the same way. */
  async jsSummarize(diff: string, language: Language = state.lang, options: { render?: boolean } = {}): Promise<RunTimings> {
    const { summarizeDiff } = await import('./js-diff.js');
    const t0 = performance.now();
    const output = summarizeDiff(diff, language);
    const parseMs = performance.now() - t0;
    if (options.render === false) return { ok: true, invokeMs: parseMs, renderMs: 0, files: output.files.length };
    const r0 = performance.now();
    state.shown = { kind: 'summary', diff, language, output, ms: parseMs };
    redrawShown();
    return { ok: true, invokeMs: parseMs, renderMs: performance.now() - r0, files: output.files.length };
  },
};
// Only where a test or the benchmark drives the page: dev, and builds in test
// mode (`vite build --mode test`: the production build plus this handle).
// `vite build` leaves it out, and the minifier drops the hook with it.
if (import.meta.env.DEV || import.meta.env.MODE === 'test') (globalThis as unknown as { corralApp: typeof hook }).corralApp = hook;

applyStrings();
// The service worker registers once the tool is ready, so its downloads
// (it caches the whole app) never compete with the first preparation.
void prepare().finally(registerServiceWorker);
