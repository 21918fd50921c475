/**
 * What a mount's storage must do for Corral's filesystem (filesystem.ts).
 *
 * A backend answers questions about ONE name in ONE directory it handed
 * out, and never follows a symlink or climbs `..` by itself: paths are
 * resolved by Corral, segment by segment from the mount root, at every use
 * (resolve.ts). That keeps containment in one place, whatever the storage:
 * an in-memory tree (memory.ts), or whatever a host's mount opener hands
 * out (a live folder, a folder loaded into memory).
 *
 * Errors are thrown as wasi:filesystem `error-code` strings ('no-entry',
 * 'not-directory', …).
 */

export type EntryType =
  | 'unknown'
  | 'block-device'
  | 'character-device'
  | 'directory'
  | 'fifo'
  | 'symbolic-link'
  | 'regular-file'
  | 'socket';

export interface EntryStat {
  type: EntryType;
  /** Device and inode: equal pairs name the same object. */
  dev: bigint;
  ino: bigint;
  nlink: bigint;
  size: bigint;
  /** Nanoseconds since the epoch. */
  atimeNs: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

export interface DirectoryListing {
  name: string;
  type: EntryType;
}

/** A new time for an entry: nanoseconds since the epoch, 'now', or null to leave it. */
export type NewTime = bigint | 'now' | null;

export interface OpenMode {
  read: boolean;
  write: boolean;
  /** Create the file if it does not exist. */
  create: boolean;
  /** With create: fail if it exists. */
  exclusive: boolean;
  truncate: boolean;
}

/**
 * A mount's storage. `D` is the backend's handle to a directory, `F` to an
 * open regular file. Every `name` is one path component: never empty, `.`,
 * `..`, or containing `/` (Corral checks; backends may assume it).
 */
export interface FsBackend<D = unknown, F = unknown> {
  /** The mount's root directory; valid for the whole call. */
  readonly root: D;
  /**
   * The root's absolute path on the host, when it has one: a symlink the
   * host made with an absolute target under it is read as inside the mount.
   */
  readonly hostRoot?: string;

  /** The entry `name` in `dir` (not followed), or `dir` itself when name is null. */
  stat(dir: D, name: string | null): EntryStat;
  /** A handle to the directory `name` in `dir`; fails if it is not a directory (a symlink included). */
  openDirectory(dir: D, name: string): D;
  /** Done with a handle from openDirectory (never called for the root). */
  releaseDirectory(dir: D): void;
  /**
   * Optional, for backends whose handles cost system calls to open: whether
   * `dir`, opened by walking `path` from the root, is still the directory at
   * that path, nothing on the way renamed, removed or replaced (by anyone).
   * Answering must be cheaper than that walk, and never true when unsure.
   * With it, Corral keeps handles between uses (resolve.ts DirectoryCache)
   * and asks this before each use instead of walking again.
   */
  stillAt?(dir: D, path: readonly string[]): boolean;
  readDirectory(dir: D): DirectoryListing[];
  readlink(dir: D, name: string): string;

  createDirectory(dir: D, name: string): void;
  removeDirectory(dir: D, name: string): void;
  unlink(dir: D, name: string): void;
  rename(fromDir: D, fromName: string, toDir: D, toName: string): void;
  symlink(dir: D, name: string, target: string): void;
  link(fromDir: D, fromName: string, toDir: D, toName: string): void;
  /** Set times of `name` in `dir` (not followed), or of `dir` itself when name is null. */
  setTimes(dir: D, name: string | null, atime: NewTime, mtime: NewTime): void;

  /**
   * Open the regular file `name` in `dir` (not followed). Anything that is
   * not a regular file (a directory, a symlink, a FIFO, a device, a socket)
   * is refused without being opened, so a call can never block in the kernel.
   */
  openFile(dir: D, name: string, mode: OpenMode): F;
  /**
   * Optional: the stat the backend took of `file` while opening it, if it
   * took one. Only its type, dev and ino are used: those stay true for as
   * long as the file is open, so Corral need not ask again.
   */
  openedStat?(file: F): EntryStat | undefined;
  fileStat(file: F): EntryStat;
  /** Read into `into` from `position`; the number of bytes read (0 at the end). */
  read(file: F, into: Uint8Array, position: number): number;
  write(file: F, data: Uint8Array, position: number): number;
  setSize(file: F, size: number): void;
  setFileTimes(file: F, atime: NewTime, mtime: NewTime): void;
  sync(file: F): void;
  closeFile(file: F): void;
}
