/**
 * A host folder as a wasi:filesystem descriptor tree (Node only; runs in the
 * sandbox worker). Reads and writes go to the real folder and never outside
 * it: every path is resolved segment by segment, `..` may not climb above the
 * mount, absolute paths are refused, and each existing path is checked again
 * after resolving its real path, so a symlink that leads out of the folder
 * reads as `not-permitted`. The guest may not create links (a link it made
 * could mislead the host's own tools later).
 *
 * Files are opened per operation rather than kept open: the shim gives no
 * reliable signal when a guest drops a descriptor, and a leaked fd would
 * outlive the call.
 */
import {
  closeSync, lstatSync, mkdirSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, renameSync,
  rmdirSync, statSync, truncateSync, unlinkSync, utimesSync, writeSync, type Stats,
} from 'node:fs';
import { join, sep } from 'node:path';
import { streamWrites, type Descriptor, type WasiShim } from '@corral/wasi';

type Io = Pick<WasiShim['io'], 'inputStreamCreate' | 'outputStreamCreate' | 'ioErrorCreate'>;
type FsErrorCode = string;

const NODE_TO_WASI: Record<string, FsErrorCode> = {
  ENOENT: 'no-entry', EEXIST: 'exist', ENOTDIR: 'not-directory', EISDIR: 'is-directory', ENOTEMPTY: 'not-empty',
  EACCES: 'access', EPERM: 'not-permitted', ENOSPC: 'insufficient-space', EDQUOT: 'quota', EROFS: 'read-only',
  EINVAL: 'invalid', ELOOP: 'loop', ENAMETOOLONG: 'name-too-long', EBADF: 'bad-descriptor', EBUSY: 'busy',
  EXDEV: 'cross-device', EFBIG: 'file-too-large', EMLINK: 'too-many-links', EIO: 'io',
};

/** Run a node:fs call, turning its error into a wasi:filesystem error code. */
function fs<T>(call: () => T): T {
  try {
    return call();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof err === 'string') throw err;
    throw (code && NODE_TO_WASI[code]) || 'io';
  }
}

/** Open `hostPath` (a directory) as the root descriptor of a mount. */
export function openHostDirectory(hostPath: string, io: Io): Descriptor {
  const root = fs(() => realpathSync(hostPath));
  if (!fs(() => statSync(root)).isDirectory()) throw new TypeError(`${hostPath} is not a directory`);
  return new HostDescriptor({ root, io }, root) as unknown as Descriptor;
}

interface Mount {
  root: string;
  io: Io;
}

class HostDescriptor {
  readonly #mount: Mount;
  /** Real path of the object this descriptor names. */
  readonly #path: string;

  constructor(mount: Mount, path: string) {
    this.#mount = mount;
    this.#path = path;
  }

  #inside(real: string): boolean {
    const { root } = this.#mount;
    return real === root || real.startsWith(root + sep);
  }

  /**
   * Resolve `path` relative to this descriptor to a real path inside the
   * mount. With `mayBeMissing`, the last segment need not exist (create).
   */
  #resolve(path: string, followFinal: boolean, mayBeMissing = false): string {
    if (path.startsWith('/') || path.includes('\0')) throw 'not-permitted';
    const segments = path.split('/').filter((s) => s !== '' && s !== '.');
    let current = this.#path;
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]!;
      const final = i === segments.length - 1;
      if (segment === '..') {
        if (current === this.#mount.root) throw 'not-permitted';
        current = current.slice(0, current.lastIndexOf(sep)) || sep;
        continue;
      }
      const candidate = join(current, segment);
      let info: Stats;
      try {
        info = lstatSync(candidate);
      } catch (err) {
        if (final && mayBeMissing && (err as NodeJS.ErrnoException).code === 'ENOENT') return candidate;
        return fs(() => {
          throw err;
        });
      }
      if (info.isSymbolicLink() && (!final || followFinal)) {
        const real = fs(() => realpathSync(candidate));
        if (!this.#inside(real)) throw 'not-permitted';
        current = real;
      } else {
        current = candidate;
      }
    }
    if (!this.#inside(current)) throw 'not-permitted';
    return current;
  }

  #child(path: string): HostDescriptor {
    return new HostDescriptor(this.#mount, path);
  }

  getType() {
    return typeOf(fs(() => lstatSync(this.#path)));
  }

  getFlags() {
    return { read: true, write: true, mutateDirectory: true };
  }

  stat() {
    return toStat(fs(() => statSync(this.#path)));
  }

  statAt(pathFlags: { symlinkFollow?: boolean }, path: string) {
    const target = this.#resolve(path, !!pathFlags.symlinkFollow);
    return toStat(fs(() => (pathFlags.symlinkFollow ? statSync(target) : lstatSync(target))));
  }

  openAt(
    pathFlags: { symlinkFollow?: boolean },
    path: string,
    openFlags: { create?: boolean; directory?: boolean; exclusive?: boolean; truncate?: boolean },
    _flags: unknown,
  ): HostDescriptor {
    const target = this.#resolve(path, !!pathFlags.symlinkFollow, !!openFlags.create);
    let info: Stats | undefined;
    try {
      info = lstatSync(target);
    } catch {
      info = undefined;
    }
    if (info && openFlags.create && openFlags.exclusive) throw 'exist';
    if (!info) {
      if (openFlags.directory) throw 'no-entry';
      fs(() => closeSync(openSync(target, 'wx')));
    } else if (info.isSymbolicLink()) {
      throw 'loop'; // O_NOFOLLOW on a link
    } else if (openFlags.directory && !info.isDirectory()) {
      throw 'not-directory';
    } else if (openFlags.truncate) {
      if (info.isDirectory()) throw 'is-directory';
      fs(() => truncateSync(target, 0));
    }
    return this.#child(target);
  }

  read(length: bigint, offset: bigint): [Uint8Array, boolean] {
    const buffer = new Uint8Array(Number(length));
    const fd = fs(() => openSync(this.#path, 'r'));
    try {
      const n = fs(() => readSync(fd, buffer, 0, buffer.length, Number(offset)));
      const size = fs(() => statSync(this.#path)).size;
      return [buffer.subarray(0, n), Number(offset) + n >= size];
    } finally {
      closeSync(fd);
    }
  }

  write(buffer: Uint8Array, offset: bigint): bigint {
    const fd = fs(() => openSync(this.#path, 'r+'));
    try {
      return BigInt(fs(() => writeSync(fd, buffer, 0, buffer.length, Number(offset))));
    } finally {
      closeSync(fd);
    }
  }

  readViaStream(offset: bigint) {
    let position = offset;
    return this.#mount.io.inputStreamCreate({
      blockingRead: (len: bigint) => {
        const [bytes] = this.read(len, position);
        if (bytes.length === 0) throw { tag: 'closed' };
        position += BigInt(bytes.length);
        return bytes;
      },
    });
  }

  writeViaStream(offset: bigint) {
    let position = offset;
    return streamWrites(this.#mount.io, (bytes) => {
      position += this.write(bytes, position);
    });
  }

  appendViaStream() {
    return streamWrites(this.#mount.io, (bytes) => void this.write(bytes, BigInt(fs(() => statSync(this.#path)).size)));
  }

  setSize(size: bigint) {
    fs(() => truncateSync(this.#path, Number(size)));
  }

  setTimes(atime: NewTimestamp, mtime: NewTimestamp) {
    setTimesOf(this.#path, atime, mtime);
  }

  setTimesAt(pathFlags: { symlinkFollow?: boolean }, path: string, atime: NewTimestamp, mtime: NewTimestamp) {
    setTimesOf(this.#resolve(path, !!pathFlags.symlinkFollow), atime, mtime);
  }

  readDirectory() {
    const entries = fs(() => readdirSync(this.#path, { withFileTypes: true }))
      .map((e) => ({ name: e.name, type: e.isDirectory() ? 'directory' : e.isFile() ? 'regular-file' : e.isSymbolicLink() ? 'symbolic-link' : 'unknown' }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    let next = 0;
    return { readDirectoryEntry: () => entries[next++] };
  }

  createDirectoryAt(path: string) {
    const target = this.#resolve(path, false, true);
    fs(() => mkdirSync(target));
  }

  removeDirectoryAt(path: string) {
    const target = this.#resolve(path, false);
    fs(() => rmdirSync(target));
  }

  unlinkFileAt(path: string) {
    const target = this.#resolve(path, false);
    if (fs(() => lstatSync(target)).isDirectory()) throw 'is-directory';
    fs(() => unlinkSync(target));
  }

  renameAt(oldPath: string, newDescriptor: unknown, newPath: string) {
    if (!(newDescriptor instanceof HostDescriptor) || newDescriptor.#mount.root !== this.#mount.root) throw 'cross-device';
    const from = this.#resolve(oldPath, false);
    const to = newDescriptor.#resolve(newPath, false, true);
    fs(() => renameSync(from, to));
  }

  readlinkAt(path: string) {
    return fs(() => readlinkSync(this.#resolve(path, false)));
  }

  symlinkAt(_oldPath: string, _newPath: string): never {
    throw 'not-permitted';
  }

  linkAt(): never {
    throw 'not-permitted';
  }

  isSameObject(other: unknown) {
    if (!(other instanceof HostDescriptor)) return false;
    const a = fs(() => statSync(this.#path));
    const b = fs(() => statSync(other.#path));
    return a.dev === b.dev && a.ino === b.ino;
  }

  metadataHash() {
    const s = fs(() => statSync(this.#path, { bigint: true }));
    return { lower: s.ino, upper: s.dev };
  }

  metadataHashAt(pathFlags: { symlinkFollow?: boolean }, path: string) {
    const target = this.#resolve(path, !!pathFlags.symlinkFollow);
    const s = fs(() => (pathFlags.symlinkFollow ? statSync(target, { bigint: true }) : lstatSync(target, { bigint: true })));
    return { lower: s.ino, upper: s.dev };
  }

  advise() {}
  sync() {}
  syncData() {}
}

type NewTimestamp = { tag: 'no-change' } | { tag: 'now' } | { tag: 'timestamp'; val: { seconds: bigint; nanoseconds: number } };

function setTimesOf(path: string, atime: NewTimestamp, mtime: NewTimestamp): void {
  const current = fs(() => statSync(path));
  const pick = (t: NewTimestamp, old: Date) =>
    t.tag === 'now' ? new Date() : t.tag === 'timestamp' ? new Date(Number(t.val.seconds) * 1000 + t.val.nanoseconds / 1e6) : old;
  fs(() => utimesSync(path, pick(atime, current.atime), pick(mtime, current.mtime)));
}

function typeOf(info: Stats): string {
  if (info.isDirectory()) return 'directory';
  if (info.isFile()) return 'regular-file';
  if (info.isSymbolicLink()) return 'symbolic-link';
  return 'unknown';
}

function toStat(info: Stats) {
  const time = (ms: number) => ({ seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: Math.floor((ms % 1000) * 1e6) });
  return {
    type: typeOf(info),
    linkCount: BigInt(info.nlink),
    size: BigInt(info.size),
    dataAccessTimestamp: time(info.atimeMs),
    dataModificationTimestamp: time(info.mtimeMs),
    statusChangeTimestamp: time(info.ctimeMs),
  };
}
