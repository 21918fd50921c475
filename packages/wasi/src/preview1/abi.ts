/**
 * The wasi_snapshot_preview1 ABI as numbers: errnos (from fs/errno.ts,
 * with the one table from wasi:filesystem `error-code` to `errno`), file
 * types, rights, flags and record sizes. Layouts and numbers are from the
 * preview1 witx (WebAssembly/WASI legacy/preview1/docs.md); comments quote it.
 */
import { MAX_OPEN_FILES } from '../fs/filesystem.js';
import { E, FS_ERRNO, type FsErrorCode } from '../fs/errno.js';

// --- errno ---------------------------------------------------------------------
// The errno numbers, and their pairing with wasi:filesystem error-codes, live with the filesystem layer (fs/errno.ts).
export { E, FS_ERRNO };

/** Thrown inside a syscall to return an errno to the guest. */
export class Errno {
  constructor(readonly code: number) {}
}

/** The errno a failed syscall returns; anything that is not a syscall error unwinds the guest. */
export function errnoOf(err: unknown): number {
  if (err instanceof Errno) return err.code;
  if (typeof err === 'string') return FS_ERRNO[err as FsErrorCode] ?? E.IO;
  // DataView/TypedArray access outside guest memory.
  if (err instanceof RangeError && !/call stack/i.test(err.message)) return E.FAULT;
  throw err;
}

// --- filetype, rights, flags ------------------------------------------------------
export const FILETYPE = {
  UNKNOWN: 0,
  BLOCK_DEVICE: 1,
  CHARACTER_DEVICE: 2,
  DIRECTORY: 3,
  REGULAR_FILE: 4,
  SOCKET_STREAM: 6,
  SYMBOLIC_LINK: 7,
};

export const DESCRIPTOR_FILETYPE: Record<string, number> = {
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
export const R = {
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
export const ALL_RIGHTS = bit(30) - 1n;
/** What a regular file can do. */
export const FILE_RIGHTS =
  R.FD_DATASYNC |
  R.FD_READ |
  R.FD_SEEK |
  R.FD_FDSTAT_SET_FLAGS |
  R.FD_SYNC |
  R.FD_TELL |
  R.FD_WRITE |
  R.FD_ADVISE |
  R.FD_ALLOCATE |
  R.FD_FILESTAT_GET |
  R.FD_FILESTAT_SET_SIZE |
  R.FD_FILESTAT_SET_TIMES |
  R.POLL_FD_READWRITE;
/** What a directory can do: everything but byte I/O and sockets. */
export const DIR_RIGHTS =
  ALL_RIGHTS &
  ~(
    R.FD_READ |
    R.FD_SEEK |
    R.FD_TELL |
    R.FD_WRITE |
    R.FD_ADVISE |
    R.FD_ALLOCATE |
    R.FD_FILESTAT_SET_SIZE |
    R.POLL_FD_READWRITE |
    R.SOCK_SHUTDOWN |
    R.SOCK_ACCEPT
  );
/** Rights that make a file writable (a descriptor opened with them asks its mount for write access). */
export const WRITE_RIGHTS = R.FD_WRITE | R.FD_ALLOCATE | R.FD_FILESTAT_SET_SIZE;
export const STDIN_RIGHTS = R.FD_READ | R.FD_FDSTAT_SET_FLAGS | R.FD_FILESTAT_GET | R.POLL_FD_READWRITE;
export const STDOUT_RIGHTS = R.FD_WRITE | R.FD_FDSTAT_SET_FLAGS | R.FD_FILESTAT_GET | R.POLL_FD_READWRITE;

/** `fdflags`: append(0) dsync(1) nonblock(2) rsync(3) sync(4). */
export const FDFLAG_APPEND = 1;
export const FDFLAG_DSYNC = 2;
export const FDFLAG_RSYNC = 8;
export const FDFLAG_SYNC = 16;
/** Fixed when a file is opened, as fcntl(F_SETFL) leaves O_DSYNC/O_RSYNC/O_SYNC on Linux. */
export const FDFLAGS_SYNC = FDFLAG_DSYNC | FDFLAG_RSYNC | FDFLAG_SYNC;
export const FDFLAGS_ALL = 0x1f;
/** `oflags`: creat(0) directory(1) excl(2) trunc(3). */
export const O_CREAT = 1;
export const O_DIRECTORY = 2;
export const O_EXCL = 4;
export const O_TRUNC = 8;
/** `lookupflags`: symlink_follow(0). */
export const LOOKUP_SYMLINK_FOLLOW = 1;
/** `fstflags`: atim(0) atim_now(1) mtim(2) mtim_now(3). */
export const FST_ATIM = 1;
export const FST_ATIM_NOW = 2;
export const FST_MTIM = 4;
export const FST_MTIM_NOW = 8;
/** `subclockflags`: subscription_clock_abstime(0). */
export const SUBCLOCK_ABSTIME = 1;
export const EVENTTYPE_CLOCK = 0;
export const EVENTTYPE_FD_READ = 1;
export const EVENTTYPE_FD_WRITE = 2;
export const ADVICE = ['normal', 'sequential', 'random', 'will-need', 'dont-need', 'no-reuse'] as const;

/** Sizes of the records the calls read and write. */
export const DIRENT_SIZE = 24;
export const FILESTAT_SIZE = 64;
export const SUBSCRIPTION_SIZE = 48;
export const EVENT_SIZE = 32;

export const MAX_OFFSET = Number.MAX_SAFE_INTEGER;
/** iovecs one read or write may name, as Linux's IOV_MAX: past it, EINVAL (each costs the host an object). */
export const MAX_IOVS = 1024;
/** Open fds a call may hold (the filesystem's own cap on open files is MAX_OPEN_FILES, the same): past it, EMFILE. */
export const MAX_FDS = MAX_OPEN_FILES;

/** The preview1 functions this host provides: every one wasi-libc imports. */
export const PREVIEW1_FUNCTIONS = [
  'args_get',
  'args_sizes_get',
  'environ_get',
  'environ_sizes_get',
  'clock_res_get',
  'clock_time_get',
  'fd_advise',
  'fd_allocate',
  'fd_close',
  'fd_datasync',
  'fd_fdstat_get',
  'fd_fdstat_set_flags',
  'fd_fdstat_set_rights',
  'fd_filestat_get',
  'fd_filestat_set_size',
  'fd_filestat_set_times',
  'fd_pread',
  'fd_prestat_get',
  'fd_prestat_dir_name',
  'fd_pwrite',
  'fd_read',
  'fd_readdir',
  'fd_renumber',
  'fd_seek',
  'fd_sync',
  'fd_tell',
  'fd_write',
  'path_create_directory',
  'path_filestat_get',
  'path_filestat_set_times',
  'path_link',
  'path_open',
  'path_readlink',
  'path_remove_directory',
  'path_rename',
  'path_symlink',
  'path_unlink_file',
  'poll_oneoff',
  'proc_exit',
  'proc_raise',
  'random_get',
  'sched_yield',
  'sock_accept',
  'sock_recv',
  'sock_send',
  'sock_shutdown',
] as const;

export type Preview1Function = (typeof PREVIEW1_FUNCTIONS)[number];
