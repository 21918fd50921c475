/**
 * Preview1 modules through the real runtime (Corral → worker pool →
 * Preview1Runner): the same answers as the component builds of the same
 * programs, the same filesystem rules, environment and limits, and no jco
 * anywhere on their path. The components here run through their glue
 * (`adaptedModules: false`): otherwise a component that only wraps a
 * preview1 module would run as that module, and both sides be the same host.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Corral, ComponentCache, BUNDLED_TOOLS_DIR, type MemoryTree, type MountSource } from '@corral/node';
import { diffTrees } from './helpers/gitdiff.js';
import { syntheticDiff } from '../bench/diffs.js';

const TOOL_FIXTURES = new URL('./fixtures/tools/', import.meta.url).pathname;
const P1_FIXTURES = new URL('./fixtures/preview1/', import.meta.url).pathname;
const SECRET = 'corral-secret-p1-5d1e';

let corral: Corral;
let scratch: string;
/** The bundled tools' preview1 modules, registered as <name>-p1 from a temporary folder. */
let moduleTools: string;

/** Every file under `dir` with its content, to compare before and after a call. */
function listing(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isSymbolicLink()) out[relative(dir, p)] = 'link';
      else if (e.isDirectory()) walk(p);
      else out[relative(dir, p)] = `${statSync(p).mode}:${readFileSync(p, 'utf8')}`;
    }
  };
  walk(dir);
  return out;
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'corral-p1-'));
  moduleTools = join(scratch, 'module-tools');
  for (const tool of ['diff-summary', 'file-stats']) {
    const dir = join(moduleTools, tool);
    mkdirSync(dir, { recursive: true });
    const spec = JSON.parse(readFileSync(join(BUNDLED_TOOLS_DIR, tool, 'tool-spec.json'), 'utf8'));
    writeFileSync(
      join(dir, 'tool-spec.json'),
      JSON.stringify({ ...spec, name: `${tool}-p1`, kind: 'module', component: `${tool}.module.wasm` }),
    );
    copyFileSync(join(BUNDLED_TOOLS_DIR, tool, `${tool}.module.wasm`), join(dir, `${tool}.module.wasm`));
  }
  corral = await Corral.create({
    toolDirs: [TOOL_FIXTURES, P1_FIXTURES, moduleTools],
    size: 2,
    store: false,
    cache: new ComponentCache(join(scratch, 'cache')),
    adaptedModules: false,
  });
});
afterAll(async () => {
  await corral?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('preview1 modules answer exactly like their components', () => {
  it('registers the modules as kind "module"', () => {
    expect(corral.loadErrors.map((e) => e.message)).toEqual([expect.stringContaining('not-wasm')]);
    for (const name of ['diff-summary-p1', 'file-stats-p1', 'p1-echo', 'p1-probe']) {
      expect(corral.registry.resolve(name).spec.kind, name).toBe('module');
    }
    expect(corral.registry.resolve('diff-summary').spec.kind).toBe('component');
  });

  it('diff-summary: the example, real git diffs and a 1 MB diff', async () => {
    const example = JSON.parse(readFileSync(join(BUNDLED_TOOLS_DIR, 'diff-summary/examples/example.diff.json'), 'utf8'));
    const git = diffTrees(
      {
        'a.txt': 'one\ntwo\nthree\n',
        'old/name.md': 'moved\n'.repeat(20),
        'gone.txt': 'bye\n',
        'bin.dat': new Uint8Array([0, 1, 2, 3, 0, 255]),
      },
      {
        'a.txt': 'one\n2\nthree\nfour\n',
        'new/name.md': 'moved\n'.repeat(19) + 'changed\n',
        'added.ts': 'export {};\n',
        'bin.dat': new Uint8Array([0, 9, 2, 3, 0, 255]),
      },
    );
    const inputs = [
      example,
      { diff: git.diff },
      { diff: git.diff, language: 'zh' },
      { diff: '' },
      { diff: 'not a diff at all\n' },
      { diff: syntheticDiff(1024 * 1024) },
    ];
    expect(JSON.stringify(inputs.at(-1)).length).toBeGreaterThan(1024 * 1024);
    for (const input of inputs) {
      const [component, module] = await Promise.all([corral.invoke('diff-summary', input), corral.invoke('diff-summary-p1', input)]);
      // Both succeed, or both fail the same way (not a diff: the tool's own error).
      expect(module.ok).toBe(component.ok);
      expect(module.ok, JSON.stringify(module.error)).toBe(input.diff !== 'not a diff at all\n');
      expect(module.output).toEqual(component.output);
      expect(module.exit_code).toBe(component.exit_code);
      expect(module.error?.code).toBe(component.error?.code);
      expect(module.error?.details.tool_error).toEqual(component.error?.details.tool_error);
    }
  });

  it('file-stats over an in-memory /workspace and over a host folder', async () => {
    const tree: MemoryTree = {
      'README.md': '# title\n\nsome words here\n',
      src: { 'a.ts': 'export const a = 1;\n', 'b.ts': '', lib: { 'deep.ts': 'x\ny\nz' }, 'notes.txt': 'é ü 世界\n' },
      empty: {},
      'data.bin': new Uint8Array([0, 10, 32, 255, 10]),
    };
    const host = join(scratch, 'host-ws');
    mkdirSync(join(host, 'src/lib'), { recursive: true });
    writeFileSync(join(host, 'src/a.ts'), 'one two\nthree\n');
    writeFileSync(join(host, 'src/lib/b.ts'), 'b');
    symlinkSync('src/a.ts', join(host, 'link.ts'));
    const memory: MountSource = { kind: 'memory', tree };
    const folder: MountSource = { kind: 'host', path: host };
    const cases: Array<[unknown, MountSource]> = [
      [{}, memory],
      [{ path: '/workspace/src' }, memory],
      [{ pattern: '*.ts' }, memory],
      [{ pattern: 'src/*.ts' }, memory],
      [{ path: '/workspace/missing' }, memory],
      [{}, folder],
      [{ path: '/workspace/link.ts' }, folder],
    ];
    for (const [input, source] of cases) {
      const mounts = [{ guest: '/workspace', access: 'read' as const, source }];
      const component = await corral.invoke('file-stats', input, { mounts });
      const module = await corral.invoke('file-stats-p1', input, { mounts });
      expect(module.ok, JSON.stringify(input)).toBe(component.ok);
      expect(module.output, JSON.stringify(input)).toEqual(component.output);
      expect(module.error?.code, JSON.stringify(input)).toBe(component.error?.code);
    }
  });

  it('the probe: same results from both hosts, except where preview1 is stricter', async () => {
    const mounts = [
      {
        guest: '/workspace',
        access: 'read' as const,
        source: { kind: 'memory', tree: { 'data.txt': 'workspace data\n', sub: { 'x.txt': 'x' } } },
      },
    ];
    const input = { mode: 'nosleep' };
    const module = await corral.invoke('p1-probe', input, { mounts });
    const component = await corral.invoke('probe-component', input, { mounts });
    expect(module.error).toBeNull();
    expect(component.error).toBeNull();
    const m = module.output as Record<string, unknown>;
    const c = component.output as Record<string, unknown>;
    const differs = Object.keys(m).filter((k) => JSON.stringify(m[k]) !== JSON.stringify(c[k]));
    // argv[0] is the tool's name; the clock moves. Where they differ on
    // purpose: preview1 refuses an absolute path itself (ENOTCAPABLE, the
    // component sees ENOENT). Both refuse a write through an fd opened
    // O_RDONLY with EBADF (the filesystem guard enforces it for components).
    expect(differs.filter((k) => k !== 'realtime_s').sort()).toEqual(['argv0', 'raw_absolute']);
    expect(m).toMatchObject({
      raw_absolute: 76,
      write_on_read_only_fd: 8,
      raw_dotdot: 63,
      workspace_create: 69,
      listing_tmp_d: '.,..,b.txt,link',
    });
    expect(c.write_on_read_only_fd).toBe(8);
  });

  it('a component that sleeps does not take its worker down (regression: a disposed pollable rejected later)', async () => {
    // One worker, so the call after the sleep lands on the same worker.
    const solo = await Corral.create({
      bundled: false,
      toolDirs: [P1_FIXTURES],
      size: 1,
      store: false,
      cache: new ComponentCache(join(scratch, 'cache')),
      // The pollable in question is the glue's.
      adaptedModules: false,
    });
    try {
      const slept = await solo.invoke(
        'probe-component',
        {},
        { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'memory', tree: {} } }] },
      );
      expect(slept.error).toBeNull();
      const after = await solo.invoke('p1-echo', { after: 'sleep' });
      expect(after.output).toEqual({ after: 'sleep' });
    } finally {
      await solo.close();
    }
  });

  it('the probe sleeps for real through poll_oneoff', async () => {
    const result = await corral.invoke(
      'p1-probe',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'memory', tree: {} } }] },
    );
    const out = result.output as Record<string, number>;
    expect(out.nanosleep).toBe(0);
    expect(out.slept_ms).toBeGreaterThanOrEqual(20);
    expect(Math.abs(out.realtime_s! - Date.now() / 1000)).toBeLessThan(60);
  });
});

describe('preview1 modules under the same limits and rules', () => {
  it('keep their real exit code, and report it as E_UNEXPECTED_EXIT with the stderr tail', async () => {
    const result = await corral.invoke('p1-exit-fail', {});
    expect(result.exit_code).toBe(3);
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.stderr_tail).toContain('refusing on purpose');
  });

  it('a trap is E_UNEXPECTED_EXIT and the worker carries on', async () => {
    const result = await corral.invoke('p1-trap', {});
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result.error?.details.trap).toBe(true);
    expect(result.stderr_tail).toContain('about to hit unreachable');
    expect((await corral.invoke('p1-echo', { after: 'trap' })).output).toEqual({ after: 'trap' });
    const deep = await corral.invoke('p1-deep-recursion', {});
    expect(deep.error?.code).toBe('E_UNEXPECTED_EXIT');
  });

  it('a stdout flood is cut at the output cap', async () => {
    const result = await corral.invoke('p1-stdout-flood', {}, { outputLimitBytes: 128 * 1024 });
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details.resource).toBe('output');
    expect(result.stdout_truncated).toBe(true);
  });

  it('a memory bomb stops at resources.memory_mb', async () => {
    const result = await corral.invoke('p1-memory-bomb', {});
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details.resource).toBe('memory');
    expect(result.error?.details.peak_bytes).toBeLessThanOrEqual(32 * 2 ** 20);
    expect(result.stderr_tail).toMatch(/malloc failed after \d+ MiB/);
  });

  it('filling the disk quota is E_RESOURCE_EXHAUSTED (disk)', async () => {
    const result = await corral.invoke('p1-fill-disk', {});
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details.resource).toBe('disk');
    expect(result.stderr_tail).toMatch(/write failed after [0-4] MiB/);
  });

  it('an infinite loop is stopped at its timeout and the worker replaced', async () => {
    const result = await corral.invoke('p1-spin', {}, { timeoutMs: 300 });
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details.resource).toBe('time');
    expect((await corral.invoke('p1-echo', { after: 'spin' })).output).toEqual({ after: 'spin' });
  });

  it('sees only the environment the spec lists, plus TZ=UTC', async () => {
    process.env.CORRAL_P1_HOST_ONLY = 'must-not-leak';
    const result = await corral.invoke('p1-env-dump', {}, { env: { LANG: 'C.UTF-8' } });
    expect(result.output).toEqual({ LANG: 'C.UTF-8', TZ: 'UTC' });
  });

  it('cannot escape its mount, and a read mount refuses writes; the host folder is unchanged', async () => {
    const base = mkdtempSync(join(scratch, 'hostile-'));
    const workspace = join(base, 'workspace');
    mkdirSync(workspace);
    mkdirSync(join(base, 'outside'));
    writeFileSync(join(base, 'outside.txt'), SECRET);
    writeFileSync(join(base, 'outside', 'secret.txt'), SECRET);
    writeFileSync(join(workspace, 'existing.txt'), 'existing\n');
    writeFileSync(join(workspace, 'doomed.txt'), 'doomed\n');
    symlinkSync(join(base, 'outside'), join(workspace, 'link-out'));
    symlinkSync(join(base, 'outside.txt'), join(workspace, 'abs-link'));
    symlinkSync('../outside.txt', join(workspace, 'dotdot-link'));
    const before = listing(base);

    const escaped = await corral.invoke(
      'p1-escape',
      {},
      { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'host', path: workspace } }] },
    );
    expect(escaped.error).toBeNull();
    const attempts = (escaped.output as { attempts: Array<{ op: string; ok: boolean }> }).attempts;
    expect(attempts.length).toBeGreaterThanOrEqual(12);
    for (const a of attempts) expect(a, a.op).toMatchObject({ ok: false });
    expect(JSON.stringify(escaped)).not.toContain(SECRET);
    expect(listing(base)).toEqual(before);

    const readOnly = await corral.invoke(
      'p1-fs-writer',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: workspace } }] },
    );
    const writes = (readOnly.output as { attempts: Array<{ op: string; ok: boolean }> }).attempts;
    for (const a of writes.filter((w) => w.op.includes('/workspace') || w.op.includes('rename')))
      expect(a, a.op).toMatchObject({ ok: false });
    expect(writes.find((a) => a.op === 'write /tmp/scratch.txt')?.ok).toBe(true);
    expect(listing(base)).toEqual(before);

    const readWrite = await corral.invoke(
      'p1-fs-writer',
      {},
      { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'host', path: workspace } }] },
    );
    for (const a of (readWrite.output as { attempts: Array<{ op: string; ok: boolean }> }).attempts)
      expect(a, a.op).toMatchObject({ ok: true });
    expect(readFileSync(join(workspace, 'renamed.txt'), 'utf8')).toBe('existing\nappended\n');
    expect(readdirSync(base).sort()).toEqual(['outside', 'outside.txt', 'workspace']);
  });
});

describe('no network for preview1 modules', () => {
  it('socket calls fail inside the tool and the call is E_NETWORK_BLOCKED, naming the call', async () => {
    const result = await corral.invoke('p1-socket', {});
    expect(result.error?.code).toBe('E_NETWORK_BLOCKED');
    expect(result.error?.details).toMatchObject({ call: 'sock_send', calls: ['sock_send', 'sock_recv'], exit_code: 0 });
    // fd 3 is the call's own /tmp, a folder, never a socket: ENOTSOCK (57).
    expect(result.stdout_head).toContain('"sock_send":57');
  });

  it('a module importing a socket call preview1 does not have is refused at load', async () => {
    const result = await corral.invoke('p1-net-import', {});
    expect(result.error?.code).toBe('E_NETWORK_BLOCKED');
    expect(result.error?.details.imports).toEqual(['wasi_snapshot_preview1.sock_open']);
    expect(result.exit_code).toBeNull();
  });

  it('a module importing a function no WASI host provides is refused at load with E_REGISTRATION', async () => {
    const result = await corral.invoke('p1-bad-import', {});
    expect(result.error?.code).toBe('E_REGISTRATION');
    expect(result.error?.message).toContain('env.host_magic');
  });
});

describe('the module path never transpiles', () => {
  it('runs modules without jco: the component cache stays empty', async () => {
    const cacheDir = join(scratch, 'untouched-cache');
    const only = await Corral.create({
      bundled: false,
      toolDirs: [moduleTools],
      size: 1,
      store: false,
      cache: new ComponentCache(cacheDir),
    });
    try {
      const result = await only.invoke('diff-summary-p1', { diff: '' });
      expect(result.ok).toBe(true);
    } finally {
      await only.close();
    }
    let entries: string[] = [];
    try {
      entries = readdirSync(cacheDir, { recursive: true }) as string[];
    } catch {
      entries = [];
    }
    expect(entries).toEqual([]);
  });
});
