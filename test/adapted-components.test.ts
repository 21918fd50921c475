/**
 * A component that only wraps a preview1 module in jco's preview1 command
 * adapter runs as that module (packages/node/src/adapted.ts): one instance a
 * call instead of the glue's four. Users must not be able to tell: each
 * fixture tool here is called both ways, through its glue (a host made with
 * `adaptedModules: false`) and as the adapted module, and must end the same
 * way: output, exit code, error code.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral, type ComponentCache, type InvokeResult } from '@corral/node';
import type { PreparedComponent } from '@corral/wasi';

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
