/**
 * Filesystem attacks a security review found working on earlier Corral,
 * run as a component and as a preview1 module through the real worker pool
 * over a real host folder: a held directory descriptor whose folder is
 * swapped for an outward symlink, times set through an outward link,
 * readlink revealing host paths, removing or renaming the mount root, a
 * FIFO that blocked the worker in open(2), trailing slashes and
 * O_DIRECTORY with write, links the tool makes. Each attempt must fail, and
 * nothing outside the mount may change.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Corral, ComponentCache } from '@corral/node';

const TOOLS = new URL('../fixtures/tools/', import.meta.url).pathname;
const PREVIEW1 = new URL('../fixtures/preview1/', import.meta.url).pathname;
const SECRET = 'corral-secret-5e1d';

type Attempt = { op: string; ok: boolean; errno: number; detail: string };

let corral: Corral;
let base: string;
let workspace: string;
let outside: string;

/** Every entry under `dir` (not following links) with what identifies its state (not atime: reading it here moves it). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const s = lstatSync(p);
      const key = relative(dir, p);
      if (s.isSymbolicLink()) out[key] = `link:${readlinkSync(p)}`;
      else if (s.isDirectory()) {
        out[key] = `dir:${s.mtimeMs}`;
        walk(p);
      } else if (s.isFile()) out[key] = `file:${s.mtimeMs}:${readFileSync(p, 'utf8')}`;
      else out[key] = `other:${s.mode}`;
    }
  };
  walk(dir);
  return out;
}

beforeAll(async () => {
  corral = await Corral.create({
    toolDirs: [TOOLS, PREVIEW1],
    size: 2,
    store: false,
    cache: new ComponentCache(mkdtempSync(join(tmpdir(), 'corral-cache-'))),
  });
});
afterAll(async () => {
  await corral?.close();
  rmSync(base, { recursive: true, force: true });
});

beforeEach(() => {
  if (base) rmSync(base, { recursive: true, force: true });
  base = mkdtempSync(join(tmpdir(), 'corral-fs-attack-'));
  workspace = join(base, 'workspace');
  outside = join(base, 'outside');
  mkdirSync(join(workspace, 'sub'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), SECRET);
  writeFileSync(join(workspace, 'sub', 'file.txt'), 'inside\n');
  symlinkSync(outside, join(workspace, 'link'));
  symlinkSync('sub', join(workspace, 'inlink'));
  symlinkSync(join(outside, 'secret.txt'), join(workspace, 'file-link'));
  execFileSync('mkfifo', [join(workspace, 'fifo')]);
});

describe.each(['fs-attack', 'p1-fs-attack'])('%s', (tool) => {
  it('gets nothing outside its read-write mount, whatever it renames, links or opens', async () => {
    const outsideBefore = snapshot(outside);
    const result = await corral.invoke(
      tool,
      {},
      { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'host', path: workspace } }] },
    );
    // A FIFO that blocked in open(2) would end this call at its timeout instead.
    expect(result.error).toBeNull();
    const attempts = (result.output as { attempts: Attempt[] }).attempts;
    expect(attempts.map((a) => a.op)).toContain('read secret.txt through the stale descriptor');
    // The swap itself is the tool's right in its own folder; everything after it must fail.
    for (const a of attempts.filter((x) => x.op !== 'swap d for the outward link')) expect(a, a.op).toMatchObject({ ok: false });
    expect(attempts.find((a) => a.op === 'swap d for the outward link')?.ok).toBe(true);

    expect(snapshot(outside)).toEqual(outsideBefore);
    const text = JSON.stringify(result);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(base);
    // The mount root is still there, and the links the tool was refused were never made.
    expect(statSync(workspace).isDirectory()).toBe(true);
    expect(existsSync(join(workspace, 'made-out'))).toBe(false);
    expect(existsSync(join(workspace, 'made-abs'))).toBe(false);
    // A link inside the mount may be made: it points where the tool could go anyway.
    expect(readlinkSync(join(workspace, 'made-in'))).toBe('sub/file.txt');
  });

  it('reads a host folder mounted at / (the whole host tree, read-only)', async () => {
    const result = await corral.invoke(
      tool,
      { mode: 'root' },
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: '/' } }] },
    );
    expect(result.error).toBeNull();
    const [attempt] = (result.output as { attempts: Attempt[] }).attempts;
    expect(attempt).toMatchObject({ op: '/workspace/etc/passwd', ok: true });
    expect(attempt!.detail).toBe(
      readFileSync('/etc/passwd', 'utf8')
        .slice(0, 64)
        .replace(/[^\x20-\x7e]/g, ''),
    );
  });
});
