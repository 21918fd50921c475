/**
 * `loadAjv()` where a host cannot load a module synchronously on demand
 * (browsers, bundlers): ajv is a static import, evaluated with core. Node,
 * Deno and Bun resolve `#ajv-loader` to ajv-loader.node.ts instead
 * (package.json "imports"), which loads ajv on first use.
 */
import * as ajv from './ajv.js';

export type AjvLibrary = typeof ajv;

export function loadAjv(): AjvLibrary {
  return ajv;
}
