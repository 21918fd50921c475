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
import { access, lstat, mkdir, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, resolve, sep } from 'node:path';

/**
 * A path the user gave, made absolute as the kernel reads it: the working
 * folder put in front, and `..` left for the kernel to follow (`link/..` is
 * the parent of the link's target). path.resolve folds `..` away by text,
 * and so names another file whenever a link comes before it.
 */
export function absoluteAsGiven(path: string): string {
  return isAbsolute(path) ? path : `${process.cwd()}${sep}${path}`;
}

/**
 * An existing folder the user named, as an absolute path safe to join() onto: its real path when it
 * climbs with `..` (`link/..` is above the link's target, which resolve() would not find), else
 * resolve()'s answer, so an ordinary path is shown as the user knows it. A path that is not there is
 * resolved by name, for the caller to say so.
 */
export async function folderAsGiven(path: string): Promise<string> {
  if (!path.split(/[\\/]/).includes('..')) return resolve(path);
  return realpath(path).catch(() => resolve(path));
}

/** A folder that could not be made: `folder` is the first one refused, `code` the system's reason (EEXIST: a file is in the way). */
export class FolderError extends Error {
  constructor(
    readonly folder: string,
    readonly code: string,
    reason: string,
    /** `reach` when a folder above cannot be searched: whether this one exists cannot be known. */
    action: 'create' | 'reach' = 'create',
  ) {
    super(`cannot ${action} the folder ${folder}: ${reason}`);
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
      if (!(exists(err) && isFolderSync(dir))) throw folderError(dir, err, () => inTheWaySync(dir), unsearchableSync(dir, err));
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
      const what = exists(err) ? await inTheWay(dir) : '';
      throw folderError(dir, err, () => what, await unsearchable(dir, err));
    }
  }
}

// Not a folder, too, when stat fails otherwise than ENOENT (ELOOP: a link that loops): mkdir then says what is there.
const isFolderSync = (at: string) => {
  try {
    return statSync(at).isDirectory();
  } catch {
    return false;
  }
};
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

function folderError(dir: string, err: unknown, inTheWay: () => string, unsearchable: string | undefined): FolderError | unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string') return err;
  if (unsearchable !== undefined)
    return new FolderError(dir, code, `the folder ${unsearchable} cannot be searched (permission denied, EACCES)`, 'reach');
  return new FolderError(dir, code, code === 'EEXIST' ? inTheWay() : (REASONS[code] ?? (err as Error).message));
}

/**
 * mkdir's EACCES means either "may not write in the parent" or "may not even look there". In the second
 * case the folder may well exist: name the folder above that cannot be searched (the nearest one stat reaches).
 */
function unsearchableSync(dir: string, err: unknown): string | undefined {
  const code = (path: string) => {
    try {
      statSync(path);
      return undefined;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code;
    }
  };
  if ((err as NodeJS.ErrnoException | null)?.code !== 'EACCES' || code(dir) !== 'EACCES') return undefined;
  let above = dirname(dir);
  while (dirname(above) !== above && code(above) === 'EACCES') above = dirname(above);
  return above;
}

async function unsearchable(dir: string, err: unknown): Promise<string | undefined> {
  const code = (path: string) =>
    stat(path).then(
      () => undefined,
      (e: NodeJS.ErrnoException) => e.code,
    );
  if ((err as NodeJS.ErrnoException | null)?.code !== 'EACCES' || (await code(dir)) !== 'EACCES') return undefined;
  let above = dirname(dir);
  while (dirname(above) !== above && (await code(above)) === 'EACCES') above = dirname(above);
  return above;
}

/** What mkdir found in the way of a folder (EEXIST, and not a folder), from how stat and lstat see it. */
function inTheWaySync(dir: string): string {
  let statCode: string | undefined;
  try {
    statSync(dir);
  } catch (err) {
    statCode = (err as NodeJS.ErrnoException).code ?? '';
  }
  return wayReason(statCode, lstatSync(dir, { throwIfNoEntry: false })?.isSymbolicLink() === true);
}

async function inTheWay(dir: string): Promise<string> {
  const statCode = await stat(dir).then(
    () => undefined,
    (err: NodeJS.ErrnoException) => err.code ?? '',
  );
  const isLink = await lstat(dir).then(
    (st) => st.isSymbolicLink(),
    () => false,
  );
  return wayReason(statCode, isLink);
}

function wayReason(statCode: string | undefined, isLink: boolean): string {
  if (!isLink) return 'a file that is not a folder is in the way';
  // stat follows the link: it finds a file, a loop, or nothing.
  if (statCode === undefined) return 'a symbolic link to a file that is not a folder is in the way';
  if (statCode === 'ELOOP') return 'a symbolic link that loops is in the way';
  return 'a symbolic link that leads nowhere is in the way';
}
