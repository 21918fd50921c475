// Run by `npm run build` after validate-specs.mjs: transpiles each bundled
// component with jco once, here (its glue rewritten, prepareComponent), and writes `<component>.prepared.json`
// beside it (packages/wasi/src/prepared-file.ts). Hosts read it instead of
// running jco at a tool's first call: Node from the installed @corral/tools
// package, pages as a file the build copies (index.js, preparedUrl). A file
// already made from the same component by the same jco is kept.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { detectWasmKind } from '@corral/core';
import { decodePreparedFile, encodePreparedFile, prepareComponent } from '@corral/wasi';
// The build's own copy of what a Node sandbox worker asks when it prepares a component.
import { findPreview1 } from '../packages/node/dist/adapted.js';

const here = new URL('.', import.meta.url).pathname;
for (const name of readdirSync(here).sort()) {
  const specFile = join(here, name, 'tool-spec.json');
  if (!existsSync(specFile)) continue;
  const { component } = JSON.parse(readFileSync(specFile, 'utf8'));
  const wasmFile = join(here, name, component);
  const bytes = new Uint8Array(readFileSync(wasmFile));
  if (detectWasmKind(bytes, wasmFile) !== 'component') continue;
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const out = wasmFile.replace(/\.wasm$/, '.prepared.json');
  if (existsSync(out) && decodePreparedFile(readFileSync(out, 'utf8'), sha256)) continue;
  const prepared = await prepareComponent(bytes, name);
  const preview1 = await findPreview1(bytes);
  writeFileSync(out, encodePreparedFile(sha256, preview1 ? { ...prepared, preview1 } : prepared));
}
