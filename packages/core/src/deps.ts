/**
 * The third-party libraries core uses, re-exported from this one module:
 * semver, the small runtime helpers of ajv's prebuilt validators, and
 * `loadAjv()`, which gives ajv itself (loaded on first use where the host
 * can: see ajv-loader.ts). `npm run build` bundles the built file into a
 * single file (scripts/bundle.mjs): Node then reads one file at startup
 * instead of dozens. Without that step this module still works as it is,
 * only slower to load. Not public API: import these from their own packages.
 */
import * as formats from 'ajv-formats/dist/formats.js';
import * as equal from 'ajv/dist/runtime/equal.js';
import * as ucs2length from 'ajv/dist/runtime/ucs2length.js';
import * as uri from 'ajv/dist/runtime/uri.js';
import * as validationError from 'ajv/dist/runtime/validation_error.js';
import semverModule from 'semver';

export type { ErrorObject, KeywordCxt, ValidateFunction } from 'ajv';
export { loadAjv, type AjvLibrary } from '#ajv-loader';

/** The part of semver Corral uses (declared here, so this module's types need no @types/semver). */
export interface Semver {
  valid(version: string): string | null;
  validRange(range: string): string | null;
  satisfies(version: string, range: string, options?: { includePrerelease?: boolean }): boolean;
  compare(a: string, b: string): -1 | 0 | 1;
  rcompare(a: string, b: string): -1 | 0 | 1;
  maxSatisfying(versions: readonly string[], range: string): string | null;
}
export const semver: Semver = (semverModule as unknown as { default?: Semver }).default ?? (semverModule as unknown as Semver);

/**
 * The modules ajv's standalone code `require`s, by the names it uses, each
 * as CommonJS would give it (`require(name).default` is the helper). Node
 * and bundlers disagree on what a namespace's `default` is for a module
 * marked __esModule: module.exports (Node) or exports.default (bundlers).
 */
function asRequired(namespace: object): unknown {
  const fallback = (namespace as { default?: unknown }).default;
  return typeof fallback === 'object' && fallback !== null && 'default' in fallback ? fallback : namespace;
}
export const ajvRuntime: Readonly<Record<string, unknown>> = {
  'ajv/dist/runtime/equal': asRequired(equal),
  'ajv/dist/runtime/ucs2length': asRequired(ucs2length),
  'ajv/dist/runtime/uri': asRequired(uri),
  'ajv/dist/runtime/validation_error': asRequired(validationError),
  'ajv-formats/dist/formats': asRequired(formats),
};
