// Run by `npm run build` after tsc: validates every bundled tool's
// tool-spec.json with the Corral core just built and writes, for each spec
// that passes, its SHA-256 and the code of its input and output validators
// to validated-specs.json. A host registering these very specs then neither
// validates them again nor compiles their JSON Schemas at the first call
// (see packages/node/src/tool-folder.ts), nor reads the component's core modules
// again for the cabi_realloc check when its wasm is the one checked here
// (`checkedWasm`, the SHA-256 of its bytes). Each tool's folder also gets its
// own <name>.validators.json, for pages (@corral/browser fetches only the
// tools it registers). A bundled spec that fails stops the build.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { VALIDATOR_FORMAT, adapterReallocProblem, detectWasmKind, prebuiltValidator, validateSpec, validatorSource } from '@corral/core';

const here = new URL('.', import.meta.url).pathname;
const specs = {};
for (const name of readdirSync(here).sort()) {
  const file = join(here, name, 'tool-spec.json');
  if (!existsSync(file)) continue;
  const raw = JSON.parse(readFileSync(file, 'utf8'));
  const result = validateSpec(raw);
  if (!result.ok) {
    console.error(`wasm-tools/${name}/tool-spec.json is not a valid tool spec:`, result.problems);
    process.exit(1);
  }
  const { input_schema: input, output_schema: output } = result.spec;
  const code = { input: validatorSource(input), ...(output === undefined ? {} : { output: validatorSource(output) }) };
  // Loaded once here, so code a host could not load never ships.
  for (const source of Object.values(code)) prebuiltValidator(source);
  const sha256 = createHash('sha256').update(JSON.stringify(raw)).digest('hex');
  const wasm = new Uint8Array(readFileSync(join(here, name, result.spec.component)));
  if (detectWasmKind(wasm, name) === 'component') {
    const problem = adapterReallocProblem(wasm, name);
    if (problem) {
      console.error(`wasm-tools/${name}: ${problem.message}. ${problem.hint ?? ''}`);
      process.exit(1);
    }
  }
  const checkedWasm = createHash('sha256').update(wasm).digest('hex');
  specs[sha256] = { tool: name, ...code, checkedWasm };
  const own = { generatedBy: 'wasm-tools/validate-specs.mjs', format: VALIDATOR_FORMAT, spec: sha256, ...code };
  writeFileSync(join(here, name, `${name}.validators.json`), `${JSON.stringify(own)}\n`);
}
const text = JSON.stringify({ generatedBy: 'wasm-tools/validate-specs.mjs', format: VALIDATOR_FORMAT, specs }, null, 2);
writeFileSync(join(here, 'validated-specs.json'), `${text}\n`);
