// The C language of `corral init` / `corral build`: a new tool's files build
// into a component that Corral runs with the output its example promises,
// and a missing toolchain or a compiler error says what to do.
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Corral } from '@corral/node';
import { c, C_TOOLCHAIN_PACKAGES } from '../../packages/node/src/author/c.js';
import { MissingToolchain } from '../../packages/node/src/author/language.js';

const work = mkdtempSync(join(tmpdir(), 'corral-c-author-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Writes `corral init NAME --lang c`'s files into a fresh folder. */
function scaffold(name: string): string {
  const dir = join(work, name);
  for (const [path, text] of Object.entries(c.scaffold(name))) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

function json(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}

describe('corral init --lang c, then corral build', () => {
  it('scaffolds a tool that builds and gives its example output under Corral', async () => {
    const dir = scaffold('word-stats');
    const files = Object.keys(c.scaffold('word-stats')).sort();
    expect(files).toEqual(['README.md', 'examples/example.expected.json', 'examples/example.input.json', 'src/main.c', 'tool-spec.json']);
    expect(await c.detect(dir)).toBe(true);

    const spec = json(join(dir, 'tool-spec.json')) as { name: string; component: string };
    expect(spec.name).toBe('word-stats');
    const log: string[] = [];
    await c.build({ dir, name: spec.name, out: join(dir, spec.component), log: (line) => log.push(line) });
    expect(log).toEqual([
      'compiling src/main.c',
      'compiling corral.c (the kit)',
      'linking',
      'optimizing (wasm-opt)',
      'componentizing (jco, preview1 command adapter)',
      expect.stringMatching(/^wrote .*word-stats\.wasm \(\d+ bytes\)$/),
    ]);

    const corral = await Corral.create({ bundled: false, toolDirs: [dir], store: false, cache: false });
    try {
      expect(corral.loadErrors).toEqual([]);
      const r = await corral.invoke('word-stats', json(join(dir, 'examples/example.input.json')));
      expect(r.error).toBeNull();
      expect(r.output).toEqual(json(join(dir, 'examples/example.expected.json')));
      // The spec's schemas are part of the template: a bad input never reaches the tool.
      const bad = await corral.invoke('word-stats', { text: 'a b', min_length: 0 });
      expect(bad.error).toMatchObject({ code: 'E_INPUT_VALIDATION' }); // the schema's minimum, before the tool runs
      const other = await corral.invoke('word-stats', { text: 'hello brave new world', min_length: 4 });
      expect(other.output).toEqual({ long_words: ['hello', 'brave', 'world'], words: 4 });
    } finally {
      await corral.close();
    }
  });

  it('detects C sources only where src/*.c exist', async () => {
    const empty = join(work, 'empty');
    mkdirSync(join(empty, 'src'), { recursive: true });
    writeFileSync(join(empty, 'src', 'main.rs'), 'fn main() {}\n');
    expect(await c.detect(empty)).toBe(false);
    expect(await c.detect(join(work, 'does-not-exist'))).toBe(false);
  });

  it("surfaces the compiler's own error, with file and line", async () => {
    const dir = scaffold('broken');
    writeFileSync(join(dir, 'src', 'main.c'), '#include "corral.h"\n\nint main(void) {\n  return undefined_thing;\n}\n');
    const err = await c.build({ dir, name: 'broken', out: join(dir, 'broken.wasm'), log: () => {} }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(MissingToolchain);
    expect((err as Error).message).toMatch(/src\/main\.c:4:\d+: error: use of undeclared identifier 'undefined_thing'/);
  });
});

describe('corral build --lang c without the toolchain', () => {
  const built = async (dir: string) =>
    c.build({ dir, name: 'no-cc', out: join(dir, 'no-cc.wasm'), log: () => {} }).then(
      () => null,
      (e: unknown) => e,
    );

  function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
    const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
    const restore = () => {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    };
    for (const [k, v] of Object.entries(vars)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    return fn().finally(restore);
  }

  it('names the Debian packages when clang is not on PATH', async () => {
    const dir = scaffold('no-cc');
    const emptyBin = join(work, 'empty-bin');
    mkdirSync(emptyBin, { recursive: true });
    const err = await withEnv({ PATH: emptyBin, CC: undefined }, () => built(dir));
    expect(err).toBeInstanceOf(MissingToolchain);
    expect((err as Error).message).toContain("The C compiler 'clang' was not found");
    expect((err as Error).message).toContain('apt-get install clang lld wasi-libc libclang-rt-dev-wasm32');
    expect(C_TOOLCHAIN_PACKAGES).toBe('clang lld wasi-libc libclang-rt-dev-wasm32');
  });

  it('names them too when clang exists but cannot build for wasm32-wasi, with what it said', async () => {
    const dir = scaffold('no-wasi');
    const bin = join(work, 'fake-bin');
    mkdirSync(bin, { recursive: true });
    // A clang without the wasm32 pieces: what Debian's clang alone says.
    writeFileSync(join(bin, 'clang'), '#!/bin/sh\necho "wasm-ld: error: unable to find library -lc" >&2\nexit 1\n');
    chmodSync(join(bin, 'clang'), 0o755);
    const err = await withEnv({ PATH: `${bin}:${process.env.PATH}`, CC: undefined }, () => built(dir));
    expect(err).toBeInstanceOf(MissingToolchain);
    expect((err as Error).message).toContain('cannot build a WASI program');
    expect((err as Error).message).toContain('apt-get install clang lld wasi-libc libclang-rt-dev-wasm32');
    expect((err as Error).message).toContain('unable to find library -lc');
  });

  it('honours CC, and says when it does not exist', async () => {
    const dir = scaffold('cc-override');
    const err = await withEnv({ CC: join(work, 'no-such-clang') }, () => built(dir));
    expect(err).toBeInstanceOf(MissingToolchain);
    expect((err as Error).message).toContain(`The C compiler '${join(work, 'no-such-clang')}' was not found`);
  });
});
