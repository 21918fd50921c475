/**
 * Tools written to break out, run through the real runtime. Each gets its
 * exact error code, or is contained (its own report shows every attempt
 * failed), and nothing outside its mounts is read or changed.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Corral, ComponentCache } from '@corral/node';

const FIXTURES = new URL('../fixtures/tools/', import.meta.url).pathname;
const NETWORK_FIXTURES = new URL('../fixtures/network/', import.meta.url).pathname;
const WAT_FIXTURES = new URL('../fixtures/wat/', import.meta.url).pathname;
const SECRET = 'corral-secret-7f3a9c';

let corral: Corral;
let cacheDir: string;
let rssAtStart = 0;
let base: string;
let workspace: string;
let outside: string;

/** Every file under `dir` with its size, mode and content, to compare before and after a call. */
function listing(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const key = relative(dir, p);
      if (e.isSymbolicLink()) out[key] = 'link';
      else if (e.isDirectory()) walk(p);
      else out[key] = `${statSync(p).mode}:${readFileSync(p, 'utf8')}`;
    }
  };
  walk(dir);
  return out;
}

beforeAll(async () => {
  cacheDir = mkdtempSync(join(tmpdir(), 'corral-cache-'));
  corral = await Corral.create({
    toolDirs: [FIXTURES, NETWORK_FIXTURES, WAT_FIXTURES],
    size: 2,
    store: false,
    cache: new ComponentCache(cacheDir),
  });
  await Promise.all([corral.invoke('echo', { warm: 1 }), corral.invoke('echo', { warm: 2 })]);
  rssAtStart = process.memoryUsage().rss;
});
afterAll(async () => {
  await corral?.close();
  rmSync(base, { recursive: true, force: true });
  rmSync(cacheDir, { recursive: true, force: true });
});

beforeEach(() => {
  if (base) rmSync(base, { recursive: true, force: true });
  base = mkdtempSync(join(tmpdir(), 'corral-hostile-'));
  workspace = join(base, 'workspace');
  outside = join(base, 'outside');
  mkdirSync(workspace);
  mkdirSync(outside);
  writeFileSync(join(base, 'outside.txt'), SECRET);
  writeFileSync(join(outside, 'secret.txt'), SECRET);
  writeFileSync(join(workspace, 'existing.txt'), 'existing\n');
  writeFileSync(join(workspace, 'doomed.txt'), 'doomed\n');
  symlinkSync(outside, join(workspace, 'link-out'));
  symlinkSync(join(base, 'outside.txt'), join(workspace, 'abs-link'));
  symlinkSync('../outside.txt', join(workspace, 'dotdot-link'));
});

type Attempt = { op: string; ok: boolean; errno: number; detail: string };

describe('hostile tools', () => {
  it('path traversal, absolute paths and symlink escapes all fail, and nothing outside is read', async () => {
    const before = listing(base);
    const result = await corral.invoke(
      'escape',
      {},
      { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'host', path: workspace } }] },
    );
    expect(result.error).toBeNull();
    const attempts = (result.output as { attempts: Attempt[] }).attempts;
    expect(attempts.length).toBeGreaterThanOrEqual(12);
    for (const a of attempts) expect(a, a.op).toMatchObject({ ok: false });
    expect(JSON.stringify(result)).not.toContain(SECRET);
    expect(listing(base)).toEqual(before);
  });

  it('a read mount refuses every write, create, rename and delete; the host folder is unchanged', async () => {
    const before = listing(base);
    const result = await corral.invoke(
      'fs-writer',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: workspace } }] },
    );
    const attempts = (result.output as { attempts: Attempt[] }).attempts;
    const onWorkspace = attempts.filter((a) => a.op.includes('/workspace') || a.op.includes('rename'));
    expect(onWorkspace).toHaveLength(5);
    for (const a of onWorkspace) expect(a, a.op).toMatchObject({ ok: false });
    // /tmp is the call's own scratch space and stays writable.
    expect(attempts.find((a) => a.op === 'write /tmp/scratch.txt')?.ok).toBe(true);
    expect(listing(base)).toEqual(before);
  });

  it('a read-write host mount writes to the real folder, and /tmp does not leak into it', async () => {
    const result = await corral.invoke(
      'fs-writer',
      {},
      { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'host', path: workspace } }] },
    );
    const attempts = (result.output as { attempts: Attempt[] }).attempts;
    for (const a of attempts) expect(a, a.op).toMatchObject({ ok: true });
    expect(readFileSync(join(workspace, 'new.txt'), 'utf8')).toBe('written by fs-writer\n');
    expect(readFileSync(join(workspace, 'renamed.txt'), 'utf8')).toBe('existing\nappended\n');
    expect(() => statSync(join(workspace, 'doomed.txt'))).toThrow();
    expect(statSync(join(workspace, 'dir')).isDirectory()).toBe(true);
    expect(readdirSync(base).sort()).toEqual(['outside', 'outside.txt', 'workspace']);
  });

  it('narrowing a read-write mount to read at call time is honoured; widening is refused', async () => {
    const before = listing(base);
    const narrowed = await corral.invoke(
      'fs-writer',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: workspace } }] },
    );
    expect((narrowed.output as { attempts: Attempt[] }).attempts[0]?.ok).toBe(false);
    expect(listing(base)).toEqual(before);
    const widened = await corral.invoke(
      'file-stats',
      {},
      { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'host', path: workspace } }] },
    );
    expect(widened.error?.code).toBe('E_INPUT_VALIDATION');
    const undeclared = await corral.invoke(
      'escape',
      {},
      { mounts: [{ guest: '/etc', access: 'read', source: { kind: 'host', path: outside } }] },
    );
    expect(undeclared.error?.code).toBe('E_INPUT_VALIDATION');
  });

  it('filling the disk quota is E_RESOURCE_EXHAUSTED (disk)', async () => {
    const result = await corral.invoke('fill-disk', {});
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details.resource).toBe('disk');
    expect(result.error?.details.used_bytes).toBeLessThanOrEqual(4 * 2 ** 20);
    expect(result.stderr_tail).toMatch(/write failed after [0-4] MiB/);
  });

  it('a stdout flood is cut at the output cap: E_RESOURCE_EXHAUSTED (output)', async () => {
    const result = await corral.invoke('stdout-flood', {}, { outputLimitBytes: 256 * 1024 });
    expect(result.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(result.error?.details.resource).toBe('output');
    expect(result.stdout_truncated).toBe(true);
  });

  it('the environment holds only the variables the spec lists, with caller values, plus TZ=UTC', async () => {
    process.env.CORRAL_HOST_ONLY = 'must-not-leak';
    const result = await corral.invoke('env-dump', {}, { env: { LANG: 'C.UTF-8' } });
    expect(result.output).toEqual({ LANG: 'C.UTF-8', TZ: 'UTC' });
    const unlisted = await corral.invoke('env-dump', {}, { env: { HOME: '/root' } });
    expect(unlisted.error?.code).toBe('E_INPUT_VALIDATION');
  });

  it.each([
    ['uses-sockets', 'wasi:sockets/instance-network'],
    ['uses-http', 'wasi:http/outgoing-handler'],
  ])('a component importing network interfaces (%s) is refused at load with E_NETWORK_BLOCKED', async (name, iface) => {
    const result = await corral.invoke(name, {});
    expect(result.error?.code).toBe('E_NETWORK_BLOCKED');
    expect(result.error?.message).toContain(iface);
    expect(result.error?.details.imports).toEqual([iface]);
    expect(result.exit_code).toBeNull();
  });

  // Read from the component's import section: jco lists only the imports a
  // component calls, and the glue looked each one up by name
  // (imports['constructor'] was Object; declares-http never calls http, and ran).
  it.each([
    ['imports-constructor', 'E_REGISTRATION', ['constructor']],
    ['imports-unknown', 'E_REGISTRATION', ['acme:evil/thing@1.0.0']],
    ['declares-http', 'E_NETWORK_BLOCKED', ['wasi:http/outgoing-handler']],
  ])('%s: an import Corral does not provide is refused at load with %s, before anything runs', async (name, code, imports) => {
    const result = await corral.invoke(name, {});
    expect(result.error?.code).toBe(code);
    expect(result.error?.details.imports).toEqual(imports);
    expect(result.error?.message).toContain(imports[0]);
    expect(result.exit_code).toBeNull();
  });

  it('a transpiled component from the cache is checked again before it is compiled', async () => {
    expect((await corral.invoke('echo', { cached: true })).ok).toBe(true);
    const sha256 = createHash('sha256')
      .update(readFileSync(join(FIXTURES, 'echo', 'echo.wasm')))
      .digest('hex');
    const entry = readdirSync(cacheDir).find((name) => name.startsWith(`${sha256}-`))!;
    const metaPath = join(cacheDir, entry, 'meta.json');
    const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as { imports: string[] };
    writeFileSync(metaPath, JSON.stringify({ ...meta, imports: [...meta.imports, 'constructor'] }));
    const other = await Corral.create({ bundled: false, toolDirs: [FIXTURES], size: 1, store: false, cache: new ComponentCache(cacheDir) });
    try {
      const result = await other.invoke('echo', {});
      expect(result.error?.code).toBe('E_REGISTRATION');
      expect(result.error?.details.imports).toEqual(['constructor']);
    } finally {
      await other.close();
    }
  });

  it('a file that is not WebAssembly is refused at registration, with E_REGISTRATION', () => {
    const refused = corral.loadErrors.find((e) => e.message.includes('not-wasm'));
    expect(refused?.code).toBe('E_REGISTRATION');
    expect(refused?.message).toMatch(/not a WebAssembly file/);
    expect(corral.registry.has('not-wasm')).toBe(false);
  });

  it('a running call can be cancelled: its worker is stopped and replaced', async () => {
    const controller = new AbortController();
    const pending = corral.invoke('spin', {}, { signal: controller.signal, timeoutMs: 30_000 });
    setTimeout(() => controller.abort(new Error('the agent changed its mind')), 200);
    const started = performance.now();
    const result = await pending;
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(result.error?.code).toBe('E_CANCELLED');
    expect(result.error?.details.cancelled).toBe(true);
    expect(result.error?.message).toMatch(/cancelled: the agent changed its mind/);
    expect((await corral.invoke('echo', { after: 'cancel' })).output).toEqual({ after: 'cancel' });
  });

  it('deep recursion traps as E_UNEXPECTED_EXIT and the host carries on', async () => {
    const result = await corral.invoke('deep-recursion', {});
    expect(result.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect((await corral.invoke('echo', { ok: 1 })).output).toEqual({ ok: 1 });
  });

  // A module built with wasm exception handling can catch the exception that unwinds proc_exit:
  // it printed and ended with exit code 0 after calling proc_exit(3).
  it('a preview1 module that catches its own proc_exit still exits with that code, and its host calls after it do nothing', async () => {
    const r = await corral.invoke('p1-catches-exit', {});
    expect(r.exit_code).toBe(3);
    expect(r.stdout_head).toBe('');
    expect(r.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(r.error?.message).toMatch(/exited with code 3/);
  });

  it("and so does one that catches it in its start function, before its memory is the host's", async () => {
    const r = await corral.invoke('p1-start-exit', {});
    expect(r.exit_code).toBe(3);
    expect(r.stdout_head).toBe('');
    expect(r.error?.code).toBe('E_UNEXPECTED_EXIT');
  });

  it('output nested 500,000 deep is E_UNEXPECTED_EXIT (output_too_deep), and the envelope still serializes', async () => {
    const result = await corral.invoke('deep-output', {});
    expect(result.error).toMatchObject({ code: 'E_UNEXPECTED_EXIT', details: { reason: 'output_too_deep' } });
    expect(() => JSON.stringify(result)).not.toThrow();
  });

  // Runs last: the same process, after every hostile tool above.
  it('afterwards 5,000 ordinary calls succeed, memory settles and does not grow with more calls', async () => {
    const thousandCalls = async () => {
      let ok = 0;
      const caller = async (c: number) => {
        for (let i = 0; i < 250; i++) {
          const r = await corral.invoke('echo', { c, i });
          if (r.ok && (r.output as { i: number }).i === i) ok++;
        }
      };
      await Promise.all([0, 1, 2, 3].map(caller));
      return ok;
    };
    expect(await thousandCalls()).toBe(1000);
    const rssAfterFirst = process.memoryUsage().rss;
    const rssAfter: number[] = [];
    for (let round = 0; round < 4; round++) {
      expect(await thousandCalls()).toBe(1000);
      rssAfter.push(process.memoryUsage().rss);
    }
    expect(corral.executor.pool.workerCount).toBeLessThanOrEqual(2);
    const mb = (n: number) => (n / 2 ** 20).toFixed(1);
    console.log(
      `rss: ${mb(rssAtStart)} MB at start, ${mb(rssAfterFirst)} MB after the hostile suite and 1,000 calls, ${rssAfter.map(mb).join(' / ')} MB after each 1,000 more`,
    );
    // Replacement workers and their compiled tools cost a fixed amount; calls themselves must not leak.
    // The first rise measured 130-226 MB across runs alone (it moves with the RSS at start, 213-262
    // MB), and 285 MB in a CI run while the machine also built and ran Chromium; one leaked 64 MiB
    // memory per hostile tool would be over 1 GB.
    expect((rssAfterFirst - rssAtStart) / 2 ** 20).toBeLessThan(340);
    // The next 2,000 calls still grow V8's heaps towards their steady size (4-45 MB measured
    // here with 32 MB young generations after 1,000, 39 MB with the 64 MB default, and 3 MB over
    // the next 1,000); after that, 2,000 more calls grew RSS 6-14 MB. So the bound is over those
    // 2,000: a leak of 25 KB a call, or of a 512 KiB memory every 20 calls, exceeds it; a leak of
    // a few KB a call is for the heap check in packages/wasi/test/pool.test.ts.
    expect((rssAfter[3]! - rssAfter[1]!) / 2 ** 20).toBeLessThan(40);
  }, 120_000);
});
