// A real Corral (worker pool, bundled tools, an SQLite store in a temp
// folder) for the adapter tests: the adapters must drive the real pipeline.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentCache, Corral } from '@corral/node';

export async function adapterHost(): Promise<Corral> {
  const dir = mkdtempSync(join(tmpdir(), 'corral-adapters-'));
  return Corral.create({ size: 1, store: join(dir, 'snapshots.db'), cache: new ComponentCache(join(dir, 'cache')) });
}

export const exampleInput = JSON.parse(
  readFileSync(new URL('../../wasm-tools/diff-summary/examples/example.diff.json', import.meta.url), 'utf8'),
) as { diff: string };
