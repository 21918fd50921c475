/**
 * OPFS folders mounted into one call, inside the sandbox worker.
 *
 * WASI's filesystem calls are synchronous and OPFS is not, so each folder is
 * read into an in-memory tree before the call (@corral/wasi's MemoryBackend),
 * the tool works on that tree through the same descriptors as every other
 * mount (read-only mounts, disk quota, containment), and when the tool has
 * stopped, what it changed in a read-write folder is written back: files
 * whose contents changed, folders made, entries removed, and symlinks in the
 * sidecar file preview2-shim's OPFS support also uses. Read mounts are never
 * written.
 *
 * Two calls changing the same file at once: the last to finish wins, as with
 * two processes writing one file.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { MountBinding } from '@corral/core';
import { MemoryBackend, sourceString, type FileDataEntry, type FsBackend } from '@corral/wasi/fs';
import { OPFS_KIND, SYMLINKS_FILE, opfsDirectory, parseOpfsPath, writeFile } from './opfs.js';

/** What was at a path of a folder: a folder, a file (its contents object) or a symlink. */
type Node = { kind: 'dir' } | { kind: 'file'; source: unknown } | { kind: 'symlink'; target: string };

interface LoadedFolder {
  path: string;
  handle: FileSystemDirectoryHandle;
  /** The folder as the tool sees and changes it (shared by every mount of it in the call). */
  backend: MemoryBackend;
  /** True when some mount of this folder is read-write. */
  writable: boolean;
  /** Every path in the folder when it was loaded. */
  before: Map<string, Node>;
}

export class OpfsCallMounts {
  readonly #folders: Map<string, LoadedFolder>;

  private constructor(folders: Map<string, LoadedFolder>) {
    this.#folders = folders;
  }

  /** Read every OPFS folder the call mounts. A missing folder is E_INPUT_VALIDATION, as a missing host folder is in Node. */
  static async load(mounts: MountBinding[]): Promise<OpfsCallMounts> {
    const folders = new Map<string, LoadedFolder>();
    for (const mount of mounts) {
      if (mount.source?.kind !== OPFS_KIND) continue;
      const opfsPath = sourceString(mount.source, 'path', mount.guest);
      const path = parseOpfsPath(opfsPath).join('/');
      const known = folders.get(path);
      if (known) {
        known.writable ||= mount.access === 'read-write';
        continue;
      }
      let handle: FileSystemDirectoryHandle;
      try {
        handle = await opfsDirectory(path);
      } catch {
        throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Mount source OPFS folder "${path}" is not a folder Corral can open.`, {
          opfs_path: opfsPath,
          guest: mount.guest,
        });
      }
      let data: FileDataEntry;
      try {
        data = await loadFolder(handle);
      } catch (err) {
        // A file removed or changed by another tab while it was read, or storage the browser cannot read.
        const cause = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
        throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Mount source OPFS folder "${path}" could not be read: ${cause}`, {
          opfs_path: opfsPath,
          guest: mount.guest,
          cause,
        });
      }
      const backend = MemoryBackend.fromFileData(data, BigInt(folders.size + 100));
      folders.set(path, { path, handle, backend, writable: mount.access === 'read-write', before: index(data) });
    }
    return new OpfsCallMounts(folders);
  }

  /** The storage of a loaded folder, for the call's filesystem. */
  root(opfsPath: string): FsBackend {
    const folder = this.#folders.get(parseOpfsPath(opfsPath).join('/'));
    if (!folder) throw notLoaded(opfsPath);
    return folder.backend;
  }

  /** Write back what the call changed in its read-write folders. */
  async persist(toolName: string): Promise<void> {
    for (const folder of this.#folders.values()) {
      if (!folder.writable) continue;
      try {
        await writeBack(folder);
      } catch (err) {
        const name = (err as { name?: unknown } | null)?.name;
        const cause = err instanceof Error ? err.message : String(err);
        if (name === 'QuotaExceededError') {
          throw new CorralError(
            ErrorCodes.RESOURCE_EXHAUSTED,
            `${toolName} ran, but the browser's storage quota refused its changes to OPFS folder "${folder.path}".`,
            { resource: 'disk', opfs_path: folder.path, cause },
          );
        }
        throw new CorralError(
          ErrorCodes.UNEXPECTED_EXIT,
          `${toolName} ran, but its changes to OPFS folder "${folder.path}" could not be saved: ${cause}`,
          { reason: 'write_back', opfs_path: folder.path, cause },
        );
      }
    }
  }
}

/** The call's filesystem asked for an OPFS folder aroundRun did not load: the two disagree, a bug in Corral. */
export function notLoaded(opfsPath: string): CorralError {
  return new CorralError(
    ErrorCodes.UNEXPECTED_EXIT,
    `OPFS folder ${opfsPath} was not loaded for this call (an internal error, not the tool's; please report it)`,
    { reason: 'internal', cause: `OPFS folder ${opfsPath} was not loaded for this call` },
  );
}

/**
 * Read an OPFS folder, with the symlinks its sidecar file records. Folders
 * are maps without a prototype: OPFS allows a file named `__proto__`.
 */
async function loadFolder(handle: FileSystemDirectoryHandle): Promise<FileDataEntry> {
  const read = async (dir: FileSystemDirectoryHandle, top: boolean): Promise<FileDataEntry> => {
    const entries: Record<string, FileDataEntry> = Object.create(null);
    for await (const [name, child] of dir.entries()) {
      if (top && name === SYMLINKS_FILE) continue;
      entries[name] =
        child.kind === 'directory'
          ? await read(child as FileSystemDirectoryHandle, false)
          : { source: new Uint8Array(await (await (child as FileSystemFileHandle).getFile()).arrayBuffer()) };
    }
    return { dir: entries };
  };
  const root = await read(handle, true);
  let links: unknown = {};
  try {
    links = JSON.parse(await (await (await handle.getFileHandle(SYMLINKS_FILE)).getFile()).text());
  } catch {
    // no sidecar, or not one Corral can read: no symlinks
  }
  if (typeof links === 'object' && links !== null) {
    for (const [path, target] of Object.entries(links)) {
      if (typeof target !== 'string') continue;
      const names = path.split('/').filter(Boolean);
      const name = names.pop();
      let dir: FileDataEntry | undefined = root;
      for (const part of names) dir = dir?.dir && Object.hasOwn(dir.dir, part) ? dir.dir[part] : undefined;
      if (name && dir?.dir && !Object.hasOwn(dir.dir, name)) dir.dir[name] = { symlink: target };
    }
  }
  return root;
}

/** Every path under a loaded tree, parents before their children. */
function index(entry: FileDataEntry, prefix = '', out = new Map<string, Node>()): Map<string, Node> {
  for (const [name, child] of Object.entries(entry.dir ?? {})) {
    const path = prefix ? `${prefix}/${name}` : name;
    if (child.symlink !== undefined) out.set(path, { kind: 'symlink', target: child.symlink });
    else if (child.dir) {
      out.set(path, { kind: 'dir' });
      index(child, path, out);
    } else out.set(path, { kind: 'file', source: child.source });
  }
  return out;
}

function splitPath(path: string): [parent: string, name: string] {
  const at = path.lastIndexOf('/');
  return at === -1 ? ['', path] : [path.slice(0, at), path.slice(at + 1)];
}

/**
 * Apply the difference between the folder as loaded and as the tool left it.
 * The in-memory tree replaces a file's contents object on every write, so a
 * file whose contents object is unchanged was not written.
 */
async function writeBack(folder: LoadedFolder): Promise<void> {
  const { before, handle } = folder;
  const after = index(folder.backend.toFileData());
  const dirs = new Map<string, FileSystemDirectoryHandle>([['', handle]]);
  const dirAt = async (path: string): Promise<FileSystemDirectoryHandle> => {
    let dir = dirs.get(path);
    if (!dir) {
      const [parent, name] = splitPath(path);
      dir = await (await dirAt(parent)).getDirectoryHandle(name, { create: true });
      dirs.set(path, dir);
    }
    return dir;
  };

  // Removed, or replaced by another kind of entry: remove the topmost such path.
  const removed: string[] = [];
  for (const [path, was] of before) {
    const now = after.get(path);
    if (now?.kind === was.kind || removed.some((r) => path.startsWith(`${r}/`))) continue;
    removed.push(path);
    if (was.kind === 'symlink') continue; // lives in the sidecar file
    const [parent, name] = splitPath(path);
    await (await dirAt(parent)).removeEntry(name, { recursive: true });
  }

  // New folders, and files new or written to; parents sort before their children.
  for (const path of [...after.keys()].sort()) {
    const now = after.get(path)!;
    const was = before.get(path);
    if (now.kind === 'dir' && was?.kind !== 'dir') await dirAt(path);
    if (now.kind === 'file' && (was?.kind !== 'file' || was.source !== now.source) && path !== SYMLINKS_FILE) {
      const [parent, name] = splitPath(path);
      const source = now.source;
      const bytes =
        typeof source === 'string' ? new TextEncoder().encode(source) : ((source as Uint8Array | undefined) ?? new Uint8Array());
      await writeFile(await dirAt(parent), name, bytes);
    }
  }

  const links = (nodes: Map<string, Node>) =>
    JSON.stringify([...nodes].flatMap(([path, node]) => (node.kind === 'symlink' ? [[path, node.target] as const] : [])).sort());
  const linksAfter = links(after);
  if (links(before) !== linksAfter) {
    const table = Object.fromEntries(JSON.parse(linksAfter) as Array<[string, string]>);
    if (Object.keys(table).length === 0) await handle.removeEntry(SYMLINKS_FILE).catch(() => {});
    else await writeFile(handle, SYMLINKS_FILE, new TextEncoder().encode(JSON.stringify(table)));
  }
}
