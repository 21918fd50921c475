/**
 * WASI preview1, hosted directly: runs a `wasi_snapshot_preview1` core
 * module (a wasi-libc command such as `wasm-tools/*\/*.module.wasm`) with no
 * component glue in between. It is the fast path: one compiled module per
 * tool and memory cap, and per call a fresh instance plus a small fd table.
 *
 *   abi.ts     the ABI's numbers: errnos (and the wasi:filesystem error-code
 *              → errno table), file types, rights, flags, record sizes
 *   memory.ts  views of the guest's memory
 *   host.ts    Preview1Host: every wasi_snapshot_preview1 function
 *   loader.ts  checking, compiling (memory capped) and instantiating a module
 *   runner.ts  Preview1Runner: what a preview1 run adds to ../runner.ts
 */
export { PREVIEW1_FUNCTIONS, type Preview1Function } from './abi.js';
export { Preview1Host, type Preview1HostOptions, type Preopens, type ByteSink } from './host.js';
export { checkPreview1Module, compilePreview1, instantiatePreview1 } from './loader.js';
export { Preview1Runner } from './runner.js';
