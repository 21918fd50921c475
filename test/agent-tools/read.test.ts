// The read tool through Corral, on a host folder mounted read-only at
// /workspace: line ranges, both limits and their marker, binary refusal
// (git's NUL-in-8000-bytes test), and what it says about encodings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { Corral, type InvokeResult } from '@corral/node';

const spec = JSON.parse(readFileSync(new URL('../../wasm-tools/read/tool-spec.json', import.meta.url), 'utf8'));
const ajv = new Ajv({ strict: false, allErrors: true });
const validOutput = ajv.compile(spec.output_schema);

interface ReadOutput {
  path: string;
  encoding: string;
  line_endings: string;
  total_lines: number;
  total_bytes: number;
  start_line: number;
  end_line: number;
  content: string;
  truncated: boolean;
  next_offset_line?: number;
  invalid_utf8_bytes?: number;
  notes: string[];
}

const lines100 = Array.from({ length: 100 }, (_, i) => `line ${i + 1}: ${'é'.repeat(i % 4)}`).join('\n') + '\n';
const FILES: Record<string, string | Buffer> = {
  'a.txt': lines100,
  'empty.txt': '',
  'no-eol.txt': 'one\ntwo',
  'crlf.txt': 'one\r\ntwo\r\n',
  'src/deep/é.ts': 'export const é = 1;\n',
  'bin.dat': Buffer.concat([Buffer.from('PK header'), Buffer.from([0, 1, 2, 3]), Buffer.from('\nmore\n')]),
  'late-nul.txt': Buffer.concat([Buffer.from('x'.repeat(8000) + '\n'), Buffer.from([0]), Buffer.from('\n')]),
  'utf16le.txt': Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('héllo\nwörld 😀\n', 'utf16le')]),
  'utf16be.txt': Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from('héllo\n', 'utf16le').swap16()]),
  'bom8.txt': Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('first\nsecond\n')]),
  'latin1.txt': Buffer.from('caf\xe9\nna\xefve\nplain\n', 'latin1'),
  'long-line.txt': 'ab€'.repeat(1000) + '\nshort\n',
};

let host: string;
let corral: Corral;
const mount = () => [{ guest: '/workspace', access: 'read' as const, source: { kind: 'host' as const, path: host } }];

async function read(input: Record<string, unknown>): Promise<InvokeResult> {
  return corral.invoke('read', input, { mounts: mount() });
}
async function ok(input: Record<string, unknown>): Promise<ReadOutput> {
  const r = await read(input);
  expect(r.error, JSON.stringify(r.error)).toBeNull();
  expect(validOutput(r.output), ajv.errorsText(validOutput.errors)).toBe(true);
  return r.output as ReadOutput;
}
async function refused(input: Record<string, unknown>): Promise<string> {
  const r = await read(input);
  expect(r.ok).toBe(false);
  return r.error?.message ?? '';
}

/** `cat -n` of lines first..last (1-based) of text. */
function numbered(text: string, first: number, last: number): string {
  const ls = text.split('\n');
  if (ls.at(-1) === '') ls.pop();
  return ls
    .slice(first - 1, last)
    .map((l, i) => `${String(first + i).padStart(6)}\t${l}\n`)
    .join('');
}

beforeAll(async () => {
  host = mkdtempSync(join(tmpdir(), 'corral-read-'));
  for (const [rel, content] of Object.entries(FILES)) {
    const p = join(host, ...rel.split('/'));
    mkdirSync(join(p, '..'), { recursive: true });
    writeFileSync(p, content);
  }
  mkdirSync(join(host, 'folder'));
  corral = await Corral.create({ store: false, size: 1 });
});

afterAll(async () => {
  await corral?.close();
  rmSync(host, { recursive: true, force: true });
});

describe('read: lines and ranges', () => {
  it('shows a whole file with line numbers as cat -n does', async () => {
    const out = await ok({ path: 'a.txt' });
    expect(out).toMatchObject({ path: 'a.txt', encoding: 'utf-8', line_endings: 'lf', total_lines: 100, start_line: 1, end_line: 100 });
    expect(out.total_bytes).toBe(Buffer.byteLength(lines100));
    expect(out.content).toBe(numbered(lines100, 1, 100));
    expect(out.truncated).toBe(false);
    expect(out.next_offset_line).toBeUndefined();
  });

  it('takes a path under /workspace or relative to it, in a sub-folder with a non-ASCII name', async () => {
    for (const path of ['src/deep/é.ts', '/workspace/src/deep/é.ts', 'src//deep/é.ts']) {
      const out = await ok({ path });
      expect(out.path).toBe('src/deep/é.ts');
      expect(out.content).toBe('     1\texport const é = 1;\n');
    }
  });

  it('shows a range, with a marker and where to continue', async () => {
    const out = await ok({ path: 'a.txt', offset_line: 10, limit_lines: 5 });
    expect(out.start_line).toBe(10);
    expect(out.end_line).toBe(14);
    expect(out.truncated).toBe(true);
    expect(out.next_offset_line).toBe(15);
    expect(out.content).toBe(
      numbered(lines100, 10, 14) + '[truncated: showed lines 10-14 of 100 (limit_lines 5 reached); continue with offset_line 15]\n',
    );
  });

  it('a range that reaches the end is not truncated', async () => {
    const out = await ok({ path: 'a.txt', offset_line: 98, limit_lines: 10 });
    expect(out.content).toBe(numbered(lines100, 98, 100));
    expect([out.start_line, out.end_line, out.truncated]).toEqual([98, 100, false]);
  });

  it('stops at max_bytes on a whole line', async () => {
    const out = await ok({ path: 'a.txt', max_bytes: 100 });
    // Whole lines whose bytes (newlines included) fit in 100.
    let used = 0;
    let n = 0;
    for (const l of lines100.split('\n').slice(0, -1)) {
      if (used + Buffer.byteLength(l) + 1 > 100) break;
      used += Buffer.byteLength(l) + 1;
      n++;
    }
    expect(out.end_line).toBe(n);
    expect(out.next_offset_line).toBe(n + 1);
    expect(out.content).toBe(
      numbered(lines100, 1, n) + `[truncated: showed lines 1-${n} of 100 (max_bytes 100 reached); continue with offset_line ${n + 1}]\n`,
    );
  });

  it('shows the start of a line longer than max_bytes, never cutting a UTF-8 character', async () => {
    const out = await ok({ path: 'long-line.txt', max_bytes: 10 });
    // 'ab€ab€' is 10 bytes; a cut at 11 would split the second '€'.
    expect(out.content.split('\n')[0]).toBe('     1\tab€ab€');
    expect(out.content).toContain('[truncated: line 1 is 5001 bytes, longer than max_bytes 10; showed its first 10 bytes');
    expect(out.next_offset_line).toBe(2);
    const out2 = await ok({ path: 'long-line.txt', max_bytes: 12 });
    expect(out2.content.split('\n')[0]).toBe('     1\tab€ab€ab');
    const out3 = await ok({ path: 'long-line.txt', max_bytes: 13 });
    expect(out3.content.split('\n')[0]).toBe('     1\tab€ab€ab'); // 13 would end inside '€'
  });

  it('an empty file has no lines; a file without a last newline says so', async () => {
    const empty = await ok({ path: 'empty.txt' });
    expect(empty).toMatchObject({ total_lines: 0, start_line: 0, end_line: 0, content: '', truncated: false, line_endings: 'none' });
    const noEol = await ok({ path: 'no-eol.txt' });
    expect(noEol.content).toBe('     1\tone\n     2\ttwo\n');
    expect(noEol.total_lines).toBe(2);
    expect(noEol.notes.join(' ')).toContain('no newline at its end');
  });

  it('reports CRLF line endings and keeps the \\r in the content', async () => {
    const out = await ok({ path: 'crlf.txt' });
    expect(out.line_endings).toBe('crlf');
    expect(out.content).toBe('     1\tone\r\n     2\ttwo\r\n');
    expect(out.notes.join(' ')).toContain('CRLF');
  });

  it('refuses an offset past the end', async () => {
    expect(await refused({ path: 'a.txt', offset_line: 101 })).toContain('"offset_line" 101 is past the end of a.txt, which has 100 lines');
  });
});

describe('read: binary files and encodings', () => {
  it('refuses a binary file (a NUL in the first 8000 bytes) with a hint', async () => {
    const msg = await refused({ path: 'bin.dat' });
    expect(msg).toContain('bin.dat looks binary (a NUL byte at offset 9');
    expect(msg).toContain('file-stats');
  });

  it('shows a file whose first NUL is past byte 8000, as git would diff it', async () => {
    const out = await ok({ path: 'late-nul.txt', offset_line: 2 });
    expect(out.content).toBe('     2\t\u0000\n');
  });

  it('decodes UTF-16 with a byte order mark and says so', async () => {
    const le = await ok({ path: 'utf16le.txt' });
    expect(le.encoding).toBe('utf-16le');
    expect(le.content).toBe('     1\théllo\n     2\twörld 😀\n');
    expect(le.notes[0]).toContain('decoded from UTF-16LE');
    const be = await ok({ path: 'utf16be.txt' });
    expect(be.encoding).toBe('utf-16be');
    expect(be.content).toBe('     1\théllo\n');
  });

  it('reports a UTF-8 byte order mark and does not show it', async () => {
    const out = await ok({ path: 'bom8.txt' });
    expect(out.encoding).toBe('utf-8-bom');
    expect(out.content).toBe('     1\tfirst\n     2\tsecond\n');
  });

  it('reports bytes that are not UTF-8: how many and where, shown as U+FFFD', async () => {
    const out = await ok({ path: 'latin1.txt' });
    expect(out.encoding).toBe('non-utf-8');
    expect(out.invalid_utf8_bytes).toBe(2);
    expect(out.content).toBe('     1\tcaf\uFFFD\n     2\tna\uFFFDve\n     3\tplain\n');
    expect(out.notes[0]).toContain('2 bytes are not valid UTF-8 (the first at line 1, byte offset 3)');
  });
});

describe('read: refusals', () => {
  it('refuses absolute paths outside /workspace and .. segments, with a clear sentence', async () => {
    expect(await refused({ path: '/etc/passwd' })).toContain('"path" must be relative to /workspace');
    expect(await refused({ path: '../outside.txt' })).toContain("must not contain '.' or '..' segments");
    expect(await refused({ path: 'src/../../x' })).toContain("'..'");
    expect(await refused({ path: '/workspace' })).toContain('must name a file under /workspace');
  });

  it('says what is wrong with a missing file or a folder', async () => {
    expect(await refused({ path: 'nope.txt' })).toContain('cannot read nope.txt: no such file');
    expect(await refused({ path: 'folder' })).toContain('cannot read folder: is a folder, not a file');
  });

  it('refuses bad limits and unknown fields (the schema, before the tool runs)', async () => {
    for (const input of [
      { path: 'a.txt', offset_line: 0 },
      { path: 'a.txt', limit_lines: 0 },
      { path: 'a.txt', lines: 3 },
    ]) {
      const r = await read(input);
      expect(r.ok, JSON.stringify(input)).toBe(false);
      expect(r.error?.code).toBe('E_INPUT_VALIDATION');
    }
  });
});
