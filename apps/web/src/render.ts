/**
 * The result views: the summary sentence, totals, a chart of the largest
 * changes (inline SVG) and a sortable, filterable per-file table.
 */
import { h, pathParts, slashBreaks, svg } from './dom.js';
import { formatMs, formatNumber, type Strings } from './i18n.js';
import { largestChanges, type DiffProblem, type DiffSummary, type FileSummary } from './summary.js';

/** Rows drawn before "show all": enough for any reviewable PR, cheap for a 50k-file one. */
const FIRST_ROWS = 400;
const CHART_BARS = 8;

type SortKey = 'index' | 'status' | 'path' | 'additions' | 'deletions' | 'hunks';

export interface SummaryViewOptions {
  /** How long the tool took, shown with the totals. */
  ms?: number;
  /** The whole call as the page saw it (queue, worker, tool, history writes). */
  pageMs?: number;
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
  body.append(fileTable(result.files, t));
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
  const nf = new Intl.NumberFormat();
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
        .map((p) => h('li', { 'data-line': String(p.line) }, h('b', {}, t.problemAt(p.path, nf.format(p.line))), `: ${p.message}`)),
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

// ---- table -------------------------------------------------------------------

function fileTable(files: FileSummary[], t: Strings): HTMLElement {
  let sort: { key: SortKey; dir: 1 | -1 } = { key: 'index', dir: 1 };
  let filter = '';
  let showAll = false;
  const maxChange = Math.max(1, ...files.map((f) => f.additions + f.deletions));
  const indexed = files.map((f, index) => ({ f, index }));

  const tbody = h('tbody');
  const more = h('div', { class: 'more' });
  const heads: Array<[SortKey, string, string]> = [
    ['status', t.colStatus, ''],
    ['path', t.colFile, ''],
    ['additions', t.colAdd, 'num'],
    ['deletions', t.colDel, 'num'],
    ['hunks', t.colHunks, 'num'],
  ];
  const ths = heads.map(([key, label, cls]) =>
    h('th', { scope: 'col', class: cls, 'data-key': key }, h('button', { type: 'button', onclick: () => toggleSort(key) }, label)),
  );

  // Each column cycles: its first order (A-Z for words, largest first for numbers), the reverse, then diff order.
  const toggleSort = (key: SortKey) => {
    const first = key === 'path' || key === 'status' ? 1 : -1;
    sort = sort.key !== key ? { key, dir: first } : sort.dir === first ? { key, dir: -first as 1 | -1 } : { key: 'index', dir: 1 };
    draw();
  };

  const compare = (a: { f: FileSummary; index: number }, b: { f: FileSummary; index: number }): number => {
    const k = sort.key;
    const v = k === 'index' ? a.index - b.index : k === 'path' || k === 'status' ? a.f[k].localeCompare(b.f[k]) : a.f[k] - b.f[k];
    return v * sort.dir || a.index - b.index;
  };

  const draw = () => {
    for (const th of ths) {
      const key = th.dataset.key as SortKey;
      if (key === sort.key) th.setAttribute('aria-sort', sort.dir === 1 ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    }
    const needle = filter.trim().toLowerCase();
    const rows = indexed.filter(({ f }) => !needle || f.path.toLowerCase().includes(needle) || f.old_path?.toLowerCase().includes(needle));
    rows.sort(compare);
    const shown = showAll ? rows : rows.slice(0, FIRST_ROWS);
    tbody.replaceChildren(...shown.map(({ f }) => fileRow(f, t, maxChange)));
    if (rows.length === 0) tbody.append(h('tr', {}, h('td', { colspan: 6, class: 'empty' }, t.noMatch)));
    more.replaceChildren();
    if (rows.length > shown.length) {
      more.append(h('button', { type: 'button', onclick: () => ((showAll = true), draw()) }, t.showAll(rows.length)));
    }
  };

  const filterInput = h('input', {
    type: 'search',
    class: 'filter',
    placeholder: t.filter,
    'aria-label': t.filter,
    oninput: (e: Event) => {
      filter = (e.target as HTMLInputElement).value;
      draw();
    },
  });
  draw();
  return h(
    'section',
    { class: 'files', 'aria-labelledby': 'files-heading' },
    h(
      'div',
      { class: 'table-head' },
      h('h3', { class: 'section-title', id: 'files-heading' }, t.tableHeading),
      files.length > 8 ? filterInput : null,
    ),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { id: 'files-table' },
        h('thead', {}, h('tr', {}, ...ths, h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, t.diffstat)))),
        tbody,
      ),
    ),
    more,
  );
}

function fileRow(f: FileSummary, t: Strings, maxChange: number): HTMLTableRowElement {
  return h(
    'tr',
    { 'data-path': f.path },
    h('td', { class: 'c-status' }, h('span', { class: `badge ${f.status}`, 'data-status': f.status }, t.status[f.status])),
    h(
      'td',
      { class: 'c-path' },
      h('span', { class: 'path' }, ...pathParts(f.path)),
      f.old_path !== undefined ? h('span', { class: 'old-path' }, `${t.renamedFrom} `, ...pathParts(f.old_path)) : null,
      f.old_mode !== undefined && f.new_mode !== undefined ? h('span', { class: 'mode' }, t.mode(f.old_mode, f.new_mode)) : null,
    ),
    h('td', { class: `num c-add${f.additions ? '' : ' zero'}` }, f.binary ? '—' : `+${formatNumber(f.additions, t)}`),
    h('td', { class: `num c-del${f.deletions ? '' : ' zero'}` }, f.binary ? '—' : `−${formatNumber(f.deletions, t)}`),
    // data-label: the phone layout shows rows as cards, with no column header above this number.
    h('td', { class: `num c-hunks${f.hunks ? '' : ' zero'}`, 'data-label': t.colHunks }, formatNumber(f.hunks, t)),
    h('td', { class: 'c-spark', 'aria-hidden': 'true' }, spark(f, maxChange)),
  );
}

/** Five blocks like `git diff --stat`'s bar: how big the change is, and how much of it is added. */
function spark(f: FileSummary, maxChange: number): HTMLElement {
  const total = f.additions + f.deletions;
  const filled = total === 0 ? 0 : Math.max(1, Math.round((5 * total) / maxChange));
  const adds = total === 0 ? 0 : Math.round((filled * f.additions) / total);
  const blocks = Array.from({ length: 5 }, (_, i) => h('i', { class: i < adds ? 'a' : i < filled ? 'd' : '' }));
  return h('span', { class: 'spark' }, ...blocks);
}
