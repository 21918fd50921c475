/**
 * Files of the @corral/node package, found from wherever its code sits: a
 * module in dist/, in a folder under it, or folded into a bundle
 * (scripts/bundle.mjs). This is the package's one module that reads
 * import.meta; every other names its files from the package's own folder.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The folder holding the package.json of the package `file` belongs to (`file`'s own folder if none does). */
export function packageRoot(file: string): string {
  let dir = dirname(file);
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) return dirname(file);
    dir = up;
  }
  return dir;
}

/** @corral/node's folder: where its package.json, dist/, kit/ and build/ are. */
export const PACKAGE_DIR = packageRoot(fileURLToPath(import.meta.url));

/** A path in the package, from its folder: `dist/worker.js`, `kit/c/`. */
export const packagePath = (path: string): string => join(PACKAGE_DIR, path);

/** The same, as a file URL (what `new Worker` takes). */
export const packageUrl = (path: string): URL => pathToFileURL(packagePath(path));

/** `require` resolving as the package does: its dependencies, its native addon. */
export const packageRequire = createRequire(packagePath('package.json'));
