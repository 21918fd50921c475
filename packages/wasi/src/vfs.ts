/**
 * The filesystem of one call: each mount the caller bound, on the storage
 * its source opens (mount-sources.ts) and guarded by its access
 * (fs/filesystem.ts), plus a fresh read-write /tmp in memory that is
 * discarded with the call. All mounts share one disk quota. Both WASI
 * flavours take their preopens from here.
 */
import type { MemoryMountSource, MountBinding } from '@corral/core';
import type { FsBackend } from './fs/backend.js';
import { rootDescriptor, type Descriptor, type Mount } from './fs/filesystem.js';
import { DiskQuota } from './fs/quota.js';
import { DirectoryCache } from './fs/resolve.js';
import { MemoryBackend } from './fs/memory.js';
import { MEMORY_KIND, checkMountSource, type ClosableBackend, type MountOpeners } from './mount-sources.js';

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

/**
 * Open the mounts of one call. A source is opened by the opener `openers`
 * has for its kind (`memory` is built in); a kind with none, or a source
 * of a bad shape, is E_INPUT_VALIDATION.
 */
export function callFilesystem(
  mounts: readonly MountBinding[],
  diskLimitBytes: number,
  openers: MountOpeners = {},
  scratchTmp = true,
): CallFilesystem {
  const quota = new DiskQuota(diskLimitBytes);
  const open = new Set<Descriptor>();
  const opened: Mount[] = [];
  const kinds = Object.keys(openers).filter((kind) => kind !== MEMORY_KIND);
  const close = () => {
    for (const file of [...open]) file.close();
    for (const mount of opened) {
      mount.directories?.clear();
      (mount.backend as ClosableBackend).close?.();
    }
  };
  const mountOn = (backend: FsBackend, readOnly: boolean): Descriptor => {
    const mount: Mount = { backend, readOnly, quota, open };
    if (backend.stillAt) mount.directories = new DirectoryCache(backend);
    opened.push(mount);
    return rootDescriptor(mount);
  };
  try {
    const preopens: Array<[Descriptor, string]> = mounts.map((mount, i) => {
      const source = checkMountSource(mount, kinds);
      const backend =
        source === undefined
          ? new MemoryBackend(BigInt(i + 1))
          : source.kind === MEMORY_KIND
            ? MemoryBackend.fromTree((source as MemoryMountSource).tree, BigInt(i + 1))
            : openers[source.kind]!(source, mount.guest);
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
