/**
 * The Node host run unchanged by Bun and Deno (installed from npm, in
 * node_modules/.bin): one end-to-end script (e2e.mjs) under each runtime,
 * its answers compared with Node's. Where a runtime differs, the test asserts
 * the difference PORTABILITY.md documents.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const SCRIPT = join(ROOT, 'test/portability/e2e.mjs');
const FIRST_CALL = join(ROOT, 'test/portability/first-call.mjs');
const BIN = join(ROOT, 'node_modules/.bin');

const RUNTIMES = {
  node: [process.execPath],
  bun: [join(BIN, 'bun')],
  deno: [join(BIN, 'deno'), 'run', '-A'],
} as const;
type Runtime = keyof typeof RUNTIMES;

// biome-ignore lint/suspicious/noExplicitAny: the script's JSON, checked field by field below
type Answers = Record<string, any>;

function run(runtime: Runtime, script: string, arg: string | string[], env: NodeJS.ProcessEnv = process.env): Promise<Answers> {
  const [command, ...args] = RUNTIMES[runtime];
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args, script, ...[arg].flat()], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      if (status !== 0) return reject(new Error(`${runtime} exited ${status ?? signal}: ${stderr}`));
      resolve({ ...JSON.parse(stdout), stderr });
    });
  });
}

const scratch: string[] = [];
const answers = {} as Record<Runtime, Answers>;
let bunColdCache: Answers;
let denoColdCache: Answers;
let bunBundledColdCache: Answers;
beforeAll(async () => {
  const dir = (name: string) => {
    const made = mkdtempSync(join(tmpdir(), `corral-portability-${name}-`));
    scratch.push(made);
    return made;
  };
  // diff-summary in a tools folder of its own, as a third-party component: transpiled at its first call.
  const own = join(dir('own-tools'), 'diff-summary');
  mkdirSync(own);
  for (const file of ['tool-spec.json', 'diff-summary.wasm']) copyFileSync(join(ROOT, 'wasm-tools/diff-summary', file), join(own, file));
  // Node first: it fills the transpile cache (CORRAL_CACHE_DIR) the others then use.
  answers.node = await run('node', SCRIPT, dir('node'));
  [answers.bun, answers.deno, bunColdCache, denoColdCache, bunBundledColdCache] = await Promise.all([
    run('bun', SCRIPT, dir('bun')),
    run('deno', SCRIPT, dir('deno')),
    run('bun', FIRST_CALL, ['0', dirname(own)], { ...process.env, CORRAL_CACHE_DIR: dir('bun-cache') }),
    run('deno', FIRST_CALL, ['0', dirname(own)], { ...process.env, CORRAL_CACHE_DIR: dir('deno-cache') }),
    run('bun', FIRST_CALL, '0', { ...process.env, CORRAL_CACHE_DIR: dir('bun-bundled-cache') }),
  ]);
}, 110_000);
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe.each(['bun', 'deno'] as const)('the Node host under %s', (runtime) => {
  it('runs the version PORTABILITY.md describes', () => {
    expect(answers[runtime].runtime[runtime]).toBe(runtime === 'bun' ? '1.4.5' : '2.9.6');
  });

  it('answers diff-summary on the bundled example as Node does', () => {
    const node = answers.node.diffSummary;
    expect(node.ok).toBe(true);
    expect(node.output.totals.files).toBeGreaterThan(0);
    expect(answers[runtime].diffSummary).toEqual(node);
  });

  it('reads a read mount, and writes, renames and deletes in a read-write one, as Node does', () => {
    const { mountRead, mountWrite, mountWriteRefused } = answers[runtime];
    expect(answers.node.mountRead.output.totals).toEqual({ files: 2, lines: 3, words: 4, bytes: 12 });
    expect(mountRead).toEqual(answers.node.mountRead);
    expect(answers.node.mountWrite.files).toEqual(['dir', 'new.txt', 'renamed.txt']);
    expect(answers.node.mountWrite.renamed).toBe('kept\nappended\n');
    expect(mountWrite).toEqual(answers.node.mountWrite);
    // The read mount refused every write, and its folder did not change.
    expect(mountWriteRefused.unchanged).toBe(true);
    expect(mountWriteRefused).toEqual(answers.node.mountWriteRefused);
  });

  it('ends a tool at its timeout with the same error, and the next call runs', () => {
    expect(answers.node.timeout).toEqual({
      code: 'E_RESOURCE_EXHAUSTED',
      details: { resource: 'time', timeout_ms: 300 },
      nextCallOk: true,
    });
    expect(answers[runtime].timeout).toEqual(answers.node.timeout);
  });

  it('warns that a timed-out tool may keep running (Worker.terminate does not stop it); Bun also has no worker heap limit', () => {
    expect(answers.node.warnings).toEqual([]);
    const warnings: string[] = answers[runtime].warnings;
    expect(warnings[0]).toMatch(/a sandbox worker cannot be stopped while it runs/);
    if (runtime === 'bun') {
      expect(warnings).toHaveLength(2);
      expect(warnings[1]).toMatch(/without a JS heap limit/);
    } else {
      expect(warnings).toHaveLength(1);
    }
    expect(answers[runtime].stderr).toContain('[CORRAL_UNENFORCED_LIMIT]');
  });

  it('refuses the SQLite store (better-sqlite3 cannot load) with E_STORE saying what to do; Node reads the record back', () => {
    expect(answers.node.storeRefused).toBeUndefined();
    expect(answers.node.store).toMatchObject({ tool: 'diff-summary', status: 'ok', exit_code: 0 });
    expect(answers.node.storeStdoutIsOutput).toBe(true);

    const refused = answers[runtime].storeRefused;
    expect(refused.code).toBe('E_STORE');
    // Refused, not "unwritable": calls must not run silently unrecorded.
    expect(refused.details.unwritable).toBeUndefined();
    expect(refused.message).toContain(`cannot be opened on ${runtime} `);
    expect(refused.message).toContain('better-sqlite3');
    expect(refused.message).toContain('--no-store');
  });

  it('runs the CLI: with --no-store its output is Node’s; with a store it exits 1 with E_STORE', () => {
    const node = answers.node;
    expect(node.cli.status).toBe(0);
    expect(node.cliNoStore).toEqual({ status: 0, stdout: node.cli.stdout, stderr: '' });
    const { cliNoStore } = answers[runtime];
    expect(cliNoStore.status).toBe(0);
    expect(cliNoStore.stdout).toBe(node.cliNoStore.stdout);
    // Its stderr holds only the warnings above (printed whenever the first worker starts).
    const beyondWarnings = (stderr: string) =>
      stderr.split('\n').filter((line: string) => line !== '' && !/CORRAL_UNENFORCED_LIMIT|--trace-warnings/.test(line));
    expect(beyondWarnings(cliNoStore.stderr)).toEqual([]);
    expect(answers[runtime].cli.status).toBe(1);
    expect(answers[runtime].cli.stdout).toBe('');
    expect(beyondWarnings(answers[runtime].cli.stderr)).toEqual([
      expect.stringMatching(/^corral: Snapshot store .*better-sqlite3.*\(E_STORE\)$/),
    ]);
  });
});

describe('transpiling a component (an empty transpile cache)', () => {
  it('is never needed for the bundled tools, which come transpiled: they run under Bun with an empty cache', () => {
    expect(bunBundledColdCache).toMatchObject({ ok: true, error: null });
  });

  it('works under Deno', () => {
    expect(denoColdCache).toMatchObject({ ok: true, error: null });
  });

  // jco's bindgen runs on its Node WASI shim, which calls process.binding('tcp_wrap'): Bun has none.
  it('fails under Bun: with an empty transpile cache the first call ends E_UNEXPECTED_EXIT (worker crashed)', () => {
    expect(bunColdCache.ok).toBe(false);
    expect(bunColdCache.error).toEqual({ code: 'E_UNEXPECTED_EXIT', details: { reason: 'worker_crashed', worker_exit_code: 1 } });
  });
});
