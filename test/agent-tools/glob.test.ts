// The glob tool against `git ls-files` with the same pathspecs (glob magic)
// on real repositories: the project's own tree at HEAD and a generated one
// (renames, non-ASCII paths, symlinks, nested .gitignore). With gitignore
// honoured, the set is the untracked files git does not ignore
// (`--others --exclude-standard`) in a repository with no commit, and the
// tracked files once everything is committed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { PROJECT, commitAll, generatedRepo, git, projectRepo, removeRepo, runtime, zList } from './grep-fixtures.js';

const spec = JSON.parse(readFileSync(new URL('../../wasm-tools/glob/tool-spec.json', import.meta.url), 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
const validOutput = ajv.compile(spec.output_schema);

interface Report {
  root: string;
  files: string[];
  count: number;
  truncated: boolean;
}

const corral = runtime();
let project: string; // no commit: every file is untracked
let gen: string; // everything committed

beforeAll(() => {
  project = projectRepo();
  gen = generatedRepo();
});

afterAll(async () => {
  await corral.close();
  removeRepo(project);
  removeRepo(gen);
});

/** The tool's patterns as git pathspecs: braces expanded, "!" as exclude magic. */
function pathspecs(patterns: string[]): string[] {
  const expand = (p: string): string[] => {
    const m = /^(.*?)\{([^{}]*,[^{}]*)\}(.*)$/.exec(p);
    return m ? m[2]!.split(',').flatMap((alt) => expand(`${m[1]}${alt}${m[3]}`)) : [p];
  };
  return patterns.flatMap((p) =>
    p.startsWith('!') ? expand(p.slice(1)).map((x) => `:(glob,exclude)${x}`) : expand(p).map((x) => `:(glob)${x}`),
  );
}

async function glob(dir: string, input: Record<string, unknown>): Promise<Report> {
  const r = await corral.run('glob', dir, { max_results: 100000, ...input });
  expect(r.error, JSON.stringify(r.error)).toBeNull();
  expect(validOutput(r.output), ajv.errorsText(validOutput.errors)).toBe(true);
  return r.output as Report;
}

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

const PROJECT_CASES: string[][] = [
  ['**/*.ts'],
  ['*.md'],
  ['*'],
  ['**'],
  ['packages/*/src/**'],
  ['packages/**/test/*.test.ts'],
  ['**/README.md'],
  ['wasm-tools/*/tool-spec.json'],
  ['**/*.{c,h}'],
  ['test/**'],
  ['packages/node'],
  ['packages/node/'],
  ['?ackage.json'],
  ['[a-c]*/**'],
  ['**/[[:upper:]]*.md'],
  ['**/*.ts', '!**/*.test.ts'],
  ['!**/*.ts'],
  ['**/fixtures/**/*.wasm'],
  ['a*/**/*b*'],
  ['packages/*/package.json', 'apps/*/package.json'],
  ['**/src/*.{ts,tsx,js}'],
  ['packages/[!cn]*/**/*.ts'],
];

describe('glob against git ls-files on the project', () => {
  it.each(PROJECT_CASES)('%s', async (...patterns) => {
    const want = zList(git(project, ['ls-files', '-z', '--others', '--exclude-standard', '--', ...pathspecs(patterns)]));
    const got = await glob(project, { patterns });
    expect(got.files).toEqual(want);
    expect(got.count).toBe(want.length);
    expect(got.truncated).toBe(false);
  });

  it('lists hundreds of files for "**", in byte order', async () => {
    const got = await glob(project, { pattern: '**' });
    expect(got.files.length).toBeGreaterThan(300);
    expect([...got.files].sort(byteOrder)).toEqual(got.files);
  });
});

const GEN_CASES: string[][] = [
  ['**'],
  ['*'],
  ['**/*.txt'],
  ['**/*.md'],
  ['données/*'],
  ['日本/**'],
  ['link*'],
  ['link-to-dir/**'],
  ['src'],
  ['**/*.ts', '!src/util/**'],
  ['a*'],
  ['a/**', 'a-b/**'],
  ['**/.gitignore'],
  ['with space/*'],
  ['*.{txt,md,log}'],
  ['src/**/*.ts'],
];

describe('glob against git ls-files on a generated repository', () => {
  it.each(GEN_CASES)('%s (tracked, gitignore honoured)', async (...patterns) => {
    const want = zList(git(gen, ['ls-files', '-z', '--', ...pathspecs(patterns)]));
    const got = await glob(gen, { patterns });
    expect(got.files).toEqual(want);
  });

  it.each(GEN_CASES)('%s (gitignore: false = tracked + ignored)', async (...patterns) => {
    // git prints the tracked files, then the others: one sorted list is the set.
    const want = zList(git(gen, ['ls-files', '-z', '--cached', '--others', '--', ...pathspecs(patterns)])).sort(byteOrder);
    const got = await glob(gen, { patterns, gitignore: false });
    expect(got.files).toEqual(want);
  });

  it('lists symlinks as paths and never goes through them', async () => {
    const got = await glob(gen, { pattern: '**' });
    expect(got.files).toContain('link-to-dir');
    expect(got.files).toContain('link-out');
    expect(got.files.some((f) => f.startsWith('link-to-dir/'))).toBe(false);
    expect(got.files.some((f) => f.startsWith('.git/'))).toBe(false);
  });

  it('searches a sub-folder, patterns and paths relative to it', async () => {
    const got = await glob(gen, { pattern: '**/*.ts', path: '/workspace/src' });
    expect(got.root).toBe('/workspace/src');
    const want = zList(git(gen, ['ls-files', '-z', '--', ':(glob)src/**/*.ts'])).map((p) => p.slice('src/'.length));
    expect(got.files).toEqual(want);
    // A guest path under root is accepted as a pattern too.
    expect((await glob(gen, { pattern: '/workspace/src/**/*.ts', path: '/workspace/src' })).files).toEqual(want);
  });

  it('stops at max_results with truncated: true', async () => {
    const all = await glob(gen, { pattern: '**' });
    const cut = await glob(gen, { pattern: '**', max_results: 3 });
    expect(cut.files).toEqual(all.files.slice(0, 3));
    expect(cut.truncated).toBe(true);
    expect((await glob(gen, { pattern: '**', max_results: all.count })).truncated).toBe(false);
  });

  it('refuses no pattern, an empty one, and patterns outside the root', async () => {
    for (const input of [{}, { pattern: '' }, { pattern: '/etc/*' }, { pattern: 'x', path: '/workspace/../etc' }]) {
      const r = await corral.run('glob', gen, input);
      expect(r.ok, JSON.stringify(input)).toBe(false);
    }
  });
});

describe('glob after a commit', () => {
  it('gives the tracked set of the committed project', async () => {
    commitAll(project);
    for (const patterns of [['**/*.ts'], ['**/*.{c,h}', '!**/test/**']]) {
      const want = zList(git(project, ['ls-files', '-z', '--', ...pathspecs(patterns)]));
      expect((await glob(project, { patterns })).files).toEqual(want);
    }
  });
});

describe('the examples', () => {
  it('pass under `corral test`, which binds examples/workspace/ to /workspace', () => {
    for (const tool of ['glob', 'grep']) {
      const out = execFileSync(
        process.execPath,
        [join(PROJECT, 'packages/node/bin/corral.js'), 'test', join(PROJECT, 'wasm-tools', tool)],
        {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      expect(out, tool).toMatch(/ passed, 0 failed/);
    }
  });
});
