/**
 * Red-team findings: each test pins one way a hostile tool (or a careless
 * host) broke a promise of SECURITY.md, through the descriptors a
 * component's glue calls (or a preview1 module's imports), over real host
 * folders. Each test failed before its fix.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transpileComponent } from '@corral/wasi';
import { callFilesystem, KEPT_DIRECTORIES, type CallFilesystem, type Descriptor } from '@corral/wasi/fs';
import { guardLiftedLists } from '../../packages/wasi/src/glue.js';
import { hostMountOpeners, openHostDirectory } from '@corral/node';
import { runInChild } from './child.js';
import { thrown } from '../helpers/thrown.js';

const SECRET = 'SECRET-OUTSIDE-7c1d';
/** open(2)'s O_PATH (Linux), with O_DIRECTORY. */
const O_PATH_DIR = 0o10000000 | constants.O_DIRECTORY;

let base: string;
let mount: string;
let outside: string;
let call: CallFilesystem | undefined;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'corral-redteam-')));
  mount = join(base, 'mount');
  outside = join(base, 'outside');
  mkdirSync(join(mount, 'dir', 'sub'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), SECRET);
});

afterEach(() => {
  call?.close();
  call = undefined;
  // GNU rm: rmSync recurses, and the deep trees below overflow its stack.
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

describe('links a tool makes point only inside its mount, also for the host', () => {
  it('a `..` after a symlink in a link target is judged physically, not by its text', () => {
    const [root] = mountRw(mount);
    // `here -> .` stays inside; `l -> here/../outside/secret.txt` reads as inside by its text
    // (here, .., outside: never above the root), but the kernel follows `here` first, to the
    // mount root, and `..` from there is the mount's parent.
    root!.symlinkAt('.', 'here');
    const made = thrown(() => root!.symlinkAt('here/../outside/secret.txt', 'l'));
    if (made === undefined) {
      // The host (an agent's `cat`, an editor) now reads outside the mount through it.
      expect(readFileSync(join(mount, 'l'), 'utf8')).not.toBe(SECRET);
    }
    expect(made).toBe('not-permitted');
  });

  it('two read-write mounts, one inside the other: a link made in the outer one cannot be moved up in the inner one to lead out of both', () => {
    // The caller binds a project at /m0 and its `dir` at /m1, both read-write.
    const [, inner] = mountRw(mount, join(mount, 'dir'));
    // In /m0, dir/sub/l -> ../../outside/secret.txt leads to mount/outside/secret.txt: inside.
    symlinkSync('../../outside/secret.txt', join(mount, 'dir', 'sub', 'l'));
    // In /m1 the same link, sub/l, already leads out of /m1, so moving it up was allowed ...
    const moved = thrown(() => inner!.renameAt('sub/l', inner!, 'l'));
    if (moved === undefined) {
      // ... and mount/dir/l -> ../../outside/secret.txt is base/outside/secret.txt: out of both mounts.
      expect(readFileSync(join(mount, 'dir', 'l'), 'utf8')).not.toBe(SECRET);
    }
    expect(moved).toBe('not-permitted');
  });

  it('a link the host made that leads out cannot be moved up by the tool to lead somewhere else outside', () => {
    const [root] = mountRw(mount);
    // npm-style: the host's dir/sub/pkg -> ../../../outside-ish, one level out of the mount.
    symlinkSync('../../../elsewhere', join(mount, 'dir', 'sub', 'pkg'));
    // Moved two levels up it would name base/../elsewhere: a place outside the host never linked.
    expect(thrown(() => root!.renameAt('dir/sub/pkg', root!, 'pkg'))).toBe('not-permitted');
    expect(thrown(() => root!.linkAt({}, 'dir/sub/pkg', root!, 'pkg2'))).toBe('not-permitted');
  });
});

describe('what the preview1 host does for a guest is bounded', () => {
  // Each runs in a child process: before the fixes they cost the host gigabytes.
  const REDTEAM = new URL('../fixtures/redteam/', import.meta.url).pathname;
  const run = async (tool: string) => {
    const child = await runInChild([{ tool }], { toolDirs: [REDTEAM] });
    expect(child.stderr).not.toMatch(/FATAL ERROR/);
    expect(child.signal).toBeNull();
    expect(child.status).toBe(0);
    expect(child.results).toHaveLength(1);
    return { result: child.results[0]!, maxRssMb: child.maxRssMb! };
  };

  // 1024 iovecs naming the same 2 MiB: the host gathered all 2 GiB into one
  // buffer (2.1 GB RSS) before the disk quota (2 MiB) was asked. Any tool can
  // make it 4 GiB a call (Node's largest buffer), per worker of the pool at once.
  it('fd_write with aliased iovecs copies at most one chunk, whatever the iovecs add up to', async () => {
    const { result, maxRssMb } = await run('p1-iovec-alias');
    expect(maxRssMb).toBeLessThan(400);
    // A short write of 1 MiB: within the quota once, and the tool exits 0.
    expect(result.exit_code).toBe(0);
  }, 120_000);

  // 60 million empty iovecs: a JS object each, until the worker's heap gave out.
  it('fd_write with more than 1,024 iovecs is EINVAL (28), as on Linux', async () => {
    const { result, maxRssMb } = await run('p1-iovec-count');
    expect(result.exit_code).toBe(28);
    expect(maxRssMb).toBeLessThan(800);
  }, 120_000);

  // 22 million subscriptions: two JS objects each; 34 s, then the worker's heap gave out.
  it('poll_oneoff with more than 65,536 subscriptions is EINVAL (28), as a component poll list is refused', async () => {
    const { result, maxRssMb } = await run('p1-poll-flood');
    expect(result.exit_code).toBe(28);
    expect(result.ms).toBeLessThan(10_000);
    expect(maxRssMb).toBeLessThan(1200);
  }, 120_000);
});

describe('a walk holds a bounded number of directory fds, however deep the tree', () => {
  /** Make `levels` nested folders `a` under `dir` (host side, 1,000 at a time through /proc, past PATH_MAX). */
  function deepTree(dir: string, levels: number): void {
    let fd = openSync(dir, O_PATH_DIR);
    for (let done = 0; done < levels; done += 1000) {
      const step = Math.min(1000, levels - done);
      const rel = Array(step).fill('a').join('/');
      mkdirSync(`/proc/self/fd/${fd}/${rel}`, { recursive: true });
      const next = openSync(`/proc/self/fd/${fd}/${rel}`, O_PATH_DIR);
      closeSync(fd);
      fd = next;
    }
    closeSync(fd);
  }

  /** A descriptor for the folder `levels` deep (descriptors are paths from the root: each open re-walks them). */
  function deepDescriptor(root: Descriptor, levels: number): Descriptor {
    let d = root;
    for (let done = 0; done < levels; done += 1000) {
      const step = Math.min(1000, levels - done);
      d = d.openAt({}, Array(step).fill('a').join('/'), { directory: true }, { read: true, mutateDirectory: true });
    }
    return d;
  }

  // Every directory of a walk was held (an O_PATH fd) until the walk ended:
  // a tool that made a deep tree (512 bytes of quota a folder) made every
  // use of a deep descriptor take one fd per level from the whole process.
  it('a descriptor 3,000 folders deep holds few fds at once', () => {
    deepTree(mount, 3000);
    let held = 0;
    let most = 0;
    call = callFilesystem([{ guest: '/m', access: 'read-write', source: { kind: 'host', path: mount } }], 1 << 20, {
      host: (source) => {
        const real = openHostDirectory(source.path as string);
        // Every other method, bound to the real backend (it has private fields).
        const bound = (k: string) => (Reflect.get(real, k) as (...a: unknown[]) => unknown).bind(real);
        const counting = new Proxy(real, {
          get: (t, k) => {
            if (k === 'openDirectory') {
              return (dir: unknown, name: string) => {
                const d = real.openDirectory(dir, name);
                most = Math.max(most, ++held);
                return d;
              };
            }
            if (k === 'releaseDirectory') {
              return (dir: unknown) => {
                held--;
                real.releaseDirectory(dir);
              };
            }
            const v = Reflect.get(t, k);
            return typeof v === 'function' ? bound(k as string) : v;
          },
        });
        return counting;
      },
    });
    const deep = deepDescriptor(call.preopens[0]![0], 3000);
    most = 0;
    deep.createDirectoryAt('leaf');
    expect(deep.statAt({}, 'leaf').type).toBe('directory');
    // Between uses, only the handles a mount keeps for its descriptors (KEPT_DIRECTORIES); none after the call.
    expect(held).toBeLessThanOrEqual(KEPT_DIRECTORIES);
    expect(most).toBeLessThan(100);
    call.close();
    expect(held).toBe(0);
  });

  it('`..` back up a deep walk reaches the folders it let go of, by name', () => {
    deepTree(mount, 200);
    writeFileSync(join(mount, ...Array(50).fill('a'), 'marker'), 'at 50');
    const [root] = mountRw(mount);
    const deep = deepDescriptor(root!, 200);
    // Down 100 more names and up 250: folder 50, then its marker.
    const path = [...Array(150).fill('..'), 'marker'].join('/');
    expect(thrown(() => deep.statAt({}, path))).toBe('not-permitted'); // never above the descriptor
    const mid = root!.openAt({}, Array(40).fill('a').join('/'), { directory: true }, { read: true });
    const there = [...Array(100).fill('a'), ...Array(90).fill('..'), 'marker'].join('/');
    expect(mid.statAt({}, there).size).toBe(5n);
    // A link 120 levels down that climbs back 80: resolved through the re-opened folders.
    symlinkSync([...Array(80).fill('..'), 'marker'].join('/'), join(mount, ...Array(130).fill('a'), 'up'));
    expect(root!.statAt({ symlinkFollow: true }, [...Array(130).fill('a'), 'up'].join('/')).size).toBe(5n);
  });

  it('a folder deeper than the move check reaches is not moved up', () => {
    deepTree(join(mount, 'dir', 'sub'), 100);
    const [root] = mountRw(mount);
    expect(thrown(() => root!.renameAt('dir/sub/a', root!, 'a'))).toBe('not-permitted');
    // Sideways or down, nothing to check: it moves.
    expect(thrown(() => root!.renameAt('dir/sub/a', root!, 'dir/sub/b'))).toBeUndefined();
  });

  // With this many levels, the walk itself runs the process out of fds
  // (EMFILE): while it lasts, nothing else in the host can open a file.
  it('a tree deeper than the process may hold fds is still walked, and the host keeps fds to spare', () => {
    const limit = Number(/Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 'NaN');
    if (!(limit <= 65536)) return; // too many to exhaust here
    const levels = limit + 500;
    deepTree(mount, levels);
    const [root] = mountRw(mount);
    const deep = deepDescriptor(root!, levels);
    expect(thrown(() => deep.createDirectoryAt('leaf'))).toBeUndefined();
  }, 120_000);
});

describe('memory caps hold per call, not per core instance', () => {
  const REDTEAM = new URL('../fixtures/redteam/', import.meta.url).pathname;

  // Caps are rewritten into each core module; a component instantiated one
  // module 16 times and each instance filled its own 256 MiB: 4.3 GB of host
  // RSS for memory_mb 256 (and memory_mb 4096 with 100 copies is 400 GB).
  it('a component that instantiates one core module 16 times gets one memory cap, not 16', async () => {
    const child = await runInChild([{ tool: 'instance-hog' }], { toolDirs: [REDTEAM] });
    expect(child.status).toBe(0);
    expect(child.results).toHaveLength(1);
    expect(child.maxRssMb).toBeLessThan(1200);
    expect(child.results[0]!.error?.code).toBe('E_RESOURCE_EXHAUSTED');
    expect(child.results[0]!.error?.details).toMatchObject({ resource: 'memory' });
  }, 120_000);
});

describe('lists the glue lifts element by element are bounded before they are built', () => {
  const REDTEAM = new URL('../fixtures/redteam/', import.meta.url).pathname;

  // poll(list<borrow<pollable>>) with 200 million copies of one handle: jco's
  // glue builds a JS array of them before Corral's poll can refuse the list,
  // and the array's growth crossed the worker's heap limit in one step:
  // "FATAL ERROR: Reached heap limit", SIGABRT, the whole host process gone.
  it('poll with 200 million pollables traps the tool; the host lives', async () => {
    const child = await runInChild([{ tool: 'poll-bomb' }], { toolDirs: [REDTEAM] });
    expect(child.stderr).not.toMatch(/FATAL ERROR/);
    expect(child.signal).toBeNull();
    expect(child.status).toBe(0);
    expect(child.results).toHaveLength(1);
    // A trap, not the timeout (that would be E_RESOURCE_EXHAUSTED): the guard stopped the lift before it was built.
    // No wall-clock bound: on a loaded machine compiling the tool alone can take seconds.
    expect(child.results[0]!.error?.code).toBe('E_UNEXPECTED_EXIT');
  }, 120_000);

  // The guard is a rewrite of jco's glue: if a jco upgrade changes its lifting loops, this fails first.
  it("the guard finds every lifting loop in jco's glue", async () => {
    const prepared = await transpileComponent(readFileSync(join(REDTEAM, 'poll-bomb', 'poll-bomb.wasm')), 'poll-bomb');
    const loops = prepared.glue.match(/for \(let i = 0; i < len\d+; i\+\+\)/g) ?? [];
    expect(loops.length).toBeGreaterThan(0);
    const guarded = guardLiftedLists(prepared.glue);
    expect(guarded.match(/__corralLifted \+= len\d+ >>> 0\) > 65536\) throw/g)).toHaveLength(loops.length);
    expect(
      guarded.match(/function trampoline\d+\([^)]*\) \{ __corralLifted = 0; __corralStringBytes = 0; __corralListBytes = 0;/g)?.length,
    ).toBeGreaterThan(0);
  }, 60_000);
});

describe('two calls of a tool on one folder at once', () => {
  // Two parallel calls of one hostile tool share a read-write folder. Call A
  // makes dir/sub/l -> ../../outside/secret.txt: from dir/sub (2 deep) that is
  // mount/outside/secret.txt, inside. Call B moves dir/sub up to sub: its check
  // scans sub for links that would lead out once moved, finds none yet, and
  // moves it. If B's rename lands between A's check and A's symlink(2) (A holds
  // sub's fd, which moves with it), the link is made 1 deep and leads to
  // base/outside/secret.txt. Each window is microseconds, but two calls can
  // try millions of times. Here the interleaving is played out in one thread:
  // B's rename runs inside A's backend.symlink, just before the real one.
  // Closed by refusing `..` in every link a tool makes: such a link leads
  // inside from wherever it lands, so there is nothing left to race.
  it('a link made while another call moves its folder up still leads inside', () => {
    const callB = callFilesystem(
      [{ guest: '/m', access: 'read-write', source: { kind: 'host', path: mount } }],
      1 << 20,
      hostMountOpeners(),
    );
    const b = callB.preopens[0]![0];
    call = callFilesystem([{ guest: '/m', access: 'read-write', source: { kind: 'host', path: mount } }], 1 << 20, {
      host: (source) => {
        const real = openHostDirectory(source.path as string);
        return new Proxy(real, {
          get: (t, k) => {
            if (k === 'symlink') {
              return (dir: unknown, name: string, target: string) => {
                b.renameAt('dir/sub', b, 'sub'); // call B, in its own worker
                real.symlink(dir, name, target);
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
      expect(thrown(() => a.symlinkAt('../../outside/secret.txt', 'dir/sub/l'))).toBe('not-permitted');
      // A link that only descends is made, and moves with its folder without leading out.
      a.symlinkAt('inside.txt', 'dir/sub/l');
      expect(readlinkSync(join(mount, 'sub', 'l'))).toBe('inside.txt');
    } finally {
      callB.close();
    }
  });
});

describe('held folders', () => {
  // The times left unchanged were read with lstat of /proc/<pid>/fd/N, the
  // fd's magic link: setting a folder's mtime set its atime to about now.
  it('set-times on a directory descriptor leaves the time it was not asked to change', () => {
    utimesSync(join(mount, 'dir'), 1000, 2000);
    const [root] = mountRw(mount);
    const dir = root!.openAt({}, 'dir', { directory: true }, { read: true, mutateDirectory: true });
    dir.setTimes({ tag: 'no-change' }, { tag: 'timestamp', val: { seconds: 5000n, nanoseconds: 0 } });
    expect(statSync(join(mount, 'dir')).atimeMs).toBe(1_000_000);
    expect(statSync(join(mount, 'dir')).mtimeMs).toBe(5_000_000);
  });
});

describe('symlink targets are bounded like paths', () => {
  const REDTEAM = new URL('../fixtures/redteam/', import.meta.url).pathname;

  // In /tmp (and OPFS mounts, which are in-memory trees written back with
  // their links in a sidecar file) nothing bounded a link's target: a 200 MB
  // target was stored for the 512 bytes an entry costs, and split into 100
  // million components by the containment check on the way.
  it('path_symlink with a 200 MB target is ENAMETOOLONG (37), as on Linux', async () => {
    const child = await runInChild([{ tool: 'p1-symlink-bomb' }], { toolDirs: [REDTEAM] });
    expect(child.status).toBe(0);
    expect(child.results[0]!.exit_code).toBe(37);
    expect(child.maxRssMb).toBeLessThan(1200);
  }, 120_000);

  it('symlink-at in /tmp refuses a target longer than PATH_MAX; a long one within it is made', () => {
    call = callFilesystem([], 1 << 20);
    const tmp = call.preopens[0]![0];
    expect(thrown(() => tmp.symlinkAt('a/'.repeat(2048) + 'b', 'long'))).toBe('name-too-long');
    expect(thrown(() => tmp.symlinkAt('a/'.repeat(2047) + 'b', 'fits'))).toBeUndefined();
    expect(call.quota.usedBytes).toBe(512);
  });
});

describe('a host folder mounted at /', () => {
  // /proc/self is the host process: its mem file reads any byte of the Node
  // process (other calls' inputs and outputs, secrets the host holds), its
  // environ the host's environment; a read-write mount of / could write mem.
  // Files on kernel filesystems (procfs, sysfs, …) are never opened.
  it("a read-only / mount does not open the host process's memory, environment or maps; ordinary files still read", () => {
    call = callFilesystem([{ guest: '/', access: 'read', source: { kind: 'host', path: '/' } }], 1 << 20, hostMountOpeners());
    const root = call.preopens[0]![0];
    for (const path of [
      'proc/self/mem',
      'proc/self/environ',
      'proc/self/maps',
      `proc/${process.pid}/cmdline`,
      'sys/kernel/uevent_seqnum',
    ]) {
      expect(
        thrown(() => root.openAt({ symlinkFollow: true }, path, {}, { read: true })),
        path,
      ).toBe('not-permitted');
    }
    const passwd = root.openAt({ symlinkFollow: true }, 'etc/passwd', {}, { read: true });
    expect(new TextDecoder().decode(passwd.read(64n, 0n)[0])).toBe(readFileSync('/etc/passwd', 'utf8').slice(0, 64));
  });
});
