export { transpileComponent, PREPARED_FORMAT, type PreparedComponent } from './transpile.js';
export { declaredImports, checkComponentImports, PROVIDED_INTERFACES } from './component-imports.js';
export { ComponentRunner, type RunRequest, type RunnerOptions } from './run.js';
export { loadShim, shimModuleNames, type WasiShim, type ShimModuleName } from './shim.js';
export { toFileData, fromFileData, type FileDataEntry } from './fs.js';
export { capModule, tableBudget, TABLE_ENTRIES_PER_PAGE, WASM_PAGE_BYTES } from './limits.js';
export {
  callFilesystem,
  guard,
  streamWrites,
  DiskQuota,
  type Descriptor,
  type HostDirectoryOpener,
  type OpfsDirectoryOpener,
  type MountRequest,
  type MountRules,
  type CallFilesystem,
} from './vfs.js';
export { SandboxPool, type PoolWorker, type SandboxPoolOptions, type TaskOptions } from './pool.js';
export {
  Preview1Runner,
  Preview1Host,
  checkPreview1Module,
  compilePreview1,
  PREVIEW1_FUNCTIONS,
  type Preview1HostOptions,
  type Preview1Function,
  type Preopens,
  type ByteSink,
} from './preview1.js';
export { CappedSink, ProcExit, OutputLimitExceeded, classify, finishRun, type RunEnd, type RunFacts } from './outcome.js';
export { PoolExecutor, outcomeOf, type Outcome, type ExecutorWorker, type PreparedComponentStore, type PoolExecutorOptions } from './executor.js';
