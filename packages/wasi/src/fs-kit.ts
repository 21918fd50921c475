/**
 * @corral/wasi/fs — the filesystem layer every WASI flavour goes through:
 * the backend interface a host implements for its folders (host folders in
 * Node, OPFS in browsers), the in-memory backend, descriptors, the disk
 * quota, and a call's whole filesystem. For host packages and tests.
 */
export type { FsBackend, EntryStat, EntryType, DirectoryListing, NewTime, OpenMode } from './fs/backend.js';
export { MemoryBackend, type FileDataEntry } from './fs/memory.js';
export { Descriptor, MAX_OPEN_FILES, type DescriptorStat } from './fs/filesystem.js';
export { DiskQuota, ENTRY_BYTES } from './fs/quota.js';
export {
  callFilesystem,
  mountRoot,
  type CallFilesystem,
  type ClosableBackend,
  type HostDirectoryOpener,
  type OpfsDirectoryOpener,
} from './vfs.js';
