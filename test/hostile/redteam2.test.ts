/**
 * Red team, second round: the newest rules (links a tool makes only
 * descend; moves may not change whether a link leads inside; kernel
 * filesystems are never opened), pinned on the descriptors a component's
 * glue calls, over real host folders. Tests marked `it.fails` are open holes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callFilesystem, type CallFilesystem, type Descriptor } from '@corral/wasi/fs';
import { hostMountOpeners, openHostDirectory } from '@corral/node';

const SECRET = 'SECRET-OUTSIDE-5e3a';

let base: string;
let mount: string;
let outside: string;
let call: CallFilesystem | undefined;

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** What the host reads when it follows `path` (an agent's `cat`), or undefined. */
function hostReads(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'corral-redteam2-')));
  mount = join(base, 'mount');
  outside = join(base, 'outside');
  mkdirSync(join(mount, 'dir', 'sub'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), SECRET);
});

afterEach(() => {
  call?.close();
  call = undefined;
  execFileSync('rm', ['-rf', base]);
});

function mountRw(...hostPaths: string[]): Descriptor[] {
  call = callFilesystem(
    hostPaths.map((path, i) => ({ guest: `/m${i}`, access: 'read-write' as const, source: { kind: 'host', path } })),
    1 << 20,
    hostMountOpeners(),
  );
  return call.preopens.slice(0, hostPaths.length).map(([d]) => d);
}

describe('a host link that leads out is not re-aimed by moving it down', () => {
  // `l -> ../../outside/secret.txt` at the mount root leads to base/../outside:
  // nowhere (dangling). One folder down it is base/outside/secret.txt. Moving a
  // link down was refused only when it would then read as inside; one that
  // still leads out, elsewhere, moved, and the host following it read the secret.
  it('renaming it one folder down is refused', () => {
    symlinkSync('../../outside/secret.txt', join(mount, 'l'));
    const [root] = mountRw(mount);
    expect(thrown(() => root!.renameAt('l', root!, 'dir/l'))).toBe('not-permitted');
    expect(hostReads(join(mount, 'dir', 'l'))).toBeUndefined();
  });

  it('hard-linking it one folder down is refused', () => {
    symlinkSync('../../outside/secret.txt', join(mount, 'l'));
    const [root] = mountRw(mount);
    expect(thrown(() => root!.linkAt({}, 'l', root!, 'dir/l'))).toBe('not-permitted');
    expect(hostReads(join(mount, 'dir', 'l'))).toBeUndefined();
  });

  it('moving the folder holding it down is refused', () => {
    mkdirSync(join(mount, 'pkgs'));
    symlinkSync('../../../outside/secret.txt', join(mount, 'pkgs', 'l'));
    const [root] = mountRw(mount);
    expect(thrown(() => root!.renameAt('pkgs', root!, 'dir/pkgs'))).toBe('not-permitted');
    expect(hostReads(join(mount, 'dir', 'pkgs', 'l'))).toBeUndefined();
    // Sideways (same depth) it means the same: it moves.
    expect(thrown(() => root!.renameAt('pkgs', root!, 'pkgs2'))).toBeUndefined();
  });
});

describe('links a tool makes, through links the host made', () => {
  // Open. A target without `..` descends only by its text, but each name in it
  // may be a link the host made that leads out (`up -> ..`, npm's
  // `node_modules/x -> ../../../x`, `sysroot -> /`): the tool's link then leads
  // out too, to a file of its choosing below the host link's target, for the
  // host (an agent reading the tool's output folder) to follow. Corral itself
  // never follows it for the guest. Refusing such targets at symlink time is
  // not enough: the tool can make `l -> x/...` first and rename the host's
  // link (or a folder holding one) to `x` afterwards, at the same depth.
  it.fails('a link made through a host link that climbs out does not lead out', () => {
    symlinkSync('..', join(mount, 'up'));
    const [root] = mountRw(mount);
    thrown(() => root!.symlinkAt('up/outside/secret.txt', 'l'));
    expect(hostReads(join(mount, 'l'))).toBeUndefined();
  });

  it.fails('a link made first and aimed through a host link renamed onto its path does not lead out', () => {
    symlinkSync('..', join(mount, 'up'));
    const [root] = mountRw(mount);
    thrown(() => root!.symlinkAt('x/outside/secret.txt', 'l'));
    thrown(() => root!.renameAt('up', root!, 'x'));
    expect(hostReads(join(mount, 'l'))).toBeUndefined();
  });
});

describe('a read-write mount of / changes nothing on kernel filesystems', () => {
  const root = () => {
    call = callFilesystem([{ guest: '/', access: 'read-write', source: { kind: 'host', path: '/' } }], 1 << 20, hostMountOpeners());
    return call.preopens[0]![0];
  };

  // Running as root (containers, CI): mkdir in cgroupfs made a cgroup, and
  // set-times changed sysfs files. Only opening files was refused.
  it('mkdir in cgroupfs makes no cgroup', () => {
    const pids = ['/sys/fs/cgroup/pids', '/sys/fs/cgroup'].find((p) => existsSync(p) && lstatSync(p).isDirectory());
    if (!pids) return;
    const name = `corral-redteam2-${process.pid}`;
    try {
      expect(thrown(() => root().createDirectoryAt(`${pids.slice(1)}/${name}`))).toBe('not-permitted');
    } finally {
      if (existsSync(join(pids, name))) rmdirSync(join(pids, name));
    }
    expect(existsSync(join(pids, name))).toBe(false);
  });

  it('set-times on a sysfs file or the /proc mount point is refused', () => {
    const before = lstatSync('/sys/kernel/uevent_seqnum').mtimeMs;
    const r = root();
    const t = { tag: 'timestamp', val: { seconds: 5n, nanoseconds: 0 } };
    expect(thrown(() => r.setTimesAt({}, 'sys/kernel/uevent_seqnum', { tag: 'no-change' }, t))).toBe('not-permitted');
    expect(lstatSync('/sys/kernel/uevent_seqnum').mtimeMs).toBe(before);
    expect(thrown(() => r.setTimesAt({}, 'proc', { tag: 'no-change' }, t))).toBe('not-permitted');
  });

  it('a new file is not created on a kernel filesystem', () => {
    // Nothing on procfs accepts a create; the refusal comes first all the same.
    expect(thrown(() => root().openAt({}, 'proc/corral-new', { create: true }, { write: true }))).toBe('not-permitted');
  });

  // Ordinary folders under it still change.
  it('ordinary folders under it still change', () => {
    const r = root();
    r.createDirectoryAt(`${mount.slice(1)}/made`);
    expect(lstatSync(join(mount, 'made')).isDirectory()).toBe(true);
  });
});

describe('a mount of / does not show what the host process has open', () => {
  // readlink of /proc/self/cwd gave the host's working folder (relative to
  // the mount root), /proc/self/fd/N every file, socket and mount folder the
  // host process holds (other calls' folders, the snapshot store).
  it('readlink of /proc/self/cwd, exe and fd/N is refused; so is walking through them', () => {
    call = callFilesystem([{ guest: '/', access: 'read', source: { kind: 'host', path: '/' } }], 1 << 20, hostMountOpeners());
    const root = call.preopens[0]![0];
    for (const path of [
      `proc/${process.pid}/cwd`,
      `proc/${process.pid}/exe`,
      `proc/${process.pid}/fd/0`,
      'proc/self',
      'proc/thread-self',
    ]) {
      expect(
        thrown(() => root.readlinkAt(path)),
        path,
      ).toBe('not-permitted');
    }
    expect(thrown(() => root.statAt({ symlinkFollow: true }, 'proc/self/cwd'))).toBe('not-permitted');
    // Ordinary links still read.
    symlinkSync('dir', join(mount, 'ln'));
    expect(root.readlinkAt(`${mount.slice(1)}/ln`)).toBe('dir');
  });

  it('a mount of /proc itself shows no link either', () => {
    call = callFilesystem([{ guest: '/p', access: 'read', source: { kind: 'host', path: '/proc' } }], 1 << 20, hostMountOpeners());
    const root = call.preopens[0]![0];
    expect(thrown(() => root.readlinkAt('self'))).toBe('not-permitted');
    expect(thrown(() => root.readlinkAt(`${process.pid}/fd/0`))).toBe('not-permitted');
    expect(thrown(() => root.openAt({}, `${process.pid}/environ`, {}, { read: true }))).toBe('not-permitted');
  });
});

describe('two calls of a tool on one folder at once (open: needs a lock across calls)', () => {
  // Call A moves a plain file `x` down into `dir`: renameAt stats `x` (a file:
  // nothing to check) and renames it. Call B, in its own worker, moves the
  // host's dangling link `l -> ../../outside/secret.txt` onto `x` at the same
  // depth (allowed: it means the same there). If B's rename lands between A's
  // stat and A's rename(2), A moves the link down unchecked, and it now names
  // base/outside/secret.txt. The window is microseconds, but two calls can try
  // millions of times. Played out in one thread: B's rename runs inside A's
  // backend.rename, just before the real one.
  it.fails('a file moved down while another call swaps it for an outward link does not carry the link down', () => {
    writeFileSync(join(mount, 'x'), 'plain');
    symlinkSync('../../outside/secret.txt', join(mount, 'l'));
    const callB = callFilesystem(
      [{ guest: '/m', access: 'read-write', source: { kind: 'host', path: mount } }],
      1 << 20,
      hostMountOpeners(),
    );
    const b = callB.preopens[0]![0];
    let once = true;
    call = callFilesystem([{ guest: '/m', access: 'read-write', source: { kind: 'host', path: mount } }], 1 << 20, {
      host: (source) => {
        const real = openHostDirectory(source.path as string);
        return new Proxy(real, {
          get: (t, k) => {
            if (k === 'rename') {
              return (fromDir: unknown, fromName: string, toDir: unknown, toName: string) => {
                if (once) {
                  once = false;
                  b.renameAt('l', b, 'x'); // call B
                }
                real.rename(fromDir, fromName, toDir, toName);
              };
            }
            const v = Reflect.get(t, k);
            return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
          },
        });
      },
    });
    const a = call.preopens[0]![0];
    try {
      thrown(() => a.renameAt('x', a, 'dir/x'));
      expect(hostReads(join(mount, 'dir', 'x'))).not.toBe(SECRET);
    } finally {
      callB.close();
    }
  });
});
