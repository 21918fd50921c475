/**
 * The client's MCP roots, and binding a tool's declared mounts to folders
 * inside them.
 *
 * A tool that declares mounts (`/workspace`, …) sees, for each, one folder the
 * client exposed as a root or a folder inside one: the first root by default,
 * or the folder a call names in `_meta["corral/mounts"]`. The folder and every
 * root are resolved by the host (`resolveFolder`: symlinks and `..` resolved,
 * an existing folder) before they are compared, so a name that only looks
 * inside a root does not pass. Nothing else can be bound: a client without
 * roots, or a folder outside them, is refused with E_INPUT_VALIDATION.
 */
import { CorralError, ErrorCodes, type ErrorDetails, type MountBinding, type MountSource, type MountSpec, type Tool } from '@corral/core';
import type { Root } from '@modelcontextprotocol/sdk/types.js';
import { META } from './tools.js';

/** A file:// URI → the canonical path of the existing folder it names; throws when it names none. */
export type ResolveFolder = (uri: string) => Promise<string>;
/** A folder `ResolveFolder` returned, as the host's mount source for it (Node: `{ kind: 'host', path }`). */
export type FolderSource = (path: string) => MountSource;
/** True when `path` is `root` or lies under it (both canonical, as ResolveFolder returns them). */
export type IsInside = (root: string, path: string) => boolean;

/** What bounds the work one client can cause. */
export const ROOTS_LIMITS = {
  /** Roots considered; a longer list is cut here (the rest are ignored, and logged). */
  maxRoots: 64,
  /** Longest root or `_meta` URI considered, in characters. */
  maxUriLength: 4096,
  /** How long a `roots/list` request may take. */
  timeoutMs: 10_000,
} as const;

/** POSIX paths: `/a/b` is inside `/a` and `/`, not inside `/a/b2`. */
export const isInsidePosix: IsInside = (root, path) => path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`);

/** The roots as last reported by the client, and whether it can report any. */
export interface RootsState {
  /** False when the client did not declare the `roots` capability. */
  supported: boolean;
  roots: readonly Root[];
}

/**
 * Keeps the client's roots: fetched when a call first needs them, dropped
 * when the client says they changed, fetched again by the next call.
 */
export class RootsCache {
  #roots: Root[] | undefined;
  #pending: Promise<Root[]> | undefined;
  /** Bumped on every change notice, so a fetch that raced one is not kept. */
  #generation = 0;
  readonly #log: (message: string) => void;

  constructor(log: (message: string) => void) {
    this.#log = log;
  }

  /** `notifications/roots/list_changed`. */
  invalidate(): void {
    this.#generation++;
    this.#roots = undefined;
    this.#pending = undefined;
  }

  /** The roots, asking the client with `fetch` when none are cached. Throws what `fetch` throws. */
  async get(fetch: () => Promise<Root[]>): Promise<Root[]> {
    if (this.#roots) return this.#roots;
    if (!this.#pending) {
      const generation = this.#generation;
      const pending = fetch().then(
        (roots) => {
          const kept = this.#sanitize(roots);
          if (this.#generation === generation) this.#roots = kept;
          return kept;
        },
        (err: unknown) => {
          // A failed fetch is not kept: the next call asks again.
          if (this.#pending === pending) this.#pending = undefined;
          throw err;
        },
      );
      this.#pending = pending;
    }
    return this.#pending;
  }

  #sanitize(roots: Root[]): Root[] {
    const usable = roots.filter((r) => r.uri.length <= ROOTS_LIMITS.maxUriLength);
    if (usable.length < roots.length)
      this.#log(`ignored ${roots.length - usable.length} root(s) with URIs over ${ROOTS_LIMITS.maxUriLength} characters`);
    if (usable.length > ROOTS_LIMITS.maxRoots) {
      this.#log(`the client lists ${usable.length} roots; only the first ${ROOTS_LIMITS.maxRoots} are used`);
      return usable.slice(0, ROOTS_LIMITS.maxRoots);
    }
    return usable;
  }
}

export interface BindContext {
  /** The call's `params._meta` (untrusted). */
  meta: Record<string, unknown> | undefined;
  /** The client's roots, fetched on demand; `supported: false` for a client without the capability. */
  roots: () => Promise<RootsState>;
  resolveFolder: ResolveFolder | undefined;
  isInside: IsInside;
  /** What a resolved folder is as a mount source (the host's kind for its folders). */
  folderSource: FolderSource | undefined;
  log: (message: string) => void;
}

/** A declared mount and the folder (as `resolveFolder` returned it) a call binds to it. */
export interface ResolvedMount {
  mount: MountSpec;
  folder: string;
}

/** The folders a call binds, and the client's roots they were checked against (resolved; roots that are not folders left out). */
export interface ResolvedMounts {
  mounts: ResolvedMount[];
  /** Undefined when the tool declares no mounts (the roots were not asked for). */
  roots: string[] | undefined;
}

/**
 * The folder each declared mount of `tool` binds to, inside the client's
 * roots: the first root, or the file:// URI `_meta["corral/mounts"]` names.
 * Throws CorralError E_INPUT_VALIDATION when that cannot be done (no roots,
 * a folder outside them, a malformed request), with `details.reason`, and
 * `details.guest` and `details.uri` when one mount is at fault.
 */
export async function resolveMounts(tool: Tool, ctx: Omit<BindContext, 'folderSource'>): Promise<ResolvedMounts> {
  const declared = tool.spec.mounts ?? [];
  const requested = requestedMounts(tool, ctx.meta);
  if (declared.length === 0) return { mounts: [], roots: undefined };

  const { name } = tool.spec;
  const guests = declared.map((m) => m.guest).join(', ');
  const { resolveFolder } = ctx;
  if (!resolveFolder) {
    throw refusal(`${name} needs a folder for ${guests}, and this MCP server cannot bind host folders (it has no folder resolver)`, {
      reason: 'no_folder_resolver',
    });
  }
  const { supported, roots } = await ctx.roots();
  if (!supported) {
    throw refusal(
      `${name} needs a folder for ${guests}, and this client exposes no MCP roots: a tool can only see folders the client shares as roots. ` +
        'Use a client that supports roots, or tools without mounts.',
      { reason: 'no_roots' },
    );
  }
  if (roots.length === 0) {
    throw refusal(`${name} needs a folder for ${guests}, and the client's list of roots is empty: share a folder as a root first.`, {
      reason: 'no_roots',
    });
  }

  // Every root resolved the same way as the folder it must contain.
  const resolvedRoots: string[] = [];
  for (const root of roots) {
    try {
      resolvedRoots.push(await resolveFolder(root.uri));
    } catch (err) {
      ctx.log(`root ${quote(root.uri)} is not a folder that can be mounted: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const rootUris = roots.map((r) => r.uri);

  const mounts: ResolvedMount[] = [];
  for (const mount of declared) {
    const uri = requested.get(mount.guest) ?? roots[0]!.uri;
    let path: string;
    try {
      path = await resolveFolder(uri);
    } catch (err) {
      throw refusal(`Mount ${mount.guest} of ${name}: ${quote(uri)} is not a folder that can be mounted (${errorText(err)})`, {
        reason: 'not_a_folder',
        guest: mount.guest,
        uri: clip(uri),
      });
    }
    if (!resolvedRoots.some((root) => ctx.isInside(root, path))) {
      throw refusal(
        `Mount ${mount.guest} of ${name}: ${quote(uri)} is outside the client's roots (${rootUris.map(quote).join(', ')}); ` +
          'a tool can only see folders the client shares as roots',
        { reason: 'outside_roots', guest: mount.guest, uri: clip(uri), roots: rootUris.map(clip) },
      );
    }
    mounts.push({ mount, folder: path });
  }
  return { mounts, roots: resolvedRoots };
}

/**
 * The mounts a call of `tool` gets when no policy decides: each declared
 * mount bound to a folder inside the client's roots (`resolveMounts`), with
 * the access the spec declares. Throws as `resolveMounts` does.
 */
export async function bindMounts(tool: Tool, ctx: BindContext): Promise<MountBinding[]> {
  const { mounts } = await resolveMounts(tool, ctx);
  if (mounts.length === 0) return [];
  const { folderSource } = ctx;
  if (!folderSource) {
    throw refusal(`${tool.spec.name} needs host folders, and this MCP server cannot bind them (it has no folderSource)`, {
      reason: 'no_folder_resolver',
    });
  }
  return mounts.map((m) => mountBinding(m.mount, folderSource(m.folder)));
}

/**
 * THE one place a declared mount becomes what `invoke` binds: the resolved
 * folder as the host's mount source, with the access the spec declares
 * (never more). Keep every other part of this package ignorant of the
 * binding's shape.
 */
export function mountBinding(mount: MountSpec, source: MountSource): MountBinding {
  return { guest: mount.guest, access: mount.access, source };
}

/** `_meta["corral/mounts"]`, checked: declared guests to file:// URIs. */
function requestedMounts(tool: Tool, meta: Record<string, unknown> | undefined): Map<string, string> {
  const requested = new Map<string, string>();
  const raw = meta?.[META.mounts];
  if (raw === undefined) return requested;
  const declared = tool.spec.mounts ?? [];
  const declaredList = declared.map((m) => m.guest);
  const key = `_meta["${META.mounts}"]`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw refusal(`${key} must be an object of mount → file:// URI, e.g. { "/workspace": "file:///home/me/project" }`, {
      reason: 'bad_mounts_meta',
    });
  }
  const entries = Object.entries(raw);
  // Checked before looking at any entry: a huge object costs nothing more than this.
  if (entries.length > declared.length) {
    throw refusal(
      `${key} names ${entries.length} mounts; ${tool.spec.name} declares ${declared.length} (${declaredList.join(', ') || 'none'})`,
      {
        reason: 'bad_mounts_meta',
        declared: declaredList,
      },
    );
  }
  for (const [guest, uri] of entries) {
    if (!declaredList.includes(guest)) {
      throw refusal(`${key}: mount ${quote(guest)} is not declared by ${tool.spec.name}; declared: ${declaredList.join(', ') || 'none'}`, {
        reason: 'undeclared_mount',
        guest: clip(guest),
        declared: declaredList,
      });
    }
    if (typeof uri !== 'string' || !uri.startsWith('file://') || uri.length > ROOTS_LIMITS.maxUriLength) {
      throw refusal(`${key}: mount ${guest} must be a file:// URI of at most ${ROOTS_LIMITS.maxUriLength} characters`, {
        reason: 'bad_mounts_meta',
        guest,
      });
    }
    requested.set(guest, uri);
  }
  return requested;
}

function refusal(message: string, details: ErrorDetails<'E_INPUT_VALIDATION'>): CorralError {
  return new CorralError(ErrorCodes.INPUT_VALIDATION, message, details);
}

/** A client's string, shortened for a message. */
function clip(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function quote(text: string): string {
  return JSON.stringify(clip(text));
}

function errorText(err: unknown): string {
  return clip(err instanceof Error ? err.message : String(err));
}
