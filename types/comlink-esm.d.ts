/**
 * comlink's ES module build, imported by its path: the package's `main` is a
 * UMD (CommonJS) file, and Node loading CommonJS from an ES module runs its
 * CommonJS loader and export lexer, ~7 ms of every start. Every import of
 * comlink in one thread must name the same file: `transfer` marks values in
 * a table of the module it comes from, which `wrap` then reads.
 */
declare module 'comlink/dist/esm/comlink.mjs' {
  export * from 'comlink';
}
declare module 'comlink/dist/esm/node-adapter.mjs' {
  import nodeEndpoint from 'comlink/dist/umd/node-adapter.js';
  export default nodeEndpoint;
}
