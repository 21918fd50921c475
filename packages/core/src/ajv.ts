/**
 * ajv, the JSON Schema compiler, with its formats and standalone code
 * generator. Reached only through `loadAjv()` (ajv-loader.ts), never
 * imported at startup: on Node it is loaded on the first schema to
 * compile, which most processes never meet (the bundled tools ship
 * prebuilt validators). Evaluating it was ~20 ms of every start.
 */
import formatsModule from 'ajv-formats';
import standaloneModule from 'ajv/dist/standalone/index.js';

export { Ajv, _, str } from 'ajv';
export { Ajv2020 } from 'ajv/dist/2020.js';

// Both are CommonJS; under Node, bundlers and this file's own bundle alike, the export is `.default` when there is one.
type AddFormats = (ajv: import('ajv').Ajv) => import('ajv').Ajv;
export const addFormats: AddFormats =
  (formatsModule as unknown as { default?: AddFormats }).default ?? (formatsModule as unknown as AddFormats);

/**
 * ajv's standalone code generator (validators compiled at build time), typed
 * here: `typeof standaloneModule.default` does not resolve for a consumer
 * whose TypeScript reads the CommonJS module's default as the function itself
 * (`"moduleResolution": "bundler"`).
 */
type StandaloneCode = (ajv: import('ajv').Ajv, validate: import('ajv').ValidateFunction) => string;
export const standaloneCode: StandaloneCode =
  (standaloneModule as unknown as { default?: StandaloneCode }).default ?? (standaloneModule as unknown as StandaloneCode);
