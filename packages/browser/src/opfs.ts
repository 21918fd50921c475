/**
 * The origin private file system (OPFS) as Corral uses it: folders named by
 * a path from the OPFS root, which a call can mount (an `OpfsMountSource`),
 * and helpers for a page to fill and read such folders. Works in pages and
 * in workers.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { MemoryTree } from '@corral/core';

/**
 * A folder of the origin's private file system, as a path from its root
 * ('projects/demo'; '' is the root): `{ kind: 'opfs', path }`. The folder is
 * read when the call starts and, for a read-write mount, what the tool
 * changed is written back when it ends.
 */
export type OpfsMountSource = { kind: 'opfs'; path: string };

/** The kind of `OpfsMountSource`. */
export const OPFS_KIND = 'opfs';

/**
 * preview2-shim's OPFS support keeps the symlinks of a folder in this hidden
 * file at its root (OPFS has no symlinks); tools never see it, and Corral
 * reads and writes it in the same format.
 */
export const SYMLINKS_FILE = '.__wasi_symlinks__.json';

/**
 * Split an OPFS path ('projects/demo', '/projects/demo/' or '' for the
 * root) into its names. `.`, `..` and empty names are refused: an OPFS path
 * names a folder, it never climbs.
 */
export function parseOpfsPath(path: string): string[] {
  if (typeof path !== 'string') {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `An OPFS path must be a string (got ${typeof path}).`, { option: 'opfsPath' });
  }
  const trimmed = path.replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '') return [];
  const names = trimmed.split('/');
  const bad = names.find((n) => n === '' || n === '.' || n === '..' || n.includes('\\') || n.includes('\0'));
  if (bad !== undefined) {
    throw new CorralError(
      ErrorCodes.INPUT_VALIDATION,
      `OPFS path ${JSON.stringify(path)} has the name ${JSON.stringify(bad)}; use plain folder names from the OPFS root, e.g. "projects/demo".`,
      { opfs_path: path },
    );
  }
  return names;
}

/** The folder at `path` under the OPFS root; `create` makes missing folders. */
export async function opfsDirectory(path: string, options: { create?: boolean } = {}): Promise<FileSystemDirectoryHandle> {
  let dir = await navigator.storage.getDirectory();
  for (const name of parseOpfsPath(path)) dir = await dir.getDirectoryHandle(name, { create: !!options.create });
  return dir;
}

/**
 * Write a tree of files into the OPFS folder `path` (created if missing),
 * e.g. to mount a folder the user dropped on the page. Files already there
 * and not in the tree are left alone.
 */
export async function writeOpfsTree(path: string, tree: MemoryTree): Promise<void> {
  await writeTree(await opfsDirectory(path, { create: true }), tree);
}

async function writeTree(dir: FileSystemDirectoryHandle, tree: MemoryTree): Promise<void> {
  for (const [name, value] of Object.entries(tree)) {
    if (typeof value === 'string' || value instanceof Uint8Array) {
      await writeFile(dir, name, typeof value === 'string' ? new TextEncoder().encode(value) : value);
    } else {
      await writeTree(await dir.getDirectoryHandle(name, { create: true }), value);
    }
  }
}

/** Replace the file `name` in `dir` with `bytes`. */
export async function writeFile(dir: FileSystemDirectoryHandle, name: string, bytes: Uint8Array): Promise<void> {
  const writable = await (await dir.getFileHandle(name, { create: true })).createWritable();
  try {
    await writable.write(bytes as Uint8Array<ArrayBuffer>);
  } finally {
    await writable.close();
  }
}

/** Read the OPFS folder `path` back as a tree (files as bytes). */
export async function readOpfsTree(path: string): Promise<MemoryTree> {
  const tree = await readTree(await opfsDirectory(path));
  delete tree[SYMLINKS_FILE];
  return tree;
}

async function readTree(dir: FileSystemDirectoryHandle): Promise<MemoryTree> {
  const tree: MemoryTree = {};
  for await (const [name, child] of dir.entries()) {
    if (child.kind === 'directory') tree[name] = await readTree(child as FileSystemDirectoryHandle);
    else tree[name] = new Uint8Array(await (await (child as FileSystemFileHandle).getFile()).arrayBuffer());
  }
  return tree;
}
