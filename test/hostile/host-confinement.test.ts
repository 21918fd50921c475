/**
 * Both ways a host folder can be held (@corral/node's host-fs.ts): 'fd'
 * (Linux: O_PATH descriptors, race-free) and 'path' (the fallback on systems
 * without /proc: checked real paths). Without a racing host, both must
 * refuse every escape a tool can attempt; only 'fd' also holds against a
 * host swapping folders meanwhile (the fuzz checks that).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callFilesystem, type CallFilesystem, type Descriptor } from '@corral/wasi/fs';
import { Worker } from 'node:worker_threads';
import { Corral, exactHostFileTimes, hostConfinement, hostMountOpeners, type Confinement } from '@corral/node';
import { thrown } from '../helpers/thrown.js';

const SECRET = 'SECRET-CONFINEMENT-77';
let base: string;
let mount: string;
let outside: string;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'corral-confinement-')));
  mount = join(base, 'mount');
  outside = join(base, 'outside');
  mkdirSync(join(mount, 'dir'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), SECRET);
  writeFileSync(join(mount, 'dir', 'inside.txt'), 'inside');
  symlinkSync(outside, join(mount, 'abs-out'));
  symlinkSync('../outside', join(mount, 'rel-out'));
  symlinkSync('dir', join(mount, 'in'));
  execFileSync('mkfifo', [join(mount, 'fifo')]);
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

it('this Linux machine holds host folders by fd', () => {
  expect(process.platform === 'linux' ? hostConfinement() : 'fd').toBe('fd');
});

it('the native file-times addon is built at install and loads in a worker thread, where tools run', async () => {
  expect(exactHostFileTimes()).toBe(true);
  const worker = new Worker(
    "import('@corral/node').then((m) => require('node:worker_threads').parentPort.postMessage(m.exactHostFileTimes()))",
    { eval: true },
  );
  const answer = await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
  await worker.terminate();
  expect(answer).toBe(true);
});

it("the pool's own sandbox worker (the bundled one after npm run build) sets a host folder's times to the nanosecond", async () => {
  // The bundle once looked for the addon relative to its own folder, missed it, and fell back to
  // Node's utimes without a word: times came back rounded to the microsecond.
  writeFileSync(join(mount, 'file.txt'), 'hello\n');
  const corral = await Corral.create({ size: 1, store: false, bundled: false, spareWorker: false });
  try {
    const wasm = readFileSync(new URL('../wasi/programs/nanotimes.wasm', import.meta.url));
    const result = await corral.exec(wasm, {
      mounts: [{ guest: '/sandbox', access: 'read-write', source: { kind: 'host', path: mount } }],
    });
    const stdout = new TextDecoder().decode(result.stdout);
    expect(stdout).toContain('after utimensat: atim 1234567890.123456789 mtim 1600000000.987654321');
    expect(stdout).toContain('after futimens: atim 1700000000.000000001 mtim 1700000001.999999999');
  } finally {
    await corral.close();
  }
});

// wasi-testsuite rust/fd_filestat_set, path_filestat, symlink_filestat: a time set is read back
// to the nanosecond. Node's utimes carry seconds as a double (~240 ns today) and cannot leave a
// time unchanged; host folders set times through utimensat/futimens (native/file-times.c).
describe.each(['fd', 'path'] as Confinement[])('file times on a folder held by %s', (confinement) => {
  const ns = (t: { seconds: bigint; nanoseconds: number } | undefined) => t!.seconds * 1_000_000_000n + BigInt(t!.nanoseconds);
  const at = (n: bigint) => ({ tag: 'timestamp', val: { seconds: n / 1_000_000_000n, nanoseconds: Number(n % 1_000_000_000n) } });
  const keep = { tag: 'no-change' };
  const T = 1_700_000_000_123_456_789n;
  let call: CallFilesystem;
  let root: Descriptor;
  beforeEach(() => {
    call = callFilesystem(
      [{ guest: '/data', access: 'read-write', source: { kind: 'host', path: mount } }],
      1 << 20,
      hostMountOpeners(confinement),
    );
    root = call.preopens[0]![0];
  });
  afterEach(() => call.close());

  it('an open file, a path, a link itself and a folder take times to the nanosecond; no-change leaves a time exactly', () => {
    const file = root.openAt({}, 'dir/inside.txt', {}, { read: true, write: true });
    const atime = statSync(join(mount, 'dir', 'inside.txt'), { bigint: true }).atimeNs;
    file.setTimes(keep, at(T));
    expect(ns(file.stat().dataModificationTimestamp)).toBe(T);
    expect(statSync(join(mount, 'dir', 'inside.txt'), { bigint: true }).mtimeNs).toBe(T);
    expect(ns(file.stat().dataAccessTimestamp)).toBe(atime);

    root.setTimesAt({ symlinkFollow: true }, 'in/inside.txt', at(T + 1n), at(T - 100n));
    expect(ns(root.statAt({}, 'dir/inside.txt').dataAccessTimestamp)).toBe(T + 1n);
    expect(ns(root.statAt({}, 'dir/inside.txt').dataModificationTimestamp)).toBe(T - 100n);

    // Without symlinkFollow the link itself changes, not what it names.
    root.setTimesAt({}, 'in', keep, at(T + 7n));
    expect(lstatSync(join(mount, 'in'), { bigint: true }).mtimeNs).toBe(T + 7n);
    expect(statSync(join(mount, 'dir', 'inside.txt'), { bigint: true }).mtimeNs).toBe(T - 100n);

    const dir = root.openAt({}, 'dir', { directory: true }, { read: true, mutateDirectory: true });
    dir.setTimes(at(T + 3n), at(T + 9n));
    expect(statSync(join(mount, 'dir'), { bigint: true }).mtimeNs).toBe(T + 9n);
    expect(statSync(join(mount, 'dir'), { bigint: true }).atimeNs).toBe(T + 3n);
  });

  it('"now" is the clock, and times outside what the host can hold are refused without touching the file', () => {
    const before = BigInt(Date.now() - 1000) * 1_000_000n;
    root.setTimesAt({}, 'dir/inside.txt', { tag: 'now' }, { tag: 'now' });
    const after = BigInt(Date.now() + 1000) * 1_000_000n;
    const m = statSync(join(mount, 'dir', 'inside.txt'), { bigint: true }).mtimeNs;
    expect(m > before && m < after).toBe(true);
    // 2^40 seconds: a datetime a component may give, far past what utimensat takes here.
    const huge = { tag: 'timestamp', val: { seconds: 2n ** 40n, nanoseconds: 0 } };
    expect(thrown(() => root.setTimesAt({}, 'dir/inside.txt', keep, huge))).toBe('overflow');
    expect(statSync(join(mount, 'dir', 'inside.txt'), { bigint: true }).mtimeNs).toBe(m);
  });

  it("without the addon, Node's utimes still sets times to within a microsecond", () => {
    const fallback = callFilesystem(
      [{ guest: '/data', access: 'read-write', source: { kind: 'host', path: mount } }],
      1 << 20,
      hostMountOpeners(confinement, { exactTimes: false }),
    );
    try {
      fallback.preopens[0]![0].setTimesAt({}, 'dir/inside.txt', at(T), at(T));
      const m = statSync(join(mount, 'dir', 'inside.txt'), { bigint: true }).mtimeNs;
      expect(m - T < 1000n && T - m < 1000n).toBe(true);
    } finally {
      fallback.close();
    }
  });
});

describe.each(['fd', 'path'] as Confinement[])('held by %s', (confinement) => {
  let call: CallFilesystem;
  let root: Descriptor;
  beforeEach(() => {
    call = callFilesystem(
      [{ guest: '/data', access: 'read-write', source: { kind: 'host', path: mount } }],
      1 << 20,
      hostMountOpeners(confinement),
    );
    root = call.preopens[0]![0];
  });
  afterEach(() => call.close());

  const read = (d: Descriptor, path: string) => {
    const f = d.openAt({ symlinkFollow: true }, path, {}, { read: true });
    return new TextDecoder().decode(f.read(1024n, 0n)[0]);
  };

  it('follows links inside, refuses every way out, never blocks on a FIFO', () => {
    expect(read(root, 'in/inside.txt')).toBe('inside');
    for (const path of ['../outside/secret.txt', 'abs-out/secret.txt', 'rel-out/secret.txt', 'dir/../../outside/secret.txt']) {
      expect(
        thrown(() => read(root, path)),
        path,
      ).toBe('not-permitted');
    }
    expect(thrown(() => read(root, 'fifo'))).toBe('not-permitted');
    expect(thrown(() => root.readlinkAt('abs-out'))).toBe('not-permitted');
    expect(root.readlinkAt('in')).toBe('dir');
  });

  it('a held directory swapped (by the tool) for an outward link leads nowhere', () => {
    const dir = root.openAt({}, 'dir', { directory: true }, { read: true, mutateDirectory: true });
    root.renameAt('dir', root, 'dir-old');
    root.renameAt('abs-out', root, 'dir');
    expect(thrown(() => read(dir, 'secret.txt'))).toBe('not-permitted');
    expect(thrown(() => dir.openAt({}, 'new.txt', { create: true }, { write: true }))).toBe('not-permitted');
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
  });

  it('a held directory renamed by the host is looked up by its path again', () => {
    const dir = root.openAt({}, 'dir', { directory: true }, { read: true });
    renameSync(join(mount, 'dir'), join(mount, 'moved'));
    expect(thrown(() => read(dir, 'inside.txt'))).toBe('no-entry');
  });
});
