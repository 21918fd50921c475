// Run by `npm run build` after tsc: validates every bundled tool's
// tool-spec.json with the Corral core just built and writes the SHA-256s of
// those that pass to validated-specs.json, so a host registering these very
// specs need not compile JSON Schemas again at each start (see
// packages/node/src/tool-folder.ts). A bundled spec that fails stops the build.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateSpec } from '@corral/core';

const here = new URL('.', import.meta.url).pathname;
const sha256 = [];
for (const name of readdirSync(here).sort()) {
  const file = join(here, name, 'tool-spec.json');
  if (!existsSync(file)) continue;
  const raw = JSON.parse(readFileSync(file, 'utf8'));
  const result = validateSpec(raw);
  if (!result.ok) {
    console.error(`wasm-tools/${name}/tool-spec.json is not a valid tool spec:`, result.problems);
    process.exit(1);
  }
  sha256.push(createHash('sha256').update(JSON.stringify(raw)).digest('hex'));
}
writeFileSync(join(here, 'validated-specs.json'), `${JSON.stringify({ generatedBy: 'wasm-tools/validate-specs.mjs', sha256 }, null, 2)}\n`);
