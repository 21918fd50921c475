/**
 * The result views: the summary sentence, totals, a chart of the largest
 * changes (inline SVG) and the file list (file-list.ts).
 */
import { h, slashBreaks, svg } from './dom.js';
import { fileList } from './file-list.js';
import type { DiffText } from './file-sections.js';
import { formatMs, formatNumber, type Strings } from './i18n.js';
import { largestChanges, type DiffProblem, type DiffSummary, type FileSummary } from './summary.js';

const CHART_BARS = 8;

export interface SummaryViewOptions {
  /** How long the tool took, shown with the totals. */
  ms?: number;
  /** The whole call as the page saw it (queue, worker, tool, history writes). */
  pageMs?: number;
  /** Where the diff's text is, for showing a file's own hunks. */
  diff?: DiffText;
}

/** Draws a summary into `container` (replacing what was there). */
export function renderSummary(container: HTMLElement, result: DiffSummary, t: Strings, options: SummaryViewOptions = {}): void {
  const { totals } = result;
  const tile = (cls: string, value: string, label: string, title?: string) =>
    h('li', { class: `tile ${cls}`, title }, h('b', {}, value), h('span', {}, label));
  const num = (n: number) => formatNumber(n, t);
  const body = h(
    'div',
    { class: 'summary-view' },
    h('p', { class: 'summary-text', id: 'summary-text' }, ...slashBreaks(result.summary)),
    h(
      'ul',
      { class: 'tiles', 'aria-label': t.totals },
      tile('files', num(totals.files), t.counted(totals.files, 'files')),
      tile('add', `+${num(totals.additions)}`, t.counted(totals.additions, 'additions')),
      tile('del', `−${num(totals.deletions)}`, t.counted(totals.deletions, 'deletions')),
      tile('hunks', num(totals.hunks), t.counted(totals.hunks, 'hunks')),
      options.ms !== undefined
        ? tile('time', formatMs(options.ms), t.toolTime, options.pageMs !== undefined ? t.pageTime(formatMs(options.pageMs)) : undefined)
        : null,
    ),
  );
  container.replaceChildren(body);
  if (result.problems?.length) body.append(problemsNotice(result.problems, t));
  if (result.files.length === 0) {
    body.append(h('p', { class: 'empty' }, t.noChanges));
    return;
  }
  const top = largestChanges(result.files, CHART_BARS);
  if (top.length > 0) {
    const chart = h('figure', { class: 'chart' }, h('figcaption', { class: 'section-title' }, t.chartHeading));
    body.append(chart);
    drawChart(chart, top, t);
  }
  body.append(fileList(result.files, t, options.diff));
}

/** "This is not a diff" (or another failure), with the tool's own words. */
export function renderError(container: HTMLElement, title: string, message: string, hint?: string, code?: string): void {
  container.replaceChildren(
    h(
      'div',
      { class: 'alert', role: 'alert', id: 'result-error' },
      h('h3', {}, title),
      h('p', { class: 'error-message' }, message),
      hint ? h('p', {}, hint) : null,
      code ? h('p', {}, h('code', {}, code)) : null,
    ),
  );
}

/** Problems shown before "and N more". */
const SHOWN_PROBLEMS = 5;

/** A truncated or damaged diff: which file, which line, what is missing (text only: paths come from the diff). */
function problemsNotice(problems: DiffProblem[], t: Strings): HTMLElement {
  const truncated = problems.some((p) => p.kind === 'truncated' || p.kind === 'short_hunk');
  return h(
    'div',
    { class: 'alert problems', role: 'status', id: 'diff-problems' },
    h('h3', {}, truncated ? t.problemsTruncated : t.problemsDamaged),
    h(
      'ul',
      {},
      ...problems
        .slice(0, SHOWN_PROBLEMS)
        .map((p) => h('li', { 'data-line': String(p.line) }, h('b', {}, t.problemAt(p.path, formatNumber(p.line))), `: ${p.message}`)),
      problems.length > SHOWN_PROBLEMS ? h('li', {}, t.problemsMore(problems.length - SHOWN_PROBLEMS)) : null,
    ),
    h('p', {}, t.problemsNote),
  );
}

// ---- chart -------------------------------------------------------------------

function drawChart(figure: HTMLElement, files: FileSummary[], t: Strings): void {
  const draw = () => {
    const width = Math.max(280, Math.floor(figure.clientWidth || 640));
    const row = 24;
    const labelW = Math.min(300, Math.floor(width * 0.4));
    const numW = 92;
    const barW = Math.max(40, width - labelW - numW - 12);
    const max = Math.max(...files.map((f) => f.additions + f.deletions));
    const maxChars = Math.floor(labelW / 7.2);
    const chart = svg(
      'svg',
      { width, height: files.length * row + 4, role: 'img', 'aria-label': t.chartLabel(files.length), class: 'chart-svg' },
      ...files.map((f, i) => {
        const y = i * row + 2;
        const a = (f.additions / max) * barW;
        const d = (f.deletions / max) * barW;
        const label = f.path.length > maxChars ? `…${f.path.slice(f.path.length - maxChars + 1)}` : f.path;
        return svg(
          'g',
          { class: 'chart-row' },
          svg('title', {}, `${f.path}: +${formatNumber(f.additions, t)} −${formatNumber(f.deletions, t)}`),
          svg('text', { x: labelW - 8, y: y + 15, 'text-anchor': 'end' }, label),
          svg('rect', { class: 'bar-add', x: labelW, y: y + 4, width: Math.max(a, f.additions ? 1.5 : 0), height: 14, rx: 2 }),
          svg('rect', { class: 'bar-del', x: labelW + a, y: y + 4, width: Math.max(d, f.deletions ? 1.5 : 0), height: 14, rx: 2 }),
          svg(
            'text',
            { class: 'num', x: labelW + a + d + 6, y: y + 15 },
            `+${formatNumber(f.additions, t)} −${formatNumber(f.deletions, t)}`,
          ),
        );
      }),
    );
    figure.querySelector('svg')?.remove();
    figure.append(chart);
  };
  draw();
  // Redraw at the new width when the layout changes (rotation, sidebar wrapping).
  let last = figure.clientWidth;
  const observer = new ResizeObserver(() => {
    if (!figure.isConnected) return observer.disconnect();
    if (Math.abs(figure.clientWidth - last) < 8) return;
    last = figure.clientWidth;
    draw();
  });
  observer.observe(figure);
}
