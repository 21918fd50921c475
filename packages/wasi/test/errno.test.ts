/**
 * The one errno table (src/fs/errno.ts): wasi:filesystem error-codes,
 * preview1 errnos and POSIX errno names, paired once. Node's host-folder
 * backend kept a table of its own (POSIX name → error-code) before; it
 * now asks fsErrorOfErrno, which must answer everything that table did.
 */
import { describe, expect, it } from 'vitest';
import { constants } from 'node:os';
import { FS_ERRNO, WASI_ERRNO, fsErrorOfErrno, type FsErrorCode } from '@corral/wasi/fs';

/** host-fs.ts's own table, as it was: every answer must stay the same. */
const FORMER_NODE_TABLE: Record<string, FsErrorCode> = {
  ENOENT: 'no-entry',
  EEXIST: 'exist',
  ENOTDIR: 'not-directory',
  EISDIR: 'is-directory',
  ENOTEMPTY: 'not-empty',
  EACCES: 'access',
  EPERM: 'not-permitted',
  ENOSPC: 'insufficient-space',
  EDQUOT: 'quota',
  EROFS: 'read-only',
  EINVAL: 'invalid',
  ELOOP: 'loop',
  ENAMETOOLONG: 'name-too-long',
  EBADF: 'bad-descriptor',
  EBUSY: 'busy',
  EXDEV: 'cross-device',
  EFBIG: 'file-too-large',
  EMLINK: 'too-many-links',
  EIO: 'io',
  ENXIO: 'no-such-device',
  ENOMEM: 'insufficient-memory',
  EMFILE: 'insufficient-memory',
  ENFILE: 'insufficient-memory',
  ETXTBSY: 'text-file-busy',
  EOVERFLOW: 'overflow',
  ENOTSUP: 'unsupported',
  EOPNOTSUPP: 'unsupported',
};

describe('fsErrorOfErrno', () => {
  it("answers every name host-fs.ts's former table did, the same way", () => {
    for (const [name, code] of Object.entries(FORMER_NODE_TABLE)) expect([name, fsErrorOfErrno(name)]).toEqual([name, code]);
  });

  it('reaches every wasi:filesystem error-code from the POSIX name of its preview1 errno', () => {
    const byErrno = new Map<number, string>(Object.entries(WASI_ERRNO).map(([name, n]) => [n, `E${name}`]));
    for (const [code, errno] of Object.entries(FS_ERRNO)) expect(fsErrorOfErrno(byErrno.get(errno)!)).toBe(code);
  });

  it("answers 'io' for a name WASI has no code for, or that is not an errno at all", () => {
    for (const name of ['ECONNRESET', 'E2BIG', 'ENOTSOCK', 'EOF', 'constructor', '__proto__', 'Ehasown', '']) {
      expect([name, fsErrorOfErrno(name)]).toEqual([name, 'io']);
    }
  });

  it('maps every errno this Node knows to an error-code the preview1 table pairs with an errno', () => {
    for (const name of Object.keys(constants.errno)) expect(FS_ERRNO[fsErrorOfErrno(name)], name).toBeTypeOf('number');
  });
});
