/**
 * A pure-JavaScript unified diff summarizer: the benchmark's baseline.
 * The page never uses its parser to answer a user; `npm run bench` loads it
 * into the same page as the WASI tool and times both on the same diffs.
 * The page does use summarySentence, to write the tool's sentence in the
 * other language (and with grouped numbers) without running the tool again.
 *
 * It follows the diff-summary tool's contract (same fields, same summary
 * sentence) and its reading rules, so the two do the same work:
 * hunks end by their @@ line counts, never by what a line looks like;
 * names come from rename/copy lines, then ---/+++, then `diff --git`;
 * git's C-quoted names are decoded; binary sections count 0/0; a
 * symlink <-> file type change (a deleted then a new section for one path)
 * is one modified file. test/web-units.test.ts checks it against the tool
 * on real git output.
 */
import { summarySentence } from './sentence.js';
import type { DiffProblem, DiffSummary, FileStatus, FileSummary, Language, ProblemKind } from './summary.js';

const MAX_PARENTS = 16;

interface Section {
  isGit: boolean;
  /** 1 for ordinary diffs, 2+ for combined (`diff --cc`), 0 = not known yet. */
  parents: number;
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
  isBinary: boolean;
  oldMode: string;
  newMode: string;
  deletedMode: string;
  createdMode: string;
  additions: number;
  deletions: number;
  hunks: number;
  oldLeft: number[];
  newLeft: number;
  /** A line in no hunk was read since the last complete hunk / a problem was already reported for it. */
  stray: boolean;
  skipping: boolean;
}

/** As the tool keeps them: messages are written at the end, in the summary's language. */
interface RawProblem {
  path: string;
  line: number;
  kind: ProblemKind;
  oldMissing: number;
  newMissing: number;
}

const MAX_PROBLEMS = 100;

const section = (isGit: boolean, parents: number): Section => ({
  isGit,
  parents,
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
  isBinary: false,
  oldMode: '',
  newMode: '',
  deletedMode: '',
  createdMode: '',
  additions: 0,
  deletions: 0,
  hunks: 0,
  oldLeft: [],
  newLeft: 0,
  stray: false,
  skipping: false,
});

const IN_NONE = 0;
const IN_HEADER = 1;
const IN_BODY = 2;
const IN_HUNK = 3;
const IN_BINARY = 4;

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();
const ESCAPES: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11 };

/** Decodes a git C-quoted name that starts at `s[0] === '"'`: [name, characters used], or null if unterminated. */
function unquote(s: string): [string, number] | null {
  const bytes: number[] = [];
  for (let i = 1; i < s.length; i++) {
    const c = s[i]!;
    if (c === '"') return [utf8Decoder.decode(new Uint8Array(bytes)), i + 1];
    if (c !== '\\') {
      for (const b of utf8.encode(c)) bytes.push(b);
      continue;
    }
    if (++i >= s.length) break;
    const e = s[i]!;
    if (e >= '0' && e <= '7') {
      let v = 0;
      let k = 0;
      while (k < 3 && i < s.length && s[i]! >= '0' && s[i]! <= '7') (v = v * 8 + (s.charCodeAt(i++) - 48)), k++;
      i--;
      bytes.push(v & 0xff);
    } else {
      bytes.push(ESCAPES[e] ?? e.charCodeAt(0));
    }
  }
  return null;
}

/** A name on a header line: quoted, or raw up to the first tab. */
function parseName(v: string): string {
  if (v.startsWith('"')) {
    const q = unquote(v);
    if (q) return q[0];
  }
  const tab = v.indexOf('\t');
  return tab < 0 ? v : v.slice(0, tab);
}

/** Drops git's a/ and b/ when the pair uses them (or /dev/null). */
function stripPair(a: string | null, b: string | null): [string | null, string | null] {
  const aOk = a === null || a === '/dev/null' || a.startsWith('a/');
  const bOk = b === null || b === '/dev/null' || b.startsWith('b/');
  if (!aOk || !bOk) return [a, b];
  return [a?.startsWith('a/') ? a.slice(2) : a, b?.startsWith('b/') ? b.slice(2) : b];
}

/** Splits "X<sep>Y" when X and Y name the same path (after a/ b/). */
function splitSame(v: string, sep: string): [string, string] | null {
  if (v.length < sep.length || (v.length - sep.length) % 2) return null;
  const k = (v.length - sep.length) / 2;
  if (v.slice(k, k + sep.length) !== sep) return null;
  const [x, y] = stripPair(v.slice(0, k), v.slice(k + sep.length));
  return x === y ? [x!, y!] : null;
}

function parseGitNames(f: Section, v: string): void {
  let a: string | null = null;
  let b: string | null = null;
  if (v.startsWith('"')) {
    const q = unquote(v);
    if (q && v[q[1]] === ' ') [a, b] = [q[0], parseName(v.slice(q[1] + 1))];
  } else if (v.endsWith('"')) {
    for (let i = 0; i + 1 < v.length && b === null; i++) {
      if (v[i] !== ' ' || v[i + 1] !== '"') continue;
      const q = unquote(v.slice(i + 1));
      if (q && q[1] === v.length - i - 1) [a, b] = [v.slice(0, i), q[0]];
    }
  }
  if (a !== null && b !== null) {
    [a, b] = stripPair(a, b);
  } else {
    const same = splitSame(v, ' ');
    if (same) [a, b] = same;
    else {
      const sp = v.indexOf(' b/');
      [a, b] = stripPair(sp >= 0 ? v.slice(0, sp) : v, sp >= 0 ? v.slice(sp + 1) : v);
    }
  }
  f.gitA = a;
  f.gitB = b;
}

const octalPrefix = (v: string) => /^[0-7]{0,7}/.exec(v)![0];

function gitHeaderLine(f: Section, h: string): number | null {
  if (h.startsWith('old mode ')) f.oldMode = octalPrefix(h.slice(9));
  else if (h.startsWith('new mode ')) f.newMode = octalPrefix(h.slice(9));
  else if (h.startsWith('deleted file mode ')) (f.isDeleted = true), (f.deletedMode = octalPrefix(h.slice(18)));
  else if (h.startsWith('new file mode ')) (f.isNew = true), (f.createdMode = octalPrefix(h.slice(14)));
  else if (h.startsWith('rename from ')) (f.from = parseName(h.slice(12))), (f.isRename = true);
  else if (h.startsWith('rename to ')) (f.to = parseName(h.slice(10))), (f.isRename = true);
  else if (h.startsWith('copy from ')) (f.from = parseName(h.slice(10))), (f.isCopy = true);
  else if (h.startsWith('copy to ')) (f.to = parseName(h.slice(8))), (f.isCopy = true);
  else if (h.startsWith('Binary files ')) f.isBinary = true;
  else if (h.startsWith('GIT binary patch')) {
    f.isBinary = true;
    return IN_BINARY;
  }
  return null;
}

const HUNK_RE = new Map<number, RegExp>();

/** Reads "@@ -a,b +c,d @@" (or a combined header with N+1 '@'s); false if malformed. */
function parseHunkHeader(h: string, f: Section): boolean {
  let at = 0;
  while (h[at] === '@') at++;
  const parents = at - 1;
  if (parents < 1 || parents > MAX_PARENTS || (f.parents && f.parents !== parents)) return false;
  let re = HUNK_RE.get(parents);
  if (!re)
    HUNK_RE.set(parents, (re = new RegExp(`^@{${at}}((?: -\\d{1,18}(?:,\\d{1,18})?){${parents}}) \\+\\d{1,18}(?:,(\\d{1,18}))? @{${at}}`)));
  const m = re.exec(h);
  if (!m) return false;
  f.oldLeft = m[1]!
    .trim()
    .split(' ')
    .map((r) => (r.includes(',') ? Number(r.slice(r.indexOf(',') + 1)) : 1));
  f.newLeft = m[2] === undefined ? 1 : Number(m[2]);
  f.parents = parents;
  return true;
}

const hunkDone = (f: Section) => f.newLeft === 0 && f.oldLeft.every((n) => n === 0);

/** Accounts one line of the open hunk; false when it cannot belong to it. */
function hunkLine(f: Section, l: string): boolean {
  const c0 = l.charCodeAt(0);
  if (c0 === 92 /* \ */) return true;
  if (f.parents === 1) {
    const c = l.length && l !== '\r' ? c0 : 32;
    if (c === 32) {
      if (!f.oldLeft[0] || !f.newLeft) return false;
      f.oldLeft[0]--, f.newLeft--;
      return true;
    }
    if (c === 45 /* - */) {
      if (!f.oldLeft[0]) return false;
      f.oldLeft[0]--, f.deletions++;
      return true;
    }
    if (c === 43 /* + */) {
      if (!f.newLeft) return false;
      f.newLeft--, f.additions++;
      return true;
    }
    return false;
  }
  const P = f.parents;
  let inResult = true;
  const cols: string[] = [];
  for (let p = 0; p < P; p++) {
    if (l.length && p >= l.length) return false;
    const c = p < l.length ? l[p]! : ' ';
    if (c !== ' ' && c !== '+' && c !== '-') return false;
    if (c === '-') inResult = false;
    cols.push(c);
  }
  if (inResult && !f.newLeft) return false;
  for (let p = 0; p < P; p++) if (cols[p] !== '+' && !f.oldLeft[p]) return false;
  if (inResult) f.newLeft--;
  for (let p = 0; p < P; p++) if (cols[p] !== '+') f.oldLeft[p]!--;
  if (cols[0] === '+') f.additions++;
  else if (cols[0] === '-') f.deletions++;
  return true;
}

const isHeaderLine = (h: string) => h.startsWith('diff ') || h.startsWith('--- ') || (h.length > 2 && h.startsWith('@@'));

/** Parses a unified diff into per-file entries and problems (no sentences). Never throws: damage is a problem. */
export function parseDiff(text: string): { files: FileSummary[]; orphanHunks: number; problems: RawProblem[] } {
  const files: FileSummary[] = [];
  const problems: RawProblem[] = [];
  let unnamed = 0; // problems from here on belong to the open section
  let orphanHunks = 0;
  let lastDelete: string | null = null; // mode of the last pushed git "deleted file" section
  let f: Section | null = null;
  let state = IN_NONE;

  const problem = (sec: Section, line: number, kind: ProblemKind) => {
    if (problems.length === MAX_PROBLEMS) return;
    const counts = kind === 'truncated' || kind === 'short_hunk' || kind === 'bad_line';
    problems.push({ path: '', line, kind, oldMissing: counts ? (sec.oldLeft[0] ?? 0) : 0, newMissing: counts ? sec.newLeft : 0 });
  };

  const finish = () => {
    if (!f) return;
    if (f.minus === '/dev/null') f.isNew = true;
    if (f.plus === '/dev/null') f.isDeleted = true;
    const oldName = f.from ?? (f.minus !== null && f.minus !== '/dev/null' ? f.minus : f.gitA);
    const newName = f.to ?? (f.plus !== null && f.plus !== '/dev/null' ? f.plus : f.gitB);
    const path = (f.isDeleted ? (oldName ?? newName) : (newName ?? oldName)) ?? '';
    const status: FileStatus = f.isBinary
      ? 'binary'
      : f.isCopy
        ? 'copied'
        : f.isRename
          ? 'renamed'
          : f.isNew
            ? 'added'
            : f.isDeleted
              ? 'deleted'
              : 'modified';
    const d: FileSummary = { path, status, additions: 0, deletions: 0, hunks: 0, binary: f.isBinary };
    if ((f.isRename || f.isCopy) && oldName !== null) d.old_path = oldName;
    if (!f.isBinary) (d.additions = f.additions), (d.deletions = f.deletions), (d.hunks = f.hunks);
    if (f.oldMode && f.newMode && f.oldMode !== f.newMode) (d.old_mode = f.oldMode), (d.new_mode = f.newMode);
    const prev = files[files.length - 1];
    for (; unnamed < problems.length; unnamed++) problems[unnamed]!.path = d.path;
    if (lastDelete !== null && f.isGit && f.isNew && !f.isRename && !f.isCopy && prev && prev.path === d.path) {
      prev.binary ||= d.binary;
      prev.status = prev.binary ? 'binary' : 'modified';
      prev.additions = prev.binary ? 0 : prev.additions + d.additions;
      prev.deletions = prev.binary ? 0 : prev.deletions;
      prev.hunks = prev.binary ? 0 : prev.hunks + d.hunks;
      prev.old_mode = lastDelete;
      prev.new_mode = f.createdMode;
      lastDelete = null;
    } else {
      files.push(orderFields(d));
      lastDelete = f.isGit && f.isDeleted && f.deletedMode ? f.deletedMode : null;
    }
    f = null;
  };

  let pos = 0;
  let lineno = 0;
  const len = text.length;
  while (pos < len) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0) nl = len;
    const line = text.slice(pos, nl);
    let next = nl + 1;
    lineno++;

    if (state === IN_HUNK) {
      if (hunkLine(f!, line)) {
        if (hunkDone(f!)) state = IN_BODY;
        pos = next;
        continue;
      }
      problem(f!, lineno, isHeaderLine(line.endsWith('\r') ? line.slice(0, -1) : line) ? 'short_hunk' : 'bad_line');
      f!.skipping = true;
      state = IN_BODY;
    }
    const h = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (state === IN_BINARY && !h.startsWith('diff ')) {
      pos = next;
      continue;
    }
    if (h.startsWith('diff --git ')) {
      finish();
      f = section(true, 1);
      parseGitNames(f, h.slice(11));
      state = IN_HEADER;
    } else if (h.startsWith('diff --cc ') || h.startsWith('diff --combined ')) {
      finish();
      f = section(true, 0);
      f.gitA = f.gitB = parseName(h.slice(h.startsWith('diff --cc ') ? 10 : 16));
      state = IN_HEADER;
    } else if (h.length > 2 && h[0] === '@' && h[1] === '@' && (h[2] === ' ' || h[2] === '@')) {
      if (!f || state === IN_NONE) orphanHunks++;
      else {
        if (f.stray && !f.skipping) problem(f, lineno, 'extra_lines');
        if (!parseHunkHeader(h, f)) {
          problem(f, lineno, 'bad_hunk_header');
          f.skipping = true;
          state = IN_BODY;
        } else {
          f.hunks++;
          f.stray = f.skipping = false;
          state = hunkDone(f) ? IN_BODY : IN_HUNK;
        }
      }
    } else if (h.startsWith('--- ') && text.startsWith('+++ ', next)) {
      let nl2 = text.indexOf('\n', next);
      if (nl2 < 0) nl2 = len;
      let h2 = text.slice(next, nl2);
      if (h2.endsWith('\r')) h2 = h2.slice(0, -1);
      if (!(f && f.isGit && state === IN_HEADER && !f.seenNames)) {
        finish();
        f = section(false, 1);
      }
      [f.minus, f.plus] = stripPair(parseName(h.slice(4)), parseName(h2.slice(4)));
      f.seenNames = true;
      state = IN_BODY;
      lineno++;
      next = nl2 + 1;
    } else if (state === IN_HEADER) {
      state = gitHeaderLine(f!, h) ?? state;
    } else if (h.startsWith('Binary files ') && h.endsWith(' differ') && h.length >= 20) {
      finish();
      const v = h.slice(13, -7);
      let pair = splitSame(v, ' and ');
      if (!pair) {
        const and = v.startsWith('/dev/null and ') ? 9 : v.endsWith(' and /dev/null') ? v.length - 14 : v.indexOf(' and ');
        const k = and < 0 ? v.length : and;
        pair = stripPair(v.slice(0, k), k < v.length ? v.slice(k + 5) : '') as [string, string];
      }
      f = section(false, 1);
      [f.minus, f.plus] = pair;
      f.isBinary = true;
      state = IN_NONE;
      finish();
    } else if (state === IN_BODY && f && f.hunks && h[0] !== '\\') {
      f.stray = true;
    }
    pos = next;
  }
  if (state === IN_HUNK) problem(f!, text.endsWith('\n') ? lineno + 1 : lineno, 'truncated');
  finish();
  return { files, orphanHunks, problems };
}

/** Key order as the tool writes it, so JSON of both compares equal. */
function orderFields(d: FileSummary): FileSummary {
  const o: FileSummary = { path: d.path } as FileSummary;
  if (d.old_path !== undefined) o.old_path = d.old_path;
  Object.assign(o, { status: d.status, additions: d.additions, deletions: d.deletions, hunks: d.hunks, binary: d.binary });
  if (d.old_mode !== undefined) Object.assign(o, { old_mode: d.old_mode, new_mode: d.new_mode });
  return o;
}

function problemMessage(p: RawProblem, language: Language): string {
  const [o, n] = [p.oldMissing, p.newMissing];
  const zh = language === 'zh';
  switch (p.kind) {
    case 'truncated':
      return zh
        ? `差异在变更块中途结束：缺少 ${o} 行旧内容和 ${n} 行新内容`
        : `the diff ends inside a hunk: ${o} old and ${n} new lines are missing`;
    case 'short_hunk':
      return zh ? `变更块提前结束：缺少 ${o} 行旧内容和 ${n} 行新内容` : `the hunk ends early: ${o} old and ${n} new lines are missing`;
    case 'bad_line':
      return zh
        ? `变更块中有一行不是变更内容（应以空格、-、+ 或 \\ 开头）；仍缺少 ${o} 行旧内容和 ${n} 行新内容`
        : `a line inside a hunk that is not hunk content (a space, -, + or \\ first); ${o} old and ${n} new lines were still expected`;
    case 'bad_hunk_header':
      return zh ? '无法解析的变更块头（@@ 行），其中的行未计入' : 'a hunk header (@@ line) that does not parse; its lines are not counted';
    default:
      return zh
        ? '变更块头之前有不属于任何变更块的行：上一个变更块的行数比其头部所写的多'
        : 'a hunk header after lines that are in no hunk: the previous hunk has more lines than its header says';
  }
}

/** The whole tool answer: files, totals and the summary sentence; throws Error(message) where the tool reports an error. */
export function summarizeDiff(diff: string, language: Language = 'en'): DiffSummary {
  const { files, orphanHunks, problems } = parseDiff(diff);
  if (files.length === 0 && diff.trim() !== '') {
    throw new Error(
      orphanHunks
        ? "the input is not a unified diff: it has @@ hunk headers but no file headers ('diff --git' or '---'/'+++' lines)"
        : "the input is not a unified diff: no 'diff --git' or '---'/'+++' file headers found",
    );
  }
  const totals = { files: files.length, additions: 0, deletions: 0, hunks: 0 };
  for (const f of files) {
    totals.additions += f.additions;
    totals.deletions += f.deletions;
    totals.hunks += f.hunks;
  }
  const summary = summarySentence(files, totals, language);
  if (!problems.length) return { files, totals, summary };
  const listed: DiffProblem[] = problems.map((p) => ({ path: p.path, line: p.line, kind: p.kind, message: problemMessage(p, language) }));
  // Key order as the tool writes it.
  return { files, problems: listed, totals, summary };
}
