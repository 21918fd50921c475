// The conformance matrix, shared by conformance.test.ts and table.mjs: the
// programs in programs/, how each is run (argv, environment, stdin), the
// output the WASI specification calls for (expected/), and one runner per
// host: node:wasi as the reference, and Corral's preview1 host and its
// component host, each over a host folder and over an in-memory tree.
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { ComponentRunner, Preview1Runner, transpileComponent } from '@corral/wasi';
import { hostMountOpeners } from '@corral/node';

const HERE = new URL('.', import.meta.url);
const PROGRAMS = new URL('programs/', HERE);
const EXPECTED = new URL('expected/', HERE);

export { CASES, GUEST, HOSTS, START_TREE, expectedExit } from './cases.mjs';
import { GUEST, START_TREE, expectedExit } from './cases.mjs';

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
/** Transpile each program's committed component once: the slow part of a component run. */
function prepared(testCase) {
  const name = testCase.program ?? testCase.id;
  let p = transpiled.get(name);
  if (!p) {
    p = transpileComponent(new Uint8Array(readFileSync(new URL(`${name}.component.wasm`, PROGRAMS))), name);
    transpiled.set(name, p);
  }
  return p;
}

const p1Runner = new Preview1Runner({ mountOpeners: hostMountOpeners() });
const componentRunner = new ComponentRunner({ mountOpeners: hostMountOpeners() });

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
      ? { guest: GUEST, access: 'read-write', source: { kind: 'host', path: folder } }
      : { guest: GUEST, access: 'read-write', source: { kind: 'memory', tree: structuredClone(START_TREE) } };
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
      const child = spawn(process.execPath, ['--no-warnings', new URL('node-wasi.mjs', HERE).pathname, program, GUEST, folder, ...args], {
        stdio: fds,
        env: { CORRAL_CONFORMANCE_ENV: JSON.stringify(env) },
        timeout: NODE_TIMEOUT_MS,
        killSignal: 'SIGKILL',
      });
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
