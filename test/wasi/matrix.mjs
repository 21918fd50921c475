// The conformance matrix, shared by conformance.test.ts and table.mjs: the
// programs in programs/, how each is run (argv, environment, stdin), the
// output the WASI specification calls for (expected/), and one runner per
// host: node:wasi as the reference, and Corral's preview1 host and its
// component host, each over a host folder and over an in-memory tree.
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { componentNew } from '@bytecodealliance/jco';
import { ComponentRunner, Preview1Runner, transpileComponent } from '@corral/wasi';
import { openHostDirectory } from '@corral/node';

const HERE = new URL('.', import.meta.url);
const PROGRAMS = new URL('programs/', HERE);
const EXPECTED = new URL('expected/', HERE);
const ADAPTER = new URL('../../node_modules/@bytecodealliance/jco/lib/wasi_snapshot_preview1.command.wasm', HERE);

/** Where every program finds its mount (see programs/check.h). */
export const GUEST = '/sandbox';

/** The mount every run starts from: a fresh copy each time. */
export const START_TREE = { 'file.txt': 'hello\n', dir: { 'inner.txt': 'inner\n', sub: {} }, empty: {} };

export const HOSTS = ['node:wasi', 'p1/host', 'p1/memory', 'comp/host', 'comp/memory'];

const STDIN = 'line one\nline two, é\n' + 'x'.repeat(5000) + '\nlast line without newline';

/**
 * One row of the table. `program` defaults to `id`; the expected stdout is
 * `expected/<id>.txt` unless `stdout` is given; `exit` is the status the
 * program passes to proc_exit; `exitOn` overrides it per host.
 */
export const CASES = [
  { id: 'inode_identity', title: 'stat/fstat dev+ino identity, hard links' },
  { id: 'readdir_dots', title: 'readdir lists . and .., d_ino matches stat' },
  { id: 'trailing_slash', title: 'trailing slashes: ENOTDIR on files, fine on dirs' },
  { id: 'open_flags', title: 'open flags and rights, fdstat flags' },
  { id: 'nanotimes', title: 'nanosecond timestamps, UTIME_OMIT/UTIME_NOW' },
  { id: 'symlinks', title: 'symlinks: inside, escaping, loops, O_NOFOLLOW' },
  { id: 'poll', title: 'poll_oneoff: clocks, stdin/stdout/file, bad fd' },
  {
    id: 'sockets',
    title: 'sock_* on a bad fd (EBADF) and a file (ENOTSOCK)',
    // Corral's rule, not the specification's: a preview1 module that calls
    // sock_* at all ends as E_NETWORK_BLOCKED with status 1 (README, "Network").
    exitOn: { 'p1/host': 1, 'p1/memory': 1 },
  },
  ...[0, 1, 42, 125, 255].map((code) => ({
    id: `proc_exit_${code}`,
    program: 'proc_exit',
    title: `proc_exit(${code}) is the exit status`,
    args: [String(code)],
    exit: code,
    stdout: `exiting with ${code}\n`,
  })),
  { id: 'nul_path', title: 'NUL in a path is EINVAL/EILSEQ' },
  {
    id: 'args_env_stdin',
    title: 'args and environ exactly as given, stdin to EOF',
    args: ['one', 'two words', '', 'é ü'],
    env: { ALPHA: 'a', EMPTY: '', EQUALS: 'x=y=z', TZ: 'UTC' },
    stdin: STDIN,
  },
  { id: 'dirs_seek', title: 'seek holes, rmdir/rename rules, readdir cookies' },
];

/**
 * The exit status the specification calls for on `host`. A component's
 * wasi:cli/exit takes result<_, _>: the preview1 adapter can only say
 * success or failure, so a component reports 0 or 1.
 */
export function expectedExit(testCase, host) {
  if (testCase.exitOn?.[host] !== undefined) return testCase.exitOn[host];
  const code = testCase.exit ?? 0;
  return (host.startsWith('comp/') || host.startsWith('jco')) && code !== 0 ? 1 : code;
}

export function expectedStdout(testCase) {
  return testCase.stdout ?? readFileSync(new URL(`${testCase.id}.txt`, EXPECTED), 'utf8');
}

export function programBytes(testCase) {
  return new Uint8Array(readFileSync(new URL(`${testCase.program ?? testCase.id}.wasm`, PROGRAMS)));
}

/** A fresh host folder holding START_TREE. */
export function hostFolder() {
  const dir = mkdtempSync(join(tmpdir(), 'corral-wasi-conf-'));
  const write = (at, tree) => {
    for (const [name, value] of Object.entries(tree)) {
      if (typeof value === 'string') writeFileSync(join(at, name), value);
      else {
        mkdirSync(join(at, name));
        write(join(at, name), value);
      }
    }
  };
  write(dir, START_TREE);
  return dir;
}

const transpiled = new Map();
/** componentNew + transpile once per program: the slow part of a component run. */
function prepared(testCase) {
  const name = testCase.program ?? testCase.id;
  let p = transpiled.get(name);
  if (!p) {
    p = (async () => {
      const component = await componentNew(programBytes(testCase), [['wasi_snapshot_preview1', readFileSync(ADAPTER)]]);
      return transpileComponent(component, name);
    })();
    transpiled.set(name, p);
  }
  return p;
}

const p1Runner = new Preview1Runner({ openHostDirectory });
const componentRunner = new ComponentRunner({ openHostDirectory });

/** Run one case on one host: { exit, stdout, stderr, note } (note: Corral's error, if any). */
export async function run(testCase, host) {
  const name = testCase.program ?? testCase.id;
  const args = [name, ...(testCase.args ?? [])];
  const env = testCase.env ?? {};
  const stdin = testCase.stdin ?? '';
  const folder = host.endsWith('/memory') ? undefined : hostFolder();
  try {
    if (host === 'node:wasi') return await runNode(testCase, args, env, stdin, folder);
    const mount = folder
      ? { guest: GUEST, access: 'read-write', hostPath: folder }
      : { guest: GUEST, access: 'read-write', tree: structuredClone(START_TREE) };
    const request = {
      toolName: name,
      stdin: new TextEncoder().encode(stdin),
      args,
      env,
      mounts: [mount],
      outputLimitBytes: 1 << 20,
      memoryLimitBytes: 64 << 20,
      diskLimitBytes: 16 << 20,
    };
    const result = host.startsWith('p1/')
      ? await p1Runner.run(name, programBytes(testCase), request)
      : await componentRunner.run(name, await prepared(testCase), request);
    const decode = (b) => new TextDecoder().decode(b);
    return {
      exit: result.exitCode,
      stdout: decode(result.stdout),
      stderr: decode(result.stderr),
      note: result.error ? `${result.error.code}: ${result.error.message}` : undefined,
    };
  } finally {
    if (folder) rmSync(folder, { recursive: true, force: true });
  }
}

/** node:wasi runs in a child process, ended after NODE_TIMEOUT_MS (see node-wasi.mjs). */
export const NODE_TIMEOUT_MS = 3000;

async function runNode(testCase, args, env, stdin, folder) {
  const io = mkdtempSync(join(tmpdir(), 'corral-wasi-io-'));
  try {
    writeFileSync(join(io, 'in'), stdin);
    const fds = [openSync(join(io, 'in'), 'r'), openSync(join(io, 'out'), 'w'), openSync(join(io, 'err'), 'w')];
    let exit;
    try {
      const program = new URL(`${testCase.program ?? testCase.id}.wasm`, PROGRAMS).pathname;
      const child = spawn(
        process.execPath,
        ['--no-warnings', new URL('node-wasi.mjs', HERE).pathname, program, GUEST, folder, ...args],
        { stdio: fds, env: { CORRAL_CONFORMANCE_ENV: JSON.stringify(env) }, timeout: NODE_TIMEOUT_MS, killSignal: 'SIGKILL' },
      );
      exit = await new Promise((resolve, reject) => {
        child.on('error', reject);
        child.on('exit', (code, signal) => resolve(signal ? `killed after ${NODE_TIMEOUT_MS} ms` : code));
      });
    } finally {
      for (const fd of fds) closeSync(fd);
    }
    return { exit, stdout: readFileSync(join(io, 'out'), 'utf8'), stderr: readFileSync(join(io, 'err'), 'utf8') };
  } finally {
    rmSync(io, { recursive: true, force: true });
  }
}

/** Whether a run did what the specification asks. */
export function conforms(testCase, host, outcome) {
  return outcome.exit === expectedExit(testCase, host) && outcome.stdout === expectedStdout(testCase);
}

