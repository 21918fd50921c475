/**
 * The mount source Node adds to `memory`: `{ kind: 'host', path }`, a
 * folder of this machine mounted live. The executor checks it before a
 * call (`hostMountChecks`: it must be a directory; the worker gets its real
 * path), and the sandbox worker opens it (`hostMountOpeners`, host-fs.ts),
 * so reads see the folder as it is and writes land in it, never outside it.
 */
import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { MountBinding } from '@corral/core';
import { badMountSource, sourceString, type MountOpeners, type MountSourceChecks } from '@corral/wasi/fs';
import { openHostDirectory, type Confinement } from './host-fs.js';

/** A folder of this machine, mounted live: `{ kind: 'host', path: './src' }`. */
export type HostMountSource = { kind: 'host'; path: string };

/** The kind of `HostMountSource`. */
export const HOST_KIND = 'host';

/** Parse the CLI's `HOSTDIR:GUESTDIR[:ro|rw]` (default read-only). */
export function parseMountFlag(flag: string): MountBinding {
  const parts = flag.split(':');
  let mode: string | undefined;
  if (parts.length >= 3 && (parts.at(-1) === 'ro' || parts.at(-1) === 'rw')) mode = parts.pop();
  const guest = parts.pop();
  const path = parts.join(':');
  if (!path || !guest || !guest.startsWith('/')) {
    throw new CorralError(
      ErrorCodes.INPUT_VALIDATION,
      `Bad --mount ${JSON.stringify(flag)}: expected HOSTDIR:GUESTDIR[:ro|rw], e.g. ./src:/workspace:ro`,
      { flag },
    );
  }
  return { guest, access: mode === 'rw' ? 'read-write' : 'read', source: hostSource(path) };
}

/** A host source for `path`, resolved against the current directory. */
export function hostSource(path: string): HostMountSource {
  return { kind: HOST_KIND, path: resolve(path) };
}

/** Before a call: a host source must name an existing directory; the worker gets its real path. */
export const hostMountChecks: MountSourceChecks = {
  [HOST_KIND]: async (source, guest) => {
    const path = sourceString(source, 'path', guest);
    try {
      const real = await realpath(path);
      if (!(await stat(real)).isDirectory()) throw new Error('not a directory');
      return { kind: HOST_KIND, path: real } satisfies HostMountSource;
    } catch {
      throw badMountSource(guest, HOST_KIND, `names ${path}, which is not a directory Corral can open`, { path });
    }
  },
};

/**
 * In the sandbox worker: host sources opened live (host-fs.ts).
 * `confinement` and `options` are openHostDirectory's (tests pass them).
 */
export function hostMountOpeners(confinement?: Confinement, options?: { exactTimes?: boolean }): MountOpeners {
  return {
    [HOST_KIND]: (source, guest) => {
      const path = sourceString(source, 'path', guest);
      try {
        return openHostDirectory(path, confinement, options);
      } catch (err) {
        // Gone, or no longer a folder, since hostMountChecks saw it: the caller's, as it would have been then.
        if (typeof err !== 'string') throw err;
        throw badMountSource(guest, HOST_KIND, `names ${path}, which is not a directory Corral can open (${err})`, { path, cause: err });
      }
    },
  };
}
