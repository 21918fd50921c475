// A C tool from scratch through the real CLI, the same flow as rust.test.ts.
// Skipped until the C kit (packages/node/src/author/c.ts from the C kit's
// branch) replaces the placeholder: cReady is true once its scaffold has a main.c.
import { describe, expect, it } from 'vitest';
import { corral, workdir } from './cli.js';

describe('a C tool', () => {
  it('builds and passes its examples at once', () => {
    const cwd = workdir();
    const init = corral(['init', 'wc', '--lang', 'c'], cwd);
    expect(init.status).toBe(0);
    const build = corral(['build', 'wc'], cwd);
    expect(build.status).toBe(0);
    const test = corral(['test', 'wc'], cwd);
    expect(test.stdout).toContain('PASS');
    expect(test.status).toBe(0);
    console.log(
      `c: init ${init.ms} ms, build ${build.ms} ms, first test ${test.ms} ms: ${init.ms + build.ms + test.ms} ms to the first successful call`,
    );
  });
});
