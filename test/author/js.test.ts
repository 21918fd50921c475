// A TypeScript tool from scratch through the real CLI: init -> build (with
// componentize-js, the slow one) -> test, then errors and console.log.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { corral, workdir } from './cli.js';

describe('a TypeScript tool', () => {
  it('builds and passes its examples, reports a thrown error, keeps console.log out of the output', { timeout: 600_000 }, () => {
    const cwd = workdir();
    const init = corral(['init', 'wc', '--lang', 'js'], cwd);
    expect(init.status).toBe(0);
    // A second module and an error path: what a real tool has.
    writeFileSync(
      join(cwd, 'wc', 'src', 'check.ts'),
      'export function check(text: string): void {\n  if (text === "") throw new Error("no text");\n}\n',
    );
    const index = join(cwd, 'wc', 'src', 'index.ts');
    writeFileSync(
      index,
      `import { check } from './check.js';\n${readFileSync(index, 'utf8').replace('const words', 'check(input.text);\n  console.log("counting");\n  const words')}`,
    );
    writeFileSync(join(cwd, 'wc', 'examples', 'empty.input.json'), '{"text": ""}');
    writeFileSync(join(cwd, 'wc', 'examples', 'empty.expected.json'), '{"error": {"message": "no text"}}');

    const build = corral(['build', 'wc'], cwd);
    expect(build.stderr).toContain('componentize-js');
    expect(build.stdout).toMatch(/Built wc\/wc.wasm \([\d.]+ MiB\) in [\d.]+ s/);
    expect(build.status).toBe(0);
    const test = corral(['test', 'wc'], cwd);
    expect(test.stdout).toContain('PASS hello');
    expect(test.stdout).toContain('PASS empty');
    expect(test.status).toBe(0);
    console.log(
      `js: init ${init.ms} ms, build ${build.ms} ms, first test ${test.ms} ms: ${init.ms + build.ms + test.ms} ms to the first successful call`,
    );

    const run = corral(['run', 'wc', '--tools', 'wc', '--json', '--input', '{"text": "a bb"}'], cwd);
    const result = JSON.parse(run.stdout) as { ok: boolean; output: unknown; stderr_tail: string };
    expect(result.output).toEqual({ words: 2, longest: 'bb' });
    expect(result.stderr_tail).toBe('counting\n');
  });
});
