/**
 * An in-memory tree as a mount's storage: a call's /tmp, a caller's
 * MemoryTree, a folder a host loaded for the call. Everything lives in one
 * backend per mount per call (inode numbers included), so nothing one call
 * does is visible to the next.
 *
 * Directories are Maps, never plain objects: a guest may name a file
 * `__proto__` or `constructor`.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { MemoryTree } from '@corral/core';
import type { DirectoryListing, EntryStat, EntryType, FsBackend, NewTime, OpenMode } from './backend.js';
import { realtimeNs } from '../io.js';

/** The tree shape a host loads a folder into and writes it back from: folders have `dir`, files `source`, symlinks `symlink`. */
export interface FileDataEntry {
  dir?: Record<string, FileDataEntry>;
  source?: Uint8Array | string;
  symlink?: string;
}

interface NodeBase {
  ino: bigint;
  nlink: number;
  atime: bigint;
  mtime: bigint;
  ctime: bigint;
}
interface DirNode extends NodeBase {
  kind: 'directory';
  entries: Map<string, MemNode>;
}
interface FileNode extends NodeBase {
  kind: 'regular-file';
  /** Holds `size` bytes; grows geometrically, so appends cost amortized O(1). */
  data: Uint8Array;
  size: number;
  /** The caller's bytes while the file is unwritten, so an export can tell what changed. */
  original: Uint8Array | string | undefined;
  /** `data` is the caller's buffer: copy before the first write. */
  shared: boolean;
}
interface LinkNode extends NodeBase {
  kind: 'symbolic-link';
  target: string;
}
type MemNode = DirNode | FileNode | LinkNode;

interface OpenFile {
  node: FileNode;
}

const utf8 = new TextEncoder();

export class MemoryBackend implements FsBackend<DirNode, OpenFile> {
  readonly root: DirNode;
  readonly dev: bigint;
  #nextIno = 1n;

  constructor(dev = 1n) {
    this.dev = dev;
    this.root = this.#dir();
  }

  /** A tree from a caller's MemoryTree (copied: a call never changes the caller's objects). */
  static fromTree(tree: MemoryTree, dev?: bigint): MemoryBackend {
    const backend = new MemoryBackend(dev);
    const fill = (dir: DirNode, from: MemoryTree) => {
      for (const [name, value] of Object.entries(from)) {
        checkTreeName(name);
        if (typeof value === 'string' || value instanceof Uint8Array) {
          dir.entries.set(name, backend.#file(typeof value === 'string' ? utf8.encode(value) : value.slice()));
        } else if (typeof value !== 'object' || value === null || Array.isArray(value)) {
          const what = value === null || value === undefined ? String(value) : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
          throw new CorralError(
            ErrorCodes.INPUT_VALIDATION,
            `A mount tree has ${JSON.stringify(name)} as ${what}: a file is a string or a Uint8Array, a folder an object.`,
            { name },
          );
        } else {
          const child = backend.#dir();
          dir.entries.set(name, child);
          fill(child, value);
        }
      }
    };
    fill(backend.root, tree);
    return backend;
  }

  /** A tree from file data (a folder as a host loaded it); file contents are shared until written. */
  static fromFileData(data: FileDataEntry, dev?: bigint): MemoryBackend {
    const backend = new MemoryBackend(dev);
    const fill = (dir: DirNode, from: FileDataEntry) => {
      for (const [name, child] of Object.entries(from.dir ?? {})) {
        checkTreeName(name);
        if (child.symlink !== undefined) dir.entries.set(name, backend.#link(child.symlink));
        else if (child.dir) {
          const sub = backend.#dir();
          dir.entries.set(name, sub);
          fill(sub, child);
        } else {
          const source = child.source ?? new Uint8Array(0);
          const bytes = typeof source === 'string' ? utf8.encode(source) : source;
          const node = backend.#file(bytes);
          node.original = source;
          node.shared = true;
          dir.entries.set(name, node);
        }
      }
    };
    fill(backend.root, data);
    return backend;
  }

  /** The tree as file data; a file never written keeps its original `source` object. */
  toFileData(): FileDataEntry {
    const out = (dir: DirNode): FileDataEntry => {
      const entries: Record<string, FileDataEntry> = Object.create(null);
      for (const [name, node] of dir.entries) {
        if (node.kind === 'directory') entries[name] = out(node);
        else if (node.kind === 'symbolic-link') entries[name] = { symlink: node.target };
        else entries[name] = { source: node.original ?? node.data.slice(0, node.size) };
      }
      return { dir: entries };
    };
    return out(this.root);
  }

  #base(): NodeBase {
    const now = realtimeNs();
    return { ino: this.#nextIno++, nlink: 1, atime: now, mtime: now, ctime: now };
  }

  #dir(): DirNode {
    return { ...this.#base(), kind: 'directory', entries: new Map(), nlink: 2 };
  }

  #file(bytes: Uint8Array): FileNode {
    return { ...this.#base(), kind: 'regular-file', data: bytes, size: bytes.length, original: undefined, shared: false };
  }

  #link(target: string): LinkNode {
    return { ...this.#base(), kind: 'symbolic-link', target };
  }

  #get(dir: DirNode, name: string): MemNode {
    const node = dir.entries.get(name);
    if (!node) throw 'no-entry';
    return node;
  }

  #stat(node: MemNode): EntryStat {
    return {
      type: node.kind as EntryType,
      dev: this.dev,
      ino: node.ino,
      nlink: BigInt(node.nlink),
      size: BigInt(node.kind === 'regular-file' ? node.size : node.kind === 'symbolic-link' ? utf8.encode(node.target).length : 0),
      atimeNs: node.atime,
      mtimeNs: node.mtime,
      ctimeNs: node.ctime,
    };
  }

  #touch(node: MemNode): void {
    node.mtime = node.ctime = realtimeNs();
  }

  #add(dir: DirNode, name: string, node: MemNode): void {
    if (dir.entries.has(name)) throw 'exist';
    dir.entries.set(name, node);
    this.#touch(dir);
  }

  stat(dir: DirNode, name: string | null): EntryStat {
    return this.#stat(name === null ? dir : this.#get(dir, name));
  }

  openDirectory(dir: DirNode, name: string): DirNode {
    const node = this.#get(dir, name);
    if (node.kind !== 'directory') throw 'not-directory';
    return node;
  }

  releaseDirectory(): void {}

  readDirectory(dir: DirNode): DirectoryListing[] {
    return [...dir.entries].map(([name, node]) => ({ name, type: node.kind }));
  }

  readlink(dir: DirNode, name: string): string {
    const node = this.#get(dir, name);
    if (node.kind !== 'symbolic-link') throw 'invalid';
    return node.target;
  }

  createDirectory(dir: DirNode, name: string): void {
    this.#add(dir, name, this.#dir());
    dir.nlink++;
  }

  removeDirectory(dir: DirNode, name: string): void {
    const node = this.#get(dir, name);
    if (node.kind !== 'directory') throw 'not-directory';
    if (node.entries.size > 0) throw 'not-empty';
    dir.entries.delete(name);
    dir.nlink--;
    this.#touch(dir);
  }

  unlink(dir: DirNode, name: string): void {
    const node = this.#get(dir, name);
    if (node.kind === 'directory') throw 'is-directory';
    dir.entries.delete(name);
    node.nlink--;
    node.ctime = realtimeNs();
    this.#touch(dir);
  }

  rename(fromDir: DirNode, fromName: string, toDir: DirNode, toName: string): void {
    const node = this.#get(fromDir, fromName);
    const existing = toDir.entries.get(toName);
    if (existing === node) return;
    if (node.kind === 'directory') {
      // A folder moved into itself would detach a cycle from the tree.
      if (this.#contains(node, toDir)) throw 'invalid';
      if (existing && existing.kind !== 'directory') throw 'not-directory';
      if (existing?.kind === 'directory' && existing.entries.size > 0) throw 'not-empty';
    } else if (existing?.kind === 'directory') {
      throw 'is-directory';
    }
    fromDir.entries.delete(fromName);
    toDir.entries.set(toName, node);
    if (existing) existing.nlink--;
    if (node.kind === 'directory' && fromDir !== toDir) {
      fromDir.nlink--;
      if (!existing) toDir.nlink++;
    }
    node.ctime = realtimeNs();
    this.#touch(fromDir);
    this.#touch(toDir);
  }

  /** True when `target` is `dir` or below it. */
  #contains(dir: DirNode, target: DirNode): boolean {
    if (dir === target) return true;
    for (const child of dir.entries.values()) if (child.kind === 'directory' && this.#contains(child, target)) return true;
    return false;
  }

  symlink(dir: DirNode, name: string, target: string): void {
    this.#add(dir, name, this.#link(target));
  }

  link(fromDir: DirNode, fromName: string, toDir: DirNode, toName: string): void {
    const node = this.#get(fromDir, fromName);
    if (node.kind === 'directory') throw 'not-permitted';
    this.#add(toDir, toName, node);
    node.nlink++;
    node.ctime = realtimeNs();
  }

  setTimes(dir: DirNode, name: string | null, atime: NewTime, mtime: NewTime): void {
    setTimesOf(name === null ? dir : this.#get(dir, name), atime, mtime);
  }

  openFile(dir: DirNode, name: string, mode: OpenMode): OpenFile {
    let node = dir.entries.get(name);
    if (!node) {
      if (!mode.create) throw 'no-entry';
      node = this.#file(new Uint8Array(0));
      this.#add(dir, name, node);
    } else if (mode.create && mode.exclusive) {
      throw 'exist';
    }
    if (node.kind === 'directory') throw 'is-directory';
    if (node.kind === 'symbolic-link') throw 'loop';
    if (mode.truncate && node.size > 0) this.setSize({ node }, 0);
    return { node };
  }

  openedStat(file: OpenFile): EntryStat {
    return this.#stat(file.node);
  }

  fileStat(file: OpenFile): EntryStat {
    return this.#stat(file.node);
  }

  read(file: OpenFile, into: Uint8Array, position: number): number {
    const { node } = file;
    if (position >= node.size) return 0;
    const n = Math.min(into.length, node.size - position);
    into.set(node.data.subarray(position, position + n));
    return n;
  }

  write(file: OpenFile, data: Uint8Array, position: number): number {
    const node = file.node;
    const end = position + data.length;
    this.#reserve(node, end);
    if (position > node.size) node.data.fill(0, node.size, position);
    node.data.set(data, position);
    node.size = Math.max(node.size, end);
    node.original = undefined;
    this.#touch(node);
    return data.length;
  }

  setSize(file: OpenFile, size: number): void {
    const node = file.node;
    this.#reserve(node, size);
    if (size > node.size) node.data.fill(0, node.size, size);
    node.size = size;
    node.original = undefined;
    this.#touch(node);
  }

  /** Room for `size` bytes (the caller has charged the growth to the disk quota already). */
  #reserve(node: FileNode, size: number): void {
    if (size <= node.data.length && !node.shared) return;
    const capacity = size <= node.data.length ? node.data.length : Math.max(size, Math.min(node.data.length * 2, size + (64 << 20)));
    const grown = new Uint8Array(capacity);
    grown.set(node.data.subarray(0, Math.min(node.size, capacity)));
    node.data = grown;
    node.shared = false;
  }

  setFileTimes(file: OpenFile, atime: NewTime, mtime: NewTime): void {
    setTimesOf(file.node, atime, mtime);
  }

  sync(): void {}

  closeFile(): void {}
}

function setTimesOf(node: NodeBase, atime: NewTime, mtime: NewTime): void {
  const now = realtimeNs();
  if (atime !== null) node.atime = atime === 'now' ? now : atime;
  if (mtime !== null) node.mtime = mtime === 'now' ? now : mtime;
  node.ctime = now;
}

export function checkTreeName(name: string): void {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    // The caller's mistake, not the tool's: a name no directory can hold.
    throw new CorralError(
      ErrorCodes.INPUT_VALIDATION,
      `A mount tree has an invalid file name: ${JSON.stringify(name)} (names are non-empty, not . or .., without / or NUL).`,
      {
        name,
      },
    );
  }
}
