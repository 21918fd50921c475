/**
 * The shortcuts that make walking a mount cheap (issue 13's grep bench),
 * each pinned against the hole it could open, over a real host folder and
 * the descriptors a component's glue calls:
 *   - a listing's batch of metadata hashes (the preview1 adapter's d_ino);
 *   - an open file's type and identity, taken once when it is opened;
 *   - metadata hashes themselves, which say which object a name is without
 *     telling the guest the host's device and inode numbers.
 * A shortcut may answer only what the slow path would have answered at
 * some moment of the call, and never about an object outside the mount.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { linkSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callFilesystem, type CallFilesystem, type Descriptor } from '@corral/wasi/fs';
import { sipHash24 } from '@corral/wasi/internal';
import { hostMountOpeners } from '@corral/node';
import { thrown } from '../helpers/thrown.js';

let base: string;
let mount: string;
let outside: string;
let call: CallFilesystem;
let root: Descriptor;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'corral-fs-fast-')));
  mount = join(base, 'mount');
  outside = join(base, 'outside');
  mkdirSync(join(mount, 'dir'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(mount, 'a.txt'), 'a\n');
  writeFileSync(join(mount, 'b.txt'), 'b\n');
  writeFileSync(join(mount, 'dir', 'x.txt'), 'x\n');
  writeFileSync(join(outside, 'x.txt'), 'outside\n');
  call = callFilesystem([{ guest: '/data', access: 'read-write', source: { kind: 'host', path: mount } }], 1 << 20, hostMountOpeners());
  root = call.preopens[0]![0];
});

afterEach(() => {
  call.close();
  rmSync(base, { recursive: true, force: true });
});

const NOFOLLOW = { symlinkFollow: false };

/** Read entries from `stream` until `name` (the adapter reads one, then asks for its hash). */
function readUntil(stream: ReturnType<Descriptor['readDirectory']>, name: string): void {
  for (let e = stream.readDirectoryEntry(); e; e = stream.readDirectoryEntry()) if (e.name === name) return;
  throw new Error(`no entry ${name}`);
}

describe("a listing's batch of metadata hashes", () => {
  it('gives the entry just read the hash metadata-hash-at gives it without a listing', () => {
    const expected = root.metadataHashAt(NOFOLLOW, 'b.txt');
    const stream = root.readDirectory();
    readUntil(stream, 'b.txt');
    expect(root.metadataHashAt(NOFOLLOW, 'b.txt')).toEqual(expected);
    // And a name that was not the one just read is asked for the usual way.
    expect(root.metadataHashAt(NOFOLLOW, 'a.txt')).toEqual(root.metadataHashAt(NOFOLLOW, 'a.txt'));
  });

  it('is not used once the guest has changed names since it was taken (a stale inode after a rename)', () => {
    const stream = root.readDirectory();
    readUntil(stream, 'a.txt');
    // The batch is taken here, with b.txt still there.
    root.metadataHashAt(NOFOLLOW, 'a.txt');
    const bObject = root.metadataHashAt(NOFOLLOW, 'b.txt');
    root.renameAt('b.txt', root, 'a.txt');
    readUntil(stream, 'b.txt');
    expect(thrown(() => root.metadataHashAt(NOFOLLOW, 'b.txt'))).toBe('no-entry');
    const again = root.readDirectory();
    readUntil(again, 'a.txt');
    expect(root.metadataHashAt(NOFOLLOW, 'a.txt')).toEqual(bObject);
  });

  it('answers as of the batch when the host changed the folder since, as getdents reports d_ino as of the listing', () => {
    const bObject = root.metadataHashAt(NOFOLLOW, 'b.txt');
    const stream = root.readDirectory();
    readUntil(stream, 'a.txt');
    root.metadataHashAt(NOFOLLOW, 'a.txt');
    renameSync(join(mount, 'b.txt'), join(mount, 'c.txt'));
    readUntil(stream, 'b.txt');
    expect(root.metadataHashAt(NOFOLLOW, 'b.txt')).toEqual(bObject);
    // Asked again, it is no longer the entry just read: the folder as it is now.
    expect(thrown(() => root.metadataHashAt(NOFOLLOW, 'b.txt'))).toBe('no-entry');
  });

  it('never answers for an object outside: a folder the host moved out, and replaced, is listed no further', () => {
    const dir = root.openAt({}, 'dir', { directory: true }, { read: true });
    const outsideHash = (() => {
      // What the outside file's hash would be, seen through a mount of its own.
      const other = callFilesystem([{ guest: '/o', access: 'read', source: { kind: 'host', path: outside } }], 0, hostMountOpeners());
      try {
        return other.preopens[0]![0].metadataHashAt(NOFOLLOW, 'x.txt');
      } finally {
        other.close();
      }
    })();
    const stream = dir.readDirectory();
    // The host swaps the folder: the listed one goes outside, an empty one takes its place.
    renameSync(join(mount, 'dir'), join(outside, 'moved'));
    renameSync(join(outside, 'x.txt'), join(outside, 'moved', 'x.txt'));
    mkdirSync(join(mount, 'dir'));
    readUntil(stream, 'x.txt');
    const answer = thrown(() => dir.metadataHashAt(NOFOLLOW, 'x.txt'));
    expect(answer).toBe('no-entry');
    expect(answer).not.toEqual(outsideHash);
  });
});

describe("an open file's identity, taken when it is opened", () => {
  it('stays that of the file opened when the host replaces the name', () => {
    const file = root.openAt({}, 'a.txt', {}, { read: true });
    const before = file.metadataHash();
    renameSync(join(mount, 'b.txt'), join(mount, 'a.txt'));
    expect(file.metadataHash()).toEqual(before);
    expect(root.metadataHashAt(NOFOLLOW, 'a.txt')).not.toEqual(before);
    expect(file.getType()).toBe('regular-file');
    expect(new TextDecoder().decode(file.read(10n, 0n)[0])).toBe('a\n');
  });

  it('is no way around a closed descriptor', () => {
    const file = root.openAt({}, 'a.txt', {}, { read: true });
    file.metadataHash();
    file.close();
    expect(thrown(() => file.metadataHash())).toBe('bad-descriptor');
    expect(thrown(() => file.getType())).toBe('bad-descriptor');
  });
});

describe('metadata hashes', () => {
  it("carry neither the host's device nor its inode number (a guest learned how the host's disks are laid out)", () => {
    const host = lstatSync(join(mount, 'a.txt'), { bigint: true });
    const hash = root.metadataHashAt(NOFOLLOW, 'a.txt');
    for (const half of [hash.lower, hash.upper]) {
      expect(half).not.toBe(host.ino);
      expect(half).not.toBe(host.dev);
    }
  });

  it('are equal for one object under two names, and differ for two objects', () => {
    linkSync(join(mount, 'a.txt'), join(mount, 'dir', 'hard.txt'));
    const a = root.metadataHashAt(NOFOLLOW, 'a.txt');
    expect(root.metadataHashAt(NOFOLLOW, 'dir/hard.txt')).toEqual(a);
    expect(root.openAt({}, 'dir/hard.txt', {}, { read: true }).metadataHash()).toEqual(a);
    expect(root.metadataHashAt(NOFOLLOW, 'b.txt')).not.toEqual(a);
  });

  it('are SipHash-2-4 (the reference vector for 16 bytes under key 00..0f)', () => {
    const key = new Uint32Array([0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c]);
    expect(sipHash24(key, 0x0706050403020100n, 0x0f0e0d0c0b0a0908n)).toBe(0x3f2acc7f57c29bdbn);
  });
});
