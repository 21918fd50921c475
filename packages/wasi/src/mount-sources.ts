/**
 * Mount sources: what a caller binds to a mount is data naming a `kind`,
 * and each host registers what it can open, kind by kind. `memory` (an
 * in-memory tree, copied per call) is built in; this package names no
 * other kind. A host registers two things per kind, on each side of the
 * worker boundary:
 *
 * - a check (`MountSourceCheck`), run on the host's side before the call:
 *   it refuses a source of a bad shape and returns what the worker gets
 *   (a resolved path, say), plain data;
 * - an opener (`MountOpener`), run in the sandbox worker as the call
 *   starts: it gives the mount's storage.
 *
 * A source is the caller's data, untrusted: its kind is read once, and
 * what goes on is a fresh object built from what was checked.
 */
import { CorralError, ErrorCodes, type ErrorDetails } from '@corral/core/errors';
import type { MemoryMountSource, MountBinding, MountSource } from '@corral/core';
import type { FsBackend } from './fs/backend.js';
import { checkTreeName } from './fs/memory.js';

/** How deep a memory tree's folders may nest: deeper, the copy (and the worker's) would run out of stack. */
export const MAX_TREE_DEPTH = 1024;

/** The kind every host opens: `{ kind: 'memory', tree }`. */
export const MEMORY_KIND = 'memory';

/** A backend that holds something (a directory fd) until the call ends. */
export interface ClosableBackend extends FsBackend {
  close?(): void;
}

/**
 * In the sandbox worker: the storage of a mount whose source is of this
 * opener's kind, for one call. Throws `badMountSource` for a source it
 * cannot open. The descriptor API is synchronous: a host whose storage is
 * not loads it before the call (`SandboxWorkerOptions.aroundRun`) and
 * hands it out here.
 */
export type MountOpener = (source: MountSource, guest: string) => ClosableBackend;

/** A host's openers, by kind. `memory` is built in and cannot be replaced. */
export type MountOpeners = Readonly<Record<string, MountOpener>>;

/**
 * On the host's side, before the call: check a caller's source of this
 * kind (throw `badMountSource`) and return the source the worker opens,
 * as plain data.
 */
export type MountSourceCheck = (source: MountSource, guest: string) => MountSource | Promise<MountSource>;

/** A host's checks, by kind. */
export type MountSourceChecks = Readonly<Record<string, MountSourceCheck>>;

/** E_INPUT_VALIDATION for a source of kind `kind` bound to `guest` that cannot be used: `problem` says why. */
export function badMountSource(
  guest: string,
  kind: string,
  problem: string,
  details: ErrorDetails<'E_INPUT_VALIDATION'> = {},
): CorralError {
  return new CorralError(ErrorCodes.INPUT_VALIDATION, `Mount ${guest}: the ${JSON.stringify(kind)} source ${problem}.`, {
    guest,
    kind,
    ...details,
  });
}

/** The string field `field` of a source, or E_INPUT_VALIDATION: for hosts' checks and openers. */
export function sourceString(source: MountSource, field: string, guest: string): string {
  const value = source[field];
  if (typeof value !== 'string') {
    throw badMountSource(guest, source.kind, `needs ${field} as a string (got ${value === null ? 'null' : typeof value})`);
  }
  if (value.includes('\0')) throw badMountSource(guest, source.kind, `has a NUL character in ${field}`);
  return value;
}

/**
 * Check the generic shape of a mount's source, from a caller: absent, or
 * an object whose kind (a string) is `memory` or one in `kinds`. A memory
 * source is returned as a fresh object with its tree (an object; the
 * names in it are checked as the tree is copied); another as a plain
 * copy, for its kind's own check or opener.
 */
export function checkMountSource(binding: MountBinding, kinds: readonly string[]): MountSource | undefined {
  const { guest } = binding;
  const source: unknown = binding.source;
  if (source === undefined) return undefined;
  const supported = [MEMORY_KIND, ...kinds.filter((k) => k !== MEMORY_KIND)];
  const example = `e.g. { kind: '${MEMORY_KIND}', tree: {} }`;
  if (typeof source !== 'object' || source === null || Array.isArray(source)) {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Mount ${guest}: its source must be an object with a kind, ${example}.`, {
      guest,
      supported_kinds: supported,
    });
  }
  const kind: unknown = (source as { kind?: unknown }).kind;
  if (typeof kind !== 'string') {
    throw new CorralError(
      ErrorCodes.INPUT_VALIDATION,
      `Mount ${guest}: its source has no kind (a string); this host opens ${listed(supported)}.`,
      { guest, supported_kinds: supported },
    );
  }
  if (!supported.includes(kind)) {
    throw new CorralError(
      ErrorCodes.INPUT_VALIDATION,
      `Mount ${guest}: this host cannot open a source of kind ${JSON.stringify(kind)}; it opens ${listed(supported)}.`,
      { guest, kind, supported_kinds: supported },
    );
  }
  // A copy with the kind as read: a getter cannot answer differently later.
  if (kind !== MEMORY_KIND) return { ...source, kind };
  const tree: unknown = (source as { tree?: unknown }).tree;
  if (typeof tree !== 'object' || tree === null || Array.isArray(tree) || tree instanceof Uint8Array) {
    throw badMountSource(guest, kind, `needs tree as an object of files and folders (got ${tree === null ? 'null' : typeof tree})`);
  }
  return { kind: MEMORY_KIND, tree: copyTree(tree, guest) } as MemoryMountSource;
}

/**
 * A memory tree as plain data, each entry read once: what was checked is
 * what goes on. A getter, a Proxy or a value that cannot be sent to the
 * worker (a function) is the caller's mistake, E_INPUT_VALIDATION, never
 * an internal error; so is a tree nested deeper than MAX_TREE_DEPTH.
 */
function copyTree(tree: object, guest: string): MemoryMountSource['tree'] {
  const copy = (from: object, depth: number): Record<string, unknown> => {
    if (depth > MAX_TREE_DEPTH) throw badMountSource(guest, MEMORY_KIND, `has folders nested deeper than ${MAX_TREE_DEPTH}`);
    // No prototype: a file named __proto__ is a file, not the copy's prototype.
    const out: Record<string, unknown> = Object.create(null);
    for (const [name, value] of Object.entries(from) as [string, unknown][]) {
      checkTreeName(name);
      if (typeof value === 'string' || value instanceof Uint8Array) out[name] = value;
      else if (typeof value === 'object' && value !== null && !Array.isArray(value)) out[name] = copy(value, depth + 1);
      else {
        const what = value === null || value === undefined ? String(value) : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
        throw badMountSource(
          guest,
          MEMORY_KIND,
          `has ${JSON.stringify(name)} as ${what}: a file is a string or a Uint8Array, a folder an object`,
          {
            name,
          },
        );
      }
    }
    return out;
  };
  try {
    return copy(tree, 1) as MemoryMountSource['tree'];
  } catch (err) {
    if (err instanceof CorralError) throw err;
    throw badMountSource(guest, MEMORY_KIND, `could not be read (${err instanceof Error ? err.message : String(err)})`);
  }
}

/**
 * On the host's side, before a call: each mount's source checked (its
 * shape, then its kind's own check), as fresh bindings to send the worker.
 */
export async function checkMountSources(mounts: readonly MountBinding[], checks: MountSourceChecks): Promise<MountBinding[]> {
  const kinds = Object.keys(checks);
  return Promise.all(
    mounts.map(async (mount) => {
      const { guest, access } = mount;
      const source = checkMountSource(mount, kinds);
      if (source === undefined) return { guest, access };
      if (source.kind === MEMORY_KIND) return { guest, access, source };
      return { guest, access, source: await checks[source.kind]!(source, guest) };
    }),
  );
}

function listed(kinds: readonly string[]): string {
  return kinds.map((k) => JSON.stringify(k)).join(', ');
}
