// watchToolFolders: a registry kept in step with folders of tools while a server runs.
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from '@corral/core';
import { BUNDLED_TOOLS_DIR, loadToolFolder } from '@corral/node';
import { watchToolFolders, type ToolChange, type ToolWatcher } from '@corral/node/mcp';
import { FIXTURE_TOOLS, copyFixtureTool } from './helpers.js';

const names = (change: ToolChange) => ({
  added: change.added.map((t) => `${t.spec.name}@${t.spec.version}`),
  removed: change.removed.map((t) => `${t.spec.name}@${t.spec.version}`),
});

describe('watchToolFolders', () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  function setup(registry = new Registry()) {
    const dir = mkdtempSync(join(tmpdir(), 'corral-watch-'));
    const logs: string[] = [];
    const changes: ToolChange[] = [];
    let notify: (() => void) | undefined;
    const watcher: ToolWatcher = watchToolFolders(registry, [dir], {
      debounceMs: 50,
      log: (m) => logs.push(m),
      onChange: (c) => {
        changes.push(c);
        notify?.();
      },
    });
    cleanups.push(() => {
      watcher.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const nextChange = () =>
      new Promise<ToolChange>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no change seen')), 10_000);
        notify = () => {
          clearTimeout(timer);
          notify = undefined;
          resolve(changes.at(-1)!);
        };
      });
    return { dir, registry, logs, changes, watcher, nextChange };
  }

  it('adds a copied tool folder, replaces one whose files changed in place, and removes a deleted one', async () => {
    const { dir, registry, watcher, nextChange } = setup();
    expect(names(await watcher.reload())).toEqual({ added: [], removed: [] });

    let change = nextChange();
    const folder = copyFixtureTool('echo', dir);
    expect(names(await change)).toEqual({ added: ['echo@1.0.0'], removed: [] });
    const first = registry.resolve('echo');

    change = nextChange();
    appendFileSync(join(folder, 'echo.wasm'), new Uint8Array([0])); // new bytes, same version: the folder is the truth
    expect(names(await change)).toEqual({ added: ['echo@1.0.0'], removed: ['echo@1.0.0'] });
    expect(registry.resolve('echo').wasmSha256).not.toBe(first.wasmSha256);

    change = nextChange();
    rmSync(folder, { recursive: true });
    expect(names(await change)).toEqual({ added: [], removed: ['echo@1.0.0'] });
    expect(registry.list()).toEqual([]);
  });

  it('reads a tool spec put straight into the watched folder, and a spec fixed after it was broken', async () => {
    const { dir, registry, logs, nextChange } = setup();
    const change = nextChange();
    cpSync(join(FIXTURE_TOOLS, 'echo'), dir, { recursive: true });
    await change;
    expect(registry.resolve('echo').source).toBe(join(dir, 'tool-spec.json'));

    const spec = readFileSync(join(dir, 'tool-spec.json'), 'utf8');
    const broken = nextChange();
    writeFileSync(join(dir, 'tool-spec.json'), '{ "name": ');
    expect(names(await broken)).toEqual({ added: [], removed: ['echo@1.0.0'] });
    expect(logs.some((l) => /not valid JSON/.test(l))).toBe(true);
    const fixed = nextChange();
    writeFileSync(join(dir, 'tool-spec.json'), spec);
    expect(names(await fixed)).toEqual({ added: ['echo@1.0.0'], removed: [] });
  });

  it('never touches tools from elsewhere, and says why a clashing tool was skipped', async () => {
    const registry = new Registry();
    await loadToolFolder(registry, BUNDLED_TOOLS_DIR);
    const bundled = registry.resolve('diff-summary');
    const { dir, logs, watcher } = setup(registry);
    // Same name and version as the bundled tool, other bytes.
    const clash = join(dir, 'clash');
    cpSync(join(FIXTURE_TOOLS, 'echo'), clash, { recursive: true });
    const spec = JSON.parse(readFileSync(join(clash, 'tool-spec.json'), 'utf8'));
    writeFileSync(join(clash, 'tool-spec.json'), JSON.stringify({ ...spec, name: 'diff-summary', version: bundled.spec.version }));
    expect(names(await watcher.reload())).toEqual({ added: [], removed: [] });
    expect(registry.resolve('diff-summary')).toBe(bundled);
    expect(logs.some((l) => l.includes(`diff-summary@${bundled.spec.version} is already registered`))).toBe(true);
    rmSync(clash, { recursive: true });
    await watcher.reload();
    expect(registry.resolve('diff-summary')).toBe(bundled);
  });

  it('a watched folder that disappears takes its tools with it; nothing throws', async () => {
    const { dir, registry, logs, watcher } = setup();
    copyFixtureTool('echo', dir);
    await watcher.reload();
    expect(registry.has('echo')).toBe(true);
    rmSync(dir, { recursive: true });
    expect(names(await watcher.reload())).toEqual({ added: [], removed: ['echo@1.0.0'] });
    expect(logs.some((l) => /does not exist/.test(l))).toBe(true);
  });
});
