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

// registerBundledTools registers these specs as validated (no meta-schema
// compile in the page): this is the check it relies on.
it('every spec in src/bundled-specs.ts passes validateSpec', async () => {
  const { validateSpec } = await import('@corral/core');
  const { BUNDLED_SPECS } = await import('../src/bundled-specs.js');
  expect(Object.keys(BUNDLED_SPECS).length).toBeGreaterThanOrEqual(7);
  for (const [name, spec] of Object.entries(BUNDLED_SPECS)) expect(validateSpec(spec), name).toMatchObject({ ok: true });
});
