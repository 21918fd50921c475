import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const FIXTURES = join(ROOT, 'test/fixtures/tools');

/** Run the real CLI in a child process, as a user would. */
async function corral(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [CLI, ...args], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

describe('the corral CLI', () => {
  it('npm start: summarizes the bundled example diff with the WASI tool', async () => {
    const { code, stdout } = await corral(['run', 'diff-summary', '--input-file', 'wasm-tools/diff-summary/examples/example.diff.json']);
    expect(code).toBe(0);
    const output = JSON.parse(stdout);
    expect(output.files.length).toBeGreaterThan(0);
    expect(output.summary).toMatch(/files? changed/);
  });

  it('lists tools as text and as JSON', async () => {
    const text = await corral(['tools']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/diff-summary@1\.1\.0/);
    const json = await corral(['tools', '--json', '--tools', FIXTURES]);
    const names = JSON.parse(json.stdout).map((t: { name: string }) => t.name);
    expect(names).toEqual(expect.arrayContaining(['diff-summary', 'echo']));
  });

  it('--json prints the envelope; exit 1 and a coded sentence when the tool fails', async () => {
    const ok = await corral(['run', 'diff-summary', '--input', '{"diff":""}', '--json']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true, tool: 'diff-summary', exit_code: 0 });
    const bad = await corral(['run', 'diff-summary', '--input', '{"diff": 5}']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^corral: .*\/diff.*\(E_INPUT_VALIDATION\)\n$/);
    const missing = await corral(['run', 'nope', '--input', '{}']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/E_TOOL_NOT_FOUND/);
  });

  it('exits 2 on misuse, with a sentence that says what to change', async () => {
    for (const args of [['frobnicate'], ['run'], ['run', 'x', '--bogus'], ['run', '--wasm', 'a.wasm'], ['run', 'x', '--timeout', 'soon']]) {
      const r = await corral(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^corral: /);
    }
    const badJson = await corral(['run', 'diff-summary', '--input', '{not json']);
    expect(badJson.code).toBe(1);
    expect(badJson.stderr).toMatch(/not valid JSON.*E_INPUT_VALIDATION/);
  });

  it('--help works on every command', async () => {
    for (const cmd of [['--help'], ['tools', '--help'], ['run', '--help'], ['validate', '--help'], ['cache', '--help']]) {
      const r = await corral(cmd);
      expect(r.code, cmd.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/corral/);
    }
  });

  it('runs an unregistered tool file with --wasm/--spec', async () => {
    const r = await corral([
      'run',
      '--wasm',
      join(FIXTURES, 'echo/echo.wasm'),
      '--spec',
      join(FIXTURES, 'echo/tool-spec.json'),
      '--input',
      '{"a":1}',
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ a: 1 });
  });

  it('refuses tool output nested 500,000 deep with E_UNEXPECTED_EXIT, and records it', async () => {
    const store = join(await mkdtemp(join(tmpdir(), 'corral-deep-')), 'snapshots.db');
    const plain = await corral(['run', 'deep-output', '--tools', FIXTURES, '--input', '{}', '--store', store]);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toMatch(
      /^corral: deep-output printed JSON nested more than 1000 levels deep \(the limit\).*\(E_UNEXPECTED_EXIT\)\n$/,
    );
    const json = await corral(['run', 'deep-output', '--tools', FIXTURES, '--input', '{}', '--json', '--store', store]);
    expect(json.code).toBe(1);
    const envelope = JSON.parse(json.stdout);
    expect(envelope).toMatchObject({
      ok: false,
      exit_code: 0,
      error: { code: 'E_UNEXPECTED_EXIT', details: { reason: 'output_too_deep', max_depth: 1000 } },
    });
    const shown = await corral(['snapshots', 'show', envelope.snapshot.id, '--json', '--store', store]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ status: 'failed', error_code: 'E_UNEXPECTED_EXIT' });
  });

  it('refuses input nested 500,000 deep with E_INPUT_VALIDATION', async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'corral-deep-')), 'deep.json');
    await writeFile(file, `{"a":${'['.repeat(500_000)}${']'.repeat(500_000)}}`);
    const r = await corral(['run', 'echo', '--tools', FIXTURES, '--input-file', file, '--json', '--no-store']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({
      ok: false,
      error: { code: 'E_INPUT_VALIDATION', details: { reason: 'input_too_deep', max_depth: 1000 } },
    });
  });

  it('validate lists every problem of a bad spec by JSON path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'corral-spec-'));
    const path = join(dir, 'tool-spec.json');
    await writeFile(
      path,
      JSON.stringify({
        name: 'Bad Name',
        version: 'one',
        component: '../x.wasm',
        input_schema: { type: 'object' },
        resources: { memory_mb: -1 },
      }),
    );
    const r = await corral(['validate', path]);
    expect(r.code).toBe(1);
    for (const p of ['/name', '/version', '/component', '/resources/memory_mb']) expect(r.stdout).toContain(p);
    const good = await corral(['validate', join(ROOT, 'wasm-tools/diff-summary/tool-spec.json')]);
    expect(good.code).toBe(0);
    expect(good.stdout).toMatch(/valid/);
  });
});

describe('corral | head', () => {
  it('ends with 141 and no stack trace when the reader of its output goes away', async () => {
    const { spawn } = await import('node:child_process');
    // Enough output that the pipe fills: a diff of 3,000 one-line files (about 400 KB of JSON, under the output limit).
    const diff = Array.from({ length: 3_000 }, (_, i) => `--- a/f${i}\n+++ b/f${i}\n@@ -1 +1 @@\n-a\n+b\n`).join('');
    const dir = await mkdtemp(join(tmpdir(), 'corral-epipe-'));
    const input = join(dir, 'input.json');
    await writeFile(input, JSON.stringify({ diff }));
    const child = spawn(process.execPath, [CLI, 'run', 'diff-summary', '--input-file', input], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    // Read the first chunk, then go away, as `head -c 1` does.
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(stderr).not.toMatch(/EPIPE|Unhandled|at /);
    expect(code).toBe(141);
  });
});

describe('corral --version', () => {
  it("prints @corral/node's version and Node's, and exits 0", async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'packages/node/package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = await corral([flag]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`corral ${version} (node ${process.versions.node})\n`);
    }
  });
});

describe('--tools DIR that does not exist', () => {
  it('is misuse (exit 2) naming the folder, for every command that takes it, before anything starts', async () => {
    for (const command of [
      ['tools'],
      ['run', 'diff-summary', '--input', '{}'],
      ['serve', '--port', '0'],
      ['mcp'],
      ['policy', 'grant', 'x', '--env', 'A=b'],
    ]) {
      const r = await corral([...command, '--tools', '/no/such/corral-tools']);
      expect(r.code, command.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/--tools "\/no\/such\/corral-tools": no such folder/);
    }
  });
});

describe('a malformed --mount', () => {
  it('is misuse (exit 2), like a bad --env or --timeout, for every command that takes it', async () => {
    for (const command of [
      ['run', 'file-stats', '--input', '{}'],
      ['policy', 'grant', 'file-stats'],
      ['replay', 'no-such-id'],
    ]) {
      const r = await corral([...command, '--mount', 'just-a-folder']);
      expect(r.code, command.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/Bad --mount "just-a-folder": expected HOSTDIR:GUESTDIR\[:ro\|rw\]/);
    }
  });
});

/** Run `command` in a shell, as a user would type it; stdout and the exit status. */
function sh(shell: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string }> {
  return promisify(execFile)(shell, args, { cwd: ROOT, env }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
  );
}

describe('corral completion', () => {
  /** A `corral` on PATH, as after npm install -g, for the scripts' `corral tools --json`. */
  async function shellEnv(): Promise<NodeJS.ProcessEnv> {
    const bin = await mkdtemp(join(tmpdir(), 'corral-bin-'));
    await writeFile(join(bin, 'corral'), `#!/bin/sh\nexec '${process.execPath}' '${CLI}' "$@"\n`);
    await chmod(join(bin, 'corral'), 0o755);
    return { ...process.env, PATH: `${bin}:${process.env.PATH}`, CORRAL_STORE: join(bin, 's.db') };
  }

  it('bash: commands, subcommands, options, and tool names after run', async () => {
    const env = await shellEnv();
    const script = join(await mkdtemp(join(tmpdir(), 'corral-completion-')), 'corral.bash');
    const made = await corral(['completion', 'bash']);
    expect(made.code).toBe(0);
    await writeFile(script, made.stdout);
    const complete = async (words: string[]) => {
      const line = words.map((w) => `'${w}'`).join(' ');
      const r = await sh(
        'bash',
        ['-c', `source '${script}'; COMP_WORDS=(${line}); COMP_CWORD=${words.length - 1}; _corral; echo "\${COMPREPLY[*]}"`],
        env,
      );
      expect(r.code).toBe(0);
      return r.stdout.trim().split(' ');
    };
    expect(await complete(['corral', 'sn'])).toEqual(['snapshots']);
    expect(await complete(['corral', 'com'])).toEqual(['completion']);
    expect(await complete(['corral', 'run', ''])).toEqual(expect.arrayContaining(['diff-summary', 'file-stats', '--input', '--json']));
    expect(await complete(['corral', 'run', 'diff-summary', '--inp'])).toEqual(['--input', '--input-file']);
    expect(await complete(['corral', 'snapshots', ''])).toEqual(expect.arrayContaining(['list', 'show', 'export', 'prune']));
    expect(await complete(['corral', 'completion', ''])).toEqual(expect.arrayContaining(['bash', 'zsh', 'fish']));
    // An option whose help lists its values completes them.
    expect(await complete(['corral', 'init', 'x', '--lang', ''])).toEqual(['c', 'rust', 'js']);
    // A path option completes files.
    expect(await complete(['corral', 'run', 'x', '--input-file', 'wasm-tools/diff-summary/examples/example.d'])).toEqual([
      'wasm-tools/diff-summary/examples/example.diff.json',
    ]);
  });

  it('zsh: the same, through compadd', async () => {
    const env = await shellEnv();
    const script = join(await mkdtemp(join(tmpdir(), 'corral-completion-')), '_corral');
    await writeFile(script, (await corral(['completion', 'zsh'])).stdout);
    // compadd and _files stand in for zsh's completion system: print what would be offered.
    const stubs = 'compadd(){ [[ $1 == -- ]] && shift; print -r -- "$@"; }; _files(){ print FILES; }; compdef(){ }';
    const r = await sh(
      'zsh',
      [
        '-fc',
        `${stubs}; source '${script}'; words=(corral run ''); CURRENT=3; PREFIX=''; _corral; words=(corral run --tools ''); CURRENT=4; _corral; words=(corral init x --lang ''); CURRENT=5; _corral`,
      ],
      env,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--input-file/);
    expect(r.stdout).toMatch(/^apply-patch diff-summary edit file-stats glob grep read$/m);
    expect(r.stdout).toMatch(/^FILES$/m);
    expect(r.stdout).toMatch(/^c rust js$/m);
  });

  it('fish: the same, through complete -C', async () => {
    const env = await shellEnv();
    const script = join(await mkdtemp(join(tmpdir(), 'corral-completion-')), 'corral.fish');
    await writeFile(script, (await corral(['completion', 'fish'])).stdout);
    const r = await sh(
      'fish',
      [
        '-c',
        `source '${script}'; complete -C 'corral run '; complete -C 'corral snapshots '; complete -C 'corral run --input-f'; complete -C 'corral init x --lang '`,
      ],
      env,
    );
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')).toEqual(expect.arrayContaining(['diff-summary', 'file-stats', 'list', 'prune', '--input-file', 'rust']));
  });
});

describe('the first transpile of a tool', () => {
  it('is told to the host (onPrepare), once per component, with a promise that settles when it is over', async () => {
    const { Corral } = await import('@corral/node');
    const events: { name: string; sha256: string; finished: Promise<void> }[] = [];
    // diff-summary in a tools folder of its own, as a third-party component: the bundled one comes transpiled.
    const own = join(await mkdtemp(join(tmpdir(), 'corral-own-tools-')), 'diff-summary');
    await mkdir(own);
    for (const file of ['tool-spec.json', 'diff-summary.wasm'])
      await copyFile(join(ROOT, 'wasm-tools/diff-summary', file), join(own, file));
    const corral = await Corral.create({
      cache: false,
      store: false,
      size: 1,
      bundled: false,
      toolDirs: [dirname(own)],
      onPrepare: (e) => void events.push(e),
    });
    try {
      expect((await corral.invoke('diff-summary', { diff: '' })).ok).toBe(true);
      expect((await corral.invoke('diff-summary', { diff: '' })).ok).toBe(true);
      expect(events.map((e) => e.name)).toEqual(['diff-summary']);
      expect(events[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
      await expect(events[0]!.finished).resolves.toBeUndefined();
    } finally {
      await corral.close();
    }
    await expect(Corral.create({ onPrepare: 'yes' as never })).rejects.toMatchObject({ code: 'E_INPUT_VALIDATION' });
  });

  /** On a terminal (util-linux `script` gives the CLI a pty; stdout and stderr arrive merged). */
  function onTerminal(args: string[], env: NodeJS.ProcessEnv) {
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    return sh('script', ['-qec', [process.execPath, CLI, ...args].map(quote).join(' '), '/dev/null'], env);
  }
  // The tool given by its files, not from the bundled tools (which come transpiled).
  const spec = join(ROOT, 'wasm-tools/diff-summary');
  const run = [
    'run',
    '--wasm',
    join(spec, 'diff-summary.wasm'),
    '--spec',
    join(spec, 'tool-spec.json'),
    '--input',
    '{"diff":""}',
    '--no-store',
  ];

  it('says what it is doing on a terminal, once; a pipe gets only the output', async () => {
    const cold = { ...process.env, CORRAL_CACHE_DIR: await mkdtemp(join(tmpdir(), 'corral-cold-')) };
    const first = await onTerminal(run, cold);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^corral: preparing diff-summary \(first run: compiling, cached for later runs\)…\r?\n\{/);
    const second = await onTerminal(run, cold);
    expect(second.code).toBe(0);
    expect(second.stdout).not.toMatch(/preparing/);
    const piped = await promisify(execFile)(process.execPath, [CLI, ...run, '--json'], {
      cwd: ROOT,
      env: { ...process.env, CORRAL_CACHE_DIR: await mkdtemp(join(tmpdir(), 'corral-cold-')) },
    });
    expect(piped.stderr).toBe('');
    expect(JSON.parse(piped.stdout)).toMatchObject({ ok: true });
  });
});
