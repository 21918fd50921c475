/**
 * Where `corral build` puts the component: the spec's `component` path,
 * whose folders are made when missing, never through a link out of the
 * tool folder.
 */
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeBuilt } from '../../packages/node/dist/author/language.js';

const bytes = new Uint8Array([0, 0x61, 0x73, 0x6d]);

describe('writeBuilt', () => {
  it('makes the folders of a component path that do not exist yet ("out/x.wasm")', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-built-'));
    await writeBuilt(dir, join(dir, 'out/deeper/x.wasm'), bytes);
    expect([...readFileSync(join(dir, 'out/deeper/x.wasm'))]).toEqual([...bytes]);
  });

  it('refuses a missing folder under a link that leads out of the tool folder, creating nothing there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-built-'));
    const elsewhere = mkdtempSync(join(tmpdir(), 'corral-elsewhere-'));
    mkdirSync(join(dir, 'sub'));
    symlinkSync(elsewhere, join(dir, 'sub/out'));
    await expect(writeBuilt(dir, join(dir, 'sub/out/new/x.wasm'), bytes)).rejects.toThrow(/is not inside the tool folder/);
    expect(() => readFileSync(join(elsewhere, 'new/x.wasm'))).toThrow();
  });

  it('writes into a folder whose name starts with two dots (..build is inside, not a climb out)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-built-'));
    await writeBuilt(dir, join(dir, '..build/x.wasm'), bytes);
    expect([...readFileSync(join(dir, '..build/x.wasm'))]).toEqual([...bytes]);
  });
});
