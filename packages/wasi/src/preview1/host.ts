/**
 * A direct WASI preview1 host: the `wasi_snapshot_preview1` functions of one
 * instance, for a wasi-libc command such as `wasm-tools/*\/*.module.wasm`,
 * with no component glue in between.
 *
 * Files go through the same descriptors as components (vfs.ts): each mount
 * is a preopened directory implementing preview2-shim's
 * BrowserFilesystemDescriptor, which throws wasi:filesystem `error-code`
 * strings; this file keeps the per-fd state preview1 needs (offsets, rights,
 * flags, directory cookies) and maps those codes to preview1 errnos (abi.ts).
 * Containment (`..`, symlinks out of a mount) is the descriptors' job;
 * absolute paths are refused here, before a descriptor sees them.
 *
 * There is no network and no socket: the `sock_*` calls answer EBADF or
 * ENOTSOCK, and a call that tried to accept, receive or send is recorded
 * in `networkCalls` (the runner then ends it E_NETWORK_BLOCKED).
 *
 * Layouts are from the preview1 witx (WebAssembly/WASI
 * legacy/preview1/docs.md); comments quote it.
 */
import {
  ENTRIES_WITH_HASHES,
  PARENT_METADATA_HASH,
  READ_DIRECTORY_WITH_HASHES,
  type Descriptor,
  type DescriptorStat,
} from '../fs/filesystem.js';
import { MAX_CHUNK, MAX_POLL, bytesSource, monotonicNs, realtimeNs, sleepNs, type ByteSink, type ByteSource } from '../io.js';
import { ProcExit } from '../outcome.js';
import type { GuestIo } from '../request.js';
import {
  E,
  Errno,
  errnoOf,
  FILETYPE,
  DESCRIPTOR_FILETYPE,
  R,
  ALL_RIGHTS,
  FILE_RIGHTS,
  DIR_RIGHTS,
  WRITE_RIGHTS,
  STDIN_RIGHTS,
  STDOUT_RIGHTS,
  FDFLAG_APPEND,
  FDFLAG_DSYNC,
  FDFLAG_RSYNC,
  FDFLAG_SYNC,
  FDFLAGS_SYNC,
  FDFLAGS_ALL,
  O_CREAT,
  O_DIRECTORY,
  O_EXCL,
  O_TRUNC,
  LOOKUP_SYMLINK_FOLLOW,
  FST_ATIM,
  FST_ATIM_NOW,
  FST_MTIM,
  FST_MTIM_NOW,
  SUBCLOCK_ABSTIME,
  EVENTTYPE_CLOCK,
  EVENTTYPE_FD_READ,
  EVENTTYPE_FD_WRITE,
  ADVICE,
  DIRENT_SIZE,
  FILESTAT_SIZE,
  SUBSCRIPTION_SIZE,
  EVENT_SIZE,
  MAX_OFFSET,
  MAX_FDS,
  PREVIEW1_FUNCTIONS,
  type Preview1Function,
} from './abi.js';
import { GuestMemory } from './memory.js';

export type { ByteSink } from '../io.js';

type NewTimestamp = { tag: 'no-change' } | { tag: 'now' } | { tag: 'timestamp'; val: { seconds: bigint; nanoseconds: number } };

/** Preopened directories: [descriptor, guest path], in the order the guest sees them (fd 3, 4, …). */
export type Preopens = Array<[Descriptor, string]>;

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
  /** Its metadata hash from the listing's batch (see ENTRIES_WITH_HASHES), if still good. */
  hash: (() => { lower: bigint; upper: bigint } | undefined) | null;
}

/** The host whose guest is running in this thread (Preview1Host.enter), if any. */
let entered: Preview1Host | null = null;

/** A preview1 host takes exactly what every guest is given (request.ts). */
export type Preview1HostOptions = GuestIo;

/**
 * The `wasi_snapshot_preview1` imports of one call. Create one per call,
 * pass `imports` as the `wasi_snapshot_preview1` namespace, run the guest
 * (instantiating it too: a start function is guest code) inside `enter`, and
 * `bind` the instance's exported memory before calling `_start`;
 * instantiatePreview1 (loader.ts) does the first two.
 */
export class Preview1Host {
  /**
   * The namespace every host of this thread passes: each function answers for
   * the host whose guest is running (`enter`). V8 keeps a wasm instance, and
   * what its imports reach, until a full collection; functions made once per
   * thread keep nothing of a call alive after it, and link faster. A
   * function called with no host entered throws (the guest traps).
   */
  static readonly #shared = Preview1Host.#namespace(() => {
    if (!entered) throw new Error('a preview1 import was called outside its call (Preview1Host.enter)');
    return entered;
  });

  /**
   * One function per name in PREVIEW1_FUNCTIONS, each answering for the host
   * `host()` returns, with this class's own method (a subclass cannot override one).
   */
  static #namespace(host: () => Preview1Host): Record<Preview1Function, (...args: never[]) => unknown> {
    const imports = {} as Record<Preview1Function, (...args: never[]) => unknown>;
    for (const name of PREVIEW1_FUNCTIONS) {
      const call = Preview1Host.prototype[name] as (...args: unknown[]) => number | void;
      imports[name] = (...args: unknown[]) => host().#answer(name, call, args);
    }
    return Object.freeze(imports);
  }
  /** The socket calls that move data (accept, recv, send) the guest made, each named once. */
  readonly networkCalls: string[] = [];
  /**
   * The code of the guest's first proc_exit. Exit is final: a module that
   * catches the exception that unwinds it (wasm exception handling) gets
   * the same exception from any host call after, and its run still ends
   * with this code (Preview1Runner).
   */
  exitCode: number | undefined;

  readonly #args: Uint8Array[];
  readonly #env: Uint8Array[];
  readonly #stdin: ByteSource & { remaining?(): number };
  readonly #sinks: [ByteSink, ByteSink];
  readonly #fds: Array<FdEntry | undefined>;
  readonly #startedNs = monotonicNs();
  readonly #mem = new GuestMemory();

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
  }

  /** The import namespace, answering for whichever host is entered (the same object for every host). */
  get imports(): Record<Preview1Function, (...args: never[]) => unknown> {
    return Preview1Host.#shared;
  }

  /**
   * A namespace of this host's own, for an instantiation that cannot run
   * inside `enter` (an asynchronous one, whose start function runs later).
   */
  ownImports(): Record<Preview1Function, (...args: never[]) => unknown> {
    return Preview1Host.#namespace(() => this);
  }

  /**
   * Run guest code (instantiation, `_start`) with this host answering the
   * shared imports. The shared imports know only which host is entered, not
   * which instance calls: an instance kept past its call and called again
   * inside another host's `enter` is answered by that host, with that call's
   * files and stdio. Corral never calls an instance after its call; code that
   * keeps one must call it inside its own host's `enter` only.
   */
  enter<T>(run: () => T): T {
    const outer = entered;
    entered = this;
    try {
      return run();
    } finally {
      entered = outer;
    }
  }

  #answer(name: Preview1Function, call: (...args: unknown[]) => number | void, args: unknown[]): unknown {
    if (this.exitCode !== undefined) throw new ProcExit(this.exitCode);
    // proc_exit needs no memory: from a start function, before `bind`, it still ends the run.
    if (name === 'proc_exit') this.proc_exit(args[0] as number);
    this.#mem.refresh(name);
    try {
      return call.apply(this, args);
    } catch (err) {
      return errnoOf(err);
    }
  }

  /** Give the host the instance's memory (its `memory` export). */
  bind(memory: WebAssembly.Memory): void {
    this.#mem.bind(memory);
  }

  // --- arguments -------------------------------------------------------------
  /**
   * A path argument: UTF-8, no NUL, relative. Absolute paths are refused
   * here, whatever the descriptor would do with them.
   */
  #path(ptr: number, len: number): string {
    let path: string;
    try {
      path = utf8Strict.decode(this.#mem.bytes(ptr, len));
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
    this.#mem.bytes(ptr, FILESTAT_SIZE).fill(0);
    const dv = this.#mem.dv;
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
    const table = this.#mem.bytes(pointers, strings.length * 4).byteOffset;
    strings.forEach((s, i) => {
      this.#mem.bytes(at, s.length).set(s);
      this.#mem.u32(table + i * 4, at);
      at += s.length;
    });
    return E.SUCCESS;
  }

  #sizes(strings: Uint8Array[], countPtr: number, sizePtr: number): number {
    this.#mem.u32(countPtr, strings.length);
    this.#mem.u32(
      sizePtr,
      strings.reduce((n, s) => n + s.length, 0),
    );
    return E.SUCCESS;
  }

  clock_res_get(id: number, resultPtr: number): number {
    if (id < 0 || id > 3) return E.INVAL;
    this.#mem.u64(resultPtr, 1000n);
    return E.SUCCESS;
  }

  clock_time_get(id: number, _precision: bigint, resultPtr: number): number {
    const now = this.#now(id);
    if (now === undefined) return E.INVAL;
    this.#mem.u64(resultPtr, now);
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
    const target = this.#mem.bytes(buf, len);
    // getRandomValues fills at most 65536 bytes a call.
    for (let at = 0; at < target.length; at += 65536) crypto.getRandomValues(target.subarray(at, at + 65536));
    return E.SUCCESS;
  }

  // --- byte I/O ------------------------------------------------------------------
  fd_read(fd: number, iovs: number, count: number, resultPtr: number): number {
    const entry = this.#fds[fd];
    if (entry?.filetype === FILETYPE.DIRECTORY) return E.ISDIR;
    const f = this.#fd(fd, R.FD_READ);
    const views = this.#mem.iovs(iovs, count);
    const n = f.descriptor ? this.#readFile(f.descriptor, views, f.offset) : this.#readStdin(f, views);
    if (f.descriptor) f.offset += n;
    this.#mem.u32(resultPtr, n);
    return E.SUCCESS;
  }

  fd_pread(fd: number, iovs: number, count: number, offset: bigint, resultPtr: number): number {
    const f = this.#file(fd, R.FD_READ | R.FD_SEEK);
    const n = this.#readFile(f.descriptor, this.#mem.iovs(iovs, count), toOffset(offset));
    this.#mem.u32(resultPtr, n);
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
    const views = this.#mem.iovs(iovs, count);
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
    this.#mem.u32(resultPtr, n);
    return E.SUCCESS;
  }

  fd_pwrite(fd: number, iovs: number, count: number, offset: bigint, resultPtr: number): number {
    const f = this.#file(fd, R.FD_WRITE | R.FD_SEEK);
    this.#mem.u32(resultPtr, this.#writeFile(f.descriptor, this.#mem.iovs(iovs, count), toOffset(offset)));
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
    this.#mem.u64(resultPtr, target);
    return E.SUCCESS;
  }

  fd_tell(fd: number, resultPtr: number): number {
    const entry = this.#fds[fd];
    if (entry && !entry.descriptor) return E.SPIPE;
    this.#mem.u64(resultPtr, BigInt(this.#fd(fd, R.FD_TELL).offset));
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
    this.#mem.bytes(ptr, 24).fill(0);
    this.#mem.dv.setUint8(ptr >>> 0, f.filetype);
    this.#mem.dv.setUint16((ptr >>> 0) + 2, f.fdflags, true);
    this.#mem.u64((ptr >>> 0) + 8, f.rights);
    this.#mem.u64((ptr >>> 0) + 16, f.inheriting);
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
      this.#mem.bytes(ptr, FILESTAT_SIZE).fill(0);
      this.#mem.dv.setUint8((ptr >>> 0) + 16, f.filetype);
      return E.SUCCESS;
    }
    this.#writeFilestat(
      ptr,
      f.device,
      f.descriptor.stat(),
      inodeOf(() => f.descriptor!.metadataHash()),
    );
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
    this.#mem.bytes(ptr, 8).fill(0);
    this.#mem.u32((ptr >>> 0) + 4, f.preopen.length);
    return E.SUCCESS;
  }

  fd_prestat_dir_name(fd: number, ptr: number, len: number): number {
    const f = this.#fds[fd];
    if (!f?.preopen) return E.BADF;
    if (len >>> 0 < f.preopen.length) return E.NAMETOOLONG;
    this.#mem.bytes(ptr, f.preopen.length).set(f.preopen);
    return E.SUCCESS;
  }

  // --- directories and paths --------------------------------------------------------
  fd_readdir(fd: number, buf: number, bufLen: number, cookie: bigint, resultPtr: number): number {
    const f = this.#dir(fd, R.FD_READDIR);
    if (cookie === 0n || !f.listing) f.listing = listDirectory(f.descriptor);
    const out = this.#mem.bytes(buf, bufLen);
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
          ? inodeOf(() => entry.hash?.() ?? f.descriptor.metadataHashAt({ symlinkFollow: false }, entry.lookup!))
          : i === 0
            ? inodeOf(() => f.descriptor.metadataHash())
            : inodeOf(() => f.descriptor[PARENT_METADATA_HASH]() ?? f.descriptor.metadataHash());
      hv.setBigUint64(8, ino, true);
      hv.setUint32(16, entry.name.length, true);
      hv.setUint8(20, entry.filetype);
      for (const part of [header, entry.name]) {
        const n = Math.min(part.length, out.length - used);
        out.set(part.subarray(0, n), used);
        used += n;
      }
    }
    this.#mem.u32(resultPtr, used);
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
    this.#mem.u32(resultPtr, slot);
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
    this.#writeFilestat(
      ptr,
      dir.device,
      stat,
      inodeOf(() => dir.descriptor.metadataHashAt(pathFlags, path)),
    );
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
    this.#mem.bytes(buf, n).set(target.subarray(0, n));
    this.#mem.u32(resultPtr, n);
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
    const subs = this.#mem.bytes(inPtr, count * SUBSCRIPTION_SIZE).byteOffset;
    const events = this.#mem.bytes(outPtr, count * EVENT_SIZE).byteOffset;
    const dv = this.#mem.dv;
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
    this.#mem.u8.fill(0, events, events + all.length * EVENT_SIZE);
    all.forEach((event, i) => {
      // event: userdata@0 error@8 type@10 fd_readwrite.nbytes@16 fd_readwrite.flags@24
      const e = events + i * EVENT_SIZE;
      dv.setBigUint64(e, event.userdata, true);
      dv.setUint16(e + 8, event.error, true);
      dv.setUint8(e + 10, event.type);
      dv.setBigUint64(e + 16, event.nbytes, true);
    });
    this.#mem.u32(resultPtr, all.length);
    return E.SUCCESS;
  }

  proc_exit(code: number): never {
    this.exitCode = code >>> 0;
    throw new ProcExit(this.exitCode);
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

function toOffset(offset: bigint): number {
  if (offset < 0n || offset > BigInt(MAX_OFFSET)) throw new Errno(E.INVAL);
  return Number(offset);
}

/** The first `max` bytes of `views`, gathered into a copy. */
function concat(views: Uint8Array[], max: number): Uint8Array {
  const out = new Uint8Array(
    Math.min(
      max,
      views.reduce((n, v) => n + v.length, 0),
    ),
  );
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
    { name: utf8.encode('.'), filetype: FILETYPE.DIRECTORY, lookup: null, hash: null },
    { name: utf8.encode('..'), filetype: FILETYPE.DIRECTORY, lookup: null, hash: null },
  ];
  for (const e of descriptor[READ_DIRECTORY_WITH_HASHES]()[ENTRIES_WITH_HASHES]()) {
    entries.push({ name: utf8.encode(e.name), filetype: DESCRIPTOR_FILETYPE[e.type] ?? FILETYPE.UNKNOWN, lookup: e.name, hash: e.hash });
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
