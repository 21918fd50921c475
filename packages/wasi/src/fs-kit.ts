/**
 * @corral/wasi/fs — the filesystem layer every WASI flavour goes through:
 * the backend interface a host implements for the mount sources it opens,
 * the in-memory backend, descriptors, the disk quota, mount sources and
 * their checks, a call's whole filesystem, and the one errno table
 * (wasi:filesystem error-codes, preview1 errnos, POSIX names). For host
 * packages and tests.
 */
export type { FsBackend, EntryStat, EntryType, DirectoryListing, NewTime, OpenMode } from './fs/backend.js';
export { MemoryBackend, type FileDataEntry } from './fs/memory.js';
export { Descriptor, MAX_OPEN_FILES, type DescriptorStat } from './fs/filesystem.js';
export { DiskQuota, ENTRY_BYTES } from './fs/quota.js';
export { metadataHash, type MetadataHash } from './fs/metadata-hash.js';
export { KEPT_DIRECTORIES } from './fs/resolve.js';
export { fsErrorOfErrno, FS_ERRNO, E as WASI_ERRNO, type FsErrorCode } from './fs/errno.js';
export { callFilesystem, mountRoot, type CallFilesystem } from './vfs.js';
export {
  MEMORY_KIND,
  badMountSource,
  sourceString,
  checkMountSource,
  checkMountSources,
  type ClosableBackend,
  type MountOpener,
  type MountOpeners,
  type MountSourceCheck,
  type MountSourceChecks,
} from './mount-sources.js';
