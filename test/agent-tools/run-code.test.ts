/**
 * run-code: snippets run through Corral give the same stdout as the native
 * interpreter (`node -e`, `ruby -e`), and hostile snippets end in the right
 * error code. The engines are built from their npm packages on first use
 * (wasm-tools/run-code/build.mjs: about 15 s for JavaScript, 20-60 s for
 * Ruby), since they are not committed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Corral } from '@corral/node';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RUN_CODE = join(ROOT, 'wasm-tools/run-code');
const JS_WASM = join(RUN_CODE, 'js/run-code-js.wasm');
const RUBY_WASM = join(RUN_CODE, 'ruby/run-code-ruby.wasm');

function build(engine: string, wasm: string): void {
  if (existsSync(wasm)) return;
  const run = spawnSync(process.execPath, [join(RUN_CODE, 'build.mjs'), engine], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`building the ${engine} engine failed:\n${run.stdout}${run.stderr}`);
}

let corral: Corral;
beforeAll(async () => {
  build('js', JS_WASM);
  build('ruby', RUBY_WASM);
  corral = await Corral.create({ bundled: false, toolDirs: [join(RUN_CODE, 'js'), join(RUN_CODE, 'ruby')], store: false, size: 1 });
  // The first call transpiles the JavaScript component (cached afterwards): not part of any test's time.
  await corral.invoke('run-code-js', { language: 'javascript', code: '1' });
}, 600_000);
afterAll(() => corral?.close());

interface Answer {
  stdout: string;
  stderr: string;
  exit_code: number;
  result?: string;
}

/** run-code-ruby declares a read mount at /workspace, and every declared mount is bound: an empty one unless a test gives its own. */
const EMPTY_WORKSPACE = [{ guest: '/workspace', access: 'read' as const, source: { kind: 'memory', tree: {} } }];

async function run(tool: string, input: Record<string, unknown>, options: Parameters<Corral['invoke']>[2] = {}) {
  const mounts = tool === 'run-code-ruby' ? EMPTY_WORKSPACE : [];
  return corral.invoke<Answer>(tool, input, { mounts, ...options });
}

const JS_SNIPPETS = [
  'console.log("hello, world")',
  'for (let i = 1; i <= 15; i++) console.log(i % 15 ? (i % 5 ? (i % 3 ? i : "Fizz") : "Buzz") : "FizzBuzz")',
  'console.log([1, 2, 3].map((x) => x * x), { a: 1, "b-c": "x", d: [true, null] })',
  'const fib = (n) => (n < 2 ? n : fib(n - 1) + fib(n - 2)); console.log(fib(20))',
  'console.log(JSON.stringify({ s: "\\u00e9\\u{1F600}", n: 1.5e300, arr: [1, "2"] }))',
  'console.log([..."hello"].reverse().join(""), "abc".padStart(6, "-"), (255).toString(16))',
  'class A { constructor(x) { this.x = x } get double() { return this.x * 2 } }; console.log(new A(21).double)',
  'console.log(new Map([["k", 1]]), new Set([1, 2]), 2n ** 64n)',
  'console.log("%s has %d items", "cart", 3); console.log([1, [2, [3, [4]]]])',
  'const c = {}; for (const w of "the quick the lazy the end".split(" ")) c[w] = (c[w] || 0) + 1; console.log(Object.entries(c).sort((a, b) => b[1] - a[1]))',
  'console.log(Math.max(...[3, 9, 2]), Number("0x1f"), parseInt("08"), 0.1 + 0.2)',
  'console.log(new Date(0).toISOString(), typeof undefined, [] + {}, null ?? "default"); process.stdout.write("no newline")',
];

describe('run-code-js', { timeout: 60_000 }, () => {
  it.each(JS_SNIPPETS)('prints what node -e prints: %s', async (code) => {
    const native = execFileSync(process.execPath, ['-e', code], { encoding: 'utf8' });
    const result = await run('run-code-js', { language: 'javascript', code });
    expect(result.error).toBeNull();
    expect(result.output).toMatchObject({ stdout: native, exit_code: 0 });
  });

  it('gives stdin, args, the exit code and the last value', async () => {
    const code = 'console.log(require("fs").readFileSync(0, "utf8").trim().toUpperCase(), process.argv.slice(1)); 6 * 7';
    const result = await run('run-code-js', { language: 'js', code, stdin: 'abc\n', args: ['x', 'y z'] });
    expect(result.output).toEqual({ stdout: "ABC [ 'x', 'y z' ]\n", stderr: '', exit_code: 0, result: '42' });
    // A snippet that did not succeed has no result.
    const failed = await run('run-code-js', { language: 'js', code: 'process.exitCode = 4; 6 * 7' });
    expect(failed.output).toEqual({ stdout: '', stderr: '', exit_code: 4 });
    const exited = await run('run-code-js', { language: 'js', code: 'console.log(1); process.exit(3); console.log(2)' });
    expect(exited.output).toEqual({ stdout: '1\n', stderr: '', exit_code: 3 });
  });

  it('reports an uncaught exception on stderr with exit code 1', async () => {
    const result = await run('run-code-js', { language: 'js', code: 'console.log("before"); throw new TypeError("boom")' });
    expect(result.output).toMatchObject({ stdout: 'before\n', exit_code: 1 });
    expect(result.output!.stderr).toMatch(/^Uncaught TypeError: boom/);
  });

  it('stops an infinite loop at the timeout: E_RESOURCE_EXHAUSTED (time)', async () => {
    const result = await run('run-code-js', { language: 'js', code: 'for (;;) {}' }, { timeoutMs: 2000 });
    expect(result.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'time' } });
  });

  it('stops an allocation bomb at the memory cap: E_RESOURCE_EXHAUSTED (memory)', async () => {
    const code = 'const held = []; for (;;) held.push(new Uint8Array(1 << 24))';
    const result = await run('run-code-js', { language: 'js', code });
    expect(result.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'memory' } });
  });

  it('fails a file read with ENOENT, as Node does for a file that is not there (the component has no filesystem)', async () => {
    const result = await run('run-code-js', { language: 'js', code: 'require("fs").readFileSync("/etc/passwd", "utf8")' });
    expect(result.output).toMatchObject({ stdout: '', exit_code: 1 });
    expect(result.output!.stderr).toMatch(/^Uncaught Error: ENOENT: no such file or directory, open '\/etc\/passwd'/);
  });

  it('fails a network call as Node does without a network: fetch failed, exit code 1', async () => {
    const result = await run('run-code-js', { language: 'js', code: 'fetch("http://example.com/")' });
    expect(result.output).toMatchObject({ stdout: '', exit_code: 1 });
    expect(result.output!.stderr).toMatch(/^Uncaught TypeError: fetch failed/);
  });
});

// Debian's ruby is 3.1 and the engine 3.4: these snippets print the same in both (no Hash#inspect, no error text).
const RUBY_SNIPPETS = [
  'puts "hello, world"',
  '(1..15).each { |i| puts i % 15 == 0 ? "FizzBuzz" : i % 5 == 0 ? "Buzz" : i % 3 == 0 ? "Fizz" : i }',
  'p [1, 2, 3].map { |x| x * x }, "quoted", :sym, 1.5, nil',
  'def fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2); puts fib(20)',
  'require "json"; puts JSON.generate({ "s" => "\\u00e9", "arr" => [1, "2", nil] })',
  'puts "hello".reverse, "abc".rjust(6, "-"), 255.to_s(16), 2**100',
  'Point = Struct.new(:x, :y) do def norm = Math.sqrt(x * x + y * y) end; puts Point.new(3, 4).norm',
  'counts = Hash.new(0); "the quick the lazy the end".split.each { |w| counts[w] += 1 }; counts.sort_by { |w, n| [-n, w] }.each { |w, n| puts "#{w} #{n}" }',
  'printf("%05.2f|%-4s|%x\\n", 3.14159, "ab", 255); $stdout.write("no newline")',
  'require "set"; s = Set[3, 1, 2]; puts s.include?(2), s.sort.inspect, [1, 2, 3, 4].each_slice(2).to_a.inspect',
];

describe('run-code-ruby', { timeout: 60_000 }, () => {
  it.each(RUBY_SNIPPETS)('prints what ruby -e prints: %s', async (code) => {
    const native = execFileSync('ruby', ['-e', code], { encoding: 'utf8' });
    const result = await run('run-code-ruby', { language: 'ruby', code });
    expect(result.error).toBeNull();
    expect(result.output).toMatchObject({ stdout: native, exit_code: 0 });
  });

  it('gives stdin, ARGV, the exit status and the last value', async () => {
    const result = await run('run-code-ruby', {
      language: 'ruby',
      code: 'puts STDIN.read.upcase; p ARGV; [1, 2].sum',
      stdin: 'abc\n',
      args: ['x'],
    });
    expect(result.output).toEqual({ stdout: 'ABC\n["x"]\n', stderr: '', exit_code: 0, result: '3' });
    const exited = await run('run-code-ruby', { language: 'ruby', code: 'puts 1; exit 3' });
    expect(exited.output).toEqual({ stdout: '1\n', stderr: '', exit_code: 3 });
  });

  it('reports an uncaught exception as ruby -e does, with exit code 1', async () => {
    const result = await run('run-code-ruby', { language: 'ruby', code: 'raise ArgumentError, "boom"' });
    expect(result.output).toEqual({ stdout: '', stderr: "-e:1:in '<main>': boom (ArgumentError)\n", exit_code: 1 });
  });

  it('reads the mounts it is given', async () => {
    const tree = { 'notes.txt': 'from the mount\n' };
    const result = await run(
      'run-code-ruby',
      { language: 'ruby', code: 'print File.read("/workspace/notes.txt")' },
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'memory', tree } }] },
    );
    expect(result.output).toMatchObject({ stdout: 'from the mount\n', exit_code: 0 });
  });

  it('stops an infinite loop at the timeout: E_RESOURCE_EXHAUSTED (time)', async () => {
    const result = await run('run-code-ruby', { language: 'ruby', code: 'loop {}' }, { timeoutMs: 3000 });
    expect(result.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'time' } });
  });

  it('stops an allocation bomb at the memory cap: E_RESOURCE_EXHAUSTED (memory)', async () => {
    const result = await run('run-code-ruby', { language: 'ruby', code: 'a = []; loop { a << "x" * (1 << 20) }' }, { timeoutMs: 30_000 });
    expect(result.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'memory' } });
  });

  it('fails a read outside the mount with the error Ruby gives and exit code 1', async () => {
    // Nothing but the mounts exists: ENOENT. A `..` climb out of a mount is refused by Corral's filesystem: EPERM.
    for (const [path, error] of [
      ['/etc/passwd', /No such file or directory @ rb_sysopen - \/etc\/passwd \(Errno::ENOENT\)/],
      ['/workspace/../etc/passwd', /Operation not permitted @ rb_sysopen - \/workspace\/\.\.\/etc\/passwd \(Errno::EPERM\)/],
    ] as const) {
      const result = await run('run-code-ruby', { language: 'ruby', code: `File.read(${JSON.stringify(path)})` });
      expect(result.output).toMatchObject({ stdout: '', exit_code: 1 });
      expect(result.output!.stderr).toMatch(error);
    }
  });

  it('has no network: the socket library does not exist (LoadError, exit code 1)', async () => {
    const result = await run('run-code-ruby', { language: 'ruby', code: 'require "net/http"; Net::HTTP.get(URI("http://example.com/"))' });
    expect(result.output).toMatchObject({ stdout: '', exit_code: 1 });
    expect(result.output!.stderr).toMatch(/cannot load such file -- socket \(LoadError\)/);
  });
});
