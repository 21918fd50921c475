// corral init, build and test refuse misuse with exit 2 and say why; a
// missing toolchain is exit 1 with the package to install.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { corral, workdir } from './cli.js';

describe('corral init', () => {
  it('writes a tool folder and prints the next commands', () => {
    const cwd = workdir();
    const r = corral(['init', 'word-count', '--lang', 'rust'], cwd);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('corral build word-count && corral test word-count');
    const again = corral(['init', 'word-count', '--lang', 'rust'], cwd);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/already exists and is not empty/);
  });

  it.each([
    [['init', 'Bad_Name', '--lang', 'rust'], /bad tool name "Bad_Name"/],
    [['init', '-x', '--lang', 'rust'], /unknown option -x\./],
    [['init', 'ok', '--lang', 'cobol'], /unknown --lang "cobol": use c, rust, js/],
    [['init', 'ok'], /choose a language: --lang c\|rust\|js/],
    [['init', '--lang', 'js'], /name the new tool/],
    [['init', 'a', 'b', '--lang', 'js'], /name the new tool/],
  ])('%j is misuse (exit 2)', (args, message) => {
    const r = corral(args, workdir());
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('--dir puts the tool elsewhere, and refuses a folder with files', () => {
    const cwd = workdir();
    expect(corral(['init', 'x', '--lang', 'js', '--dir', 'tools/x'], cwd).status).toBe(0);
    mkdirSync(join(cwd, 'full'));
    writeFileSync(join(cwd, 'full', 'a.txt'), 'a');
    expect(corral(['init', 'y', '--lang', 'js', '--dir', 'full'], cwd).status).toBe(2);
  });
});

describe('corral build and test misuse', () => {
  it('a folder without tool-spec.json is misuse', () => {
    const cwd = workdir();
    expect(corral(['build', cwd], cwd).status).toBe(2);
    expect(corral(['test', cwd], cwd).stderr).toMatch(/has no tool-spec.json/);
    expect(corral(['build', join(cwd, 'nope')], cwd).status).toBe(2);
  });

  it('corral test with no examples exits 2', () => {
    const cwd = workdir();
    corral(['init', 't', '--lang', 'rust'], cwd);
    rmSync(join(cwd, 't', 'examples'), { recursive: true });
    const r = corral(['test', 't'], cwd);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/no examples: add t\/examples\/NAME.input.json/);
  });

  it('a bad spec lists its problems (exit 1)', () => {
    const cwd = workdir();
    corral(['init', 't', '--lang', 'rust'], cwd);
    writeFileSync(join(cwd, 't', 'tool-spec.json'), JSON.stringify({ name: 'T!', version: 'x' }));
    const r = corral(['build', 't'], cwd);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/problem/);
    expect(r.stderr).toMatch(/component/);
  });

  it('a missing Rust toolchain is exit 1 naming the apt packages', () => {
    const cwd = workdir();
    corral(['init', 't', '--lang', 'rust'], cwd);
    const r = corral(['build', 't'], cwd, { RUSTC: join(cwd, 'no-such-rustc') });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('apt-get install rustc libstd-rust-dev-wasm32');
    expect(r.stderr).toContain(`RUSTC=${join(cwd, 'no-such-rustc')}`);
  });

  it('a tool that was never built says to build it (exit 1)', () => {
    const cwd = workdir();
    corral(['init', 't', '--lang', 'rust'], cwd);
    const r = corral(['test', 't'], cwd);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/does not exist \(run: corral build t\)/);
  });
});
