// The web app's file navigation, in Node: file-sections.ts (a diff split
// into per-file sections, matched to the diff-summary tool's files) on real
// git, `diff -ru` and format-patch output, checked against what the real
// tool reports; file-tree.ts (folders with totals, filters, sorting, rows).
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  hunkLines,
  localDiffText,
  matchSections,
  readQuoted,
  sectionParents,
  splitSections,
  splitSectionsSliced,
  type FileSection,
} from '../apps/web/src/file-sections.js';
import {
  buildTree,
  extensionOf,
  filterFiles,
  listRows,
  nextSort,
  runSliced,
  filteredTree,
  treeRows,
  type Folder,
  type Sort,
} from '../apps/web/src/file-tree.js';
import { largestChanges, type DiffSummary, type FileSummary } from '../apps/web/src/summary.js';
import { syntheticDiff } from '../bench/diffs.js';
import { runTool } from './helpers/corral.js';
import { diffTrees, TempRepo, type Tree } from './helpers/gitdiff.js';

const lines = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}\n`).join('');

function blob(seed: number): Uint8Array {
  const b = new Uint8Array(300);
  for (let i = 0; i < b.length; i++) b[i] = (seed * 31 + i * 7) & 0xff;
  b[3] = 0;
  return b;
}

async function tool(diff: string): Promise<DiffSummary> {
  const r = await runTool('diff-summary', { diff, language: 'en' });
  if (!r.ok) throw new Error(`diff-summary failed: ${JSON.stringify(r.error)}`);
  return r.output as DiffSummary;
}

/**
 * Every file of the tool's answer has its own section(s), and the section's
 * hunk lines count exactly the tool's additions, deletions and hunks.
 */
function expectSectionsAgree(diff: string, output: DiffSummary): Array<FileSection[] | null> {
  const matched = matchSections(output.files, splitSections(diff));
  expect(matched).toHaveLength(output.files.length);
  output.files.forEach((f, i) => {
    const group = matched[i];
    expect(group, f.path).not.toBeNull();
    expect(group![0]!.path).toBe(f.path);
    const hunks = group!.flatMap((s) => s.hunks);
    const ls = hunkLines(diff, hunks);
    const count = (k: string) => ls.filter((l) => l.kind === k).length;
    if (f.binary) {
      expect(group!.some((s) => s.binary)).toBe(true);
    } else {
      expect({ path: f.path, hunks: count('hunk'), additions: count('add'), deletions: count('del') }).toEqual({
        path: f.path,
        hunks: f.hunks,
        additions: f.additions,
        deletions: f.deletions,
      });
    }
  });
  // No two files share a section.
  const all = matched.flatMap((g) => g ?? []);
  expect(new Set(all).size).toBe(all.length);
  return matched;
}

const before: Tree = {
  'a/renamed.txt': lines(20, 'r'),
  'b/binary.bin': blob(1),
  'c/deleted.txt': lines(5, 'd'),
  'd/mode.sh': '#!/bin/sh\n',
  'e/été.txt': 'x\ny',
  'f/link': { symlink: 'target' },
  'g/space name.txt': lines(4, 's'),
  'h/crlf.txt': 'a\r\nb\r\n',
  'i/tricky.md': 'intro\n-- x\nkeep\n',
  'j/pure.txt': lines(3, 'p'),
  'q/tab\tand "quote".txt': lines(3, 'q'),
  'deep/a/b/c/one.ts': lines(10, 'one'),
};
const after: Tree = {
  'a/moved/renamed.txt': lines(20, 'r').replace('r 7\n', 'r seven\n'),
  'b/binary.bin': blob(2),
  'd/mode.sh': { content: '#!/bin/sh\n', executable: true },
  'e/été.txt': 'x\nz\n',
  'f/link': 'now a file\n',
  'g/space name.txt': `${lines(4, 's')}five\n`,
  'h/crlf.txt': 'a\r\nB\r\nc\r\n',
  'i/tricky.md': 'intro\n++ y\nkeep\n--- a\n',
  'j/other.txt': lines(3, 'p'),
  'k/new.txt': lines(9, 'n'),
  'q/tab\tand "quote".txt': lines(3, 'q').replace('q 2', 'q two'),
  'deep/a/b/c/one.ts': lines(10, 'one').replace('one 1\n', '').replace('one 9\n', 'nine\n'),
};

describe('file sections', () => {
  it('decodes git C-quoted names (octal UTF-8 bytes, escapes)', () => {
    expect(readQuoted('"e/\\303\\251t\\303\\251.txt" rest')).toEqual(['e/été.txt', 25]);
    expect(readQuoted('"a\\tb\\"c\\\\d"')).toEqual(['a\tb"c\\d', 12]);
    expect(readQuoted('"never closed')).toBeNull();
  });

  it("finds each file of a real git diff (renames, quoted names, binary, a type change, CRLF, '-- x' lines) as the tool reports it", async () => {
    const git = diffTrees(before, after);
    // git quoted the names that need it: the splitter had to decode them.
    expect(git.diff).toContain('"a/e/\\303\\251t\\303\\251.txt"');
    expect(git.diff).toContain('"b/q/tab\\tand \\"quote\\".txt"');
    const output = await tool(git.diff);
    expect(output.files.map((f) => f.path).sort()).toEqual(git.nameStatus.map((n) => n.path).sort());
    const matched = expectSectionsAgree(git.diff, output);
    const at = (path: string) => matched[output.files.findIndex((f) => f.path === path)]!;
    // The tricky file: '-- x' removed and '++ y', '--- a' added are hunk lines, not file headers.
    const tricky = at('i/tricky.md');
    expect(hunkLines(git.diff, tricky[0]!.hunks).map((l) => `${l.kind} ${l.text}`)).toEqual([
      'hunk @@ -1,3 +1,4 @@',
      'ctx  intro',
      'del --- x',
      'add +++ y',
      'ctx  keep',
      'add +--- a',
    ]);
    // The symlink that became a file: two git sections, one file.
    expect(at('f/link')).toHaveLength(2);
    // A rename keeps its old name; CRLF lines lose only the CR.
    expect(at('a/moved/renamed.txt')[0]!.oldPath).toBe('a/renamed.txt');
    expect(hunkLines(git.diff, at('h/crlf.txt')[0]!.hunks).map((l) => l.text)).toEqual(['@@ -1,2 +1,3 @@', ' a', '-b', '+B', '+c']);
    // The sections' text is the diff's text, in order, without overlap.
    const sections = splitSections(git.diff);
    for (let i = 1; i < sections.length; i++) expect(sections[i]!.start).toBeGreaterThanOrEqual(sections[i - 1]!.end);
  });

  it('reads `git diff -C --binary` (copies, GIT binary patch bodies)', async () => {
    const git = diffTrees(
      { 'src/orig.txt': lines(30, 'o'), 'img/pic.bin': blob(3) },
      { 'src/orig.txt': lines(30, 'o'), 'src/copy.txt': lines(30, 'o').replace('o 3\n', 'three\n'), 'img/pic.bin': blob(4) },
      { args: ['-C', '-C'], patchArgs: ['--binary'] },
    );
    expect(git.diff).toContain('GIT binary patch');
    expect(git.diff).toContain('copy from src/orig.txt');
    const output = await tool(git.diff);
    expectSectionsAgree(git.diff, output);
    expect(output.files.find((f) => f.status === 'copied')?.old_path).toBe('src/orig.txt');
  });

  it('reads plain `diff -ruN` between folders (dates after a tab, "Binary files … differ")', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-diffu-'));
    try {
      const write = (root: string, files: Record<string, string | Uint8Array>) => {
        for (const [p, c] of Object.entries(files)) {
          mkdirSync(dirname(join(dir, root, p)), { recursive: true });
          writeFileSync(join(dir, root, p), c);
        }
      };
      write('old', { 'x.txt': lines(6, 'x'), 'sub/gone.txt': 'bye\n', 'pic.bin': blob(5), 'same.txt': 's\n' });
      write('new', { 'x.txt': lines(6, 'x').replace('x 2\n', 'two\n'), 'sub/fresh.txt': 'hi\n', 'pic.bin': blob(6), 'same.txt': 's\n' });
      let diff = '';
      try {
        execFileSync('diff', ['-ruN', 'old', 'new'], { cwd: dir, env: { PATH: process.env.PATH, LC_ALL: 'C', TZ: 'UTC' } });
      } catch (e) {
        diff = (e as { stdout: Buffer }).stdout.toString('utf8'); // diff exits 1 when the folders differ
      }
      expect(diff).toMatch(/^--- old\/x\.txt\t/m);
      expect(diff).toContain('Binary files old/pic.bin and new/pic.bin differ');
      const output = await tool(diff);
      expect(output.files.length).toBe(4);
      expectSectionsAgree(diff, output);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaves a format-patch mail signature out of the last section', async () => {
    const repo = new TempRepo();
    try {
      repo.commit({ 'a.txt': lines(3, 'a') });
      repo.commit({ 'a.txt': lines(3, 'a').replace('a 2', 'A2'), 'b.txt': 'b\n' });
      const mail = repo.git(['format-patch', '--stdout', '-1', 'HEAD']).toString('utf8');
      expect(mail).toMatch(/\n-- \n\d+\.\d+/);
      const output = await tool(mail);
      const matched = expectSectionsAgree(mail, output);
      const last = matched[matched.length - 1]![0]!;
      expect(mail.slice(last.start, last.end)).not.toContain('\n-- \n');
      expect(mail.slice(last.end)).toMatch(/^-- \n/);
    } finally {
      repo.dispose();
    }
  });

  it("reads a merge commit's combined diff (`diff --cc`)", async () => {
    const repo = new TempRepo();
    try {
      repo.commit({ 'm.txt': lines(5, 'm') });
      repo.git(['checkout', '-q', '-b', 'side']);
      repo.commit({ 'm.txt': lines(5, 'm').replace('m 3', 'side 3') });
      repo.git(['checkout', '-q', 'main']);
      repo.commit({ 'm.txt': lines(5, 'm').replace('m 3', 'main 3') });
      try {
        repo.git(['merge', '-q', 'side']);
      } catch {
        // The conflict this test wants: resolve it by hand, as a person would.
      }
      writeFileSync(join(repo.dir, 'm.txt'), lines(5, 'm').replace('m 3', 'both 3'));
      repo.git(['add', 'm.txt']);
      repo.git(['commit', '-q', '--no-edit']);
      const cc = repo.git(['show', '--format=', '--cc', 'HEAD']).toString('utf8');
      expect(cc).toMatch(/^diff --cc m\.txt/);
      const output = await tool(cc);
      const [group] = expectSectionsAgree(cc, output);
      expect(sectionParents(cc, group![0]!)).toBe(2);
    } finally {
      repo.dispose();
    }
  });

  it('splits a large diff the same in time slices as at once, and matches every file', async () => {
    const diff = syntheticDiff(2 * 1024 * 1024);
    const whole = splitSections(diff);
    expect(await splitSectionsSliced(diff, 1)).toEqual(whole);
    const output = await tool(diff);
    expect(whole.length).toBe(output.files.length);
    expectSectionsAgree(diff, output);
  });

  it("shows a file's hunks when it has 200,000 of them (a generated file changed on every other line)", async () => {
    const n = 200_000;
    let diff = 'diff --git a/data.csv b/data.csv\nindex 1111111..2222222 100644\n--- a/data.csv\n+++ b/data.csv\n';
    for (let i = 0; i < n; i++) diff += `@@ -${2 * i + 1} +${2 * i + 1} @@\n-${i},old\n+${i},new\n`;
    const got = await localDiffText(diff).fileHunks([{ path: 'data.csv' }], 0);
    if (typeof got === 'string') throw new Error(`no hunks: ${got}`);
    expect(got.hunks).toHaveLength(n);
    const shown = hunkLines(got.text, got.hunks);
    expect(shown).toHaveLength(3 * n);
    expect(shown.at(-1)).toEqual({ kind: 'add', text: `+${n - 1},new` });
  });

  it('matches by path when the positions disagree, and gives null for a file it cannot find', () => {
    const diff = 'diff --git a/one b/one\n--- a/one\n+++ b/one\n@@ -1 +1 @@\n-a\n+b\n';
    const sections = splitSections(diff);
    const m = matchSections([{ path: 'zero' }, { path: 'one' }], sections);
    expect(m[0]).toBeNull();
    expect(m[1]![0]!.path).toBe('one');
  });
});

// ---- the tree ------------------------------------------------------------------

const file = (path: string, additions: number, deletions: number, status: FileSummary['status'] = 'modified'): FileSummary => ({
  path,
  status,
  additions,
  deletions,
  hunks: additions + deletions > 0 ? 1 : 0,
  binary: status === 'binary',
});

const FILES: FileSummary[] = [
  file('README.md', 1, 0),
  file('src/app/main.ts', 10, 2),
  file('src/app/view.tsx', 3, 3, 'added'),
  file('src/lib/util.ts', 0, 7, 'deleted'),
  file('src/lib/deep/x/y/z.ts', 4, 0, 'renamed'),
  file('docs/guide/intro.md', 2, 2),
  file('assets/logo.png', 0, 0, 'binary'),
  file('Makefile', 1, 1),
  file('.gitignore', 1, 0),
];

function findFolder(root: Folder, path: string): Folder | undefined {
  for (const f of root.folders) {
    if (f.path === path) return f;
    const inner = findFolder(f, path);
    if (inner) return inner;
  }
  return undefined;
}

describe('file tree', () => {
  it('gives every folder the totals of the files under it, and squashes single-folder chains', () => {
    const root = buildTree(FILES);
    const sum = (prefix: string) => {
      const under = FILES.filter((f) => f.path.startsWith(`${prefix}/`));
      return {
        files: under.length,
        additions: under.reduce((n, f) => n + f.additions, 0),
        deletions: under.reduce((n, f) => n + f.deletions, 0),
        hunks: under.reduce((n, f) => n + f.hunks, 0),
      };
    };
    expect(root.totals).toEqual({ files: 9, additions: 22, deletions: 15, hunks: 8 });
    for (const p of ['src', 'src/app', 'src/lib', 'src/lib/deep/x/y', 'docs/guide', 'assets'])
      expect(findFolder(root, p)?.totals, p).toEqual(sum(p));
    // docs holds only guide, and deep/x/y only z.ts: each chain is one row.
    expect(root.folders.map((f) => f.name).sort()).toEqual(['assets', 'docs/guide', 'src']);
    expect(findFolder(root, 'src/lib')!.folders.map((f) => f.name)).toEqual(['deep/x/y']);
    expect(root.files.map((i) => FILES[i]!.path)).toEqual(['README.md', 'Makefile', '.gitignore']);
  });

  it('lists every file once when all folders are open, only the top level when closed', () => {
    const root = buildTree(FILES);
    const sort: Sort = { key: 'index', dir: 1 };
    const open = treeRows(FILES, root, sort, () => true);
    expect(
      open
        .filter((r) => r.kind === 'file')
        .map((r) => (r.kind === 'file' ? r.index : -1))
        .sort((a, b) => a - b),
    ).toEqual(FILES.map((_, i) => i));
    // Folders come before the files of their level, and children one level deeper.
    expect(open[0]).toMatchObject({ kind: 'folder', depth: 0 });
    const closed = treeRows(FILES, root, sort, () => false);
    expect(closed.map((r) => (r.kind === 'folder' ? `${r.folder.name}/` : FILES[r.index]!.path))).toEqual([
      'assets/',
      'docs/guide/',
      'src/',
      'README.md',
      'Makefile',
      '.gitignore',
    ]);
  });

  it('sorts folders by their totals and files by theirs, in the direction asked', () => {
    const root = buildTree(FILES);
    const rows = treeRows(FILES, root, { key: 'deletions', dir: -1 }, (f) => f.path === 'src');
    const src = rows.filter((r) => r.kind === 'folder' && r.depth === 1).map((r) => (r.kind === 'folder' ? r.folder.name : ''));
    expect(src).toEqual(['lib', 'app']); // 7 deletions before 5
    const flat = listRows(
      FILES,
      FILES.map((_, i) => i),
      { key: 'additions', dir: 1 },
    ).map((r) => (r.kind === 'file' ? FILES[r.index]!.additions : -1));
    expect(flat).toEqual([...flat].sort((a, b) => a - b));
  });

  it('cycles a numeric column largest first → smallest first → off, and text A→Z → Z→A → off', () => {
    let s: Sort = { key: 'index', dir: 1 };
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) seen.push(`${(s = nextSort(s, 'additions')).key}${s.dir}`);
    expect(seen).toEqual(['additions-1', 'additions1', 'index1']);
    s = nextSort(nextSort({ key: 'additions', dir: -1 }, 'path'), 'path');
    expect(s).toEqual({ key: 'path', dir: -1 });
    expect(nextSort(s, 'path')).toEqual({ key: 'index', dir: 1 });
  });

  it('filters by status, extension and text, and a filtered tree totals only what it keeps', () => {
    expect(['a/b.TS', 'x.tar.gz', '.gitignore', 'Makefile', 'dir.d/file', 'end.'].map(extensionOf)).toEqual(['ts', 'gz', '', '', '', '']);
    const none = { statuses: new Set<FileSummary['status']>(), extension: null, text: '' };
    const paths = (idx: number[]) => idx.map((i) => FILES[i]!.path);
    expect(paths(filterFiles(FILES, { ...none, statuses: new Set(['added', 'deleted']) }))).toEqual([
      'src/app/view.tsx',
      'src/lib/util.ts',
    ]);
    expect(paths(filterFiles(FILES, { ...none, extension: 'ts' }))).toEqual([
      'src/app/main.ts',
      'src/lib/util.ts',
      'src/lib/deep/x/y/z.ts',
    ]);
    expect(paths(filterFiles(FILES, { ...none, extension: '' }))).toEqual(['Makefile', '.gitignore']);
    expect(paths(filterFiles(FILES, { ...none, text: 'APP/' }))).toEqual(['src/app/main.ts', 'src/app/view.tsx']);
    const kept = filterFiles(FILES, { ...none, extension: 'ts', statuses: new Set(['modified', 'deleted']) });
    const root = buildTree(FILES, kept);
    expect(root.totals).toEqual({ files: 2, additions: 10, deletions: 9, hunks: 2 });
    expect(findFolder(root, 'src')?.totals.files).toBe(2);
  });

  it('builds the tree of 50,000 files with totals that add up', () => {
    const many: FileSummary[] = [];
    for (let i = 0; i < 50_000; i++) many.push(file(`pkg${i % 50}/mod${i % 700}/f${i}.ts`, i % 7, i % 3));
    const root = buildTree(many);
    expect(root.folders).toHaveLength(50);
    const sumAdd = root.folders.reduce((n, f) => n + f.totals.additions, 0);
    expect(sumAdd).toBe(many.reduce((n, f) => n + f.additions, 0));
    expect(treeRows(many, root, { key: 'index', dir: 1 }, () => false)).toHaveLength(50);
  });

  it('builds the same filtered tree in time slices as at once', async () => {
    const many: FileSummary[] = [];
    for (let i = 0; i < 9_000; i++)
      many.push(file(`p${i % 9}/m${i % 90}/f${i}.${i % 2 ? 'ts' : 'md'}`, i % 5, i % 4, i % 3 ? 'modified' : 'added'));
    const filter = { statuses: new Set<FileSummary['status']>(['added']), extension: 'ts', text: '' };
    const sliced = await runSliced(filteredTree(many, filter), () => false, 0);
    expect(sliced!.shown).toEqual(filterFiles(many, filter));
    expect(sliced!.tree).toEqual(buildTree(many, filterFiles(many, filter)));
    // A newer filter cancels the run.
    expect(await runSliced(filteredTree(many, filter), () => true, 0)).toBeNull();
  });

  it('sorts 50,000 files by a number with ties in diff order, and picks the largest changes like a full sort', () => {
    const many: FileSummary[] = [];
    for (let i = 0; i < 50_000; i++) many.push(file(`f${i}`, (i * 7919) % 13, (i * 104729) % 5));
    for (const dir of [1, -1] as const) {
      const got = listRows(
        many,
        many.map((_, i) => i),
        { key: 'deletions', dir },
      ).map((r) => (r.kind === 'file' ? r.index : -1));
      const want = many.map((_, i) => i).sort((a, b) => (many[a]!.deletions - many[b]!.deletions) * dir || a - b);
      expect(got).toEqual(want);
    }
    const reference = many
      .map((f, i) => ({ f, i }))
      .filter(({ f }) => f.additions + f.deletions > 0)
      .sort((a, b) => b.f.additions + b.f.deletions - (a.f.additions + a.f.deletions) || a.i - b.i)
      .slice(0, 8)
      .map(({ f }) => f);
    expect(largestChanges(many, 8)).toEqual(reference);
    expect(largestChanges([file('a', 0, 0)], 8)).toEqual([]);
  });
});
