/**
 * The preview1 host, call by call, over an in-memory mount (the same
 * descriptors every mount is), and the Preview1Runner in-process on the
 * committed preview1 fixtures.
 */
import { describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { Preview1Runner, checkPreview1Module } from '@corral/wasi';
import { DiskQuota, ENTRY_BYTES, MemoryBackend, mountRoot, type FileDataEntry } from '@corral/wasi/fs';
import { CappedSink, Preview1Host, ProcExit } from '@corral/wasi/internal';
import { runRequest } from './run-request.js';
import { startExits, startExitsAndCatches, startOverflows } from './start-exits.js';

const FIXTURES = new URL('../../../test/fixtures/preview1/', import.meta.url);
const fixture = (name: string) => new Uint8Array(readFileSync(new URL(`${name}/p1-${name}.wasm`, FIXTURES)));

// errno values, from the preview1 witx
const E = {
  SUCCESS: 0,
  BADF: 8,
  EXIST: 20,
  FAULT: 21,
  INVAL: 28,
  ISDIR: 31,
  NOENT: 44,
  NOSPC: 51,
  NOTDIR: 54,
  NOTEMPTY: 55,
  NOTSOCK: 57,
  NOTSUP: 58,
  PERM: 63,
  ROFS: 69,
  SPIPE: 70,
  NOTCAPABLE: 76,
};
const RIGHTS_ALL = (1n << 30n) - 1n;
const FD_READ = 1n << 1n;
const FD_SEEK = 1n << 2n;
const FD_WRITE = 1n << 6n;
/** What wasi-libc asks for with O_RDONLY: everything but the write rights (FD_WRITE, FD_ALLOCATE, FD_FILESTAT_SET_SIZE). */
const RIGHTS_READ_ONLY = RIGHTS_ALL & ~(FD_WRITE | (1n << 8n) | (1n << 22n));
const O_CREAT = 1;
const O_DIRECTORY = 2;
const O_TRUNC = 8;
const FDFLAG_APPEND = 1;

/** A host over one preopen, with helpers to lay out arguments in its memory. */
function harness(tree: Record<string, unknown>, options: { readOnly?: boolean; quotaBytes?: number; stdin?: string } = {}) {
  const memory = new WebAssembly.Memory({ initial: 4 });
  const stdout = new CappedSink(1 << 20, 'head');
  const stderr = new CappedSink(1 << 20, 'tail');
  const quota = new DiskQuota(options.quotaBytes ?? 1 << 20);
  const backend = MemoryBackend.fromFileData(tree as FileDataEntry);
  const syncs = { count: 0 };
  backend.sync = () => void syncs.count++;
  const root = mountRoot(backend, { readOnly: !!options.readOnly, quota });
  const host = new Preview1Host({
    args: ['tool', 'héllo'],
    env: { TZ: 'UTC', LANG: 'C' },
    stdin: new TextEncoder().encode(options.stdin ?? ''),
    stdout,
    stderr,
    preopens: [[root, '/data']],
  });
  host.bind(memory);
  const u8 = () => new Uint8Array(memory.buffer);
  const dv = () => new DataView(memory.buffer);
  let heap = 1024;
  const alloc = (n: number) => {
    const at = heap;
    heap += (n + 7) & ~7;
    return at;
  };
  const bytes = (data: string | Uint8Array) => {
    const b = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    const at = alloc(b.length);
    u8().set(b, at);
    return [at, b.length] as const;
  };
  // As the guest calls them: inside its host's `enter`.
  const call = (name: string, ...args: Array<number | bigint>) =>
    host.enter(() => (host.imports as unknown as Record<string, (...a: Array<number | bigint>) => number>)[name]!(...args));
  /** path_open on fd 3, returning [errno, fd]. */
  const open = (path: string, oflags = 0, rights = RIGHTS_ALL, fdflags = 0) => {
    const out = alloc(4);
    const errno = call('path_open', 3, 1, ...bytes(path), oflags, rights, RIGHTS_ALL, fdflags, out);
    return [errno, dv().getUint32(out, true)] as const;
  };
  /** fd_read/fd_write through one iovec. */
  const read = (fd: number, len: number, name = 'fd_read', offset?: bigint) => {
    const buf = alloc(len);
    const iov = alloc(8);
    dv().setUint32(iov, buf, true);
    dv().setUint32(iov + 4, len, true);
    const out = alloc(4);
    const errno = offset === undefined ? call(name, fd, iov, 1, out) : call(name, fd, iov, 1, offset, out);
    return [errno, new TextDecoder().decode(u8().slice(buf, buf + dv().getUint32(out, true)))] as const;
  };
  const write = (fd: number, text: string, name = 'fd_write', offset?: bigint) => {
    const [buf, len] = bytes(text);
    const iov = alloc(8);
    dv().setUint32(iov, buf, true);
    dv().setUint32(iov + 4, len, true);
    const out = alloc(4);
    const errno = offset === undefined ? call(name, fd, iov, 1, out) : call(name, fd, iov, 1, offset, out);
    return [errno, dv().getUint32(out, true)] as const;
  };
  return { host, memory, stdout, stderr, quota, syncs, u8, dv, alloc, bytes, call, open, read, write };
}

describe('Preview1Host: the preview1 calls over descriptors', () => {
  it('hands over args and environment as NUL-terminated UTF-8', () => {
    const h = harness({ dir: {} });
    const sizes = h.alloc(8);
    expect(h.call('args_sizes_get', sizes, sizes + 4)).toBe(E.SUCCESS);
    expect([h.dv().getUint32(sizes, true), h.dv().getUint32(sizes + 4, true)]).toEqual([2, 'tool\0héllo\0'.length + 1]);
    const argv = h.alloc(8);
    const buf = h.alloc(64);
    expect(h.call('args_get', argv, buf)).toBe(E.SUCCESS);
    const second = h.dv().getUint32(argv + 4, true);
    expect(new TextDecoder().decode(h.u8().slice(second, second + 7))).toBe('héllo\0');
    expect(h.call('environ_sizes_get', sizes, sizes + 4)).toBe(E.SUCCESS);
    expect(h.dv().getUint32(sizes, true)).toBe(2);
    expect(h.call('environ_get', argv, buf)).toBe(E.SUCCESS);
    expect(new TextDecoder().decode(h.u8().slice(buf, buf + 13))).toBe('TZ=UTC\0LANG=C\0'.slice(0, 13));
  });

  it('describes the preopen at fd 3 and nothing after it', () => {
    const h = harness({ dir: {} });
    const out = h.alloc(8);
    expect(h.call('fd_prestat_get', 3, out)).toBe(E.SUCCESS);
    expect(h.u8()[out]).toBe(0);
    expect(h.dv().getUint32(out + 4, true)).toBe(5);
    const name = h.alloc(8);
    expect(h.call('fd_prestat_dir_name', 3, name, 5)).toBe(E.SUCCESS);
    expect(new TextDecoder().decode(h.u8().slice(name, name + 5))).toBe('/data');
    expect(h.call('fd_prestat_get', 4, out)).toBe(E.BADF);
    expect(h.call('fd_prestat_get', 1, out)).toBe(E.BADF);
  });

  it('opens, reads, seeks, tells and preads a file', () => {
    const h = harness({ dir: { 'a.txt': { source: 'hello preview1' } } });
    const [errno, fd] = h.open('a.txt');
    expect(errno).toBe(E.SUCCESS);
    expect(h.read(fd, 5)).toEqual([E.SUCCESS, 'hello']);
    expect(h.read(fd, 100)).toEqual([E.SUCCESS, ' preview1']);
    expect(h.read(fd, 100)).toEqual([E.SUCCESS, '']);
    const pos = h.alloc(8);
    expect(h.call('fd_seek', fd, -8n, 2, pos)).toBe(E.SUCCESS);
    expect(h.dv().getBigUint64(pos, true)).toBe(6n);
    expect(h.call('fd_tell', fd, pos)).toBe(E.SUCCESS);
    expect(h.dv().getBigUint64(pos, true)).toBe(6n);
    expect(h.read(fd, 3)).toEqual([E.SUCCESS, 'pre']);
    expect(h.read(fd, 4, 'fd_pread', 0n)).toEqual([E.SUCCESS, 'hell']);
    expect(h.call('fd_seek', fd, -100n, 1, pos)).toBe(E.INVAL);
    expect(h.call('fd_close', fd)).toBe(E.SUCCESS);
    expect(h.read(fd, 1)[0]).toBe(E.BADF);
  });

  it('writes, appends, truncates and stats files', () => {
    const h = harness({ dir: { 'a.txt': { source: 'abc' } } });
    const [, fd] = h.open('new.txt', O_CREAT | O_TRUNC);
    expect(h.write(fd, 'hello')).toEqual([E.SUCCESS, 5]);
    expect(h.write(fd, 'XY', 'fd_pwrite', 1n)).toEqual([E.SUCCESS, 2]);
    const stat = h.alloc(64);
    expect(h.call('fd_filestat_get', fd, stat)).toBe(E.SUCCESS);
    expect(h.u8()[stat + 16]).toBe(4); // regular_file
    expect(h.dv().getBigUint64(stat + 32, true)).toBe(5n);
    expect(h.read(fd, 5, 'fd_pread', 0n)).toEqual([E.SUCCESS, 'hXYlo']);
    expect(h.call('fd_filestat_set_size', fd, 2n)).toBe(E.SUCCESS);
    const [, app] = h.open('a.txt', 0, RIGHTS_ALL, FDFLAG_APPEND);
    expect(h.write(app, 'def')).toEqual([E.SUCCESS, 3]);
    const [, again] = h.open('a.txt');
    expect(h.read(again, 10)).toEqual([E.SUCCESS, 'abcdef']);
    expect(h.call('path_filestat_get', 3, 1, ...h.bytes('new.txt'), stat)).toBe(E.SUCCESS);
    expect(h.dv().getBigUint64(stat + 32, true)).toBe(2n);
  });

  it('enforces rights: a file opened without FD_WRITE is not writable, rights only narrow', () => {
    const h = harness({ dir: { 'a.txt': { source: 'abc' } } });
    const [, fd] = h.open('a.txt', 0, FD_READ | FD_SEEK);
    expect(h.write(fd, 'x')[0]).toBe(E.NOTCAPABLE);
    const stat = h.alloc(24);
    expect(h.call('fd_fdstat_get', fd, stat)).toBe(E.SUCCESS);
    expect(h.dv().getBigUint64(stat + 8, true)).toBe(FD_READ | FD_SEEK);
    expect(h.call('fd_fdstat_set_rights', fd, FD_READ, 0n)).toBe(E.SUCCESS);
    expect(h.call('fd_fdstat_set_rights', fd, FD_READ | FD_WRITE, 0n)).toBe(E.NOTCAPABLE);
    expect(h.call('fd_seek', fd, 0n, 0, h.alloc(8))).toBe(E.NOTCAPABLE);
  });

  // wasi-testsuite rust/path_filestat opens with FDFLAGS_SYNC and expects fd_fdstat_get to
  // report it: the flag is kept on the open file and honoured (each write is synced).
  it('a file opened with SYNC or DSYNC reports it and syncs every write; fd_fdstat_set_flags cannot drop it', () => {
    const SYNC = 16;
    const DSYNC = 2;
    const h = harness({ dir: { 'a.txt': { source: 'abc' } } });
    const flagsOf = (fd: number) => {
      const stat = h.alloc(24);
      expect(h.call('fd_fdstat_get', fd, stat)).toBe(E.SUCCESS);
      return h.dv().getUint16(stat + 2, true);
    };
    const [opened, fd] = h.open('a.txt', 0, RIGHTS_ALL, FDFLAG_APPEND | SYNC);
    expect(opened).toBe(E.SUCCESS);
    expect(flagsOf(fd)).toBe(FDFLAG_APPEND | SYNC);
    expect(h.write(fd, 'def')).toEqual([E.SUCCESS, 3]);
    expect(h.syncs.count).toBe(1);
    // Like fcntl(F_SETFL) on Linux: append changes, the sync flags stay what the file was opened with.
    expect(h.call('fd_fdstat_set_flags', fd, 0)).toBe(E.SUCCESS);
    expect(flagsOf(fd)).toBe(SYNC);
    expect(h.write(fd, 'g', 'fd_pwrite', 0n)).toEqual([E.SUCCESS, 1]);
    expect(h.syncs.count).toBe(2);
    const [, dsync] = h.open('a.txt', 0, RIGHTS_ALL, DSYNC);
    expect(flagsOf(dsync)).toBe(DSYNC);
    h.write(dsync, 'x');
    expect(h.syncs.count).toBe(3);
    const [, plain] = h.open('a.txt');
    expect(h.call('fd_fdstat_set_flags', plain, SYNC)).toBe(E.SUCCESS);
    expect(flagsOf(plain)).toBe(0);
    h.write(plain, 'y');
    expect(h.syncs.count).toBe(3);
  });

  it('lists a directory with "." and "..", across calls when the buffer is small', () => {
    const names = ['b.txt', 'a.txt', 'sub', 'a-much-longer-file-name-than-the-others.txt'];
    const h = harness({ dir: Object.fromEntries(names.map((n) => [n, n === 'sub' ? { dir: {} } : { source: n }])) });
    // Asking to write a directory is EISDIR, as in POSIX and wasmtime.
    expect(h.open('.', O_DIRECTORY)[0]).toBe(E.ISDIR);
    const [opened, fd] = h.open('.', O_DIRECTORY, RIGHTS_READ_ONLY);
    expect(opened).toBe(E.SUCCESS);
    const seen: Array<[string, number]> = [];
    const inodes = new Map<string, bigint>();
    let cookie = 0n;
    let size = 40;
    for (let round = 0; round < 20; round++) {
      const buf = h.alloc(size);
      const used = h.alloc(4);
      expect(h.call('fd_readdir', fd, buf, size, cookie, used)).toBe(E.SUCCESS);
      const n = h.dv().getUint32(used, true);
      // Take whole entries only, as wasi-libc does, and resume after the last one;
      // an entry larger than the buffer means a larger buffer.
      let at = buf;
      const before = seen.length;
      while (at + 24 <= buf + n) {
        const len = h.dv().getUint32(at + 16, true);
        if (at + 24 + len > buf + n) break;
        const name = new TextDecoder().decode(h.u8().slice(at + 24, at + 24 + len));
        seen.push([name, h.u8()[at + 20]!]);
        inodes.set(name, h.dv().getBigUint64(at + 8, true));
        cookie = h.dv().getBigUint64(at, true);
        at += 24 + len;
      }
      if (n < size) break;
      if (seen.length === before) size *= 2;
    }
    expect(seen.map(([n]) => n)).toEqual(['.', '..', 'a-much-longer-file-name-than-the-others.txt', 'a.txt', 'b.txt', 'sub']);
    expect(Object.fromEntries(seen)).toMatchObject({ sub: 3, 'a.txt': 4, '.': 3 });
    // No entry has inode 0: wasi-libc then looks the name up, and `..` above a preopen is refused.
    for (const [name, ino] of inodes) expect(ino, name).not.toBe(0n);
  });

  it('maps wasi:filesystem errors to errnos, and refuses absolute paths itself', () => {
    const h = harness({ dir: { 'a.txt': { source: 'x' }, d: { dir: { inner: { source: '' } } } } });
    expect(h.open('missing.txt')[0]).toBe(E.NOENT);
    expect(h.open('/etc/passwd')[0]).toBe(E.NOTCAPABLE);
    expect(h.open('../outside')[0]).toBe(E.PERM);
    expect(h.open('a.txt', O_DIRECTORY)[0]).toBe(E.NOTDIR);
    expect(h.open('d', 0, RIGHTS_ALL)[0]).toBe(E.ISDIR); // a directory opened for writing
    expect(h.call('path_create_directory', 3, ...h.bytes('d'))).toBe(E.EXIST);
    expect(h.call('path_remove_directory', 3, ...h.bytes('d'))).toBe(E.NOTEMPTY);
    expect(h.call('path_unlink_file', 3, ...h.bytes('d'))).toBe(E.ISDIR);
    expect(h.call('path_unlink_file', 3, ...h.bytes(''))).toBe(E.NOENT);
    const [, file] = h.open('a.txt');
    expect(h.call('path_create_directory', file, ...h.bytes('x'))).toBe(E.NOTDIR);
    expect(h.call('path_symlink', ...h.bytes('/etc'), 3, ...h.bytes('link'))).toBe(E.NOTCAPABLE);
  });

  it('renames, links and reads links', () => {
    const h = harness({ dir: { 'a.txt': { source: 'x' } } });
    expect(h.call('path_create_directory', 3, ...h.bytes('d'))).toBe(E.SUCCESS);
    expect(h.call('path_rename', 3, ...h.bytes('a.txt'), 3, ...h.bytes('d/b.txt'))).toBe(E.SUCCESS);
    expect(h.call('path_symlink', ...h.bytes('b.txt'), 3, ...h.bytes('d/link'))).toBe(E.SUCCESS);
    const buf = h.alloc(16);
    const n = h.alloc(4);
    expect(h.call('path_readlink', 3, ...h.bytes('d/link'), buf, 16, n)).toBe(E.SUCCESS);
    expect(new TextDecoder().decode(h.u8().slice(buf, buf + h.dv().getUint32(n, true)))).toBe('b.txt');
    expect(h.call('path_link', 3, 0, ...h.bytes('d/b.txt'), 3, ...h.bytes('hard.txt'))).toBe(E.SUCCESS);
    const [, fd] = h.open('hard.txt');
    expect(h.read(fd, 5)).toEqual([E.SUCCESS, 'x']);
  });

  it('on a guarded read-only mount every write is EROFS; over the quota it is ENOSPC', () => {
    const ro = harness({ dir: { 'a.txt': { source: 'x' } } }, { readOnly: true });
    expect(ro.open('new.txt', O_CREAT)[0]).toBe(E.ROFS);
    expect(ro.open('a.txt', 0, FD_READ | FD_WRITE)[0]).toBe(E.ROFS);
    expect(ro.open('a.txt', 0, FD_READ)[0]).toBe(E.SUCCESS);
    expect(ro.call('path_unlink_file', 3, ...ro.bytes('a.txt'))).toBe(E.ROFS);
    // Creating the file costs one entry; then 8 bytes of contents fit.
    const small = harness({ dir: {} }, { quotaBytes: ENTRY_BYTES + 8 });
    const [, fd] = small.open('f', O_CREAT);
    expect(small.write(fd, '12345678')).toEqual([E.SUCCESS, 8]);
    expect(small.write(fd, '9')[0]).toBe(E.NOSPC);
    expect(small.quota.exceeded).toBe(true);
  });

  it('stdio: stdin from the request, stdout and stderr into their sinks, no seeking', () => {
    const h = harness({ dir: {} }, { stdin: '{"in":1}' });
    expect(h.read(0, 4)).toEqual([E.SUCCESS, '{"in']);
    expect(h.read(0, 100)).toEqual([E.SUCCESS, '":1}']);
    expect(h.read(0, 100)).toEqual([E.SUCCESS, '']);
    expect(h.write(1, 'out')).toEqual([E.SUCCESS, 3]);
    expect(h.write(2, 'err')).toEqual([E.SUCCESS, 3]);
    expect(new TextDecoder().decode(h.stdout.bytes())).toBe('out');
    expect(new TextDecoder().decode(h.stderr.bytes())).toBe('err');
    expect(h.call('fd_seek', 1, 0n, 0, h.alloc(8))).toBe(E.SPIPE);
    expect(h.write(0, 'x')[0]).toBe(E.NOTCAPABLE);
    const stat = h.alloc(24);
    expect(h.call('fd_fdstat_get', 1, stat)).toBe(E.SUCCESS);
    // Not a character device: wasi-libc buffers stdout fully, as for a pipe.
    expect(h.u8()[stat]).toBe(0);
  });

  it('answers EFAULT for buffers outside memory instead of trapping', () => {
    const h = harness({ dir: {} });
    const end = h.memory.buffer.byteLength;
    const iov = h.alloc(8);
    h.dv().setUint32(iov, end - 2, true);
    h.dv().setUint32(iov + 4, 100, true);
    expect(h.call('fd_write', 1, iov, 1, h.alloc(4))).toBe(E.FAULT);
    expect(h.call('args_sizes_get', end + 100, 0)).toBe(E.FAULT);
    expect(h.call('random_get', end - 500, 1000)).toBe(E.FAULT);
    expect(h.call('fd_read', 0, -8, 1, 0)).toBe(E.FAULT);
  });

  it('socket calls on an open fd answer ENOTSOCK, on any other EBADF; those that move data are recorded', () => {
    const h = harness({ dir: {} });
    // fd 3 is the preopened directory, fd 9 is not open: no fd is ever a socket.
    expect(h.call('sock_send', 3, 0, 0, 0, h.alloc(4))).toBe(E.NOTSOCK);
    expect(h.call('sock_accept', 9, 0, h.alloc(4))).toBe(E.BADF);
    expect(h.call('sock_recv', 1, 0, 0, 0, h.alloc(4), h.alloc(4))).toBe(E.NOTSOCK);
    expect(h.host.networkCalls).toEqual(['sock_send', 'sock_accept', 'sock_recv']);
  });

  it('a refused socket call made in a loop is recorded once', () => {
    const h = harness({ dir: {} });
    for (let i = 0; i < 1000; i++) h.call('sock_send', 9, 0, 0, 0, h.alloc(4));
    expect(h.host.networkCalls).toEqual(['sock_send']);
  });

  // wasi-testsuite c/sock_shutdown-invalid_fd and c/sock_shutdown-not_sock: shutting
  // down moves no data and no socket can exist, so it is answered, not counted as network use.
  it('sock_shutdown answers EBADF for a closed fd and ENOTSOCK for a file or directory, and is not network use', () => {
    const h = harness({ dir: {} });
    expect(h.call('sock_shutdown', 99, 3)).toBe(E.BADF);
    expect(h.call('sock_shutdown', -1, 3)).toBe(E.BADF);
    expect(h.call('sock_shutdown', 3, 3)).toBe(E.NOTSOCK);
    expect(h.call('sock_shutdown', 0, 1)).toBe(E.NOTSOCK);
    expect(h.host.networkCalls).toEqual([]);
  });

  it('clocks, sleep through poll_oneoff, random bytes', () => {
    const h = harness({ dir: {} });
    const t = h.alloc(8);
    expect(h.call('clock_time_get', 0, 1n, t)).toBe(E.SUCCESS);
    expect(Number(h.dv().getBigUint64(t, true) / 1_000_000n)).toBeGreaterThan(Date.now() - 1000);
    expect(h.call('clock_time_get', 9, 1n, t)).toBe(E.INVAL);
    expect(h.call('clock_res_get', 1, t)).toBe(E.SUCCESS);
    // One relative clock subscription of 30 ms.
    const sub = h.alloc(48);
    h.dv().setBigUint64(sub, 42n, true); // userdata
    h.u8()[sub + 8] = 0; // clock
    h.dv().setUint32(sub + 16, 1, true); // monotonic
    h.dv().setBigUint64(sub + 24, 30_000_000n, true);
    const event = h.alloc(32);
    const n = h.alloc(4);
    const started = performance.now();
    expect(h.call('poll_oneoff', sub, event, 1, n)).toBe(E.SUCCESS);
    expect(performance.now() - started).toBeGreaterThanOrEqual(29);
    expect(h.dv().getUint32(n, true)).toBe(1);
    expect(h.dv().getBigUint64(event, true)).toBe(42n);
    expect(h.u8()[event + 10]).toBe(0);
    expect(h.call('poll_oneoff', sub, event, 0, n)).toBe(E.INVAL);
    const r = h.alloc(64);
    expect(h.call('random_get', r, 64)).toBe(E.SUCCESS);
    expect(
      h
        .u8()
        .slice(r, r + 64)
        .some((b) => b !== 0),
    ).toBe(true);
  });

  it('caps open fds (EMFILE) and refuses negative sizes (EINVAL)', () => {
    const h = harness({ dir: { 'a.txt': { source: 'abc' } } });
    let errno = 0;
    for (let i = 0; i < 5000 && errno === 0; i++) errno = h.open('a.txt')[0];
    expect(errno).toBe(33);
    expect(h.call('fd_close', 100)).toBe(E.SUCCESS);
    const [again, fd] = h.open('a.txt');
    expect([again, fd]).toEqual([E.SUCCESS, 100]);
    expect(h.call('fd_filestat_set_size', fd, -1n)).toBe(E.INVAL);
  });

  it("answers a guest only inside its own host's enter: one namespace, whichever host is running", () => {
    const a = harness({}, { stdin: 'from a' });
    const b = harness({}, { stdin: 'from b' });
    expect(a.host.imports).toBe(b.host.imports);
    const argsSizes = a.host.imports.args_sizes_get as unknown as (argc: number, size: number) => number;
    // Called with no host entered (a guest running outside its call), it throws: the guest traps.
    expect(() => argsSizes(0, 4)).toThrow(/outside its call/);
    expect(a.read(0, 16)).toEqual([E.SUCCESS, 'from a']);
    expect(b.read(0, 16)).toEqual([E.SUCCESS, 'from b']);
    // Nested, then unwound by an exit: the outer host answers again after.
    a.host.enter(() => {
      expect(() => b.call('proc_exit', 5)).toThrow(ProcExit);
      expect(a.write(1, 'still a')).toEqual([E.SUCCESS, 7]);
    });
    expect(new TextDecoder().decode(a.stdout.bytes())).toBe('still a');
    expect(b.stdout.bytes().length).toBe(0);
    expect(() => argsSizes(0, 4)).toThrow(/outside its call/);
  });

  it('renumbers and closes fds; proc_exit unwinds with its code', () => {
    const h = harness({ dir: { 'a.txt': { source: 'abc' } } });
    const [, a] = h.open('a.txt');
    const [, b] = h.open('a.txt');
    expect(h.read(a, 1)).toEqual([E.SUCCESS, 'a']);
    expect(h.call('fd_renumber', a, b)).toBe(E.SUCCESS);
    expect(h.read(b, 1)).toEqual([E.SUCCESS, 'b']);
    expect(h.read(a, 1)[0]).toBe(E.BADF);
    expect(h.call('fd_renumber', a, b)).toBe(E.BADF);
    // A free target is EBADF too (the official suite and wasmtime agree), near or far.
    expect(h.call('fd_renumber', b, 40)).toBe(E.BADF);
    expect(h.call('fd_renumber', b, 2 ** 31)).toBe(E.BADF);
    expect(h.call('fd_renumber', b, -1)).toBe(E.BADF);
    expect(h.read(b, 1)).toEqual([E.SUCCESS, 'c']);
    expect(() => h.call('proc_exit', 7)).toThrow(ProcExit);
    try {
      h.call('proc_exit', 7);
    } catch (err) {
      expect((err as ProcExit).code).toBe(7);
    }
  });
});

/** A tiny module: `imports` as functions of type () -> (), optional _start and memory exports. */
function tinyModule(
  imports: Array<[string, string]>,
  exports: { start?: boolean; memory?: boolean } = { start: true, memory: true },
): WebAssembly.Module {
  const enc = new TextEncoder();
  const name = (s: string) => [enc.encode(s).length, ...enc.encode(s)];
  const section = (id: number, body: number[]) => [id, body.length, ...body];
  const bytes: number[] = [0, 0x61, 0x73, 0x6d, 1, 0, 0, 0];
  bytes.push(...section(1, [1, 0x60, 0, 0]));
  if (imports.length) bytes.push(...section(2, [imports.length, ...imports.flatMap(([m, f]) => [...name(m), ...name(f), 0, 0])]));
  if (exports.start) bytes.push(...section(3, [1, 0]));
  if (exports.memory) bytes.push(...section(5, [1, 0, 1]));
  const exported: number[][] = [];
  if (exports.start) exported.push([...name('_start'), 0, imports.length]);
  if (exports.memory) exported.push([...name('memory'), 2, 0]);
  if (exported.length) bytes.push(...section(7, [exported.length, ...exported.flat()]));
  if (exports.start) bytes.push(...section(10, [1, 2, 0, 0x0b]));
  return new WebAssembly.Module(new Uint8Array(bytes));
}

describe('checkPreview1Module: refused at load, naming the import', () => {
  it('accepts wasi_snapshot_preview1 commands', () => {
    expect(() => checkPreview1Module(tinyModule([['wasi_snapshot_preview1', 'fd_write']]), 't')).not.toThrow();
  });

  it.each([
    [[['env', 'host_magic']], 'E_REGISTRATION', 'env.host_magic'],
    [[['wasi_snapshot_preview1', 'no_such_call']], 'E_REGISTRATION', 'wasi_snapshot_preview1.no_such_call'],
    [[['wasi_unstable', 'fd_write']], 'E_REGISTRATION', 'old wasi_unstable'],
    [[['wasi_snapshot_preview1', 'sock_open']], 'E_NETWORK_BLOCKED', 'sock_open'],
    [
      [
        ['wasix_32v1', 'sock_connect'],
        ['env', 'other'],
      ],
      'E_NETWORK_BLOCKED',
      'wasix_32v1.sock_connect',
    ],
  ] as Array<[Array<[string, string]>, string, string]>)('%j → %s', (imports, code, text) => {
    expect(() => checkPreview1Module(tinyModule(imports), 't')).toThrow(
      expect.objectContaining({ code, message: expect.stringContaining(text) }),
    );
  });

  it('refuses a module that is not a command (no _start) or keeps its memory to itself', () => {
    expect(() => checkPreview1Module(tinyModule([], { memory: true }), 't')).toThrow(/does not export _start/);
    expect(() => checkPreview1Module(tinyModule([], { start: true }), 't')).toThrow(/does not export memory/);
  });
});

describe('Preview1Runner in-process', () => {
  const request = runRequest;

  it('runs a command: stdin to stdout, exit 0, fresh state each call', async () => {
    const runner = new Preview1Runner();
    const first = await runner.run('echo', fixture('echo'), request());
    expect(first.exitCode).toBe(0);
    expect(first.error).toBeUndefined();
    expect(new TextDecoder().decode(first.stdout)).toBe('{"a":[1,2,3]}');
    expect(runner.has('echo')).toBe(true);
    const second = await runner.run('echo', undefined, request({ stdin: new TextEncoder().encode('{}') }));
    expect(new TextDecoder().decode(second.stdout)).toBe('{}');
    await expect(runner.run('unknown', undefined, request())).rejects.toThrow(/not loaded/);
  });

  it('calls running at once in one thread each reach their own host', async () => {
    const runner = new Preview1Runner();
    const inputs = Array.from({ length: 24 }, (_, i) => `{"call":${i}}`);
    const results = await Promise.all(
      inputs.map((text, i) =>
        i % 3 === 2
          ? runner.run('exit-fail', fixture('exit-fail'), request())
          : runner.run('echo', fixture('echo'), request({ stdin: new TextEncoder().encode(text) })),
      ),
    );
    results.forEach((result, i) => {
      if (i % 3 === 2) expect(result.exitCode).toBe(3);
      else expect(new TextDecoder().decode(result.stdout)).toBe(inputs[i]);
    });
  });

  // proc_exit only: a start function runs before the host has the module's memory, and any other call fails.
  it("a start function's calls reach its own call's host", async () => {
    const runner = new Preview1Runner();
    const [five, six] = await Promise.all([startExits(5), startExits(6)]);
    const results = await Promise.all([5, 6, 5, 6].map((code) => runner.run(`exit-${code}`, code === 5 ? five : six, request())));
    expect(results.map((r) => [r.exitCode, r.stdout.length, r.error])).toEqual([5, 6, 5, 6].map((code) => [code, 0, undefined]));
  });

  it('runs a start function that overflows the stack once, and reports the trap', async () => {
    const instantiate = vi.spyOn(WebAssembly, 'instantiate');
    try {
      const result = await new Preview1Runner().run('overflow', await startOverflows(), request());
      expect(result.error).toMatchObject({ code: 'E_UNEXPECTED_EXIT' });
      expect(JSON.stringify(result.error)).toMatch(/call stack/);
      // Not taken for a thread that refuses synchronous instantiation, and run again.
      expect(instantiate).not.toHaveBeenCalled();
    } finally {
      instantiate.mockRestore();
    }
  });

  it('a start function that exited keeps its exit code, whatever it throws after', async () => {
    const result = await new Preview1Runner().run('exit-then-overflow', startExitsAndCatches(4, 'overflows'), request());
    expect([result.exitCode, result.error]).toEqual([4, undefined]);
  });

  it('keeps the exit code of proc_exit', async () => {
    const result = await new Preview1Runner().run('x', fixture('exit-fail'), request());
    expect(result.exitCode).toBe(3);
    expect(result.error).toBeUndefined();
    expect(new TextDecoder().decode(result.stderr)).toContain('refusing on purpose');
  });

  it('classifies a trap as E_UNEXPECTED_EXIT with the stderr tail', async () => {
    const result = await new Preview1Runner().run('x', fixture('trap'), request());
    expect(result.error).toMatchObject({ code: 'E_UNEXPECTED_EXIT', details: { trap: true } });
    expect(result.error?.details.stderr_tail).toContain('about to hit unreachable');
  });

  it('stops a flood at the output cap', async () => {
    const result = await new Preview1Runner().run('x', fixture('stdout-flood'), request({ outputLimitBytes: 64 * 1024 }));
    expect(result.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'output' } });
    expect(result.stdoutTruncated).toBe(true);
    expect(result.stdout.length).toBe(64 * 1024);
  });

  it('caps memory at memoryLimitBytes, compiled once per cap', async () => {
    const runner = new Preview1Runner();
    const small = await runner.run('bomb', fixture('memory-bomb'), request({ memoryLimitBytes: 16 * 2 ** 20 }));
    expect(small.error).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'memory' } });
    expect(small.peakMemoryBytes).toBeLessThanOrEqual(16 * 2 ** 20);
    const larger = await runner.run('bomb', undefined, request({ memoryLimitBytes: 40 * 2 ** 20 }));
    expect(larger.peakMemoryBytes).toBeGreaterThan(16 * 2 ** 20);
    expect(larger.peakMemoryBytes).toBeLessThanOrEqual(40 * 2 ** 20);
  });

  // Before: a failure was memory when the peak was within max(2 MiB, cap/8) of the cap, all of a cap of
  // 2 MiB or less: a module that exited 3, or trapped, with its memory at the 512 KiB it started with was
  // reported E_RESOURCE_EXHAUSTED (memory) under a 1 or 2 MiB cap.
  it('a failure under a 1 or 2 MiB memory cap is reported as how the tool failed, not as running out of memory', async () => {
    const runner = new Preview1Runner();
    for (const mb of [1, 2]) {
      const memoryLimitBytes = mb * 2 ** 20;
      const exited = await runner.run('exit-fail', fixture('exit-fail'), request({ memoryLimitBytes }));
      expect(exited.exitCode, `${mb} MiB`).toBe(3);
      expect(exited.error, `${mb} MiB`).toBeUndefined();
      const trapped = await runner.run('trap', fixture('trap'), request({ memoryLimitBytes }));
      expect(trapped.error, `${mb} MiB`).toMatchObject({ code: 'E_UNEXPECTED_EXIT', details: { trap: true } });
    }
    // A tool whose memory.grow fails ran out of memory, under 1 MiB too, where its first block never fits.
    for (const mb of [1, 2]) {
      const bomb = await runner.run('bomb', fixture('memory-bomb'), request({ memoryLimitBytes: mb * 2 ** 20 }));
      expect(bomb.error, `${mb} MiB`).toMatchObject({ code: 'E_RESOURCE_EXHAUSTED', details: { resource: 'memory' } });
    }
  });

  it('reports socket calls as E_NETWORK_BLOCKED even when the tool exits 0', async () => {
    const result = await new Preview1Runner().run('x', fixture('socket'), request());
    // fd 3 is the call's own /tmp, a folder: ENOTSOCK, and still an attempt to use a network.
    expect(JSON.parse(new TextDecoder().decode(result.stdout))).toEqual({ sock_send: E.NOTSOCK, sock_recv: E.NOTSOCK });
    expect(result.error).toMatchObject({
      code: 'E_NETWORK_BLOCKED',
      details: { call: 'sock_send', calls: ['sock_send', 'sock_recv'], exit_code: 0 },
    });
  });

  it('refuses modules with imports it does not provide, before running anything', async () => {
    await expect(new Preview1Runner().run('x', fixture('bad-import'), request())).rejects.toMatchObject({ code: 'E_REGISTRATION' });
    await expect(new Preview1Runner().run('y', fixture('net-import'), request())).rejects.toMatchObject({
      code: 'E_NETWORK_BLOCKED',
      details: { imports: ['wasi_snapshot_preview1.sock_open'] },
    });
  });
});
