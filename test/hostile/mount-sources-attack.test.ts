/**
 * Red team of mount sources: a caller's binding and its source are
 * untrusted data, read once (a getter cannot pass the checks with one
 * value and run with another), and a source that cannot be used is the
 * caller's mistake (E_INPUT_VALIDATION), never an internal error.
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

  const deep = () => {
    const tree: Record<string, unknown> = {};
    let at = tree;
    for (let i = 0; i < 100_000; i++) {
      const next: Record<string, unknown> = {};
      at.d = next;
      at = next;
    }
    return tree;
  };
  it.each([
    ['a function', () => ({ f: () => 1 })],
    [
      'a Proxy with no plain copy',
      () => new Proxy({}, { ownKeys: () => ['a'], getOwnPropertyDescriptor: () => ({ value: 'x', enumerable: true, configurable: true }) }),
    ],
    [
      'a getter that throws',
      () =>
        Object.defineProperty({}, 'f', {
          enumerable: true,
          get: () => {
            throw new Error('boom');
          },
        }),
    ],
    ['folders nested 100000 deep', deep],
  ])('a memory tree holding %s is E_INPUT_VALIDATION, not an internal error', async (_, tree) => {
    const result = await corral.invoke(
      'ro-writer',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'memory', tree: tree() as never } }] },
    );
    expect(result.error?.code).toBe('E_INPUT_VALIDATION');
    expect(result.error?.message).toContain('/workspace');
  });

  it('a tree getter cannot hand the worker something other than what was checked', async () => {
    let reads = 0;
    const tree = {
      get f() {
        reads++;
        return reads <= 1 ? 'checked' : () => 'unclonable';
      },
    };
    const result = await corral.invoke(
      'ro-writer',
      {},
      { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'memory', tree } }] },
    );
    expect(result.error).toBeNull();
    expect(reads).toBe(1);
  });
});
