// file-stats over a host folder mounted read-only at /workspace: proves the
// mount reaches the tool, and checks the counts against Node's own.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, lstatSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { runTool } from './helpers/corral.js';

const spec = JSON.parse(readFileSync(new URL('../wasm-tools/file-stats/tool-spec.json', import.meta.url), 'utf8'));
const ajv = new Ajv({ strict: true, allErrors: true });
const validOutput = ajv.compile(spec.output_schema);
const validInput = ajv.compile(spec.input_schema);

interface Stat {
  path: string;
  lines: number;
  words: number;
  bytes: number;
}

// Big enough to cross the tool's 64 KiB read chunks, with words that
// straddle chunk boundaries.
const big = Array.from({ length: 20_000 }, (_, i) => `word${i} `.repeat((i % 5) + 1) + (i % 7 ? '\n' : '\t')).join('');

const FILES: Record<string, string | Uint8Array> = {
  'README.md': '# Title\n\nSome words here.\n',
  'empty.txt': '',
  'no-newline.txt': 'one two three',
  'whitespace.txt': ' \t lead\vand\ftrail \r\n\n\n  ',
  'src/main.ts': 'export const x = 1;\nexport const y = 2;\n',
  'src/util.ts': 'export function f() {\n  return 42;\n}\n',
  'src/deep/nested/notes.md': 'deep\n',
  'données/été.txt': 'bonjour le monde\nça va\n',
  'with space/a b.txt': 'a b c\n',
  'data.bin': new Uint8Array([0, 1, 2, 10, 32, 255, 10, 65]),
  'big.txt': big,
};

/** wc in the C locale: '\n' count, runs of non-ASCII-whitespace, size. */
function expected(content: string | Uint8Array): Omit<Stat, 'path'> {
  const buf = Buffer.from(content);
  const text = buf.toString('latin1'); // one char per byte
  return {
    lines: (text.match(/\n/g) ?? []).length,
    words: text.split(/[ \t\n\v\f\r]+/).filter(Boolean).length,
    bytes: buf.length,
  };
}

/** The tool's order: depth-first, entries of a folder sorted by bytes. */
function walk(host: string, guest: string): Stat[] {
  const names = readdirSync(host).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const out: Stat[] = [];
  for (const name of names) {
    const h = join(host, name);
    const st = lstatSync(h);
    if (st.isDirectory()) out.push(...walk(h, `${guest}/${name}`));
    else if (st.isFile()) out.push({ path: `${guest}/${name}`, ...expected(readFileSync(h)) });
  }
  return out;
}

/** file-stats' output (its output_schema), once a test has seen the call succeed. */
interface Report {
  root: string;
  files: Stat[];
  totals: ReturnType<typeof totals>;
}
const report = (r: { output?: unknown }) => r.output as Report;

function totals(files: Stat[]) {
  return {
    files: files.length,
    lines: files.reduce((s, f) => s + f.lines, 0),
    words: files.reduce((s, f) => s + f.words, 0),
    bytes: files.reduce((s, f) => s + f.bytes, 0),
  };
}

let host: string;
let outside: string;
const mount = () => [{ guest: '/workspace', access: 'read' as const, source: { kind: 'host', path: host } }];

beforeAll(() => {
  host = mkdtempSync(join(tmpdir(), 'corral-ws-'));
  outside = mkdtempSync(join(tmpdir(), 'corral-outside-'));
  for (const [rel, content] of Object.entries(FILES)) {
    const p = join(host, ...rel.split('/'));
    mkdirSync(join(p, '..'), { recursive: true });
    writeFileSync(p, content);
  }
  writeFileSync(join(outside, 'secret.txt'), 'do not count me\n');
  symlinkSync(join(outside, 'secret.txt'), join(host, 'link-out.txt'));
});

afterAll(() => {
  rmSync(host, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

describe('file-stats on a read-only /workspace mount', () => {
  it('counts every file like wc does', async () => {
    const r = await runTool('file-stats', {}, { mounts: mount() });
    expect(r.error).toBeNull();
    expect(r.ok).toBe(true);
    const want = walk(host, '/workspace');
    expect(want.length).toBe(Object.keys(FILES).length);
    expect(r.output).toEqual({ root: '/workspace', files: want, totals: totals(want) });
    expect(validOutput(r.output), ajv.errorsText(validOutput.errors)).toBe(true);
  });

  it('declares a read-only /workspace mount and a path pattern', () => {
    expect(spec.mounts).toEqual([{ guest: '/workspace', access: 'read' }]);
    expect(validInput({ path: '/workspace/src', pattern: '*.ts' })).toBe(true);
    expect(validInput({ path: '/etc' })).toBe(false);
    expect(validInput({ path: '/workspacex' })).toBe(false);
  });

  it('does not follow a symlink out of the mount', async () => {
    const r = await runTool('file-stats', { path: '/workspace' }, { mounts: mount() });
    expect(r.ok).toBe(true);
    expect(JSON.stringify(r.output)).not.toContain('link-out');
    expect(JSON.stringify(r.output)).not.toContain('secret');
  });

  it('walks a sub-folder', async () => {
    const r = await runTool('file-stats', { path: '/workspace/src/' }, { mounts: mount() });
    expect(r.ok).toBe(true);
    const want = walk(join(host, 'src'), '/workspace/src');
    expect(r.output).toEqual({ root: '/workspace/src', files: want, totals: totals(want) });
  });

  it('reads a single file', async () => {
    const r = await runTool('file-stats', { path: '/workspace/données/été.txt' }, { mounts: mount() });
    expect(r.ok).toBe(true);
    expect(report(r).files).toEqual([{ path: '/workspace/données/été.txt', ...expected(FILES['données/été.txt']!) }]);
  });

  it('filters by a file-name pattern and by a relative-path pattern', async () => {
    const byName = await runTool('file-stats', { pattern: '*.md' }, { mounts: mount() });
    expect(report(byName).files.map((f) => f.path)).toEqual(['/workspace/README.md', '/workspace/src/deep/nested/notes.md']);
    const byPath = await runTool('file-stats', { pattern: 'src/*.ts' }, { mounts: mount() });
    expect(report(byPath).files.map((f) => f.path)).toEqual(['/workspace/src/main.ts', '/workspace/src/util.ts']);
    expect(report(byPath).totals.files).toBe(2);
  });

  it('works on an in-memory tree too', async () => {
    const r = await runTool(
      'file-stats',
      {},
      {
        mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'memory', tree: { 'x.txt': 'a b\nc\n', sub: { 'y.txt': 'd' } } } }],
      },
    );
    expect(r.ok).toBe(true);
    expect(report(r).totals).toEqual({ files: 2, lines: 2, words: 4, bytes: 7 });
  });
});

describe('file-stats errors', () => {
  it('reports a missing path', async () => {
    const r = await runTool('file-stats', { path: '/workspace/nope' }, { mounts: mount() });
    expect(r.ok).toBe(false);
    expect(r.exit_code).toBe(1);
    expect(JSON.stringify(r)).toContain('path not found: /workspace/nope');
  });

  it('refuses paths outside /workspace and traversal', async () => {
    for (const path of ['/etc', '/workspacex', '/workspace/../etc', '/workspace/./src', 'workspace']) {
      const r = await runTool('file-stats', { path }, { mounts: mount() });
      expect(r.ok, path).toBe(false);
    }
  });

  it('refuses unknown fields', async () => {
    const r = await runTool('file-stats', { dir: '/workspace' }, { mounts: mount() });
    expect(r.ok).toBe(false);
  });
});
