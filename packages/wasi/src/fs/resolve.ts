/**
 * Path resolution, done by Corral for every backend and at every use.
 *
 * A guest path is walked one component at a time from a directory handle
 * the backend gave out, never handed to the kernel (or a tree) whole:
 *   - `..` pops the walk's own stack of directories, and may not pop past
 *     the directory the walk started from (`not-permitted`), as wasmtime's
 *     cap-std does;
 *   - a symlink is read and its target walked under the same rule: a
 *     relative target may climb only as far as the start, an absolute one
 *     is followed only when the host made it point inside the mount
 *     (`hostRoot`), otherwise `not-permitted`;
 *   - at most 40 symlinks per walk (`loop`), names of at most 255 bytes and
 *     paths of at most 4096 (`name-too-long`).
 * Each step asks the backend about one name in one directory handle, so a
 * folder swapped for a symlink between two calls (by the tool or by the
 * host) is seen as the symlink it now is.
 */
import type { EntryStat, FsBackend } from './backend.js';

const MAX_SYMLINKS = 40;
/**
 * Directories a walk holds at once, besides the root. A host backend holds
 * each as a file descriptor, and a tool can make a tree as deep as its quota
 * allows: a deeper walk lets go of the ones further up, and opens them again
 * by name, from the closest one it still holds, when `..` climbs back.
 */
export const HELD_DIRECTORIES = 32;
const NAME_MAX = 255;
const PATH_MAX = 4096;

const utf8 = new TextEncoder();

export interface ParsedPath {
  segments: string[];
  /** The path ended in `/`: its last component must be a directory (and is followed). */
  trailingSlash: boolean;
}

/** Check a guest path: relative, no NUL, not empty, within NAME_MAX and PATH_MAX. */
export function parsePath(path: string): ParsedPath {
  if (path === '') throw 'no-entry';
  if (path.includes('\0')) throw 'invalid';
  if (path.startsWith('/')) throw 'not-permitted';
  if (path.length > PATH_MAX && utf8.encode(path).length > PATH_MAX) throw 'name-too-long';
  const segments = path.split('/').filter((s) => s !== '');
  for (const s of segments) if (s.length > NAME_MAX / 3 && utf8.encode(s).length > NAME_MAX) throw 'name-too-long';
  return { segments, trailingSlash: path.endsWith('/') };
}

/**
 * Check a symlink target a guest asks for, before anything splits it: under
 * PATH_MAX bytes, as symlink(2) wants (in-memory trees would store any size,
 * and a host may write links back to its own storage).
 */
export function checkLinkTarget(target: string): void {
  if (target.length >= PATH_MAX || utf8.encode(target).length >= PATH_MAX) throw 'name-too-long';
}

/**
 * Where a path led: the directory holding its last component (held open
 * until `release`) and that component's name, or name null when the path
 * names the directory itself (`.`, `a/..`).
 */
export interface Resolved<D> {
  dir: D;
  name: string | null;
  trailingSlash: boolean;
  /**
   * What the walk saw of `name` when it looked (never followed): its stat,
   * null when it did not exist, undefined when the walk did not look (name
   * null). Taken just before the walk returned, so callers need not stat the
   * same name again; like any stat, it may be stale by the time it is used.
   */
  stat: EntryStat | null | undefined;
  /** How deep `dir` is below the mount root. */
  depth: number;
  /** The names of the folders from the mount root to `dir`: its physical path. */
  path: readonly string[];
  release(): void;
}

/**
 * Walk `base` (a descriptor's own path from the mount root, already
 * physical) and then `path` from it. `followFinal` follows a symlink in the
 * last position too (a trailing slash always does). With a `cache`, the
 * directory at `base` is taken from it when the backend says it is still
 * there, and is kept in it otherwise.
 */
export function resolve<D>(
  backend: FsBackend<D>,
  base: readonly string[],
  path: ParsedPath,
  followFinal: boolean,
  cache?: DirectoryCache<D>,
): Resolved<D> {
  const stack: Walk<D> = { dirs: [backend.root], names: [], kept: [undefined], cache };
  const release = () => toRoot(backend, stack);
  try {
    const seen: Seen = { stat: undefined };
    const kept = cache && base.length > 0 ? cache.take(base) : undefined;
    if (kept) {
      // Still where it was: the folders between the root and it are not held (as past the window).
      for (const name of base) {
        stack.dirs.push(undefined);
        stack.kept.push(undefined);
        stack.names.push(name);
      }
      stack.dirs[base.length] = kept.dir;
      stack.kept[base.length] = kept;
    } else {
      // The descriptor's own directory, walked again from the root.
      const last = walk(backend, stack, [...base], 0, true, { links: 0 }, seen);
      if (last !== null) enter(backend, stack, last);
      const top = stack.names.length;
      if (cache && top > 0 && stack.kept[top] === undefined) stack.kept[top] = cache.keep(stack.names, stack.dirs[top]!);
    }
    const floor = stack.names.length;
    const name = walk(backend, stack, [...path.segments], floor, followFinal || path.trailingSlash, { links: 0 }, seen);
    const depth = stack.names.length;
    const stat = name === null ? undefined : seen.stat;
    return { dir: stack.dirs[depth]!, name, stat, trailingSlash: path.trailingSlash, depth, path: [...stack.names], release };
  } catch (err) {
    release();
    throw err;
  }
}

/**
 * The directories a walk is in, from the mount root, and their names:
 * `dirs[i + 1]` is `names[i]` in `dirs[i]`. The root and the last
 * HELD_DIRECTORIES are held; the ones between are `undefined`. `kept[i]` is
 * set when `dirs[i]` is the cache's, borrowed (given back, not released).
 */
interface Walk<D> {
  dirs: Array<D | undefined>;
  names: string[];
  kept: Array<KeptDirectory<D> | undefined>;
  cache: DirectoryCache<D> | undefined;
}

function enter<D>(backend: FsBackend<D>, stack: Walk<D>, name: string): void {
  stack.dirs.push(backend.openDirectory(stack.dirs[stack.dirs.length - 1]!, name));
  stack.kept.push(undefined);
  stack.names.push(name);
  letGo(backend, stack, stack.dirs.length - 1 - HELD_DIRECTORIES);
}

/** Done with `dir`, at `index` of the walk: released, or given back to the cache it was borrowed from. */
function drop<D>(backend: FsBackend<D>, stack: Walk<D>, index: number, dir: D): void {
  const kept = stack.kept[index];
  if (kept) {
    stack.kept[index] = undefined;
    stack.cache!.giveBack(kept);
  } else {
    backend.releaseDirectory(dir);
  }
}

/** Release the directory at `index` of the walk, if it is held and not the root. */
function letGo<D>(backend: FsBackend<D>, stack: Walk<D>, index: number): void {
  if (index < 1) return;
  const dir = stack.dirs[index];
  if (dir === undefined) return;
  stack.dirs[index] = undefined;
  drop(backend, stack, index, dir);
}

function leave<D>(backend: FsBackend<D>, stack: Walk<D>): void {
  const index = stack.dirs.length - 1;
  const dir = stack.dirs.pop();
  stack.names.pop();
  if (dir !== undefined) drop(backend, stack, index, dir);
  stack.kept.pop();
  const top = stack.dirs.length - 1;
  if (stack.dirs[top] !== undefined) return;
  // Let go of on the way down: open it again by name from the closest held
  // directory, as a walk would (never following a symlink), keeping the window.
  let from = top;
  while (stack.dirs[from] === undefined) from--;
  for (let i = from + 1; i <= top; i++) {
    stack.dirs[i] = backend.openDirectory(stack.dirs[i - 1]!, stack.names[i - 1]!);
    letGo(backend, stack, i - HELD_DIRECTORIES);
  }
}

/** Back to the mount root, releasing every directory held. */
function toRoot<D>(backend: FsBackend<D>, stack: Walk<D>): void {
  while (stack.dirs.length > 1) {
    const index = stack.dirs.length - 1;
    const dir = stack.dirs.pop();
    if (dir !== undefined) drop(backend, stack, index, dir);
    stack.kept.pop();
  }
  stack.names.length = 0;
}

/** A directory handle the cache holds, and how many walks are using it. */
export interface KeptDirectory<D> {
  readonly dir: D;
  readonly path: readonly string[];
  readonly key: string;
  users: number;
  /** Out of the cache: released when the last user gives it back. */
  evicted: boolean;
}

/** Directory handles a cache keeps per mount; a walk holds up to HELD_DIRECTORIES more. */
export const KEPT_DIRECTORIES = 32;

/**
 * Directory handles kept between walks, for one mount of one call: the
 * folders its directory descriptors name, so that using a descriptor does
 * not walk from the mount root again. Only for a backend that can tell
 * cheaply whether a handle is still at the path it was opened by
 * (FsBackend.stillAt): every `take` asks it, so a folder renamed, removed
 * or swapped since (by the tool or by the host) is walked to afresh, and a
 * handle that now leads elsewhere is never used. At most KEPT_DIRECTORIES,
 * the least recently used let go first; all released when the call ends.
 */
export class DirectoryCache<D> {
  readonly #backend: FsBackend<D>;
  readonly #kept = new Map<string, KeptDirectory<D>>();

  constructor(backend: FsBackend<D>) {
    this.#backend = backend;
  }

  /** The kept handle for `path`, still there, borrowed until given back; undefined when there is none. */
  take(path: readonly string[]): KeptDirectory<D> | undefined {
    const key = path.join('/');
    const kept = this.#kept.get(key);
    if (!kept) return undefined;
    this.#kept.delete(key);
    let still = false;
    try {
      still = this.#backend.stillAt!(kept.dir, kept.path);
    } finally {
      if (!still) this.#evict(kept);
    }
    if (!still) return undefined;
    this.#kept.set(key, kept);
    kept.users++;
    return kept;
  }

  /** Whether a handle for `path` is kept (not whether it is still there: `take` asks that). */
  has(path: readonly string[]): boolean {
    return this.#kept.has(path.join('/'));
  }

  /** Keep `dir`, which a walk just opened at `path`, and lend it back to that walk. */
  keep(path: readonly string[], dir: D): KeptDirectory<D> {
    const key = path.join('/');
    const old = this.#kept.get(key);
    if (old) {
      this.#kept.delete(key);
      this.#evict(old);
    }
    const kept: KeptDirectory<D> = { dir, path: [...path], key, users: 1, evicted: false };
    this.#kept.set(key, kept);
    while (this.#kept.size > KEPT_DIRECTORIES) {
      const oldest = this.#kept.values().next().value!;
      this.#kept.delete(oldest.key);
      this.#evict(oldest);
    }
    return kept;
  }

  giveBack(kept: KeptDirectory<D>): void {
    kept.users--;
    if (kept.evicted && kept.users === 0) this.#backend.releaseDirectory(kept.dir);
  }

  /** Release every handle (the call ended; no walk is under way). */
  clear(): void {
    for (const kept of this.#kept.values()) this.#evict(kept);
    this.#kept.clear();
  }

  #evict(kept: KeptDirectory<D>): void {
    if (kept.evicted) return;
    kept.evicted = true;
    if (kept.users === 0) this.#backend.releaseDirectory(kept.dir);
  }
}

/** The stat a walk took of the name it returns (see Resolved.stat). */
interface Seen {
  stat: EntryStat | null | undefined;
}

/**
 * Walk `pending` from the top of `stack`, entering each directory on the
 * way. Returns the last component's name (not entered), or null when the
 * walk ends on a directory it entered (or the path was empty); `seen.stat`
 * is what it saw of that name.
 */
function walk<D>(
  backend: FsBackend<D>,
  stack: Walk<D>,
  pending: string[],
  floor: number,
  followFinal: boolean,
  count: { links: number },
  seen: Seen,
): string | null {
  let last: string | null = null;
  seen.stat = undefined;
  while (pending.length > 0) {
    const segment = pending.shift()!;
    const final = pending.length === 0;
    if (segment === '.') {
      last = null;
      continue;
    }
    if (segment === '..') {
      if (stack.names.length <= floor) throw 'not-permitted';
      leave(backend, stack);
      last = null;
      continue;
    }
    const top = stack.dirs[stack.dirs.length - 1]!;
    if (!final) {
      // Most components are plain directories: enter at once (the backend
      // never follows a symlink there), and look closer only when that fails.
      try {
        enter(backend, stack, segment);
        continue;
      } catch (err) {
        if (err !== 'not-directory' && err !== 'loop') throw err;
      }
    }
    let info: EntryStat;
    try {
      info = backend.stat(top, segment);
    } catch (err) {
      // A missing last component is the caller's to judge (create, mkdir, …).
      if (final && err === 'no-entry') {
        seen.stat = null;
        return segment;
      }
      throw err;
    }
    if (info.type === 'symbolic-link' && (!final || followFinal)) {
      if (++count.links > MAX_SYMLINKS) throw 'loop';
      const target = backend.readlink(top, segment);
      const absolute = absoluteInside(backend, target);
      if (absolute) {
        // Inside the mount by its host path: walk it from the root.
        if (floor > 0) throw 'not-permitted';
        toRoot(backend, stack);
      } else if (target.startsWith('/') || target === '') {
        throw 'not-permitted';
      }
      const targetSegments = (absolute ?? target).split('/').filter((s) => s !== '');
      // A target ending in `/` must be a directory: follow it like a trailing slash.
      if (final && target.endsWith('/') && targetSegments.length > 0) followFinal = true;
      pending.unshift(...targetSegments);
      last = null;
      continue;
    }
    if (final) {
      seen.stat = info;
      return segment;
    }
    if (info.type !== 'directory') throw 'not-directory';
    enter(backend, stack, segment);
  }
  return last;
}

/** An absolute symlink target the host made under the mount's own host path, as a path from the mount root. */
function absoluteInside(backend: FsBackend<unknown>, target: string): string | undefined {
  const root = backend.hostRoot;
  if (!root || !target.startsWith('/')) return undefined;
  const prefix = root.endsWith('/') ? root : `${root}/`;
  if (target === root) return '.';
  return target.startsWith(prefix) ? target.slice(prefix.length) || '.' : undefined;
}

/**
 * The target of a symlink as the guest may see it (readlink), or
 * `not-permitted` when it leads out of the mount: a relative target that
 * stays inside when read from the link's folder (`depth` below the root),
 * or an absolute one under the mount's host path, given relative.
 */
export function visibleTarget(backend: FsBackend<unknown>, target: string, depth: number): string {
  const inside = absoluteInside(backend, target);
  if (inside !== undefined) {
    const up = Array(depth).fill('..');
    const down = inside === '.' ? [] : inside.split('/').filter((s) => s !== '');
    const relative = [...up, ...down].join('/') || '.';
    // `<root>/../elsewhere` starts with the root's host path and still leads out of it.
    if (!staysInside(relative, depth)) throw 'not-permitted';
    return relative;
  }
  if (!staysInside(target, depth)) throw 'not-permitted';
  return target;
}

/** True when `target` is relative and never climbs (no `..`): from anywhere in a mount, it leads inside. */
export function descendsOnly(target: string): boolean {
  if (target === '' || target.startsWith('/') || target.includes('\0')) return false;
  return target.split('/').every((s) => s !== '..');
}

/**
 * True when a relative `target`, read from a folder `depth` below the root,
 * never climbs above the root. Its `..`s must all come first: the kernel
 * follows a name before the `..` after it, so `here/../x` with `here -> .`
 * is the root's parent, whatever the text says. Only leading `..`s climb
 * from a known place (the real folder the link sits in).
 */
export function staysInside(target: string, depth: number): boolean {
  if (target === '' || target.startsWith('/') || target.includes('\0')) return false;
  let at = depth;
  let named = false;
  for (const s of target.split('/')) {
    if (s === '..') {
      if (named) return false;
      at--;
    } else if (s !== '' && s !== '.') {
      named = true;
      at++;
    }
    if (at < 0) return false;
  }
  return true;
}
