/**
 * Errors of the filesystem layer, in the three vocabularies it meets: the
 * wasi:filesystem `error-code` every backend throws (WASI 0.2, types.wit),
 * the preview1 `errno` numbers the preview1 host returns, and the POSIX
 * errno names a host's own filesystem reports (Node's `err.code`,
 * `os.constants.errno`). One table pairs them, so every host maps the same
 * way: hosts take it from `@corral/wasi/fs`.
 */

/** wasi:filesystem `error-code`, every case: what an FsBackend throws, as a string. */
export type FsErrorCode =
  | 'access'
  | 'would-block'
  | 'already'
  | 'bad-descriptor'
  | 'busy'
  | 'deadlock'
  | 'quota'
  | 'exist'
  | 'file-too-large'
  | 'illegal-byte-sequence'
  | 'in-progress'
  | 'interrupted'
  | 'invalid'
  | 'io'
  | 'is-directory'
  | 'loop'
  | 'too-many-links'
  | 'message-size'
  | 'name-too-long'
  | 'no-device'
  | 'no-entry'
  | 'no-lock'
  | 'insufficient-memory'
  | 'insufficient-space'
  | 'not-directory'
  | 'not-empty'
  | 'not-recoverable'
  | 'unsupported'
  | 'no-tty'
  | 'no-such-device'
  | 'overflow'
  | 'not-permitted'
  | 'pipe'
  | 'read-only'
  | 'invalid-seek'
  | 'text-file-busy'
  | 'cross-device';

/** `errno`, every value preview1 defines, by its witx name (`2big` is TOOBIG). */
export const E = {
  SUCCESS: 0,
  TOOBIG: 1,
  ACCES: 2,
  ADDRINUSE: 3,
  ADDRNOTAVAIL: 4,
  AFNOSUPPORT: 5,
  AGAIN: 6,
  ALREADY: 7,
  BADF: 8,
  BADMSG: 9,
  BUSY: 10,
  CANCELED: 11,
  CHILD: 12,
  CONNABORTED: 13,
  CONNREFUSED: 14,
  CONNRESET: 15,
  DEADLK: 16,
  DESTADDRREQ: 17,
  DOM: 18,
  DQUOT: 19,
  EXIST: 20,
  FAULT: 21,
  FBIG: 22,
  HOSTUNREACH: 23,
  IDRM: 24,
  ILSEQ: 25,
  INPROGRESS: 26,
  INTR: 27,
  INVAL: 28,
  IO: 29,
  ISCONN: 30,
  ISDIR: 31,
  LOOP: 32,
  MFILE: 33,
  MLINK: 34,
  MSGSIZE: 35,
  MULTIHOP: 36,
  NAMETOOLONG: 37,
  NETDOWN: 38,
  NETRESET: 39,
  NETUNREACH: 40,
  NFILE: 41,
  NOBUFS: 42,
  NODEV: 43,
  NOENT: 44,
  NOEXEC: 45,
  NOLCK: 46,
  NOLINK: 47,
  NOMEM: 48,
  NOMSG: 49,
  NOPROTOOPT: 50,
  NOSPC: 51,
  NOSYS: 52,
  NOTCONN: 53,
  NOTDIR: 54,
  NOTEMPTY: 55,
  NOTRECOVERABLE: 56,
  NOTSOCK: 57,
  NOTSUP: 58,
  NOTTY: 59,
  NXIO: 60,
  OVERFLOW: 61,
  OWNERDEAD: 62,
  PERM: 63,
  PIPE: 64,
  PROTO: 65,
  PROTONOSUPPORT: 66,
  PROTOTYPE: 67,
  RANGE: 68,
  ROFS: 69,
  SPIPE: 70,
  SRCH: 71,
  STALE: 72,
  TIMEDOUT: 73,
  TXTBSY: 74,
  XDEV: 75,
  NOTCAPABLE: 76,
} as const;

/**
 * wasi:filesystem `error-code` → preview1 `errno`: the one place the two
 * are paired.
 */
export const FS_ERRNO: Readonly<Record<FsErrorCode, number>> = {
  access: E.ACCES,
  'would-block': E.AGAIN,
  already: E.ALREADY,
  'bad-descriptor': E.BADF,
  busy: E.BUSY,
  deadlock: E.DEADLK,
  quota: E.DQUOT,
  exist: E.EXIST,
  'file-too-large': E.FBIG,
  'illegal-byte-sequence': E.ILSEQ,
  'in-progress': E.INPROGRESS,
  interrupted: E.INTR,
  invalid: E.INVAL,
  io: E.IO,
  'is-directory': E.ISDIR,
  loop: E.LOOP,
  'too-many-links': E.MLINK,
  'message-size': E.MSGSIZE,
  'name-too-long': E.NAMETOOLONG,
  'no-device': E.NODEV,
  'no-entry': E.NOENT,
  'no-lock': E.NOLCK,
  'insufficient-memory': E.NOMEM,
  'insufficient-space': E.NOSPC,
  'not-directory': E.NOTDIR,
  'not-empty': E.NOTEMPTY,
  'not-recoverable': E.NOTRECOVERABLE,
  unsupported: E.NOTSUP,
  'no-tty': E.NOTTY,
  'no-such-device': E.NXIO,
  overflow: E.OVERFLOW,
  'not-permitted': E.PERM,
  pipe: E.PIPE,
  'read-only': E.ROFS,
  'invalid-seek': E.SPIPE,
  'text-file-busy': E.TXTBSY,
  'cross-device': E.XDEV,
};

/** The error-code for each preview1 errno that has one (FS_ERRNO backwards). */
const CODE_OF_ERRNO = new Map<number, FsErrorCode>(Object.entries(FS_ERRNO).map(([code, errno]) => [errno, code as FsErrorCode]));

/**
 * POSIX errno names WASI has no number of its own for, and what they mean
 * to a tool: out of descriptors is out of a resource, like memory
 * (wasi:filesystem has no "too many open files").
 */
const POSIX_ALIASES: Readonly<Record<string, FsErrorCode>> = {
  EMFILE: 'insufficient-memory',
  ENFILE: 'insufficient-memory',
  EOPNOTSUPP: 'unsupported',
  EWOULDBLOCK: 'would-block',
  EDEADLOCK: 'deadlock',
};

/**
 * The wasi:filesystem error-code for a host's POSIX errno name ('ENOENT' →
 * 'no-entry'): preview1's errno names are POSIX's without the E, so the
 * pairing above decides. 'io' for anything WASI has no code for.
 */
export function fsErrorOfErrno(name: string): FsErrorCode {
  if (Object.hasOwn(POSIX_ALIASES, name)) return POSIX_ALIASES[name]!;
  const bare = name.slice(1);
  const errno = name.startsWith('E') && Object.hasOwn(E, bare) ? E[bare as keyof typeof E] : undefined;
  return (errno !== undefined && CODE_OF_ERRNO.get(errno)) || 'io';
}
