/**
 * `corral validate` instantiates the tool to check that it can be: a wasm
 * start section runs then, and one that loops (`(start $s)` over
 * `(loop $l (br $l))`) made `corral validate` hang forever, in the CLI's own
 * thread — a CI job validating untrusted tools never ended. The probe now
 * runs in a sandbox worker under the spec's timeout_ms (at most 30 s), which
 * is stopped at the limit, and the loop is a problem at /component. The
 * fixtures are made here from WAT, as test/fixtures/validate/build.mjs makes
 * its own; each CLI runs in a child process with an outer timeout.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { componentNew, parse } from '@bytecodealliance/jco';
import { afterAll, beforeAll, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const TIMEOUT_MS = 1000;
/** Node's start, a first transpile of the component (seconds on a busy machine), and the worker's stop. */
const SLACK_MS = 25_000;

const root = mkdtempSync(join(tmpdir(), 'corral-validate-start-loop-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A start function that never returns, in a preview1 command module (`cabi_realloc` for the adapter). */
const loopingModule = `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2)
  (func $s (loop $l (br $l)))
  (start $s)
  (func (export "_start"))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 0)))`;

const specs: Record<'module' | 'component', string> = { module: '', component: '' };

beforeAll(async () => {
  const module = await parse(loopingModule);
  // The adapter `jco new --wasi-command` uses, as in test/fixtures/validate/build.mjs.
  const adapter = readFileSync(new URL('../lib/wasi_snapshot_preview1.command.wasm', import.meta.resolve('@bytecodealliance/jco')));
  const files = { module, component: await componentNew(module, [['wasi_snapshot_preview1', adapter]]) };
  for (const kind of ['module', 'component'] as const) {
    writeFileSync(join(root, `${kind}.wasm`), files[kind]);
    specs[kind] = join(root, `${kind}-spec.json`);
    writeFileSync(
      specs[kind],
      JSON.stringify({
        name: `start-loop-${kind}`,
        version: '1.0.0',
        description: 'a start function that loops',
        component: `${kind}.wasm`,
        input_schema: { type: 'object' },
        output_schema: { type: 'object' },
        resources: { timeout_ms: TIMEOUT_MS },
      }),
    );
  }
});

/** `node corral.js ARGS` in a child process with temporary state; killed after two minutes whatever happens. */
function corral(args: string[]): Promise<{ code: number | null; signal: string | null; stdout: string; ms: number }> {
  const started = performance.now();
  return new Promise((done) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      {
        cwd: ROOT,
        timeout: 120_000,
        env: {
          ...process.env,
          CORRAL_STORE: join(root, 'snapshots.db'),
          CORRAL_POLICY: join(root, 'policy.json'),
          CORRAL_CACHE_DIR: join(root, 'cache'),
        },
      },
      (err, stdout) => {
        const e = err as { code?: number; signal?: string } | null;
        done({ code: e ? (e.code ?? null) : 0, signal: e?.signal ?? null, stdout, ms: performance.now() - started });
      },
    );
  });
}

it.each(['module', 'component'] as const)(
  'a %s whose start function loops: exit 1 within timeout_ms, the loop named at /component',
  async (kind) => {
    const r = await corral(['validate', specs[kind], '--json']);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(1);
    expect(r.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    const { ok, problems } = JSON.parse(r.stdout) as { ok: boolean; problems: { path: string; message: string; hint?: string }[] };
    expect(ok).toBe(false);
    expect(problems).toEqual([
      {
        path: '/component',
        message: expect.stringContaining(`instantiation did not finish within ${TIMEOUT_MS} ms: does a start function loop?`),
        hint: expect.stringContaining('start section'),
      },
    ]);
  },
  150_000,
);

// Every call of such a module exits before _start; the probe saw the exit as an instantiation that
// went well, so validate said nothing (exit 0 included: _start still never runs).
it.each([3, 0])(
  'a module whose start function calls proc_exit(%i): a problem at /component, named so',
  async (code) => {
    const module = await parse(`(module
    (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
    (memory (export "memory") 1)
    (func $init (call $exit (i32.const ${code})))
    (start $init)
    (func (export "_start")))`);
    writeFileSync(join(root, `exits-${code}.wasm`), module);
    const spec = join(root, `exits-${code}-spec.json`);
    writeFileSync(
      spec,
      JSON.stringify({
        name: `start-exits-${code}`,
        version: '1.0.0',
        description: 'a start function that exits',
        component: `exits-${code}.wasm`,
        input_schema: { type: 'object' },
        output_schema: { type: 'object' },
      }),
    );
    const r = await corral(['validate', spec, '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      ok: false,
      problems: [
        {
          path: '/component',
          message: expect.stringContaining(`start function called proc_exit(${code}) while it was instantiated: _start would never run`),
          hint: expect.stringContaining('do not exit there'),
        },
      ],
    });
  },
  150_000,
);

it('a first-party tool still validates: exit 0', async () => {
  const r = await corral(['validate', join(ROOT, 'wasm-tools/diff-summary/tool-spec.json'), '--json']);
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toEqual({ ok: true });
}, 150_000);

// Anything that fills the probe worker's JS heap ends that worker, not the CLI: the worker's
// heap is made too small for the glue here to get there. In a child process, as host-survives does.
it('a probe that runs its worker out of heap is a problem, and the process lives', async () => {
  const script = `
    import { checkToolWasm } from ${JSON.stringify(join(ROOT, 'packages/node/dist/wasm-check.js'))};
    const problems = await checkToolWasm({ component: 'with-realloc.wasm' }, ${JSON.stringify(join(ROOT, 'test/fixtures/validate/tool-spec.json'))},
      { cache: false, resourceLimits: { maxOldGenerationSizeMb: 2, maxYoungGenerationSizeMb: 1 } });
    console.log(JSON.stringify(problems));`;
  const out = await new Promise<{ code: number | null; stdout: string }>((done) =>
    execFile(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, timeout: 120_000 }, (err, stdout) =>
      done({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout }),
    ),
  );
  expect(out.code).toBe(0);
  expect(JSON.parse(out.stdout)).toEqual([
    expect.objectContaining({ path: '/component', message: expect.stringMatching(/out of JS heap.*E_RESOURCE_EXHAUSTED/) }),
  ]);
}, 150_000);

// The probe's clock used to start while its worker was still booting (50-300 ms here), so a
// module with no start section at all failed with a small timeout_ms, blamed on a start function.
// 50 ms: more than a bare worker's boot alone (~43 ms on an idle machine), so counting the boot fails
// it anywhere, and twice what instantiating took at worst here (25 ms failed once, at load ~5).
it('a module with no start section validates under a small timeout_ms: the worker boot is not counted', async () => {
  const module = await parse(`(module
    (memory (export "memory") 1)
    (func (export "_start")))`);
  writeFileSync(join(root, 'no-start.wasm'), module);
  const spec = join(root, 'no-start-spec.json');
  writeFileSync(
    spec,
    JSON.stringify({
      name: 'no-start',
      version: '1.0.0',
      description: 'no start section',
      component: 'no-start.wasm',
      kind: 'module',
      input_schema: { type: 'object' },
      resources: { timeout_ms: 50 },
    }),
  );
  const r = await corral(['validate', spec, '--json']);
  expect(JSON.parse(r.stdout)).toMatchObject({ ok: true });
  expect(r.code).toBe(0);
}, 60_000);

// At a timeout_ms too small for this machine, a tool with no start function at all was told its start function loops.
it('a tool with no start function that cannot be instantiated within a tiny timeout_ms is not blamed for a loop', async () => {
  const spec = JSON.parse(readFileSync(join(ROOT, 'wasm-tools/diff-summary/tool-spec.json'), 'utf8')) as { resources?: object };
  writeFileSync(join(root, 'diff-summary.wasm'), readFileSync(join(ROOT, 'wasm-tools/diff-summary/diff-summary.wasm')));
  writeFileSync(join(root, 'tiny-timeout-spec.json'), JSON.stringify({ ...spec, resources: { ...spec.resources, timeout_ms: 1 } }));
  const r = await corral(['validate', join(root, 'tiny-timeout-spec.json'), '--json']);
  expect(r.code).toBe(1);
  const { problems } = JSON.parse(r.stdout) as { problems: { path: string; message: string; hint?: string }[] };
  expect(problems).toEqual([
    {
      path: '/component',
      message: expect.stringContaining('instantiation did not finish within 1 ms: none of its own code ran (it has no start function)'),
    },
  ]);
}, 60_000);
