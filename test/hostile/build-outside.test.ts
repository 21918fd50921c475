/**
 * `corral build` on a hostile tool folder: the file its spec's `component`
 * names may be a symlink out of the folder (`tool.wasm -> ~/.bashrc`), or lie
 * under a folder that is one. The build wrote through both: the file outside
 * was overwritten with the component's bytes, which the tool's own source
 * chooses in part (a data segment holding shell lines). Through the real CLI
 * (a child process): Rust wrote with writeFile (through the link), C
 * through a temporary file under the folder on the way (through the link).
 */
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = resolve(import.meta.dirname, '../../packages/node/bin/corral.js');
// The languages' toolchains are required, as for test/author (.ci/run installs them).

let root: string;
const corral = (args: string[]) =>
  spawnSync(process.execPath, [CLI, ...args], {
    cwd: root,
    encoding: 'utf8',
    env: {
      ...process.env,
      CORRAL_STORE: join(root, 'snapshots.db'),
      CORRAL_POLICY: join(root, 'policy.json'),
      CORRAL_CACHE_DIR: join(root, 'cache'),
    },
    timeout: 240_000,
  });

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'corral-build-outside-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('corral build writes only inside the tool folder', () => {
  it('a component that is a symlink out is replaced, and the file it pointed at is untouched', () => {
    expect(corral(['init', 'linked', '--lang', 'rust']).status).toBe(0);
    const victim = join(root, 'victim-bashrc');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, join(root, 'linked', 'linked.wasm'));

    const build = corral(['build', 'linked']);
    expect(build.status, build.stderr).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(lstatSync(join(root, 'linked', 'linked.wasm')).isFile()).toBe(true);
    expect(corral(['test', 'linked']).status).toBe(0);
  });

  it('a component under a folder that is a symlink out is refused, and nothing is written there', () => {
    expect(corral(['init', 'via-dir', '--lang', 'c']).status).toBe(0);
    const outside = join(root, 'outside');
    mkdirSync(outside);
    symlinkSync(outside, join(root, 'via-dir', 'out'));
    const specPath = join(root, 'via-dir', 'tool-spec.json');
    const spec = JSON.parse(readFileSync(specPath, 'utf8')) as Record<string, unknown>;
    writeFileSync(specPath, JSON.stringify({ ...spec, component: 'out/via-dir.wasm' }));

    const build = corral(['build', 'via-dir']);
    expect(build.status).toBe(1);
    expect(build.stderr).toMatch(/not inside the tool folder/);
    expect(readdirSync(outside)).toEqual([]);
  });
});

// The folders on the way to the component were checked, then made by path: a build step swapping one for a
// link out between the two made empty folders outside the tool folder. Each is now made and opened through
// the one above it (Linux, /proc/self/fd), and a link on the way is refused.
describe('writeBuilt while the folders on the way are swapped for links', () => {
  it('makes nothing outside the tool folder, and refuses a link on the way', async () => {
    const { writeBuilt } = await import('../../packages/node/dist/author/language.js');
    const base = mkdtempSync(join(root, 'race-'));
    const [dir, outside] = [join(base, 'tool'), join(base, 'outside')];
    mkdirSync(dir);
    mkdirSync(outside);
    const bytes = new Uint8Array([0, 0x61, 0x73, 0x6d]);
    symlinkSync(outside, join(dir, 'link'));
    await expect(writeBuilt(dir, join(dir, 'link/made/x.wasm'), bytes)).rejects.toThrow(
      /link is a symbolic link, which the build does not follow/,
    );
    let stop = false;
    const swapper = (async () => {
      // writeBuilt's own mkdirs run on other threads meanwhile: a step that loses the race is skipped.
      const attempt = (step: () => void) => {
        try {
          step();
        } catch {}
      };
      while (!stop) {
        attempt(() => rmSync(join(dir, 'a'), { recursive: true, force: true }));
        attempt(() => mkdirSync(join(dir, 'a')));
        await new Promise((r) => setImmediate(r));
        attempt(() => rmSync(join(dir, 'a'), { recursive: true, force: true }));
        attempt(() => symlinkSync(outside, join(dir, 'a')));
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (let i = 0; i < 600; i++) await writeBuilt(dir, join(dir, `a/b${i % 5}/c/x.wasm`), bytes).catch(() => undefined);
    stop = true;
    await swapper;
    expect(readdirSync(outside)).toEqual([]);
    await writeBuilt(dir, join(dir, 'out/deep/x.wasm'), bytes);
    expect(readFileSync(join(dir, 'out/deep/x.wasm'))).toEqual(Buffer.from(bytes));
  }, 60_000);

  // The temporary file was named after the component: a name of 240 bytes (legal) went over NAME_MAX with its suffix.
  it('writes a component whose name is as long as the system allows', async () => {
    const { writeBuilt } = await import('../../packages/node/dist/author/language.js');
    const dir = mkdtempSync(join(root, 'long-'));
    const name = `${'n'.repeat(250)}.wasm`;
    await writeBuilt(dir, join(dir, name), new Uint8Array([0, 0x61, 0x73, 0x6d]));
    expect(readdirSync(dir)).toEqual([name]);
  });
});
