/**
 * Real git repositories for the glob and grep tests: the project's own tree
 * at HEAD (`git archive`, committed again in a fresh repository) and a
 * generated one with renames, a binary, CRLF, non-ASCII paths, symlinks and
 * nested .gitignore files. Git runs in the C locale with no user or system
 * config, so its answers depend on nothing but the repository.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Corral, type InvokeResult } from '@corral/node';

export const PROJECT = fileURLToPath(new URL('../../', import.meta.url));

export function git(cwd: string, args: string[], input?: string): Buffer {
  return execFileSync('git', ['-c', 'core.quotePath=false', '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    cwd,
    input,
    maxBuffer: 256 * 2 ** 20,
    env: { PATH: process.env.PATH, LC_ALL: 'C', HOME: cwd, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
  });
}

/** git's exit 1 means "nothing found" for grep: an empty answer, not an error. */
export function gitMaybe(cwd: string, args: string[]): Buffer {
  try {
    return git(cwd, args);
  } catch (err) {
    const e = err as { status?: number; stdout?: Buffer };
    if (e.status === 1 && e.stdout) return e.stdout;
    throw err;
  }
}

/** NUL-separated paths (git ls-files -z). */
export const zList = (out: Buffer) => out.toString('utf8').split('\0').filter(Boolean);

/** The project at HEAD, as a fresh repository whose one commit holds every file. */
export function projectRepo(): string {
  const dir = mkdtempSync(join(tmpdir(), 'corral-grep-project-'));
  const head = git(PROJECT, ['rev-parse', 'HEAD']).toString().trim();
  const tar = execFileSync('git', ['archive', '--format=tar', head], { cwd: PROJECT, maxBuffer: 512 * 2 ** 20 });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  git(dir, ['init', '-q']);
  return dir;
}

export function commitAll(dir: string, message = 'snapshot'): void {
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '--allow-empty', '-m', message]);
}

const FILES: Record<string, string | Buffer> = {
  '.gitignore': '# top level\n*.log\n!keep.log\nbuild/\n/top-only.txt\n**/tmp/**\ntrailing-space.txt \\ \n',
  'README.md': '# Demo\n\nfoo is not foobar, nor foo_bar; but foo-bar has foo.\n',
  'a.txt': 'alpha\nbeta foo\n',
  'A.txt': 'UPPER FOO\nFoo mixed\n',
  'a-b/x.txt': 'dash folder foo\n',
  'a/x.txt': 'plain folder\n',
  'crlf.txt': 'foo line one\r\nsecond foo\r\nend$\r\n',
  'data.bin': Buffer.concat([Buffer.from('foo\0binary foo\n'), Buffer.alloc(100, 0x41)]),
  'app.log': 'ignored foo\n',
  'keep.log': 'kept foo\n',
  'build/out.js': 'ignored foo\n',
  'top-only.txt': 'ignored foo\n',
  'trailing-space.txt ': 'a name with a trailing space, foo\n',
  'a/tmp/b.txt': 'ignored foo\n',
  'src/.gitignore': 'generated/\n*.gen.ts\n!important.gen.ts\n',
  'src/top-only.txt': 'not ignored: the rule is anchored at the top, foo\n',
  'src/main.c': '#include <stdio.h>\nint main(void) {\n  printf("foo\\n");\n  return 0;\n}\n',
  'src/a.gen.ts': 'ignored foo\n',
  'src/important.gen.ts': 'export const foo = 1;\n',
  'src/generated/x.ts': 'ignored foo\n',
  'src/util/helpers.ts': 'export function fooBar(x: number) {\n  return x + 1; // foo\n}\n\n\nexport const FOO = "foo";\n',
  'src/util/helpers.test.ts': "import { fooBar } from './helpers.js';\nfooBar(1);\n",
  'docs/.gitignore': '/private.md\n',
  'docs/private.md': 'ignored foo\n',
  'docs/guide/private.md': 'not ignored, foo\n',
  'docs/guide/intro.md': 'Intro\n=====\n\nThe foo tool: foo(1), foo[2], foo{3} and foo.bar\n',
  'données/été.txt': 'bonjour foo\nça va, été\n',
  '日本/ファイル.md': 'ファイル foo\n',
  'with space/a b.txt': 'spaced foo\n',
  'long.txt': `${'x'.repeat(3000)} foo ${'y'.repeat(100)}\nshort foo\n`,
  'many.txt': Array.from({ length: 300 }, (_, i) => `line ${i} ${i % 3 === 0 ? 'foo' : 'bar'}`).join('\n'),
};

/** A repository with the awkward cases; every file not ignored is committed (after a rename). */
export function generatedRepo(): string {
  const dir = mkdtempSync(join(tmpdir(), 'corral-grep-gen-'));
  git(dir, ['init', '-q']);
  for (const [rel, content] of Object.entries(FILES)) {
    const p = join(dir, ...rel.split('/'));
    mkdirSync(join(p, '..'), { recursive: true });
    writeFileSync(p, content);
  }
  writeFileSync(join(dir, 'old-name.txt'), 'renamed later, foo\n');
  commitAll(dir, 'first');
  git(dir, ['mv', 'old-name.txt', 'src/new-name.txt']);
  symlinkSync('src/main.c', join(dir, 'link-to-file'));
  symlinkSync('src', join(dir, 'link-to-dir'));
  symlinkSync('/etc/passwd', join(dir, 'link-out'));
  commitAll(dir, 'rename, symlinks');
  return dir;
}

export function removeRepo(dir: string | undefined): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}

/** One runtime per test file: no store, the bundled tools. */
export function runtime() {
  let corral: Promise<Corral> | undefined;
  return {
    async run(tool: string, dir: string, input: unknown): Promise<InvokeResult> {
      corral ??= Corral.create({ store: false, size: 1 });
      return (await corral).invoke(tool, input, {
        mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: dir } }],
      });
    },
    async close() {
      if (corral) await (await corral).close();
      corral = undefined;
    },
  };
}
