/**
 * The filesystem and cross-call attacks of test/hostile/filesystem.test.ts
 * and cross-call.test.ts, in real Chromium: an OPFS folder whose sidecar
 * symlinks point out of it (to a sibling folder, and by absolute path), a
 * held descriptor whose folder the tool swaps for such a link, and what a
 * call leaves behind for the next one on the same worker.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BrowserCorral, readOpfsTree, writeOpfsTree, type MemoryTree } from '@corral/browser';
import { registerFolder } from './fixtures.js';

const SECRET = 'corral-secret-0b9e';
type Attempt = { op: string; ok: boolean; errno: number; detail: string };

let corral: BrowserCorral;
let base: string;

async function text(path: string): Promise<unknown> {
  const walk = (tree: MemoryTree): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(tree).map(([k, v]) => [
        k,
        v instanceof Uint8Array ? new TextDecoder().decode(v) : typeof v === 'string' ? v : walk(v),
      ]),
    );
  return walk(await readOpfsTree(path));
}

beforeAll(async () => {
  // One worker: every call below lands on the same one.
  corral = await BrowserCorral.create({ size: 1, store: false });
  for (const dir of ['tools/fs-attack', 'tools/cross-call', 'tools/echo', 'preview1/fs-attack', 'preview1/cross-call']) {
    await registerFolder(corral, `/test/fixtures/${dir}`);
  }
});

afterAll(async () => {
  await corral?.close();
  const root = await navigator.storage.getDirectory();
  for await (const name of root.keys()) if (name.startsWith('sandbox-')) await root.removeEntry(name, { recursive: true });
});

beforeEach(async () => {
  base = `sandbox-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  await writeOpfsTree(base, {
    outside: { 'secret.txt': SECRET },
    workspace: {
      sub: { 'file.txt': 'inside\n' },
      '.__wasi_symlinks__.json': JSON.stringify({ link: '../outside', inlink: 'sub', 'file-link': `/${base}/outside/secret.txt` }),
    },
  });
});

describe.each(['fs-attack', 'p1-fs-attack'])('%s in a browser', (tool) => {
  it('gets nothing outside its read-write OPFS folder, whatever it renames, links or opens', async () => {
    const outsideBefore = await text(`${base}/outside`);
    const result = await corral.invoke(
      tool,
      {},
      { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'opfs', path: `${base}/workspace` } }] },
    );
    expect(result.error).toBeNull();
    const attempts = (result.output as { attempts: Attempt[] }).attempts;
    expect(attempts.find((a) => a.op === 'swap d for the outward link')?.ok).toBe(true);
    for (const a of attempts.filter((x) => x.op !== 'swap d for the outward link')) expect(a, a.op).toMatchObject({ ok: false });
    expect(JSON.stringify(result)).not.toContain(SECRET);
    expect(JSON.stringify(result)).not.toContain(base);
    expect(await text(`${base}/outside`)).toEqual(outsideBefore);
    expect(Object.keys((await text(base)) as object).sort()).toEqual(['outside', 'workspace']);
  });
});

describe.each(['cross-call', 'p1-cross-call'])('%s in a browser', (tool) => {
  it('polls synchronously, leaves no timer behind, and sees only its own /tmp', async () => {
    const inodes = new Set<number>();
    for (let i = 0; i < 3; i++) {
      const result = await corral.invoke(tool, { call: i });
      expect(result.error, `call ${i}`).toBeNull();
      const r = result.output as { poll1: object; poll2: { first: number; slept_ms: number }; tmp_ino: number };
      expect(r.poll1).toEqual({ errno: 0, events: 1, first: 2 });
      expect(r.poll2.first).toBe(3);
      expect(r.poll2.slept_ms).toBeGreaterThanOrEqual(19);
      inodes.add(r.tmp_ino);
    }
    expect(inodes.size).toBe(1);
    expect((await corral.invoke('echo', { after: tool })).output).toEqual({ after: tool });
  });
});
