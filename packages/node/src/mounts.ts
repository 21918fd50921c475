import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { MountAccess, MountBinding } from '@corral/core';

/** Parse the CLI's `HOSTDIR:GUESTDIR[:ro|rw]` (default read-only). */
export function parseMountFlag(flag: string): { hostPath: string; guest: string; access: MountAccess } {
  const parts = flag.split(':');
  let mode: string | undefined;
  if (parts.length >= 3 && (parts.at(-1) === 'ro' || parts.at(-1) === 'rw')) mode = parts.pop();
  const guest = parts.pop();
  const hostPath = parts.join(':');
  if (!hostPath || !guest || !guest.startsWith('/')) {
    throw new CorralError(
      ErrorCodes.INPUT_VALIDATION,
      `Bad --mount ${JSON.stringify(flag)}: expected HOSTDIR:GUESTDIR[:ro|rw], e.g. ./src:/workspace:ro`,
      { flag },
    );
  }
  return { hostPath: resolve(hostPath), guest, access: mode === 'rw' ? 'read-write' : 'read' };
}

/**
 * Check host folders before a call: each must be an existing directory. The
 * worker then mounts the real folder (host-fs.ts), so reads see it live and
 * writes land in it, never outside it.
 */
export async function resolveHostMounts(mounts: MountBinding[]): Promise<MountBinding[]> {
  return Promise.all(
    mounts.map(async (mount) => {
      if (mount.opfsPath !== undefined) {
        throw new CorralError(
          ErrorCodes.INPUT_VALIDATION,
          `Mount ${mount.guest} is bound to an OPFS folder, which only browsers have; bind a hostPath or a tree instead.`,
          { guest: mount.guest, opfs_path: mount.opfsPath },
        );
      }
      if (mount.hostPath === undefined) return mount;
      try {
        const real = await realpath(mount.hostPath);
        if (!(await stat(real)).isDirectory()) throw new Error('not a directory');
        return { ...mount, hostPath: real };
      } catch {
        throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Mount source ${mount.hostPath} is not a directory Corral can open.`, {
          host_path: mount.hostPath,
          guest: mount.guest,
        });
      }
    }),
  );
}
