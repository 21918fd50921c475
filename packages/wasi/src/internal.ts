/**
 * @corral/wasi/internal — pieces of the WASI hosts that this repository's
 * own tests exercise directly (output caps, exits, the preview1 and
 * preview2 import objects, table budgets). Not public API: anything here
 * may change or go without notice.
 */
export { CappedSink, ProcExit, OutputLimitExceeded, classify, finishRun, type RunEnd, type RunFacts } from './outcome.js';
export { preview2Imports, type Preview2Call } from './preview2.js';
export {
  Preview1Host,
  compilePreview1,
  instantiatePreview1,
  PREVIEW1_FUNCTIONS,
  type Preview1HostOptions,
  type Preview1Function,
  type Preopens,
  type ByteSink,
} from './preview1/index.js';
export { tableBudget, mayRunAtInstantiation, TABLE_ENTRIES_PER_PAGE, WASM_PAGE_BYTES, type ModuleShare } from './limits.js';
export { openStdio, workerStdio, canShareMemory, STDIO_CHUNK, type StdioChannel, type StdioHandlers } from './stdio-channel.js';
export { sipHash24 } from './fs/metadata-hash.js';
export {
  lighterHostCalls,
  loadGlue,
  rewriteGlue,
  capHandleTables,
  checkExportNames,
  guardLiftedLists,
  refuseAsyncBuiltins,
  trapsEndTheInstance,
  MAX_LIVE_HANDLES,
  TRAP_IMPORT,
} from './glue.js';
export {
  cleanSpareMemories,
  cleanSparesAfterEachCall,
  importOwnMemory,
  MemoryPool,
  MemoryLeases,
  POOL_IMPORT_MODULE,
  POOLED_PAGES,
  MAX_POOLED_PAGES,
  MAX_REUSES,
  MAX_SPARES,
  MAX_SPARE_BYTES,
  MAX_SPARES_BYTES,
} from './memory-pool.js';
export { MemoryWatch, type MemoryLimits } from './memory-watch.js';
export { watchGrowth, GROW_FAILED_EXPORT, type WatchedGrowth } from './grow-watch.js';
export { readIndirection, newIndirection, standIns, type Shim, type Fixup } from './indirection.js';
