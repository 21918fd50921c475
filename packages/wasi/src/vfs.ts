/**
 * The filesystem of one call: each mount the caller bound, on its backend
 * and guarded by its access (fs/filesystem.ts), plus a fresh read-write
 * /tmp in memory that is discarded with the call. All mounts share one disk
 * quota. Both WASI flavours take their preopens from here.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { MountBinding } from '@corral/core';
import type { FsBackend } from './fs/backend.js';
import { rootDescriptor, type Descriptor, type Mount } from './fs/filesystem.js';
import { DiskQuota } from './fs/quota.js';
import { MemoryBackend } from './fs/memory.js';

/** Opens a host folder as a mount's storage; only hosts with a filesystem (Node) supply one. */
export type HostDirectoryOpener = (hostPath: string) => ClosableBackend;

/**
 * Opens an OPFS folder as a mount's storage; only browser hosts supply one.
 * The descriptor API is synchronous and OPFS is not, so the host loads the
 * folder before the call and this only hands out what it loaded.
 */
export type OpfsDirectoryOpener = (opfsPath: string) => FsBackend;

/** A backend that holds something (a directory fd) until the call ends. */
export interface ClosableBackend extends FsBackend {
  close?(): void;
}

export interface CallFilesystem {
  /** Preopened directories, as both WASI flavours want them: [descriptor, guest path]. */
  preopens: Array<[Descriptor, string]>;
  quota: DiskQuota;
  /** Close every file the call left open and release the mounts' storage. */
  close(): void;
}

/** One mount on `backend`, as a root descriptor (callFilesystem makes these; tests and embedders may too). */
export function mountRoot(backend: FsBackend, options: { readOnly: boolean; quota: DiskQuota; open?: Set<Descriptor> }): Descriptor {
  return rootDescriptor({ backend, readOnly: options.readOnly, quota: options.quota, open: options.open ?? new Set() });
}

export function callFilesystem(
  mounts: readonly MountBinding[],
  diskLimitBytes: number,
  openHostDirectory?: HostDirectoryOpener,
  openOpfsDirectory?: OpfsDirectoryOpener,
  scratchTmp = true,
): CallFilesystem {
  const quota = new DiskQuota(diskLimitBytes);
  const open = new Set<Descriptor>();
  const opened: Mount[] = [];
  const close = () => {
    for (const file of [...open]) file.close();
    for (const mount of opened) (mount.backend as ClosableBackend).close?.();
  };
  const mountOn = (backend: FsBackend, readOnly: boolean): Descriptor => {
    const mount: Mount = { backend, readOnly, quota, open };
    opened.push(mount);
    return rootDescriptor(mount);
  };
  try {
    const preopens: Array<[Descriptor, string]> = mounts.map((mount, i) => {
      let backend: FsBackend;
      if (mount.hostPath !== undefined) {
        if (!openHostDirectory) throw unsupported('host folders', mount.guest);
        backend = openHostDirectory(mount.hostPath);
      } else if (mount.opfsPath !== undefined) {
        if (!openOpfsDirectory) throw unsupported('OPFS folders', mount.guest);
        backend = openOpfsDirectory(mount.opfsPath);
      } else {
        backend = MemoryBackend.fromTree(mount.tree ?? {}, BigInt(i + 1));
      }
      return [mountOn(backend, mount.access !== 'read-write'), mount.guest];
    });
    if (scratchTmp && !mounts.some((m) => m.guest === '/tmp')) {
      preopens.push([mountOn(new MemoryBackend(BigInt(mounts.length + 1)), false), '/tmp']);
    }
    return { preopens, quota, close };
  } catch (err) {
    close();
    throw err;
  }
}

function unsupported(what: string, guest: string): CorralError {
  return new CorralError(ErrorCodes.INPUT_VALIDATION, `Mount ${guest}: ${what} cannot be mounted on this host.`, { guest });
}
