/**
 * The file list's model, with no DOM: folders with totals, the filters
 * (status, extension, text), the sort, and the rows a view shows. The
 * view (render.ts) draws only some of these rows at a time, so nothing here
 * is proportional to more than the file count.
 */
import type { FileStatus, FileSummary } from './summary.js';

export interface Totals {
  files: number;
  additions: number;
  deletions: number;
  hunks: number;
}

export interface Folder {
  /** As shown: one name, or a chain of folders that hold nothing else ("src/lib"). */
  name: string;
  /** The folder's full path, without a trailing slash ('' for the root). */
  path: string;
  folders: Folder[];
  /** Indexes into the file list. */
  files: number[];
  totals: Totals;
}

export type SortKey = 'index' | 'status' | 'path' | 'additions' | 'deletions' | 'hunks';
export interface Sort {
  key: SortKey;
  dir: 1 | -1;
}

export const NUMERIC_KEYS: readonly SortKey[] = ['additions', 'deletions', 'hunks'];

/** A header click: numbers go largest first, then smallest first, then back to the diff's order; text A→Z, Z→A, off. */
export function nextSort(current: Sort, key: SortKey): Sort {
  const first: 1 | -1 = NUMERIC_KEYS.includes(key) ? -1 : 1;
  if (current.key !== key) return { key, dir: first };
  if (current.dir === first) return { key, dir: -first as 1 | -1 };
  return { key: 'index', dir: 1 };
}

/** The extension a filter uses: lower case, from the last dot of the name ('' for none; ".gitignore" has none). */
export function extensionOf(path: string): string {
  const base = path.slice(path.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 && dot < base.length - 1 ? base.slice(dot + 1).toLowerCase() : '';
}

export interface Filter {
  /** Empty: every status. */
  statuses: ReadonlySet<FileStatus>;
  /** null: every extension; '' only files without one. */
  extension: string | null;
  /** Part of the path or old path, any case. */
  text: string;
}

export const NO_FILTER: Filter = { statuses: new Set(), extension: null, text: '' };

export function isFiltered(f: Filter): boolean {
  return f.statuses.size > 0 || f.extension !== null || f.text.trim() !== '';
}

function keeps(f: FileSummary, filter: Filter, needle: string): boolean {
  if (filter.statuses.size && !filter.statuses.has(f.status)) return false;
  if (filter.extension !== null && extensionOf(f.path) !== filter.extension) return false;
  return !needle || f.path.toLowerCase().includes(needle) || f.old_path?.toLowerCase().includes(needle) === true;
}

/** Indexes of the files the filter keeps, in diff order. */
export function filterFiles(files: readonly FileSummary[], filter: Filter): number[] {
  const needle = filter.text.trim().toLowerCase();
  const out: number[] = [];
  for (let i = 0; i < files.length; i++) if (keeps(files[i]!, filter, needle)) out.push(i);
  return out;
}

/** How many files have each status and each extension (for the filter controls), most common extension first. */
export function facets(files: readonly FileSummary[]): Facets {
  return runNow(facetSteps(files));
}

export interface Facets {
  statuses: Map<FileStatus, number>;
  extensions: Array<[string, number]>;
}

export function* facetSteps(files: readonly FileSummary[]): Generator<void, Facets, void> {
  const statuses = new Map<FileStatus, number>();
  const ext = new Map<string, number>();
  for (let i = 0; i < files.length; i++) {
    if (i % FILES_PER_STEP === FILES_PER_STEP - 1) yield;
    const f = files[i]!;
    statuses.set(f.status, (statuses.get(f.status) ?? 0) + 1);
    const e = extensionOf(f.path);
    ext.set(e, (ext.get(e) ?? 0) + 1);
  }
  const extensions = [...ext].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return { statuses, extensions };
}

const emptyTotals = (): Totals => ({ files: 0, additions: 0, deletions: 0, hunks: 0 });

/** Files read between two yields of the sliced builders. */
export const FILES_PER_STEP = 2_000;

/**
 * The files a filter keeps and their folder tree, as a generator that
 * yields every FILES_PER_STEP files, so a page can build the tree of 50,000
 * files in slices between which it stays responsive (see `runSliced`).
 */
export function* filteredTree(files: readonly FileSummary[], filter: Filter): Generator<void, { shown: number[]; tree: Folder }, void> {
  const shown: number[] = [];
  const on = isFiltered(filter);
  const needle = filter.text.trim().toLowerCase();
  for (let i = 0; i < files.length; i++) {
    if (i % FILES_PER_STEP === FILES_PER_STEP - 1) yield;
    if (!on || keeps(files[i]!, filter, needle)) shown.push(i);
  }
  const tree = yield* treeSteps(files, shown);
  return { shown, tree };
}

/** Runs a generator to its end at once. */
export function runNow<T>(it: Generator<void, T, void>): T {
  for (;;) {
    const r = it.next();
    if (r.done) return r.value;
  }
}

/** Runs a generator in slices of about `sliceMs`, giving the event loop back in between; null when `cancelled()` turns true. */
export async function runSliced<T>(it: Generator<void, T, void>, cancelled: () => boolean = () => false, sliceMs = 8): Promise<T | null> {
  let t0 = performance.now();
  for (;;) {
    const r = it.next();
    if (r.done) return r.value;
    if (performance.now() - t0 > sliceMs) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (cancelled()) return null;
      t0 = performance.now();
    }
  }
}

/**
 * The folder tree of some files (`only`: indexes, default all), each folder
 * with the totals of every file under it. Chains of folders that hold only
 * one folder are shown as one ("src/main/java").
 */
export function buildTree(files: readonly FileSummary[], only?: readonly number[]): Folder {
  return runNow(treeSteps(files, only));
}

function* treeSteps(files: readonly FileSummary[], only?: readonly number[]): Generator<void, Folder, void> {
  const root: Folder = { name: '', path: '', folders: [], files: [], totals: emptyTotals() };
  const children = new Map<Folder, Map<string, Folder>>();
  const add = (t: Totals, f: FileSummary) => {
    t.files++;
    t.additions += f.additions;
    t.deletions += f.deletions;
    t.hunks += f.hunks;
  };
  const n = only ? only.length : files.length;
  for (let k = 0; k < n; k++) {
    if (k % FILES_PER_STEP === FILES_PER_STEP - 1) yield;
    const i = only ? only[k]! : k;
    const f = files[i]!;
    add(root.totals, f);
    let folder = root;
    let from = 0;
    for (;;) {
      const slash = f.path.indexOf('/', from);
      // A leading, doubled or trailing slash makes no empty folder name.
      if (slash < 0 || slash === f.path.length - 1) break;
      if (slash === from) {
        from = slash + 1;
        continue;
      }
      const name = f.path.slice(from, slash);
      let map = children.get(folder);
      if (!map) children.set(folder, (map = new Map()));
      let next = map.get(name);
      if (!next) {
        next = { name, path: f.path.slice(0, slash), folders: [], files: [], totals: emptyTotals() };
        map.set(name, next);
        folder.folders.push(next);
      }
      folder = next;
      add(folder.totals, f);
      from = slash + 1;
    }
    folder.files.push(i);
  }
  const squash = (folder: Folder): Folder => {
    let f = folder;
    while (f.files.length === 0 && f.folders.length === 1) {
      const only = f.folders[0]!;
      f = { ...only, name: `${f.name}/${only.name}` };
    }
    f.folders = f.folders.map(squash);
    return f;
  };
  root.folders = root.folders.map(squash);
  return root;
}

/** Every folder of a tree, root excluded. */
export function allFolders(root: Folder): Folder[] {
  const out: Folder[] = [];
  const walk = (f: Folder) => {
    for (const c of f.folders) {
      out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}

export type Row = { kind: 'folder'; folder: Folder; depth: number; open: boolean } | { kind: 'file'; index: number; depth: number };

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Orders files for a sort; ties keep the diff's order. */
export function fileComparator(files: readonly FileSummary[], sort: Sort): (a: number, b: number) => number {
  const k = sort.key;
  if (k === 'index') return (a, b) => a - b;
  if (k === 'path' || k === 'status') return (a, b) => byText(files[a]![k], files[b]![k]) * sort.dir || a - b;
  return (a, b) => (files[a]![k] - files[b]![k]) * sort.dir || a - b;
}

function folderComparator(sort: Sort): (a: Folder, b: Folder) => number {
  const k = sort.key;
  if (k === 'additions' || k === 'deletions' || k === 'hunks')
    return (a, b) => (a.totals[k] - b.totals[k]) * sort.dir || byText(a.name, b.name);
  return (a, b) => byText(a.name, b.name) * (k === 'path' ? sort.dir : 1);
}

/**
 * The rows of the tree view: folders first, then files, each level sorted;
 * a closed folder's contents are left out. `isOpen` says which folders are open.
 */
export function treeRows(files: readonly FileSummary[], root: Folder, sort: Sort, isOpen: (f: Folder, depth: number) => boolean): Row[] {
  const rows: Row[] = [];
  const byFile = fileComparator(files, sort);
  const byFolder = folderComparator(sort);
  const walk = (folder: Folder, depth: number) => {
    for (const sub of [...folder.folders].sort(byFolder)) {
      const open = isOpen(sub, depth);
      rows.push({ kind: 'folder', folder: sub, depth, open });
      if (open) walk(sub, depth + 1);
    }
    const list = sort.key === 'index' ? folder.files : sortIndexes(files, folder.files, sort, byFile);
    for (const index of list) rows.push({ kind: 'file', index, depth });
  };
  walk(root, 0);
  return rows;
}

const INDEX_BITS = 2 ** 21;

/**
 * Sorted file indexes. Numbers sort as one Float64Array of value·2²¹+index
 * (native numeric sort, no comparator calls: 50,000 files in a few ms, and
 * ties keep the diff's order); text sorts with the comparator.
 */
export function sortIndexes(
  files: readonly FileSummary[],
  indexes: readonly number[],
  sort: Sort,
  compare: (a: number, b: number) => number,
): number[] {
  const k = sort.key;
  if ((k === 'additions' || k === 'deletions' || k === 'hunks') && files.length < INDEX_BITS) {
    const packed = new Float64Array(indexes.length);
    let ok = true;
    for (let j = 0; j < indexes.length; j++) {
      const i = indexes[j]!;
      const v = files[i]![k];
      if (v < 0 || v >= 2 ** 31) ok = false;
      // Descending: the complement of the value, so the index still ascends within a tie.
      packed[j] = (sort.dir === 1 ? v : 2 ** 31 - 1 - v) * INDEX_BITS + i;
    }
    if (ok) {
      packed.sort();
      return Array.from(packed, (x) => x % INDEX_BITS);
    }
  }
  return [...indexes].sort(compare);
}

/** The files of the flat list view, in order. */
export function listOrder(files: readonly FileSummary[], shown: readonly number[], sort: Sort): readonly number[] {
  return sort.key === 'index' ? shown : sortIndexes(files, shown, sort, fileComparator(files, sort));
}

/** The rows of the flat list view. */
export function listRows(files: readonly FileSummary[], shown: readonly number[], sort: Sort): Row[] {
  return listOrder(files, shown, sort).map((index) => ({ kind: 'file', index, depth: 0 }));
}
