/**
 * A component that only wraps a preview1 module in jco's preview1 command
 * adapter runs as that module (packages/node/src/adapted.ts): one instance a
 * call instead of the glue's four. Users must not be able to tell: each
 * fixture tool here is called both ways, through its glue (a host made with
 * `adaptedModules: false`) and as the adapted module, and must end the same
 * way: output, exit code, error code.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { ComponentCache, Corral, type InvokeResult } from '@corral/node';
import type { PreparedComponent } from '@corral/wasi';
import { componentNew, parse } from '@bytecodealliance/jco';

const FIXTURES = new URL('./fixtures/tools/', import.meta.url).pathname;

let adapted: Corral;
let glue: Corral;
const prepared = new Map<string, PreparedComponent>();
let workspace: string;

beforeAll(async () => {
  // What the adapted host prepares is kept, to look at.
  const keeping = { get: async () => undefined, set: async (key: string, value: PreparedComponent) => void prepared.set(key, value) };
  adapted = await Corral.create({
    bundled: false,
    toolDirs: [FIXTURES],
    size: 1,
    store: false,
    cache: keeping as unknown as ComponentCache,
  });
  glue = await Corral.create({ bundled: false, toolDirs: [FIXTURES], size: 1, store: false, cache: false, adaptedModules: false });
  workspace = await mkdtemp(join(tmpdir(), 'corral-adapted-'));
  await writeFile(join(workspace, 'inside.txt'), 'inside\n');
}, 120_000);

afterAll(async () => {
  await adapted?.close();
  await glue?.close();
  if (workspace) await rm(workspace, { recursive: true, force: true });
});

/** What a user sees of a call, minus timings and the glue's own wording of a trap. */
function seen(r: InvokeResult) {
  return { ok: r.ok, exit: r.exit_code, output: r.output, code: r.error?.code, resource: r.error?.details?.resource, out: r.stdout_head };
}

const CASES: Array<[tool: string, input: unknown, options?: Parameters<Corral['invoke']>[2]]> = [
  ['echo', { text: 'héllo', n: [1, 2, 3] }],
  ['exit-fail', {}],
  ['not-json', {}],
  ['trap', {}],
  ['env-dump', {}],
  ['memory-bomb', {}],
  ['stdout-flood', {}],
  ['spin', {}],
];

describe('a component that wraps a preview1 module in the adapter', () => {
  it('is prepared with that module, and the module runs its calls', async () => {
    const r = await adapted.invoke('echo', { n: 1 });
    expect(r.ok).toBe(true);
    const echo = [...prepared.values()].find((p) => p.imports.length > 0 && p.preview1 !== undefined);
    expect(echo?.preview1).toBeInstanceOf(Uint8Array);
    // The module inside the component, as committed beside it, byte for byte.
    const component = new Uint8Array(await readFile(join(FIXTURES, 'echo/echo.wasm')));
    expect(Buffer.from(component).includes(Buffer.from(echo!.preview1!))).toBe(true);
  }, 60_000);

  for (const [tool, input, options] of CASES) {
    it(`${tool}: ends the same way through its glue and as the module`, async () => {
      const viaGlue = await glue.invoke(tool, input, options);
      const viaModule = await adapted.invoke(tool, input, options);
      expect(seen(viaModule)).toEqual(seen(viaGlue));
      if (tool === 'exit-fail') {
        // The adapter's wasi:cli/exit takes ok or err: the module's `return 3` is exit code 1 both ways.
        expect(viaModule.exit_code).toBe(1);
        expect(viaModule.stderr_tail).toContain('refusing on purpose');
      }
    }, 60_000);
  }

  it('the cache on disk keeps the module, so the next process runs it too', async () => {
    // Without it, every process after the first (each `corral exec`) ran the component through its glue.
    const component = new Uint8Array(await readFile(join(FIXTURES, 'echo/echo.wasm')));
    const key = createHash('sha256').update(component).digest('hex');
    const dir = await mkdtemp(join(tmpdir(), 'corral-adapted-cache-'));
    try {
      const first = await Corral.create({ bundled: false, toolDirs: [FIXTURES], size: 1, store: false, cache: new ComponentCache(dir) });
      try {
        expect((await first.invoke('echo', { n: 1 })).ok).toBe(true);
      } finally {
        await first.close();
      }
      const kept = await new ComponentCache(dir).get(key);
      expect(kept?.preview1).toBeInstanceOf(Uint8Array);
      expect(Buffer.from(component).includes(Buffer.from(kept!.preview1!))).toBe(true);
      // A damaged module is a miss, like a damaged glue.
      const file = join(dir, (await readdir(dir))[0]!, 'preview1.wasm');
      await writeFile(file, new Uint8Array([0, 97, 115, 109]));
      expect(await new ComponentCache(dir).get(key)).toBeUndefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('escape: every way out of its mount is refused both ways', async () => {
    // Read-write, as its spec declares. Which refusal a symlink to /etc meets first differs: preview1 refuses an
    // absolute target itself (ENOTCAPABLE, also on a read-only mount, by rights), the adapter's call reaches the
    // filesystem's EPERM (EROFS read-only). So the attempts are compared by outcome, not errno.
    const mounts = [{ guest: '/workspace', access: 'read-write' as const, source: { kind: 'host' as const, path: workspace } }];
    const attempts = (r: InvokeResult) =>
      (r.output as { attempts: Array<{ op: string; ok: boolean }> }).attempts.map(({ op, ok }) => ({ op, ok }));
    const viaGlue = await glue.invoke('escape', {}, { mounts });
    const viaModule = await adapted.invoke('escape', {}, { mounts });
    expect(viaModule.ok && viaGlue.ok).toBe(true);
    expect(attempts(viaModule)).toEqual(attempts(viaGlue));
    expect(attempts(viaModule).filter((a) => a.ok)).toEqual([]);
    expect(attempts(viaModule).length).toBeGreaterThan(10);
  }, 60_000);
});

/** A preview1 command module in WAT: fd_write, proc_exit, a bump cabi_realloc, `imports` and `body` added; `_start` prints "from-_start". */
const commandWat = (body: string, imports = '') => `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  ${imports}
  (memory (export "memory") 2)
  (global $bump (mut i32) (i32.const 65536))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (global.get $bump)
    (global.set $bump (i32.add (global.get $bump) (i32.and (i32.add (local.get 3) (i32.const 15)) (i32.const -16)))))
  (func $say (param $at i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $at))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (data (i32.const 200) "from-_start\\n")
  (func (export "_start") (call $say (i32.const 200) (i32.const 12)))
  ${body})`;

/** `jco new --wasi-command` of the module: exactly what adapted.ts rebuilds to compare. */
async function adaptedComponent(body: string, imports?: string): Promise<Uint8Array> {
  const adapter = readFileSync(new URL('../lib/wasi_snapshot_preview1.command.wasm', import.meta.resolve('@bytecodealliance/jco')));
  return componentNew(await parse(commandWat(body, imports)), [['wasi_snapshot_preview1', new Uint8Array(adapter)]]);
}

/** What a user sees of an exec, minus timings and the wording of a trap. */
function seenExec(r: Awaited<ReturnType<Corral['exec']>>) {
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { exit: r.exitCode, exited: r.exited, code: r.error?.code, out: text(r.stdout) };
}

describe('a component the preview1 host would not run as the component runs', () => {
  const cases: Array<[name: string, body: string, out: string, imports?: string]> = [
    // Called by the component before _start.
    [
      '_initialize',
      `(data (i32.const 300) "from-init\\n") (func (export "_initialize") (call $say (i32.const 300) (i32.const 10)))`,
      'from-init\nfrom-_start\n',
    ],
    // Run while the component is instantiated, before the adapter is linked in: its exit traps there.
    ['a start function that exits 0', `(func $init (call $proc_exit (i32.const 0))) (start $init)`, ''],
    [
      'a start function that prints',
      `(data (i32.const 300) "from-start\\n") (func $init (call $say (i32.const 300) (i32.const 11))) (start $init)`,
      '',
    ],
    // An export of the adapter's own, not a preview1 call: the preview1 host refused the module.
    [
      'an import of adapter_open_badfd',
      '',
      'from-_start\n',
      '(import "wasi_snapshot_preview1" "adapter_open_badfd" (func $badfd (param i32) (result i32)))',
    ],
  ];
  for (const [name, body, out, imports] of cases) {
    it(`${name}: is not run as its module, and ends as through its glue`, async () => {
      const component = await adaptedComponent(body, imports);
      const before = prepared.size;
      const viaModule = await adapted.exec(component);
      expect(prepared.size).toBe(before + 1);
      expect([...prepared.values()].at(-1)?.preview1).toBeUndefined();
      const viaGlue = await glue.exec(component);
      expect(seenExec(viaModule)).toEqual(seenExec(viaGlue));
      expect(seenExec(viaModule).out).toBe(out);
    }, 60_000);
  }
});
