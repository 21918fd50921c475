/**
 * The bundled tools' files as URLs, for pages and bundlers. Each URL is a
 * `new URL('./…', import.meta.url)` literal, so Vite, webpack and Rollup copy
 * the .wasm into a build and rewrite the URL, and Vite's dependency
 * pre-bundling rewrites it relative to its cache. Node finds the folder itself
 * (`@corral/tools/package.json`) and reads the tool-spec.json files there.
 * Written by hand: a new tool folder is added here too (test/install checks).
 * `preparedUrl` and `validatorsUrl` name files `npm run build` makes
 * (prepare-components.mjs, validate-specs.mjs).
 */

/** @type {import('./index.js').BundledToolFiles[]} */
export const toolFiles = [
  {
    name: 'apply-patch',
    wasmUrl: new URL('./apply-patch/apply-patch.wasm', import.meta.url).href,
    moduleUrl: new URL('./apply-patch/apply-patch.module.wasm', import.meta.url).href,
    preparedUrl: new URL('./apply-patch/apply-patch.prepared.json', import.meta.url).href,
    validatorsUrl: new URL('./apply-patch/apply-patch.validators.json', import.meta.url).href,
  },
  {
    name: 'diff-summary',
    wasmUrl: new URL('./diff-summary/diff-summary.wasm', import.meta.url).href,
    moduleUrl: new URL('./diff-summary/diff-summary.module.wasm', import.meta.url).href,
    preparedUrl: new URL('./diff-summary/diff-summary.prepared.json', import.meta.url).href,
    validatorsUrl: new URL('./diff-summary/diff-summary.validators.json', import.meta.url).href,
  },
  {
    name: 'edit',
    wasmUrl: new URL('./edit/edit.wasm', import.meta.url).href,
    moduleUrl: new URL('./edit/edit.module.wasm', import.meta.url).href,
    preparedUrl: new URL('./edit/edit.prepared.json', import.meta.url).href,
    validatorsUrl: new URL('./edit/edit.validators.json', import.meta.url).href,
  },
  {
    name: 'file-stats',
    wasmUrl: new URL('./file-stats/file-stats.wasm', import.meta.url).href,
    moduleUrl: new URL('./file-stats/file-stats.module.wasm', import.meta.url).href,
    preparedUrl: new URL('./file-stats/file-stats.prepared.json', import.meta.url).href,
    validatorsUrl: new URL('./file-stats/file-stats.validators.json', import.meta.url).href,
  },
  {
    name: 'glob',
    wasmUrl: new URL('./glob/glob.wasm', import.meta.url).href,
    moduleUrl: new URL('./glob/glob.module.wasm', import.meta.url).href,
    preparedUrl: new URL('./glob/glob.prepared.json', import.meta.url).href,
    validatorsUrl: new URL('./glob/glob.validators.json', import.meta.url).href,
  },
  {
    name: 'grep',
    wasmUrl: new URL('./grep/grep.wasm', import.meta.url).href,
    moduleUrl: new URL('./grep/grep.module.wasm', import.meta.url).href,
    preparedUrl: new URL('./grep/grep.prepared.json', import.meta.url).href,
    validatorsUrl: new URL('./grep/grep.validators.json', import.meta.url).href,
  },
  {
    name: 'read',
    wasmUrl: new URL('./read/read.wasm', import.meta.url).href,
    moduleUrl: new URL('./read/read.module.wasm', import.meta.url).href,
    preparedUrl: new URL('./read/read.prepared.json', import.meta.url).href,
    validatorsUrl: new URL('./read/read.validators.json', import.meta.url).href,
  },
];
