/**
 * Tool folders kept in step with a registry while a server runs: a tool
 * folder copied into a watched folder is registered, one removed is
 * unregistered, one whose files changed is replaced. A broken tool is
 * reported through `log` and skipped; it never stops the others or the server.
 *
 * Which registered tools belong to the watched folders is read from each
 * tool's `source` (its spec path): `DIR/tool-spec.json` or
 * `DIR/SUB/tool-spec.json`, as loadToolFolder finds them. Tools from anywhere
 * else (the bundled ones, tools registered from bytes) are never touched.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Registry, type Tool } from '@corral/core';
import { loadToolFolder } from './tool-folder.js';

const SPEC_FILE = 'tool-spec.json';

export interface ToolWatchOptions {
  /** Quiet time after the last file event before folders are read again. Default 200 ms. */
  debounceMs?: number;
  /** Where problems go (a tool that failed to load, a folder that cannot be watched). */
  log?: (message: string) => void;
  /** Called after a reload that added or removed tools. */
  onChange?: (change: ToolChange) => void;
}

export interface ToolChange {
  added: Tool[];
  removed: Tool[];
}

export interface ToolWatcher {
  /** Read the folders now and bring the registry in step (reloads never overlap). */
  reload(): Promise<ToolChange>;
  /** Stop watching. */
  close(): void;
}

/** Watch `dirs` (each a tool folder or a folder of tool folders) and keep `registry` in step with them. */
export function watchToolFolders(registry: Registry, dirs: readonly string[], options: ToolWatchOptions = {}): ToolWatcher {
  const roots = dirs.map((d) => resolve(d));
  const debounceMs = options.debounceMs ?? 200;
  const log = options.log ?? (() => {});
  /** folder → its watcher: each root, and each subfolder of a root (where tool files change). */
  const watchers = new Map<string, FSWatcher>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<ToolChange> | undefined;
  let again = false;
  let closed = false;

  const owned = (tool: Tool): boolean => {
    if (!tool.source.endsWith(SPEC_FILE)) return false;
    const folder = dirname(tool.source);
    return roots.some((root) => folder === root || dirname(folder) === root);
  };

  const schedule = () => {
    if (closed) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void reload().catch((err: unknown) => log(`reloading tools failed: ${(err as Error).message}`));
    }, debounceMs);
    timer.unref?.();
  };

  const watchFolder = (folder: string): boolean => {
    if (watchers.has(folder) || closed) return false;
    try {
      const watcher = watch(folder, { persistent: false }, schedule);
      watcher.on('error', (err) => {
        // The folder went away (or became unreadable): the next reload sees what is left.
        watcher.close();
        watchers.delete(folder);
        if ((err as NodeJS.ErrnoException).code !== 'EPERM') log(`stopped watching ${folder}: ${err.message}`);
        schedule();
      });
      watchers.set(folder, watcher);
      return true;
    } catch (err) {
      log(`cannot watch ${folder}: ${(err as Error).message}`);
      return false;
    }
  };

  /** Watch each root and its subfolders; drop watchers of folders that are gone. Returns true when a new folder is watched. */
  const syncWatchers = async (): Promise<boolean> => {
    const wanted = new Set<string>();
    for (const root of roots) {
      wanted.add(root);
      try {
        for (const entry of await readdir(root, { withFileTypes: true })) if (entry.isDirectory()) wanted.add(join(root, entry.name));
      } catch {
        // A missing root: loadToolFolder reports it.
      }
    }
    for (const [folder, watcher] of watchers) {
      if (!wanted.has(folder)) {
        watcher.close();
        watchers.delete(folder);
      }
    }
    let added = false;
    for (const folder of wanted) if (watchFolder(folder)) added = true;
    return added;
  };

  const reloadOnce = async (): Promise<ToolChange> => {
    // A new subfolder may have been filled before its watcher existed: read once more after watching it.
    if (await syncWatchers()) again = true;
    const scratch = new Registry();
    for (const root of roots) {
      for (const err of (await loadToolFolder(scratch, root)).errors) log(`skipped: ${err.message} (${err.code})`);
    }
    const wanted = scratch.list();
    const key = (t: Tool) => `${t.spec.name}@${t.spec.version}`;
    const wantedBy = new Map(wanted.map((t) => [key(t), t]));
    const removed: Tool[] = [];
    const added: Tool[] = [];
    for (const tool of registry.list().filter(owned)) {
      const next = wantedBy.get(key(tool));
      if (next && next.wasmSha256 === tool.wasmSha256 && next.source === tool.source) continue;
      registry.unregister(tool.spec.name, tool.spec.version);
      removed.push(tool);
    }
    for (const tool of wanted) {
      // An exact version is a range that matches only itself.
      const current = registry.has(key(tool)) ? registry.resolve(key(tool)) : undefined;
      if (current && current.wasmSha256 === tool.wasmSha256 && current.source === tool.source) continue;
      try {
        const registered = await registry.register(tool.spec, tool.wasm, tool.source);
        // The same bytes registered from elsewhere (a bundled tool) make this a no-op, not an addition.
        if (registered.source === tool.source) added.push(registered);
      } catch (err) {
        log(`skipped: ${(err as Error).message}`);
      }
    }
    return { added, removed };
  };

  const reload = async (): Promise<ToolChange> => {
    if (running) {
      again = true;
      return running;
    }
    const total: ToolChange = { added: [], removed: [] };
    running = (async () => {
      try {
        do {
          again = false;
          const change = await reloadOnce();
          total.added.push(...change.added);
          total.removed.push(...change.removed);
        } while (again && !closed);
      } finally {
        running = undefined;
      }
      if (total.added.length + total.removed.length > 0) options.onChange?.(total);
      return total;
    })();
    return running;
  };

  for (const root of roots) watchFolder(root);
  return {
    reload,
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
