/**
 * Part of `npm run build`, after `tsc -b`: bundles the modules Node loads at
 * startup whose many small files cost more to find and read than to run.
 *
 * - Each package's `dist/deps.js` (a re-export of its third-party libraries:
 *   semver and ajv's runtime helpers, yaml) becomes one file. Without this
 *   step the re-export still works, only slower. ajv itself becomes
 *   `core/dist/ajv.cjs`, which Node loads only when a schema is compiled;
 *   without it, that first compile fails and says to run the build.
 * - core, wasi and workflow, loaded at every start (~70 modules), become
 *   one file per export (written over the file tsc wrote) and chunks they
 *   share (`dist/_chunk-*.js`), so each module still exists once however
 *   it is imported. Other @corral packages stay imports: a class is the
 *   same class for every package that uses it. The package's tsbuildinfo is
 *   removed, so a later `tsc -b` alone rewrites every file instead of
 *   leaving a bundle of older code beside newer modules. (@corral/node
 *   bundled the same way started no faster: its static graph is ~40 files,
 *   and the time goes to compiling their bytes, not to finding them.)
 * - The Node sandbox worker becomes `dist/worker.bundle.cjs` (CommonJS,
 *   for Node) and `dist/worker.bundle.js` (an ES module, for Bun and Deno),
 *   one file instead of ~40 ES modules: each new worker thread loads its scripts
 *   again, so this is on the path of every cold start and every replacement
 *   after a kill. The pool uses the bundle only when it is newer than every
 *   package it holds (pool.ts), so a tree rebuilt with `tsc -b` alone runs the
 *   unbundled worker rather than stale code.
 */
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const builtins = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)]);

/** Bundle `input` into `outDir` (one file per entry; dynamic imports of externals stay imports). */
async function bundle(
  input,
  outDir,
  { external = () => false, platform = 'neutral', format = 'esm', sourcemap = false, banner, fileName } = {},
) {
  const build = await rolldown({
    input,
    platform,
    // `#name`: the package's own conditional imports (package.json "imports"), resolved where it runs.
    external: (id) => builtins.has(id) || id.startsWith('#') || external(id),
    resolve: { mainFields: ['module', 'main'] },
    // A module left out by mistake would be looked up at run time, where it may not exist: refuse instead.
    onLog(level, log, handler) {
      if (log.code === 'UNRESOLVED_IMPORT') throw new Error(`bundle.mjs: ${log.message}`);
      handler(level, log);
    },
  });
  // The libraries stay dependencies of their packages, so their LICENSE files install beside the bundle.
  await build.write({ dir: outDir, format, sourcemap, banner, ...(fileName ? { entryFileNames: fileName } : {}) });
  await build.close();
}

// Third-party re-exports: bundled from src/deps.ts at every build (so an
// upgraded library is never left behind), replacing the file tsc wrote, with
// a source map into the libraries' own files.
for (const pkg of ['core', 'workflow']) {
  const dir = join(root, 'packages', pkg);
  await bundle(join(dir, 'src', 'deps.ts'), join(dir, 'dist'), {
    sourcemap: true,
    banner: '// Bundled by scripts/bundle.mjs from src/deps.ts.',
    fileName: 'deps.js',
  });
}
// ajv itself, as one CommonJS file that core's loadAjv() requires on Node the
// first time a schema is compiled (src/ajv-loader.node.ts).
await bundle(join(root, 'packages', 'core', 'src', 'ajv.ts'), join(root, 'packages', 'core', 'dist'), {
  format: 'cjs',
  sourcemap: true,
  banner: '// Bundled by scripts/bundle.mjs from src/ajv.ts.',
  fileName: 'ajv.cjs',
});

// Packages as one file per export. Their code finds no file relative to itself: a module
// folded into a file elsewhere would look in the wrong place.
for (const pkg of ['core', 'wasi', 'workflow']) {
  const dir = join(root, 'packages', pkg);
  const dist = join(dir, 'dist');
  const { exports } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const input = {};
  for (const target of Object.values(exports)) {
    const file = typeof target === 'string' ? target : target.default;
    if (file.startsWith('./dist/') && file.endsWith('.js')) input[file.slice('./dist/'.length, -'.js'.length)] = join(dir, file);
  }
  const build = await rolldown({
    input,
    platform: 'neutral',
    // Other packages (ours and third-party) stay imports.
    external: (id) => builtins.has(id) || !(id.startsWith('.') || id.startsWith('/')),
    onLog(level, log, handler) {
      if (log.code === 'UNRESOLVED_IMPORT') throw new Error(`bundle.mjs: ${log.message}`);
      handler(level, log);
    },
    plugins: [
      {
        name: 'no-import-meta',
        transform(code, id) {
          if (code.includes('import.meta'))
            throw new Error(`bundle.mjs: ${id} uses import.meta; bundled, it would look for files in the wrong place`);
          return null;
        },
      },
    ],
  });
  const { output } = await build.write({
    dir: dist,
    format: 'esm',
    sourcemap: true,
    entryFileNames: '[name].js',
    chunkFileNames: '_chunk-[name]-[hash].js',
  });
  await build.close();
  // Chunks of earlier builds go once nothing imports them (an input may have been an earlier bundle).
  const written = new Set(output.map((file) => file.fileName));
  for (const old of readdirSync(dist))
    if (old.startsWith('_chunk-') && !written.has(old) && !written.has(old.replace(/\.map$/, ''))) rmSync(join(dist, old));
  rmSync(join(dir, 'tsconfig.tsbuildinfo'), { force: true });
}

// The sandbox worker: our packages and comlink inlined; jco (loaded only to
// transpile) stays external. It sits in dist/ beside worker.js, since code in
// it finds files relative to itself (host-fs.js: the native file-times addon
// at ../build/Release).
// Twice: as CommonJS for Node (pool.ts) and as an ES module for Bun and Deno.
const nodeDist = join(root, 'packages', 'node', 'dist');
for (const [fileName, format] of [
  ['worker.bundle.js', 'esm'],
  ['worker.bundle.cjs', 'cjs'],
]) {
  rmSync(join(nodeDist, fileName), { force: true });
  await bundle(join(nodeDist, 'worker.js'), nodeDist, {
    platform: 'node',
    format,
    external: (id) => id.startsWith('@bytecodealliance/'),
    fileName,
  });
  if (!existsSync(join(nodeDist, fileName))) throw new Error(`bundle.mjs: the worker bundle ${fileName} was not written`);
}
