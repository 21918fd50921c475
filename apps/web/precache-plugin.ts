/**
 * A small vite plugin for the offline app: it builds the service worker
 * (src/sw.ts) to `sw.js` at the root of the output, and once everything is
 * written, lists every file of the build (the page, scripts, styles, the
 * sandbox workers, the tools' .wasm, files from public/) into it, with a
 * version hashed from their contents. Reading the output folder, rather
 * than the bundle object, catches what other plugins and sub-builds (web
 * workers) emit too.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import type { Plugin, ResolvedConfig } from 'vite';

const PLACEHOLDER = /(["'`])__CORRAL_PRECACHE_MANIFEST__\1/;

export interface PrecacheOptions {
  /** The service worker's source, relative to the vite root. */
  sw: string;
  /** Output name of the service worker. Default "sw.js". */
  fileName?: string;
}

export function precache(options: PrecacheOptions): Plugin {
  const fileName = options.fileName ?? 'sw.js';
  let config: ResolvedConfig;
  return {
    name: 'corral-precache',
    apply: 'build',
    configResolved(resolved) {
      config = resolved;
    },
    buildStart() {
      this.emitFile({ type: 'chunk', id: resolve(config.root, options.sw), fileName });
    },
    closeBundle: {
      order: 'post',
      sequential: true,
      handler() {
        const outDir = resolve(config.root, config.build.outDir);
        const swPath = join(outDir, fileName);
        const files = listFiles(outDir)
          .map((f) => relative(outDir, f).split(sep).join('/'))
          .filter((f) => f !== fileName && !f.endsWith('.map') && !f.startsWith('.vite/'))
          .sort();
        const hash = createHash('sha256');
        for (const f of files)
          hash
            .update(f)
            .update('\0')
            .update(readFileSync(join(outDir, f)))
            .update('\0');
        const manifest = { version: hash.digest('hex').slice(0, 16), files };
        const code = readFileSync(swPath, 'utf8');
        if (!PLACEHOLDER.test(code)) throw new Error(`corral-precache: ${swPath} has no __CORRAL_PRECACHE_MANIFEST__ placeholder to fill`);
        writeFileSync(
          swPath,
          code.replace(PLACEHOLDER, () => JSON.stringify(JSON.stringify(manifest))),
        );
        config.logger.info(`corral-precache: ${fileName} precaches ${files.length} files (version ${manifest.version})`);
      },
    },
  };
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? listFiles(p) : e.isFile() ? [p] : [];
  });
}
