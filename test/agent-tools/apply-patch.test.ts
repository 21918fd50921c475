// apply-patch through Corral against git itself:
// - this repository's own history: `git diff A B` for 50 consecutive
//   non-merge commits, applied to a copy of A's tree (git archive), must give
//   exactly B's tree (every file's git blob id compared with git ls-tree);
// - generated repositories with renames, copies, binaries, CRLF, non-ASCII
//   names, new/deleted/empty files, mode changes, missing last newlines;
// - corrupted and shifted patches: refused with the tree unchanged, or
//   applied at the offset git apply reports, and `git apply --check`
//   agrees on which apply.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { Corral, type InvokeResult } from '@corral/node';

const spec = JSON.parse(readFileSync(new URL('../../wasm-tools/apply-patch/tool-spec.json', import.meta.url), 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
const validOutput = ajv.compile(spec.output_schema);

interface FileReport {
  path: string;
  old_path?: string;
  status: string;
  hunks: number;
  additions: number;
  deletions: number;
  old_mode?: string;
  new_mode?: string;
  offsets?: { hunk: number; offset: number; fuzz?: number }[];
}
interface Output {
  applied: boolean;
  check: boolean;
  applies: boolean;
  files: FileReport[];
  conflict?: { message: string; file?: string; hunk?: number; reason: string };
  notes: string[];
}

const GIT_ENV = {
  PATH: process.env.PATH,
  LC_ALL: 'C',
  TZ: 'UTC',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'T',
  GIT_AUTHOR_EMAIL: 't@example.com',
  GIT_COMMITTER_NAME: 'T',
  GIT_COMMITTER_EMAIL: 't@example.com',
  GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
};
function git(cwd: string, args: string[], input?: string | Buffer): string {
  return execFileSync('git', ['-c', 'core.autocrlf=false', ...args], { cwd, env: GIT_ENV, input, encoding: 'utf8', maxBuffer: 1 << 28 });
}
/** git's exit status (for apply --check) rather than its output. */
function gitOk(cwd: string, args: string[], input?: string): boolean {
  try {
    execFileSync('git', ['-c', 'core.autocrlf=false', ...args], { cwd, env: GIT_ENV, input, stdio: ['pipe', 'ignore', 'ignore'] });
    return true;
  } catch {
    return false;
  }
}

/** path -> git blob id of every regular file under dir (what git ls-tree lists). */
function treeOf(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string, rel: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (r !== '.git') walk(p, r);
      } else if (e.isFile()) {
        const data = readFileSync(p);
        out.set(r, createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex'));
      }
    }
  };
  walk(dir, '');
  return out;
}
/** The same map for a commit, from git ls-tree (symlinks and submodules left out; the tool refuses them). */
function treeAt(repo: string, commit: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const entry of git(repo, ['ls-tree', '-r', '-z', commit]).split('\0')) {
    if (!entry) continue;
    const [meta, path] = entry.split('\t') as [string, string];
    const [mode, , id] = meta.split(' ') as [string, string, string];
    if (mode === '100644' || mode === '100755') out.set(path, id);
  }
  return out;
}
const sorted = (m: Map<string, string>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/**
 * Makes `work` a copy of `target`'s tree: extracted whole the first time (at
 * = ''), else brought from `at` by git's own means (remove what changed to
 * nothing, extract what changed), never through the tool under test.
 */
function checkout(repo: string, work: string, at: string, target: string): void {
  if (at === target) return;
  if (at === '') {
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work);
    execFileSync('tar', ['-x', '-C', work], { input: execFileSync('git', ['-C', repo, 'archive', target], { maxBuffer: 1 << 28 }) });
    return;
  }
  const changed = git(repo, ['diff', '--no-renames', '--name-status', '-z', at, target]).split('\0').filter(Boolean);
  const extract: string[] = [];
  for (let i = 0; i < changed.length; i += 2) {
    if (changed[i] === 'D') rmSync(join(work, changed[i + 1]!));
    else extract.push(changed[i + 1]!);
  }
  if (extract.length)
    execFileSync('tar', ['-x', '-C', work], {
      input: execFileSync('git', ['-C', repo, 'archive', target, '--', ...extract.map((p) => `:(literal)${p}`)], { maxBuffer: 1 << 28 }),
    });
  expect(sorted(treeOf(work)), `copy of ${target}`).toEqual(sorted(treeAt(repo, target)));
}

let corral: Corral;
const scratch = mkdtempSync(join(tmpdir(), 'corral-apply-patch-'));

async function apply(dir: string, patch: string, extra: Record<string, unknown> = {}): Promise<InvokeResult> {
  return corral.invoke(
    'apply-patch',
    { patch, ...extra },
    { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'host', path: dir } }] },
  );
}
async function applied(dir: string, patch: string, extra: Record<string, unknown> = {}): Promise<Output> {
  const r = await apply(dir, patch, extra);
  expect(r.error, JSON.stringify(r.error)).toBeNull();
  expect(validOutput(r.output), ajv.errorsText(validOutput.errors)).toBe(true);
  return r.output as Output;
}
/** A refused patch: its tool error, after checking that nothing under dir changed. */
async function refused(dir: string, patch: string, extra: Record<string, unknown> = {}) {
  const before = treeOf(dir);
  const r = await apply(dir, patch, extra);
  expect(r.ok).toBe(false);
  expect(sorted(treeOf(dir))).toEqual(sorted(before));
  const details = r.error?.details as { tool_error?: { message: string; file?: string; hunk?: number; reason: string } };
  return details.tool_error!;
}

beforeAll(async () => {
  corral = await Corral.create({ store: false, size: 1 });
});
afterAll(async () => {
  await corral?.close();
  rmSync(scratch, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------
describe("apply-patch on this repository's history", () => {
  const ROOT = git(dirname(fileURLToPath(import.meta.url)), ['rev-parse', '--show-toplevel']).trim();
  const COMMITS = 50;

  it(`git diff A B applied to A's tree gives B's tree, for ${COMMITS} consecutive non-merge commits`, async () => {
    if (git(ROOT, ['rev-parse', '--is-shallow-repository']).trim() === 'true')
      throw new Error(
        `${ROOT} is a shallow clone; this test needs the last ${COMMITS + 1} commits (clone with full history, or fetch-depth: 0)`,
      );
    const commits = git(ROOT, ['rev-list', '--no-merges', `--max-count=${COMMITS}`, 'HEAD'])
      .trim()
      .split('\n')
      .reverse();
    expect(commits).toHaveLength(COMMITS);
    const work = join(scratch, 'history');
    let at = ''; // the commit whose tree `work` holds
    let binaryCommits = 0;
    let files = 0;
    for (const commit of commits) {
      const parent = git(ROOT, ['rev-parse', `${commit}^`]).trim();
      checkout(ROOT, work, at, parent);
      at = parent;
      // Binary files (the committed .wasm builds) cannot be applied from a text diff: the full
      // diff is refused; the text part is applied and git provides the binaries.
      const binary = git(ROOT, ['diff', '--numstat', '-z', '--no-renames', parent, commit])
        .split('\0')
        .filter((l) => l.startsWith('-\t-\t'))
        .map((l) => l.slice(4));
      let patch = git(ROOT, ['diff', parent, commit]);
      if (binary.length > 0) {
        binaryCommits++;
        const error = await refused(work, patch);
        expect(error.reason, commit).toBe('binary');
        expect(error.message).toContain('binary file');
        patch = git(ROOT, ['diff', parent, commit, '--', '.', ...binary.map((p) => `:(exclude,literal)${p}`)]);
      }
      if (patch.trim()) {
        const out = await applied(work, patch);
        expect(out.applies, commit).toBe(true);
        files += out.files.length;
      }
      for (const p of binary) {
        rmSync(join(work, p), { force: true });
        const data = execFileSync('git', ['-C', ROOT, 'cat-file', 'blob', `${commit}:${p}`], {
          maxBuffer: 1 << 28,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        mkdirSync(dirname(join(work, p)), { recursive: true });
        writeFileSync(join(work, p), data);
      }
      expect(sorted(treeOf(work)), `tree after ${commit}`).toEqual(sorted(treeAt(ROOT, commit)));
      at = commit;
    }
    console.log(
      `apply-patch: ${COMMITS} commits, ${files} file sections, ${binaryCommits} with binary files (refused, then applied without them)`,
    );
  }, 90_000);

  it('a corrupted hunk is refused with the tree unchanged, and git apply --check agrees on mutated patches', async () => {
    const commits = git(ROOT, ['rev-list', '--no-merges', '--max-count=40', 'HEAD']).trim().split('\n');
    const work = join(scratch, 'mutations');
    let at = '';
    let tried = 0;
    for (const commit of commits) {
      const patch = git(ROOT, ['diff', `${commit}^`, commit, '--', '.', ':(exclude)*.wasm']);
      // Mutations of the first hunk: a context line changed, a removed line changed,
      // and the whole patch shifted by lines added at the top of its file.
      const lines = patch.split('\n');
      const context = lines.findIndex((l, i) => i > 0 && l.startsWith(' ') && lines.slice(0, i).some((x) => x.startsWith('@@')));
      const removed = lines.findIndex((l) => l.startsWith('-') && !l.startsWith('---'));
      if (context < 0 || removed < 0) continue;
      const file = /^diff --git a\/(\S+) b\//m.exec(patch)?.[1];
      if (!file || /\s|"/.test(file)) continue;
      const variants: [string, string][] = [
        ['context changed', lines.map((l, i) => (i === context ? ` ${l.slice(1)} (changed)` : l)).join('\n')],
        ['removed line changed', lines.map((l, i) => (i === removed ? `-${l.slice(1)}X` : l)).join('\n')],
        ['as is', patch],
      ];
      checkout(ROOT, work, at, `${commit}^`);
      at = `${commit}^`;
      git(work, ['init', '-q']); // git apply --check needs no index, but a repository keeps it from looking upward
      for (const [what, variant] of variants) {
        const gitSays = gitOk(work, ['apply', '--check'], variant);
        const out = await applied(work, variant, { check: true });
        expect(out.applies, `${commit} ${what}`).toBe(gitSays);
        if (what !== 'as is' && !gitSays) {
          const error = await refused(work, variant);
          expect(error.reason).toBe('hunk');
          expect(error.message).toMatch(/hunk #\d+ \(@@ -\d+,\d+ \+\d+,\d+ @@, patch line \d+\) of .* does not apply/);
          expect(error.message).toContain('nothing was changed');
        }
      }
      // The same patch after 3 lines were added at the top of its file: both apply, at an offset.
      const target = join(work, file);
      if (lstatSync(target, { throwIfNoEntry: false })?.isFile()) {
        const original = readFileSync(target);
        writeFileSync(target, Buffer.concat([Buffer.from('// one\n// two\n// three\n'), original]));
        const only = git(ROOT, ['diff', `${commit}^`, commit, '--', file]);
        const gitSays = gitOk(work, ['apply', '--check'], only);
        const out = await applied(work, only, { check: true });
        expect(out.applies, `${commit} shifted`).toBe(gitSays);
        if (gitSays) expect(out.files[0]?.offsets?.every((o) => o.offset === 3)).toBe(true);
        writeFileSync(target, original);
      }
      rmSync(join(work, '.git'), { recursive: true, force: true });
      if (++tried === 6) break;
    }
    expect(tried).toBe(6);
  }, 60_000);
});

// ---------------------------------------------------------------------------
describe('apply-patch on generated repositories', () => {
  /** A repository with two commits; returns the diff between them (with args) and a directory holding A's tree. */
  function twoCommits(
    name: string,
    a: Record<string, string | Buffer>,
    b: Record<string, string | Buffer | null>,
    modes: Record<string, boolean> = {},
  ) {
    const repo = join(scratch, `${name}-repo`);
    mkdirSync(repo, { recursive: true });
    git(repo, ['init', '-q']);
    for (const [p, c] of Object.entries(a)) {
      mkdirSync(dirname(join(repo, p)), { recursive: true });
      writeFileSync(join(repo, p), c);
    }
    git(repo, ['add', '-A']);
    git(repo, ['commit', '-qm', 'A']);
    for (const [p, c] of Object.entries(b)) {
      if (c === null) rmSync(join(repo, p));
      else {
        mkdirSync(dirname(join(repo, p)), { recursive: true });
        writeFileSync(join(repo, p), c);
      }
    }
    for (const [p, x] of Object.entries(modes)) chmodSync(join(repo, p), x ? 0o755 : 0o644);
    git(repo, ['add', '-A']);
    git(repo, ['commit', '-qm', 'B']);
    const work = join(scratch, `${name}-work`);
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work);
    execFileSync('tar', ['-x', '-C', work], { input: execFileSync('git', ['-C', repo, 'archive', 'HEAD~1']) });
    return {
      repo,
      work,
      diff: (...args: string[]) => git(repo, ['diff', ...args, 'HEAD~1', 'HEAD']),
      expectB: () => expect(sorted(treeOf(work))).toEqual(sorted(treeAt(repo, 'HEAD'))),
    };
  }

  const text = (n: number, tag = '') => Array.from({ length: n }, (_, i) => `line ${i + 1}${tag}`).join('\n') + '\n';

  it('renames (with and without changes), copies, new, deleted and empty files, nested folders', async () => {
    const r = twoCommits(
      'renames',
      { 'src/old.txt': text(30), 'src/same.txt': text(20, ' same'), 'gone/deep/x.txt': 'bye\n', 'keep.txt': text(10) },
      {
        'src/old.txt': null,
        'lib/new.txt': text(30).replace('line 15\n', 'line fifteen\n'),
        'src/same.txt': null,
        'moved/same.txt': text(20, ' same'),
        'gone/deep/x.txt': null,
        'empty.txt': '',
        'a/b/c/new.txt': 'fresh\n',
        'keep-copy.txt': text(10) + 'one more\n',
      },
    );
    const out = await applied(r.work, r.diff('-M', '-C', '--find-copies-harder'));
    r.expectB();
    const byPath = Object.fromEntries(out.files.map((f) => [f.path, f]));
    expect(byPath['lib/new.txt']).toMatchObject({ status: 'renamed', old_path: 'src/old.txt', hunks: 1, additions: 1, deletions: 1 });
    expect(byPath['moved/same.txt']).toMatchObject({ status: 'renamed', old_path: 'src/same.txt', hunks: 0 });
    expect(byPath['keep-copy.txt']).toMatchObject({ status: 'copied', old_path: 'keep.txt' });
    expect(byPath['empty.txt']).toMatchObject({ status: 'added', hunks: 0 });
    expect(byPath['gone/deep/x.txt']).toMatchObject({ status: 'deleted' });
    // git removes the folders a deletion empties; so does apply-patch.
    expect(lstatSync(join(r.work, 'gone'), { throwIfNoEntry: false })).toBeUndefined();
  });

  it('CRLF files, non-ASCII and spaced names, and a missing last newline', async () => {
    const r = twoCommits(
      'crlf',
      { 'win.txt': 'one\r\ntwo\r\nthree\r\n', 'données/été.md': '# Été\n', 'with space.txt': 'a\nb', 'tail.txt': 'x\ny\n' },
      {
        'win.txt': 'one\r\nTWO\r\nthree\r\nfour',
        'données/été.md': '# Été\n\nchaud\n',
        'with space.txt': 'a\nb\nc\n',
        'tail.txt': 'x\ny',
        '日本/名前.txt': 'こんにちは\n',
      },
    );
    const patch = r.diff();
    expect(patch).toContain('"b/donn\\303\\251es/\\303\\251t\\303\\251.md"');
    const out = await applied(r.work, patch);
    r.expectB();
    expect(out.files.map((f) => f.path).sort()).toEqual(['données/été.md', 'tail.txt', 'win.txt', 'with space.txt', '日本/名前.txt']);
  });

  it('reports mode changes and executables it cannot set', async () => {
    const r = twoCommits(
      'modes',
      { 'run.sh': '#!/bin/sh\necho hi\n', 'plain.txt': 'p\n' },
      { 'run.sh': '#!/bin/sh\necho hello\n' },
      { 'plain.txt': true },
    );
    const out = await applied(r.work, r.diff());
    r.expectB(); // contents; modes are not compared (WASI cannot set them)
    const plain = out.files.find((f) => f.path === 'plain.txt')!;
    expect(plain).toMatchObject({ status: 'modified', old_mode: '100644', new_mode: '100755', hunks: 0 });
    expect(out.notes.join('\n')).toContain('plain.txt: mode change 100644 -> 100755 not applied');
  });

  it('refuses binary patches clearly, with --binary or without, and changes nothing', async () => {
    const r = twoCommits(
      'binary',
      { 'img.bin': Buffer.from([0, 1, 2, 3]), 'note.txt': 'n\n' },
      { 'img.bin': Buffer.from([0, 9, 9]), 'note.txt': 'N\n' },
    );
    for (const args of [[], ['--binary']]) {
      const error = await refused(r.work, r.diff(...args));
      expect(error).toMatchObject({ file: 'img.bin', reason: 'binary' });
      expect(error.message).toContain('the patch changes the binary file img.bin');
    }
  });

  it('applies hunks at an offset and reports it as git apply -v does; fuzz is opt-in', async () => {
    const r = twoCommits(
      'offset',
      { 'f.txt': text(60) },
      { 'f.txt': text(60).replace('line 10\n', 'line ten\n').replace('line 50\n', 'line fifty\n') },
    );
    const patch = r.diff();
    writeFileSync(join(r.work, 'f.txt'), 'new 1\nnew 2\n' + text(60).replace('line 40\n', ''));
    // git apply -v on a copy says where each hunk went: "Hunk #1 succeeded at 12 (offset 2 lines)."
    const copy = join(scratch, 'offset-git');
    cpSync(r.work, copy, { recursive: true });
    git(copy, ['init', '-q']);
    const verbose = spawnSync('git', ['apply', '-v'], { cwd: copy, env: GIT_ENV, input: patch, encoding: 'utf8' }).stderr;
    const gitOffsets = [...verbose.matchAll(/Hunk #(\d+) succeeded at \d+ \(offset (-?\d+) lines?\)/g)].map((m) => ({
      hunk: Number(m[1]),
      offset: Number(m[2]),
    }));
    expect(gitOffsets).toEqual([
      { hunk: 1, offset: 2 },
      { hunk: 2, offset: 1 },
    ]);
    const out = await applied(r.work, patch, { check: true });
    expect(out.files[0]!.offsets).toEqual(gitOffsets);
    const real = await applied(r.work, patch);
    expect(real.files[0]!.offsets).toEqual(out.files[0]!.offsets);
    expect(readFileSync(join(r.work, 'f.txt'), 'utf8')).toBe(
      'new 1\nnew 2\n' + text(60).replace('line 40\n', '').replace('line 10\n', 'line ten\n').replace('line 50\n', 'line fifty\n'),
    );

    // A context line that differs: refused without fuzz, applied with fuzz 1.
    const r2 = twoCommits('fuzz', { 'g.txt': text(20) }, { 'g.txt': text(20).replace('line 10\n', 'line ten\n') });
    writeFileSync(join(r2.work, 'g.txt'), text(20).replace('line 7\n', 'line seven\n'));
    const error = await refused(r2.work, r2.diff());
    expect(error).toMatchObject({ file: 'g.txt', hunk: 1, reason: 'hunk' });
    expect(error.message).toContain('at line 7 the patch expects "line 7" but the file has "line seven"');
    const fuzzy = await applied(r2.work, r2.diff(), { fuzz: 1 });
    expect(fuzzy.files[0]!.offsets).toEqual([{ hunk: 1, offset: 0, fuzz: 1 }]);
    expect(readFileSync(join(r2.work, 'g.txt'), 'utf8')).toBe(
      text(20).replace('line 7\n', 'line seven\n').replace('line 10\n', 'line ten\n'),
    );
  });

  it('is all or nothing across files: a conflict in the last file leaves the first ones unwritten', async () => {
    const r = twoCommits(
      'atomic',
      { 'a.txt': text(5), 'b.txt': text(5), 'z.txt': text(5) },
      { 'a.txt': text(5, '!'), 'b.txt': null, 'new.txt': 'n\n', 'z.txt': text(6) },
    );
    writeFileSync(join(r.work, 'z.txt'), 'something else\n');
    const error = await refused(r.work, r.diff());
    expect(error).toMatchObject({ file: 'z.txt', hunk: 1, reason: 'hunk' });
    expect(readdirSync(r.work).sort()).toEqual(['a.txt', 'b.txt', 'z.txt']);
    // Existing and missing files are checked too.
    writeFileSync(join(r.work, 'z.txt'), text(5));
    writeFileSync(join(r.work, 'new.txt'), 'in the way\n');
    expect(await refused(r.work, r.diff())).toMatchObject({ file: 'new.txt', reason: 'exists' });
    rmSync(join(r.work, 'new.txt'));
    rmSync(join(r.work, 'b.txt'));
    expect(await refused(r.work, r.diff())).toMatchObject({ file: 'b.txt', reason: 'missing' });
  });

  it('refuses paths out of /workspace, garbage and truncated patches', async () => {
    const dir = join(scratch, 'refusals');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'x.txt'), 'x\n');
    const outside = 'diff --git a/../etc/passwd b/../etc/passwd\n--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-x\n+y\n';
    expect((await refused(dir, outside)).message).toContain("'..'");
    expect((await refused(dir, 'hello\n')).message).toContain('no file sections found');
    const truncated = 'diff --git a/x.txt b/x.txt\n--- a/x.txt\n+++ b/x.txt\n@@ -1,3 +1,3 @@\n-x\n';
    expect((await refused(dir, truncated)).message).toContain('the patch ends inside hunk #1 of x.txt');
    // strip 0 keeps the a/ prefix, so the file is not there.
    expect((await refused(dir, 'diff --git a/x.txt b/x.txt\n--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-x\n+y\n', { strip: 0 })).reason).toBe(
      'missing',
    );
    // plain diff -u output with strip 0 applies.
    const out = await applied(dir, '--- x.txt\t2026-01-01\n+++ x.txt\t2026-01-02\n@@ -1 +1 @@\n-x\n+y\n', { strip: 0 });
    expect(out.files).toEqual([{ path: 'x.txt', status: 'modified', hunks: 1, additions: 1, deletions: 1 }]);
    expect(readFileSync(join(dir, 'x.txt'), 'utf8')).toBe('y\n');
  });
});
