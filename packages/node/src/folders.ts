/**
 * `mkdir -p`, one level at a time. Node 20's `mkdir(path, { recursive: true })`
 * never returns for a path under /proc (the kernel answers ENOENT for a
 * folder it will not create, and Node retries the parent forever, at full
 * CPU): a store or cache path set there by mistake hung `Corral.create`.
 * Here each missing folder is made once, and the first refusal is thrown.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/** Make `path` and any missing folders above it (`mode` for each one made). */
export function makeFoldersSync(path: string, mode?: number): void {
  const missing: string[] = [];
  let at = resolve(path);
  for (; !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.unshift(at);
  // A file in the way: mkdir says so (EEXIST), as a recursive mkdir did.
  if (!statSync(at).isDirectory()) missing.unshift(at);
  for (const dir of missing) {
    try {
      mkdirSync(dir, { mode });
    } catch (err) {
      if (!(exists(err) && statSync(dir).isDirectory())) throw err;
    }
  }
}

/** makeFoldersSync, without blocking the event loop. */
export async function makeFolders(path: string, mode?: number): Promise<void> {
  const found = (at: string) =>
    access(at).then(
      () => true,
      () => false,
    );
  const missing: string[] = [];
  let at = resolve(path);
  for (; !(await found(at)) && dirname(at) !== at; at = dirname(at)) missing.unshift(at);
  if (!(await stat(at)).isDirectory()) missing.unshift(at);
  for (const dir of missing) {
    try {
      await mkdir(dir, { mode });
    } catch (err) {
      if (!(exists(err) && (await stat(dir)).isDirectory())) throw err;
    }
  }
}

/** Something has that name: a folder made meanwhile by someone else (another process making the same store), or a file in the way. */
function exists(err: unknown): boolean {
  return (err as NodeJS.ErrnoException).code === 'EEXIST';
}
