// A Rust tool from scratch through the real CLI: init -> build -> test, a
// failing example, --update, and an input of more than 3 MB (the case that
// traps when the module does not export cabi_realloc).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { corral, workdir } from './cli.js';

describe('a Rust tool', () => {
  it('builds and passes its examples at once, then fails a wrong one with a diff', () => {
    const cwd = workdir();
    const init = corral(['init', 'wc', '--lang', 'rust'], cwd);
    expect(init.status).toBe(0);
    const build = corral(['build', 'wc'], cwd);
    expect(build.stderr + build.stdout).toMatch(/Built wc\/wc.wasm \(\d+(\.\d)? KiB\) in [\d.]+ s/);
    expect(build.status).toBe(0);
    const test = corral(['test', 'wc'], cwd);
    expect(test.stdout).toContain('PASS hello');
    expect(test.status).toBe(0);
    // The closing note of issue 12 quotes this.
    console.log(
      `rust: init ${init.ms} ms, build ${build.ms} ms, first test ${test.ms} ms: ${init.ms + build.ms + test.ms} ms to the first successful call`,
    );

    writeFileSync(join(cwd, 'wc', 'examples', 'wrong.input.json'), '{"text": "a bb ccc"}');
    writeFileSync(join(cwd, 'wc', 'examples', 'wrong.expected.json'), '{"longest": "bb", "words": 3, "extra": true}');
    const failing = corral(['test', 'wc'], cwd);
    expect(failing.status).toBe(1);
    expect(failing.stdout).toContain('PASS hello');
    expect(failing.stdout).toContain('FAIL wrong');
    expect(failing.stdout).toContain('$.extra: missing (expected true)');
    expect(failing.stdout).toContain('$.longest: expected "bb", got "ccc"');
    expect(failing.stdout).toContain('1 passed, 1 failed');

    const update = corral(['test', 'wc', '--update'], cwd);
    expect(update.status).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, 'wc', 'examples', 'wrong.expected.json'), 'utf8'))).toEqual({ words: 3, longest: 'ccc' });
    expect(corral(['test', 'wc'], cwd).status).toBe(0);

    // More than 3 MB in: the adapter allocates through the module's cabi_realloc.
    const text = `${'ab cde '.repeat(500_000)}longestword`;
    writeFileSync(join(cwd, 'big.json'), JSON.stringify({ text }));
    const big = corral(['run', 'wc', '--tools', 'wc', '--input-file', 'big.json'], cwd);
    expect(big.stderr).toBe('');
    expect(JSON.parse(big.stdout)).toEqual({ words: 1_000_001, longest: 'longestword' });
  });

  it('reports an error the way every Corral tool does', () => {
    const cwd = workdir();
    corral(['init', 'wc', '--lang', 'rust'], cwd);
    const main = join(cwd, 'wc', 'src', 'main.rs');
    writeFileSync(
      main,
      readFileSync(main, 'utf8').replace(
        'let mut words = 0;',
        'if text.is_empty() { return Err("no text".into()); }\n    let mut words = 0;',
      ),
    );
    expect(corral(['build', 'wc'], cwd).status).toBe(0);
    writeFileSync(join(cwd, 'wc', 'examples', 'empty.input.json'), '{"text": ""}');
    writeFileSync(join(cwd, 'wc', 'examples', 'empty.expected.json'), '{"error": {"message": "no text"}}');
    const r = corral(['test', 'wc'], cwd);
    expect(r.stdout).toContain('PASS empty');
    expect(r.status).toBe(0);
  });

  it('a compile error is exit 1 with rustc’s message', () => {
    const cwd = workdir();
    corral(['init', 'wc', '--lang', 'rust'], cwd);
    writeFileSync(join(cwd, 'wc', 'src', 'main.rs'), 'fn main() { let x: u32 = "no"; }\n');
    const r = corral(['build', 'wc'], cwd);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/build failed: rustc failed/);
    expect(r.stderr).toMatch(/mismatched types/);
  });
});
