/**
 * A property-based fuzz of Corral's guarded filesystem (fast-check).
 *
 * It drives the very objects a guest's component glue calls: the root
 * descriptors `callFilesystem` hands out for a read-write host folder, a
 * read-only host folder and the call's /tmp, called with the argument shapes
 * jco lifts (flags records, bigint offsets, `{tag, val}` timestamps), plus
 * the wrong shapes a lying component can declare. Sequences of operations
 * over a small alphabet of names (so that they collide) open sub-folder
 * descriptors and use them later, after the folders moved (stale
 * descriptors), and keep streams past the descriptor they came from.
 *
 * Meanwhile a host actor in another thread (host-actor.mjs) renames folders
 * inside the mount and swaps them for symlinks out of it, and holds files of
 * its own outside; some sequences also do that synchronously, between two
 * guest operations, so a counterexample that needs it shrinks and replays.
 *
 * Invariants, checked at every operation where cheap and after every
 * sequence:
 *   1. nothing outside the mounts is read: no read result, listing,
 *      readlink result or stat carries a byte, a name or an inode of outside/;
 *   2. nothing outside is written or created: outside/ is unchanged (names,
 *      sizes, contents, mtimes) and the base folder holds only its folders;
 *   3. no host path is revealed by any string the guest gets;
 *   4. the disk quota stays a finite integer within its limit, and the bytes
 *      added to the mounts stay within what it allowed;
 *   5. the read mount is byte-for-byte unchanged;
 * and every failure is a wasi:filesystem error code (or, for a lying
 * argument, a GuestTypeError): anything else escaped a check.
 */
import fc from 'fast-check';
import { Worker } from 'node:worker_threads';
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve as resolvePath, sep } from 'node:path';
import { GuestTypeError } from '@corral/wasi';
import { callFilesystem, metadataHash, type CallFilesystem, type Descriptor } from '@corral/wasi/fs';
import { hostMountOpeners, hostConfinement } from '@corral/node';

// --- the world: base/{mount, outside, ro} ------------------------------------------

/** wasi:filesystem `error-code` cases. */
export const ERROR_CODES = new Set([
  'access',
  'would-block',
  'already',
  'bad-descriptor',
  'busy',
  'deadlock',
  'quota',
  'exist',
  'file-too-large',
  'illegal-byte-sequence',
  'in-progress',
  'interrupted',
  'invalid',
  'io',
  'is-directory',
  'loop',
  'too-many-links',
  'message-size',
  'name-too-long',
  'no-device',
  'no-entry',
  'no-lock',
  'insufficient-memory',
  'insufficient-space',
  'not-directory',
  'not-empty',
  'not-recoverable',
  'unsupported',
  'no-tty',
  'no-such-device',
  'overflow',
  'not-permitted',
  'pipe',
  'read-only',
  'invalid-seek',
  'text-file-busy',
  'cross-device',
]);

const ENTRY_BYTES = 512;
const MAX_POOL = 24;

/**
 * Bytes inside the mounts and the guest's writes are lowercase, digits and a
 * little punctuation; bytes outside are uppercase and '#'. A single byte read
 * from outside is therefore seen, whatever the offset.
 */
const FORBIDDEN_BYTE = new Uint8Array(256);
for (let b = 0x41; b <= 0x5a; b++) FORBIDDEN_BYTE[b] = 1;
FORBIDDEN_BYTE[0x23] = 1; // '#'

type Entry = { path: string; file?: string; link?: string };

/** The mounted folder: ordinary files and folders, inward links (npm workspace style), outward links, loops. */
function mountTree(base: string): Entry[] {
  const mount = join(base, 'mount');
  return [
    { path: 'file.txt', file: 'hello inside\n' },
    { path: 'dir-a/file.txt', file: 'a file in dir-a\n' },
    { path: 'dir-a/sub/deep.txt', file: 'deep in dir-a\n' },
    { path: 'dir-a/up', link: '../../outside' },
    { path: 'dir-a/sib', link: '../dir-b' },
    { path: 'dir-b/file.txt', file: 'a file in dir-b\n' },
    { path: 'dir-b/sub/deep.txt', file: 'deep in dir-b\n' },
    { path: 'packages/pkg/package.json', file: '{"name": "@scope/pkg"}\n' },
    { path: 'packages/pkg/src/main.js', file: 'export const x = 1;\n' },
    { path: 'node_modules/@scope/pkg', link: '../../packages/pkg' },
    { path: 'node_modules/@scope/abs', link: join(mount, 'packages/pkg') },
    { path: 'node_modules/.bin/tool', link: '../@scope/pkg/src/main.js' },
    { path: 'out-abs', link: join(base, 'outside') },
    { path: 'out-abs-file', link: join(base, 'outside/secret.txt') },
    { path: 'out-rel', link: '../outside' },
    { path: 'out-rel-file', link: '../outside/secret.txt' },
    { path: 'out-dotdot', link: '..' },
    { path: 'out-up2', link: '../..' },
    // Absolute, under the mount's own host path, and climbing out of it.
    { path: 'out-abs-dotdot', link: `${mount}/../outside/secret.txt` },
    { path: 'in-abs', link: join(mount, 'dir-a') },
    { path: 'in-rel', link: 'dir-a/sub' },
    { path: 'in-file', link: 'file.txt' },
    { path: 'loop-a', link: 'loop-b' },
    { path: 'loop-b', link: 'loop-a' },
    { path: 'self', link: 'self' },
    { path: 'dot', link: '.' },
    { path: 'dangling', link: 'nowhere' },
  ];
}

/** The read mount: never changed by anyone. */
function roTree(base: string): Entry[] {
  return [
    { path: 'file.txt', file: 'read only\n' },
    { path: 'dir/file.txt', file: 'read only, deeper\n' },
    { path: 'out-rel', link: '../outside' },
    { path: 'out-abs', link: join(base, 'outside/secret.txt') },
    { path: 'in-rel', link: 'dir' },
  ];
}

/** outside/ mirrors the mount's folders, so a path led astray finds something, and holds names found only there. */
function outsideTree(secret: string): Entry[] {
  const s = (n: number) => `${secret}\n`.repeat(n);
  return [
    { path: 'secret.txt', file: s(3) },
    { path: 'file.txt', file: s(2) },
    { path: 'OUTSIDE-ONLY.TXT', file: s(1) },
    { path: 'dir-a/file.txt', file: s(2) },
    { path: 'dir-a/OUTSIDE-ONLY-A.TXT', file: s(1) },
    { path: 'dir-a/sub/deep.txt', file: s(1) },
    { path: 'dir-b/file.txt', file: s(2) },
    { path: 'dir-b/sub/deep.txt', file: s(1) },
    { path: 'packages/pkg/package.json', file: s(1) },
    { path: 'packages/pkg/src/main.js', file: s(1) },
    { path: 'packages/pkg/src/OUTSIDE-ONLY-SRC.TXT', file: s(1) },
    { path: 'node_modules/@scope/OUTSIDE-ONLY-SCOPE.TXT', file: s(1) },
    { path: 'node_modules/@scope/pkg/package.json', file: s(1) },
  ];
}

function build(root: string, entries: Entry[]): void {
  for (const e of entries) {
    const p = join(root, e.path);
    mkdirSync(dirname(p), { recursive: true });
    if (e.file !== undefined) writeFileSync(p, e.file);
    else symlinkSync(e.link!, p);
  }
}

/** Folders the careless host moves; `parent` is walked from the mount root. */
interface HostTarget {
  parent: string[];
  name: string;
  absolute: string;
  relative: string;
}

function target(base: string, path: string): HostTarget {
  const parts = path.split('/');
  return {
    parent: parts.slice(0, -1),
    name: parts[parts.length - 1]!,
    absolute: join(base, 'outside', path),
    relative: `${'../'.repeat(parts.length)}outside/${path}`,
  };
}

const ACTOR_TARGETS = ['dir-a', 'node_modules/@scope', 'packages/pkg/src'];
/** Moved synchronously by sequences (host-swap / host-restore), disjoint from the actor's. */
const SYNC_TARGETS = ['dir-b', 'packages/pkg', 'dir-a/sub'];
const HOLD_FILES = ['secret.txt', 'file.txt', 'dir-a/file.txt'];

/** What identifies the state of every entry under `dir` (not following links; not atime, which reading moves). */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const s = lstatSync(p, { bigint: true });
      const key = relative(dir, p);
      if (s.isSymbolicLink()) out.set(key, `link:${readlinkSync(p)}:${s.mtimeNs}`);
      else if (s.isDirectory()) {
        out.set(key, `dir:${s.mtimeNs}:${s.mode}`);
        walk(p);
      } else if (s.isFile()) out.set(key, `file:${s.size}:${s.mtimeNs}:${s.mode}:${s.nlink}:${readFileSync(p, 'latin1')}`);
      else out.set(key, `other:${s.mode}`);
    }
  };
  walk(dir);
  return out;
}

function diff(before: Map<string, string>, after: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of before) if (after.get(k) !== v) out.push(after.has(k) ? `changed ${k}` : `removed ${k}`);
  for (const k of after.keys()) if (!before.has(k)) out.push(`added ${k}`);
  return out;
}

/** Apparent bytes of the regular files under `dir` (each inode once) and how many entries it holds. */
function usage(dir: string): { bytes: number; entries: number } {
  const seen = new Set<bigint>();
  let bytes = 0;
  let entries = 0;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const s = lstatSync(p, { bigint: true });
      entries++;
      if (s.isDirectory()) walk(p);
      else if (s.isFile() && !seen.has(s.ino)) {
        seen.add(s.ino);
        bytes += Number(s.size);
      }
    }
  };
  walk(dir);
  return { bytes, entries };
}

/** Where a symlink at host path `at` leads when the host itself follows it, lexically. */
function hostDestination(at: string, target: string): string {
  return target.startsWith('/') ? resolvePath(target) : resolvePath(dirname(at), target);
}

function under(root: string, p: string): boolean {
  return p === root || p.startsWith(root + sep);
}

// --- the host actor ------------------------------------------------------------------

const STATE = 0;
const ACK = 1;
const A_OPS = 2;
const A_SWAPS = 3;
const A_LINKS = 4;
const A_FAILED = 5;
const A_HOLDS = 6;

/** calm: folders mostly in place; frantic: moved without rest (wider races); mixed: alternating every 30 ms. */
export type Pace = 'calm' | 'frantic' | 'mixed';

class HostActor {
  readonly control = new Int32Array(new SharedArrayBuffer(4 * 8));
  readonly worker: Worker;

  constructor(env: World, pace: Pace) {
    // Paused until the first sequence has its folders.
    Atomics.store(this.control, STATE, 1);
    const here = new URL('.', import.meta.url);
    // Compiled runs come from test/fuzz/dist; the actor is plain JS beside the sources.
    const file = new URL(here.pathname.endsWith('/dist/') ? '../host-actor.mjs' : './host-actor.mjs', here);
    this.worker = new Worker(file, {
      workerData: {
        control: this.control.buffer,
        mount: env.mount,
        targets: ACTOR_TARGETS.map((p) => target(env.base, p)),
        holdFiles: HOLD_FILES.map((f) => join(env.outside, f)),
        pace,
      },
    });
    this.worker.on('error', (err) => {
      this.error = err;
    });
  }

  error: unknown;

  /** Block until the actor has finished its current cycle and waits. */
  pause(): void {
    Atomics.store(this.control, STATE, 1);
    const deadline = Date.now() + 20_000;
    while (Atomics.load(this.control, ACK) !== 1 || Atomics.load(this.control, 7) === 1) {
      if (Atomics.load(this.control, 7) === 1) throw new Error('the host actor died (its error is on stderr)');
      if (this.error) throw new Error(`host actor failed: ${String(this.error)}`);
      if (Date.now() > deadline) throw new Error('host actor did not pause within 20 s');
      Atomics.wait(this.control, ACK, 0, 20);
    }
  }

  resume(): void {
    Atomics.store(this.control, STATE, 0);
    Atomics.store(this.control, ACK, 0);
    Atomics.notify(this.control, ACK);
  }

  counts(): { ops: number; swaps: number; links: number; failed: number; holds: number } {
    const c = this.control;
    return { ops: c[A_OPS]!, swaps: c[A_SWAPS]!, links: c[A_LINKS]!, failed: c[A_FAILED]!, holds: c[A_HOLDS]! };
  }

  async stop(): Promise<void> {
    Atomics.store(this.control, STATE, 2);
    Atomics.notify(this.control, ACK);
    const exited = new Promise<void>((done) => this.worker.once('exit', () => done()));
    const timeout = new Promise<void>((done) => setTimeout(done, 5000).unref());
    await Promise.race([exited, timeout]);
    await this.worker.terminate();
  }
}

// --- the world and its invariants ----------------------------------------------------

interface World {
  base: string;
  mount: string;
  outside: string;
  ro: string;
  secret: string;
  outsideSnapshot: Map<string, string>;
  roSnapshot: Map<string, string>;
  /** The metadata hash (upper:lower) of every entry outside the mounts a guest could reach by escaping. */
  outsideInodes: Set<string>;
  /** Names found only outside the mounts. */
  outsideOnly: Set<string>;
  initial: { bytes: number; entries: number };
  /** Symlink targets the host itself makes that lead out (the tree's, the actor's). */
  hostOutward: Set<string>;
  /** Links of the initial tree, as path -> target. */
  initialLinks: Map<string, string>;
}

const ALPHABET = [
  '.',
  '..',
  'file.txt',
  'dir-a',
  'dir-b',
  'sub',
  'deep.txt',
  'packages',
  'pkg',
  'src',
  'main.js',
  'package.json',
  'node_modules',
  '@scope',
  '.bin',
  'tool',
  'x',
  'y',
  '__proto__',
  'constructor',
  'out-abs',
  'out-abs-file',
  'out-rel',
  'out-rel-file',
  'out-dotdot',
  'out-up2',
  'out-abs-dotdot',
  'in-abs',
  'in-rel',
  'in-file',
  'loop-a',
  'loop-b',
  'self',
  'dot',
  'dangling',
  'up',
  'sib',
  'l'.repeat(255),
  'l'.repeat(256),
  'é'.repeat(128),
];

function makeWorld(): World {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'corral-fuzz-')));
  const mount = join(base, 'mount');
  let secret = 'SECRET#';
  for (let i = 0; i < 16; i++) secret += String.fromCharCode(65 + Math.floor(Math.random() * 26));
  mkdirSync(mount);
  build(mount, mountTree(base));
  const world: World = {
    base,
    mount,
    outside: join(base, 'outside'),
    ro: join(base, 'ro'),
    secret,
    outsideSnapshot: new Map(),
    roSnapshot: new Map(),
    outsideInodes: new Set(),
    outsideOnly: new Set(),
    initial: usage(mount),
    hostOutward: new Set(),
    initialLinks: new Map(),
  };
  restoreWorld(world);

  const insideNames = new Set<string>([...ALPHABET]);
  for (const e of [...mountTree(base), ...roTree(base)]) for (const part of e.path.split('/')) insideNames.add(part);
  for (const t of [...ACTOR_TARGETS, ...SYNC_TARGETS]) insideNames.add(`.host-away-${basename(t)}`);
  for (const name of ['outside', 'mount', 'ro', basename(base), ...outsideTree(secret).flatMap((e) => e.path.split('/'))]) {
    if (!insideNames.has(name)) world.outsideOnly.add(name);
  }
  for (const e of mountTree(base)) {
    if (e.link === undefined) continue;
    world.initialLinks.set(e.path, e.link);
    if (!under(mount, hostDestination(join(mount, e.path), e.link))) world.hostOutward.add(e.link);
  }
  for (const p of [...ACTOR_TARGETS, ...SYNC_TARGETS]) {
    const t = target(base, p);
    world.hostOutward.add(t.absolute).add(t.relative);
  }
  return world;
}

/**
 * (Re)build outside/ and the read mount and take their snapshots: at the
 * start, and after an escape changed them, so the sequences fast-check then
 * tries while shrinking are judged on an intact world.
 */
function restoreWorld(world: World): void {
  for (const name of readdirSync(world.base)) if (name !== 'mount') rmSync(join(world.base, name), { recursive: true, force: true });
  build(world.outside, outsideTree(world.secret));
  build(world.ro, roTree(world.base));
  world.outsideSnapshot = snapshot(world.outside);
  world.roSnapshot = snapshot(world.ro);
  world.outsideInodes.clear();
  const addInode = (p: string) => {
    const s = lstatSync(p, { bigint: true });
    const h = metadataHash(s.dev, s.ino);
    world.outsideInodes.add(`${h.upper}:${h.lower}`);
  };
  for (const p of [world.base, dirname(world.base), world.outside]) addInode(p);
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      addInode(p);
      if (lstatSync(p).isDirectory()) walk(p);
    }
  };
  walk(world.outside);
}

/** Put the mounted folder back as it was (the actor is paused). */
function resetMount(world: World): void {
  for (const name of readdirSync(world.mount)) rmSync(join(world.mount, name), { recursive: true, force: true });
  build(world.mount, mountTree(world.base));
}

/** An invariant broke: the property fails with this. */
export class Escape extends Error {}

// --- operations ------------------------------------------------------------------------

type Timestamp = { tag: 'now' } | { tag: 'no-change' } | { tag: 'timestamp'; val: { seconds: bigint; nanoseconds: number } };

type Lie = unknown;

export type Op =
  | {
      op: 'open';
      d: number;
      follow: boolean;
      path: string;
      create: boolean;
      directory: boolean;
      exclusive: boolean;
      truncate: boolean;
      read: boolean;
      write: boolean;
      mutate: boolean;
    }
  | { op: 'read'; d: number; length: bigint; offset: bigint }
  | { op: 'write'; d: number; data: string; offset: bigint }
  | { op: 'setSize'; d: number; size: bigint }
  | { op: 'readViaStream'; d: number; offset: bigint }
  | { op: 'writeViaStream'; d: number; offset: bigint }
  | { op: 'appendViaStream'; d: number }
  | { op: 'streamRead'; s: number; length: bigint }
  | { op: 'streamWrite'; s: number; data: string }
  | { op: 'drop'; d: number }
  | { op: 'stat'; d: number }
  | { op: 'statAt'; d: number; follow: boolean; path: string }
  | { op: 'readDirectory'; d: number }
  | { op: 'createDirectoryAt'; d: number; path: string }
  | { op: 'removeDirectoryAt'; d: number; path: string }
  | { op: 'unlinkFileAt'; d: number; path: string }
  | { op: 'renameAt'; d: number; path: string; d2: number; path2: string }
  | { op: 'symlinkAt'; d: number; target: string; path: string }
  | { op: 'readlinkAt'; d: number; path: string }
  | { op: 'linkAt'; d: number; follow: boolean; path: string; d2: number; path2: string }
  | { op: 'setTimesAt'; d: number; follow: boolean; path: string; atime: Timestamp; mtime: Timestamp }
  | { op: 'setTimes'; d: number; atime: Timestamp; mtime: Timestamp }
  | { op: 'isSameObject'; d: number; d2: number }
  | { op: 'lie'; on: 'descriptor' | 'output-stream' | 'input-stream'; d: number; method: string; arg: number; value: Lie }
  | { op: 'host-swap'; t: number; kind: 'absolute' | 'relative' | 'away' }
  | { op: 'host-restore'; t: number }
  | { op: 'host-hold'; f: number };

export interface Sequence {
  diskLimit: number;
  ops: Op[];
}

// Argument kinds of the methods a lie is told to, and values that are not of that kind.
type ArgKind =
  | 'u64'
  | 'string'
  | 'bytes'
  | 'path-flags'
  | 'open-flags'
  | 'descriptor-flags'
  | 'timestamp'
  | 'descriptor'
  | 'advice'
  | 'stream';

const FLAG_NAMES: Record<string, string[]> = {
  'path-flags': ['symlinkFollow'],
  'open-flags': ['create', 'directory', 'exclusive', 'truncate'],
  'descriptor-flags': ['read', 'write', 'fileIntegritySync', 'dataIntegritySync', 'requestedWriteSync', 'mutateDirectory'],
};

/** A handle of another kind, made at run time (the lie names which). */
type ResourceLie = { $resource: 'input-stream' | 'output-stream' | 'directory-stream' | 'descriptor' };

const NUMBERS: Lie[] = [0, 1, -1, -0, 1.5, NaN, Infinity, -Infinity, 2 ** 53, 2 ** 64, 4096];
const COMMON: Lie[] = [true, false, null, undefined, {}, [], '0', '4096', 'file.txt'];
const LIES: Record<ArgKind, Lie[]> = {
  u64: [...NUMBERS, ...COMMON, -1n, 2n ** 64n, 2n ** 100n, -(2n ** 63n), [1n], { val: 1n }, new Uint8Array([1])],
  string: [
    ...NUMBERS,
    true,
    null,
    undefined,
    {},
    ['file.txt'],
    0n,
    1n,
    new Uint8Array([102, 105]),
    { tag: 'file.txt' },
    { $resource: 'descriptor' },
  ],
  bytes: [
    ...NUMBERS,
    ...COMMON,
    1n,
    [97, 98, 99],
    new Uint16Array([0x4141, 0x4242]),
    new Int8Array([1, 2]),
    new Uint8ClampedArray([1]),
    new Float64Array([1]),
    new ArrayBuffer(8),
    { length: 1e9 },
    { 0: 97, length: 1 },
  ],
  'path-flags': [
    'symlinkFollow',
    0,
    1,
    1n,
    true,
    null,
    undefined,
    NaN,
    { symlinkFollow: 1 },
    { symlinkFollow: 'true' },
    { symlinkFollow: null },
    { symlinkFollow: 0n },
    { symlinkFollow: {} },
    [],
    {},
    { read: 1 },
  ],
  'open-flags': [
    'create',
    0,
    1n,
    true,
    null,
    undefined,
    { create: 1 },
    { directory: 'yes' },
    { exclusive: null },
    { truncate: 1n },
    [],
    {},
  ],
  'descriptor-flags': [
    'read',
    0,
    1n,
    true,
    null,
    undefined,
    { read: 1 },
    { write: 'true' },
    { mutateDirectory: null },
    { requestedWriteSync: 0n },
    [],
    {},
  ],
  timestamp: [
    'now',
    0,
    1n,
    null,
    undefined,
    {},
    { tag: 'bogus' },
    { tag: 'timestamp' },
    { tag: 'timestamp', val: null },
    { tag: 'timestamp', val: { seconds: 5, nanoseconds: 0 } },
    { tag: 'timestamp', val: { seconds: -1n, nanoseconds: 0 } },
    { tag: 'timestamp', val: { seconds: 2n ** 64n, nanoseconds: 0 } },
    { tag: 'timestamp', val: { seconds: 1n, nanoseconds: 1e9 } },
    { tag: 'timestamp', val: { seconds: 1n, nanoseconds: -1 } },
    { tag: 'timestamp', val: { seconds: 1n, nanoseconds: 0.5 } },
    { tag: 'timestamp', val: { seconds: 1n, nanoseconds: NaN } },
    { tag: 'timestamp', val: { seconds: 1n, nanoseconds: 1n } },
  ],
  descriptor: [
    'file.txt',
    0,
    0n,
    null,
    undefined,
    {},
    [],
    { $resource: 'input-stream' },
    { $resource: 'output-stream' },
    { $resource: 'directory-stream' },
  ],
  advice: ['NORMAL', 'bogus', '', 0, 1n, null, undefined, {}],
  stream: ['x', 0, null, undefined, {}, { $resource: 'descriptor' }, { $resource: 'output-stream' }, { $resource: 'directory-stream' }],
};

/** The methods a lie is told to: their argument kinds and well-typed arguments to start from. */
const LIE_METHODS: Record<string, { on: 'descriptor' | 'output-stream' | 'input-stream'; args: ArgKind[]; base: unknown[] }> = {
  openAt: {
    on: 'descriptor',
    args: ['path-flags', 'string', 'open-flags', 'descriptor-flags'],
    base: [{}, 'file.txt', {}, { read: true }],
  },
  read: { on: 'descriptor', args: ['u64', 'u64'], base: [16n, 0n] },
  write: { on: 'descriptor', args: ['bytes', 'u64'], base: ['abc', 0n] },
  setSize: { on: 'descriptor', args: ['u64'], base: [4n] },
  statAt: { on: 'descriptor', args: ['path-flags', 'string'], base: [{}, 'file.txt'] },
  metadataHashAt: { on: 'descriptor', args: ['path-flags', 'string'], base: [{}, 'file.txt'] },
  setTimes: { on: 'descriptor', args: ['timestamp', 'timestamp'], base: [{ tag: 'now' }, { tag: 'no-change' }] },
  setTimesAt: {
    on: 'descriptor',
    args: ['path-flags', 'string', 'timestamp', 'timestamp'],
    base: [{}, 'file.txt', { tag: 'now' }, { tag: 'no-change' }],
  },
  renameAt: { on: 'descriptor', args: ['string', 'descriptor', 'string'], base: ['x', 'self', 'y'] },
  linkAt: { on: 'descriptor', args: ['path-flags', 'string', 'descriptor', 'string'], base: [{}, 'file.txt', 'self', 'y'] },
  symlinkAt: { on: 'descriptor', args: ['string', 'string'], base: ['file.txt', 'y'] },
  readlinkAt: { on: 'descriptor', args: ['string'], base: ['in-file'] },
  unlinkFileAt: { on: 'descriptor', args: ['string'], base: ['y'] },
  removeDirectoryAt: { on: 'descriptor', args: ['string'], base: ['y'] },
  createDirectoryAt: { on: 'descriptor', args: ['string'], base: ['y'] },
  readViaStream: { on: 'descriptor', args: ['u64'], base: [0n] },
  writeViaStream: { on: 'descriptor', args: ['u64'], base: [0n] },
  isSameObject: { on: 'descriptor', args: ['descriptor'], base: ['self'] },
  advise: { on: 'descriptor', args: ['u64', 'u64', 'advice'], base: [0n, 0n, 'normal'] },
  blockingRead: { on: 'input-stream', args: ['u64'], base: [8n] },
  skip: { on: 'input-stream', args: ['u64'], base: [8n] },
  blockingWriteAndFlush: { on: 'output-stream', args: ['bytes'], base: ['abc'] },
  blockingWriteZeroesAndFlush: { on: 'output-stream', args: ['u64'], base: [8n] },
  splice: { on: 'output-stream', args: ['stream', 'u64'], base: ['input', 8n] },
};

/** Whether passing `value` as an argument of `kind` must be refused (some wrong shapes are harmless, e.g. {} as flags). */
function mustRefuse(kind: ArgKind, value: unknown): boolean {
  const names = FLAG_NAMES[kind];
  if (names) {
    if (typeof value !== 'object' || value === null) return true;
    return names.some((n) => {
      const v = (value as Record<string, unknown>)[n];
      return v !== undefined && typeof v !== 'boolean';
    });
  }
  return true;
}

// --- arbitraries ----------------------------------------------------------------------

/** Names of the tree and a few new ones, far more often than the odd ones, so paths lead somewhere. */
const COMMON_NAMES = [
  'file.txt',
  'dir-a',
  'dir-b',
  'sub',
  'deep.txt',
  'packages',
  'pkg',
  'src',
  'node_modules',
  '@scope',
  'x',
  'y',
  '.',
  '..',
];
const nameArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...COMMON_NAMES) },
  { weight: 1, arbitrary: fc.constantFrom(...ALPHABET) },
);

/** Paths of the tree (from the root, and from the folders a sub-descriptor holds), through its links too. */
const KNOWN_PATHS = [
  'file.txt',
  'dir-a',
  'dir-a/file.txt',
  'dir-a/sub',
  'dir-a/sub/deep.txt',
  'dir-b',
  'dir-b/file.txt',
  'dir-b/sub',
  'dir-b/sub/deep.txt',
  'packages',
  'packages/pkg',
  'packages/pkg/package.json',
  'packages/pkg/src',
  'packages/pkg/src/main.js',
  'node_modules/@scope',
  'node_modules/@scope/pkg',
  'node_modules/@scope/pkg/src/main.js',
  'node_modules/@scope/abs/package.json',
  'node_modules/.bin/tool',
  'in-rel',
  'in-rel/deep.txt',
  'in-abs/file.txt',
  'in-file',
  'dir-a/sib/file.txt',
  'dir-a/up/secret.txt',
  'out-rel/secret.txt',
  'out-abs/dir-a/file.txt',
  'out-rel-file',
  'out-abs-file',
  'out-dotdot/outside',
  'out-up2',
  'loop-a',
  'dot/dot/file.txt',
  'sub',
  'sub/deep.txt',
  'deep.txt',
  'src/main.js',
  'main.js',
  'package.json',
  'x',
  'y',
  'x/y',
  '.',
  '..',
  '../file.txt',
  'sub/..',
  'dir/file.txt',
];

/** A guest path: mostly one of the tree's, else a few names of the alphabet, sometimes with a trailing slash, now and then something odd. */
const pathArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...KNOWN_PATHS) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        fc.oneof(
          { weight: 6, arbitrary: fc.array(nameArb, { minLength: 1, maxLength: 1 }) },
          { weight: 4, arbitrary: fc.array(nameArb, { minLength: 2, maxLength: 2 }) },
          { weight: 2, arbitrary: fc.array(nameArb, { minLength: 3, maxLength: 4 }) },
        ),
        fc.nat(7),
      )
      .map(([s, odd]) => `${odd === 6 ? './' : ''}${s.join('/')}${odd === 7 ? '/' : ''}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', '/', '/etc/passwd', '//', 'a\0b', '../outside/secret.txt', 'dir-a//file.txt', 'x/'.repeat(2100)),
  },
);

/** A symlink target the guest asks for. */
const linkTargetArb = fc.oneof(
  { weight: 8, arbitrary: fc.array(nameArb, { minLength: 1, maxLength: 4 }).map((s) => s.join('/')) },
  { weight: 1, arbitrary: fc.constantFrom('', '/', '/etc', '/tmp', '.', '..', '../..', 'dir-a/', '../file.txt') },
);

const dataArb = fc.string({ unit: fc.constantFrom(...'abcxyz0123456789\n'), maxLength: 64 });

const offsetArb = fc.oneof(
  { weight: 10, arbitrary: fc.bigInt({ min: 0n, max: 100n }) },
  { weight: 1, arbitrary: fc.constantFrom(4096n, 1n << 20n, 1n << 40n, 1n << 53n, (1n << 63n) - 1n, (1n << 64n) - 1n) },
);

const lengthArb = fc.oneof(
  { weight: 10, arbitrary: fc.bigInt({ min: 0n, max: 128n }) },
  { weight: 1, arbitrary: fc.constantFrom(1n << 20n, (1n << 20n) + 1n, 1n << 32n, (1n << 64n) - 1n) },
);

const sizeArb = fc.oneof(
  { weight: 6, arbitrary: fc.bigInt({ min: 0n, max: 64n }) },
  { weight: 1, arbitrary: fc.constantFrom(4096n, 1n << 20n, 1n << 26n, 1n << 40n, (1n << 53n) - 1n, 1n << 53n, (1n << 64n) - 1n) },
);

const timestampArb: fc.Arbitrary<Timestamp> = fc.oneof(
  fc.constant({ tag: 'now' as const }),
  fc.constant({ tag: 'no-change' as const }),
  fc.record({
    tag: fc.constant('timestamp' as const),
    val: fc.record({
      seconds: fc.oneof(
        fc.bigInt({ min: 0n, max: 2_000_000_000n }),
        fc.constantFrom(0n, 1n << 33n, 1n << 53n, (1n << 63n) - 1n, (1n << 64n) - 1n),
      ),
      nanoseconds: fc.oneof(fc.integer({ min: 0, max: 999_999_999 }), fc.constantFrom(0, 999_999_999)),
    }),
  }),
);

/** Which descriptor (or stream), counted from the newest: 0 is the one opened last (or the read-write root). */
const d = fc.oneof(
  { weight: 8, arbitrary: fc.constant(0) },
  { weight: 2, arbitrary: fc.constant(1) },
  { weight: 1, arbitrary: fc.constant(2) },
  { weight: 1, arbitrary: fc.nat(40) },
);

const lieArb: fc.Arbitrary<Op> = fc.constantFrom(...Object.keys(LIE_METHODS)).chain((method) => {
  const spec = LIE_METHODS[method]!;
  return fc.nat(spec.args.length - 1).chain((arg) =>
    fc.record({
      op: fc.constant('lie' as const),
      on: fc.constant(spec.on),
      d,
      method: fc.constant(method),
      arg: fc.constant(arg),
      value: fc.constantFrom(...LIES[spec.args[arg]!]),
    }),
  );
});

const F = false;
const T = true;
/** How a guest opens: the usual ways (a folder, a file to read, to write, to create) and any mix of flags. */
const openFlagsArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ create: F, directory: T, exclusive: F, truncate: F, read: T, write: F, mutate: T }) },
  { weight: 3, arbitrary: fc.constant({ create: F, directory: F, exclusive: F, truncate: F, read: T, write: F, mutate: F }) },
  { weight: 3, arbitrary: fc.constant({ create: F, directory: F, exclusive: F, truncate: F, read: T, write: T, mutate: F }) },
  { weight: 3, arbitrary: fc.constant({ create: T, directory: F, exclusive: F, truncate: F, read: T, write: T, mutate: F }) },
  { weight: 1, arbitrary: fc.constant({ create: T, directory: F, exclusive: T, truncate: F, read: F, write: T, mutate: F }) },
  { weight: 1, arbitrary: fc.constant({ create: F, directory: F, exclusive: F, truncate: T, read: F, write: T, mutate: F }) },
  {
    weight: 3,
    arbitrary: fc.record({
      create: fc.boolean(),
      directory: fc.boolean(),
      exclusive: fc.boolean(),
      truncate: fc.boolean(),
      read: fc.boolean(),
      write: fc.boolean(),
      mutate: fc.boolean(),
    }),
  },
);
const openArb: fc.Arbitrary<Op> = fc
  .record({ d, follow: fc.boolean(), path: pathArb, flags: openFlagsArb })
  .map(({ d, follow, path, flags }) => ({ op: 'open' as const, d, follow, path, ...flags }));

export const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 14, arbitrary: openArb },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('read' as const), d, length: lengthArb, offset: offsetArb }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('write' as const), d, data: dataArb, offset: offsetArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('setSize' as const), d, size: sizeArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('readViaStream' as const), d, offset: offsetArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('writeViaStream' as const), d, offset: offsetArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('appendViaStream' as const), d }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('streamRead' as const), s: d, length: lengthArb }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('streamWrite' as const), s: d, data: dataArb }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('drop' as const), d }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('stat' as const), d }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('statAt' as const), d, follow: fc.boolean(), path: pathArb }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('readDirectory' as const), d }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('createDirectoryAt' as const), d, path: pathArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('removeDirectoryAt' as const), d, path: pathArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('unlinkFileAt' as const), d, path: pathArb }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('renameAt' as const), d, path: pathArb, d2: d, path2: pathArb }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('symlinkAt' as const), d, target: linkTargetArb, path: pathArb }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('readlinkAt' as const), d, path: pathArb }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('linkAt' as const), d, follow: fc.boolean(), path: pathArb, d2: d, path2: pathArb }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('setTimesAt' as const),
      d,
      follow: fc.boolean(),
      path: pathArb,
      atime: timestampArb,
      mtime: timestampArb,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('setTimes' as const), d, atime: timestampArb, mtime: timestampArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('isSameObject' as const), d, d2: d }) },
  { weight: 3, arbitrary: lieArb },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('host-swap' as const),
      t: fc.nat(SYNC_TARGETS.length - 1),
      kind: fc.constantFrom('absolute' as const, 'relative' as const, 'away' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('host-restore' as const), t: fc.nat(SYNC_TARGETS.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('host-hold' as const), f: fc.nat(HOLD_FILES.length - 1) }) },
);

export const sequenceArb: fc.Arbitrary<Sequence> = fc.record({
  diskLimit: fc.constantFrom(0, 2048, 16 * 1024, 1 << 20),
  ops: fc.array(opArb, { minLength: 1, maxLength: 40, size: 'max' }),
});

// --- running a sequence -----------------------------------------------------------------

export interface Stats {
  sequences: number;
  guestOps: number;
  /** Outcomes of guest operations: 'ok', an error code, 'guest-type-error', 'stream-closed', 'stream:<code>'. */
  outcomes: Map<string, number>;
  /** Per operation kind: how many ran, and how many succeeded. */
  byOp: Map<string, { total: number; ok: number; outcomes: Map<string, number> }>;
  /** Host operations done synchronously by sequences (the actor's are counted by the actor). */
  syncHostOps: number;
  /** Sequences after which the mount held a symlink the guest made (or moved) that leads out when the host follows it. */
  plantedLinkSequences: number;
  plantedLinkExample: string | undefined;
}

export function newStats(): Stats {
  return {
    sequences: 0,
    guestOps: 0,
    outcomes: new Map(),
    byOp: new Map(),
    syncHostOps: 0,
    plantedLinkSequences: 0,
    plantedLinkExample: undefined,
  };
}

const utf8 = new TextEncoder();
const DISPOSE: symbol = (Symbol as { dispose?: symbol }).dispose ?? Symbol.for('dispose');

interface Streams {
  input: Array<{ blockingRead(n: unknown): Uint8Array; skip(n: unknown): bigint }>;
  output: Array<{
    blockingWriteAndFlush(b: unknown): void;
    blockingWriteZeroesAndFlush(n: unknown): void;
    splice(s: unknown, n: unknown): bigint;
  }>;
}

class Run {
  readonly world: World;
  readonly fsys: CallFilesystem;
  readonly pool: Descriptor[];
  readonly streams: Streams = { input: [], output: [] };
  readonly held: number[] = [];
  hostLinks = 0;
  closed = false;
  readonly stats: Stats;

  constructor(world: World, seq: Sequence, stats: Stats) {
    this.world = world;
    this.stats = stats;
    this.fsys = callFilesystem(
      [
        { guest: '/data', access: 'read-write', source: { kind: 'host', path: world.mount } },
        { guest: '/ro', access: 'read', source: { kind: 'host', path: world.ro } },
      ],
      seq.diskLimit,
      hostMountOpeners(),
    );
    const [rw, ro, tmp] = this.fsys.preopens.map(([descriptor]) => descriptor);
    this.roots = { rw: rw!, ro: ro!, tmp: tmp! };
    this.pool = [ro!, tmp!, rw!];
    for (const root of this.pool) this.kinds.set(root, 'directory');
  }

  readonly roots: { rw: Descriptor; ro: Descriptor; tmp: Descriptor };

  /**
   * The descriptor `i` places from the newest (the roots come last). Small
   * indices count only descriptors of the kind the operation wants (folders
   * for path operations, files for contents), larger ones count them all.
   */
  desc(i: number, want?: 'file' | 'directory'): Descriptor {
    const of = want && i < 3 ? this.pool.filter((x) => this.kinds.get(x) === want) : this.pool;
    const list = of.length > 0 ? of : this.pool;
    return list[list.length - 1 - (i % list.length)]!;
  }

  dir(i: number): Descriptor {
    return this.desc(i, 'directory');
  }

  file(i: number): Descriptor {
    return this.desc(i, 'file');
  }

  readonly kinds = new WeakMap<Descriptor, 'file' | 'directory'>();

  keep(x: Descriptor): void {
    if (this.pool.length >= MAX_POOL) this.pool.splice(3, 1);
    this.pool.push(x);
    try {
      this.kinds.set(x, x.getType() === 'directory' ? 'directory' : 'file');
    } catch {
      this.kinds.set(x, 'file');
    }
  }

  /** Streams, newest first. */
  stream<T>(list: T[], i: number): T | undefined {
    return list.length === 0 ? undefined : list[list.length - 1 - (i % list.length)];
  }

  // --- checks made at every operation -------------------------------------------
  fail(what: string): never {
    throw new Escape(what);
  }

  bytes(data: Uint8Array, where: string): void {
    for (let i = 0; i < data.length; i++) {
      if (FORBIDDEN_BYTE[data[i]!])
        this.fail(`${where}: read a byte from outside the mounts (${JSON.stringify(Buffer.from(data).toString('latin1').slice(0, 80))})`);
    }
  }

  hostPath(s: string, where: string): void {
    if (s.includes(this.world.base) || s.includes('SECRET'))
      this.fail(`${where}: revealed a host path or the secret: ${JSON.stringify(s)}`);
  }

  text(s: string, where: string): void {
    if (s.includes(this.world.base)) this.fail(`${where}: revealed a host path: ${JSON.stringify(s)}`);
    if (s.includes(this.world.secret) || s.includes('SECRET')) this.fail(`${where}: carries the secret: ${JSON.stringify(s)}`);
    if (s.startsWith('/')) this.fail(`${where}: an absolute path reached the guest: ${JSON.stringify(s)}`);
    for (const part of s.split('/'))
      if (this.world.outsideOnly.has(part)) this.fail(`${where}: names ${JSON.stringify(part)}, found only outside: ${JSON.stringify(s)}`);
  }

  name(n: string, where: string): void {
    if (this.world.outsideOnly.has(n)) this.fail(`${where}: listed ${JSON.stringify(n)}, found only outside`);
    if (/[A-Z#]/.test(n) || n.includes(this.world.base)) this.fail(`${where}: listed ${JSON.stringify(n)}`);
  }

  inode(h: { lower: bigint; upper: bigint }, where: string): void {
    if (this.world.outsideInodes.has(`${h.upper}:${h.lower}`)) this.fail(`${where}: reached an inode outside the mounts`);
  }

  quota(where: string): void {
    const q = this.fsys.quota;
    if (!Number.isInteger(q.usedBytes) || q.usedBytes < 0 || q.usedBytes > q.limitBytes) {
      this.fail(`${where}: disk quota corrupted: used ${q.usedBytes} of ${q.limitBytes}`);
    }
  }

  /** The inode of `x` (when it still resolves) is never one outside. */
  probe(x: Descriptor, where: string): void {
    try {
      this.inode(x.metadataHash(), where);
    } catch (err) {
      if (err instanceof Escape) throw err;
    }
  }

  // --- one operation --------------------------------------------------------------
  exec(op: Op): void {
    switch (op.op) {
      case 'open': {
        const x = this.dir(op.d).openAt(
          { symlinkFollow: op.follow },
          op.path,
          { create: op.create, directory: op.directory, exclusive: op.exclusive, truncate: op.truncate },
          { read: op.read, write: op.write, mutateDirectory: op.mutate },
        );
        this.keep(x);
        this.probe(x, 'openAt');
        return;
      }
      case 'read': {
        const [data] = this.file(op.d).read(op.length, op.offset);
        this.bytes(data, 'read');
        return;
      }
      case 'write':
        this.file(op.d).write(utf8.encode(op.data), op.offset);
        return;
      case 'setSize':
        this.file(op.d).setSize(op.size);
        return;
      case 'readViaStream':
        this.streams.input.push(this.file(op.d).readViaStream(op.offset) as unknown as Streams['input'][number]);
        return;
      case 'writeViaStream':
        this.streams.output.push(this.file(op.d).writeViaStream(op.offset) as unknown as Streams['output'][number]);
        return;
      case 'appendViaStream':
        this.streams.output.push(this.file(op.d).appendViaStream() as unknown as Streams['output'][number]);
        return;
      case 'streamRead': {
        const s = this.stream(this.streams.input, op.s);
        if (!s) throw 'bad-descriptor';
        this.bytes(s.blockingRead(op.length), 'input-stream read');
        return;
      }
      case 'streamWrite': {
        const s = this.stream(this.streams.output, op.s);
        if (!s) throw 'bad-descriptor';
        s.blockingWriteAndFlush(utf8.encode(op.data));
        return;
      }
      case 'drop': {
        // What the glue does when the guest drops its handle.
        const x = this.file(op.d);
        (x as unknown as Record<symbol, () => void>)[DISPOSE]!();
        return;
      }
      case 'stat': {
        const x = this.desc(op.d);
        const s = x.stat();
        if (s.type === 'regular-file' || s.type === 'directory') this.probe(x, 'stat');
        return;
      }
      case 'statAt': {
        const x = this.dir(op.d);
        x.statAt({ symlinkFollow: op.follow }, op.path);
        this.inode(x.metadataHashAt({ symlinkFollow: op.follow }, op.path), 'statAt');
        return;
      }
      case 'readDirectory': {
        const dir = this.dir(op.d);
        const stream = dir.readDirectory();
        for (let e = stream.readDirectoryEntry(); e; e = stream.readDirectoryEntry()) {
          this.name(e.name, 'readDirectory');
          // What the preview1 adapter asks after each entry (its d_ino), answered from the listing's batch.
          this.inode(dir.metadataHashAt({ symlinkFollow: false }, e.name), 'readDirectory d_ino');
        }
        return;
      }
      case 'createDirectoryAt':
        this.dir(op.d).createDirectoryAt(op.path);
        return;
      case 'removeDirectoryAt':
        this.dir(op.d).removeDirectoryAt(op.path);
        return;
      case 'unlinkFileAt':
        this.dir(op.d).unlinkFileAt(op.path);
        return;
      case 'renameAt':
        this.dir(op.d).renameAt(op.path, this.dir(op.d2), op.path2);
        return;
      case 'symlinkAt':
        this.dir(op.d).symlinkAt(op.target, op.path);
        return;
      case 'readlinkAt':
        this.text(this.dir(op.d).readlinkAt(op.path), 'readlinkAt');
        return;
      case 'linkAt':
        this.dir(op.d).linkAt({ symlinkFollow: op.follow }, op.path, this.dir(op.d2), op.path2);
        return;
      case 'setTimesAt':
        this.dir(op.d).setTimesAt({ symlinkFollow: op.follow }, op.path, op.atime, op.mtime);
        return;
      case 'setTimes':
        this.desc(op.d).setTimes(op.atime, op.mtime);
        return;
      case 'isSameObject':
        this.desc(op.d).isSameObject(this.desc(op.d2));
        return;
      case 'lie':
        return this.lie(op);
      case 'host-swap':
      case 'host-restore':
      case 'host-hold':
        return this.host(op);
    }
  }

  /** A resource of another kind, for lies that pass the wrong handle. */
  resource(kind: ResourceLie['$resource']): unknown {
    const ro = this.roots.ro;
    if (kind === 'descriptor') return ro;
    if (kind === 'directory-stream') return ro.readDirectory();
    const input = ro.openAt({}, 'file.txt', {}, { read: true }).readViaStream(0n);
    return kind === 'output-stream' ? (this.streams.output[0] ?? input) : input;
  }

  lie(op: Extract<Op, { op: 'lie' }>): void {
    const spec = LIE_METHODS[op.method]!;
    const args = spec.base.map((v, i) => {
      if (spec.args[i] === 'descriptor') return this.desc(op.d);
      if (spec.args[i] === 'stream') return this.resource('input-stream');
      if (spec.args[i] === 'bytes') return utf8.encode(v as string);
      return v;
    });
    const value = op.value;
    args[op.arg] =
      typeof value === 'object' && value !== null && '$resource' in value ? this.resource((value as ResourceLie).$resource) : value;
    let receiver: unknown;
    if (op.on === 'descriptor') receiver = this.desc(op.d);
    else if (op.on === 'input-stream') receiver = this.stream(this.streams.input, op.d) ?? this.resource('input-stream');
    else receiver = this.stream(this.streams.output, op.d);
    if (!receiver) throw 'bad-descriptor';
    const method = (receiver as Record<string, (...a: unknown[]) => unknown>)[op.method]!;
    const result = method.apply(receiver, args);
    if (mustRefuse(spec.args[op.arg]!, value))
      this.fail(`${op.method} accepted ${fc.stringify(value)} as its ${spec.args[op.arg]} argument #${op.arg}`);
    if (result && typeof result === 'object' && 'close' in result) (result as Descriptor).close();
  }

  // --- the host, synchronously, between two guest operations ----------------------------
  host(op: Extract<Op, { op: 'host-swap' | 'host-restore' | 'host-hold' }>): void {
    const count = () => this.stats.syncHostOps++;
    if (op.op === 'host-hold') {
      // One of the host's own files, outside the mount, opened (never written) and held until the sequence ends.
      count();
      this.held.push(openSync(join(this.world.outside, HOLD_FILES[op.f]!), constants.O_RDWR));
      return;
    }
    const t = target(this.world.base, SYNC_TARGETS[op.t]!);
    const parent = walkHeld(this.world.mount, t.parent);
    if (parent === null) return;
    const at = `/proc/self/fd/${parent}/`;
    const away = `.host-away-${t.name}`;
    try {
      if (op.op === 'host-swap') {
        count();
        renameSync(at + t.name, at + away);
        if (op.kind !== 'away') {
          count();
          symlinkSync(op.kind === 'absolute' ? t.absolute : t.relative, at + t.name);
          this.hostLinks++;
        }
      } else {
        count();
        if (lstatSync(at + t.name).isSymbolicLink()) unlinkSync(at + t.name);
        count();
        renameSync(at + away, at + t.name);
      }
    } catch {
      // A careless host: whatever the guest did in between, it carries on.
    } finally {
      closeSync(parent);
    }
  }

  // --- after the sequence ------------------------------------------------------------
  /** Apparent bytes of the regular files in the call's /tmp (each inode once), read through its root descriptor. */
  tmpBytes(): number {
    const tmp = this.roots.tmp;
    const seen = new Set<bigint>();
    let bytes = 0;
    const walk = (path: string, depth: number) => {
      if (depth > 12) return;
      const dir = path === '' ? tmp : tmp.openAt({}, path, { directory: true }, { read: true });
      const listing = dir.readDirectory();
      for (let e = listing.readDirectoryEntry(); e; e = listing.readDirectoryEntry()) {
        const p = path === '' ? e.name : `${path}/${e.name}`;
        if (e.type === 'directory') walk(p, depth + 1);
        else if (e.type === 'regular-file') {
          const h = tmp.metadataHashAt({}, p);
          if (seen.has(h.lower)) continue;
          seen.add(h.lower);
          bytes += Number(tmp.statAt({}, p).size);
        }
      }
    };
    walk('', 0);
    return bytes;
  }

  /** Symlinks in the mount that lead out of it when the host follows them, and that the host did not make. */
  plantedLinks(): string[] {
    const out: string[] = [];
    const mount = this.world.mount;
    const walk = (d: string) => {
      for (const name of readdirSync(d)) {
        const p = join(d, name);
        const s = lstatSync(p);
        if (s.isDirectory()) walk(p);
        else if (s.isSymbolicLink()) {
          const t = readlinkSync(p);
          const rel = relative(mount, p);
          if (under(mount, hostDestination(p, t))) continue;
          if (this.world.initialLinks.get(rel) === t || this.world.hostOutward.has(t)) continue;
          out.push(`${rel} -> ${t}`);
        }
      }
    };
    walk(mount);
    return out;
  }
}

function walkHeld(root: string, segments: string[]): number | null {
  const O_PATH = 0o10000000;
  const DIR = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;
  let fd = openSync(root, DIR);
  for (const name of segments) {
    let next = -1;
    try {
      next = openSync(`/proc/self/fd/${fd}/${name}`, DIR);
    } catch {
      // gone, or not a real folder now
    }
    closeSync(fd);
    if (next < 0) return null;
    fd = next;
  }
  return fd;
}

function outcomeOf(err: unknown): string | undefined {
  if (typeof err === 'string') return ERROR_CODES.has(err) ? err : undefined;
  if (err instanceof GuestTypeError) return 'guest-type-error';
  if (err && typeof err === 'object' && 'tag' in err) {
    const e = err as { tag: unknown; val?: { code?: unknown } };
    if (e.tag === 'closed') return 'stream-closed';
    if (e.tag === 'last-operation-failed' && typeof e.val?.code === 'string' && ERROR_CODES.has(e.val.code)) return `stream:${e.val.code}`;
  }
  return undefined;
}

function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.constructor.name}: ${err.message}`;
  try {
    return fc.stringify(err);
  } catch {
    return String(err);
  }
}

export interface FuzzContext {
  world: World;
  actor: HostActor;
  stats: Stats;
  /** Treat a symlink the guest leaves pointing out of the mount (for the host) as a failure. */
  strictLinks: boolean;
}

/** Run one sequence against a fresh copy of the mount, with the host actor running; throws Escape when an invariant breaks. */
export function runSequence(ctx: FuzzContext, seq: Sequence): void {
  const { world, actor, stats } = ctx;
  stats.sequences++;
  resetMount(world);
  actor.resume();
  let run: Run | undefined;
  let failure: unknown;
  try {
    run = new Run(world, seq, stats);
    for (const [i, op] of seq.ops.entries()) {
      stats.guestOps++;
      let outcome = 'ok';
      try {
        run.exec(op);
      } catch (err) {
        if (err instanceof Escape) throw new Escape(`op #${i} ${op.op}: ${err.message}`);
        const known = outcomeOf(err);
        if (known === undefined) throw new Escape(`op #${i} ${op.op} threw ${describeError(err)}, not a wasi:filesystem error code`);
        if (known === 'guest-type-error' && op.op !== 'lie')
          throw new Escape(`op #${i} ${op.op}: a well-typed call was refused as ill-typed: ${describeError(err)}`);
        if (err instanceof GuestTypeError) run.hostPath(err.message, 'GuestTypeError message');
        outcome = known;
      }
      if (process.env.FUZZ_TRACE) console.log(`  #${i} ${fc.stringify(op)} -> ${outcome}`);
      stats.outcomes.set(outcome, (stats.outcomes.get(outcome) ?? 0) + 1);
      const kind = op.op === 'lie' ? `lie:${op.method}` : op.op;
      const row = stats.byOp.get(kind) ?? { total: 0, ok: 0, outcomes: new Map() };
      row.total++;
      row.outcomes.set(outcome, (row.outcomes.get(outcome) ?? 0) + 1);
      if (outcome === 'ok') row.ok++;
      stats.byOp.set(kind, row);
      run.quota(`op #${i} ${op.op}`);
    }
  } catch (err) {
    failure = err;
  } finally {
    actor.pause();
    if (run) for (const fd of run.held) closeSync(fd);
  }
  const close = () => {
    // Once only: a second close would close fd numbers someone else may hold by now.
    if (run && !run.closed) {
      run.closed = true;
      run.fsys.close();
    }
  };
  // Checks after the sequence, with the actor stopped (it restored its moves).
  try {
    if (failure) throw failure;
    if (!run) throw new Error('no run');
    const tmp = run.tmpBytes();
    close();
    const changed: string[] = [];
    const outside = diff(world.outsideSnapshot, snapshot(world.outside));
    if (outside.length > 0) changed.push(`outside/ changed: ${outside.join(', ')}`);
    const roChanges = diff(world.roSnapshot, snapshot(world.ro));
    if (roChanges.length > 0) changed.push(`the read mount changed: ${roChanges.join(', ')}`);
    const entries = readdirSync(world.base).sort().join(',');
    if (entries !== 'mount,outside,ro') changed.push(`the base folder now holds: ${entries}`);
    if (changed.length > 0) {
      restoreWorld(world);
      throw new Escape(changed.join('; '));
    }
    if (!lstatSync(world.mount).isDirectory()) throw new Escape('the mount root is gone');
    run.quota('after the sequence');
    const now = usage(world.mount);
    const grown = now.bytes + tmp - world.initial.bytes;
    const hostLinks = run.hostLinks + actorLinks(ctx);
    const allowed = seq.diskLimit + ENTRY_BYTES * (world.initial.entries + hostLinks);
    if (grown > allowed) throw new Escape(`files grew by ${grown} bytes; the quota (${seq.diskLimit}) allows at most ${allowed}`);
    const planted = run.plantedLinks();
    if (planted.length > 0) {
      stats.plantedLinkSequences++;
      stats.plantedLinkExample ??= planted[0];
      if (ctx.strictLinks) throw new Escape(`the guest left symlinks leading out of the mount (for the host): ${planted.join(', ')}`);
    }
  } catch (err) {
    close();
    throw err;
  }
}

let lastActorLinks = 0;
/** Symlinks the actor made since the last call (the disk bound allows for them). */
function actorLinks(ctx: FuzzContext): number {
  const now = ctx.actor.counts().links;
  const n = now - lastActorLinks;
  lastActorLinks = now;
  return n;
}

// --- the whole fuzz ------------------------------------------------------------------

export interface FuzzOptions {
  runs: number;
  seed: number;
  /** fast-check's replay path of a counterexample (with its seed). */
  path?: string;
  strictLinks?: boolean;
  /** How the host actor moves folders (host-actor.mjs); 'mixed' by default. */
  pace?: Pace;
  /** Called every `progressEvery` sequences run (shrinking included). */
  onProgress?: (stats: Stats, actor: ReturnType<HostActor['counts']>) => void;
  progressEvery?: number;
}

export interface FuzzReport {
  failed: boolean;
  seed: number;
  runs: number;
  stats: Stats;
  actor: ReturnType<HostActor['counts']>;
  elapsedMs: number;
  confinement: string;
  pace: Pace;
  strictLinks: boolean;
  /** fast-check's report of the shrunk counterexample, and what replays it. */
  counterexample?: string;
  shrunk?: Sequence;
  path?: string;
  error?: string;
}

/** A fresh world (base/{mount, outside, ro}) and a running host actor for `fn`, removed afterwards. */
export async function withWorld<T>(
  fn: (ctx: FuzzContext) => T | Promise<T>,
  options: { strictLinks?: boolean; pace?: Pace } = {},
): Promise<T> {
  const world = makeWorld();
  const actor = new HostActor(world, options.pace ?? 'mixed');
  try {
    await new Promise<void>((ready, failed) => {
      actor.worker.once('online', () => ready());
      actor.worker.once('error', failed);
    });
    lastActorLinks = 0;
    return await fn({ world, actor, stats: newStats(), strictLinks: options.strictLinks ?? true });
  } finally {
    await actor.stop();
    rmSync(world.base, { recursive: true, force: true });
  }
}

export async function fuzzFilesystem(options: FuzzOptions): Promise<FuzzReport> {
  return withWorld((ctx) => fuzzIn(ctx, options), options);
}

function fuzzIn(ctx: FuzzContext, options: FuzzOptions): FuzzReport {
  const started = performance.now();
  const { actor, stats } = ctx;
  const every = options.progressEvery ?? 500;
  {
    const property = fc.property(sequenceArb, (seq) => {
      runSequence(ctx, seq);
      if (options.onProgress && stats.sequences % every === 0) options.onProgress(stats, actor.counts());
    });
    const details = fc.check(property, {
      numRuns: options.runs,
      seed: options.seed,
      ...(options.path ? { path: options.path, endOnFailure: false } : {}),
    });
    const report: FuzzReport = {
      failed: details.failed,
      seed: details.seed,
      runs: details.numRuns,
      stats,
      actor: actor.counts(),
      elapsedMs: performance.now() - started,
      confinement: hostConfinement(),
      pace: options.pace ?? 'mixed',
      strictLinks: ctx.strictLinks,
    };
    if (details.failed) {
      report.counterexample = fc.defaultReportMessage(details);
      report.shrunk = details.counterexample?.[0] as Sequence | undefined;
      report.path = details.counterexamplePath ?? undefined;
      report.error = describeError(details.errorInstance);
    }
    return report;
  }
}

/** The summary `npm run fuzz` prints. */
export function formatReport(r: FuzzReport, verbose = false): string {
  const lines: string[] = [];
  const s = r.stats;
  lines.push(
    `seed ${r.seed}; ${r.runs} sequences checked (${s.sequences} run, shrinking included) in ${(r.elapsedMs / 1000).toFixed(1)} s; host folders held by ${r.confinement}; host actor ${r.pace}`,
  );
  lines.push(
    `guest operations: ${s.guestOps}; host operations: ${r.actor.ops + s.syncHostOps} (actor thread ${r.actor.ops}: ${r.actor.swaps} rename/swap cycles, ${r.actor.links} outward symlinks, ${r.actor.holds} outside files held, ${r.actor.failed} failed; in sequences ${s.syncHostOps})`,
  );
  const rows = [...s.outcomes].sort((a, b) => b[1] - a[1]);
  lines.push('guest outcomes:');
  for (const [k, n] of rows) lines.push(`  ${k.padEnd(24)} ${String(n).padStart(8)}`);
  const ops = [...s.byOp].filter(([k]) => !k.startsWith('lie:')).sort((a, b) => b[1].total - a[1].total);
  const lies = [...s.byOp]
    .filter(([k]) => k.startsWith('lie:'))
    .reduce((n, [, v]) => ({ total: n.total + v.total, ok: n.ok + v.ok }), { total: 0, ok: 0 });
  lines.push(
    `guest operations by kind (succeeded/ran): ${[...ops.map(([k, v]) => `${k} ${v.ok}/${v.total}`), `lies ${lies.ok}/${lies.total}`].join(', ')}`,
  );
  if (verbose) {
    for (const [k, v] of [...s.byOp].sort())
      lines.push(
        `  ${k}: ${[...v.outcomes]
          .sort((a, b) => b[1] - a[1])
          .map(([o, n]) => `${o} ${n}`)
          .join(', ')}`,
      );
  }
  lines.push(
    `sequences leaving a guest-made symlink that leads out of the mount for the host: ${s.plantedLinkSequences}${s.plantedLinkExample ? ` (e.g. ${s.plantedLinkExample})` : ''}`,
  );
  if (r.failed) {
    lines.push('', 'COUNTEREXAMPLE', r.error ?? '', '', r.counterexample ?? '');
    lines.push(
      '',
      `replay: npm run fuzz -- --seed=${r.seed}${r.path ? ` --path=${r.path}` : ''}${r.pace !== 'mixed' ? ` --pace=${r.pace}` : ''}${r.strictLinks ? '' : ' --lenient-links'}`,
    );
  }
  return lines.join('\n');
}
