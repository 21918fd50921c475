/**
 * wasi:filesystem 0.2 (`types`, `preopens`) over Corral's mounts: the one
 * filesystem layer every tool goes through, components and preview1 modules
 * alike (preview1/host.ts speaks to these descriptors too).
 *
 * The rules live here, once, for every backend:
 *   - containment: every path is resolved by resolve.ts from the mount root
 *     at every use. A directory descriptor is its path from the root, walked
 *     again each time it is used (or taken from the handles the mount keeps,
 *     when the backend confirms the handle is still at that path: resolve.ts
 *     DirectoryCache), so renaming folders or swapping one for a symlink (by
 *     the tool, or by the host meanwhile) cannot make it lead elsewhere. A
 *     file descriptor holds the file it opened (as in POSIX); only regular
 *     files and directories can be opened at all.
 *   - metadata hashes (st_ino, d_ino to preview1) are keyed hashes of the
 *     backend's dev and ino (metadata-hash.ts): equal for one object, and
 *     telling nothing of the host's numbers.
 *   - access: a `read` mount refuses every change ('read-only'); a
 *     descriptor does only what it was opened for ('bad-descriptor').
 *   - quota: bytes a call adds to files, and a fixed cost per entry it
 *     creates, count against one disk quota (disk_mb) across its mounts;
 *     removing frees nothing (so removing what was there cannot buy room).
 *   - the mount root can be neither removed nor renamed: it can only be
 *     named as `.` or `..`, which no remove or rename accepts.
 *   - every value from the guest is checked (guest.ts) before use.
 */
import type { DirectoryListing, EntryStat, FsBackend } from './backend.js';
import type { DiskQuota } from './quota.js';
import {
  checkLinkTarget,
  descendsOnly,
  parsePath,
  resolve,
  staysInside,
  type DirectoryCache,
  visibleTarget,
  type ParsedPath,
  type Resolved,
} from './resolve.js';
import { metadataHash, type MetadataHash } from './metadata-hash.js';
import { GuestTypeError, bytes, flags as flagsOf, newTimestamp, oneOf, resource, string, u64, u64Number } from '../guest.js';
import { IoError, MAX_CHUNK, inputStream, outputStream, type InputStream, type OutputStream } from '../io.js';

/** Files one call may hold open at once (host files are real fds, shared by the whole process). */
export const MAX_OPEN_FILES = 1024;
/** Entries checked for symlinks before a folder moves to another depth; a bigger folder keeps its depth. */
const MAX_MOVE_SCAN = 10_000;
/** Levels of folders checked the same way (the check holds each level open); a deeper folder keeps its depth. */
const MAX_MOVE_DEPTH = 64;

/** One mount of one call: its storage, its access and the call's shared state. */
export interface Mount {
  backend: FsBackend<unknown, unknown>;
  readOnly: boolean;
  quota: DiskQuota;
  /** Files open in this call (across its mounts), closed when it ends. */
  open: Set<Descriptor>;
  /** Directory handles kept between uses, when the backend can check them (FsBackend.stillAt); cleared when the call ends. */
  directories?: DirectoryCache<unknown>;
}

interface DescriptorFlags {
  read: boolean;
  write: boolean;
  mutateDirectory: boolean;
  /** O_SYNC, O_DSYNC, O_RSYNC: kept as asked, and every write through a descriptor with either of the first two is synced. */
  fileIntegritySync?: boolean;
  dataIntegritySync?: boolean;
  requestedWriteSync?: boolean;
}

const HOST = Symbol('corral filesystem');
/** The empty path: a directory descriptor's own folder. */
const SELF: ParsedPath = { segments: [], trailingSlash: false };
const DISPOSE: symbol = (Symbol as { dispose?: symbol }).dispose ?? Symbol.for('dispose');
const PATH_FLAGS = ['symlinkFollow'] as const;
const OPEN_FLAGS = ['create', 'directory', 'exclusive', 'truncate'] as const;
const DESCRIPTOR_FLAGS = ['read', 'write', 'fileIntegritySync', 'dataIntegritySync', 'requestedWriteSync', 'mutateDirectory'] as const;
const ADVICE = ['normal', 'sequential', 'random', 'will-need', 'dont-need', 'no-reuse'] as const;

/**
 * Methods only hosts call (the preview1 host), keyed by symbols: jco's glue
 * calls a resource's methods by the names a component's WIT declares, and a
 * component may declare any name in an interface Corral provides, so a
 * host-only method under a string name would be one a lying component
 * could call.
 */
export const PARENT_METADATA_HASH: unique symbol = Symbol('corral parent metadata hash');
export const READ_DIRECTORY_WITH_HASHES: unique symbol = Symbol('corral read directory with hashes');
export const ENTRIES_WITH_HASHES: unique symbol = Symbol('corral entries with hashes');

/**
 * Counts the calls that may have changed which object a name leads to
 * (create, remove, rename, link), in any mount of any call of this worker:
 * what a listing learned about its entries holds only while it is unchanged.
 */
let namespaceChanges = 0;

type Hash = MetadataHash;

/** The last entry a guest read from a directory stream of a descriptor, and the listing it came from. */
interface LastRead {
  listing: Listing;
  index: number;
}

/**
 * A directory listing as a stream hands it out, and the metadata hashes of
 * its entries, taken in one go the first time one is asked for: one walk to
 * the directory and a stat per entry, not a walk per entry. A hash is given
 * from here only while no call has changed names since the batch was taken
 * (`namespaceChanges`); then the caller asks the backend again.
 */
class Listing {
  readonly entries: DirectoryListing[];
  readonly #take: () => Array<Hash | undefined>;
  #hashes: Array<Hash | undefined> | undefined;
  #changes = -1;

  constructor(entries: DirectoryListing[], take: () => Array<Hash | undefined>, hashes?: Array<Hash | undefined>) {
    this.entries = entries;
    this.#take = take;
    if (hashes) {
      this.#hashes = hashes;
      this.#changes = namespaceChanges;
    }
  }

  /** The hash of entry `index` (not followed), or undefined: the entry is gone, or names changed since the batch. */
  hashAt(index: number): Hash | undefined {
    if (this.#hashes === undefined) {
      this.#changes = namespaceChanges;
      this.#hashes = this.#take();
    }
    return this.#changes === namespaceChanges ? this.#hashes[index] : undefined;
  }
}

/** The hash of each of `entries` in `dir` (not followed), undefined for one that is gone. */
function entryHashes(backend: FsBackend<unknown, unknown>, dir: unknown, entries: DirectoryListing[]): Array<Hash | undefined> {
  return entries.map((entry) => {
    try {
      return hashOf(backend.stat(dir, entry.name));
    } catch {
      return undefined;
    }
  });
}

/** wasi:filesystem `descriptor-stat`. */
export interface DescriptorStat {
  type: string;
  linkCount: bigint;
  size: bigint;
  dataAccessTimestamp: { seconds: bigint; nanoseconds: number } | undefined;
  dataModificationTimestamp: { seconds: bigint; nanoseconds: number } | undefined;
  statusChangeTimestamp: { seconds: bigint; nanoseconds: number } | undefined;
}

/** wasi:filesystem `descriptor`: a directory (its path from the mount root) or an open regular file. */
export class Descriptor {
  readonly #mount: Mount;
  /** Directory: its physical path from the mount root. File: null. */
  readonly #path: readonly string[] | null;
  #file: unknown;
  /**
   * File: what it is (type, dev, ino), once known. An open file stays the
   * object it is, so these never change while it is open; its size and
   * times do, and are asked for every time.
   */
  #identity: EntryStat | undefined;
  /** Directory: the entry the guest last read from one of its streams (see metadataHashAt). */
  #lastRead: LastRead | undefined;
  /** Directory: its own hash as its last listing took it (see metadataHash). */
  #listedOwn: { hash: Hash; changes: number } | undefined;
  readonly #flags: DescriptorFlags;

  constructor(token: typeof HOST, mount: Mount, path: readonly string[] | null, file: unknown, flags: DescriptorFlags) {
    if (token !== HOST) throw new GuestTypeError('descriptors are opened by the host');
    this.#mount = mount;
    this.#path = path;
    this.#file = file;
    this.#flags = flags;
  }

  // --- helpers -----------------------------------------------------------------
  #backend(): FsBackend<unknown, unknown> {
    return this.#mount.backend;
  }

  /** This directory's path, or 'not-directory' for a file. */
  #dir(): readonly string[] {
    if (this.#path === null) throw 'not-directory';
    return this.#path;
  }

  /** This file's backend handle, or 'is-directory' / 'bad-descriptor'. */
  #openFile(need: 'read' | 'write' | null): unknown {
    if (this.#path !== null) throw 'is-directory';
    if (this.#file === undefined) throw 'bad-descriptor';
    if (need && !this.#flags[need]) throw 'bad-descriptor';
    if (need === 'write' && this.#mount.readOnly) throw 'read-only';
    return this.#file;
  }

  /** Changes below this directory: the mount must be writable and the descriptor allowed to mutate. */
  #mutable(): void {
    if (this.#mount.readOnly) throw 'read-only';
    if (!this.#flags.mutateDirectory) throw 'not-permitted';
    namespaceChanges++;
  }

  /** Resolve `path` from this directory, run `op` on where it led, release the directories it held. */
  #walk<T>(path: ParsedPath, follow: boolean, op: (r: Resolved<unknown>) => T): T {
    // What a listing answers for (metadataHash, metadataHashAt) holds only for the very next question.
    this.#lastRead = undefined;
    this.#listedOwn = undefined;
    const r = resolve(this.#backend(), this.#dir(), path, follow, this.#mount.directories);
    try {
      return op(r);
    } finally {
      r.release();
    }
  }

  /** The same for a path the guest gave. */
  #at<T>(path: unknown, follow: boolean, op: (r: Resolved<unknown>) => T): T {
    return this.#walk(parsePath(string(path, 'path')), follow, op);
  }

  /** The directory itself (for stat and set-times of a directory descriptor). */
  #self<T>(op: (r: Resolved<unknown>) => T): T {
    return this.#walk(SELF, false, op);
  }

  #statOf(r: Resolved<unknown>): EntryStat {
    const info = this.#lstat(r);
    if (r.trailingSlash && info.type !== 'directory') throw 'not-directory';
    return info;
  }

  /** What `r` led to, not followed: the stat its walk took, or a new one when the walk took none. */
  #lstat(r: Resolved<unknown>): EntryStat {
    if (r.stat === null) throw 'no-entry';
    return r.stat ?? this.#backend().stat(r.dir, r.name);
  }

  /** What this descriptor names: its directory, walked again, or its open file. */
  #ownStat(): EntryStat {
    if (this.#path !== null) return this.#self((r) => this.#backend().stat(r.dir, r.name));
    const info = this.#backend().fileStat(this.#openFile(null));
    this.#identity ??= info;
    return info;
  }

  /** What this descriptor names, when only its type, dev and ino are needed: an open file's are known after the first stat. */
  #ownIdentity(): EntryStat {
    if (this.#path === null) {
      this.#openFile(null);
      if (this.#identity) return this.#identity;
    }
    return this.#ownStat();
  }

  // --- descriptor-level ----------------------------------------------------------
  getFlags(): Required<DescriptorFlags> {
    const f = this.#flags;
    return {
      read: f.read,
      write: f.write,
      mutateDirectory: f.mutateDirectory,
      fileIntegritySync: !!f.fileIntegritySync,
      dataIntegritySync: !!f.dataIntegritySync,
      requestedWriteSync: !!f.requestedWriteSync,
    };
  }

  getType(): string {
    if (this.#path !== null) return 'directory';
    return this.#ownIdentity().type;
  }

  stat(): DescriptorStat {
    return toStat(this.#ownStat());
  }

  statAt(pathFlags: unknown, path: unknown): DescriptorStat {
    const { symlinkFollow } = flagsOf(pathFlags, 'path-flags', PATH_FLAGS);
    return this.#at(path, symlinkFollow, (r) => toStat(this.#statOf(r)));
  }

  metadataHash(): { lower: bigint; upper: bigint } {
    // A directory just listed: its hash as of the listing (the adapter's inode of `.`), once, while names are unchanged.
    const listed = this.#listedOwn;
    this.#listedOwn = undefined;
    if (listed && listed.changes === namespaceChanges) return listed.hash;
    return hashOf(this.#ownIdentity());
  }

  metadataHashAt(pathFlags: unknown, path: unknown): { lower: bigint; upper: bigint } {
    const { symlinkFollow } = flagsOf(pathFlags, 'path-flags', PATH_FLAGS);
    // The preview1 adapter asks for the hash of every entry right after
    // reading it from a stream of this directory (its d_ino). That one
    // question is answered from the listing's batch, as getdents(2) reports
    // d_ino as of the listing; any other goes to the backend.
    const last = this.#lastRead;
    this.#lastRead = undefined;
    if (last && !symlinkFollow && path === last.listing.entries[last.index]?.name) {
      const hash = last.listing.hashAt(last.index);
      if (hash) return hash;
    }
    return this.#at(path, symlinkFollow, (r) => hashOf(this.#statOf(r)));
  }

  /**
   * The metadata hash of this directory's parent while that is inside the
   * mount (the inode of `..` in a preview1 listing); undefined at the mount
   * root. Host-only (a symbol, see PARENT_METADATA_HASH).
   */
  [PARENT_METADATA_HASH](): { lower: bigint; upper: bigint } | undefined {
    const path = this.#dir();
    if (path.length === 0) return undefined;
    const r = resolve(this.#backend(), path.slice(0, -1), SELF, false, this.#mount.directories);
    try {
      return hashOf(this.#backend().stat(r.dir, r.name));
    } finally {
      r.release();
    }
  }

  isSameObject(other: unknown): boolean {
    const that = resource(other, 'other descriptor', Descriptor);
    if (that.#mount.backend !== this.#mount.backend) return false;
    const a = this.metadataHash();
    const b = that.metadataHash();
    return a.lower === b.lower && a.upper === b.upper;
  }

  // --- opening -------------------------------------------------------------------
  openAt(pathFlags: unknown, path: unknown, openFlags: unknown, descriptorFlags: unknown): Descriptor {
    const { symlinkFollow } = flagsOf(pathFlags, 'path-flags', PATH_FLAGS);
    const open = flagsOf(openFlags, 'open-flags', OPEN_FLAGS);
    const asked = flagsOf(descriptorFlags, 'descriptor-flags', DESCRIPTOR_FLAGS);
    this.#dir();
    // A descriptor opened from this one can do at most what this one can. As
    // in wasmtime, a folder opened from a folder keeps its right to change
    // what is below it (mutate-directory is inherited, whatever was asked):
    // the preview1 adapter and wasi-libc ask for it inconsistently.
    if (this.#mount.readOnly && (asked.write || open.create || open.truncate)) throw 'read-only';
    if ((open.create || open.truncate) && !this.#flags.mutateDirectory) throw 'not-permitted';
    if (open.create) namespaceChanges++;
    const flags: DescriptorFlags = {
      read: asked.read,
      write: asked.write,
      mutateDirectory: this.#flags.mutateDirectory,
      fileIntegritySync: asked.fileIntegritySync,
      dataIntegritySync: asked.dataIntegritySync,
      requestedWriteSync: asked.requestedWriteSync,
    };
    if (this.#mount.open.size >= MAX_OPEN_FILES) throw 'insufficient-memory';
    return this.#at(path, symlinkFollow, (r) => {
      const backend = this.#backend();
      if (r.name === null) {
        // The directory the walk ended in (`.`, `a/..`).
        if (open.create && open.exclusive) throw 'exist';
        if (asked.write || open.truncate) throw 'is-directory';
        return this.#child(r, null, flags);
      }
      const info = r.stat === undefined ? statOrNull(backend, r.dir, r.name) : r.stat;
      if (info === null) {
        if (!open.create) throw 'no-entry';
        if (open.directory || r.trailingSlash) throw 'is-directory';
        this.#mount.quota.chargeEntry();
      } else {
        if (open.create && open.exclusive) throw 'exist';
        if (info.type === 'symbolic-link') throw 'loop'; // O_NOFOLLOW on a link
        if (info.type === 'directory') {
          if (asked.write || open.truncate) throw 'is-directory';
          return this.#child(r, r.name, flags);
        }
        if (open.directory || r.trailingSlash) throw 'not-directory';
        if (info.type !== 'regular-file') throw 'not-permitted';
      }
      let file: unknown;
      try {
        file = backend.openFile(r.dir, r.name, {
          read: asked.read,
          write: asked.write,
          create: open.create,
          exclusive: open.create && open.exclusive,
          truncate: open.truncate,
        });
      } catch (err) {
        if (info === null) this.#mount.quota.refundEntry();
        throw err;
      }
      const descriptor = new Descriptor(HOST, this.#mount, null, file, { ...flags, mutateDirectory: false });
      descriptor.#identity = backend.openedStat?.(file);
      this.#mount.open.add(descriptor);
      return descriptor;
    });
  }

  /** A directory descriptor for `name` in `r.dir` (or `r.dir` itself), with its physical path. */
  #child(r: Resolved<unknown>, name: string | null, flags: DescriptorFlags): Descriptor {
    const path = physicalPath(r, name);
    const cache = this.#mount.directories;
    if (cache && name !== null && !cache.has(path)) {
      // Its first use (a listing, an open in it) need not walk from the root:
      // one step from where the walk is now, kept as any walk's would be.
      try {
        cache.giveBack(cache.keep(path, this.#backend().openDirectory(r.dir, name)));
      } catch {
        // Not a directory any more: its first use will say so.
      }
    }
    return new Descriptor(HOST, this.#mount, path, undefined, flags);
  }

  // --- file contents -------------------------------------------------------------
  read(length: unknown, offset: unknown): [Uint8Array, boolean] {
    const want = Math.min(u64Number(length, 'length'), MAX_CHUNK);
    const at = u64Number(offset, 'offset');
    const file = this.#openFile('read');
    const size = Number(this.#backend().fileStat(file).size);
    const buffer = new Uint8Array(readLength(want, size, at));
    const n = buffer.length === 0 ? 0 : this.#backend().read(file, buffer, at);
    return [buffer.subarray(0, n), at + n >= size];
  }

  write(buffer: unknown, offset: unknown): bigint {
    const data = bytes(buffer, 'buffer');
    const at = u64Number(offset, 'offset');
    const file = this.#openFile('write');
    this.#grow(file, at + data.length);
    const n = this.#backend().write(file, data, at);
    this.#synced(file);
    return BigInt(n);
  }

  /** After a write: a descriptor opened with file- or data-integrity sync waits until the data is stored. */
  #synced(file: unknown): void {
    if (this.#flags.fileIntegritySync || this.#flags.dataIntegritySync) this.#backend().sync(file);
  }

  /** Charge the growth of `file` to `end` bytes to the disk quota. */
  #grow(file: unknown, end: number): void {
    const size = Number(this.#backend().fileStat(file).size);
    if (end > Number.MAX_SAFE_INTEGER) throw 'file-too-large';
    this.#mount.quota.charge(end - size);
  }

  // A stream asks its descriptor for the file at every use, never keeps the handle: the guest
  // may drop the descriptor and keep the stream, and the closed fd's number may by then be a
  // file the host (another call, the snapshot store) opened.
  readViaStream(offset: unknown): InputStream {
    let position = u64Number(offset, 'offset');
    this.#openFile('read');
    return inputStream({
      read: (max) => {
        const file = this.#openFile('read');
        const buffer = new Uint8Array(readLength(max, Number(this.#backend().fileStat(file).size), position));
        const n = this.#backend().read(file, buffer, position);
        if (n === 0) return null;
        position += n;
        return buffer.subarray(0, n);
      },
    });
  }

  writeViaStream(offset: unknown): OutputStream {
    let position = u64Number(offset, 'offset');
    this.#openFile('write');
    return outputStream({
      write: (data) => {
        const file = this.#openFile('write');
        this.#grow(file, position + data.length);
        position += this.#backend().write(file, data, position);
        this.#synced(file);
      },
    });
  }

  appendViaStream(): OutputStream {
    this.#openFile('write');
    return outputStream({
      write: (data) => {
        const file = this.#openFile('write');
        const end = Number(this.#backend().fileStat(file).size);
        this.#grow(file, end + data.length);
        this.#backend().write(file, data, end);
        this.#synced(file);
      },
    });
  }

  setSize(size: unknown): void {
    const n = u64Number(size, 'size');
    const file = this.#openFile('write');
    this.#grow(file, n);
    this.#backend().setSize(file, n);
  }

  advise(offset: unknown, length: unknown, advice: unknown): void {
    u64(offset, 'offset');
    u64(length, 'length');
    oneOf(advice, 'advice', ADVICE);
    this.#openFile(null);
  }

  sync(): void {
    if (this.#path === null) this.#backend().sync(this.#openFile(null));
  }

  syncData(): void {
    this.sync();
  }

  setTimes(atime: unknown, mtime: unknown): void {
    const a = newTimestamp(atime, 'data-access-timestamp');
    const m = newTimestamp(mtime, 'data-modification-timestamp');
    if (this.#mount.readOnly) throw 'read-only';
    if (this.#path !== null) return this.#self((r) => this.#backend().setTimes(r.dir, r.name, a, m));
    this.#backend().setFileTimes(this.#openFile(null), a, m);
  }

  // --- directories ---------------------------------------------------------------
  readDirectory(): DirectoryEntryStream {
    return this.#list(false);
  }

  /**
   * A listing, and with `hashes` its entries' metadata hashes taken in the
   * same walk (the preview1 host writes every entry's d_ino). The
   * directory's own hash is taken too (an fstat of the handle the walk
   * holds): the preview1 adapter asks for it (the inode of `.`) right after
   * opening a stream, and metadataHash answers that question from here.
   */
  #list(hashes: boolean): DirectoryEntryStream {
    const backend = this.#backend();
    let own: Hash | undefined;
    let batch: Array<Hash | undefined> | undefined;
    const entries = this.#self((r) => {
      const listed = backend.readDirectory(r.dir);
      listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      own = hashOf(backend.stat(r.dir, r.name));
      if (hashes) batch = entryHashes(backend, r.dir, listed);
      return listed;
    });
    this.#listedOwn = { hash: own!, changes: namespaceChanges };
    const listing = new Listing(entries, () => this.#self((r) => entryHashes(backend, r.dir, entries)), batch);
    return new DirectoryEntryStream(HOST, listing, (index) => {
      this.#lastRead = { listing, index };
    });
  }

  /** For the preview1 host: a stream whose entries' hashes (ENTRIES_WITH_HASHES) were taken with the listing. Host-only. */
  [READ_DIRECTORY_WITH_HASHES](): DirectoryEntryStream {
    return this.#list(true);
  }

  setTimesAt(pathFlags: unknown, path: unknown, atime: unknown, mtime: unknown): void {
    const { symlinkFollow } = flagsOf(pathFlags, 'path-flags', PATH_FLAGS);
    const a = newTimestamp(atime, 'data-access-timestamp');
    const m = newTimestamp(mtime, 'data-modification-timestamp');
    if (this.#mount.readOnly) throw 'read-only';
    // Resolved (and followed, if asked) by Corral; the backend never follows the last name.
    this.#at(path, symlinkFollow, (r) => {
      this.#statOf(r);
      this.#backend().setTimes(r.dir, r.name, a, m);
    });
  }

  createDirectoryAt(path: unknown): void {
    this.#mutable();
    this.#at(path, false, (r) => {
      if (r.name === null) throw 'exist';
      this.#mount.quota.chargeEntry();
      try {
        this.#backend().createDirectory(r.dir, r.name);
      } catch (err) {
        this.#mount.quota.refundEntry();
        throw err;
      }
    });
  }

  removeDirectoryAt(path: unknown): void {
    this.#mutable();
    this.#at(path, false, (r) => {
      // `.`, `..` and the mount root: never removed.
      if (r.name === null) throw 'invalid';
      this.#backend().removeDirectory(r.dir, r.name);
    });
  }

  unlinkFileAt(path: unknown): void {
    this.#mutable();
    this.#at(path, false, (r) => {
      if (r.name === null) throw 'is-directory';
      const info = this.#lstat(r);
      if (info.type === 'directory') throw 'is-directory';
      if (r.trailingSlash) throw 'not-directory';
      this.#backend().unlink(r.dir, r.name);
    });
  }

  renameAt(oldPath: unknown, newDescriptor: unknown, newPath: unknown): void {
    const target = resource(newDescriptor, 'new descriptor', Descriptor);
    this.#mutable();
    target.#mutable();
    if (target.#mount.backend !== this.#mount.backend) throw 'cross-device';
    this.#at(oldPath, false, (from) => {
      if (from.name === null) throw 'busy';
      const info = this.#lstat(from);
      target.#at(newPath, false, (to) => {
        if (to.name === null) throw 'busy';
        if ((from.trailingSlash || to.trailingSlash) && info.type !== 'directory') throw 'not-directory';
        // A relative symlink means something else one folder up: moving it (or a folder holding
        // it) higher must not leave a link that leads out of the mount for the host to follow.
        if (info.type === 'symbolic-link') this.#linkMayMove(from.dir, from.name!, from.depth, to.depth);
        else if (info.type === 'directory' && to.depth !== from.depth)
          this.#linksMayMove(from.dir, from.name!, from.depth + 1, to.depth + 1);
        this.#backend().rename(from.dir, from.name!, to.dir, to.name);
      });
    });
  }

  symlinkAt(oldPath: unknown, newPath: unknown): void {
    const linkTarget = string(oldPath, 'symlink target');
    this.#mutable();
    checkLinkTarget(linkTarget);
    this.#at(newPath, false, (r) => {
      if (r.name === null) throw 'exist';
      if (r.trailingSlash) {
        this.#backend().stat(r.dir, r.name); // 'no-entry' when missing
        throw 'exist';
      }
      // A link a tool makes may only point down from where it sits: relative,
      // without `..`. Wherever it (or a folder holding it) is moved later, by
      // this call or a concurrent one, it still leads inside the mount, for
      // Corral and for the host's own tools that follow it.
      if (!descendsOnly(linkTarget)) throw 'not-permitted';
      this.#mount.quota.chargeEntry();
      try {
        this.#backend().symlink(r.dir, r.name, linkTarget);
      } catch (err) {
        this.#mount.quota.refundEntry();
        throw err;
      }
    });
  }

  readlinkAt(path: unknown): string {
    return this.#at(path, false, (r) => {
      if (r.name === null) throw 'invalid';
      return visibleTarget(this.#backend(), this.#backend().readlink(r.dir, r.name), r.depth);
    });
  }

  linkAt(oldPathFlags: unknown, oldPath: unknown, newDescriptor: unknown, newPath: unknown): void {
    const { symlinkFollow } = flagsOf(oldPathFlags, 'path-flags', PATH_FLAGS);
    const target = resource(newDescriptor, 'new descriptor', Descriptor);
    this.#mutable();
    target.#mutable();
    if (target.#mount.backend !== this.#mount.backend) throw 'cross-device';
    this.#at(oldPath, symlinkFollow, (from) => {
      if (from.name === null) throw 'not-permitted';
      const info = this.#statOf(from);
      if (info.type === 'directory') throw 'not-permitted';
      target.#at(newPath, false, (to) => {
        if (to.name === null) throw 'exist';
        if (to.trailingSlash) {
          this.#backend().stat(to.dir, to.name); // 'no-entry' when missing
          throw 'exist';
        }
        if (info.type === 'symbolic-link') this.#linkMayMove(from.dir, from.name!, from.depth, to.depth);
        this.#mount.quota.chargeEntry();
        try {
          this.#backend().link(from.dir, from.name!, to.dir, to.name);
        } catch (err) {
          this.#mount.quota.refundEntry();
          throw err;
        }
      });
    });
  }

  /**
   * Refuse to move the symlink `name` of `dir` from a folder `from` levels
   * below the root to one `to` levels below if it would lead out there, or
   * if it leads out already (moved down, it would lead somewhere else).
   * That a link already leads out from where it is is no licence: moved up,
   * a relative link leads somewhere else, and a link that leads out of this
   * mount may lead inside another mount that holds this one (two nested
   * mounts of one folder), so moving it up would lead out of both.
   */
  #linkMayMove(dir: unknown, name: string, from: number, to: number): void {
    if (to === from) return;
    const target = this.#backend().readlink(dir, name);
    // An absolute target means the same wherever the link sits.
    if (target.startsWith('/')) return;
    if (to < from && !staysInside(target, to)) throw 'not-permitted';
    // Moved down, a link the host made to lead out leads somewhere else: to
    // another place outside (a dangling `../../x` from the root becomes the
    // mount's sibling `x`, for the host to follow), or to one that reads as
    // inside, where readlink would show the guest the outside names it holds.
    if (to > from && !staysInside(target, from)) throw 'not-permitted';
  }

  /**
   * Before the folder `name` of `dir` moves up or down (its entries from `from`
   * levels below the root to `to`), check the same for every symlink in it.
   * A folder too big or too deep to check (MAX_MOVE_SCAN entries,
   * MAX_MOVE_DEPTH levels) keeps its depth.
   */
  #linksMayMove(dir: unknown, name: string, from: number, to: number): void {
    const backend = this.#backend();
    let budget = MAX_MOVE_SCAN;
    const scan = (parent: unknown, folder: string, levels: number): void => {
      if (levels >= MAX_MOVE_DEPTH) throw 'not-permitted';
      const handle = backend.openDirectory(parent, folder);
      try {
        for (const entry of backend.readDirectory(handle)) {
          if (--budget < 0) throw 'not-permitted';
          if (entry.type === 'symbolic-link') this.#linkMayMove(handle, entry.name, from + levels, to + levels);
          else if (entry.type === 'directory') scan(handle, entry.name, levels + 1);
        }
      } finally {
        backend.releaseDirectory(handle);
      }
    };
    scan(dir, name, 0);
  }

  // --- locks: advisory, nothing else shares these files within a call -------------
  lockShared(): void {}
  lockExclusive(): void {}
  tryLockShared(): boolean {
    return true;
  }
  tryLockExclusive(): boolean {
    return true;
  }
  unlock(): void {}

  /** The guest dropped this descriptor: close its file. */
  [DISPOSE](): void {
    this.close();
  }

  /** Close the file this descriptor holds (the call ending closes every one). */
  close(): void {
    if (this.#file === undefined) return;
    const file = this.#file;
    this.#file = undefined;
    this.#mount.open.delete(this);
    this.#backend().closeFile(file);
  }
}

/** wasi:filesystem `directory-entry-stream`: a listing taken when the stream was opened. */
export class DirectoryEntryStream {
  readonly #listing: Listing;
  readonly #onRead: (index: number) => void;
  #next = 0;

  constructor(token: typeof HOST, listing: Listing, onRead: (index: number) => void) {
    if (token !== HOST) throw new GuestTypeError('directory streams are opened by the host');
    this.#listing = listing;
    this.#onRead = onRead;
  }

  readDirectoryEntry(): { name: string; type: string } | undefined {
    const index = this.#next;
    const entry = this.#listing.entries[index];
    if (!entry) return undefined;
    this.#next++;
    this.#onRead(index);
    return { type: entry.type, name: entry.name };
  }

  /**
   * Every entry with its metadata hash (not followed), for the preview1
   * host's d_ino: from the listing's batch while names are unchanged, else
   * undefined for the caller to ask the descriptor. Host-only.
   */
  [ENTRIES_WITH_HASHES](): Array<{ name: string; type: string; hash: () => Hash | undefined }> {
    const listing = this.#listing;
    return listing.entries.map((entry, index) => ({ name: entry.name, type: entry.type, hash: () => listing.hashAt(index) }));
  }
}

for (const type of [Descriptor, DirectoryEntryStream]) {
  Object.setPrototypeOf(type.prototype, null);
  Object.setPrototypeOf(type, null);
}

/** A mount's root directory as a descriptor. */
export function rootDescriptor(mount: Mount): Descriptor {
  const flags = { read: true, write: !mount.readOnly, mutateDirectory: !mount.readOnly };
  return new Descriptor(HOST, mount, [], undefined, flags);
}

/**
 * wasi:filesystem/types `filesystem-error-code`: the error code behind a
 * stream error, when a filesystem operation caused it.
 */
export function filesystemErrorCode(err: unknown): string | undefined {
  return resource(err, 'error', IoError).code;
}

/**
 * How many bytes to ask a file for: what the guest wants, but no more than
 * the file holds past `at` (a buffer is zeroed when made, and guests ask for
 * a lot). Files that report size 0 but have contents (procfs under a mount
 * of `/`) are read 4 KiB at a time.
 */
function readLength(want: number, size: number, at: number): number {
  return Math.min(want, Math.max(size - at, 4096));
}

/** The entry `name` in `dir` (not followed), or null when there is none. */
function statOrNull(backend: FsBackend<unknown, unknown>, dir: unknown, name: string): EntryStat | null {
  try {
    return backend.stat(dir, name);
  } catch (err) {
    if (err !== 'no-entry') throw err;
    return null;
  }
}

/** The physical path from the mount root of `name` in `r.dir`, or of `r.dir` itself. */
function physicalPath(r: Resolved<unknown>, name: string | null): string[] {
  return name === null ? [...r.path] : [...r.path, name];
}

function toStat(info: EntryStat): DescriptorStat {
  return {
    type: info.type,
    linkCount: info.nlink,
    size: info.size,
    dataAccessTimestamp: datetime(info.atimeNs),
    dataModificationTimestamp: datetime(info.mtimeNs),
    statusChangeTimestamp: datetime(info.ctimeNs),
  };
}

function datetime(ns: bigint): { seconds: bigint; nanoseconds: number } {
  const t = ns < 0n ? 0n : ns;
  return { seconds: t / 1_000_000_000n, nanoseconds: Number(t % 1_000_000_000n) };
}

/** The metadata hash of what `info` describes: its dev and ino, hashed under a secret key (metadata-hash.ts). */
function hashOf(info: EntryStat): Hash {
  return metadataHash(info.dev, info.ino);
}
