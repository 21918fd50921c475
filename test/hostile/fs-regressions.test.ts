/**
 * Escapes the filesystem fuzz (test/fuzz) found in the guarded filesystem,
 * pinned on the descriptors a component's glue calls, over a real host
 * folder. Each test is named after the bug.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callFilesystem, type CallFilesystem, type Descriptor } from '@corral/wasi/fs';
import { hostMountOpeners } from '@corral/node';
import { thrown } from '../helpers/thrown.js';

const SECRET = 'SECRET-OUTSIDE-2b7f';
const DISPOSE = (Symbol as { dispose?: symbol }).dispose ?? Symbol.for('dispose');

let base: string;
let mount: string;
let outside: string;
let call: CallFilesystem;
let root: Descriptor;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'corral-fs-regress-')));
  mount = join(base, 'mount');
  outside = join(base, 'outside');
  mkdirSync(join(mount, 'dir'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(mount, 'a.txt'), 'inside\n');
  writeFileSync(join(outside, 'secret.txt'), SECRET);
  call = callFilesystem([{ guest: '/data', access: 'read-write', source: { kind: 'host', path: mount } }], 1 << 20, hostMountOpeners());
  root = call.preopens[0]![0];
});

afterEach(() => {
  call.close();
  rmSync(base, { recursive: true, force: true });
});

describe('regressions found by the filesystem fuzz', () => {
  it('a stream kept after its descriptor is dropped cannot reach the host file that reuses its fd number', () => {
    const file = root.openAt({}, 'a.txt', {}, { read: true, write: true });
    const input = file.readViaStream(0n);
    const output = file.writeViaStream(0n);
    const append = file.appendViaStream();
    // What the glue does when the guest drops its handle: the fd is closed...
    (file as unknown as Record<symbol, () => void>)[DISPOSE]!();
    // ...and the host (another call, the snapshot store) opens files of its own, taking its number.
    const host = Array.from({ length: 8 }, () => openSync(join(outside, 'secret.txt'), 'r+'));
    try {
      const failed = { tag: 'last-operation-failed', val: { code: 'bad-descriptor' } };
      expect(thrown(() => input.blockingRead(100n))).toMatchObject(failed);
      expect(thrown(() => output.blockingWriteAndFlush(new TextEncoder().encode('PWNED')))).toMatchObject(failed);
      expect(thrown(() => append.blockingWriteAndFlush(new TextEncoder().encode('PWNED')))).toMatchObject(failed);
    } finally {
      for (const fd of host) closeSync(fd);
    }
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
  });

  it('readlink of an absolute link that starts with the mount path and climbs out of it is refused, not shown', () => {
    symlinkSync(`${mount}/../outside/secret.txt`, join(mount, 'climbs'));
    symlinkSync(`${mount}/dir/../../outside`, join(mount, 'dir', 'climbs'));
    symlinkSync(join(mount, 'a.txt'), join(mount, 'dir', 'inside'));
    expect(thrown(() => root.readlinkAt('climbs'))).toBe('not-permitted');
    expect(thrown(() => root.readlinkAt('dir/climbs'))).toBe('not-permitted');
    // An absolute link that stays inside still reads, relative to where it sits.
    expect(root.readlinkAt('dir/inside')).toBe('../a.txt');
  });

  it('a link cannot be moved (or hard-linked) up to where it would lead out of the mount', () => {
    root.createDirectoryAt('dir/sub');
    // A tool may not make a link that climbs at all; the host may (npm does).
    expect(thrown(() => root.symlinkAt('../../a.txt', 'dir/sub/notes.txt'))).toBe('not-permitted');
    // Inside where it sits: dir/sub/../../a.txt is the mount's a.txt.
    symlinkSync('../../a.txt', join(mount, 'dir/sub/notes.txt'));
    expect(thrown(() => root.renameAt('dir/sub/notes.txt', root, 'notes.txt'))).toBe('not-permitted');
    expect(thrown(() => root.linkAt({}, 'dir/sub/notes.txt', root, 'hard.txt'))).toBe('not-permitted');
    // The folder holding it, moved up, would carry it out too.
    expect(thrown(() => root.renameAt('dir/sub', root, 'sub'))).toBe('not-permitted');
    // Sideways or deeper is fine: it still leads inside.
    root.createDirectoryAt('other');
    root.createDirectoryAt('other/deeper');
    root.renameAt('dir/sub/notes.txt', root, 'other/deeper/notes.txt');
    expect(readFileSync(join(mount, 'other/deeper/notes.txt'), 'utf8')).toBe('inside\n');
  });

  it('removing entries that were there before the call frees no quota for new data', () => {
    const small = callFilesystem(
      [{ guest: '/data', access: 'read-write', source: { kind: 'host', path: mount } }],
      4096,
      hostMountOpeners(),
    );
    try {
      const data = small.preopens[0]![0];
      for (let i = 0; i < 16; i++) writeFileSync(join(mount, `old-${i}.txt`), 'x');
      // One entry (512) and 3.5 KiB: the 4 KiB quota is used up.
      const f = data.openAt({}, 'new.bin', { create: true }, { write: true });
      f.write(new Uint8Array(3584), 0n);
      expect(small.quota.usedBytes).toBe(4096);
      for (let i = 0; i < 16; i++) data.unlinkFileAt(`old-${i}.txt`);
      expect(small.quota.usedBytes).toBe(4096);
      expect(thrown(() => f.write(new Uint8Array(1), 3584n))).toBe('insufficient-space');
    } finally {
      small.close();
    }
  });

  it('a link the host made to lead out is not moved down to where readlink would show its outside names (fuzz seed 90144143)', () => {
    symlinkSync('../outside/secret.txt', join(mount, 'out-rel'));
    root.createDirectoryAt('dir/sub');
    expect(thrown(() => root.readlinkAt('out-rel'))).toBe('not-permitted');
    // Two levels down, '../outside/secret.txt' would read as dir/outside/secret.txt: inside.
    expect(thrown(() => root.renameAt('out-rel', root, 'dir/sub/l'))).toBe('not-permitted');
    // The same for a folder holding it.
    mkdirSync(join(mount, 'box'));
    symlinkSync('../../outside/secret.txt', join(mount, 'box', 'l'));
    expect(thrown(() => root.renameAt('box', root, 'dir/sub/box'))).toBe('not-permitted');
    // Sideways it stays what it was: leading out, and not shown.
    root.renameAt('out-rel', root, 'out-rel-2');
    expect(thrown(() => root.readlinkAt('out-rel-2'))).toBe('not-permitted');
  });
});
