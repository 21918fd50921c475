// Builds the first-party tools with the same code `corral build` runs for a
// C tool (packages/node/src/author/c.ts, from its compiled dist/), so the
// flags, the kit and the toolchain lessons live in one place. build.sh is
// the entry point and says why the build is deterministic.
//
// Usage: node wasm-tools/build.mjs [tool ...]     (default: every tool)
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';

const here = fileURLToPath(new URL('.', import.meta.url));
const built = fileURLToPath(new URL('../packages/node/dist/author/c.js', import.meta.url));
if (!existsSync(built)) {
  console.error(`build.mjs: ${built} is missing; run 'npm run build' first (it compiles the C build steps)`);
  process.exit(1);
}
const { buildC } = await import(pathToFileURL(built).href);

const tools =
  process.argv.length > 2
    ? process.argv.slice(2)
    : readdirSync(here)
        .filter((d) => existsSync(join(here, d, 'src')) && statSync(join(here, d, 'src')).isDirectory())
        .sort();
if (tools.length === 0) {
  console.error(`build.mjs: no tools found under ${here}*/src`);
  process.exit(1);
}

for (const tool of tools) {
  const dir = join(here, tool);
  if (!existsSync(join(dir, 'src'))) {
    console.error(`build.mjs: no such tool: ${tool} (expected ${join(dir, 'src')})`);
    process.exit(1);
  }
  const module = join(dir, `${tool}.module.wasm`);
  const component = join(dir, `${tool}.wasm`);
  try {
    // No first-party tool writes a double (corral_double, or %g in
    // corral_appendf): the integer-only printf saves about 5 KiB a tool.
    await buildC({ dir, out: component, moduleOut: module, ldflags: ['-lc-printscan-no-floating-point'] });
  } catch (err) {
    console.error(`build.mjs: ${tool}: ${err.message}`);
    process.exit(1);
  }
  const size = (f) => String(statSync(f).size).padStart(8);
  console.log(`${tool.padEnd(14)} ${size(module)} B module  ${size(component)} B component`);
}
