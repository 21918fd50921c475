/**
 * The result's file list: a folder tree (or a flat list) with per-folder
 * totals, filters by status, extension and text, a sortable table, and a
 * file's own hunks shown under its row on click.
 *
 * It stays fast for any number of files: the model (file-tree.ts) is plain
 * arrays; rows are drawn CHUNK at a time (more as the list's end scrolls
 * into view, or by a button), built once and reused when the view changes;
 * folders start closed when there are many files; the diff is split into
 * file sections (file-sections.ts) in time slices, only when a file is
 * first opened. Text from the diff is only ever set as text.
 */
import { h, pathParts } from './dom.js';
import { hunkLines, type DiffText } from './file-sections.js';
import {
  facetSteps,
  filteredTree,
  isFiltered,
  NO_FILTER,
  runNow,
  runSliced,
  type Facets,
  listOrder,
  nextSort,
  treeRows,
  type Filter,
  type Folder,
  type Row,
  type Sort,
  type SortKey,
} from './file-tree.js';
import { formatNumber, type Strings } from './i18n.js';
import { STATUSES, type FileStatus, type FileSummary } from './summary.js';

/** Rows drawn first, and after each change of view. */
const CHUNK = 100;
/** Rows added each time the end of the list scrolls into view: small, so each addition is a short task. */
const MORE = 50;
/** Up to this many files, every folder starts open; beyond, only the top level shows. */
const OPEN_ALL_UP_TO = 300;
/** A file's lines drawn at a time. */
const LINE_CHUNK = 2000;
/** Lists this long filter a little after typing stops, not on every key. */
const DEBOUNCE_FROM = 2000;
/** Up to this many files, the tree and filters are built at once; beyond, in time slices. */
const SYNC_UP_TO = 3000;

let idSeq = 0;

type Rows = { readonly length: number; at(i: number): Row | undefined };

export function fileList(files: FileSummary[], t: Strings, diff: DiffText | undefined): HTMLElement {
  const s = t.nav;
  const uid = `fl${++idSeq}`;
  let sort: Sort = { key: 'index', dir: 1 };
  let filter: Filter = { statuses: new Set(), extension: null, text: '' };
  let mode: 'tree' | 'list' = 'tree';
  const everyFile: number[] = files.map((_, i) => i);
  // Filled by prepare(): at once for a usual diff, in time slices for a huge one.
  let fullTree: Folder | null = null;
  let shown = everyFile;
  let tree: Folder | null = null;
  // Folders the user opened or closed; the others follow `openByDefault`.
  const toggled = new Map<string, boolean>();
  let openByDefault = files.length <= OPEN_ALL_UP_TO;
  /** Set by "Expand all" / "Collapse all": then filtering keeps that choice. */
  let chosenDefault: boolean | null = null;
  /** What the view shows, in order; only the drawn ones become elements (a list of 50,000 files makes no row objects). */
  let rows: Rows = [];
  let drawn = 0;
  /** Files whose hunks are shown. */
  const opened = new Set<number>();
  let maxChange = 1;
  for (const f of files) maxChange = Math.max(maxChange, f.additions + f.deletions);
  const fileRows = new Map<number, HTMLTableRowElement>();
  const detailRows = new Map<number, HTMLTableRowElement>();
  /** By folder path: a filter makes new folder objects, but the rows are kept and their numbers updated. */
  const folderRows = new Map<string, { tr: HTMLTableRowElement; folder: Folder }>();

  const tbody = h('tbody');
  const table = h('table', { id: 'files-table', class: 'tree-view' });
  const count = h('p', { class: 'files-count', 'aria-live': 'polite' });
  const moreButton = h('button', { type: 'button', class: 'secondary', onclick: () => drawMore() });
  const more = h('div', { class: 'more' }, moreButton);

  // ---- header: sort buttons
  const heads: Array<[SortKey, string, string]> = [
    ['status', t.colStatus, ''],
    ['path', t.colFile, ''],
    ['additions', t.colAdd, 'num'],
    ['deletions', t.colDel, 'num'],
    ['hunks', t.colHunks, 'num'],
  ];
  const ths = heads.map(([key, label, cls]) =>
    h(
      'th',
      { scope: 'col', class: cls, 'data-key': key },
      h(
        'button',
        {
          type: 'button',
          onclick: () => {
            sort = nextSort(sort, key);
            // A new order: the first chunk again (every row moved anyway).
            relayout(false);
          },
        },
        label,
      ),
    ),
  );
  table.append(h('thead', {}, h('tr', {}, ...ths, h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, s.diffstat)))), tbody);

  // ---- rows
  const isOpenPath = (path: string) => toggled.get(path) ?? openByDefault;
  const isOpen = (f: Folder) => isOpenPath(f.path);

  const folderRow = (row: Extract<Row, { kind: 'folder' }>): HTMLTableRowElement => {
    const f = row.folder;
    const known = folderRows.get(f.path);
    let tr = known?.tr;
    if (!tr) {
      const toggle = h(
        'button',
        {
          type: 'button',
          class: 'folder-toggle',
          'aria-expanded': String(row.open),
          onclick: () => setFolder(f.path, !isOpenPath(f.path)),
          onkeydown: (e: Event) => {
            const k = (e as KeyboardEvent).key;
            // Tree-like keys as well as Enter/Space: → opens, ← closes.
            if (k === 'ArrowRight' && !isOpenPath(f.path)) setFolder(f.path, true);
            else if (k === 'ArrowLeft' && isOpenPath(f.path)) setFolder(f.path, false);
            else return;
            e.preventDefault();
          },
        },
        h('span', { class: 'twisty', 'aria-hidden': 'true' }),
        h('span', { class: 'folder-name' }, `${f.name}/`),
      );
      tr = h(
        'tr',
        { class: 'folder-row', 'data-folder': f.path },
        h('td', { class: 'c-count' }),
        h('td', { class: 'c-path' }, toggle),
        h('td', { class: 'num f-add' }),
        h('td', { class: 'num f-del' }),
        h('td', { class: 'num f-hunks' }),
        h('td', { class: 'c-spark', 'aria-hidden': 'true' }),
      );
    }
    if (known?.folder !== f) {
      // New, or the same folder with other files after a filter: its numbers.
      folderRows.set(f.path, { tr, folder: f });
      const cells = tr.cells;
      const { files: n, additions, deletions, hunks } = f.totals;
      cells[0]!.textContent = s.folderFiles(n);
      cells[2]!.textContent = `+${formatNumber(additions, t)}`;
      cells[2]!.classList.toggle('zero', !additions);
      cells[3]!.textContent = `−${formatNumber(deletions, t)}`;
      cells[3]!.classList.toggle('zero', !deletions);
      cells[4]!.textContent = formatNumber(hunks, t);
      cells[4]!.classList.toggle('zero', !hunks);
    }
    tr.style.setProperty('--depth', String(row.depth));
    tr.querySelector('.folder-toggle')!.setAttribute('aria-expanded', String(row.open));
    return tr;
  };

  const fileRowOf = (index: number, depth: number): HTMLTableRowElement => {
    let tr = fileRows.get(index);
    if (!tr) fileRows.set(index, (tr = fileRow(files[index]!, index, t, maxChange, uid, () => toggleFile(index))));
    tr.style.setProperty('--depth', String(depth));
    return tr;
  };

  const rowElements = (row: Row): HTMLTableRowElement[] => {
    if (row.kind === 'folder') return [folderRow(row)];
    const tr = fileRowOf(row.index, row.depth);
    const detail = opened.has(row.index) ? detailRows.get(row.index) : undefined;
    return detail ? [tr, detail] : [tr];
  };

  /** Draws the first rows again (reusing their elements), as many as were drawn before. */
  const redraw = (keep = true) => {
    const target = Math.min(rows.length, keep ? Math.max(CHUNK, drawn) : CHUNK);
    const focused = document.activeElement;
    const els: HTMLTableRowElement[] = [];
    for (let i = 0; i < target; i++) els.push(...rowElements(rows.at(i)!));
    tbody.replaceChildren(...els);
    drawn = target;
    if (rows.length === 0) tbody.append(h('tr', {}, h('td', { colspan: 6, class: 'empty' }, tree ? t.noMatch : s.reading)));
    // Redrawing detaches the focused button for a moment: give focus back.
    if (focused instanceof HTMLElement && focused !== document.activeElement && tbody.contains(focused)) focused.focus();
    updateFooter();
  };

  const drawMore = () => {
    const target = Math.min(rows.length, drawn + MORE);
    const els: HTMLTableRowElement[] = [];
    for (let i = drawn; i < target; i++) els.push(...rowElements(rows.at(i)!));
    tbody.append(...els);
    drawn = target;
    updateFooter();
  };

  const updateFooter = () => {
    const left = rows.length - drawn;
    more.hidden = left <= 0;
    moreButton.textContent = s.showMore(Math.min(MORE, left));
    count.textContent = s.shown(formatNumber(shown.length, t), formatNumber(files.length, t));
    for (const th of ths) {
      if (th.dataset.key === sort.key) th.setAttribute('aria-sort', sort.dir === 1 ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    }
    clear.hidden = !isFiltered(filter);
    expandAll.hidden = collapseAll.hidden = mode !== 'tree' || !tree || tree.folders.length === 0;
  };

  const currentRows = (): Rows => {
    if (!tree) return [];
    if (mode === 'tree') return treeRows(files, tree, sort, isOpen);
    const order = listOrder(files, shown, sort);
    return { length: order.length, at: (i) => (i < order.length ? { kind: 'file', index: order[i]!, depth: 0 } : undefined) };
  };

  /** The rows for the current mode, sort and open folders; the drawn rows follow. */
  const relayout = (keep = true) => {
    rows = currentRows();
    redraw(keep);
  };

  /**
   * Opens or closes one folder. Only the rows after it change: those are
   * redrawn, one chunk past it at most (more come on scrolling), so the
   * cost stays the same however far down the list the folder is.
   */
  const setFolder = (path: string, open: boolean) => {
    toggled.set(path, open);
    let at = -1;
    for (let i = 0; i < drawn && at < 0; i++) {
      const r = rows.at(i);
      if (r?.kind === 'folder' && r.folder.path === path) at = i;
    }
    const tr = folderRows.get(path)?.tr;
    if (at < 0 || at >= drawn || !tr || tr.parentNode !== tbody) return relayout();
    rows = currentRows();
    folderRow(rows.at(at) as Extract<Row, { kind: 'folder' }>);
    while (tr.nextSibling) tr.nextSibling.remove();
    const target = Math.min(rows.length, Math.max(CHUNK, at + 1 + CHUNK));
    const els: HTMLTableRowElement[] = [];
    for (let i = at + 1; i < target; i++) els.push(...rowElements(rows.at(i)!));
    tbody.append(...els);
    drawn = target;
    updateFooter();
  };

  /** The filter changed: a new tree of the files it keeps (in slices for a huge diff; a newer filter wins). */
  let generation = 0;
  const refilter = async () => {
    const mine = ++generation;
    let next: { shown: number[]; tree: Folder } | null;
    if (!fullTree) return; // prepare() draws with the filter when it is done
    if (!isFiltered(filter)) next = { shown: everyFile, tree: fullTree };
    else if (files.length <= SYNC_UP_TO) next = runNow(filteredTree(files, filter));
    else next = await runSliced(filteredTree(files, filter), () => mine !== generation);
    if (!next || mine !== generation) return;
    ({ shown, tree } = next);
    // A short result opens whole; the user's own opening and closing still counts.
    openByDefault = chosenDefault ?? shown.length <= OPEN_ALL_UP_TO;
    relayout(false);
  };

  // ---- a file's hunks
  const toggleFile = (index: number) => {
    const tr = fileRows.get(index)!;
    const button = tr.querySelector('.file-open')!;
    if (opened.has(index)) {
      opened.delete(index);
      button.setAttribute('aria-expanded', 'false');
      detailRows.get(index)?.remove();
      return;
    }
    opened.add(index);
    button.setAttribute('aria-expanded', 'true');
    let detail = detailRows.get(index);
    if (!detail) {
      const box = h('div', { class: 'file-diff', role: 'region', 'aria-label': s.fileChanges(files[index]!.path) });
      detail = h('tr', { class: 'file-diff-row', id: `${uid}-d${index}` }, h('td', { colspan: 6 }, box));
      detailRows.set(index, detail);
      void fillDetail(index, box);
    }
    tr.after(detail);
  };

  const fillDetail = async (index: number, box: HTMLElement) => {
    if (diff === undefined) return box.replaceChildren(h('p', { class: 'empty' }, s.noText));
    box.replaceChildren(h('p', { class: 'empty' }, s.reading));
    let got: Awaited<ReturnType<DiffText['fileHunks']>>;
    try {
      got = await diff.fileHunks(files, index);
    } catch {
      got = 'gone'; // the runtime's worker stopped
    }
    if (got === 'gone') return box.replaceChildren(h('p', { class: 'empty' }, s.noText));
    if (got === 'not-found') return box.replaceChildren(h('p', { class: 'empty' }, s.notFound));
    if (got === 'no-hunks') return box.replaceChildren(h('p', { class: 'empty' }, s.noHunks));
    const lines = hunkLines(got.text, got.hunks);
    const pre = h('pre', { class: 'diff-lines', tabindex: 0 });
    const moreLines = h('button', { type: 'button', class: 'secondary' });
    let at = 0;
    const drawLines = () => {
      const end = Math.min(lines.length, at + LINE_CHUNK);
      const frag = document.createDocumentFragment();
      for (; at < end; at++) {
        const l = lines[at]!;
        // textContent only: the diff is whatever the user loaded.
        frag.append(h('span', { class: `ln ${l.kind}` }, l.text === '' ? ' ' : l.text));
      }
      pre.append(frag);
      moreLines.hidden = at >= lines.length;
      moreLines.textContent = s.moreLines(Math.min(LINE_CHUNK, lines.length - at));
    };
    moreLines.addEventListener('click', drawLines);
    drawLines();
    box.replaceChildren(pre, moreLines);
  };

  // ---- toolbar (the status and extension controls once the files are counted)
  let statusButtons: HTMLButtonElement[] = [];
  const statusGroup = h('div', { class: 'chips', role: 'group', 'aria-label': s.byStatus, hidden: true });
  const extLabel = h('label', { class: 'ext-label', for: `${uid}-ext`, hidden: true }, s.extension);
  const statusButton = (st: FileStatus, n: number) =>
    h(
      'button',
      {
        type: 'button',
        class: 'chip',
        'data-filter-status': st,
        'aria-pressed': 'false',
        onclick: (e: Event) => {
          const next = new Set(filter.statuses);
          if (next.has(st)) next.delete(st);
          else next.add(st);
          filter = { ...filter, statuses: next };
          (e.currentTarget as HTMLElement).setAttribute('aria-pressed', String(next.has(st)));
          refilter();
        },
      },
      h('span', { class: `badge ${st}` }, t.status[st]),
      ` ${n}`,
    );
  const extSelect = h(
    'select',
    {
      id: `${uid}-ext`,
      class: 'ext-filter',
      hidden: true,
      onchange: (e: Event) => {
        const v = (e.target as HTMLSelectElement).value;
        filter = { ...filter, extension: v === '*' ? null : v };
        refilter();
      },
    },
    h('option', { value: '*' }, s.allExtensions),
  );
  const showFacets = ({ statuses, extensions }: Facets) => {
    statusButtons = STATUSES.filter((st) => statuses.has(st)).map((st) => statusButton(st, statuses.get(st)!));
    statusGroup.append(...statusButtons);
    statusGroup.hidden = statusButtons.length < 2;
    extSelect.append(...extensions.map(([ext, n]) => h('option', { value: ext }, `${ext ? `.${ext}` : s.noExtension} (${n})`)));
    extSelect.hidden = extLabel.hidden = extensions.length < 2;
  };
  let debounce: ReturnType<typeof setTimeout> | undefined;
  const textFilter = h('input', {
    type: 'search',
    class: 'filter',
    placeholder: t.filter,
    'aria-label': t.filter,
    oninput: (e: Event) => {
      filter = { ...filter, text: (e.target as HTMLInputElement).value };
      clearTimeout(debounce);
      if (files.length < DEBOUNCE_FROM) refilter();
      else debounce = setTimeout(refilter, 150);
    },
  });
  const clear = h('button', {
    type: 'button',
    class: 'link-button',
    onclick: () => {
      filter = { statuses: new Set(), extension: null, text: '' };
      textFilter.value = '';
      extSelect.value = '*';
      for (const b of statusButtons) b.setAttribute('aria-pressed', 'false');
      refilter();
    },
  });
  clear.textContent = s.clearFilters;
  const modeButtons = (['tree', 'list'] as const).map((m) =>
    h(
      'button',
      {
        type: 'button',
        class: 'chip',
        'data-mode': m,
        'aria-pressed': String(m === mode),
        onclick: () => {
          mode = m;
          table.className = m === 'tree' ? 'tree-view' : 'list-view';
          for (const b of modeButtons) b.setAttribute('aria-pressed', String(b.dataset.mode === m));
          relayout(false);
        },
      },
      m === 'tree' ? s.viewTree : s.viewList,
    ),
  );
  const setAll = (open: boolean) => {
    toggled.clear();
    openByDefault = chosenDefault = open;
    relayout(false);
  };
  const expandAll = h('button', { type: 'button', class: 'link-button', onclick: () => setAll(true) }, s.expandAll);
  const collapseAll = h('button', { type: 'button', class: 'link-button', onclick: () => setAll(false) }, s.collapseAll);

  // More rows as the end of the list comes into view (the button stays for keyboards).
  if (typeof IntersectionObserver !== 'undefined') {
    const io = new IntersectionObserver((entries) => {
      if (!more.isConnected) return io.disconnect();
      if (entries.some((e) => e.isIntersecting) && !more.hidden) drawMore();
    });
    io.observe(more);
  }

  // The tree and the counts: at once for a usual diff, in slices for a huge one.
  function* prepare(): Generator<void, { tree: Folder; facets: Facets }, void> {
    const counted = yield* facetSteps(files);
    const { tree: all } = yield* filteredTree(files, NO_FILTER);
    return { tree: all, facets: counted };
  }
  const prepared = (r: { tree: Folder; facets: Facets }) => {
    fullTree = tree = r.tree;
    showFacets(r.facets);
    if (isFiltered(filter)) void refilter();
    else relayout(false);
  };
  if (files.length <= SYNC_UP_TO) prepared(runNow(prepare()));
  else {
    relayout();
    void runSliced(prepare()).then((r) => r && prepared(r));
  }
  const few = files.length <= 8;
  return h(
    'section',
    { class: 'files', 'aria-labelledby': 'files-heading' },
    h('div', { class: 'table-head' }, h('h3', { class: 'section-title', id: 'files-heading' }, t.tableHeading), count),
    few
      ? null
      : h(
          'div',
          { class: 'files-toolbar' },
          h('div', { class: 'chips', role: 'group', 'aria-label': s.viewAs }, ...modeButtons),
          statusGroup,
          extLabel,
          extSelect,
          textFilter,
          clear,
          expandAll,
          collapseAll,
        ),
    h('div', { class: 'table-wrap' }, table),
    more,
  );
}

function fileRow(f: FileSummary, index: number, t: Strings, maxChange: number, uid: string, open: () => void): HTMLTableRowElement {
  const slash = f.path.lastIndexOf('/');
  return h(
    'tr',
    { 'data-path': f.path, 'data-index': index },
    h('td', { class: 'c-status' }, h('span', { class: `badge ${f.status}`, 'data-status': f.status }, t.status[f.status])),
    h(
      'td',
      { class: 'c-path' },
      h(
        'button',
        {
          type: 'button',
          class: 'file-open',
          'aria-expanded': 'false',
          'aria-controls': `${uid}-d${index}`,
          title: t.nav.openFile(f.path),
          onclick: open,
        },
        // The folder part is hidden in the tree view (the folder rows say it), but stays in the text.
        h(
          'span',
          { class: 'path' },
          h('span', { class: 'path-dir' }, ...pathParts(f.path.slice(0, slash + 1))),
          h('span', { class: 'path-base path-part' }, f.path.slice(slash + 1)),
        ),
      ),
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
