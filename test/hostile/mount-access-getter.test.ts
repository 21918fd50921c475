/**
 * A caller's mount binding is untrusted data, read once: a getter cannot
 * pass the checks with one value and run with another.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral } from '@corral/node';

const FIXTURES = new URL('../fixtures/tools/', import.meta.url).pathname;

let base: string;
let corral: Corral;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'corral-mount-sources-'));
  // fs-writer, declared read-only: it tries to write all the same.
  const tool = join(base, 'tools', 'ro-writer');
  mkdirSync(tool, { recursive: true });
  copyFileSync(join(FIXTURES, 'fs-writer', 'fs-writer.wasm'), join(tool, 'fs-writer.wasm'));
  writeFileSync(
    join(tool, 'tool-spec.json'),
    JSON.stringify({
      name: 'ro-writer',
      version: '1.0.0',
      description: 'fs-writer with its mount declared read-only',
      component: 'fs-writer.wasm',
      input_schema: { type: 'object' },
      mounts: [{ guest: '/workspace', access: 'read' }],
      resources: { disk_mb: 1, timeout_ms: 10000 },
    }),
  );
  corral = await Corral.create({ bundled: false, toolDirs: [join(base, 'tools')], size: 1, store: false });
});
afterAll(async () => {
  await corral?.close();
  rmSync(base, { recursive: true, force: true });
});

describe('hostile mount sources', () => {
  it('an access getter cannot answer read to the checks and read-write to the run', async () => {
    const workspace = join(base, 'workspace');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'existing.txt'), 'existing\n');
    let reads = 0;
    const binding = {
      guest: '/workspace',
      source: { kind: 'host', path: workspace },
      get access() {
        reads++;
        return reads <= 2 ? 'read' : 'read-write';
      },
    };
    const result = await corral.invoke('ro-writer', {}, { mounts: [binding as never] });
    expect(readdirSync(workspace)).toEqual(['existing.txt']);
    const attempts = (result.output as { attempts: { op: string; ok: boolean }[] } | null)?.attempts ?? [];
    for (const a of attempts.filter((a) => a.op.includes('/workspace'))) expect(a, a.op).toMatchObject({ ok: false });
  });

  it('a guest getter that stops being a string is refused, not an internal error', async () => {
    let reads = 0;
    const binding = {
      access: 'read',
      get guest() {
        reads++;
        return reads <= 1 ? '/workspace' : 42;
      },
    };
    const result = await corral.invoke('ro-writer', {}, { mounts: [binding as never] });
    expect(result.error?.code).toBe('E_INPUT_VALIDATION');
  });
});
