import type { MemoryTree } from '@corral/core';

/** The shape preview2-shim's in-memory adapter walks: folders have `dir`, files `source`. */
export interface FileDataEntry {
  dir?: Record<string, FileDataEntry>;
  source?: Uint8Array | string;
  symlink?: string;
}

/** Convert a caller's MemoryTree into shim file data (copying, so a call never mutates the caller's tree). */
export function toFileData(tree: MemoryTree): FileDataEntry {
  const dir: Record<string, FileDataEntry> = {};
  for (const [name, value] of Object.entries(tree)) {
    if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
      throw new TypeError(`invalid file name in mount tree: ${JSON.stringify(name)}`);
    }
    if (typeof value === 'string') dir[name] = { source: new TextEncoder().encode(value) };
    else if (value instanceof Uint8Array) dir[name] = { source: value.slice() };
    else dir[name] = toFileData(value);
  }
  return { dir };
}

/** The reverse of toFileData, for handing a read-write mount's result back to the caller. */
export function fromFileData(entry: FileDataEntry): MemoryTree {
  const tree: MemoryTree = {};
  for (const [name, child] of Object.entries(entry.dir ?? {})) {
    if (child.dir) tree[name] = fromFileData(child);
    else if (child.source !== undefined) {
      tree[name] = typeof child.source === 'string' ? new TextEncoder().encode(child.source) : child.source;
    }
  }
  return tree;
}
