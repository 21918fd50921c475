export { transpileComponent, PREPARED_FORMAT, assertNoNetworkImports, type PreparedComponent } from './transpile.js';
export { ComponentRunner, type RunRequest, type RunnerOptions } from './run.js';
export { loadShim, shimModuleNames, type WasiShim, type ShimModuleName } from './shim.js';
export { toFileData, fromFileData, type FileDataEntry } from './fs.js';
export { capMemory, WASM_PAGE_BYTES } from './memory.js';
export { callFilesystem, guard, streamWrites, DiskQuota, type Descriptor, type HostDirectoryOpener, type MountRules, type CallFilesystem } from './vfs.js';
