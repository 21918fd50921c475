/**
 * A host folder as a mount's storage (Node only; runs in the sandbox worker).
 *
 * Corral resolves every guest path itself, one name at a time
 * (@corral/wasi's resolve.ts); this backend only ever answers for ONE name
 * in ONE directory it handed out, and never follows a symlink in that last
 * position. How a directory is held decides whether the host can race it:
 *
 *   - 'fd' (Linux): every directory is an O_PATH descriptor, and a name in
 *     it is reached as `/proc/self/fd/N/name`: the kernel jumps to the very
 *     directory the fd holds (not to whatever path it had), then looks up
 *     that one name. A folder renamed or swapped for a symlink while a tool
 *     works cannot redirect a lookup, whoever swapped it.
 *   - 'path' (other systems, or no /proc): directories are real paths, each
 *     component checked with lstat just before use. Corral's own resolution
 *     still refuses `..`, absolute paths and symlinks out of the mount, but
 *     a concurrent *host* process swapping a folder for a symlink between
 *     the check and the use could win that race. SECURITY.md says so.
 *
 * Files are opened only when they are regular files: the name is first
 * opened O_PATH (which never blocks, even on a FIFO) and checked with
 * fstat, and only then reopened through /proc for reading or writing.
 */
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  futimesSync,
  linkSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  realpathSync,
  renameSync,
  rmdirSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeSync,
  type BigIntStats,
  type Dirent,
} from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import {
  fsErrorOfErrno,
  type ClosableBackend,
  type DirectoryListing,
  type EntryStat,
  type EntryType,
  type NewTime,
  type OpenMode,
} from '@corral/wasi/fs';
import { packageRequire } from './package-files.js';

/** open(2)'s O_PATH on Linux (every architecture Node runs on); Node does not export it. */
const O_PATH = 0o10000000;
const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = constants;

/** Run a node:fs call, turning its error into a wasi:filesystem error code. */
function fs<T>(call: () => T): T {
  try {
    return call();
  } catch (err) {
    if (typeof err === 'string') throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw code ? fsErrorOfErrno(code) : 'io';
  }
}

/** A directory of the mount: `path` names it for the kernel (`/proc/self/fd/N`, or a real path). */
interface Dir {
  fd: number;
  path: string;
  /** Where it must be to be still at its path from the root (stillAt): the host path's bytes, as latin1. */
  at?: string;
  /** The path from the root `at` was made for. */
  atKey?: string;
}

interface File {
  fd: number;
  /** The fstat taken while opening it, when one was. */
  opened?: BigIntStats;
}

export type Confinement = 'fd' | 'path';

let confinement: Confinement | undefined;

/**
 * How host folders are held on this system: 'fd' where the kernel can be
 * asked about a name inside a held directory (Linux with /proc), else 'path'.
 */
export function hostConfinement(): Confinement {
  if (confinement) return confinement;
  confinement = 'path';
  if (process.platform !== 'linux') return confinement;
  try {
    const fd = openSync('/', O_PATH | O_DIRECTORY);
    try {
      const held = fstatSync(fd, { bigint: true });
      const seen = statSync(`/proc/self/fd/${fd}`, { bigint: true });
      if (held.ino === seen.ino && held.dev === seen.dev) confinement = 'fd';
    } finally {
      closeSync(fd);
    }
  } catch {
    // no /proc, or O_PATH refused: checked paths it is.
  }
  return confinement;
}

/**
 * Open `hostPath` (a directory) as a mount's storage, held until `close`.
 * `confinement` defaults to the best this system has (tests pass 'path' to
 * check the fallback on Linux too).
 */
export function openHostDirectory(
  hostPath: string,
  confinement: Confinement = hostConfinement(),
  options: { exactTimes?: boolean } = {},
): ClosableBackend {
  const exact = options.exactTimes === false ? null : exactFileTimes();
  return confinement === 'fd' ? HostFolder.held(hostPath, exact) : HostFolder.checked(hostPath, exact);
}

class HostFolder implements ClosableBackend {
  readonly root: Dir;
  readonly hostRoot: string;
  readonly #held: boolean;
  readonly #exact: ExactFileTimes | null;
  /** The root's host path as its bytes in latin1, as readlink of its fd reads while it has not moved. */
  readonly #rootAt: string;

  private constructor(root: Dir, hostRoot: string, held: boolean, exact: ExactFileTimes | null) {
    this.root = root;
    this.hostRoot = hostRoot;
    this.#held = held;
    this.#exact = exact;
    this.#rootAt = latin1(hostRoot);
    // Checked paths are never kept: without the method, the mount keeps no handles.
    // A root whose own name ends as the kernel marks a removed folder could be that removed folder: none kept.
    if (held && !this.#rootAt.endsWith(DELETED)) this.stillAt = (dir, path) => this.#stillAt(dir, path);
  }

  static held(hostPath: string, exact: ExactFileTimes | null): HostFolder {
    const real = fs(() => realpathSync(hostPath));
    const fd = fs(() => openSync(real, O_PATH | O_DIRECTORY));
    return new HostFolder({ fd, path: fdPath(fd) }, real, true, exact);
  }

  static checked(hostPath: string, exact: ExactFileTimes | null): HostFolder {
    const real = fs(() => realpathSync(hostPath));
    if (!fs(() => statSync(real)).isDirectory()) throw 'not-directory';
    return new HostFolder({ fd: -1, path: real }, real, false, exact);
  }

  #closed = false;

  close(): void {
    // Once only: a second close could close an fd number someone else holds by then.
    if (this.#closed) return;
    this.#closed = true;
    if (this.#held) closeSync(this.root.fd);
  }

  #at(dir: Dir, name: string): string {
    return this.#held ? `${dir.path}/${name}` : join(dir.path, name);
  }

  /**
   * Refuse to touch `dir` when it is on a kernel filesystem: under a mount
   * of `/`, mkdir in cgroupfs makes a cgroup, times on sysfs files change,
   * and the links of /proc/self (cwd, exe, fd/N) name what the host process
   * has open.
   */
  #ordinary(dir: Dir): void {
    const info = fs(() => (this.#held ? fstatSync(dir.fd, { bigint: true }) : lstatSync(dir.path, { bigint: true })));
    if (kernelFilesystemDevices().has(info.dev)) throw 'not-permitted';
  }

  stat(dir: Dir, name: string | null): EntryStat {
    if (name !== null) return toStat(fs(() => lstatSync(this.#at(dir, name), { bigint: true })));
    return toStat(fs(() => (this.#held ? fstatSync(dir.fd, { bigint: true }) : lstatSync(dir.path, { bigint: true }))));
  }

  openDirectory(dir: Dir, name: string): Dir {
    const path = this.#at(dir, name);
    if (!this.#held) {
      // Checked, not held: a host process could still swap it before the next use.
      if (!fs(() => lstatSync(path)).isDirectory()) throw 'not-directory';
      return { fd: -1, path };
    }
    // O_NOFOLLOW with O_PATH opens a symlink itself, which O_DIRECTORY then refuses.
    const fd = fs(() => openSync(path, O_PATH | O_DIRECTORY | O_NOFOLLOW));
    return { fd, path: fdPath(fd) };
  }

  releaseDirectory(dir: Dir): void {
    if (this.#held) closeSync(dir.fd);
  }

  /**
   * Whether the held directory `dir` is still the one at `path` below the
   * root, asked of the kernel: /proc/<pid>/fd/N reads as where the very
   * directory an fd holds is now (its path from the root of this process,
   * whatever renames happened; " (deleted)" appended once removed). So `dir`
   * is still there when it reads as the root's host path and `path` under
   * it, byte for byte, and the root still reads as its own host path (a
   * root moved away, and a folder made in its place, is not the mount).
   * Two readlinks, cheaper than a walk from the root two folders deep or
   * more. Only with held directories (the constructor sets `stillAt`).
   */
  readonly stillAt?: (dir: Dir, path: readonly string[]) => boolean;

  #stillAt(dir: Dir, path: readonly string[]): boolean {
    if (path.length === 0) return false;
    // '<mount>/x (deleted)' is also how the kernel reads a folder removed
    // while at '<mount>/x' (the tool can rename and remove its own folders):
    // a name with that ending is walked to every time.
    if (path[path.length - 1]!.endsWith(DELETED)) return false;
    const key = path.join('/');
    if (dir.atKey !== key) {
      dir.at = latin1(this.hostRoot === '/' ? `/${key}` : `${this.hostRoot}/${key}`);
      dir.atKey = key;
    }
    try {
      return readlinkSync(this.root.path, 'latin1') === this.#rootAt && readlinkSync(dir.path, 'latin1') === dir.at;
    } catch {
      return false;
    }
  }

  readDirectory(dir: Dir): DirectoryListing[] {
    return fs(() => readdirSync(dir.path, { withFileTypes: true })).map((e) => ({ name: e.name, type: entryType(e) }));
  }

  readlink(dir: Dir, name: string): string {
    this.#ordinary(dir);
    return fs(() => readlinkSync(this.#at(dir, name)));
  }

  createDirectory(dir: Dir, name: string): void {
    this.#ordinary(dir);
    fs(() => mkdirSync(this.#at(dir, name)));
  }

  removeDirectory(dir: Dir, name: string): void {
    this.#ordinary(dir);
    fs(() => rmdirSync(this.#at(dir, name)));
  }

  unlink(dir: Dir, name: string): void {
    this.#ordinary(dir);
    fs(() => unlinkSync(this.#at(dir, name)));
  }

  rename(fromDir: Dir, fromName: string, toDir: Dir, toName: string): void {
    this.#ordinary(fromDir);
    this.#ordinary(toDir);
    fs(() => renameSync(this.#at(fromDir, fromName), this.#at(toDir, toName)));
  }

  symlink(dir: Dir, name: string, target: string): void {
    this.#ordinary(dir);
    fs(() => symlinkSync(target, this.#at(dir, name)));
  }

  link(fromDir: Dir, fromName: string, toDir: Dir, toName: string): void {
    // link(2) does not follow a symlink it is given, on Linux.
    this.#ordinary(fromDir);
    this.#ordinary(toDir);
    fs(() => linkSync(this.#at(fromDir, fromName), this.#at(toDir, toName)));
  }

  setTimes(dir: Dir, name: string | null, atime: NewTime, mtime: NewTime): void {
    // lutimes never follows the last name; a held directory itself is reached through its fd.
    const path = name === null ? dir.path : this.#at(dir, name);
    const follow = name === null && this.#held;
    // Not lstat of /proc/<pid>/fd/N: that is the fd's magic link, whose times are not the folder's.
    this.#ordinary(dir);
    const current = fs(() => (follow ? fstatSync(dir.fd, { bigint: true }) : lstatSync(path, { bigint: true })));
    // The name may be where a kernel filesystem is mounted (`proc` in `/`).
    if (kernelFilesystemDevices().has(current.dev)) throw 'not-permitted';
    const exact = this.#exact;
    if (exact) return exactCall(() => exact.utimensat(path, ...timespec(atime), ...timespec(mtime), follow));
    const [a, m] = times(current, atime, mtime);
    fs(() => (follow ? utimesSync(path, a, m) : lutimesSync(path, a, m)));
  }

  openFile(dir: Dir, name: string, mode: OpenMode): File {
    const path = this.#at(dir, name);
    const access = mode.write ? (mode.read ? O_RDWR : O_WRONLY) : O_RDONLY;
    if (mode.create) {
      // A new file is made only on ordinary storage (efivarfs, mqueue, … make things by create).
      this.#ordinary(dir);
      try {
        // O_EXCL: the file is ours, new and regular; nothing else is opened this way.
        return { fd: fs(() => openSync(path, access | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666)) };
      } catch (err) {
        if (err !== 'exist' || mode.exclusive) throw err;
      }
    }
    return this.#held ? this.#reopen(path, access, mode) : this.#openChecked(path, access, mode);
  }

  /** Open a name O_PATH (never blocks), check it is a regular file, then reopen that very file for I/O. */
  #reopen(path: string, access: number, mode: OpenMode): File {
    const handle = fs(() => openSync(path, O_PATH | O_NOFOLLOW));
    try {
      const info = fs(() => fstatSync(handle, { bigint: true }));
      checkRegular(info.mode);
      if (kernelFilesystemDevices().has(info.dev)) throw 'not-permitted';
      // The very inode fstat saw: reopened through the O_PATH descriptor, not by name.
      return { fd: fs(() => openSync(fdPath(handle), access | (mode.truncate ? O_TRUNC : 0))), opened: info };
    } finally {
      closeSync(handle);
    }
  }

  /** Without /proc: lstat, then open non-blocking (a FIFO must not hang the call) and check again. */
  #openChecked(path: string, access: number, mode: OpenMode): File {
    const before = fs(() => lstatSync(path, { bigint: true }));
    checkRegular(before.mode);
    if (kernelFilesystemDevices().has(before.dev)) throw 'not-permitted';
    const fd = fs(() => openSync(path, access | O_NOFOLLOW | O_NONBLOCK));
    try {
      const after = fs(() => fstatSync(fd, { bigint: true }));
      checkRegular(after.mode);
      if (after.ino !== before.ino || after.dev !== before.dev) throw 'busy';
      if (mode.truncate) fs(() => ftruncateSync(fd, 0));
      return { fd, opened: after };
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  openedStat(file: File): EntryStat | undefined {
    return file.opened && toStat(file.opened);
  }

  fileStat(file: File): EntryStat {
    return toStat(fs(() => fstatSync(file.fd, { bigint: true })));
  }

  read(file: File, into: Uint8Array, position: number): number {
    return fs(() => readSync(file.fd, into, 0, into.length, position));
  }

  write(file: File, data: Uint8Array, position: number): number {
    let done = 0;
    while (done < data.length) done += fs(() => writeSync(file.fd, data, done, data.length - done, position + done));
    return done;
  }

  setSize(file: File, size: number): void {
    fs(() => ftruncateSync(file.fd, size));
  }

  setFileTimes(file: File, atime: NewTime, mtime: NewTime): void {
    const exact = this.#exact;
    if (exact) return exactCall(() => exact.futimens(file.fd, ...timespec(atime), ...timespec(mtime)));
    const [a, m] = times(
      fs(() => fstatSync(file.fd, { bigint: true })),
      atime,
      mtime,
    );
    fs(() => futimesSync(file.fd, a, m));
  }

  sync(file: File): void {
    fs(() => fsyncSync(file.fd));
  }

  closeFile(file: File): void {
    closeSync(file.fd);
  }
}

/** What readlink of /proc/<pid>/fd/N appends to the path of a removed file or folder. */
const DELETED = ' (deleted)';

/** A string's UTF-8 bytes, one latin1 character each: how readlink(…, 'latin1') gives a path's exact bytes. */
function latin1(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1');
}

/**
 * The path that reaches what fd `fd` holds. /proc/<pid>/ rather than
 * /proc/self/: the kernel then has one symlink fewer to follow per lookup.
 */
function fdPath(fd: number): string {
  return `/proc/${process.pid}/fd/${fd}`;
}

/**
 * Filesystems that are interfaces to the kernel and to processes, not
 * storage: under a mount of `/`, /proc/self/mem would read the host
 * process's memory and /proc/self/environ its environment, /sys files
 * configure the machine, and autofs mounts block on first access.
 */
const KERNEL_FILESYSTEMS = new Set([
  'proc',
  'sysfs',
  'debugfs',
  'tracefs',
  'securityfs',
  'configfs',
  'bpf',
  'cgroup',
  'cgroup2',
  'pstore',
  'efivarfs',
  'fusectl',
  'binfmt_misc',
  'devpts',
  'mqueue',
  'nsfs',
  'selinuxfs',
  'rpc_pipefs',
  'autofs',
]);

let kernelDevices: Set<bigint> | undefined;

/**
 * The st_dev of every kernel filesystem mounted when first asked, from
 * /proc/self/mountinfo (empty where there is none). Files on them are
 * never opened.
 */
function kernelFilesystemDevices(): Set<bigint> {
  if (kernelDevices) return kernelDevices;
  kernelDevices = new Set();
  let info = '';
  try {
    info = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return kernelDevices;
  }
  for (const line of info.split('\n')) {
    // "36 25 0:32 / /sys/fs/cgroup rw,... - cgroup2 cgroup2 rw": field 3 is major:minor, the type follows " - ".
    const fields = line.split(' ');
    const type = fields[fields.indexOf('-') + 1];
    const [major, minor] = (fields[2] ?? '').split(':').map((n) => BigInt(Number.parseInt(n, 10) || 0));
    if (type && KERNEL_FILESYSTEMS.has(type) && major !== undefined && minor !== undefined) kernelDevices.add(makedev(major, minor));
  }
  return kernelDevices;
}

/** glibc's makedev, as Node's stat reports st_dev. */
function makedev(major: bigint, minor: bigint): bigint {
  return ((major & 0xfffff000n) << 32n) | ((major & 0xfffn) << 8n) | ((minor & 0xffffff00n) << 12n) | (minor & 0xffn);
}

/** Only regular files are opened; a directory, symlink, FIFO, socket or device is refused. */
function checkRegular(mode: number | bigint): void {
  const type = Number(mode) & constants.S_IFMT;
  if (type === constants.S_IFREG) return;
  if (type === constants.S_IFDIR) throw 'is-directory';
  if (type === constants.S_IFLNK) throw 'loop';
  throw 'not-permitted';
}

/**
 * utimensat(2) and futimens(2) from native/file-times.c, built at install
 * (packages/node/build/). Node's own utimes take seconds as a double (about
 * 240 ns at today's epoch) and cannot leave one time unchanged; these take
 * nanoseconds, "now" and "leave it" exactly. Each returns 0 or an errno.
 */
interface ExactFileTimes {
  futimens(fd: number, aSec: number, aNsec: number, mSec: number, mNsec: number): number;
  utimensat(path: string, aSec: number, aNsec: number, mSec: number, mNsec: number, followLast: boolean): number;
}

let exactTimes: ExactFileTimes | null | undefined;

/** The native file-time calls, or null when the addon was not built (no compiler at install, Windows, Deno without --allow-ffi). */
function exactFileTimes(): ExactFileTimes | null {
  if (exactTimes !== undefined) return exactTimes;
  exactTimes = null;
  try {
    const addon = packageRequire('./build/Release/corral_file_times.node') as Partial<ExactFileTimes>;
    if (typeof addon.futimens === 'function' && typeof addon.utimensat === 'function') exactTimes = addon as ExactFileTimes;
  } catch {
    // Not built: Node's utimes it is.
  }
  return exactTimes;
}

/** Whether host folders set file times to the nanosecond (the native addon loaded) or through Node's utimes. */
export function exactHostFileTimes(): boolean {
  return exactFileTimes() !== null;
}

/** The nanosecond field values native/file-times.c reads as UTIME_NOW and UTIME_OMIT. */
const NSEC_NOW = -1;
const NSEC_OMIT = -2;
/** The largest seconds native/file-times.c accepts (2^35 - 1; a u64 of nanoseconds is below it). */
const MAX_SECONDS = 2n ** 35n - 1n;

/** A NewTime as utimensat's (seconds, nanoseconds). */
function timespec(t: NewTime): [number, number] {
  if (t === null) return [0, NSEC_OMIT];
  if (t === 'now') return [0, NSEC_NOW];
  if (typeof t !== 'bigint' || t < 0n) throw 'invalid';
  const seconds = t / 1_000_000_000n;
  if (seconds > MAX_SECONDS) throw 'overflow';
  return [Number(seconds), Number(t % 1_000_000_000n)];
}

/** Run a native call that answers an errno, as a wasi:filesystem error code. */
function exactCall(call: () => number): void {
  const errno = call();
  if (errno === 0) return;
  const name = Object.entries(osConstants.errno).find(([, n]) => n === errno)?.[0];
  throw name ? fsErrorOfErrno(name) : 'io';
}

/** New access and modification times for utimes, in seconds (Node takes no "leave it" or "now" marker). */
function times(current: BigIntStats, atime: NewTime, mtime: NewTime): [number, number] {
  const now = Date.now() / 1000;
  const pick = (t: NewTime, old: bigint) => (t === null ? Number(old) / 1e9 : t === 'now' ? now : Number(t) / 1e9);
  return [pick(atime, current.atimeNs), pick(mtime, current.mtimeNs)];
}

/** The type of a stat result or a directory entry (both answer the same questions). */
function entryType(
  info: Pick<Dirent, 'isFile' | 'isDirectory' | 'isSymbolicLink' | 'isFIFO' | 'isSocket' | 'isCharacterDevice' | 'isBlockDevice'>,
): EntryType {
  if (info.isFile()) return 'regular-file';
  if (info.isDirectory()) return 'directory';
  if (info.isSymbolicLink()) return 'symbolic-link';
  if (info.isFIFO()) return 'fifo';
  if (info.isSocket()) return 'socket';
  if (info.isCharacterDevice()) return 'character-device';
  if (info.isBlockDevice()) return 'block-device';
  return 'unknown';
}

function toStat(info: BigIntStats): EntryStat {
  return {
    type: entryType(info),
    dev: info.dev,
    ino: info.ino,
    nlink: info.nlink,
    size: info.size,
    atimeNs: info.atimeNs,
    mtimeNs: info.mtimeNs,
    ctimeNs: info.ctimeNs,
  };
}
