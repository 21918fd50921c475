/**
 * Corral's one filesystem layer. Every mount a tool sees, whatever backs it
 * (memory, OPFS, a host folder) and whichever WASI flavour reads it
 * (component or preview1), goes through a GuardedDescriptor, so the rules
 * live in one place:
 *   - a `read` mount refuses every write, create, rename, link and delete;
 *   - bytes a call adds to files count against one disk quota (disk_mb);
 *   - descriptors opened under a mount stay guarded by that mount's rules.
 * Containment (`..`, absolute paths, symlinks out of a mount) is the
 * backend's job: preview2-shim's in-memory tree refuses them, and the Node
 * host-folder backend checks real paths.
 *
 * Errors are thrown as wasi:filesystem `error-code` strings, as the shim's
 * descriptors do ('read-only', 'insufficient-space', …).
 */
import type { BrowserFilesystemDescriptor } from '@bytecodealliance/preview2-shim/filesystem';
import type { WasiShim } from './shim.js';
import { toFileData } from './fs.js';

export type Descriptor = BrowserFilesystemDescriptor;
type Args<K extends keyof Descriptor> = Descriptor[K] extends (...a: infer A) => unknown ? A : never;

/** Bytes a call may add to files, across all its writable mounts and /tmp. */
export class DiskQuota {
  readonly limitBytes: number;
  usedBytes = 0;
  /** Set once a write was refused, so the run can report E_RESOURCE_EXHAUSTED (disk). */
  exceeded = false;

  constructor(limitBytes: number) {
    this.limitBytes = limitBytes;
  }

  /** Account for `bytes` of growth, or refuse the write that would cause it. */
  charge(bytes: number): void {
    if (bytes <= 0) return;
    if (this.usedBytes + bytes > this.limitBytes) {
      this.exceeded = true;
      throw 'insufficient-space';
    }
    this.usedBytes += bytes;
  }
}

const ERRNO_NAMES: Record<string, string> = {
  'insufficient-space': 'ENOSPC', 'read-only': 'EROFS', 'not-permitted': 'EPERM', 'access': 'EACCES',
  'no-entry': 'ENOENT', 'is-directory': 'EISDIR', 'quota': 'EDQUOT', 'file-too-large': 'EFBIG',
};

/**
 * Wrap a stream handler so a failing write surfaces as a wasi:io stream
 * error the guest can read (an errno), not as a trap.
 */
export function streamWrites(io: Pick<WasiShim['io'], 'outputStreamCreate' | 'ioErrorCreate'>, write: (bytes: Uint8Array) => void) {
  return io.outputStreamCreate({
    write(bytes: Uint8Array) {
      try {
        write(bytes);
      } catch (err) {
        if (typeof err !== 'string') throw err;
        const code = ERRNO_NAMES[err] ?? 'EIO';
        // filesystem-error-code reads `payload.code` off the io error (see the shim's filesystem.js).
        const error = Object.assign(io.ioErrorCreate(`${err} (${code})`), { payload: { code } });
        throw { tag: 'last-operation-failed', val: error };
      }
    },
    blockingFlush() {},
  });
}

export interface MountRules {
  readOnly: boolean;
  quota: DiskQuota;
  /** The shim's stream factories, for the streams a guarded file hands out. */
  io: Pick<WasiShim['io'], 'outputStreamCreate' | 'ioErrorCreate'>;
}

const guarded = new WeakMap<object, Descriptor>();

/** The descriptor a guard wraps (backends compare their own objects in rename/link). */
function inner(descriptor: Descriptor): Descriptor {
  return guarded.get(descriptor) ?? descriptor;
}

/**
 * Guard a descriptor. `openedForWrite` is false for a file the guest opened
 * without write access: the backends ignore open flags, so the guard makes
 * writes through such a descriptor fail as POSIX does (EBADF).
 */
export function guard(descriptor: Descriptor, rules: MountRules, openedForWrite = true): Descriptor {
  const wrapped = new GuardedDescriptor(descriptor, rules, openedForWrite) as unknown as Descriptor;
  guarded.set(wrapped, descriptor);
  return wrapped;
}

class GuardedDescriptor {
  readonly #inner: Descriptor;
  readonly #rules: MountRules;
  readonly #openedForWrite: boolean;

  constructor(descriptor: Descriptor, rules: MountRules, openedForWrite: boolean) {
    this.#inner = descriptor;
    this.#rules = rules;
    this.#openedForWrite = openedForWrite;
  }

  /** Changes to the tree below this descriptor (create, rename, delete, …). */
  #writable(): void {
    if (this.#rules.readOnly) throw 'read-only';
  }

  /** Changes to this file's contents, size or times. */
  #contentWritable(): void {
    this.#writable();
    if (!this.#openedForWrite) throw 'bad-descriptor';
  }

  #size(): number {
    return Number(this.#inner.stat().size);
  }

  // --- reads pass straight through -------------------------------------------
  readViaStream(...a: Args<'readViaStream'>) { return this.#inner.readViaStream(...a); }
  advise(...a: Args<'advise'>) { return this.#inner.advise(...a); }
  getType() { return this.#inner.getType(); }
  read(...a: Args<'read'>) { return this.#inner.read(...a); }
  readDirectory() { return this.#inner.readDirectory(); }
  stat() { return this.#inner.stat(); }
  statAt(...a: Args<'statAt'>) { return this.#inner.statAt(...a); }
  readlinkAt(...a: Args<'readlinkAt'>) { return this.#inner.readlinkAt(...a); }
  metadataHash() { return this.#inner.metadataHash(); }
  metadataHashAt(...a: Args<'metadataHashAt'>) { return this.#inner.metadataHashAt(...a); }
  isSameObject(other: Descriptor) { return this.#inner.isSameObject(inner(other)); }
  sync() { return this.#inner.sync(); }
  syncData() { return this.#inner.syncData(); }

  getFlags() {
    const flags = this.#inner.getFlags();
    if (this.#rules.readOnly) return { ...flags, write: false, mutateDirectory: false };
    return this.#openedForWrite ? flags : { ...flags, write: false };
  }

  // --- writes: refused on read mounts, growth charged to the quota ------------
  openAt(...[pathFlags, path, openFlags, flags]: Args<'openAt'>): Descriptor {
    if (this.#rules.readOnly && (openFlags.create || openFlags.truncate || flags.write || flags.mutateDirectory)) {
      throw 'read-only';
    }
    return guard(this.#inner.openAt(pathFlags, path, openFlags, flags), this.#rules, !!flags.write);
  }

  write(buffer: Uint8Array, offset: bigint): bigint {
    this.#contentWritable();
    this.#rules.quota.charge(Number(offset) + buffer.byteLength - this.#size());
    return this.#inner.write(buffer, offset);
  }

  // Streams: our own stream in front of the backend's, so every byte passes
  // the quota first. The bytes then go through the backend's stream, not
  // positional writes: the in-memory backend grows a file's buffer
  // geometrically there, where each positional write copies the whole file
  // (a component writes in 4 KiB pieces, so 4 MiB cost 1,024 copies).
  writeViaStream(offset: bigint) {
    this.#contentWritable();
    let position = Number(offset);
    const inner = this.#inner.writeViaStream(offset);
    return streamWrites(this.#rules.io, (bytes) => {
      this.#rules.quota.charge(position + bytes.byteLength - this.#size());
      forward(inner, bytes);
      position += bytes.byteLength;
    });
  }

  appendViaStream() {
    this.#contentWritable();
    const inner = this.#inner.appendViaStream();
    return streamWrites(this.#rules.io, (bytes) => {
      this.#rules.quota.charge(bytes.byteLength);
      forward(inner, bytes);
    });
  }

  setSize(size: bigint) {
    this.#contentWritable();
    this.#rules.quota.charge(Number(size) - this.#size());
    return this.#inner.setSize(size);
  }

  setTimes(...a: Args<'setTimes'>) { this.#contentWritable(); return this.#inner.setTimes(...a); }
  setTimesAt(...a: Args<'setTimesAt'>) { this.#writable(); return this.#inner.setTimesAt(...a); }
  createDirectoryAt(...a: Args<'createDirectoryAt'>) { this.#writable(); return this.#inner.createDirectoryAt(...a); }
  removeDirectoryAt(...a: Args<'removeDirectoryAt'>) { this.#writable(); return this.#inner.removeDirectoryAt(...a); }
  unlinkFileAt(...a: Args<'unlinkFileAt'>) { this.#writable(); return this.#inner.unlinkFileAt(...a); }
  symlinkAt(...a: Args<'symlinkAt'>) { this.#writable(); return this.#inner.symlinkAt(...a); }

  renameAt(oldPath: string, newDescriptor: Descriptor, newPath: string) {
    this.#writable();
    if (newDescriptor instanceof GuardedDescriptor) newDescriptor.#writable();
    return this.#inner.renameAt(oldPath, inner(newDescriptor), newPath);
  }

  linkAt(oldPathFlags: Args<'linkAt'>[0], oldPath: string, newDescriptor: Descriptor, newPath: string) {
    this.#writable();
    if (newDescriptor instanceof GuardedDescriptor) newDescriptor.#writable();
    return this.#inner.linkAt(oldPathFlags, oldPath, inner(newDescriptor), newPath);
  }
}

type OutputStream = ReturnType<Descriptor['writeViaStream']>;

/** Write all of `bytes` to a wasi:io output stream, within the permits it grants (check-write, then write). */
function forward(stream: OutputStream, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.byteLength; ) {
    const permit = Number(stream.checkWrite());
    if (!(permit > 0)) throw 'would-block';
    const end = Math.min(bytes.byteLength, at + permit);
    stream.write(bytes.subarray(at, end));
    at = end;
  }
}

/** Opens a host folder as a descriptor; only hosts with a filesystem (Node) supply one. */
export type HostDirectoryOpener = (hostPath: string) => Descriptor;

/**
 * Opens an OPFS folder as a descriptor; only browser hosts supply one. The
 * descriptor API is synchronous and OPFS is not, so the host loads the
 * folder before the call and this only hands out what it loaded.
 */
export type OpfsDirectoryOpener = (opfsPath: string) => Descriptor;

export interface MountRequest {
  guest: string;
  access: 'read' | 'read-write';
  tree?: import('@corral/core').MemoryTree;
  hostPath?: string;
  opfsPath?: string;
}

export interface CallFilesystem {
  /** Preopened directories, as both WASI flavours want them: [descriptor, guest path]. */
  preopens: Array<[Descriptor, string]>;
  quota: DiskQuota;
}

/**
 * The filesystem of one call: each bound mount, guarded by its access, plus
 * a fresh read-write /tmp that is discarded with the call. All writes share
 * one quota.
 */
export function callFilesystem(
  mounts: MountRequest[],
  diskLimitBytes: number,
  shim: Pick<WasiShim, 'filesystem' | 'io'>,
  openHostDirectory?: HostDirectoryOpener,
  openOpfsDirectory?: OpfsDirectoryOpener,
): CallFilesystem {
  const quota = new DiskQuota(diskLimitBytes);
  const memory = new shim.filesystem.InMemoryFilesystemAdapter();
  const preopens: Array<[Descriptor, string]> = mounts.map((mount) => {
    let root: Descriptor;
    if (mount.hostPath !== undefined) {
      if (!openHostDirectory) throw new TypeError(`host folders cannot be mounted on this host (${mount.guest})`);
      root = openHostDirectory(mount.hostPath);
    } else if (mount.opfsPath !== undefined) {
      if (!openOpfsDirectory) throw new TypeError(`OPFS folders cannot be mounted on this host (${mount.guest})`);
      root = openOpfsDirectory(mount.opfsPath);
    } else {
      root = memory.getRoot(toFileData(mount.tree ?? {}));
    }
    return [guard(root, { readOnly: mount.access !== 'read-write', quota, io: shim.io }), mount.guest];
  });
  if (!mounts.some((m) => m.guest === '/tmp')) {
    preopens.push([guard(memory.getRoot({ dir: {} }), { readOnly: false, quota, io: shim.io }), '/tmp']);
  }
  return { preopens, quota };
}
