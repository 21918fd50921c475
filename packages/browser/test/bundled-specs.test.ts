/**
 * @corral/browser carries the bundled tools' specs in src/bundled-specs.ts,
 * generated from wasm-tools/*\/tool-spec.json; this fails when a spec
 * changed and the file was not regenerated.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

it('src/bundled-specs.ts matches wasm-tools/*/tool-spec.json', () => {
  const script = fileURLToPath(new URL('../scripts/bundled-specs.mjs', import.meta.url));
  expect(() => execFileSync(process.execPath, [script, '--check'], { stdio: 'pipe' })).not.toThrow();
});
