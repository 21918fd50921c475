// The grep tool against `git grep` on real repositories: the project's own
// tree at HEAD and a generated one (renames, a binary, CRLF, non-ASCII
// paths, symlinks, nested .gitignore). Every comparison is the whole list of
// matches: path, line, column and text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { commitAll, generatedRepo, gitMaybe, projectRepo, removeRepo, runtime } from './grep-fixtures.js';

const spec = JSON.parse(readFileSync(new URL('../../wasm-tools/grep/tool-spec.json', import.meta.url), 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
const validOutput = ajv.compile(spec.output_schema);

interface Match {
  path: string;
  line: number;
  column: number;
  text: string;
  text_truncated?: boolean;
  before?: string[];
  after?: string[];
}
interface Report {
  root: string;
  matches: Match[];
  count: number;
  truncated: boolean;
  files_searched: number;
  files_skipped: number;
}

const corral = runtime();
let project: string;
let gen: string;

beforeAll(() => {
  project = projectRepo();
  commitAll(project);
  gen = generatedRepo();
});

afterAll(async () => {
  await corral.close();
  removeRepo(project);
  removeRepo(gen);
});

interface Flags {
  ignore_case?: boolean;
  word?: boolean;
  fixed_strings?: boolean;
}

/** `git grep -I -n --column -z` with the same flags, parsed. */
function gitGrep(dir: string, pattern: string, flags: Flags = {}, pathspec: string[] = []): Match[] {
  const args = ['grep', '-I', '-n', '--column', '-z'];
  if (flags.ignore_case) args.push('-i');
  if (flags.word) args.push('-w');
  args.push(flags.fixed_strings ? '-F' : '-E', '-e', pattern);
  if (pathspec.length) args.push('--', ...pathspec);
  const out = gitMaybe(dir, args).toString('utf8');
  return out
    .split('\n')
    .filter(Boolean)
    .map((record) => {
      const [path, line, column, ...rest] = record.split('\0');
      return { path: path!, line: Number(line), column: Number(column), text: rest.join('\0') };
    });
}

async function grep(dir: string, input: Record<string, unknown>): Promise<Report> {
  const r = await corral.run('grep', dir, { max_results: 100000, max_line_length: 1 << 20, ...input });
  expect(r.error, JSON.stringify(r.error)).toBeNull();
  expect(validOutput(r.output), ajv.errorsText(validOutput.errors)).toBe(true);
  return r.output as Report;
}

// At least 20 patterns, as git grep -E reads them; what the project's tree
// holds decides which match (several match hundreds of lines).
const PROJECT_CASES: Array<[string, Flags?]> = [
  ['function'],
  ['function [a-zA-Z_]+\\('],
  ['TODO|FIXME'],
  ['^import .* from'],
  ['[0-9]{3,}'],
  ['corral_[a-z_]+\\('],
  ['^#include <[a-z]+\\.h>$'],
  ['"[^"]*wasm"'],
  ['(export|import) (type|interface)'],
  ['\\.test\\.ts'],
  ['[[:upper:]][[:lower:]]+Error'],
  ['a.c'],
  ['return [a-z]+;$'],
  ['^}$'],
  ['\\<return\\>'],
  ['(ab|cd)*e+f'],
  ['[^ -~]'],
  ['é'],
  ['x{2,}'],
  ['\\(\\)'],
  ['readme|license', { ignore_case: true }],
  ['corral', { ignore_case: true }],
  ['test', { word: true }],
  ['in', { word: true }],
  ['map', { word: true, ignore_case: true }],
  ['a.b', { fixed_strings: true }],
  ['error(', { fixed_strings: true, ignore_case: true }],
  ['[0]', { fixed_strings: true }],
  ['readonly', { fixed_strings: true, word: true }],
];

describe('grep against git grep on the project', () => {
  it.each(PROJECT_CASES)('%s %o', async (pattern, flags = {}) => {
    const want = gitGrep(project, pattern, flags);
    const got = await grep(project, { pattern, ...flags });
    if (got.truncated) {
      // The project grows: a pattern matching more than the tool's output budget (768 KiB of JSON)
      // ends early, flagged, with git grep's first matches in git grep's order.
      expect(JSON.stringify(got.matches).length).toBeGreaterThan(600_000);
      expect(got.matches).toEqual(want.slice(0, got.matches.length));
    } else {
      expect(got.matches).toEqual(want);
    }
    expect(got.count).toBe(got.matches.length);
  });

  it('matches some patterns a lot (the comparisons are not vacuous)', () => {
    expect(gitGrep(project, 'function').length).toBeGreaterThan(100);
    expect(gitGrep(project, 'test', { word: true }).length).toBeGreaterThan(100);
  });
});

const GEN_CASES: Array<[string, Flags?]> = [
  ['foo'],
  ['foo', { word: true }],
  ['FOO', { ignore_case: true }],
  ['foo', { word: true, ignore_case: true }],
  ['^foo'],
  ['foo$'],
  ['\\$\r?$'],
  ['end\\$', {}],
  ['été'],
  ['[^ -~]+'],
  ['foo[.({[]'],
  ['foo.bar', { fixed_strings: true }],
  ['foo(', { fixed_strings: true }],
  ['binary'],
  ['^$'],
  ['line [0-9]*0 foo'],
];

describe('grep against git grep on a generated repository', () => {
  it.each(GEN_CASES)('%s %o', async (pattern, flags = {}) => {
    const want = gitGrep(gen, pattern, flags);
    const got = await grep(gen, { pattern, ...flags });
    expect(got.matches).toEqual(want);
  });

  it('skips ignored files, binaries and symlinks, and reads CRLF lines as git does', async () => {
    const got = await grep(gen, { pattern: 'foo' });
    const paths = new Set(got.matches.map((m) => m.path));
    for (const ignored of [
      'app.log',
      'build/out.js',
      'top-only.txt',
      'a/tmp/b.txt',
      'src/a.gen.ts',
      'src/generated/x.ts',
      'docs/private.md',
    ])
      expect(paths.has(ignored), ignored).toBe(false);
    for (const kept of [
      'keep.log',
      'src/top-only.txt',
      'src/important.gen.ts',
      'docs/guide/private.md',
      'données/été.txt',
      '日本/ファイル.md',
    ])
      expect(paths.has(kept), kept).toBe(true);
    expect(paths.has('data.bin')).toBe(false);
    expect([...paths].some((p) => p.startsWith('link-'))).toBe(false);
    expect(got.matches.find((m) => m.path === 'crlf.txt')?.text).toBe('foo line one\r');
    expect(got.files_skipped).toBe(1); // data.bin
  });

  it('searches ignored files with gitignore: false', async () => {
    const got = await grep(gen, { pattern: 'ignored foo', gitignore: false });
    expect(got.matches.map((m) => m.path)).toEqual([
      'a/tmp/b.txt',
      'app.log',
      'build/out.js',
      'docs/private.md',
      'src/a.gen.ts',
      'src/generated/x.ts',
      'top-only.txt',
    ]);
  });

  it('include and exclude globs pick the same files as git pathspecs', async () => {
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ include: '*.ts' }, [':(glob)**/*.ts']],
      [{ include: ['*.md', '*.c'] }, [':(glob)**/*.md', ':(glob)**/*.c']],
      [{ include: 'src/**/*.ts' }, [':(glob)src/**/*.ts']],
      [{ include: 'src/' }, ['src']],
      [{ include: '*.{c,md}' }, [':(glob)**/*.c', ':(glob)**/*.md']],
      [{ exclude: '*.txt' }, [':(glob)**', ':(glob,exclude)**/*.txt']],
      [{ exclude: ['docs/', 'src/util/'] }, ['.', ':(exclude)docs', ':(exclude)src/util']],
      [{ include: '*.ts', exclude: '*.test.ts' }, [':(glob)**/*.ts', ':(glob,exclude)**/*.test.ts']],
    ];
    for (const [input, pathspec] of cases) {
      const got = await grep(gen, { pattern: 'foo', ...input });
      expect(got.matches, JSON.stringify(input)).toEqual(gitGrep(gen, 'foo', {}, pathspec));
    }
  });

  it('searches a sub-folder and a single file, paths relative to them', async () => {
    const sub = await grep(gen, { pattern: 'foo', path: '/workspace/src' });
    expect(sub.root).toBe('/workspace/src');
    expect(sub.matches).toEqual(gitGrep(gen, 'foo', {}, ['src']).map((m) => ({ ...m, path: m.path.slice('src/'.length) })));
    const one = await grep(gen, { pattern: 'foo', path: '/workspace/src/util/helpers.ts' });
    expect(one.root).toBe('/workspace/src/util');
    expect(one.matches.map((m) => [m.path, m.line])).toEqual([
      ['helpers.ts', 1],
      ['helpers.ts', 2],
      ['helpers.ts', 6],
    ]);
  });
});

describe('grep limits and context', () => {
  it('stops at max_results and says so', async () => {
    const got = await grep(gen, { pattern: 'foo', max_results: 5 });
    expect(got.matches).toEqual(gitGrep(gen, 'foo').slice(0, 5));
    expect(got.count).toBe(5);
    expect(got.truncated).toBe(true);
    const exact = gitGrep(gen, 'mixed').length;
    expect((await grep(gen, { pattern: 'mixed', max_results: exact })).truncated).toBe(false);
  });

  it('stops before the answer outgrows the output cap', async () => {
    const r = await corral.run('grep', project, { pattern: '.', max_results: 100000, max_line_length: 1 << 20 });
    expect(r.error).toBeNull();
    const got = r.output as Report;
    expect(got.truncated).toBe(true);
    expect(got.matches).toEqual(gitGrep(project, '.').slice(0, got.count));
  });

  it('cuts long lines with a marker, by default at 1000 bytes', async () => {
    const r = await corral.run('grep', gen, { pattern: 'foo', include: 'long.txt' });
    const got = r.output as Report;
    expect(got.matches[0]).toMatchObject({ path: 'long.txt', line: 1, column: 3002, text: 'x'.repeat(1000), text_truncated: true });
    expect(got.matches[1]).toEqual({ path: 'long.txt', line: 2, column: 7, text: 'short foo' });
  });

  it('gives context lines before and after, stopping at the file edges', async () => {
    const got = await grep(gen, { pattern: '^export const FOO', context: 2, include: 'helpers.ts' });
    expect(got.matches).toEqual([
      {
        path: 'src/util/helpers.ts',
        line: 6,
        column: 1,
        text: 'export const FOO = "foo";',
        before: ['', ''],
        after: [],
      },
    ]);
    const first = await grep(gen, { pattern: 'fooBar\\(x', before_context: 3, after_context: 1, include: 'helpers.ts' });
    expect(first.matches[0]).toMatchObject({ line: 1, before: [], after: ['  return x + 1; // foo'] });
  });

  it('refuses a bad expression and paths outside /workspace', async () => {
    const bad = await corral.run('grep', gen, { pattern: 'a(b' });
    expect(bad.ok).toBe(false);
    expect(JSON.stringify(bad.error)).toContain('invalid regular expression');
    for (const path of ['/etc', '/workspace/../etc', '/workspacex']) {
      const r = await corral.run('grep', gen, { pattern: 'x', path });
      expect(r.ok, path).toBe(false);
    }
  });
});
