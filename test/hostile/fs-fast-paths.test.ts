/**
 * The shortcuts that make walking a mount cheap (issue 13's grep bench),
 * each pinned against the hole it could open, over a real host folder and
 * the descriptors a component's glue calls:
 *   - a listing's batch of metadata hashes (the preview1 adapter's d_ino);
 *   - an open file's type and identity, taken once when it is opened;
 *   - directory handles kept between uses of a directory descriptor,
 *     checked against where the kernel says they are before each use;
 *   - metadata hashes themselves, which say which object a name is without
 *     telling the guest the host's device and inode numbers.
 * A shortcut may answer only what the slow path would have answered at
 * some moment of the call, and never about an object outside the mount.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
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

describe("a listing's own hash (the inode of `.`)", () => {
  it('answers the first metadata-hash right after the listing, and only that one', () => {
    const dir = root.openAt({}, 'dir', { directory: true }, { read: true });
    const before = dir.metadataHash();
    dir.readDirectory();
    // The host swaps the folder after the listing: `.` is the folder that was listed...
    renameSync(join(mount, 'dir'), join(outside, 'listed'));
    mkdirSync(join(mount, 'dir'));
    expect(dir.metadataHash()).toEqual(before);
    // ...and any later question is about the folder there now.
    const now = dir.metadataHash();
    expect(now).not.toEqual(before);
    dir.readDirectory();
    dir.openAt({}, '.', { directory: true }, { read: true });
    renameSync(join(mount, 'dir'), join(outside, 'listed-2'));
    mkdirSync(join(mount, 'dir'));
    expect(dir.metadataHash()).not.toEqual(now);
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

describe('directory handles kept between uses of a descriptor', () => {
  const names = (d: Descriptor) => {
    const out: string[] = [];
    const stream = d.readDirectory();
    for (let e = stream.readDirectoryEntry(); e; e = stream.readDirectoryEntry()) out.push(e.name);
    return out;
  };
  const text = (d: Descriptor, path: string) => new TextDecoder().decode(d.openAt({}, path, {}, { read: true }).read(100n, 0n)[0]);

  /** A descriptor for mount/dir/sub, used once so that its handle is kept. */
  function keptSub(): Descriptor {
    mkdirSync(join(mount, 'dir', 'sub'));
    writeFileSync(join(mount, 'dir', 'sub', 'in.txt'), 'in\n');
    const sub = root.openAt({}, 'dir/sub', { directory: true }, { read: true });
    expect(names(sub)).toEqual(['in.txt']);
    expect(text(sub, 'in.txt')).toBe('in\n');
    return sub;
  }

  it('a folder the host moved out of the mount is not reached through its kept handle', () => {
    const sub = keptSub();
    renameSync(join(mount, 'dir', 'sub'), join(outside, 'sub'));
    expect(thrown(() => names(sub))).toBe('no-entry');
    expect(thrown(() => text(sub, 'in.txt'))).toBe('no-entry');
    // A folder made where it was is the one the descriptor names now.
    mkdirSync(join(mount, 'dir', 'sub'));
    writeFileSync(join(mount, 'dir', 'sub', 'new.txt'), 'new\n');
    expect(names(sub)).toEqual(['new.txt']);
  });

  it('a folder whose parent the host moved out is not reached either', () => {
    const sub = keptSub();
    renameSync(join(mount, 'dir'), join(outside, 'dir'));
    expect(thrown(() => names(sub))).toBe('no-entry');
    expect(thrown(() => sub.metadataHashAt(NOFOLLOW, 'in.txt'))).toBe('no-entry');
  });

  it('a folder the host swapped for a symlink out of the mount is refused, not listed', () => {
    const sub = keptSub();
    renameSync(join(mount, 'dir', 'sub'), join(outside, 'sub'));
    symlinkSync(join(outside, 'sub'), join(mount, 'dir', 'sub'));
    expect(thrown(() => names(sub))).toBe('not-permitted');
    expect(thrown(() => text(sub, 'in.txt'))).toBe('not-permitted');
  });

  it('a folder removed and made again is the new one (the kept handle reads as deleted)', () => {
    const sub = keptSub();
    unlinkSync(join(mount, 'dir', 'sub', 'in.txt'));
    rmdirSync(join(mount, 'dir', 'sub'));
    mkdirSync(join(mount, 'dir', 'sub'));
    writeFileSync(join(mount, 'dir', 'sub', 'again.txt'), 'again\n');
    expect(names(sub)).toEqual(['again.txt']);
  });

  it('a folder the tool renamed is no longer what the descriptor names', () => {
    const sub = keptSub();
    root.renameAt('dir/sub', root, 'dir/moved');
    expect(thrown(() => names(sub))).toBe('no-entry');
    root.renameAt('dir/moved', root, 'dir/sub');
    expect(names(sub)).toEqual(['in.txt']);
  });

  it('a mount root the host moved away, with the kept folder moved into a new folder at its path, is not the mount', () => {
    const sub = keptSub();
    renameSync(mount, join(base, 'old-mount'));
    mkdirSync(join(mount, 'dir'), { recursive: true });
    renameSync(join(base, 'old-mount', 'dir', 'sub'), join(mount, 'dir', 'sub'));
    // The mount is the folder the call opened (held by its descriptor), now old-mount: no dir/sub there.
    expect(thrown(() => names(sub))).toBe('no-entry');
  });

  it("a folder named '… (deleted)' is not taken for the removed folder that read so (the kernel's suffix is no proof)", () => {
    // The tool alone: its kept handle of 'x (deleted)' is renamed to 'x' and
    // removed, so /proc reads it as '<mount>/x (deleted)', byte for byte the
    // path a descriptor of the new 'x (deleted)' expects.
    root.createDirectoryAt('x (deleted)');
    const d = root.openAt({}, 'x (deleted)', { directory: true }, { read: true, mutateDirectory: true });
    expect(names(d)).toEqual([]);
    root.renameAt('x (deleted)', root, 'x');
    root.createDirectoryAt('x (deleted)');
    writeFileSync(join(mount, 'x (deleted)', 'new.txt'), 'new\n');
    root.removeDirectoryAt('x');
    expect(names(d)).toEqual(['new.txt']);
    d.openAt({}, 'made.txt', { create: true }, { write: true });
    expect(readdirSync(join(mount, 'x (deleted)')).sort()).toEqual(['made.txt', 'new.txt']);
  });

  it('holds a bounded number of host descriptors, and none once the call ends', () => {
    const open = () => readdirSync('/proc/self/fd').length;
    const before = open();
    for (let i = 0; i < 200; i++) mkdirSync(join(mount, `d${i}`));
    const dirs = Array.from({ length: 200 }, (_, i) => root.openAt({}, `d${i}`, { directory: true }, { read: true }));
    for (const d of dirs) names(d);
    for (const d of dirs.reverse()) names(d);
    // 32 kept per mount, plus slack for whatever vitest opens meanwhile.
    expect(open() - before).toBeLessThanOrEqual(40);
    call.close();
    expect(open() - before).toBeLessThanOrEqual(8);
  });
});
