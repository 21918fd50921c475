/**
 * Paths on a kernel filesystem. Node 20's `mkdir(path, { recursive: true })`
 * never returns for a folder under /proc (the kernel answers ENOENT, and
 * Node retries the parent forever at full CPU), so a store or a cache set
 * there by mistake hung `Corral.create` for good: not even a timer of the
 * program's own could fire. Folders are now made one level at a time
 * (folders.ts). Each case runs in a child process with an outer time limit.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeFolders, makeFoldersSync } from '../../packages/node/dist/folders.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const NOWHERE = '/proc/corral-nowhere';

const script = `
  import { Corral } from '@corral/node';
  const corral = await Corral.create({ size: 1, store: ${JSON.stringify(`${NOWHERE}/snapshots.db`)} });
  const result = await corral.invoke('diff-summary', { diff: '' });
  await corral.close();
  console.log(JSON.stringify({ ok: result.ok, snapshot: result.snapshot }));`;

describe.runIf(process.platform === 'linux')('a store and a cache under /proc', () => {
  it('Corral starts, runs the call, and says why its snapshot was not written', async () => {
    const run = await new Promise<{ code: number | null; signal: string | null; stdout: string }>((done) =>
      execFile(
        process.execPath,
        ['--input-type=module', '-e', script],
        { cwd: ROOT, timeout: 60_000, env: { ...process.env, CORRAL_CACHE_DIR: `${NOWHERE}/cache` } },
        (err, stdout) => {
          const e = err as { code?: number; signal?: string } | null;
          done({ code: e ? (e.code ?? null) : 0, signal: e?.signal ?? null, stdout });
        },
      ),
    );
    expect(run.signal).toBeNull();
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      ok: true,
      snapshot: {
        id: expect.any(String),
        error: expect.stringMatching(/cannot create the folder \/proc\/corral-nowhere: the system refuses to create it there \(ENOENT\)/),
      },
    });
  }, 90_000);

  it('makeFolders refuses at the first folder the kernel will not make, both ways', async () => {
    expect(() => makeFoldersSync(`${NOWHERE}/a/b`)).toThrow(expect.objectContaining({ code: 'ENOENT', folder: NOWHERE }));
    await expect(makeFolders(`${NOWHERE}/a/b`)).rejects.toMatchObject({ code: 'ENOENT', folder: NOWHERE });
  });
});

describe('makeFolders', () => {
  it('makes every missing level, again without complaint, and names a file in the way (EEXIST), both ways', async () => {
    const root = mkdtempSync(join(tmpdir(), 'corral-folders-'));
    try {
      // The current folder, however it is written, is there already.
      for (const here of ['', '.', './']) {
        makeFoldersSync(here);
        await makeFolders(here);
      }
      makeFoldersSync(join(root, 'a/b/c'));
      await makeFolders(join(root, 'd/e'), 0o700);
      makeFoldersSync(join(root, 'a/b/c'));
      await makeFolders(join(root, 'd/e'));
      expect([statSync(join(root, 'a/b/c')).isDirectory(), statSync(join(root, 'd/e')).mode & 0o777]).toEqual([true, 0o700]);
      writeFileSync(join(root, 'file'), 'in the way');
      for (const path of [join(root, 'file'), join(root, 'file/below')]) {
        const inTheWay = {
          code: 'EEXIST',
          folder: join(root, 'file'),
          message: expect.stringMatching(/a file that is not a folder is in the way$/),
        };
        expect(() => makeFoldersSync(path)).toThrow(expect.objectContaining(inTheWay));
        await expect(makeFolders(path)).rejects.toMatchObject(inTheWay);
      }
      // A link to nothing is in the way too; its target is never made.
      symlinkSync(join(root, 'nothing'), join(root, 'dangling'));
      const dangling = { code: 'EEXIST', message: expect.stringMatching(/a symbolic link that leads nowhere is in the way$/) };
      expect(() => makeFoldersSync(join(root, 'dangling/x'))).toThrow(expect.objectContaining(dangling));
      await expect(makeFolders(join(root, 'dangling/x'))).rejects.toMatchObject(dangling);
      expect(existsSync(join(root, 'nothing'))).toBe(false);
      // A link to a file, and a link that loops, are named for what they are (the loop threw a bare ELOOP from stat).
      symlinkSync(join(root, 'file'), join(root, 'to-file'));
      symlinkSync(join(root, 'loop'), join(root, 'loop'));
      for (const [link, what] of [
        ['to-file', /a symbolic link to a file that is not a folder is in the way$/],
        ['loop', /a symbolic link that loops is in the way$/],
      ] as const) {
        const inTheWay = { code: 'EEXIST', folder: join(root, link), message: expect.stringMatching(what) };
        expect(() => makeFoldersSync(join(root, link, 'x'))).toThrow(expect.objectContaining(inTheWay));
        await expect(makeFolders(join(root, link, 'x'))).rejects.toMatchObject(inTheWay);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('walks the path as the kernel does: link/../made is made beside the link target, as mkdir -p makes it, both ways', async () => {
    const root = mkdtempSync(join(tmpdir(), 'corral-folders-'));
    try {
      mkdirSync(join(root, 'target/sub'), { recursive: true });
      symlinkSync(join(root, 'target/sub'), join(root, 'link'));
      makeFoldersSync(`${root}/link/../made-sync/x`);
      await makeFolders(`${root}/link/../made/x`);
      expect(statSync(join(root, 'target/made-sync/x')).isDirectory()).toBe(true);
      expect(statSync(join(root, 'target/made/x')).isDirectory()).toBe(true);
      expect(readdirSync(root).sort()).toEqual(['link', 'target']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
