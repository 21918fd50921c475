/**
 * The handles a mount keeps (resolve.ts DirectoryCache), fuzzed against the
 * same operations on a mount that keeps none (the same ops; 15% are opens, so
 * more than KEPT_DIRECTORIES are kept and evicted): a memory backend whose
 * directory handles are tokens (each released once, never used after), and
 * whose stillAt answers honestly (or says no at random), while a "host"
 * renames and removes folders between the guest's calls. Every answer must
 * be the one the mount without kept handles gives, and every handle opened
 * is released exactly once by the end of the call.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend, callFilesystem, type Descriptor, type FsBackend } from '@corral/wasi/fs';

class Token {
  released = false;
  constructor(readonly node: unknown) {}
}

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

interface Side {
  inner: MemoryBackend;
  live: Set<Token>;
  errors: string[];
}

/** A memory backend whose handles are tokens; with `stillAt` given, it offers it. */
function wrapped(inner: MemoryBackend, side: Side, stillAt: ((t: Token, path: readonly string[]) => boolean) | null): FsBackend {
  const rootToken = new Token(inner.root);
  const un = (v: unknown) => {
    if (v instanceof Token) {
      if (v.released) side.errors.push('use after release');
      return v.node;
    }
    return v;
  };
  const target = {
    root: rootToken,
    openDirectory(dir: Token, name: string) {
      const t = new Token(inner.openDirectory(un(dir) as never, name));
      side.live.add(t);
      return t;
    },
    releaseDirectory(dir: Token) {
      if (dir === rootToken) side.errors.push('root released');
      if (dir.released) side.errors.push('double release');
      dir.released = true;
      side.live.delete(dir);
    },
  } as Record<string, unknown>;
  if (stillAt)
    target.stillAt = (dir: Token, path: readonly string[]) => {
      if (dir.released) side.errors.push('stillAt after release');
      return stillAt(dir, path);
    };
  return new Proxy(target, {
    get(t, key) {
      if (key in t) return t[key as string];
      const v = (inner as unknown as Record<string | symbol, unknown>)[key];
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => (v as (...a: unknown[]) => unknown).apply(inner, args.map(un));
    },
    has(t, key) {
      return key in t || key in inner;
    },
  }) as unknown as FsBackend;
}

function nodeAt(inner: MemoryBackend, path: readonly string[]): unknown {
  let dir: unknown = inner.root;
  for (const name of path) {
    try {
      const info = inner.stat(dir as never, name);
      if (info.type !== 'directory') return undefined;
      dir = inner.openDirectory(dir as never, name);
    } catch {
      return undefined;
    }
  }
  return dir;
}

function run(seed: number): void {
  const random = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const names = ['a', 'b', 'c', 'x (deleted)', 'd'];
  const sides: Side[] = [];
  const descriptors: Descriptor[][] = [[], []];
  const calls = [0, 1].map((i) => {
    const inner = new MemoryBackend(7n);
    const side: Side = { inner, live: new Set(), errors: [] };
    sides.push(side);
    const still = i === 0 ? (t: Token, path: readonly string[]) => random() < 0.8 && nodeAt(inner, path) === t.node : null;
    const call = callFilesystem([{ guest: '/m', access: 'read-write', source: { kind: 'fake' } }], 1 << 24, {
      fake: () => wrapped(inner, side, still),
    });
    descriptors[i]!.push(call.preopens[0]![0]);
    return call;
  });
  const randomPath = () => {
    const n = 1 + Math.floor(random() * 3);
    return Array.from({ length: n }, () => (random() < 0.15 ? '..' : pick(names))).join('/');
  };
  const outcome = (f: () => unknown): string => {
    try {
      const v = f();
      return JSON.stringify(v, (_, x) =>
        typeof x === 'bigint' ? x.toString() : x instanceof Object && 'metadataHash' in x ? 'descriptor' : x,
      );
    } catch (e) {
      return `throw ${typeof e === 'string' ? e : (e as Error).message}`;
    }
  };
  const list = (d: Descriptor) => {
    const out: unknown[] = [];
    const s = d.readDirectory();
    for (let e = s.readDirectoryEntry(); e; e = s.readDirectoryEntry())
      out.push([e.name, e.type, d.metadataHashAt({ symlinkFollow: false }, e.name)]);
    return out;
  };
  for (let step = 0; step < 300; step++) {
    const op = random() < 0.15 ? 1 : Math.floor(random() * 10);
    const di = Math.floor(random() * descriptors[0]!.length);
    const p = randomPath();
    const q = randomPath();
    if (op === 9) {
      // The host: rename or remove a folder anywhere, on both sides alike.
      const from = Array.from({ length: 1 + Math.floor(random() * 2) }, () => pick(names));
      const to = Array.from({ length: 1 + Math.floor(random() * 2) }, () => pick(names));
      const kind = random() < 0.5;
      const r = sides.map((side) =>
        outcome(() => {
          const a = nodeAt(side.inner, from.slice(0, -1));
          const b = nodeAt(side.inner, to.slice(0, -1));
          if (!a || !b) throw 'gone';
          if (kind) side.inner.rename(a as never, from.at(-1)!, b as never, to.at(-1)!);
          else side.inner.removeDirectory(a as never, from.at(-1)!);
        }),
      );
      expect(r[0], `step ${step} host`).toBe(r[1]);
      continue;
    }
    const results = [0, 1].map((i) => {
      const d = descriptors[i]![di]!;
      const root = descriptors[i]![0]!;
      return outcome(() => {
        switch (op) {
          case 0:
            return d.createDirectoryAt(p);
          case 1: {
            const child = d.openAt({}, p, { directory: true }, { read: true, mutateDirectory: true });
            descriptors[i]!.push(child);
            return 'opened';
          }
          case 2:
            return list(d);
          case 3:
            return d.renameAt(p, root, q);
          case 4:
            return d.removeDirectoryAt(p);
          case 5:
            return d.metadataHashAt({ symlinkFollow: false }, p);
          case 6:
            return d.statAt({ symlinkFollow: true }, p).type;
          case 7:
            d.openAt({}, p, { create: true }, { write: true }).write(new Uint8Array([1, 2]), 0n);
            return 'written';
          default:
            return d.symlinkAt(q, p);
        }
      });
    });
    expect(results[0], `seed ${seed} step ${step} op ${op} on ${di} ${p} ${q}`).toBe(results[1]);
  }
  for (const c of calls) c.close();
  expect(sides[0]!.errors).toEqual([]);
  expect(sides[0]!.live.size).toBe(0);
}

describe('kept directory handles, fuzzed against a mount that keeps none', () => {
  it('answers alike, and releases every handle once', () => {
    for (let seed = 1; seed <= 300; seed++) run(seed);
  });
});
