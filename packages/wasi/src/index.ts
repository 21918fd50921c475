/**
 * @corral/wasi — host-agnostic WASI hosting: run a wasi:cli command
 * component (transpiled by jco) or a preview1 command module inside a
 * sandbox, with Corral's own WASI host, import checks and memory caps.
 *
 * Everything exported here is public API. Pieces the host packages share
 * live on subpaths: `@corral/wasi/fs` (the filesystem layer a host backs
 * mounts with), `@corral/wasi/host-kit` (the sandbox pool, executor, worker
 * API and host facade that @corral/node and @corral/browser build on), and
 * `@corral/wasi/internal` (this repository's tests only; no promises).
 */
export { ComponentRunner, type ComponentRunnerOptions } from './run.js';
export type { RunRequest, RunnerOptions } from './request.js';
export { CodeCache, DEFAULT_CACHE_BYTES } from './code-cache.js';
export { Preview1Runner, checkPreview1Module } from './preview1/index.js';
export { transpileComponent, prepareComponent, PREPARED_FORMAT, type PreparedComponent } from './transpile.js';
export { encodePreparedFile, decodePreparedFile } from './prepared-file.js';
export { declaredImports, checkComponentImports, PROVIDED_INTERFACES } from './component-imports.js';
export { capModule, capComponentModules } from './limits.js';
export { execRequest, EXEC_DEFAULTS, type ExecOptions } from './exec-options.js';
export type { MountOpener, MountOpeners } from './mount-sources.js';
export { GuestTypeError } from './guest.js';
