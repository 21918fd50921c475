import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { CorralError, ErrorCodes, type MemoryTree, type MountAccess, type MountBinding } from '@corral/core';

/** Parse the CLI's `HOSTDIR:GUESTDIR[:ro|rw]`. */
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

export interface SnapshotLimits {
  maxBytes: number;
  maxFiles: number;
}

/**
 * Bind host folders to mounts by copying them into memory trees.
 * Only what lies inside the folder is copied: symlinks are followed only when
 * their real target stays inside it. Writes are not carried back to the host
 * yet, so read-write host mounts are refused rather than silently dropped.
 */
export async function resolveHostMounts(
  mounts: MountBinding[],
  limits: SnapshotLimits = { maxBytes: 256 * 1024 * 1024, maxFiles: 100_000 },
): Promise<MountBinding[]> {
  return Promise.all(
    mounts.map(async (mount) => {
      if (mount.hostPath === undefined) return mount;
      if (mount.access === 'read-write') {
        throw new CorralError(
          ErrorCodes.INPUT_VALIDATION,
          `Read-write host mounts are not supported yet (${mount.hostPath}:${mount.guest}); mount it read-only with :ro.`,
          { guest: mount.guest },
        );
      }
      let root: string;
      try {
        root = await realpath(mount.hostPath);
        if (!(await lstat(root)).isDirectory()) throw new Error('not a directory');
      } catch {
        throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Mount source ${mount.hostPath} is not a readable directory.`, {
          host_path: mount.hostPath,
        });
      }
      const budget = { bytes: limits.maxBytes, files: limits.maxFiles };
      const tree = await snapshotDir(root, root, budget, mount.hostPath, 0);
      const { hostPath: _dropped, ...rest } = mount;
      return { ...rest, tree };
    }),
  );
}

async function snapshotDir(
  root: string,
  dir: string,
  budget: { bytes: number; files: number },
  shown: string,
  depth: number,
): Promise<MemoryTree> {
  // Links inside the folder may form cycles; no real tree is this deep.
  if (depth > 64) return {};
  const tree: MemoryTree = {};
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    let path = join(dir, entry.name);
    if (entry.isSymbolicLink()) {
      const target = await realpath(path).catch(() => undefined);
      // A link that leaves the mounted folder does not exist for the tool.
      if (!target || (target !== root && !target.startsWith(root + sep))) continue;
      path = target;
    }
    const info = await lstat(path);
    if (info.isDirectory()) {
      tree[entry.name] = await snapshotDir(root, path, budget, shown, depth + 1);
    } else if (info.isFile()) {
      budget.files -= 1;
      budget.bytes -= info.size;
      if (budget.bytes < 0 || budget.files < 0) {
        throw new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, `Mount source ${shown} is too large to mount.`, {
          resource: 'disk',
          host_path: shown,
        });
      }
      tree[entry.name] = new Uint8Array(await readFile(path));
    }
  }
  return tree;
}
