/**
 * A component that only wraps a preview1 module in jco's preview1 command
 * adapter runs as that module (packages/node/src/adapted.ts): one instance a
 * call instead of the glue's four. Users must not be able to tell: each
 * fixture tool here is called both ways, through its glue (the prepared
 * form without `preview1`, as a cache of one's own may hold it) and as the
 * adapted module, and must end the same way: output, exit code, error code.
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
  // Prepared once by a sandbox worker; the glue host is handed the same form without its module.
  const keeping = { get: async () => undefined, set: async (key: string, value: PreparedComponent) => void prepared.set(key, value) };
  const stripped = {
    get: async (key: string) => {
      const { preview1: _module, ...rest } = prepared.get(key) ?? ({} as PreparedComponent);
      return prepared.has(key) ? rest : undefined;
    },
    set: async () => {},
  };
  adapted = await Corral.create({
    bundled: false,
    toolDirs: [FIXTURES],
    size: 1,
    store: false,
    cache: keeping as unknown as ComponentCache,
  });
  glue = await Corral.create({ bundled: false, toolDirs: [FIXTURES], size: 1, store: false, cache: stripped as unknown as ComponentCache });
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

  it('escape: a read outside its mount is refused the same way', async () => {
    const mounts = [{ guest: '/workspace', access: 'read' as const, source: { kind: 'host' as const, path: workspace } }];
    const viaGlue = await glue.invoke('escape', {}, { mounts });
    const viaModule = await adapted.invoke('escape', {}, { mounts });
    expect(seen(viaModule)).toEqual(seen(viaGlue));
  }, 60_000);
});
