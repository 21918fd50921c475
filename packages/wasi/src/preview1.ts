/**
 * A direct WASI preview1 host: runs a `wasi_snapshot_preview1` core module
 * (a wasi-libc command such as `wasm-tools/*\/*.module.wasm`) with no
 * component glue in between. It is the fast path: one compiled module per
 * tool and memory cap, and per call a fresh instance plus a small fd table.
 *
 * Files go through the same descriptors as components (vfs.ts): each mount
 * is a preopened directory implementing preview2-shim's
 * BrowserFilesystemDescriptor, which throws wasi:filesystem `error-code`
 * strings; this file keeps the per-fd state preview1 needs (offsets, rights,
 * flags, directory cookies) and maps those codes to preview1 errnos.
 * Containment (`..`, symlinks out of a mount) is the descriptors' job;
 * absolute paths are refused here, before a descriptor sees them.
 *
 * There is no network and no socket: the `sock_*` calls answer EBADF or
 * ENOTSOCK, and a call that tried to accept, receive or send carries
 * E_NETWORK_BLOCKED; an import this host does not provide is refused when
 * the module is loaded.
 *
 * Layouts and numbers below are from the preview1 witx
 * (WebAssembly/WASI legacy/preview1/docs.md); comments quote it.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { ExecutionResult } from '@corral/core';
import type { RunRequest, RunnerOptions } from './run.js';
import { capModule, WASM_PAGE_BYTES } from './limits.js';
import type { HostDirectoryOpener, OpfsDirectoryOpener } from './vfs.js';
import { MAX_OPEN_FILES, type Descriptor, type DescriptorStat } from './fs/filesystem.js';
import { MAX_CHUNK, MAX_POLL, bytesSource, monotonicNs, realtimeNs, sleepNs, type ByteSource } from './io.js';
import { ProcExit, classify, finishRun, type RunEnd } from './outcome.js';
import { openCall } from './call.js';

type NewTimestamp = { tag: 'no-change' } | { tag: 'now' } | { tag: 'timestamp'; val: { seconds: bigint; nanoseconds: number } };

/** Preopened directories: [descriptor, guest path], in the order the guest sees them (fd 3, 4, …). */
export type Preopens = Array<[Descriptor, string]>;

/** Where a stdio stream goes; CappedSink is one. A sink may throw to stop the guest. */
export interface ByteSink {
  write(bytes: Uint8Array): void;
}

// --- errno ---------------------------------------------------------------------
const E = {
  SUCCESS: 0,
  ACCES: 2,
  AGAIN: 6,
  BADF: 8,
  EXIST: 20,
  FAULT: 21,
  FBIG: 22,
  ILSEQ: 25,
  INVAL: 28,
  IO: 29,
  ISDIR: 31,
  MFILE: 33,
  NAMETOOLONG: 37,
  NOENT: 44,
  NOSYS: 52,
  NOTDIR: 54,
  NOTSOCK: 57,
  NOTSUP: 58,
  OVERFLOW: 61,
  SPIPE: 70,
  NOTCAPABLE: 76,
} as const;

/** wasi:filesystem `error-code` → preview1 `errno`. */
const FS_ERRNO: Record<string, number> = {
  access: 2,
  'would-block': 6,
  already: 7,
  'bad-descriptor': 8,
  busy: 10,
  deadlock: 16,
  quota: 19,
  exist: 20,
  'file-too-large': 22,
  'illegal-byte-sequence': 25,
  'in-progress': 26,
  interrupted: 27,
  invalid: 28,
  io: 29,
  'is-directory': 31,
  loop: 32,
  'too-many-links': 34,
  'message-size': 35,
  'name-too-long': 37,
  'no-device': 43,
  'no-entry': 44,
  'no-lock': 46,
  'insufficient-memory': 48,
  'insufficient-space': 51,
  'not-directory': 54,
  'not-empty': 55,
  'not-recoverable': 56,
  unsupported: 58,
  'no-tty': 59,
  'no-such-device': 60,
  overflow: 61,
  'not-permitted': 63,
  pipe: 64,
  'read-only': 69,
  'invalid-seek': 70,
  'text-file-busy': 74,
  'cross-device': 75,
};

/** Thrown inside a syscall to return an errno to the guest. */
class Errno {
  constructor(readonly code: number) {}
}

// --- filetype, rights, flags ------------------------------------------------------
const FILETYPE = { UNKNOWN: 0, BLOCK_DEVICE: 1, CHARACTER_DEVICE: 2, DIRECTORY: 3, REGULAR_FILE: 4, SOCKET_STREAM: 6, SYMBOLIC_LINK: 7 };

const DESCRIPTOR_FILETYPE: Record<string, number> = {
  unknown: FILETYPE.UNKNOWN,
  'block-device': FILETYPE.BLOCK_DEVICE,
  'character-device': FILETYPE.CHARACTER_DEVICE,
  directory: FILETYPE.DIRECTORY,
  // wasi-libc reads SOCKET_STREAM as DT_FIFO.
  fifo: FILETYPE.SOCKET_STREAM,
  'symbolic-link': FILETYPE.SYMBOLIC_LINK,
  'regular-file': FILETYPE.REGULAR_FILE,
  socket: FILETYPE.SOCKET_STREAM,
};

const bit = (n: number) => 1n << BigInt(n);
/** `rights`: "File descriptor rights, determining which actions may be performed." Bits 0–29. */
const R = {
  FD_DATASYNC: bit(0),
  FD_READ: bit(1),
  FD_SEEK: bit(2),
  FD_FDSTAT_SET_FLAGS: bit(3),
  FD_SYNC: bit(4),
  FD_TELL: bit(5),
  FD_WRITE: bit(6),
  FD_ADVISE: bit(7),
  FD_ALLOCATE: bit(8),
  PATH_CREATE_DIRECTORY: bit(9),
  PATH_CREATE_FILE: bit(10),
  PATH_LINK_SOURCE: bit(11),
  PATH_LINK_TARGET: bit(12),
  PATH_OPEN: bit(13),
  FD_READDIR: bit(14),
  PATH_READLINK: bit(15),
  PATH_RENAME_SOURCE: bit(16),
  PATH_RENAME_TARGET: bit(17),
  PATH_FILESTAT_GET: bit(18),
  PATH_FILESTAT_SET_SIZE: bit(19),
  PATH_FILESTAT_SET_TIMES: bit(20),
  FD_FILESTAT_GET: bit(21),
  FD_FILESTAT_SET_SIZE: bit(22),
  FD_FILESTAT_SET_TIMES: bit(23),
  PATH_SYMLINK: bit(24),
  PATH_REMOVE_DIRECTORY: bit(25),
  PATH_UNLINK_FILE: bit(26),
  POLL_FD_READWRITE: bit(27),
  SOCK_SHUTDOWN: bit(28),
  SOCK_ACCEPT: bit(29),
};
const ALL_RIGHTS = bit(30) - 1n;
/** What a regular file can do. */
const FILE_RIGHTS =
  R.FD_DATASYNC | R.FD_READ | R.FD_SEEK | R.FD_FDSTAT_SET_FLAGS | R.FD_SYNC | R.FD_TELL | R.FD_WRITE | R.FD_ADVISE |
  R.FD_ALLOCATE | R.FD_FILESTAT_GET | R.FD_FILESTAT_SET_SIZE | R.FD_FILESTAT_SET_TIMES | R.POLL_FD_READWRITE;
/** What a directory can do: everything but byte I/O and sockets. */
const DIR_RIGHTS =
  ALL_RIGHTS &
  ~(R.FD_READ | R.FD_SEEK | R.FD_TELL | R.FD_WRITE | R.FD_ADVISE | R.FD_ALLOCATE | R.FD_FILESTAT_SET_SIZE |
    R.POLL_FD_READWRITE | R.SOCK_SHUTDOWN | R.SOCK_ACCEPT);
/** Rights that make a file writable (a descriptor opened with them asks its mount for write access). */
const WRITE_RIGHTS = R.FD_WRITE | R.FD_ALLOCATE | R.FD_FILESTAT_SET_SIZE;
const STDIN_RIGHTS = R.FD_READ | R.FD_FDSTAT_SET_FLAGS | R.FD_FILESTAT_GET | R.POLL_FD_READWRITE;
const STDOUT_RIGHTS = R.FD_WRITE | R.FD_FDSTAT_SET_FLAGS | R.FD_FILESTAT_GET | R.POLL_FD_READWRITE;

/** `fdflags`: append(0) dsync(1) nonblock(2) rsync(3) sync(4). */
const FDFLAG_APPEND = 1;
const FDFLAG_DSYNC = 2;
const FDFLAG_RSYNC = 8;
const FDFLAG_SYNC = 16;
/** Fixed when a file is opened, as fcntl(F_SETFL) leaves O_DSYNC/O_RSYNC/O_SYNC on Linux. */
const FDFLAGS_SYNC = FDFLAG_DSYNC | FDFLAG_RSYNC | FDFLAG_SYNC;
const FDFLAGS_ALL = 0x1f;
/** `oflags`: creat(0) directory(1) excl(2) trunc(3). */
const O_CREAT = 1;
const O_DIRECTORY = 2;
const O_EXCL = 4;
const O_TRUNC = 8;
/** `lookupflags`: symlink_follow(0). */
const LOOKUP_SYMLINK_FOLLOW = 1;
/** `fstflags`: atim(0) atim_now(1) mtim(2) mtim_now(3). */
const FST_ATIM = 1;
const FST_ATIM_NOW = 2;
const FST_MTIM = 4;
const FST_MTIM_NOW = 8;
/** `subclockflags`: subscription_clock_abstime(0). */
const SUBCLOCK_ABSTIME = 1;
const EVENTTYPE_CLOCK = 0;
const EVENTTYPE_FD_READ = 1;
const EVENTTYPE_FD_WRITE = 2;
const ADVICE = ['normal', 'sequential', 'random', 'will-need', 'dont-need', 'no-reuse'] as const;

/** Sizes of the records the calls read and write. */
const DIRENT_SIZE = 24;
const FILESTAT_SIZE = 64;
const SUBSCRIPTION_SIZE = 48;
const EVENT_SIZE = 32;

const MAX_OFFSET = Number.MAX_SAFE_INTEGER;
/** iovecs one read or write may name, as Linux's IOV_MAX: past it, EINVAL (each costs the host an object). */
const MAX_IOVS = 1024;
/** Open fds a call may hold (the filesystem's own cap on open files is MAX_OPEN_FILES, the same): past it, EMFILE. */
const MAX_FDS = MAX_OPEN_FILES;

const utf8 = new TextEncoder();
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

// --- the fd table -----------------------------------------------------------------
interface FdEntry {
  filetype: number;
  /** null for stdio. */
  descriptor: Descriptor | null;
  /** 0, 1 or 2 for stdio, else -1. */
  stdio: number;
  /** The guest path of a preopened directory, encoded (fd_prestat_*). */
  preopen: Uint8Array | null;
  /** `device` reported for files under this fd: the index of the mount it came from, plus one. */
  device: bigint;
  offset: number;
  fdflags: number;
  rights: bigint;
  inheriting: bigint;
  /** fd_readdir's listing, taken when a read starts at cookie 0. */
  listing: DirEntry[] | null;
}

interface DirEntry {
  name: Uint8Array;
  filetype: number;
  /** The name as a string, to look up its inode lazily (null for "." and ".."). */
  lookup: string | null;
}

/** The preview1 functions this host provides: every one wasi-libc imports. */
export const PREVIEW1_FUNCTIONS = [
  'args_get', 'args_sizes_get', 'environ_get', 'environ_sizes_get', 'clock_res_get', 'clock_time_get',
  'fd_advise', 'fd_allocate', 'fd_close', 'fd_datasync', 'fd_fdstat_get', 'fd_fdstat_set_flags', 'fd_fdstat_set_rights',
  'fd_filestat_get', 'fd_filestat_set_size', 'fd_filestat_set_times', 'fd_pread', 'fd_prestat_get', 'fd_prestat_dir_name',
  'fd_pwrite', 'fd_read', 'fd_readdir', 'fd_renumber', 'fd_seek', 'fd_sync', 'fd_tell', 'fd_write',
  'path_create_directory', 'path_filestat_get', 'path_filestat_set_times', 'path_link', 'path_open', 'path_readlink',
  'path_remove_directory', 'path_rename', 'path_symlink', 'path_unlink_file',
  'poll_oneoff', 'proc_exit', 'proc_raise', 'random_get', 'sched_yield',
  'sock_accept', 'sock_recv', 'sock_send', 'sock_shutdown',
] as const;

export type Preview1Function = (typeof PREVIEW1_FUNCTIONS)[number];

export interface Preview1HostOptions {
  args: readonly string[];
  env: Readonly<Record<string, string>>;
  /** Bytes given whole, or a source read as the guest asks (streamed stdin). */
  stdin: Uint8Array | ByteSource;
  stdout: ByteSink;
  stderr: ByteSink;
  /** Which of fds 0, 1, 2 are terminals on the host side. Default: none. */
  terminals?: readonly [boolean, boolean, boolean];
  /** The directories the guest may reach, as fd 3, 4, … */
  preopens: Preopens;
}

/**
 * The `wasi_snapshot_preview1` imports of one instance. Create one per call,
 * pass `imports` as the `wasi_snapshot_preview1` namespace, then `bind` the
 * instance's exported memory before calling `_start`.
 */
export class Preview1Host {
  /** The import namespace: one function per name in PREVIEW1_FUNCTIONS. */
  readonly imports: Record<Preview1Function, (...args: never[]) => unknown>;
  /** The socket calls that move data (accept, recv, send) the guest made, each named once. */
  readonly networkCalls: string[] = [];

  readonly #args: Uint8Array[];
  readonly #env: Uint8Array[];
  readonly #stdin: ByteSource & { remaining?(): number };
  readonly #sinks: [ByteSink, ByteSink];
  readonly #fds: Array<FdEntry | undefined>;
  readonly #startedNs = monotonicNs();
  #memory: WebAssembly.Memory | undefined;
  #buffer: ArrayBufferLike | undefined;
  #u8 = new Uint8Array(0);
  #dv = new DataView(new ArrayBuffer(0));

  constructor(options: Preview1HostOptions) {
    this.#args = options.args.map((a) => utf8.encode(a + '\0'));
    this.#env = Object.entries(options.env).map(([k, v]) => utf8.encode(`${k}=${v}\0`));
    this.#stdin = options.stdin instanceof Uint8Array ? bytesSource(options.stdin) : options.stdin;
    this.#sinks = [options.stdout, options.stderr];
    const stdio = (n: number, rights: bigint): FdEntry => ({
      // A terminal is a CHARACTER_DEVICE, so wasi-libc line-buffers it;
      // captured stdio is not, and is buffered fully.
      filetype: options.terminals?.[n] ? FILETYPE.CHARACTER_DEVICE : FILETYPE.UNKNOWN,
      descriptor: null,
      stdio: n,
      preopen: null,
      device: 0n,
      offset: 0,
      fdflags: n === 0 ? 0 : FDFLAG_APPEND,
      rights,
      inheriting: 0n,
      listing: null,
    });
    this.#fds = [stdio(0, STDIN_RIGHTS), stdio(1, STDOUT_RIGHTS), stdio(2, STDOUT_RIGHTS)];
    options.preopens.forEach(([descriptor, guest], i) => {
      this.#fds.push({
        filetype: FILETYPE.DIRECTORY,
        descriptor,
        stdio: -1,
        preopen: utf8.encode(guest),
        device: BigInt(i + 1),
        offset: 0,
        fdflags: 0,
        rights: DIR_RIGHTS,
        inheriting: ALL_RIGHTS,
        listing: null,
      });
    });

    const imports = {} as Record<Preview1Function, (...args: never[]) => unknown>;
    for (const name of PREVIEW1_FUNCTIONS) {
      const call = this[name] as (...args: unknown[]) => number | void;
      imports[name] = (...args: unknown[]) => {
        this.#refresh(name);
        try {
          return call.apply(this, args);
        } catch (err) {
          return errnoOf(err);
        }
      };
    }
    this.imports = imports;
  }

  /** Give the host the instance's memory (its `memory` export). */
  bind(memory: WebAssembly.Memory): void {
    this.#memory = memory;
  }

  // --- memory ----------------------------------------------------------------
  /** A grown memory has a new buffer: take fresh views of it. */
  #refresh(call: string): void {
    const memory = this.#memory;
    if (!memory) throw new Error(`the module called ${call} before its memory was bound`);
    const buffer = memory.buffer;
    if (buffer !== this.#buffer) {
      this.#buffer = buffer;
      this.#u8 = new Uint8Array(buffer);
      this.#dv = new DataView(buffer);
    }
  }

  /** A view of guest memory; EFAULT when the range is outside it. */
  #bytes(ptr: number, len: number): Uint8Array {
    ptr >>>= 0;
    len >>>= 0;
    if (ptr + len > this.#u8.length) throw new Errno(E.FAULT);
    return this.#u8.subarray(ptr, ptr + len);
  }

  #u32(ptr: number, value: number): void {
    this.#dv.setUint32(ptr >>> 0, value, true);
  }

  #u64(ptr: number, value: bigint): void {
    this.#dv.setBigUint64(ptr >>> 0, value, true);
  }

  /** An `iovec_array`/`ciovec_array` as views of guest memory. */
  #iovs(ptr: number, count: number): Uint8Array[] {
    if (count >>> 0 > MAX_IOVS) throw new Errno(E.INVAL);
    const table = this.#bytes(ptr, (count >>> 0) * 8);
    const dv = this.#dv;
    const out: Uint8Array[] = [];
    for (let at = table.byteOffset; at < table.byteOffset + table.length; at += 8) {
      out.push(this.#bytes(dv.getUint32(at, true), dv.getUint32(at + 4, true)));
    }
    return out;
  }

  /**
   * A path argument: UTF-8, no NUL, relative. Absolute paths are refused
   * here, whatever the descriptor would do with them.
   */
  #path(ptr: number, len: number): string {
    let path: string;
    try {
      path = utf8Strict.decode(this.#bytes(ptr, len));
    } catch (err) {
      if (err instanceof Errno) throw err;
      throw new Errno(E.ILSEQ);
    }
    if (path.includes('\0')) throw new Errno(E.INVAL);
    if (path.startsWith('/')) throw new Errno(E.NOTCAPABLE);
    if (path === '') throw new Errno(E.NOENT);
    return path;
  }

  // --- fds ---------------------------------------------------------------------
  #fd(fd: number, rights: bigint): FdEntry {
    const entry = this.#fds[fd];
    if (!entry) throw new Errno(E.BADF);
    if ((entry.rights & rights) !== rights) throw new Errno(E.NOTCAPABLE);
    return entry;
  }

  /** A directory fd with `rights`, and its descriptor. */
  #dir(fd: number, rights: bigint): FdEntry & { descriptor: Descriptor } {
    const entry = this.#fds[fd];
    if (!entry) throw new Errno(E.BADF);
    if (!entry.descriptor || entry.filetype !== FILETYPE.DIRECTORY) throw new Errno(E.NOTDIR);
    if ((entry.rights & rights) !== rights) throw new Errno(E.NOTCAPABLE);
    return entry as FdEntry & { descriptor: Descriptor };
  }

  /** A file fd (not stdio, not a directory) with `rights`. */
  #file(fd: number, rights: bigint): FdEntry & { descriptor: Descriptor } {
    const entry = this.#fds[fd];
    if (!entry) throw new Errno(E.BADF);
    if (entry.filetype === FILETYPE.DIRECTORY) throw new Errno(E.ISDIR);
    if (!entry.descriptor) throw new Errno(E.SPIPE);
    if ((entry.rights & rights) !== rights) throw new Errno(E.NOTCAPABLE);
    return entry as FdEntry & { descriptor: Descriptor };
  }

  /** The lowest free fd, or EMFILE: asked before a file is opened, so a full table opens nothing. */
  #freeFd(): number {
    let fd = 3;
    while (this.#fds[fd]) fd++;
    if (fd >= MAX_FDS) throw new Errno(E.MFILE);
    return fd;
  }

  #writeFilestat(ptr: number, device: bigint, stat: DescriptorStat, inode: bigint): void {
    this.#bytes(ptr, FILESTAT_SIZE).fill(0);
    const dv = this.#dv;
    ptr >>>= 0;
    // filestat: dev@0 ino@8 filetype@16 nlink@24 size@32 atim@40 mtim@48 ctim@56
    dv.setBigUint64(ptr, device, true);
    dv.setBigUint64(ptr + 8, inode, true);
    dv.setUint8(ptr + 16, DESCRIPTOR_FILETYPE[stat.type] ?? FILETYPE.UNKNOWN);
    dv.setBigUint64(ptr + 24, BigInt(stat.linkCount), true);
    dv.setBigUint64(ptr + 32, BigInt(stat.size), true);
    dv.setBigUint64(ptr + 40, datetimeNs(stat.dataAccessTimestamp), true);
    dv.setBigUint64(ptr + 48, datetimeNs(stat.dataModificationTimestamp), true);
    dv.setBigUint64(ptr + 56, datetimeNs(stat.statusChangeTimestamp), true);
  }

  // --- args, environment, clocks, random -----------------------------------------
  args_get(argv: number, buf: number): number {
    return this.#strings(this.#args, argv, buf);
  }

  args_sizes_get(countPtr: number, sizePtr: number): number {
    return this.#sizes(this.#args, countPtr, sizePtr);
  }

  environ_get(environ: number, buf: number): number {
    return this.#strings(this.#env, environ, buf);
  }

  environ_sizes_get(countPtr: number, sizePtr: number): number {
    return this.#sizes(this.#env, countPtr, sizePtr);
  }

  #strings(strings: Uint8Array[], pointers: number, buf: number): number {
    let at = buf >>> 0;
    const table = this.#bytes(pointers, strings.length * 4).byteOffset;
    strings.forEach((s, i) => {
      this.#bytes(at, s.length).set(s);
      this.#u32(table + i * 4, at);
      at += s.length;
    });
    return E.SUCCESS;
  }

  #sizes(strings: Uint8Array[], countPtr: number, sizePtr: number): number {
    this.#u32(countPtr, strings.length);
    this.#u32(sizePtr, strings.reduce((n, s) => n + s.length, 0));
    return E.SUCCESS;
  }

  clock_res_get(id: number, resultPtr: number): number {
    if (id < 0 || id > 3) return E.INVAL;
    this.#u64(resultPtr, 1000n);
    return E.SUCCESS;
  }

  clock_time_get(id: number, _precision: bigint, resultPtr: number): number {
    const now = this.#now(id);
    if (now === undefined) return E.INVAL;
    this.#u64(resultPtr, now);
    return E.SUCCESS;
  }

  /** realtime(0), monotonic(1); the CPU-time clocks (2, 3) count from the start of the call. */
  #now(id: number): bigint | undefined {
    switch (id) {
      case 0:
        return realtimeNs();
      case 1:
        return monotonicNs();
      case 2:
      case 3:
        return monotonicNs() - this.#startedNs;
      default:
        return undefined;
    }
  }

  random_get(buf: number, len: number): number {
    const target = this.#bytes(buf, len);
    // getRandomValues fills at most 65536 bytes a call.
    for (let at = 0; at < target.length; at += 65536) crypto.getRandomValues(target.subarray(at, at + 65536));
    return E.SUCCESS;
  }

  // --- byte I/O ------------------------------------------------------------------
  fd_read(fd: number, iovs: number, count: number, resultPtr: number): number {
    const entry = this.#fds[fd];
    if (entry?.filetype === FILETYPE.DIRECTORY) return E.ISDIR;
    const f = this.#fd(fd, R.FD_READ);
    const views = this.#iovs(iovs, count);
    const n = f.descriptor ? this.#readFile(f.descriptor, views, f.offset) : this.#readStdin(f, views);
    if (f.descriptor) f.offset += n;
    this.#u32(resultPtr, n);
    return E.SUCCESS;
  }

  fd_pread(fd: number, iovs: number, count: number, offset: bigint, resultPtr: number): number {
    const f = this.#file(fd, R.FD_READ | R.FD_SEEK);
    const n = this.#readFile(f.descriptor, this.#iovs(iovs, count), toOffset(offset));
    this.#u32(resultPtr, n);
    return E.SUCCESS;
  }

  #readStdin(f: FdEntry, views: Uint8Array[]): number {
    if (f.stdio !== 0) return 0;
    let n = 0;
    for (const view of views) {
      if (view.length === 0) continue;
      // A streamed source may return fewer bytes than asked: stop there, as a pipe would.
      const chunk = this.#stdin.read(view.length);
      if (chunk === null) break;
      view.set(chunk.subarray(0, view.length));
      n += Math.min(chunk.length, view.length);
      if (chunk.length < view.length) break;
    }
    return n;
  }

  #readFile(descriptor: Descriptor, views: Uint8Array[], offset: number): number {
    const total = views.reduce((n, v) => n + v.length, 0);
    if (total === 0) return 0;
    const [data] = descriptor.read(BigInt(total), BigInt(offset));
    let at = 0;
    for (const view of views) {
      if (at >= data.length) break;
      const chunk = data.subarray(at, at + view.length);
      view.set(chunk);
      at += chunk.length;
    }
    return at;
  }

  fd_write(fd: number, iovs: number, count: number, resultPtr: number): number {
    const entry = this.#fds[fd];
    if (entry?.filetype === FILETYPE.DIRECTORY) return E.ISDIR;
    const f = this.#fd(fd, R.FD_WRITE);
    const views = this.#iovs(iovs, count);
    let n = 0;
    if (f.descriptor) {
      const offset = f.fdflags & FDFLAG_APPEND ? Number(f.descriptor.stat().size) : f.offset;
      n = this.#writeFile(f.descriptor, views, offset);
      f.offset = offset + n;
    } else if (f.stdio > 0) {
      const sink = this.#sinks[f.stdio - 1]!;
      // Count first: a sink that stops the guest (output cap) throws from write.
      for (const view of views) n += view.length;
      for (const view of views) if (view.length > 0) sink.write(view);
    } else {
      return E.BADF;
    }
    this.#u32(resultPtr, n);
    return E.SUCCESS;
  }

  fd_pwrite(fd: number, iovs: number, count: number, offset: bigint, resultPtr: number): number {
    const f = this.#file(fd, R.FD_WRITE | R.FD_SEEK);
    this.#u32(resultPtr, this.#writeFile(f.descriptor, this.#iovs(iovs, count), toOffset(offset)));
    return E.SUCCESS;
  }

  /**
   * Write at most MAX_CHUNK bytes (a short write, as POSIX allows and
   * wasi-libc handles): iovecs may all name the same memory, so what they add
   * up to is not bounded by the guest's memory, and it is gathered here
   * before the disk quota can refuse it.
   */
  #writeFile(descriptor: Descriptor, views: Uint8Array[], offset: number): number {
    const data = concat(views, MAX_CHUNK);
    if (data.length === 0) return 0;
    if (offset + data.length > MAX_OFFSET) throw new Errno(E.FBIG);
    return Number(descriptor.write(data, BigInt(offset)));
  }

  fd_seek(fd: number, delta: bigint, whence: number, resultPtr: number): number {
    const entry = this.#fds[fd];
    if (entry && !entry.descriptor) return E.SPIPE;
    const f = this.#fd(fd, whence === 1 && delta === 0n ? R.FD_TELL : R.FD_SEEK);
    // whence: set(0) cur(1) end(2)
    let base: number;
    if (whence === 0) base = 0;
    else if (whence === 1) base = f.offset;
    else if (whence === 2) base = Number(f.descriptor!.stat().size);
    else return E.INVAL;
    const target = BigInt(base) + delta;
    if (target < 0n) return E.INVAL;
    if (target > BigInt(MAX_OFFSET)) return E.OVERFLOW;
    f.offset = Number(target);
    this.#u64(resultPtr, target);
    return E.SUCCESS;
  }

  fd_tell(fd: number, resultPtr: number): number {
    const entry = this.#fds[fd];
    if (entry && !entry.descriptor) return E.SPIPE;
    this.#u64(resultPtr, BigInt(this.#fd(fd, R.FD_TELL).offset));
    return E.SUCCESS;
  }

  // --- fd state ------------------------------------------------------------------
  fd_close(fd: number): number {
    const entry = this.#fds[fd];
    if (!entry) return E.BADF;
    this.#fds[fd] = undefined;
    // Frees the host file it held (directories hold nothing).
    entry.descriptor?.close();
    return E.SUCCESS;
  }

  /**
   * Move `from` onto `to`, closing what `to` held. Both must be open: the
   * official suite and wasmtime answer EBADF for a free `to` (only jco's
   * preview1 adapter allows it, and yosys's ABC step relies on that).
   */
  fd_renumber(from: number, to: number): number {
    const entry = this.#fds[from >>> 0];
    const replaced = this.#fds[to >>> 0];
    if (!entry || !replaced) return E.BADF;
    if (from === to) return E.SUCCESS;
    this.#fds[to >>> 0] = entry;
    this.#fds[from >>> 0] = undefined;
    replaced.descriptor?.close();
    return E.SUCCESS;
  }

  fd_fdstat_get(fd: number, ptr: number): number {
    const f = this.#fd(fd, 0n);
    // fdstat: fs_filetype@0 fs_flags@2 fs_rights_base@8 fs_rights_inheriting@16
    this.#bytes(ptr, 24).fill(0);
    this.#dv.setUint8(ptr >>> 0, f.filetype);
    this.#dv.setUint16((ptr >>> 0) + 2, f.fdflags, true);
    this.#u64((ptr >>> 0) + 8, f.rights);
    this.#u64((ptr >>> 0) + 16, f.inheriting);
    return E.SUCCESS;
  }

  fd_fdstat_set_flags(fd: number, flags: number): number {
    const f = this.#fd(fd, R.FD_FDSTAT_SET_FLAGS);
    if (flags & ~FDFLAGS_ALL) return E.INVAL;
    // The sync flags belong to the open file (its writes are synced or not); append and nonblock may change.
    f.fdflags = (f.fdflags & FDFLAGS_SYNC) | (flags & ~FDFLAGS_SYNC);
    return E.SUCCESS;
  }

  /** "This can only be used to remove rights." */
  fd_fdstat_set_rights(fd: number, base: bigint, inheriting: bigint): number {
    const f = this.#fd(fd, 0n);
    if ((base & ~f.rights) !== 0n || (inheriting & ~f.inheriting) !== 0n) return E.NOTCAPABLE;
    f.rights = base;
    f.inheriting = inheriting;
    return E.SUCCESS;
  }

  fd_filestat_get(fd: number, ptr: number): number {
    const f = this.#fd(fd, R.FD_FILESTAT_GET);
    if (!f.descriptor) {
      this.#bytes(ptr, FILESTAT_SIZE).fill(0);
      this.#dv.setUint8((ptr >>> 0) + 16, f.filetype);
      return E.SUCCESS;
    }
    this.#writeFilestat(ptr, f.device, f.descriptor.stat(), inodeOf(() => f.descriptor!.metadataHash()));
    return E.SUCCESS;
  }

  fd_filestat_set_size(fd: number, size: bigint): number {
    const f = this.#file(fd, R.FD_FILESTAT_SET_SIZE);
    if (size < 0n) return E.INVAL;
    if (size > BigInt(MAX_OFFSET)) return E.FBIG;
    f.descriptor.setSize(size);
    return E.SUCCESS;
  }

  fd_filestat_set_times(fd: number, atim: bigint, mtim: bigint, fstFlags: number): number {
    const f = this.#fd(fd, R.FD_FILESTAT_SET_TIMES);
    if (!f.descriptor) return E.BADF;
    const [access, modification] = newTimestamps(atim, mtim, fstFlags);
    f.descriptor.setTimes(access, modification);
    return E.SUCCESS;
  }

  fd_advise(fd: number, offset: bigint, len: bigint, advice: number): number {
    const f = this.#file(fd, R.FD_ADVISE);
    const name = ADVICE[advice];
    if (!name || offset < 0n || len < 0n) return E.INVAL;
    f.descriptor.advise(offset, len, name);
    return E.SUCCESS;
  }

  fd_allocate(fd: number, offset: bigint, len: bigint): number {
    const f = this.#file(fd, R.FD_ALLOCATE);
    if (offset < 0n || len <= 0n) return E.INVAL;
    const end = offset + len;
    if (end > BigInt(MAX_OFFSET)) return E.FBIG;
    if (end > BigInt(f.descriptor.stat().size)) f.descriptor.setSize(end);
    return E.SUCCESS;
  }

  fd_sync(fd: number): number {
    this.#file(fd, R.FD_SYNC).descriptor.sync();
    return E.SUCCESS;
  }

  fd_datasync(fd: number): number {
    this.#file(fd, R.FD_DATASYNC).descriptor.syncData();
    return E.SUCCESS;
  }

  // --- preopens ------------------------------------------------------------------
  fd_prestat_get(fd: number, ptr: number): number {
    const f = this.#fds[fd];
    if (!f?.preopen) return E.BADF;
    // prestat: tag u8 (dir = 0) @0, prestat_dir.pr_name_len @4
    this.#bytes(ptr, 8).fill(0);
    this.#u32((ptr >>> 0) + 4, f.preopen.length);
    return E.SUCCESS;
  }

  fd_prestat_dir_name(fd: number, ptr: number, len: number): number {
    const f = this.#fds[fd];
    if (!f?.preopen) return E.BADF;
    if (len >>> 0 < f.preopen.length) return E.NAMETOOLONG;
    this.#bytes(ptr, f.preopen.length).set(f.preopen);
    return E.SUCCESS;
  }

  // --- directories and paths --------------------------------------------------------
  fd_readdir(fd: number, buf: number, bufLen: number, cookie: bigint, resultPtr: number): number {
    const f = this.#dir(fd, R.FD_READDIR);
    if (cookie === 0n || !f.listing) f.listing = listDirectory(f.descriptor);
    const out = this.#bytes(buf, bufLen);
    const header = new Uint8Array(DIRENT_SIZE);
    const hv = new DataView(header.buffer);
    let used = 0;
    // The buffer is filled as far as it goes, cutting the last entry short:
    // a full buffer tells the guest there may be more.
    // The cookie is a u64 that reaches JavaScript as a signed i64: 2^63 and up were negative indexes.
    const start = BigInt.asUintN(64, cookie);
    for (let i = Number(start > 0xffffffffn ? 0xffffffffn : start); i < f.listing.length && used < out.length; i++) {
      const entry = f.listing[i]!;
      // dirent: d_next@0 d_ino@8 d_namlen@16 d_type@20
      hv.setBigUint64(0, BigInt(i + 1), true);
      // `.` is the directory itself (its fstat inode), `..` its parent. At
      // a mount's root the parent is outside, so `..` gets the root's own
      // inode, as in wasmtime: an inode of 0 makes wasi-libc's readdir look
      // `..` up, which is refused there, and the whole listing failed
      // (yosys's scandir).
      const ino =
        entry.lookup !== null
          ? inodeOf(() => f.descriptor.metadataHashAt({ symlinkFollow: false }, entry.lookup!))
          : i === 0
            ? inodeOf(() => f.descriptor.metadataHash())
            : inodeOf(() => f.descriptor.parentMetadataHash() ?? f.descriptor.metadataHash());
      hv.setBigUint64(8, ino, true);
      hv.setUint32(16, entry.name.length, true);
      hv.setUint8(20, entry.filetype);
      for (const part of [header, entry.name]) {
        const n = Math.min(part.length, out.length - used);
        out.set(part.subarray(0, n), used);
        used += n;
      }
    }
    this.#u32(resultPtr, used);
    return E.SUCCESS;
  }

  path_open(
    fd: number,
    dirflags: number,
    pathPtr: number,
    pathLen: number,
    oflags: number,
    rightsBase: bigint,
    rightsInheriting: bigint,
    fdflags: number,
    resultPtr: number,
  ): number {
    let needed = R.PATH_OPEN;
    if (oflags & O_CREAT) needed |= R.PATH_CREATE_FILE;
    if (oflags & O_TRUNC) needed |= R.PATH_FILESTAT_SET_SIZE;
    const dir = this.#dir(fd, needed);
    const path = this.#path(pathPtr, pathLen);
    if (oflags & O_CREAT && oflags & O_DIRECTORY) return E.INVAL;
    if (fdflags & ~FDFLAGS_ALL) return E.INVAL;
    const slot = this.#freeFd();
    // "The implementation is allowed to return a file descriptor with fewer
    // rights than specified": never more than the directory passes on.
    const base = rightsBase & dir.inheriting;
    const inheriting = rightsInheriting & dir.inheriting;
    // Write rights ask for write access, on a directory too: opening one for
    // writing is EISDIR, as in POSIX and wasmtime (wasi-libc asks for them
    // only with O_WRONLY or O_RDWR).
    const write = (base & WRITE_RIGHTS) !== 0n || (fdflags & FDFLAG_APPEND) !== 0;
    const opened = dir.descriptor.openAt(
      { symlinkFollow: (dirflags & LOOKUP_SYMLINK_FOLLOW) !== 0 },
      path,
      {
        create: (oflags & O_CREAT) !== 0,
        directory: (oflags & O_DIRECTORY) !== 0,
        exclusive: (oflags & O_EXCL) !== 0,
        truncate: (oflags & O_TRUNC) !== 0,
      },
      {
        read: (base & (R.FD_READ | R.FD_READDIR)) !== 0n,
        write,
        fileIntegritySync: (fdflags & FDFLAG_SYNC) !== 0,
        dataIntegritySync: (fdflags & FDFLAG_DSYNC) !== 0,
        requestedWriteSync: (fdflags & FDFLAG_RSYNC) !== 0,
      },
    );
    // (A directory asked for writing was refused by openAt: EISDIR, as in POSIX.)
    const filetype = DESCRIPTOR_FILETYPE[opened.getType()] ?? FILETYPE.UNKNOWN;
    const isDir = filetype === FILETYPE.DIRECTORY;
    this.#u32(resultPtr, slot);
    this.#fds[slot] = {
      filetype,
      descriptor: opened,
      stdio: -1,
      preopen: null,
      device: dir.device,
      offset: 0,
      fdflags,
      rights: base & (isDir ? DIR_RIGHTS : FILE_RIGHTS),
      inheriting,
      listing: null,
    };
    return E.SUCCESS;
  }

  path_filestat_get(fd: number, flags: number, pathPtr: number, pathLen: number, ptr: number): number {
    const dir = this.#dir(fd, R.PATH_FILESTAT_GET);
    const path = this.#path(pathPtr, pathLen);
    const pathFlags = { symlinkFollow: (flags & LOOKUP_SYMLINK_FOLLOW) !== 0 };
    const stat = dir.descriptor.statAt(pathFlags, path);
    this.#writeFilestat(ptr, dir.device, stat, inodeOf(() => dir.descriptor.metadataHashAt(pathFlags, path)));
    return E.SUCCESS;
  }

  path_filestat_set_times(
    fd: number,
    flags: number,
    pathPtr: number,
    pathLen: number,
    atim: bigint,
    mtim: bigint,
    fstFlags: number,
  ): number {
    const dir = this.#dir(fd, R.PATH_FILESTAT_SET_TIMES);
    const path = this.#path(pathPtr, pathLen);
    const [access, modification] = newTimestamps(atim, mtim, fstFlags);
    dir.descriptor.setTimesAt({ symlinkFollow: (flags & LOOKUP_SYMLINK_FOLLOW) !== 0 }, path, access, modification);
    return E.SUCCESS;
  }

  path_create_directory(fd: number, pathPtr: number, pathLen: number): number {
    const dir = this.#dir(fd, R.PATH_CREATE_DIRECTORY);
    dir.descriptor.createDirectoryAt(this.#path(pathPtr, pathLen));
    return E.SUCCESS;
  }

  path_remove_directory(fd: number, pathPtr: number, pathLen: number): number {
    const dir = this.#dir(fd, R.PATH_REMOVE_DIRECTORY);
    dir.descriptor.removeDirectoryAt(this.#path(pathPtr, pathLen));
    return E.SUCCESS;
  }

  path_unlink_file(fd: number, pathPtr: number, pathLen: number): number {
    const dir = this.#dir(fd, R.PATH_UNLINK_FILE);
    dir.descriptor.unlinkFileAt(this.#path(pathPtr, pathLen));
    return E.SUCCESS;
  }

  path_rename(fd: number, oldPtr: number, oldLen: number, newFd: number, newPtr: number, newLen: number): number {
    const from = this.#dir(fd, R.PATH_RENAME_SOURCE);
    const to = this.#dir(newFd, R.PATH_RENAME_TARGET);
    from.descriptor.renameAt(this.#path(oldPtr, oldLen), to.descriptor, this.#path(newPtr, newLen));
    return E.SUCCESS;
  }

  path_link(oldFd: number, oldFlags: number, oldPtr: number, oldLen: number, newFd: number, newPtr: number, newLen: number): number {
    const from = this.#dir(oldFd, R.PATH_LINK_SOURCE);
    const to = this.#dir(newFd, R.PATH_LINK_TARGET);
    from.descriptor.linkAt(
      { symlinkFollow: (oldFlags & LOOKUP_SYMLINK_FOLLOW) !== 0 },
      this.#path(oldPtr, oldLen),
      to.descriptor,
      this.#path(newPtr, newLen),
    );
    return E.SUCCESS;
  }

  path_readlink(fd: number, pathPtr: number, pathLen: number, buf: number, bufLen: number, resultPtr: number): number {
    const dir = this.#dir(fd, R.PATH_READLINK);
    const target = utf8.encode(dir.descriptor.readlinkAt(this.#path(pathPtr, pathLen)));
    // Like readlink(2): as much as fits, no NUL.
    const n = Math.min(target.length, bufLen >>> 0);
    this.#bytes(buf, n).set(target.subarray(0, n));
    this.#u32(resultPtr, n);
    return E.SUCCESS;
  }

  path_symlink(oldPtr: number, oldLen: number, fd: number, newPtr: number, newLen: number): number {
    const dir = this.#dir(fd, R.PATH_SYMLINK);
    // The link's target is a path too: an absolute one would point outside every mount.
    dir.descriptor.symlinkAt(this.#path(oldPtr, oldLen), this.#path(newPtr, newLen));
    return E.SUCCESS;
  }

  // --- poll, process, scheduling --------------------------------------------------
  /**
   * Clock subscriptions wait (the call blocks, as in any preview1 host);
   * fd subscriptions are always ready: stdin and files never block here.
   */
  poll_oneoff(inPtr: number, outPtr: number, count: number, resultPtr: number): number {
    count >>>= 0;
    // As a component's poll list: each subscription costs the host objects.
    if (count === 0 || count > MAX_POLL) return E.INVAL;
    const subs = this.#bytes(inPtr, count * SUBSCRIPTION_SIZE).byteOffset;
    const events = this.#bytes(outPtr, count * EVENT_SIZE).byteOffset;
    const dv = this.#dv;
    type Ready = { userdata: bigint; error: number; type: number; nbytes: bigint };
    const ready: Ready[] = [];
    const clocks: Array<{ userdata: bigint; remaining: bigint }> = [];
    for (let i = 0; i < count; i++) {
      // subscription: userdata@0, u.tag@8, u contents@16
      const s = subs + i * SUBSCRIPTION_SIZE;
      const userdata = dv.getBigUint64(s, true);
      const type = dv.getUint8(s + 8);
      if (type === EVENTTYPE_CLOCK) {
        // subscription_clock: id@0 timeout@8 precision@16 flags@24
        const now = this.#now(dv.getUint32(s + 16, true));
        if (now === undefined) {
          ready.push({ userdata, error: E.INVAL, type, nbytes: 0n });
          continue;
        }
        const timeout = dv.getBigUint64(s + 24, true);
        const absolute = (dv.getUint16(s + 40, true) & SUBCLOCK_ABSTIME) !== 0;
        clocks.push({ userdata, remaining: absolute ? timeout - now : timeout });
      } else if (type === EVENTTYPE_FD_READ || type === EVENTTYPE_FD_WRITE) {
        const entry = this.#fds[dv.getUint32(s + 16, true)];
        if (!entry) {
          ready.push({ userdata, error: E.BADF, type, nbytes: 0n });
          continue;
        }
        let nbytes = 0n;
        if (type === EVENTTYPE_FD_READ) {
          // A streamed stdin cannot say how much is waiting: 1 says "read it".
          if (entry.stdio === 0) nbytes = BigInt(this.#stdin.remaining?.() ?? 1);
          else if (entry.descriptor && entry.filetype !== FILETYPE.DIRECTORY) {
            nbytes = BigInt(Math.max(0, Number(entry.descriptor.stat().size) - entry.offset));
          }
        }
        ready.push({ userdata, error: E.SUCCESS, type, nbytes });
      } else {
        ready.push({ userdata, error: E.INVAL, type, nbytes: 0n });
      }
    }
    let fired = clocks.filter((c) => c.remaining <= 0n);
    if (ready.length === 0 && fired.length === 0) {
      const soonest = clocks.reduce((min, c) => (c.remaining < min ? c.remaining : min), clocks[0]!.remaining);
      sleepNs(soonest);
      fired = clocks.filter((c) => c.remaining <= soonest);
    }
    const all: Ready[] = [...ready, ...fired.map((c) => ({ userdata: c.userdata, error: E.SUCCESS, type: EVENTTYPE_CLOCK, nbytes: 0n }))];
    this.#u8.fill(0, events, events + all.length * EVENT_SIZE);
    all.forEach((event, i) => {
      // event: userdata@0 error@8 type@10 fd_readwrite.nbytes@16 fd_readwrite.flags@24
      const e = events + i * EVENT_SIZE;
      dv.setBigUint64(e, event.userdata, true);
      dv.setUint16(e + 8, event.error, true);
      dv.setUint8(e + 10, event.type);
      dv.setBigUint64(e + 16, event.nbytes, true);
    });
    this.#u32(resultPtr, all.length);
    return E.SUCCESS;
  }

  proc_exit(code: number): never {
    throw new ProcExit(code >>> 0);
  }

  /** Signals are not part of this sandbox. */
  proc_raise(_signal: number): number {
    return E.NOSYS;
  }

  sched_yield(): number {
    return E.SUCCESS;
  }

  // --- sockets: none exist ---------------------------------------------------------
  // Preview1 has no call that makes a socket; other hosts hand a tool its
  // sockets as preopened fds, and Corral never does. So every fd is either
  // not open (EBADF) or open and not a socket (ENOTSOCK), as `accept`,
  // `recv`, `send` and `shutdown` answer in POSIX. Accepting, receiving and
  // sending are attempts to use a network whatever the fd, and are recorded
  // (the call then ends E_NETWORK_BLOCKED); shutting down moves no data and
  // opens nothing, so it is only answered.
  sock_accept(fd: number): number {
    this.#network('sock_accept');
    return this.#notSocket(fd);
  }

  sock_recv(fd: number): number {
    this.#network('sock_recv');
    return this.#notSocket(fd);
  }

  sock_send(fd: number): number {
    this.#network('sock_send');
    return this.#notSocket(fd);
  }

  sock_shutdown(fd: number): number {
    return this.#notSocket(fd);
  }

  #notSocket(fd: number): number {
    return this.#fds[fd] ? E.NOTSOCK : E.BADF;
  }

  /** Each call is recorded once: a loop of refused sends does not grow the list. */
  #network(call: string): void {
    if (!this.networkCalls.includes(call)) this.networkCalls.push(call);
  }
}

/** The errno a failed syscall returns; anything that is not a syscall error unwinds the guest. */
function errnoOf(err: unknown): number {
  if (err instanceof Errno) return err.code;
  if (typeof err === 'string') return FS_ERRNO[err] ?? E.IO;
  // DataView/TypedArray access outside guest memory.
  if (err instanceof RangeError && !/call stack/i.test(err.message)) return E.FAULT;
  throw err;
}

function toOffset(offset: bigint): number {
  if (offset < 0n || offset > BigInt(MAX_OFFSET)) throw new Errno(E.INVAL);
  return Number(offset);
}

/** The first `max` bytes of `views`, gathered into a copy. */
function concat(views: Uint8Array[], max: number): Uint8Array {
  const out = new Uint8Array(Math.min(max, views.reduce((n, v) => n + v.length, 0)));
  let at = 0;
  for (const view of views) {
    if (at >= out.length) break;
    const part = view.subarray(0, out.length - at);
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** A file's serial number: the lower half of the descriptor's metadata hash (as the preview1 adapter reads it), 0 when it has none. */
function inodeOf(hash: () => { upper: bigint; lower: bigint }): bigint {
  try {
    return BigInt.asUintN(64, hash().lower);
  } catch {
    return 0n;
  }
}

function listDirectory(descriptor: Descriptor): DirEntry[] {
  const entries: DirEntry[] = [
    { name: utf8.encode('.'), filetype: FILETYPE.DIRECTORY, lookup: null },
    { name: utf8.encode('..'), filetype: FILETYPE.DIRECTORY, lookup: null },
  ];
  const stream = descriptor.readDirectory();
  for (let e = stream.readDirectoryEntry(); e; e = stream.readDirectoryEntry()) {
    entries.push({ name: utf8.encode(e.name), filetype: DESCRIPTOR_FILETYPE[e.type] ?? FILETYPE.UNKNOWN, lookup: e.name });
  }
  return entries;
}

function newTimestamps(atim: bigint, mtim: bigint, flags: number): [NewTimestamp, NewTimestamp] {
  const one = (signed: bigint, set: number, now: number): NewTimestamp => {
    // A wasm i64 reaches JavaScript signed; a timestamp is a u64. Read as
    // signed, 2^63 ns and up became negative seconds and nanoseconds, which
    // the filesystem layer's checks answered by trapping the program.
    const value = BigInt.asUintN(64, signed);
    if (flags & set && flags & now) throw new Errno(E.INVAL);
    if (flags & now) return { tag: 'now' };
    if (flags & set) return { tag: 'timestamp', val: { seconds: value / 1_000_000_000n, nanoseconds: Number(value % 1_000_000_000n) } };
    return { tag: 'no-change' };
  };
  return [one(atim, FST_ATIM, FST_ATIM_NOW), one(mtim, FST_MTIM, FST_MTIM_NOW)];
}

function datetimeNs(t: { seconds: bigint; nanoseconds: number } | undefined): bigint {
  return t ? BigInt.asUintN(64, t.seconds * 1_000_000_000n + BigInt(t.nanoseconds)) : 0n;
}

// --- loading ------------------------------------------------------------------------
const PROVIDED = new Set<string>(PREVIEW1_FUNCTIONS);
/** Import names that reach for the network (WASIX sockets, wasi:sockets, wasi:http, resolvers). */
const NETWORK_IMPORT = /sock|http|getaddrinfo|resolve|connect|dns|network/i;

/**
 * Refuse a module this host cannot run, naming what is wrong: an import it
 * does not provide (another module, an unknown function, an imported
 * memory), one that reaches for the network, or a missing `_start` or
 * `memory` export.
 */
export function checkPreview1Module(module: WebAssembly.Module, toolName: string): void {
  const unknown: string[] = [];
  const network: string[] = [];
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.module === 'wasi_snapshot_preview1' && imp.kind === 'function' && PROVIDED.has(imp.name)) continue;
    const label = `${imp.module}.${imp.name}`;
    if (NETWORK_IMPORT.test(imp.module) || NETWORK_IMPORT.test(imp.name)) network.push(label);
    else unknown.push(imp.kind === 'function' ? label : `${label} (${imp.kind})`);
  }
  if (network.length > 0) {
    throw new CorralError(
      ErrorCodes.NETWORK_BLOCKED,
      `${toolName} imports ${network.join(', ')}; Corral tools run without network access.`,
      { imports: network },
    );
  }
  if (unknown.length > 0) {
    const legacy = unknown.some((name) => name.startsWith('wasi_unstable.'));
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${toolName} imports ${unknown.join(', ')}, which Corral's preview1 host does not provide` +
        (legacy
          ? '; it was built for the old wasi_unstable ABI: rebuild it with a current WASI SDK.'
          : '; a preview1 tool may import only wasi_snapshot_preview1 functions.'),
      { imports: unknown },
    );
  }
  const exports = new Map(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind]));
  if (exports.get('_start') !== 'function' || exports.get('memory') !== 'memory') {
    const missing = [exports.get('_start') !== 'function' && '_start', exports.get('memory') !== 'memory' && 'memory'].filter(Boolean);
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${toolName} does not export ${missing.join(' and ')}; Corral runs preview1 modules that are WASI commands (exporting _start and their memory).`,
      { exports: [...exports.keys()] },
    );
  }
}

/** Compile a module with its memory capped, and check it is something this host runs. */
export async function compilePreview1(bytes: Uint8Array, maxPages: number, toolName: string): Promise<WebAssembly.Module> {
  const capped = capModule(bytes, maxPages, toolName);
  let module: WebAssembly.Module;
  try {
    module = await WebAssembly.compile(capped as BufferSource);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName} is not a valid WebAssembly module: ${reason}`, { reason });
  }
  checkPreview1Module(module, toolName);
  return module;
}

/**
 * A fresh instance. Synchronous where the host allows it (workers, Node):
 * about 0.1 ms a call cheaper than awaiting WebAssembly.instantiate. A
 * browser's main thread refuses it with a RangeError; then the async path.
 */
async function instantiate(module: WebAssembly.Module, imports: WebAssembly.Imports): Promise<WebAssembly.Instance> {
  if (syncInstantiate) {
    try {
      return new WebAssembly.Instance(module, imports);
    } catch (err) {
      // Any other failure (a link error, no memory) fails the async way too.
      if (!(err instanceof RangeError)) throw err;
      if (/main thread|synchronous/i.test(err.message)) syncInstantiate = false;
    }
  }
  return WebAssembly.instantiate(module, imports);
}
let syncInstantiate = true;

/**
 * Runs preview1 command modules the way ComponentRunner runs components:
 * compiled once per module and memory cap, a fresh instance per call, stdio
 * captured with caps, the call's filesystem from vfs.ts, and the same
 * classification of exits, traps and limits.
 */
export class Preview1Runner {
  readonly #openHostDirectory: HostDirectoryOpener | undefined;
  readonly #openOpfsDirectory: OpfsDirectoryOpener | undefined;
  readonly #modules = new Map<string, Uint8Array>();
  /** Compiled per module and memory cap: the cap is part of the compiled code. */
  readonly #compiled = new Map<string, Promise<WebAssembly.Module>>();

  constructor(options: RunnerOptions = {}) {
    this.#openHostDirectory = options.openHostDirectory;
    this.#openOpfsDirectory = options.openOpfsDirectory;
  }

  /** True when this runner holds the module with this key. */
  has(key: string): boolean {
    return this.#modules.has(key);
  }

  #load(key: string, maxPages: number, toolName: string): Promise<WebAssembly.Module> {
    const compiledKey = `${key}/${maxPages}`;
    let compiled = this.#compiled.get(compiledKey);
    if (!compiled) {
      compiled = compilePreview1(this.#modules.get(key)!, maxPages, toolName);
      compiled.catch(() => this.#compiled.delete(compiledKey));
      this.#compiled.set(compiledKey, compiled);
    }
    return compiled;
  }

  /** Run the module with this key; pass its bytes the first time (or always). */
  async run(key: string, module: Uint8Array | undefined, request: RunRequest): Promise<ExecutionResult> {
    const started = performance.now();
    if (module) this.#modules.set(key, module);
    else if (!this.#modules.has(key)) throw new Error(`module ${key} is not loaded`);
    const maxPages = Math.max(1, Math.floor(request.memoryLimitBytes / WASM_PAGE_BYTES));
    const compiled = await this.#load(key, maxPages, request.toolName);

    const call = openCall(request, { openHostDirectory: this.#openHostDirectory, openOpfsDirectory: this.#openOpfsDirectory });
    const { stdout, stderr } = call.captured;
    const host = new Preview1Host(call.guest);

    let end: RunEnd = { exitCode: 0, exited: true };
    let memory: WebAssembly.Memory | undefined;
    try {
      const instance = await instantiate(compiled, { wasi_snapshot_preview1: host.imports });
      memory = instance.exports.memory as WebAssembly.Memory;
      host.bind(memory);
      (instance.exports._start as () => void)();
    } catch (err) {
      end = classify(err, request.toolName, stderr);
    } finally {
      call.close();
    }
    if (host.networkCalls.length > 0 && end.error?.code !== ErrorCodes.RESOURCE_EXHAUSTED) {
      const calls = [...new Set(host.networkCalls)];
      end = {
        exitCode: end.exitCode === 0 ? 1 : end.exitCode,
        error: new CorralError(
          ErrorCodes.NETWORK_BLOCKED,
          `${request.toolName} tried to use the network (${calls.join(', ')}); Corral tools run without network access.`,
          { call: calls[0], calls, exit_code: end.exitCode, ...(end.error ? { cause: end.error.message } : {}) },
        ).toJSON(),
      };
    }
    return finishRun(end, {
      request,
      started,
      stdout,
      stderr,
      peakMemoryBytes: memory?.buffer.byteLength ?? 0,
      maxPages,
      quota: call.quota,
    });
  }
}
