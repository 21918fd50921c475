// The edit tool through Corral, on a git repository mounted read-write at
// /workspace: results checked against the same replacement done in JS, the
// diff it reports checked against `git diff` and round-tripped through
// `git apply`; ambiguous and missing matches refused with the file untouched.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { Corral, type InvokeResult } from '@corral/node';

const spec = JSON.parse(readFileSync(new URL('../../wasm-tools/edit/tool-spec.json', import.meta.url), 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
const validOutput = ajv.compile(spec.output_schema);

interface EditOutput {
  path: string;
  changed: boolean;
  edits: { replacements: number; lines: number[] }[];
  additions: number;
  deletions: number;
  diff: string;
}
interface Edit {
  old_text: string;
  new_text: string;
  replace_all?: boolean;
}

const GIT_ENV = {
  PATH: process.env.PATH,
  LC_ALL: 'C',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'T',
  GIT_AUTHOR_EMAIL: 't@example.com',
  GIT_COMMITTER_NAME: 'T',
  GIT_COMMITTER_EMAIL: 't@example.com',
};
const git = (cwd: string, args: string[], input?: string) =>
  execFileSync('git', ['-c', 'core.autocrlf=false', '-c', 'core.quotePath=true', ...args], { cwd, env: GIT_ENV, input, encoding: 'utf8' });

const numbers = Array.from({ length: 40 }, (_, i) => `n${i + 1}`).join('\n') + '\n';
const FILES: Record<string, string> = {
  'n.txt': numbers,
  'dup.txt': 'x\nfoo\ny\nfoo\nz\nfoo bar foo\n',
  'crlf.txt': 'alpha\r\nbeta\r\ngamma\r\n',
  'no-eol.txt': 'first\nlast',
  'données/été.md': '# Été\n\nIl fait chaud.\n',
  'with space.txt': 'a\nb\nc\n',
};

let host: string;
let corral: Corral;
const mount = () => [{ guest: '/workspace', access: 'read-write' as const, source: { kind: 'host' as const, path: host } }];
const file = (rel: string) => readFileSync(join(host, rel), 'utf8');

async function edit(path: string, edits: Edit[]): Promise<InvokeResult> {
  return corral.invoke('edit', { path, edits }, { mounts: mount() });
}
async function ok(path: string, edits: Edit[]): Promise<EditOutput> {
  const r = await edit(path, edits);
  expect(r.error, JSON.stringify(r.error)).toBeNull();
  expect(validOutput(r.output), ajv.errorsText(validOutput.errors)).toBe(true);
  return r.output as EditOutput;
}
/** A refused edit: the message, after checking that the file and the folder are as they were. */
async function refused(path: string, edits: Edit[]): Promise<string> {
  const before = file(path);
  const r = await edit(path, edits);
  expect(r.ok).toBe(false);
  expect(file(path)).toBe(before);
  expect(git(host, ['status', '--porcelain', '--untracked-files=all'])).toBe('');
  return r.error?.message ?? '';
}
/** `git diff` for one file, without the index line (the tool computes no blob ids). */
const gitDiff = (rel: string) =>
  git(host, ['diff', '--no-indent-heuristic', '--', rel])
    .split('\n')
    .filter((l) => !l.startsWith('index '))
    .join('\n');

beforeAll(async () => {
  corral = await Corral.create({ store: false, size: 1 });
});
afterAll(async () => {
  await corral?.close();
  rmSync(host, { recursive: true, force: true });
});
beforeEach(() => {
  if (host) rmSync(host, { recursive: true, force: true });
  host = mkdtempSync(join(tmpdir(), 'corral-edit-'));
  for (const [rel, content] of Object.entries(FILES)) {
    mkdirSync(join(host, rel, '..'), { recursive: true });
    writeFileSync(join(host, rel), content);
  }
  git(host, ['init', '-q']);
  git(host, ['add', '-A']);
  git(host, ['commit', '-qm', 'start']);
});

describe('edit: replacements', () => {
  it('replaces a unique match and reports the diff git prints', async () => {
    const out = await ok('n.txt', [{ old_text: 'n20\n', new_text: 'twenty\nand more\n' }]);
    expect(file('n.txt')).toBe(numbers.replace('n20\n', 'twenty\nand more\n'));
    expect(out).toMatchObject({ path: 'n.txt', changed: true, edits: [{ replacements: 1, lines: [20] }], additions: 2, deletions: 1 });
    expect(out.diff).toBe(gitDiff('n.txt'));
    expect(out.diff).toContain('--- a/n.txt\n+++ b/n.txt\n@@ -17,7 +17,8 @@ n16\n n17\n');
  });

  it('applies several edits in order, each to the text the previous left, with one diff', async () => {
    const edits: Edit[] = [
      { old_text: 'n2\n', new_text: 'two\n' },
      { old_text: 'two\nn3', new_text: 'two\nthree' },
      { old_text: 'n39\n', new_text: '' },
    ];
    const out = await ok('n.txt', edits);
    let want = numbers;
    for (const e of edits) want = want.replace(e.old_text, e.new_text);
    expect(file('n.txt')).toBe(want);
    expect(out.edits).toEqual([
      { replacements: 1, lines: [2] },
      { replacements: 1, lines: [2] },
      { replacements: 1, lines: [39] },
    ]);
    expect(out.diff).toBe(gitDiff('n.txt'));
    expect(out.diff.match(/^@@/gm)).toHaveLength(2);
  });

  it('replace_all replaces every non-overlapping match and lists their lines', async () => {
    const out = await ok('dup.txt', [{ old_text: 'foo', new_text: 'qux', replace_all: true }]);
    expect(file('dup.txt')).toBe(FILES['dup.txt']!.replaceAll('foo', 'qux'));
    expect(out.edits).toEqual([{ replacements: 4, lines: [2, 4, 6, 6] }]);
    expect(out.diff).toBe(gitDiff('dup.txt'));
  });

  it('keeps CRLF, non-ASCII paths, names with spaces and a missing last newline as git shows them', async () => {
    const crlf = await ok('crlf.txt', [{ old_text: 'beta\r\n', new_text: 'BETA\r\n' }]);
    expect(file('crlf.txt')).toBe('alpha\r\nBETA\r\ngamma\r\n');
    expect(crlf.diff).toBe(gitDiff('crlf.txt'));
    const eol = await ok('no-eol.txt', [{ old_text: 'last', new_text: 'LAST' }]);
    expect(eol.diff).toBe(gitDiff('no-eol.txt'));
    expect(eol.diff).toContain('\\ No newline at end of file');
    const accents = await ok('/workspace/données/été.md', [{ old_text: 'chaud', new_text: 'très chaud' }]);
    expect(accents.path).toBe('données/été.md');
    expect(accents.diff).toBe(gitDiff('données/été.md'));
    expect(accents.diff).toContain('"a/donn\\303\\251es/\\303\\251t\\303\\251.md"');
    const spaced = await ok('with space.txt', [{ old_text: 'b\n', new_text: 'B\n' }]);
    expect(spaced.diff).toBe(gitDiff('with space.txt'));
  });

  it('edits that cancel out leave the file untouched and report no diff', async () => {
    const out = await ok('n.txt', [
      { old_text: 'n5\n', new_text: 'five\n' },
      { old_text: 'five\n', new_text: 'n5\n' },
    ]);
    expect(out).toMatchObject({ changed: false, diff: '', additions: 0, deletions: 0 });
    expect(git(host, ['status', '--porcelain'])).toBe('');
  });

  it("round-trips: random edits; the reported diff is git's and git apply of it gives the edited file", async () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const words = ['a', 'b', 'c', '{', '}', '', 'return x;', '  if (y) {'];
    for (let round = 0; round < 12; round++) {
      const lines = Array.from({ length: 30 + rand(60) }, (_, i) => `${words[rand(words.length)]} ${i % 5 ? '' : i}`.trim());
      const text = lines.join('\n') + (rand(3) ? '\n' : '');
      writeFileSync(join(host, 'r.txt'), text);
      git(host, ['add', 'r.txt']);
      git(host, ['commit', '-qm', `round ${round}`]);
      // Unique anchors: lines carrying their own number.
      const edits: Edit[] = [];
      let want = text;
      for (const i of [5, 10, 20, 25].filter(() => rand(2))) {
        const anchor = `${lines[i]}\n`;
        if (want.split(anchor).length !== 2) continue;
        const e = { old_text: anchor, new_text: rand(2) ? '' : `changed ${i}\nmore ${i}\n` };
        edits.push(e);
        want = want.replace(e.old_text, e.new_text);
      }
      if (edits.length === 0) continue;
      const out = await ok('r.txt', edits);
      expect(file('r.txt')).toBe(want);
      expect(out.diff).toBe(gitDiff('r.txt'));
      // Back to the original, then git apply the tool's diff.
      git(host, ['checkout', '--', 'r.txt']);
      git(host, ['apply'], out.diff);
      expect(file('r.txt')).toBe(want);
      git(host, ['checkout', '--', 'r.txt']);
    }
  });
});

describe('edit: refusals leave the file as it was', () => {
  it('refuses an ambiguous match with the count and the lines', async () => {
    const msg = await refused('dup.txt', [{ old_text: 'foo', new_text: 'bar' }]);
    expect(msg).toContain('edits[0]: old_text matches 4 times in dup.txt (lines 2, 4, 6, 6)');
    expect(msg).toContain('replace_all');
    // 'n1' is also in n10..n19: the count says so.
    expect(await refused('n.txt', [{ old_text: 'n1', new_text: 'x' }])).toContain(
      'old_text matches 11 times in n.txt (lines 1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)',
    );
  });

  it('refuses a missing match, naming the edit, and hints at CRLF', async () => {
    expect(await refused('n.txt', [{ old_text: 'n999', new_text: 'x' }])).toContain('edits[0]: old_text not found in n.txt');
    expect(await refused('crlf.txt', [{ old_text: 'alpha\nbeta', new_text: 'x' }])).toContain('CRLF');
  });

  it('is atomic: the second edit fails, so the first is not written either', async () => {
    const msg = await refused('n.txt', [
      { old_text: 'n7\n', new_text: 'seven\n' },
      { old_text: 'no such text', new_text: 'x' },
    ]);
    expect(msg).toContain('edits[1]: old_text not found');
    expect(msg).toContain('nothing was changed');
  });

  it('says when an earlier edit of the same call consumed the text', async () => {
    const msg = await refused('n.txt', [
      { old_text: 'n7\n', new_text: 'seven\n' },
      { old_text: 'n7\n', new_text: 'x' },
    ]);
    expect(msg).toContain('an earlier edit of this call changed it');
  });

  it('leaves no temporary file behind after a successful edit', async () => {
    await ok('n.txt', [{ old_text: 'n33\n', new_text: '33\n' }]);
    expect(readdirSync(host).filter((n) => n.includes('corral'))).toEqual([]);
  });

  it('refuses binary and UTF-16 files, missing files and paths out of /workspace', async () => {
    writeFileSync(join(host, 'bin'), Buffer.from([1, 0, 2]));
    writeFileSync(join(host, 'u16'), Buffer.from([0xff, 0xfe, 0x61, 0]));
    git(host, ['add', '-A']);
    git(host, ['commit', '-qm', 'more']);
    expect(await refused('bin', [{ old_text: 'a', new_text: 'b' }])).toContain('looks binary');
    expect(await refused('u16', [{ old_text: 'a', new_text: 'b' }])).toContain('utf-16le');
    expect((await edit('missing.txt', [{ old_text: 'a', new_text: 'b' }])).error?.message).toContain('no such file');
    expect((await edit('../x', [{ old_text: 'a', new_text: 'b' }])).error?.message).toContain("'..'");
    expect((await edit('/tmp/x', [{ old_text: 'a', new_text: 'b' }])).error?.message).toContain('must be relative to /workspace');
    expect(await refused('n.txt', [{ old_text: 'n1', new_text: 'n1' }])).toContain('the same');
  });

  it('refuses a read-only mount', async () => {
    const r = await corral.invoke(
      'edit',
      { path: 'n.txt', edits: [{ old_text: 'n40', new_text: 'x' }] },
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: host } }] },
    );
    expect(r.ok).toBe(false);
    expect(file('n.txt')).toBe(numbers);
  });
});
