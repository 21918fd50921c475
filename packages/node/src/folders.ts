/**
 * `mkdir -p`, one level at a time. Node 20's `mkdir(path, { recursive: true })`
 * never returns for a path under /proc (the kernel answers ENOENT for a
 * folder it will not create, and Node retries the parent forever, at full
 * CPU): a store or cache path set there by mistake hung `Corral.create`.
 * Here each missing folder is made once, and the first refusal is thrown.
 *
 * The path is walked as given, not resolved first: `link/../made` is made
 * where the kernel will look for it (beside the link's target), as `mkdir -p`
 * does, so a file opened there afterwards lands in the folder just made.
 */
import { existsSync, lstatSync, mkdirSync, statSync } from 'node:fs';
import { access, lstat, mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

/** A folder that could not be made: `folder` is the first one refused, `code` the system's reason (EEXIST: a file is in the way). */
export class FolderError extends Error {
  constructor(
    readonly folder: string,
    readonly code: string,
    reason: string,
  ) {
    super(`cannot create the folder ${folder}: ${reason}`);
    this.name = 'FolderError';
  }
}

/** Make `path` and any missing folders above it (`mode` for each one made). */
export function makeFoldersSync(path: string, mode?: number): void {
  const missing: string[] = [];
  let at = path || '.';
  for (; !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.unshift(at);
  // A file in the way: mkdir says so (EEXIST), as a recursive mkdir did.
  if (!isFolderSync(at)) missing.unshift(at);
  for (const dir of missing) {
    try {
      mkdirSync(dir, { mode });
    } catch (err) {
      if (!(exists(err) && isFolderSync(dir))) throw folderError(dir, err, () => lstatSync(dir).isSymbolicLink());
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
  let at = path || '.';
  for (; !(await found(at)) && dirname(at) !== at; at = dirname(at)) missing.unshift(at);
  if (!(await isFolder(at))) missing.unshift(at);
  for (const dir of missing) {
    try {
      await mkdir(dir, { mode });
    } catch (err) {
      if (exists(err) && (await isFolder(dir))) continue;
      const link = await lstat(dir).then(
        (st) => st.isSymbolicLink(),
        () => false,
      );
      throw folderError(dir, err, () => link);
    }
  }
}

const isFolderSync = (at: string) => statSync(at, { throwIfNoEntry: false })?.isDirectory() === true;
const isFolder = (at: string) =>
  stat(at).then(
    (st) => st.isDirectory(),
    () => false,
  );

/** Something has that name: a folder made meanwhile by someone else (another process making the same store), or a file in the way. */
function exists(err: unknown): boolean {
  return (err as NodeJS.ErrnoException).code === 'EEXIST';
}

const REASONS: Record<string, string> = {
  ENOENT: 'the system refuses to create it there (ENOENT)',
  EACCES: 'permission denied (EACCES)',
  EPERM: 'the system does not permit it (EPERM)',
  EROFS: 'the file system is read-only (EROFS)',
  ENOSPC: 'no space left on the device (ENOSPC)',
  ELOOP: 'a symbolic link on the way loops (ELOOP)',
  ENAMETOOLONG: 'the path is too long (ENAMETOOLONG)',
  ENOTDIR: 'a file that is not a folder is on the way (ENOTDIR)',
};

function folderError(dir: string, err: unknown, isLink: () => boolean): FolderError | unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string') return err;
  let reason = REASONS[code] ?? (err as Error).message;
  if (code === 'EEXIST')
    reason = isLink() ? 'a symbolic link that leads nowhere is in the way' : 'a file that is not a folder is in the way';
  return new FolderError(dir, code, reason);
}
