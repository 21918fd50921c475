/**
 * Red team of `corral exec` and `corral.exec`: hostile programs (raw
 * preview1 calls from test/fixtures/exec/redteam.c, and shell.c) and
 * hostile options. Anything that could take the CLI process down runs in a
 * child process, and the test checks how that process ended.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral } from '@corral/node';

const ROOT = new URL('../..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const SHELL = join(ROOT, 'test/fixtures/exec/shell.wasm');
const SHELL_COMPONENT = join(ROOT, 'test/fixtures/exec/shell.component.wasm');
const REDTEAM = join(ROOT, 'test/fixtures/exec/redteam.wasm');
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

let corral: Corral;
let dir: string;
beforeAll(async () => {
  corral = await Corral.create({ bundled: false, store: false });
  dir = await mkdtemp(join(tmpdir(), 'corral-exec-redteam-'));
  await writeFile(join(dir, 'f'), 'x');
});
afterAll(async () => {
  await corral.close();
  await rm(dir, { recursive: true, force: true });
});

describe('corral exec: the CLI process survives its own stdio going away', () => {
  // `corral exec prog.wasm 2>&1 | head` or a closed `2> >(…)`: the EPIPE on
  // stderr was an unhandled 'error' event, so the CLI died with status 1 —
  // the status of a program that failed — mid-run.
  it('stops the program when its stderr reader goes away, as with stdout (141), without an uncaught EPIPE', async () => {
    const child = spawn(process.execPath, [CLI, 'exec', REDTEAM, '--', 'errflood'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end();
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    await new Promise((resolve) => child.stderr.once('data', resolve));
    child.stderr.destroy();
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(141);
    expect(stdout).toBe('');
  });
});

describe('corral exec: the program file', () => {
  // readFile of /dev/zero (or a FIFO fed without end) never ends: the CLI
  // grew by about 1 GB every 3 s until it was killed. The child is killed
  // after 10 s here, so a regression fails instead of eating the machine.
  it.each(['/dev/zero', '/dev/urandom'])('refuses %s quickly, as not a regular file, without reading it', async (device) => {
    const child = spawn(process.execPath, [CLI, 'exec', device], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])));
    clearTimeout(killer);
    expect(signal).toBeNull();
    expect(code).toBe(125);
    expect(stderr).toMatch(/cannot read .*: not a regular file/);
  });
});

describe('corral.exec: output is never silently dropped', () => {
  // Streaming stdin (an async iterable) opened the stdio channel, and every
  // output stream without a callback went nowhere: the result said exit 0
  // with empty stdout and stderr.
  it.each([
    ['preview1 module', SHELL],
    ['component', SHELL_COMPONENT],
  ])('captures stdout and stderr when only stdin is streamed (%s)', async (_kind, file) => {
    const wasm = new Uint8Array(await readFile(file));
    async function* stdin() {
      yield new TextEncoder().encode('streamed in\n');
    }
    const result = await corral.exec(wasm, { args: ['cat'], stdin: stdin() });
    expect(result.exitCode).toBe(0);
    expect(text(result.stdout)).toBe('streamed in\n');
  });

  it('captures stderr when only onStdout is given, and stdout when only onStderr is', async () => {
    const wasm = new Uint8Array(await readFile(SHELL));
    const seen: string[] = [];
    const trapped = await corral.exec(wasm, { args: ['trap'], onStdout: (c) => void seen.push(text(c)) });
    expect(text(trapped.stderr)).toMatch(/trapping now/);
    const exited = await corral.exec(wasm, { args: ['exit', '7'], onStderr: (c) => void seen.push(text(c)) });
    expect(seen.join('')).toMatch(/exiting with 7/);
    const printed = await corral.exec(wasm, { args: ['args', 'x'], onStderr: () => {} });
    expect(exited.exitCode).toBe(7);
    expect(text(printed.stdout)).toBe('argv[0]=main.wasm\nargv[1]=args\nargv[2]=x\n');
  });

  // `terminals` only travelled with the stdio channel, which opened only
  // for callbacks or streamed stdin: on its own it was ignored.
  it('tells the program about terminals even when its output is captured', async () => {
    const wasm = new Uint8Array(await readFile(SHELL));
    const result = await corral.exec(wasm, { args: ['tty'], terminals: [true, false, true] });
    expect(text(result.stdout)).toBe('1 0 1\n');
  });
});

describe('corral.exec: options are read once, and what was checked is what runs', () => {
  // A getter (or Proxy) answering differently on a second read passed the
  // checks with one value and ran with another.
  it('a guest name that changes after it was checked', async () => {
    const wasm = new Uint8Array(await readFile(SHELL));
    let reads = 0;
    const mount = {
      get guest() {
        return reads++ === 0 ? 'ok' : 'a\0b';
      },
      access: 'read' as const,
      source: { kind: 'host', path: dir },
    };
    const result = await corral.exec(wasm, { args: ['ls', 'ok'], mounts: [mount] });
    expect(result.exitCode).toBe(0);
    expect(text(result.stdout)).toBe('f\n');
  });

  it('a second mount that turns into a duplicate of the first', async () => {
    const wasm = new Uint8Array(await readFile(SHELL));
    let reads = 0;
    const second = {
      get guest() {
        return reads++ === 0 ? 'two' : 'one';
      },
      access: 'read' as const,
      source: { kind: 'host', path: dir },
    };
    const result = await corral.exec(wasm, {
      args: ['ls', 'two'],
      mounts: [{ guest: 'one', access: 'read', source: { kind: 'host', path: dir } }, second],
    });
    expect(text(result.stdout)).toBe('f\n');
  });

  it('an argument or variable that turns into something else', async () => {
    const wasm = new Uint8Array(await readFile(SHELL));
    let argReads = 0;
    const args = new Proxy(['args', 'fine'], {
      get: (target, key) => (key === '1' && argReads++ > 0 ? 'fi\0ne' : Reflect.get(target, key)),
    });
    const argResult = await corral.exec(wasm, { args });
    expect(text(argResult.stdout)).toBe('argv[0]=main.wasm\nargv[1]=args\nargv[2]=fine\n');
    let envReads = 0;
    const env = {
      get A() {
        return envReads++ === 0 ? 'x' : ((() => 1) as unknown as string);
      },
    };
    const envResult = await corral.exec(wasm, { args: ['env'], env });
    expect(text(envResult.stdout)).toBe('A=x\ncount=1\n');
  });
});

describe('preview1: u64 arguments at and above 2^63 (a wasm i64 reaches JavaScript signed)', () => {
  // These trapped the program (or leaked "Cannot read properties of
  // undefined") instead of answering as the specification says.
  it('sets a timestamp of 2^64-1 ns, or answers an errno, without trapping', async () => {
    const wasm = new Uint8Array(await readFile(REDTEAM));
    for (const ns of ['18446744073709551615', '9223372036854775808', '17179869184000000000']) {
      const result = await corral.exec(wasm, {
        args: ['times', 'f', ns, ns, '5'], // ATIM | MTIM
        mounts: [{ guest: 'd', access: 'read-write', source: { kind: 'host', path: dir } }],
      });
      expect(result.error ?? null).toBeNull();
      expect(result.exitCode).toBe(0);
      expect(text(result.stdout)).toMatch(/^set_times \d+\nfd_set_times \d+\n$/);
    }
    expect((await stat(join(dir, 'f'))).isFile()).toBe(true);
  });

  it('the same through an in-memory tree', async () => {
    const wasm = new Uint8Array(await readFile(REDTEAM));
    const result = await corral.exec(wasm, {
      args: ['times', 'f', '18446744073709551615', '0', '5'],
      mounts: [{ guest: 'd', access: 'read-write', source: { kind: 'memory', tree: { f: 'x' } } }],
    });
    expect(result.error ?? null).toBeNull();
    expect(text(result.stdout)).toMatch(/^set_times \d+\nfd_set_times \d+\n$/);
  });

  it('fd_readdir from a cookie of 2^63 and up lists nothing', async () => {
    const wasm = new Uint8Array(await readFile(REDTEAM));
    for (const cookie of ['18446744073709551615', '9223372036854775808', '4294967296']) {
      const result = await corral.exec(wasm, {
        args: ['readdir', cookie],
        mounts: [{ guest: 'd', access: 'read', source: { kind: 'host', path: dir } }],
      });
      expect(result.error ?? null).toBeNull();
      expect(text(result.stdout)).toBe('readdir 0 used 0\n');
    }
  });
});
