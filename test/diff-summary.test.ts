// diff-summary against real git: every scenario is committed to a temporary
// repository, diffed with `git diff -M`, and the tool's per-file answer is
// checked against git's own --numstat and --name-status for the same pair.
import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { runTool } from './helpers/corral.js';
import { diffTrees, TempRepo, type GitDiff, type Tree } from './helpers/gitdiff.js';

const TOOL_DIR = new URL('../wasm-tools/diff-summary/', import.meta.url);
const spec = JSON.parse(readFileSync(new URL('tool-spec.json', TOOL_DIR), 'utf8'));
const ajv = new Ajv({ strict: true, allErrors: true });
const validInput = ajv.compile(spec.input_schema);
const validOutput = ajv.compile(spec.output_schema);

interface ToolFile {
  path: string;
  old_path?: string;
  status: string;
  additions: number;
  deletions: number;
  hunks: number;
  binary: boolean;
  old_mode?: string;
  new_mode?: string;
}
interface ToolProblem {
  path: string;
  line: number;
  kind: string;
  message: string;
}
interface ToolOutput {
  files: ToolFile[];
  problems?: ToolProblem[];
  totals: { files: number; additions: number; deletions: number; hunks: number };
  summary: string;
}

const LETTER_STATUS: Record<string, string> = {
  A: 'added',
  D: 'deleted',
  M: 'modified',
  R: 'renamed',
  C: 'copied',
  T: 'modified', // type change, e.g. symlink -> file; old_mode/new_mode say which
};

/** "prefix 1\nprefix 2\n..." */
function numbered(n: number, prefix = 'line'): string {
  let s = '';
  for (let i = 1; i <= n; i++) s += `${prefix} ${i}\n`;
  return s;
}

/** Replaces 1-based line `at` of `text`. */
function editLine(text: string, at: number, replacement: string): string {
  const lines = text.split('\n');
  lines[at - 1] = replacement;
  return lines.join('\n');
}

function binaryBlob(seed: number, size = 512): Uint8Array {
  const b = new Uint8Array(size);
  let x = seed * 2654435761;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  b[7] = 0; // a NUL in the first 8000 bytes is what makes git call it binary
  return b;
}

async function summarize(diff: string, language?: 'en' | 'zh'): Promise<ToolOutput> {
  const r = await runTool('diff-summary', language ? { diff, language } : { diff });
  if (!r.ok) throw new Error(`diff-summary failed: ${JSON.stringify(r.error)}\n${r.stderr_tail}`);
  // Every answer must match the spec's output_schema.
  if (!validOutput(r.output)) throw new Error(`output_schema: ${ajv.errorsText(validOutput.errors)}`);
  return r.output as ToolOutput;
}

/**
 * The tool must agree with git on every file: same set of paths, status
 * from name-status (binary from numstat's "-"), additions/deletions from
 * numstat (binary counts as 0/0), old_path exactly for renames and copies.
 */
function expectAgreesWithGit(out: ToolOutput, git: GitDiff): void {
  expect(out.files.map((f) => f.path).sort()).toEqual(git.nameStatus.map((e) => e.path).sort());
  expect(git.numstat.length).toBe(git.nameStatus.length);
  const byPath = new Map(out.files.map((f) => [f.path, f]));
  for (const ns of git.nameStatus) {
    const num = git.numstat.find((n) => n.path === ns.path)!;
    const file = byPath.get(ns.path)!;
    const where = `${ns.status} ${ns.oldPath ? `${ns.oldPath} -> ` : ''}${ns.path}`;
    // A 100% rename or copy has no content section, so the diff text cannot
    // say the blob is binary; numstat looks at the blob and prints "-".
    const contentless = (ns.letter === 'R' || ns.letter === 'C') && ns.score === 100;
    if (num.binary && !contentless) {
      expect(file, where).toMatchObject({ status: 'binary', binary: true, additions: 0, deletions: 0, hunks: 0 });
    } else {
      expect(file, where).toMatchObject({
        status: LETTER_STATUS[ns.letter],
        binary: false,
        additions: num.additions ?? 0,
        deletions: num.deletions ?? 0,
      });
    }
    if (ns.oldPath !== undefined) expect(file.old_path, where).toBe(ns.oldPath);
    else expect(file.old_path, where).toBeUndefined();
  }
  const sum = (k: 'additions' | 'deletions') => out.files.reduce((s, f) => s + f[k], 0);
  expect(out.totals).toMatchObject({
    files: git.nameStatus.length,
    additions: sum('additions'),
    deletions: sum('deletions'),
    hunks: out.files.reduce((s, f) => s + f.hunks, 0),
  });
}

// ---- scenarios -----------------------------------------------------------

const app = numbered(40, 'const value');

const SCENARIOS: Record<string, { before: Tree; after: Tree }> = {
  'rename with edits': {
    before: { 'src/util.ts': app },
    after: { 'src/lib/util.ts': editLine(editLine(app, 3, 'const value = 3;'), 36, 'changed\nadded') },
  },
  'binary file': {
    before: { 'assets/logo.png': binaryBlob(1), 'assets/gone.bin': binaryBlob(2) },
    after: { 'assets/logo.png': binaryBlob(3), 'assets/new.bin': binaryBlob(4) },
  },
  added: {
    before: { 'README.md': '# hi\n' },
    after: { 'README.md': '# hi\n', 'docs/guide.md': 'one\ntwo\nthree\n', 'empty.txt': '' },
  },
  deleted: {
    before: { 'keep.txt': 'k\n', 'old/legacy.js': numbered(7), 'old/empty.txt': '' },
    after: { 'keep.txt': 'k\n' },
  },
  'mode change': {
    before: { 'run.sh': '#!/bin/sh\necho hi\n', 'tool.sh': '#!/bin/sh\necho a\n' },
    after: {
      'run.sh': { content: '#!/bin/sh\necho hi\n', executable: true },
      'tool.sh': { content: '#!/bin/sh\necho b\n', executable: true },
    },
  },
  'no trailing newline': {
    before: { 'a.txt': 'x\ny', 'b.txt': 'p\nq', 'c.txt': 'm\nn\n' },
    after: { 'a.txt': 'x\nz', 'b.txt': 'p\nq\n', 'c.txt': 'm\nn' },
  },
  CRLF: {
    before: { 'win.txt': 'a\r\nb\r\nc\r\n', 'mixed.txt': 'one\ntwo\n' },
    after: { 'win.txt': 'a\r\nB\r\nc\r\n\r\nd\r\n', 'mixed.txt': 'one\r\ntwo\n' },
  },
  'non-ASCII path': {
    before: { 'données/été.txt': 'bonjour\n', 'naïve.txt': numbered(12), 'über.txt': numbered(20, 'u') },
    after: {
      'données/été.txt': 'bonsoir\n',
      '日本語/ファイル.txt': editLine(numbered(12), 6, '六'),
      'plain name.txt': numbered(20, 'u') + 'more\n', // quoted old name, unquoted new one
    },
  },
  'path with spaces': {
    before: { 'my docs/read me.txt': 'a\nb\n', 'a b.sh': 'echo\n', 'x y.txt': numbered(5), 'c and d.txt': numbered(9) },
    after: {
      'my docs/read me.txt': 'a\nc\n',
      'a b.sh': { content: 'echo\n', executable: true },
      'x z.txt': numbered(5),
      'e and f.txt': numbered(9) + 'ten\n',
    },
  },
  // Removing "-- x" and adding "++ y" prints "--- x" then "+++ y" inside
  // the hunk: exactly a file header pair, which only the counts rule out.
  'content lines that look like headers': {
    before: { 'notes.md': 'intro\n-- x\nmiddle\n--- a\n+++ b\n@@ -1 +1 @@\ndiff --git a/x b/x\nkeep\n' },
    after: { 'notes.md': 'intro\n++ y\nmiddle\n++ added\n-- removed\n--- a\n@@ -9 +9 @@\nkeep\n' },
  },
  // git prints a "deleted file" and a "new file" section for one path.
  'type change': {
    before: { 'target.txt': 't\n', link: { symlink: 'target.txt' }, 'to-link.txt': 'x\n' },
    after: { 'target.txt': 't\n', link: 'now a file\nline 2\n', 'to-link.txt': { symlink: 'target.txt' } },
  },
  'pure rename': {
    before: { 'from/a.txt': numbered(3), 'blob.bin': binaryBlob(9) },
    after: { 'to/a.txt': numbered(3), 'moved.bin': binaryBlob(9) },
  },
};

function together(): { before: Tree; after: Tree } {
  const before: Tree = {};
  const after: Tree = {};
  for (const [name, s] of Object.entries(SCENARIOS)) {
    const dir = name.replace(/[^a-z]+/gi, '_');
    for (const [p, v] of Object.entries(s.before)) before[`${dir}/${p}`] = v;
    for (const [p, v] of Object.entries(s.after)) after[`${dir}/${p}`] = v;
  }
  return { before, after };
}

describe('diff-summary agrees with git --numstat / --name-status', () => {
  for (const [name, { before, after }] of Object.entries(SCENARIOS)) {
    it(name, async () => {
      const git = diffTrees(before, after);
      expect(git.nameStatus.length).toBeGreaterThan(0);
      expectAgreesWithGit(await summarize(git.diff), git);
    });
  }

  it('all scenarios together in one diff', async () => {
    const { before, after } = together();
    const git = diffTrees(before, after);
    const out = await summarize(git.diff);
    expectAgreesWithGit(out, git);
    expect(out.files.length).toBeGreaterThan(20);
    expect(new Set(out.files.map((f) => f.status))).toEqual(new Set(['added', 'deleted', 'modified', 'renamed', 'binary']));
  });

  it('binary files with --binary (GIT binary patch)', async () => {
    const { before, after } = SCENARIOS['binary file']!;
    const git = diffTrees(before, after, { patchArgs: ['--binary'] });
    expect(git.diff).toContain('GIT binary patch');
    expectAgreesWithGit(await summarize(git.diff), git);
  });

  it('copies (-C --find-copies-harder)', async () => {
    const src = numbered(30);
    const git = diffTrees(
      { 'src.txt': src },
      { 'src.txt': src + 'more\n', 'copy.txt': src, 'copy2.txt': editLine(src, 4, 'x') },
      { args: ['-C', '--find-copies-harder'] },
    );
    expect(git.nameStatus.some((e) => e.letter === 'C')).toBe(true);
    expectAgreesWithGit(await summarize(git.diff), git);
  });

  it('a diff of more than 1 MB, in linear time', async () => {
    const before = numbered(40_000, 'the quick brown fox jumps over the lazy dog');
    const after = before.replace(/ (\d*[02468])\n/g, ' $1 changed\n');
    const git = diffTrees({ 'big.txt': before, 'other.txt': 'a\n' }, { 'big.txt': after, 'other.txt': 'b\n' });
    expect(git.raw.length).toBeGreaterThan(1_000_000);
    const start = performance.now();
    const out = await summarize(git.diff);
    const ms = performance.now() - start;
    expectAgreesWithGit(out, git);
    expect(out.files[0]).toMatchObject({ path: 'big.txt', additions: 20_000, deletions: 20_000 });
    expect(ms).toBeLessThan(3000); // ~tens of ms here; quadratic would be minutes
  });

  it('an empty diff', async () => {
    const git = diffTrees({ 'same.txt': 'x\n' }, { 'same.txt': 'x\n' });
    expect(git.diff).toBe('');
    const out = await summarize(git.diff);
    expect(out).toEqual({ files: [], totals: { files: 0, additions: 0, deletions: 0, hunks: 0 }, summary: 'No changes.' });
    expect((await summarize('', 'zh')).summary).toBe('没有变更。');
    expect((await summarize('\n  \n')).files).toEqual([]);
  });
});

describe('diff-summary details', () => {
  it('summarizes the bundled example (used by `npm start`)', async () => {
    const input = JSON.parse(readFileSync(new URL('examples/example.diff.json', TOOL_DIR), 'utf8'));
    expect(validInput(input)).toBe(true);
    const out = await summarize(input.diff);
    expect(out.files.map((f) => [f.path, f.status, f.hunks])).toEqual([
      ['docs/getting-started.md', 'renamed', 2],
      ['src/app.ts', 'modified', 2],
      ['src/utils/format.ts', 'added', 1],
    ]);
    expect(out.summary).toBe(
      '3 files changed: 1 added, 1 renamed, 1 modified; +18 −4 in 5 hunks. Largest change: src/utils/format.ts (+11 −0).',
    );
  });

  it('reports hunks, old_path and modes', async () => {
    const a = diffTrees(SCENARIOS['rename with edits']!.before, SCENARIOS['rename with edits']!.after);
    const out = await summarize(a.diff);
    expect(out.files).toEqual([
      { path: 'src/lib/util.ts', old_path: 'src/util.ts', status: 'renamed', additions: 3, deletions: 2, hunks: 2, binary: false },
    ]);
    const t = await summarize(diffTrees(SCENARIOS['type change']!.before, SCENARIOS['type change']!.after).diff);
    expect(t.files).toEqual([
      { path: 'link', status: 'modified', additions: 2, deletions: 1, hunks: 2, binary: false, old_mode: '120000', new_mode: '100644' },
      {
        path: 'to-link.txt',
        status: 'modified',
        additions: 1,
        deletions: 1,
        hunks: 2,
        binary: false,
        old_mode: '100644',
        new_mode: '120000',
      },
    ]);
    const m = await summarize(diffTrees(SCENARIOS['mode change']!.before, SCENARIOS['mode change']!.after).diff);
    expect(m.files).toEqual([
      { path: 'run.sh', status: 'modified', additions: 0, deletions: 0, hunks: 0, binary: false, old_mode: '100644', new_mode: '100755' },
      { path: 'tool.sh', status: 'modified', additions: 1, deletions: 1, hunks: 1, binary: false, old_mode: '100644', new_mode: '100755' },
    ]);
  });

  it('writes an English summary', async () => {
    const { before, after } = SCENARIOS['rename with edits']!;
    const git = diffTrees({ ...before, 'b.txt': 'b\n' }, { ...after, 'a.txt': 'new\n', 'b.txt': 'B\n' });
    const out = await summarize(git.diff);
    expect(out.summary).toBe('3 files changed: 1 added, 1 renamed, 1 modified; +5 −3 in 4 hunks. Largest change: src/lib/util.ts (+3 −2).');
    const one = await summarize(diffTrees({ 'x.txt': 'a\n' }, { 'x.txt': 'b\n' }).diff);
    expect(one.summary).toBe('1 file changed: 1 modified; +1 −1 in 1 hunk. Largest change: x.txt (+1 −1).');
  });

  it('writes a Chinese summary', async () => {
    const { before, after } = SCENARIOS['rename with edits']!;
    const git = diffTrees({ ...before, 'b.txt': 'b\n' }, { ...after, 'a.txt': 'new\n', 'b.txt': 'B\n' });
    const out = await summarize(git.diff, 'zh');
    expect(out.summary).toBe(
      '3 个文件变更：新增 1 个，重命名 1 个，修改 1 个；+5 −3，共 4 个变更块。改动最大的文件：src/lib/util.ts（+3 −2）。',
    );
    expect(out.files).toEqual((await summarize(git.diff, 'en')).files);
  });

  it('accepts plain unified diffs without git headers', async () => {
    const plain = [
      '--- src/app.ts\t2024-01-01 00:00:00.000000000 +0000',
      '+++ src/app.ts\t2024-01-02 00:00:00.000000000 +0000',
      '@@ -1,3 +1,4 @@',
      ' a',
      '-b',
      '+B',
      '+c',
      ' d',
      '--- /dev/null',
      '+++ b/new.txt',
      '@@ -0,0 +1 @@',
      '+hello',
      '--- a/gone.txt',
      '+++ /dev/null',
      '@@ -1,2 +0,0 @@',
      '-x',
      '-y',
      '',
    ].join('\n');
    const out = await summarize(plain);
    expect(out.files).toEqual([
      { path: 'src/app.ts', status: 'modified', additions: 2, deletions: 1, hunks: 1, binary: false },
      { path: 'new.txt', status: 'added', additions: 1, deletions: 0, hunks: 1, binary: false },
      { path: 'gone.txt', status: 'deleted', additions: 0, deletions: 2, hunks: 1, binary: false },
    ]);
  });

  it.skipIf(!existsSync('/usr/bin/diff'))('agrees with git on `diff -ru` output', async () => {
    const root = mkdtempSync(join(tmpdir(), 'corral-plain-'));
    try {
      const before = numbered(50);
      const after = editLine(editLine(before, 5, 'five'), 45, 'forty-five\nextra');
      for (const [dir, text] of [
        ['old', before],
        ['new', after],
      ] as const) {
        mkdirSync(join(root, dir, 'sub dir'), { recursive: true });
        writeFileSync(join(root, dir, 'sub dir', 'f.txt'), text);
        writeFileSync(join(root, dir, 'bin.dat'), binaryBlob(dir === 'old' ? 1 : 2));
      }
      let plain = '';
      try {
        execFileSync('diff', ['-ru', 'old', 'new'], { cwd: root });
      } catch (e) {
        plain = (e as { stdout: Buffer }).stdout.toString('utf8'); // diff exits 1 when files differ
      }
      const git = diffTrees({ 'f.txt': before }, { 'f.txt': after });
      const out = await summarize(plain);
      expect(out.files).toEqual([
        { path: 'new/bin.dat', status: 'binary', additions: 0, deletions: 0, hunks: 0, binary: true },
        {
          path: 'new/sub dir/f.txt',
          status: 'modified',
          additions: git.numstat[0]!.additions,
          deletions: git.numstat[0]!.deletions,
          hunks: 2,
          binary: false,
        },
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('passes odd bytes in paths through as valid JSON', async () => {
    // JSON.stringify escapes the control character and the lone surrogate;
    // the tool must decode both and write valid JSON back.
    const plain = '--- a/ctl\u0001\ud800.txt\n+++ b/ctl\u0001\ud800.txt\n@@ -1 +1 @@\n-a\n+b\n';
    const out = await summarize(plain);
    expect(out.files[0]!.path).toBe('ctl\u0001\ufffd.txt');
  });

  it('keeps counting after a hunk that mentions "\\ No newline" in the middle', async () => {
    const git = diffTrees({ 'n.txt': 'a\nb' }, { 'n.txt': 'a\nc' });
    expect(git.diff).toMatch(/-b\n\\ No newline at end of file\n\+c\n\\ No newline/);
    expect((await summarize(git.diff)).files[0]).toMatchObject({ additions: 1, deletions: 1, hunks: 1 });
  });

  it('handles a commit range in a longer history', async () => {
    const repo = new TempRepo();
    try {
      const c1 = repo.commit({ 'a.txt': numbered(10) });
      repo.commit({ 'a.txt': editLine(numbered(10), 2, 'two'), 'b.txt': 'b\n' });
      const c3 = repo.commit({ 'a.txt': editLine(numbered(10), 2, 'TWO'), 'c.txt': 'c\n' });
      const git = repo.diff(c1, c3);
      expectAgreesWithGit(await summarize(git.diff), git);
    } finally {
      repo.dispose();
    }
  });
});

describe('diff-summary errors', () => {
  it('refuses text that is not a diff', async () => {
    const r = await runTool('diff-summary', { diff: 'hello\nthis is a commit message, not a patch\n' });
    expect(r.ok).toBe(false);
    expect(r.error?.code).toBe('E_UNEXPECTED_EXIT'); // the tool ran and reported the error itself
    expect(r.exit_code).toBe(1);
    expect(JSON.stringify(r)).toMatch(/not a unified diff/);
  });

  it('refuses hunks without file headers', async () => {
    const r = await runTool('diff-summary', { diff: '@@ -1 +1 @@\n-a\n+b\n' });
    expect(r.ok).toBe(false);
    expect(r.error?.code).toBe('E_UNEXPECTED_EXIT'); // the tool ran and reported the error itself
    expect(JSON.stringify(r)).toMatch(/no file headers/);
  });

  it('refuses input of the wrong shape', async () => {
    // Refused by the input_schema before the tool runs, whatever else could fail later.
    for (const input of [{ diff: 5 }, {}, { diff: '', language: 'fr' }, { diff: '', extra: 1 }, ['diff']]) {
      const r = await runTool('diff-summary', input);
      expect(r.ok, JSON.stringify(input)).toBe(false);
      expect(r.error?.code, JSON.stringify(input)).toBe('E_INPUT_VALIDATION');
      expect(r.exit_code, JSON.stringify(input)).toBeNull();
    }
  });
});

/** `git apply --numstat` on `diff` (parsing only, nothing is applied): git's error, or null when it accepts the patch. */
function gitApplyError(repo: TempRepo, diff: string): string | null {
  const file = join(repo.dir, '.git', 'probe.diff');
  writeFileSync(file, diff);
  try {
    repo.git(['apply', '--numstat', file]);
    return null;
  } catch (e) {
    return (e as { stderr: Buffer }).stderr.toString('utf8').trim();
  }
}

describe('diff-summary on truncated and corrupt diffs, judged as git apply judges them', () => {
  const base = numbered(60);
  const before: Tree = { 'src/a.txt': base, 'src/b.txt': base, 'c.sh': '#!/bin/sh\n', 'gone.txt': numbered(4) };
  const after: Tree = {
    'src/moved/a.txt': editLine(editLine(base, 5, 'five'), 40, 'forty\nforty-one'),
    'src/b.txt': editLine(base, 30, 'thirty'),
    'c.sh': { content: '#!/bin/sh\necho hi\n', executable: true },
    'new.txt': numbered(6, 'new'),
  };

  it('at every line of a real diff, cut there or in the middle of it: a problem at the line git names in "corrupt patch at line N", none where git accepts', async () => {
    const repo = new TempRepo();
    try {
      const git = repo.diff(repo.commit(before), repo.commit(after));
      const lines = git.diff.split(/(?<=\n)/);
      expect(lines.length).toBeGreaterThan(40);
      let offset = 0;
      let corrupt = 0;
      for (const line of lines) {
        // Cut after the line, and in its middle (a partial last line, as `head -c` leaves it).
        for (const cut of [offset + Math.ceil(line.length / 2), offset + line.length]) {
          const text = git.diff.slice(0, cut);
          const gitSays = gitApplyError(repo, text);
          const out = await summarize(text);
          const where = `cut at ${cut}: ${JSON.stringify(text.slice(-40))}; git: ${gitSays}`;
          const m = /corrupt patch at line (\d+)/.exec(gitSays ?? '');
          if (m && !text.endsWith('\n') && gitApplyError(repo, `${text}\n`) === null) {
            // git rejects a last hunk line without its newline even when the hunk is complete; the tool
            // accepts it on purpose (a pasted diff often loses its final newline, and nothing is missing).
            expect(out.problems, where).toBeUndefined();
          } else if (m) {
            corrupt++;
            expect(out.problems?.[0], where).toMatchObject({ line: Number(m[1]) });
            expect(out.problems![0]!.message, where).not.toBe('');
          } else if (gitSays === null && /\n$|[^@]$/.test(text.slice(-2))) {
            // git accepts it: no problem, except for a partial "@@ -1" git skips as too short to be a header.
            expect(out.problems, where).toBeUndefined();
          }
        }
        offset += line.length;
      }
      expect(corrupt).toBeGreaterThan(20);
    } finally {
      repo.dispose();
    }
  });

  it('still counts what could be read, and names the file and line', async () => {
    const git = diffTrees(before, after);
    const cut = git.diff.slice(0, git.diff.indexOf('+forty') + 3); // mid-line, inside src/moved/a.txt's second hunk
    const out = await summarize(cut);
    expect(out.files.map((f) => f.path)).toEqual(['c.sh', 'gone.txt', 'new.txt', 'src/b.txt', 'src/moved/a.txt']);
    // Line 5 and line 40 removed, "five" and the partial "+fo" added.
    expect(out.files[4]).toMatchObject({ status: 'renamed', hunks: 2, deletions: 2, additions: 2 });
    const lineNo = cut.split('\n').length;
    expect(out.problems).toEqual([
      {
        path: 'src/moved/a.txt',
        line: lineNo,
        kind: 'truncated',
        message: 'the diff ends inside a hunk: 3 old and 4 new lines are missing',
      },
    ]);
    const zh = await summarize(cut, 'zh');
    expect(zh.problems![0]!.message).toBe('差异在变更块中途结束：缺少 3 行旧内容和 4 行新内容');
    expect(zh.files).toEqual(out.files);
  });

  it('reports garbage in a hunk, a hunk cut short by the next file, a bad @@ line and a hunk longer than its header, where git does', async () => {
    const repo = new TempRepo();
    try {
      const git = repo.diff(repo.commit(before), repo.commit(after));
      const lines = git.diff.split('\n');
      const at = (pred: (l: string) => boolean, from = 0) => lines.findIndex((l, i) => i >= from && pred(l));
      // src/moved/a.txt's two hunks.
      const firstHunk = at((l) => l.startsWith('+++ b/src/moved/a.txt')) + 1;
      const secondHunk = at((l) => l.startsWith('@@ '), firstHunk + 1);
      expect(lines[firstHunk]).toMatch(/^@@ /);
      const cases: Array<[string, string[], string]> = [
        ['bad_line', lines.toSpliced(firstHunk + 2, 0, 'garbage'), 'corrupt patch at line'],
        ['short_hunk', lines.toSpliced(secondHunk - 2, 2), 'corrupt patch at line'],
        ['bad_hunk_header', lines.with(firstHunk, '@@ -1,x +1 @@'), 'corrupt patch at line'],
        ['extra_lines', lines.toSpliced(secondHunk, 0, ' extra'), 'patch fragment without header at line'],
      ];
      for (const [kind, edited, gitWords] of cases) {
        const text = edited.join('\n');
        const gitSays = gitApplyError(repo, text) ?? '';
        expect(gitSays, kind).toContain(gitWords);
        const out = await summarize(text);
        expect(out.problems?.[0], kind).toMatchObject({ kind, line: Number(/line (\d+)/.exec(gitSays)![1]) });
        // The other files are still all there.
        expect(out.files.length, kind).toBe(git.nameStatus.length);
      }
    } finally {
      repo.dispose();
    }
  });

  it('says nothing about a whole diff, however it ends', async () => {
    const git = diffTrees(before, after);
    expect((await summarize(git.diff)).problems).toBeUndefined();
    expect((await summarize(git.diff.trimEnd())).problems).toBeUndefined(); // a paste without the final newline
  });
});
