/**
 * `loadAjv()` on hosts with CommonJS `require` (Node, Deno, Bun): ajv is
 * loaded the first time a schema is compiled, not when core is imported.
 * `dist/ajv.cjs` is ajv.ts bundled by `npm run build` (scripts/bundle.mjs).
 */
import { createRequire } from 'node:module';
import type { AjvLibrary } from './ajv-loader.js';

let ajv: AjvLibrary | undefined;

export function loadAjv(): AjvLibrary {
  if (ajv) return ajv;
  const require = createRequire(import.meta.url);
  try {
    ajv = require('./ajv.cjs') as AjvLibrary;
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'MODULE_NOT_FOUND') throw err;
    throw new Error('@corral/core was built without dist/ajv.cjs, its JSON Schema compiler: run `npm run build`', { cause: err });
  }
  return ajv;
}
