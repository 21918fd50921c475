export { transpileComponent, PREPARED_FORMAT, type PreparedComponent } from './transpile.js';
export { declaredImports, checkComponentImports, PROVIDED_INTERFACES } from './component-imports.js';
export { ComponentRunner } from './run.js';
export type { RunRequest, RunnerOptions } from './request.js';
export { capModule, capComponentModules, tableBudget, TABLE_ENTRIES_PER_PAGE, WASM_PAGE_BYTES, type ModuleShare } from './limits.js';
export { callFilesystem, mountRoot, type HostDirectoryOpener, type OpfsDirectoryOpener, type ClosableBackend, type CallFilesystem } from './vfs.js';
export type { FsBackend, EntryStat, EntryType, DirectoryListing, NewTime, OpenMode } from './fs/backend.js';
export { Descriptor, MAX_OPEN_FILES, type DescriptorStat } from './fs/filesystem.js';
export { DiskQuota, ENTRY_BYTES } from './fs/quota.js';
export { MemoryBackend, type FileDataEntry } from './fs/memory.js';
export { preview2Imports, type Preview2Call } from './preview2.js';
export { GuestTypeError } from './guest.js';
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
} from './preview1/index.js';
export { CappedSink, ProcExit, OutputLimitExceeded, classify, finishRun, type RunEnd, type RunFacts } from './outcome.js';
export { PoolExecutor, outcomeOf, type ExecRequest, type Outcome, type ExecutorWorker, type PreparedComponentStore, type PoolExecutorOptions } from './executor.js';
export { openStdio, workerStdio, canShareMemory, STDIO_CHUNK, type StdioChannel, type StdioHandlers } from './stdio-channel.js';
export { execRequest, EXEC_DEFAULTS, type ExecOptions } from './exec-options.js';
