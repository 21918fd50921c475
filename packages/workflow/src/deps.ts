/**
 * yaml, re-exported from one module that `npm run build` bundles into a
 * single file (scripts/bundle.mjs), so loading workflows and policy files
 * (@corral/node imports it from here) reads one file instead of ~70. Not
 * public API: import yaml from its own package.
 */
export * from 'yaml';
