/**
 * Splits a diff's text into one section per file, so the page can show a
 * file's own hunks when it is clicked. It reads files where the
 * diff-summary tool does (wasm-tools/diff-summary): `diff --git`,
 * `diff --cc`/`--combined`, a `---` line followed by `+++` (plain
 * `diff -u`), `Binary files … differ`; a hunk ends by its @@ line counts,
 * never by what a line looks like (so a removed line "-- x" followed by an
 * added "++ y" stays inside its hunk). Names are read as the tool reads them
 * (git's C-quoted names decoded, a/ b/ dropped) so sections can be matched
 * to the tool's files by path, not only by position.
 *
 * Only offsets are kept (no copies of the text): a 50 MB diff costs a few
 * numbers per hunk. `scanSections` yields every few thousand lines so the
 * page can run it in time slices.
 */

export interface Hunk {
  /** Offset of the `@@` line. */
  start: number;
  /** Offset just past the hunk's last line (its newline included). */
  end: number;
}

export interface FileSection {
  /** The file's name as the tool reports it: the old name for a deletion, else the new one. */
  path: string;
  /** The old name of a rename or copy. */
  oldPath?: string;
  /** Offset of the section's first line and just past its last line of its own (trailing mail text excluded). */
  start: number;
  end: number;
  hunks: Hunk[];
  binary: boolean;
  /** What the matching to the tool's files needs to know (a type change is a deleted then a new git section). */
  git: boolean;
  isNew: boolean;
  isDeleted: boolean;
  isRename: boolean;
  isCopy: boolean;
}

interface Open {
  start: number;
  end: number;
  git: boolean;
  gitA: string | null;
  gitB: string | null;
  minus: string | null;
  plus: string | null;
  from: string | null;
  to: string | null;
  seenNames: boolean;
  isNew: boolean;
  isDeleted: boolean;
  isRename: boolean;
  isCopy: boolean;
  binary: boolean;
  /** Parents of a combined diff (0 until the first hunk says). */
  parents: number;
  hunks: Hunk[];
  oldLeft: number[];
  newLeft: number;
}

const HEADER = 1;
const BODY = 2;
const IN_HUNK = 3;
const BINARY_PATCH = 4;
const NONE = 0;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const C_ESCAPES: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11 };

/** Reads a git C-quoted name at `s[0] === '"'`: [name, length used], or null when it never closes. */
export function readQuoted(s: string): [string, number] | null {
  const bytes: number[] = [];
  for (let i = 1; i < s.length; i++) {
    const c = s[i]!;
    if (c === '"') return [decoder.decode(new Uint8Array(bytes)), i + 1];
    if (c !== '\\') {
      for (const b of encoder.encode(c)) bytes.push(b);
      continue;
    }
    i++;
    if (i >= s.length) return null;
    const e = s[i]!;
    if (e >= '0' && e <= '7') {
      // Up to three octal digits: one byte of a UTF-8 sequence.
      let v = 0;
      let n = 0;
      while (n < 3 && i < s.length && s[i]! >= '0' && s[i]! <= '7') {
        v = v * 8 + s.charCodeAt(i) - 48;
        i++;
        n++;
      }
      i--;
      bytes.push(v & 0xff);
    } else bytes.push(C_ESCAPES[e] ?? e.charCodeAt(0));
  }
  return null;
}

/** A name on a `---`/`+++`/`rename from` line: quoted, or up to the first tab (diff -u puts a date there). */
function headerName(v: string): string {
  if (v.startsWith('"')) {
    const q = readQuoted(v);
    if (q) return q[0];
  }
  const tab = v.indexOf('\t');
  return tab < 0 ? v : v.slice(0, tab);
}

/** Drops a/ and b/ when both names of the pair have them (or are /dev/null). */
function dropPrefixes(a: string | null, b: string | null): [string | null, string | null] {
  const okA = a === null || a === '/dev/null' || a.startsWith('a/');
  const okB = b === null || b === '/dev/null' || b.startsWith('b/');
  if (!okA || !okB) return [a, b];
  return [a?.startsWith('a/') ? a.slice(2) : a, b?.startsWith('b/') ? b.slice(2) : b];
}

/** "X<sep>Y" where X and Y are one name (after a/ b/): the only safe split of an unquoted name with spaces. */
function splitEqual(v: string, sep: string): [string, string] | null {
  const rest = v.length - sep.length;
  if (rest < 0 || rest % 2) return null;
  const k = rest / 2;
  if (v.slice(k, k + sep.length) !== sep) return null;
  const [a, b] = dropPrefixes(v.slice(0, k), v.slice(k + sep.length));
  return a === b ? [a!, b!] : null;
}

/** The two names of a `diff --git` line (after its prefix). */
function gitNames(v: string): [string | null, string | null] {
  if (v.startsWith('"')) {
    const q = readQuoted(v);
    if (q && v[q[1]] === ' ') return dropPrefixes(q[0], headerName(v.slice(q[1] + 1)));
  } else if (v.endsWith('"')) {
    for (let i = 0; i + 1 < v.length; i++) {
      if (v[i] !== ' ' || v[i + 1] !== '"') continue;
      const q = readQuoted(v.slice(i + 1));
      if (q && q[1] === v.length - i - 1) return dropPrefixes(v.slice(0, i), q[0]);
    }
  }
  const same = splitEqual(v, ' ');
  if (same) return same;
  const sp = v.indexOf(' b/');
  return dropPrefixes(sp >= 0 ? v.slice(0, sp) : v, sp >= 0 ? v.slice(sp + 1) : v);
}

function open(start: number, git: boolean): Open {
  return {
    start,
    end: start,
    git,
    gitA: null,
    gitB: null,
    minus: null,
    plus: null,
    from: null,
    to: null,
    seenNames: false,
    isNew: false,
    isDeleted: false,
    isRename: false,
    isCopy: false,
    binary: false,
    parents: 1,
    hunks: [],
    oldLeft: [],
    newLeft: 0,
  };
}

function close(f: Open): FileSection {
  if (f.minus === '/dev/null') f.isNew = true;
  if (f.plus === '/dev/null') f.isDeleted = true;
  const oldName = f.from ?? (f.minus !== null && f.minus !== '/dev/null' ? f.minus : f.gitA);
  const newName = f.to ?? (f.plus !== null && f.plus !== '/dev/null' ? f.plus : f.gitB);
  const path = (f.isDeleted ? (oldName ?? newName) : (newName ?? oldName)) ?? '';
  const s: FileSection = {
    path,
    start: f.start,
    end: f.end,
    hunks: f.hunks,
    binary: f.binary,
    git: f.git,
    isNew: f.isNew,
    isDeleted: f.isDeleted,
    isRename: f.isRename,
    isCopy: f.isCopy,
  };
  if ((f.isRename || f.isCopy) && oldName !== null) s.oldPath = oldName;
  return s;
}

/** "@@ -a,b +c,d @@" or a combined header ("@@@ -a,b -c,d +e,f @@@"): the line counts, or null. */
function hunkCounts(line: string, parents: number): { old: number[]; new: number; parents: number } | null {
  let at = 0;
  while (line[at] === '@') at++;
  const p = at - 1;
  if (p < 1 || p > 16 || (parents !== 0 && p !== parents)) return null;
  const fence = '@'.repeat(at);
  const close = line.indexOf(` ${fence}`, at);
  if (close < 0) return null;
  const ranges = line.slice(at + 1, close).split(' ');
  if (ranges.length !== p + 1) return null;
  const count = (r: string, sign: string): number | null => {
    const m = /^([-+])\d{1,18}(?:,(\d{1,18}))?$/.exec(r);
    if (!m || m[1] !== sign) return null;
    return m[2] === undefined ? 1 : Number(m[2]);
  };
  const old: number[] = [];
  for (let i = 0; i < p; i++) {
    const c = count(ranges[i]!, '-');
    if (c === null) return null;
    old.push(c);
  }
  const n = count(ranges[p]!, '+');
  return n === null ? null : { old, new: n, parents: p };
}

/** Takes one line into the open hunk if its counts allow it; false when the line is not the hunk's. */
function takeHunkLine(f: Open, line: string): boolean {
  if (line.charCodeAt(0) === 92 /* \ No newline at end of file */) return true;
  const P = f.parents;
  // An empty line (or a lone CR) is an unchanged line whose space was lost (some mailers strip it).
  const cols = line.length === 0 || line === '\r' ? ' '.repeat(P) : line.slice(0, P);
  if (cols.length < P) return false;
  let inResult = true;
  for (let p = 0; p < P; p++) {
    const c = cols[p];
    if (c !== ' ' && c !== '+' && c !== '-') return false;
    if (c === '-') inResult = false;
    if (c !== '+' && !f.oldLeft[p]) return false;
  }
  if (inResult && f.newLeft === 0) return false;
  if (inResult) f.newLeft--;
  for (let p = 0; p < P; p++) if (cols[p] !== '+') f.oldLeft[p]!--;
  return true;
}

const hunkDone = (f: Open) => f.newLeft === 0 && f.oldLeft.every((n) => n === 0);

/** How many lines `scanSections` reads between two yields. */
export const LINES_PER_STEP = 2_000;

/**
 * The sections of `text`, in order. A generator that yields (nothing) every
 * LINES_PER_STEP lines so a caller can spread a large diff over several
 * tasks; `splitSections` runs it at once.
 */
export function* scanSections(text: string): Generator<void, FileSection[], void> {
  const out: FileSection[] = [];
  let f: Open | null = null;
  let state = NONE;
  const finish = () => {
    if (f) out.push(close(f));
    f = null;
  };
  const len = text.length;
  let pos = 0;
  let lines = 0;
  while (pos < len) {
    if (++lines % LINES_PER_STEP === 0) yield;
    let nl = text.indexOf('\n', pos);
    if (nl < 0) nl = len;
    const line = text.slice(pos, nl);
    const next = Math.min(nl + 1, len);
    if (state === IN_HUNK) {
      if (takeHunkLine(f!, line)) {
        const hunk = f!.hunks[f!.hunks.length - 1]!;
        hunk.end = f!.end = next;
        if (hunkDone(f!)) state = BODY;
        pos = next;
        continue;
      }
      state = BODY;
    }
    const h = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (state === BINARY_PATCH && !h.startsWith('diff ')) {
      f!.end = next;
      pos = next;
      continue;
    }
    if (h.startsWith('diff --git ')) {
      finish();
      f = open(pos, true);
      [f.gitA, f.gitB] = gitNames(h.slice(11));
      f.end = next;
      state = HEADER;
    } else if (h.startsWith('diff --cc ') || h.startsWith('diff --combined ')) {
      finish();
      f = open(pos, true);
      f.parents = 0;
      f.gitA = f.gitB = headerName(h.slice(h.startsWith('diff --cc ') ? 10 : 16));
      f.end = next;
      state = HEADER;
    } else if (h.length > 2 && h[0] === '@' && h[1] === '@' && (h[2] === ' ' || h[2] === '@')) {
      // A hunk header outside any file (state NONE) belongs to no section.
      if (f && state !== NONE) {
        const counts = hunkCounts(h, f.parents);
        if (counts) {
          f.parents = counts.parents;
          f.oldLeft = counts.old;
          f.newLeft = counts.new;
          f.hunks.push({ start: pos, end: next });
          f.end = next;
          state = hunkDone(f) ? BODY : IN_HUNK;
        }
      }
    } else if (h.startsWith('--- ') && text.startsWith('+++ ', next)) {
      let nl2 = text.indexOf('\n', next);
      if (nl2 < 0) nl2 = len;
      const plusLine = text.slice(next, nl2).replace(/\r$/, '');
      if (!(f && f.git && state === HEADER && !f.seenNames)) {
        finish();
        f = open(pos, false);
      }
      [f.minus, f.plus] = dropPrefixes(headerName(h.slice(4)), headerName(plusLine.slice(4)));
      f.seenNames = true;
      f.end = Math.min(nl2 + 1, len);
      state = BODY;
      pos = f.end;
      continue;
    } else if (state === HEADER) {
      f!.end = next;
      state = headerLine(f!, h) ?? state;
    } else if (h.startsWith('Binary files ') && h.endsWith(' differ') && h.length >= 20) {
      // `diff -r` between folders: a binary file outside any git header.
      finish();
      const v = h.slice(13, -7);
      let pair: [string | null, string | null] | null = splitEqual(v, ' and ');
      if (!pair) {
        const and = v.startsWith('/dev/null and ') ? 9 : v.endsWith(' and /dev/null') ? v.length - 14 : v.indexOf(' and ');
        const k = and < 0 ? v.length : and;
        pair = dropPrefixes(v.slice(0, k), k < v.length ? v.slice(k + 5) : '');
      }
      f = open(pos, false);
      [f.minus, f.plus] = pair;
      f.binary = true;
      f.end = next;
      finish();
      state = NONE;
    }
    pos = next;
  }
  finish();
  return out;
}

function headerLine(f: Open, h: string): number | null {
  if (h.startsWith('deleted file mode ')) f.isDeleted = true;
  else if (h.startsWith('new file mode ')) f.isNew = true;
  else if (h.startsWith('rename from ')) (f.from = headerName(h.slice(12))), (f.isRename = true);
  else if (h.startsWith('rename to ')) (f.to = headerName(h.slice(10))), (f.isRename = true);
  else if (h.startsWith('copy from ')) (f.from = headerName(h.slice(10))), (f.isCopy = true);
  else if (h.startsWith('copy to ')) (f.to = headerName(h.slice(8))), (f.isCopy = true);
  else if (h.startsWith('Binary files ')) f.binary = true;
  else if (h.startsWith('GIT binary patch')) {
    f.binary = true;
    return BINARY_PATCH;
  }
  return null;
}

/** All sections at once. */
export function splitSections(text: string): FileSection[] {
  const it = scanSections(text);
  for (;;) {
    const r = it.next();
    if (r.done) return r.value;
  }
}

/**
 * Runs the scan in slices of about `sliceMs` (default 8 ms), giving the
 * event loop back in between, so a 50 MB diff never blocks the page.
 */
export async function splitSectionsSliced(text: string, sliceMs = 8): Promise<FileSection[]> {
  const it = scanSections(text);
  let t0 = performance.now();
  for (;;) {
    const r = it.next();
    if (r.done) return r.value;
    if (performance.now() - t0 > sliceMs) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      t0 = performance.now();
    }
  }
}

/**
 * The section(s) of each of the tool's files, in the tool's order; null
 * where none matches (the page then says so rather than showing another
 * file's lines). A symlink <-> file type change is one file for the tool
 * and two git sections (deleted, then new, same path): both are kept.
 */
export function matchSections(files: ReadonlyArray<{ path: string }>, sections: readonly FileSection[]): Array<FileSection[] | null> {
  const groups: FileSection[][] = [];
  for (const s of sections) {
    const prev = groups[groups.length - 1];
    const last = prev?.[prev.length - 1];
    if (
      prev &&
      last &&
      prev.length === 1 &&
      last.git &&
      last.isDeleted &&
      s.git &&
      s.isNew &&
      !s.isRename &&
      !s.isCopy &&
      last.path === s.path
    )
      prev.push(s);
    else groups.push([s]);
  }
  // In order when the two lists agree (the usual case); by path otherwise
  // (that map is only built when a position disagrees).
  let byPath: Map<string, FileSection[][]> | null = null;
  const used = new Set<FileSection[]>();
  return files.map((file, i) => {
    const g = groups[i];
    if (g && g[0]!.path === file.path && !used.has(g)) {
      used.add(g);
      return g;
    }
    if (!byPath) {
      byPath = new Map();
      for (const c of groups) {
        const list = byPath.get(c[0]!.path);
        if (list) list.push(c);
        else byPath.set(c[0]!.path, [c]);
      }
    }
    const other = byPath.get(file.path)?.find((c) => !used.has(c));
    if (!other) return null;
    used.add(other);
    return other;
  });
}

/** A file's own hunks: the text they are in, and their offsets into it. */
export interface FileHunks {
  text: string;
  hunks: Hunk[];
}

/** A file's hunks, or why there are none to show ('gone': the text is no longer kept). */
export type FileHunksReply = FileHunks | 'not-found' | 'no-hunks' | 'gone';

/**
 * Where a shown summary's diff text is, for showing a file's hunks: in the
 * page (localDiffText), or kept by the runtime's worker (a large diff never
 * crosses to the page whole; runtime.ts).
 */
export interface DiffText {
  /** The hunks of `files[index]` (the tool's files of this diff). */
  fileHunks(files: ReadonlyArray<{ path: string }>, index: number): Promise<FileHunksReply>;
}

/** The hunks of a matched group, cut out of the text with offsets into the cut. */
export function cutHunks(text: string, group: readonly FileSection[] | null | undefined): FileHunksReply {
  if (!group) return 'not-found';
  const hunks = group.flatMap((section) => section.hunks);
  if (hunks.length === 0) return 'no-hunks';
  // A loop, not Math.min(...): a file can have more hunks than a call has room for arguments (~125,000).
  let base = Infinity;
  let end = 0;
  for (const hunk of hunks) (base = Math.min(base, hunk.start)), (end = Math.max(end, hunk.end));
  return { text: text.slice(base, end), hunks: hunks.map((hunk) => ({ start: hunk.start - base, end: hunk.end - base })) };
}

/** A diff text the page holds: split into sections in time slices, once per list of files. */
export function localDiffText(text: string): DiffText {
  const matched = new WeakMap<object, Promise<Array<FileSection[] | null>>>();
  return {
    async fileHunks(files, index) {
      let groups = matched.get(files);
      if (!groups) matched.set(files, (groups = splitSectionsSliced(text).then((sections) => matchSections(files, sections))));
      return cutHunks(text, (await groups)[index]);
    },
  };
}

export type LineKind = 'hunk' | 'add' | 'del' | 'ctx' | 'note';

/** The lines of some hunks, each with its kind (for colouring); CRs kept off. */
export function hunkLines(text: string, hunks: readonly Hunk[]): Array<{ kind: LineKind; text: string }> {
  const out: Array<{ kind: LineKind; text: string }> = [];
  for (const hunk of hunks) {
    const body = text.slice(hunk.start, hunk.end);
    const lines = body.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    lines.forEach((raw, i) => {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      // Coloured against the first parent, as the tool counts (a merge's combined diff has one column per parent).
      const c = line[0];
      const kind: LineKind = i === 0 ? 'hunk' : c === '\\' ? 'note' : c === '-' ? 'del' : c === '+' ? 'add' : 'ctx';
      out.push({ kind, text: line });
    });
  }
  return out;
}

/** How many parents the hunks of a section are against (2+ for a merge's combined diff). */
export function sectionParents(text: string, section: FileSection): number {
  const first = section.hunks[0];
  if (!first) return 1;
  let at = 0;
  while (text.charCodeAt(first.start + at) === 64) at++;
  return Math.max(1, at - 1);
}
