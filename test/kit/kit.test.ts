// The C author's kit (packages/node/kit/c) through a tool built with it:
// test/kit/kit-echo echoes a value and describes what the kit parsed. It runs
// as a component under Corral (what users run) and, where the test must send
// bytes that are not a JSON value (malformed input, raw escapes), as the
// preview1 core module under node:wasi, which also shows the exit code
// itself rather than the adapter's 0/1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSync, cpSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WASI } from 'node:wasi';
import { Corral, type InvokeResult } from '@corral/node';
import { buildC } from '../../packages/node/src/author/c.js';

const work = mkdtempSync(join(tmpdir(), 'corral-kit-test-'));
const toolDir = join(work, 'kit-echo');
let corral: Corral;
let module: WebAssembly.Module;

beforeAll(async () => {
  cpSync(new URL('./kit-echo/', import.meta.url), toolDir, { recursive: true });
  await buildC({ dir: toolDir, out: join(toolDir, 'kit-echo.wasm'), moduleOut: join(toolDir, 'kit-echo.module.wasm') });
  module = new WebAssembly.Module(readFileSync(join(toolDir, 'kit-echo.module.wasm')));
  corral = await Corral.create({ bundled: false, toolDirs: [toolDir], store: false, cache: false });
  expect(corral.loadErrors).toEqual([]);
});

afterAll(async () => {
  await corral?.close();
  rmSync(work, { recursive: true, force: true });
});

function invoke(input: Record<string, unknown>): Promise<InvokeResult> {
  // Room for the big echoes below (the default output limit is 1 MiB).
  return corral.invoke('kit-echo', input, { outputLimitBytes: 64 << 20 });
}

async function output(input: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await invoke(input);
  if (!r.ok) throw new Error(`kit-echo failed: ${JSON.stringify(r.error)}`);
  return r.output as Record<string, unknown>;
}

/** Runs the core module with these stdin bytes; stdout and stderr as bytes. */
function runModule(stdin: string | Uint8Array): { code: number; stdout: Buffer; stderr: string } {
  const dir = mkdtempSync(join(work, 'run-'));
  writeFileSync(join(dir, 'in'), stdin);
  const fds = [openSync(join(dir, 'in'), 'r'), openSync(join(dir, 'out'), 'w'), openSync(join(dir, 'err'), 'w')] as const;
  const wasi = new WASI({ version: 'preview1', stdin: fds[0], stdout: fds[1], stderr: fds[2], returnOnExit: true });
  const code = wasi.start(new WebAssembly.Instance(module, wasi.getImportObject() as WebAssembly.Imports));
  for (const fd of fds) closeSync(fd);
  return { code, stdout: readFileSync(join(dir, 'out')), stderr: readFileSync(join(dir, 'err'), 'utf8') };
}

/** What a test expects `shape` to say about a JS value. */
function shapeOf(v: unknown): unknown {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return String(v);
  // The kit calls a number an integer when its text has no fraction or exponent (JSON.stringify(1e21) is "1e+21").
  if (typeof v === 'number') return /^-?\d+$/.test(JSON.stringify(v)) ? { int: v, double: v } : { double: v };
  if (typeof v === 'string') return { bytes: Buffer.byteLength(v) };
  if (Array.isArray(v)) return v.map(shapeOf);
  return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, shapeOf(x)]));
}

describe('the C kit, reading and writing every JSON type', () => {
  it('round-trips null, booleans, integers, doubles, strings, arrays and objects', async () => {
    const value = {
      nothing: null,
      yes: true,
      no: false,
      ints: [0, 42, -7, 9007199254740991, -9007199254740991],
      doubles: [1.5, -2.5e-7, 0.1, 1 / 3, 1e300, -1.7976931348623157e308, 5e-324, 1e21],
      strings: ['', 'plain', 'quote " backslash \\ slash /', '\b\f\n\r\t\u0001\u001f', 'é 中 😀', 'nul \u0000 inside'],
      nested: { empty_array: [], empty_object: {}, deep: [[[{ k: [1, 'two', null] }]]] },
      'key "with" \\ escapes\n': 'and a value',
    };
    const out = await output({ value });
    expect(out.echo).toEqual(value);
    expect(out.shape).toEqual(shapeOf(value));
  });

  it('decodes every escape, \\u surrogate pairs included, and keeps numbers as written', () => {
    const raw =
      '{"value": ["\\u00e9", "\\ud83d\\ude00", "\\u0000", "\\ud800x", "\\udc00", "\\/\\b\\f\\n\\r\\t\\"\\\\", ' +
      '9223372036854775807, -9223372036854775808, 9223372036854775808, 1E2, -0, 0.1e-2]}';
    const r = runModule(raw);
    expect(r.code).toBe(0);
    const text = r.stdout.toString('utf8');
    const out = JSON.parse(text);
    // A lone surrogate has no UTF-8 form: it becomes U+FFFD (3 bytes), as TextDecoder would.
    expect(out.echo.slice(0, 6)).toEqual(['é', '😀', '\u0000', '\ufffdx', '\ufffd', '/\b\f\n\r\t"\\']);
    expect(out.shape.slice(0, 6)).toEqual([{ bytes: 2 }, { bytes: 4 }, { bytes: 1 }, { bytes: 4 }, { bytes: 3 }, { bytes: 8 }]);
    // int64's limits are exact; one past them is not an integer but still a number.
    expect(text).toContain('{"int":9223372036854775807,');
    expect(text).toContain('{"int":-9223372036854775808,');
    expect(out.shape[8]).toEqual({ double: 2 ** 63 });
    // Numbers are echoed exactly as the input wrote them.
    expect(text).toContain(
      '"echo":["é","😀","\\u0000","�x","�","/\\b\\f\\n\\r\\t\\"\\\\",9223372036854775807,-9223372036854775808,9223372036854775808,1E2,-0,0.1e-2]',
    );
    // With an exponent or a fraction a number is not an integer, whatever its value.
    expect(out.shape.slice(9)).toEqual([{ double: 100 }, { int: 0, double: 0 }, { double: 0.001 }]);
  });

  it('writes bytes that are not UTF-8 as U+FFFD, one per maximal invalid subpart, like Buffer#toString', () => {
    const bytes = [0x61, 0xff, 0x62, 0xe2, 0x82, 0x63, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0x98, 0x80, 0xc0, 0xaf];
    const stdin = Buffer.concat([Buffer.from('{"value":"'), Buffer.from(bytes), Buffer.from('"}')]);
    const r = runModule(stdin);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.toString('utf8')).echo).toBe(Buffer.from(bytes).toString('utf8'));
  });

  it('reads typed fields, with defaults when absent', async () => {
    expect(await output({ n: 12, flag: true, name: 'Ada', ratio: 0.1 })).toEqual({ n: 12, flag: true, name: 'Ada', ratio: 0.1 });
    expect(await output({})).toEqual({ n: -1, flag: false, name: 'nobody', ratio: 0.5 });
    expect(await output({ n: 1e3, ratio: 1 / 3 })).toMatchObject({ n: 1000, ratio: 1 / 3 });
    expect(await output({ n: -9007199254740991, ratio: -1e-300 })).toMatchObject({ n: -9007199254740991, ratio: -1e-300 });
  });
});

describe('the C kit, failing in the contract shape', () => {
  it('refuses malformed JSON: {"error":{"message"}} on stdout, the message on stderr, exit 1', () => {
    const cases: [string, string][] = [
      ['{"value": [1, 2', "invalid JSON input: ',' or ']' expected, but the input ended at byte 15"],
      ['{"value": tru}', 'invalid JSON input at byte 10: unexpected token'],
      ['{"value": "a\nb"}', 'invalid JSON input at byte 12: raw control character in string (must be escaped)'],
      ['{"value": "\\x"}', 'invalid JSON input at byte 11: invalid escape sequence in string'],
      ['{"value": 01}', "invalid JSON input at byte 11: ',' or '}' expected"],
      ['{"value": 1} {}', 'invalid JSON input at byte 13: unexpected data after the object'],
      ['[1]', 'invalid JSON input at byte 0: the input must be a JSON object'],
      ['', 'invalid JSON input: a JSON object was expected, but the input ended at byte 0'],
    ];
    for (const [stdin, message] of cases) {
      const r = runModule(stdin);
      expect({ stdin, code: r.code }).toEqual({ stdin, code: 1 });
      expect(JSON.parse(r.stdout.toString('utf8'))).toEqual({ error: { message } });
      expect(r.stderr).toBe(`error: ${message}\n`);
    }
  });

  it('limits nesting to 256 levels', () => {
    const nest = (n: number) => `{"value": ${'['.repeat(n)}${']'.repeat(n)}}`;
    expect(runModule(nest(255)).code).toBe(0); // with the top-level object, 256 levels
    const r = runModule(nest(256));
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout.toString('utf8')).error.message).toBe('invalid JSON input at byte 265: nesting too deep');
  });

  it('refuses unknown and mistyped fields; Corral reports the tool message with E_UNEXPECTED_EXIT', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ bogus: 1 }, 'unknown input field "bogus" (expected one of "value", "n", "flag", "name", "ratio", "fail", "stdio", "misuse")'],
      [{ n: 'x' }, '"n" must be an integer, got a string'],
      [{ n: 1.5 }, '"n" must be an integer that fits in 64 bits'],
      [{ flag: null }, '"flag" must be a boolean, got null'],
      [{ name: ['a'] }, '"name" must be a string, got an array'],
      [{ ratio: {} }, '"ratio" must be a number, got an object'],
      [{ fail: 'custom "quoted" message: é' }, 'custom "quoted" message: é'],
    ];
    for (const [input, message] of cases) {
      const r = await invoke(input);
      expect(r.ok).toBe(false);
      expect(r.error).toMatchObject({ code: 'E_UNEXPECTED_EXIT', details: { exit_code: 1, tool_error: { message } } });
      expect(r.error?.message).toContain(message);
    }
  });
});

describe('the C kit, big inputs and outputs (the preview1 adapter allocates through cabi_realloc)', () => {
  // Under ~1 MiB the adapter's own arena suffices; a tool without cabi_realloc traps beyond it.
  const big = 'ab"\\\n€😀 '.repeat(300_000); // 4.8 MB of UTF-8, 6.3 MB as JSON

  it('echoes a 4.8 MB string through the component', async () => {
    const out = await output({ value: big });
    expect(Buffer.byteLength(big)).toBeGreaterThan(3_000_000);
    expect(out.shape).toEqual({ bytes: Buffer.byteLength(big) });
    expect(out.echo === big).toBe(true);
  });

  it('loses no stdio output when a tool prints its big answer with fwrite', async () => {
    const value = [big, 1, 'end'];
    const out = await output({ value, stdio: true });
    expect(out.echo).toEqual(value);
  });
});

describe('the writer used out of order', () => {
  // Each would print JSON no one can parse (found by a new user: a key after a key built and ran).
  for (const [misuse, message] of [
    ['key-after-key', /corral_key\("count_only"\) right after another key, before its value/],
    ['value-without-key', /a value inside an object needs corral_key first/],
    ['key-in-array', /corral_key\("a"\) outside an object/],
    ['wrong-end', /corral_end_object closes an array/],
    ['end-after-key', /corral_end_object right after a key, before its value/],
    ['left-open', /the output ends with 1 array\(s\)\/object\(s\) still open/],
  ] as const) {
    it(`${misuse}: the tool stops with the error shape, naming the call`, async () => {
      const r = await invoke({ misuse });
      expect(r.ok).toBe(false);
      expect(r.error).toMatchObject({ code: 'E_UNEXPECTED_EXIT', details: { tool_error: { message: expect.stringMatching(message) } } });
    });
  }
});
