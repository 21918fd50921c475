// Runs a bundled tool through the real runtime: a Corral worker pool, the
// transpiled component, the same pipeline `corral run` uses.
import { afterAll } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral, ComponentCache, type InvokeResult, type MountBinding } from '@corral/node';

let corral: Promise<Corral> | undefined;

function runtime(): Promise<Corral> {
  corral ??= Corral.create({ size: 2, cache: new ComponentCache(mkdtempSync(join(tmpdir(), 'corral-test-cache-'))) });
  return corral;
}

afterAll(async () => {
  if (corral) await (await corral).close();
  corral = undefined;
});

export async function runTool(
  name: string,
  input: unknown,
  opts: { mounts?: MountBinding[]; outputLimitBytes?: number; memoryMb?: number; timeoutMs?: number } = {},
): Promise<InvokeResult> {
  const { mounts, ...limits } = opts;
  return (await runtime()).invoke(name, input, { mounts: mounts ?? [], ...limits });
}
