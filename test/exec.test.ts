/**
 * `corral exec` and `corral.exec`: any WASI program, run as `wasmtime run`
 * would run it, under the sandbox. Each behaviour is checked for both kinds
 * of program (the same C source as a preview1 module and as a component),
 * through the real CLI in a child process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral, type MountBinding } from '@corral/node';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const SHELL = join(ROOT, 'test/fixtures/exec/shell.wasm');
const SHELL_COMPONENT = join(ROOT, 'test/fixtures/exec/shell.component.wasm');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `corral exec` in a child process with this stdin, as a user would. */
function exec(args: string[], options: { stdin?: string; env?: Record<string, string> } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [CLI, 'exec', ...args],
      { cwd: ROOT, maxBuffer: 64 * 2 ** 20, env: { ...process.env, ...options.env } },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: unknown }).code as number | null) : 0;
        if (typeof code === 'string') return reject(err); // spawning failed, not the program
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin!.end(options.stdin ?? '');
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'corral-exec-'));
  await writeFile(join(dir, 'notes.txt'), 'hello from the host\n');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe.each([
  ['preview1 module', SHELL, 'shell.wasm'],
  ['component', SHELL_COMPONENT, 'shell.component.wasm'],
])('corral exec on a %s', (_kind, file, name) => {
  it('passes argv exactly: argv[0] is the file name, then the arguments as given', async () => {
    const run = await exec([file, '--', 'args', 'two words', '', 'quote"d', '--dir']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`argv[0]=${name}\nargv[1]=args\nargv[2]=two words\nargv[3]=\nargv[4]=quote"d\nargv[5]=--dir\n`);
  });

  it('gives exactly the environment asked for: nothing of the host, no TZ', async () => {
    const run = await exec([file, '--env', 'GREETING=hi there', '--env', 'EMPTY=', '--env', 'FROM_SHELL', '--', 'env'], {
      env: { FROM_SHELL: 'passed on', SECRET: 'must not leak' },
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('GREETING=hi there\nEMPTY=\nFROM_SHELL=passed on\ncount=3\n');
  });

  it('streams stdin to the program and its stdout back, byte for byte', async () => {
    const input = 'line one\n\u00e9t\u00e9 \u{1F600}\n'.repeat(5000);
    const run = await exec([file, '--', 'cat'], { stdin: input });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(input);
  });

  it('answers each line before the next is written (stdio is live, not collected)', async () => {
    const child = spawn(process.execPath, [CLI, 'exec', file, '--', 'lines'], { cwd: ROOT });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const seen = (text: string) =>
      new Promise<void>((resolve) => {
        const check = () => (out.includes(text) ? (child.stdout.off('data', check), resolve()) : undefined);
        child.stdout.on('data', check);
        check();
      });
    child.stdin.write('first\n');
    await seen('got: first\n');
    // The program has answered while its stdin is still open: the second line does not exist yet.
    child.stdin.write('second\n');
    await seen('got: second\n');
    child.stdin.end();
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(out).toBe('got: first\ngot: second\nend\n');
  });

  it('mounts --dir HOST::GUEST under the guest name as given, relative names too', async () => {
    // A folder of its own: other tests write into the shared one.
    const own = await mkdtemp(join(tmpdir(), 'corral-exec-ls-'));
    try {
      await writeFile(join(own, 'b.txt'), 'b');
      await mkdir(join(own, 'a-folder'));
      const listed = await exec([file, '--dir', `${own}::data`, '--', 'ls', 'data']);
      expect(listed).toMatchObject({ code: 0, stdout: 'a-folder\nb.txt\n' });
    } finally {
      await rm(own, { recursive: true, force: true });
    }
    const read = await exec([file, '--dir', `${dir}::/work`, '--', 'read', '/work/notes.txt']);
    expect(read.stdout).toBe('hello from the host\n');
  });

  it('writes through a read-write --dir, and is refused by a :ro one', async () => {
    const target = `${name}.out`;
    const wrote = await exec([file, '--dir', `${dir}::d`, '--', 'write', `d/${target}`, 'written by the guest']);
    expect(wrote.code).toBe(0);
    expect(await readFile(join(dir, target), 'utf8')).toBe('written by the guest');
    const refused = await exec([file, '--dir', `${dir}::d:ro`, '--', 'write', 'd/refused.txt', 'x']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/Read-only file system/);
    expect(await readdir(dir)).not.toContain('refused.txt');
  });

  it('cannot reach what it was not given', async () => {
    const run = await exec([file, '--', 'read', join(dir, 'notes.txt')]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
  });

  it("returns the program's own exit code", async () => {
    const run = await exec([file, '--', 'exit', '42']);
    expect(run.stderr).toMatch(/exiting with 42/);
    // jco's preview1 adapter only carries success or failure through wasi:cli/exit.
    expect(run.code).toBe(name === 'shell.wasm' ? 42 : 1);
  });

  // The status keeps 8 bits: the program's exit(256) read as success.
  it('exits 1 when the program exits with a code a process status cannot carry', async () => {
    const run = await exec([file, '--', 'exit', '256']);
    expect(run.code).toBe(1);
  });

  it('exits 134 on a trap, with the reason on stderr', async () => {
    const run = await exec([file, '--', 'trap']);
    expect(run.code).toBe(134);
    expect(run.stderr).toMatch(/trapping now/);
    expect(run.stderr).toMatch(/trapped.*E_UNEXPECTED_EXIT/);
  });

  it('holds the program to --memory-mb, --disk-mb and --timeout', async () => {
    const memory = await exec([file, '--memory-mb', '16', '--', 'alloc', '64']);
    expect(memory.code).toBe(name === 'shell.wasm' ? 3 : 1); // the program's own answer to a failed malloc (see above for components)
    expect(memory.stderr).toMatch(/malloc of 64 MiB failed/);
    const roomy = await exec([file, '--memory-mb', '128', '--', 'alloc', '64']);
    expect(roomy.stdout).toMatch(/allocated 64 MiB/);

    const disk = await exec([file, '--dir', `${dir}::d`, '--disk-mb', '1', '--', 'fill', `d/${name}.big`, '4']);
    expect(disk.code).toBe(1);
    expect(disk.stderr).toMatch(/disk quota.*E_RESOURCE_EXHAUSTED/);

    const started = Date.now();
    const spin = await exec([file, '--timeout', '500', '--', 'spin']);
    expect(spin.code).toBe(125);
    expect(spin.stderr).toMatch(/did not finish within 500 ms.*E_RESOURCE_EXHAUSTED/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('stops quietly when its reader goes away (| head)', async () => {
    const child = spawn(process.execPath, [CLI, 'exec', file, '--', 'flood'], { cwd: ROOT });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.stdout.destroy();
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(141);
    expect(stderr).not.toMatch(/EPIPE|Unhandled/);
  });
});

describe('corral exec, misused', () => {
  it('says what is wrong, with exit 2 for bad flags and 125 for a file it cannot run', async () => {
    expect((await exec([])).code).toBe(2);
    const unknown = await exec([SHELL, '--frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--frobnicate.*after --/);
    const badNumber = await exec([SHELL, '--memory-mb', 'lots']);
    expect(badNumber.code).toBe(2);
    expect(badNumber.stderr).toMatch(/--memory-mb takes a whole number/);
    const tooBig = await exec([SHELL, '--memory-mb', '999999']);
    expect(tooBig.code).toBe(2);
    expect(tooBig.stderr).toMatch(/--memory-mb must be a whole number from 1 to 4096/);
    const twice = await exec([SHELL, '--dir', `${dir}::d`, '--dir', `${dir}::d`]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/--dir "d" is mounted twice/);
    // Node's own message for a value starting with '-', on one line, without the hint about --.
    const dashed = await exec([SHELL, '--timeout', '-5']);
    expect(dashed.code).toBe(2);
    expect(dashed.stderr).toMatch(/'--timeout' argument is ambiguous/);
    expect(dashed.stderr).not.toMatch(/\\u000a|arguments after --/);
    const noDir = await exec([SHELL, '--dir', join(dir, 'missing'), '--', 'args']);
    expect(noDir.code).toBe(2);
    expect(noDir.stderr).toMatch(/not a directory/);
    const missing = await exec([join(dir, 'missing.wasm')]);
    expect(missing.code).toBe(125);
    expect(missing.stderr).toMatch(/cannot read .*missing\.wasm: ENOENT/);
    await writeFile(join(dir, 'text.wasm'), 'not wasm at all');
    const notWasm = await exec([join(dir, 'text.wasm')]);
    expect(notWasm.code).toBe(125);
    expect(notWasm.stderr).toMatch(/not a WebAssembly/i);
  });
});

describe('corral.exec (the API)', () => {
  let corral: Corral;
  beforeAll(async () => {
    corral = await Corral.create({ bundled: false, store: false });
  });
  afterAll(() => corral.close());

  it('captures output and returns the exit code, for both kinds of program', async () => {
    for (const file of [SHELL, SHELL_COMPONENT]) {
      const wasm = new Uint8Array(await readFile(file));
      const result = await corral.exec(wasm, { argv0: 'tool', args: ['cat'], stdin: new TextEncoder().encode('piped in') });
      expect(result.exitCode).toBe(0);
      expect(result.exited).toBe(true);
      expect(new TextDecoder().decode(result.stdout)).toBe('piped in');
      const env = await corral.exec(wasm, { args: ['env'], env: { ONLY: 'this' } });
      expect(new TextDecoder().decode(env.stdout)).toBe('ONLY=this\ncount=1\n');
    }
  });

  it('streams to callbacks when given, and then keeps nothing', async () => {
    const wasm = new Uint8Array(await readFile(SHELL));
    const chunks: string[] = [];
    async function* stdin() {
      yield new TextEncoder().encode('a\n');
      yield new TextEncoder().encode('b\n');
    }
    const result = await corral.exec(wasm, {
      args: ['lines'],
      stdin: stdin(),
      onStdout: (c) => void chunks.push(new TextDecoder().decode(c)),
    });
    expect(result.exitCode).toBe(0);
    expect(chunks.join('')).toBe('got: a\ngot: b\nend\n');
    expect(result.stdout.length).toBe(0);
  });

  it('says when a component must be transpiled first, and only then', async () => {
    const fresh = await Corral.create({ bundled: false, store: false, cache: false });
    try {
      const wasm = new Uint8Array(await readFile(SHELL_COMPONENT));
      let prepared = 0;
      const first = await fresh.exec(wasm, { args: ['args'], onPrepare: () => void prepared++ });
      expect(first.exitCode).toBe(0);
      expect(prepared).toBe(1);
      await fresh.exec(wasm, { args: ['args'], onPrepare: () => void prepared++ });
      await fresh.exec(new Uint8Array(await readFile(SHELL)), { args: ['args'], onPrepare: () => void prepared++ });
      expect(prepared).toBe(1);
    } finally {
      await fresh.close();
    }
  });

  it('refuses bad options before anything runs', async () => {
    const wasm = new Uint8Array(await readFile(SHELL));
    await expect(corral.exec(wasm, { args: ['a\0b'] })).rejects.toThrow(/args\[0\] must not contain a NUL/);
    await expect(corral.exec(wasm, { env: { 'A=B': 'x' } })).rejects.toThrow(/no "="/);
    await expect(corral.exec(wasm, { memoryMb: 0 })).rejects.toThrow(/memoryMb/);
    await expect(
      corral.exec(wasm, {
        mounts: [
          { guest: 'a', access: 'read' },
          { guest: 'a', access: 'read' },
        ],
      }),
    ).rejects.toThrow(/mounted twice/);
    await expect(corral.exec('not bytes' as unknown as Uint8Array)).rejects.toThrow(/Uint8Array/);
    // A tree no directory could hold is the caller's error, not the program's.
    await expect(
      corral.exec(wasm, { args: ['ls', 'd'], mounts: [{ guest: 'd', access: 'read', source: { kind: 'memory', tree: { '../x': 'a' } } }] }),
    ).rejects.toMatchObject({
      code: 'E_INPUT_VALIDATION',
      message: /invalid file name: "\.\.\/x"/,
    });
    // Node opens memory and host sources; anything else, or a host source of the wrong shape, is refused before it runs.
    const refused: Array<[unknown, RegExp]> = [
      [{ kind: 'opfs', path: 'projects/demo' }, /^Mount d: this host cannot open a source of kind "opfs"; it opens "memory", "host"\.$/],
      [{ kind: 'host', path: 7 }, /^Mount d: the "host" source needs path as a string \(got number\)\.$/],
      [
        { kind: 'host', path: join(tmpdir(), 'corral-no-such-folder') },
        /^Mount d: the "host" source names .*corral-no-such-folder, which is not a directory Corral can open\.$/,
      ],
      [{ path: '/' }, /^Mount d: its source has no kind \(a string\); this host opens "memory", "host"\.$/],
    ];
    for (const [source, message] of refused) {
      const mounts = [{ guest: 'd', access: 'read', source }] as MountBinding[];
      await expect(corral.exec(wasm, { args: ['ls', 'd'], mounts }), JSON.stringify(source)).rejects.toMatchObject({
        code: 'E_INPUT_VALIDATION',
        message,
      });
    }
  });
});
