/**
 * The offline diff summarizer. Paste, drop or pick a diff; the bundled
 * diff-summary WASI tool summarizes it in a sandbox worker (through
 * @corral/browser); the result is drawn as totals, a chart and a table, and
 * every call lands in the history (IndexedDB execution snapshots). After
 * one visit a service worker serves the app and the tool, so it all works
 * with the network off, and summarizing never makes a request at all.
 */
import { runtimeWorker } from './boot.js';
import { h, byId } from './dom.js';
import { failureKind, type FailureKind } from './failure.js';
import type { ToolFlavor } from './host.js';
import { historyEntries, relativeTime, type HistoryEntry } from './history.js';
import { STRINGS, formatBytes, formatNumber, initialLanguage, saveLanguage, shownSentence, type Strings } from './i18n.js';
import { localDiffText, type DiffText } from './file-sections.js';
import { textStart, utf8Length } from './read-file.js';
import { renderError, renderSummary } from './render.js';
import { startRuntime, type Host, type Offer, type PrepStep, type TextRef } from './runtime.js';
import { failureMessage, type DiffSummary, type Language } from './summary.js';

const flavor: ToolFlavor = new URLSearchParams(location.search).get('tools') === 'module' ? 'module' : 'component';
/** Where preparation steps go: only marked until the page below is set up. */
let onPrepStep = (_step: PrepStep): void => {};
let summaryWaiting = (): boolean => false;
// The summaries' runtime starts in its own worker first thing: its code, the
// store and the sandbox load while the document is parsed and the page's own
// code runs, and none of its work (a large diff's encoding, hashing,
// recording) ever runs on this thread.
const runtime = startRuntime(
  runtimeWorker(flavor),
  (step) => {
    performance.mark(`corral:prep:${step}`);
    onPrepStep(step);
  },
  { flavor, warm: () => !summaryWaiting() },
);
runtime.host.catch(() => {}); // prepare() reports it

// index.html loads this script async, so it may run before the document is parsed.
if (document.readyState === 'loading')
  await new Promise((resolve) => document.addEventListener('DOMContentLoaded', resolve, { once: true }));

// When the page's code starts (its modules loaded, the document parsed): the benchmark's baseline for a cold start.
performance.mark('corral:app-start');

/**
 * Larger text is summarized whole but not put into the text box: the box
 * shows its start, read-only (a 1.8 MB textarea lags 200–600 ms a key).
 */
const TEXTAREA_LIMIT = 256_000;
/** What the read-only box shows of a larger text. */
const PREVIEW_CHARS = 16_000;
/** Larger files are refused before they are decoded: their JSON would pass the runtime's 64 MiB input limit. */
const MAX_FILE_BYTES = 64_000_000;
const HISTORY_SHOWN = 20;
/**
 * Snapshots kept in IndexedDB; older ones are pruned at start. Each keeps
 * its diff (that is what makes it reopenable), but the list reads metadata
 * only (a snapshot's input is read when it is reopened), so a long history
 * lists as fast as a short one.
 */
const HISTORY_KEPT = 1000;

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
  | { kind: 'summary'; diff: DiffText; language: Language; output: DiffSummary; ms?: number; pageMs?: number; snapshotId?: string }
  | { kind: 'error'; language: Language; failure: FailureKind; message: string; code: string; snapshotId?: string }
  /** Input the page itself turned away (a binary file, say): nothing ran. */
  | { kind: 'refused'; words: (s: Strings) => [title: string, message: string, hint: string | undefined] };

const state = {
  lang: initialLanguage(),
  host: null as Host | null,
  hostError: null as string | null,
  /**
   * Text too large for the text box (a file, a paste, a history entry), summarized from
   * here: `diff` is the text, or the id the runtime's worker keeps it under (a large
   * file's text never comes to the page whole). `bytes` as UTF-8.
   */
  bigFile: null as { name: string; diff: string | number; bytes: number } | null,
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
  const note = fileNote;
  els.fileNote.textContent = big
    ? t().bigFile(big.name, formatBytes(big.bytes))
    : note?.kind === 'loaded'
      ? t().loadedFile(note.name, formatBytes(note.bytes))
      : note?.kind === 'refused'
        ? t().fileRefused(note.name, formatBytes(note.bytes))
        : '';
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
    showPrep('workers');
    onPrepStep = showPrep;
    summaryWaiting = () => state.queued || filesLoading > 0;
    state.host = await runtime.host;
    performance.mark('corral:ready');
    clearTimeout(showBar);
    els.prepText.textContent = t().prepDone;
    els.prep.hidden = true;
    updateStatus();
    resolveReady();
  } catch (err) {
    clearTimeout(showBar);
    els.prep.hidden = false;
    state.hostError = (err as Error).message;
    els.prepText.textContent = `${t().prepFailed}: ${state.hostError}`;
    els.prep.classList.add('failed');
    // The review card's placeholder promised a sandbox being prepared; it will not load now.
    const wait = els.reviewBody.querySelector<HTMLElement>('.review-wait');
    if (wait) {
      wait.dataset.i18n = 'prepFailed';
      wait.textContent = t().prepFailed;
    }
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
    queuedRun ??= ready.then(
      () => {
        if (!state.queued) return;
        state.queued = false;
        return run();
      },
      () => {},
    );
    await queuedRun;
    return;
  }
  await run();
}

/** The summary asked for while the page prepared, if any. */
let queuedRun: Promise<unknown> | null = null;

/**
 * Counts replacements of the input (a file, a large paste, an example, a
 * history entry, Clear), and files starting to be read to replace it: a read
 * or a summary begun before the count moved is out of date, and its answer
 * must not be shown over what the user asked for since.
 */
let inputGen = 0;
/** A summary was asked for while one ran: run once it ends, if the input changed. */
let rerun = false;

/**
 * What the user asked for and the page has not finished: a file being read,
 * a summary waiting or running. The start-up's own leftovers wait for it.
 */
const userWork = new Set<Promise<unknown>>();
function userAsked(work: Promise<unknown>): void {
  userWork.add(work);
  void work.finally(() => userWork.delete(work)).catch(() => {});
}

/** Resolves once the user's work is done, including what it started meanwhile (a summary asked for again). */
async function userWorkDone(): Promise<void> {
  while (userWork.size > 0) await Promise.allSettled([...userWork]);
}

/**
 * What a page does once ready but nobody waits for (the history, the review
 * panel, the service worker's download of the whole app): after what the
 * user asked for meanwhile (a file picked while the page prepared, whose
 * reading may end just after ready), so that first summary has the machine
 * to itself.
 */
const afterStart: Promise<void> = ready.then(userWorkDone, () => {});

/** What a summary runs on: the text, or the id of the one the runtime's worker keeps. */
function currentDiff(): string | number {
  return state.bigFile?.diff ?? els.input.value;
}

/** Where the text shown in a summary is, for its files' hunks. */
function diffText(diff: string | number): DiffText {
  return typeof diff === 'number' ? state.host!.keptDiff(diff) : localDiffText(diff);
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
  if (!host) return null;
  if (state.busy) {
    rerun = true;
    return null;
  }
  const diff = currentDiff();
  const gen = inputGen;
  const language = state.lang;
  state.busy = true;
  els.result.setAttribute('aria-busy', 'true');
  updateStatus();
  try {
    const { result, ms } = await host.summarize(diff, language);
    if (gen !== inputGen) {
      // The input was replaced meanwhile (another file, Clear): this result would describe what is gone. It is in the history.
      void refreshHistory();
      return null;
    }
    // A large result's copy from the worker and its drawing are a task each, not one long one.
    if ((result.output?.files.length ?? 0) > 1000) await new Promise((resolve) => setTimeout(resolve));
    const r0 = performance.now();
    const snapshotId = result.snapshot?.id;
    if (result.ok && result.output) {
      // The tool's own time; the page's (with queueing and the history writes) is in the tooltip.
      state.shown = {
        kind: 'summary',
        diff: diffText(diff),
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
        language,
        failure: failureKind(result.error?.code, result.error?.message ? `${result.error.message} ${message}` : message),
        message,
        code: result.error?.code ?? 'error',
        ...(snapshotId ? { snapshotId } : {}),
      };
    }
    redrawShown();
    performance.mark('corral:summary-rendered');
    // Screen readers hear the sentence, not the whole table.
    const shown = state.shown;
    els.announce.textContent =
      shown.kind === 'summary' ? shownSentence(shown.output, shown.language, t()) : shown.kind === 'error' ? shown.message : '';
    const renderMs = performance.now() - r0;
    revealResult();
    void refreshHistory();
    return {
      ok: result.ok,
      invokeMs: ms,
      renderMs,
      files: result.output?.files.length ?? 0,
      ...(snapshotId ? { snapshotId } : {}),
      ...(result.ok ? {} : { error: failureMessage(result) }),
    };
  } catch (err) {
    // invoke answers tool failures in its envelope; this is the page's own trouble (a closed pool, say).
    state.shown = { kind: 'error', language, failure: 'other', message: (err as Error).message, code: 'error' };
    redrawShown();
    return { ok: false, invokeMs: 0, renderMs: 0, files: 0, error: (err as Error).message };
  } finally {
    state.busy = false;
    els.result.setAttribute('aria-busy', 'false');
    updateStatus();
    // What was asked for while this ran, once, of the input as it is now.
    const again = rerun && (gen !== inputGen || currentDiff() !== diff);
    rerun = false;
    if (again) userAsked(run());
  }
}

/** Brings a new result into view when it is below the fold (a phone, where the input fills the screen). */
function revealResult(): void {
  // One column (a phone): the summary should fill the screen; two columns: only when it is nearly out of sight.
  const narrow = matchMedia('(max-width: 900px)').matches;
  const top = els.result.getBoundingClientRect().top;
  if (top >= 0 && top < innerHeight * (narrow ? 0.3 : 0.75)) return;
  const smooth = !matchMedia('(prefers-reduced-motion: reduce)').matches;
  els.result.scrollIntoView({ behavior: smooth ? 'smooth' : 'auto', block: 'start' });
}

function redrawShown(): void {
  const shown = state.shown;
  if (shown.kind === 'summary') {
    // The sentence in the page's language, rewritten from the output: switching language never reruns the tool.
    const output = { ...shown.output, summary: shownSentence(shown.output, shown.language, t()) };
    renderSummary(els.resultBody, output, t(), {
      diff: shown.diff,
      ...(shown.ms !== undefined ? { ms: shown.ms } : {}),
      ...(shown.pageMs !== undefined ? { pageMs: shown.pageMs } : {}),
    });
  } else if (shown.kind === 'error') {
    // Named for what went wrong, with what to do about it; a non-diff needs no error code.
    const s = t();
    const code = shown.failure === 'not-diff' ? undefined : shown.code;
    renderError(els.resultBody, s.failTitle[shown.failure], shown.message, s.failAdvice[shown.failure], code);
  } else if (shown.kind === 'refused') {
    const [title, message, hint] = shown.words(t());
    renderError(els.resultBody, title, message, hint);
  } else {
    els.resultBody.replaceChildren(h('p', { class: 'empty' }, t().empty));
  }
}

// ---- input: typing, pasting, files ----------------------------------------------

/** What the note under the box says of the last file: loaded (with its size on disk), or turned away. */
let fileNote: { kind: 'loaded' | 'refused'; name: string; bytes: number } | null = null;

/** How the runtime's worker hands a file's or a history entry's text to the page: whole up to the box's limit, else kept there. */
const OFFER: Offer = { inline: TEXTAREA_LIMIT, head: PREVIEW_CHARS };

/**
 * Puts a diff in the box, or, past TEXTAREA_LIMIT, its start read-only
 * (the whole text is summarized from state.bigFile). `diff`: a text, or
 * one the runtime's worker read (whole, or kept there with its start);
 * `file`: the file it came from.
 */
function setDiff(diff: string | TextRef, file?: { name: string }, label?: (s: Strings) => string): void {
  inputGen++;
  const bytes = typeof diff === 'string' ? undefined : diff.bytes;
  fileNote = file && bytes !== undefined ? { kind: 'loaded', name: file.name, bytes } : null;
  const name = file?.name ?? (label ?? ((s) => s.pastedText))(t());
  const text = typeof diff === 'string' ? diff : diff.kind === 'text' ? diff.text : null;
  if (text === null) {
    const kept = diff as Extract<TextRef, { kind: 'kept' }>;
    state.bigFile = { name, diff: kept.id, bytes: kept.bytes };
    showStart(kept.head);
  } else if (text.length > TEXTAREA_LIMIT) {
    state.bigFile = { name, diff: text, bytes: bytes ?? utf8Length(text) };
    showStart(textStart(text, PREVIEW_CHARS));
  } else {
    state.bigFile = null;
    els.input.readOnly = false;
    els.input.value = text;
  }
  updateFileNote();
}

/** A large text's start, read-only in the box. */
function showStart(head: string): void {
  els.input.value = `${head}\n…`;
  els.input.readOnly = true;
}

/** A file that never reaches the box or the tool: say why, in the result area. */
function refuse(file: File, words: (s: Strings) => [string, string, string | undefined]): void {
  fileNote = { kind: 'refused', name: file.name, bytes: file.size };
  updateFileNote();
  state.shown = { kind: 'refused', words };
  redrawShown();
  markCurrentHistory();
  els.announce.textContent = words(t()).slice(0, 2).join(': ');
}

/** Files being read, shown or summarized: each is a summary on its way (the warm-up call would only delay it). */
let filesLoading = 0;

async function loadFile(file: File): Promise<void> {
  filesLoading++;
  try {
    await readAndSummarize(file);
  } finally {
    filesLoading--;
  }
}

async function readAndSummarize(file: File): Promise<void> {
  // Read, checked and decoded in the runtime's worker: the page never holds a binary
  // file's bytes, nor the whole of a large text (only its start, to show).
  let reply: Awaited<ReturnType<typeof runtime.readFile>>;
  const gen = ++inputGen;
  try {
    reply = await runtime.readFile(file, MAX_FILE_BYTES, OFFER);
  } catch (err) {
    reply = { kind: 'error', bytes: file.size, message: (err as Error).message };
  }
  if (gen !== inputGen) {
    // Another file, a paste or Clear came since (a smaller file picked after a large one is read first).
    if (reply.kind === 'kept') runtime.forget(reply.id);
    return;
  }
  const size = formatBytes(reply.bytes);
  if (reply.kind === 'binary') return refuse(file, (s) => [s.binaryFile, s.binaryMessage(file.name, size), s.binaryHint]);
  if (reply.kind === 'too-large') {
    return refuse(file, (s) => [s.fileTooLarge, s.fileTooLargeMessage(file.name, size, formatBytes(MAX_FILE_BYTES)), s.fileTooLargeHint]);
  }
  if (reply.kind === 'error') return refuse(file, (s) => [s.fileUnreadable, `${file.name}: ${reply.message}`, undefined]);
  setDiff(reply, { name: file.name });
  await inputShown();
  await runWhenReady();
}

/**
 * Resolves once the loaded input is on screen: the summary's own work then
 * starts in a task of its own, after the user has seen the file arrive.
 */
function inputShown(): Promise<void> {
  return new Promise((resolve) =>
    requestAnimationFrame(() =>
      setTimeout(() => {
        performance.mark('corral:input-shown');
        setTimeout(resolve);
      }),
    ),
  );
}

els.input.addEventListener('input', () => {
  if (state.bigFile) {
    state.bigFile = null;
    updateFileNote();
  }
});
els.input.addEventListener('paste', (e) => {
  const pasted = e.clipboardData?.getData('text/plain') ?? '';
  // No text (an image, say): the box takes nothing, and a large loaded diff is kept.
  if (!pasted) return;
  // A paste replaces what is loading too: a file still being read is not put over it.
  inputGen++;
  // A large paste, or any paste over a large text's read-only start, replaces the whole diff.
  if (pasted.length > TEXTAREA_LIMIT || state.bigFile) {
    e.preventDefault();
    setDiff(pasted);
    if (pasted.trim()) userAsked(inputShown().then(runWhenReady));
    return;
  }
  // After the pasted text is in the box.
  setTimeout(() => {
    if (els.input.value.trim()) userAsked(runWhenReady());
  });
});
els.input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    userAsked(runWhenReady());
  }
});
els.summarize.addEventListener('click', () => userAsked(run()));
function takePickedFile(): void {
  const file = els.fileInput.files?.[0];
  if (file) userAsked(loadFile(file));
  els.fileInput.value = '';
}
els.fileInput.addEventListener('change', takePickedFile);
// Text pasted while this script was still loading (the box is usable before it runs) is summarized as a paste would be.
if (els.input.value.trim()) {
  if (els.input.value.length > TEXTAREA_LIMIT) setDiff(els.input.value);
  userAsked(runWhenReady());
}
// A file picked while this script was still loading (it runs after the document is parsed) is not dropped.
takePickedFile();
els.clear.addEventListener('click', () => {
  state.queued = false;
  updateStatus();
  setDiff('');
  state.shown = { kind: 'none' };
  redrawShown();
  markCurrentHistory();
  els.input.focus();
});
els.example.addEventListener('click', () =>
  userAsked(
    import('@corral/tools/diff-summary/examples/example.diff.json').then(({ default: example }) => {
      setDiff((example as { diff: string }).diff);
      return runWhenReady();
    }),
  ),
);

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
  const files = e.dataTransfer?.files;
  const file = files?.[0];
  if (!file || (e.target instanceof Element && e.target.closest('#advanced'))) return;
  // Said, not done silently: which of several dropped files is summarized.
  if (files.length > 1) toast(t().droppedMany(files.length, file.name));
  userAsked(loadFile(file));
});

// ---- language -----------------------------------------------------------------------

for (const radio of document.querySelectorAll<HTMLInputElement>('input[name="lang"]')) {
  radio.addEventListener('change', () => {
    if (!radio.checked) return;
    state.lang = radio.value === 'zh' ? 'zh' : 'en';
    saveLanguage(state.lang);
    // Redraws the shown summary too, its sentence included, without running the tool again.
    applyStrings();
  });
}

// ---- history --------------------------------------------------------------------------

async function pruneHistory(): Promise<void> {
  try {
    await state.host?.store?.prune({ keep: HISTORY_KEPT });
  } catch {
    // A store that cannot prune still lists.
  }
}

let historyLoading: Promise<void> = Promise.resolve();

function refreshHistory(options: { prune?: boolean } = {}): Promise<void> {
  historyLoading = historyLoading.then(async () => {
    const store = state.host?.store;
    if (!store) return renderHistory();
    if (options.prune) await pruneHistory();
    try {
      performance.mark('corral:history-list');
      // Metadata only: the inputs (up to 64 MB each) are read one at a time, when an entry is reopened.
      const listed = await store.listExecutions({ tool: 'diff-summary', limit: HISTORY_SHOWN * 2, withInput: false });
      performance.measure('corral:history-list', 'corral:history-list');
      state.history = historyEntries(listed).slice(0, HISTORY_SHOWN);
    } catch {
      state.history = [];
    }
    renderHistory();
  });
  return historyLoading;
}

function renderHistory(): void {
  const s = t();
  const unavailable = state.host !== null && (state.host.store === null || state.host.storeError !== null);
  els.historyEmpty.textContent = unavailable ? s.historyUnavailable : s.historyEmpty;
  els.historyEmpty.hidden = state.history.length > 0;
  els.clearHistory.hidden = state.history.length === 0;
  els.history.replaceChildren(
    ...state.history.map((entry) => {
      const title =
        entry.status !== 'ok'
          ? s.failLabel[failureKind(entry.errorCode, entry.error)]
          : entry.firstPath === null
            ? s.noChanges
            : entry.totals && entry.totals.files > 1
              ? s.andMore(entry.firstPath, entry.totals.files - 1)
              : entry.firstPath;
      const stats = entry.totals
        ? h(
            'span',
            { class: 'h-stats' },
            h('span', { class: 'a' }, `+${formatNumber(entry.totals.additions)}`),
            ' ',
            h('span', { class: 'd' }, `−${formatNumber(entry.totals.deletions)}`),
            ` · ${formatNumber(entry.totals.files)} ${s.counted(entry.totals.files, 'files')}`,
          )
        : h('span', { class: 'h-failed' }, entry.error ?? entry.status);
      const button = h(
        'button',
        {
          type: 'button',
          'data-snapshot': entry.id,
          disabled: !entry.hasInput && !entry.output,
          title: entry.summary ?? entry.error ?? '',
          onclick: () => userAsked(reopen(entry, title)),
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
  const id = shown.kind === 'summary' || shown.kind === 'error' ? shown.snapshotId : undefined;
  for (const b of els.history.querySelectorAll<HTMLButtonElement>('button[data-snapshot]')) {
    if (id && b.dataset.snapshot === id) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
}

async function reopen(entry: HistoryEntry, title: string): Promise<void> {
  // Read in the runtime's worker: a large input stays there, the page gets its start.
  let input: Awaited<ReturnType<Host['reopen']>> = null;
  const gen = ++inputGen;
  try {
    input = (await state.host?.reopen(entry.id, OFFER)) ?? null;
  } catch {
    // Read failed: said below, as for an input that was not kept.
  }
  if (gen !== inputGen) {
    // Something else was loaded or cleared meanwhile.
    if (input?.diff.kind === 'kept') runtime.forget(input.diff.id);
    return;
  }
  if (!input) {
    toast(t().historyNoInput);
    return;
  }
  setDiff(input.diff, undefined, (s) => s.fromHistory(title));
  // The page keeps its language: a kept output in the other one is shown with its sentence rewritten.
  if (entry.output) {
    // The whole output was kept: show it as it was, without running anything.
    state.shown = {
      kind: 'summary',
      diff: diffText(currentDiff()),
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
  await state.host?.store?.prune({ keep: 0 });
  await refreshHistory();
});

// ---- advanced panel (loaded when first opened) --------------------------------------

/** The panels' own runtime in the page (panel-runtime.ts): loaded with the first panel that needs it. */
function loadPanelCorral() {
  return import('./panel-runtime.js').then(({ panelCorral }) => panelCorral(flavor));
}

let advancedPanel: { setStrings(s: Strings): void } | null = null;
els.advanced.addEventListener('toggle', async () => {
  if (!els.advanced.open || advancedPanel) return;
  const { mountAdvanced } = await import('./advanced.js');
  advancedPanel = mountAdvanced(els.advancedBody, {
    ready: () => ready.then(() => loadPanelCorral()),
    strings: t(),
  });
});

// ---- review and apply: the patch-review workflow (loaded once the runtime is ready) ----

void afterStart.then(() => {
  if (!state.host) return;
  void refreshHistory({ prune: true });
  loadReview();
});

let reviewPanel: { setStrings(s: Strings): void } | null = null;
let reviewLoading: Promise<void> = Promise.resolve();

function loadReview(): void {
  reviewLoading = Promise.all([import('./review.js'), loadPanelCorral()])
    .then(async ([{ mountReview }, corral]) => {
      const panel = mountReview(
        { body: els.reviewBody, runs: els.runs, runsEmpty: els.runsEmpty },
        {
          corral,
          diff: async () => {
            const diff = currentDiff();
            return typeof diff === 'number' ? state.host!.text(diff) : diff;
          },
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

let toastTimer: ReturnType<typeof setTimeout> | undefined;

/** A message at the foot of the screen; one without an action goes away by itself. */
function toast(message: string, action?: { label: string; run: () => void }): void {
  els.toast.replaceChildren(h('span', {}, message));
  if (action) els.toast.append(h('button', { type: 'button', onclick: action.run }, action.label));
  els.toast.hidden = false;
  // A note goes by itself; one that offers an action stays until used.
  clearTimeout(toastTimer);
  if (!action) toastTimer = setTimeout(() => (els.toast.hidden = true), 8000);
}

let serviceWorkerRegistered: Promise<void> = Promise.resolve();

function registerServiceWorker(): Promise<void> {
  serviceWorkerRegistered = registerServiceWorkerNow();
  return serviceWorkerRegistered;
}

async function registerServiceWorkerNow(): Promise<void> {
  await afterStart;
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
  /** Resolves once the page is ready and has nothing left to do (the user's work done, history and reviews drawn, service worker registered). */
  async idle(): Promise<void> {
    await ready;
    await afterStart;
    // What the user asked for (files read, summaries and the ones asked for again), then what it redraws.
    await userWorkDone();
    await Promise.all([historyLoading, serviceWorkerRegistered, reviewLoading]);
  },
  /** The history's snapshot store (in the runtime worker), once ready. */
  get store() {
    return state.host?.store ?? null;
  },
  /** The review and advanced panels' BrowserCorral (in the page). */
  panelCorral: loadPanelCorral,
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
    state.shown = { kind: 'summary', diff: localDiffText(diff), language, output, ms: parseMs };
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
